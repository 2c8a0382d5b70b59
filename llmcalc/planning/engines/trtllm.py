"""TensorRT-LLM's KV cache budget (``fit --engine trtllm``), read from its source.

Two runtimes, chosen by ``--engine trtllm==VERSION``:

**1.0 and later (default: 1.0): the PyTorch backend** (``trtllm-serve``, the LLM API). After the
weights load it runs a warm-up forward of max_num_tokens, then sizes the cache from the peak
(tensorrt_llm/_torch/pyexecutor/_util.py ``KvCacheCreator``: ``_cal_max_tokens``, later
``_cal_max_memory``, both ``available_kv_mem = (total_gpu_memory − peak_memory + tmp_kv) ×
fraction``, the estimation run's temporary cache added back)::

    kv = (total − CUDA context/NCCL − weights − the warm-up's activation peak) × fraction  (0.9)

**Before 1.0: a built TensorRT engine** run by the C++ executor (trtllm-build, then
``trtllm-serve ENGINE_DIR``, Triton's tensorrtllm backend, trtllm-bench). The runtime loads the
engine (weights), creates the execution context with the activation memory TensorRT fixed at
build time, allocates its runtime buffers and the decoder for max_batch_size requests
(cpp/tensorrt_llm/batch_manager/trtGptModelInflightBatching.cpp, the constructor: "Allocated X
GPU memory for runtime buffers" / "for decoder"), and only then reads the free memory
(kvCacheManager.cpp ``BaseKVCacheManager::calculateFreeMemBytes`` / 0.x
``KVCacheManager::calculateMaxNumBlocks``: ``cudaMemGetInfo`` free + the pool's free bytes,
"Memory usage when calculating max tokens in paged kv cache: total, available")::

    kv = (total − context − engine weights − execution context − runtime buffers − decoder)
         × kv_cache_free_gpu_mem_fraction                                          (0.9)

Both lay the cache out in blocks of tokens_per_block tokens (``calculateMaxNumBlocks``: blocks =
kv // (tokens_per_block × bytes a token); "Allocated X GiB for max tokens in paged KV cache
(blocks × tokens_per_block)"); before 0.6 the runtime logged the unrounded fraction × free /
bytes a token ("Using N tokens in paged KV cache", TensorRT-LLM#224).

The context, NCCL, the activation peak and the 0.x runtime's buffers are estimates, each constant
tied below to the log it comes from (tests/data/engine_logs.json)."""

from __future__ import annotations

from llmcalc.errors import UsageError
from llmcalc.formulas.quant import FORMATS, WeightFormat
from llmcalc.model.spec import ModelSpec
from llmcalc.planning.engines.budget import (
    ACTIVATION_BYTES,
    EngineBudget,
    cuda_memory,
    deepseek_sparse,
    forward_peak,
    fraction,
    kv_bytes_per_token_rank,
    not_modelled,
    refuse_unfollowed_sparse,
    sampler_peak,
    version_tuple,
    weights_per_gpu,
)
from llmcalc.planning.hardware import Accelerator, GiB
from llmcalc.units import DType

VERSION = "1.0"
# tensorrt_llm/llmapi/llm_args.py: KvCacheConfig.free_gpu_memory_fraction 0.9,
# tokens_per_block 32, BaseLlmArgs.max_batch_size 2048, max_num_tokens 8192; trtllm-build's
# BuildConfig (tensorrt_llm/builder.py) has the same max_batch_size and max_num_tokens, and
# kv_cache_free_gpu_mem_fraction 0.9 is executor::KvCacheConfig::kDefaultGpuMemFraction
DEFAULT_FRACTION = 0.9
DEFAULT_TOKENS_PER_BLOCK = 32
DEFAULT_MAX_BATCH_SIZE = 2048
DEFAULT_MAX_NUM_TOKENS = 8192
# DeepSeek sparse attention (DeepSeek-V3.2): TensorRT-LLM runs it after 1.0 (its DeepSeek-V3.2-Exp
# guide, NVIDIA/TensorRT-LLM#9141, Nov 2025), with the indexer's keys in a cache of their own
# beside the MLA latent, in blocks of 64: a layout llmcalc has not read, so it refuses
SPARSE_REFUSAL = ("--engine trtllm: {name} has DeepSeek sparse attention, whose indexer-key cache "
                  "TensorRT-LLM keeps beside the MLA cache in a layout llmcalc does not follow; "
                  "use --engine vllm or --engine sglang")
# The CUDA context and the runtime's workspaces (estimate), and NCCL's buffers with tp > 1
CONTEXT = int(0.6 * GiB)
CONTEXT_TP = int(1.5 * GiB)

