"""`llmcalc latency MODEL --gpu h100`: prefill, decode and throughput bounds on an accelerator."""

from __future__ import annotations

from functools import cache
from typing import Annotated, Optional

import typer
from rich.text import Text

from llmcalc.choices import BACKENDS, parse_backend, parse_engine
from llmcalc.cli._common import (
    ExplainOpt,
    FamilyOpt,
    Format,
    FormatOpt,
    JsonOpt,
    ModelArg,
    SetOpt,
    StrictOpt,
    handles_errors,
    output_format,
    print_json,
    refuse_assumed,
    refuse_explain,
    set_strict,
    show,
    spec_for,
    takes_text,
)
from llmcalc.cli._hardware import GpuBandwidthOpt, GpuFlopsOpt, GpuOpt
from llmcalc.cli._options import COUNT_SUFFIXES, CacheDTypeOpt, EngineOpt, speaks_flags
from llmcalc.cli._weights import DTypeOpt
from llmcalc.errors import UsageError
from llmcalc.formulas.quant import resolve_format
from llmcalc.inputs import speccache
from llmcalc.planning.hardware import INTERCONNECTS, interconnect, require, resolve
from llmcalc.planning.latency import Latency, engine_cache, engine_kv, engine_runs, kv_given
from llmcalc.planning.latency import latency as compute_latency
from llmcalc.planning.speed import (
    Expected,
    MeasuredRow,
    Model,
    expected,
    fit_model,
    rows_for,
    stand_in_rows,
)
from llmcalc.render.count import provenance
from llmcalc.render.latency import latency_explain, latency_json, latency_view
from llmcalc.units import named, parse_cache_dtype, parse_context, parse_count


@handles_errors
@speaks_flags
def latency(
    model: ModelArg,
    gpu: GpuOpt = None,
    gpu_flops: GpuFlopsOpt = None,
    gpu_bandwidth: GpuBandwidthOpt = None,
    tp: Annotated[int, typer.Option("--tp", help="Tensor-parallel GPUs.")] = 1,
    batch: Annotated[str, typer.Option("--batch", help=f"Sequences served together ({COUNT_SUFFIXES}).")] = "1",
    ctx: Annotated[str, typer.Option("--ctx", help="Prompt tokens (4k = 4,096).")] = "1k",
    gen: Annotated[str, typer.Option("--gen", help=f"Generated tokens per sequence ({COUNT_SUFFIXES}).")] = "256",
    dtype: DTypeOpt = None,
    kv_dtype: CacheDTypeOpt = None,
    link: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--interconnect", help=f"GPU link for --tp: {', '.join(INTERCONNECTS)} "
                     "(default: the card's own).", show_default=False),
    ] = None,
    compute_efficiency: Annotated[
        float, typer.Option("--compute-efficiency", help="Share of peak FLOP/s reached (1: the "
                            "roofline bound).")
    ] = 1.0,
    bandwidth_efficiency: Annotated[
        float, typer.Option("--bandwidth-efficiency", help="Share of memory bandwidth reached "
                            "(1: the roofline bound).")
    ] = 1.0,
    draft: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--draft", help="Draft model for speculative decoding.", show_default=False),
    ] = None,
    accept_rate: Annotated[
        float, typer.Option("--accept-rate", help="Speculative decoding: acceptance rate α.")
    ] = 0.7,
    draft_tokens: Annotated[
        int, typer.Option("--draft-tokens", help="Speculative decoding: draft tokens γ per step.")
    ] = 4,
    engine: EngineOpt = None,
    backend: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--backend", help=f"The engine's backend: {', '.join(BACKENDS)} (default: "
                     "metal on Apple silicon, rocm on AMD cards, vulkan on Intel's, cuda on the "
                     "rest; hip reads as rocm, mps as metal).",
                     show_default=False),
    ] = None,
    set_: SetOpt = None,
    family: FamilyOpt = None,
    strict: StrictOpt = False,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    explain: ExplainOpt = False,
) -> None:
    """Prefill time (compute bound), time per output token (memory bound), throughput, TTFT."""
    set_strict(strict)
    how = output_format(fmt, as_json)
    refuse_explain(explain, how)
    if how in (Format.csv, Format.markdown):
        raise UsageError(f"--format {how.value}: latency prints as a table or JSON")
    spec = takes_text(spec_for(model, set_, family), "latency")
    acc = resolve(gpu, flops=gpu_flops, bandwidth=gpu_bandwidth)
    require(acc, "peak_flops", "bandwidth")
    weights = resolve_format(spec, dtype)
    if engine is None and backend is not None:
        raise UsageError("--backend: names an engine's backend; give --engine too")
    parsed = parse_engine(engine) if engine is not None else None
    engine_name = parsed.name.value if parsed is not None else None
    version = parsed.version if parsed is not None else None
    kv = engine_kv(spec, kv_given(kv_dtype), weights, engine_name, version,
                   acc=acc, given=named(dtype))
    draft_spec = spec_for(draft, None) if draft is not None else None
    if draft_spec is not None:
        engine_runs(draft_spec, engine_name, version)
        engine_cache(draft_spec, kv, engine_name)  # its heads too
    backend_name = parse_backend(backend, acc) if engine is not None else None
    r = compute_latency(
        spec, accelerator=acc, interconnect=interconnect(link, acc), tp=tp,
        batch=parse_count(batch, option="--batch"), ctx=parse_context(ctx, option="--ctx"),
        gen=parse_count(gen, option="--gen"), dtype=weights, kv_dtype=kv,
        compute_efficiency=compute_efficiency, bandwidth_efficiency=bandwidth_efficiency,
        backend=backend_name, engine=engine_name,
        draft=draft_spec,
        accept_rate=accept_rate, draft_tokens=draft_tokens,
    )
    exp = None
    if engine_name is not None and backend_name is not None:
        exp = expected_for(r, engine=engine_name, backend=backend_name)
    if how is Format.json:
        print_json({**latency_json(r, exp), **provenance(spec)})  # where the config was read
        return
    refuse_assumed(r.notes, "the output")  # --strict: a prompt past the model's window
    show(latency_view(r, exp))
    if explain:
        show(*(Text(line) for line in latency_explain(r)))


