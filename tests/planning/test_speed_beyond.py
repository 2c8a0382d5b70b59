"""An expected figure at a batch past every fitted row's says so (speed.beyond_rows)."""

from __future__ import annotations

from typing import Any

import pytest

from llmcalc.planning.speed import Fit, Model, beyond_rows

ARGS = ("latency", "llama-3.1-8b", "--gpu", "h100", "--dtype", "bf16", "--ctx", "1k", "--gen",
        "128", "--engine", "vllm", "--backend", "cuda", "--json")


@pytest.mark.parametrize(("batch", "note"), [
    (1, None), (64, None),
    (65, "batch 65 is past the largest batch of the prefill and decode rows fitted (prefill 64, "
         "decode 64): the figure extrapolates their terms, and its error there is not measured"),
])
def test_vllm_rows_reach_batch_64(cli: Any, batch: int, note: str | None) -> None:
    e = cli(*ARGS, "--batch", str(batch)).json()["expected"]
    assert e["basis"].get("beyond") == note


def test_a_stage_alone_is_named() -> None:
    fit = Fit("prefill", (1.0,), 3, None, max_batch=1_024)
    model = Model(fit, Fit("decode", (1.0,), 3, None, max_batch=8), 0, None)
    assert beyond_rows(model, 8) == ""
    assert beyond_rows(model, 2_048) == (
        "batch 2,048 is past the largest batch of the prefill and decode rows fitted (prefill "
        "1,024, decode 8): the figure extrapolates their terms, and its error there is not measured")
    assert beyond_rows(model, 9).startswith("batch 9 is past the largest batch of the decode rows "
                                            "fitted (decode 8):")
