"""The Llama-style dense decoders of ``families/decoder.py`` and the older ones of ``classic.py``: each switch by hand, and each type on
varied configs (layers, widths, heads and kv heads, tied or not, biases, layer patterns) held
against transformers on the meta device."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from helpers import configs

from llmcalc import count, load_spec
from llmcalc.model.spec import LAYER, ModelSpec
from llmcalc.verify.reference import build_meta_model, figures


def layer0(spec: ModelSpec) -> dict[str, tuple[int, ...]]:
    group = next(g for g in spec.layer_groups if 0 in g.layers)
    return {t.name.split(f"{LAYER}.", 1)[1]: t.shape for t in group.tensors}


# 4 layers, d = 64, 8 heads (2 kv heads), ff 96, vocab 1000, plus the fields given
tiny = partial(configs.tiny, base=configs.DECODER)


GPT = dict(vocab_size=1000, n_layer=3, n_embd=64, n_head=4, n_positions=128)
ROPE = {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}
NEOX_JAPANESE = dict(model_type="gpt_neox_japanese", vocab_size=1000, num_hidden_layers=3,
                     hidden_size=64, num_attention_heads=4, bos_token_id=0, eos_token_id=1)

VARIANTS: dict[str, dict[str, Any]] = {
    "arcee-tied-biases": tiny(
        "arcee", tie_word_embeddings=True, attention_bias=True, mlp_bias=True
    ),
    "apertus-gqa-5-layers": tiny("apertus", num_hidden_layers=5, num_key_value_heads=4),
    "bitnet-mha-tied": tiny("bitnet", num_key_value_heads=8, tie_word_embeddings=True),
    "cohere_compass_text-sliding-untied": tiny(
        "cohere_compass_text",
        head_dim=32,
        tie_word_embeddings=False,
        attention_bias=True,
        layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
        rope_parameters={
            kind: {"rope_type": "default", "rope_theta": 10000.0}
            for kind in ("full_attention", "sliding_attention")
        },
        pad_token_id=0,
    ),
    "cwm-layer-types": tiny(
        "cwm",
        head_dim=16,
        layer_types=["sliding_attention", "full_attention", "full_attention", "sliding_attention"],
    ),
    "cwm-pattern-6-layers": tiny("cwm", num_hidden_layers=6, head_dim=8, sliding_window=32),
    "diffllama-head-dim": tiny("diffllama", head_dim=16, attention_bias=True),
    "doge-gqa-bias-window": tiny("doge", attention_bias=True, mlp_bias=True, sliding_window=16),
    "doge-tied-mha": tiny("doge", num_key_value_heads=8, tie_word_embeddings=True),
    "ernie4_5-bias-untied": tiny("ernie4_5", head_dim=16, use_bias=True, tie_word_embeddings=False),
    "exaone-biases": tiny("exaone", attention_bias=True, mlp_bias=True),
    "exaone-num-layers": {
        **{k: v for k, v in tiny("exaone").items() if k != "num_hidden_layers"},
        "num_layers": 3,
    },
    "exaone4-pattern-3": tiny("exaone4", num_hidden_layers=6, sliding_window_pattern=3),
    "exaone4-pattern-2-tied": tiny("exaone4", sliding_window_pattern=2, tie_word_embeddings=True),
    "glm-no-bias-mha": tiny(
        "glm", head_dim=8, num_key_value_heads=8, attention_bias=False, pad_token_id=0
    ),
    "glm4-head-dim-tied": tiny("glm4", head_dim=16, tie_word_embeddings=True, pad_token_id=0),
    "granite_swa-untied-7-layers": tiny(
        "granite_swa", num_hidden_layers=7, tie_word_embeddings=False, attention_bias=True
    ),
    "helium-head-dim-differs": tiny("helium", head_dim=16, mlp_bias=True),
    "hunyuan_v1_dense-head-dim": tiny("hunyuan_v1_dense", head_dim=16, **ROPE),
    "hyperclovax-no-post-norm": tiny("hyperclovax", use_post_norm=False, head_dim=8),
    "hyperclovax-post-norm-tied": tiny("hyperclovax", tie_word_embeddings=True, head_dim=8),
    "internlm3-biases": tiny("internlm3", head_dim=8, qkv_bias=True, bias=True),
    "iquestcoder-tied": tiny("iquestcoder", head_dim=16, tie_word_embeddings=True),
    "jais2-no-bias": tiny("jais2", head_dim=8, attention_bias=False, mlp_bias=False),
    "ministral-window": tiny("ministral", head_dim=16, sliding_window=32, **ROPE),
    "ministral3-window": tiny("ministral3", head_dim=16, sliding_window=32),
    "nanochat-gqa": tiny("nanochat", num_hidden_layers=3),
    "nemotron-biases": tiny("nemotron", head_dim=16, attention_bias=True, mlp_bias=True, **ROPE),
    "olmo3-gqa-9-layers": tiny("olmo3", num_hidden_layers=9, attention_bias=True),
    "seed_oss-o-bias": tiny("seed_oss", head_dim=16, attention_out_bias=True, mlp_bias=True),
    "smollm3-sliding-nope": tiny(
        "smollm3",
        use_sliding_window=True,
        sliding_window=16,
        no_rope_layer_interval=2,
        tie_word_embeddings=False,
        pad_token_id=0,
    ),
    "vaultgemma-5-layers": tiny("vaultgemma", num_hidden_layers=5, head_dim=16),
    "minicpm3-v-head-dim-null-untied": tiny(
        "minicpm3",
        num_key_value_heads=None,
        head_dim=4,
        q_lora_rank=32,
        kv_lora_rank=16,
        qk_nope_head_dim=8,
        qk_rope_head_dim=4,
        v_head_dim=None,
        tie_word_embeddings=False,
        **ROPE,
    ),
    "youtu-no-q-lora-bias": tiny(
        "youtu",
        num_key_value_heads=8,
        q_lora_rank=None,
        kv_lora_rank=16,
        qk_nope_head_dim=8,
        qk_rope_head_dim=4,
        v_head_dim=12,
        attention_bias=True,
        **ROPE,
    ),
    # classic.py
    "openai-gpt-untied": dict(GPT, model_type="openai-gpt", tie_word_embeddings=False),
    "codegen-n-inner-tied": dict(
        GPT, model_type="codegen", n_inner=100, rotary_dim=4, tie_word_embeddings=True
    ),
    "ctrl-untied": dict(GPT, model_type="ctrl", dff=100, tie_word_embeddings=False),
    "gpt-sw3-untied": dict(GPT, model_type="gpt-sw3", n_inner=100, tie_word_embeddings=False),
    "xglm-untied": dict(
        model_type="xglm",
        vocab_size=1000,
        num_layers=3,
        d_model=64,
        attention_heads=4,
        ffn_dim=100,
        max_position_embeddings=128,
        tie_word_embeddings=False,
        pad_token_id=0,
    ),
    "biogpt-untied": tiny(
        "biogpt",
        num_key_value_heads=None,
        max_position_embeddings=100,
        tie_word_embeddings=False,
        pad_token_id=0,
    ),
    "gpt_neox_japanese-untied-1-layer": dict(
        NEOX_JAPANESE, num_hidden_layers=1, intermediate_multiple_size=2, tie_word_embeddings=False
    ),
    "gpt_neox_japanese-tied": dict(NEOX_JAPANESE),
    "modernbert-decoder-biases-untied": tiny(
        "modernbert-decoder",
        num_key_value_heads=None,
        norm_bias=True,
        attention_bias=True,
        mlp_bias=True,
        classifier_bias=True,
        tie_word_embeddings=False,
        global_attn_every_n_layers=2,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        cls_token_id=1,
        sep_token_id=2,
    ),
    "modernbert-decoder-sliding-first": tiny(
        "modernbert-decoder",
        num_key_value_heads=None,
        decoder_bias=False,
        layer_types=[
            "sliding_attention",
            "full_attention",
            "sliding_attention",
            "sliding_attention",
        ],
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        cls_token_id=1,
        sep_token_id=2,
    ),
    "persimmon-no-qk-norm-tied": tiny(
        "persimmon", num_key_value_heads=None, qk_layernorm=False, tie_word_embeddings=True, **ROPE
    ),
}


@pytest.mark.torch
@pytest.mark.parametrize("fields", VARIANTS.values(), ids=VARIANTS.keys())
def test_variant_matches_transformers(write: Any, fields: dict[str, Any]) -> None:
    spec = load_spec(write("config.json", fields))
    pc = count(spec)
    model = build_meta_model(spec)
    real = figures(model, spec.num_layers)
    assert dict(spec.named_shapes()) == real.named_shapes
    assert (pc.total, pc.embedding, pc.lm_head) == (real.total, real.embedding, real.lm_head)
    groups = zip(spec.layer_groups, pc.groups, strict=True)
    per_layer = {i: gc.per_layer for group, gc in groups for i in group.layers}
    assert tuple(per_layer[i] for i in range(spec.num_layers)) == real.per_layer
    # every layer's attention kind, as transformers' config derives it
    kinds = getattr(model.config, "layer_types", None)
    if kinds is not None:
        for group in spec.layer_groups:
            for i in group.layers:
                if group.name in ("full_attention", "sliding_attention"):
                    assert kinds[i] == group.name, (i, group.name)
                window = group.attention.window
                assert (window is not None) == (kinds[i] == "sliding_attention")


# ---- each switch by hand ----------------------------------------------------------------------


def test_olmo3_full_width_qk_norms_and_one_full_layer_in_four(write: Any) -> None:
    spec = load_spec(write("c.json", tiny("olmo3", num_hidden_layers=8, sliding_window=32)))
    l0 = layer0(spec)
    assert l0["self_attn.q_norm.weight"] == (64,)  # h·hd = 8 · 8
    assert l0["self_attn.k_norm.weight"] == (16,)  # kv·hd = 2 · 8
    assert "input_layernorm.weight" not in l0
    groups = {g.name: (tuple(g.layers), g.attention.window) for g in spec.layer_groups}
    assert groups == {
        "sliding_attention": ((0, 1, 2, 4, 5, 6), 32),
        "full_attention": ((3, 7), None),
    }


def test_glm4_fused_mlp_and_four_norms(write: Any) -> None:
    l0 = layer0(load_spec(write("c.json", tiny("glm4", head_dim=8))))
    assert l0["mlp.gate_up_proj.weight"] == (2 * 96, 64)
    assert {k for k in l0 if "layernorm" in k} == {
        f"{n}.weight"
        for n in (
            "input_layernorm",
            "post_attention_layernorm",
            "post_self_attn_layernorm",
            "post_mlp_layernorm",
        )
    }
    assert l0["self_attn.q_proj.bias"] == (64,)
    assert "self_attn.o_proj.bias" not in l0


def test_seed_oss_biases_by_hand(write: Any) -> None:
    # q: 8·16 × 64 + bias, k, v: 2·16 × 64 + bias, o: 64 × 128 (no bias by default); SwiGLU; 2 norms
    d, h, kv, hd, ff = 64, 8, 2, 16, 96
    spec = load_spec(write("c.json", tiny("seed_oss", head_dim=hd)))
    layer = (h * hd * d + h * hd) + 2 * (kv * hd * d + kv * hd) + d * h * hd + 3 * d * ff + 2 * d
    assert count(spec).groups[0].per_layer == layer


def test_bitnet_sub_norms_and_apertus_activation_scalars(write: Any) -> None:
    l0 = layer0(load_spec(write("c.json", tiny("bitnet"))))
    assert (l0["self_attn.attn_sub_norm.weight"], l0["mlp.ffn_sub_norm.weight"]) == ((64,), (96,))
    l0 = layer0(load_spec(write("c.json", tiny("apertus"))))
    assert l0["mlp.act_fn.alpha_p"] == l0["mlp.act_fn.alpha_n"] == (1,)
    assert "mlp.gate_proj.weight" not in l0


def test_granite_swa_sinks_and_first_of_four_full(write: Any) -> None:
    spec = load_spec(write("c.json", tiny("granite_swa", num_hidden_layers=5)))
    assert layer0(spec)["self_attn.sinks"] == (8,)
    groups = {g.name: tuple(g.layers) for g in spec.layer_groups}
    assert groups == {"full_attention": (0, 4), "sliding_attention": (1, 2, 3)}


def test_helium_o_proj_is_hidden_square(write: Any) -> None:
    l0 = layer0(load_spec(write("c.json", tiny("helium", head_dim=16))))
    assert l0["self_attn.q_proj.weight"] == (128, 64)
    assert l0["self_attn.o_proj.weight"] == (64, 64)


def test_nanochat_has_no_norm_weights(write: Any) -> None:
    spec = load_spec(write("c.json", tiny("nanochat")))
    assert not any("norm" in name for name, _ in spec.named_shapes())


def test_exaone4_pattern_must_be_a_count(cli: Any, write: Any) -> None:
    path = write("bad.json", tiny("exaone4", sliding_window_pattern="LLLG"))
    run = cli("count", path)
    assert run.code == 2
    assert run.stderr == f'error: {path}: sliding_window_pattern must be an integer, got "LLLG"\n'


def test_gpt_neox_japanese_output_bias_on_the_last_layer_only(write: Any) -> None:
    spec = load_spec(write("c.json", VARIANTS["gpt_neox_japanese-tied"]))
    groups = {g.name: tuple(g.layers) for g in spec.layer_groups}
    assert groups == {"decoder": (0, 1), "last": (2,)}
    names = dict(spec.named_shapes())
    assert names["gpt_neox_japanese.layers.2.attention.dense_bias"] == (64,)
    assert "gpt_neox_japanese.layers.1.attention.dense_bias" not in names


def test_biogpt_positions_have_two_offset_rows(write: Any) -> None:
    spec = load_spec(write("c.json", VARIANTS["biogpt-untied"]))
    assert dict(spec.named_shapes())["biogpt.embed_positions.weight"] == (102, 64)


def test_minicpm3_mla_latent_and_value_width(write: Any) -> None:
    spec = load_spec(write("c.json", VARIANTS["minicpm3-v-head-dim-null-untied"]))
    l0 = layer0(spec)
    assert l0["self_attn.kv_a_proj_with_mqa.weight"] == (16 + 4, 64)  # latent + rotary key
    assert l0["self_attn.kv_b_proj.weight"] == (8 * (8 + 8), 16)  # v_head_dim null: 64 / 8
    attention = spec.layer_groups[0].attention
    assert (attention.kv_latent_dim, attention.v_head_dim) == (20, 8)


def test_modernbert_decoder_layer_zero_has_no_attention_norm(write: Any) -> None:
    spec = load_spec(write("c.json", VARIANTS["modernbert-decoder-sliding-first"]))
    names = dict(spec.named_shapes())
    assert "model.layers.0.attn_norm.weight" not in names
    assert names["model.layers.1.attn_norm.weight"] == (64,)
    groups = {g.name: (tuple(g.layers), g.attention.window) for g in spec.layer_groups}
    assert groups == {
        "first_layer": ((0,), 64),  # local_attention 128 / 2
        "full_attention": ((1,), None),
        "sliding_attention": ((2, 3), 64),
    }


def test_doge_dynamic_mask_and_residual_scales(write: Any) -> None:
    l0 = layer0(load_spec(write("c.json", tiny("doge"))))
    assert l0["self_attn.A"] == (2,)  # one per kv head
    assert l0["self_attn.dt_proj.weight"] == (2, 2 * 8)
    assert l0["input_residual"] == l0["post_attention_residual"] == (64,)


def test_doge_moe_is_refused(cli: Any, write: Any) -> None:
    path = write("bad.json", tiny("doge", is_moe=True))
    run = cli("count", path)
    assert run.code == 2
    assert run.stderr == f"error: {path}: is_moe: Doge's CDMoE layers are not counted yet\n"
