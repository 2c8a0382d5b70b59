"""State-space and hybrid families: published totals, tensors held against transformers on the
meta device (bundled and varied configs), the recurrent state against the bytes of transformers'
cache after a real forward pass, and the CLI figures."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from helpers import configs
from helpers.reference import matches_transformers, total_from_names

from llmcalc import count, load_spec
from llmcalc.formulas.flops import (
    forward_flops_per_sequence,
    forward_flops_per_token,
    mixer_flops_per_token,
)
from llmcalc.formulas.memory import kv_cache_bytes, state_bytes_per_sequence
from llmcalc.units import DType
from llmcalc.verify.reference import measure_forward

# Bundled configs → total parameters (each file's ``source:`` says where its numbers come from).
TOTALS = {
    "state-spaces/mamba-130m-hf": 129_135_360,
    "falcon-mamba-7b": 7_272_665_088,
    "mamba-codestral-7b": 7_285_403_648,  # the model card's 7,285,403,648
    "ai21labs/Jamba-v0.1": 51_570_323_328,  # published as 52B total, 12B active
}
TOTALS["bamba-9b"] = 9_780_235_392  # published as 9.78B
TOTALS["granite-4.0-h-small"] = 32_207_337_984  # published as 32B total, 9B active
TOTALS["nemotron-h-4-block"] = 1_968_355_712  # transformers' NemotronHConfig defaults
TOTALS["lfm2-1.2b"] = 1_170_340_608  # published as 1.2B
TOTALS["falcon-h1-config-defaults"] = 8_514_961_408  # transformers' FalconH1Config defaults
TOTALS["lfm2-8b-a1b"] = 8_339_929_856  # published as 8.3B total, 1.5B active
TOTALS["qwen3-next-80b-a3b"] = 79_674_391_296  # published as 80B total, 3B active
TOTALS["qwen3.5-35b-a3b"] = 34_660_610_688  # text model of the published 35B (with vision)
TOTALS["qwen3.5-text-config-defaults"] = 8_953_803_264
TOTALS["olmo-hybrid-7b"] = 7_430_870_688  # transformers' OlmoHybridConfig defaults
ACTIVE = {"qwen3.5-35b-a3b": 3_454_988_928, "qwen3-next-80b-a3b": 3_874_929_408, "lfm2-8b-a1b": 1_557_740_288, "ai21labs/Jamba-v0.1": 12_110_311_296, "granite-4.0-h-small": 8_803_121_664,
          "nemotron-h-4-block": 1_590_475_136}


@pytest.mark.parametrize("name,total", TOTALS.items())
def test_bundled_total(name: str, total: int) -> None:
    spec = load_spec(name)
    pc = count(spec)
    assert pc.total == total
    assert pc.active == ACTIVE.get(name, total)
    assert total_from_names(spec) == total
    assert spec.expected["total_params"] == total


def test_mamba_130m_by_hand() -> None:
    # d=768, d_inner=2d=1536, N=16, k=4, dt_rank=48, V=50280, tied head, 24 layers.
    d, di, n, k, r, V, L = 768, 1536, 16, 4, 48, 50280, 24
    layer = (
        d  # norm
        + 2 * di * d  # in_proj (x and gate z)
        + di * k + di  # depthwise conv1d, with bias
        + (r + 2 * n) * di  # x_proj → Δ, B, C
        + di * r + di  # dt_proj, with bias
        + di * n + di  # A_log, D
        + d * di  # out_proj
    )
    pc = count(load_spec("mamba-130m"))
    assert pc.groups[0].per_layer == layer == 3_771_648
    assert pc.total == V * d + L * layer + d == 129_135_360


tiny = partial(configs.tiny, base=configs.THREE_LAYERS)


VARIANTS = {
    "mamba-defaults": tiny("mamba"),
    "mamba-biases-untied-rank": tiny("mamba", state_size=8, expand=3, conv_kernel=3,
                                     time_step_rank=5, use_bias=True, use_conv_bias=False,
                                     tie_word_embeddings=False),
    "falcon_mamba": tiny("falcon_mamba", state_size=4, time_step_rank=7),
    "mamba2": tiny("mamba2", num_heads=8, head_dim=8, n_groups=2, state_size=16),
    "jamba-1-in-2-attention-moe-odd": tiny(
        "jamba", num_hidden_layers=5, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=48, num_experts=4, num_experts_per_tok=2, attn_layer_period=2,
        attn_layer_offset=1, expert_layer_period=2, expert_layer_offset=0, mamba_d_state=8),
    "jamba-periods-3-and-4-tied": tiny(
        "jamba", num_hidden_layers=13, num_attention_heads=16, intermediate_size=48, num_experts=3,
        num_experts_per_tok=1, attn_layer_period=3, attn_layer_offset=2, expert_layer_period=4,
        expert_layer_offset=1, mamba_dt_rank=3, mamba_expand=1, mamba_conv_bias=False,
        mamba_proj_bias=True, tie_word_embeddings=True),
    "jamba-dense": tiny("jamba", num_attention_heads=4, num_key_value_heads=1, intermediate_size=48, num_experts=1,
                        attn_layer_period=3, attn_layer_offset=0),
    "bamba": tiny("bamba", num_attention_heads=4, num_key_value_heads=2, intermediate_size=48,
                  attn_layer_indices=[0, 2], mamba_n_heads=8, mamba_n_groups=2, mamba_d_state=8),
    "bamba-no-attention-head-given": tiny(
        "bamba", num_attention_heads=4, num_key_value_heads=4, head_dim=16, intermediate_size=48,
        mamba_n_heads=4, mamba_d_head=16, mamba_expand=2, mamba_d_state=4, mamba_d_conv=3,
        mamba_conv_bias=False, mamba_proj_bias=True, attention_bias=True, mlp_bias=True,
        tie_word_embeddings=True),
    "granitemoehybrid-moe": tiny(
        "granitemoehybrid", num_attention_heads=4, num_key_value_heads=2, intermediate_size=24,
        shared_intermediate_size=40, num_local_experts=4, num_experts_per_tok=2,
        layer_types=["mamba", "attention", "mamba"], mamba_n_heads=8, mamba_n_groups=2,
        mamba_d_state=8, position_embedding_type="rope", tie_word_embeddings=True),
    "granitemoehybrid-dense-new-names": tiny(
        "granitemoehybrid", num_attention_heads=4, intermediate_size=24, num_local_experts=0,
        layer_types=["full_attention", "linear_attention", "full_attention"], mamba_n_heads=4,
        mamba_d_head=16, mamba_d_state=4, attention_bias=True, mamba_proj_bias=True),
    "granitemoehybrid-all-mamba": tiny("granitemoehybrid", num_attention_heads=4,
                                       intermediate_size=24, mamba_n_heads=4, mamba_d_state=4),
    "nemotron_h-pattern": {
        "model_type": "nemotron_h", "vocab_size": 100, "hidden_size": 64,
        "hybrid_override_pattern": "M*-EM-", "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 16, "intermediate_size": 96, "mamba_num_heads": 8, "mamba_head_dim": 16,
        "n_groups": 2, "ssm_state_size": 16, "n_routed_experts": 4, "num_experts_per_tok": 2,
        "moe_intermediate_size": 32, "moe_shared_expert_intermediate_size": 48},
    "nemotron_h-latent-moe-biases-tied": {
        "model_type": "nemotron_h", "vocab_size": 100, "hidden_size": 64,
        "layers_block_type": ["moe", "mamba", "full_attention", "moe"], "num_attention_heads": 4,
        "num_key_value_heads": 4, "head_dim": 8, "mamba_num_heads": 4, "mamba_head_dim": 8,
        "n_groups": 1, "ssm_state_size": 4, "conv_kernel": 2, "use_bias": True,
        "use_conv_bias": False, "mlp_bias": True, "n_routed_experts": 3,
        "num_experts_per_tok": 1, "moe_intermediate_size": 16,
        "moe_shared_expert_intermediate_size": 24, "moe_latent_size": 32,
        "tie_word_embeddings": True},
    "lfm2-layer-types": tiny("lfm2", num_attention_heads=4, num_key_value_heads=2,
                             intermediate_size=120, block_multiple_of=16,
                             layer_types=["conv", "full_attention", "conv"]),
    "lfm2-indices-old-names-no-adjust": tiny(
        "lfm2", num_attention_heads=8, block_ff_dim=72, block_auto_adjust_ff_dim=False,
        full_attn_idxs=[1], conv_L_cache=4, conv_bias=True, tie_embedding=False),
    "lfm2-all-attention-multiplier": tiny("lfm2", num_attention_heads=2, num_key_value_heads=1,
                                          intermediate_size=96,
                                          block_ffn_dim_multiplier=1.5, block_multiple_of=32),
    "falcon_h1": tiny("falcon_h1", num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                      intermediate_size=96, mamba_d_ssm=128, mamba_n_heads=8, mamba_n_groups=2,
                      mamba_d_state=16),
    "falcon_h1-norm-biases-expand-tied": tiny(
        "falcon_h1", num_attention_heads=4, num_key_value_heads=4, intermediate_size=48,
        mamba_d_ssm=None, mamba_expand=2, mamba_n_heads=4, mamba_d_head=16, mamba_d_state=8,
        mamba_rms_norm=True, mamba_proj_bias=True, projectors_bias=False, attention_bias=True,
        mlp_bias=True, mamba_conv_bias=False, tie_word_embeddings=True),
    "lfm2_moe": tiny("lfm2_moe", num_hidden_layers=4, num_attention_heads=4,
                     num_key_value_heads=2, intermediate_size=96, moe_intermediate_size=32,
                     num_experts=4, num_experts_per_tok=2, num_dense_layers=1,
                     layer_types=["conv", "full_attention", "conv", "full_attention"]),
    "lfm2_moe-all-dense-untied": tiny("lfm2_moe", num_attention_heads=4, num_key_value_heads=4,
                                      intermediate_size=40, num_dense_layers=5, num_experts=2,
                                      num_experts_per_tok=1, tie_embedding=False,
                                      layer_types=["conv", "conv", "full_attention"]),
    "qwen3_next-interval-sparse-step": tiny(
        "qwen3_next", num_hidden_layers=7, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, intermediate_size=96, moe_intermediate_size=32,
        shared_expert_intermediate_size=48, num_experts=4, num_experts_per_tok=2,
        full_attention_interval=3, decoder_sparse_step=2, mlp_only_layers=[1, 2],
        linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16,
        linear_value_head_dim=8, linear_conv_kernel_dim=3),
    "qwen3_next-layer-types-dense-tied": tiny(
        "qwen3_next", num_attention_heads=4, num_key_value_heads=4, head_dim=8,
        intermediate_size=40, num_experts=0,
        layer_types=["full_attention", "linear_attention", "linear_attention"],
        linear_num_key_heads=1, linear_num_value_heads=2, linear_key_head_dim=8,
        linear_value_head_dim=16, tie_word_embeddings=True),
    "qwen3_5_text-interval": tiny(
        "qwen3_5_text", num_hidden_layers=5, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, intermediate_size=96, full_attention_interval=2, linear_num_key_heads=2,
        linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=8),
    "qwen3_5_moe_text-layer-types-tied": tiny(
        "qwen3_5_moe_text", num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        moe_intermediate_size=32, shared_expert_intermediate_size=24, num_experts=4,
        num_experts_per_tok=2, layer_types=["linear_attention", "full_attention", "full_attention"],
        linear_num_key_heads=2, linear_num_value_heads=2, linear_key_head_dim=8,
        linear_value_head_dim=8, tie_word_embeddings=True),
    "olmo_hybrid-default-pattern": tiny(
        "olmo_hybrid", num_hidden_layers=9, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=96, pad_token_id=0, eos_token_id=1),
    "olmo_hybrid-short-listed-heads-bias-tied": tiny(
        "olmo_hybrid", num_hidden_layers=2, num_attention_heads=4, intermediate_size=96,
        pad_token_id=0, eos_token_id=1, linear_num_key_heads=2, linear_num_value_heads=4,
        linear_key_head_dim=16, linear_value_head_dim=8, attention_bias=True,
        tie_word_embeddings=True),
    "olmo_hybrid-listed": tiny(
        "olmo_hybrid", num_attention_heads=4, intermediate_size=96, pad_token_id=0,
        eos_token_id=1, layer_types=["full_attention", "linear_attention", "full_attention"]),
    "mamba2-biases-tied": tiny("mamba2", num_heads=4, head_dim=24, expand=3, n_groups=4,
                               state_size=8, conv_kernel=2, use_bias=True, use_conv_bias=False,
                               tie_word_embeddings=True),
}


@pytest.mark.torch
@pytest.mark.parametrize("name", TOTALS)
def test_bundled_matches_transformers(name: str) -> None:
    matches_transformers(load_spec(name))


@pytest.mark.torch
@pytest.mark.parametrize("fields", VARIANTS.values(), ids=VARIANTS.keys())
def test_variant_matches_transformers(write: Any, fields: dict[str, Any]) -> None:
    matches_transformers(load_spec(write("config.json", fields)))


# ---- state --------------------------------------------------------------------------------------

STATE_MODELS = ["mamba-130m", "falcon-mamba-7b", "mamba-codestral-7b"]
# hybrids cut to 2 layers with one layer of each kind: name, overrides, the cache layers
HYBRID_CUTS = [
    # narrowed (d 512, 4 experts of 1024) so that the CPU run stays small; layer 1: attention + MoE
    ("jamba-v0.1", ["attn_layer_period=2", "attn_layer_offset=1", "hidden_size=512",
                    "intermediate_size=1024", "num_experts=4", "mamba_dt_rank=32"],
     ("LinearAttentionLayer", "DynamicLayer")),
    ("bamba-9b", ["attn_layer_indices=[0]", "hidden_size=512", "intermediate_size=1024",
                  "mamba_n_heads=16", "mamba_d_head=64", "mamba_chunk_size=4"],
     ("DynamicLayer", "LinearAttentionLayer")),
    ("granite-4.0-h-small", ['layer_types=["mamba","attention"]', "hidden_size=512",
                             "num_local_experts=4", "num_experts_per_tok=2", "mamba_n_heads=16",
                             "mamba_chunk_size=4"],
     ("LinearAttentionLayer", "DynamicLayer")),
    ("nemotron-h-4-block", ["layers_block_type=[\"mamba\",\"attention\"]", "hidden_size=512",
                            "mamba_num_heads=16", "chunk_size=4"],
     ("LinearAttentionLayer", "DynamicLayer")),
    ("lfm2-1.2b", ['layer_types=["conv","full_attention"]', "hidden_size=512"],
     ("LinearAttentionLayer", "DynamicLayer")),
    ("lfm2-8b-a1b", ['layer_types=["conv","full_attention"]', "num_dense_layers=1",
                     "hidden_size=512", "intermediate_size=1024", "moe_intermediate_size=256",
                     "num_experts=4", "num_experts_per_tok=2"],
     ("LinearAttentionLayer", "DynamicLayer")),
    # gated DeltaNet: chunks of 64 (8 tokens padded to one chunk), then gated attention + MoE
    ("qwen3-next-80b-a3b", ['layer_types=["linear_attention","full_attention"]',
                            "hidden_size=512", "num_experts=4", "num_experts_per_tok=2"],
     ("LinearAttentionLayer", "DynamicLayer")),
    ("qwen3.5-35b-a3b", ['layer_types=["linear_attention","full_attention"]',
                         "hidden_size=512", "num_experts=4", "num_experts_per_tok=2"],
     ("LinearAttentionLayer", "DynamicLayer")),
    ("olmo-hybrid-7b", ['layer_types=["linear_attention","full_attention"]', "hidden_size=480",
                        "num_attention_heads=8", "intermediate_size=1024"],
     ("LinearAttentionLayer", "DynamicLayer")),
    # attention and Mamba-2 side by side in each layer: K, V and the state in one cache layer
    ("falcon-h1-config-defaults", ["hidden_size=512", "mamba_d_ssm=512", "mamba_n_heads=16",
                                   "mamba_chunk_size=4", "mamba_d_state=32"],
     ("LinearAttentionAndFullAttentionLayer",) * 2),
    # experts (squared-ReLU, no gate), router, shared expert: a layer with no cache at all
    ("nemotron-h-4-block", ["layers_block_type=[\"moe\",\"attention\"]", "hidden_size=512",
                            "intermediate_size=1024", "moe_intermediate_size=256",
                            "moe_shared_expert_intermediate_size=384"],
     ("DummyLayer", "DynamicLayer")),
]
BATCH, SEQ, LAYERS = 2, 8, 2


@pytest.mark.torch
@pytest.mark.parametrize("name", STATE_MODELS)
def test_state_bytes_equal_transformers_cache(name: str) -> None:
    """conv states (bf16) and SSM states (float32) of a real forward pass, 2 layers, 2 sequences."""
    spec = load_spec(name, overrides=[f"num_hidden_layers={LAYERS}"])
    m = measure_forward(spec, num_layers=LAYERS, seq_len=SEQ, batch=BATCH, use_cache=True)
    assert m.cache_layers == ("LinearAttentionLayer",) * LAYERS
    assert m.kv_cache_bytes == BATCH * state_bytes_per_sequence(spec, dtype=DType.bf16)
    assert m.kv_cache_bytes == kv_cache_bytes(spec, batch=BATCH, ctx=SEQ, dtype=DType.bf16)


@pytest.mark.torch
@pytest.mark.parametrize(("name", "overrides", "layers"), HYBRID_CUTS, ids=[" ".join([h[0], *h[1][:1]]) for h in HYBRID_CUTS])
def test_hybrid_cache_bytes_equal_transformers(name: str, overrides: list[str], layers: Any) -> None:
    """Keys and values of the attention layer (SEQ tokens) + the Mamba layer's states."""
    spec = load_spec(name, overrides=[*overrides, f"num_hidden_layers={LAYERS}"])
    m = measure_forward(spec, num_layers=LAYERS, seq_len=SEQ, batch=BATCH, use_cache=True)
    assert m.cache_layers == layers
    assert m.kv_cache_bytes == kv_cache_bytes(spec, batch=BATCH, ctx=SEQ, dtype=DType.bf16)
    assert BATCH * state_bytes_per_sequence(spec, dtype=DType.bf16) < m.kv_cache_bytes


