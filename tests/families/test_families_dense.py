"""The dense decoder families: their distinctive tensors by hand, their published totals, and their
knobs held against transformers on the meta device (tiny configs, no network)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from helpers import configs
from helpers.reference import total_from_names

from llmcalc import count, load_spec
from llmcalc.model.spec import LAYER, ModelSpec
from llmcalc.verify.reference import build_meta_model, figures

# Bundled configs of the dense families → total parameters (see each file's ``source:``).
TOTALS = {
    "EleutherAI/pythia-1.4b": 1_414_647_808,
    "gpt-j-6b": 6_050_882_784,
    "gpt-neo-1.3b": 1_315_575_808,
    "opt-125m": 125_239_296,
    "facebook/opt-350m": 331_196_416,
    "bloom-560m": 559_214_592,
    "falcon-7b": 6_921_720_704,
    "falcon-40b": 41_303_293_952,
    "mpt-7b": 6_649_286_656,
    "bigcode/starcoder": 15_517_456_384,
    "starcoder2-3b": 3_030_371_328,
    "stablelm-2-1.6b": 1_644_515_328,
    "microsoft/phi-2": 2_779_683_840,
    "phi-3-mini-4k": 3_821_079_552,
    "qwen2.5-0.5b": 494_032_768,
    "qwen2.5-7b": 7_615_616_512,
    "Qwen/Qwen3-0.6B": 596_049_920,
    "qwen3-8b": 8_190_735_360,
    "olmo-2-7b": 7_298_617_344,
    "command-r": 34_980_831_232,
    "granite-3.0-2b": 2_533_531_648,
}


def shapes(spec: ModelSpec) -> dict[str, tuple[int, ...]]:
    return dict(spec.named_shapes())


def layer0(spec: ModelSpec) -> dict[str, tuple[int, ...]]:
    """Layer 0's tensors named from inside the layer (``self_attn.q_proj.weight`` …)."""
    group = next(g for g in spec.layer_groups if 0 in g.layers)
    return {t.name.split(f"{LAYER}.", 1)[1]: t.shape for t in group.tensors}


@pytest.mark.parametrize("name,total", TOTALS.items())
def test_bundled_total(name: str, total: int) -> None:
    spec = load_spec(name)
    pc = count(spec)
    assert pc.total == total
    assert pc.active == total  # dense
    assert total_from_names(spec) == total
    assert spec.expected["total_params"] == total


def test_pythia_by_hand_and_partial_rotary_has_no_parameters() -> None:
    # Two LayerNorms (2·2d), query_key_value 3d·d + 3d, dense d² + d, MLP 2·d·ff + ff + d;
    # untied embed_in and head V·d each; final LayerNorm 2d.
    d, ff, L, V = 2048, 8192, 24, 50304
    layer = 4 * d + (3 * d * d + 3 * d) + (d * d + d) + (2 * d * ff + ff + d)
    spec = load_spec("pythia-1.4b")
    pc = count(spec)
    assert pc.groups[0].per_layer == layer == 50_358_272
    assert pc.total == 2 * V * d + L * layer + 2 * d
    # Rotary on 25% of each head: buffers only, so no tensor and no change in any count.
    assert not any("rotary" in name for name in shapes(spec))
    for pct in ("1.0", "0.1"):
        assert count(load_spec("pythia-1.4b", overrides=[f"rotary_pct={pct}"])).total == pc.total


