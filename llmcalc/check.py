"""Holding config files to the figures they claim: the ``expected:`` block, for CI.

A config may carry ``expected: {total_params: 8030261248, active_params: …}``: each key names a
figure in :data:`FIGURES` (a function of the spec), each value is an exact integer or a published
figure with a relative tolerance, ``{value: 671e9, rel: 0.005}``. :func:`check_paths` returns one
:class:`FileCheck` per config file found, as plain data; only the CLI prints.
"""

from __future__ import annotations

import difflib
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from llmcalc import bundled
from llmcalc.config import load_spec
from llmcalc.counting import count
from llmcalc.errors import ConfigError
from llmcalc.limits import escape, shown
from llmcalc.safetensors_index import has_safetensors
from llmcalc.spec import ModelSpec
from llmcalc.verify import Comparison, verify_checkpoint, verify_transformers

Status = Literal["pass", "fail", "error"]
CONFIG_SUFFIXES = (".yaml", ".yml")
CONFIG_JSON = "config.json"
# Exit code of a run: the worst status found.
EXIT_CODES: dict[Status, int] = {"pass": 0, "fail": 1, "error": 2}


def _total(spec: ModelSpec) -> int:
    return count(spec).total


def _active(spec: ModelSpec) -> int:
    return count(spec).active


def _embedding(spec: ModelSpec) -> int:
    return count(spec).embedding


def _lm_head(spec: ModelSpec) -> int:
    return count(spec).lm_head


def _layers(spec: ModelSpec) -> int:
    return count(spec).layers


def _kv_cache_bytes_per_token(spec: ModelSpec) -> int:
    """K and V (or the MLA latent) of every layer for one token, at 16-bit (bf16) precision."""
    from llmcalc.memory import kv_cache_bytes_per_token
    from llmcalc.units import DType

    return kv_cache_bytes_per_token(spec, dtype=DType("bf16"))


# Figure name (as written under ``expected:``) → how it is computed from the spec.
FIGURES: dict[str, Callable[[ModelSpec], int]] = {
    "total_params": _total,
    "active_params": _active,
    "embedding_params": _embedding,
    "lm_head_params": _lm_head,
    "layer_params": _layers,
    "kv_cache_bytes_per_token": _kv_cache_bytes_per_token,
}


@dataclass(frozen=True)
class Expectation:
    """One expected figure: exact (``rel`` None) or within ``rel`` of a published value."""

    figure: str
    value: int | float
    rel: float | None = None

    def holds(self, actual: int) -> bool:
        if self.rel is None:
            return actual == self.value
        return abs(actual - self.value) <= self.rel * abs(self.value)


@dataclass(frozen=True)
class FigureCheck:
    """An expectation and the figure llmcalc computed."""

    expected: Expectation
    actual: int

    @property
    def ok(self) -> bool:
        return self.expected.holds(self.actual)

    @property
    def off(self) -> float:
        """How far the computed figure is from the expected one, relative to it."""
        value = self.expected.value
        return (self.actual - value) / value if value else float(self.actual != value)


@dataclass(frozen=True)
class FileCheck:
    """The outcome for one config file: pass, fail (a figure or the verification differs) or
    error (the file cannot be read or its ``expected:`` block is wrong); ``why`` says which."""

    label: str
    status: Status
    why: str
    model: str | None = None
    figures: tuple[FigureCheck, ...] = ()
    verify: tuple[Comparison, ...] = ()


@dataclass(frozen=True)
class CheckRun:
    """Every file checked, and how long it took."""

    files: tuple[FileCheck, ...]
    seconds: float

    def tally(self) -> dict[Status, int]:
        out: dict[Status, int] = {"pass": 0, "fail": 0, "error": 0}
        for f in self.files:
            out[f.status] += 1
        return out

    @property
    def exit_code(self) -> int:
        return max((EXIT_CODES[f.status] for f in self.files), default=EXIT_CODES["error"])


def parse_expected(label: str, expected: Mapping[str, Any]) -> list[Expectation]:
    """The ``expected:`` block as :class:`Expectation` s; a bad entry is a :class:`ConfigError`."""
    out = []
    for figure, raw in expected.items():
        if figure not in FIGURES:
            close = difflib.get_close_matches(str(figure), FIGURES, n=1)
            hint = f" (did you mean {close[0]}?)" if close else f"; known: {', '.join(FIGURES)}"
            raise ConfigError(label, f"expected.{escape(str(figure))}: unknown figure{hint}")
        out.append(_expectation(label, str(figure), raw))
    return out


