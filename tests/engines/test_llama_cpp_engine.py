"""llmcalc's llama.cpp buffers held to the real engine (llama-cpp-python 0.3.36, CPU backend): tiny
GGUFs of ten architectures loaded over a grid of context, ubatch, cache types, flash attention,
sequences and mmap; the model, KV (full and SWA) and recurrent buffers must print the same MiB to two
decimals as the engine's own log lines. Marked `llamacpp`: CI installs the engine, never skips."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from helpers import tiny_gguf

from llmcalc.errors import UsageError
from llmcalc.inputs.gguf_file import read_header
from llmcalc.planning.engines import llama_cpp as L

pytestmark = pytest.mark.llamacpp

ARCHS: dict[str, dict[str, Any]] = {
    "llama": {"n_kv": 2},  # GQA
    "llama-moe": {"n_expert": 4, "tied": True},  # Mixtral-style, tied output
    "qwen2": {"dtype": "q8_0"},  # biases
    "qwen3": {"dtype": "f16", "n_kv": 1},  # q/k norm
    "gemma2": {"swa": 256},
    "gemma3": {"swa": 128, "n_layer": 7, "head": 128},
    "phi3": {},  # fused qkv
    "qwen3moe": {"n_expert": 4},
    "lfm2": {"n_layer": 4},  # short convolutions between attention layers
    "lfm2-swa": {"n_layer": 5, "swa": 200},  # its attention layers sliding
    "phi3-swa": {"swa": 128},  # Phi's sliding window is read and disabled
    "mamba": {},
}
GRID = [
    {"n_ctx": 1000},
    {"n_ctx": 3000, "n_parallel": 3, "type_k": "q8_0", "type_v": "q8_0"},
    {"n_ctx": 2048, "flash_attn": "off", "n_ubatch": 128, "mmap": False},
    {"n_ctx": 5000, "n_parallel": 2, "kv_unified": True, "swa_full": True},
    {"n_ctx": 700, "n_batch": 256, "type_k": "q4_0", "type_v": "f16", "flash_attn": "on"},
    {"n_ctx": 6000, "n_ubatch": 64, "n_parallel": 2, "kv_unified": True, "type_k": "bf16",
     "type_v": "q5_1"},
    {"n_ctx": 9000, "n_batch": 512, "n_ubatch": 300, "n_parallel": 5, "type_k": "iq4_nl",
     "type_v": "q4_1", "mmap": False},
    {"n_ctx": 1500, "type_k": "f32", "type_v": "f32", "flash_attn": "off", "n_parallel": 2},
]


@pytest.fixture(scope="module")
def ggufs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("ggufs")
    return {name: tiny_gguf.write(folder / f"{name}.gguf", name.split("-")[0], **kw)
            for name, kw in ARCHS.items()}


def _mib(n: int) -> float:
    return float(f"{n / 2**20:.2f}")  # the engine's %8.2f


@pytest.mark.parametrize(("arch", "case"), list(itertools.product(ARCHS, range(len(GRID)))))
def test_buffers_equal_the_engines(ggufs: dict[str, Path], arch: str, case: int) -> None:
    from helpers import llama_engine

    params = GRID[case]
    engine = llama_engine.run(str(ggufs[arch]), **params)
    ours = L.buffers(read_header(ggufs[arch]), L.Params(**params))
    assert _mib(ours.model) == engine["model"]
    assert [(c.cells, _mib(c.k_bytes), _mib(c.v_bytes)) for c in ours.kv_caches] == engine["caches"]
    assert _mib(ours.recurrent) == engine["rs"]
    assert (ours.recurrent > 0) == (arch in ("mamba", "lfm2", "lfm2-swa"))
    assert (len(ours.kv_caches) == 2) == (arch in ("gemma2", "gemma3", "lfm2-swa"))
    # the compute buffer: the same bytes as the engine's (its %.2f MiB, half a hundredth)
    compute = L.plan(read_header(ggufs[arch]), L.Params(**params)).compute
    assert compute is not None and abs(compute / 2**20 - engine["compute"]) <= 0.005


def test_quantized_v_without_flash_attention_is_refused_as_by_the_engine(
        ggufs: dict[str, Path]) -> None:
    from helpers import llama_engine

    with pytest.raises(AssertionError, match="quantized V cache requires flash_attn"):
        llama_engine.run(str(ggufs["llama"]), n_ctx=512, type_v="q8_0", flash_attn="off")
    with pytest.raises(UsageError, match="^--cache-type-v q8_0: llama.cpp refuses a quantized V "
                       r"cache without flash attention \(--flash-attn on or auto\)$"):
        L.buffers(read_header(ggufs["llama"]), L.Params(n_ctx=512, type_v="q8_0", flash_attn="off"))


@pytest.mark.parametrize("arch", ["llama", "gemma2", "gemma3", "lfm2-swa", "phi3-swa"])
def test_the_engines_per_layer_log_on_a_cpu_build(ggufs: dict[str, Path], arch: str) -> None:
    # src/llama-model.cpp:1589-1600 logs each layer's device and is_swa (the output layer as
    # index n_layer, never sliding); a CPU build has no GPU device (act_gpu_layers 0), so every
    # layer is on the CPU whatever -ngl says — and its sliding layers are llmcalc's
    import re

    from helpers import llama_engine

    engine = llama_engine.run(str(ggufs[arch]), n_ctx=512, n_gpu_layers=99)
    layers = re.findall(r"load_tensors: layer +(\d+) assigned to device (\S+), is_swa = (\d)",
                        engine["log"])
    hp = L.hparams(read_header(ggufs[arch]))
    assert [int(il) for il, _, _ in layers] == list(range(hp.n_layer + 1))
    assert {dev for _, dev, _ in layers} == {"CPU"}
    assert [s == "1" for _, _, s in layers] == [*(hp.is_swa[il] and hp.n_swa > 0
                                                  for il in range(hp.n_layer)), False]


def test_a_quantized_cache_whose_block_does_not_divide_the_head_is_refused_with_flash_attention(
        tmp_path: Path) -> None:
    # head 80 with 2 KV heads: a K row of 160 is whole q8_0 blocks, the head of 80 is not; the
    # engine checks the head (src/llama-context.cpp: llama_init_from_model) when flash attention
    # is on or auto, and loads the same cache with flash attention off
    from helpers import llama_engine

    path = tiny_gguf.write(tmp_path / "qwen2-hd80.gguf", "qwen2", d=320, n_head=4, n_kv=2)
    header = read_header(path)
    with pytest.raises(AssertionError, match="K cache type q8_0 with block size 32 does not divide "
                       "n_embd_head_k=80"):
        llama_engine.run(str(path), n_ctx=1000, type_k="q8_0")
    with pytest.raises(UsageError, match=r"^.*qwen2-hd80\.gguf: --cache-type-k q8_0: llama\.cpp "
                       r"refuses a cache whose block of 32 does not divide the head size 80 with "
                       r"flash attention \(--flash-attn on or auto\)$"):
        L.buffers(header, L.Params(n_ctx=1000, type_k="q8_0"))
    with pytest.raises(UsageError, match=r"--cache-type-v q4_0: .* block of 32 does not divide "
                       r"the head size 80"):
        L.plan(header, L.Params(n_ctx=1000, type_v="q4_0", flash_attn="on"))
    params = {"n_ctx": 1000, "type_k": "q8_0", "flash_attn": "off"}
    engine = llama_engine.run(str(path), **params)
    ours = L.plan(header, L.Params(**params))
    assert engine["caches"] == [(1024, 0.33, 0.62)]
    assert [(c.cells, _mib(c.k_bytes), _mib(c.v_bytes)) for c in ours.caches] == engine["caches"]
    assert ours.kv_k == 348160 and ours.kv_v == 655360  # 2 layers × 1024 × 170 B; × 320 B
    assert _mib(ours.model) == engine["model"]
    assert ours.compute is not None and abs(ours.compute / 2**20 - engine["compute"]) <= 0.005
