"""`llmcalc memory` output: weights, KV cache and total in GiB (exact bytes in JSON), explain."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from llmcalc.formulas.memory import MemoryResult
from llmcalc.inputs.safetensors_index import STORED_AS, StoredWeights, other_dtypes
from llmcalc.model.spec import ModelSpec
from llmcalc.render import GiB, ctx_label, figures_table, gib, n, note_lines, plural, window_cap
from llmcalc.render.count import header
from llmcalc.render.grid import Col, Fig, Grid
from llmcalc.units import DTYPE_BITS, DType


def stored_note(stored: StoredWeights, r: MemoryResult) -> str | None:
    """Say when the checkpoint stores other dtypes than --dtype (FP8, packed int4 …), or why its
    bytes are not shown."""
    if stored.error is not None:
        return f"checkpoint bytes not shown: {stored.error}"
    if stored.as_computed:
        return None
    others = other_dtypes(stored.rows, r.dtype.value)
    if not others:
        return None
    kinds = ", ".join(_dtype_label(d) for d in others)
    return (
        f"the checkpoint stores {kinds}, not only {r.dtype.value}: {n(stored.nbytes)} bytes "
        f"({gib(stored.nbytes)}) stored against {n(r.weights_bytes)} ({gib(r.weights_bytes)}) "
        f"computed at --dtype {r.dtype.value}"
    )


def _dtype_label(dtype: str) -> str:
    as_dtype = STORED_AS.get(dtype)
    if as_dtype is not None:
        return f"{dtype} ({as_dtype})"
    if dtype in ("I32", "U8"):
        return f"{dtype} (packed quantized values)"
    return dtype


def stored_table(stored: StoredWeights) -> Table:
    t = figures_table(f"stored in checkpoint {stored.where}", "dtype", "tensors", "elements",
                      "bytes", "")
    for row in stored.rows:
        t.add_row(_dtype_label(row.dtype), n(row.tensors), n(row.numel), n(row.nbytes), gib(row.nbytes))
    t.add_section()
    t.add_row("total", "", "", n(stored.nbytes), gib(stored.nbytes), style="bold")
    return t


def stored_json(stored: StoredWeights, r: MemoryResult) -> dict[str, Any]:
    return {
        "where": stored.where,
        "error": stored.error,
        "bytes": stored.nbytes if stored.error is None else None,
        "by_dtype": {
            row.dtype: {"tensors": row.tensors, "elements": row.numel, "bytes": row.nbytes}
            for row in stored.rows
        },
        "other_dtypes": [] if stored.as_computed else list(other_dtypes(stored.rows, r.dtype.value)),
        "note": stored_note(stored, r),
    }


def memory_view(
    spec: ModelSpec, r: MemoryResult, stored: StoredWeights | None = None
) -> RenderableType:
    seqs = f"{n(r.batch)} sequences" if r.batch > 1 else "one sequence"
    t = Table(
        title=f"memory for {seqs} of {ctx_label(r.ctx)} tokens", title_justify="left"
    )
    t.add_column("part")
    t.add_column("dtype")
    t.add_column("bytes", justify="right")
    t.add_column("", justify="right")
    t.add_row(f"weights ({n(r.weight_elements)} parameters)", r.dtype.value, n(r.weights_bytes),
              gib(r.weights_bytes))
    kv = "KV cache, MLA latent" if r.mla else "KV cache"
    t.add_row(f"{kv} per token", r.kv_dtype.value, n(r.kv_cache_bytes_per_token), "")
    if r.state_bytes_per_sequence:
        states = sorted({term.state_dtype.value for term in r.state_terms} | {r.kv_dtype.value})
        t.add_row("recurrent state per sequence (any context)", "/".join(states),
                  n(r.state_bytes_per_sequence), "")
        cache = f"{kv} + state ({n(r.batch)} × {n(r.ctx)} tokens)"
    else:
        cache = f"{kv} ({n(r.batch)} × {n(r.ctx)} tokens)"
    t.add_row(cache, r.kv_dtype.value, n(r.kv_cache_bytes), gib(r.kv_cache_bytes))
    if r.source_len is not None:
        t.add_row(f"  of which cross-attention K, V of {n(r.source_len)} {r.source_tokens} tokens",
                  r.kv_dtype.value, n(r.cross_kv_cache_bytes), gib(r.cross_kv_cache_bytes))
    t.add_section()
    t.add_row("total", "", n(r.total_bytes), gib(r.total_bytes), style="bold")
    if r.kv_cache_bytes_decompressed is not None and r.kv_cache_bytes_per_token_decompressed:
        t.add_section()
        t.add_row("KV cache decompressed per head (older implementations), per token",
                  r.kv_dtype.value, n(r.kv_cache_bytes_per_token_decompressed), "")
        t.add_row(f"KV cache decompressed per head ({n(r.batch)} × {n(r.ctx)} tokens)",
                  r.kv_dtype.value, n(r.kv_cache_bytes_decompressed),
                  gib(r.kv_cache_bytes_decompressed))
    cap = window_cap(spec, r.ctx)
    parts: list[RenderableType] = [header(spec), t, *([Text(cap, style="yellow")] if cap else [])]
    notes = list(r.notes)
    if stored is not None:
        if stored.rows:
            parts.append(stored_table(stored))
        note = stored_note(stored, r)
        if note:
            notes.append(note)
    return Group(*parts, *note_lines(tuple(notes)))


def catalog_view(rows: list[tuple[str, MemoryResult]], *, ctx: int,
                 left_out: list[str] | None = None) -> Table:
    batch = rows[0][1].batch if rows else 1
    seqs = f"{n(batch)} sequences" if batch > 1 else "one sequence"
    t = figures_table(f"memory for {seqs} at context {ctx_label(ctx)}", "model", "weights",
                      "KV per token", "state per sequence", "KV cache + state", "total")
    for name, r in rows:
        t.add_row(
            name,
            gib(r.weights_bytes),
            n(r.kv_cache_bytes_per_token),
            n(r.state_bytes_per_sequence) if r.state_terms else "-",
            gib(r.kv_cache_bytes),
            gib(r.total_bytes),
        )
    if left_out:  # their forward pass is not modelled (ModelSpec.forward_unmodelled)
        t.caption = (f"left out, their cache bytes not computed ({', '.join(left_out)}): "
                     "`llmcalc memory MODEL` says why")
    return t


def memory_json(r: MemoryResult, stored: StoredWeights | None = None) -> dict[str, Any]:
    return {
        "checkpoint": None if stored is None else stored_json(stored, r),
        "model": r.model,
        "ctx": r.ctx,
        "batch": r.batch,
        "dtype": r.dtype.value,
        "kv_dtype": r.kv_dtype.value,
        "weights_bytes": r.weights_bytes,
        "kv_cache_bytes_per_token": r.kv_cache_bytes_per_token,
        "state_bytes_per_sequence": r.state_bytes_per_sequence,
        "kv_cache_bytes": r.kv_cache_bytes,
        **({"source_len": r.source_len, "cross_kv_cache_bytes": r.cross_kv_cache_bytes}
           if r.source_len is not None else {}),
        "total_bytes": r.total_bytes,
        "kv_cache": "mla_latent" if r.mla else "per_head",
        "kv_cache_bytes_per_token_decompressed": r.kv_cache_bytes_per_token_decompressed,
        "kv_cache_bytes_decompressed": r.kv_cache_bytes_decompressed,
        "kv_cache_window_caps": [  # layer groups whose sliding window holds fewer than ctx tokens
            {"group": a.group, "num_layers": a.num_layers, "window": a.window}
            for a in r.kv_terms
            if a.window is not None and a.window < r.ctx and a.elements_per_token  # caches some
        ],
        "notes": list(r.notes),
    }


def explain_lines(r: MemoryResult) -> list[str]:
    """Each formula with this model's numbers put in."""
    kb = DTYPE_BITS[r.kv_dtype]
    if isinstance(r.dtype, DType):
        wb = DTYPE_BITS[r.dtype]
        rounding = ", rounded up to whole bytes per tensor" if wb % 8 else ""
        lines = [
            f"weights = {n(r.weight_elements)} parameters × {wb} bits / 8{rounding} "
            f"= {n(r.weights_bytes)} bytes ({gib(r.weights_bytes)})",
        ]
    else:
        lines = [f"weights in {r.dtype.description} ({r.dtype.source}), by storage layout:"]
        for p in r.weight_parts:
            lines.append(
                f"  {p.layout}: {n(p.elements)} parameters → {n(p.bytes)} bytes "
                f"({p.bytes * 8 / p.elements:.3f} bits each)"
            )
        lines.append(f"  = {n(r.weights_bytes)} bytes ({gib(r.weights_bytes)})")
    lines.append("KV cache per token = Σ layers × elements per layer × bits / 8:")
    for a in r.kv_terms:
        if a.cross:
            continue
        if a.latent_dim is not None:
            what = f"latent {a.latent_dim} (kv_lora_rank + rope head dim)"
        elif a.keys_are_values:
            what = f"{a.kv_heads} kv head × {a.qk_head_dim} (one tensor read as K and V)"
        else:
            what = f"{a.kv_heads} kv heads × ({a.qk_head_dim} + {a.v_head_dim}) (K and V)"
        if a.index_key_dim and not a.index_key_fp32:
            what = f"({what} + indexer keys {a.index_key_dim})"
        lines.append(
            f"  {a.group}: {plural(a.num_layers, 'layer')} × {what} = "
            f"{n(a.num_layers * a.elements_per_token)} elements"
        )
    fp32 = [a for a in r.kv_terms if a.index_key_fp32]
    per_token = f"  × {kb} bits / 8"
    if fp32:  # dots3-note: transformers keeps these indexer keys in float32
        keys = " + ".join(f"{a.num_layers} × {a.index_key_dim}" for a in fp32)
        per_token += f" + indexer keys ({keys}) × 32 bits / 8 (float32 in transformers' cache)"
    if r.fixed_bytes_per_token:  # Qwen4-Exp: the indexers' int64 position ids
        per_token += f" + {r.fixed_bytes_per_token} bytes of position ids (int64)"
    lines.append(f"{per_token} = {n(r.kv_cache_bytes_per_token)} bytes")
    for a in r.kv_terms:
        if a.compress:  # DeepSeek-V4: pooled entries, the open window, the overlap series
            q, rest = divmod(r.ctx, a.compress)
            dims = " + ".join(n(c.dim) for c in a.compressors)
            widths = " + ".join(n(c.width) for c in a.compressors)
            overlap = " + ".join(n(c.dim) for c in a.compressors if c.overlap)
            terms = [f"⌊{n(r.ctx)} / {a.compress}⌋ = {n(q)} pooled entries × ({dims})",
                     f"the open window's {rest} tokens × 2 × ({widths}) (kv and gate)"]
            if overlap and q:
                terms.append(f"the last window's first series {a.compress} × ({overlap}) "
                             f"(kv; its gate the same in float32)")
            lines.append(
                f"compressor state, {a.group}: " + " + ".join(terms) + " = "
                f"{n(a.compressor_elements)} elements a layer"
                + (f" + {n(a.compressor_fp32)} float32" if a.compressor_fp32 else "")
            )
    for a in r.kv_terms:
        if a.cross:
            lines.append(
                f"cross-attention cache per encoder token, {a.group.removesuffix(' cross-attention')}: "
                f"{plural(a.num_layers, 'layer')} × {a.kv_heads} kv heads × ({a.qk_head_dim} + "
                f"{a.v_head_dim}) (K and V) = {n(a.num_layers * a.elements_per_token)} elements"
            )
    parts = []
    for a in r.kv_terms:
        tokens = f"min({n(r.ctx)}, window {n(a.window)})" if a.window else n(r.ctx)
        if a.cross:
            tokens = f"{n(a.tokens)} {r.source_tokens} tokens"
        parts.append(f"{a.num_layers} × {tokens} × {n(a.elements_per_token)}"
                     + (f" + {a.num_layers} × {n(a.compressor_elements)}" if a.compress else ""))
    fp32_part = " + ".join(
        [f"{a.num_layers} × {n(a.tokens)} × {n(a.index_key_dim)}" for a in fp32]
        + [f"{a.num_layers} × {n(a.compressor_fp32)}" for a in r.kv_terms if a.compressor_fp32]
    )
    for s in r.state_terms:
        lines.append(
            f"state per sequence, {s.group}: {plural(s.num_layers, 'layer')} × "
            f"({n(s.conv_elements)} conv elements × "
            f"{kb if s.conv_dtype is None else DTYPE_BITS[s.conv_dtype]} bits / 8 + "
            f"{n(s.state_elements)} "
            f"{s.kind} state elements × {DTYPE_BITS[s.state_dtype]} bits / 8"
            + (f" + {n(s.token_ids)} int64 token ids × 8" if s.token_ids else "")
            + ") "
            f"= {n(s.num_layers * s.bytes_per_layer)} bytes"
        )
    plus = f" + {n(r.batch)} × {n(r.state_bytes_per_sequence)} state" if r.state_terms else ""
    kv_part = f"({' + '.join(parts)}) elements × {kb} bits / 8" if parts else "0"
    if fp32_part:
        kv_part += f" + ({fp32_part}) float32 elements × 4 bytes"
    if r.fixed_bytes_per_token:
        kv_part += f" + {n(r.ctx)} × {r.fixed_bytes_per_token} bytes of position ids"
    if fp32_part or r.fixed_bytes_per_token:
        kv_part = f"[{kv_part}]"
    lines.append(
        f"KV cache = {n(r.batch)} × {kv_part}{plus} "
        f"= {n(r.kv_cache_bytes)} bytes ({gib(r.kv_cache_bytes)})"
    )
    lines.append(
        f"total = {n(r.weights_bytes)} + {n(r.kv_cache_bytes)} = {n(r.total_bytes)} bytes "
        f"({gib(r.total_bytes)})"
    )
    return lines