def test_opt_350m_position_offset_and_projections() -> None:
    # word_embed_proj_dim 512 ≠ hidden 1024: tokens and the (tied) head live in 512 wide,
    # project_in 1024 × 512 and project_out 512 × 1024 bridge them; positions have 2048 + 2 rows.
    spec = load_spec("opt-350m")
    s = shapes(spec)
    assert s["model.decoder.embed_tokens.weight"] == (50272, 512)
    assert s["model.decoder.embed_positions.weight"] == (2048 + 2, 1024)
    assert s["model.decoder.project_in.weight"] == (1024, 512)
    assert s["model.decoder.project_out.weight"] == (512, 1024)
    assert "lm_head.weight" not in s  # tied to embed_tokens
    assert "model.decoder.final_layer_norm.weight" not in s  # do_layer_norm_before: false
    pc = count(spec)
    assert pc.embedding == 50272 * 512 + 2050 * 1024 == 27_838_464
    assert pc.breakdown["embed_proj/in"] == pc.breakdown["embed_proj/out"] == 524_288
    assert pc.lm_head == 0
    assert "position table: max_position_embeddings + 2 rows (OPT offset)" in spec.notes


def test_opt_125m_has_no_projections_and_a_final_norm() -> None:
    d, ff, L, V = 768, 3072, 12, 50272
    spec = load_spec("opt-125m")
    s = shapes(spec)
    assert not any("project_" in name for name in s)
    assert s["model.decoder.final_layer_norm.weight"] == (d,)
    # q, k, v, out with biases, two LayerNorms, fc1/fc2 with biases
    layer = 4 * (d * d + d) + 2 * 2 * d + (d * ff + ff) + (ff * d + d)
    assert count(spec).total == V * d + (2048 + 2) * d + L * layer + 2 * d


def test_falcon_7b_multi_query() -> None:
    # MQA: one k and one v head of 64 next to 71 query heads; one LayerNorm for the parallel block.
    spec = load_spec("falcon-7b")
    l0 = layer0(spec)
    assert l0["self_attention.query_key_value.weight"] == ((71 + 2) * 64, 4544) == (4672, 4544)
    assert "self_attention.query_key_value.bias" not in l0  # bias: false
    assert [k for k in l0 if "norm" in k] == ["input_layernorm.weight", "input_layernorm.bias"]
    assert (spec.shape.num_kv_heads, spec.layer_groups[0].attention.kv_heads) == (1, 1)
    assert count(spec).lm_head == 0  # tied by the transformers default, stated in the notes
    assert any("tie_word_embeddings=true" in note for note in spec.notes)


def test_falcon_40b_new_decoder_architecture() -> None:
    # GQA with 8 kv heads: (128 + 2·8)·64 rows; two LayerNorms (ln_attn, ln_mlp).
    spec = load_spec("falcon-40b")
    l0 = layer0(spec)
    assert l0["self_attention.query_key_value.weight"] == ((128 + 16) * 64, 8192) == (9216, 8192)
    assert {k for k in l0 if "ln_" in k or "layernorm" in k} == {
        "ln_attn.weight",
        "ln_attn.bias",
        "ln_mlp.weight",
        "ln_mlp.bias",
    }
    assert spec.layer_groups[0].attention.kv_heads == spec.shape.num_kv_heads == 8


def test_phi2_lm_head_bias_and_biased_linears() -> None:
    d, V = 2560, 51200
    spec = load_spec("phi-2")
    s = shapes(spec)
    assert s["lm_head.bias"] == (V,)
    assert count(spec).lm_head == V * d + V
    l0 = layer0(spec)
    for proj in ("q_proj", "k_proj", "v_proj", "dense"):
        assert l0[f"self_attn.{proj}.bias"] == (d,)
    assert "post_attention_layernorm.weight" not in l0  # one LayerNorm, parallel block


def test_gptj_lm_head_bias_and_bias_free_attention() -> None:
    spec = load_spec("gpt-j-6b")
    assert shapes(spec)["lm_head.bias"] == (50400,)
    l0 = layer0(spec)
    assert not any(k.startswith("attn.") and k.endswith(".bias") for k in l0)
    assert l0["mlp.fc_in.weight"] == (4 * 4096, 4096)  # n_inner null: 4 · n_embd


