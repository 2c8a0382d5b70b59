"""GGUF metadata read back into transformers configs for gemma2, gemma3, phi3, mamba, lfm2 and
gpt-oss (the architectures llama.cpp 0.3.36 loads that llmcalc counts): the description's parameters
equal the file's tensor table (an independent count), and its KV cache is the hand-computed one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import tiny_gguf

from llmcalc.inputs.gguf_file import read_header

CASES: dict[str, dict[str, Any]] = {
    "gemma2": {"swa": 256},  # sliding window on even layers (llama.cpp's pattern 2)
    "gemma3": {"swa": 128, "n_layer": 7, "head": 128},  # 5 of each 6 layers slide
    "phi3": {},  # fused qkv and gate_up
    "mamba": {},
    "lfm2": {"n_layer": 4},  # short convolutions on even layers
    # 4 experts (2 a token), biases on q/k/v/o, the router and the experts, a sink per head; the
    # window on layer 0 of 2 (llama.cpp's pattern 2)
    "gpt-oss": {"n_expert": 4, "swa": 128, "head": 64},
}
# K and V at 1,024 tokens, f16, batch 1: layers × 2 × kv heads (2) × head dim × cells × 2 bytes
KV = {
    "gemma2": 2 * 2 * 64 * 2 * (256 + 1024),  # layer 0 capped at its 256 window, layer 1 full
    "gemma3": 2 * 2 * 128 * 2 * (6 * 128 + 1024),
    "phi3": 2 * 2 * 2 * 64 * 2 * 1024,
    "lfm2": 2 * 2 * 2 * 64 * 2 * 1024 + 2 * 256 * 3 * 2,  # + 2 conv layers' state [d, L_cache]
    "gpt-oss": 2 * 2 * 64 * 2 * (128 + 1024),  # layer 0 capped at its 128 window, layer 1 full
}
# the same files' parameters, independently: gpt-oss's 37 tensors (tiny_gguf, d 256, 2 layers, vocab
# 512, 4 experts of width 512, heads 4 × 64, KV heads 2 × 64)
GPT_OSS_LAYER = (256 + 256 + 256 * 256 + 256 + 2 * (256 * 128 + 128) + 256 * 256 + 256 + 4
                 + 4 * 256 + 4 + 4 * (2 * (512 * 256 + 512) + 256 * 512 + 256))
PARAMETERS = {"gpt-oss": 2 * GPT_OSS_LAYER + 2 * 512 * 256 + 256}


@pytest.mark.parametrize("arch", list(CASES))
def test_count_equals_the_tensor_table(cli: Any, tmp_path: Path, arch: str) -> None:
    path = tiny_gguf.write(tmp_path / f"{arch}.gguf", arch, **CASES[arch])
    run = cli("count", str(path), "--json")
    assert run.code == 0, run.stderr
    assert run.json()["total_params"] == read_header(path).parameters
    if arch in PARAMETERS:
        assert run.json()["total_params"] == PARAMETERS[arch]
    flops = cli("flops", str(path), "--ctx", "1024", "--json")
    assert flops.code == 0, flops.stderr
    if arch in KV:
        memory = cli("memory", str(path), "--ctx", "1024", "--kv-dtype", "fp16", "--json")
        assert memory.code == 0, memory.stderr
        assert memory.json()["kv_cache_bytes"] == KV[arch]


def test_phi3_reads_as_its_config(cli: Any, tmp_path: Path) -> None:
    # the same model as a config.json: every figure the same
    path = tiny_gguf.write(tmp_path / "phi3.gguf", "phi3")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({
        "model_type": "phi3", "hidden_size": 256, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 512,
        "vocab_size": 512, "max_position_embeddings": 8192, "tie_word_embeddings": False}))
    a = cli("flops", str(path), "--ctx", "2048", "--json").json()
    b = cli("flops", str(config), "--ctx", "2048", "--json").json()
    keys = [k for k in b if k.endswith("flops") or k.endswith("per_token")]
    assert keys and {k: a[k] for k in keys} == {k: b[k] for k in keys}


@pytest.mark.torch
def test_gpt_oss_is_the_model_transformers_builds(cli: Any, tmp_path: Path) -> None:
    """The read-back config built by transformers (GptOssForCausalLM, meta device): every tensor's
    name and shape the description's."""
    pytest.importorskip("transformers")
    path = tiny_gguf.write(tmp_path / "gpt-oss.gguf", "gpt-oss", **CASES["gpt-oss"])
    out = cli("verify", str(path), "--json").json()
    assert (out["match"], out["matched_tensors"], out["differences"]) == (True, 37, [])
    assert out["against"].endswith("GptOssForCausalLM (meta device)")