@pytest.mark.torch
@pytest.mark.parametrize(("name", "overrides", "layers"), HYBRID_CUTS, ids=[" ".join([h[0], *h[1][:1]]) for h in HYBRID_CUTS])
def test_hybrid_prefill_flops_equal_flop_counter(name: str, overrides: list[str], layers: Any) -> None:
    """One attention and one SSM layer: weights, QKᵀ and AV, the conv and the state readout."""
    spec = load_spec(name, overrides=[*overrides, f"num_hidden_layers={LAYERS}"])
    m = measure_forward(spec, num_layers=LAYERS, seq_len=SEQ)
    assert m.flops == forward_flops_per_sequence(spec, ctx=SEQ, causal=False)
    has_ssm = any(g.mixer is not None for g in spec.layer_groups)
    assert ("aten.convolution" in m.flops_by_op) == has_ssm and "aten.bmm" in m.flops_by_op


def test_jamba_layer_kinds() -> None:
    spec = load_spec("jamba-v0.1")  # attention at i ≡ 4 (mod 8), MoE at odd i
    kinds = {g.name: (len(g.layers), g.layers.describe()) for g in spec.layer_groups}
    assert kinds == {
        "mamba, mlp": (12, "0..24 every 8th,2..26 every 8th,6..30 every 8th"),
        "mamba, moe": (16, "1..25 every 8th,3..27 every 8th,5..29 every 8th,7..31 every 8th"),
        "attention, mlp": (4, "4..28 every 8th"),
    }
    # 4 attention layers keep K and V; 28 Mamba layers keep a fixed state
    assert kv_cache_bytes(spec, batch=1, ctx=1, dtype=DType.bf16) == (
        2 * 4 * 8 * 128 * 2 + 28 * (8192 * 4 * 2 + 8192 * 16 * 4)
    )


