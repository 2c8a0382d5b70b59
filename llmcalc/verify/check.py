"""Holding config files to the figures they claim: the ``expected:`` block, for CI.

A config may carry ``expected: {total_params: 8030261248, active_params: …}``: each key names a
figure in :data:`FIGURES` (a function of the spec), each value is an exact integer or a published
figure with a relative tolerance, ``{value: 671e9, rel: 0.005}``. :func:`check_paths` returns one
:class:`FileCheck` per config file found, as plain data; only the CLI prints.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from llmcalc.errors import ConfigError, HubError, UsageError
from llmcalc.formulas.counting import count
from llmcalc.inputs import bundled
from llmcalc.inputs.config import SIBLING_NOTE, is_assumed, load_spec
from llmcalc.inputs.files import is_dir as _is_dir
from llmcalc.inputs.files import is_file as _is_file
from llmcalc.inputs.files import parse_file
from llmcalc.inputs.safetensors_index import has_safetensors
from llmcalc.limits import check_model_arg, escape, one_line, shown
from llmcalc.model.spec import ModelSpec
from llmcalc.verify.reference import Comparison, verify_checkpoint, verify_transformers

Status = Literal["pass", "fail", "error"]
CONFIG_SUFFIXES = (".yaml", ".yml")
CONFIG_JSON = "config.json"
SIDECAR = "llmcalc.yaml"  # beside a config.json: its expected figures (transformers owns the file)
# Exit code of a run: the worst status found.
EXIT_CODES: dict[Status, int] = {"pass": 0, "fail": 1, "error": 2}


def _total(spec: ModelSpec) -> int:
    return count(spec).total


def _active(spec: ModelSpec) -> int:
    spec.experts_per_tok()  # refuses a config whose experts per token are unset
    return count(spec).active or 0


def _embedding(spec: ModelSpec) -> int:
    return count(spec).embedding


def _lm_head(spec: ModelSpec) -> int:
    return count(spec).lm_head


def _layers(spec: ModelSpec) -> int:
    return count(spec).layers


def _kv_cache_bytes_per_token(spec: ModelSpec) -> int:
    """K and V (or the MLA latent) of every layer for one token, at 16-bit (bf16) precision."""
    from llmcalc.formulas.memory import kv_cache_bytes_per_token
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
    at: Location | None = None  # a failing figure: its line under expected:

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
    at: Location | None = None  # where an error points
    seconds: float = 0.0


@dataclass(frozen=True)
class CheckRun:
    """Every file checked, and how long it took."""

    files: tuple[FileCheck, ...]
    seconds: float
    skipped: tuple[Skipped, ...] = ()
    changed: str | None = None  # the git base of --changed: no file changed is a pass


    def tally(self) -> dict[Status, int]:
        out: dict[Status, int] = {"pass": 0, "fail": 0, "error": 0}
        for f in self.files:
            out[f.status] += 1
        return out

    @property
    def exit_code(self) -> int:
        nothing = EXIT_CODES["pass" if self.changed is not None else "error"]
        return max((EXIT_CODES[f.status] for f in self.files), default=nothing)


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


@dataclass(frozen=True)
class Skipped:
    """A file a folder walk left out, and why (hidden files and folders are not listed)."""

    path: Path
    why: str


@dataclass(frozen=True)
class Target:
    """What one row checks: a file (``path``), or a bundled name or repo id (``path`` None)."""

    label: str
    path: Path | None


def walk(paths: Iterable[Path]) -> tuple[list[Path], list[Skipped]]:
    """The config files under ``paths`` and the files the walk left out: a file is kept as given
    (a path that does not exist too, so that it is reported), a folder is walked for YAML and
    config.json.

    A walk leaves out hidden files and folders (it does not enter them). It also leaves out, and
    says why, other ``*.json`` files, links out of the folder and an ``llmcalc.yaml`` with no
    config.json beside it (beside one, it holds that file's expected figures and is read with it).
    """
    found: list[Path] = []
    skipped: list[Skipped] = []
    for path in paths:
        if not _is_dir(path):
            found.append(path)
            continue
        here: list[Path] = []
        for folder, dirs, files in os.walk(path):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in files:
                file = Path(folder) / name
                why = _left_out(file, path, files)
                if why is None:
                    here.append(file)
                elif why:
                    skipped.append(Skipped(file, why))
        found.extend(sorted(here))
    return list(dict.fromkeys(found)), sorted(skipped, key=lambda s: s.path)


def _left_out(path: Path, root: Path, siblings: list[str]) -> str | None:
    """Why a file met in a walk is not checked: None when it is, "" for a file that is no config."""
    from llmcalc.inputs.safetensors_index import within

    name = path.name
    if not (path.suffix in CONFIG_SUFFIXES or path.suffix == ".json") or name.startswith("."):
        return ""  # not a config, or hidden (as hidden folders are, by convention)
    if name == SIDECAR:
        return None if CONFIG_JSON in siblings else f"{SIDECAR} with no {CONFIG_JSON} beside it"
    if path.suffix == ".json" and name != CONFIG_JSON:
        return f"not named {CONFIG_JSON}: check reads {CONFIG_JSON} and YAML files"
    if not within(path, root):
        return "a link out of the folder"
    return None


def find_configs(paths: Iterable[Path]) -> list[Path]:
    """The config files under ``paths`` (:func:`walk` without what it left out); a config.json's
    ``llmcalc.yaml`` stands for that config.json."""
    return list(dict.fromkeys(_config_of(p) for p in walk(paths)[0]))


def _config_of(path: Path) -> Path:
    """A config.json's sidecar is checked as that config.json."""
    if path.name == SIDECAR and _is_file(path.parent / CONFIG_JSON):
        return path.parent / CONFIG_JSON
    return path


def targets(args: Iterable[str | Path]) -> tuple[list[Target], list[Skipped]]:
    """What ``check ARGS…`` checks: paths as :func:`walk` finds them; a name that is no path but
    a bundled model, a model Ollama pulled or a Hugging Face repo id, read as ``count`` reads it."""
    from llmcalc.inputs import hub
    from llmcalc.inputs.config import pulled

    out: dict[str | Path, Target] = {}
    skipped: list[Skipped] = []
    for arg in args:
        text = str(arg)
        check_model_arg(text)
        path = Path(text)
        exists = _is_dir(path) or _is_file(path)
        if not exists and path.suffix not in (".json", *CONFIG_SUFFIXES) and (
            bundled.find(text) is not None or hub.looks_like_repo_id(text)
            or bundled.bare_base(text) is not None or pulled(text) is not None
        ):
            out.setdefault(text, Target(text, None))
            continue
        found, left = walk([path])
        skipped += left
        for p in found:
            config = _config_of(p)
            out.setdefault(config, Target(str(config), config))
    return list(out.values()), sorted(set(skipped), key=lambda s: s.path)


def check_file(
    target: Target | Path, *, label: str | None = None, verify: bool = False, write: bool = False,
    strict: bool = False,
) -> FileCheck:
    """Validate one config file, compute its expected figures and (``verify``) build the model;
    ``write`` first writes the computed figures into its ``expected:`` block
    (:func:`write_figures`); ``strict``: a spec noted as resting on an assumption
    (:func:`llmcalc.inputs.config.is_assumed`) is an error.

    A missing transformers install is raised (:class:`MissingExtraError`): no file could be
    verified.
    """
    if isinstance(target, Path):
        target = Target(label or str(target), target)
    start = time.perf_counter()
    result = _check_file(target, verify=verify, write=write, strict=strict)
    return replace(result, seconds=time.perf_counter() - start)


def _check_file(target: Target, *, verify: bool, write: bool, strict: bool = False) -> FileCheck:
    label, path = target.label, target.path
    if path is not None and not (_is_file(path) or _is_dir(path)):
        return FileCheck(label, "error", "no such file or folder")
    if path is not None and path.name == SIDECAR and not _is_file(path.parent / CONFIG_JSON):
        why = f"holds the expected: figures of a {CONFIG_JSON} beside it, and there is none"
        return FileCheck(label, "error", why, at=Location(label))
    block: ExpectedBlock | None = None
    wrote = ""
    try:
        name = str(path) if path is not None else label
        spec = load_spec(name)
        block = expected_block(target, spec)
        expectations = parse_expected(block.label, block.values)
        if write:
            wrote = write_figures(target, block, figures_to_write(spec, expectations))
            spec = load_spec(name)  # the file as written: read back, not assumed
            block = expected_block(target, spec)
            expectations = parse_expected(block.label, block.values)
    except ConfigError as e:
        at = _error_location(e, target, block)
        return FileCheck(label, "error", e.detail if e.source == label else str(e), at=at)
    except HubError as e:  # a repo id: the Hub unreachable, the repo missing or gated …
        return FileCheck(label, "error", str(e), at=Location(label))
    if spec.origin is not None and spec.origin.source == "sibling":  # the base's own figures
        why = next(n for n in spec.notes if n.startswith(SIBLING_NOTE))
        return FileCheck(label, "error", why, spec.name, at=Location(label))
    assumed = [note for note in spec.notes if is_assumed(note)] if strict else []
    if assumed:
        return FileCheck(label, "error", f"--strict: {assumed[0]}", spec.name, at=Location(label))
    figures = tuple(FigureCheck(x, FIGURES[x.figure](spec)) for x in expectations)
    if block.path is not None and not all(f.ok for f in figures):  # where to point, for CI
        lines = expected_lines(block.path)
        figures = tuple(replace(f, at=Location(block.label, lines.get(f.expected.figure)))
                        for f in figures)
    comparisons: list[Comparison] = []
    if verify:
        try:
            comparisons.append(verify_transformers(spec))
            if path is not None and path.name == CONFIG_JSON and has_safetensors(path.parent):
                comparisons.append(verify_checkpoint(spec, path.parent))
        except ConfigError as e:
            return FileCheck(label, "error", str(e), spec.name, figures, at=Location(label))
    why = _why(figures, comparisons)
    status: Status = "pass" if not why else "fail"
    if not why:
        why = ("nothing expected: valid" if not figures and not comparisons
               else ("" if figures else "nothing expected; ") + _passed(figures, comparisons))
    if wrote:
        why = f"{wrote}; {why}"
    return FileCheck(label, status, why, spec.name, figures, tuple(comparisons))


@dataclass(frozen=True)
class ExpectedBlock:
    """A config's ``expected:`` figures and the file that holds them: the config itself, or the
    ``llmcalc.yaml`` beside a config.json (``path`` None for a config read from the Hub)."""

    label: str
    path: Path | None
    values: Mapping[str, Any]
    sidecar: bool = False


def expected_block(target: Target, spec: ModelSpec) -> ExpectedBlock:
    """Where ``target`` keeps its expected figures; a config.json keeps them in the ``llmcalc.yaml``
    beside it (or, written by hand, in the config.json itself — not both)."""
    path = target.path
    if path is None or path.name != CONFIG_JSON or not _is_file(path.parent / SIDECAR):
        return ExpectedBlock(target.label, path, spec.expected)
    sidecar = path.parent / SIDECAR
    label = str(sidecar)
    data = parse_file(sidecar, label)
    unknown = [str(k) for k in data if k != "expected"]
    if unknown:
        raise ConfigError(
            label, f"{shown(unknown[0])}: a sidecar of {CONFIG_JSON} holds expected: only"
        )
    if spec.expected:
        raise ConfigError(target.label, f"expected: given here and in {label}; keep one")
    values = data.get("expected") or {}
    if not isinstance(values, dict):
        raise ConfigError(label, "expected must be a mapping of figure names to values")
    return ExpectedBlock(label, sidecar, values, sidecar=True)


def figures_to_write(spec: ModelSpec, expectations: list[Expectation]) -> dict[str, int]:
    """What ``--write-expected`` writes: every exact figure listed, computed anew, and
    total_params (and active_params, where it differs) when not listed. A figure given as a
    published value with a tolerance is the publisher's and is left as it is."""
    listed = {x.figure for x in expectations}
    out = {x.figure: FIGURES[x.figure](spec) for x in expectations if x.rel is None}
    counted = count(spec)
    if "total_params" not in listed:
        out["total_params"] = counted.total
    if "active_params" not in listed and counted.active is not None \
            and counted.active != counted.total:
        out["active_params"] = counted.active
    return out


def write_figures(target: Target, block: ExpectedBlock, values: Mapping[str, int]) -> str:
    """Write ``values`` into ``block``'s file (YAML, comments and order kept); what changed, in
    words. A config.json is never rewritten (transformers reads it): its figures go in the
    ``llmcalc.yaml`` beside it, which must exist; a repo id has no file to write."""
    from llmcalc.verify.yaml_write import write_expected

    if block.path is None or target.path is None:
        raise ConfigError(
            target.label, "--write-expected: a repo id or bundled name has no file to write"
        )
    if block.path.suffix not in CONFIG_SUFFIXES:
        flow = ", ".join(f"{k}: {v}" for k, v in values.items())
        if block.path.name != CONFIG_JSON:
            raise ConfigError(
                target.label, "--write-expected: writes YAML files (and the llmcalc.yaml beside a "
                f"config.json), not JSON; expected: {{{flow}}}"
            )
        raise ConfigError(
            target.label,
            f"--write-expected: {CONFIG_JSON} is not rewritten (transformers reads it); its "
            f"expected figures live in {block.path.parent / SIDECAR}: create it holding "
            f"expected: {{{flow}}}",
        )
    changes = write_expected(block.path, block.label, values)
    if not changes:
        return "expected: up to date"
    parts = [
        f"{figure} {new:,}" + (f" (was {_written(old)})" if old is not None else "")
        for figure, old, new in changes
    ]
    where = f" in {block.label}" if block.sidecar else ""
    return f"wrote{where} " + ", ".join(parts)


def _written(value: object) -> str:
    return f"{value:,}" if _is_int(value) else shown(value)


def expected_lines(path: Path) -> dict[str, int]:
    """The line (from 1) of the ``expected:`` key (as "") and of each figure under it, read from
    the file's YAML nodes (JSON is YAML too); {} where the file does not parse."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        root = yaml.compose(path.read_text(encoding="utf-8"), Loader=loader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return {}
    lines: dict[str, int] = {}
    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            if isinstance(key, yaml.ScalarNode) and key.value == "expected":
                lines[""] = key.start_mark.line + 1
                if isinstance(value, yaml.MappingNode):
                    for fig, _ in value.value:
                        if isinstance(fig, yaml.ScalarNode):
                            lines.setdefault(str(fig.value), fig.start_mark.line + 1)
    return lines


@dataclass(frozen=True)
class Location:
    """Where a message points: a file (as labelled) and, when known, a line from 1."""

    file: str
    line: int | None = None


_AT_LINE = re.compile(r" at line (\d+)")
_EXPECTED_KEY = re.compile(r"^expected\.([^.:\s]+)")


def _error_location(e: ConfigError, target: Target, block: ExpectedBlock | None) -> Location:
    """The file and line an error points at: the figure of a bad expected: entry, the line of a
    YAML or JSON syntax error, else the file alone."""
    file = e.source if block is not None and e.source == block.label else target.label
    m = _AT_LINE.search(e.detail)
    if m:
        return Location(file, int(m.group(1)))
    m = _EXPECTED_KEY.match(e.detail)
    if m and block is not None and block.path is not None:
        lines = expected_lines(block.path)
        return Location(file, lines.get(m.group(1), lines.get("")))
    return Location(file)


def _why(figures: tuple[FigureCheck, ...], comparisons: list[Comparison]) -> str:
    reasons = [figure_message(f) for f in figures if not f.ok]
    for c in comparisons:
        if not c.ok:
            reasons.append(f"{c.kind} differs: {first_difference(c)}")
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


def figure_message(f: FigureCheck) -> str:
    """'total_params is 30,720, expected 30,721'."""
    return f"{f.expected.figure} is {f.actual:,}, expected {_expected_text(f.expected)}"


def _expected_text(x: Expectation) -> str:
    if x.rel is None:
        return f"{x.value:,}"
    return f"{x.value:,} ± {x.rel:.2%}"


def first_difference(c: Comparison) -> str:
    if c.differences:
        d = c.differences[0]
        more = f" (+{len(c.differences) - 1} more)" if len(c.differences) > 1 else ""
        return f"{d.kind} {d.name}{more}"
    bad = next((m for m in c.merged if not m.ok), None)
    if bad is not None:
        return f"experts under {bad.prefix}: {bad.theirs:,} elements, llmcalc {bad.ours:,}"
    total = c.rows[-1]
    return f"total {total.theirs:,}, llmcalc {total.ours:,}"


def check_paths(
    paths: Iterable[str | Path] = (),
    *,
    verify: bool = False,
    changed: str | None = None,
    write_expected: bool = False,
    strict: bool = False,
) -> CheckRun:
    """Check every config file under ``paths`` (default: the bundled configs); ``changed``: only
    those changed against that git base; ``write_expected``: write each file's computed figures
    into its expected: block first."""
    start = time.perf_counter()
    given = list(paths)
    skipped: list[Skipped] = []
    if given or changed is not None:
        items, skipped = targets(given or ["."])
    elif write_expected:
        raise UsageError("--write-expected: name the config files or folders to write")
    else:
        items = [Target(bundled.label(p), p) for p in bundled.paths()]
    if changed is not None:
        items, skipped = only_changed(items, skipped, changed)
    files = tuple(check_file(t, verify=verify, write=write_expected, strict=strict) for t in items)
    return CheckRun(files, time.perf_counter() - start, tuple(skipped), changed)


def only_changed(
    items: list[Target], skipped: list[Skipped], base: str
) -> tuple[list[Target], list[Skipped]]:
    """The files among ``items`` (and ``skipped``) changed against ``base`` (a config.json also
    when its llmcalc.yaml changed); a bundled name or repo id is no file and is refused."""
    for t in items:
        if t.path is None:
            raise UsageError(f"--changed: {shown(t.label)} is a model name, not a file or folder")
    changed = changed_files(base)

    def touched(path: Path) -> bool:
        return _resolved(path) in changed

    kept = [
        t for t in items
        if t.path is not None
        and (touched(t.path) or (t.path.name == CONFIG_JSON and touched(t.path.parent / SIDECAR)))
    ]
    return kept, [s for s in skipped if touched(s.path)]


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()


MAX_GIT_BASE = 256  # characters of a --changed base (a branch, tag or commit)


def changed_files(base: str) -> set[Path]:
    """Files added, copied, modified or renamed since ``base`` (from its merge base with HEAD,
    work-tree changes included) and untracked ones, as resolved paths."""
    if len(base) > MAX_GIT_BASE or not base or base.startswith("-") or "\x00" in base:
        raise UsageError(f"--changed {shown(base[:MAX_GIT_BASE])}: not a git branch, tag or commit")
    top = Path(_git(["rev-parse", "--show-toplevel"], base).strip())
    merge_base = _git(["merge-base", base, "HEAD"], base).strip()
    diff = _git(["-C", str(top), "diff", "--name-only", "-z", "--diff-filter=ACMRT", merge_base,
                 "--"], base)
    untracked = _git(["-C", str(top), "ls-files", "-z", "--others", "--exclude-standard"], base)
    names = [n for n in (diff + untracked).split("\0") if n]
    return {_resolved(top / n) for n in names}


def _git(args: list[str], base: str) -> str:
    """git's output, or one :class:`UsageError` that says what went wrong."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", *args], capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except FileNotFoundError:
        raise UsageError("--changed: git is not installed") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"--changed: git took more than {GIT_TIMEOUT_S} s") from None
    if done.returncode:
        said = one_line(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "")
        if not said and args[0] == "merge-base":
            said = "no history in common with HEAD (a shallow clone? fetch with fetch-depth: 0)"
        said = said.removeprefix("fatal: ").removeprefix("error: ")
        raise UsageError(f"--changed {shown(base)}: {said}")
    return done.stdout


GIT_TIMEOUT_S = 60
