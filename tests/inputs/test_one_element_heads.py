"""Attention heads of one element, as transformers runs them: widened to 2 by the rotary step,
left at 1, or broadcast to none (families._base.ONE_ELEMENT_HEAD_QK), else refused for FLOPs and
memory with the reason; the count stands either way."""

from __future__ import annotations

from typing import Any

from llmcalc.families._base import ONE_ELEMENT_HEAD_QK
from llmcalc.formulas.counting import count
from llmcalc.formulas.flops import forward_flops_per_sequence
from llmcalc.formulas.memory import kv_cache_bytes
from llmcalc.inputs.config import spec_from_dict
from llmcalc.units import DType

# 2 layers, d 64, 4 heads and 2 KV heads of one element, SwiGLU 128, vocabulary 100
TINY = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 1, "vocab_size": 100}
REFUSAL = ("head_dim 1: transformers' rotary step broadcasts a one-element head against its "
           "cos/sin table (to 2 elements, to none, or not at all), held to a measured forward for "
           "some types only")


def test_rotary_widens_a_one_element_head_to_two() -> None:
    """Mistral: q·cos + rotate_half(q)·sin over a 2-wide cos table makes q and k 2 wide."""
    assert ONE_ELEMENT_HEAD_QK["mistral"] == 2
    spec = spec_from_dict({"model_type": "mistral", **TINY})
    a = spec.layer_groups[0].attention
    assert a is not None and (a.qk_head_dim, a.v_head_dim) == (2, 1)
    assert spec.forward_unmodelled == ""
    # K of 2 and V of 1 element, 2 KV heads, 2 layers, 64 tokens, bf16
    assert kv_cache_bytes(spec, batch=1, ctx=64, dtype=DType.bf16) == 2 * 2 * (2 + 1) * 64 * 2
    # per token: q 64 → 4, k and v 64 → 2, o 4 → 64, SwiGLU 3 × 64 × 128 per layer, lm_head
    # 64 → 100; per layer 64² query–key pairs × 2 × 4 heads × (2 + 1)
    per_token = 2 * (2 * (64 * 4 + 2 * 64 * 2 + 4 * 64 + 3 * 64 * 128) + 64 * 100)
    assert forward_flops_per_sequence(spec, ctx=64, causal=False) == (
        64 * per_token + 2 * 64**2 * 2 * 4 * 3) == 7_503_872


def test_no_rotary_keeps_one_element_and_none_broadcasts_to_nothing() -> None:
    t5 = spec_from_dict({"model_type": "t5", "d_model": 64, "d_kv": 1, "d_ff": 128,
                         "num_layers": 2, "num_heads": 4, "vocab_size": 100})
    assert ONE_ELEMENT_HEAD_QK["t5"] == 1 and t5.forward_unmodelled == ""
    assert {(g.attention.qk_head_dim, g.attention.v_head_dim)
            for g in t5.layer_groups if g.attention is not None} == {(1, 1)}
    ministral3 = spec_from_dict({"model_type": "ministral3", **TINY})
    a = ministral3.layer_groups[0].attention
    assert ONE_ELEMENT_HEAD_QK["ministral3"] == 0
    assert a is not None and (a.qk_head_dim, a.v_head_dim) == (0, 1)
    # keys of no element: the cache holds the values alone
    assert kv_cache_bytes(ministral3, batch=1, ctx=64, dtype=DType.bf16) == 2 * 2 * 1 * 64 * 2


def test_a_type_not_held_to_a_forward_is_refused(cli: Any, write: Any) -> None:
    """Helium rotates interleaved pairs, which transformers cannot run on one element: counted,
    FLOPs and memory refused in one line."""
    assert "helium" not in ONE_ELEMENT_HEAD_QK
    config = {"model_type": "helium", **TINY}
    spec = spec_from_dict(config)
    assert spec.forward_unmodelled == REFUSAL
    assert count(spec).total > 0
    path = write("helium.json", config)
    assert cli("count", path).code == 0
    for command in ("flops", "memory"):
        run = cli(command, path)
        assert (run.code, run.stderr) == (
            2, f"error: helium: FLOPs and cache bytes are not computed: {REFUSAL}\n")


def test_a_config_with_its_own_rotary_part_is_refused() -> None:
    """The widths were measured with each class's rotary settings: Mistral rotating half of a
    one-element head (int(1 × 0.5) = 0 dimensions) is refused, not widened to 2."""
    for fields in ({"partial_rotary_factor": 0.5},
                   {"rope_parameters": {"rope_type": "default", "rope_theta": 1e6,
                                        "partial_rotary_factor": 0.5}}):
        spec = spec_from_dict({"model_type": "mistral", **TINY, **fields})
        assert spec.forward_unmodelled == REFUSAL