def test_mamba_state_by_hand_and_constant_in_context() -> None:
    spec = load_spec("mamba-130m")  # 24 layers, d_inner 1536, N 16, kernel 4
    per_layer = 1536 * 4 * 2 + 1536 * 16 * 4  # conv state at bf16 + SSM state in float32
    assert state_bytes_per_sequence(spec, dtype=DType.bf16) == 24 * per_layer == 2_654_208
    assert kv_cache_bytes(spec, batch=3, ctx=1, dtype=DType.bf16) == 3 * 2_654_208
    assert kv_cache_bytes(spec, batch=3, ctx=1 << 20, dtype=DType.bf16) == 3 * 2_654_208


def test_mamba2_state_by_hand() -> None:
    spec = load_spec("mamba-codestral-7b")  # 64 layers, 128 heads × 64 × N 128, G 8
    conv = (8192 + 2 * 8 * 128) * 4  # conv_dim × kernel
    ssm = 128 * 64 * 128
    assert state_bytes_per_sequence(spec, dtype=DType.fp8) == 64 * (conv + 4 * ssm) == 271_056_896


def test_ssm_flops_per_token_are_constant_in_context() -> None:
    spec = load_spec("mamba-130m")
    mixer = spec.layer_groups[0].mixer
    assert mixer is not None
    assert mixer_flops_per_token(mixer) == 2 * 1536 * 4 + 2 * 1536 * 16
    assert forward_flops_per_token(spec, ctx=1) == forward_flops_per_token(spec, ctx=1 << 17)


