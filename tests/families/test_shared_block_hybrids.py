"""Shared-block and recurrent hybrids: Zamba, Zamba2, RecurrentGemma.

Tensors against transformers on the meta device (bundled and varied configs); per layer, where a
shared block is stored once but applied at several layers; the cache after a real forward pass
(keys and values at every position the shared block or local attention runs, plus each layer's
recurrent state); forward FLOPs against FlopCounterMode on 2–3 layer cuts.
"""

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
    weight_flops_per_token,
)
from llmcalc.formulas.memory import kv_cache_bytes, state_bytes_per_sequence
from llmcalc.model.spec import ModelSpec
from llmcalc.units import DType
from llmcalc.verify.reference import build_random_model, measure_forward

tiny = partial(configs.tiny, base=configs.MINIMAL)


TOTALS = {
    "zamba-default": 7_232_490_496,  # transformers' ZambaConfig defaults (Zamba-7B-v1's shape)
    "zamba2-default": 2_481_848_336,  # transformers' Zamba2Config defaults ("Zamba2-2.7B style")
    "google/recurrentgemma-2b": 2_682_862_080,  # published as 2.7B
}


@pytest.mark.torch
@pytest.mark.parametrize("name,total", TOTALS.items())
def test_bundled_total_and_tensors(name: str, total: int) -> None:
    spec = load_spec(name)
    pc = count(spec)
    assert pc.total == pc.active == total
    assert total_from_names(spec) == total
    assert spec.expected["total_params"] == total
    matches_transformers(spec)


VARIANTS = {
    # the default pattern: 0, 1 Mamba, 2 hybrid, then i ≥ 3 hybrid when (i − 3) mod 3 = 1
    "zamba-default-pattern": tiny("zamba", num_hidden_layers=9, num_attention_heads=4,
                                  num_key_value_heads=2, intermediate_size=48,
                                  attn_layer_period=3, attn_layer_offset=1),
    "zamba-listed-untied-biases": tiny(
        "zamba", num_hidden_layers=5, num_attention_heads=8, num_key_value_heads=8,
        intermediate_size=40, n_mamba_heads=4, mamba_d_state=8, mamba_d_conv=3, mamba_expand=3,
        mamba_dt_rank=5, mamba_conv_bias=False, mamba_proj_bias=True, tie_word_embeddings=False,
        layers_block_type=["hybrid", "mamba", "mamba", "hybrid", "hybrid"]),
    "zamba-head-dim-attention-width": tiny(
        "zamba", num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=1,
        attention_head_dim=8, attention_hidden_size=64, intermediate_size=48, n_mamba_heads=1,
        layer_types=["linear_attention", "hybrid", "linear_attention", "hybrid"]),
    # one hybrid layer only: untied, as transformers cannot tie a block to itself (its tie regex
    # finds no other layer and raises)
    "zamba-offset-past-period": tiny("zamba", num_hidden_layers=7, num_attention_heads=4,
                                     num_key_value_heads=4, intermediate_size=48, attn_layer_period=2,
                                     attn_layer_offset=2, tie_word_embeddings=False),
}

