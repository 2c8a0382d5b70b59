"""The last dense decoders: Gemma 4 (per-layer head dims, KV-shared layers, per-layer
embeddings, MoE block), HRM-Text and Dory (looped layers), DeepSeek sparse attention FLOPs, and the
coverage of the causal-LM mapping.

Each model type is built by transformers on the meta device on varied small configs: every tensor
name and shape and the total must match. The new structural ideas are held to FlopCounterMode
(FLOPs of a real forward pass) and to the bytes of a real cache.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers.reference import total_from_names

from llmcalc import count, load_spec
from llmcalc.errors import ConfigError
from llmcalc.formulas.flops import forward_flops_per_sequence
from llmcalc.formulas.memory import kv_cache_bytes
from llmcalc.units import DType
from llmcalc.verify.reference import build_meta_model, figures, hf_config, measure_forward

SEQ = 8


def check_exact(spec: Any, covers: str) -> None:
    real = figures(build_meta_model(spec), spec.num_layers)
    assert dict(spec.named_shapes()) == real.named_shapes, covers
    pc = count(spec)
    figures_ = (pc.total, pc.embedding, pc.lm_head)
    assert figures_ == (real.total, real.embedding, real.lm_head), covers
    assert total_from_names(spec) == pc.total


# ---- Gemma 4 ------------------------------------------------------------------------------------

GEMMA4 = {
    "hidden_size": 64,
    "num_hidden_layers": 6,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "global_head_dim": 32,
    "intermediate_size": 96,
    "vocab_size": 512,
    "vocab_size_per_layer_input": 512,  # the random token ids index this table too
    "hidden_size_per_layer_input": 8,
    "sliding_window": 4,
}
MOE = {"enable_moe_block": True, "num_experts": 4, "top_k_experts": 2, "moe_intermediate_size": 24}
TYPES = ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]

GEMMA4_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("gemma4_text", {}, "default layer types (5:1, the last forced full), per-layer embeddings"),
    (
        "gemma4_text",
        {
            "layer_types": [*TYPES, "sliding_attention", "full_attention"],
            "num_kv_shared_layers": 3,
            "use_double_wide_mlp": True,
        },
        "3 KV-shared layers with double-wide MLPs",
    ),
    (
        "gemma4_text",
        {
            "attention_k_eq_v": True,
            "num_global_key_value_heads": 1,
            "hidden_size_per_layer_input": 0,
            "tie_word_embeddings": False,
            "attention_bias": True,
            **MOE,
        },
        "k = v on full layers with 1 global kv head, MoE block, no per-layer inputs, untied, bias",
    ),
    (
        "gemma4_text",
        {
            "num_hidden_layers": 7,
            "layer_types": [*TYPES, "sliding_attention", "full_attention", "sliding_attention"],
            "num_kv_shared_layers": 2,
            "attention_k_eq_v": True,
            **MOE,
        },
        "listed types, the last forced full; sharing, k = v without global kv heads, MoE",
    ),
    (
        "gemma4_text",
        {"per_layer_config": {"5": {"head_dim": 8, "num_key_value_heads": 4}}},
        "explicit per_layer_config: the full layer's head_dim and kv heads",
    ),
    (
        "gemma4_unified_text",
        {k: v for k, v in GEMMA4.items() if "per_layer" not in k}
        | {
            "layer_types": [*TYPES, "sliding_attention", "full_attention"],
            "num_kv_shared_layers": 2,
            "use_double_wide_mlp": True,
            "attention_k_eq_v": True,
        },
        "unified text model: sharing, double-wide, k = v",
    ),
]


@pytest.mark.torch
@pytest.mark.parametrize(
    ("model_type", "fields", "covers"),
    GEMMA4_CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(GEMMA4_CASES)],
)
def test_gemma4_varied_configs_match_transformers(
    write: Any, model_type: str, fields: dict[str, Any], covers: str
) -> None:
    base = GEMMA4 if model_type == "gemma4_text" else {}
    spec = load_spec(write("config.json", {"model_type": model_type, **base, **fields}))
    check_exact(spec, covers)


@pytest.mark.torch
def test_gemma4_config_saved_by_transformers_counts_the_same(write: Any) -> None:
    """transformers 5.24 saves the full layers' head dims as per_layer_config (no global_head_dim)"""
    fields = {**GEMMA4, "attention_k_eq_v": True, "num_global_key_value_heads": 1}
    spec = load_spec(write("a/config.json", {"model_type": "gemma4_text", **fields}))
    saved = hf_config(spec).to_dict()
    assert "global_head_dim" not in saved
    assert saved["per_layer_config"] == {"5": {"head_dim": 32, "num_key_value_heads": 1}}
    again = load_spec(write("b/config.json", saved))
    check_exact(again, "per_layer_config as transformers writes it")
    assert count(again).total == count(spec).total == 259_240


