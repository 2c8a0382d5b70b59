"""llama.cpp CUDA's HBM term (a_dc) below HBM_MIN_BANDWIDTH: a V100's or an A30's HBM2 reads its
bytes again at 1.5 TB/s, not at its own 0.9 TB/s (speed._decode_features' docstring; a_dc65 in
docs/latency.md)."""

from __future__ import annotations

import json
import statistics
from dataclasses import replace

import pytest
from helpers.bench import REPO, holdout

from llmcalc.cli.latency import row_latency
from llmcalc.planning.hardware import ACCELERATORS
from llmcalc.planning.speed import (
    HBM_MIN_BANDWIDTH,
    PREFILL_TERMS,
    TERMS,
    _decode_features,
    rows_for,
)

A_DC = TERMS[PREFILL_TERMS:].index("a_dc")


@pytest.mark.parametrize(("gpu", "rate"), [
    ("v100-pcie-32gb", HBM_MIN_BANDWIDTH), ("a30", HBM_MIN_BANDWIDTH),
    ("a100-40gb", 1_555 * 10**9), ("h100", 3_350 * 10**9), ("rtx-4090", 0)])
def test_the_bytes_again_at_the_faster_of_the_card_and_hbm_rate(gpu: str, rate: int) -> None:
    row = next(r for r in rows_for("llama.cpp", "cuda") if r.gpu == "rtx-4090" and r.gen > 1)
    lat = row_latency(row)
    lat = replace(lat, accelerator=ACCELERATORS[gpu])
    features = _decode_features(lat, "llama.cpp", "cuda")
    assert features[A_DC] == (lat.decode.bytes / rate if rate else 0.0)  # GDDR: no HBM term
    assert features[0] == lat.decode.bytes / ACCELERATORS[gpu].bandwidth


def test_the_held_out_hbm2_decode_rows() -> None:
    """The V100s' and the A30's decode rows held out (pavlokhmel, kyuz0, the #15013 copies):
    15.9% median before the term read them at 1.5 TB/s, 7.0% at it."""
    rows = [r for f in (holdout.ROWS, REPO / "bench/scoreboard_copies.json")
            for r in json.loads(f.read_text())["rows"]
            if str(r.get("gpu", "")).startswith(("v100", "a30"))
            and holdout.stage(r["test"]) == "decode"]
    assert len(rows) == 7
    errors = [abs(r.error) for r in holdout.run(rows)]
    assert statistics.median(errors) <= 0.10
