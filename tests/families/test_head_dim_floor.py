"""Heads that do not divide the width, head_dim not given: the modelling files that read
``getattr(config, "head_dim", hidden_size // num_attention_heads)`` build heads · ⌊d/h⌋, and their
config classes do not reject the remainder, so the count is well defined (issue 34's refusals that
should be formulas). Totals are those of the transformers 5.24.0 model built from each config;
classes that reject the remainder (Llama) still refuse in one line."""

from __future__ import annotations

import pytest

from llmcalc import count, spec_from_dict
from llmcalc.errors import ConfigError

# d = 100 over 3 heads: head_dim 33, q/k/v (99, 100), o_proj (100, 99)
BASE = {"hidden_size": 100, "num_attention_heads": 3, "num_key_value_heads": 3,
        "intermediate_size": 64, "num_hidden_layers": 2, "vocab_size": 128}


@pytest.mark.parametrize(("model_type", "extra", "total"), [
    ("qwen2", {}, 144_294),
    ("mixtral", {"num_local_experts": 4, "num_experts_per_tok": 2}, 259_700),
    ("olmo", {}, 143_200),
    ("qwen3_moe", {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                   "pad_token_id": 0}, 183_032),
    # OLMoE's q_norm is over the width (100), its k_norm over kv · head_dim (99)
    ("olmoe", {"num_experts": 4, "num_experts_per_tok": 2, "pad_token_id": 0}, 260_098),
])
def test_heads_not_dividing_the_width_count_floor_head_dim(
        model_type: str, extra: dict[str, int], total: int) -> None:
    spec = spec_from_dict({"model_type": model_type, **BASE, **extra}, name=model_type)
    pc = count(spec)
    assert pc.total == total
    assert sum(pc.breakdown.values()) == total
    assert spec.shape.head_dim == 33


def test_a_class_that_rejects_the_remainder_still_refuses() -> None:
    with pytest.raises(ConfigError, match=r"^llama: num_attention_heads \(3\) must divide hidden_size "
                                          r"\(100\) when head_dim is not given$"):
        count(spec_from_dict({"model_type": "llama", **BASE}, name="llama"))


def test_more_heads_than_width_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"^qwen2: num_attention_heads \(128\) exceeds hidden_size "
                                          r"\(100\): heads of hidden // heads = 0 elements$"):
        count(spec_from_dict({"model_type": "qwen2", **BASE, "num_attention_heads": 128,
                              "num_key_value_heads": 128}, name="qwen2"))


def test_gemma4_per_layer_kv_heads_that_do_not_divide_the_heads_count_as_given() -> None:
    """A per_layer_config's 2 KV heads over 3 heads: transformers builds k/v of 2 · 32 (refused
    before, unlike the same KV heads given for the whole model)."""
    config = {"model_type": "gemma4_text", "hidden_size": 64, "intermediate_size": 96,
              "num_hidden_layers": 2, "num_attention_heads": 3, "num_key_value_heads": 3,
              "head_dim": 16, "vocab_size": 128, "vocab_size_per_layer_input": 128,
              "hidden_size_per_layer_input": 8, "layer_types": ["sliding_attention", "full_attention"],
              "per_layer_config": {"1": {"num_key_value_heads": 2, "head_dim": 32}}}
    pc = count(spec_from_dict(config, name="gemma4_text"))
    assert pc.total == 83_752  # transformers 5.24.0's Gemma4ForCausalLM
    assert sum(pc.breakdown.values()) == 83_752


def test_qwen2_vl_text_attention_still_refuses_the_remainder() -> None:
    """Qwen2-VL's text attention raises "hidden_size must be divisible by num_heads" (Qwen2's own
    builds heads · ⌊d/h⌋): refused in one line, not counted."""
    config = {"model_type": "qwen2_vl",
              "text_config": {"model_type": "qwen2_vl_text", "hidden_size": 8192,
                              "num_attention_heads": 65, "num_key_value_heads": 65}}
    with pytest.raises(ConfigError, match=r"^qwen2_vl: text_config\.num_attention_heads \(65\) must divide "
                                          r"hidden_size \(8192\): the text attention of Qwen2-VL "
                                          r"and Qwen2\.5-VL rejects a remainder$"):
        count(spec_from_dict(config, name="qwen2_vl"))
