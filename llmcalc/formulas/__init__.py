"""Pure functions of a model description → exact integers: parameters, FLOPs, memory, quantized
weight bytes, LoRA adapters, activations, figures along a range of contexts."""
