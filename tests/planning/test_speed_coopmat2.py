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
    ENGINE_TERMS,
    PREFILL_TERMS,
    TERMS,
    _prefill_features,
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


def test_a_card_by_its_figures_takes_half() -> None:
    acc = resolve(None, flops="97.32T", bandwidth="640G")
    assert coopmat2_share(acc, "vulkan") == 0.5 and coopmat2_share(acc, "cuda") == 0.0


def test_only_vulkan_fits_it() -> None:
    assert TERMS[PREFILL_TERMS - 1] == "p_cm2"
    assert [eb for eb, terms in ENGINE_TERMS.items() if "p_cm2" in terms] == [("llama.cpp", "vulkan")]


def test_the_attention_moves_to_its_own_feature() -> None:
    """The RTX 3070's pp16384 row: its attention feature is p_cm2's, p_att's is 0; the Strix
    Halo's pp512 rows the other way round."""
    att, cm2 = TERMS.index("p_att"), TERMS.index("p_cm2")
    rows = {(r.gpu, r.ctx): r for r in rows_for("llama.cpp", "vulkan") if r.stage == "prefill"}
    nvidia = _prefill_features(row_latency(rows["rtx-3070", 16384]), "llama.cpp", "vulkan")
    assert nvidia[att] == 0.0 and nvidia[cm2] > 0.0
    amd = _prefill_features(row_latency(rows["strix-halo", 512]), "llama.cpp", "vulkan")
    assert amd[att] > 0.0 and amd[cm2] == 0.0


def test_the_fitted_shares(cli: Any) -> None:
    """The coopmat2 attention at 1/4.74 of the FP16 peak; the rest at 1/49.5, a figure the RDNA
    cards' pp512 rows set (their attention a few % of the FLOPs), which a long prompt on them
    overstates: the RX 9070 XT's Llama-3.1-8B Q4_K_M pp2048 is expected at 3,446 tokens/s."""
    e = cli("latency", "llama-3.1-8b", "--gpu", "rx-9070-xt", "--dtype", "q4_k_m", "--ctx", "2048",
            "--gen", "1", "--engine", "llama.cpp", "--backend", "vulkan", "--json").json()["expected"]
    coef = dict(zip(TERMS[:PREFILL_TERMS], e["basis"]["prefill"]["coefficients"], strict=True))
    assert (round(coef["p_att"], 1), round(coef["p_cm2"], 2)) == (49.5, 4.74)
    assert round(e["prefill_tokens_per_s"]) == 3_446
