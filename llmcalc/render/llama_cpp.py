"""memory --engine llama.cpp: the buffers llama.cpp allocates, per device, as a table and as JSON."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from llmcalc.limits import escape
from llmcalc.planning.engines.llama_cpp import VERSION, Plan

MiB = 1024 * 1024


def plan_json(plan: Plan) -> dict[str, Any]:
    p, c = plan.params, plan.context
    return {
        "engine": "llama.cpp", "engine_version": f"llama-cpp-python=={VERSION}",
        "architecture": plan.hparams.arch,
        "n_ctx": c.n_ctx, "n_ctx_seq": c.n_ctx_seq, "parallel": c.n_seq,
        "kv_unified": p.kv_unified, "batch_size": c.n_batch, "ubatch_size": c.n_ubatch,
        "cache_type_k": p.type_k, "cache_type_v": p.type_v, "flash_attn": c.flash_attn,
        "swa_full": p.swa_full, "n_gpu_layers": p.n_gpu_layers, "mmap": p.mmap,
        "layout": "CPU model buffer without repacking (CPU_REPACK not modelled)"
                  + (", the mapped file range" if p.mmap else ""),
        "model_buffer_bytes": plan.model, "kv_k_bytes": plan.kv_k, "kv_v_bytes": plan.kv_v,
        "recurrent_state_bytes": plan.recurrent,
        # None: not modelled (GPU layers, or an architecture whose graph is not built), never
        # guessed
        "compute_buffer_bytes": plan.compute,
        "total_bytes": plan.total,
        "caches": [{"kind": cache.name, "cells": cache.cells, "layers": len(cache.layers),
                    "k_bytes": cache.k_bytes, "v_bytes": cache.v_bytes} for cache in plan.caches],
        "devices": {d.name: {"model_buffer_bytes": d.model, "kv_k_bytes": d.kv_k,
                             "kv_v_bytes": d.kv_v, "recurrent_state_bytes": d.recurrent,
                             "compute_buffer_bytes": d.compute, "total_bytes": d.total}
                    for d in plan.devices},
    }


def _mib(n: int) -> str:
    return f"{n / MiB:,.2f} MiB"


def plan_view(model: str, plan: Plan) -> Table:
    c, p = plan.context, plan.params
    caches = ", ".join(f"{x.name} {x.cells:,} cells × {len(x.layers)} layers" for x in plan.caches)
    title = (f"{escape(model)} in llama.cpp (llama-cpp-python {VERSION}): n_ctx {c.n_ctx:,} "
             f"({c.n_seq} × {c.n_ctx_seq:,}{', unified' if p.kv_unified else ''}), "
             f"K {p.type_k}, V {p.type_v}, flash attention {'on' if c.flash_attn else 'off'}"
             + (f"; KV {caches}" if caches else ""))
    table = Table(title=title, title_justify="left")
    table.add_column("buffer")
    for d in plan.devices:
        table.add_column(d.name, justify="right")
    rows = [("model", "model"), ("KV K", "kv_k"), ("KV V", "kv_v"),
            ("recurrent state", "recurrent")]
    for label, attr in rows:
        if attr == "recurrent" and not plan.recurrent:
            continue
        table.add_row(label, *(_mib(getattr(d, attr)) for d in plan.devices))
    table.add_row("compute", *(("not modelled" if d.compute is None else _mib(d.compute))
                               for d in plan.devices))
    if plan.compute is None:
        table.caption = ("compute: not modelled with layers on a GPU (the split graph's buffers)"
                         if len(plan.devices) > 1 else
                         f"compute: {plan.hparams.arch}'s graph is not modelled")
        table.caption_justify = "left"
    label = "sum" if plan.compute is not None else "sum (without compute)"
    table.add_row(label, *(_mib(d.total) for d in plan.devices))
    return table


FIT_STATUS = {
    "unchanged": "llama-server's defaults leave the margin: nothing changed",
    "context": "the context reduced until the margin is left",
    "layers": "layers (or parts of MoE layers) moved to the CPU until the margin is left",
    "failed": "--fit gives up and llama-server loads the flags as given",
}
COMPUTE_NOTE = ("the compute buffer is not modelled: the GPU figures leave it out, so it has to "
                "fit in the --fit-target margin")
FREE_NOTE = ("free GPU memory taken as the card's whole memory (llama.cpp asks the driver, whose "
             "free figure is less by the CUDA context): --gpu-mem gives what is free")


def kv_keys(kv: Any, *, n_gpus: int, tokens_from_log: int | None = None) -> dict[str, Any]:
    """The keys every engine's fit prints (llmcalc.planning.engines.budget.EngineBudget):
    kv_cache_bytes per GPU (the most one card holds; the CPU's where no layer is on a GPU),
    kv_cache_tokens the cells of every stream (n_ctx; the log's "N cells" is one stream's:
    kv_cache_cells), max_concurrency the sequences of n_ctx_seq tokens they hold at once.
    ``tokens_from_log``: one stream's cells from a logged KV size (--kv-memory)."""
    per_device = {"CPU": kv.cpu_bytes, **{f"CUDA{i}": b for i, b in enumerate(kv.gpu_bytes)}}
    cells = kv.cells if tokens_from_log is None else tokens_from_log
    return {
        "kv_cache_bytes": kv.per_gpu if any(kv.gpu_bytes) else kv.cpu_bytes,
        "kv_cache_tokens": cells * kv.streams,
        "max_concurrency": round(kv.max_concurrency * cells / kv.cells, 2) if kv.cells else 0.0,
        "max_model_len": kv.n_ctx_seq, "kv_cache_cells": cells, "kv_cache_streams": kv.streams,
        "gpus": n_gpus, "kv_cache_bytes_by_device": per_device,
        "kv_cache_logged_bytes": kv.logged_bytes,
        "kv_cache_tokens_from_log": tokens_from_log is not None,
    }


def fit_json(f: Any, *, accelerator: Any, command: str, kv: Any = None, n_gpus: int = 1,
             tokens_from_log: int | None = None) -> dict[str, Any]:
    from llmcalc.planning.engines.llama_cpp import kv_summary

    kv = kv_summary(f.plan, n_gpus=n_gpus) if kv is None else kv
    return {
        "engine": "llama.cpp", "engine_version": f"llama-cpp-python=={VERSION}",
        "gpu": accelerator.name, "free_bytes": f.free, "fit_target_bytes": f.margin,
        **kv_keys(kv, n_gpus=n_gpus, tokens_from_log=tokens_from_log),
        "status": f.status, **({"reason": f.reason} if f.reason else {}),
        "n_ctx": f.plan.context.n_ctx, "ctx_size": f.n_ctx, "n_gpu_layers": f.n_gpu_layers,
        "override_tensor": list(f.overrides), "n_cpu_moe": f.n_cpu_moe,
        "gpu_bytes": f.gpu_bytes, "left_bytes": f.left, "loads": f.left >= 0,
        "margin_met": f.left >= f.margin, "command": command,
        "plan": plan_json(f.plan), "notes": [COMPUTE_NOTE, FREE_NOTE],
    }


def fit_view(model: str, f: Any, *, accelerator: Any, command: str, kv: Any = None,
             n_gpus: int = 1, tokens_from_log: int | None = None) -> Any:
    from rich.console import Group
    from rich.text import Text

    from llmcalc.planning.engines.llama_cpp import kv_summary

    kv = kv_summary(f.plan, n_gpus=n_gpus) if kv is None else kv
    keys = kv_keys(kv, n_gpus=n_gpus, tokens_from_log=tokens_from_log)

    cards = f"one {escape(accelerator.name)}" if n_gpus == 1 else \
        f"{n_gpus} × {escape(accelerator.name)} (together)"
    t = Table(title=f"llama.cpp --fit on {cards} (llama-cpp-python "
              f"{VERSION}): {f.free / MiB:,.0f} MiB free, --fit-target {f.margin // MiB:,} MiB",
              title_justify="left")
    t.add_column("")
    t.add_column("value", justify="right")
    where = (f"per GPU (the most of {n_gpus})" if n_gpus > 1 else "on the GPU") \
        if any(kv.gpu_bytes) else "on the CPU"
    t.add_row("kv_cache_bytes", f"{_mib(keys['kv_cache_bytes'])} {where}")
    t.add_row("kv_cache_tokens", f"{keys['kv_cache_tokens']:,}"
              + (f" ({kv.streams} streams × {keys['kv_cache_cells']:,} cells)" if kv.streams > 1
                 else " cells")
              + (" (from --kv-memory)" if tokens_from_log is not None else ""))
    t.add_row("max_concurrency", f"{keys['max_concurrency']:,.2f} × {kv.n_ctx_seq:,} tokens")
    t.add_row("--fit", FIT_STATUS[f.status] + (f" ({f.reason})" if f.reason else ""))
    t.add_row("--ctx-size", f"{f.n_ctx:,}" + (" (the model's)" if f.n_ctx == 0 else ""))
    t.add_row("--n-gpu-layers", f"{f.n_gpu_layers:,} of {f.plan.hparams.n_layer + 1:,} "
              "(the output layer counted)")
    for pattern in f.overrides:
        t.add_row("--override-tensor", escape(pattern))
    if f.n_cpu_moe:
        t.add_row("--n-cpu-moe", f"{f.n_cpu_moe:,}")
    t.add_row("on the GPU", _mib(f.gpu_bytes))
    t.add_row("left free on the GPU", _mib(f.left))
    lines: list[Any] = [t, plan_view(model, f.plan)]
    if f.left < 0:
        lines.append(Text(f"does not load: {_mib(-f.left)} more than the GPU has",
                          style="bold red"))
    lines += [Text(command), Text(f"note: {COMPUTE_NOTE}"), Text(f"note: {FREE_NOTE}")]
    return Group(*lines)