Z2_LAYERS = ["mamba", "hybrid", "mamba", "hybrid", "hybrid", "mamba", "hybrid", "hybrid"]
VARIANTS |= {
    # two blocks taken in turn by 5 hybrid layers (ABABA), q/k/v and MLP adapters in each
    "zamba2-two-blocks-attention-adapters": tiny(
        "zamba2", num_hidden_layers=8, layers_block_type=Z2_LAYERS, num_attention_heads=4,
        num_key_value_heads=4, intermediate_size=48, n_mamba_heads=4, mamba_ngroups=2,
        mamba_d_state=8, num_mem_blocks=2, use_shared_attention_adapter=True, adapter_rank=4),
    # three blocks, biases, GQA, rotary (no parameters), default intermediate 4d
    "zamba2-three-blocks-biases-gqa": tiny(
        "zamba2", num_hidden_layers=8, layers_block_type=Z2_LAYERS, num_attention_heads=8,
        num_key_value_heads=2, n_mamba_heads=8, mamba_expand=1, mamba_d_conv=3,
        num_mem_blocks=3, add_bias_linear=True, use_mem_rope=True, adapter_rank=8),
    # more blocks than hybrid layers: every block stored, none reused
    "zamba2-more-blocks-than-layers": tiny(
        "zamba2", num_hidden_layers=3,
        layers_block_type=["hybrid", "linear_attention", "hybrid"],
        num_attention_heads=4, intermediate_size=40, n_mamba_heads=2, num_mem_blocks=4,
        adapter_rank=2),
    # the derived fields as a saved config.json gives them (set after __post_init__: they win)
    "zamba2-derived-fields-given": tiny(
        "zamba2", num_hidden_layers=4, layers_block_type=["mamba", "hybrid", "mamba", "hybrid"],
        hybrid_layer_ids=[1, 3], num_attention_heads=4, attention_hidden_size=48,
        attention_head_dim=12, intermediate_size=40, n_mamba_heads=4, mamba_headdim=16,
        num_mem_blocks=2, use_shared_attention_adapter=True, adapter_rank=4),
    # a 4-block pattern over 7 layers, GQA, wider recurrence, biases, untied
    "recurrent_gemma-pattern-gqa-untied": tiny(
        "recurrent_gemma", num_hidden_layers=7, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=96, lru_width=48, conv1d_width=3, attention_window_size=16,
        block_types=["recurrent", "attention", "attention", "recurrent"], attention_bias=True,
        tie_word_embeddings=False),
    "recurrent_gemma-head-dim-given": tiny(
        "recurrent_gemma", num_hidden_layers=3, num_attention_heads=2, head_dim=24,
        intermediate_size=64, block_types=["attention", "recurrent"]),
    # untied: transformers ties no block either, each hybrid layer holds its own
    "zamba2-untied": tiny(
        "zamba2", num_hidden_layers=8, layers_block_type=Z2_LAYERS, num_attention_heads=4,
        intermediate_size=48, n_mamba_heads=4, num_mem_blocks=2, adapter_rank=4,
        use_shared_attention_adapter=True, tie_word_embeddings=False),
}


@pytest.mark.torch
@pytest.mark.parametrize("fields", VARIANTS.values(), ids=VARIANTS.keys())
def test_variant_matches_transformers(write: Any, fields: dict[str, Any]) -> None:
    matches_transformers(load_spec(write("config.json", fields)))


ZAMBA2_SLOTS = (
    "transformers' Zamba2 places the adapters by hybrid_layer_ids (derived from layers_block_type, "
    "or from the default layers when the list is named layer_types), which must list the hybrid "
    "layers, else the model cannot run")
