"""Figures along a range of contexts, for charts: the same functions as `llmcalc flops/memory`.

Each point is computed by the core formula for that context (``attention_flops_per_token``,
``kv_cache_bytes``); nothing is interpolated, so a chart's point at 4k equals ``--ctx 4k``.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmcalc.errors import ParameterError
from llmcalc.formulas.flops import (
    attention_crossover_ctx,
    attention_flops_per_token,
    weight_flops_per_token,
)
from llmcalc.formulas.memory import kv_cache_bytes, weight_bytes
from llmcalc.formulas.quant import WeightFormat
from llmcalc.model.spec import ModelSpec
from llmcalc.units import DType

MIN_CTX = 128
MAX_CTX = 2**30


def context_grid(ctx_max: int, *, ctx_min: int = MIN_CTX) -> tuple[int, ...]:
    """Powers of two from ``ctx_min`` up to ``ctx_max``, and ``ctx_max`` itself."""
    if not ctx_min <= ctx_max <= MAX_CTX:
        raise ParameterError("{ctx_max} {value}: must be from {low} to 2^30", value=ctx_max,
                             low=ctx_min)
    points = []
    c = ctx_min
    while c < ctx_max:
        points.append(c)
        c *= 2
    points.append(ctx_max)
    return tuple(points)


@dataclass(frozen=True)
class FlopsSeries:
    """Forward FLOPs per token at each context: weights (flat) and attention (grows with n)."""

    ctx: tuple[int, ...]
    weight_flops_per_token: int
    attention_flops_per_token: tuple[int, ...]
    crossover_ctx: int | None  # where attention overtakes the weights; None: never

    @property
    def forward_flops_per_token(self) -> tuple[int, ...]:
        return tuple(self.weight_flops_per_token + a for a in self.attention_flops_per_token)


def flops_series(spec: ModelSpec, ctxs: tuple[int, ...]) -> FlopsSeries:
    return FlopsSeries(
        ctx=ctxs,
        weight_flops_per_token=weight_flops_per_token(spec),
        attention_flops_per_token=tuple(attention_flops_per_token(spec, ctx=c) for c in ctxs),
        crossover_ctx=attention_crossover_ctx(spec),
    )


@dataclass(frozen=True)
class MemorySeries:
    """Weights and the KV cache of ``batch`` sequences at each context, in bytes."""

    ctx: tuple[int, ...]
    batch: int
    dtype: WeightFormat  # a plain dtype or a quantized format (llmcalc.formulas.quant)
    kv_dtype: DType
    weights_bytes: int
    kv_cache_bytes: tuple[int, ...]

    @property
    def total_bytes(self) -> tuple[int, ...]:
        return tuple(self.weights_bytes + kv for kv in self.kv_cache_bytes)


def memory_series(
    spec: ModelSpec, ctxs: tuple[int, ...], *, batch: int, dtype: WeightFormat, kv_dtype: DType
) -> MemorySeries:
    return MemorySeries(
        ctx=ctxs,
        batch=batch,
        dtype=dtype,
        kv_dtype=kv_dtype,
        weights_bytes=weight_bytes(spec, dtype=dtype),
        kv_cache_bytes=tuple(kv_cache_bytes(spec, batch=batch, ctx=c, dtype=kv_dtype)
                             for c in ctxs),
    )
