"""The attention's coefficient p_att is at least 1 (speed.FLOORS): no engine runs a prefill's
attention faster than the card's FP16 peak. An engine × backend that fits p_att fits it above
that; one that does not (SGLang, vLLM on ROCm, transformers) holds it there (speed.HELD), so a
long prompt's attention is never charged only through the roofline bound."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from llmcalc.cli import build_app
from llmcalc.planning.speed import ENGINE_TERMS, FLOORS, HELD, TERMS

P_ATT = TERMS.index("p_att")


def _run(engine: str, backend: str, gpu: str, ctx: int) -> dict:
    out = CliRunner().invoke(build_app(), [
        "latency", "llama-3.1-8b", "--gpu", gpu, "--dtype", "bf16", "--ctx", str(ctx), "--gen", "1",
        "--batch", "1", "--engine", engine, "--backend", backend, "--json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def test_the_floor_and_who_holds_it() -> None:
    assert FLOORS["p_att"] == 1.0 and HELD == ("p_att",)
    assert [eb for eb, terms in ENGINE_TERMS.items() if "p_att" not in terms] == [
        ("sglang", "cuda"), ("sglang", "rocm"), ("vllm", "rocm"), ("transformers", "cuda"),
        ("transformers", "rocm"), ("transformers", "metal")]


@pytest.mark.parametrize(("engine", "backend", "gpu", "p_att", "expected", "bound"), [
    ("sglang", "cuda", "h100", 1.0, 18_765, 20_468),  # held: the bound before (18,691 before sg59)
    ("vllm", "rocm", "mi300x", 1.0, 17_407, 27_058),  # held: the bound before
    ("vllm", "cuda", "h100", 1.0, 16_677, 20_468),  # fitted at its floor: 0 fitted free
    ("trtllm", "cuda", "h100", 1.754, 11_708, 20_468),  # fitted above it
])
def test_a_128k_prompt_pays_for_its_attention(engine: str, backend: str, gpu: str, p_att: float,
                                              expected: int, bound: int) -> None:
    """Llama-3.1-8B BF16, a 131,072-token prompt: its attention is 4.5 of its 6.3 PFLOP (its
    weights' GEMMs 1.8); every engine's expected prefill is below the bound."""
    out = _run(engine, backend, gpu, 131_072)
    e = out["expected"]
    assert round(e["basis"]["prefill"]["coefficients"][P_ATT], 3) == p_att
    assert round(e["prefill_tokens_per_s"]) == expected
    assert round(131_072 / out["prefill"]["seconds"]) == bound
