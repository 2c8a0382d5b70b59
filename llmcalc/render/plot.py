"""`llmcalc plot` output: charts of figures already computed, as SVG, PNG, HTML or terminal text.

A chart is laid out once into drawing primitives (lines, polylines, rectangles, text) in pixels;
the SVG writer prints them as elements and the PNG writer draws them with Pillow, so both files
show the same picture. Nothing here computes a figure: the series come from :mod:`llmcalc.formulas.series`
and :func:`llmcalc.formulas.counting.count`.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from llmcalc.formulas.counting import ParamCount
from llmcalc.formulas.series import FlopsSeries, MemorySeries
from llmcalc.render import n, short
from llmcalc.units import byte_unit

COLORS = ("#2563eb", "#dc2626", "#059669", "#9333ea", "#d97706", "#0891b2")
INK, MUTED, GRID = "#111827", "#6b7280", "#e5e7eb"
GiB = 1024**3

Anchor = Literal["start", "middle", "end"]


@dataclass(frozen=True)
class Series:
    name: str
    xs: tuple[float, ...]
    ys: tuple[float, ...]
    color: str
    dash: bool = False
    width: float = 2.0
    primary: bool = True  # the one series per model a terminal chart of several models keeps


@dataclass(frozen=True)
class Marker:
    """A vertical line at ``x`` (vertical) or a horizontal one at ``y`` with a label."""

    value: float
    label: str
    color: str
    vertical: bool = True


@dataclass(frozen=True)
class LineChart:
    title: str
    x_label: str
    y_label: str
    y_log: bool
    y_unit: Literal["flops", "bytes"]
    series: tuple[Series, ...]
    markers: tuple[Marker, ...] = ()


@dataclass(frozen=True)
class BarChart:
    """Grouped horizontal bars: one row per key, one bar per model."""

    title: str
    keys: tuple[str, ...]
    models: tuple[str, ...]
    values: tuple[tuple[int, ...], ...]  # values[model][key]
    totals: tuple[int, ...]


Chart = LineChart | BarChart


# ---- building charts from computed figures ----

def ctx_tick(ctx: float) -> str:
    c = int(ctx)
    for suffix, size in (("M", 2**20), ("k", 2**10)):
        if c >= size and c % size == 0:
            return f"{c // size}{suffix}"
    return str(c)


def gib_label(nbytes: float, top: float | None = None) -> str:
    """An axis label in the unit the axis's largest value ``top`` reaches (one unit per axis;
    :func:`llmcalc.units.byte_unit`)."""
    name, size = byte_unit(nbytes if top is None else top)
    g = nbytes / size
    return f"{g:,.0f} {name}" if g >= 10 or g == int(g) else f"{g:,.1f} {name}"


def flops_chart(rows: list[tuple[str, FlopsSeries]]) -> LineChart:
    series, markers = [], []
    for i, (name, fs) in enumerate(rows):
        color = COLORS[i % len(COLORS)]
        who = f"{name}: " if len(rows) > 1 else ""
        series += [
            Series(f"{who}forward (weights + attention)", fs.ctx, fs.forward_flops_per_token,
                   color, width=2.5),
            Series(f"{who}weights", fs.ctx, (fs.weight_flops_per_token,) * len(fs.ctx), color,
                   dash=True, width=1.5, primary=False),
            Series(f"{who}attention", fs.ctx, fs.attention_flops_per_token, color, width=1,
                   primary=False),
        ]
        if fs.crossover_ctx is not None:
            markers.append(Marker(fs.crossover_ctx,
                                  f"attention > weights at {n(fs.crossover_ctx)}", color))
    title = "Forward FLOPs per token" + (f" — {rows[0][0]}" if len(rows) == 1 else "")
    return LineChart(title, "context (tokens)", "FLOPs per token", True, "flops",
                     tuple(series), tuple(markers))


def memory_chart(rows: list[tuple[str, MemorySeries, int | None]],
                 gpu: tuple[str, int] | None) -> LineChart:
    """``rows``: name, series, largest context that fits (or None); ``gpu``: label, bytes."""
    series, markers = [], []
    for i, (name, ms, max_ctx) in enumerate(rows):
        color = COLORS[i % len(COLORS)]
        who = f"{name}: " if len(rows) > 1 else ""
        series += [
            Series(f"{who}weights + KV cache", ms.ctx, ms.total_bytes, color, width=2.5),
            Series(f"{who}weights ({ms.dtype.value})", ms.ctx, (ms.weights_bytes,) * len(ms.ctx),
                   color, dash=True, width=1.5, primary=False),
        ]
        if max_ctx is not None:
            markers.append(Marker(max_ctx, f"fits up to {ctx_tick(max_ctx)}", color))
    if gpu is not None:
        markers.append(Marker(gpu[1], gpu[0], INK, vertical=False))
    batch = rows[0][1].batch
    title = (f"Inference memory, batch {batch}" + (f" — {rows[0][0]}" if len(rows) == 1 else ""))
    return LineChart(title, "context (tokens)", "bytes", False, "bytes", tuple(series),
                     tuple(markers))


def params_chart(rows: list[tuple[str, ParamCount]]) -> BarChart:
    keys = list(dict.fromkeys(k for _, pc in rows for k, v in pc.breakdown.items() if v))
    title = "Parameters by tensor group" + (f" — {rows[0][0]}" if len(rows) == 1 else "")
    return BarChart(title, tuple(keys), tuple(name for name, _ in rows),
                    tuple(tuple(pc.breakdown.get(k, 0) for k in keys) for _, pc in rows),
                    tuple(pc.total for _, pc in rows))


# ---- layout into primitives ----

@dataclass
class Canvas:
    width: int
    height: int
    items: list[tuple[object, ...]] = field(default_factory=list)
    groups: list[tuple[str, int, int]] = field(default_factory=list)  # (series name, start, end)

    def line(self, x1: float, y1: float, x2: float, y2: float, color: str, width: float = 1,
             dash: bool = False) -> None:
        self.items.append(("line", x1, y1, x2, y2, color, width, dash))

    def poly(self, points: list[tuple[float, float]], color: str, width: float,
             dash: bool) -> None:
        self.items.append(("poly", tuple(points), color, width, dash))

    def rect(self, x: float, y: float, w: float, h: float, fill: str) -> None:
        self.items.append(("rect", x, y, w, h, fill))

    def text(self, x: float, y: float, s: str, *, size: int = 12, color: str = INK,
             anchor: Anchor = "start", bold: bool = False) -> None:
        self.items.append(("text", x, y, s, size, color, anchor, bold))


def _nice_step(span: float, ticks: int, unit: float) -> float:
    raw = span / max(ticks, 1) / unit
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for m in (1, 2, 2.5, 5, 10):
        if m * mag >= raw:
            return m * mag * unit
    return 10 * mag * unit


def layout_line(chart: LineChart, width: int = 760) -> Canvas:
    left, right, top = 86, 24, 44
    cols = 2 if max(len(s.name) for s in chart.series) * 6.8 + 34 < (width - left - right) / 2 else 1
    n_legend_rows = math.ceil(len(chart.series) / cols)
    height = 380 + 18 * n_legend_rows
    c = Canvas(width, height)
    bottom = 56 + 18 * n_legend_rows
    pw, ph = width - left - right, height - top - bottom
    xs = [x for s in chart.series for x in s.xs]
    ys = [y for s in chart.series for y in s.ys if y > 0 or not chart.y_log]
    ys += [m.value for m in chart.markers if not m.vertical]
    x0, x1 = math.log2(min(xs)), math.log2(max(xs))
    if x1 == x0:
        x1 = x0 + 1
    y0: float
    y1: float
    if chart.y_log:
        y0 = math.floor(math.log10(min(ys)))
        y1 = max(math.ceil(math.log10(max(ys))), y0 + 1)
    else:
        y0, y1 = 0.0, max(ys) * 1.05 or 1.0

    def px(x: float) -> float:
        return left + (math.log2(x) - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        v = math.log10(y) if chart.y_log else y
        return top + ph - (v - y0) / (y1 - y0) * ph

    c.text(width / 2, 24, chart.title, size=15, anchor="middle", bold=True)
    # y grid and labels
    if chart.y_log:
        ticks = [10.0**e for e in range(int(y0), int(y1) + 1)]
    else:
        step = _nice_step(y1, 6, byte_unit(y1)[1] / 4 if chart.y_unit == "bytes" else 1)
        ticks = [i * step for i in range(int(y1 // step) + 1)]
    for t in ticks:
        y = py(t)
        c.line(left, y, left + pw, y, GRID)
        label = gib_label(t, y1) if chart.y_unit == "bytes" else short(t)
        c.text(left - 8, y + 4, label, size=11, color=MUTED, anchor="end")
    # x grid at powers of two, labels thinned to fit
    powers = [2**e for e in range(math.ceil(x0), math.floor(x1) + 1)]
    every = max(1, math.ceil(len(powers) * 44 / pw))
    for i, p in enumerate(powers):
        x = px(p)
        c.line(x, top, x, top + ph, GRID)
        if i % every == 0:
            c.text(x, top + ph + 16, ctx_tick(p), size=11, color=MUTED, anchor="middle")
    c.line(left, top + ph, left + pw, top + ph, INK)
    c.line(left, top, left, top + ph, INK)
    c.text(left + pw / 2, top + ph + 36, chart.x_label, size=12, anchor="middle")
    c.text(16, top - 12, chart.y_label, size=12, color=MUTED)
    for s in chart.series:
        start = len(c.items)
        pts = [(px(x), py(y)) for x, y in zip(s.xs, s.ys, strict=True)
               if y > 0 or not chart.y_log]
        c.poly(pts, s.color, s.width, s.dash)
        c.groups.append((s.name, start, len(c.items)))
    for i, m in enumerate(chart.markers):
        if m.vertical:
            if not min(xs) <= m.value <= max(xs):
                continue
            x = px(m.value)
            c.line(x, top, x, top + ph, m.color, 1.5, True)
            anchor: Anchor = "end" if x > left + pw * 0.7 else "start"
            c.text(x + (-4 if anchor == "end" else 4), top + 14 + 15 * i, m.label, size=11,
                   color=m.color, anchor=anchor)
        else:
            y = py(m.value)
            c.line(left, y, left + pw, y, m.color, 1.5)
            c.text(left + pw - 4, y - 5, m.label, size=11, color=m.color, anchor="end")
    # legend, two columns under the axis label
    for i, s in enumerate(chart.series):
        lx = left + (i % cols) * (pw / 2)
        ly = top + ph + 56 + (i // cols) * 18
        c.line(lx, ly - 4, lx + 24, ly - 4, s.color, s.width, s.dash)
        c.text(lx + 30, ly, s.name, size=11)
    return c


def layout_bars(chart: BarChart, width: int = 760) -> Canvas:
    row = 8 + 12 * len(chart.models)
    left, right, top = 150, 70, 44
    legend = 20 * len(chart.models)
    height = top + row * len(chart.keys) + 30 + legend
    c = Canvas(width, height)
    pw = width - left - right
    vmax = max((v for vs in chart.values for v in vs), default=1) or 1
    c.text(width / 2, 24, chart.title, size=15, anchor="middle", bold=True)
    for k, key in enumerate(chart.keys):
        y = top + k * row
        c.text(left - 8, y + row / 2 + 4, key, size=11, anchor="end")
        for m, _ in enumerate(chart.models):
            v = chart.values[m][k]
            start = len(c.items)
            c.rect(left, y + 4 + m * 12, max(pw * v / vmax, 0.5 if v else 0), 10, COLORS[m])
            c.text(left + pw * v / vmax + 4, y + 13 + m * 12, short(v), size=10, color=MUTED)
            c.groups.append((f"{chart.models[m]}: {key}", start, len(c.items)))
    c.line(left, top, left, top + row * len(chart.keys), INK)
    for m, name in enumerate(chart.models):
        y = top + row * len(chart.keys) + 24 + m * 20
        c.rect(left, y - 10, 12, 12, COLORS[m])
        c.text(left + 18, y, f"{name}: {chart.totals[m]:,} parameters", size=12)
    return c


def layout(chart: Chart) -> Canvas:
    return layout_line(chart) if isinstance(chart, LineChart) else layout_bars(chart)


# ---- writers ----

def to_svg(chart: Chart) -> str:
    c = layout(chart)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{c.width}" height="{c.height}" '
           f'viewBox="0 0 {c.width} {c.height}" font-family="DejaVu Sans, Arial, sans-serif">',
           f"<title>{html.escape(chart.title)}</title>",
           '<rect width="100%" height="100%" fill="#ffffff"/>']
    opened = {start: name for name, start, _ in c.groups}
    closing = {end for _, _, end in c.groups}
    for i, item in enumerate(c.items):
        if i in closing:
            out.append("</g>")
        if i in opened:
            out.append(f'<g class="series" data-name="{html.escape(opened[i])}">')
        out.append(_svg_item(item))
    if len(c.items) in closing:
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _svg_item(item: tuple[object, ...]) -> str:
    kind = item[0]
    if kind == "line":
        _, x1, y1, x2, y2, color, width, dash = item
        d = ' stroke-dasharray="6 4"' if dash else ""
        return (f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
                f'stroke="{color}" stroke-width="{width}"{d}/>')
    if kind == "poly":
        _, pts, color, width, dash = item
        d = ' stroke-dasharray="6 4"' if dash else ""
        points = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)  # type: ignore[attr-defined]
        return (f'<polyline points="{points}" fill="none" stroke="{color}" '
                f'stroke-width="{width}" stroke-linejoin="round"{d}/>')
    if kind == "rect":
        _, x, y, w, h, fill = item
        return f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" fill="{fill}"/>'
    _, x, y, s, size, color, anchor, bold = item
    weight = ' font-weight="bold"' if bold else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{color}" '
            f'text-anchor="{anchor}"{weight}>{html.escape(str(s))}</text>')


def write_png(chart: Chart, path: Path, *, scale: int = 2) -> None:
    """The same picture as :func:`to_svg`, drawn with Pillow at ``scale``× for sharp lines."""
    from PIL import Image, ImageDraw, ImageFont

    c = layout(chart)
    img = Image.new("RGB", (c.width * scale, c.height * scale), "#ffffff")
    draw = ImageDraw.Draw(img)
    fonts: dict[tuple[int, bool], ImageFont.ImageFont | ImageFont.FreeTypeFont] = {}

    def font(size: int, bold: bool) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
        if (size, bold) not in fonts:
            name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
            try:
                fonts[size, bold] = ImageFont.truetype(name, size * scale)
            except OSError:
                fonts[size, bold] = ImageFont.load_default(size * scale)
        return fonts[size, bold]

    def s(v: object) -> float:
        return float(v) * scale  # type: ignore[arg-type]

    for item in c.items:
        kind = item[0]
        if kind in ("line", "poly"):
            if kind == "line":
                _, x1, y1, x2, y2, color, width, dash = item
                pts = [(s(x1), s(y1)), (s(x2), s(y2))]
            else:
                _, raw, color, width, dash = item
                pts = [(s(x), s(y)) for x, y in raw]  # type: ignore[attr-defined]
            w = max(1, round(s(width)))
            for a, b in _dashed(pts, 6 * scale, 4 * scale) if dash else zip(pts, pts[1:], strict=False):
                draw.line([a, b], fill=str(color), width=w)
        elif kind == "rect":
            _, x, y, w_, h, fill = item
            if float(w_) > 0:  # type: ignore[arg-type]
                draw.rectangle([s(x), s(y), s(x) + s(w_), s(y) + s(h)], fill=str(fill))
        else:
            _, x, y, text, size, color, anchor, bold = item
            f = font(int(size), bool(bold))  # type: ignore[call-overload]
            pa = {"start": "ls", "middle": "ms", "end": "rs"}[str(anchor)]
            draw.text((s(x), s(y)), str(text), fill=str(color), font=f, anchor=pa)
    img.save(path, format="PNG", optimize=True)


def _dashed(pts: list[tuple[float, float]], on: float, off: float
            ) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    out = []
    for (x1, y1), (x2, y2) in zip(pts, pts[1:], strict=False):
        length = math.hypot(x2 - x1, y2 - y1)
        t = 0.0
        while t < length:
            e = min(t + on, length)
            out.append(((x1 + (x2 - x1) * t / length, y1 + (y2 - y1) * t / length),
                        (x1 + (x2 - x1) * e / length, y1 + (y2 - y1) * e / length)))
            t = e + off
    return out


def to_html(chart: Chart, *, command: str) -> str:
    """A page with the chart (inline SVG, no script, no network) and its numbers as a table."""
    rows = []
    if isinstance(chart, LineChart):
        head = "<tr><th>series</th><th>context</th><th>value</th></tr>"
        for s in chart.series:
            for x, y in zip(s.xs, s.ys, strict=True):
                rows.append(f"<tr><td>{html.escape(s.name)}</td><td>{int(x):,}</td>"
                            f"<td>{int(y):,}</td></tr>")
    else:
        head = "<tr><th>tensor group</th>" + "".join(
            f"<th>{html.escape(m)}</th>" for m in chart.models) + "</tr>"
        for k, key in enumerate(chart.keys):
            rows.append(f"<tr><td>{html.escape(key)}</td>" + "".join(
                f"<td>{chart.values[m][k]:,}</td>" for m in range(len(chart.models))) + "</tr>")
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(chart.title)}</title>"
        "<style>body{font:14px system-ui,sans-serif;margin:24px;color:#111827}"
        "table{border-collapse:collapse;font-size:12px}td,th{padding:2px 10px;"
        "border-bottom:1px solid #e5e7eb;text-align:right}td:first-child,th:first-child"
        "{text-align:left}code{background:#f3f4f6;padding:2px 4px}</style></head><body>\n"
        f"{to_svg(chart)}<p>Made with <code>{html.escape(command)}</code></p>\n"
        f"<table>{head}{''.join(rows)}</table>\n</body></html>\n"
    )


# ---- terminal ----

def to_text(chart: Chart, *, width: int = 72, height: int = 14) -> str:
    """A compact chart in characters: log-x scatter of each series, or bars for parameters."""
    if isinstance(chart, BarChart):
        return _text_bars(chart, width)
    marks = "*o+x#@%&"
    label_w = 11
    several = len({s.color for s in chart.series}) > 1
    shown = tuple(s for s in chart.series if s.primary or not several)
    pw = max(width - label_w - 2, 20)
    grid = [[" "] * pw for _ in range(height)]
    xs = [x for s in shown for x in s.xs]
    ys = [y for s in shown for y in s.ys if y > 0]
    ys += [m.value for m in chart.markers if not m.vertical]
    x0, x1 = math.log2(min(xs)), math.log2(max(xs)) or 1
    f = math.log10 if chart.y_log else (lambda v: v)
    y0 = f(min(ys)) if chart.y_log else 0.0
    y1 = max(f(max(ys)), y0 + 1e-9)
    for m in chart.markers:
        if m.vertical and min(xs) <= m.value <= max(xs):
            col = round((math.log2(m.value) - x0) / max(x1 - x0, 1e-9) * (pw - 1))
            for row in grid:
                row[col] = "┊"
        elif not m.vertical:
            at = height - 1 - round((f(m.value) - y0) / (y1 - y0) * (height - 1))
            grid[at] = ["─"] * pw
    for i, s in enumerate(shown):
        for x, y in zip(s.xs, s.ys, strict=True):
            if y <= 0 and chart.y_log:
                continue
            col = round((math.log2(x) - x0) / max(x1 - x0, 1e-9) * (pw - 1))
            line = height - 1 - round((f(y) - y0) / (y1 - y0) * (height - 1))
            grid[line][col] = marks[i % len(marks)]

    top = 10**y1 if chart.y_log else y1

    def ylab(v: float) -> str:
        return gib_label(v, top) if chart.y_unit == "bytes" else short(v)

    bot = 10**y0 if chart.y_log else y0
    lines = [chart.title]
    for r, row in enumerate(grid):
        lab = ylab(top) if r == 0 else ylab(bot) if r == height - 1 else ""
        lines.append(f"{lab:>{label_w}} │{''.join(row)}")
    lines.append(" " * label_w + " └" + "─" * pw)
    lo, hi = ctx_tick(min(xs)), ctx_tick(max(xs))
    lines.append(" " * (label_w + 2) + lo + " " * max(pw - len(lo) - len(hi), 1) + hi
                 + f"  {chart.x_label}")
    for i, s in enumerate(shown):
        lines.append(f"  {marks[i % len(marks)]} {s.name}")
    for m in chart.markers:
        lines.append(f"  {'┊' if m.vertical else '─'} {m.label}")
    return "\n".join(lines) + "\n"


def _text_bars(chart: BarChart, width: int) -> str:
    key_w = min(max(len(k) for k in chart.keys), 24)
    pw = max(width - key_w - 12, 10)
    vmax = max((v for vs in chart.values for v in vs), default=1) or 1
    lines = [chart.title]
    for k, key in enumerate(chart.keys):
        for m in range(len(chart.models)):
            v = chart.values[m][k]
            bar = "█" * round(pw * v / vmax)
            name = key[:key_w] if m == 0 else ""
            tag = f"{m + 1}" if len(chart.models) > 1 else ""
            lines.append(f"{name:<{key_w}} {tag}│{bar} {short(v)}")
    for m, name in enumerate(chart.models):
        lines.append(f"  {m + 1 if len(chart.models) > 1 else '·'} {name}: "
                     f"{chart.totals[m]:,} parameters")
    return "\n".join(lines) + "\n"
