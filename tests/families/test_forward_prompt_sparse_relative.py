"""Forward passes past the plain decoder's: CPM-Ant's own prompt tokens, BigBird's full attention
below its block-sparse threshold (and the pooler once a sequence), XLNet's relative positions and
memory, Reformer's full attention within its chunk lengths. Each figure is a number worked by hand below, and (marker torch) FlopCounterMode's count and
the bytes transformers' cache holds after the same forward."""

from __future__ import annotations

from typing import Any

import pytest

from llmcalc import spec_from_dict
from llmcalc.errors import UsageError
from llmcalc.formulas.flops import forward_flops_per_sequence
from llmcalc.formulas.memory import kv_cache_bytes
from llmcalc.units import DType

N = 8  # tokens of the forward pass

CPMANT = {"model_type": "cpmant", "hidden_size": 64, "num_attention_heads": 4, "dim_head": 16,
          "dim_ff": 128, "vocab_size": 100, "num_hidden_layers": 2, "prompt_length": 8,
          "prompt_types": 3, "segment_types": 4, "position_bias_num_buckets": 32}
BIG_BIRD = {"model_type": "big_bird", "hidden_size": 64, "num_attention_heads": 4,
            "intermediate_size": 128, "vocab_size": 100, "num_hidden_layers": 2,
            "max_position_embeddings": 64, "attention_type": "block_sparse", "block_size": 2,
            "num_random_blocks": 1}
REFORMER = {"model_type": "reformer", "attn_layers": ["local", "lsh"], "hidden_size": 64,
            "num_attention_heads": 4, "attention_head_size": 16, "feed_forward_size": 128,
            "vocab_size": 100, "axial_pos_embds": False, "max_position_embeddings": 16,
            "local_attn_chunk_length": 8, "lsh_attn_chunk_length": 16}
XLNET = {"model_type": "xlnet", "d_model": 64, "n_head": 4, "d_inner": 128, "vocab_size": 100,
         "n_layer": 2, "mem_len": 6}

# per token and layer, 2 × the layer's matrices: CPM-Ant q, k, v, o 4·64² + w_0, w_1, w_out
# 3·128·64 = 40,960 elements; BigBird and XLNet q, k, v, o 4·64² + FFN 2·128·64 = 32,768
CPMANT_LAYER, ENCODER_LAYER = 2 * 40_960, 2 * 32_768
PAIR = 2 * 4 * (16 + 16)  # one query–key pair: scores and values, 4 heads of 16

