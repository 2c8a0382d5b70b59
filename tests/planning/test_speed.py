"""Expected speed (`latency --engine`): every measured row's leave-one-out error, held to thresholds;
the bound above every measurement and above every expected figure; the JSON keys and refusals."""

from __future__ import annotations

import json
import statistics
from typing import Any

import pytest

from llmcalc.cli.latency import row_latency
from llmcalc.planning.speed import MeasuredRow, loo_errors, measured_rows, rows_for

ENGINES = sorted({(r.engine, r.backend) for r in measured_rows()})


def _pairs(engine: str, backend: str) -> list[tuple[MeasuredRow, Any]]:
    return [(r, row_latency(r)) for r in rows_for(engine, backend)]


def test_rows_carry_their_source_and_figures() -> None:
    rows = measured_rows()
    assert len(rows) == 14
    assert {r.hw_class for r in rows} == {"apple", "consumer"}
    for r in rows:
        assert r.source.startswith("https://")
        assert r.stage in ("prefill", "decode")
        # llama-bench: pp512 is a 512-token prompt, one token out; tg128 128 tokens from 1
        assert (r.ctx, r.gen, r.batch) == ((512, 1, 1) if r.test == "pp512" else (1, 128, 1))
        assert r.tokens_per_s > 0 and r.flops_basis
        # every figure was read in a source someone can open: llama.cpp's scoreboards (#4167,
        # #15013), Llama-2 7B Q4_0, llama-bench -ngl 99, as quoted in a public survey
        assert r.source.rsplit("/", 1)[1] in ("4167", "15013")
        assert r.quoted_in.startswith("Enigmus-org/homepage/docs/local-llm-inference-engines.md")
        assert r.dtype == "q4_0"


# (engine, backend): leave-one-out median |error| of decode and prefill, and whether the targets
# (decode ≤ 8%, prefill ≤ 12%, each hardware class ≤ 15%) hold. Only rows read in a public source
# remain: 10 Apple (5 chips × pp512/tg128) and 4 CUDA (RTX 4090, 3090). Metal's decode misses 8%
# (the M4 Pro's tg128 is 31% off with it left out); CUDA misses both: pinned here as they are.
LOO = {("llama.cpp", "metal"): (0.088, 0.071, False), ("llama.cpp", "cuda"): (0.104, 0.206, False)}

CLASS_MEDIAN = {"apple": 0.079, "consumer": 0.147}


@pytest.mark.parametrize(("engine", "backend"), ENGINES)
def test_leave_one_out_error_of_every_row(engine: str, backend: str) -> None:
    pairs = _pairs(engine, backend)
    decode, prefill = loo_errors("decode", pairs), loo_errors("prefill", pairs)
    assert len(decode) + len(prefill) == len(pairs)
    med_d = statistics.median(abs(e) for _, e in decode)
    med_p = statistics.median(abs(e) for _, e in prefill)
    want_d, want_p, meets = LOO[engine, backend]
    assert (round(med_d, 3), round(med_p, 3)) == (want_d, want_p)
    # each hardware class's median over both stages (docs/latency.md's table)
    for cls in {r.hw_class for r, _ in pairs}:
        errs = [abs(e) for r, e in decode + prefill if r.hw_class == cls]
        assert round(statistics.median(errs), 3) == CLASS_MEDIAN[cls], cls
    if not meets:
        assert med_d > 0.08 or med_p > 0.12
        return
    assert med_d <= 0.08 and med_p <= 0.12
    for cls in {r.hw_class for r, _ in pairs}:
        errs = [abs(e) for r, e in decode + prefill if r.hw_class == cls]
        assert statistics.median(errs) <= 0.15, cls


@pytest.mark.parametrize(("engine", "backend"), ENGINES)
def test_no_measurement_beats_the_bound(engine: str, backend: str) -> None:
    for row, lat in _pairs(engine, backend):
        stage = lat.prefill if row.stage == "prefill" else lat.decode
        tokens = row.batch * (row.ctx if row.stage == "prefill" else 1)
        assert row.tokens_per_s <= tokens / stage.seconds, (row.card, row.dtype, row.test)


EXPECTED_KEYS = {"engine", "backend", "prefill_tokens_per_s", "decode_tokens_per_s",
                 "throughput_tokens_per_s", "basis", "error"}


@pytest.mark.parametrize("args", [
    ("--gpu", "apple-m2-ultra", "--dtype", "q4_0", "--ctx", "1", "--gen", "128", "--batch", "1"),
    ("--gpu", "apple-m3-max", "--dtype", "fp16", "--ctx", "4k", "--gen", "512", "--batch", "8"),
    ("--gpu", "apple-m4-pro", "--dtype", "q8_0", "--ctx", "512", "--gen", "1"),
])
def test_expected_json_keys_and_never_above_the_bound(cli: Any, args: tuple[str, ...]) -> None:
    r = cli("latency", "llama-2-7b", *args, "--engine", "llama.cpp", "--json")
    assert r.code == 0, r.stderr
    out = json.loads(r.stdout)
    e = out["expected"]
    assert set(e) == EXPECTED_KEYS
    assert (e["engine"], e["backend"]) == ("llama.cpp", "metal")
    assert set(e["basis"]) == {"decode", "prefill", "rows"}
    assert e["decode_tokens_per_s"] <= out["tokens_per_s"]
    assert e["prefill_tokens_per_s"] <= out["inputs"]["batch"] * out["inputs"]["ctx"] / out[
        "prefill"]["seconds"]
    assert e["throughput_tokens_per_s"] <= out["throughput_per_gpu"]


def test_a_tg128_row_reproduced(cli: Any) -> None:
    """M2 Ultra 76-core, llama-2-7b Q4_0 tg128: 94.3 tokens/s measured (llama.cpp #4167)."""
    r = cli("latency", "llama-2-7b", "--gpu", "apple-m2-ultra", "--dtype", "q4_0", "--ctx", "1",
            "--gen", "128", "--batch", "1", "--engine", "llama.cpp", "--json")
    got = json.loads(r.stdout)["expected"]["decode_tokens_per_s"]
    assert abs(got / 94.3 - 1) <= 0.08
    assert round(got, 1) == 91.5


def test_without_engine_no_expected(cli: Any) -> None:
    r = cli("latency", "llama-2-7b", "--gpu", "apple-m2-ultra", "--json")
    assert r.code == 0 and "expected" not in json.loads(r.stdout)


@pytest.mark.parametrize(("args", "message"), [
    (("--gpu", "h100", "--backend", "metal"),
     "error: --backend: names an engine's backend; give --engine too\n"),
    (("--gpu", "apple-m2-ultra", "--engine", "llama.cpp", "--backend", "opencl"),
     "error: --backend 'opencl': not a backend llmcalc models (cuda, metal, rocm, vulkan, cpu)\n"),
    (("--gpu", "h100", "--engine", "vllm"),
     "error: --engine vllm: no published prefill measurements on the cuda backend to fit an "
     "expected speed on\n"),
])
def test_refusals(cli: Any, args: tuple[str, ...], message: str) -> None:
    r = cli("latency", "llama-2-7b", *args)
    assert (r.code, r.stderr) == (2, message)
