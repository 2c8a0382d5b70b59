"""Qwen4-Exp's text model: a gated DeltaNet / QSA hybrid with hyper-connections and
per-layer hashed n-gram embeddings. Tensors held against transformers on the meta device (bundled
and varied configs), the cache (DeltaNet, PLE conv and n-gram ids, K/V and index keys) against a
real forward pass, the prefill FLOPs against FlopCounterMode, the QSA pair counts against brute
force, and the config errors' exact text."""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import pytest
from helpers import configs
from helpers.reference import matches_transformers

from llmcalc import count, load_spec
from llmcalc.families.qwen4_exp import is_prime, primes_from
from llmcalc.formulas.flops import (
    attention_flops_per_token,
    block_pairs,
    forward_flops_per_sequence,
    mixer_flops_per_token_all,
    qsa_causal_pairs,
    weight_flops_per_token,
)
from llmcalc.formulas.memory import (
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    state_bytes_per_sequence,
)
from llmcalc.model.spec import ModelSpec
from llmcalc.units import DType
from llmcalc.verify.reference import measure_forward

BUNDLED = "qwen3.8-flash-next"


@pytest.mark.torch
def test_bundled_total_and_tensors() -> None:
    spec = load_spec(BUNDLED)
    pc = count(spec)
    # 176.9B in all, 51.2B of them the layer-2 n-gram table [320,001,536 × 160]; 125.7B without
    # it (the "125B-A6B" ports quote); active: 10 of 512 experts, the table counted as a lookup
    assert (pc.total, pc.active) == (176_943_899_520, 58_507_240_320)
    assert pc.breakdown["layers/ple/ngram_embedding"] == 320_001_536 * 160
    assert pc.total - 320_001_536 * 160 == 125_743_653_760
    assert [(g.name, g.layers.describe()) for g in spec.layer_groups] == [
        ("linear_attention, moe", "0..44 every 4th,2..46 every 4th,5..45 every 4th"),
        ("linear_attention, moe, ple 0", "1"),
        ("indexed_attention, moe", "3..47 every 4th"),
    ]
    matches_transformers(spec)