# ---- CLI --------------------------------------------------------------------------------------------


def test_memory_json_state(cli: Any) -> None:
    data = cli("memory", "mamba-130m", "--ctx", "128k", "--batch", "4", "--json").json()
    weights = 2 * 129_135_360
    assert data["state_bytes_per_sequence"] == 2_654_208
    assert data["kv_cache_bytes_per_token"] == 0
    assert data["kv_cache_bytes"] == 4 * 2_654_208
    assert data["total_bytes"] == weights + 4 * 2_654_208


def test_dense_memory_json_has_zero_state(cli: Any) -> None:
    data = cli("memory", "llama-3-8b", "--ctx", "4k", "--json").json()
    assert data["state_bytes_per_sequence"] == 0
    assert data["kv_cache_bytes"] == 4096 * 131_072


ERRORS = [
    (tiny("mamba2", num_heads=8, head_dim=16), "num_heads × head_dim (8 × 16) must equal the inner "
     "width expand × hidden_size (64)"),
    (tiny("mamba2", num_heads=8, head_dim=8, n_groups=3), "n_groups (3) must divide num_heads (8)"),
    (tiny("mamba", time_step_rank="big"), "time_step_rank: expected a positive integer or "
     "'auto', got 'big'"),
]


ERRORS += [
    (tiny("bamba", num_attention_heads=4, intermediate_size=48, mamba_n_heads=8, mamba_d_head=4),
     "mamba_n_heads × head_dim (8 × 4) must equal the inner width mamba_expand × hidden_size (64)"),
    (tiny("jamba", num_attention_heads=8, intermediate_size=48, attn_layer_period=2,
          attn_layer_offset=2),
     "attn_layer_offset: must be at least 0 and smaller than attn_layer_period (2), got 2"),
    (tiny("granitemoehybrid", num_attention_heads=4, intermediate_size=24, mamba_n_heads=4,
          layer_types=["mamba", "sliding_attention", "mamba"]),
     "layer_types.1: unknown layer type 'sliding_attention' (one of: mamba, linear_attention, "
     "attention, full_attention)"),
    ({"model_type": "nemotron_h", "vocab_size": 100, "hidden_size": 64,
      "hybrid_override_pattern": "M*X"},
     "hybrid_override_pattern.2: unknown layer kind 'X' (M, *, -, E or mamba, attention, mlp, moe)"),
    # (a pattern longer than a shallow model is only its first layers; a deep one is capped)
    (tiny("jamba", num_attention_heads=8, intermediate_size=48, attn_layer_period=100_000,
          attn_layer_offset=1, expert_layer_period=3, num_hidden_layers=10**12),
     "attn_layer_period: the layer pattern repeats every 300,000 layers; llmcalc describes at "
     "most 65,536"),
]