CASES: list[tuple[str, dict[str, Any], int, int]] = [
    # layers on N + 8 prompt tokens, (N + 8)² pairs; the head [100, 64] on the N tokens alone;
    # the cache K and V of all 16 tokens, 2 layers of 4 × 16, fp32
    ("cpmant", CPMANT,
     2 * (16 * CPMANT_LAYER + 16 * 16 * PAIR) + N * 2 * 100 * 64,
     2 * 16 * 2 * 64 * 4),
    # 8 ≤ (5 + 2·1)·2 = 14 tokens: full attention; the MLM head (dense 64², decoder [100, 64]) on
    # every token, the pooler [64, 64] on the first; an encoder caches nothing
    ("big_bird", BIG_BIRD,
     2 * (N * ENCODER_LAYER + N * N * PAIR) + N * 2 * (64 * 64 + 100 * 64) + 2 * 64 * 64,
     0),
    # bidirectional: every query scores N keys and 2N relative positions (2 × 4 × 16 each), whose
    # keys r [2N, 64] × [64, 64] are projected once; lm_loss [100, 64] per token; the cache holds
    # each layer's input hidden states, the last mem_len = 6 tokens of 64, fp32
    ("xlnet bi", XLNET,
     2 * (N * ENCODER_LAYER + N * N * PAIR + N * 2 * N * 2 * 4 * 16 + 2 * N * 2 * 64 * 64)
     + N * 2 * 100 * 64,
     2 * 6 * 64 * 4),
    # N ≤ both chunk lengths: full attention; local q, k, v, o 4·64², LSH query_key, v, o 3·64²,
    # FFN 2·128·64 each; the head [100, 2·64] on every token; ReformerForMaskedLM caches nothing
    ("reformer", REFORMER,
     N * 2 * (4 * 64 * 64 + 3 * 64 * 64 + 2 * 2 * 128 * 64) + 2 * N * N * PAIR
     + N * 2 * 100 * 128,
     0),
    # unidirectional: N + 1 relative positions; no memory without use_mems_eval
    ("xlnet uni", {**XLNET, "attn_type": "uni", "use_mems_eval": False},
     2 * (N * ENCODER_LAYER + N * N * PAIR + N * (N + 1) * 2 * 4 * 16 + (N + 1) * 2 * 64 * 64)
     + N * 2 * 100 * 64,
     0),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize(("label", "config", "flops", "cache"), CASES, ids=IDS)
def test_forward_flops_and_cache_bytes(label: str, config: dict[str, Any], flops: int,
                                       cache: int) -> None:
    spec = spec_from_dict(config, name=label)
    assert forward_flops_per_sequence(spec, ctx=N, causal=False) == flops
    assert kv_cache_bytes(spec, batch=1, ctx=N, dtype=DType.fp32) == cache


def test_the_figures_worked_out() -> None:
    # the sums above, as numbers: a change to a formula shows here first
    assert [c[2] for c in CASES] == [2_854_912, 1_257_472, 1_478_656, 1_220_608, 1_349_632]
    assert [c[3] for c in CASES] == [16_384, 0, 3_072, 0, 0]


@pytest.mark.torch
@pytest.mark.parametrize(("label", "config", "flops", "cache"), CASES, ids=IDS)
def test_transformers_runs_the_same_forward(label: str, config: dict[str, Any], flops: int,
                                            cache: int) -> None:
    pytest.importorskip("torch")
    from llmcalc.verify.reference import measure_forward

    spec = spec_from_dict(config, name=label)
    measured = measure_forward(spec, num_layers=2, seq_len=N, use_cache=True, dtype="fp32")
    assert measured.flops == flops
    assert (measured.kv_cache_bytes or 0) == cache


def test_block_sparse_past_its_threshold_is_refused(cli: Any) -> None:
    spec = spec_from_dict(BIG_BIRD, name="bb")
    with pytest.raises(UsageError) as e:
        forward_flops_per_sequence(spec, ctx=15, causal=False)
    assert str(e.value) == (
        "bb: FLOPs past 14 tokens (15 asked) are not computed: BigBird's block-sparse attention "
        "(global, window and random blocks) runs there, which these formulas do not follow")
    # original_full attends in full at any length
    full = spec_from_dict({**BIG_BIRD, "attention_type": "original_full"}, name="bb")
    assert forward_flops_per_sequence(full, ctx=15, causal=False) > 0
    run = cli("flops", "big-bird-default", "--ctx", "1k")
    assert run.code == 2
    assert run.stderr == (
        "error: transformers BigBirdConfig defaults: FLOPs past 704 tokens (1,024 asked) are not "
        "computed: BigBird's block-sparse attention (global, window and random blocks) runs "
        "there, which these formulas do not follow\n")


def test_reformer_past_a_chunk_length_is_refused() -> None:
    spec = spec_from_dict(REFORMER, name="rf")
    with pytest.raises(UsageError) as e:
        forward_flops_per_sequence(spec, ctx=9, causal=False)
    assert str(e.value) == (
        "rf: FLOPs past 8 tokens (9 asked) are not computed: Reformer's chunked attention (local "
        "chunks, LSH buckets) runs there, which these formulas do not follow")


def test_bigbird_pegasus_encoder_past_its_threshold_is_refused() -> None:
    from llmcalc import load_spec

    spec = load_spec("bigbird-pegasus-default")
    assert forward_flops_per_sequence(spec, ctx=16, causal=False, source_len=704) > 0
    with pytest.raises(UsageError, match=r"FLOPs past 704 tokens \(705 asked\)"):
        forward_flops_per_sequence(spec, ctx=16, causal=False, source_len=705)


def test_plans_on_every_token_refuse_prompt_tokens_and_poolers() -> None:
    from llmcalc.planning.training import training_flops

    spec = spec_from_dict(CPMANT, name="cpm")
    with pytest.raises(UsageError) as e:
        training_flops(spec, tokens=1000, ctx=N)
    assert str(e.value) == (
        "cpm: no training plan: its 8 prompt tokens run through the layers of every sequence, "
        "which the plan does not follow (flops and memory count them)")