# -- before 1.0: the C++ executor over a built engine ------------------------------------------
# Blocks of 64 tokens (trtllm-build's tokens_per_block before 0.17: TensorRT-LLM#2268's 0.13
# engine, 631 blocks for 21.89 GiB × 0.9 of Qwen1.5-7B's 512 KiB a token; the 0.12 trtllm-bench
# log, "Number of tokens per block: 64"); 32 in the 0.19 build of TensorRT-LLM#4275.
ENGINE_TOKENS_PER_BLOCK_OLD = 64
# The CUDA context, cuBLAS/TensorRT workspaces of the C++ runtime: 0.75 GiB, what is left of the
# A4000 log (TensorRT-LLM#1188, 0.14: 15.84 − 5.03 available − 0.85 engine − 0.76 execution
# context − 2.66 runtime buffers − 5.76 decoder = 0.78 GiB) and of the 0.8 A100 log
# (TensorRT-LLM#1400: 6.53 GiB engine + context, 64.75 GiB cache at 0.9).
ENGINE_CONTEXT = int(0.75 * GiB)
# With tp > 1, NCCL and the custom all-reduce workspace: 0.25 GiB (estimate). The one tp-2 log,
# LLaVA-1.5-7B on two H100 NVL (tensorrtllm_backend docs/multimodal.md), leaves 0.06 GiB past the
# single-GPU terms (93.10 − 85.57 available − 6.28 engine − 0.44 execution context − 0.75) with a
# 0.28 GiB pool for the vision encoder on GPU 0 beside it; llmcalc keeps room for that pool.
ENGINE_CONTEXT_TP = int(0.25 * GiB)
# Runtime buffers (RuntimeBuffers::create): two float32 [max_batch_size, vocab] logits buffers
# and the [max_batch_size, max_seq_len] int32 output ids: 2.57 GiB for TensorRT-LLM#1188's 2048 ×
# 151,936 (logged 2.66 GB), 1.04 GiB for the 0.12 trtllm-bench quick start's 4096 × 32,000
# (logged 1.14).
RUNTIME_LOGITS_BYTES = 2 * 4
# The decoder (GptDecoderBatched's sampling buffers): per request, float32 copies of the
# vocabulary's logits/probabilities and a fixed 600 KiB (top-k/top-p workspace, output ids,
# curand state). Four copies before 0.17: 5.81 GiB for #1188's 2048 × 151,936 (logged 5.76 GB)
# and 4.30 GiB for the 0.12 trtllm-bench quick start's 4096 × 32,000 (benchmarks/Suite.md, logged
# 4.35, if its model has the 32,000 vocabulary of the Llama-2-7B it names; its cache's bytes a
# token are not Llama-2-7B's, so it is no test row); one from 0.17 (the only later
# log, TensorRT-LLM#4275's 0.19 RTX 5090 run, leaves 2.2 GiB for it at 2048 × 128,256).
DECODER_VOCAB_COPIES_OLD = 4
DECODER_VOCAB_COPIES = 1
DECODER_PER_REQUEST = 600 * 1024
DECODER_CHANGED = (0, 17)




def trt_weights_format(dtype: WeightFormat) -> WeightFormat:
    """TensorRT-LLM's 8-bit checkpoints keep the embedding and lm_head in 16 bits: ModelOpt's FP8
    (examples/quantization/quantize.py --qformat fp8: ``*lm_head*`` disabled by default, the
    embedding is no linear) and SmoothQuant / INT8 weight-only (linears only). Plain ``fp8`` or
    ``int8`` is read as those layouts (8-bit linears with a scale a row, the rest bf16)."""
    if dtype is DType.fp8:
        return FORMATS["fp8-channel"]
    if dtype is DType.int8:
        return FORMATS["w8a8"]
    return dtype


