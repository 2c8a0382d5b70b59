"""fit --engine sglang's rules by release, each against the arithmetic of SGLang's own source
(server_args.py's default mem_fraction_static and its VLM adjustment, model_runner's sliding-window
split and mamba state pool): the figures below are worked from those functions by hand."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import pytest

from llmcalc.cli._common import spec_for
from llmcalc.planning.engines import sglang
from llmcalc.planning.engines.budget import budget_adds_up
from llmcalc.planning.hardware import GiB, lookup
from llmcalc.units import DType

H100_MIB = 81090.56  # hardware.json's H100 row: 79.19 GiB as CUDA reports it


def _plan(model: str, **kw: Any) -> Any:
    kw.setdefault("accelerator", lookup("h100"))
    return sglang.plan(spec_for(model, None), dtype=DType.bf16, kv_dtype=DType.bf16, **kw)


@pytest.mark.parametrize(("version", "tp", "expected"), [
    ((0, 4, 0), 1, 0.88), ((0, 4, 0), 2, 0.87), ((0, 4, 3), 4, 0.85),  # the table by tp
    ((0, 4, 9), 1, round((H100_MIB - 10 * 1024) / H100_MIB, 3)),  # (9.5 + tp/2) GiB reserved
    ((0, 4, 9), 4, round((H100_MIB - 11.5 * 1024) / H100_MIB, 3)),
    ((0, 5, 3), 1, 0.834),  # 512 + 8192 × 1.5 + 256 × 2 + 128 = 13,440 MiB
])
def test_default_fraction_by_release(version: tuple[int, ...], tp: int, expected: float) -> None:
    chunk, graph = sglang.card_defaults(H100_MIB, tp, version)
    assert sglang.default_mem_fraction_static(H100_MIB, tp=tp, chunked_prefill_size=chunk,
                                              cuda_graph_max_bs=graph, version=version) == expected


def test_large_card_rule_from_0_4_6() -> None:
    """0.4.6–0.4.8: above 81,920 MiB the fraction is (mem − 13 GiB) / mem, unrounded."""
    mem = 143421.44  # an H200 as CUDA reports it
    assert sglang.default_mem_fraction_static(mem, tp=1, chunked_prefill_size=8192,
                                              cuda_graph_max_bs=160, version=(0, 4, 6)) == \
        (mem - 13 * 1024) / mem
    assert sglang.default_mem_fraction_static(mem, tp=1, chunked_prefill_size=8192,
                                              cuda_graph_max_bs=160, version=(0, 4, 3)) == 0.88


def test_card_defaults_by_release() -> None:
    assert sglang.card_defaults(23 * 1024, 4) == (2048, 80)
    assert sglang.card_defaults(23 * 1024, 1) == (2048, 24)
    assert sglang.card_defaults(23 * 1024, 1, (0, 5, 3)) == (2048, 16)
    assert sglang.card_defaults(24_000, 1, (0, 4, 0)) == (2048, 8)
    assert sglang.card_defaults(H100_MIB, 1, (0, 4, 0)) == (8192, 160)


def test_vision_model_default_lowered() -> None:
    """adjust_mem_fraction_for_vlm: Qwen2.5-VL's vision config names its 32 layers ``depth``, so
    SGLang takes 24 layers × 1280² against 24 × 1024² (ratio 1.5625): 0.95 × (1 − 0.05625) =
    0.8965625 of the default. sglang#11830's B200 log: mem_fraction_static=0.7629746875, 0.851 of
    its card's default times that; 0.4.9 takes 0.90 of 0.874 on an H100."""
    spec = spec_for("qwen2.5-vl-7b", None)
    assert sglang.vision_factor(spec, (0, 5, 6)) == 0.95 * (1 - 0.1 * (1280 ** 2 / 1024 ** 2 - 1))
    assert 0.851 * sglang.vision_factor(spec, (0, 5, 6)) == 0.7629746875
    b = _plan("qwen2.5-vl-7b")
    assert round(b.settings["mem_fraction_static"], 9) == round(0.834 * 0.8965625, 9)
    old = _plan("qwen2.5-vl-7b", version="0.4.9")
    assert round(old.settings["mem_fraction_static"], 9) == round(0.874 * 0.9, 9)
    # a fraction given is taken as it is; a text model keeps the default
    assert _plan("qwen2.5-vl-7b", mem_fraction_static=0.8).settings["mem_fraction_static"] == 0.8
    assert sglang.vision_factor(spec_for("llama-3.1-8b", None), (0, 5, 9)) == 1.0


def test_sliding_window_split() -> None:
    """set_num_token_hybrid: gpt-oss-20b (12 sliding + 12 full layers, 8 KV heads × 64): from
    40 GiB, 40 GiB // 49,152 = 873,813 tokens of every layer, 873,813 × 24 / (12 + 0.8 × 12) =
    970,903 full-layer tokens and 776,722 sliding."""
    b = _plan("gpt-oss-20b", kv_memory=40 * GiB)
    assert (b.bytes_per_token, b.kv_cache_tokens, b.settings["swa_layer_tokens"]) == \
        (49152, 970903, 776722)
    assert int(40 * GiB / 2048 / (12 + 0.8 * 12)) == 970903


