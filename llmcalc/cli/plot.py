"""`llmcalc plot flops|memory|params MODEL… -o chart.svg|png|html`: the page's charts as files.

Without ``-o`` a compact chart is drawn in the terminal. Writing needs nothing beyond the core
except PNG, which draws with Pillow (the ``[serve]`` extra).
"""

from __future__ import annotations

import shlex
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from llmcalc.cli._common import FamilyOpt, SetOpt, handles_errors, spec_for, takes_text
from llmcalc.cli._hardware import GpuOpt, GpusOpt
from llmcalc.cli._options import BatchOpt, KvDTypeOpt, speaks_flags
from llmcalc.cli._weights import DTypeOpt
from llmcalc.errors import MissingExtraError, UsageError
from llmcalc.limits import escape_output
from llmcalc.model.spec import ModelSpec
from llmcalc.units import DType, is_auto, kv_option, parse_context, parse_count, parse_dtype

MAX_MODELS = 6
SUFFIXES = (".svg", ".png", ".html")


class Kind(str, Enum):
    flops = "flops"
    memory = "memory"
    params = "params"


@handles_errors
@speaks_flags
def plot(
    kind: Annotated[Kind, typer.Argument(help="Which chart: flops, memory or params.")],
    models: Annotated[
        list[str],
        typer.Argument(help="Up to six models (bundled names, model types, config files).",
                       show_default=False),
    ],
    output: Annotated[
        Optional[Path],  # noqa: UP045 - typer reads this annotation at run time
        typer.Option("-o", "--output", help="Write the chart to this .svg, .png or .html file "
                     "(default: draw it in the terminal).", show_default=False),
    ] = None,
    ctx_max: Annotated[
        str, typer.Option("--ctx-max", help="Largest context on the x axis (128 up to it, "
                          "doubling), e.g. 1M = 1,048,576.")
    ] = "128k",
    batch: BatchOpt = "1",
    dtype: DTypeOpt = "bf16",
    kv_dtype: KvDTypeOpt = None,
    gpu: GpuOpt = None,
    gpus: GpusOpt = 1,
    set_: SetOpt = None,
    family: FamilyOpt = None,
) -> None:
    """Chart FLOPs per token or memory against context, or the parameter breakdown.

    flops: weights, attention and their sum per token, with the context where attention
    overtakes the weights marked. memory: weights and weights + KV cache, with --gpu's memory
    drawn as a line and the largest context that fits marked. --set applies to every model.
    """
    from llmcalc.render import plot as charts

    if len(models) > MAX_MODELS:
        raise UsageError(f"at most {MAX_MODELS} models on one chart, got {len(models)}")
    if output is not None and output.suffix.lower() not in SUFFIXES:
        raise UsageError(f"-o {output}: the file name must end in .svg, .png or .html")
    if output is not None and output.suffix.lower() == ".png":
        try:
            import PIL  # noqa: F401
        except ImportError:
            raise MissingExtraError("llmcalc plot -o *.png", extra="serve") from None
    specs = [takes_text(spec_for(m, set_, family), "plot") for m in models]
    names = [s.name for s in specs]
    chart: charts.Chart
    if kind is Kind.params:
        from llmcalc.formulas.counting import count

        chart = charts.params_chart([(nm, count(s)) for nm, s in zip(names, specs, strict=True)])
    else:
        from llmcalc.formulas.series import context_grid

        grid = context_grid(parse_context(ctx_max, option="--ctx-max"))
        if kind is Kind.flops:
            from llmcalc.formulas.series import flops_series

            chart = charts.flops_chart([(nm, flops_series(s, grid))
                                        for nm, s in zip(names, specs, strict=True)])
        else:
            chart = _memory(charts, names, specs, grid, batch=batch, dtype=dtype or "bf16",
                            kv_dtype=kv_dtype, gpu=gpu, gpus=gpus)
    if output is None:
        typer.echo(escape_output(charts.to_text(chart)), nl=False)  # names come from input
        return
    suffix = output.suffix.lower()
    try:
        if suffix == ".png":
            charts.write_png(chart, output)
        elif suffix == ".svg":
            output.write_text(charts.to_svg(chart), encoding="utf-8")
        else:
            words = ["llmcalc", "plot", kind.value, *models, "--ctx-max", ctx_max, "--batch", batch,
                     "--dtype", dtype or "bf16"]
            words += [] if kv_dtype is None else ["--kv-dtype", kv_dtype]
            words += [] if gpu is None else ["--gpu", gpu, "--gpus", str(gpus)]
            words += [w for s in set_ or () for w in ("--set", s)]
            words += [] if family is None else ["--family", family]
            output.write_text(charts.to_html(chart, command=shlex.join([*words, "-o", output.name])),
                              encoding="utf-8")
    except OSError as e:
        raise UsageError(f"-o {output}: cannot write ({e.strerror})") from None
    typer.echo(f"wrote {output}")


def _memory(
    charts: Any, names: list[str], specs: list[ModelSpec], grid: tuple[int, ...], *, batch: str,
    dtype: str, kv_dtype: str | None, gpu: str | None, gpus: int,
) -> Any:
    from llmcalc.formulas.activations import serving_kernel
    from llmcalc.formulas.series import memory_series
    from llmcalc.planning.hardware import resolve
    from llmcalc.planning.serving import fit

    n_batch = parse_count(batch, option="--batch")
    w = DType.bf16 if is_auto(dtype) else parse_dtype(dtype, option="--dtype")
    kv = kv_option(kv_dtype) or w
    acc = resolve(gpu) if gpu is not None else None
    rows = []
    for name, spec in zip(names, specs, strict=True):
        max_ctx = None
        if acc is not None:
            max_ctx = fit(spec, accelerator=acc, gpus=gpus, dtype=w, kv_dtype=kv,
                          batch=n_batch, attention=serving_kernel(spec)).ctx
        rows.append((name, memory_series(spec, grid, batch=n_batch, dtype=w, kv_dtype=kv),
                     max_ctx))
    line = None if acc is None else (f"{gpus} × {acc.name}", gpus * acc.memory_bytes)
    return charts.memory_chart(rows, line)
