"""Mixture-of-experts decoders, held against transformers on varied configs.

Each bundled config is checked by test_against_transformers.py and test_families_moe.py; here each
model type is built again on small configs that move what its description branches on: layer
counts, widths, head and kv-head counts, expert counts and top-k, tied and untied heads, dense and
MoE layer patterns, attention-type patterns. Every tensor name and shape must match the transformers
model on the meta device. The new structural ideas (Llama 4's chunked attention) are checked for
FLOPs against FlopCounterMode and for KV against the bytes of a real cache.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers.reference import matches_transformers, total_from_names

from llmcalc import count, load_spec
from llmcalc.formulas.flops import chunked_causal_pairs, forward_flops_per_sequence
from llmcalc.formulas.memory import kv_cache_bytes
from llmcalc.units import DType
from llmcalc.verify.reference import extrapolate_layers, measure_forward

SMALL = {
    "hidden_size": 128,
    "num_hidden_layers": 5,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "intermediate_size": 96,
    "vocab_size": 512,
}

# model_type, fields beside SMALL, what the case moves
CASES: list[tuple[str, dict[str, Any], str]] = [
    (
        "glm4_moe",
        {"moe_intermediate_size": 32, "n_routed_experts": 8},
        "one dense layer, shared expert",
    ),
    (
        "glm4_moe",
        {
            "n_routed_experts": 6,
            "num_experts_per_tok": 3,
            "first_k_dense_replace": 2,
            "n_shared_experts": 2,
            "use_qk_norm": True,
            "attention_bias": True,
            "head_dim": 24,
            "tie_word_embeddings": True,
        },
        "q/k norms, qkv biases, head_dim given, two shared experts, tied",
    ),
    (
        "glm4_moe",
        {"num_attention_heads": 12, "num_key_value_heads": 4},
        "head_dim = hidden // heads, floored",
    ),
    (
        "sarvam_moe",
        {"n_routed_experts": 8, "num_shared_experts": 2},
        "GLM-4.5's model, other defaults",
    ),
    (
        "dots1",
        {
            "n_routed_experts": 8,
            "n_shared_experts": 2,
            "num_experts_per_tok": 2,
            "first_k_dense_replace": 2,
            "attention_bias": True,
            "max_window_layers": 3,
        },
        "sliding layers from max_window_layers, biased o_proj",
    ),
    (
        "exaone_moe",
        {"num_experts": 8, "first_k_dense_replace": 2, "sliding_window_pattern": 2},
        "sliding 1 of 2",
    ),
    (
        "exaone_moe",
        {
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "num_shared_experts": 0,
            "mlp_layer_types": ["sparse", "dense", "sparse", "dense", "sparse"],
            "layer_types": [
                "full_attention",
                "sliding_attention",
                "sliding_attention",
                "full_attention",
                "full_attention",
            ],
        },
        "explicit per-layer MLP and attention types, no shared expert",
    ),
    ("ernie4_5_moe", {"moe_num_experts": 8, "moe_k": 2}, "MoE from layer 1 to the end, tied"),
    (
        "ernie4_5_moe",
        {
            "moe_num_experts": 8,
            "moe_k": 2,
            "moe_layer_interval": 2,
            "moe_layer_start_index": 0,
            "moe_layer_end_index": 3,
            "use_bias": True,
            "moe_num_shared_experts": 0,
            "tie_word_embeddings": False,
        },
        "every 2nd layer within a window, biases everywhere, untied",
    ),
    (
        "hunyuan_v1_moe",
        {"head_dim": 16, "num_experts": 4, "moe_topk": 2},
        "shared MLP, q/k layernorms",
    ),
    (
        "hunyuan_v1_moe",
        {
            "head_dim": 32,
            "num_experts": 4,
            "moe_topk": [2] * 5,
            "attention_bias": True,
            "tie_word_embeddings": True,
        },
        "top-k listed per layer, biases, tied",
    ),
    (
        "minimax_m2",
        {"head_dim": 16, "num_local_experts": 8},
        "q/k norms over the whole projections",
    ),
    (
        "afmoe",
        {
            "head_dim": 16,
            "moe_intermediate_size": 32,
            "num_experts": 8,
            "num_dense_layers": 2,
            "global_attn_every_n_layers": 2,
            "sliding_window": 4,
        },
        "gated attention, four norms, dense prefix, sliding 1 of 2",
    ),
    (
        "afmoe",
        {"head_dim": 16, "num_experts": 4, "num_experts_per_tok": 2, "num_shared_experts": 0},
        "no shared experts (built empty)",
    ),
    (
        "flex_olmo",
        {"num_experts": 4, "num_experts_per_tok": 2, "vocab_size": 100352},
        "OLMo 2 norms",
    ),
    ("granitemoeshared", {"num_local_experts": 4, "shared_intermediate_size": 48}, "shared MLP"),
    (
        "granitemoeshared",
        {"num_local_experts": 4, "tie_word_embeddings": True},
        "no shared MLP, tied",
    ),
    ("cohere2_moe", {"head_dim": 16, "num_experts": 4}, "parallel block, sliding 3 of 4, tied"),
    (
        "cohere2_moe",
        {
            "head_dim": 16,
            "num_experts": 4,
            "first_k_dense_replace": 2,
            "prefix_dense_intermediate_size": 160,
            "num_shared_experts": 2,
            "prefix_dense_sliding_window_pattern": 2,
            "tie_word_embeddings": False,
        },
        "dense prefix with its own window pattern, shared experts",
    ),
    (
        "llama4_text",
        {
            "head_dim": 16,
            "intermediate_size_mlp": 160,
            "num_local_experts": 4,
            "num_hidden_layers": 8,
        },
        "every layer MoE, chunked 3 of 4",
    ),
    (
        "llama4_text",
        {
            "head_dim": 16,
            "intermediate_size_mlp": 160,
            "num_local_experts": 4,
            "num_experts_per_tok": 2,
            "interleave_moe_layer_step": 2,
            "no_rope_layer_interval": 3,
            "tie_word_embeddings": True,
        },
        "MoE every 2nd layer, no-RoPE every 3rd, tied",
    ),
    (
        "llama4_text",
        {
            "head_dim": 16,
            "intermediate_size_mlp": 160,
            "num_local_experts": 4,
            "moe_layers": [1, 4],
            "attention_chunk_size": None,
            "attention_bias": True,
        },
        "listed MoE layers, no chunking, biases",
    ),
]


MLA = {
    "moe_intermediate_size": 32,
    "n_routed_experts": 8,
    "num_experts_per_tok": 2,
    "q_lora_rank": 48,
    "kv_lora_rank": 32,
    "qk_nope_head_dim": 16,
    "qk_rope_head_dim": 8,
    "v_head_dim": 16,
}
INDEX = {"index_n_heads": 4, "index_head_dim": 16}
CASES += [
    ("deepseek_v32", {**MLA, **INDEX, "first_k_dense_replace": 2}, "indexer in every layer"),
    (
        "deepseek_v32",
        {**MLA, **INDEX, "mlp_layer_types": ["sparse", "dense", "sparse", "sparse", "dense"]},
        "listed MLP types",
    ),
    (
        "glm_moe_dsa",
        {**MLA, **INDEX, "index_topk_freq": 2, "index_skip_topk_offset": 1},
        "indexer shared by every 2nd layer",
    ),
    (
        "glm_moe_dsa",
        {
            **MLA,
            **INDEX,
            "indexer_types": ["full", "shared", "shared", "full", "shared"],
            "tie_word_embeddings": True,
        },
        "listed indexer types, tied",
    ),
    ("glm4_moe_lite", MLA, "MLA, first layer dense"),
    (
        "glm4_moe_lite",
        {**MLA, "mlp_layer_types": ["sparse", "dense", "sparse", "sparse", "dense"]},
        "listed MLP types",
    ),
    ("sarvam_mla", {**MLA, "q_lora_rank": None}, "DeepSeek-V3's model, plain q_proj"),
]


def test_deepseek_v32_indexer_tensors() -> None:
    spec = load_spec("deepseek-v3.2-exp")
    names = dict(spec.named_shapes())
    p = "model.layers.0.self_attn.indexer"
    # wq_b: q_lora 1536 → 64 heads × 128;  wk: d → 128 with a LayerNorm (weight, bias);  weights: d → 64
    assert names[f"{p}.wq_b.weight"] == (64 * 128, 1536)
    assert names[f"{p}.wk.weight"] == (128, 7168)
    assert names[f"{p}.k_norm.bias"] == (128,)
    assert names[f"{p}.weights_proj.weight"] == (64, 7168)
    indexer = 64 * 128 * 1536 + 128 * 7168 + 2 * 128 + 64 * 7168
    assert count(spec).total - count(load_spec("deepseek-v3")).total == 61 * indexer


CASES += [
    (
        "dbrx",
        {
            "d_model": 128,
            "n_heads": 8,
            "n_layers": 3,
            "attn_config": {"kv_n_heads": 2, "rope_theta": 10000.0},
            "ffn_config": {"ffn_hidden_size": 48, "moe_num_experts": 4, "moe_top_k": 2},
        },
        "fused Wqkv, row-stacked experts, nested configs",
    ),
    (
        "dbrx",
        {"d_model": 64, "n_heads": 4, "n_layers": 2, "attn_config": {"rope_theta": 10000.0}},
        "the nested configs' defaults (transformers needs rope_theta)",
    ),
    (
        "jetmoe",
        {"kv_channels": 16, "num_local_experts": 4},
        "attention experts and MLP experts, tied",
    ),
    (
        "jetmoe",
        {
            "num_key_value_heads": 2,
            "kv_channels": 32,
            "num_local_experts": 6,
            "num_experts_per_tok": 3,
            "tie_word_embeddings": False,
        },
        "top-3 of 6, untied",
    ),
]


CASES += [
    (
        "longcat_flash",
        {
            "num_layers": 3,
            "ffn_hidden_size": 96,
            "q_lora_rank": 48,
            "kv_lora_rank": 32,
            "qk_nope_head_dim": 16,
            "qk_rope_head_dim": 8,
            "v_head_dim": 16,
            "head_dim": 8,
            "n_routed_experts": 6,
            "zero_expert_num": 2,
            "moe_topk": 3,
            "expert_ffn_hidden_size": 32,
        },
        "two MLA sublayers and two MLPs a layer, zero-computation experts",
    ),
]


def test_longcat_zero_experts_are_routed_to_but_hold_no_down_proj() -> None:
    spec = load_spec("longcat-flash-chat")
    names = dict(spec.named_shapes())
    assert names["model.layers.0.mlp.router.classifier.weight"] == (512 + 256, 6144)
    assert names["model.layers.0.mlp.experts.gate_up_proj"] == (512 + 256, 2 * 2048, 6144)
    assert names["model.layers.0.mlp.experts.down_proj"] == (512, 6144, 2048)
    assert spec.layer_groups[0].attention.kv_latent_dim == 2 * (512 + 64)
    assert any("zero-computation experts" in n for n in spec.notes)


CASES += [
    ("granitemoe_swa", {"num_local_experts": 4}, "sinks, full attention where i % 4 == 0"),
    (
        "granitemoe_swa",
        {
            "num_local_experts": 4,
            "shared_intermediate_size": 48,
            "attention_bias": True,
            "layer_types": ["sliding_attention"] * 3 + ["full_attention"] * 2,
        },
        "listed layer types, shared MLP, biases",
    ),
]


MIMO = {"n_routed_experts": 4, "num_experts_per_tok": 2, "head_dim": 24, "v_head_dim": 16}
CASES += [
    (
        "mimo_v2_flash",
        {**MIMO, "num_hidden_layers": 8},
        "full at 0 and every 6th, doubled kv and sinks",
    ),
    (
        "mimo_v2_flash",
        {
            **MIMO,
            "layer_types": ["sliding_attention"] * 2 + ["full_attention"] * 3,
            "mlp_layer_types": ["sparse", "dense", "sparse", "dense", "sparse"],
            "attention_bias": True,
            "tie_word_embeddings": True,
        },
        "listed layer and MLP types, biases, tied",
    ),
]


GEMMA3N = {
    "num_hidden_layers": 10,
    "head_dim": 16,
    "vocab_size_per_layer_input": 300,
    "hidden_size_per_layer_input": 8,
    "laurel_rank": 4,
}
CASES += [
    (
        "gemma3n_text",
        {**GEMMA3N, "num_kv_shared_layers": 3},
        "per-layer embeddings, AltUp, LAuReL, KV sharing",
    ),
    (
        "gemma3n_text",
        {
            **GEMMA3N,
            "num_kv_shared_layers": 0,
            "altup_num_inputs": 2,
            "intermediate_size": [64] * 10,
            "num_key_value_heads": 1,
            "tie_word_embeddings": False,
        },
        "no sharing, 2 AltUp streams, per-layer width listed, MQA, untied",
    ),
]


@pytest.mark.torch
def test_gemma3n_shared_kv_layers_cache_nothing() -> None:
    """Layers reading an earlier layer's cache hold no k/v projections and add no KV bytes."""
    fields = [
        "hidden_size=64",
        "num_hidden_layers=10",
        "num_attention_heads=4",
        "num_key_value_heads=2",
        "head_dim=16",
        "intermediate_size=96",
        "vocab_size=256",
        "vocab_size_per_layer_input=256",
        "hidden_size_per_layer_input=8",
        "num_kv_shared_layers=3",
        "laurel_rank=4",
        "sliding_window=4",
    ]
    spec = load_spec("gemma-3n-text-defaults", overrides=fields)
    assert [(g.name, g.layers.describe(), g.attention.kv_shared) for g in spec.layer_groups] == [
        ("sliding_attention/own_kv", "0..6 (4 of every 5)", False),
        ("full_attention/own_kv", "4", False),
        ("sliding_attention/shared_kv", "7..8", True),
        ("full_attention/shared_kv", "9", True),
    ]
    m = measure_forward(spec, num_layers=10, seq_len=8, batch=2, static_cache=True)
    # own layers only: 6 sliding × 4 tokens + 1 full × 8, × K and V × 2 kv heads × 16 × 2 bytes × 2
    assert m.kv_cache_bytes == kv_cache_bytes(spec, batch=2, ctx=8, dtype=DType.bf16)
    assert m.kv_cache_bytes == (6 * 4 + 8) * 2 * 2 * 16 * 2 * 2
    assert m.cache_layers[-3:] == ("DummyLayer",) * 3