def test_gemma_sliding_pool_only_in_0_5_1_to_0_5_8() -> None:
    """0.5.1–0.5.8 split every model with sliding-window layers (Gemma 3: 52 sliding, 10 full);
    0.5.9 keeps Gemma's layers in one pool (is_hybrid_swa_model lists gpt-oss, Llama 4)."""
    kv = int(Fraction("20") * GiB)
    new = _plan("gemma-3-27b", kv_memory=kv)
    assert new.kv_cache_tokens == kv // new.bytes_per_token
    assert "swa_layer_tokens" not in new.settings
    mid = _plan("gemma-3-27b", kv_memory=kv, version="0.5.6")
    assert mid.kv_cache_tokens == int(kv / (new.bytes_per_token // 62) / (10 + 0.8 * 52))
    assert _plan("gemma-3-27b", kv_memory=kv, version="0.4.9").kv_cache_tokens == \
        new.kv_cache_tokens


def test_mamba_state_pool() -> None:
    """Qwen3-Next-80B-A3B at tp 4: each of 36 gated-delta layers keeps conv 8,192/4 × 3 bf16 and
    a temporal state of 32/4 heads × 128 × 128 float32: 36 × (12,288 + 524,288) = 19,316,736
    bytes a request; 0.5.6 on sets rest × 0.9 / 1.9 of the pool aside for them, 0.5.3 512."""
    spec = spec_for("qwen3-next-80b-a3b", None)
    assert sglang.mamba_state_per_request(spec, 4) == 36 * (2048 * 3 * 2 + 8 * 128 * 128 * 4) \
        == 19316736
    b = _plan("qwen3-next-80b-a3b", tp=4)
    assert budget_adds_up(b)
    slots = b.settings["max_mamba_cache_size"]
    assert b.terms["mamba_state"] == slots * 19316736
    rest = b.kv_cache_bytes + b.terms["mamba_state"]
    assert slots == int(rest * 0.9 / 1.9 // 19316736)
    assert b.bytes_per_token == 12 * 2 * 256 * 2 * 1 // 1  # 12 attention layers, 2 KV heads → 1
    assert b.settings["max_running_requests"] == slots // 3
    old = _plan("qwen3-next-80b-a3b", tp=4, version="0.5.3")
    assert old.terms["mamba_state"] == 512 * 19316736
    assert old.settings["max_running_requests"] == 512


def test_hybrid_before_its_pool_refused(cli: Any) -> None:
    r = cli("fit", "qwen3-next-80b-a3b", "--engine", "sglang==0.5.1", "--gpu", "h100",
            "--tp", "4")
    assert r.code == 2
    assert r.stderr.strip() == ("error: --engine sglang==0.5.1: SGLang gives "
                                "Qwen/Qwen3-Next-80B-A3B-Instruct's recurrent state a pool from "
                                "0.5.3 (HybridReqToTokenPool)")


def test_version_in_the_output(cli: Any) -> None:
    r = cli("fit", "llama-3.1-8b", "--engine", "sglang==0.4.0", "--gpu", "h100", "--json")
    assert r.code == 0
    d = json.loads(r.stdout)
    assert d["settings"]["mem_fraction_static"] == 0.88
    assert "--mem-fraction-static 0.88" in d["command"]


def test_startup_by_link() -> None:
    """Start-up before the weights: 0.4 GiB (the L4 log: 22.03 GiB less the logged 21.63 free at
    tp 4 over PCIe, where SGLang's custom all-reduce stays off), 2.2 GiB more with tp > 1 on
    NVLink cards (sglang#11716's H200s: 2.5–2.8 GiB in all)."""
    pcie = _plan("qwen2.5-32b", accelerator=lookup("l4"), tp=4, mem_fraction_static=0.85)
    assert pcie.terms["startup"] == int(0.4 * GiB)
    assert round((pcie.cuda_memory_bytes - pcie.terms["startup"]) / GiB, 2) == 21.63
    nv = _plan("qwen2.5-32b", tp=4)
    assert nv.terms["startup"] == int(0.4 * GiB) + int(2.2 * GiB)
    assert _plan("qwen2.5-32b").terms["startup"] == int(0.4 * GiB)
    assert budget_adds_up(pcie) and budget_adds_up(nv)


def test_deepseek_sparse_attention_indexer() -> None:
    """get_cell_size_per_token with NSA (DeepSeek-V3.2): the MLA latent (512 + 64) × 61 layers ×
    2 bytes plus the indexer's 128 fp8 keys and one float32 scale a layer: 70,272 + 61 × 132 =
    78,324 bytes a token, in pages of 64 (server_args' DSA default on CUDA)."""
    b = _plan("deepseek-v3.2-exp", accelerator=lookup("h200"), tp=8, mem_fraction_static=0.9)
    assert (b.bytes_per_token, b.block_tokens) == (576 * 61 * 2 + 61 * 132, 64)
    assert b.kv_cache_tokens % 64 == 0
    assert _plan("deepseek-v3.2-exp", version="0.4.9", accelerator=lookup("h200"), tp=8,
                 mem_fraction_static=0.9).bytes_per_token == 576 * 61 * 2
