"""Ground truth: every bundled config, built with transformers on the meta device, matches llmcalc.

Compared: the total, the embedding tables, the lm_head, each decoder layer (read off the model's
layer ModuleList, independently of llmcalc's names) and, tensor by tensor, every name and shape.
These run in CI; they are never skipped there.
"""

from __future__ import annotations

import pytest
from helpers.reference import matches_transformers

from llmcalc import load_spec
from llmcalc.inputs import bundled
from llmcalc.verify.reference import verify_transformers

CONFIGS = [p.stem for p in bundled.paths()]
# transformers builds Gemma 3n's vision tower with timm, which cannot be imported beside the CPU
# torch the tests pin: its other modules are compared built alone, the tower's tensors are held to
# timm's recorded list in tests/multimodal/test_gemma3n.py
NEEDS_TIMM = {"gemma-3n-defaults": 548}


# layers whose modules lie in several ModuleLists side by side: figures() reads the largest alone
SPLIT_LAYERS = {
    "xlm-default": "attentions, layer_norm1, ffns, layer_norm2; tests/families/test_bert_generation_roc_bert_xlm.py sums them",
}


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.parametrize("name", CONFIGS)
def test_matches_transformers(name: str) -> None:
    spec = load_spec(name)
    if name in NEEDS_TIMM:
        c = verify_transformers(spec)
        assert c.ok and c.unchecked == NEEDS_TIMM[name], c.against
        assert c.matched + c.unchecked == len(dict(spec.named_shapes()))
        return
    matches_transformers(spec, per_layer=name not in SPLIT_LAYERS)

