"""Planning a deployment and reading a measured run: what fits on a card, how fast it can decode,
and the model FLOPs utilisation (MFU) a training throughput means.

Pure functions; nothing here prints. Sources, each used once below:

- serving memory: weights at ``dtype`` plus the KV cache at ``kv_dtype`` (llmcalc.formulas.memory), and,
  with ``attention`` given, the prefill's transients (llmcalc.formulas.activations.prefill_bytes, measured
  against PyTorch's allocator), against the cards' memory less a stated headroom for the runtime
  (CUDA context, allocator slack) only;
- decode speed: a memory-bandwidth roofline — every decode step reads the weights it uses
  (llmcalc.formulas.quant.step_weight_bytes: the routed experts the batch reaches, the embedding
  rows looked up) and the whole KV cache once, so a step takes at least (bytes read) / (bandwidth);
- MFU: Chowdhery et al. 2022 (PaLM), Appendix B — model FLOPs per token × tokens/s over the peak.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from llmcalc.errors import ParameterError
from llmcalc.formulas import activations as act
from llmcalc.formulas import memory
from llmcalc.formulas.quant import WeightFormat, format_notes, step_weight_bytes
from llmcalc.model.spec import ModelSpec
from llmcalc.planning.hardware import DEFAULT_HEADROOM, Accelerator, usable_memory
from llmcalc.units import DType

# Largest context searched when a config states no max_position_embeddings.
UNSTATED_CONTEXT_LIMIT = 2**24
# Largest batch searched when a sequence keeps nothing in memory (no KV cache, no state).
UNBOUNDED_BATCH_LIMIT = 2**24


@dataclass(frozen=True)
class DecodeBound:
    """Memory-bandwidth roofline of one decode step at ``batch`` sequences of ``ctx`` tokens."""

    bytes_per_step: int  # the weights a step reads + the KV cache, each read once
    bandwidth: int  # bytes/s of all the GPUs together
    seconds_per_step: float
    tokens_per_sec_per_sequence: float
    tokens_per_sec: float  # all ``batch`` sequences together


@dataclass(frozen=True)
class ServingFit:
    """The largest context (for a batch) or batch (for a context) whose weights + KV cache fit."""

    gpus: int
    capacity: int  # memory of all the GPUs together
    headroom: float
    usable: int  # capacity × (1 − headroom)
    weights: int
    kv_bytes_per_token: int
    solve_for: str  # "ctx" or "batch"
    batch: int | None  # None when solving for the batch and not one sequence fits
    ctx: int | None  # None when solving for the context and not one token fits
    context_limit: int  # max_position_embeddings, or UNSTATED_CONTEXT_LIMIT
    limited_by_context_limit: bool
    kv_bytes: int | None  # the cache at (batch, ctx); None when nothing fits
    fits: bool  # weights plus at least one token of cache fit
    decode: DecodeBound | None  # None when nothing fits
    attention: act.Kernel | None = None  # prefill transients counted for this kernel; None: not
    prefill_chunk: int | None = None  # tokens prefilled at once (chunked prefill); None: all
    prefill_bytes: int | None = None  # the prefill's largest transient at the answer
    limited_by_batch_limit: bool = False  # a sequence keeps nothing: UNBOUNDED_BATCH_LIMIT answers
    notes: tuple[str, ...] = ()  # what the weights' format leaves wide (formulas.quant.format_notes)

    @property
    def steady_bytes(self) -> int | None:
        """Weights + cache: what stays held while decoding."""
        return None if self.kv_bytes is None else self.weights + self.kv_bytes

    @property
    def peak_bytes(self) -> int | None:
        """Weights + cache + the prefill's transients: the peak of serving the answer."""
        steady = self.steady_bytes
        return None if steady is None else steady + (self.prefill_bytes or 0)


def decode_bound(
    spec: ModelSpec, *, batch: int, ctx: int, dtype: WeightFormat, kv_dtype: DType, bandwidth: int
) -> DecodeBound:
    """step time ≥ (weight bytes read + KV bytes) / bandwidth; one new token per sequence per step.

    The weights a step of ``batch`` tokens reads (:func:`step_weight_bytes`): every matmul's, the
    routed experts the tokens reach (mixture-of-experts models), and the rows looked up of each
    embedding table (a gather; a table tied to the LM head is read whole by its matmul).
    """
    read = step_weight_bytes(spec, dtype, tokens=batch, decode=True) + memory.kv_cache_bytes(
        spec, batch=batch, ctx=ctx, dtype=kv_dtype
    )
    seconds = read / bandwidth
    return DecodeBound(read, bandwidth, seconds, 1 / seconds, batch / seconds)


