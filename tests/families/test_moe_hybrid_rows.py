"""Mixture-of-experts decoders with mixed layer patterns (solar_open, kolibri1, hy_v3, mellum, laguna …), held
against transformers 5.24 on the meta device.

Each bundled config must give transformers' total and active count; each model type is built again on
small configs that move what its description branches on (layers, widths, heads and kv heads, expert
counts and top-k, shared experts, dense layers, tied heads, layer-type patterns). Every tensor name and
shape must match.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers.reference import matches_transformers, total_from_names

from llmcalc import ConfigError, count, load_spec
from llmcalc.formulas.flops import forward_flops_per_sequence
from llmcalc.formulas.memory import kv_cache_bytes
from llmcalc.units import DType
from llmcalc.verify.reference import measure_forward

SMALL = {
    "hidden_size": 128,
    "num_hidden_layers": 3,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "vocab_size": 512,
}

# bundled config, model_type, total, active
BUNDLED = [
    ("solar-open-default", "solar_open", 102_651_793_408, 12_054_827_008),
    ("kolibri1-default", "kolibri1", 78_103_055_360, 3_785_231_360),
    ("hy-v3-default", "hy_v3", 295_033_528_320, 20_675_715_072),
    ("mellum-default", "mellum", 12_149_923_072, 2_439_060_736),
    ("laguna-default", "laguna", 33_189_975_808, 2_764_494_592),
    ("minimax-m3-text-default", "minimax_m3_vl_text", 447_186_441_216, 25_910_547_456),
    ("zaya-default", "zaya", 8_840_488_784, 1_290_741_584),
]


@pytest.mark.torch
@pytest.mark.parametrize(("name", "model_type", "total", "active"), BUNDLED)
def test_bundled_config_matches_transformers(
    name: str, model_type: str, total: int, active: int
) -> None:
    spec = load_spec(name)
    assert spec.model_type == model_type
    matches_transformers(spec, per_layer=False, active=True)
    pc = count(spec)
    assert (pc.total, pc.active) == (total, active)
    assert total_from_names(spec) == pc.total


# model_type, fields beside SMALL, what the case moves
CASES: list[tuple[str, dict[str, Any], str]] = [
    (
        "solar_open",
        {
            "moe_intermediate_size": 32,
            "n_routed_experts": 6,
            "num_experts_per_tok": 2,
            "n_shared_experts": 2,
            "head_dim": 24,
            "attention_bias": True,
            "tie_word_embeddings": True,
        },
        "q/k/v biases (o_proj none), two shared experts, tied, head_dim given",
    ),
    (
        "solar_open",
        {
            "num_hidden_layers": 2,
            "num_attention_heads": 12,
            "num_key_value_heads": 4,
            "head_dim": 16,
            "moe_intermediate_size": 32,
            "n_routed_experts": 4,
            "num_experts_per_tok": 3,
            "n_shared_experts": 0,
        },
        "no shared expert (an empty module), 12 heads of 16 over 4 kv heads",
    ),
    (
        "kolibri1",
        {
            "num_hidden_layers": 6,
            "head_dim": 16,
            "moe_intermediate_size": 32,
            "shared_expert_intermediate_size": 48,
            "num_experts": 6,
            "num_experts_per_tok": 2,
            "sliding_window": 4,
            "tie_word_embeddings": True,
        },
        "full attention at layer 4 of 6, a wider shared expert, tied",
    ),
    (
        "kolibri1",
        {
            "num_attention_heads": 12,
            "num_key_value_heads": 3,
            "head_dim": 8,
            "moe_intermediate_size": 32,
            "shared_expert_intermediate_size": 0,
            "num_experts": 4,
            "num_experts_per_tok": 1,
            "layer_types": ["full_attention", "sliding_attention", "full_attention"],
        },
        "layer_types listed, no shared expert (an empty module), 12 heads over 3 kv heads",
    ),
    (
        "hy_v3",
        {
            "head_dim": 16,
            "intermediate_size": 96,
            "moe_intermediate_size": 32,
            "num_experts": 6,
            "num_experts_per_tok": 2,
            "num_shared_experts": 2,
            "attention_bias": True,
            "mlp_bias": True,
            "tie_word_embeddings": True,
        },
        "first layer dense, biases on attention and on the dense and shared MLPs, tied",
    ),
    (
        "hy_v3",
        {
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "head_dim": 32,
            "intermediate_size": 80,
            "moe_intermediate_size": 32,
            "num_experts": 4,
            "num_experts_per_tok": 3,
            "num_shared_experts": 0,
            "mlp_layer_types": ["sparse", "dense", "sparse", "dense"],
        },
        "mlp_layer_types listed; 0 shared experts give a shared MLP of intermediate_size; MHA",
    ),
    (
        "mellum",
        {
            "head_dim": 16,
            "intermediate_size": 96,
            "moe_intermediate_size": 32,
            "num_experts": 6,
            "num_experts_per_tok": 2,
            "attention_bias": True,
            "tie_word_embeddings": True,
        },
        "all MoE, num_experts spelling, q/k/v/o biases, tied",
    ),
    (
        "mellum",
        {
            "num_hidden_layers": 4,
            "num_attention_heads": 6,
            "num_key_value_heads": 3,
            "head_dim": 24,
            "intermediate_size": 80,
            "moe_intermediate_size": 32,
            "num_local_experts": 4,
            "num_experts_per_tok": 4,
            "sliding_window": 4,
            "layer_types": ["sliding_attention", "full_attention"] * 2,
            "mlp_layer_types": ["dense", "sparse", "sparse", "dense"],
        },
        "dense and sliding layers listed, top-k = E, 6 heads over 3 kv heads",
    ),
    (
        "laguna",
        {
            "head_dim": 16,
            "intermediate_size": 96,
            "moe_intermediate_size": 32,
            "shared_expert_intermediate_size": 48,
            "num_experts": 6,
            "num_experts_per_tok": 2,
            "attention_bias": True,
            "tie_word_embeddings": True,
        },
        "first layer dense, a gate per head, q/k/v/o biases, tied",
    ),
    (
        "laguna",
        {
            "num_hidden_layers": 5,
            "head_dim": 16,
            "intermediate_size": 80,
            "moe_intermediate_size": 32,
            "shared_expert_intermediate_size": 0,
            "num_experts": 4,
            "num_experts_per_tok": 1,
            "gating": "per-element",
            "num_attention_heads_per_layer": [8, 4, 8, 6, 4],
            "sliding_window": 4,
            "layer_types": ["sliding_attention", "full_attention"] * 2 + ["sliding_attention"],
            "mlp_layer_types": ["dense", "sparse", "sparse", "dense", "sparse"],
        },
        "query heads per layer (8, 4, 8, 6, 4 over 2 kv heads), a gate per channel, no shared expert",
    ),
    (
        "minimax_m3_vl_text",
        {
            "head_dim": 16,
            "intermediate_size": 32,
            "dense_intermediate_size": 96,
            "shared_intermediate_size": 48,
            "num_experts": 6,
            "num_experts_per_tok": 2,
            "index_n_heads": 2,
            "index_head_dim": 8,
            "tie_word_embeddings": True,
            "layer_types": ["full_attention", "minimax_m3_sparse", "minimax_m3_sparse"],
            "mlp_layer_types": ["dense", "sparse", "dense"],
        },
        "sparse layers with indexers, dense layers, fused gate_up MLPs, tied",
    ),
    (
        "minimax_m3_vl_text",
        {
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "num_key_value_heads": 1,
            "head_dim": 32,
            "intermediate_size": 32,
            "dense_intermediate_size": 64,
            "shared_intermediate_size": 0,
            "num_local_experts": 4,
            "num_experts_per_tok": 4,
            "moe_layer_freq": [0, 1, 1, 0],
            "sparse_attention_config": {
                "sparse_attention_freq": [1, 0, 1, 1],
                "sparse_num_index_heads": 3,
                "sparse_index_dim": 16,
            },
        },
        "the older moe_layer_freq and sparse_attention_config, no shared expert, one kv head",
    ),
    (
        "zaya",
        {
            "head_dim": 16,
            "moe_intermediate_size": 32,
            "num_experts": 6,
            "router_hidden_size": 24,
        },
        "first layer's router without router_states_scale, tied",
    ),
    (
        "zaya",
        {
            "num_hidden_layers": 4,
            "num_attention_heads": 6,
            "num_key_value_heads": 3,
            "head_dim": 8,
            "moe_intermediate_size": 32,
            "num_experts": 3,
            "router_hidden_size": 16,
            "cca_time0": 3,
            "cca_time1": 1,
            "attention_bias": True,
            "lm_head_bias": True,
            "tie_word_embeddings": False,
            "sliding_window": 4,
            "layer_types": ["hybrid", "hybrid_sliding", "hybrid_sliding", "hybrid"],
        },
        "sliding layers listed, other kernel sizes, biases, untied head with a bias",
    ),
    (
        "zaya",
        {"num_hidden_layers": 1, "head_dim": 16, "moe_intermediate_size": 32, "num_experts": 2},
        "one layer: only the first layer's router",
    ),
]


@pytest.mark.torch
@pytest.mark.parametrize(
    ("model_type", "fields", "covers"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_varied_configs_match_transformers(
    write: Any, model_type: str, fields: dict[str, Any], covers: str
) -> None:
    spec = load_spec(write("config.json", {"model_type": model_type, **SMALL, **fields}))
    matches_transformers(spec, per_layer=False, active=True)
    assert total_from_names(spec) == count(spec).total, covers


def test_kolibri1_full_attention_every_fifth_layer() -> None:
    spec = load_spec("kolibri1-default")
    assert [(g.name, g.layers.describe(), g.attention.window) for g in spec.layer_groups] == [
        ("sliding_attention", "0..48 (4 of every 5)", 513),
        ("full_attention", "4..49 every 5th", None),
    ]


# ---- Laguna: a query-head count per layer, a softplus output gate ---------------------------------

LAGUNA_SMALL = {
    "model_type": "laguna",
    "hidden_size": 64,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "intermediate_size": 96,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 32,
    "vocab_size": 256,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "num_attention_heads_per_layer": [4, 8, 2],
    "sliding_window": 4,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
}


def test_laguna_groups_split_by_head_count() -> None:
    spec = load_spec("laguna-default", overrides=["num_hidden_layers=4"])
    assert [(g.name, g.layers.describe(), g.attention.heads) for g in spec.layer_groups] == [
        ("dense", "0", 48),
        ("moe", "1..3", 48),
    ]


@pytest.mark.torch
@pytest.mark.parametrize("gating", [True, "per-element"])
def test_laguna_prefill_equals_flop_counter(write: Any, gating: bool | str) -> None:
    """All three layers measured at once (they differ): q/o and g_proj follow each layer's heads."""
    spec = load_spec(write("config.json", {**LAGUNA_SMALL, "gating": gating}))
    assert [(g.name, g.attention.heads) for g in spec.layer_groups] == [
        ("sliding_attention/dense/4 heads", 4),
        ("full_attention/moe/8 heads", 8),
        ("sliding_attention/moe/2 heads", 2),
    ]
    m = measure_forward(spec, num_layers=3, seq_len=8)
    assert m.flops == forward_flops_per_sequence(spec, ctx=8, causal=False)
    assert set(m.flops_by_op) <= {"aten.mm", "aten.addmm", "aten.bmm"}


