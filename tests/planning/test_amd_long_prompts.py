"""bench/amd_long_prompts.json: AMD long-prompt llama-bench rows the speed fit does not take (runs
at ubatch 2048, and a Radeon AI PRO R9700's whose quant is not shown), a check on how the AMD
coopmat1 terms carry (speed.AMD_COOPMAT_GPUS; docs/latency.md). Their error is reported by
`bench/speed_holdout.py --rows bench/amd_long_prompts.json`, not pinned: it moves with the fit."""

from __future__ import annotations

import json
import re
from typing import Any

from helpers.bench import REPO, holdout

from llmcalc.planning.hardware import ACCELERATORS
from llmcalc.planning.speed import coopmat1_share

ROWS: list[dict[str, Any]] = json.loads(
    (REPO / "bench" / "amd_long_prompts.json").read_text())["rows"]
FITTED: list[dict[str, Any]] = json.loads(
    (REPO / "llmcalc" / "planning" / "measured_speed.json").read_text())["rows"]


def test_rows_read_as_their_quoted_lines() -> None:
    assert len(ROWS) == 32
    for r in ROWS:
        assert r["source"].startswith("https://") and r["engine"] == "llama.cpp"
        numbers = {float(x) for x in re.findall(r"\d+(?:\.\d+)?", r["quote"].replace(",", ""))}
        assert r["tokens_per_s"] in numbers, r["quote"]
        assert (r["ctx"], r["gen"], r["batch"], r["test"]) == (r["ctx"], 1, 1, f"pp{r['ctx']}")
        ubatch = re.findall(r"(?:ubatch|-ub|n_ubatch)\D{0,12}(\d+)", r["settings"])
        assert ubatch == ["2048"] or r["gpu"] == "r9700", r["settings"]


def test_none_is_fitted_and_each_is_an_amd_coopmat_card() -> None:
    fitted = {(r["source"], r["quote"]) for r in FITTED}
    assert [r for r in ROWS if (r["source"], r["quote"]) in fitted] == []
    assert {r["gpu"] for r in ROWS} == {"strix-halo", "rx-7900-xtx", "r9700"}
    assert all(coopmat1_share(ACCELERATORS[r["gpu"]], "vulkan") == 1.0 for r in ROWS)


def test_every_row_answers_within_its_bound() -> None:
    results = holdout.run(ROWS)
    assert [holdout.label(r) + ": " + r.why for r in results if r.expected is None] == []
    assert [holdout.label(r) for r in results if r.above_bound] == []