def untied_lm_head(spec: ModelSpec, *, tp: int) -> int:
    """A built engine holds lm_head as its own 16-bit weight even where the checkpoint ties it to
    the embedding (the converters copy it): TensorRT-LLM#1188's Qwen2.5-0.5B int8 engine loads
    875 MiB, 0.59 GiB of int8 linears and 16-bit embedding + 0.25 GiB for the copy."""
    tied = sum(t.numel for t, g in spec.all_tensors() if t.tied_to is not None and g is None)
    return -(-tied * ACTIVATION_BYTES // tp)


def engine_terms(spec: ModelSpec, *, dtype: WeightFormat, tp: int, batch: int, num_tokens: int,
                 seq_len: int, version: tuple[int, ...]) -> dict[str, int]:
    """What the 0.x C++ runtime holds before it reads the free memory, on one rank."""
    vocab = spec.shape.vocab_size
    copies = DECODER_VOCAB_COPIES if version >= DECODER_CHANGED else DECODER_VOCAB_COPIES_OLD
    return {
        "context": ENGINE_CONTEXT + (ENGINE_CONTEXT_TP if tp > 1 else 0),
        "weights": weights_per_gpu(spec, dtype=trt_weights_format(dtype), tp=tp)
        + untied_lm_head(spec, tp=tp),
        # TensorRT's activation memory, fixed at build (docs/source/reference/memory.md:
        # "max number of input tokens × some constant factor"): one layer's peak over
        # max_num_tokens and lm_head's 16-bit [max_batch_size, vocab/tp] output. 0.96 GiB for the
        # 0.12 Llama-2-7B build at 4096 / 8192 (logged 928.77 MiB), 0.84 GiB for #1188's
        # Qwen2.5-0.5B at 2048 / 8192 (logged 773.51 MiB).
        "execution_context": forward_peak(spec, tokens=num_tokens, tp=tp)
        + batch * -(-vocab // tp) * ACTIVATION_BYTES,
        "runtime_buffers": batch * (vocab * RUNTIME_LOGITS_BYTES + seq_len * 4),
        "decoder": batch * (copies * vocab * 4 + DECODER_PER_REQUEST),
    }


def runs(spec: ModelSpec, version: str | None) -> None:
    """Refuse a model TensorRT-LLM ``version`` (None: ``VERSION``) does not run at all, as
    ``latency --engine trtllm`` does too: DeepSeek sparse attention (DeepSeek-V3.2's, also
    GLM-5's) in 1.0, which came on main after it (``SPARSE_REFUSAL``'s comment)."""
    v = version_tuple(version, VERSION)
    if deepseek_sparse(spec) and v[:2] <= (1, 0):
        raise UsageError("--engine trtllm==" + ".".join(map(str, v)) + f": {spec.name} has "
                         "DeepSeek sparse attention, which TensorRT-LLM 1.0 does not run (it "
                         "came after 1.0: NVIDIA/TensorRT-LLM#9141); use --engine vllm or "
                         "--engine sglang")


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
    refuse_unfollowed_sparse(spec, "trtllm")
    runs(spec, version)
    if deepseek_sparse(spec):
        raise UsageError(SPARSE_REFUSAL.format(name=spec.name))
    v = version_tuple(version, VERSION)
    built_engine = v < (1,)
    total = cuda_memory(accelerator)
    frac = fraction(kv_cache_free_gpu_memory_fraction if kv_cache_free_gpu_memory_fraction
                    is not None else DEFAULT_FRACTION, "--kv-cache-free-gpu-memory-fraction")
    batch = max_batch_size or DEFAULT_MAX_BATCH_SIZE
    num_tokens = max_num_tokens or DEFAULT_MAX_NUM_TOKENS
    default_block = (ENGINE_TOKENS_PER_BLOCK_OLD if built_engine and v < DECODER_CHANGED
                     else DEFAULT_TOKENS_PER_BLOCK)
    per_block = tokens_per_block or default_block
    seq_len = max_seq_len or spec.shape.max_position_embeddings or 2048
    if built_engine:
        terms = engine_terms(spec, dtype=dtype, tp=tp, batch=batch, num_tokens=num_tokens,
                             seq_len=seq_len, version=v)
    else:
        terms = {
            "context": CONTEXT + (CONTEXT_TP if tp > 1 else 0),
            "weights": weights_per_gpu(spec, dtype=trt_weights_format(dtype), tp=tp),
            "activation_peak": max(forward_peak(spec, tokens=num_tokens, tp=tp),
                                   sampler_peak(spec, seqs=min(batch, num_tokens))),
        }
    free = total - sum(terms.values())
    terms["kept_free"] = max(free, 0) - int(max(free, 0) * frac)
    per_token = kv_bytes_per_token_rank(spec, tp=tp, kv_dtype=kv_dtype)
    kv = kv_memory if kv_memory is not None else max(free, 0) - terms["kept_free"]
    if v < (0, 6):  # "Using N tokens in paged KV cache": fraction × free / bytes, unrounded
        tokens = max(kv, 0) // per_token
        rule = "fraction × free / bytes a token, unrounded"
    else:
        tokens = max(kv, 0) // (per_block * per_token) * per_block
        rule = ""
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
        command=(engine_command if built_engine else command)(spec, settings),
        refusal=refusal, from_log=kv_memory is not None, tokens_rule=rule,
    )


def command(spec: ModelSpec, s: dict[str, object]) -> str:
    """The `trtllm-serve` line with these settings (the KV fraction goes in the YAML of
    --extra_llm_api_options: kv_cache_config: free_gpu_memory_fraction)."""
    model = spec.origin.repo_id if spec.origin and spec.origin.repo_id else spec.name
    return (f"trtllm-serve {model} --tp_size {s['tp_size']} "
            f"--kv_cache_free_gpu_memory_fraction {s['kv_cache_free_gpu_memory_fraction']} "
            f"--max_batch_size {s['max_batch_size']} --max_num_tokens {s['max_num_tokens']} "
            f"--max_seq_len {s['max_seq_len']}")


def engine_command(spec: ModelSpec, s: dict[str, object]) -> str:
    """Before 1.0: the trtllm-build line that fixes these buffers (the KV fraction is a runtime
    setting: Triton's kv_cache_free_gpu_mem_fraction, trtllm-serve's
    --kv_cache_free_gpu_memory_fraction)."""
    return (f"trtllm-build --checkpoint_dir CKPT --output_dir ENGINE --max_batch_size "
            f"{s['max_batch_size']} --max_num_tokens {s['max_num_tokens']} --max_seq_len "
            f"{s['max_seq_len']} --tokens_per_block {s['tokens_per_block']} && trtllm-serve "
            f"ENGINE --tp_size {s['tp_size']} --kv_cache_free_gpu_memory_fraction "
            f"{s['kv_cache_free_gpu_memory_fraction']}")
