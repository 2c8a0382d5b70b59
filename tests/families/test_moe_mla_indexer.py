"""Mixture-of-experts decoders: aria_text, flint, beam, axk1, axk2, dots3_note_text against transformers 5.24.

Each type's bundled config and small varied configs (layers, widths, heads and kv heads, expert
counts and top-k, shared experts, dense layers, layer-type patterns, tied and untied heads) are built
on the meta device: every tensor name and shape, the total and the active count (read off the
instantiated modules) must equal llmcalc's. Small whole models also run on the CPU: prefill FLOPs
equal FlopCounterMode's (including the lightning indexer's own scores, for DeepSeek-V3.2, GLM-5,
A.X-K2 and dots3-note), and KV bytes equal a StaticCache's.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers.reference import matches_transformers, total_from_names

from llmcalc import ConfigError, count, load_spec
from llmcalc.formulas.flops import forward_flops_per_sequence
from llmcalc.formulas.memory import kv_cache_bytes
from llmcalc.model.spec import ModelSpec
from llmcalc.units import DType
from llmcalc.verify.reference import measure_forward

SMALL = {
    "hidden_size": 64,
    "num_hidden_layers": 5,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "intermediate_size": 48,
    "vocab_size": 512,
}


def assert_exact(spec: ModelSpec, covers: str) -> None:
    matches_transformers(spec, per_layer=False, active=True)
    assert total_from_names(spec) == count(spec).total, covers


# ---- bundled configs ----------------------------------------------------------------------------

BUNDLED = [
    # name, model_type, total, active
    ("aria-text-default", "aria_text", 18_517_069_824, 8_853_393_408),
    ("flint-default", "flint", 39_785_287_456, 2_822_983_456),
    # the 501B-A23B of its checkpoint's name
    ("beam-default", "beam", 501_267_599_808, 23_431_516_608),
    # A.X K1's published 519B total, 33B active
    ("axk1-default", "axk1", 518_983_052_288, 32_779_332_608),
    ("axk2-default", "axk2", 20_314_494_976, 2_572_589_056),
    ("dots3-note-text-default", "dots3_note_text", 279_551_718_016, 16_254_284_416),
]


@pytest.mark.torch
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
    (
        "flint",
        {
            "num_hidden_layers": 7,
            "head_dim": 16,
            "num_experts": 8,
            "moe_intermediate_size": 16,
            "shared_expert_intermediate_size": 24,
        },
        "first two layers dense and full, full at i % 4 == 1 and last, sinks, shared expert",
    ),
    (
        "flint",
        {
            "num_hidden_layers": 6,
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "head_dim": 8,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 16,
            "shared_expert_intermediate_size": 0,
            "decoder_sparse_step": 2,
            "mlp_only_layers": [3],
            "attention_bias": True,
            "tie_word_embeddings": True,
        },
        "MoE every 2nd layer but 3, no shared expert (built empty), biases, tied",
    ),
    (
        "flint",
        {
            "head_dim": 16,
            "num_experts": 4,
            "num_experts_per_tok": 3,
            "moe_intermediate_size": 16,
            "mlp_only_layers": [],
            "layer_types": ["sliding_attention"] * 4 + ["full_attention"],
        },
        "listed layer types, no dense layer",
    ),
    (
        "beam",
        {
            "num_hidden_layers": 7,
            "head_dim": 16,
            "num_experts": 8,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 16,
            "n_group": 2,
            "topk_group": 1,
        },
        "output gate with per-head bias, four norms, three dense layers, full at 5 and 6",
    ),
    (
        "beam",
        {
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "num_key_value_heads": 1,
            "head_dim": 32,
            "num_experts": 6,
            "num_experts_per_tok": 3,
            "moe_intermediate_size": 24,
            "n_group": 3,
            "topk_group": 2,
            "mlp_layer_types": ["sparse", "dense", "sparse", "dense"],
            "layer_types": ["full_attention", "sliding_attention"] * 2,
            "attention_bias": True,
            "tie_word_embeddings": True,
        },
        "listed MLP and layer types, MQA, biases, tied",
    ),
]

MLA = {
    "moe_intermediate_size": 16,
    "n_routed_experts": 8,
    "num_experts_per_tok": 2,
    "q_lora_rank": 48,
    "kv_lora_rank": 32,
    "qk_nope_head_dim": 16,
    "qk_rope_head_dim": 8,
    "v_head_dim": 16,
    "n_group": 2,
    "topk_group": 1,
}
CASES += [
    ("axk1", MLA, "MLA, first layer dense, norm after each MoE block"),
    (
        "axk1",
        {
            **MLA,
            "num_hidden_layers": 7,
            "num_attention_heads": 4,
            "first_k_dense_replace": 2,
            "moe_layer_freq": 2,
            "attention_bias": True,
            "tie_word_embeddings": True,
        },
        "MoE every 2nd layer after two dense ones (moe_layer_freq), biases, tied",
    ),
    (
        "axk1",
        {
            **MLA,
            "num_hidden_layers": 4,
            "mlp_layer_types": ["sparse", "dense", "sparse", "sparse"],
            "n_shared_experts": 2,
        },
        "listed MLP types, two shared experts",
    ),
]

INDEX = {"index_n_heads": 4, "index_head_dim": 16}
AXK2 = {**MLA, **INDEX, "gated_norm_rank": 4}
CASES += [
    (
        "axk2",
        {**AXK2, "num_key_value_heads": 8},
        "q_gate_proj, gated input norms, gated post-attention norms on MoE layers, indexer",
    ),
    (
        "axk2",
        {
            **AXK2,
            "num_hidden_layers": 7,
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "first_k_dense_replace": 2,
            "moe_layer_freq": 2,
            "gated_norm_rank": 8,
            "attention_bias": True,
            "tie_word_embeddings": True,
        },
        "MoE every 2nd layer after two dense ones, grouped routing, biases, tied",
    ),
    (
        "axk2",
        {**AXK2, "mlp_layer_types": ["dense", "sparse", "dense", "sparse", "sparse"]},
        "listed MLP types",
    ),
]


DOTS3 = {
    **MLA,
    **INDEX,
    "num_key_value_heads": 8,
    "shared_experts_intermediate_size": 24,
    "swa_num_attention_heads": 4,
    "swa_num_key_value_heads": 4,
    "swa_q_lora_rank": 40,
    "swa_kv_lora_rank": 24,
    "swa_head_dim": 32,
    "swa_qk_nope_head_dim": 24,
    "swa_v_head_dim": 8,
    "sliding_window": 4,
    "pad_token_id": 0,
}
CASES += [
    (
        "dots3_note_text",
        {**DOTS3, "num_hidden_layers": 6},
        "indexed at 0, 1, 5; sliding layers with their own MLA sizes; g_proj, rope-key norm",
    ),
    (
        "dots3_note_text",
        {
            **DOTS3,
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "use_dsa": False,
            "moe_layer_freq": [0, 1, 0, 1, 1],
            "n_shared_experts": 2,
            "tie_word_embeddings": True,
        },
        "no indexer (use_dsa false), MoE layers listed by moe_layer_freq, two shared experts, tied",
    ),
    (
        "dots3_note_text",
        {
            **DOTS3,
            "num_hidden_layers": 4,
            "layer_types": [
                "sliding_attention",
                "full_attention",
                "indexed_attention",
                "sliding_attention",
            ],
            "first_k_dense_replace": 0,
        },
        "listed layer types (full made indexed), no dense layer",
    ),
    (
        "dots3_note_text",
        {**DOTS3, "use_sliding_window": False, "swa_qk_rope_head_dim": 4},
        "no sliding layers: every layer indexed",
    ),
]


@pytest.mark.torch
def test_dots3_saved_per_layer_config(write: Any) -> None:
    """transformers saves the sliding layers' sizes as per_layer_config (what differs from the
    global fields) and no swa_* fields; full_attention then means a layer without an indexer."""
    swa = {"num_attention_heads": 4, "num_key_value_heads": 4, "kv_lora_rank": 24}
    fields = {
        "model_type": "dots3_note_text",
        **SMALL,
        **MLA,
        **INDEX,
        "num_key_value_heads": 8,
        "head_dim": 24,  # transformers checks a sliding layer's nope + rope against it
        "sliding_window": 4,
        "pad_token_id": 0,
        "layer_types": [
            "indexed_attention",
            "full_attention",
            "sliding_attention",
            "sliding_attention",
            "indexed_attention",
        ],
        "per_layer_config": {"2": swa, "3": swa},
    }
    spec = load_spec(write("config.json", fields))
    assert [g.name for g in spec.layer_groups] == [
        "indexer/dense",
        "full_attention/moe",
        "sliding_attention/moe",
        "indexer/moe",
    ]
    assert_exact(spec, "saved per_layer_config")
    bad = {**fields, "per_layer_config": {"1": swa}}
    with pytest.raises(ConfigError, match=r"per_layer_config\.1: sizes of a layer that is not a"):
        load_spec(write("bad.json", bad))
    bad = {**fields, "per_layer_config": {"2": swa, "3": {**swa, "kv_lora_rank": 16}}}
    with pytest.raises(ConfigError, match="sliding layers of differing sizes are not supported"):
        load_spec(write("bad.json", bad))


@pytest.mark.torch
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


# ---- FLOPs (FlopCounterMode) and KV cache bytes (a real cache) -----------------------------------

# small whole models run on the CPU: model_type, fields beside SMALL, what the case covers
SEQ, BATCH = 8, 2
RUN: list[tuple[str, dict[str, Any], str]] = [
    (
        "flint",
        {
            "head_dim": 8,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 16,
            "sliding_window": 4,
        },
        "sinks; layers 0, 1, 4 full (no RoPE), 2, 3 sliding; dense 0, 1; shared expert",
    ),
    (
        "beam",
        {
            "num_hidden_layers": 6,
            "head_dim": 8,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 16,
            "sliding_window": 4,
            "n_group": 2,
            "topk_group": 1,
        },
        "gated attention output; layers 0-4 sliding, 5 full; 0-2 dense",
    ),
    (
        "axk1",
        {**MLA, "num_hidden_layers": 3, "num_key_value_heads": 8},
        "MLA; norm after the MoE block (layers 1, 2)",
    ),
    (
        "axk2",
        {**AXK2, "num_hidden_layers": 3, "num_key_value_heads": 8},
        "q_gate_proj from 2·q_lora, low-rank norm gates, indexer",
    ),
    # the indexer's own scores (2·H·D a pair) and their sum over its heads (2·H), now counted
    (
        "deepseek_v32",
        {**MLA, **INDEX, "num_hidden_layers": 3, "num_key_value_heads": 8},
        "lightning indexer in every layer",
    ),
    (
        "glm_moe_dsa",
        {
            **MLA,
            **INDEX,
            "num_hidden_layers": 3,
            "num_key_value_heads": 8,
            "indexer_types": ["full", "shared", "full"],
        },
        "layer 1 reuses layer 0's indexer choice and scores nothing",
    ),
    (
        "dots3_note_text",
        {**DOTS3, "num_hidden_layers": 4},
        "indexed layers 0, 1; sliding layers 2, 3 with their own MLA sizes; g_proj",
    ),
]
# the KV bytes of each RUN case by hand (bf16, batch 2, 8 tokens)
KV_BY_HAND = {
    # 3 full layers × 8 tokens + 2 sliding × 4, K and V, 2 kv heads × 8, 2 bytes, batch 2
    "flint": (3 * 8 + 2 * 4) * 2 * 2 * 8 * 2 * BATCH,
    # 1 full layer × 8 tokens + 5 sliding × 4
    "beam": (1 * 8 + 5 * 4) * 2 * 2 * 8 * 2 * BATCH,
    # MLA: the kv latent 32 and the rotary key 8 per token, 3 layers × 8 tokens
    "axk1": 3 * 8 * (32 + 8) * 2 * BATCH,
    # DeepSeek sparse attention: each layer with its own indexer also caches its key [16] a token
    "axk2": 3 * 8 * (32 + 8 + 16) * 2 * BATCH,
    "deepseek_v32": 3 * 8 * (32 + 8 + 16) * 2 * BATCH,
    # GLM-5: layer 1 reuses layer 0's indexer and caches no index key
    "glm_moe_dsa": (3 * 8 * (32 + 8) + 2 * 8 * 16) * 2 * BATCH,
    # 2 indexed layers × 8 tokens × (32 + 8), 2 sliding × 4 × (24 + 8) in bf16, and the indexed
    # layers' index keys of 16 in float32 (their rotary cos/sin are float32)
    "dots3_note_text": ((2 * 8 * (32 + 8) + 2 * 4 * (24 + 8)) * 2 + 2 * 8 * 16 * 4) * BATCH,
}


def test_axk1_needs_the_q_latent(write: Any) -> None:
    path = write("config.json", {"model_type": "axk1", **SMALL, **MLA, "q_lora_rank": None})
    with pytest.raises(ConfigError, match="q_lora_rank: must be set: this model's queries always"):
        load_spec(path)


def test_axk2_gated_norms_and_q_gate() -> None:
    names = dict(load_spec("axk2-default").named_shapes())
    p = "model.layers"
    # q_gate_proj: [normed, raw] q latent 2 × 384 → 32 heads × (96 + 64)
    assert names[f"{p}.0.self_attn.q_gate_proj.weight"] == (32 * (64 + 32 + 64), 2 * 384)
    assert f"{p}.0.self_attn.q_b_proj.weight" not in names
    # gated input norm everywhere; post-attention norm gated on MoE layers only (layer 0 dense)
    assert names[f"{p}.0.input_layernorm.mlp.fc1.weight"] == (16, 2048)
    assert names[f"{p}.0.input_layernorm.mlp.fc2.weight"] == (2048, 16)
    assert names[f"{p}.0.post_attention_layernorm.weight"] == (2048,)
    assert names[f"{p}.1.post_attention_layernorm.norm.weight"] == (2048,)
    assert names[f"{p}.1.post_attention_layernorm.mlp.fc1.weight"] == (16, 2048)


@pytest.mark.torch
@pytest.mark.parametrize(("model_type", "fields", "covers"), RUN, ids=[c[0] for c in RUN])
def test_prefill_flops_equal_flop_counter(
    write: Any, model_type: str, fields: dict[str, Any], covers: str
) -> None:
    spec = load_spec(write("config.json", {"model_type": model_type, **SMALL, **fields}))
    m = measure_forward(spec, num_layers=spec.num_layers, seq_len=SEQ)
    assert m.flops == forward_flops_per_sequence(spec, ctx=SEQ, causal=False), covers


@pytest.mark.torch
@pytest.mark.parametrize(("model_type", "fields", "covers"), RUN, ids=[c[0] for c in RUN])
def test_static_cache_bytes(
    write: Any, model_type: str, fields: dict[str, Any], covers: str
) -> None:
    spec = load_spec(write("config.json", {"model_type": model_type, **SMALL, **fields}))
    n = spec.num_layers
    m = measure_forward(spec, num_layers=n, seq_len=SEQ, batch=BATCH, static_cache=True)
    ours = kv_cache_bytes(spec, batch=BATCH, ctx=SEQ, dtype=DType.bf16)
    assert m.kv_cache_bytes == ours == KV_BY_HAND[model_type], covers