def test_qwen2_biases_on_q_k_v_only() -> None:
    # Qwen2.5-0.5B: 14 heads, 2 kv heads of 64; q bias 896, k and v bias 2·64; o has none.
    l0 = layer0(load_spec("qwen2.5-0.5b"))
    assert l0["self_attn.q_proj.bias"] == (896,)
    assert l0["self_attn.k_proj.bias"] == l0["self_attn.v_proj.bias"] == (128,)
    assert "self_attn.o_proj.bias" not in l0


def test_qwen3_qk_norms_by_hand() -> None:
    # Qwen3-0.6B: q 16·128 × 1024, k/v 8·128 × 1024, o 1024 × 2048, q/k RMSNorm [128],
    # SwiGLU 3·1024·3072, two RMSNorms; tied head.
    d, ff, h, kv, hd, L, V = 1024, 3072, 16, 8, 128, 28, 151936
    spec = load_spec("qwen3-0.6b")
    l0 = layer0(spec)
    assert l0["self_attn.q_norm.weight"] == l0["self_attn.k_norm.weight"] == (hd,)
    assert "self_attn.q_proj.bias" not in l0
    layer = 2 * h * hd * d + 2 * kv * hd * d + 2 * hd + 3 * d * ff + 2 * d
    pc = count(spec)
    assert pc.groups[0].per_layer == layer == 15_730_944
    assert pc.total == V * d + L * layer + d
    assert spec.layer_groups[0].attention.qk_head_dim == 128  # head_dim given, not d / h = 64


def test_olmo2_norms_after_blocks_and_full_width_qk_norms() -> None:
    l0 = layer0(load_spec("olmo-2-7b"))
    assert l0["self_attn.q_norm.weight"] == l0["self_attn.k_norm.weight"] == (32 * 128,)
    assert "input_layernorm.weight" not in l0
    assert l0["post_feedforward_layernorm.weight"] == (4096,)


def test_bloom_embedding_layernorm_and_alibi() -> None:
    d, V = 1024, 250880
    spec = load_spec("bloom-560m")
    s = shapes(spec)
    assert s["transformer.word_embeddings_layernorm.weight"] == (d,)
    assert s["transformer.word_embeddings_layernorm.bias"] == (d,)
    pc = count(spec)
    assert pc.embedding == V * d  # ALiBi: no position table
    assert pc.breakdown["embed/norm"] == 2 * d


def test_gpt_bigcode_multi_query_c_attn() -> None:
    # StarCoder: c_attn projects to d + 2·hd (one shared k and v head of 128).
    l0 = layer0(load_spec("starcoder"))
    assert l0["attn.c_attn.weight"] == (6144 + 2 * 128, 6144)
    assert l0["attn.c_attn.bias"] == (6400,)


def test_gpt_neo_global_and_local_layers() -> None:
    spec = load_spec("gpt-neo-1.3b")
    groups = {g.name: g for g in spec.layer_groups}
    assert tuple(groups["global"].layers) == tuple(range(0, 24, 2))
    assert tuple(groups["local"].layers) == tuple(range(1, 24, 2))
    assert (groups["global"].attention.window, groups["local"].attention.window) == (None, 256)
    pc = count(spec)
    assert pc.groups[0].per_layer == pc.groups[1].per_layer


def test_mpt_bias_free_and_tied() -> None:
    spec = load_spec("mpt-7b")
    assert not any(name.endswith(".bias") for name in shapes(spec))
    assert count(spec).embedding == 50432 * 4096  # ALiBi, tied head


def test_phi3_fused_projections() -> None:
    l0 = layer0(load_spec("phi-3-mini-4k"))
    assert l0["self_attn.qkv_proj.weight"] == (3 * 3072, 3072)
    assert l0["mlp.gate_up_proj.weight"] == (2 * 8192, 3072)


def test_granite_multipliers_hold_no_parameters() -> None:
    granite = load_spec("granite-3.0-2b")
    as_llama = load_spec("granite-3.0-2b", family="llama")
    assert shapes(granite) == shapes(as_llama)
    assert count(granite).total == count(as_llama).total


