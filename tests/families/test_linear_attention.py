"""Linear-attention and recurrent families (Kimi Linear, …): totals on the bundled
configs, tensors held against transformers on the meta device (bundled and varied configs), the
recurrent state against the bytes of transformers' cache after a real forward pass, and the prefill
FLOPs against FlopCounterMode."""

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
from llmcalc.model.spec import KDA
from llmcalc.units import DType
from llmcalc.verify.reference import measure_forward

TOTALS = {
    "kimi-linear-48b-a3b": (49_122_675_072, 3_484_453_248),  # published as 48B total, 3B active
    # published as 456B total, 45.9B active (without the 2 × 1.23B of embedding and lm_head)
    "minimax-text-01": (456_089_655_296, 48_403_306_496),
    "rwkv-4-169m-pile": (169_342_464, 169_342_464),
    "xlstm-7b": (6_865_424_896, 6_865_424_896),  # published as 7B (6.9B)
}


@pytest.mark.torch
@pytest.mark.parametrize("name", TOTALS)
def test_bundled_total_and_tensors(name: str) -> None:
    spec = load_spec(name)
    pc = count(spec)
    assert (pc.total, pc.active) == TOTALS[name]
    assert total_from_names(spec) == pc.total
    matches_transformers(spec)


tiny = partial(configs.tiny, base=configs.THREE_LAYERS_TOKENS)


KIMI = dict(num_attention_heads=4, intermediate_size=48, moe_intermediate_size=16, kv_lora_rank=16,
            qk_rope_head_dim=4, qk_nope_head_dim=8, v_head_dim=12, linear_num_heads=2,
            linear_head_dim=8)
