"""xLSTM beyond one forward call: a prefill longer than max_inference_chunksize runs through the
blocks in pieces of it, each piece's mLSTM chunked on its own (xLSTMModel.forward); and
xLSTMCache holds num_hidden_layers layers' state whatever num_blocks builds. The differential
sweep found both: max_inference_chunksize=3 counted +0.19% over FlopCounterMode, num_blocks=1
under num_hidden_layers=2 a cache of half the bytes transformers holds."""

from __future__ import annotations

from typing import Any

import pytest

from llmcalc import load_spec
from llmcalc.formulas.flops import (
    forward_flops_per_sequence,
    mixer_flops_per_token,
    mlstm_chunkwise_flops,
)
from llmcalc.verify.reference import measure_forward

SMALL = ["vocab_size=1000", "hidden_size=256", "embedding_dim=256", "num_heads=4", "chunk_size=4",
         "num_hidden_layers=2"]


def _mixer(piece: int) -> Any:
    spec = load_spec("xlstm-7b", overrides=[*SMALL, f"max_inference_chunksize={piece}"])
    (group,) = spec.layer_groups
    return group.mixer


def test_pieces_by_hand() -> None:
    """16 tokens in pieces of 6: 6, 6 and 4, a chunk of 4 in each and 2, 2 and 0 steps; in pieces
    of 3: steps only; in pieces of 16,384 (the default) or 16: the whole, 4 chunks. Per head
    dk = int(256 · 0.5) / 4 = 32, dv = 256 / 4 = 64, chunks of c = 4: a chunk is
    2 · 4 · (2·32·64 + 4·32 + 4·64 + 32) = 36,096 FLOPs, a step 2 · 2·32·64 + 2·32 = 8,256."""
    chunk, step = 4 * 36_096, 4 * 8_256  # four heads
    assert mixer_flops_per_token(_mixer(6)) == step
    assert mlstm_chunkwise_flops(_mixer(6), ctx=16) == 3 * chunk + 4 * step == 565_248
    assert mlstm_chunkwise_flops(_mixer(3), ctx=16) == 16 * step == 528_384
    assert mlstm_chunkwise_flops(_mixer(16_384), ctx=16) == 4 * chunk == 577_536
    assert mlstm_chunkwise_flops(_mixer(16), ctx=16) == 577_536  # one piece: the whole


@pytest.mark.torch
@pytest.mark.parametrize("piece", [3, 6, 16_384])
def test_pieces_equal_flop_counter(piece: int) -> None:
    spec = load_spec("xlstm-7b", overrides=[*SMALL, f"max_inference_chunksize={piece}"])
    m = measure_forward(spec, num_layers=2, seq_len=16, batch=2, use_cache=True)
    assert m.flops == 2 * forward_flops_per_sequence(spec, ctx=16, causal=False)


LINE = ("error: NX-AI/xLSTM-7b: FLOPs and cache bytes are not computed: num_blocks (1) blocks are "
        "built but xLSTMCache holds the state of num_hidden_layers (2) layers; not modelled\n")


def test_blocks_apart_from_the_cache_layers_are_refused(cli: Any) -> None:
    for command in ("flops", "memory"):
        r = cli(command, "xlstm-7b", "--set", "num_blocks=1", "--set", "num_hidden_layers=2",
                "--ctx", "64")
        assert (r.code, r.stdout, r.stderr) == (2, "", LINE)
    counted = cli("count", "xlstm-7b", "--set", "num_blocks=1", "--set", "num_hidden_layers=2",
                  "--json").json()
    assert counted["total_params"] == 613_761_040  # transformers' on the meta device
    same = cli("memory", "xlstm-7b", "--set", "num_blocks=2", "--set", "num_hidden_layers=2",
               "--ctx", "64", "--json")
    assert same.code == 0
