"""``--gpu-flops``: any positive figure is read, and it is the dense bf16 (FP32-accumulate) peak
that replaces the card's: it sets the compute peak of 16-bit weights an engine multiplies with FP32
accumulation; the card's other peaks (FP16-accumulate, INT8, FP8, FP4) still apply; a card's own
figures restated leave every output as ``--gpu KEY`` alone prints it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llmcalc import load_spec
from llmcalc.formulas.quant import resolve_format
from llmcalc.planning.hardware import lookup, parse_bandwidth, parse_flops
from llmcalc.planning.latency import compute_peak
from llmcalc.web import api

CARDS = {r["key"]: r for r in json.loads(
    (Path(__file__).parents[2] / "llmcalc/planning/hardware.json").read_text())["accelerators"]}


@pytest.mark.parametrize(("text", "value"), [
    ("0.4T", 400 * 10**9), ("400G", 400 * 10**9), ("0.4P", 400 * 10**12), ("4e14", 4 * 10**14),
    ("1", 1)])
def test_positive_figures_are_read(text: str, value: int) -> None:
    assert parse_flops(text) == value


@pytest.mark.parametrize(("flag", "text", "message"), [
    ("--gpu-flops", "0.4", "--gpu-flops 0.4: under 1 FLOP/s (a figure without a unit is in "
     "FLOP/s); give a unit, e.g. 989T for 989 TFLOP/s"),
    ("--gpu-flops", "0", "--gpu-flops 0: must be more than zero"),
    ("--gpu-bandwidth", "0.5", "--gpu-bandwidth 0.5: under 1 byte/s (a figure without a unit is "
     "in bytes/s); give a unit, e.g. 0.4TB/s for 400 GB/s"),
])
def test_a_figure_under_one_unit_is_refused_by_name(cli: Any, flag: str, text: str,
                                                    message: str) -> None:
    """0.4 FLOP/s rounded down to 0 read as no --gpu-flops at all ("--gpu-flops is required")."""
    other = "--gpu-bandwidth" if flag == "--gpu-flops" else "--gpu-flops"
    r = cli("latency", "llama-3.1-8b", flag, text, other, "1T")
    assert (r.code, r.stdout, r.stderr) == (2, "", f"error: {message}\n")


def test_a_sub_tflop_figure_with_a_unit_is_taken(cli: Any) -> None:
    r = cli("latency", "llama-3.1-8b", "--gpu-flops", "0.4P", "--gpu-bandwidth", "0.4TB/s",
            "--json")
    acc = r.json()["inputs"]["accelerator"]
    assert (r.code, acc["peak_flops"], acc["bandwidth"]) == (0, 400 * 10**12, 400 * 10**9)


# (card, engine, backend, weights): each engine on a card and weights it has measurements for
SAME = [("h100", "vllm", "cuda", "bf16"), ("h100", "trtllm", "cuda", "fp8"),
        ("rtx-4090", "llama.cpp", "cuda", "q4_0"), ("rtx-4090", "llama.cpp", "cuda", "fp16"),
        ("rtx-4090", "llama.cpp", "vulkan", "q4_k_m"), ("apple-m3-max", "llama.cpp", "metal", "q4_0"),
        ("mi300x", "sglang", "rocm", "bf16"), ("a100-80gb", "trtllm", "cuda", "fp16"),
        ("a100-80gb", "sglang", "cuda", "bf16")]


@pytest.mark.parametrize(("gpu", "engine", "backend", "dtype"), SAME)
def test_a_cards_own_figures_restated_change_nothing(cli: Any, gpu: str, engine: str,
                                                     backend: str, dtype: str) -> None:
    row = CARDS[gpu]
    assert parse_flops(row["flops"]) == lookup(gpu).peak_flops
    assert parse_bandwidth(row["bandwidth"]) == lookup(gpu).bandwidth
    args = ("latency", "llama-3.1-8b", "--dtype", dtype, "--ctx", "512", "--gen", "128",
            "--batch", "4", "--engine", engine, "--backend", backend, "--json")
    alone = cli(*args, "--gpu", gpu)
    restated = cli(*args, "--gpu", gpu, "--gpu-flops", row["flops"], "--gpu-bandwidth",
                   row["bandwidth"])
    assert alone.code == restated.code == 0
    assert restated.stdout == alone.stdout


@pytest.mark.parametrize(("gpu", "dtype", "engine", "backend", "peak"), [
    # FP32-accumulate engines: the bf16 figure, for fp16 weights too (PyTorch's CUDA_R_32F GEMMs)
    ("rtx-4090", "bf16", "vllm", "cuda", 165_200 * 10**9),
    ("rtx-4090", "fp16", "transformers", "cuda", 165_200 * 10**9),
    ("rtx-4090", "bf16", "llama.cpp", "cuda", 165_200 * 10**9),  # cuBLAS BF16, FP32 accumulate
    ("rtx-4090", "fp16", "llama.cpp", "cuda", 330_300 * 10**9),  # CUBLAS_COMPUTE_16F on NVIDIA
    ("rtx-4090", "bf16", None, None, 330_300 * 10**9),  # no engine: the highest any may reach
    ("rtx-4090", "q4_0", "llama.cpp", "cuda", 660_600 * 10**9),  # MMQ on INT8 tensor cores
    ("h100", "fp8", "vllm", "cuda", 1_979 * 10**12),
    # llama.cpp Vulkan's BF16 on a Radeon (no bf16 in AMD's drivers): the scalar shaders' FP32
    ("strix-halo", "bf16", "llama.cpp", "vulkan", 29_700 * 10**9),  # RDNA 3.5: 59.4T / 2
    ("rx-9070-xt", "bf16", "llama.cpp", "vulkan", 48_750 * 10**9),  # RDNA4: 195T / 4
    ("rx-6900-xt", "bf16", "llama.cpp", "vulkan", 23_040 * 10**9),  # RDNA2: packed FP16 / 2
    ("rx-7900-xtx", "bf16", "llama.cpp", "rocm", 122_800 * 10**9),  # hipBLAS: the WMMA rate
    ("rx-7900-xtx", "fp16", "llama.cpp", "vulkan", 122_800 * 10**9),  # F16 on its coopmat
    ("rtx-4090", "bf16", "llama.cpp", "vulkan", 330_300 * 10**9),  # NVIDIA's coopmat2 has bf16
])
def test_the_peak_of_the_format_the_engine_computes_in(gpu: str, dtype: str, engine: str | None,
                                                       backend: str | None, peak: int) -> None:
    fmt = resolve_format(load_spec("llama-3.1-8b"), dtype)
    assert compute_peak(lookup(gpu), fmt, engine=engine, backend=backend) == peak


def test_llama_cpp_vulkan_bf16_on_a_radeon_at_its_fp32_rate(cli: Any) -> None:
    """A Strix Halo's Gemma-4-31B BF16 pp512 (kyuz0/amd-strix-halo-toolboxes, b9187, held out in
    bench/speed_holdout.json): 135.94 t/s on Vulkan, 428.07 on ROCm. At the WMMA rate the Vulkan
    row was expected 63% too fast; at the FP32 vector rate within 20% of it, the ROCm row's
    expected figure unchanged by it (twice the Vulkan one's peak)."""
    args = ("latency", "gemma-4-31b", "--gpu", "strix-halo", "--dtype", "bf16", "--ctx", "512",
            "--gen", "1", "--engine", "llama.cpp", "--json", "--backend")
    vulkan, rocm = cli(*args, "vulkan").json(), cli(*args, "rocm").json()
    assert [d["inputs"]["accelerator"]["compute_peak_flops"] for d in (vulkan, rocm)] == [
        29_700 * 10**9, 59_400 * 10**9]
    assert vulkan["prefill"]["compute_s"] == vulkan["prefill"]["flops_per_gpu"] / (29_700 * 10**9)
    expected = vulkan["expected"]["prefill_tokens_per_s"]
    assert abs(expected / 135.94 - 1) < 0.2
    assert expected <= 512 / vulkan["prefill"]["seconds"]


def test_gpu_flops_sets_the_bf16_prefill_of_fp32_accumulate_engines(cli: Any) -> None:
    """--gpu h100 --gpu-flops 1T: vLLM's bf16 prefill at 1 TFLOP/s (the card's 989T FP16 peak no
    longer overrides it); llama.cpp's F16 on an RTX 4090 keeps its FP16-accumulate 330.3T, which
    the bf16 figure does not restate; its Q4_0 the card's INT8 peak."""
    args = ("latency", "llama-3.1-8b", "--ctx", "512", "--gen", "1", "--json")
    vllm = cli(*args, "--gpu", "h100", "--gpu-flops", "1T", "--dtype", "bf16", "--engine", "vllm")
    d = vllm.json()
    assert d["inputs"]["accelerator"]["compute_peak_flops"] == 10**12
    assert d["prefill"]["compute_s"] == d["prefill"]["flops_per_gpu"] / 10**12
    assert d["expected"]["prefill_tokens_per_s"] <= 512 / d["prefill"]["seconds"]
    for dtype, peak in (("fp16", 330_300 * 10**9), ("q4_0", 660_600 * 10**9),
                        ("bf16", 100 * 10**12)):
        r = cli(*args, "--gpu", "rtx-4090", "--gpu-flops", "100T", "--dtype", dtype, "--engine",
                "llama.cpp")
        assert (r.code, r.json()["inputs"]["accelerator"]["compute_peak_flops"]) == (0, peak)


def test_the_page_bound_follows_the_engine_as_the_cli(cli: Any) -> None:
    """The speed panel's bound is `latency --engine vllm`'s: an RTX 4090's bf16 at 165.2T."""
    got = api.calculate({"model": {"name": "llama-3.1-8b"}, "ctx": "1k", "gen": "128",
                         "gpu": "rtx-4090", "dtype": "bf16", "engine": "vllm", "backend": "cuda"})
    run = cli(*got["commands"]["latency"].split()[1:])
    assert run.code == 0 and run.json() == got["latency"]
    assert got["latency"]["inputs"]["accelerator"]["compute_peak_flops"] == 165_200 * 10**9
