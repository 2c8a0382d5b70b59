"""Turning computed figures into tables, explanations and JSON. Nothing here computes a figure."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

GiB = 1024**3


def console(*, stderr: bool = False) -> Console:
    """A console at the terminal's width, or 120 columns when output is not a terminal."""
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else 120
    # markup and emoji off: names and shapes such as "[4096, 4096]" are printed as they are
    return Console(
        file=stream, width=width, highlight=False, soft_wrap=False, markup=False, emoji=False
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


SHORT_UNITS = (("Q", 1e30), ("R", 1e27), ("Y", 1e24), ("Z", 1e21), ("E", 1e18), ("P", 1e15),
               ("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3), ("", 1.0))


def sci(value: float, digits: int = 3) -> str:
    """Scientific notation as people write it for FLOP totals: 3.78e25 (no '+', no leading 0)."""
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def gib(nbytes: int) -> str:
    """Bytes in binary gigabytes: 12.55 GiB."""
    return f"{nbytes / GiB:,.2f} GiB"


def pct(value: float) -> str:
    """A signed percentage: +1.23%."""
    return f"{value:+.2f}%"


def dumps(obj: Any) -> str:
    """JSON for scripts: exact integers, stable key order as built."""
    return json.dumps(obj, indent=2, ensure_ascii=False)
