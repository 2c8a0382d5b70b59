"""c_clk: on llama.cpp CUDA a decode step's per-layer cost is counted in GPU cycles, the reference
2,000 MHz over the card's published boost clock (hardware.json boost_mhz, speed.CLOCK_MHZ): an
A100 (1,410 MHz) spends more of a small model's step per layer than an H100 (1,980) or an RTX
4090 (2,520). A card whose clock the table lacks is read at the reference, and the expected table
says so in a row of its own."""

from __future__ import annotations

from typing import Any

import pytest

from llmcalc.cli.latency import row_latency
from llmcalc.planning.hardware import ACCELERATORS
from llmcalc.planning.speed import (
    CLOCK_MHZ,
    ENGINE_TERMS,
    LAYER_S,
    PREFILL_TERMS,
    TERMS,
    _decode_features,
    clock_scale,
    rows_for,
)

# NVIDIA cards whose boost clock no readable source gave (the sources tried: NVIDIA's pages,
# TechPowerUp and the databases that copy it, glennklockwood.com, AnandTech)
NO_CLOCK = {"b200", "gb200", "dgx-spark", "h100-nvl", "a10g"}


def test_every_nvidia_card_has_a_sourced_clock_but_the_named_few() -> None:
    nvidia = {k for k, a in ACCELERATORS.items() if a.maker == "nvidia"}
    assert len(nvidia) == 68
    lacking = {k for k in nvidia if not ACCELERATORS[k].boost_mhz}
    assert lacking == NO_CLOCK
    for k in nvidia - NO_CLOCK:
        a = ACCELERATORS[k]
        assert 1_000 <= a.boost_mhz <= 3_000 and a.clock_source.startswith("https://"), k
    assert not any(a.boost_mhz for a in ACCELERATORS.values() if a.maker != "nvidia")


@pytest.mark.parametrize(("key", "mhz"), [("a100-80gb", 1_410), ("h100", 1_980),
                                          ("h100-pcie", 1_755), ("rtx-4090", 2_520),
                                          ("rtx-3090", 1_695), ("t4", 1_590), ("b200", 0)])
def test_the_scale_is_the_reference_over_the_boost_clock(key: str, mhz: int) -> None:
    a = ACCELERATORS[key]
    assert a.boost_mhz == mhz
    assert clock_scale(a) == (CLOCK_MHZ / mhz if mhz else 1.0)


def test_only_llama_cpp_cuda_counts_its_layers_in_cycles() -> None:
    assert TERMS[-3:] == ("c_clk", "a_ultra", "f_vec") and len(TERMS) - PREFILL_TERMS == 17
    cuda = ENGINE_TERMS["llama.cpp", "cuda"]
    assert "c_clk" in cuda and "c" not in cuda
    assert [eb for eb, terms in ENGINE_TERMS.items() if "c_clk" in terms] == [("llama.cpp", "cuda")]


def _decode(cli: Any, *args: str) -> dict[str, Any]:
    r = cli("latency", "llama-2-7b", "--dtype", "q4_0", "--ctx", "1", "--gen", "128",
            "--engine", "llama.cpp", *args, "--json")
    assert r.code == 0
    return r.json()["expected"]


def test_the_fitted_cost_a_layer_and_the_clock_rows(cli: Any) -> None:
    e = _decode(cli, "--gpu", "a100")
    coef = dict(zip(TERMS[PREFILL_TERMS:], e["basis"]["decode"]["coefficients"], strict=True))
    assert coef["c"] == 0 and round(coef["c_clk"], 4) == 0.047  # ms a layer at 2,000 MHz
    assert "clock" not in e["basis"]
    spark = _decode(cli, "--gpu", "dgx-spark")
    assert spark["basis"]["clock"] == (
        "NVIDIA DGX Spark (GB10)'s boost clock is not in the table: a decode step's per-layer "
        "cost (c_clk, counted in GPU cycles) is read at 2,000 MHz")
    custom = _decode(cli, "--gpu-flops", "165.2T", "--gpu-bandwidth", "1008G", "--backend", "cuda")
    assert custom["basis"]["clock"] == (
        "a card given by its figures alone has no boost clock: a decode step's per-layer cost "
        "(c_clk, counted in GPU cycles) is read at 2,000 MHz")
    vulkan = _decode(cli, "--gpu", "dgx-spark", "--backend", "vulkan")  # c, not c_clk
    assert "clock" not in vulkan["basis"]


def test_a_measured_rows_layers_in_cycles() -> None:
    """The #15013 scoreboard's Llama-2-7B Q4_0 tg128 rows: 32 layers, each 1 ms × 2,000 / the
    card's clock in the c_clk feature (the decode's third from last), 1 ms in the per-layer
    feature c."""
    rows = {r.gpu: r for r in rows_for("llama.cpp", "cuda")
            if r.stage == "decode" and r.model == "llama-2-7b" and r.dtype == "q4_0"}
    for gpu, mhz in (("a100-80gb", 1_410), ("h100", 1_980), ("rtx-4090", 2_520)):
        features = _decode_features(row_latency(rows[gpu]), "llama.cpp", "cuda")
        assert features[1] == 32 * LAYER_S  # c
        assert features[-3] == pytest.approx(32 * LAYER_S * 2_000 / mhz, rel=1e-12)  # c_clk
        assert features[-2:] == (0, 0)  # a_ultra, f_vec: not an Apple Ultra, tensor cores
