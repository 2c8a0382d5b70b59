"""Expected speed on an engine and backend: a model of time per step fitted on published measurements.

The roofline (llmcalc.planning.latency) is a bound no engine beats; this is the speed a user will
see, a step-time model whose coefficients are fitted per engine × backend on the measured rows in
``measured_speed.json`` (each row with its source) by least squares on the relative error:

- decode step:  t = a · bytes / bandwidth + c · layers      (a = 1/η_bandwidth; c: a per-layer
  kernel launch / synchronisation cost in seconds); bytes are the roofline's — the weights the step
  reads (MoE: the experts the batch's tokens reach) and the KV cache at the mean context;
- prefill:      t = p · FLOPs / peak + q · bytes / bandwidth   (p = 1/η_compute; q: the weights
  and cache streamed, e.g. dequantised, once per ubatch).

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

    @property
    def stage(self) -> str:
        return "prefill" if self.test.startswith("pp") else "decode"


@lru_cache(maxsize=1)
def measured_rows() -> tuple[MeasuredRow, ...]:
    text = resources.files("llmcalc.planning").joinpath("measured_speed.json").read_text()
    rows = json.loads(text)["rows"]
    return tuple(MeasuredRow(
        source=r["source"], engine=r["engine"], backend=r["backend"], card=r["card"],
        hw_class=r["class"], bandwidth=r["bandwidth"], flops=r["flops"],
        flops_basis=r["flops_basis"], model=r["model"], dtype=r["dtype"], ctx=r["ctx"],
        gen=r["gen"], batch=r["batch"], test=r["test"], tokens_per_s=r["tokens_per_s"],
        quoted_in=r.get("quoted_in", ""),
    ) for r in rows)


def rows_for(engine: str, backend: str) -> tuple[MeasuredRow, ...]:
    return tuple(r for r in measured_rows() if r.engine == engine and r.backend == backend)


def _decode_features(lat: Latency) -> tuple[float, float]:
    d = lat.decode
    return d.bytes / lat.accelerator.bandwidth, float(lat.layers)


def _prefill_features(lat: Latency) -> tuple[float, float]:
    p = lat.prefill
    return p.flops / lat.accelerator.peak_flops, p.bytes / lat.accelerator.bandwidth


def _fit2(xs: list[tuple[float, float]], ts: list[float]) -> tuple[float, float]:
    """Least squares of Σ((u·x0 + v·x1)/t − 1)²: the 2 × 2 normal equations."""
    s00 = s01 = s11 = b0 = b1 = 0.0
    for (x0, x1), t in zip(xs, ts, strict=True):
        y0, y1 = x0 / t, x1 / t
        s00, s01, s11 = s00 + y0 * y0, s01 + y0 * y1, s11 + y1 * y1
        b0, b1 = b0 + y0, b1 + y1
    det = s00 * s11 - s01 * s01
    if abs(det) < 1e-12 * max(s00 * s11, 1e-300):  # one feature only: fit it alone
        return b0 / s00, 0.0
    u, v = (b0 * s11 - b1 * s01) / det, (b1 * s00 - b0 * s01) / det
    if v < 0:  # a negative overhead has no meaning: fit the first feature alone
        return b0 / s00, 0.0
    return u, v


@dataclass(frozen=True)
class Fit:
    """Coefficients of one stage's step-time model and the rows they came from."""

    stage: str
    coefficients: tuple[float, float]
    rows: int
    loo_median_abs_error: float | None  # leave-one-out, as a fraction

    def seconds(self, features: tuple[float, float]) -> float:
        return self.coefficients[0] * features[0] + self.coefficients[1] * features[1]


def _features(stage: str, lat: Latency) -> tuple[float, float]:
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
    return Fit(stage, _fit2(xs, ts), len(pairs), statistics.median(errors) if errors else None)


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
        u, v = _fit2(xs[:i] + xs[i + 1:], ts[:i] + ts[i + 1:])
        predicted = max(u * xs[i][0] + v * xs[i][1], _bound_seconds(stage, lat))
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
