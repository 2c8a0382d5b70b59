"""Run the real llama.cpp (llama-cpp-python 0.3.36, CPU backend) on a GGUF and read the buffers it
reports from its log lines (MiB to two decimals)."""

from __future__ import annotations

import ctypes
import re
from typing import Any

import llama_cpp as L

_LOG: list[str] = []


@L.llama_log_callback
def _collect(level: int, text: bytes, user: Any) -> None:
    _LOG.append(text.decode(errors="replace"))


L.llama_log_set(_collect, ctypes.c_void_p())
L.llama_backend_init()

TYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7, "q8_0": 8,
         "iq4_nl": 20, "bf16": 30}
FA = {"auto": -1, "off": 0, "on": 1}


def run(path: str, *, n_ctx: int, n_batch: int = 2048, n_ubatch: int = 512, type_k: str = "f16",
        type_v: str = "f16", flash_attn: str = "auto", swa_full: bool = False, n_parallel: int = 1,
        kv_unified: bool = False, mmap: bool = True, n_gpu_layers: int = 0) -> dict[str, Any]:
    """The engine's buffers in MiB: model, caches [(cells, K, V)], rs (recurrent state), compute."""
    _LOG.clear()
    mp = L.llama_model_default_params()
    mp.n_gpu_layers = n_gpu_layers
    mp.use_extra_bufts = False  # no CPU_REPACK buffer: the layout without repacking
    mp.load_mode = L.LLAMA_LOAD_MODE_MMAP if mmap else L.LLAMA_LOAD_MODE_NONE
    model = L.llama_model_load_from_file(path.encode(), mp)
    assert model, "".join(_LOG)[-2000:]
    cp = L.llama_context_default_params()
    cp.n_ctx, cp.n_batch, cp.n_ubatch = n_ctx, n_batch, n_ubatch
    cp.type_k, cp.type_v = TYPES[type_k], TYPES[type_v]
    cp.flash_attn_type = FA[flash_attn]
    cp.swa_full, cp.n_seq_max, cp.kv_unified = swa_full, n_parallel, kv_unified
    cp.n_threads = cp.n_threads_batch = 1
    ctx = L.llama_init_from_model(model, cp)
    try:
        assert ctx, "".join(_LOG)[-2000:]
        text = "".join(_LOG)
    finally:
        if ctx:
            L.llama_free(ctx)
        L.llama_model_free(model)
    out: dict[str, Any] = {"model": 0.0, "caches": [], "rs": 0.0, "compute": 0.0, "log": text}
    for m in re.finditer(r"(\S+) model buffer size = +([\d.]+) MiB", text):
        out["model"] += float(m.group(2))
    # one line per cache (full, then sliding-window): its cells, K and V in MiB
    for m in re.finditer(r"llama_kv_cache: size = .*?\( *(\d+) cells.*K \(\w+\): +([\d.]+) MiB, "
                         r"V \(\w+\): +([\d.]+) MiB", text):
        out["caches"].append((int(m.group(1)), float(m.group(2)), float(m.group(3))))
    for m in re.finditer(r"llama_memory_recurrent: size = +([\d.]+) MiB", text):
        out["rs"] += float(m.group(1))
    for m in re.finditer(r"sched_reserve: +\S+ compute buffer size = +([\d.]+) MiB", text):
        out["compute"] += float(m.group(1))
    return out