def test_starcoder2_biases_and_window() -> None:
    spec = load_spec("starcoder2-3b")
    l0 = layer0(spec)
    assert l0["self_attn.k_proj.bias"] == (2 * 128,)
    assert l0["mlp.c_fc.bias"] == (12288,)
    assert spec.layer_groups[0].attention.window == 4096
    assert count(spec).lm_head == 0  # tied by the transformers default


# ---- knobs the bundled configs do not exercise, held against transformers ------------------------

# a small config: 3 layers, d = 64, 8 heads of 8, ff 96, vocab 1000, plus the fields given
tiny = partial(configs.tiny, base=configs.DENSE)


GPT_STYLE = dict(vocab_size=1000, n_layer=2, n_embd=64, n_head=4)

VARIANTS: dict[str, dict[str, Any]] = {
    "gpt_neox-untied-no-attn-bias": tiny("gpt_neox", attention_bias=False),
    "gptj-tied-n-inner": dict(GPT_STYLE, model_type="gptj", n_inner=100, tie_word_embeddings=True),
    "gpt_neo-uneven-types": dict(
        tiny("gpt_neo", num_layers=3, num_heads=4, max_position_embeddings=128),
        attention_types=[[["global"], 1], [["local"], 2]],
        tie_word_embeddings=False,
    ),
    "opt-no-affine-no-bias": tiny(
        "opt",
        ffn_dim=128,
        max_position_embeddings=100,
        enable_bias=False,
        layer_norm_elementwise_affine=False,
        tie_word_embeddings=False,
    ),
    "bloom-untied": dict(GPT_STYLE, model_type="bloom", hidden_size=64, tie_word_embeddings=False),
    "falcon-rw-style": tiny(
        "falcon", multi_query=False, parallel_attn=False, bias=True, alibi=True, ffn_hidden_size=100
    ),
    "falcon-new-arch-one-norm": tiny(
        "falcon",
        new_decoder_architecture=True,
        num_kv_heads=2,
        num_ln_in_parallel_attn=1,
        bias=True,
    ),
    "mpt-untied": dict(
        model_type="mpt",
        vocab_size=1000,
        n_layers=2,
        d_model=64,
        n_heads=4,
        tie_word_embeddings=False,
    ),
    "gpt_bigcode-mha": dict(
        GPT_STYLE, model_type="gpt_bigcode", n_positions=128, multi_query=False, n_inner=100
    ),
    "starcoder2-no-bias-head-dim": tiny(
        "starcoder2", use_bias=False, head_dim=16, tie_word_embeddings=False
    ),
    "stablelm-qk-norm-parallel": tiny(
        "stablelm",
        num_key_value_heads=2,
        use_qkv_bias=True,
        qk_layernorm=True,
        use_parallel_residual=True,
    ),
    "phi-gqa-qk-norm-tied-head-dim": tiny(
        "phi", num_key_value_heads=2, qk_layernorm=True, tie_word_embeddings=True, head_dim=16
    ),
    "phi3-gqa-tied-head-dim": tiny(
        "phi3", num_key_value_heads=2, head_dim=16, tie_word_embeddings=True, pad_token_id=0
    ),
    "qwen2-sliding-layers": tiny(
        "qwen2",
        num_key_value_heads=2,
        use_sliding_window=True,
        sliding_window=32,
        max_window_layers=1,
    ),
    "qwen3-attention-bias": tiny("qwen3", num_key_value_heads=2, head_dim=16, attention_bias=True),
    "olmo2-head-dim-bias": tiny("olmo2", head_dim=16, attention_bias=True),
    "cohere-qk-norm": tiny(
        "cohere", num_key_value_heads=2, use_qk_norm=True, head_dim=16, tie_word_embeddings=False
    ),
    "granite-biases": tiny("granite", num_key_value_heads=2, attention_bias=True, mlp_bias=True),
}


