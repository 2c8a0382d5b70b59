"""Cards with few FLOP per byte of bandwidth (speed.FEW_FLOP_PER_BYTE: no tensor or matrix cores,
the figure their vector ALUs'): a decode step's FLOPs and a prompt's weight FLOPs again at that
figure (f_vec, p_vec), fitted on a Tesla P40's and an Instinct MI50's llama.cpp rows."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from helpers.bench import REPO, holdout

from llmcalc.cli.latency import fitted, row_latency
from llmcalc.planning.hardware import ACCELERATORS, resolve
from llmcalc.planning.speed import (
    FEW_FLOP_PER_BYTE,
    PREFILL_TERMS,
    TERMS,
    _decode_features,
    _prefill_features,
    few_flops_per_byte,
    fit_card,
    rows_for,
)

F_VEC = TERMS[PREFILL_TERMS:].index("f_vec")
P_VEC = TERMS[:PREFILL_TERMS].index("p_vec")
P40 = resolve(None, flops="11.76T", bandwidth="346G")
MI50 = resolve(None, flops="26.5T", bandwidth="1024G")


@pytest.mark.parametrize(("card", "backend", "few"), [
    (P40, "cuda", True), (P40, "vulkan", True), (MI50, "rocm", True),
    (P40, "metal", False), (P40, "cpu", False),  # an Apple GPU's or a CPU's one figure: not this
    (ACCELERATORS["rtx-3060"], "cuda", False), (ACCELERATORS["mi100"], "rocm", False),
    (ACCELERATORS["rx-6800"], "vulkan", False)])
def test_which_cards_have_few_flops_per_byte(card: object, backend: str, few: bool) -> None:
    assert few_flops_per_byte(card, backend) is few  # type: ignore[arg-type]


def test_no_table_gpu_has_so_few() -> None:
    """Every card of hardware.json but the Apple GPUs (Metal: never) has over 60 FLOP a byte."""
    ratios = {k: a.peak_flops / a.bandwidth for k, a in ACCELERATORS.items()
              if not k.startswith("apple") and a.kind != "cpu"}
    assert min(ratios.values()) > 60 > FEW_FLOP_PER_BYTE
    assert round(min(ratios.values()), 1) == 63.1  # the RX 6800's packed FP16


def test_the_features_are_the_flops_at_the_cards_figure() -> None:
    row = next(r for r in rows_for("llama.cpp", "cuda") if r.card == "NVIDIA Tesla P40"
               and r.test == "tg128" and r.dtype == "q4_0")
    lat = row_latency(row)
    assert lat.accelerator.peak_flops == 11_760 * 10**9
    assert _decode_features(lat, "llama.cpp", "cuda")[F_VEC] == lat.decode.flops / 11.76e12
    pre = replace(lat, ctx=512, gen=1)
    dense = pre.prefill.flops - pre.prefill_attention_flops
    assert _prefill_features(pre, "llama.cpp", "cuda")[P_VEC] == dense / 11.76e12
    gpu = replace(lat, accelerator=ACCELERATORS["rtx-4090"])
    assert _decode_features(gpu, "llama.cpp", "cuda")[F_VEC] == 0.0


def test_the_fitted_coefficients() -> None:
    """f_vec on CUDA and ROCm, where its rows are (Vulkan has none); p_vec 0 on both: the P40's
    prompts sit on the shared terms, the MI50's run faster than ROCm's expect."""
    got = {b: (round(fitted("llama.cpp", b).prefill.coefficients[P_VEC], 3),
               round(fitted("llama.cpp", b).decode.coefficients[F_VEC], 2))
           for b in ("cuda", "rocm", "vulkan")}
    assert got == {"cuda": (0.0, 3.01), "rocm": (0.0, 4.55), "vulkan": (0.0, 0.0)}


def test_the_scoreboard_copies_by_their_figures() -> None:
    """#15013's and #15021's Llama-2-7B Q4_0 tg128 on a P40, M40, MI50 and MI60, called by their
    figures (none is fitted): +28.5%, +56.7%, +41.0% and +52.5% before f_vec."""
    rows = json.loads((REPO / "bench" / "scoreboard_copies.json").read_text())["rows"]
    cards = ("NVIDIA Tesla P40", "NVIDIA Tesla M40 24GB", "AMD Instinct MI50 32GB",
             "AMD Instinct MI60")
    picked = [r for r in rows if r["card"] in cards and r["test"] == "tg128"]
    errors = {r.row["card"]: round(r.error, 3) for r in holdout.run(picked)}
    assert errors == {"NVIDIA Tesla P40": 0.037, "NVIDIA Tesla M40 24GB": 0.162,
                      "AMD Instinct MI50 32GB": 0.074, "AMD Instinct MI60": 0.191}


def test_a_card_given_by_such_figures_says_how_it_is_read() -> None:
    lat = row_latency(next(r for r in rows_for("llama.cpp", "rocm") if r.card.endswith("MI50 32GB")))
    why = fit_card(lat, "rocm").peaks_source
    assert why.endswith("; under 50 FLOP of it per byte of bandwidth, read as a card without tensor "
                        "or matrix cores, the figure its vector ALUs' (f_vec, p_vec: a card with "
                        "them is given by its dense bf16 tensor figure)")
    gpu = replace(lat, accelerator=resolve(None, flops="165.2T", bandwidth="1008G"))
    assert "vector ALUs" not in fit_card(gpu, "cuda").peaks_source