def _expectation(label: str, figure: str, raw: Any) -> Expectation:
    where = f"expected.{figure}"
    if _is_int(raw) and abs(raw) >= MAX_EXPECTED:
        raise ConfigError(label, f"{where}: more than 40 digits; no figure is that large")
    if _is_int(raw):
        return Expectation(figure, raw)
    if not isinstance(raw, dict):
        raise ConfigError(
            label,
            f"{where}: give an exact integer or {{value: …, rel: …}} for a published figure, "
            f"got {shown(raw)}",
        )
    unknown = set(raw) - {"value", "rel"}
    if unknown:
        raise ConfigError(
            label, f"{where}: unknown key {shown(sorted(map(str, unknown))[0])} (use value and rel)"
        )
    value = _number(raw.get("value"))
    if value is not None and abs(value) >= MAX_EXPECTED:
        raise ConfigError(label, f"{where}.value: more than 40 digits; no figure is that large")
    if value is None:
        raise ConfigError(label, f"{where}.value: must be a finite number, got {shown(raw.get('value'))}")
    if "rel" not in raw:
        if not _is_int(value):
            raise ConfigError(label, f"{where}: {shown(value)} is not an integer; add a tolerance rel")
        return Expectation(figure, value)
    rel = _number(raw["rel"])
    if rel is None or not 0 <= rel < 1:
        raise ConfigError(label, f"{where}.rel: must be a number from 0 to 1, got {shown(raw['rel'])}")
    return Expectation(figure, value, float(rel))


MAX_EXPECTED = 10**40  # an expected figure this large is a typo (and would overflow a float ratio)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> int | float | None:
    """An int or float; a string such as ``671e9`` too (YAML 1.1 reads that as a string)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None  # .inf and .nan hold no figure
    if isinstance(value, str) and len(value) <= 40:
        try:
            number = float(value)
        except ValueError:
            return None
        if not math.isfinite(number):  # "inf", "nan", "1e999"
            return None
        return int(number) if number.is_integer() else number
    return None


def find_configs(paths: Iterable[Path]) -> list[Path]:
    """The config files under ``paths``: a file as given, a folder walked for YAML and config.json.

    A path that does not exist is kept, so that it is reported as an error. A walk does not follow
    a link out of the folder it walks: such a file is left out, as hidden folders are.
    """
    from llmcalc.safetensors_index import within

    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(
                p
                for p in sorted(path.rglob("*"))
                if p.is_file()
                and (p.suffix in CONFIG_SUFFIXES or p.name == CONFIG_JSON)
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
                and within(p, path)
            )
        else:
            found.append(path)
    return list(dict.fromkeys(found))


def check_file(path: Path, *, label: str, verify: bool = False) -> FileCheck:
    """Validate one config file, compute its expected figures and (``verify``) build the model.

    A missing transformers install is raised (:class:`MissingExtraError`): no file could be
    verified.
    """
    if not path.exists():
        return FileCheck(label, "error", "no such file or folder")
    try:
        spec = load_spec(str(path))
        expectations = parse_expected(label, spec.expected)
    except ConfigError as e:
        return FileCheck(label, "error", e.detail if e.source == label else str(e))
    figures = tuple(FigureCheck(x, FIGURES[x.figure](spec)) for x in expectations)
    comparisons: list[Comparison] = []
    if verify:
        try:
            comparisons.append(verify_transformers(spec))
            if path.name == CONFIG_JSON and has_safetensors(path.parent):
                comparisons.append(verify_checkpoint(spec, path.parent))
        except ConfigError as e:
            return FileCheck(label, "error", str(e), spec.name, figures)
    why = _why(figures, comparisons)
    status: Status = "pass" if not why else "fail"
    if not why:
        why = ("nothing expected: valid" if not figures and not comparisons
               else ("" if figures else "nothing expected; ") + _passed(figures, comparisons))
    return FileCheck(label, status, why, spec.name, figures, tuple(comparisons))


def _why(figures: tuple[FigureCheck, ...], comparisons: list[Comparison]) -> str:
    reasons = [
        f"{f.expected.figure} is {f.actual:,}, expected {_expected_text(f.expected)}"
        for f in figures
        if not f.ok
    ]
    for c in comparisons:
        if not c.ok:
            reasons.append(f"{c.kind} differs: {_first_difference(c)}")
    return "; ".join(reasons)


def _passed(figures: tuple[FigureCheck, ...], comparisons: list[Comparison]) -> str:
    parts = [f"{f.expected.figure} {f.actual:,}" for f in figures]
    parts += [
        f"{c.kind} matches ({c.matched} tensors"
        + (f"; {c.unchecked} not compared: {c.against}" if c.unchecked else "")
        + ")"
        for c in comparisons
    ]
    return ", ".join(parts)


def _expected_text(x: Expectation) -> str:
    if x.rel is None:
        return f"{x.value:,}"
    return f"{x.value:,} ± {x.rel:.2%}"


def _first_difference(c: Comparison) -> str:
    if c.differences:
        d = c.differences[0]
        more = f" (+{len(c.differences) - 1} more)" if len(c.differences) > 1 else ""
        return f"{d.kind} {d.name}{more}"
    bad = next((m for m in c.merged if not m.ok), None)
    if bad is not None:
        return f"experts under {bad.prefix}: {bad.theirs:,} elements, llmcalc {bad.ours:,}"
    total = c.rows[-1]
    return f"total {total.theirs:,}, llmcalc {total.ours:,}"


def check_paths(paths: Iterable[Path] = (), *, verify: bool = False) -> CheckRun:
    """Check every config file under ``paths`` (default: the bundled configs)."""
    start = time.perf_counter()
    given = list(paths)
    if given:
        items = [(p, str(p)) for p in find_configs(given)]
    else:
        items = [(p, bundled.label(p)) for p in bundled.paths()]
    files = tuple(check_file(path, label=label, verify=verify) for path, label in items)
    return CheckRun(files, time.perf_counter() - start)
