"""Ground truth: every bundled config, built with transformers on the meta device, matches llmcalc.

Compared: the total, the embedding tables, the lm_head, each decoder layer (read off the model's
layer ModuleList, independently of llmcalc's names) and, tensor by tensor, every name and shape.
These run in CI; they are never skipped there.
"""

from __future__ import annotations

from typing import Any

import pytest

from llmcalc import bundled, count, load_spec
from llmcalc.spec import ModelSpec
from llmcalc.verify import build_meta_model, figures, verify_transformers

CONFIGS = [p.stem for p in bundled.paths()]
# transformers builds Gemma 3n's vision tower with timm, which cannot be imported beside the CPU
# torch the tests pin: its other modules are compared built alone, the tower's tensors are held to
# timm's recorded list in tests/test_h14_gemma3n.py
NEEDS_TIMM = {"gemma-3n-defaults": 548}
# lookup tables (nn.Embedding) inside the layers, which transformers' embedding figure counts:
# Qwen4-Exp's hashed n-gram tables
LOOKUPS_IN_LAYERS = ("ple/ngram_embedding",)


# layers whose modules lie in several ModuleLists side by side: figures() reads the largest alone
SPLIT_LAYERS = {
    "xlm-default": "attentions, layer_norm1, ffns, layer_norm2; tests/test_h16_rest.py sums them",
}


@pytest.mark.parametrize("name", CONFIGS)
def test_matches_transformers(name: str) -> None:
    spec = load_spec(name)
    if name in NEEDS_TIMM:
        c = verify_transformers(spec)
        assert c.ok and c.unchecked == NEEDS_TIMM[name], c.against
        assert c.matched + c.unchecked == len(dict(spec.named_shapes()))
        return
    matches_transformers(spec, per_layer=name not in SPLIT_LAYERS)


def matches_transformers(spec: ModelSpec, *, per_layer: bool = True) -> Any:
    """``spec`` against the transformers model built from it on the meta device: every name and
    shape, the total, the breakdown adding up to it, the embedding and lm_head figures, and each
    layer's count (``per_layer``). Returns the model, for a caller's further checks. The family
    tests hold their varied configs to it too."""
    pc = count(spec)
    assert sum(pc.breakdown.values()) == pc.total
    model = build_meta_model(spec)
    real = figures(model, spec.num_layers)
    assert dict(spec.named_shapes()) == real.named_shapes
    assert pc.total == real.total
    # transformers' figure counts every nn.Embedding: a whole model's towers' position tables too
    # (pc.embedding is the language model's, as every figure besides total and parts)
    towers = sum(t.numel for p in spec.parts for t in p.tensors
                 if t.component == "embed/positions" and t.name.endswith(".weight"))
    towers += sum(t.numel * len(g.layers) for g in spec.layer_groups for t in g.tensors
                  if t.component in LOOKUPS_IN_LAYERS)
    if spec.main_part == "language":
        assert pc.embedding + towers == real.embedding
        assert pc.lm_head == real.lm_head
    # an encoder–decoder's or encoder LM's embedding modules share one table (`shared` in the
    # encoder, the decoder and the head) and its head is a part of its own: transformers' module
    # walk counts the table once per module, so only the totals, the named shapes and the parts
    # (tests/test_h13b.py) are compared there
    ours, stored_at = [0] * spec.num_layers, {}
    for group, gc in zip(spec.layer_groups, pc.groups, strict=True):
        tied = {t.tied_to for t in group.tensors if t.tied_to is not None}
        for i in group.layers:
            ours[i] = gc.per_layer
            if tied:  # a shared block (Zamba): counted where stored, held by every layer's module
                stored_at[i] = int(next(iter(tied)).split(".")[2])  # model.layers.<s>.…
    if per_layer:  # (SPLIT_LAYERS: figures() reads one ModuleList per layer: held elsewhere)
        assert tuple(ours[stored_at.get(i, i)] for i in range(spec.num_layers)) == real.per_layer
    return model
