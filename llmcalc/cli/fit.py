"""`llmcalc fit MODEL`: the largest context or batch that fits for serving, and the decode bound."""

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
from llmcalc.cli._hardware import GpuBandwidthOpt, GpuMemOpt, GpuOpt, GpusOpt, HeadroomOpt
from llmcalc.cli._options import CONTEXT_SUFFIXES, DTypeOpt, KvDTypeOpt, check_explain, speaks_flags
from llmcalc.hardware import DEFAULT_HEADROOM, require, resolve
from llmcalc.planning import fit as fit_plan
from llmcalc.render.count import provenance
from llmcalc.render.fit import explain_lines, fit_json, fit_view
from llmcalc.units import parse_context, parse_dtype


@handles_errors
@speaks_flags
def fit(
    model: ModelArg,
    gpu: GpuOpt = None,
    gpus: GpusOpt = 1,
    gpu_mem: GpuMemOpt = None,
    gpu_bandwidth: GpuBandwidthOpt = None,
    dtype: DTypeOpt = "bf16",
    kv_dtype: KvDTypeOpt = None,
    batch: Annotated[
        Optional[int],  # noqa: UP045 - typer reads this annotation at run time
        typer.Option("--batch", help="Sequences served at once; finds the largest context "
                     "(default 1).", show_default=False),
    ] = None,
    ctx: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--ctx", help=f"Context length; finds the largest batch instead; "
                     f"{CONTEXT_SUFFIXES}.", show_default=False),
    ] = None,
    headroom: HeadroomOpt = DEFAULT_HEADROOM,
    set_: SetOpt = None,
    family: FamilyOpt = None,
    revision: RevisionOpt = None,
    as_json: JsonOpt = False,
    explain: ExplainOpt = False,
) -> None:
    """Find the largest context (or batch) whose weights + KV cache fit, and the decode speed bound."""
    check_explain(explain=explain, as_json=as_json)
    spec = spec_for(model, set_, family, revision)
    acc = resolve(gpu, memory=gpu_mem, bandwidth=gpu_bandwidth)
    require(acc, "memory_bytes")
    weights = parse_dtype(dtype, option="--dtype")
    kv = parse_dtype(kv_dtype, option="--kv-dtype") if kv_dtype is not None else weights
    f = fit_plan(
        spec,
        accelerator=acc,
        gpus=gpus,
        dtype=weights,
        kv_dtype=kv,
        batch=batch,
        ctx=parse_context(ctx, option="--ctx") if ctx is not None else None,
        headroom=headroom,
    )
    if as_json:
        print_json({**fit_json(spec, f, accelerator=acc, dtype=weights, kv_dtype=kv), **provenance(spec)})
        return
    show(fit_view(spec, f, accelerator=acc, dtype=weights, kv_dtype=kv))
    if explain:
        show(*(Text(line) for line in explain_lines(f, accelerator=acc)))
