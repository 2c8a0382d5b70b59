"""Hybrid model types: LFM3 (lfm2.py) and Lara-Mini (qwen3_next.py), described as
changes to existing families; Inkling (inkling.py), attention wrapped in short convolutions.

Each is held to transformers on the meta device (names, shapes, per-layer counts and totals) on its
bundled config and on variants; its cache bytes after a real forward pass (2 sequences of 8 tokens)
to llmcalc's KV + state bytes; and FlopCounterMode's count of that pass to llmcalc's full prefill
FLOPs (weights, attention over all n² pairs, the convolution over the padded sequence).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from helpers import configs
from helpers.reference import matches_transformers, total_from_names

from llmcalc import count, load_spec
from llmcalc.families.inkling import _sum_ceil
from llmcalc.formulas.flops import forward_flops_per_sequence, mixer_flops_per_token, weight_terms
from llmcalc.formulas.memory import kv_cache_bytes, state_bytes_per_sequence
from llmcalc.model.spec import LayerSet, Run
from llmcalc.units import DType
from llmcalc.verify.reference import measure_forward

tiny = partial(configs.tiny, base=configs.THREE_LAYERS)

TOTALS = {
    "lfm3-default": 1_728_801_536,  # Lfm3Config() defaults (LFM3-1.7B's documented shape)
    "lara-mini-default": 7_281_684_672,  # LaraMiniConfig() defaults (Lara-4-Mini's)
    "inkling-text-default": 975_340_270_146,  # InklingTextConfig() defaults (Inkling's text model)
    "inkling2-text-default": 593_718_478_848,  # Inkling2TextConfig() defaults (Inkling-2-Small)
}
# Lara-Mini: 34 layers × 124 of 128 experts (gate_up 2·512 × 1024, down 1024 × 512) left out
ACTIVE = {"lara-mini-default": 7_281_684_672 - 34 * 124 * 3 * 512 * 1024,
          # Inkling: 66 layers × 250 of 256 experts (3 × 3072 × 6144 each) left out
          "inkling-text-default": 975_340_270_146 - 66 * 250 * 3 * 3072 * 6144,
          # Inkling 2: 48 layers × 376 of 384 experts (3 × 2304 × 4608 each) left out
          "inkling2-text-default": 593_718_478_848 - 48 * 376 * 3 * 2304 * 4608}

IDS = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}  # within the tiny vocab

VARIANTS = {
    # no layer_types: transformers derives them (conv, conv, full, conv, sliding, conv, full, …)
    "lfm3-default-pattern-9": tiny("lfm3", **IDS, num_hidden_layers=9, num_attention_heads=4,
                                   num_key_value_heads=2, head_dim=16, intermediate_size=96),
    "lfm3-listed-no-gate-no-sandwich-bias-untied": tiny(
        "lfm3", **IDS, num_attention_heads=4, num_key_value_heads=4, head_dim=8,
        intermediate_size=40,
        layer_types=["sliding_attention", "conv", "full_attention"], use_attention_gate=False,
        use_sandwich_norm=False, attention_bias=True, conv_bias=True, conv_L_cache=3,
        tie_word_embeddings=False),
    "lfm3-all-conv": tiny("lfm3", **IDS, num_attention_heads=2, num_key_value_heads=1,
                          intermediate_size=64, layer_types=["conv", "conv", "conv"]),
}
LINEAR = {"linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 16,
          "linear_value_head_dim": 8, "linear_conv_kernel_dim": 3}
EXPERTS = {"moe_intermediate_size": 32, "shared_expert_intermediate_size": 48, "num_experts": 4,
           "num_experts_per_tok": 2}
VARIANTS |= {
    # no layer_types: linear, sliding, linear, full, sliding, then again
    "lara_mini-default-pattern-7": tiny("lara_mini", num_hidden_layers=7, num_attention_heads=4,
                                        num_key_value_heads=2, head_dim=16, **LINEAR, **EXPERTS),
    "lara_mini-listed-bias-untied": tiny(
        "lara_mini", num_attention_heads=4, num_key_value_heads=4, head_dim=8, **EXPERTS,
        layer_types=["full_attention", "linear_attention", "sliding_attention"],
        linear_num_key_heads=1, linear_num_value_heads=3, attention_bias=True,
        tie_word_embeddings=False),
    # the gated query with attention_bias: biases on q (2·h·hd), k, v, o
    "qwen3_next-attention-bias": tiny(
        "qwen3_next", num_attention_heads=4, num_key_value_heads=2, head_dim=8,
        intermediate_size=40, **EXPERTS, layer_types=["linear_attention", "full_attention",
                                                      "full_attention"],
        attention_bias=True, **LINEAR),
}
INKLING = {"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
           "swa_num_attention_heads": 2, "swa_num_key_value_heads": 1, "swa_head_dim": 8,
           "d_rel": 4, "rel_extent": 12, "sliding_window_size": 6, "intermediate_size": 96,
           "moe_intermediate_size": 32, "n_routed_experts": 4, "num_experts_per_tok": 2,
           "n_shared_experts": 1}
VARIANTS |= {
    # every 6th layer full, the rest sliding; the first 2 layers dense (dense_mlp_idx)
    "inkling_text-default-pattern-dense-prefix": tiny("inkling_text", num_hidden_layers=8,
                                                      dense_mlp_idx=2, **INKLING),
    # dense_intermediate_size: intermediate_size is then the experts' width
    "inkling_text-local-ids-dense-width": tiny(
        "inkling_text", **(INKLING | {"intermediate_size": 24, "n_shared_experts": 3}),
        local_layer_ids=[0, 2], dense_mlp_idx=1, dense_intermediate_size=80, conv_kernel_size=3),
    "inkling_text-listed": tiny(
        "inkling_text", **INKLING, layer_types=["hybrid_sliding", "hybrid", "hybrid_sliding"],
        mlp_layer_types=["sparse", "dense", "sparse"]),
}
INKLING2 = {k: v for k, v in INKLING.items() if k not in ("intermediate_size", "n_shared_experts")}
VARIANTS |= {
    # every 6th layer full; blocks of 3 layers; the head narrower than the vocabulary
    "inkling2_text-default-pattern": tiny("inkling2_text", num_hidden_layers=8,
                                          n_layers_per_attn_res_block=3, unpadded_vocab_size=90,
                                          **INKLING2),
    "inkling2_text-listed-full-first": tiny(
        "inkling2_text", num_hidden_layers=5, n_layers_per_attn_res_block=2,
        unpadded_vocab_size=100, conv_kernel_size=3, **INKLING2,
        layer_types=["hybrid", "hybrid_sliding", "hybrid", "hybrid", "hybrid_sliding"]),
}


@pytest.mark.parametrize("name,total", TOTALS.items())
def test_bundled_total(name: str, total: int) -> None:
    spec = load_spec(name)
    pc = count(spec)
    assert pc.total == total == spec.expected["total_params"]
    assert pc.active == ACTIVE.get(name, total)
    assert total_from_names(spec) == total


@pytest.mark.torch
@pytest.mark.parametrize("name", TOTALS)
def test_bundled_matches_transformers(name: str) -> None:
    matches_transformers(load_spec(name))


@pytest.mark.torch
@pytest.mark.parametrize("fields", VARIANTS.values(), ids=VARIANTS.keys())
def test_variant_matches_transformers(write: Any, fields: dict[str, Any]) -> None:
    matches_transformers(load_spec(write("config.json", fields)))


def test_lfm3_layer_kinds() -> None:
    # 24 layers: full attention at i ≡ 2 (mod 4), sliding at i ≡ 0 (mod 4) but layer 0, conv else
    spec = load_spec("lfm3-default")
    kinds = {g.name: (len(g.layers), g.layers.describe()) for g in spec.layer_groups}
    assert kinds == {
        "conv": (13, "0,1..21 every 4th,3..23 every 4th"),
        "attention": (6, "2..22 every 4th"),
        "sliding_attention": (5, "4..20 every 4th"),
    }
    # per sequence: 13 conv states of d × 7 taps; per token: K and V of 4 kv heads of 128 in the
    # 11 attention layers (the 5 sliding ones only up to 256 tokens)
    assert state_bytes_per_sequence(spec, dtype=DType.bf16) == 13 * 2048 * 7 * 2
    assert kv_cache_bytes(spec, batch=1, ctx=1024, dtype=DType.bf16) == (
        13 * 2048 * 7 * 2 + (6 * 1024 + 5 * 256) * 2 * 4 * 128 * 2
    )


def test_lara_mini_layer_kinds() -> None:
    spec = load_spec("lara-mini-default")  # 34 layers: linear, sliding, linear, full, sliding
    kinds = {g.name: (len(g.layers), g.layers.describe()) for g in spec.layer_groups}
    assert kinds == {
        "linear_attention, moe": (14, "0..30 every 5th,2..32 every 5th"),
        "sliding_attention, moe": (13, "1..31 every 5th,4..29 every 5th"),
        "attention, moe": (7, "3..33 every 5th"),
    }
    # per sequence: 14 DeltaNet states (conv over 2·8·128 + 16·128 channels × 4 taps at bf16,
    # 16 heads × 128 × 128 in float32); per token: 20 attention layers' K and V (4 kv × 128),
    # the 13 sliding ones up to 512 tokens
    state = 14 * ((2 * 8 * 128 + 16 * 128) * 4 * 2 + 16 * 128 * 128 * 4)
    assert state_bytes_per_sequence(spec, dtype=DType.bf16) == state
    assert kv_cache_bytes(spec, batch=1, ctx=4096, dtype=DType.bf16) == (
        state + (7 * 4096 + 13 * 512) * 2 * 4 * 128 * 2
    )


def test_inkling_layer_kinds_state_and_relative_bias_flops() -> None:
    spec = load_spec("inkling-text-default")  # 66 layers: every 6th full, the others sliding
    kinds = {g.name: (len(g.layers), g.layers.describe()) for g in spec.layer_groups}
    assert kinds == {"sliding_attention, moe": (55, "0..64 (5 of every 6)"),
                     "attention, moe": (11, "5..65 every 6th")}
    # conv states in float32 whatever the cache dtype: K, V (kv × 128 each) and 2 × d, 4 taps
    full, sliding = (2 * 8 * 128 + 2 * 6144) * 4 * 4, (2 * 16 * 128 + 2 * 6144) * 4 * 4
    assert state_bytes_per_sequence(spec, dtype=DType.bf16) == 11 * full + 55 * sliding
    assert state_bytes_per_sequence(spec, dtype=DType.fp8) == 11 * full + 55 * sliding
    # the relative bias: each of 64 heads' 16-dim state times the 16 × R bank, R 1024 or 512
    terms = [t.flops for t in weight_terms(spec) if "rel_logits" in t.name]
    assert sorted(terms) == [11 * 2 * 64 * 16 * 1024, 55 * 2 * 64 * 16 * 512]


def test_inkling2_depth_flops_by_hand() -> None:
    # 48 layers, blocks of 6, full at i ≡ 5 (mod 6): layer i reads ⌈i/6⌉ blocks + its partial sum
    spec = load_spec("inkling2-text-default")
    d, n, L = 4608, 6, 48
    sources = 0
    for i in range(L):
        blocks = -(-i // n)
        queries = 3 if i % 6 == 5 else 1
        sources += (queries * (blocks + 1) if i else 0) + blocks + 1 + (i % n == 0)
    sources += -(-L // n) + 1  # the final input
    assert spec.depth_flops_per_token == 4 * d * sources
    # full layers' K and V convs are per-token products: in the state, not in the FLOPs
    full = next(g for g in spec.layer_groups if g.name == "attention")
    assert full.mixer is not None and mixer_flops_per_token(full.mixer) == 2 * 2 * d * 4
    assert full.mixer.conv_elements == (2 * 8 * 128 + 2 * d) * 4


@pytest.mark.parametrize("period,width,start,stop,n", [
    (1, 1, 0, 50, 6), (6, 5, 0, 47, 6), (6, 1, 5, 100, 4), (7, 3, 2, 60, 5), (4, 2, 9, 10, 1)])
def test_sum_ceil_equals_brute_force(period: int, width: int, start: int, stop: int,
                                     n: int) -> None:
    layers = LayerSet((Run(start, stop, start % period, period, width),))
    assert _sum_ceil(layers, n) == sum(-(-i // n) for i in layers)


def test_hostile_layer_count_is_instant() -> None:
    spec = load_spec("lfm3-default", overrides=["num_hidden_layers=1000000000000"])
    groups = {g.name: len(g.layers) for g in spec.layer_groups}
    assert groups == {"conv": 500_000_000_001, "attention": 250_000_000_000,
                      "sliding_attention": 249_999_999_999}
    spec = load_spec("lara-mini-default", overrides=["num_hidden_layers=1000000000000"])
    assert [len(g.layers) for g in spec.layer_groups] == [400_000_000_000, 400_000_000_000,
                                                          200_000_000_000]
    spec = load_spec("inkling-text-default", overrides=["num_hidden_layers=1000000000000",
                                                       "dense_mlp_idx=999999999999"])
    groups = {g.name: len(g.layers) for g in spec.layer_groups}
    assert groups == {"sliding_attention, mlp": 833_333_333_333, "attention, mlp": 166_666_666_666,
                      "sliding_attention, moe": 1}  # layer 10¹² − 1: (i + 1) mod 6 = 4
    spec = load_spec("inkling2-text-default", overrides=["num_hidden_layers=1000000000000"])
    assert sum(len(g.layers) for g in spec.layer_groups) == 10**12
    assert spec.depth_flops_per_token > 4 * 4608 * 10**12


# ---- cache bytes and FLOPs of a real forward pass -----------------------------------------------

BATCH, SEQ = 2, 8
# cut to a few layers with one of each kind; name, overrides, the cache layers transformers makes
CUTS = [
    ("lfm3-default", ['layer_types=["conv","full_attention","sliding_attention"]',
                      "num_hidden_layers=3", "hidden_size=256", "intermediate_size=512"],
     ("LinearAttentionLayer", "DynamicLayer", "DynamicSlidingWindowLayer")),
    # gated DeltaNet (chunks of 64: 8 tokens padded to one), full and sliding attention, 4 experts
    ("lara-mini-default", ['layer_types=["linear_attention","full_attention","sliding_attention"]',
                           "num_hidden_layers=3", "hidden_size=512", "num_experts=4",
                           "num_experts_per_tok=2"],
     ("LinearAttentionLayer", "DynamicLayer", "DynamicSlidingWindowLayer")),
    # attention and the four convs' states in one cache layer; dense, then routed + shared experts
    ("inkling-text-default", ['layer_types=["hybrid","hybrid_sliding"]',
                              'mlp_layer_types=["dense","sparse"]', "num_hidden_layers=2",
                              "hidden_size=256", "intermediate_size=512", "n_routed_experts=4",
                              "num_experts_per_tok=2", "moe_intermediate_size=128"],
     ("LinearAttentionAndFullAttentionLayer", "LinearAttentionAndSlidingWindowAttentionLayer")),
    # Inkling 2: static convs in sliding layers, dynamic (elementwise) ones in full layers,
    # attention over blocks of 2 layers
    ("inkling2-text-default", ['layer_types=["hybrid_sliding","hybrid","hybrid_sliding"]',
                               "num_hidden_layers=3", "n_layers_per_attn_res_block=2",
                               "hidden_size=256", "n_routed_experts=4", "num_experts_per_tok=2",
                               "moe_intermediate_size=128", "vocab_size=1000",
                               "unpadded_vocab_size=900"],
     ("LinearAttentionAndSlidingWindowAttentionLayer", "LinearAttentionAndFullAttentionLayer",
      "LinearAttentionAndSlidingWindowAttentionLayer")),
    ("inkling2-text-default", ['layer_types=["hybrid","hybrid_sliding"]', "num_hidden_layers=2",
                               "n_layers_per_attn_res_block=1", "hidden_size=256",
                               "n_routed_experts=4", "num_experts_per_tok=2",
                               "moe_intermediate_size=128", "vocab_size=1000",
                               "unpadded_vocab_size=900"],
     ("LinearAttentionAndFullAttentionLayer", "LinearAttentionAndSlidingWindowAttentionLayer")),
]

CUT_IDS = [f"{c[0]}-{i}" for i, c in enumerate(CUTS)]
# Inkling 2 does not run in bf16 on the CPU (its fp32 router meets bf16 inputs): run it in fp32
RUN_DTYPE = {"inkling2-text-default": DType.fp32}


@pytest.mark.torch
@pytest.mark.parametrize(("name", "overrides", "layers"), CUTS, ids=CUT_IDS)
def test_cache_bytes_equal_transformers(name: str, overrides: list[str], layers: Any) -> None:
    spec = load_spec(name, overrides=overrides)
    dtype = RUN_DTYPE.get(name, DType.bf16)
    m = measure_forward(spec, num_layers=spec.num_layers, seq_len=SEQ, batch=BATCH, use_cache=True,
                        dtype=dtype.value)
    assert m.cache_layers == layers
    assert m.kv_cache_bytes == kv_cache_bytes(spec, batch=BATCH, ctx=SEQ, dtype=dtype)
    assert 0 < BATCH * state_bytes_per_sequence(spec, dtype=dtype) < m.kv_cache_bytes


@pytest.mark.torch
@pytest.mark.parametrize(("name", "overrides", "layers"), CUTS, ids=CUT_IDS)
def test_prefill_flops_equal_flop_counter(name: str, overrides: list[str], layers: Any) -> None:
    spec = load_spec(name, overrides=overrides)
    m = measure_forward(spec, num_layers=spec.num_layers, seq_len=SEQ,
                        dtype=RUN_DTYPE.get(name, DType.bf16).value)
    assert m.flops == forward_flops_per_sequence(spec, ctx=SEQ, causal=False)
    assert "aten.convolution" in m.flops_by_op and "aten.bmm" in m.flops_by_op