@pytest.mark.torch
def test_laguna_cache_equals_transformers(write: Any) -> None:
    """Per-layer query heads leave the cache alone (2 kv heads in every layer); sliding layers keep
    their window of 4 of the 8 tokens."""
    spec = load_spec(write("config.json", LAGUNA_SMALL))
    m = measure_forward(spec, num_layers=3, seq_len=8, batch=2, static_cache=True)
    ours = kv_cache_bytes(spec, batch=2, ctx=8, dtype=DType.bf16)
    # (4 + 8 + 4) tokens × K and V × 2 kv heads × 16 × 2 bytes × batch 2
    assert m.kv_cache_bytes == ours == (4 + 8 + 4) * 2 * 2 * 16 * 2 * 2


@pytest.mark.parametrize(
    ("heads", "message"),
    [
        ([8, 8], "num_attention_heads_per_layer: has 2 entries, num_hidden_layers is 3"),
        ([8, 8, 0], "num_attention_heads_per_layer.2 must be a positive integer, got 0"),
    ],
)
def test_laguna_bad_head_lists_name_the_field(
    write: Any, heads: list[int], message: str
) -> None:
    path = write("config.json", {**LAGUNA_SMALL, "num_attention_heads_per_layer": heads})
    with pytest.raises(ConfigError) as err:
        load_spec(path)
    assert message in str(err.value)


