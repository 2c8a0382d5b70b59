"""`llmcalc list`: the bundled models with their shape and total, published configs apart from
transformers class defaults."""

from __future__ import annotations

from typing import Annotated, Any, NamedTuple, Optional

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
from llmcalc.limits import shown
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


class Row(NamedTuple):
    """What `list` shows of one bundled config."""

    stem: str
    kind: str  # PUBLISHED or CLASS_DEFAULTS
    name: str
    model_type: str
    family: str
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    total: int
    active: int | None


@handles_errors
def list_models(pattern: PatternArg = None, as_json: JsonOpt = False, fmt: FormatOpt = None) -> None:
    """List the bundled models: name, family, layers, d_model, heads/kv heads, total parameters,
    and whether the config is a checkpoint's published config.json or a transformers config
    class's defaults (for a model type with no published checkpoint bundled)."""
    from llmcalc.inputs import bundled, speccache

    how = output_format(fmt, as_json)
    # the rows depend on the bundled files and llmcalc's code only: kept between runs
    rows: list[Row] = speccache.load_derived("list", bundled.paths(), _rows, list)
    if pattern is not None:
        rows = [r for r in rows if bundled.matches(pattern, r.stem, r.name, r.model_type)]
    if not rows:
        how_read = "as a glob" if bundled.GLOB_CHARS & set(pattern or "") else "as a substring"
        raise UsageError(f"list {shown(pattern)}: no bundled model's name, repo id or model_type "
                         f"matches it ({how_read}); `llmcalc list` shows them all")
    emit(how, data=lambda: [_json(r) for r in rows], grids=lambda: [_grid(rows)])


def _rows() -> list[Row]:
    """Every bundled config's row, in file order."""
    from llmcalc.formulas.counting import count
    from llmcalc.inputs import bundled

    kinds = {p.stem: CLASS_DEFAULTS if bundled.is_class_defaults(p) else PUBLISHED
             for p in bundled.paths()}
    rows = []
    for stem, spec in bundled_specs():
        s, pc = spec.shape, count(spec)
        rows.append(Row(stem, kinds[stem], spec.name, spec.model_type, spec.family, s.num_layers,
                        s.hidden_size, s.num_heads, s.num_kv_heads, pc.total, pc.active))
    return rows


def _json(r: Row) -> dict[str, Any]:
    return {
        "name": r.stem,
        "repo_id": r.name,
        "config": r.kind,
        "model_type": r.model_type,
        "family": r.family,
        "num_layers": r.num_layers,
        "hidden_size": r.hidden_size,
        "num_heads": r.num_heads,
        "num_kv_heads": r.num_kv_heads,
        "total_params": r.total,
        "active_params": r.active,
    }


def _grid(rows: list[Row]) -> Grid:
    """Published configs first, then (below a rule) the class defaults, each in file order."""
    g = Grid("bundled models", [
        Col("name"), Col("repo id", drop=4), Col("config", drop=1), Col("model_type", drop=3),
        Col("layers", right=True), Col("d_model", right=True), Col("heads/kv", right=True, drop=1),
        Col("total", right=True), Col("≈", right=True, drop=2),
    ])
    ordered = sorted(rows, key=lambda r: r.kind == CLASS_DEFAULTS)  # stable: file order within
    for i, r in enumerate(ordered):
        g.add(r.stem, r.name, r.kind, r.model_type, r.num_layers, r.hidden_size,
              f"{r.num_heads}/{r.num_kv_heads}", r.total, Fig(short(r.total), short(r.total)),
              section=i > 0 and r.kind == CLASS_DEFAULTS and ordered[i - 1].kind != r.kind)
    published = sum(r.kind == PUBLISHED for r in rows)
    parts = [f"{published:,} published checkpoint configs"] if published else []
    if published < len(rows):
        where = "below the rule, " if published else ""
        parts.append(f"{where}{len(rows) - published:,} transformers class defaults (model types "
                     "with no published checkpoint bundled)")
    g.notes.append("; ".join(parts))
    return g
