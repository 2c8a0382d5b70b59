"""The held-out rows of bench/speed_holdout.json: outside the fit, well-formed, called as issue 38's
hidden set calls them, never refused and never above their roofline bound. Their error is reported
by bench/speed_holdout.py (docs/latency.md, "Held-out check"), not pinned here: it moves with
every change of the fit."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers.bench import REPO, holdout

HELD_OUT: list[dict[str, Any]] = json.loads(holdout.ROWS.read_text())["rows"]
FITTED: list[dict[str, Any]] = json.loads(
    (REPO / "llmcalc" / "planning" / "measured_speed.json").read_text())["rows"]
CARDS = {c["key"] for c in json.loads(
    (REPO / "llmcalc" / "planning" / "hardware.json").read_text())["accelerators"]}


def test_no_held_out_source_is_fitted() -> None:
    """A source taken into measured_speed.json stops being held out: move its rows, not the test."""
    fitted = {r["source"] for r in FITTED}
    assert [r["source"] for r in HELD_OUT if r["source"] in fitted] == []


def test_no_held_out_figure_is_fitted() -> None:
    fitted = {(r["model"], r.get("gpu", r["card"]), r["dtype"], r["test"], r.get("tokens_per_s"))
              for r in FITTED}
    assert [r for r in HELD_OUT if (r["model"], r.get("gpu", r["card"]), r["dtype"], r["test"],
                                    r["tokens_per_s"]) in fitted] == []


@pytest.mark.parametrize("row", HELD_OUT, ids=lambda r: f"{r['model']}-{r.get('gpu', 'custom')}-{r['test']}")
def test_row_is_sourced_and_callable(row: dict[str, Any]) -> None:
    assert row["source"].startswith("https://") and row["quote"]
    assert row["class"] in holdout.CLASSES
    if "gpu" in row:
        assert row["gpu"] in CARDS
    else:  # a card outside hardware.json: its bf16 FLOP/s and bandwidth, each with its basis
        assert row["flops"] and row["bandwidth"] and row["flops_basis"] and row["bandwidth_basis"]
    assert holdout.stage(row["test"]) in {"prefill", "decode", "throughput"}
    if row["test"] == "ttft":
        assert row["tokens_per_s"] == pytest.approx(row["batch"] * row["ctx"] * 1000 / row["ttft_ms"])


def test_the_hidden_sets_call() -> None:
    rx = next(r for r in HELD_OUT if r.get("flops") and r["test"] == "pp512")
    assert holdout.argv(rx) == [
        "latency", "qwen3-8b", "--gpu-flops", "97.32T", "--gpu-bandwidth", "640G", "--dtype", "q4_k_m",
        "--ctx", "512", "--gen", "1", "--batch", "1", "--kv-dtype", "fp16", "--engine", "llama.cpp",
        "--backend", "vulkan", "--json"]
    m4 = next(r for r in HELD_OUT if r.get("gpu") == "apple-m4" and r["test"] == "tg128")
    assert holdout.argv(m4) == [
        "latency", "llama-3.1-8b", "--gpu", "apple-m4", "--dtype", "q4_k_m", "--ctx", "1", "--gen", "128",
        "--batch", "1", "--engine", "llama.cpp", "--backend", "metal", "--json"]


def test_every_row_answers_within_its_bound() -> None:
    """Issue 38: a refusal is a miss, and no measurement may be above the bound."""
    results = holdout.run(HELD_OUT)
    assert [holdout.label(r) + ": " + r.why for r in results if r.expected is None] == []
    assert [holdout.label(r) for r in results if r.above_bound] == []
    assert all(r.expected is not None and r.bound is not None and r.expected <= r.bound * (1 + 1e-9)
               for r in results)