# ---- MiniMax-M3: block-sparse layers with a lightning indexer ------------------------------------

M3_SMALL = {
    "model_type": "minimax_m3_vl_text",
    "hidden_size": 64,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "intermediate_size": 32,
    "dense_intermediate_size": 96,
    "shared_intermediate_size": 32,
    "vocab_size": 256,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "index_n_heads": 2,
    "index_head_dim": 8,
    "index_block_size": 4,
    "index_topk_blocks": 1,
    "layer_types": ["minimax_m3_sparse", "full_attention", "minimax_m3_sparse"],
    "mlp_layer_types": ["dense", "sparse", "sparse"],
}


@pytest.mark.torch
def test_minimax_m3_prefill_equals_flop_counter(write: Any) -> None:
    """The indexer's q/k projections are weight FLOPs; its scores add 2·h_idx·d_idx a query–key pair
    (all n × n of them, as the main attention's under eager)."""
    spec = load_spec(write("config.json", M3_SMALL))
    # the indexer's scores: 2 · 2 heads · 8 per query–key pair
    assert [(g.name, g.attention.index_pair_flops) for g in spec.layer_groups] == [
        ("sparse_attention/dense", 32),
        ("full_attention/moe", 0),
        ("sparse_attention/moe", 32),
    ]
    m = measure_forward(spec, num_layers=3, seq_len=8)
    ours = forward_flops_per_sequence(spec, ctx=8, causal=False)
    assert m.flops == ours
    no_indexer = load_spec(write("config.json", {**M3_SMALL, "layer_types": None}))
    weights = 2 * 8 * (2 * 8 * 64 + 8 * 64)  # q_proj, k_proj: 2 FLOPs a weight, 8 tokens
    assert ours - forward_flops_per_sequence(no_indexer, ctx=8, causal=False) == 2 * (
        weights + 8 * 8 * 2 * 2 * 8
    )


