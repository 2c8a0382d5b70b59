"""`llmcalc fit` output: the memory budget, the largest context or batch, the decode-speed bound."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from llmcalc.formulas.quant import QuantFormat, WeightFormat
from llmcalc.model.spec import ModelSpec
from llmcalc.planning.hardware import Accelerator
from llmcalc.planning.serving import ServingFit
from llmcalc.render import accelerator_line, figures_table, gib, heading, n, verdict, window_cap
from llmcalc.render.grid import Col, Fig, Grid
from llmcalc.units import DType


def fit_view(
    spec: ModelSpec, f: ServingFit, *, accelerator: Accelerator, dtype: WeightFormat, kv_dtype: DType
) -> RenderableType:
    head = heading(spec.name, f"weights {dtype.value} · KV cache {kv_dtype.value} · "
                   f"{accelerator_line(accelerator, f.gpus)}")
    t = figures_table("memory (all GPUs together)", "", "bytes")
    if accelerator.unified_bytes:
        t.add_row(f"GPU memory (of {gib(accelerator.unified_bytes * f.gpus)} unified)",
                  gib(f.capacity))
    else:
        t.add_row("GPU memory", gib(f.capacity))
    t.add_row(f"headroom for the runtime ({f.headroom:.0%})" if f.attention is not None else
              f"headroom for activations and runtime ({f.headroom:.0%})", gib(f.capacity - f.usable))
    t.add_row(f"weights ({dtype.value})", gib(f.weights))
    t.add_row(f"KV cache per token ({kv_dtype.value})", f"{n(f.kv_bytes_per_token)} B")
    if f.batch is None or f.ctx is None or f.kv_bytes is None:
        t.add_section()
        t.add_row("largest fit", verdict(False))
        return Group(head, t, Text(_nothing_fits(f), style="bold red"))
    t.add_row(f"KV cache at batch {f.batch} × ctx {n(f.ctx)}", gib(f.kv_bytes))
    if f.attention is not None and f.peak_bytes is not None:
        t.add_row("steady state (weights + KV cache)", gib(f.steady_bytes or 0))
        chunk = f", {n(f.prefill_chunk)} tokens at a time" if f.prefill_chunk else ""
        t.add_row(f"prefill transients ({f.attention.value} attention{chunk})",
                  gib(f.prefill_bytes or 0))
        t.add_row("peak (steady state + prefill)", gib(f.peak_bytes))
    t.add_section()
    answer = (
        f"largest context at batch {f.batch}" if f.solve_for == "ctx"
        else f"largest batch at context {n(f.ctx)}"
    )
    value = n(f.ctx) if f.solve_for == "ctx" else n(f.batch)
    t.add_row(answer, value, style="bold")
    parts: list[RenderableType] = [head, t]
    cap = window_cap(spec, f.ctx)
    if cap:
        parts.append(Text(cap, style="yellow"))
    if f.limited_by_context_limit:
        parts.append(Text(
            f"capped at the model's max_position_embeddings ({n(f.context_limit)}); more would fit",
            style="dim",
        ))
    if f.limited_by_batch_limit:
        parts.append(Text(
            f"the model keeps no KV cache or state: memory sets no largest batch; capped at the "
            f"{n(f.batch)} searched", style="dim",
        ))
    if f.decode is not None:
        d = f.decode
        r = figures_table("decode speed bound (memory-bandwidth roofline)", "", "value")
        r.add_row("bytes read per step (weights + KV cache)", gib(d.bytes_per_step))
        r.add_row("bandwidth (all GPUs)", f"{d.bandwidth / 1e12:,.2f} TB/s")
        r.add_row("step time ≥", f"{d.seconds_per_step * 1e3:,.2f} ms")
        r.add_row("tokens/s per sequence ≤", f"{d.tokens_per_sec_per_sequence:,.1f}")
        r.add_row(f"tokens/s at batch {f.batch} ≤", f"{d.tokens_per_sec:,.1f}", style="bold")
        parts.append(r)
    elif not accelerator.bandwidth:
        parts.append(Text("decode speed bound: give --gpu-bandwidth (e.g. 3.35TB/s) or --gpu "
                          "for the card's bandwidth", style="dim"))
    parts.append(Text(f"accelerator: {accelerator.source}", style="dim"))
    return Group(*parts)


def _nothing_fits(f: ServingFit) -> str:
    if f.usable <= f.weights:
        return "the weights leave no room for a KV cache"
    if f.ctx is not None:
        return f"not one sequence of {n(f.ctx)} tokens fits beside the weights"
    return f"not one token of cache at batch {f.batch} fits beside the weights"


def explain_lines(f: ServingFit, *, accelerator: Accelerator) -> list[str]:
    lines = [
        f"usable = GPUs × memory × (1 − headroom) = {n(f.gpus)} × {n(accelerator.memory_bytes)} × "
        f"(1 − {f.headroom:g}) = {n(f.usable)}",
        f"KV budget = usable − weights = {n(f.usable)} − {n(f.weights)} = {n(f.usable - f.weights)}",
    ]
    if f.kv_bytes is None or f.ctx is None:
        return lines
    what = "ctx" if f.solve_for == "ctx" else "batch"
    if f.attention is not None:
        lines.append(
            f"largest {what} with KV(batch, ctx) + prefill(batch, ctx) ≤ budget: KV({f.batch}, "
            f"{n(f.ctx)}) + prefill = {n(f.kv_bytes)} + {n(f.prefill_bytes or 0)} "
            f"(the {f.attention.value} prefill's largest layer transient, docs/memory-model.md)"
        )
    else:
        lines.append(
            f"largest {what} with KV(batch, ctx) ≤ budget: KV({f.batch}, {n(f.ctx)}) = "
            f"{n(f.kv_bytes)} (about {n(f.kv_bytes_per_token)} B per token)"
        )
    if f.decode is not None:
        d = f.decode
        lines.append(
            f"decode step ≥ (weights + KV) / bandwidth = ({n(f.weights)} + {n(f.kv_bytes)}) / "
            f"{n(d.bandwidth)} = {d.seconds_per_step * 1e3:.3f} ms → "
            f"{d.tokens_per_sec_per_sequence:,.1f} tokens/s per sequence"
        )
    return lines


def fit_json(
    spec: ModelSpec, f: ServingFit, *, accelerator: Accelerator, dtype: WeightFormat, kv_dtype: DType
) -> dict[str, Any]:
    d = f.decode
    limit = spec.shape.max_position_embeddings
    beyond = (f.solve_for == "batch" and f.ctx is not None and limit and f.ctx > limit)
    return {
        # the warning fit prints on stderr, in --json's notes (and the page's) instead
        "notes": [*([f"--ctx {n(f.ctx or 0)} is more than {spec.name}'s max_position_embeddings "
                     f"({n(limit or 0)}); the memory is sized as asked, but the model was not "
                     "made for that context"] if beyond else []), *f.notes],
        "model": spec.name,
        "accelerator": {
            "name": accelerator.name,
            "memory_bytes": accelerator.memory_bytes,
            "bandwidth_bytes_per_sec": accelerator.bandwidth,
            "source": accelerator.source,
        },
        "gpus": f.gpus,
        "dtype": dtype.value,
        "kv_dtype": kv_dtype.value,
        "memory_bytes": f.capacity,
        "headroom": f.headroom,
        "usable_bytes": f.usable,
        "weight_bytes": f.weights,
        "kv_cache_bytes_per_token": f.kv_bytes_per_token,
        "solved_for": f.solve_for,
        "batch": f.batch,
        "ctx": f.ctx,
        "max_ctx": f.ctx if f.solve_for == "ctx" else None,
        "max_batch": f.batch if f.solve_for == "batch" else None,
        "context_limit": f.context_limit,
        "limited_by_context_limit": f.limited_by_context_limit,
        "kv_cache_bytes": f.kv_bytes,
        "attention": f.attention.value if f.attention is not None else None,
        "prefill_chunk": f.prefill_chunk,
        "prefill_bytes": f.prefill_bytes,
        "steady_bytes": f.steady_bytes,
        "peak_bytes": f.peak_bytes,
        "kv_cache_window_cap": window_cap(spec, f.ctx) if f.ctx is not None else None,
        "fits": f.fits,
        "decode": None
        if d is None
        else {
            "bytes_per_step": d.bytes_per_step,
            "bandwidth_bytes_per_sec": d.bandwidth,
            "seconds_per_step": d.seconds_per_step,
            "tokens_per_sec_per_sequence": d.tokens_per_sec_per_sequence,
            "tokens_per_sec": d.tokens_per_sec,
        },
    }


def fit_grid(
    items: list[tuple[str, ModelSpec, ServingFit]], *, accelerator: Accelerator,
    dtype: DType | QuantFormat, kv_dtype: DType,
) -> Grid:
    """One column per model: what fits on the same GPUs, and the decode bound."""
    f0 = items[0][2]
    g = Grid(f"fit on {accelerator_line(accelerator, f0.gpus)} · weights {dtype.value} · "
             f"KV cache {kv_dtype.value}",
             [Col("figure"), *(Col(label, right=True, wrap=True) for label, _, _ in items)], keep=1)
    fs = [f for _, _, f in items]
    g.add("usable memory", *(Fig(gib(f.usable), f.usable) for f in fs))
    g.add("weights", *(Fig(gib(f.weights), f.weights) for f in fs))
    g.add("KV cache per token (bytes)", *(f.kv_bytes_per_token for f in fs))
    g.add("batch", *(f.batch for f in fs), section=True)
    g.add("context", *(f.ctx for f in fs))
    g.add("largest " + ("context" if f0.solve_for == "ctx" else "batch"),
          *((f.ctx if f.solve_for == "ctx" else f.batch) if f.fits else "does not fit"
            for f in fs), bold=True)
    g.add("capped at max_position_embeddings", *(f.limited_by_context_limit for f in fs))
    g.add("KV cache capped by a sliding window", *(
        f.ctx is not None and window_cap(s, f.ctx) is not None for _, s, f in items))
    g.add("KV cache", *(Fig(gib(f.kv_bytes), f.kv_bytes) if f.kv_bytes is not None else None
                        for f in fs))
    if any(f.prefill_bytes is not None for f in fs):
        g.add("prefill transients", *(Fig(gib(f.prefill_bytes), f.prefill_bytes)
                                      if f.prefill_bytes is not None else None for f in fs))
        g.add("peak", *(Fig(gib(f.peak_bytes), f.peak_bytes) if f.peak_bytes is not None else None
                        for f in fs))
    if any(f.decode for f in fs):
        g.add("decode tokens/s per sequence ≤", *(
            Fig(f"{f.decode.tokens_per_sec_per_sequence:,.1f}",
                round(f.decode.tokens_per_sec_per_sequence, 3)) if f.decode else None
            for f in fs), section=True)
    for label, spec, f in items:
        cap = window_cap(spec, f.ctx) if f.ctx is not None else None
        if cap:
            g.notes.append(f"{label}: {cap}")
        if f.limited_by_batch_limit and f.batch is not None:
            g.notes.append(f"{label}: keeps no KV cache or state: memory sets no largest batch; "
                           f"capped at the {n(f.batch)} searched")
    return g