def row_latency(row: MeasuredRow) -> Latency:
    """The roofline of one measured row's run, on the row's card figures."""
    spec = spec_for(row.model, None)
    acc = (resolve(row.gpu) if row.gpu else
           resolve(None, flops=row.flops, bandwidth=row.bandwidth))
    weights = resolve_format(spec, row.dtype)
    kv = engine_kv(spec, parse_cache_dtype(row.kv_dtype, option="kv_dtype") if row.kv_dtype
                   else None, weights, row.engine, acc=acc)
    return compute_latency(spec, accelerator=acc, interconnect=interconnect(None, acc), tp=row.tp,
                           batch=row.batch, ctx=row.ctx, gen=row.gen, dtype=weights, kv_dtype=kv,
                           backend=row.backend, engine=row.engine)


@cache
def fitted(engine: str, backend: str) -> Model:
    """An engine × backend's fit (its rows, and another's lent where ``STAND_INS`` says so),
    computed once: per process, and between runs in the spec cache (llmcalc.inputs.speccache),
    keyed by llmcalc's fingerprint (its modules and data tables: the measured rows, the cards) and
    the bundled configs of the rows' models; a pickled fit is the same floats, so every figure is
    the one a fresh fit gives. The rows' models are kept too (keyed by the fingerprint alone, which
    the measured rows are part of): a kept fit is found without reading the rows."""

    def fit() -> Model:
        lent = stand_in_rows(engine, backend)
        return fit_model([(row, row_latency(row)) for row in rows_for(engine, backend)],
                         engine=engine, backend=backend, stand_in=lent.why,
                         stand_ins=[(row, row_latency(row), stages) for row, stages in lent.rows])

    def row_models() -> tuple[str, ...]:
        lent = stand_in_rows(engine, backend).rows
        models = {r.model for r in rows_for(engine, backend)} | {r.model for r, _ in lent}
        if not models:
            fit()  # refuses (no rows): nothing is kept
        return tuple(sorted(models))

    models = speccache.load_derived(f"speed-models-{engine}-{backend}", [], row_models, tuple)
    paths = sorted({p for p in map(speccache.bundled_file, models) if p is not None})
    return speccache.load_derived(f"speed-{engine}-{backend}", paths, fit, Model)


def expected_for(r: Latency, *, engine: str, backend: str) -> Expected:
    return expected(r, engine=engine, backend=backend, model=fitted(engine, backend))
