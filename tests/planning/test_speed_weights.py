"""Expected figures for weights the fitted rows have not run say so (speed.weights_caution):
transformers' bitsandbytes weights (speed.BNB_STEP), a mixture of experts' BF16 weights in llama.cpp
Vulkan's scalar shaders on a Radeon (speed.SCALAR_BF16_MOE)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llmcalc.planning.speed import BNB_STEP, SCALAR_BF16_MOE

ARGS = ("latency", "llama-2-7b", "--gpu", "a100-80gb", "--ctx", "512", "--gen", "128",
        "--engine")
INT8 = ("transformers' fitted rows are 16-bit, these weights bitsandbytes' LLM.int8() "
        "(load_in_8bit): in bitsandbytes' own benchmark (v0.45; T4, RTX 4090, H100) their decode "
        "step took 1.7-4.3x the 16-bit step of the same model, card and batch, where these figures "
        "read their fewer bytes at the 16-bit rows' costs; likely too fast")
FOUR_BIT = INT8.replace("LLM.int8() (load_in_8bit)", "4-bit (load_in_4bit)").replace(
    "1.7-4.3x", "0.7-2.5x")

# bitsandbytes' benchmarking/README.md at 81e6345, the v0.45.0.dev "Mean Latency (s)" column: a
# decode step of the batch, (card, model, batch): 16-bit, NF4, NF4+DQ, INT8+Decomp
README = {
    ("T4", "Qwen 2.5 3B", 1): (0.0390, 0.0608, 0.0736, 0.1672),
    ("T4", "Qwen 2.5 3B", 8): (0.0422, 0.0960, 0.1042, 0.1812),
    ("T4", "Qwen 2.5 3B", 32): (0.0601, 0.1150, 0.1215, 0.1912),
    ("RTX 4090", "Llama 3.1 8B", 1): (0.0211, 0.0148, 0.0175, 0.0449),
    ("RTX 4090", "Llama 3.1 8B", 8): (0.0239, 0.0425, 0.0443, 0.0478),
    ("RTX 4090", "Llama 3.1 8B", 32): (0.0304, 0.0461, 0.0471, 0.0512),
    ("H100", "Llama 3.1 8B", 1): (0.0244, 0.0331, 0.0411, 0.0817),
    ("H100", "Llama 3.1 8B", 8): (0.0255, 0.0476, 0.0566, 0.0853),
    ("H100", "Llama 3.1 8B", 32): (0.0261, 0.0486, 0.0577, 0.0864),
    ("H100", "Qwen 2.5 32B", 1): (0.0508, 0.0707, 0.0860, 0.1820),
    ("H100", "Qwen 2.5 32B", 8): (0.0525, 0.1154, 0.1209, 0.1958),
    ("H100", "Qwen 2.5 32B", 32): (0.0547, 0.1246, 0.1298, 0.2027),
}


def _span(ratios: list[float]) -> str:
    return f"{min(ratios):.1f}-{max(ratios):.1f}x"


def test_the_ratios_are_the_readmes() -> None:
    """Each format's step over the 16-bit step of the same model, card and batch."""
    four = [q / b for b, *fours, _ in README.values() for q in fours]
    int8 = [i / b for b, _, _, i in README.values()]
    assert (_span(int8), _span(four)) == ("1.7-4.3x", "0.7-2.5x")
    assert (BNB_STEP["int8"][1], BNB_STEP["4-bit"][1]) == (_span(int8), _span(four))


@pytest.mark.parametrize(("dtype", "words"), [
    ("int8", INT8), ("nf4", FOUR_BIT), ("nf4-nodq", FOUR_BIT), ("fp4", FOUR_BIT),
    ("fp16", None), ("bf16", None)])
def test_transformers_says_its_rows_are_16_bit(cli: Any, dtype: str, words: str | None) -> None:
    run = cli(*ARGS, "transformers", "--dtype", dtype, "--json")
    assert run.code == 0, run.stderr
    assert run.json()["expected"]["basis"].get("weights") == words


def test_other_engines_and_the_table(cli: Any) -> None:
    """vLLM's int8 is not bitsandbytes' (no row); the table prints the row as "these weights"."""
    assert "weights" not in cli(*ARGS, "vllm", "--dtype", "int8", "--json").json()[
        "expected"]["basis"]
    table = cli(*ARGS, "transformers", "--dtype", "nf4")
    assert table.code == 0
    assert "these weights" in table.stdout
    assert "0.7-2.5x the 16-bit" in " ".join(table.stdout.replace("│", " ").split())


HOLDOUT = Path(__file__).parents[2] / "bench/speed_holdout.json"
SCALAR_MOE = ("llama.cpp's fitted Vulkan rows hold no BF16 weights; on a Radeon (no bf16 in "
              "AMD's Vulkan drivers) they run the scalar FP32 shaders, whose peak these figures "
              "take, and a mixture of experts' slower still: a Strix Halo's Qwen3.6-35B-A3B BF16 "
              "(b9193) ran pp512 at 0.50 and tg128 at 0.33 of them; likely too fast")


def test_the_scalar_bf16_ratios_are_the_held_out_rows(cli: Any) -> None:
    """SCALAR_BF16_MOE is the held-out Qwen3.6-35B-A3B BF16 rows' measured over expected, as
    `latency --engine llama.cpp --backend vulkan` figures them now."""
    rows = [r for r in json.loads(HOLDOUT.read_text())["rows"]
            if (r["model"], r["dtype"], r["backend"], r.get("gpu")) == (
                "qwen3.6-35b-a3b", "bf16", "vulkan", "strix-halo")]
    got = {}
    for r in rows:
        out = cli("latency", r["model"], "--gpu", r["gpu"], "--dtype", "bf16", "--ctx",
                  str(r["ctx"]), "--gen", str(r["gen"]), "--batch", "1", "--engine", "llama.cpp",
                  "--backend", "vulkan", "--json").json()
        which = "prefill_tokens_per_s" if r["test"] == "pp512" else "decode_tokens_per_s"
        got[r["test"]] = f"{r['tokens_per_s'] / out['expected'][which]:.2f}"
        assert out["expected"]["basis"]["weights"] == SCALAR_MOE
    assert (got["pp512"], got["tg128"]) == SCALAR_BF16_MOE == ("0.50", "0.33")


@pytest.mark.parametrize(("model", "gpu", "backend", "words"), [
    ("qwen3.6-35b-a3b", "rx-7900-xtx", "vulkan", SCALAR_MOE),
    ("qwen3.6-35b-a3b", "strix-halo", "rocm", None),  # hipBLAS: its WMMA
    ("qwen3.6-35b-a3b", "rtx-4090", "vulkan", None),  # NVIDIA's coopmat2 has bf16
    ("gemma-4-31b", "strix-halo", "vulkan", None),  # dense: within 18% of its held-out row
])
def test_a_radeons_bf16_mixture_on_vulkan_says_so(cli: Any, model: str, gpu: str, backend: str,
                                                   words: str | None) -> None:
    run = cli("latency", model, "--gpu", gpu, "--dtype", "bf16", "--ctx", "512", "--gen", "1",
              "--engine", "llama.cpp", "--backend", backend, "--json")
    assert run.code == 0, run.stderr
    assert run.json()["expected"]["basis"].get("weights") == words