ERRORS = {
    "recurrent_gemma-block": (tiny("recurrent_gemma", num_hidden_layers=2, num_attention_heads=4,
                                   block_types=["recurrent", "mlp"]),
                              "block_types.1: unknown block type 'mlp' (recurrent or attention)"),
    "recurrent_gemma-repeats": (tiny("recurrent_gemma", num_hidden_layers=201,
                                     num_attention_heads=4, block_types=["recurrent", "attention"]),
                                "num_hidden_layers: transformers repeats block_types 100 times: at "
                                "most 200 layers, got 201"),
    "zamba-short-default": (tiny("zamba", num_hidden_layers=2, num_attention_heads=4,
                                 num_key_value_heads=4, intermediate_size=48),
                            "num_hidden_layers: the default layer pattern (mamba, mamba, hybrid, "
                            "…) needs at least 3 layers, got 2; list the layers in "
                            "layers_block_type"),
    "zamba-list-length": (tiny("zamba", num_hidden_layers=3, num_attention_heads=4,
                               num_key_value_heads=4, intermediate_size=48,
                               layers_block_type=["mamba", "hybrid"]),
                          "layers_block_type: lists 2 layers; num_hidden_layers is 3"),
    "zamba-kind": (tiny("zamba", num_hidden_layers=2, num_attention_heads=4,
                        num_key_value_heads=4, intermediate_size=48,
                        layers_block_type=["mamba", "attention"]),
                   "layers_block_type.1: unknown layer kind 'attention' (mamba, linear_attention "
                   "or hybrid)"),
    "zamba-mamba-heads": (tiny("zamba", num_hidden_layers=3, num_attention_heads=4,
                               num_key_value_heads=4, intermediate_size=48, n_mamba_heads=5),
                          "n_mamba_heads (5) must divide mamba_expand × hidden_size "
                          "(64)"),
    "zamba2-layer-types": (tiny("zamba2", num_hidden_layers=3, num_attention_heads=4,
                                layer_types=["hybrid", "mamba", "hybrid"]),
                           ZAMBA2_SLOTS),
    "zamba2-hybrid-layer-ids": (tiny("zamba2", num_hidden_layers=3, num_attention_heads=4,
                                     layers_block_type=["hybrid", "mamba", "hybrid"],
                                     hybrid_layer_ids=[0, 1]), ZAMBA2_SLOTS),
    "zamba2-list-length": (tiny("zamba2", num_attention_heads=4,
                                layers_block_type=["hybrid", "mamba", "hybrid"]),
                           "layers_block_type: lists 3 layers; num_hidden_layers is 54"),
    "zamba2-mamba-heads": (tiny("zamba2", num_hidden_layers=2, num_attention_heads=4,
                                layers_block_type=["hybrid", "mamba"], n_mamba_heads=6),
                           "n_mamba_heads × head_dim (6 × 10) must equal the inner "
                           "width mamba_expand × hidden_size (64)"),
}


@pytest.mark.parametrize("fields,message", ERRORS.values(), ids=ERRORS.keys())
def test_config_errors(cli: Any, write: Any, fields: dict[str, Any], message: str) -> None:
    path = write("bad.json", fields)
    run = cli("count", path)
    assert (run.code, run.stderr) == (2, f"error: {path}: {message}\n")


def test_recurrent_gemma_ragged_gate_blocks(cli: Any, write: Any) -> None:
    """Heads that do not divide lru_width: transformers builds gate blocks of lru_width // heads
    (30 // 4 = 7) and cannot run them; counted, FLOPs and memory refused in one line."""
    path = write("ragged.json", tiny("recurrent_gemma", num_hidden_layers=2,
                                     num_attention_heads=4, lru_width=30))
    spec = load_spec(path)
    gates = [t for g in spec.layer_groups for t in g.tensors if "input_gate_weight" in t.name]
    assert [t.shape for t in gates] == [(4, 7, 7)]
    assert cli("count", path).code == 0
    run = cli("flops", path)
    assert (run.code, run.stderr) == (
        2, "error: ragged: FLOPs and cache bytes are not computed: num_attention_heads (4) does "
           "not divide lru_width (30): transformers builds the gates' blocks 7 wide, but its "
           "forward cannot reshape 30 channels into 4 blocks\n")


def test_zamba_layer_kinds_and_shared_block() -> None:
    spec = load_spec("zamba-default")
    kinds = {g.name: (len(g.layers), g.layers.describe()) for g in spec.layer_groups}
    assert kinds == {
        "mamba": (63, "0..1,3..6,8..12,14..18,20..24,… (9 more)"),
        "hybrid (shared block stored)": (1, "2"),
        "hybrid (shared block reused)": (12, "7,13..73 every 6th"),
    }
    stored, reused = spec.layer_groups[1], spec.layer_groups[2]
    assert {t.tied_to for t in reused.tensors if t.tied_to} == {
        t.name.replace("{i}", "2") for t in stored.tensors if "shared_transf" in t.name}
    # the block: 2d-wide input norm, q, k, v [16·464, 2·3712], o [3712, 16·464], gated MLP
    d, d2, ff = 3712, 7424, 14848
    block = d2 + 3 * 7424 * d2 + d * 7424 + d + 3 * ff * d
    assert count(spec).groups[1].per_layer - count(spec).groups[2].per_layer == block
    # 13 positions apply it: its matmuls 13 times per token, its keys and values 13 times
    assert kv_cache_bytes(spec, batch=1, ctx=1, dtype=DType.bf16) == (
        13 * 2 * 16 * 464 * 2 + 76 * (7424 * 4 * 2 + 7424 * 16 * 4))


