"""TensorRT-LLM's KV cache budget (``fit --engine trtllm``), read from its source.

Followed: TensorRT-LLM 1.0, the PyTorch backend (``trtllm-serve``). After the weights load it
runs a warm-up forward of max_num_tokens, then sizes the cache from the memory left free
(tensorrt_llm/_torch/pyexecutor/_util.py ``KvCacheCreator``, ``_get_free_gpu_memory_fraction``)::

    free = total − CUDA context/NCCL − weights − the warm-up's activation peak
    kv   = free × kv_cache_config.free_gpu_memory_fraction        (default 0.9)

and lays it out in blocks of tokens_per_block tokens (cpp/tensorrt_llm/batch_manager/
kvCacheManager.cpp ``BaseKVCacheManager::calculateMaxNumBlocks``)::

    block = tokens_per_block × kv_heads_per_rank × (d_k + d_v) × layers × dtype_bytes
    blocks = kv // block;  "Allocated X GiB for max tokens in paged KV cache (blocks × tokens_per_block)"

The context, NCCL and the activation peak are estimates (llmcalc.planning.engines.budget)."""

from __future__ import annotations

from llmcalc.errors import UsageError
from llmcalc.formulas.quant import WeightFormat
from llmcalc.model.spec import ModelSpec
from llmcalc.planning.engines.budget import (
    EngineBudget,
    cuda_memory,
    forward_peak,
    fraction,
    kv_bytes_per_token_rank,
    not_modelled,
    sampler_peak,
    weights_per_gpu,
)
from llmcalc.planning.hardware import Accelerator, GiB
from llmcalc.units import DType

VERSION = "1.0"
# tensorrt_llm/llmapi/llm_args.py: KvCacheConfig.free_gpu_memory_fraction 0.9,
# tokens_per_block 32, BaseLlmArgs.max_batch_size 2048, max_num_tokens 8192
DEFAULT_FRACTION = 0.9
DEFAULT_TOKENS_PER_BLOCK = 32
DEFAULT_MAX_BATCH_SIZE = 2048
DEFAULT_MAX_NUM_TOKENS = 8192
# The CUDA context and the runtime's workspaces (estimate), and NCCL's buffers with tp > 1
CONTEXT = int(0.6 * GiB)
CONTEXT_TP = int(1.5 * GiB)


def plan(
    spec: ModelSpec,
    *,
    accelerator: Accelerator,
    dtype: WeightFormat,
    kv_dtype: DType,
    tp: int = 1,
    version: str | None = None,
    kv_cache_free_gpu_memory_fraction: float | None = None,
    max_batch_size: int | None = None,
    max_num_tokens: int | None = None,
    tokens_per_block: int | None = None,
    max_seq_len: int | None = None,
    kv_memory: int | None = None,
) -> EngineBudget:
    """TensorRT-LLM's cache on one GPU of ``accelerator`` (None: its default)."""
    not_modelled(spec, "trtllm")
    if kv_memory is None and tuple(int(p) for p in (version or VERSION).split(".")) < (1,):
        raise UsageError(f"--engine trtllm=={version}: before 1.0 a built TensorRT engine sizes "
                         "the runtime's buffers, which llmcalc does not read; give --kv-memory "
                         "from its log ('Allocated X GiB for max tokens in paged KV cache')")
    total = cuda_memory(accelerator)
    frac = fraction(kv_cache_free_gpu_memory_fraction if kv_cache_free_gpu_memory_fraction
                    is not None else DEFAULT_FRACTION, "--kv-cache-free-gpu-memory-fraction")
    batch = max_batch_size or DEFAULT_MAX_BATCH_SIZE
    num_tokens = max_num_tokens or DEFAULT_MAX_NUM_TOKENS
    per_block = tokens_per_block or DEFAULT_TOKENS_PER_BLOCK
    seq_len = max_seq_len or spec.shape.max_position_embeddings or 2048
    terms = {
        "context": CONTEXT + (CONTEXT_TP if tp > 1 else 0),
        "weights": weights_per_gpu(spec, dtype=dtype, tp=tp),
        "activation_peak": max(forward_peak(spec, tokens=num_tokens, tp=tp),
                               sampler_peak(spec, seqs=min(batch, num_tokens))),
    }
    free = total - sum(terms.values())
    terms["kept_free"] = max(free, 0) - int(max(free, 0) * frac)
    per_token = kv_bytes_per_token_rank(spec, tp=tp, kv_dtype=kv_dtype)
    kv = kv_memory if kv_memory is not None else max(free, 0) - terms["kept_free"]
    tokens = max(kv, 0) // (per_block * per_token) * per_block
    refusal = None
    if tokens <= 0:
        refusal = ("no memory is left for the KV cache after the weights and the runtime's "
                   "buffers (llmcalc's estimate; TensorRT-LLM fails to allocate it)")
    settings: dict[str, object] = {
        "tp_size": tp, "kv_cache_free_gpu_memory_fraction": float(frac),
        "max_batch_size": batch, "max_num_tokens": num_tokens, "tokens_per_block": per_block,
        "max_seq_len": seq_len,
    }
    return EngineBudget(
        engine="trtllm", version=version or VERSION, cuda_memory_bytes=total,
        usable_bytes=total, terms=terms, kv_cache_bytes=max(kv, 0), bytes_per_token=per_token,
        block_tokens=per_block, kv_cache_tokens=tokens, max_model_len=seq_len,
        max_concurrency=tokens / seq_len, settings=settings,
        command=command(spec, settings), refusal=refusal, from_log=kv_memory is not None,
    )


def command(spec: ModelSpec, s: dict[str, object]) -> str:
    """The `trtllm-serve` line with these settings (the KV fraction goes in the YAML of
    --extra_llm_api_options: kv_cache_config: free_gpu_memory_fraction)."""
    model = spec.origin.repo_id if spec.origin and spec.origin.repo_id else spec.name
    return (f"trtllm-serve {model} --tp_size {s['tp_size']} "
            f"--kv_cache_free_gpu_memory_fraction {s['kv_cache_free_gpu_memory_fraction']} "
            f"--max_batch_size {s['max_batch_size']} --max_num_tokens {s['max_num_tokens']} "
            f"--max_seq_len {s['max_seq_len']}")
