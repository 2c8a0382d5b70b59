"""llama.cpp's CPU compute buffer held to the real engine (llama-cpp-python 0.3.36) on GGUFs of
other sizes than test_llama_cpp_engine's (wider heads, more experts and layers, larger
vocabularies) over a grid of context, ubatch, cache types, flash attention and sequences: the
graph llama.cpp reserves, built op for op, through ggml's allocator, must give the bytes the
engine prints ("CPU compute buffer size", MiB to two decimals). Marked `llamacpp`."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from helpers import tiny_gguf

from llmcalc.inputs.gguf_file import read_header
from llmcalc.planning.engines import llama_cpp as L

pytestmark = pytest.mark.llamacpp

ARCHS: dict[str, dict[str, Any]] = {
    "llama": {"n_layer": 3, "d": 512, "n_head": 8, "n_kv": 2, "head": 128, "ff": 1376,
              "vocab": 3000},
    "llama-moe": {"n_layer": 3, "n_expert": 8, "ff": 384, "vocab": 4000},
    "qwen2": {"n_layer": 3, "d": 384, "n_head": 6, "n_kv": 2, "ff": 1024, "vocab": 1000},
    "qwen2moe": {"n_layer": 3, "n_expert": 4, "ff": 384, "vocab": 2000},  # a shared expert
    "qwen3moe": {"n_layer": 2, "d": 256, "n_head": 8, "n_kv": 4, "head": 64, "n_expert": 6},
    "gemma2": {"n_layer": 4, "d": 256, "n_head": 2, "n_kv": 1, "head": 128, "swa": 600},
    "gemma3": {"n_layer": 8, "d": 256, "n_head": 4, "n_kv": 1, "head": 256, "ff": 640,
               "vocab": 2000, "swa": 300},
    "phi3": {"n_layer": 3, "d": 384, "n_head": 6, "n_kv": 6, "ff": 1024},
    "lfm2": {"n_layer": 6, "d": 384, "n_head": 6, "n_kv": 2, "vocab": 2048},
    "mamba": {"n_layer": 3, "d": 384, "vocab": 1000},
}
GRID = [
    {"n_ctx": 4096, "n_parallel": 4, "kv_unified": True},  # llama-server's defaults
    {"n_ctx": 777, "n_ubatch": 100, "flash_attn": "off"},
    {"n_ctx": 2500, "n_parallel": 4, "n_batch": 512, "type_k": "q4_0", "type_v": "q8_0"},
    {"n_ctx": 3000, "n_parallel": 3, "kv_unified": True, "flash_attn": "off", "type_k": "q8_0"},
    {"n_ctx": 1200, "n_ubatch": 1024, "n_batch": 1024, "type_k": "f32", "type_v": "f32"},
    # n_batch ≤ the n_ctx given (300), not the padded one (512): a 300-token ubatch, not 333
    {"n_ctx": 300, "n_ubatch": 333, "n_batch": 512, "flash_attn": "off", "swa_full": True},
]


@pytest.fixture(scope="module")
def ggufs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("ggufs")
    return {name: tiny_gguf.write(folder / f"{name}.gguf", name.split("-")[0], **kw)
            for name, kw in ARCHS.items()}


@pytest.mark.parametrize(("arch", "case"), list(itertools.product(ARCHS, range(len(GRID)))))
def test_compute_buffer_equals_the_engines(ggufs: dict[str, Path], arch: str,
                                           case: int) -> None:
    from helpers import llama_engine

    params = GRID[case]
    engine = llama_engine.run(str(ggufs[arch]), **params)
    plan = L.plan(read_header(ggufs[arch]), L.Params(**params))
    assert plan.compute is not None and plan.compute == plan.devices[0].compute
    assert abs(plan.compute / 2**20 - engine["compute"]) <= 0.005  # the engine's %.2f