def test_zamba_hostile_layer_count_is_instant(write: Any) -> None:
    # no list: transformers' default pattern (period 6, offset 4), described without enumerating
    spec = load_spec(write("config.json", tiny("zamba", num_hidden_layers=10**12,
                                                num_attention_heads=4, num_key_value_heads=4,
                                                intermediate_size=48)))
    assert spec.num_layers == 10**12
    kinds = {g.name: g.layers.describe() for g in spec.layer_groups}
    assert kinds["hybrid (shared block reused)"] == "7..999999999997 every 6th"
    hybrid = sum(len(g.layers) for g in spec.layer_groups if g.attention is not None)
    assert hybrid == 1 + len(range(7, 10**12, 6))  # layer 2, then 7, 13, …


# hybrids cut to a few layers: name, overrides, layers, the cache layers transformers makes
CUTS = [
    # one hybrid layer: untied (transformers cannot tie a block to no other layer)
    ("zamba-default", ['layers_block_type=["mamba","hybrid"]', "hidden_size=256",
                       "intermediate_size=512", "mamba_dt_rank=16", "tie_word_embeddings=false"],
     2),
    # the shared block applied twice: its weights and attention twice, stored once
    ("zamba-default", ['layers_block_type=["hybrid","mamba","hybrid"]', "hidden_size=256",
                       "intermediate_size=512", "num_key_value_heads=4", "mamba_dt_rank=16"], 3),
    # Mamba-2 (chunks of 4), two blocks in turn with adapters: A, B, A
    ("zamba2-default", ['layers_block_type=["hybrid","mamba","hybrid","hybrid"]',
                        "hidden_size=256", "intermediate_size=512", "num_attention_heads=8",
                        "num_key_value_heads=8", "chunk_size=4", "num_mem_blocks=2",
                        "use_shared_attention_adapter=true", "adapter_rank=16"], 4),
]
BATCH, SEQ = 2, 8


@pytest.mark.torch
@pytest.mark.parametrize(("name", "overrides", "layers"), CUTS,
                         ids=[f"{c[0]}-{c[2]}" for c in CUTS])
def test_cache_and_flops_equal_transformers(name: str, overrides: list[str], layers: int) -> None:
    spec = load_spec(name, overrides=[*overrides, f"num_hidden_layers={layers}"])
    assert spec.num_layers == layers
    m = measure_forward(spec, num_layers=layers, seq_len=SEQ, batch=BATCH, use_cache=True)
    assert m.kv_cache_bytes == kv_cache_bytes(spec, batch=BATCH, ctx=SEQ, dtype=DType.bf16)
    assert BATCH * state_bytes_per_sequence(spec, dtype=DType.bf16) < m.kv_cache_bytes
    f = measure_forward(spec, num_layers=layers, seq_len=SEQ)
    assert f.flops == forward_flops_per_sequence(spec, ctx=SEQ, causal=False)


def test_zamba_weight_flops_count_the_shared_block_at_every_position() -> None:
    spec = load_spec("zamba-default")
    pc = count(spec)
    reused = pc.groups[2]
    shared = sum(t.numel for t in spec.layer_groups[2].tensors if t.tied_to and t.name.endswith(
        "_proj.weight"))
    # 2 × (non-embedding matrices + the tied lm_head + the shared block's 12 more applications)
    matrices = sum(t.numel for t, _ in spec.all_tensors() if t.matmul and t.tied_to is None)
    per_layer = {g.name: sum(t.numel for t in g.tensors if t.matmul and t.tied_to is None)
                 for g in spec.layer_groups}
    expected = 2 * (sum(per_layer[g.name] * len(g.layers) for g in spec.layer_groups)
                    + 32000 * 3712 + reused.num_layers * shared)
    assert matrices > 0 and weight_flops_per_token(spec) == expected
    assert forward_flops_per_token(spec, ctx=4096) > forward_flops_per_token(spec, ctx=1)