@pytest.mark.torch
@pytest.mark.parametrize("fields", VARIANTS.values(), ids=VARIANTS.keys())
def test_variant_matches_transformers(write: Any, fields: dict[str, Any]) -> None:
    spec = load_spec(write("config.json", fields))
    pc = count(spec)
    real = figures(build_meta_model(spec), spec.num_layers)
    assert shapes(spec) == real.named_shapes
    assert (pc.total, pc.embedding, pc.lm_head) == (real.total, real.embedding, real.lm_head)
    ours = [0] * spec.num_layers
    for group, gc in zip(spec.layer_groups, pc.groups, strict=True):
        for i in group.layers:
            ours[i] = gc.per_layer
    assert tuple(ours) == real.per_layer


def test_stablelm_per_head_norms_and_parallel_residual(write: Any) -> None:
    spec = load_spec(write("config.json", VARIANTS["stablelm-qk-norm-parallel"]))
    l0 = layer0(spec)
    q_norms = [k for k in l0 if k.startswith("self_attn.q_layernorm.norms.")]
    k_norms = [k for k in l0 if k.startswith("self_attn.k_layernorm.norms.")]
    assert (len(q_norms), len(k_norms)) == (8, 2)  # one bias-free LayerNorm(8) per head
    assert l0["self_attn.q_layernorm.norms.7.weight"] == (8,)
    assert "post_attention_layernorm.weight" not in l0


def test_cohere_qk_norm_is_per_head(write: Any) -> None:
    l0 = layer0(load_spec(write("config.json", VARIANTS["cohere-qk-norm"])))
    assert l0["self_attn.q_norm.weight"] == (8, 16)  # [heads, head_dim]
    assert l0["self_attn.k_norm.weight"] == (2, 16)


def test_qwen2_sliding_window_layers_are_a_group(write: Any) -> None:
    spec = load_spec(write("config.json", VARIANTS["qwen2-sliding-layers"]))
    assert [(g.name, tuple(g.layers), g.attention.window) for g in spec.layer_groups] == [
        ("full_attention", (0,), None),
        ("sliding_attention", (1, 2), 32),
    ]


# ---- errors ---------------------------------------------------------------------------------------

NEO = tiny("gpt_neo", num_layers=3, num_heads=4, max_position_embeddings=64)
MPT = dict(model_type="mpt", vocab_size=100, d_model=64, n_layers=2, n_heads=4)

ERRORS = [
    (
        dict(NEO, attention_types=[[["global", "local"], 1]]),
        "attention_types: expands to 2 layers but num_layers is 3",
    ),
    (
        dict(NEO, attention_types=[[["global", "sliding"], 1]]),
        'attention_types: expected [[kinds, repeat], …] with kinds from "global", "local", '
        "got [['global', 'sliding'], 1]",
    ),
    (
        dict(MPT, attn_config={"attn_type": "multiquery_attention"}),
        "attn_config.attn_type: transformers' MPT builds only multihead_attention, "
        "got 'multiquery_attention'",
    ),
    (
        tiny("falcon", hidden_size=70),
        "num_attention_heads (8) must divide hidden_size (70) when head_dim is not given",
    ),
    (
        # (Qwen2Config declares 32 KV heads: a tiny config states its own)
        tiny("qwen2", num_key_value_heads=2, layer_types=["full_attention"]),
        "layer_types: has 1 entries, num_hidden_layers is 3",
    ),
]


@pytest.mark.parametrize("fields,message", ERRORS, ids=[m.split(" ")[0] for _, m in ERRORS])
def test_config_errors(cli: Any, write: Any, fields: dict[str, Any], message: str) -> None:
    path = write("bad.json", fields)
    run = cli("count", path)
    assert run.code == 2
    assert run.stdout == ""
    assert run.stderr == f"error: {path}: {message}\n"