@pytest.mark.torch
def test_minimax_m3_cache_holds_index_keys(write: Any) -> None:
    """A sparse layer caches K, V and one index key of d_idx per token."""
    spec = load_spec(write("config.json", M3_SMALL))
    m = measure_forward(spec, num_layers=3, seq_len=8, batch=2, static_cache=True)
    ours = kv_cache_bytes(spec, batch=2, ctx=8, dtype=DType.bf16)
    # 8 tokens × batch 2 × 2 bytes × (3 layers × K and V × 2 kv heads × 16 + 2 sparse layers × 8)
    assert m.kv_cache_bytes == ours == 8 * 2 * 2 * (3 * 2 * 2 * 16 + 2 * 8)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"moe_layer_freq": [1, 1]}, "moe_layer_freq: has 2 entries, num_hidden_layers is 3"),
        (
            {"layer_types": ["full_attention", "sparse", "full_attention"]},
            "layer_types.1: unknown type 'sparse' (one of: full_attention, minimax_m3_sparse)",
        ),
        (
            {"sparse_attention_config": {"sparse_index_dim": 0}},
            "sparse_attention_config.sparse_index_dim must be a positive integer, got 0",
        ),
    ],
)
def test_minimax_m3_bad_layer_lists_name_the_field(
    write: Any, fields: dict[str, Any], message: str
) -> None:
    path = write("config.json", {**M3_SMALL, "layer_types": None, "mlp_layer_types": None, **fields})
    with pytest.raises(ConfigError) as err:
        load_spec(path)
    assert message in str(err.value)


# ---- ZAYA: compressed convolutional attention ------------------------------------------------------

ZAYA_SMALL = {
    "model_type": "zaya",
    "hidden_size": 64,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "moe_intermediate_size": 32,
    "vocab_size": 256,
    "num_experts": 4,
    "router_hidden_size": 16,
}


