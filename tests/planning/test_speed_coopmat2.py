"""p_cm2: llama.cpp's Vulkan flash attention runs VK_NV_cooperative_matrix2 on an NVIDIA GPU from
Ampere on (ggml-vulkan.cpp's FaCodePath: coopmat2, else coopmat1, else scalar; PR #10206), so on
Vulkan the attention's share of the peak is fitted apart for those cards (p_cm2) and the rest
(p_att). An RTX 3070's Llama-3-8B Q4_K_M pp16384 (PR #12833, coopmat2) ran at 0.71 of its pp512's
rate where one attention share for every card had it at a fifth of that when left out."""

from __future__ import annotations

from typing import Any

import pytest

from llmcalc.cli.latency import row_latency
from llmcalc.planning.hardware import ACCELERATORS, resolve
from llmcalc.planning.speed import (
    AMD_COOPMAT_GPUS,
    ENGINE_TERMS,
    PREFILL_TERMS,
    TERMS,
    _prefill_features,
    coopmat1_share,
    coopmat2_share,
    rows_for,
)


@pytest.mark.parametrize(("key", "backend", "share"), [
    ("rtx-4090", "vulkan", 1.0), ("rtx-3070", "vulkan", 1.0), ("rtx-a6000", "vulkan", 1.0),
    ("rtx-2080-ti", "vulkan", 0.0), ("t4", "vulkan", 0.0),  # Turing: scalar (PR #19290)
    ("rx-7900-xtx", "vulkan", 0.0), ("rx-9070-xt", "vulkan", 0.0), ("strix-halo", "vulkan", 0.0),
    ("arc-a770-16gb", "vulkan", 0.0), ("rtx-4090", "cuda", 0.0), ("apple-m2-ultra", "metal", 0.0),
])
def test_which_cards_run_coopmat2(key: str, backend: str, share: float) -> None:
    assert coopmat2_share(ACCELERATORS[key], backend) == share


@pytest.mark.parametrize(("key", "backend", "share"), [
    ("rx-7900-xtx", "vulkan", 1.0), ("strix-halo", "vulkan", 1.0), ("rx-9070-xt", "vulkan", 1.0),
    ("r9700", "vulkan", 1.0), ("radeon-pro-w7900", "vulkan", 1.0),
    ("rx-6900-xt", "vulkan", 0.0),  # RDNA2: no matrix cores, the scalar path
    ("mi300x", "vulkan", 0.0), ("arc-a770-16gb", "vulkan", 0.0), ("rtx-4090", "vulkan", 0.0),
    ("rtx-2080-ti", "vulkan", 0.0), ("rx-7900-xtx", "rocm", 0.0),
])
def test_which_cards_run_coopmat1(key: str, backend: str, share: float) -> None:
    assert coopmat1_share(ACCELERATORS[key], backend) == share


def test_the_coopmat1_cards_are_amd_cards_of_the_table_and_no_card_runs_both_paths() -> None:
    assert {ACCELERATORS[k].maker for k in AMD_COOPMAT_GPUS} == {"amd"}
    for acc in ACCELERATORS.values():
        cm1, cm2 = coopmat1_share(acc, "vulkan"), coopmat2_share(acc, "vulkan")
        assert cm1 * cm2 == 0 and cm1 + cm2 <= 1, acc.key


def test_a_card_by_its_figures_takes_a_third_of_each_path() -> None:
    acc = resolve(None, flops="97.32T", bandwidth="640G")
    assert coopmat2_share(acc, "vulkan") == coopmat1_share(acc, "vulkan") == 1 / 3
    assert coopmat2_share(acc, "cuda") == coopmat1_share(acc, "rocm") == 0.0


def test_only_vulkan_fits_them() -> None:
    assert TERMS[PREFILL_TERMS - 6:PREFILL_TERMS - 3] == ("p_cm2", "p_cm1", "p_mm1")
    for term in ("p_cm2", "p_cm1", "p_mm1"):
        assert [eb for eb, terms in ENGINE_TERMS.items() if term in terms] == [("llama.cpp", "vulkan")]


def test_the_attention_moves_to_its_own_feature() -> None:
    """The RTX 3070's pp16384 row: its attention feature is p_cm2's, p_att's is 0; the Strix
    Halo's pp512 rows the other way round."""
    att, cm2, cm1, mm1 = (TERMS.index(t) for t in ("p_att", "p_cm2", "p_cm1", "p_mm1"))
    rows = {(r.gpu, r.ctx): r for r in rows_for("llama.cpp", "vulkan") if r.stage == "prefill"}
    nvidia = _prefill_features(row_latency(rows["rtx-3070", 16384]), "llama.cpp", "vulkan")
    assert nvidia[att] == nvidia[cm1] == nvidia[mm1] == 0.0 and nvidia[cm2] > 0.0
    amd = _prefill_features(row_latency(rows["strix-halo", 65536]), "llama.cpp", "vulkan")
    assert amd[att] == amd[cm2] == 0.0 and amd[cm1] > 0.0
    assert amd[mm1] == amd[TERMS.index("p")]  # the weights' FLOPs again
    turing = _prefill_features(row_latency(rows["rtx-2080-ti", 4096]), "llama.cpp", "vulkan")
    assert turing[att] > 0.0 and turing[cm1] == turing[cm2] == turing[mm1] == 0.0


def test_the_fitted_shares(cli: Any) -> None:
    """The coopmat2 attention at 1/4.51 of the FP16 peak, the scalar path's at 1/55.2 (an RTX 2080
    Ti's), AMD's coopmat1 at 1/7.43 with its GEMMs at 0.39 times their FLOPs at the peak more
    (speed.AMD_COOPMAT_GPUS): the RX 9070 XT's Llama-3.1-8B Q4_K_M pp2048, 3,446 tokens/s on the
    scalar path's share before, is 4,864 (a held-out row of the card given by its figures measured
    4,644); a Strix Halo's gpt-oss-120b pp65536 (b9049) 355 where it ran 294, 106 before."""
    e = cli("latency", "llama-3.1-8b", "--gpu", "rx-9070-xt", "--dtype", "q4_k_m", "--ctx", "2048",
            "--gen", "1", "--engine", "llama.cpp", "--backend", "vulkan", "--json").json()["expected"]
    coef = dict(zip(TERMS[:PREFILL_TERMS], e["basis"]["prefill"]["coefficients"], strict=True))
    assert {t: round(coef[t], 2) for t in ("p_att", "p_cm2", "p_cm1", "p_mm1")} == {
        "p_att": 55.18, "p_cm2": 4.51, "p_cm1": 7.43, "p_mm1": 0.39}
    assert round(e["prefill_tokens_per_s"]) == 4_864
    long = cli("latency", "gpt-oss-120b", "--gpu", "strix-halo", "--dtype", "mxfp4_moe", "--ctx",
               "65536", "--gen", "1", "--engine", "llama.cpp", "--backend", "vulkan", "--json")
    assert round(long.json()["expected"]["prefill_tokens_per_s"]) == 355
