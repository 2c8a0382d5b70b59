"""A decode step's norms beyond two a layer (speed.py ``_decode_features``: c_norm): counted from
the layers' tensors (``latency.layer_norms``) and fitted on llama.cpp CUDA, Vulkan and ROCm only."""

from __future__ import annotations

import pytest

from llmcalc import load_spec
from llmcalc.cli.latency import row_latency
from llmcalc.planning.latency import layer_norms
from llmcalc.planning.speed import ENGINE_TERMS, TERMS, loo_errors, rows_for


@pytest.mark.parametrize(("model", "norms"), [
    ("llama-3.1-8b", 32 * 2),  # input_layernorm, post_attention_layernorm
    ("gpt2", 12 * 2),  # ln_1, ln_2 (weight and bias one norm each)
    ("phi-2", 32 * 1),  # one norm before the parallel attention and MLP
    ("qwen3-8b", 36 * 4),  # and q_norm, k_norm
    ("gemma-3-4b", 34 * 6),  # pre- and post-norms of both blocks, q_norm, k_norm
    ("gemma-4-26b-a4b", 30 * 9),  # and the MoE branch's pre-norm and its two post-norms
    ("dbrx-base", 40 * 2),  # norm_1, norm_2: the attention under norm_attn_norm is not a norm
    ("inkling2-loop-text-default", 104),  # its q_proj.norm.scale and the position bias's norm
])
def test_norms_are_counted_from_the_layers_tensors(model: str, norms: int) -> None:
    assert layer_norms(load_spec(model)) == norms


def test_norms_are_fitted_where_they_help() -> None:
    assert TERMS[-4:] == ("c_norm", "c_clk", "a_ultra", "f_vec")
    assert [b for b in ("cuda", "vulkan", "rocm", "metal", "cpu")
            if "c_norm" in ENGINE_TERMS["llama.cpp", b]] == ["cuda", "vulkan", "rocm"]
    assert "c_norm" not in ENGINE_TERMS["trtllm", "cuda"]


def test_gemma_4_decode_is_no_longer_expected_far_too_fast() -> None:
    """gemma-4-26b-a4b tg on an RX 7900 XTX (llama.cpp PRs #27952 Vulkan, #26284 ROCm) and an
    R9700 (#26284), each left out: +72%, +73% and +37% from a cost per layer alone."""
    errors = {(r.backend, r.gpu): round(e, 3) for b in ("vulkan", "rocm")
              for r, e in loo_errors([(r, row_latency(r)) for r in rows_for("llama.cpp", b)],
                                     "decode")
              if r.model == "gemma-4-26b-a4b-whole" and r.source.endswith(("/27952", "/26284"))}
    assert errors == {("vulkan", "rx-7900-xtx"): -0.215, ("rocm", "rx-7900-xtx"): 0.071,
                      ("rocm", "r9700"): -0.05}