@pytest.mark.torch
@pytest.mark.parametrize(("t0", "t1"), [(2, 2), (3, 2), (2, 3)])
def test_zaya_prefill_equals_flop_counter(write: Any, t0: int, t1: int) -> None:
    """The q/k convolutions count as weights (2 FLOPs a weight, a token); a prefill also runs the
    depthwise one over t1 − 1 padded positions and projects a zero vector for the first delayed
    value: 2·C·t0·(t1 − 1) + 2·d·kv·hd/2 a layer."""
    spec = load_spec(write("config.json", {**ZAYA_SMALL, "cca_time0": t0, "cca_time1": t1}))
    assert [g.name for g in spec.layer_groups] == ["first_layer", "eda"]
    m = measure_forward(spec, num_layers=3, seq_len=8)
    ours = forward_flops_per_sequence(spec, ctx=8, causal=False)
    assert m.flops == ours
    mixer = spec.layer_groups[0].mixer
    assert mixer is not None
    assert mixer.prefill_flops == 2 * (4 + 2) * 16 * t0 * (t1 - 1) + 2 * 64 * 16
    assert m.flops_by_op["aten.convolution"] == 3 * (
        2 * 96 * t0 * (8 + t1 - 1) + 2 * 96 * 16 * t1 * 8
    )


@pytest.mark.torch
def test_zaya_cache_holds_kv_conv_state_and_delayed_value(write: Any) -> None:
    """Per layer and sequence: K and V (the window in a sliding layer), the last (t0 − 1) + (t1 − 1)
    positions of the C = 96 q/k channels, the previous token's delayed value [kv·hd/2 = 16]."""
    fields = {
        **ZAYA_SMALL,
        "sliding_window": 4,
        "layer_types": ["hybrid", "hybrid_sliding", "hybrid"],
    }
    spec = load_spec(write("config.json", fields))
    m = measure_forward(spec, num_layers=3, seq_len=8, batch=2, static_cache=True)
    ours = kv_cache_bytes(spec, batch=2, ctx=8, dtype=DType.bf16)
    kv = (8 + 4 + 8) * 2 * 2 * 16  # tokens × K and V × 2 kv heads × 16
    state = 3 * (96 * 2 + 16)
    assert m.kv_cache_bytes == ours == 2 * 2 * (kv + state)  # bf16, batch 2


def test_zaya_bad_layer_types_name_the_field(write: Any) -> None:
    path = write("config.json", {**ZAYA_SMALL, "layer_types": ["hybrid", "hybrid_sliding", "x"]})
    with pytest.raises(ConfigError) as err:
        load_spec(path)
    assert "layer_types.2: unknown type 'x' (one of: hybrid, hybrid_sliding)" in str(err.value)
    path = write("config.json", {**ZAYA_SMALL, "layer_types": ["hybrid", "hybrid_sliding"] * 2})
    with pytest.raises(ConfigError) as err:
        load_spec(path)
    assert "layer_types: has 4 entries, num_hidden_layers is 3" in str(err.value)
    path = write("config.json", {**ZAYA_SMALL, "layer_types": ["hybrid", "hybrid_sliding"] + ["hybrid"]})
    with pytest.raises(ConfigError) as err:
        load_spec(path)
    assert "sliding_window: must be set when layer_types lists hybrid_sliding layers" in str(
        err.value
    )


@pytest.mark.torch
@pytest.mark.parametrize(("t0", "t1"), [(2, 2), (3, 2), (2, 3)])
def test_zaya_decoding_step_equals_flop_counter(write: Any, t0: int, t1: int) -> None:
    """One token after 8 cached: its weights, 9 keys, and the t1 − 1 depthwise positions recomputed
    from the convolution state (step_flops)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from llmcalc.formulas.flops import forward_flops_per_token
    from llmcalc.verify.reference import build_random_model

    spec = load_spec(write("config.json", {**ZAYA_SMALL, "cca_time0": t0, "cca_time1": t1}))
    model = build_random_model(spec, num_layers=3)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        cache = model(torch.randint(0, 256, (1, 8), generator=gen), use_cache=True).cache
        counter = FlopCounterMode(display=False)
        with counter:
            model(torch.randint(0, 256, (1, 1), generator=gen), cache=cache, use_cache=True)
    assert counter.get_total_flops() == forward_flops_per_token(spec, ctx=9)
    mixer = spec.layer_groups[0].mixer
    assert mixer is not None and mixer.step_flops == 2 * 96 * t0 * (t1 - 1)
