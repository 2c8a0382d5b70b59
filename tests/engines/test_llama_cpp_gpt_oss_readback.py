"""A gpt-oss GGUF read back (llmcalc.inputs.gguf_model: general.architecture gpt-oss) held to the
real llama.cpp (llama-cpp-python 0.3.36): the parameters it prints ("model params"), its mapped
model buffer and which layers it gives a sliding window ("is_swa") are those of the description
llmcalc counts. llmcalc does not yet follow llama.cpp's own buffers for gpt-oss (memory --engine
llama.cpp refuses it); fit --engine llama.cpp lays out its KV cache alone, cell for cell the
engine's. Marked `llamacpp`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from helpers import tiny_gguf

pytestmark = pytest.mark.llamacpp

SHAPES = {"n_layer": 4, "d": 256, "n_head": 8, "n_kv": 2, "head": 64, "ff": 384, "n_expert": 4,
          "vocab": 1000, "swa": 128}


def test_llama_cpp_loads_the_model_llmcalc_describes(cli: Any, tmp_path: Path) -> None:
    from helpers import llama_engine

    path = tiny_gguf.write(tmp_path / "gpt-oss.gguf", "gpt-oss", **SHAPES)
    engine = llama_engine.run(str(path), n_ctx=1024)
    count = cli("count", str(path), "--json").json()
    memory = cli("memory", str(path), "--json").json()
    printed = re.search(r"model params\s+=\s+([\d.]+) M", engine["log"])
    assert printed is not None and float(printed.group(1)) == round(count["total_params"] / 1e6, 2)
    assert engine["model"] == round(memory["weights_bytes"] / 2**20, 2)
    swa = re.findall(r"layer +(\d+) assigned to device CPU, is_swa = (\d)", engine["log"])
    layers = count["num_layers"]
    assert [int(s) for i, s in swa if int(i) < layers] == [1, 0, 1, 0]
    assert [(g["name"], g["num_layers"]) for g in count["groups"]] == [
        ("sliding_attention", 2), ("full_attention", 2)]


@pytest.mark.parametrize(("args", "engine_params"), [
    (["-c", "1024", "-np", "1"], {"n_ctx": 1024, "n_parallel": 1}),
    (["-c", "4096"], {"n_ctx": 4096, "n_parallel": 4, "kv_unified": True}),  # llama-server's
    (["-c", "3000", "-np", "2", "--swa-full"], {"n_ctx": 3000, "n_parallel": 2, "swa_full": True}),
])
def test_fit_lays_out_the_kv_cache_llama_cpp_allocates(cli: Any, tmp_path: Path, args: list[str],
                                                       engine_params: dict[str, Any]) -> None:
    """fit --engine llama.cpp on a gpt-oss GGUF: its buffers are not followed, so only the KV
    cache is laid out (as for an HF model llmcalc does not convert), cell for cell the engine's:
    the full layers' cache and the sliding ones' (n_swa × sequences + ubatch, padded)."""
    from helpers import llama_engine

    path = tiny_gguf.write(tmp_path / "gpt-oss.gguf", "gpt-oss", **SHAPES)
    out = cli("fit", str(path), "--engine", "llama.cpp", "--gpu", "rtx-4090", *args, "--json")
    assert out.code == 0, out.stderr
    plan = out.json()["plan"]
    ours = [(c["cells"], round(c["k_bytes"] / 2**20, 2), round(c["v_bytes"] / 2**20, 2))
            for c in plan["caches"]]
    assert ours == llama_engine.run(str(path), **engine_params)["caches"]
    assert out.json()["notes"] == [
        "model_type 'gpt_oss': llmcalc does not follow llama.cpp's buffers for this GGUF's "
        "architecture, so only the KV cache is laid out (no weights, no --fit: the context as "
        "given, every layer on the GPU unless --n-gpu-layers)"]