def test_bundled_cache_and_flops_by_hand() -> None:
    spec = load_spec(BUNDLED)
    # KV per token: 12 QSA layers × (2 kv heads × (256 + 256) + 128 index key) elements, bf16
    # 12 QSA layers: K, V and the index key in bf16; the first keeps 3 int64 position ids a token
    assert kv_cache_bytes_per_token(spec, dtype=DType.bf16) == 12 * (2 * 512 + 128) * 2 + 3 * 8
    # per sequence: 36 DeltaNet layers × (conv 10,240 × 4 bf16 + 48 × 128 × 128 fp32), and layer 2
    # also its PLE conv state 4·2560 × (4 − 1)·3 bf16 and 2 int64 token ids
    gdn = 10_240 * 4 * 2 + 48 * 128 * 128 * 4
    assert state_bytes_per_sequence(spec, dtype=DType.bf16) == 36 * gdn + 10_240 * 9 * 2 + 2 * 8
    assert state_bytes_per_sequence(spec, dtype=DType.bf16) == 116_379_664
    # decoding at 128k: 12 layers × (min(n, 2048 + n mod 4) keys × 2·24·512 + ⌊n/4⌋ blocks × 2·4·128)
    n = 131_072
    assert attention_flops_per_token(spec, ctx=n) == 12 * (2048 * 2 * 24 * 512 + n // 4 * 1024)
    assert attention_flops_per_token(spec, ctx=n + 3) == 12 * (
        2051 * 2 * 24 * 512 + (n + 3) // 4 * 1024)
    # weights: everything a token is multiplied by (10 of 512 experts), the PLE conv included
    assert weight_flops_per_token(spec) == 2 * (pc_active_matmuls(spec))
    # the DeltaNet layers: conv 2·10,240·4 + 2 state reads 2·48·128·128
    assert mixer_flops_per_token_all(spec) == 36 * (2 * 10_240 * 4 + 2 * 2 * 48 * 128 * 128)


def pc_active_matmuls(spec: ModelSpec) -> int:
    d, hc, r, E, k = 2560, 4, 320, 512, 10
    hyper = r * hc * d * 2 + hc * hc * d
    moe = E * d + k * 3 * 640 * d + 3 * 640 * d + d
    gdn = (2 * 2048 + 6144) * d + 6144 * d + 2 * 48 * d + d * 6144
    attn = 2 * 24 * 256 * d + 2 * 2 * 256 * d + d * 24 * 256 + 5 * 128 * d
    ple = hc * d * 2560 + d * 2560 + hc * d * 4
    return (36 * (gdn + moe + 2 * hyper) + 12 * (attn + moe + 2 * hyper) + ple
            + 248_320 * d + 2 * r * hc * d)


# a small qwen4_exp_text config, the fields given put over it
QWEN4: dict[str, Any] = {
    "vocab_size": 128, "hidden_size": 64,
    "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 16, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
    "linear_key_head_dim": 8, "linear_value_head_dim": 12, "moe_intermediate_size": 24,
    "shared_expert_intermediate_size": 32, "num_experts": 4, "num_experts_per_tok": 2,
    "hc_count": 3, "hc_lowrank": 16, "indexer_n_heads": 2, "indexer_kv_heads": 1,
    "indexer_head_dim": 16, "indexer_budget": 4, "indexer_compress_ratio": 2,
    "eos_token_id": 1, "pad_token_id": 0,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                        "partial_rotary_factor": 0.5},
}
tiny = partial(configs.tiny, "qwen4_exp_text", base=QWEN4)


PLE = {"ple_layer_ids": [2], "ple_embed_dim": 32, "ple_conv_kernel_size": 3, "ngram_size": 3,
       "heads_per_ngram": 2, "ngram_vocab_size_base": 50, "make_ngram_vocab_size_divisible_by": 8}
VARIANTS: dict[str, dict[str, Any]] = {
    "default-interval-no-ple": tiny(),
    "interval-3-tied-bias": tiny(num_hidden_layers=7, full_attention_interval=3,
                                 tie_word_embeddings=True, attention_bias=True),
    "ple-one-layer": tiny(**PLE),
    "ple-three-layers-4-grams": tiny(
        num_hidden_layers=6, **{**PLE, "ple_layer_ids": [5, 1, 2], "ngram_size": 4,
                                "heads_per_ngram": 3, "ple_embed_dim": 36,
                                "ngram_vocab_size_base": 1000, "ple_conv_kernel_size": 2}),
    "layer-types-listed": tiny(
        num_hidden_layers=5, hc_count=2, hc_lowrank=8, num_experts=6, num_experts_per_tok=3,
        layer_types=["full_attention", "linear_attention", "indexed_attention",
                     "linear_attention", "linear_attention"], **{**PLE, "ple_layer_ids": [4, 5]}),
    "wide-heads": tiny(hidden_size=96, num_attention_heads=6, num_key_value_heads=3,
                       head_dim=32, linear_num_key_heads=3, linear_num_value_heads=6,
                       indexer_n_heads=3, indexer_head_dim=24, hc_count=5, hc_lowrank=7),
    "all-linear": tiny(num_hidden_layers=3, layer_types=["linear_attention"] * 3,
                       indexer_n_heads=None, indexer_kv_heads=None, indexer_head_dim=None,
                       indexer_budget=None, indexer_compress_ratio=None, **PLE),
}


@pytest.mark.torch
@pytest.mark.parametrize("fields", VARIANTS.values(), ids=VARIANTS.keys())
def test_variant_matches_transformers(write: Any, fields: dict[str, Any]) -> None:
    matches_transformers(load_spec(write("config.json", fields)))


def test_ngram_table_rows_by_hand(write: Any) -> None:
    """Layer k's heads take the primes k·H + 1 … (k + 1)·H at or above the base; rows padded."""
    spec = load_spec(write("config.json", VARIANTS["ple-three-layers-4-grams"]))
    shapes = dict(spec.named_shapes())
    primes = primes_from(1000, 27)  # 3 PLE layers × (4 − 1)·3 heads
    assert primes[:4] == [1009, 1013, 1019, 1021]
    for k, layer in enumerate([0, 1, 4]):  # ple_layer_ids [5, 1, 2] sorted: layers 1, 2, 5
        rows = -(-sum(primes[9 * k:9 * k + 9]) // 8) * 8
        assert shapes[f"model.layers.{layer}.ple.ple_embedding.ngram_embedding.weight"] == (rows, 4)
    big = [n for n in range(20_000_000, 20_000_200) if is_prime(n)]
    assert big[:3] == [20_000_003, 20_000_023, 20_000_033]
    assert not is_prime(3_215_031_751)  # a strong pseudoprime to bases 2, 3, 5 and 7


# ---- the cache and FLOPs of a real forward pass -------------------------------------------------
CUTS = {
    # DeltaNet with PLE, then QSA + MoE; 11 tokens: blocks of 2, a budget of 4 tokens
    "ple-then-qsa": tiny(num_hidden_layers=2, layer_types=["linear_attention", "full_attention"],
                         **{**PLE, "ple_layer_ids": [1]}),
    "qsa-then-deltanet": tiny(num_hidden_layers=2, indexer_compress_ratio=3, indexer_budget=6,
                              layer_types=["indexed_attention", "linear_attention"]),
}
BATCH, SEQ = 2, 11


@pytest.mark.torch
@pytest.mark.parametrize("fields", CUTS.values(), ids=CUTS.keys())
def test_cache_bytes_and_prefill_flops_equal_transformers(write: Any, fields: dict[str, Any]) -> None:
    spec = load_spec(write("config.json", fields))
    m = measure_forward(spec, num_layers=2, seq_len=SEQ, batch=BATCH, use_cache=True)
    # keys, values, index keys; DeltaNet conv + state; PLE conv state and n-gram ids (int64); the
    # 3 × int64 position ids per token the first QSA layer keeps for all indexers
    assert m.kv_cache_bytes == kv_cache_bytes(spec, batch=BATCH, ctx=SEQ, dtype=DType.bf16)
    assert m.flops == BATCH * forward_flops_per_sequence(spec, ctx=SEQ, causal=False)


@pytest.mark.torch
def test_cache_layers_as_transformers_keeps_them(write: Any) -> None:
    spec = load_spec(write("config.json", CUTS["ple-then-qsa"]))
    m = measure_forward(spec, num_layers=2, seq_len=SEQ, batch=BATCH, use_cache=True)
    assert m.cache_layers == ("LinearAttentionLayer", "DynamicIndexedLayer")
    # PLE layer: conv 2·16 + 12·4 = 80 channels × 4, state 4 × 8 × 12 fp32, PLE conv 3·64 × 6,
    # 2 token ids; QSA layer: 11 tokens × (2 × 2 × 16 + 16)
    state = 80 * 4 * 2 + 4 * 8 * 12 * 4 + 192 * 6 * 2 + 2 * 8
    assert state_bytes_per_sequence(spec, dtype=DType.bf16) == state
    assert m.kv_cache_bytes == BATCH * (state + SEQ * ((2 * 2 * 16 + 16) * 2 + 3 * 8))


@pytest.mark.parametrize(("budget", "block"), [(4, 2), (6, 3), (8, 4), (4, 4), (9, 1)])
def test_qsa_pairs_equal_brute_force(budget: int, block: int) -> None:
    for n in range(1, 60):
        assert qsa_causal_pairs(ctx=n, budget=budget, block=block) == sum(
            min(i, budget + i % block) for i in range(1, n + 1))
        assert block_pairs(ctx=n, block=block) == sum(i // block for i in range(1, n + 1))


def test_causal_prefill_counts_the_selected_keys(write: Any) -> None:
    spec = load_spec(write("config.json", CUTS["ple-then-qsa"]))
    n = 11
    full = forward_flops_per_sequence(spec, ctx=n, causal=False)
    causal = forward_flops_per_sequence(spec, ctx=n, causal=True)
    # the QSA layer reads Σ min(i, 4 + i mod 2) keys instead of n² (2·4 heads·(16 + 16) a pair);
    # the DeltaNet: n steps instead of the padded conv and the chunked scan
    selected = sum(min(i, 4 + i % 2) for i in range(1, n + 1))
    assert selected == 42
    gdn = spec.layer_groups[0].mixer
    assert gdn is not None
    from llmcalc.formulas.flops import mixer_flops_per_sequence

    assert full - causal == (n * n - selected) * 2 * 4 * 32 + (
        mixer_flops_per_sequence(gdn, ctx=n, causal=False)
        - mixer_flops_per_sequence(gdn, ctx=n, causal=True))


def test_hostile_depth_is_instant(write: Any) -> None:
    start = time.perf_counter()
    spec = load_spec(write("config.json", tiny(num_hidden_layers=10**12, **PLE)))
    pc = count(spec)
    assert [len(g.layers) for g in spec.layer_groups] == [
        500_000_000_000 + 249_999_999_999, 1, 250_000_000_000]
    assert pc.total > 0 and time.perf_counter() - start < 2


ERRORS = [
    (tiny(ple_layer_ids=[4], **{k: v for k, v in PLE.items() if k != "ple_layer_ids"}),
     "ple_layer_ids.0: layer 4 is an attention layer; PLE is only on linear_attention layers"),
    (tiny(**{**PLE, "ple_layer_ids": [9]}),
     "ple_layer_ids.0: layer 9 is past num_hidden_layers (4; layers count from 1)"),
    (tiny(**{**PLE, "ple_embed_dim": 30}),
     "ple_embed_dim (30) must be divisible by the 4 n-gram heads "
     "((ngram_size − 1) × heads_per_ngram)"),
    (tiny(indexer_budget=None),
     "indexer_budget: missing required field (transformers builds a QSA indexer on every "
     "attention layer)"),
    (tiny(indexer_budget=5),
     "indexer_budget (5) must be a multiple of indexer_compress_ratio (2)"),
    (tiny(indexer_kv_heads=2), "indexer_kv_heads: Qwen4-Exp QSA has one index key head, got 2"),
    (tiny(hc_count=1), "hc_count: Qwen4-Exp mixes at least 2 residual streams, got 1"),
    (tiny(layer_types=["linear_attention", "mamba", "linear_attention", "full_attention"]),
     "layer_types.1: unknown layer type 'mamba' (one of: linear_attention, indexed_attention, "
     "full_attention)"),
    (tiny(num_experts_per_tok=5), "num_experts_per_tok (5) must not exceed num_experts (4)"
        ": a router's top-k cannot pick more experts than there are (transformers' "
        "forward fails)"),
    (tiny(**{**PLE, "heads_per_ngram": 40_000, "ple_embed_dim": 80_000}),
     "heads_per_ngram: 1 PLE layers × 80,000 n-gram heads is more than the 4,096 tables "
     "llmcalc sizes (each a prime found one by one)"),
]


@pytest.mark.parametrize("fields,message", ERRORS,
                         ids=["ple-on-attention", "ple-past", "ple-dim", "qsa-missing",
                              "qsa-budget", "qsa-kv-heads", "hc-count", "kind", "top-k",
                              "ngram-heads"])
def test_config_errors(cli: Any, write: Any, fields: dict[str, Any], message: str) -> None:
    path = write("bad.json", fields)
    run = cli("count", path)
    assert (run.code, run.stderr) == (2, f"error: {path}: {message}\n")


def test_cli_memory_and_flops_explain(cli: Any) -> None:
    mem = cli("memory", BUNDLED, "--ctx", "128k", "--explain")
    assert mem.code == 0
    assert "+ 2 int64 token ids × 8" in mem.stdout
    fl = cli("flops", BUNDLED, "--ctx", "128k", "--explain")
    assert fl.code == 0
    text = " ".join(fl.stdout.split())
    assert "min(131,072, 2,048 + 131,072 mod 4)" in text
    assert "32,768 blocks of 4 scored × 1,024 (indexer)" in text
    assert "Qwen4-Exp QSA" in text