# ---- RecurrentGemma: the RG-LRU state lives in the blocks, not in transformers' cache object ----


def recurrent_gemma_cache_bytes(spec: ModelSpec, *, layers: int, seq: int, batch: int) -> int:
    """After a prefill with use_cache: keys and values in the DynamicCache (the attention layers)
    plus each recurrent block's conv1d_state and rg_lru.recurrent_states, as nbytes."""
    import torch
    import transformers

    model = build_random_model(spec, num_layers=layers)
    cache = transformers.DynamicCache(config=model.config)
    ids = torch.randint(0, 100, (batch, seq), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        model(ids, use_cache=True, cache=cache)
    kv = sum(t.nbytes for layer in cache.layers for t in (getattr(layer, "keys", None),
                                                         getattr(layer, "values", None))
             if isinstance(t, torch.Tensor))
    state = sum(b.conv1d_state.nbytes + b.rg_lru.recurrent_states.nbytes
                for b in (layer.temporal_block for layer in model.model.layers)
                if hasattr(b, "rg_lru"))
    return kv + state


RG_CUT = ["num_hidden_layers=3", "hidden_size=256", "intermediate_size=512", "lru_width=320",
          "head_dim=32", "num_key_value_heads=2", "attention_window_size=16"]


@pytest.mark.torch
def test_recurrent_gemma_cache_and_flops_equal_transformers() -> None:
    spec = load_spec("recurrentgemma-2b", overrides=RG_CUT)  # recurrent, recurrent, attention
    # 8 tokens (inside the window of 16): K, V of 2 kv heads × 32; per recurrent layer a conv
    # state of 320 channels × 3 (bf16) and 320 fp32 values
    expected = BATCH * (SEQ * 2 * 2 * 32 * 2 + 2 * (320 * 3 * 2 + 320 * 4))
    assert kv_cache_bytes(spec, batch=BATCH, ctx=SEQ, dtype=DType.bf16) == expected
    assert recurrent_gemma_cache_bytes(spec, layers=3, seq=SEQ, batch=BATCH) == expected
    f = measure_forward(spec, num_layers=3, seq_len=SEQ)
    assert f.flops == forward_flops_per_sequence(spec, ctx=SEQ, causal=False)
    assert "aten.convolution" in f.flops_by_op and "aten.baddbmm" in f.flops_by_op


def test_recurrent_gemma_window_and_state_by_hand() -> None:
    spec = load_spec("recurrentgemma-2b")  # 18 recurrent, 8 attention layers (window 2048)
    state = 18 * (2560 * 3 * 2 + 2560 * 4)
    assert state_bytes_per_sequence(spec, dtype=DType.bf16) == state
    kv_per_token = 8 * 1 * 256 * 2 * 2
    assert kv_cache_bytes(spec, batch=1, ctx=1000, dtype=DType.bf16) == 1000 * kv_per_token + state
    assert kv_cache_bytes(spec, batch=1, ctx=1 << 20, dtype=DType.bf16) == (
        2048 * kv_per_token + state)
    # the RG-LRU per token: its convolution only (2 · 2560 · 4); the gates are weight FLOPs
    recurrent = next(g for g in spec.layer_groups if g.mixer is not None)
    assert recurrent.mixer is not None and mixer_flops_per_token(recurrent.mixer) == 2 * 2560 * 4
    gates = sum(t.numel for t in recurrent.tensors if "gate_weight" in t.name)
    assert gates == 2 * 10 * 256 * 256
    # beyond the window, a token's FLOPs stop growing
    assert forward_flops_per_token(spec, ctx=2048) == forward_flops_per_token(spec, ctx=1 << 20)
