"""`llmcalc list`: the bundled models with their shape and total."""

from __future__ import annotations

from typing import Any

from llmcalc.cli._common import (
    FormatOpt,
    JsonOpt,
    bundled_specs,
    emit,
    handles_errors,
    output_format,
)
from llmcalc.counting import ParamCount, count
from llmcalc.render import short
from llmcalc.render.grid import Col, Fig, Grid
from llmcalc.spec import ModelSpec


@handles_errors
def list_models(as_json: JsonOpt = False, fmt: FormatOpt = None) -> None:
    """List the bundled models: name, family, layers, d_model, heads/kv heads, total parameters."""
    how = output_format(fmt, as_json)
    rows = [(stem, spec, count(spec)) for stem, spec in bundled_specs()]
    emit(how, data=lambda: [_json(*r) for r in rows], grids=lambda: [_grid(rows)])


def _json(stem: str, spec: ModelSpec, pc: ParamCount) -> dict[str, Any]:
    return {
        "name": stem,
        "repo_id": spec.name,
        "model_type": spec.model_type,
        "family": spec.family,
        "num_layers": spec.shape.num_layers,
        "hidden_size": spec.shape.hidden_size,
        "num_heads": spec.shape.num_heads,
        "num_kv_heads": spec.shape.num_kv_heads,
        "total_params": pc.total,
        "active_params": pc.active,
    }


def _grid(rows: list[tuple[str, ModelSpec, ParamCount]]) -> Grid:
    g = Grid("bundled models", [
        Col("name"), Col("repo id", drop=4), Col("model_type", drop=3), Col("layers", right=True),
        Col("d_model", right=True), Col("heads/kv", right=True, drop=1), Col("total", right=True),
        Col("≈", right=True, drop=2),
    ])
    for stem, spec, pc in rows:
        s = spec.shape
        g.add(stem, spec.name, spec.model_type, s.num_layers, s.hidden_size,
              f"{s.num_heads}/{s.num_kv_heads}", pc.total, Fig(short(pc.total), short(pc.total)))
    return g