def test_gemma4_bundled_totals() -> None:
    # 31B: 10 full layers with k = v (one k_proj of 4 × 512), 50 sliding (k and v of 16 × 256)
    assert count(load_spec("gemma-4-31b")).total == 30_697_345_280
    e2b = load_spec("gemma-4-e2b")
    assert count(e2b).total == 4_628_569_344
    assert [(g.name, g.layers.describe(), g.attention.kv_shared) for g in e2b.layer_groups] == [
        (
            "sliding_attention/own_kv",
            "0..10 every 5th,1..11 every 5th,2..12 every 5th,3..13 every 5th",
            False,
        ),
        ("full_attention/own_kv", "4..14 every 5th", False),
        (
            "sliding_attention/shared_kv",
            "15..30 every 5th,16..31 every 5th,17..32 every 5th,18..33 every 5th",
            True,
        ),
        ("full_attention/shared_kv", "19..34 every 5th", True),
    ]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"enable_moe_block": True, "num_experts": 4, "moe_intermediate_size": 8},
            "top_k_experts: must be set when enable_moe_block is true",
        ),
        (
            {"num_kv_shared_layers": 5},
            "num_kv_shared_layers: (5) leaves no earlier layer of type full_attention to share "
            "keys and values from (transformers refuses this)",
        ),
        (
            {"num_kv_shared_layers": 7},
            "num_kv_shared_layers: (7) must not exceed num_hidden_layers (6)",
        ),
        (
            {"per_layer_config": {"9": {"head_dim": 8}}},
            "per_layer_config.9: is not a layer index below 6",
        ),
        (
            {"per_layer_config": {"1": {"intermediate_size": 8}}},
            "per_layer_config.1.intermediate_size: is not supported (only head_dim, "
            "num_key_value_heads)",
        ),
    ],
)
def test_gemma4_bad_fields_name_the_field(write: Any, fields: dict[str, Any], message: str) -> None:
    path = write("config.json", {"model_type": "gemma4_text", **GEMMA4, **fields})
    with pytest.raises(ConfigError) as err:
        load_spec(path)
    assert err.value.detail == message


@pytest.mark.torch
def test_gemma4_flops_with_shared_kv_and_moe_equal_flop_counter(write: Any) -> None:
    """3 layers, the last reusing layer 1's keys and values (no k/v matmuls, a double-wide MLP),
    k = v on the full layers, a 2-of-4 MoE block beside every dense MLP, per-layer inputs."""
    fields = {
        **GEMMA4,
        "num_hidden_layers": 3,
        "layer_types": ["sliding_attention", "full_attention", "full_attention"],
        "num_kv_shared_layers": 1,
        "use_double_wide_mlp": True,
        "attention_k_eq_v": True,
        "num_global_key_value_heads": 1,
        **MOE,
    }
    spec = load_spec(write("config.json", {"model_type": "gemma4_text", **fields}))
    m = measure_forward(spec, num_layers=3, seq_len=SEQ)
    assert m.flops == forward_flops_per_sequence(spec, ctx=SEQ, causal=False)


@pytest.mark.torch
def test_gemma4_shared_kv_layers_cache_nothing(write: Any) -> None:
    fields = {**GEMMA4, "num_kv_shared_layers": 3}  # layers 0..2 own (sliding ×2, ... ), 3..5 reuse
    fields["layer_types"] = [*TYPES, "sliding_attention", "full_attention"]
    spec = load_spec(write("config.json", {"model_type": "gemma4_text", **fields}))
    m = measure_forward(spec, num_layers=6, seq_len=SEQ, batch=2, static_cache=True)
    assert m.cache_layers[-3:] == ("DummyLayer",) * 3
    # own: layer 0 sliding (window 4, 2 kv × 16), layers 1 full (global head dim 32, 2 kv),
    # layer 2 sliding; × K and V × 2 bytes × batch 2
    assert m.kv_cache_bytes == (2 * 4 * 2 * 16 + 8 * 2 * 32) * 2 * 2 * 2
    assert m.kv_cache_bytes == kv_cache_bytes(spec, batch=2, ctx=SEQ, dtype=DType.bf16)


# ---- looped decoders: HRM-Text, Dory --------------------------------------------------------------

