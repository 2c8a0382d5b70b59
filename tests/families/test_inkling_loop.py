"""Inkling 2 Loop (``inkling2_loop_text``, inkling.py): Inkling 2's layers, of which a span runs
``loop_num_passes`` times per token, each pass with its own K/V and conv states and, after the
first, message gates fed by attention over the previous pass's block outputs.

Held to transformers on the meta device (every name and shape, per-layer counts, totals) on the
bundled config and on variants (layers, span, passes, widths, heads, ``loop_config``); its cache
bytes after a real forward pass (2 sequences of 8 tokens) to llmcalc's KV + state bytes; and
FlopCounterMode's count of that pass to llmcalc's full prefill FLOPs.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import pytest
from helpers import configs
from helpers.reference import matches_transformers, total_from_names

from llmcalc import count, load_spec
from llmcalc.errors import UsageError
from llmcalc.formulas.flops import forward_flops_per_sequence, weight_terms
from llmcalc.formulas.memory import kv_cache_bytes, state_bytes_per_sequence
from llmcalc.units import DType
from llmcalc.verify.reference import measure_forward

tiny = partial(configs.tiny, base=configs.THREE_LAYERS)

NAME = "inkling2-loop-text-default"
TOTAL = 26_068_156_416  # Inkling2LoopTextConfig() defaults (Inkling-2-Mini's text model)
# 24 layers × 120 of 128 experts (gate_up 2·1152 × 2304, down 2304 × 1152) left out
ACTIVE = TOTAL - 24 * 120 * 3 * 1152 * 2304

SMALL = {"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
         "swa_num_attention_heads": 2, "swa_num_key_value_heads": 1, "swa_head_dim": 8,
         "d_rel": 4, "rel_extent": 12, "sliding_window_size": 6, "moe_intermediate_size": 16,
         "n_routed_experts": 4, "num_experts_per_tok": 2, "unpadded_vocab_size": 90,
         "loop_gate_rank": 5}
VARIANTS = {
    # every 6th layer full (layer 5); blocks of 2, layers 2..3 loop 3 times
    "span-2..3-three-passes": tiny("inkling2_loop_text", **SMALL, num_hidden_layers=6,
                                   n_layers_per_attn_res_block=2, loop_layer_index_start=2,
                                   loop_layer_index_end=4),
    # full layers inside the span, the span up to the last layer, 4 passes, blocks of 3
    "listed-span-to-the-end": tiny(
        "inkling2_loop_text", **(SMALL | {"loop_gate_rank": 7}), num_hidden_layers=9,
        n_layers_per_attn_res_block=3, loop_layer_index_start=3, loop_layer_index_end=9,
        loop_num_passes=4, layer_types=["hybrid_sliding", "hybrid", "hybrid_sliding"] * 3),
    # one pass: the message gates are built, never used
    "one-pass-wider": tiny("inkling2_loop_text", **(SMALL | {"num_attention_heads": 6,
                                                             "num_key_value_heads": 3,
                                                             "swa_num_attention_heads": 3}),
                           hidden_size=48, num_hidden_layers=4, n_layers_per_attn_res_block=1,
                           loop_layer_index_start=1, loop_layer_index_end=3, loop_num_passes=1),
    # a checkpoint's loop_config overrides the flat fields
    "loop-config": tiny("inkling2_loop_text", **SMALL, num_hidden_layers=6,
                        n_layers_per_attn_res_block=2, loop_layer_index_start=2,
                        loop_layer_index_end=4,
                        loop_config={"core_start": 4, "core_end": 6, "num_passes": 2,
                                     "gate_rank": 3}),
    # an empty span, and one past the layers (a config cut short): nothing loops
    "empty-span": tiny("inkling2_loop_text", **SMALL, num_hidden_layers=6,
                       n_layers_per_attn_res_block=2, loop_layer_index_start=4,
                       loop_layer_index_end=4),
    "span-past-the-layers": tiny("inkling2_loop_text", **SMALL, num_hidden_layers=3,
                                 n_layers_per_attn_res_block=2, loop_layer_index_start=4,
                                 loop_layer_index_end=8),
}


def test_bundled_total_and_groups() -> None:
    spec = load_spec(NAME)
    pc = count(spec)
    assert pc.total == TOTAL == spec.expected["total_params"]
    assert pc.active == ACTIVE == spec.expected["active_params"]
    assert total_from_names(spec) == TOTAL
    groups = {g.name: (g.layers.describe(), g.repeats) for g in spec.layer_groups}
    assert groups == {
        "sliding_attention, layer 0": ("0", 1),
        "sliding_attention": ("1..4,18..22", 1),
        "attention": ("5,23", 1),
        "loop/sliding_attention (runs 3× per token)": ("6..16 (5 of every 6)", 3),
        "loop/attention (runs 3× per token)": ("11..17 every 6th", 3),
    }
    # 12 loop layers × 4 gates × (64 × 4608 + 2 × 2304 × 64); 12 × 4 message queries of 2304
    assert pc.breakdown["layers/loop/message_gate"] == 12 * 4 * 4 * 64 * 2304 == 28_311_552
    assert pc.breakdown["loop/message_query"] == 12 * 4 * 2304


@pytest.mark.torch
def test_bundled_matches_transformers() -> None:
    matches_transformers(load_spec(NAME))


@pytest.mark.torch
@pytest.mark.parametrize("fields", VARIANTS.values(), ids=VARIANTS.keys())
def test_variant_matches_transformers(write: Any, fields: dict[str, Any]) -> None:
    matches_transformers(load_spec(write("config.json", fields)))


def test_loop_config_overrides_the_flat_fields(write: Any) -> None:
    spec = load_spec(write("config.json", VARIANTS["loop-config"]))
    loop = next(g for g in spec.layer_groups if g.name.startswith("loop/"))
    assert (loop.layers.describe(), loop.repeats) == ("4", 2)
    gate = next(t for t in loop.tensors if t.name.endswith("q_message_gate.down_proj.weight"))
    assert (gate.shape, gate.repeats) == ((3, 64), 1)


def brute_depth_reads(*, L: int, n: int, start: int, end: int, passes: int,
                      full: set[int]) -> int:
    """Queries × sources of every attention over block outputs, walking the layers as
    Inkling2LoopTextModel.forward does (pre-loop, the passes, post-loop, the final input)."""
    reads = 0

    def layer(i: int, blocks: int) -> int:
        nonlocal reads
        queries = 0 if i == 0 else 3 if i in full else 1
        boundary = int(i % n == 0)
        reads += queries * (blocks + 1) + (blocks + boundary + 1)  # attention_input, mlp_input
        return blocks + boundary

    blocks = 0
    for i in range(start):
        blocks = layer(i, blocks)
    pre = blocks
    for p in range(passes):
        previous, blocks = blocks, pre
        for i in range(start, end):
            if p:  # message_input: 4 queries over the previous pass's blocks after its first + 1
                reads += 4 * (previous - pre - 1 + 1)
            blocks = layer(i, blocks)
    for i in range(end, L):
        blocks = layer(i, blocks)
    return reads + blocks + 1  # final_input


def test_depth_flops_by_walking_the_layers() -> None:
    spec = load_spec(NAME)  # 24 layers, blocks of 6, layers 6..17 three passes, full at i ≡ 5
    reads = brute_depth_reads(L=24, n=6, start=6, end=18, passes=3, full={5, 11, 17, 23})
    assert spec.depth_flops_per_token == 2 * 2 * 2304 * reads == 5_345_280
    spec = load_spec(NAME, overrides=["loop_num_passes=7", "loop_layer_index_start=12",
                                      "loop_layer_index_end=24"])
    reads = brute_depth_reads(L=24, n=6, start=12, end=24, passes=7, full={5, 11, 17, 23})
    assert spec.depth_flops_per_token == 2 * 2 * 2304 * reads


def test_message_gates_count_in_passes_after_the_first() -> None:
    spec = load_spec(NAME)
    gates = [t for t in weight_terms(spec) if "message_gate" in t.name]
    # per gate kind: 10 sliding + 2 full loop layers, each run in 2 of the 3 passes
    assert sum(t.flops for t in gates) == 2 * 12 * 2 * 4 * 4 * 64 * 2304
    assert {t.num_layers for t in gates} == {20, 4}
    one = load_spec(NAME, overrides=["loop_num_passes=1"])
    assert not [t for t in weight_terms(one) if "message_gate" in t.name]
    assert count(one).total == TOTAL  # built all the same


def test_cache_by_hand() -> None:
    spec = load_spec(NAME)
    # 12 layers once + 12 loop layers × 3 passes = 48 caches (40 sliding, 8 full): K and V of 8 kv
    # heads of 128, and the four convs' states (2·8·128 + 2·2304 channels × 4 taps) in float32
    assert state_bytes_per_sequence(spec, dtype=DType.bf16) == 48 * (2 * 8 * 128 + 2 * 2304) * 4 * 4
    assert kv_cache_bytes(spec, batch=1, ctx=4096, dtype=DType.bf16) == (
        5_111_808 + (40 * 1024 + 8 * 4096) * 2 * 8 * 128 * 2)


def test_hostile_depth_is_instant() -> None:
    began = time.perf_counter()
    spec = load_spec(NAME, overrides=["num_hidden_layers=1000000000000",
                                      "loop_layer_index_end=999999999996",
                                      "loop_num_passes=1000000"])
    groups = {g.name: len(g.layers) for g in spec.layer_groups}
    assert sum(groups.values()) == 10**12
    assert groups["loop/attention (runs 1000000× per token)"] == 166_666_666_665
    state = state_bytes_per_sequence(spec, dtype=DType.bf16)
    caches = 10**12 + 999_999 * 999_999_999_990  # the span's caches, once per later pass
    assert state == caches * (2 * 8 * 128 + 2 * 2304) * 4 * 4
    span = 999_999_999_990
    # of which the messages: 4 queries per loop layer over span / 6 blocks, in 999,999 passes
    assert spec.depth_flops_per_token > 2 * 2 * 2304 * 999_999 * span * 4 * (span // 6)
    assert time.perf_counter() - began < 5


@pytest.mark.parametrize(("overrides", "message"), [
    (["loop_num_passes=0"], "loop_num_passes (0) must be at least 1"),
    (["loop_layer_index_start=0"], "loop_layer_index_start (0) must be greater than 0"),
    (["loop_layer_index_start=4"],
     "loop_layer_index_start (4) must be a multiple of n_layers_per_attn_res_block (6)"),
    (["loop_layer_index_end=15"],
     "loop_layer_index_end (15) must be a multiple of n_layers_per_attn_res_block (6)"),
    (["loop_layer_index_start=12", "loop_layer_index_end=6"],
     "loop_layer_index_end (6) must not be below loop_layer_index_start (12)"),
    (["loop_layer_index_end=30"],
     "loop_layer_index_end (30) must not exceed num_hidden_layers (24) when the loop starts "
     "within the layers (transformers' later passes would index past their cache)"),
])
def test_bad_loop_fields_name_the_field(overrides: list[str], message: str) -> None:
    # a bad value given with --set is blamed on the --set, not on the bundled file
    with pytest.raises(UsageError) as err:
        load_spec(NAME, overrides=overrides)
    assert str(err.value) == f"--set {overrides[-1]}: {message}"


def test_bad_loop_field_is_one_line_exit_2(cli: Any) -> None:
    run = cli("count", NAME, "--set", "loop_num_passes=0")
    assert run.code == 2
    assert run.stderr == "error: --set loop_num_passes=0: loop_num_passes (0) must be at least 1\n"


def test_explain_shows_the_sums(cli: Any) -> None:
    run = cli("flops", NAME, "--ctx", "4096", "--explain")
    assert run.code == 0
    text = " ".join(run.stdout.split())
    assert ("loop/attention (runs 3× per token): 6 layers × 2 × 4,096 × 24 heads × (128 + 128) "
            "= 301,989,888") in text
    assert ("model.layers.{i}.q_message_gate.down_proj.weight: 2 × 20 layers × 64 × 4,608 "
            "= 11,796,480") in text
    assert "attention over the layers' block outputs (any context) = 5,345,280" in text
    run = cli("count", NAME)
    text = " ".join(run.stderr.split())  # a note: on stderr, as every note
    assert ("Attention over block outputs per token: 5,345,280 = 1,806,336 (every layer once, "
            "the final input) + 1,769,472 (passes 2..3 reading their inputs) + 1,769,472 "
            "(messages: 4 queries per loop layer over the previous pass's 2 blocks)") in text


# ---- cache bytes and FLOPs of a real forward pass -----------------------------------------------

BATCH, SEQ = 2, 8
SMALL_RUN = ["hidden_size=64", "n_routed_experts=4", "num_experts_per_tok=2",
             "moe_intermediate_size=32", "vocab_size=1000", "unpadded_vocab_size=900",
             "num_attention_heads=4", "num_key_value_heads=2", "head_dim=16",
             "swa_num_attention_heads=2", "swa_num_key_value_heads=1", "swa_head_dim=16",
             "loop_gate_rank=8"]
CUTS = [
    # 6 layers, blocks of 2, full and sliding layers in the span 2..3, 3 passes
    (["num_hidden_layers=6", "n_layers_per_attn_res_block=2", "loop_layer_index_start=2",
      "loop_layer_index_end=4",
      'layer_types=["hybrid_sliding","hybrid","hybrid","hybrid_sliding","hybrid_sliding","hybrid"]'],
     (2, 4, 3)),
    # blocks of 3, the span 3..5 up to the last layer, 2 passes
    (["num_hidden_layers=6", "n_layers_per_attn_res_block=3", "loop_layer_index_start=3",
      "loop_layer_index_end=6", "loop_num_passes=2"], (3, 6, 2)),
    # one pass: no copies, no messages
    (["num_hidden_layers=4", "n_layers_per_attn_res_block=2", "loop_layer_index_start=2",
      "loop_layer_index_end=4", "loop_num_passes=1"], (2, 4, 1)),
]


@pytest.mark.torch
@pytest.mark.parametrize(("overrides", "loop"), CUTS, ids=[str(c[1]) for c in CUTS])
def test_cache_bytes_equal_transformers(overrides: list[str], loop: tuple[int, int, int]) -> None:
    spec = load_spec(NAME, overrides=[*SMALL_RUN, *overrides])
    m = measure_forward(spec, num_layers=spec.num_layers, seq_len=SEQ, batch=BATCH,
                        use_cache=True, dtype="fp32")
    start, end, passes = loop
    L = spec.num_layers
    # the model's cache layers, then (passes − 1) copies of the span's
    assert m.cache_layers[L:] == m.cache_layers[start:end] * (passes - 1)
    assert m.kv_cache_bytes == kv_cache_bytes(spec, batch=BATCH, ctx=SEQ, dtype=DType.fp32)


@pytest.mark.torch
@pytest.mark.parametrize(("overrides", "loop"), CUTS, ids=[str(c[1]) for c in CUTS])
def test_prefill_flops_equal_flop_counter(overrides: list[str], loop: tuple[int, int, int]) -> None:
    spec = load_spec(NAME, overrides=[*SMALL_RUN, *overrides])
    m = measure_forward(spec, num_layers=spec.num_layers, seq_len=SEQ, dtype="fp32")
    assert m.flops == forward_flops_per_sequence(spec, ctx=SEQ, causal=False)
