"""DeepSeek-V4 (``deepseek_v4``) and HY-V4 (``hy_v4``) against transformers 5.24.

Tensors are held against the meta-device model (bundled and varied configs: layer kinds as listed,
as a checkpoint's compress_ratios spell them and transformers' default pattern, compress rates,
hash-routed and learned-routed layers, hyper-connection streams, experts, widths, tied heads); small
whole models run on the CPU: prefill FLOPs equal FlopCounterMode's, and the cache a real forward
pass leaves (the window's K = V tensor, the compressors' pooled entries, open windows and overlap
series, float32 gates included) equals llmcalc's bytes. Config errors are pinned by their text.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import pytest
from helpers import configs
from helpers.reference import matches_transformers

from llmcalc import count, load_spec
from llmcalc.formulas.flops import (
    attention_flops_per_token,
    block_pairs,
    compressed_pairs,
    forward_flops_per_sequence,
    forward_flops_per_token,
    mixer_flops_per_token_all,
    weight_flops_per_token,
)
from llmcalc.formulas.memory import compressor_elements, kv_cache_bytes, kv_cache_bytes_per_token
from llmcalc.model.spec import ModelSpec
from llmcalc.units import DType
from llmcalc.verify.reference import measure_forward


def _spec(write: Any, fields: dict[str, Any]) -> ModelSpec:
    """The spec of ``fields`` written as a config (fields set to None left out)."""
    return load_spec(write("config.json", {k: v for k, v in fields.items() if v is not None}))


# ---- bundled configs ----------------------------------------------------------------------------

BUNDLED = [
    # name, model_type, total, active, mtp_params
    ("deepseek-v4-flash", "deepseek_v4", 284_332_230_231, 13_799_622_231, 6_610_048_635),
    ("deepseek-v4-pro", "deepseek_v4", 1_572_997_179_491, 49_779_058_787, 25_840_145_595),
    ("hy-v4-defaults", "hy_v4", 58_278_193_133, 5_179_877_357, None),
    ("hy4-preview", "hy_v4", 769_907_389_085, 49_057_526_429, None),
]


@pytest.mark.torch
@pytest.mark.parametrize(("name", "model_type", "total", "active", "mtp"), BUNDLED,
                         ids=[b[0] for b in BUNDLED])
def test_bundled_config_is_exact(name: str, model_type: str, total: int, active: int,
                                 mtp: int | None) -> None:
    spec = load_spec(name)
    assert spec.model_type == model_type
    pc = count(spec)
    assert (pc.total, pc.active) == (total, active)
    assert (spec.expected["total_params"], spec.expected["active_params"]) == (total, active)
    assert dict(spec.unbuilt).get("mtp_params") == mtp
    matches_transformers(spec, active=True)


def test_flash_by_hand() -> None:
    """DeepSeek-V4-Flash's 284B, term by term from its config.json."""
    d, L, h, hd, r, g, o, E, ff, V, s, ih, ihd = (
        4096, 43, 64, 512, 1024, 8, 1024, 256, 2048, 129280, 4, 64, 128)
    hyper = 2 * ((2 + s) * s * s * d + (2 + s) * s + 3)  # attn_hc, ffn_hc: fn, base, scale
    attn = d * r + r + h * hd * r + hd * d + hd + g * o * (h * hd // g) + d * g * o + h
    moe = E * d + E * 3 * ff * d + 3 * ff * d  # router, 256 experts, one shared expert
    layer = hyper + 2 * d + attn + moe
    hca = 2 * hd * d + 128 * hd + hd  # kv_proj, gate_proj, position_bias [128, 512], kv_norm
    csa = (2 * 2 * hd * d + 4 * 2 * hd + hd  # its two series: 2·hd wide
           + 2 * 2 * ihd * d + 4 * 2 * ihd + ihd + ih * ihd * r + ih * d)  # the indexer
    outer = 2 * V * d + d + s * s * d + s + 1  # embed, lm_head, norm, hc_head
    spec = load_spec("deepseek-v4-flash")
    assert [(g.name, g.layers.describe()) for g in spec.layer_groups] == [
        ("sliding_attention", "0..1"),
        ("compressed_sparse_attention", "2..42 every 2nd"),
        ("heavily_compressed_attention", "3..41 every 2nd"),
    ]
    assert count(spec).total == L * layer + 21 * csa + 20 * hca + outer == 284_332_230_231
    # the MTP layer (compress_ratios' 44th entry: sliding), e_proj and h_proj, three norms, hc_head
    assert dict(spec.unbuilt)["mtp_params"] == layer + 2 * d * d + 3 * d + s * s * d + s + 1


def test_pro_cache_and_flops_at_1m_tokens() -> None:
    """DeepSeek quotes 9.62 GiB of bf16 cache per 1M-token sequence for V4-Pro, 8.7× below
    DeepSeek-V3.2, and 27% of V3.2's FLOPs per token there."""
    pro, v32 = load_spec("deepseek-v4-pro"), load_spec("deepseek-v3.2-exp")
    n = 1_048_576
    kv = kv_cache_bytes(pro, batch=1, ctx=n, dtype=DType.bf16)
    # 61 layers × 128 tokens × 512 (K = V); 31 HCA layers × ⌊n/128⌋ entries × 512; 30 CSA layers
    # × ⌊n/4⌋ × (512 + 128) plus their overlap series 4 × (512 + 128), gate in float32
    assert kv == 2 * (61 * 128 * 512 + 31 * (n // 128) * 512 + 30 * (n // 4) * 640
                      + 30 * 4 * 640) + 4 * 30 * 4 * 640 == 10_334_832_640
    assert round(kv / 2**30, 2) == 9.63
    v32_kv = kv_cache_bytes(v32, batch=1, ctx=n, dtype=DType.bf16)
    assert round(v32_kv / kv, 1) == 8.7
    assert kv_cache_bytes_per_token(pro, dtype=DType.bf16) == 61 * 512 * 2
    fwd, fwd_v32 = forward_flops_per_token(pro, ctx=n), forward_flops_per_token(v32, ctx=n)
    assert fwd == 303_247_163_392
    assert round(100 * fwd / fwd_v32) == 27
    # a decoded token: 128 window keys + ⌊n/128⌋ HCA entries, or + 1,024 of ⌊n/4⌋ CSA entries
    # (and the indexer scoring all ⌊n/4⌋ at 2·64·128); the streams' mixing 2·16·7168 twice a layer
    pair = 2 * 128 * (512 + 512)
    assert attention_flops_per_token(pro, ctx=n) == (
        31 * (128 + n // 128) * pair + 30 * ((128 + 1024) * pair + n // 4 * 2 * 64 * 128))
    assert mixer_flops_per_token_all(pro) == 2 * 61 * 2 * 16 * 7168
    assert fwd == weight_flops_per_token(pro) + attention_flops_per_token(pro, ctx=n) + (
        mixer_flops_per_token_all(pro))


# ---- varied configs ------------------------------------------------------------------------------


# a small deepseek_v4 config, the fields given put over it
DSV4: dict[str, Any] = {
    "vocab_size": 128, "hidden_size": 64,
    "moe_intermediate_size": 24, "num_hidden_layers": 4, "num_attention_heads": 4,
    "head_dim": 32, "q_lora_rank": 48, "o_groups": 2, "o_lora_rank": 16,
    "n_routed_experts": 4, "num_experts_per_tok": 2, "index_n_heads": 2, "index_head_dim": 16,
    "index_topk": 3, "hc_mult": 3, "sliding_window": 16, "qk_rope_head_dim": 8,
    "compress_ratios": [0, 4, 128, 4], "num_hash_layers": 2,
    "compress_rates": {"compressed_sparse_attention": 4, "heavily_compressed_attention": 8},
}
tiny = partial(configs.tiny, "deepseek_v4", base=DSV4)


CSA, HCA, SLIDING = "compressed_sparse_attention", "heavily_compressed_attention", "sliding_attention"
VARIANTS: dict[str, dict[str, Any]] = {
    "compress-ratios-hash-2": tiny(),
    "default-pattern-7-layers": tiny(num_hidden_layers=7, compress_ratios=None),
    "layer-types-listed-long": tiny(
        num_hidden_layers=5, compress_ratios=None,
        layer_types=[HCA, SLIDING, CSA, CSA, HCA, SLIDING]),  # one more entry: cut, as transformers
    "legacy-rates-no-hash": tiny(compress_rates=None, compress_rate_csa=2, compress_rate_hca=16,
                                 num_hash_layers=0),
    "mlp-kinds-listed-tied-bias": tiny(mlp_layer_types=["moe", "hash_moe", "moe", "hash_moe"],
                                       tie_word_embeddings=True, mlp_bias=True),
    "wide-streams-experts": tiny(hidden_size=96, num_attention_heads=6, head_dim=16, o_groups=3,
                                 o_lora_rank=8, hc_mult=5, n_routed_experts=8,
                                 num_experts_per_tok=3, index_n_heads=3, index_head_dim=8,
                                 q_lora_rank=24),
    "shared-experts-not-read": tiny(n_shared_experts=2, intermediate_size=40,
                                    moe_intermediate_size=None),
    "one-stream": tiny(hc_mult=1, num_hidden_layers=3, compress_ratios=[128, 0, 4]),
}


@pytest.mark.torch
@pytest.mark.parametrize("fields", VARIANTS.values(), ids=VARIANTS.keys())
def test_variant_matches_transformers(write: Any, fields: dict[str, Any]) -> None:
    matches_transformers(_spec(write, fields), active=True)


def test_default_pattern_and_notes(write: Any) -> None:
    spec = _spec(write, VARIANTS["default-pattern-7-layers"])
    # transformers' default: two HCA layers, then HCA and CSA in turn
    assert [(g.name, g.layers.describe()) for g in spec.layer_groups] == [
        (HCA, "0..2,4..6 every 2nd"), (CSA, "3..5 every 2nd")]
    spec = _spec(write, VARIANTS["shared-experts-not-read"])
    assert "n_shared_experts=2 is not read by transformers' DeepseekV4" in " ".join(spec.notes)


def test_hash_routing_changes_no_tensor(write: Any) -> None:
    """A hash-routed layer's expert choice is a buffer (tid2eid): its tensors and FLOPs are a
    learned-routed layer's."""
    hashed, learned = _spec(write, tiny(num_hash_layers=4)), _spec(write, tiny(num_hash_layers=0))
    assert dict(hashed.named_shapes()) == dict(learned.named_shapes())
    assert forward_flops_per_sequence(hashed, ctx=20, causal=False) == forward_flops_per_sequence(
        learned, ctx=20, causal=False)


def hy_tiny(**fields: Any) -> dict[str, Any]:
    return {
        "model_type": "hy_v4", "vocab_size": 128, "hidden_size": 64, "intermediate_size": 48,
        "moe_intermediate_size": 16, "num_hidden_layers": 6, "num_attention_heads": 4,
        "q_lora_rank": 32, "kv_lora_rank": 24, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8,
        "v_head_dim": 12, "n_routed_experts": 4, "num_experts_per_tok": 2, "index_n_heads": 2,
        "index_head_dim": 16, "index_topk": 4, "hc_mult": 3, "pad_token_id": 0,
        "bos_token_id": 1, "eos_token_id": 2, **fields,
    }


HY_VARIANTS: dict[str, dict[str, Any]] = {
    "default-indexers": hy_tiny(),
    "listed-kinds-shared-2-bias-tied": hy_tiny(
        indexer_types=["full", "shared", "full", "full", "shared", "shared"],
        mlp_layer_types=["sparse", "dense", "sparse", "sparse", "dense", "sparse"],
        n_shared_experts=2, attention_bias=True, tie_word_embeddings=True),
    "wide-streams": hy_tiny(num_hidden_layers=9, hidden_size=96, num_attention_heads=6, hc_mult=5,
                            n_routed_experts=8, num_experts_per_tok=3, index_n_heads=3),
}


@pytest.mark.torch
@pytest.mark.parametrize("fields", HY_VARIANTS.values(), ids=HY_VARIANTS.keys())
def test_hy_variant_matches_transformers(write: Any, fields: dict[str, Any]) -> None:
    matches_transformers(load_spec(write("config.json", fields)), active=True)


def test_hy_default_indexer_layers() -> None:
    spec = load_spec("hy-v4-defaults")
    # its own indexer at 0 and where i % 4 == 1; layer 0 dense
    assert [(g.name, g.layers.describe()) for g in spec.layer_groups] == [
        ("indexer/dense", "0"), ("indexer/moe", "1,5..33 every 4th"),
        ("shared_indexer/moe", "2..32 (3 of every 4)")]
    names = dict(spec.named_shapes())
    p = "model.layers.2"
    assert names[f"{p}.self_attn.gate_proj.weight"] == (32 * 256, 2816)
    assert names[f"{p}.self_attn.sinks"] == (32,)
    assert names[f"{p}.attn_hc.fn"] == (2 * 4, 4 * 2816)  # iHC: pre and post only
    assert names[f"{p}.ffn_hc.scale"] == (2,)
    assert names["model.hc_head.hc_fn"] == (4, 4 * 2816)
    assert f"{p}.self_attn.indexer.wq_b.weight" not in names


def test_hy_mtp_layers_are_noted_not_sized(write: Any) -> None:
    spec = _spec(write, hy_tiny(num_nextn_predict_layers=1))
    assert spec.unbuilt == ()
    assert ("num_nextn_predict_layers=1: the checkpoint's model.mtp_layers are not built by "
            "transformers, nor counted (llmcalc does not size them)") in spec.notes


# ---- FLOPs (FlopCounterMode) and the cache of a real forward pass --------------------------------

BATCH, SEQ = 2, 11
RUN: dict[str, dict[str, Any]] = {
    # 11 tokens: CSA 2 entries (fewer than index_topk 3), HCA (rate 8) 1 entry and 3 open
    "csa-then-hca": tiny(num_hidden_layers=2, compress_ratios=[4, 128], num_hash_layers=1),
    # CSA at rate 2: 5 entries, of which index_topk 1 read; 1 token open
    "sliding-then-csa": tiny(num_hidden_layers=2, compress_ratios=[0, 4], index_topk=1,
                             compress_rates={CSA: 2, HCA: 8}, hc_mult=2),
    # one HCA layer at rate 128: no entry yet, all 11 tokens in the open window
    "hca-only-no-entry": tiny(num_hidden_layers=1, compress_ratios=None, compress_rates=None,
                              hc_mult=4, mlp_layer_types=["moe"]),
    "hy-v4": hy_tiny(num_hidden_layers=2, indexer_types=["full", "shared"], index_topk=4),
}


@pytest.mark.torch
@pytest.mark.parametrize("fields", RUN.values(), ids=RUN.keys())
def test_prefill_flops_and_cache_equal_transformers(write: Any, fields: dict[str, Any]) -> None:
    spec = _spec(write, fields)
    m = measure_forward(spec, num_layers=spec.num_layers, seq_len=SEQ, batch=BATCH, use_cache=True)
    # the elementwise work (pooling, Sinkhorn, gates, norms, RoPE) is counted by neither
    assert m.flops == BATCH * forward_flops_per_sequence(spec, ctx=SEQ, causal=False)
    assert m.kv_cache_bytes == kv_cache_bytes(spec, batch=BATCH, ctx=SEQ, dtype=DType.bf16)


@pytest.mark.torch
def test_cache_by_hand(write: Any) -> None:
    spec = _spec(write, RUN["sliding-then-csa"])
    m = measure_forward(spec, num_layers=2, seq_len=SEQ, batch=BATCH, use_cache=True)
    assert m.cache_layers == ("DynamicSlidingWindowLayer", "DeepseekV4CSACache")
    # sliding layer: K and V of 32 kept apart; CSA layer: the K = V window 11 × 32, 5 entries of
    # 32 and of 16 (indexer), 1 open token's kv and gate (2 × 64, 2 × 32), the last window's
    # first series 2 × 32 and 2 × 16 (kv in bf16, gate in float32)
    native = 11 * 2 * 32 + 11 * 32 + (5 * 32 + 2 * 64 + 2 * 32) + (5 * 16 + 2 * 32 + 2 * 16)
    fp32 = 2 * 32 + 2 * 16
    assert compressor_elements(spec.layer_groups[1].attention, ctx=SEQ) == (
        5 * 32 + 2 * 64 + 2 * 32 + 5 * 16 + 2 * 32 + 2 * 16, fp32)
    assert m.kv_cache_bytes == BATCH * (2 * native + 4 * fp32) == 7104


def test_flops_by_hand(write: Any) -> None:
    spec = _spec(write, RUN["sliding-then-csa"])
    n, h, hd = SEQ, 4, 32
    pair = 2 * h * (hd + hd)
    # dense kernels: sliding 11 × 11 pairs, CSA 11 × (11 + 5) and its indexer 11 × 5 × 2·2·16;
    # two hyper-connections a layer mixing 2 streams: 2·2²·64 a token each
    attention = n * n * pair + n * (n + 5) * pair + n * 5 * 2 * 2 * 16
    depth = n * 2 * 2 * 2 * 2 * 2 * 64
    assert forward_flops_per_sequence(spec, ctx=n, causal=False) == (
        n * weight_flops_per_token(spec) + attention + depth)
    # causal: Σ min(i, 16) window pairs, Σ min(⌊i/2⌋, 1) entries, Σ ⌊i/2⌋ indexer pairs
    window = sum(min(i, 16) for i in range(1, n + 1))
    entries = sum(min(i // 2, 1) for i in range(1, n + 1))
    scored = sum(i // 2 for i in range(1, n + 1))
    assert forward_flops_per_sequence(spec, ctx=n, causal=True) == (
        n * weight_flops_per_token(spec) + window * pair + (window + entries) * pair
        + scored * 2 * 2 * 16 + depth)


@pytest.mark.torch
def test_cache_past_the_window(write: Any) -> None:
    """transformers' DynamicCache keeps window − 1 tokens between steps (the only cache DeepSeek-V4
    runs with); llmcalc counts the window a decoding step reads, one token more per layer."""
    spec = _spec(write, RUN["csa-then-hca"])
    n = 23  # past the window of 16
    m = measure_forward(spec, num_layers=2, seq_len=n, batch=BATCH, use_cache=True)
    ours = kv_cache_bytes(spec, batch=BATCH, ctx=n, dtype=DType.bf16)
    assert ours - m.kv_cache_bytes == BATCH * 2 * 32 * 2  # 2 layers × one K = V token of 32, bf16
    assert m.flops == BATCH * forward_flops_per_sequence(spec, ctx=n, causal=False)


@pytest.mark.parametrize(("ratio", "topk"), [(4, None), (4, 3), (2, 1), (128, 512), (3, 2)])
def test_compressed_pairs_equal_brute_force(ratio: int, topk: int | None) -> None:
    for n in range(1, 80):
        want = sum(min(i // ratio, topk) if topk is not None else i // ratio
                   for i in range(1, n + 1))
        assert compressed_pairs(ctx=n, ratio=ratio, topk=topk) == want
    assert compressed_pairs(ctx=79, ratio=ratio, topk=None) == block_pairs(ctx=79, block=ratio)


def test_hostile_depth_is_instant(write: Any) -> None:
    start = time.perf_counter()
    spec = _spec(write, tiny(compress_ratios=None, num_hidden_layers=10**12))
    pc = count(spec)
    assert [len(g.layers) for g in spec.layer_groups] == [500_000_000_001, 499_999_999_999]
    assert pc.total > 0 and time.perf_counter() - start < 2


ERRORS = [
    (tiny(compress_ratios=[0, 8, 4, 4]),
     "compress_ratios.1: 8 names no layer kind (0 sliding, 4 compressed sparse, 128 heavily "
     "compressed attention; the rates are compress_rates')"),
    (tiny(compress_rates={CSA: 4}),
     "compress_rates: has no rate for heavily_compressed_attention layers"),
    (tiny(o_groups=3),
     "o_groups (3) must divide num_attention_heads × head_dim (4 × 32): the grouped output "
     "projection splits the heads into o_groups equal groups"),
    (tiny(compress_ratios=[0, 4]), "compress_ratios: has 2 entries, num_hidden_layers is 4"),
    (tiny(mlp_layer_types=["moe", "dense", "moe", "moe"]),
     "mlp_layer_types.1: unknown type 'dense' (one of: hash_moe, moe)"),
    (tiny(num_experts_per_tok=5), "num_experts_per_tok (5) must not exceed n_routed_experts (4)"
        ": a router's top-k cannot pick more experts than there are (transformers' "
        "forward fails)"),
    (tiny(compress_ratios=None, layer_types=[SLIDING] * 4 + ["full_attention"]),
     "layer_types.4: the multi-token-prediction layer's kind 'full_attention' is not one llmcalc "
     "can size"),
    (hy_tiny(indexer_types=["full", "none", "full", "full", "full", "full"]),
     "indexer_types.1: unknown type 'none' (one of: full, shared)"),
]


@pytest.mark.parametrize(("fields", "message"), ERRORS,
                         ids=["ratio", "rate", "o-groups", "short", "mlp-kind", "top-k", "mtp-kind",
                              "hy-indexer"])
def test_config_errors(cli: Any, write: Any, fields: dict[str, Any], message: str) -> None:
    path = write("bad.json", {k: v for k, v in fields.items() if v is not None})
    run = cli("count", path)
    assert (run.code, run.stderr) == (2, f"error: {path}: {message}\n")


def test_cli_memory_and_flops_explain(cli: Any) -> None:
    mem = cli("memory", "deepseek-v4-pro", "--ctx", "1m", "--explain")
    assert mem.code == 0
    text = " ".join(mem.stdout.split())
    assert "1 kv head × 512 (one tensor read as K and V)" in text
    assert "⌊1,048,576 / 4⌋ = 262,144 pooled entries × (512 + 128)" in text
    assert "10,334,832,640" in text
    fl = cli("flops", "deepseek-v4-flash", "--ctx", "128k", "--explain")
    assert fl.code == 0
    text = " ".join(fl.stdout.split())
    assert "(min(131,072, window 128) + min(⌊131,072 / 4⌋, index_topk 512) pooled)" in text
    assert "hyper-connections mixing their residual streams, 2 a layer" in text
    flops = cli("flops", "deepseek-v4-flash", "--ctx", "128k", "--json").json()
    spec = load_spec("deepseek-v4-flash")
    assert flops["forward_flops_per_token"] == forward_flops_per_token(spec, ctx=131_072)
