"""The model description: named tensors, layer groups, attention and mixer facts (frozen data, no I/O),
and the per-input costs of a part (tower, projector) that family notes quote."""
