"""Expected speed on an engine and backend: a model of time per step fitted on published measurements.

The roofline (llmcalc.planning.latency) is a bound no engine beats; this is the speed a user will
see, a step-time model whose coefficients are fitted per engine × backend on the measured rows in
``measured_speed.json`` (each row with its source) by least squares on the relative error:

- decode step:  t = a · bytes / bandwidth + c · layers + f · FLOPs / peak   (a = 1/η_bandwidth;
  c: a per-layer kernel launch / synchronisation cost, in ms per layer; f: the batch's compute,
  which batched decode reaches); bytes are the roofline's — the weights the step reads (MoE: the
  experts the batch's tokens reach, E·(1 − (1 − k/E)^b) of E) and the KV cache at the mean context;
- prefill:      t = p · FLOPs / peak + q · bytes / bandwidth + r · layers   (p = 1/η_compute at the
  peak of the format the weights are computed in, llmcalc.planning.latency.compute_peak; q: the
  weights and cache streamed, e.g. dequantised, once per ubatch; r: per-layer cost).

Coefficients are ≥ 0 (non-negative least squares on the relative error: a term the rows do not
support is 0).

The expected time is never below the roofline's (``max`` with the bound), so the expected tokens/s
never exceed the bound. Pure: nothing here prints or reads a model config; the caller passes each
row's roofline (a :class:`Latency`) in.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from llmcalc.errors import ParameterError
from llmcalc.planning.latency import Latency, Stage


@dataclass(frozen=True)
class MeasuredRow:
    """One published measurement: a llama-bench pp512 is ctx 512, gen 1; tg128 ctx 1, gen 128."""

    source: str
    engine: str
    backend: str
    card: str
    hw_class: str  # apple | consumer | datacentre
    gpu: str  # a key of hardware.json, or "" where bandwidth and flops describe the card
    bandwidth: str
    flops: str
    flops_basis: str
    model: str
    dtype: str
    ctx: int
    gen: int
    batch: int
    test: str  # pp… (prefill) or tg… (decode)
    tokens_per_s: float
    quoted_in: str = ""  # where the figure was read, when not at the source itself
    quote: str = ""  # the line as read
    build: str = ""  # the engine build, where the source gives it

    @property
    def stage(self) -> str:
        return "prefill" if self.test.startswith("pp") else "decode"


@lru_cache(maxsize=1)
def measured_rows() -> tuple[MeasuredRow, ...]:
    text = resources.files("llmcalc.planning").joinpath("measured_speed.json").read_text()
    rows = json.loads(text)["rows"]
    return tuple(MeasuredRow(
        source=r["source"], engine=r["engine"], backend=r["backend"], card=r["card"],
        hw_class=r["class"], gpu=r.get("gpu", ""), bandwidth=r.get("bandwidth", ""),
        flops=r.get("flops", ""), flops_basis=r.get("flops_basis", ""), model=r["model"],
        dtype=r["dtype"], ctx=r["ctx"], gen=r["gen"], batch=r["batch"], test=r["test"],
        tokens_per_s=r["tokens_per_s"], quoted_in=r.get("quoted_in", ""),
        quote=r.get("quote", ""), build=r.get("build", ""),
    ) for r in rows)


def rows_for(engine: str, backend: str) -> tuple[MeasuredRow, ...]:
    return tuple(r for r in measured_rows() if r.engine == engine and r.backend == backend)


LAYER_S = 1e-3  # the per-layer feature is layers × 1 ms, so its coefficient reads in ms per layer


def _decode_features(lat: Latency) -> tuple[float, ...]:
    """Weights and KV cache read at the bandwidth, layers (launch/sync), the batch's FLOPs."""
    d = lat.decode
    return (d.bytes / lat.accelerator.bandwidth, lat.layers * LAYER_S, d.flops / lat.peak_flops)


def _prefill_features(lat: Latency) -> tuple[float, ...]:
    """FLOPs at the weight format's compute peak, bytes streamed, layers (launch/sync)."""
    p = lat.prefill
    return (p.flops / lat.peak_flops, p.bytes / lat.accelerator.bandwidth, lat.layers * LAYER_S)


def _solve(a: list[list[float]], b: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting; None when the system is singular."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        if abs(m[p][c]) < 1e-12 * max(1.0, max(abs(x) for x in m[p][:n])):
            return None
        m[c], m[p] = m[p], m[c]
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c], strict=True)]
    return [m[i][n] / m[i][i] for i in range(n)]


