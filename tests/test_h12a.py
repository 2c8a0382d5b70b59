"""Issue 12, MoE part: aria_text, flint, beam, axk1, axk2 … held against transformers 5.24.

Each type's bundled config and small varied configs (layers, widths, heads and kv heads, expert
counts and top-k, shared experts, dense layers, layer-type patterns, tied and untied heads) are built
on the meta device: every tensor name and shape, the total and the active count (read off the
instantiated modules) must equal llmcalc's.
"""

from __future__ import annotations

from typing import Any

import pytest

from llmcalc import count, load_spec
from llmcalc.spec import ModelSpec
from llmcalc.verify import build_meta_model, figures
from test_families_moe import hf_active

SMALL = {
    "hidden_size": 64,
    "num_hidden_layers": 5,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "intermediate_size": 48,
    "vocab_size": 512,
}


def assert_exact(spec: ModelSpec, covers: str) -> None:
    model = build_meta_model(spec)
    real = figures(model, spec.num_layers)
    assert dict(spec.named_shapes()) == real.named_shapes, covers
    pc = count(spec)
    assert (pc.total, pc.embedding, pc.lm_head) == (real.total, real.embedding, real.lm_head), covers
    assert sum(pc.breakdown.values()) == pc.total
    assert pc.active == hf_active(model), covers


# ---- bundled configs ----------------------------------------------------------------------------

BUNDLED = [
    # name, model_type, total, active
    ("aria-text-default", "aria_text", 18_517_069_824, 8_853_393_408),
]


@pytest.mark.parametrize(("name", "model_type", "total", "active"), BUNDLED)
def test_bundled_config_is_exact(name: str, model_type: str, total: int, active: int) -> None:
    spec = load_spec(name)
    assert spec.model_type == model_type
    pc = count(spec)
    assert (pc.total, pc.active) == (total, active)
    assert (spec.expected["total_params"], spec.expected["active_params"]) == (total, active)
    assert_exact(spec, name)


# ---- varied configs ------------------------------------------------------------------------------

# model_type, fields beside SMALL, what the case moves
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("aria_text", {"moe_num_experts": 4, "moe_topk": 2}, "MHA→GQA, two shared experts, untied"),
    (
        "aria_text",
        {
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "num_hidden_layers": 2,
            "moe_num_experts": 6,
            "moe_topk": 3,
            "moe_num_shared_experts": 0,
            "mlp_bias": True,
            "attention_bias": True,
            "tie_word_embeddings": True,
        },
        "no shared experts (built empty), biases, tied",
    ),
    (
        "aria_text",
        {"hidden_size": 96, "num_attention_heads": 6, "moe_num_shared_experts": 3},
        "head_dim = hidden // heads, three shared experts",
    ),
]


@pytest.mark.parametrize(
    ("model_type", "fields", "covers"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_varied_configs_match_transformers(
    write: Any, model_type: str, fields: dict[str, Any], covers: str
) -> None:
    path = write("config.json", {"model_type": model_type, **SMALL, **fields})
    assert_exact(load_spec(path), covers)


def test_aria_experts_are_stored_input_first() -> None:
    names = dict(load_spec("aria-text-default").named_shapes())
    # gate_up_proj [E, d, 2·ff], down_proj [E, ff, d]; shared experts one SwiGLU of 2 × ff
    assert names["model.layers.0.mlp.experts.gate_up_proj"] == (8, 4096, 2 * 4096)
    assert names["model.layers.0.mlp.experts.down_proj"] == (8, 4096, 4096)
    assert names["model.layers.0.mlp.router.weight"] == (8, 4096)
    assert names["model.layers.0.mlp.shared_experts.gate_proj.weight"] == (2 * 4096, 4096)