VARIANTS = {
    # MLA at layers 4 and 8, two dense layers, q latent, biases, 2 shared experts, tied
    "kimi-default-pattern": tiny(
        "kimi_linear", num_hidden_layers=9, **KIMI, first_k_dense_replace=2, num_experts=4,
        num_experts_per_token=2, num_shared_experts=2, q_lora_rank=24, attention_bias=True,
        linear_conv_kernel_dim=3, tie_word_embeddings=True),
    "kimi-listed-types": tiny(
        "kimi_linear", num_hidden_layers=4, **KIMI, num_local_experts=3, num_experts_per_tok=1,
        layer_types=["full_attention", "linear_attention", "full_attention", "linear_attention"],
        mlp_layer_types=["sparse", "dense", "dense", "sparse"]),
    # the checkpoint's 1-based lists and KDA sizes win over the top-level fields
    "kimi-checkpoint-lists": tiny(
        "kimi_linear", num_hidden_layers=5, **KIMI, num_experts=2, num_experts_per_token=2,
        linear_attn_config={"kda_layers": [1, 3, 4], "full_attn_layers": [2, 5], "head_dim": 4,
                            "num_heads": 3, "short_conv_kernel_size": 2}),
    "kimi-all-dense": tiny("kimi_linear", **KIMI, first_k_dense_replace=7, num_experts=2,
                           num_experts_per_token=2),
    # softmax at even layers (transformers' default), head_dim from d / h, tied
    "minimax-default-pattern-tied": tiny(
        "minimax", num_hidden_layers=5, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=48, num_local_experts=4, num_experts_per_tok=2,
        tie_word_embeddings=True),
    "minimax-listed-head-dim-num-experts": tiny(
        "minimax", num_attention_heads=2, num_key_value_heads=1, head_dim=24,
        intermediate_size=40, num_experts=3, num_experts_per_tok=3, sliding_window=16,
        layer_types=["linear_attention", "linear_attention", "full_attention"]),
    "rwkv-narrow-time-mix-tied": {"model_type": "rwkv", "vocab_size": 100, "hidden_size": 32,
                                  "num_hidden_layers": 3, "attention_hidden_size": 48,
                                  "intermediate_size": 40, "tie_word_embeddings": True},
    "rwkv-one-block-defaults": {"model_type": "rwkv", "vocab_size": 100, "hidden_size": 16,
                                "num_hidden_layers": 1},
    "xlstm-fused-biases-tied-flag": {
        "model_type": "xlstm", "vocab_size": 100, "hidden_size": 64, "num_hidden_layers": 3,
        "num_heads": 4, "weight_mode": "fused", "use_bias": True, "tie_word_embeddings": True,
        "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2},
    "xlstm-factors-num-blocks": {
        "model_type": "xlstm", "vocab_size": 100, "embedding_dim": 96, "num_blocks": 2,
        "num_heads": 2, "qk_dim_factor": 0.25, "v_dim_factor": 0.75, "ffn_proj_factor": 1.5,
        "ffn_round_up_to_multiple_of": 40, "pad_token_id": 0, "bos_token_id": 1,
        "eos_token_id": 2},
}


@pytest.mark.torch
@pytest.mark.parametrize("fields", VARIANTS.values(), ids=VARIANTS.keys())
def test_variant_matches_transformers(write: Any, fields: dict[str, Any]) -> None:
    matches_transformers(load_spec(write("config.json", fields)))


def test_kimi_layer_groups_and_state_by_hand() -> None:
    spec = load_spec("kimi-linear-48b-a3b")
    kinds = {g.name: (len(g.layers), g.layers.describe(most=8)) for g in spec.layer_groups}
    assert kinds == {
        "kda/dense": (1, "0"),
        "kda/moe": (19, "1..2,4..6,8..10,12..14,16..18,20..22,24..25"),
        "mla/moe": (7, "3..23 every 4th,26"),
    }
    # 20 KDA layers: conv 3·32·128 channels × 4 at bf16, 32 heads × 128 × 128 in float32
    per_layer = 3 * 4096 * 4 * 2 + 32 * 128 * 128 * 4
    assert state_bytes_per_sequence(spec, dtype=DType.bf16) == 20 * per_layer == 43_909_120
    # 7 MLA layers cache the latent, 512 + 64 per token
    assert kv_cache_bytes(spec, batch=1, ctx=1000, dtype=DType.bf16) == (
        7 * 576 * 2 * 1000 + 43_909_120)
    mixer = spec.layer_groups[0].mixer
    assert mixer is not None and mixer.kind == KDA
    # conv 2·12288·4 + state read with k and q, 2 × 2·32·128·128
    assert mixer_flops_per_token(mixer) == 2 * 12288 * 4 + 2 * 2 * 32 * 128 * 128
    assert forward_flops_per_token(spec, ctx=1) < forward_flops_per_token(spec, ctx=2)


def test_minimax_layer_groups_and_state_by_hand() -> None:
    spec = load_spec("minimax-text-01")
    assert [(g.name, len(g.layers)) for g in spec.layer_groups] == [("lightning", 70),
                                                                     ("attention", 10)]
    # 70 lightning layers: 64 heads × 128 × 128 at the model dtype; 10 layers of K and V
    state = 70 * 64 * 128 * 128 * 2
    assert state_bytes_per_sequence(spec, dtype=DType.bf16) == state == 146_800_640
    assert kv_cache_bytes(spec, batch=2, ctx=100, dtype=DType.bf16) == 2 * (
        state + 100 * 10 * 2 * 8 * 128 * 2)
    mixer = spec.layer_groups[0].mixer
    assert mixer is not None and mixer_flops_per_token(mixer) == 4 * 64 * 128 * 128


def test_rwkv_by_hand() -> None:
    # d 768, 12 blocks, V 50277, untied head: time mix 4·d² + 5·d, channel mix 2·d·4d + d² + 2·d,
    # two LayerNorms 4·d; block 0 also pre_ln 2·d; embeddings, head, ln_out 2·d
    d, L, V = 768, 12, 50277
    block = 4 * d * d + 5 * d + 8 * d * d + d * d + 2 * d + 4 * d
    spec = load_spec("rwkv-4-169m-pile")
    assert count(spec).total == L * block + 2 * d + 2 * V * d + 2 * d == 169_342_464
    # state: the token shifts (2·d at bf16) and WKV num, den, max (3·d in fp32) per block
    assert state_bytes_per_sequence(spec, dtype=DType.bf16) == L * (2 * d * 2 + 3 * d * 4)
    assert kv_cache_bytes(spec, batch=3, ctx=1 << 20, dtype=DType.bf16) == 3 * 147_456
    # the WKV recurrence is elementwise: a token costs its matrices alone, at any context
    assert forward_flops_per_token(spec, ctx=1) == forward_flops_per_token(spec, ctx=10**6) == (
        2 * (L * (block - 11 * d) + V * d))


@pytest.mark.torch
def test_xlstm_chunks_and_a_recurrent_tail_equal_flop_counter() -> None:
    spec = load_spec("xlstm-7b", overrides=["vocab_size=1000", "hidden_size=256",
                                            "embedding_dim=256", "num_heads=4", "chunk_size=4",
                                            f"num_hidden_layers={LAYERS}"])
    # with a cache: transformers' no-cache path hands the chunk kernel float32 zero states
    m = measure_forward(spec, num_layers=LAYERS, seq_len=11, batch=BATCH, use_cache=True)
    assert m.flops == BATCH * forward_flops_per_sequence(spec, ctx=11, causal=False)


def test_xlstm_state_by_hand() -> None:
    spec = load_spec("xlstm-7b")  # 32 blocks, 8 heads, dk 2048 / 8 = 256, dv 4096 / 8 = 512
    per_block = 8 * (256 * 512 + 256 + 1)  # C, n, m at the model's dtype
    assert state_bytes_per_sequence(spec, dtype=DType.bf16) == 32 * per_block * 2 == 67_240_448
    mixer = spec.layer_groups[0].mixer
    assert mixer is not None  # k·vᵀ, q·C, q·n per head
    assert mixer_flops_per_token(mixer) == 8 * (4 * 256 * 512 + 2 * 256)


def test_kimi_hostile_depth_is_instant(write: Any) -> None:
    spec = load_spec(write("config.json", tiny("kimi_linear", num_hidden_layers=2**53 - 1, **KIMI)))
    assert [len(g.layers) for g in spec.layer_groups] == [1, 6_755_399_441_055_743,
                                                          2_251_799_813_685_247]


ERRORS = [
    (tiny("kimi_linear", **KIMI, linear_attn_config={"kda_layers": [1, 2], "full_attn_layers": [4]}),
     "linear_attn_config.full_attn_layers.0: layer 4 is past num_hidden_layers (3; layers count "
     "from 1)"),
    (tiny("kimi_linear", **KIMI, linear_attn_config={"kda_layers": [1], "full_attn_layers": [3]}),
     "linear_attn_config: kda_layers and full_attn_layers name 2 of the 3 layers; each layer must "
     "be in one of them"),
    (tiny("kimi_linear", **KIMI, layer_types=["linear_attention", "mamba", "full_attention"]),
     "layer_types.1: unknown type 'mamba' (one of: linear_attention, full_attention)"),
    (tiny("kimi_linear", **KIMI, num_experts=4, num_experts_per_token=5),
     "num_experts_per_token (5) must not exceed num_experts (4)"
         ": a router's top-k cannot pick more experts than there are (transformers' "
         "forward fails)"),
    ({"model_type": "xlstm", "hidden_size": 64, "num_heads": 3},
     "qk_dim_factor: num_heads (3) must divide the width it gives, 32"),
    ({"model_type": "xlstm", "hidden_size": 64, "num_heads": 4, "weight_mode": "split"},
     "weight_mode: expected 'single' or 'fused', got 'split'"),
    (tiny("minimax", num_attention_heads=4, num_key_value_heads=4, intermediate_size=48,
          layer_types=["linear_attention"]),
     "layer_types: has 1 entries, num_hidden_layers is 3"),
]


@pytest.mark.parametrize("fields,message", ERRORS,
                         ids=["past", "uncovered", "kind", "top-k", "xlstm-heads", "xlstm-mode",
                              "minimax-types"])
def test_config_errors(cli: Any, write: Any, fields: dict[str, Any], message: str) -> None:
    path = write("bad.json", fields)
    run = cli("count", path)
    assert (run.code, run.stderr) == (2, f"error: {path}: {message}\n")


# ---- a real forward pass, cut to 2 layers: one of each kind ------------------------------------
SMALL = ["vocab_size=1000", "pad_token_id=0", "bos_token_id=1", "eos_token_id=2"]
CUTS = [
    # KDA (dense MLP) then MLA + MoE; 8 tokens padded to one chunk of 64
    ("kimi-linear-48b-a3b", [*SMALL, 'layer_types=["linear_attention","full_attention"]',
                             "hidden_size=512", "num_experts=4", "num_experts_per_token=2"],
     ("LinearAttentionLayer", "DynamicLayer")),
    # lightning attention in blocks of 3 (3 + 3 + 2 tokens), then softmax GQA; MiniMaxCache keeps
    # the lightning state beside its layers (an empty DynamicLayer stands at the lightning layer)
    ("minimax-text-01", ["vocab_size=1000", "hidden_size=256", "intermediate_size=512", "num_local_experts=4",
                         "num_attention_heads=4", "num_key_value_heads=2", "head_dim=32",
                         'layer_types=["linear_attention","full_attention"]', "block_size=3"],
     ("DynamicLayer", "DynamicLayer")),
    ("minimax-text-01", ["vocab_size=1000", "hidden_size=256", "intermediate_size=512", "num_local_experts=4",
                         "num_attention_heads=4", "num_key_value_heads=2", "head_dim=32",
                         'layer_types=["full_attention","linear_attention"]'],
     ("DynamicLayer",)),
    # xLSTM: 8 tokens in 2 chunks of 4; 11 tokens: 2 chunks and 3 recurrent steps; 8 tokens under
    # a chunk of 64: 8 recurrent steps. xLSTMCache holds C, n, m per block (no cache layers)
    *(("xlstm-7b", ["vocab_size=1000", "hidden_size=256", "embedding_dim=256", "num_heads=4",
                    f"chunk_size={chunk}"], ()) for chunk in (4, 64)),
    # RWKV returns its five state tensors (no cache object); the WKV loop is elementwise
    ("rwkv-4-169m-pile", ["vocab_size=1000", "hidden_size=64", "attention_hidden_size=64",
                          "intermediate_size=256"], ()),
]
BATCH, SEQ, LAYERS = 2, 8, 2


@pytest.mark.torch
@pytest.mark.parametrize(("name", "overrides", "layers"), CUTS,
                         ids=["kimi", "minimax-blocks-of-3", "minimax-one-block", "xlstm-chunks-of-4",
                              "xlstm-recurrent", "rwkv"])
def test_cache_bytes_and_prefill_flops_equal_transformers(
    name: str, overrides: list[str], layers: Any
) -> None:
    spec = load_spec(name, overrides=[*overrides, f"num_hidden_layers={LAYERS}"])
    m = measure_forward(spec, num_layers=LAYERS, seq_len=SEQ, batch=BATCH, use_cache=True)
    assert m.cache_layers == layers
    assert m.kv_cache_bytes == kv_cache_bytes(spec, batch=BATCH, ctx=SEQ, dtype=DType.bf16)
    assert 0 < BATCH * state_bytes_per_sequence(spec, dtype=DType.bf16) <= m.kv_cache_bytes
    assert m.flops == BATCH * forward_flops_per_sequence(spec, ctx=SEQ, causal=False)


@pytest.mark.parametrize("name", ["kimi-linear-48b-a3b", "minimax-text-01", "xlstm-7b",
                                  "qwen3-next-80b-a3b", "mamba-130m"])
def test_explain_shows_each_mixer_sum_as_computed(cli: Any, name: str) -> None:
    """Each mixer line of flops --explain, evaluated, gives the figure it prints."""
    import re

    text = " ".join(cli("flops", name, "--ctx", "4k", "--explain").stdout.split())
    lines = re.findall(r"\((\w+)\): (\d+) layers? × \(([^=]*)\) = ([\d,]+)", text)
    assert lines
    for _kind, layers, expr, total in lines:
        value = eval(expr.replace(",", "").replace("×", "*"))  # noqa: S307 - digits, + and * only
        assert int(layers) * value == int(total.replace(",", ""))


def test_kimi_checkpoint_lists_equal_layer_types(write: Any) -> None:
    """The bundled config.json's 1-based linear_attn_config lists, given instead as transformers'
    layer_types, describe the same model."""
    import yaml

    from llmcalc.inputs import bundled

    path = bundled.find("kimi-linear-48b-a3b")
    assert path is not None
    fields = yaml.safe_load(path.read_text())
    lists = load_spec("kimi-linear-48b-a3b")
    fields.pop("expected")
    lac = fields["linear_attn_config"]
    assert lac.pop("full_attn_layers") == [4, 8, 12, 16, 20, 24, 27]
    assert lac.pop("kda_layers") == [i for i in range(1, 28) if i not in (4, 8, 12, 16, 20, 24, 27)]
    fields["layer_types"] = ["full_attention" if i % 4 == 0 or i == 27 else "linear_attention"
                             for i in range(1, 28)]
    listed = load_spec(write("config.json", fields))
    assert dict(lists.named_shapes()) == dict(listed.named_shapes())
    assert [g.layers for g in lists.layer_groups] == [g.layers for g in listed.layer_groups]