@pytest.mark.parametrize("fields,message", ERRORS, ids=[
    "mamba2-heads", "mamba2-groups", "rank", "bamba-head", "jamba-offset", "granite-type",
    "nemotron-pattern", "jamba-period"])
def test_config_errors(cli: Any, write: Any, fields: dict[str, Any], message: str) -> None:
    path = write("bad.json", fields)
    run = cli("count", path)
    assert run.code == 2
    assert run.stderr == f"error: {path}: {message}\n"


def test_train_counts_the_ssm_flops(cli: Any) -> None:
    data = cli("train", "mamba-130m", "--tokens", "1B", "--gpus", "8", "--gpu", "h100",
               "--json").json()
    per_token = 24 * (2 * 1536 * 4 + 2 * 1536 * 16)  # conv + readout, 24 layers
    assert data["training_flops_breakdown"]["attention"] == 0
    assert data["training_flops_breakdown"]["mixers"] == 3 * 10**9 * per_token
    assert data["training_flops"] == sum(data["training_flops_breakdown"].values())


def test_fit_counts_the_state_once_per_sequence(cli: Any) -> None:
    # Jamba: 4 attention layers × 8 kv heads × 128 × 2 (K, V) × 2 bytes = 16,384 bytes per token,
    # and 28 Mamba layers' state per sequence, whatever the context
    data = cli("fit", "jamba-v0.1", "--gpu", "h100", "--gpus", "2", "--ctx", "128k",
               "--json").json()
    spec = load_spec("jamba-v0.1")
    state = state_bytes_per_sequence(spec, dtype=DType.bf16)
    assert state == 28 * (8192 * 4 * 2 + 8192 * 16 * 4)
    batch = data["batch"]
    assert data["kv_cache_bytes"] == batch * (131_072 * 16_384 + state)
    assert (batch + 1) * (131_072 * 16_384 + state) > data["usable_bytes"] - data["weight_bytes"]


def test_memory_catalog_shows_hybrids_beside_dense_models(cli: Any) -> None:
    rows = {row["name"]: row for row in cli("memory", "--ctx", "128k", "--json").json()}
    jamba, llama = rows["jamba-v0.1"], rows["llama-3-8b"]
    # Jamba: 4 of 32 layers keep K and V (16,384 bytes per token), 28 keep a fixed state
    assert (jamba["kv_cache_bytes_per_token"], jamba["state_bytes_per_sequence"]) == (
        16_384, 16_515_072)
    assert jamba["kv_cache_bytes"] == 131_072 * 16_384 + 16_515_072
    assert llama["kv_cache_bytes"] == 131_072 * 131_072
    table = cli("memory", "--ctx", "128k").stdout
    assert "state per sequence" in table and "jamba-v0.1" in table and "llama-3-8b" in table
    run = cli("memory", "--explain")
    assert (run.code, run.stderr) == (2, "error: --explain, --set and --family need a MODEL\n")
