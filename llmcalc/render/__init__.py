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
    """A compact decimal figure: 124.4M, 6.74B, 1.52T."""
    for unit, size in (("Q", 1e30), ("R", 1e27), ("Y", 1e24), ("Z", 1e21), ("E", 1e18),
                       ("P", 1e15), ("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.3g}{unit}"
    return f"{value:.3g}"


def gib(nbytes: int) -> str:
    """Bytes in binary gigabytes: 12.55 GiB."""
    return f"{nbytes / GiB:,.2f} GiB"


def pct(value: float) -> str:
    """A signed percentage: +1.23%."""
    return f"{value:+.2f}%"


def dumps(obj: Any) -> str:
    """JSON for scripts: exact integers, stable key order as built."""
    return json.dumps(obj, indent=2, ensure_ascii=False)
