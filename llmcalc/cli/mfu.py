"""`llmcalc mfu MODEL`: model FLOPs utilisation from a measured training throughput."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from llmcalc.cli._common import (
    ExplainOpt,
    FamilyOpt,
    FormatOpt,
    JsonOpt,
    ModelArg,
    RevisionOpt,
    SetOpt,
    TrustRemoteCodeOpt,
    emit,
    handles_errors,
    output_format,
    refuse_explain,
    show,
    spec_for,
    takes_text,
)
from llmcalc.cli._hardware import GpuFlopsOpt, GpuOpt, GpusOpt
from llmcalc.cli._options import COUNT_SUFFIXES, TrainCtxOpt, speaks_flags
from llmcalc.planning.hardware import require, resolve
from llmcalc.planning.serving import model_flops_utilisation
from llmcalc.planning.training import DEFAULT_CTX
from llmcalc.render.mfu import explain_lines, mfu_grid, mfu_json, mfu_view
from llmcalc.units import parse_context, parse_count


@handles_errors
@speaks_flags
def mfu(
    model: ModelArg,
    tokens_per_sec: Annotated[
        str,
        typer.Option("--tokens-per-sec", metavar="RATE", help="Measured training throughput of all GPUs together, "
                     f"tokens/s ({COUNT_SUFFIXES}).", show_default=False),
    ],
    gpus: GpusOpt = 1,
    gpu: GpuOpt = None,
    gpu_flops: GpuFlopsOpt = None,
    ctx: TrainCtxOpt = str(DEFAULT_CTX),
    set_: SetOpt = None,
    family: FamilyOpt = None,
    revision: RevisionOpt = None,
    trust_remote_code: TrustRemoteCodeOpt = False,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    explain: ExplainOpt = False,
) -> None:
    """Model FLOPs utilisation of a training run: FLOPs per token × tokens/s over the peak."""
    how = output_format(fmt, as_json)
    refuse_explain(explain, how)
    spec = takes_text(spec_for(model, set_, family, revision, trust_remote_code), "mfu")
    acc = resolve(gpu, flops=gpu_flops, needs=("flops",))
    require(acc, "peak_flops")
    seq = parse_context(ctx, option="--ctx")
    u = model_flops_utilisation(
        spec,
        tokens_per_sec=parse_count(tokens_per_sec, option="--tokens-per-sec"),
        ctx=seq,
        gpus=gpus,
        accelerator=acc,
    )
    emit(how, data=lambda: mfu_json(spec, u, accelerator=acc, gpus=gpus, ctx=seq),
         grids=lambda: [mfu_grid(spec, u, accelerator=acc, gpus=gpus, ctx=seq)],
         view=lambda: mfu_view(spec, u, accelerator=acc, gpus=gpus, ctx=seq))
    if explain:
        show(*(Text(line) for line in explain_lines(u, gpus=gpus)))
