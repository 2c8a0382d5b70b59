"""The published totals (each equals the transformers model's numel sum), by hand where it helps."""

from __future__ import annotations

import pytest
from helpers.reference import total_from_names

from llmcalc import count, load_spec

PUBLISHED = {
    "gpt2": 124_439_808,
    "gpt2-medium": 354_823_168,
    "gpt2-large": 774_030_080,
    "gpt2-xl": 1_557_611_200,
    "meta-llama/Llama-2-7b-hf": 6_738_415_616,
    "llama-2-13b": 13_015_864_320,
    "llama-2-70b": 68_976_648_192,
    "meta-llama/Meta-Llama-3-8B": 8_030_261_248,
    "llama-3.2-1b": 1_235_814_400,
    "llama-3.2-3b": 3_212_749_824,
    "tinyllama-1.1b": 1_100_048_384,
    "mistralai/Mistral-7B-v0.1": 7_241_732_096,
    "gemma-7b": 8_537_680_896,
}


@pytest.mark.parametrize("name,total", PUBLISHED.items())
def test_published_total(name: str, total: int) -> None:
    spec = load_spec(name)
    pc = count(spec)
    assert pc.total == total
    assert pc.active == total  # dense
    assert total_from_names(spec) == total


def test_gpt2_by_hand() -> None:
    # d=768, L=12, V=50257, positions 1024, ff=4d. One layer: 2 LayerNorms (2·2d), c_attn d·3d+3d,
    # c_proj d²+d, c_fc d·4d+4d, c_proj 4d·d+d.
    d, L, V = 768, 12, 50257
    layer = 4 * d + (3 * d * d + 3 * d) + (d * d + d) + (4 * d * d + 4 * d) + (4 * d * d + d)
    assert layer == 7_087_872
    pc = count(load_spec("gpt2"))
    assert pc.groups[0].per_layer == layer
    assert pc.embedding == V * d + 1024 * d == 39_383_808
    assert pc.lm_head == 0  # tied
    assert pc.total == pc.embedding + L * layer + 2 * d


def test_llama2_7b_by_hand() -> None:
    # q,k,v,o: 4·d², SwiGLU: 3·d·ff, two RMSNorms: 2d; embedding and untied head V·d each.
    d, ff, L, V = 4096, 11008, 32, 32000
    layer = 4 * d * d + 3 * d * ff + 2 * d
    pc = count(load_spec("llama-2-7b"))
    assert pc.groups[0].per_layer == layer == 202_383_360
    assert pc.lm_head == V * d
    assert pc.breakdown["layers/attn/k_proj"] == L * d * d
    assert pc.total == 2 * V * d + L * layer + d


def test_llama3_8b_gqa_by_hand() -> None:
    # GQA: k and v are (kv·hd) × d = 1024 × 4096, not d × d.
    pc = count(load_spec("llama-3-8b"))
    assert pc.breakdown["layers/attn/k_proj"] == 32 * 1024 * 4096
    assert pc.breakdown["layers/attn/q_proj"] == 32 * 4096 * 4096


def test_rule_of_thumb_beside_exact() -> None:
    pc = count(load_spec("gpt2-medium"))
    assert pc.rule_of_thumb == 12 * 24 * 1024**2 + 50257 * 1024 == 353_453_056
