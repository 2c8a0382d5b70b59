"""Every llama-quantize type in the expected speed (speed.py) and the bound (latency.py): the
K-quant prefill term for the mixes built on Q2_K … Q6_K, INT8 tensor cores where llama.cpp's MMQ
takes the mix's main type."""

from __future__ import annotations

from typing import Any

from llmcalc.planning.latency import COMPUTE_FORMATS
from llmcalc.planning.speed import K_QUANTS


def test_the_k_quant_term_is_the_k_quant_mixes() -> None:
    assert K_QUANTS == {"q2_k", "q2_k_s", "q3_k_s", "q3_k_m", "q3_k_l", "q4_k_s", "q4_k_m",
                        "q5_k_s", "q5_k_m", "q6_k"}
    # ggml-cuda/mmq.cu ggml_cuda_should_use_mmq: no IQ1_M, TQ1_0, TQ2_0
    assert COMPUTE_FORMATS["iq4_xs"] == COMPUTE_FORMATS["q5_k_m"] == ("fp16", "int8")
    assert {"iq1_m", "tq1_0", "tq2_0"}.isdisjoint(COMPUTE_FORMATS)


def test_latency_predicts_every_type_in_bytes_order(cli: Any) -> None:
    decode = {}
    for q in ("q4_k_m", "q5_k_m", "q6_k", "iq4_xs", "q3_k_m"):
        r = cli("latency", "llama-3.1-8b", "--dtype", q, "--engine", "llama.cpp", "--backend",
                "cuda", "--gpu", "rtx-4090", "--json")
        assert r.code == 0, r.stderr
        decode[q] = r.json()["expected"]["decode_tokens_per_s"]
    # decode streams the weights: fewer bytes, faster (q3_k_m 3.74 GiB … q6_k 6.14 GiB)
    assert sorted(decode, key=decode.get) == ["q6_k", "q5_k_m", "q4_k_m", "iq4_xs", "q3_k_m"]