def memory_grid(items: list[tuple[str, ModelSpec, MemoryResult]]) -> Grid:
    """One column per model: weights, KV cache and total, in bytes and GiB."""
    g = Grid("memory", [Col("figure"), *(Col(label, right=True, wrap=True) for label, _, _ in items)], keep=1)
    rs = [r for _, _, r in items]
    g.add("context × batch", *(f"{n(r.ctx)} × {n(r.batch)}" for r in rs))
    g.add("dtype / KV dtype", *(f"{r.dtype.value} / {r.kv_dtype.value}" for r in rs))
    g.add("weights (bytes)", *(r.weights_bytes for r in rs), section=True)
    g.add("weights", *(Fig(gib(r.weights_bytes), round(r.weights_bytes / GiB, 3)) for r in rs))
    g.add("KV cache per token (bytes)", *(r.kv_cache_bytes_per_token for r in rs))
    # the rest of the cache, so that batch × (per token × ctx, windows capped) + these = the cache
    if any(r.state_terms for r in rs):
        g.add("recurrent state per sequence (bytes, any context)",
              *(r.state_bytes_per_sequence if r.state_terms else "-" for r in rs))
    if any(r.source_len is not None for r in rs):
        g.add("cross-attention source tokens",
              *(r.source_len if r.source_len is not None else "-" for r in rs))
        g.add("cross-attention K, V (bytes, all sequences)",
              *(r.cross_kv_cache_bytes if r.source_len is not None else "-" for r in rs))
    g.add("KV cache (bytes)", *(r.kv_cache_bytes for r in rs))
    g.add("KV cache", *(Fig(gib(r.kv_cache_bytes), round(r.kv_cache_bytes / GiB, 3)) for r in rs))
    g.add("KV cache capped by a sliding window", *(
        window_cap(s, r.ctx) is not None for _, s, r in items))
    g.add("total (bytes)", *(r.total_bytes for r in rs), section=True, bold=True)
    g.add("total", *(Fig(gib(r.total_bytes), round(r.total_bytes / GiB, 3)) for r in rs),
          bold=True)
    for label, spec, r in items:
        cap = window_cap(spec, r.ctx)
        if cap:
            g.notes.append(f"{label}: {cap}")
    return g
