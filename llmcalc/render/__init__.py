"""Turning computed figures into tables, explanations and JSON. Nothing here computes a figure."""

from __future__ import annotations

import json
import os
import re
import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from llmcalc.limits import escape_output

if TYPE_CHECKING:
    from rich.table import Table

    from llmcalc.model.spec import ModelSpec
    from llmcalc.planning.hardware import Accelerator

GiB = 1024**3


class SafeConsole(Console):
    """A console that writes every control character of what it renders escaped (``\\x1b``).

    Tables show names, paths and tensor names from input; none of them may move the cursor or
    talk to the terminal. The console itself emits no escape codes (``color_system=None``), so
    nothing it writes is a raw control character other than the line ends.
    """

    def render(self, renderable: Any, options: Any = None) -> Any:
        from rich.segment import Segment

        for segment in super().render(renderable, options):
            text = escape_output(segment.text)
            yield segment if text == segment.text else Segment(text, segment.style)


PIPED_WIDTH = 120  # output neither to a terminal nor with COLUMNS set, nor one on stderr


def output_width(stream: Any) -> int | None:
    """The width to draw at: a terminal's own (None: rich measures it, COLUMNS first); piped
    output follows COLUMNS, else the terminal stderr still shows (`llmcalc list | grep llama`
    in an 80-column terminal: 80), else 120 columns."""
    if stream.isatty():
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        if sys.stderr.isatty():
            return os.get_terminal_size(sys.stderr.fileno()).columns or PIPED_WIDTH
    except (OSError, ValueError, AttributeError):
        pass
    return PIPED_WIDTH


def console(*, stderr: bool = False) -> Console:
    """A console at the width :func:`output_width` gives."""
    stream = sys.stderr if stderr else sys.stdout
    width = output_width(stream)
    # markup and emoji off: names and shapes such as "[4096, 4096]" are printed as they are
    return SafeConsole(
        file=stream,
        width=width,
        highlight=False,
        soft_wrap=False,
        markup=False,
        emoji=False,
        color_system=None,
    )


def n(value: int) -> str:
    """An exact integer with thousands separators: 124,439,808."""
    return f"{value:,}"


def short(value: float) -> str:
    """A compact decimal figure: 124.4M, 6.74B, 1.52T; 999,885,952 is 1.00B, never 1e+03M."""
    for i, (unit, size) in enumerate(SHORT_UNITS):
        if abs(value) >= size or not unit:
            text = f"{value / size:.3g}"
            if abs(float(text)) >= 1000 and i > 0:  # rounds up into the next unit: 1.00B
                unit, size = SHORT_UNITS[i - 1]
                text = f"{value / size:#.3g}"
            return text + unit
    raise AssertionError("unreachable: the last unit takes any value")


def per_second(value: float, unit: str = "FLOP/s") -> str:
    """A rate with an SI prefix and a space: 989 TFLOP/s, 429 TFLOP/s, 1.2 PFLOP/s."""
    text = short(value)
    digits = text.rstrip("QRYZEPTBMK")
    prefix = text[len(digits):]
    return f"{digits} {SI_PREFIX.get(prefix, prefix)}{unit}"


SI_PREFIX = {"B": "G", "K": "k"}  # short() writes billions as B and thousands as K

SHORT_UNITS = (("Q", 1e30), ("R", 1e27), ("Y", 1e24), ("Z", 1e21), ("E", 1e18), ("P", 1e15),
               ("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3), ("", 1.0))


def sci(value: float, digits: int = 3) -> str:
    """Scientific notation as people write it for FLOP totals: 3.78e25 (no '+', no leading 0)."""
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def gib(nbytes: int) -> str:
    """Bytes in the binary unit they reach (:func:`llmcalc.units.size_text`): 12.55 GiB,
    112.31 KiB, 1.72 TiB."""
    from llmcalc.units import size_text

    return size_text(nbytes)


def pct(value: float) -> str:
    """A signed percentage: +1.23%."""
    return f"{value:+.2f}%"


# ---- shared by several commands' output ----------------------------------------------------------


def heading(name: str, assumptions: str) -> Text:
    """A view's first line: the model's name in bold, then what its figures assume."""
    head = Text()
    head.append(name, style="bold")
    head.append(f"  {assumptions}")
    return head


def figures_table(title: str, label: str, *figures: str) -> Table:
    """A titled table: a column of labels (headed ``label``), then right-aligned figure columns."""
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    t.add_column(label)
    for figure in figures:
        t.add_column(figure, justify="right")
    return t


def verdict(fits: bool) -> Text:
    return Text("fits", style="bold green") if fits else Text("does not fit", style="bold red")


def accelerator_line(acc: Accelerator, gpus: int) -> str:
    """16,384 × NVIDIA H100 SXM: 80.00 GiB, 989 TFLOP/s dense bf16 (a figure not given to a
    custom card, such as --gpu-mem alone, is left out rather than shown as 0)."""
    figures = [gib(acc.memory_bytes) if acc.memory_bytes else "",
               f"{per_second(acc.peak_flops)} dense bf16" if acc.peak_flops else ""]
    return f"{n(gpus)} × {acc.name}: " + ", ".join(f for f in figures if f)


def window_cap(spec: ModelSpec, ctx: int) -> str | None:
    """'sliding window caps the KV cache: 20 of 26 layers hold at most 512 tokens', or None. Only
    layers that cache count (not Gemma's KV-shared layers, nor an encoder's), each layer once (a
    looped block's layers too), one figure per window (and per compression ratio: DeepSeek-V4's
    compressed layers also keep one pooled entry per m tokens)."""
    capped: dict[tuple[int, int], int] = {}  # (window, compress) → layers
    for g in spec.layer_groups:
        a = g.attention
        if a is None or a.window is None or a.window >= ctx or a.kv_shared or not a.causal:
            continue
        capped[(a.window, a.compress)] = capped.get((a.window, a.compress), 0) + len(g.layers)
    if not capped:
        return None
    parts = ", ".join(f"{k} of {spec.num_layers} layers hold at most {n(w)} tokens"
                      + (f" (and one pooled entry per {m})" if m else "")
                      for (w, m), k in capped.items())
    return f"sliding window caps the KV cache: {parts}"


def ctx_label(ctx: int) -> str:
    """131,072 (128k): the exact count, and its binary short form when it has one."""
    for suffix, size in (("M", 2**20), ("k", 2**10)):
        if ctx >= size and ctx % size == 0:
            return f"{n(ctx)} ({ctx // size}{suffix})"
    return n(ctx)


def note_lines(notes: tuple[str, ...]) -> list[Text]:
    return [Text(f"note: {note}", style="yellow") for note in notes]


def plural(count: int, word: str) -> str:
    """1 layer, 32 layers."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def dumps(obj: Any) -> str:
    """JSON for scripts: exact integers, stable key order as built. Control characters in strings
    are \\u escapes (json writes C0 ones so; DEL, C1 and bidi controls are escaped here too)."""
    return _JSON_UNSAFE.sub(_u_escape, json.dumps(obj, indent=2, ensure_ascii=False))


# outside strings JSON is ASCII without controls, so these can only be inside strings
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _u_escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"
