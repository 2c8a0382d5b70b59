"""Ling 3 (``bailing_hybrid``): Kimi Delta Attention with full-rank gates, MLA with a
per-head output gate closing every ``layer_group_size`` layers, DeepSeek-V3's MoE. Totals on the
bundled config, tensors held against transformers on the meta device (bundled and varied configs,
and a config transformers itself saved), the recurrent state and the MLA latent against the bytes
of transformers' cache after a real forward pass, the prefill FLOPs against FlopCounterMode."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest
from helpers import configs
from helpers.reference import matches_transformers, total_from_names

from llmcalc import count, load_spec
from llmcalc.formulas.flops import forward_flops_per_sequence, mixer_flops_per_token
from llmcalc.formulas.memory import kv_cache_bytes, state_bytes_per_sequence
from llmcalc.model.spec import KDA
from llmcalc.units import DType
from llmcalc.verify.reference import measure_forward

BUNDLED = "ling-3.0-flash"


@pytest.mark.torch
def test_bundled_totals_by_hand_and_against_transformers() -> None:
    # d 2560, V 157184, h 32; KDA: 32 heads of 128 (h·dk 4096), conv 4; MLA: nope 128, rope 64,
    # v 128, kv latent 512, no q latent; 512 experts of 768 (top-8) + 1 shared; dense MLP 6144
    d, V, hd = 2560, 157184, 4096
    kda = (6 * hd * d  # q, k, v, f_proj, g_proj (h·dk × d) and o_proj (d × h·dk)
           + 3 * hd * 4 + hd + 32  # conv (no bias), dt_bias, A_log
           + 32 * d + 128)  # b_proj, o_norm
    mla = 32 * 192 * d + 576 * d + 512 + 512 * 32 * 256 + d * 32 * 128 + 32 * d  # … + g_proj
    dense, moe = 3 * 6144 * d, 512 * d + 512 * 3 * 768 * d + 3 * 768 * d
    norms = 2 * d
    layers = 2 * (kda + dense + norms) + 33 * (kda + moe + norms) + 7 * (mla + moe + norms)
    spec = load_spec(BUNDLED)
    pc = count(spec)
    assert pc.total == layers + 2 * V * d + d == 124_414_191_072
    # active: 8 of the 512 routed experts in each of the 40 MoE layers
    assert pc.active == pc.total - 40 * 504 * 3 * 768 * d == 5_505_672_672
    assert (pc.total, pc.active) == (spec.expected["total_params"], spec.expected["active_params"])
    assert total_from_names(spec) == pc.total
    # the checkpoint's MTP layer 42 (MLA + MoE, eh_proj 2·d², enorm, hnorm, final norm), not built
    assert dict(spec.unbuilt) == {"mtp_params": mla + moe + norms + 2 * d * d + 3 * d}
    assert dict(spec.unbuilt)["mtp_params"] == 3_072_193_536
    matches_transformers(spec)


def test_bundled_layer_groups_state_and_kv_by_hand() -> None:
    spec = load_spec(BUNDLED)
    kinds = {g.name: (len(g.layers), g.layers.describe(most=8)) for g in spec.layer_groups}
    assert kinds == {
        "kda/dense": (2, "0..1"),
        "kda/moe": (33, "2..40 (5 of every 6)"),
        "mla/moe": (7, "5..41 every 6th"),
    }
    assert list(spec.layer_groups[2].layers) == [5, 11, 17, 23, 29, 35, 41]
    # 35 KDA layers: conv 3·4096 channels × 4 at the model's dtype (bf16; transformers caches the
    # projections' output, whatever the float32 conv weights), 32 heads × 128 × 128 in float32
    per_layer = 3 * 4096 * 4 * 2 + 32 * 128 * 128 * 4
    assert state_bytes_per_sequence(spec, dtype=DType.bf16) == 35 * per_layer == 76_840_960
    # 7 MLA layers cache the latent and the rotary key, 512 + 64 per token
    assert kv_cache_bytes(spec, batch=1, ctx=131072, dtype=DType.bf16) == (
        7 * 576 * 2 * 131072 + 76_840_960) == 1_133_805_568
    mixer = spec.layer_groups[0].mixer
    assert mixer is not None and mixer.kind == KDA
    # conv 2·12288·4 + the state read with k and with q, 2 × 2·32·128·128
    assert mixer_flops_per_token(mixer) == 2 * 12288 * 4 + 2 * 2 * 32 * 128 * 128 == 2_195_456


# a small bailing_hybrid config, the fields given put over it
LING3: dict[str, Any] = {
    "vocab_size": 100, "hidden_size": 32,
    "num_hidden_layers": 3, "num_attention_heads": 4, "head_dim": 8,
    "intermediate_size": 48, "moe_intermediate_size": 16, "kv_lora_rank": 16,
    "qk_rope_head_dim": 4, "qk_nope_head_dim": 8, "v_head_dim": 12, "num_experts": 4,
    "num_experts_per_tok": 2, "n_group": 2, "topk_group": 1, "pad_token_id": 0,
    "eos_token_id": 2,
}
tiny = partial(configs.tiny, "bailing_hybrid", base=LING3)


VARIANTS = {
    # MLA at layers 2, 5, 8; one dense layer; q latent, biases, 2 shared experts, kernel 3; the
    # tie flag is ignored (BailingHybridForCausalLM ties nothing)
    "group-of-3-q-latent-biases-tied-flag": tiny(
        num_hidden_layers=9, layer_group_size=3, first_k_dense_replace=1, q_lora_rank=24,
        attention_bias=True, num_shared_experts=2, short_conv_kernel_size=3,
        tie_word_embeddings=True),
    "listed-types": tiny(
        num_hidden_layers=4, num_experts=3, num_experts_per_tok=1, n_group=1,
        layer_types=["full_attention", "linear_attention", "full_attention", "linear_attention"],
        mlp_layer_types=["sparse", "dense", "dense", "sparse"]),
    # the linear_* fields win over head_dim, num_attention_heads and short_conv_kernel_size
    "linear-fields-given": tiny(head_dim=4, linear_head_dim=6, linear_num_heads=3,
                                linear_conv_kernel_dim=2, num_hidden_layers=6),
    "all-mla-all-dense": tiny(layer_group_size=1, first_k_dense_replace=7),
    "all-kda-all-moe": tiny(num_hidden_layers=5, layer_group_size=8, first_k_dense_replace=0,
                            num_experts=6, num_experts_per_tok=3, n_group=3),
}


@pytest.mark.torch
@pytest.mark.parametrize("fields", VARIANTS.values(), ids=VARIANTS.keys())
def test_variant_matches_transformers(write: Any, fields: dict[str, Any]) -> None:
    matches_transformers(load_spec(write("config.json", fields)))


@pytest.mark.torch
def test_a_config_transformers_saved_keeps_the_kda_head_dim(write: Any) -> None:
    """transformers saves head_dim = qk_rope_head_dim (64) beside linear_head_dim (128): the KDA
    layers keep 128, as transformers builds them from the saved file."""
    from transformers import BailingHybridConfig

    saved = BailingHybridConfig(**{k: v for k, v in tiny(head_dim=16).items()
                                   if k != "model_type"}).to_dict()
    assert (saved["head_dim"], saved["linear_head_dim"]) == (4, 16)
    spec = load_spec(write("config.json", saved))
    matches_transformers(spec)
    mixer = next(g.mixer for g in spec.layer_groups if g.mixer is not None)
    assert (mixer.heads, mixer.head_dim, mixer.conv_kernel) == (4, 16, 4)


def test_hostile_depth_is_instant(write: Any) -> None:
    spec = load_spec(write("config.json", tiny(num_hidden_layers=10**12)))
    # 2 dense KDA layers, then 5 KDA of every 6 and every 6th MLA, all MoE
    assert {g.name: len(g.layers) for g in spec.layer_groups} == {
        "kda/dense": 2, "kda/moe": 10**12 - 2 - (10**12 // 6), "mla/moe": 10**12 // 6}
    assert count(spec).total > 10**12


ERRORS = [
    (tiny(layer_group_size=0), "layer_group_size must be a positive integer, got 0"),
    (tiny(layer_types=["linear_attention", "mamba", "full_attention"]),
     "layer_types.1: unknown type 'mamba' (one of: linear_attention, full_attention)"),
    (tiny(mlp_layer_types=["dense"]), "mlp_layer_types: has 1 entries, num_hidden_layers is 3"),
    (tiny(num_experts_per_tok=5), "num_experts_per_tok (5) must not exceed num_experts (4)"
        ": a router's top-k cannot pick more experts than there are (transformers' "
        "forward fails)"),
]


@pytest.mark.parametrize("fields,message", ERRORS, ids=["group", "kind", "mlp-types", "top-k"])
def test_config_errors(cli: Any, write: Any, fields: dict[str, Any], message: str) -> None:
    path = write("bad.json", fields)
    run = cli("count", path)
    assert (run.code, run.stderr) == (2, f"error: {path}: {message}\n")


# ---- a real forward pass, cut to 2 layers: one of each kind ------------------------------------
BATCH, SEQ, LAYERS = 2, 8, 2
SMALL = ["vocab_size=1000", "pad_token_id=0", "eos_token_id=2", "hidden_size=512",
         "num_experts=8", "num_experts_per_tok=2", "n_group=2", "topk_group=1",
         'mlp_layer_types=["dense","sparse"]', f"num_hidden_layers={LAYERS}"]


@pytest.mark.torch
@pytest.mark.parametrize("types", [["linear_attention", "full_attention"],
                                   ["full_attention", "linear_attention"]],
                         ids=["kda-then-mla", "mla-then-kda"])
def test_cache_bytes_and_prefill_flops_equal_transformers(types: list[str]) -> None:
    spec = load_spec(BUNDLED, overrides=[*SMALL, f"layer_types={json.dumps(types)}"])
    m = measure_forward(spec, num_layers=LAYERS, seq_len=SEQ, batch=BATCH, use_cache=True)
    kinds = {"linear_attention": "LinearAttentionLayer", "full_attention": "DynamicLayer"}
    assert m.cache_layers == tuple(kinds[t] for t in types)
    # one KDA layer's conv (3·4096 × 4 at bf16) and state (32 × 128 × 128 fp32) per sequence,
    # one MLA layer's latent (512 + 64 at bf16) per token
    state = 3 * 4096 * 4 * 2 + 32 * 128 * 128 * 4
    assert m.kv_cache_bytes == kv_cache_bytes(spec, batch=BATCH, ctx=SEQ, dtype=DType.bf16) == (
        BATCH * (state + SEQ * 576 * 2)) == 4_409_344
    # 8 tokens padded to one KDA chunk of 64; the MLA gate and forget gate are weight matmuls
    assert m.flops == BATCH * forward_flops_per_sequence(spec, ctx=SEQ, causal=False)
    assert m.flops == 1_755_643_904


def test_explain_shows_each_mixer_sum_as_computed(cli: Any) -> None:
    """Each mixer line of flops --explain, evaluated, gives the figure it prints."""
    import re

    text = " ".join(cli("flops", BUNDLED, "--ctx", "4k", "--explain").stdout.split())
    lines = re.findall(r"\((\w+)\): (\d+) layers? × \(([^=]*)\) = ([\d,]+)", text)
    assert [(kind, layers) for kind, layers, _, _ in lines] == [("kda", "2"), ("kda", "33")]
    for _kind, layers, expr, total in lines:
        value = eval(expr.replace(",", "").replace("×", "*"))  # noqa: S307 - digits, + and * only
        assert int(layers) * value == int(total.replace(",", ""))
    assert "mla/moe: 7 layers × 2 × 4,096 × 32 heads × (192 + 128) = 587,202,560" in text


def test_count_notes_the_unbuilt_mtp_layer(cli: Any) -> None:
    run = cli("count", BUNDLED, "--json")
    assert run.code == 0
    out = run.json()
    assert (out["total_params"], out["mtp_params"]) == (124_414_191_072, 3_072_193_536)
    assert out["notes"] == [
        "not in config, BailingHybridConfig default: attention_bias=false",
        "num_nextn_predict_layers=1: the multi-token-prediction module is not counted "
        "(transformers does not build it); by the tensors Megatron-Bridge's Ling 3 weight map "
        "lists (not checked against a checkpoint index), a checkpoint holds about 3,072,193,536 "
        "more (mtp_params)"]
    assert [(g["name"], g["components"]["attn/g_proj"]) for g in out["groups"]
            if "attn/g_proj" in g["components"]] == [("mla/moe", 32 * 2560)]
