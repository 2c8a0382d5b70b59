"""p_pre on Metal: an M5's tensor-API matrix multiplications shared kernel_mul_mm with the
simdgroup path until PR #20962 gave them a kernel of their own (speed.METAL_TENSOR_TILES). PR
#16634's M5 rows (October 2025) say so (measured_speed.json "predates": [20962]) and take the
weights' FLOPs again; a run a user asks about is a current build and does not."""

from __future__ import annotations

import json
import statistics
from dataclasses import replace

from helpers.bench import REPO, holdout

from llmcalc.cli.latency import row_latency
from llmcalc.planning.hardware import ACCELERATORS
from llmcalc.planning.speed import (
    AMD_TILE_PRS,
    METAL_TENSOR_TILES,
    TERMS,
    _prefill_features,
    measured_rows,
    rows_for,
)

P, P_PRE = TERMS.index("p"), TERMS.index("p_pre")


def test_the_rows_before_it_are_pr_16634s_m5_rows() -> None:
    rows = [r for r in measured_rows() if METAL_TENSOR_TILES in r.predates]
    assert METAL_TENSOR_TILES == 20962 and METAL_TENSOR_TILES not in AMD_TILE_PRS.values()
    assert sorted((r.model, r.test) for r in rows) == [
        ("mistral-7b", "pp512"), ("mistral-7b", "tg128"), ("phi-2", "pp512"), ("phi-2", "tg128"),
        ("tinyllama-1.1b", "pp512"), ("tinyllama-1.1b", "tg128")]
    assert {(r.engine, r.backend, r.gpu) for r in rows} == {("llama.cpp", "metal", "apple-m5")}
    assert all(r.source == "https://github.com/ggml-org/llama.cpp/pull/16634" for r in rows)


def test_an_m5_row_before_it_takes_its_weight_flops_again_other_chips_do_not() -> None:
    row = next(r for r in rows_for("llama.cpp", "metal")
               if METAL_TENSOR_TILES in r.predates and r.test == "pp512")
    lat = row_latency(row)
    f = _prefill_features(lat, "llama.cpp", "metal", predates=row.predates)
    assert f[P_PRE] == f[P] > 0
    assert _prefill_features(lat, "llama.cpp", "metal")[P_PRE] == 0.0  # a current build
    # M1-M4 keep the simdgroup kernel: the PR changed nothing there
    m4 = replace(lat, accelerator=ACCELERATORS["apple-m4"])
    assert _prefill_features(m4, "llama.cpp", "metal", predates=row.predates)[P_PRE] == 0.0
    # the number is Metal's: on Vulkan and ROCm the AMD PRs name their tiles
    assert _prefill_features(lat, "llama.cpp", "vulkan", predates=row.predates)[P_PRE] == 0.0


def test_the_scoreboard_copies_tensor_api_m5_prefill() -> None:
    """The M5 Max's and M5 Pro's Llama-2-7B pp512 on b10621, the tensor API on (#4167's copies):
    14.9% median before the fit read PR #16634's rows as an older kernel's, 4.5% after."""
    rows = [r for r in json.loads((REPO / "bench/scoreboard_copies.json").read_text())["rows"]
            if r.get("gpu", "").startswith("apple-m5") and r["test"] == "pp512"
            and "c1d0e7a" in r["settings"]]  # build c1d0e7a: the legacy-Metal row is left out
    assert len(rows) == 4
    errors = [abs(x.error) for x in holdout.run(rows)]
    assert statistics.median(errors) <= 0.08
