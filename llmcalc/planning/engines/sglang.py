"""SGLang's KV cache budget (``fit --engine sglang``), read from its source.

Followed: SGLang 0.5 (python/sglang/srt). The pool
(srt/model_executor/model_runner_kv_cache_mixin.py ``profile_max_num_token``)::

    total       = free memory after start-up (ModelRunner.init_torch_distributed, GiB)
    rest        = (free memory after the weights load) − total × (1 − mem_fraction_static)
    cell_size   = kv_heads_per_rank × (head_dim + v_head_dim) × layers × dtype_bytes
                  (MLA: (kv_lora_rank + qk_rope_head_dim) × layers × dtype_bytes)
    max_total_num_tokens = int(rest × 2³⁰) // cell_size, then whole pages of page_size

``mem_fraction_static``'s default (srt/server_args.py ``_handle_gpu_memory_settings``), from the
card's memory in MiB and tp::

    reserved = 512 + max(chunked_prefill_size, 2048) × 1.5 + cuda_graph_max_bs × 2 + tp / 8 × 1024
    reserved = max(reserved, 10240) on a card above 60 GiB
    mem_fraction_static = round((gpu_mem − reserved) / gpu_mem, 3)

with chunked_prefill_size and cuda_graph_max_bs picked by the card's memory (``CARD_DEFAULTS``).
What start-up itself takes (the CUDA context, NCCL with tp > 1) is an estimate from logs."""

from __future__ import annotations

from llmcalc.errors import UsageError
from llmcalc.formulas.quant import WeightFormat
from llmcalc.model.spec import ModelSpec
from llmcalc.planning.engines.budget import (
    EngineBudget,
    cuda_memory,
    fraction,
    kv_bytes_per_token_rank,
    not_modelled,
    weights_per_gpu,
)
from llmcalc.planning.hardware import Accelerator, GiB
from llmcalc.units import DType

VERSION = "0.5"
MiB = 1 << 20
DEFAULT_PAGE_SIZE = 1  # server_args.py ServerArgs.page_size
# server_args.py _handle_gpu_memory_settings: (below this many MiB, chunked_prefill_size,
# cuda_graph_max_bs with tp < 4, with tp ≥ 4)
CARD_DEFAULTS = (
    (20 * 1024, 2048, 8, 8),
    (35 * 1024, 2048, 24, 80),
    (60 * 1024, 4096, 32, 160),
    (90 * 1024, 8192, 256, 512),
    (160 * 1024, 8192, 256, 512),
)
LARGEST_CARD = (16384, 512, 512)
# What start-up holds before the weights load ("Init torch distributed ends. mem usage"): the
# CUDA context and, with tp > 1, NCCL's buffers — sglang#11716's tp 8 H200 log shows 1.77–2.01 GB
# per rank; llmcalc takes 0.6 GiB alone and 2 GiB with tp > 1 (estimates from those logs).
STARTUP = int(0.6 * GiB)
STARTUP_TP = 2 * GiB


def card_defaults(gpu_mem_mib: float, tp: int) -> tuple[int, int]:
    """(chunked_prefill_size, cuda_graph_max_bs) SGLang picks for a card of this many MiB."""
    for below, chunk, small, large in CARD_DEFAULTS:
        if gpu_mem_mib < below:
            return chunk, small if tp < 4 else large
    return LARGEST_CARD[0], LARGEST_CARD[1]


def default_mem_fraction_static(gpu_mem_mib: float, *, tp: int, chunked_prefill_size: int,
                                cuda_graph_max_bs: int) -> float:
    """server_args.py's default (no DP attention, no speculative decoding)."""
    reserved = 512 + max(chunked_prefill_size, 2048) * 1.5 + cuda_graph_max_bs * 2 + tp / 8 * 1024
    if gpu_mem_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((gpu_mem_mib - reserved) / gpu_mem_mib, 3)


def plan(
    spec: ModelSpec,
    *,
    accelerator: Accelerator,
    dtype: WeightFormat,
    kv_dtype: DType,
    tp: int = 1,
    version: str | None = None,
    mem_fraction_static: float | None = None,
    chunked_prefill_size: int | None = None,
    max_running_requests: int | None = None,
    page_size: int | None = None,
    context_length: int | None = None,
    kv_memory: int | None = None,
) -> EngineBudget:
    """SGLang's pool on one GPU of ``accelerator`` (None: SGLang's default)."""
    not_modelled(spec, "sglang")
    total = cuda_memory(accelerator)
    gpu_mem = total / MiB
    chunk, graph_bs = card_defaults(gpu_mem, tp)
    chunk = chunked_prefill_size or chunk
    mfs = fraction(mem_fraction_static if mem_fraction_static is not None
                   else default_mem_fraction_static(gpu_mem, tp=tp, chunked_prefill_size=chunk,
                                                    cuda_graph_max_bs=graph_bs),
                   "--mem-fraction-static")
    page = page_size or DEFAULT_PAGE_SIZE
    if page < 1:
        raise UsageError(f"--page-size {page}: must be 1 or more")
    context = context_length or spec.shape.max_position_embeddings or 2048
    startup = STARTUP + (STARTUP_TP if tp > 1 else 0)
    after_start = total - startup  # profile_max_num_token's total_gpu_memory
    terms = {
        "startup": startup,
        "reserved": int(after_start * (1 - mfs)),  # activations, CUDA graphs: outside the pool
        "weights": weights_per_gpu(spec, dtype=dtype, tp=tp),
    }
    cell = kv_bytes_per_token_rank(spec, tp=tp, kv_dtype=kv_dtype)
    rest = kv_memory if kv_memory is not None else total - sum(terms.values())
    tokens = max(rest, 0) // cell // page * page
    requests = max_running_requests or min(max(int(tokens / context * 512), 2048), 4096)
    refusal = None
    if tokens <= 0:
        refusal = ("Not enough memory. Please try to increase --mem-fraction-static. "
                   f"Current value: self.server_args.mem_fraction_static={float(mfs)}")
    settings: dict[str, object] = {
        "tp_size": tp, "mem_fraction_static": float(mfs), "chunked_prefill_size": chunk,
        "cuda_graph_max_bs": graph_bs, "max_running_requests": requests, "page_size": page,
        "context_length": context,
    }
    return EngineBudget(
        engine="sglang", version=version or VERSION, cuda_memory_bytes=total, usable_bytes=total,
        terms=terms, kv_cache_bytes=max(rest, 0), bytes_per_token=cell, block_tokens=page,
        kv_cache_tokens=tokens, max_model_len=context, max_concurrency=tokens / context,
        settings=settings, command=command(spec, settings, kv_dtype=kv_dtype), refusal=refusal,
        from_log=kv_memory is not None,
    )


def command(spec: ModelSpec, s: dict[str, object], *, kv_dtype: DType) -> str:
    """The `python -m sglang.launch_server` line with these settings."""
    model = spec.origin.repo_id if spec.origin and spec.origin.repo_id else spec.name
    parts = [f"python -m sglang.launch_server --model-path {model}", f"--tp {s['tp_size']}",
             f"--mem-fraction-static {s['mem_fraction_static']}",
             f"--context-length {s['context_length']}",
             f"--chunked-prefill-size {s['chunked_prefill_size']}",
             f"--max-running-requests {s['max_running_requests']}",
             f"--page-size {s['page_size']}"]
    if kv_dtype.value.startswith("fp8"):
        parts.append("--kv-cache-dtype fp8_e4m3")
    return " ".join(parts)