@pytest.mark.torch
@pytest.mark.parametrize(
    ("model_type", "fields", "covers"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_varied_configs_match_transformers(
    write: Any, model_type: str, fields: dict[str, Any], covers: str
) -> None:
    # DBRX spells every size its own way (d_model, n_layers …): the standard names are not its own
    # LongCat-Flash counts num_layers (each with two attention sublayers) as transformers maps it
    base = {
        "dbrx": {"vocab_size": 512},
        "longcat_flash": {k: v for k, v in SMALL.items() if k != "num_hidden_layers"},
        "gemma3n_text": {k: v for k, v in SMALL.items() if k != "intermediate_size"}
        | {"intermediate_size": 96},
    }.get(model_type, SMALL)
    spec = load_spec(write("config.json", {"model_type": model_type, **base, **fields}))
    matches_transformers(spec, per_layer=False)
    assert total_from_names(spec) == count(spec).total, covers


# ---- Llama 4: chunked attention ------------------------------------------------------------------

LLAMA4_SMALL = [
    "hidden_size=64",
    "intermediate_size=32",
    "intermediate_size_mlp=96",
    "num_attention_heads=4",
    "num_key_value_heads=2",
    "head_dim=16",
    "vocab_size=256",
    "num_local_experts=4",
    "attention_chunk_size=4",
]


def test_llama4_layer_kinds_and_chunk_windows() -> None:
    spec = load_spec("llama-4-maverick")
    assert [(g.name, g.layers.describe()) for g in spec.layer_groups] == [
        ("chunked_attention/dense", "0..44 every 4th,2..46 every 4th"),
        ("chunked_attention/moe", "1..45 every 4th"),
        ("full_attention/moe", "3..47 every 4th"),
    ]
    chunked, _, full = spec.layer_groups
    assert (chunked.attention.window, chunked.attention.chunked) == (8192, True)
    assert (full.attention.window, full.attention.chunked) == (None, False)
    names = dict(spec.named_shapes())
    assert names["model.layers.1.feed_forward.experts.gate_up_proj"] == (128, 5120, 2 * 8192)
    assert names["model.layers.1.feed_forward.experts.down_proj"] == (128, 8192, 5120)
    assert names["model.layers.0.feed_forward.gate_proj.weight"] == (16384, 5120)


def test_chunked_causal_pairs_by_hand() -> None:
    # 10 tokens in chunks of 4: 1+2+3+4, 1+2+3+4, 1+2 query-key pairs
    assert chunked_causal_pairs(ctx=10, chunk=4) == 10 + 10 + 3
    spec = load_spec("llama-4-scout", overrides=[*LLAMA4_SMALL, "num_hidden_layers=4"])
    chunked, full = spec.layer_groups
    pair = 2 * 4 * (16 + 16)  # 2 · h · (d_qk + d_v)
    causal = forward_flops_per_sequence(spec, ctx=10, causal=True)
    dense = forward_flops_per_sequence(spec, ctx=10, causal=False)
    # 3 chunked layers keep 23 of 100 pairs, the full layer 55
    assert dense - causal == (3 * (100 - 23) + (100 - 55)) * pair


@pytest.mark.torch
def test_llama4_prefill_equals_flop_counter() -> None:
    """transformers' Llama 4 runs every expert on every token (unrouted ones scaled by 0), so the
    measured model uses k = E; chunked layers still compute all n × n scores."""
    spec = load_spec("llama-4-scout", overrides=[*LLAMA4_SMALL, "num_experts_per_tok=4"])
    one = measure_forward(spec, num_layers=1, seq_len=8)
    two = measure_forward(spec, num_layers=2, seq_len=8)
    measured = extrapolate_layers(one.flops, two.flops, num_layers=spec.num_layers)
    assert measured == forward_flops_per_sequence(spec, ctx=8, causal=False)


@pytest.mark.torch
def test_llama4_chunked_cache_holds_one_chunk() -> None:
    # layer 0 chunked (4 tokens kept of 8), layer 1 full (8): 2 kv heads × 16 × K and V × 2 bytes
    spec = load_spec(
        "llama-4-scout",
        overrides=[*LLAMA4_SMALL, "num_hidden_layers=2", "no_rope_layer_interval=2"],
    )
    assert [g.name for g in spec.layer_groups] == ["chunked_attention", "full_attention"]
    m = measure_forward(spec, num_layers=2, seq_len=8, batch=2, static_cache=True)
    ours = kv_cache_bytes(spec, batch=2, ctx=8, dtype=DType.bf16)
    assert m.kv_cache_bytes == ours == 2 * (4 + 8) * 2 * 2 * 16 * 2


# ---- multi-token prediction: in checkpoints, not in the transformers model -----------------------


def test_mtp_params_are_reported_beside_the_count(cli: Any) -> None:
    # DeepSeek-V3: one MTP module = one MoE layer + enorm, hnorm [d] + eh_proj [d, 2d]
    # + its own embedding and head [V, d] + the head's norm [d]
    spec = load_spec("deepseek-v3")
    pc = count(spec)
    moe_layer = next(g for g in pc.groups if g.name == "moe").per_layer
    d, V = 7168, 129280
    mtp = moe_layer + 2 * V * d + 2 * d * d + 3 * d
    assert dict(spec.unbuilt) == {"mtp_params": mtp} == {"mtp_params": 13_463_426_048}
    # with it, the checkpoint's 684.5B (its FP8 block scales aside)
    assert pc.total + mtp == 684_489_830_400
    data = cli("count", "deepseek-v3", "--json").json()
    assert data["mtp_params"] == mtp
    assert data["total_params"] == pc.total
    # the indexer is part of V3.2's MTP layer too; GLM-4.5 declares one as well
    v32 = load_spec("deepseek-v3.2-exp")
    assert (
        dict(v32.unbuilt)["mtp_params"] - mtp == 64 * 128 * 1536 + 128 * 7168 + 2 * 128 + 64 * 7168
    )
    assert "mtp_params" in dict(load_spec("glm-4.5-air").unbuilt)
    assert "mtp_params" not in cli("count", "qwen3-30b-a3b", "--json").json()
