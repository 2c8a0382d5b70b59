"""Mixture-of-experts, MLA and layer-typed families: hand-derived sums, headline figures, and the
active count read off the instantiated transformers modules (meta device, no network)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.reference import hf_active, total_from_names
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcalc import ConfigError, count, load_spec
from llmcalc.families import MODEL_TYPES
from llmcalc.inputs import bundled
from llmcalc.inputs.config import RawConfig, spec_from_raw
from llmcalc.model.spec import ModelSpec

# MoE language models; whole models with an MoE language model (llama-4-scout-whole …) are held
# to transformers part by part in tests/multimodal/test_vision_language.py
MOE_CONFIGS = [p.stem for p in bundled.paths()
               if load_spec(p.stem).moe is not None and not load_spec(p.stem).parts]
# Inkling stacks its always-on shared experts in a module the heuristic below takes for routed
# experts, and keeps norms and scales outside the layers: held to transformers (names, shapes,
# totals) and to their active counts in tests/families/test_conv_hybrids.py instead
INKLING = {"inkling-text-default", "inkling2-text-default", "inkling2-loop-text-default"}


def test_the_moe_configs_are_found() -> None:
    types = {load_spec(name).model_type for name in MOE_CONFIGS}
    assert {"mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "gpt_oss"} <= types


@pytest.mark.torch
@pytest.mark.parametrize("name", [c for c in MOE_CONFIGS if c not in INKLING])
def test_active_matches_transformers_modules(name: str) -> None:
    from llmcalc.verify.reference import build_meta_model

    spec = load_spec(name)
    pc = count(spec)
    model = build_meta_model(spec)
    assert pc.active == hf_active(model)
    assert pc.active == spec.expected["active_params"]
    assert pc.total == spec.expected["total_params"]
    assert pc.active < pc.total


# ---- headline figures -------------------------------------------------------------------------------


def test_mixtral_8x7b_by_hand() -> None:
    # d=4096, L=32, V=32000, 32 heads × 128, 8 kv heads, E=8 experts of ff=14336, top-2.
    d, L, V, kv_dim, ff, E, k = 4096, 32, 32000, 8 * 128, 14336, 8, 2
    attn = 2 * d * d + 2 * d * kv_dim  # q, o: d × d;  k, v: kv_dim × d
    expert = 3 * d * ff  # gate, up, down
    layer = 2 * d + attn + E * d + E * expert  # 2 RMSNorms, router E × d
    total = L * layer + 2 * V * d + d  # untied embedding and head, final norm
    pc = count(load_spec("mistralai/Mixtral-8x7B-v0.1"))
    assert total == pc.total == 46_702_792_704
    assert pc.active == total - L * (E - k) * expert == 12_879_925_248
    assert pc.groups[0].components["moe/experts/gate_up_proj"] == E * 2 * ff * d


def test_deepseek_v3_is_671b_class_with_37b_active() -> None:
    spec = load_spec("deepseek-ai/DeepSeek-V3")
    pc = count(spec)
    assert 671e9 <= pc.total < 672e9
    assert 37e9 <= pc.active < 38e9
    assert pc.total == 671_026_404_352
    assert pc.active == 37_552_282_624
    assert spec.moe is not None
    assert (spec.moe.num_experts, spec.moe.experts_per_tok, spec.moe.shared_experts) == (256, 8, 1)
    assert [(g.name, len(g.layers)) for g in spec.layer_groups] == [("dense", 3), ("moe", 58)]
    assert any("multi-token-prediction module is not counted" in n for n in spec.notes)


def test_deepseek_v3_mla_by_hand() -> None:
    # d=7168, h=128; q: d → 1536 → h·(128+64); kv: d → 512+64, 512 → h·(128+128); o: h·128 → d.
    d, h, q_rank, kv_rank, nope, rope, v = 7168, 128, 1536, 512, 128, 64, 128
    mla = (
        d * q_rank
        + q_rank
        + q_rank * h * (nope + rope)
        + d * (kv_rank + rope)
        + kv_rank
        + kv_rank * h * (nope + v)
        + h * v * d
    )
    spec = load_spec("deepseek-v3")
    group = count(spec).groups[1]
    assert sum(n for c, n in group.components.items() if c.startswith("attn/")) - d == mla
    # MoE layer: router 256 × d, 256 routed experts and 1 shared, each 3 · d · 2048.
    ff, E = 2048, 256
    assert group.components["moe/router"] == E * d
    assert (
        group.components["moe/experts/gate_up_proj"] + group.components["moe/experts/down_proj"]
        == E * 3 * d * ff
    )
    shared = sum(n for c, n in group.components.items() if c.startswith("moe/shared_experts/"))
    assert shared == 3 * d * ff
    attention = spec.layer_groups[1].attention
    assert attention.kv_latent_dim == kv_rank + rope == 576
    assert (attention.qk_head_dim, attention.v_head_dim) == (192, 128)


def test_deepseek_v2_lite_has_a_plain_q_proj_and_one_dense_layer() -> None:
    spec = load_spec("deepseek-ai/DeepSeek-V2-Lite")
    names = dict(spec.named_shapes())
    assert names["model.layers.0.self_attn.q_proj.weight"] == (16 * 192, 2048)
    assert "model.layers.0.self_attn.q_a_proj.weight" not in names
    assert names["model.layers.0.mlp.gate_proj.weight"] == (10944, 2048)
    # 2 shared experts of 1408 → one SwiGLU of 2816
    assert names["model.layers.1.mlp.shared_experts.gate_proj.weight"] == (2 * 1408, 2048)
    assert names["model.layers.1.mlp.experts.gate_up_proj"] == (64, 2 * 1408, 2048)
    assert [tuple(g.layers) for g in spec.layer_groups] == [(0,), tuple(range(1, 27))]


def test_qwen2_moe_shared_expert_and_gate() -> None:
    spec = load_spec("Qwen/Qwen1.5-MoE-A2.7B")
    names = dict(spec.named_shapes())
    assert names["model.layers.3.mlp.shared_expert_gate.weight"] == (1, 2048)
    assert names["model.layers.3.mlp.shared_expert.up_proj.weight"] == (5632, 2048)
    assert names["model.layers.3.self_attn.q_proj.bias"] == (2048,)  # qkv bias
    assert "model.layers.3.self_attn.o_proj.bias" not in names
    assert spec.moe is not None and spec.moe.shared_experts == 1
    pc = count(spec)
    d, ff, E, k, L = 2048, 1408, 60, 4, 24
    assert pc.total - pc.active == L * (E - k) * 3 * d * ff


def test_qwen_mlp_only_layers_and_sparse_step_make_dense_groups(write: Any) -> None:
    base = {
        "model_type": "qwen3_moe",
        "hidden_size": 64,
        "num_hidden_layers": 6,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "intermediate_size": 96,
        "moe_intermediate_size": 32,
        "vocab_size": 100,
        "num_experts": 4,
        "num_experts_per_tok": 2,
    }
    spec = load_spec(write("a.json", {**base, "decoder_sparse_step": 2, "mlp_only_layers": [3]}))
    assert [(g.name, tuple(g.layers)) for g in spec.layer_groups] == [
        ("dense", (0, 2, 3, 4)),
        ("moe", (1, 5)),
    ]
    dense, moe = count(spec).groups
    # dense: SwiGLU 3·64·96;  moe: router 4·64 + 4 experts of 3·64·32 — the rest is alike
    assert moe.per_layer - dense.per_layer == 4 * 64 + 4 * 3 * 64 * 32 - 3 * 64 * 96
    assert moe.per_layer - moe.per_layer_active == 2 * 3 * 64 * 32


def test_gpt_oss_layer_types_sinks_and_biased_experts() -> None:
    spec = load_spec("openai/gpt-oss-20b")
    sliding, full = spec.layer_groups
    assert (sliding.name, tuple(sliding.layers), sliding.attention.window) == (
        "sliding_attention",
        tuple(range(0, 24, 2)),
        128,
    )
    assert (full.name, tuple(full.layers), full.attention.window) == (
        "full_attention",
        tuple(range(1, 24, 2)),
        None,
    )
    names = dict(spec.named_shapes())
    assert names["model.layers.0.self_attn.sinks"] == (64,)
    assert names["model.layers.0.mlp.experts.gate_up_proj"] == (32, 2880, 2 * 2880)
    assert names["model.layers.0.mlp.experts.gate_up_proj_bias"] == (32, 2 * 2880)
    assert names["model.layers.0.mlp.router.bias"] == (32,)
    pc = count(spec)
    assert pc.total == 20_914_757_184  # 20.9B, as the gpt-oss model card says
    # routed expert weights and biases both count 4 of 32 for the active figure
    expert = 2880 * 2 * 2880 + 2 * 2880 + 2880 * 2880 + 2880
    assert pc.total - pc.active == 24 * (32 - 4) * expert


@pytest.mark.parametrize(
    "name,sliding,full",
    [
        ("gemma-2-9b", tuple(range(0, 42, 2)), tuple(range(1, 42, 2))),
        ("gemma-3-1b", tuple(i for i in range(26) if (i + 1) % 6), (5, 11, 17, 23)),
        ("command-r7b", tuple(i for i in range(32) if (i + 1) % 4), tuple(range(3, 32, 4))),
    ],
)
def test_layer_types_from_the_pattern(
    name: str, sliding: tuple[int, ...], full: tuple[int, ...]
) -> None:
    spec = load_spec(name)
    assert [(g.name, tuple(g.layers)) for g in spec.layer_groups] == [
        ("sliding_attention", sliding),
        ("full_attention", full),
    ]
    assert spec.layer_groups[0].attention.window == spec.config["sliding_window"]
    assert spec.layer_groups[1].attention.window is None


def test_gemma2_9b_by_hand() -> None:
    # d=3584, 16 heads × 256, 8 kv heads, ff=14336, four RMSNorms per layer, tied head.
    d, L, V, hd, ff = 3584, 42, 256000, 256, 14336
    layer = 4 * d + 2 * d * 16 * hd + 2 * d * 8 * hd + 3 * d * ff
    pc = count(load_spec("gemma-2-9b"))
    assert pc.total == L * layer + V * d + d == 9_241_705_984
    assert pc.lm_head == 0


def test_explicit_layer_types_are_checked(write: Any) -> None:
    cfg = {
        "model_type": "gemma2",
        "hidden_size": 64,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "intermediate_size": 96,
        "vocab_size": 100,
    }
    path = write("g.json", {**cfg, "layer_types": ["full_attention", "sliding_attention"]})
    with pytest.raises(ConfigError) as e:
        load_spec(path)
    assert str(e.value) == f"{path}: layer_types: has 2 entries, num_hidden_layers is 3"
    path = write("h.json", {**cfg, "layer_types": ["full_attention", "chunked", "full_attention"]})
    with pytest.raises(ConfigError) as e:
        load_spec(path)
    assert str(e.value) == (
        f"{path}: layer_types.1: unknown layer type 'chunked' "
        "(one of: sliding_attention, full_attention)"
    )
    spec = load_spec(write("i.json", {**cfg, "layer_types": ["full_attention"] * 3}))
    assert [(g.name, tuple(g.layers)) for g in spec.layer_groups] == [("full_attention", (0, 1, 2))]


def test_more_experts_per_token_than_experts_is_an_error(cli: Any, write: Any) -> None:
    path = write(
        "m.json",
        {
            "model_type": "mixtral",
            "hidden_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "intermediate_size": 96,
            "vocab_size": 100,
            "num_local_experts": 4,
            "num_experts_per_tok": 5,
        },
    )
    run = cli("count", path)
    assert run.code == 2
    assert run.stderr == (
        f"error: {path}: num_experts_per_tok (5) must not exceed num_local_experts (4): a "
        "router's top-k cannot pick more experts than there are (transformers' forward fails)\n"
    )


# ---- what the CLI says ------------------------------------------------------------------------------


def test_moe_json_and_table(cli: Any) -> None:
    data = cli("count", "mixtral-8x7b", "--json").json()
    assert data["total_params"] == 46_702_792_704
    assert data["active_params"] == 12_879_925_248
    assert data["moe"] == {"num_experts": 8, "experts_per_tok": 2, "shared_experts": 0}
    group = data["groups"][0]
    assert group["params_per_layer"] * 32 + 2 * 32000 * 4096 + 4096 == data["total_params"]
    out = cli("count", "mixtral-8x7b").stdout
    assert "moe/experts/gate_up_proj (8 experts × 117,440,512)" in out  # 2 · 14336 · 4096
    assert "active per token" in out and "12,879,925,248" in out


def test_dense_and_moe_layers_are_separate_groups_in_the_table(cli: Any) -> None:
    out = cli("count", "deepseek-v2-lite").stdout
    assert "one layer (dense: 1 of 27 layers)" in out
    assert "one layer (moe: 26 of 27 layers)" in out
    assert "experts 64 (top-6, 2 shared)" in " ".join(out.split())  # the header may wrap


def test_multimodal_text_config_is_counted_and_said(cli: Any, write: Any) -> None:
    # gemma3 is a whole model now: its language model is the text model counted before
    data = cli("count", "gemma-3-4b", "--json").json()
    assert data["model_type"] == "gemma3"
    assert data["family"] == "vlm"
    # d=2560, 34 layers, 8 heads × 256, 4 kv heads, ff=10240, q/k norms over 256, tied head.
    d, L, V, hd, ff = 2560, 34, 262208, 256, 10240
    layer = 4 * d + 2 * d * 8 * hd + 2 * d * 4 * hd + 2 * hd + 3 * d * ff
    assert data["parts"]["language"] == L * layer + V * d + d == 3_880_263_168
    # a multimodal type without a family, nesting a text_config of one: its text model, said so
    path = write("vlm.json", {"model_type": "my_vlm", "text_config": {
        "model_type": "gemma3_text", "hidden_size": 2560, "intermediate_size": 10240,
        "num_hidden_layers": 34, "sliding_window": 1024}})
    data = cli("count", path, "--json").json()
    assert data["model_type"] == "gemma3_text"
    assert data["notes"][0] == "multimodal my_vlm: counted its text model (gemma3_text) only"
    assert data["total_params"] == 3_880_263_168
    out = cli("count", path).stderr  # notes: on stderr
    assert "note: multimodal my_vlm: counted its text model (gemma3_text) only" in out


LLAMA_LIKE = {
    "model_type": "my_llama",
    "hidden_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 512,
    "vocab_size": 1000,
}


@pytest.mark.torch
def test_unknown_model_type_lists_the_supported_ones(cli: Any, write: Any) -> None:
    path = write("config.json", LLAMA_LIKE)
    run = cli("count", path)
    assert run.code == 2
    assert run.stderr == (
        f"error: {path}: unknown model_type 'my_llama': llmcalc has no formula for it and "
        "transformers 5.24.0 does not know it; to count it as a known family, pass --family\n"
    )


@pytest.mark.torch
def test_family_llama_counts_an_unknown_model_type(cli: Any, write: Any) -> None:
    path = write("config.json", LLAMA_LIKE)
    run = cli("count", path, "--family", "llama", "--json")
    assert run.code == 0
    data = run.json()
    d, ff, V = 256, 512, 1000
    layer = 4 * d * d + 3 * d * ff + 2 * d
    assert data["total_params"] == 2 * layer + 2 * V * d + d
    assert (data["family"], data["model_type"]) == ("llama", "llama")  # counted as, and verified as
    assert "counted as llama (--family); model_type is 'my_llama'" in data["notes"]
    out = cli("count", path, "--family", "llama").stderr
    assert "note: counted as llama (--family); model_type is 'my_llama'" in out
    verified = cli("verify", path, "--family", "llama")
    assert verified.code == 0, verified.stderr
    assert "match: all 21 tensors equal in name and shape" in verified.stdout


def test_unknown_family_flag(cli: Any, write: Any) -> None:
    run = cli("count", write("config.json", LLAMA_LIKE), "--family", "lama")
    assert run.code == 2
    assert run.stderr.startswith("error: --family lama: unknown family; supported: ")
    n = len(MODEL_TYPES)
    assert run.stderr.endswith(f"{n} model types, closest llama, mllama, llama4, zamba, llava; the README's "
                               "\"Supported model types\" lists them all\n"), run.stderr


# ---- properties --------------------------------------------------------------------------------------


def _spec(name: str) -> ModelSpec:
    return load_spec(name)


@pytest.mark.parametrize("name", [c for c in MOE_CONFIGS if c not in INKLING])
def test_moe_breakdown_adds_up_and_more_experts_mean_more_total_not_more_active(name: str) -> None:
    spec = _spec(name)
    pc = count(spec)
    assert total_from_names(spec) == pc.total
    # outside the layers: the tables, the final norm (and ZAYA's scale and bias on the embeddings;
    # Qwen4-Exp has no final norm but its last hyper-connection mixer over the streams)
    final = pc.breakdown.get("final_norm", 0) + sum(
        v for k, v in pc.breakdown.items() if k.startswith("hyper/final_mixer/"))
    assert final > 0
    outer = pc.embedding + pc.lm_head + final + pc.breakdown.get("embed/scale", 0)
    assert outer + pc.layers == pc.total
    field = next(
        f
        for f in (
            "num_local_experts",
            "num_experts",
            "n_routed_experts",
            "moe_num_experts",
            "ffn_config",
        )
        if f in spec.config
    )
    value = spec.config[field]
    if isinstance(value, dict):  # DBRX nests it
        field, value = f"{field}.moe_num_experts", value["moe_num_experts"]
    more = count(load_spec(name, overrides=[f"{field}={value * 2}"]))
    assert more.total > pc.total
    # the active count grows only by the router (one more logit row per added expert)
    router = sum(n for c, n in pc.breakdown.items() if c.endswith("moe/router"))
    more_router = sum(n for c, n in more.breakdown.items() if c.endswith("moe/router"))
    # (doubling E doubles the router, unless it also scores LongCat's zero-computation experts)
    assert more.active - pc.active == more_router - router
    assert more_router <= 2 * router


def test_bundled_configs_for_every_new_type_exist() -> None:
    mine = {
        "gemma2",
        "gemma3_text",
        "cohere2",
        "olmo",
        "mixtral",
        "phimoe",
        "granitemoe",
        "olmoe",
        "qwen2_moe",
        "qwen3_moe",
        "deepseek_v2",
        "deepseek_v3",
        "gpt_oss",
    }
    assert mine <= set(MODEL_TYPES)
    found = {load_spec(p.stem).model_type for p in bundled.paths()}
    assert mine <= found


def test_family_modules_do_not_import_torch() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from llmcalc import load_spec, count\n"
        "for n in ('deepseek-v3', 'gpt-oss-20b', 'gemma-3-4b', 'qwen1.5-moe-a2.7b', 'command-r7b'):\n"
        "    count(load_spec(n))\n"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parent)


@settings(max_examples=40, deadline=None)
@given(
    layers=st.integers(1, 8),
    heads=st.sampled_from([1, 2, 4, 8]),
    experts=st.integers(1, 16),
    data=st.data(),
)
def test_active_is_total_less_the_unused_experts(
    layers: int, heads: int, experts: int, data: st.DataObject
) -> None:
    k = data.draw(st.integers(1, experts))
    d, ff, v = 8 * heads, data.draw(st.integers(1, 64)), data.draw(st.integers(1, 500))
    fields = {
        "model_type": "mixtral", "hidden_size": d, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": heads, "intermediate_size": ff,
        "vocab_size": v, "num_local_experts": experts, "num_experts_per_tok": k,
    }  # fmt: skip
    spec = spec_from_raw(RawConfig(Path("p.json"), "p.json", fields, "p", None, {}))
    pc = count(spec)
    assert pc.total - pc.active == layers * (experts - k) * 3 * d * ff
    assert total_from_names(spec) == pc.total
    # kv heads = heads: k and v are d × d like q and o (multi-head attention)
    attn = sum(
        n
        for c, n in pc.groups[0].components.items()
        if c.startswith("attn/") and c.endswith("_proj")
    )
    assert attn == 4 * d * d