HRM = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "head_dim": 16,
    "intermediate_size": 96,
    "vocab_size": 512,
}
DORY = {
    "hidden_size": 64,
    "num_hidden_layers": 6,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "intermediate_size": 96,
    "vocab_size": 512,
    "sliding_window": 4,
    "n_input_layers": 2,
    "n_output_layers": 1,
}
LOOPED_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("hrm_text", HRM, "two stacks of 2 layers, gated multi-head attention"),
    (
        "hrm_text",
        {**HRM, "num_hidden_layers": 24, "num_layers_per_stack": 3, "H_cycles": 2, "L_cycles": 3},
        "a config transformers saved: the inflated count, 3 layers per stack",
    ),
    (
        "hrm_text",
        {**HRM, "attention_bias": True, "mlp_bias": True, "tie_word_embeddings": True},
        "biases, tied",
    ),
    ("dory", DORY, "2 input, 3 recurrent, 1 output layer; every 4th full"),
    (
        "dory",
        {
            **DORY,
            "num_hidden_layers": 12,
            "n_input_layers": 2,
            "n_recurrent_layers": 8,
            "n_output_layers": 2,
            "layer_types": [t for t in TYPES[:2] * 3 for t in (t, "mlp")],
            "attention_bias": True,
            "mlp_bias": True,
            "tie_word_embeddings": True,
        },
        "a released config's attention + mlp blocks (counts halved), biases, tied",
    ),
]


@pytest.mark.torch
@pytest.mark.parametrize(
    ("model_type", "fields", "covers"),
    LOOPED_CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(LOOPED_CASES)],
)
def test_looped_varied_configs_match_transformers(
    write: Any, model_type: str, fields: dict[str, Any], covers: str
) -> None:
    spec = load_spec(write("config.json", {"model_type": model_type, **fields}))
    check_exact(spec, covers)


def test_looped_bundled_totals() -> None:
    hrm = load_spec("hrm-text-default")
    assert count(hrm).total == 1_447_822_848
    assert [(g.name, g.runs) for g in hrm.layer_groups] == [
        ("L_module (runs 6× per token)", 96),
        ("H_module (runs 2× per token)", 32),
    ]
    dory = load_spec("dory-default")
    assert count(dory).total == 3_975_229_440
    assert sum(g.runs for g in dory.layer_groups) == 8 + 2 * 20 + 8


# model type, fields, KV bytes of 2 sequences of 8 tokens in bf16, what it covers
LOOP_RUNS = [
    (
        "hrm_text",
        {**HRM, "H_cycles": 2, "L_cycles": 2},
        # 2 L layers × 4 runs + 2 H layers × 2 runs = 12 slots × K, V × 4 heads × 16 × 8 × 2 B × 2
        12 * 2 * 64 * 8 * 2 * 2,
        "each L layer 4×, each H layer 2×",
    ),
    (
        "dory",
        DORY,
        # token slots: input 2 sliding (4 each); recurrent (sliding 4, full 8, sliding 4) × 2 loops;
        # output 1 sliding (4): 44 × K, V × 2 kv heads × 16 × 2 B × 2 sequences
        44 * 2 * 2 * 16 * 2 * 2,
        "3 recurrent layers 2×, a cache copy per loop",
    ),
    (
        "dory",
        {**DORY, "n_recurrent_loops": 3, "recurrent_kv_cache_mode": "last_loop"},
        (8 + 16 + 4) * 2 * 2 * 16 * 2 * 2,
        "3 loops, one cache per recurrent layer (the last loop writes it)",
    ),
]


@pytest.mark.torch
@pytest.mark.parametrize(
    ("model_type", "fields", "kv_bytes", "covers"),
    LOOP_RUNS,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(LOOP_RUNS)],
)
def test_looped_flops_and_cache_equal_a_real_forward(
    write: Any, model_type: str, fields: dict[str, Any], kv_bytes: int, covers: str
) -> None:
    """FLOPs count every run of a looped layer (FlopCounterMode); the cache, every run's slot."""
    spec = load_spec(write("config.json", {"model_type": model_type, **fields}))
    layers = fields["num_hidden_layers"]
    # StaticCache: a sliding layer holds its whole window (DynamicCache keeps window − 1)
    m = measure_forward(spec, num_layers=layers, seq_len=SEQ, batch=2, static_cache=True)
    assert m.flops == 2 * forward_flops_per_sequence(spec, ctx=SEQ, causal=False), covers
    assert m.kv_cache_bytes == kv_cache_bytes(spec, batch=2, ctx=SEQ, dtype=DType.bf16), covers
    assert m.kv_cache_bytes == kv_bytes, covers


