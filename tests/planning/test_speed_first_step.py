"""A prefill is expected to take at least a decode step without its cache (speed.first_step_floor):
its first token is never expected sooner than the next, where the engine's decode steps were
measured."""

from __future__ import annotations

from typing import Any

import pytest

from llmcalc.planning.speed import first_step_floor


def _expected(cli: Any, *args: str) -> tuple[dict[str, Any], dict[str, Any]]:
    out = cli("latency", *args, "--json").json()
    return out["expected"], out


@pytest.mark.parametrize(("args", "prefill", "bound", "decode", "throughput"), [
    # eager PyTorch: each layer's launches, in the 3-token prompts as in the next token
    (("gemma-3-27b", "--gpu", "v100-pcie-32gb", "--dtype", "awq", "--ctx", "3", "--gen", "2",
      "--batch", "4", "--engine", "transformers", "--backend", "cuda"), 218.3, 669.7, 72.7, 72.7),
    # transformers on ROCm, its CUDA rows standing in: was at the bound, 120,844.8 (64× the step)
    (("umt5-small", "--gpu", "mi300x", "--dtype", "mxfp4", "--ctx", "1", "--gen", "2", "--batch",
      "8", "--engine", "transformers", "--backend", "rocm"), 1888.6, 120844.8, 1888.5, 1888.6),
])
def test_a_short_prompt_takes_at_least_a_step(cli: Any, args: tuple[str, ...], prefill: float,
                                              bound: float, decode: float,
                                              throughput: float) -> None:
    e, out = _expected(cli, *args)
    batch, ctx = out["inputs"]["batch"], out["inputs"]["ctx"]
    assert round(batch * ctx / out["prefill"]["seconds"], 1) == bound
    assert [round(e[k], 1) for k in ("prefill_tokens_per_s", "decode_tokens_per_s",
                                     "throughput_tokens_per_s")] == [prefill, decode, throughput]
    # the whole request's output rate within the step's cache reads of the batch's decode rate
    # (before: 1.51x and 1.97x)
    assert e["throughput_tokens_per_s"] <= 1.002 * e["decode_tokens_per_s"]


def test_tensorrt_llm_decode_is_not_measured_so_not_a_floor(cli: Any) -> None:
    """TensorRT-LLM's decode step is fitted on whole requests alone: its prefill is its own."""
    e, _ = _expected(cli, "llama-2-7b", "--gpu", "h100", "--dtype", "fp8", "--ctx", "4", "--gen",
                     "16", "--batch", "1", "--engine", "trtllm", "--backend", "cuda")
    assert e["basis"]["decode"]["rows"] == 0
    assert round(e["prefill_tokens_per_s"], 1) == 767.2
    assert round(e["decode_tokens_per_s"], 1) == 143.6


def test_which_fits_hold_the_floor() -> None:
    assert first_step_floor(3, ())
    assert not first_step_floor(0, ())
    assert first_step_floor(0, ("prefill", "decode"))
    assert not first_step_floor(0, ("prefill",))
