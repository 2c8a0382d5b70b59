"""The llama-batched-bench rows of bench/llama_cpp_batched_decode.json: each S_TG is the batch's
generated tokens over its T_TG, the row's call is the table's PP, TG and B, and none is fitted on
(docs/latency.md, "Batched decode")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ROWS: list[dict[str, Any]] = json.loads(
    (ROOT / "bench" / "llama_cpp_batched_decode.json").read_text())["rows"]
FITTED: list[dict[str, Any]] = json.loads(
    (ROOT / "llmcalc" / "planning" / "measured_speed.json").read_text())["rows"]


def test_rows_read_as_their_quoted_lines() -> None:
    assert len(ROWS) == 36
    assert {(r["backend"], r["gpu"]) for r in ROWS} == {("cuda", "dgx-spark"),
                                                        ("metal", "apple-m2-ultra")}
    for r in ROWS:
        pp, tg, b, _, _, _, t_tg, s_tg, _, _ = (x.strip() for x in r["quote"].strip("|").split("|"))
        assert (r["ctx"], r["gen"], r["batch"], r["test"]) == (int(pp), int(tg), int(b), f"tg{tg}")
        assert r["tokens_per_s"] == float(s_tg)
        assert abs(int(b) * int(tg) / float(t_tg) / float(s_tg) - 1) < 0.01


def test_none_is_fitted() -> None:
    assert [r for r in FITTED if r["quote"] in {q["quote"] for q in ROWS}] == []
    assert [r for r in FITTED if r["engine"] == "llama.cpp" and r["batch"] != 1] == []


def test_the_steps_of_the_m2_ultra() -> None:
    """Metal's batch of 16 costs nearly what 32 does (mul_mm above ne11_mm_min = 8)."""
    ms = {r["batch"]: round(1000 * r["batch"] / r["tokens_per_s"], 1)
          for r in ROWS if r["backend"] == "metal" and r["ctx"] == 512}
    assert ms == {1: 12.8, 2: 15.1, 4: 18.3, 8: 31.4, 16: 49.8, 32: 52.4}