@pytest.mark.parametrize(
    ("model_type", "fields", "message"),
    [
        (
            "dory",
            {**DORY, "n_recurrent_layers": 2},
            "n_input_layers (2) + n_recurrent_layers (2) + n_output_layers (1) must sum to "
            "num_hidden_layers (6)",
        ),
        (
            "dory",
            {**DORY, "n_input_layers": 4, "n_output_layers": 3},
            "n_input_layers (4) + n_output_layers (3) exceed num_hidden_layers (6)",
        ),
        (
            "hrm_text",
            {**HRM, "hidden_size": 66},
            "num_attention_heads: (4) must divide hidden_size (66) for HRM-Text",
        ),
    ],
)
def test_looped_bad_fields_name_the_field(
    write: Any, model_type: str, fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as err:
        load_spec(write("config.json", {"model_type": model_type, **fields}))
    assert err.value.detail == message


# ---- DeepSeek sparse attention: what a token attends to ---------------------------------------

DSA_SMALL = [
    "hidden_size=128",
    "intermediate_size=192",
    "moe_intermediate_size=32",
    "vocab_size=512",
    "num_attention_heads=4",
    "num_key_value_heads=4",
    "q_lora_rank=64",
    "kv_lora_rank=32",
    "qk_nope_head_dim=16",
    "qk_rope_head_dim=16",
    "v_head_dim=16",
    "n_routed_experts=8",
    "num_experts_per_tok=2",
    "n_group=1",
    "topk_group=1",
    "index_n_heads=4",
    "index_head_dim=32",
    "index_topk=4",
    "num_nextn_predict_layers=0",
]


@pytest.mark.torch
def test_dsa_prefill_equals_flop_counter() -> None:
    """transformers' torch path runs the indexer's two matmuls over all n² pairs and the softmax
    attention densely under the top-k mask: FlopCounterMode sees n² for both (1 dense layer)."""
    spec = load_spec("deepseek-v3.2-exp", overrides=[*DSA_SMALL, "num_hidden_layers=1"])
    m = measure_forward(spec, num_layers=1, seq_len=SEQ)
    assert m.flops == forward_flops_per_sequence(spec, ctx=SEQ, causal=False)
    # the indexer's share: 8² pairs × 2 · 4 heads · (32 + 1)
    dense = load_spec(
        "deepseek-v3.2-exp", overrides=[*DSA_SMALL, "num_hidden_layers=1", "index_n_heads=8"]
    )
    extra = forward_flops_per_sequence(dense, ctx=SEQ, causal=False) - m.flops
    weights = 2 * 4 * 32 * 64 + 2 * 4 * 128  # wq_b and weights_proj grow by 4 heads, per token
    assert extra == SEQ * weights + SEQ * SEQ * 2 * 4 * 33


def test_dsa_token_reads_at_most_index_topk_keys() -> None:
    """DeepSeek-V3.2-Exp at 32k: the softmax reads 2,048 keys; the indexer scores all 32,768."""
    from llmcalc.formulas.flops import attention_flops_per_token, flops

    spec = load_spec("deepseek-v3.2-exp")
    core = 2 * 2048 * 128 * (192 + 128)  # 2 · topk · h · (d_qk + d_v)
    index = 32_768 * 2 * 64 * (128 + 1)  # every key × 2 · H_I · (d_I + 1)
    assert attention_flops_per_token(spec, ctx=32_768) == 61 * (core + index) == 43_239_079_936
    # below index_topk a query reads every key
    assert attention_flops_per_token(spec, ctx=1000) == 61 * 1000 * (
        2 * 128 * 320 + 2 * 64 * 129
    )
    r = flops(spec, ctx=32_768)
    assert [(a.keys, a.index_keys, a.topk) for a in r.attention_terms] == [
        (2048, 32_768, 2048),
        (2048, 32_768, 2048),
    ]
    # causal prefill: query i reads min(i, 2048) keys; the indexer scores i
    causal = forward_flops_per_sequence(spec, ctx=4096, causal=True)
    full = forward_flops_per_sequence(spec, ctx=4096, causal=False)
    pairs = 2048 * 2049 // 2 + 2048 * 2048
    assert full - causal == 61 * (
        (4096 * 4096 - pairs) * 2 * 128 * 320 + (4096 * 4096 - 4096 * 4097 // 2) * 2 * 64 * 129
    )


def test_dsa_explain_states_the_source() -> None:
    from typer.testing import CliRunner

    from llmcalc.cli import app

    result = CliRunner().invoke(app, ["flops", "deepseek-v3.2-exp", "--ctx", "32768", "--explain"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "min(32,768, index_topk 2,048) × 128 heads × (192 + 128) + 32,768 keys scored × 16,512" in text
    assert "DeepSeek sparse attention (DeepSeek-V3.2-Exp §2.1; transformers modeling_deepseek_v32.py)" in text


# ---- the share of decoder-only types counted by formula --------------------


def decoder_coverage() -> tuple[list[str], list[str]]:
    """(decoder-only causal-LM types, those of them counted by formula). Out of scope: the types
    NOT_COUNTED lists as encoder–decoder, encoder, multimodal or not buildable from transformers'
    default."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    from llmcalc.families import MODEL_TYPES
    from llmcalc.families import not_counted as nc

    out_of_scope = (nc.ENC_DEC, nc.ENCODER, nc.MULTIMODAL, nc.NO_DEFAULT)
    decoders = [
        t
        for t in sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
        if not nc.NOT_COUNTED.get(t, "").startswith(out_of_scope)
    ]
    return decoders, [t for t in decoders if t in MODEL_TYPES]


@pytest.mark.torch
def test_every_decoder_only_type_is_counted() -> None:
    decoders, counted = decoder_coverage()
    # DeepSeek-V4 and HY-V4 were the last two left (tests/families/test_deepseek_v4.py)
    assert [t for t in decoders if t not in counted] == []
    mine = {"gemma4_text", "gemma4_unified_text", "hrm_text", "dory"}
    assert mine <= set(counted)


@pytest.mark.torch
def test_decoder_only_types_counted_by_formula_reach_95_percent() -> None:
    decoders, counted = decoder_coverage()
    share = len(counted) / len(decoders)
    missing = sorted(set(decoders) - set(counted))
    assert share >= 0.95, (
        f"{len(counted)} of {len(decoders)} decoder-only types ({share:.1%}) count by formula; "
        f"not yet: {', '.join(missing)}"
    )


@pytest.mark.torch
def test_dsa_cache_holds_the_indexer_keys() -> None:
    spec = load_spec("deepseek-v3.2-exp", overrides=["num_hidden_layers=2", *DSA_SMALL])
    m = measure_forward(spec, num_layers=2, seq_len=SEQ, batch=2, use_cache=True)
    assert m.kv_cache_bytes == kv_cache_bytes(spec, batch=2, ctx=SEQ, dtype=DType.bf16)
    # per layer and token: latent 32 + rope 16, indexer key 32; × 8 tokens × 2 seqs × 2 bytes
    assert m.kv_cache_bytes == 2 * (48 + 32) * 8 * 2 * 2


def test_glm5_shared_indexer_layers_cache_and_score_nothing_for_the_indexer() -> None:
    from llmcalc.formulas.memory import kv_elements_per_layer

    types = ", ".join(["full", "shared"] * 39)
    spec = load_spec("glm-moe-dsa-defaults", overrides=[f"indexer_types=[{types}]"])
    by_name = {g.name: g.attention for g in spec.layer_groups}
    own = next(a for k, a in by_name.items() if k.startswith("indexer"))
    shared = next(a for k, a in by_name.items() if k.startswith("shared_indexer"))
    assert (own.index_key_dim, own.index_pair_flops) == (128, 2 * 32 * 129)
    assert (shared.index_key_dim, shared.index_pair_flops, shared.topk) == (0, 0, 2048)
    assert kv_elements_per_layer(own) - kv_elements_per_layer(shared) == 128


@pytest.mark.torch
def test_verify_flops_cuts_dory_keeping_its_sections() -> None:
    from llmcalc.verify.reference import cut_fields, verify_flops

    small = ["hidden_size=128", "intermediate_size=256", "vocab_size=512", "num_attention_heads=4",
             "head_dim=32"]
    spec = load_spec("dory-default", overrides=small)
    # the 2-layer copy keeps the pattern's first full-attention layer beside the sliding one
    assert [cut_fields(spec, num_layers=k) for k in (1, 2)] == [
        {"num_hidden_layers": 1, "n_recurrent_layers": 1, "n_input_layers": 0, "n_output_layers": 0},
        {"num_hidden_layers": 2, "n_recurrent_layers": 1, "n_input_layers": 1, "n_output_layers": 0,
         "layer_types": ["sliding_attention", "full_attention"]},
    ]
    check = verify_flops(spec)
    assert check.ok and check.ours == check.measured