def fit(
    spec: ModelSpec,
    *,
    accelerator: Accelerator,
    gpus: int = 1,
    dtype: WeightFormat,
    kv_dtype: DType,
    batch: int | None = None,
    ctx: int | None = None,
    headroom: float = DEFAULT_HEADROOM,
    attention: act.Kernel | None = None,
    prefill_chunk: int | None = None,
) -> ServingFit:
    """Largest ``ctx`` for ``batch`` (default 1), or largest batch for ``ctx`` when it is given.

    The weights and the cache are taken as split evenly over ``gpus`` (tensor parallelism), so the
    budget is the memory of all of them, less ``headroom`` of it. With ``attention``, the prompt's
    prefill (all of it at once, or ``prefill_chunk`` tokens at a time) must fit beside them too.
    """
    if gpus < 1:
        raise ParameterError("{gpus} {value}: must be 1 or more", value=gpus)
    if batch is not None and ctx is not None:
        raise ParameterError("{batch} and {ctx}: give one; fit finds the largest value of the other")
    if batch is not None and batch < 1:
        raise ParameterError("{batch} {value}: must be 1 or more", value=batch)
    if ctx is not None and ctx < 1:
        raise ParameterError("{ctx} {value}: must be 1 or more", value=ctx)
    capacity = gpus * accelerator.memory_bytes
    usable = usable_memory(capacity, headroom=headroom)
    weights = memory.weight_bytes(spec, dtype=dtype)
    budget = usable - weights
    limit = spec.shape.max_position_embeddings or UNSTATED_CONTEXT_LIMIT

    if prefill_chunk is not None and prefill_chunk < 1:
        raise ParameterError("{prefill_chunk} {value}: must be 1 or more", value=prefill_chunk)
    act_bytes = 4 if dtype is DType.fp32 else 2  # quantized weights compute in 16 bits

    def transient(b: int, c: int) -> int:
        if attention is None:
            return 0
        return act.prefill_bytes(spec, batch=b, tokens=c, act_bytes=act_bytes, kernel=attention,
                                 chunk=prefill_chunk) // gpus

    def cache(b: int, c: int) -> int:
        return memory.kv_cache_bytes(spec, batch=b, ctx=c, dtype=kv_dtype)

    def ok(b: int, c: int) -> bool:
        return cache(b, c) + transient(b, c) <= budget

    best_batch: int | None
    best_ctx: int | None
    if ctx is not None:
        solve_for = "batch"
        best_batch = _largest_batch(cache(1, ctx), budget)
        if best_batch is not None and attention is not None:
            best_batch = largest(lambda b: ok(b, ctx), best_batch)
        best_ctx = ctx
        limited = False
        batch_limited = best_batch == UNBOUNDED_BATCH_LIMIT and cache(1, ctx) == 0
    else:
        solve_for = "ctx"
        b = best_batch = batch or 1
        best_ctx = largest(lambda c: ok(b, c), limit) if budget > 0 else None
        limited = best_ctx == limit
        batch_limited = False
    kv = cache(best_batch, best_ctx) if best_batch and best_ctx else None
    decode = (
        decode_bound(spec, batch=best_batch, ctx=best_ctx, dtype=dtype, kv_dtype=kv_dtype,
                     bandwidth=gpus * accelerator.bandwidth)
        if best_batch and best_ctx and accelerator.bandwidth
        else None
    )
    return ServingFit(
        gpus=gpus,
        capacity=capacity,
        headroom=headroom,
        usable=usable,
        weights=weights,
        kv_bytes_per_token=memory.kv_cache_bytes_per_token(spec, dtype=kv_dtype),
        solve_for=solve_for,
        batch=best_batch,
        ctx=best_ctx,
        context_limit=limit,
        limited_by_context_limit=limited,
        kv_bytes=kv,
        fits=kv is not None,
        decode=decode,
        attention=attention,
        prefill_chunk=prefill_chunk,
        prefill_bytes=transient(best_batch, best_ctx) if attention is not None and best_batch
        and best_ctx else None,
        limited_by_batch_limit=batch_limited,
        notes=format_notes(spec, dtype),
    )


def _largest_batch(per_sequence: int, budget: int) -> int | None:
    """How many sequences of ``per_sequence`` cache bytes fit in ``budget``; None if not one.
    A model that keeps nothing per sequence (no KV cache, no state) is not held back by the
    cache: any batch fits beside the weights, so the search's cap answers."""
    if budget < per_sequence:
        return None
    return budget // per_sequence if per_sequence else UNBOUNDED_BATCH_LIMIT


def largest(ok: Callable[[int], bool], limit: int) -> int | None:
    """The largest n in [1, limit] with ok(n) (ok is monotone: true, then false), or None."""
    if not ok(1):
        return None
    lo, hi = 1, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


# ---- MFU -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Utilisation:
    """MFU from a measured training throughput (PaLM, App. B), and the causal variant beside it."""

    tokens_per_sec: int
    flops_per_token: int  # PaLM: 3 × (weights + every query over all ctx keys) = 6N + 12·L·H·Q·T
    flops_per_token_causal: float  # the same with only the pairs a causal mask keeps
    achieved_flops: float  # per GPU, PaLM's count
    peak_flops: int  # per GPU
    mfu: float
    mfu_causal: float


def model_flops_utilisation(
    spec: ModelSpec, *, tokens_per_sec: int, ctx: int, gpus: int, accelerator: Accelerator
) -> Utilisation:
    """MFU = tokens/s × training FLOPs per token / (GPUs × peak FLOP/s).

    PaLM (Chowdhery et al. 2022), App. B counts 6·N + 12·L·H·Q·T per token: the attention of every
    query over all T positions of its sequence, as if unmasked; that is the headline figure here.
    Counting only the causal pairs (what ``train`` uses) gives the lower ``mfu_causal``.
    """
    if tokens_per_sec <= 0:
        raise ParameterError("{tokens_per_sec} {value:g}: must be more than zero",
                             value=tokens_per_sec)
    if gpus < 1:
        raise ParameterError("{gpus} {value}: must be 1 or more", value=gpus)
    from llmcalc.formulas import flops  # MFU only: serving plans need no FLOPs
    from llmcalc.planning.training import training_flops

    per_token = flops.training_flops_per_token(spec, ctx=ctx)
    per_token_causal = training_flops(spec, tokens=ctx, ctx=ctx).total / ctx
    capacity = gpus * accelerator.peak_flops
    return Utilisation(
        tokens_per_sec=tokens_per_sec,
        flops_per_token=per_token,
        flops_per_token_causal=per_token_causal,
        achieved_flops=tokens_per_sec * per_token / gpus,
        peak_flops=accelerator.peak_flops,
        mfu=tokens_per_sec * per_token / capacity,
        mfu_causal=tokens_per_sec * per_token_causal / capacity,
    )