def _fit(xs: list[tuple[float, ...]], ts: list[float]) -> tuple[float, ...]:
    """Non-negative least squares of Σ(Σ_j c_j·x_j / t − 1)²: the best of the fits on each subset
    of the features whose coefficients are all ≥ 0 (a negative cost has no meaning); 3 features,
    7 subsets, each solved by its normal equations."""
    n = len(xs[0])
    ys = [[x / t for x in row] for row, t in zip(xs, ts, strict=True)]
    best: tuple[float, tuple[float, ...]] | None = None
    for mask in range(1, 2**n):
        cols = [j for j in range(n) if mask >> j & 1]
        a = [[sum(y[i] * y[j] for y in ys) for j in cols] for i in cols]
        c = _solve(a, [sum(y[i] for y in ys) for i in cols])
        if c is None or min(c) < 0:
            continue
        full = [0.0] * n
        for j, v in zip(cols, c, strict=True):
            full[j] = v
        resid = sum((sum(f * x for f, x in zip(full, y, strict=True)) - 1) ** 2 for y in ys)
        if best is None or resid < best[0]:
            best = (resid, tuple(full))
    assert best is not None  # a single positive feature always fits
    return best[1]


@dataclass(frozen=True)
class Fit:
    """Coefficients of one stage's step-time model and the rows they came from."""

    stage: str
    coefficients: tuple[float, ...]
    rows: int
    loo_median_abs_error: float | None  # leave-one-out, as a fraction

    def seconds(self, features: tuple[float, ...]) -> float:
        return sum(c * x for c, x in zip(self.coefficients, features, strict=True))


def _features(stage: str, lat: Latency) -> tuple[float, ...]:
    return _decode_features(lat) if stage == "decode" else _prefill_features(lat)


def _measured_seconds(row: MeasuredRow) -> float:
    """Seconds of one step: a prefill of batch × ctx tokens, or one decode step of the batch."""
    if row.stage == "prefill":
        return row.batch * row.ctx / row.tokens_per_s
    return row.batch / row.tokens_per_s


def fit_stage(stage: str, pairs: list[tuple[MeasuredRow, Latency]], *, engine: str,
              backend: str) -> Fit:
    pairs = [(r, lat) for r, lat in pairs if r.stage == stage]
    if not pairs:
        raise ParameterError(f"{{engine}} {{value}}: no published {stage} measurements on the "
                             f"{backend} backend to fit an expected speed on", value=engine)
    xs = [_features(stage, lat) for _, lat in pairs]
    ts = [_measured_seconds(r) for r, _ in pairs]
    errors = [abs(e) for _, e in loo_errors(stage, pairs)] if len(pairs) > 2 else []
    return Fit(stage, _fit(xs, ts), len(pairs), statistics.median(errors) if errors else None)


def _bound_seconds(stage: str, lat: Latency) -> float:
    s: Stage = lat.decode if stage == "decode" else lat.prefill
    return s.seconds


def loo_errors(stage: str, pairs: list[tuple[MeasuredRow, Latency]]) -> list[tuple[MeasuredRow, float]]:
    """Each row's signed error (expected / measured − 1) with that row left out of the fit."""
    pairs = [(r, lat) for r, lat in pairs if r.stage == stage]
    xs = [_features(stage, lat) for _, lat in pairs]
    ts = [_measured_seconds(r) for r, _ in pairs]
    out = []
    for i, (row, lat) in enumerate(pairs):
        c = _fit(xs[:i] + xs[i + 1:], ts[:i] + ts[i + 1:])
        fitted = sum(f * x for f, x in zip(c, xs[i], strict=True))
        predicted = max(fitted, _bound_seconds(stage, lat))
        out.append((row, ts[i] / predicted - 1))
    return out


@dataclass(frozen=True)
class Expected:
    """What ``latency --engine`` adds beside the bound."""

    engine: str
    backend: str
    prefill_tokens_per_s: float
    decode_tokens_per_s: float
    throughput_tokens_per_s: float
    prefill: Fit
    decode: Fit


def expected(lat: Latency, *, engine: str, backend: str, prefill: Fit, decode: Fit) -> Expected:
    """Expected speed of the run ``lat`` describes; each step's time is at least the bound's."""
    t_pre = max(prefill.seconds(_prefill_features(lat)), lat.prefill.seconds)
    t_dec = max(decode.seconds(_decode_features(lat)), lat.decode.seconds)
    e2e = t_pre + (lat.gen - 1) * t_dec
    return Expected(
        engine=engine, backend=backend,
        prefill_tokens_per_s=lat.batch * lat.ctx / t_pre,
        decode_tokens_per_s=lat.batch / t_dec,
        throughput_tokens_per_s=lat.batch * lat.gen / e2e / lat.tp,
        prefill=prefill, decode=decode,
    )
