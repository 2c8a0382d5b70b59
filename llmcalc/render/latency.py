"""`llmcalc latency` output: prefill, decode, throughput, ridge, speculative decoding; JSON, explain."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from llmcalc.planning.hardware import Accelerator
from llmcalc.planning.latency import CUSTOM, Latency, Stage
from llmcalc.planning.speed import PREFILL_TERMS, TERMS, Expected, Fit, step_model
from llmcalc.render import heading, n, note_lines
from llmcalc.render.grid import Col, Fitted, Grid


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f} ms"


def _stage_rows(t: Grid, label: str, s: Stage) -> None:
    t.add(f"{label}: compute (FLOPs / peak)", _ms(s.compute_s), "bound" if s.bound == "compute" else "")
    t.add(f"{label}: memory (bytes / bandwidth)", _ms(s.memory_s), "bound" if s.bound == "memory" else "")
    if s.comm_s:
        t.add(f"{label}: all-reduces ({n(s.comm_bytes)} B per GPU)", _ms(s.comm_s), "added")


def latency_view(r: Latency, exp: Expected | None = None) -> RenderableType:
    link = f", {r.interconnect.name}" if r.tp > 1 else ""  # one GPU: no all-reduce crosses a link
    head = heading(r.model, f"{r.tp} × {r.accelerator.name} (tp {r.tp}{link}) · "
                   f"batch {r.batch} · prompt {n(r.ctx)} · generate {n(r.gen)} · weights "
                   f"{r.dtype.value} · KV {r.kv_dtype.value} · efficiency compute "
                   f"{r.compute_efficiency:g}, bandwidth {r.bandwidth_efficiency:g}")
    # labels and a worded value wrap at spaces, sharing a narrow terminal's width
    t = Grid("roofline (a bound: no engine is faster at these efficiencies)",
             [Col("", wrap=True), Col("time", right=True, wrap=True), Col("", right=True)])
    _stage_rows(t, "prefill", r.prefill)
    t.add("time to first token (prefill)", _ms(r.ttft_s), "", bold=True)
    _stage_rows(t, f"decode step at context {n(r.decode_ctx)}", r.decode)
    t.sections.add(len(t.rows) - (3 if r.decode.comm_s else 2))
    t.add("time per output token", _ms(r.tpot_s), "", bold=True)
    t.add("end to end (TTFT + (gen − 1) × TPOT)", _ms(r.e2e_s), "")
    t.add("whole requests, prefill and decode overlapped", _ms(r.whole_s), "")
    t.add("decode tokens/s per request", f"{r.tokens_per_s_per_request:,.1f}", "", section=True)
    t.add("decode tokens/s, whole batch", f"{r.tokens_per_s:,.1f}", "")
    t.add("decode tokens/s per GPU", f"{r.tokens_per_s_per_gpu:,.1f}", "")
    t.add("output tokens/s per GPU over the request", f"{r.throughput_per_gpu:,.1f}", "")
    ridge = ("never (reading a sequence's cache outlasts its FLOPs)" if r.ridge_batch is None
             else n(r.ridge_batch))
    t.add("decode turns compute bound at batch", ridge, "")
    parts: list[RenderableType] = [head, Fitted(t)]
    if exp is not None:
        parts.append(_expected_grid(r, exp))
    if r.speculation:
        s = r.speculation
        parts.append(Text(
            f"speculative decoding with {s.draft}: γ = {s.draft_tokens}, α = {s.accept_rate:g}: "
            f"{s.tokens_per_step:.3f} tokens per target step, draft/target step cost c = "
            f"{s.cost_ratio:.3f}, expected speed-up {s.speedup:.2f}× (Leviathan et al. 2023)"
        ))
    return Group(*parts, *note_lines(r.notes))


def _error(f: Fit) -> str:
    if not any(f.coefficients):  # no row informs the stage: its time is the bound's
        return "the bound: no measured row informs this stage"
    if f.loo_median_abs_error is None:  # too few own rows (the stage may rest on stand-ins)
        lent = f.stage in f.stand_in_stages and not f.rows
        return _UNKNOWN + ("; from the stand-in rows below" if lent else "")
    return _loo(f.loo_median_abs_error, f.rows)


_UNKNOWN = "unknown: too few own rows to leave one out"


def _loo(e: float | None, rows: int) -> str:
    if e is None:
        return _UNKNOWN if rows else ""
    return f"±{e * 100:.1f}% (median, leave-one-out, {rows} rows)"


def expected_title(e: Expected) -> str:
    return (f"expected on {e.engine} ({e.backend}): a step-time model fitted on published "
            "measurements, beside the bound")


def expected_rows(r: Latency, e: Expected) -> list[tuple[str, str, float, float, str]]:
    """The expected table as the CLI prints it: (label, JSON key, expected, bound, error)."""
    return [
        ("prefill tokens/s", "prefill_tokens_per_s", e.prefill_tokens_per_s,
         r.batch * r.ctx / r.prefill.seconds, _error(e.prefill)),
        ("decode tokens/s, whole batch", "decode_tokens_per_s", e.decode_tokens_per_s,
         r.batch / r.decode.seconds, _error(e.decode)),
        ("output tokens/s per GPU over the request", "throughput_tokens_per_s",
         e.throughput_tokens_per_s, r.throughput_per_gpu,
         _loo(e.throughput_loo_median_abs_error, e.throughput_rows)),
    ]


# The rows after the figures, each where it applies, in the order the CLI prints them: another
# engine × backend's rows fitted beside these (``STAND_INS``), what the fit took a card not in the
# table for (speed.custom_card), the card's own rows far from the fit (speed.card_caution), weights
# the fitted rows have not run (speed.weights_caution), the card's boost clock assumed
# (speed.clock_note), the call's batch past every fitted row's (speed.beyond_rows). The page takes
# them as expected_view's note_keys.
NOTE_KEYS = ("stand_in", "assumed_card", "caution", "weights", "clock", "beyond")


def note_rows(e: Expected) -> dict[str, tuple[str, str, str, str]]:
    """The rows of ``NOTE_KEYS`` that apply to ``e``, by key, in their order."""
    f, a = e.prefill, e.assumed_card
    rows = {
        "stand_in": (f"fitted with {f.stand_in_rows} other rows", "", "", f.stand_in),
        "assumed_card": ("card assumed", "", "", a.peaks_source if a is not None else ""),
        "caution": ("this card's rows", "", "", e.caution),
        "weights": ("these weights", "", "", e.weights),
        "clock": ("clock assumed", "", "", e.clock),
        "beyond": ("past the rows", "", "", e.beyond)}
    return {k: rows[k] for k in NOTE_KEYS if rows[k][3]}


def _expected_grid(r: Latency, e: Expected) -> Fitted:
    t = Grid(expected_title(e), [Col("", wrap=True), Col("expected", right=True),
                                 Col("bound", right=True), Col("error", wrap=True)])
    for label, _, got, bound, error in expected_rows(r, e):
        t.add(label, f"{got:,.1f}", f"{bound:,.1f}", error)
    for row in note_rows(e).values():
        t.add(*row)
    return Fitted(t)


def expected_view(r: Latency, e: Expected) -> dict[str, Any]:
    """The page's expected table: the CLI's title, rows and words, and each figure's value; the
    names of the fit's terms, in the order of ``expected_json``'s coefficients."""
    return {
        "title": expected_title(e),
        "rows": [{"label": label, "key": key, "expected": got, "bound": bound,
                  "expected_text": f"{got:,.1f}", "bound_text": f"{bound:,.1f}", "error": error}
                 for label, key, got, bound, error in expected_rows(r, e)],
        "terms": {"prefill": list(TERMS[:PREFILL_TERMS]), "decode": list(TERMS[PREFILL_TERMS:])},
        "throughput_rows": e.throughput_rows,  # whole requests: they inform both stages' terms
        # the rows after the figures, in the CLI's order (NOTE_KEYS), each in its words, None where
        # it does not apply
        "note_keys": list(NOTE_KEYS), **dict.fromkeys(NOTE_KEYS),
        **{k: dict(zip(("label", "expected_text", "bound_text", "error"), row, strict=True))
           for k, row in note_rows(e).items()},
    }


def _fit_json(f: Fit) -> dict[str, Any]:
    return {"coefficients": list(f.coefficients), "rows": f.rows,
            "median_abs_error_leave_one_out": f.loo_median_abs_error}


def _stand_in_json(e: Expected) -> dict[str, Any]:
    """Whose rows joined the fit (``STAND_INS``), only where some did."""
    f = e.prefill
    return {"stand_in": {"rows": f.stand_in_rows, "why": f.stand_in}} if f.stand_in else {}


def _assumed_json(a: Accelerator) -> dict[str, Any]:
    """A custom card's peaks as assumed (llmcalc.planning.latency.assumed_peaks for the bound,
    speed.custom_card for the fit), and why."""
    return {"kind": a.kind, "fp16_flops": a.fp16_flops, "int8_ops": a.int8_ops,
            "fp8_flops": a.fp8_flops, "fp4_flops": a.fp4_flops, "assumed": a.peaks_source}


def expected_json(e: Expected) -> dict[str, Any]:
    return {
        "engine": e.engine, "backend": e.backend,
        "prefill_tokens_per_s": e.prefill_tokens_per_s,
        "decode_tokens_per_s": e.decode_tokens_per_s,
        "throughput_tokens_per_s": e.throughput_tokens_per_s,
        "basis": {
            "decode": {"model": step_model("decode") + " (a = 1/η, c per layer, f the batch's "
                       "compute)", **_fit_json(e.decode)},
            "prefill": {"model": step_model("prefill") + " (p = 1/η at the weight format's compute "
                        "peak)", **_fit_json(e.prefill)},
            "rows": "llmcalc/planning/measured_speed.json",
            **_stand_in_json(e),
            **({} if e.assumed_card is None else {"card": _assumed_json(e.assumed_card)}),
            **({"caution": e.caution} if e.caution else {}),
            **({"weights": e.weights} if e.weights else {}),
            **({"clock": e.clock} if e.clock else {}),
            **({"beyond": e.beyond} if e.beyond else {}),
        },
        "error": {"decode": e.decode.loo_median_abs_error,
                  "prefill": e.prefill.loo_median_abs_error,
                  "throughput": e.throughput_loo_median_abs_error},
    }


def _stage_json(s: Stage) -> dict[str, Any]:
    return {"flops_per_gpu": s.flops, "bytes_per_gpu": s.bytes, "all_reduce_bytes_per_gpu":
            s.comm_bytes, "compute_s": s.compute_s, "memory_s": s.memory_s,
            "all_reduce_s": s.comm_s, "bound": s.bound, "seconds": s.seconds}


def latency_json(r: Latency, exp: Expected | None = None) -> dict[str, Any]:
    a, link = r.accelerator, r.interconnect
    sp = r.speculation
    return {
        "notes": list(r.notes),
        "model": r.model,
        "inputs": {
            "accelerator": {"name": a.name, "peak_flops": a.peak_flops,
                            "compute_peak_flops": r.peak_flops, "bandwidth": a.bandwidth,
                            "memory_bytes": a.memory_bytes, "source": a.source,
                            **({"assumed_peaks": _assumed_json(a)} if a.key == CUSTOM else {})},
            "interconnect": {"name": link.name, "bandwidth_one_way": link.bandwidth,
                             "source": link.source},
            "tp": r.tp, "batch": r.batch, "ctx": r.ctx, "gen": r.gen, "dtype": r.dtype.value,
            "kv_dtype": r.kv_dtype.value, "compute_efficiency": r.compute_efficiency,
            "bandwidth_efficiency": r.bandwidth_efficiency,
            "draft": sp.draft if sp else None, "accept_rate": sp.accept_rate if sp else None,
            "draft_tokens": sp.draft_tokens if sp else None,
        },
        "weight_bytes": r.weight_bytes,
        "prefill": {**_stage_json(r.prefill), **({"note": r.prefill_note} if r.prefill_note else {})},
        "decode_step": {**_stage_json(r.decode), "ctx": r.decode_ctx},
        "ttft_s": r.ttft_s,
        "tpot_s": r.tpot_s,
        "e2e_s": r.e2e_s,
        "whole_s": r.whole_s,
        "tokens_per_s_per_request": r.tokens_per_s_per_request,
        "tokens_per_s": r.tokens_per_s,
        "tokens_per_s_per_gpu": r.tokens_per_s_per_gpu,
        "throughput_per_gpu": r.throughput_per_gpu,
        "ridge_batch": r.ridge_batch,
        "speculative": None if sp is None else {
            "tokens_per_step": sp.tokens_per_step, "cost_ratio": sp.cost_ratio,
            "draft_step_s": sp.draft_step_s, "speedup": sp.speedup,
        },
        **({} if exp is None else {"expected": expected_json(exp)}),
    }


def latency_explain(r: Latency) -> list[str]:
    a, p, d = r.accelerator, r.prefill, r.decode
    peak = r.peak_flops * r.compute_efficiency
    bw = a.bandwidth * r.bandwidth_efficiency
    lines = [
        f"prefill compute = batch × causal forward FLOPs"
        f"{f' ({r.prefill_note})' if r.prefill_note else ''} / tp / (peak of {r.dtype.value}'s "
        f"compute format × eff) = {n(p.flops)} / "
        f"{peak:.4e} = {_ms(p.compute_s)}",
        f"prefill memory = (weights + KV written) / tp / (bandwidth × eff) = {n(p.bytes)} / "
        f"{bw:.4e} = {_ms(p.memory_s)}",
        f"decode step at ctx {n(r.decode_ctx)} = ctx + (gen − 1)/2: compute {n(d.flops)} / "
        f"{peak:.4e} = {_ms(d.compute_s)}; memory (weights + KV cache read) {n(d.bytes)} / "
        f"{bw:.4e} = {_ms(d.memory_s)}; the larger is the bound (Williams et al. 2009)",
    ]
    if r.tp > 1:
        lines.append(
            f"all-reduces: 2 per layer × tokens × d_model × 2 B × 2(tp − 1)/tp per GPU = "
            f"{n(p.comm_bytes)} B (prefill), {n(d.comm_bytes)} B (decode step) over "
            f"{r.interconnect.bandwidth:.4e} B/s one way (Megatron-LM §3; ring all-reduce)"
        )
    lines += [
        f"TTFT = {_ms(r.ttft_s)}; TPOT = {_ms(r.tpot_s)}; end to end = {_ms(r.ttft_s)} + "
        f"{r.gen - 1} × {_ms(r.tpot_s)} = {_ms(r.e2e_s)}",
        f"whole requests = max(FLOPs, bytes of the prefill and the gen − 1 steps) + all-reduces,"
        f" at least one request's own prefill and steps at batch 1 = {_ms(r.whole_s)} (a server "
        f"batches prompts with other requests' decode steps: the stages overlap, so end to end is "
        f"no bound on a batch's requests; speculation not counted); tokens/s per GPU over the request ="
        f" batch × gen / whole requests / tp = {r.batch} × {r.gen} / {r.whole_s:.4f} s / {r.tp} = "
        f"{r.throughput_per_gpu:,.1f}",
    ]
    if r.speculation:
        s = r.speculation
        lines.append(
            f"speculative: (1 − α^(γ+1)) / ((1 − α)(γ·c + 1)) = (1 − {s.accept_rate:g}^"
            f"{s.draft_tokens + 1}) / ((1 − {s.accept_rate:g})({s.draft_tokens}·{s.cost_ratio:.4f}"
            f" + 1)) = {s.speedup:.3f} (Leviathan et al. 2023, Theorem 3.8)"
        )
    return lines
