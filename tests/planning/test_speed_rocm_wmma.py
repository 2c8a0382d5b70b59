"""p_pre on ROCm: llama.cpp's HIP MMQ ran RDNA3's quantised GEMMs on dp4a tiles until PR #17576
put them on the int8 WMMA (speed.ROCM_WMMA_MMQ). Rows of builds dated before it say so
(measured_speed.json "predates": [17576]) and take the weights' FLOPs again; a run a user asks
about is a current build and does not."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from llmcalc.cli import build_app
from llmcalc.cli.latency import row_latency
from llmcalc.planning.speed import (
    AMD_TILE_PRS,
    ROCM_WMMA_MMQ,
    TERMS,
    _prefill_features,
    rows_for,
)

P, P_PRE = TERMS.index("p"), TERMS.index("p_pre")


def _flagged() -> list:
    return [r for r in rows_for("llama.cpp", "rocm") if ROCM_WMMA_MMQ in r.predates]


def test_the_rows_before_it_are_rdna3_rows_of_2024_and_2025() -> None:
    """gpt-oss-120b's are not: PR #17576 slowed its MXFP4 prefill on the Radeon 8060S (llama.cpp
    issue #17917; kyuz0's toolbox, ROCm 6.4.4: pp512 762 t/s on b7034, 654 on b7423)."""
    rows = _flagged()
    assert len(rows) == 29 and sum(r.stage == "prefill" for r in rows) == 13
    assert {r.gpu for r in rows} == {"strix-halo", "rx-7900-xt"}  # RDNA 3.5 and RDNA3
    assert "gpt-oss-120b" not in {r.model for r in rows}
    assert AMD_TILE_PRS == {"vulkan": 18749, "rocm": 17576}
    # no other engine x backend's row names the PR
    for engine, backend in (("llama.cpp", "vulkan"), ("llama.cpp", "cuda"), ("llama.cpp", "metal")):
        assert not [r for r in rows_for(engine, backend) if ROCM_WMMA_MMQ in r.predates]


def test_a_quantised_row_before_it_takes_its_weight_flops_again_a_16_bit_one_does_not() -> None:
    rows = {(r.dtype, r.test): r for r in _flagged() if r.stage == "prefill"}
    q4 = rows["q4_0", "pp512"]
    f = _prefill_features(row_latency(q4), "llama.cpp", "rocm", predates=q4.predates)
    assert f[P_PRE] == f[P] > 0
    assert _prefill_features(row_latency(q4), "llama.cpp", "rocm")[P_PRE] == 0.0  # a current build
    f16 = rows["fp16", "pp512"]  # hipBLAS, not MMQ
    assert _prefill_features(row_latency(f16), "llama.cpp", "rocm", predates=f16.predates)[P_PRE] == 0.0
    # on Vulkan the name is PR #18749's, for every weight format
    assert _prefill_features(row_latency(q4), "llama.cpp", "vulkan", predates=(17576,))[P_PRE] == 0.0


def test_the_expected_prefill_is_a_current_builds() -> None:
    """The Radeon 8060S's Llama-2-7B Q4_0 pp512: 920 t/s on build 5863 (July 2025, fitted),
    1,545 on b9187 (May 2026, held out: bench/speed_holdout.json); expected 1,106 before the term,
    1,200 with it, 1,253 with an MI50's rows in the ROCm fit (speed.FEW_FLOP_PER_BYTE)."""
    out = CliRunner().invoke(build_app(), [
        "latency", "llama-2-7b", "--gpu", "strix-halo", "--dtype", "q4_0", "--ctx", "512",
        "--gen", "1", "--batch", "1", "--engine", "llama.cpp", "--backend", "rocm", "--json"])
    assert out.exit_code == 0, out.output
    assert round(json.loads(out.stdout)["expected"]["prefill_tokens_per_s"]) == 1253
