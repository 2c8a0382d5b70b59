"""`llmcalc list`: the bundled models with their shape and total, published configs apart from
transformers class defaults."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from llmcalc.cli._common import (
    FormatOpt,
    JsonOpt,
    bundled_specs,
    emit,
    handles_errors,
    output_format,
)
from llmcalc.errors import UsageError
from llmcalc.formulas.counting import ParamCount, count
from llmcalc.limits import shown
from llmcalc.model.spec import ModelSpec
from llmcalc.render import short
from llmcalc.render.grid import Col, Fig, Grid

PUBLISHED = "published"
CLASS_DEFAULTS = "class defaults"

PatternArg = Annotated[
    Optional[str],  # noqa: UP045 - typer reads this annotation at run time
    typer.Argument(
        help="Show only the models whose name, repo id or model_type matches: a shell glob "
        "(llama-3*, *-70b) when it has *, ? or [, matched against the whole name; otherwise a "
        "substring (llama, qwen3). Case-insensitive.",
        show_default=False,
        metavar="PATTERN",
    ),
]


@handles_errors
def list_models(pattern: PatternArg = None, as_json: JsonOpt = False, fmt: FormatOpt = None) -> None:
    """List the bundled models: name, family, layers, d_model, heads/kv heads, total parameters,
    and whether the config is a checkpoint's published config.json or a transformers config
    class's defaults (for a model type with no published checkpoint bundled)."""
    from llmcalc.inputs import bundled

    how = output_format(fmt, as_json)
    kinds = {p.stem: CLASS_DEFAULTS if bundled.is_class_defaults(p) else PUBLISHED
             for p in bundled.paths()}
    rows = [(stem, spec, kinds[stem], count(spec)) for stem, spec in _selected(pattern)]
    if not rows:
        how_read = "as a glob" if bundled.GLOB_CHARS & set(pattern or "") else "as a substring"
        raise UsageError(f"list {shown(pattern)}: no bundled model's name, repo id or model_type "
                         f"matches it ({how_read}); `llmcalc list` shows them all")
    emit(how, data=lambda: [_json(*r) for r in rows], grids=lambda: [_grid(rows)])


def _selected(pattern: str | None) -> list[tuple[str, ModelSpec]]:
    """The bundled (file name, spec) pairs that ``pattern`` matches (all without one)."""
    from llmcalc.inputs import bundled

    specs = bundled_specs()
    if pattern is None:
        return specs
    return [(stem, spec) for stem, spec in specs
            if bundled.matches(pattern, stem, spec.name, spec.model_type)]


def _json(stem: str, spec: ModelSpec, kind: str, pc: ParamCount) -> dict[str, Any]:
    return {
        "name": stem,
        "repo_id": spec.name,
        "config": kind,
        "model_type": spec.model_type,
        "family": spec.family,
        "num_layers": spec.shape.num_layers,
        "hidden_size": spec.shape.hidden_size,
        "num_heads": spec.shape.num_heads,
        "num_kv_heads": spec.shape.num_kv_heads,
        "total_params": pc.total,
        "active_params": pc.active,
    }


def _grid(rows: list[tuple[str, ModelSpec, str, ParamCount]]) -> Grid:
    """Published configs first, then (below a rule) the class defaults, each in file order."""
    g = Grid("bundled models", [
        Col("name"), Col("repo id", drop=4), Col("config", drop=1), Col("model_type", drop=3),
        Col("layers", right=True), Col("d_model", right=True), Col("heads/kv", right=True, drop=1),
        Col("total", right=True), Col("≈", right=True, drop=2),
    ])
    ordered = sorted(rows, key=lambda r: r[2] == CLASS_DEFAULTS)  # stable: file order within
    for i, (stem, spec, kind, pc) in enumerate(ordered):
        s = spec.shape
        g.add(stem, spec.name, kind, spec.model_type, s.num_layers, s.hidden_size,
              f"{s.num_heads}/{s.num_kv_heads}", pc.total, Fig(short(pc.total), short(pc.total)),
              section=i > 0 and kind == CLASS_DEFAULTS and ordered[i - 1][2] != kind)
    published = sum(r[2] == PUBLISHED for r in rows)
    parts = [f"{published:,} published checkpoint configs"] if published else []
    if published < len(rows):
        where = "below the rule, " if published else ""
        parts.append(f"{where}{len(rows) - published:,} transformers class defaults (model types "
                     "with no published checkpoint bundled)")
    g.notes.append("; ".join(parts))
    return g
