"""`llmcalc fit --gpu NAME` without a model (what fits this machine) and `fit --offload`."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from llmcalc.model.spec import ModelSpec
from llmcalc.planning.hardware import Accelerator
from llmcalc.planning.local import LocalFit, Offload
from llmcalc.render import accelerator_line, figures_table, gib, heading, n
from llmcalc.render.grid import Col, Fig, Grid


def what_fits_grid(rows: list[LocalFit], *, accelerator: Accelerator, gpus: int, min_ctx: int,
                   skipped: list[str]) -> Grid:
    g = Grid(f"what fits {accelerator_line(accelerator, gpus)} · {n(min_ctx)} tokens at batch 1 "
             "in the best format that fits",
             [Col("model"), Col("params", right=True), Col("format"), Col("weights", right=True),
              Col("largest ctx", right=True, drop=2), Col("tokens/s ≤", right=True, drop=1)])
    for r in rows:
        if r.format is None:
            g.add(r.name, r.parameters, "does not fit", None, None, None)
            continue
        assert r.weights is not None
        speed = (Fig(f"{r.decode.tokens_per_sec:,.1f}", round(r.decode.tokens_per_sec, 3))
                 if r.decode else None)
        g.add(r.name, r.parameters, r.format.value, Fig(gib(r.weights), r.weights),
              r.largest_ctx, speed)
    g.notes.append(
        "format: the model's own stored format, else the first of fp16, q8_0, q4_k_m, q4_0 "
        f"(llama.cpp's) whose weights and {n(min_ctx)} tokens of KV cache fit; largest ctx: at "
        "batch 1, capped at the model's limit; tokens/s: decode bound (the weights a step uses — "
        "the experts it reaches, the embedding rows it looks up — and the cache, read once)")
    if skipped:
        shown = ", ".join(skipped[:8]) + (f" and {len(skipped) - 8} more" if len(skipped) > 8 else "")
        g.notes.append(f"not planned ({len(skipped)}): {shown}")
    return g


def what_fits_json(rows: list[LocalFit], *, accelerator: Accelerator, gpus: int, min_ctx: int,
                   skipped: list[str]) -> dict[str, Any]:
    return {
        "accelerator": {"key": accelerator.key, "name": accelerator.name,
                        "memory_bytes": accelerator.memory_bytes,
                        "bandwidth_bytes_per_sec": accelerator.bandwidth},
        "gpus": gpus,
        "min_ctx": min_ctx,
        "models": [{
            "model": r.name, "params": r.parameters,
            "format": r.format.value if r.format is not None else None,
            "weights_bytes": r.weights, "largest_ctx": r.largest_ctx,
            "context_limit": r.context_limit,
            "decode_tokens_per_sec": r.decode.tokens_per_sec if r.decode else None,
        } for r in rows],
        "skipped": skipped,
    }


def offload_view(spec: ModelSpec, o: Offload, *, accelerator: Accelerator, dtype: str, ctx: int
                 ) -> RenderableType:
    head = heading(spec.name,
                   f"weights {dtype} · {accelerator_line(accelerator, 1)} · context {n(ctx)}")
    t = figures_table("llama.cpp offload (-ngl): the output layer first, then the last layers on "
                      "the GPU, the rest in system memory", "", "value")
    t.add_row("GPU memory less headroom", gib(o.usable))
    t.add_row(f"layers on the GPU (-ngl {o.ngl})", f"{n(o.gpu_layers)} of {n(o.layers)}",
              style="bold")
    t.add_row("output layer on the GPU", "yes" if o.output_on_gpu else "no")
    t.add_row("on the GPU (weights + KV cache)", gib(o.gpu_bytes))
    t.add_row("in system memory (weights + KV cache)", gib(o.cpu_bytes))
    t.add_section()
    t.add_row("GPU bandwidth", f"{o.gpu_bandwidth / 1e9:,.1f} GB/s")
    t.add_row("system memory bandwidth", f"{o.ram_bandwidth / 1e9:,.1f} GB/s")
    t.add_row("a token reads on the GPU", gib(o.gpu_read))
    t.add_row("a token reads in system memory", gib(o.cpu_read))
    t.add_row("decode step ≥", f"{o.seconds_per_token * 1e3:,.2f} ms")
    t.add_row("tokens/s ≤", f"{o.tokens_per_sec:,.1f}", style="bold")
    note = Text("step ≥ GPU bytes read / GPU bandwidth + system bytes read / RAM bandwidth (a "
                "token reads the k of E routed experts it reaches and a row of the embeddings); "
                "-ngl counts the output layer as one and places it first, token embeddings stay "
                "in system memory (llama.cpp load_tensors); the KV cache is spread evenly over "
                "the layers")
    return Group(head, t, note)


def offload_json(spec: ModelSpec, o: Offload, *, accelerator: Accelerator, dtype: str, ctx: int
                 ) -> dict[str, Any]:
    return {
        "model": spec.name, "dtype": dtype, "ctx": ctx,
        "accelerator": {"key": accelerator.key, "name": accelerator.name},
        "layers": o.layers, "gpu_layers": o.gpu_layers, "output_on_gpu": o.output_on_gpu,
        "ngl": o.ngl,
        "gpu_bytes": o.gpu_bytes, "cpu_bytes": o.cpu_bytes, "usable_gpu_bytes": o.usable,
        "gpu_read_bytes": o.gpu_read, "cpu_read_bytes": o.cpu_read,
        "gpu_bandwidth_bytes_per_sec": o.gpu_bandwidth,
        "ram_bandwidth_bytes_per_sec": o.ram_bandwidth,
        "seconds_per_token": o.seconds_per_token, "tokens_per_sec": o.tokens_per_sec,
    }
