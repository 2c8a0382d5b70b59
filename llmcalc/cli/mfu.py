"""`llmcalc mfu MODEL`: model FLOPs utilisation from a measured training throughput."""

from __future__ import annotations

from typing import Annotated

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
from llmcalc.cli._hardware import GpuFlopsOpt, GpuOpt, GpusOpt
from llmcalc.cli._options import TrainCtxOpt, check_explain, speaks_flags
from llmcalc.hardware import require, resolve
from llmcalc.planning import model_flops_utilisation
from llmcalc.render.count import provenance
from llmcalc.render.mfu import explain_lines, mfu_json, mfu_view
from llmcalc.training import DEFAULT_CTX
from llmcalc.units import parse_context, parse_count


@handles_errors
@speaks_flags
def mfu(
    model: ModelArg,
    tokens_per_sec: Annotated[
        str,
        typer.Option("--tokens-per-sec", help="Measured training throughput of all GPUs together, "
                     "e.g. 3.2M.", show_default=False),
    ],
    gpus: GpusOpt = 1,
    gpu: GpuOpt = None,
    gpu_flops: GpuFlopsOpt = None,
    ctx: TrainCtxOpt = str(DEFAULT_CTX),
    set_: SetOpt = None,
    family: FamilyOpt = None,
    revision: RevisionOpt = None,
    as_json: JsonOpt = False,
    explain: ExplainOpt = False,
) -> None:
    """Model FLOPs utilisation of a training run: FLOPs per token × tokens/s over the peak."""
    check_explain(explain=explain, as_json=as_json)
    spec = spec_for(model, set_, family, revision)
    acc = resolve(gpu, flops=gpu_flops)
    require(acc, "peak_flops")
    seq = parse_context(ctx, option="--ctx")
    u = model_flops_utilisation(
        spec,
        tokens_per_sec=parse_count(tokens_per_sec, option="--tokens-per-sec"),
        ctx=seq,
        gpus=gpus,
        accelerator=acc,
    )
    if as_json:
        print_json({**mfu_json(spec, u, accelerator=acc, gpus=gpus, ctx=seq), **provenance(spec)})
        return
    show(mfu_view(spec, u, accelerator=acc, gpus=gpus, ctx=seq))
    if explain:
        show(*(Text(line) for line in explain_lines(u, gpus=gpus)))
