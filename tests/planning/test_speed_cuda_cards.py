"""llama.cpp CUDA's prefill on Turing GPUs and on workstation cards: a term each (speed.p_tu,
speed.p_ws; TURING_NVIDIA's comment)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from llmcalc.cli.latency import row_latency
from llmcalc.planning.hardware import resolve
from llmcalc.planning.speed import (
    CUDA_CARD_TERMS,
    ENGINE_TERMS,
    PREFILL_TERMS,
    TERMS,
    TURING_NVIDIA,
    loo_errors,
    rows_for,
    workstation_share,
)


def test_only_llama_cpp_cuda_fits_them() -> None:
    assert TERMS[PREFILL_TERMS - 3:PREFILL_TERMS - 1] == CUDA_CARD_TERMS == ("p_tu", "p_ws")
    for term in CUDA_CARD_TERMS:
        assert [eb for eb, terms in ENGINE_TERMS.items() if term in terms] == [("llama.cpp", "cuda")]
    assert sorted(TURING_NVIDIA) == ["rtx-2070-super", "rtx-2080", "rtx-2080-super", "rtx-2080-ti",
                                     "t4"]


@pytest.mark.parametrize(("flops", "bandwidth", "share"), [
    ("165.2T", "1008G", 0.0),  # an RTX 4090's figures: GeForce-like
    ("364.25T", "960G", 1.0),  # an RTX 6000 Ada's: 379 FLOP a byte, the full rate
    ("130.5T", "672G", 0.834),  # a Quadro RTX 6000's: 194 FLOP a byte, between the bands
    ("989T", "3.35T", 0.0),  # an H100's: HBM, data-centre
])
def test_a_card_by_its_figures_is_as_much_a_workstation_card_as_it_is_not_geforce(
        flops: str, bandwidth: str, share: float) -> None:
    row = next(r for r in rows_for("llama.cpp", "cuda") if r.gpu == "rtx-4090")
    lat = row_latency(row)
    custom = replace(lat, accelerator=resolve(None, flops=flops, bandwidth=bandwidth))
    assert round(workstation_share(custom, "llama.cpp", "cuda"), 3) == share
    assert workstation_share(custom, "llama.cpp", "vulkan") == 0.0


def test_table_cards_by_their_kind() -> None:
    lats = {r.gpu: row_latency(r) for r in rows_for("llama.cpp", "cuda")}
    assert [workstation_share(lats[k], "llama.cpp", "cuda") for k in
            ("rtx-pro-6000", "t4", "dgx-spark", "rtx-4090", "h100")] == [1.0, 1.0, 1.0, 0.0, 0.0]


def test_the_rows_they_move() -> None:
    """Each row left out: the T4's Llama-2-7B Q4_0 pp512 (#15013), +111% before; the RTX 2080 Ti's
    Llama-2-13B Q4_K_M pp512, +56%; the RTX PRO 6000's Llama-2-7B Q4_0 pp512 (#15013), +20%."""
    pairs = [(r, row_latency(r)) for r in rows_for("llama.cpp", "cuda")]
    got = {(r.gpu, r.model): round(e, 3) for r, e in loo_errors(pairs, "prefill")
           if r.gpu in ("t4", "rtx-2080-ti", "rtx-pro-6000") and r.test == "pp512"}
    assert got == {("t4", "llama-2-7b"): 0.161, ("rtx-2080-ti", "llama-2-13b"): -0.16,
                   ("rtx-pro-6000", "llama-2-7b"): -0.049}


def test_the_fitted_coefficients(cli: Any) -> None:
    """p 1.65, p_tu 1.33 (a Turing GPU's MMQ at about half the share), p_ws 0.55."""
    e = cli("latency", "llama-2-7b", "--gpu", "t4", "--dtype", "q4_0", "--ctx", "512", "--gen", "1",
            "--engine", "llama.cpp", "--json").json()["expected"]
    coef = dict(zip(TERMS[:PREFILL_TERMS], e["basis"]["prefill"]["coefficients"], strict=True))
    assert {t: round(coef[t], 3) for t in ("p", "p_tu", "p_ws")} == {
        "p": 1.647, "p_tu": 1.339, "p_ws": 0.552}
