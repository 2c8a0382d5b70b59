"""`llmcalc mfu` output: model FLOPs per token, achieved FLOP/s per GPU, and the utilisation."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from llmcalc.model.spec import ModelSpec, context_notes
from llmcalc.planning.hardware import Accelerator
from llmcalc.planning.serving import Utilisation
from llmcalc.render import figures_table, heading, n, note_lines, per_second
from llmcalc.render.grid import Col, Fig, Grid


def mfu_view(
    spec: ModelSpec, u: Utilisation, *, accelerator: Accelerator, gpus: int, ctx: int
) -> RenderableType:
    head = heading(spec.name, f"sequence length {n(ctx)} (--ctx) · {n(gpus)} × {accelerator.name}")
    t = figures_table("model FLOPs utilisation (PaLM, App. B)", "", "value")
    t.add_row("tokens/s (all GPUs)", f"{u.tokens_per_sec:,.0f}")
    t.add_row("training FLOPs per token: 6N + 12·L·H·Q·T (PaLM)", n(u.flops_per_token))
    t.add_row("achieved FLOP/s per GPU", per_second(u.achieved_flops))
    t.add_row("peak FLOP/s per GPU (dense bf16)", per_second(u.peak_flops))
    t.add_section()
    t.add_row("MFU", f"{u.mfu:.1%}", style="bold")
    t.add_row("MFU counting causal attention pairs only", f"{u.mfu_causal:.1%}")
    parts: list[RenderableType] = [head, t]
    if u.mfu > 1:
        parts.append(Text("MFU above 100%: check the throughput, the GPU count or the peak",
                          style="bold red"))
    parts.append(Text(f"accelerator: {accelerator.source}", style="dim"))
    return Group(*parts, *note_lines(context_notes(spec, ctx=ctx)))


def mfu_grid(
    spec: ModelSpec, u: Utilisation, *, accelerator: Accelerator, gpus: int, ctx: int
) -> Grid:
    g = Grid(f"{spec.name}: model FLOPs utilisation on {n(gpus)} × {accelerator.name}",
             [Col("figure"), Col("value", right=True)])
    g.add("sequence length", ctx)
    g.add("tokens/s (all GPUs)", Fig(f"{u.tokens_per_sec:,.0f}", u.tokens_per_sec))
    g.add("training FLOPs per token: 6N + 12·L·H·Q·T (PaLM)", u.flops_per_token)
    g.add("achieved FLOP/s per GPU", Fig(per_second(u.achieved_flops), round(u.achieved_flops)))
    g.add("peak FLOP/s per GPU (dense bf16)", Fig(per_second(u.peak_flops), u.peak_flops))
    g.add("MFU", Fig(f"{u.mfu:.1%}", round(u.mfu, 6)), bold=True, section=True)
    g.add("MFU counting causal attention pairs only", Fig(f"{u.mfu_causal:.1%}",
                                                         round(u.mfu_causal, 6)))
    return g


def explain_lines(u: Utilisation, *, gpus: int) -> list[str]:
    return [
        "FLOPs per token = 3 × (weight FLOPs + attention of one query over all ctx keys) "
        "(PaLM App. B: 6N + 12·L·H·Q·T)",
        f"MFU = tokens/s × FLOPs per token / (GPUs × peak) = {u.tokens_per_sec:,.0f} × "
        f"{n(u.flops_per_token)} / ({n(gpus)} × {u.peak_flops:.4e}) = {u.mfu:.4f}",
    ]


def mfu_json(
    spec: ModelSpec, u: Utilisation, *, accelerator: Accelerator, gpus: int, ctx: int
) -> dict[str, Any]:
    return {
        "notes": list(context_notes(spec, ctx=ctx)),  # a sequence past the model's window
        "model": spec.name,
        "ctx": ctx,
        "gpus": gpus,
        "accelerator": {
            "name": accelerator.name,
            "peak_flops": accelerator.peak_flops,
            "source": accelerator.source,
        },
        "tokens_per_sec": u.tokens_per_sec,
        "flops_per_token": u.flops_per_token,
        "achieved_flops_per_gpu": u.achieved_flops,
        "peak_flops_per_gpu": u.peak_flops,
        "mfu": u.mfu,
        "flops_per_token_causal": u.flops_per_token_causal,
        "mfu_causal": u.mfu_causal,
    }
