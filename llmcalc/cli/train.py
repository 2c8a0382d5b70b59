"""`llmcalc train MODEL`: training compute, GPU time, and whether the run fits in GPU memory."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.text import Text

from llmcalc.cli._common import (
    ExplainOpt,
    FamilyOpt,
    JsonOpt,
    ModelArg,
    RevisionOpt,
    SetOpt,
    handles_errors,
    print_json,
    show,
    spec_for,
)
from llmcalc.cli._hardware import GpuFlopsOpt, GpuMemOpt, GpuOpt, GpusOpt, HeadroomOpt
from llmcalc.cli._options import COUNT_SUFFIXES, TrainCtxOpt, check_explain, speaks_flags
from llmcalc.hardware import DEFAULT_HEADROOM, require, resolve
from llmcalc.render.count import provenance
from llmcalc.render.train import explain_lines, train_json, train_view
from llmcalc.training import (
    CHINCHILLA_TOKENS_PER_PARAM,
    DEFAULT_CTX,
    DEFAULT_MFU,
    Recompute,
    parallelism,
    plan_training,
)
from llmcalc.units import parse_context, parse_count


@handles_errors
@speaks_flags
def train(
    model: ModelArg,
    tokens: Annotated[
        Optional[str],  # noqa: UP045 - typer reads this annotation at run time
        typer.Option(
            "--tokens",
            help=f"Training tokens; {COUNT_SUFFIXES} (default: the compute-optimal "
            f"{CHINCHILLA_TOKENS_PER_PARAM} per parameter).",
            show_default=False,
        ),
    ] = None,
    gpus: GpusOpt = 1,
    gpu: GpuOpt = None,
    gpu_mem: GpuMemOpt = None,
    gpu_flops: GpuFlopsOpt = None,
    mfu: Annotated[
        float, typer.Option("--mfu", help="Model FLOPs utilisation to assume (0–1).")
    ] = DEFAULT_MFU,
    ctx: TrainCtxOpt = str(DEFAULT_CTX),
    tp: Annotated[int, typer.Option("--tp", help="Tensor-parallel degree.")] = 1,
    pp: Annotated[int, typer.Option("--pp", help="Pipeline-parallel degree.")] = 1,
    zero: Annotated[
        int, typer.Option("--zero", help="ZeRO stage 0–3, sharding over the data-parallel GPUs.")
    ] = 0,
    micro_batch: Annotated[
        int, typer.Option("--micro-batch", help="Sequences per GPU per step (activation memory).")
    ] = 1,
    recompute: Annotated[
        Recompute, typer.Option("--recompute", help="Activation recomputation.")
    ] = Recompute.none,
    flash_attention: Annotated[
        bool,
        typer.Option(
            "--flash-attention/--no-flash-attention",
            help="FlashAttention: the s × s attention scores are never stored.",
        ),
    ] = False,
    headroom: HeadroomOpt = DEFAULT_HEADROOM,
    set_: SetOpt = None,
    family: FamilyOpt = None,
    revision: RevisionOpt = None,
    as_json: JsonOpt = False,
    explain: ExplainOpt = False,
) -> None:
    """Plan a training run: FLOPs (6·N·D plus causal attention), GPU-hours, memory per GPU, fit."""
    check_explain(explain=explain, as_json=as_json)
    spec = spec_for(model, set_, family, revision)
    acc = resolve(gpu, memory=gpu_mem, flops=gpu_flops)
    require(acc, "memory_bytes", "peak_flops")
    plan = plan_training(
        spec,
        tokens=parse_count(tokens, option="--tokens") if tokens is not None else None,
        ctx=parse_context(ctx, option="--ctx"),
        accelerator=acc,
        mfu=mfu,
        par=parallelism(gpus=gpus, tp=tp, pp=pp, zero=zero),
        micro_batch=micro_batch,
        recompute=recompute,
        flash_attention=flash_attention,
        headroom=headroom,
    )
    if as_json:
        print_json({**train_json(spec, plan), **provenance(spec)})
        return
    show(train_view(spec, plan))
    if explain:
        show(*(Text(line) for line in explain_lines(spec, plan)))
