"""`llmcalc list`: the bundled models with their shape and total."""

from __future__ import annotations

from rich.table import Table

from llmcalc import bundled
from llmcalc.cli._common import JsonOpt, handles_errors, print_json, show
from llmcalc.config import load_spec
from llmcalc.counting import count
from llmcalc.render import n, short


@handles_errors
def list_models(as_json: JsonOpt = False) -> None:
    """List the bundled models: name, family, layers, d_model, heads/kv heads, total parameters."""
    rows = []
    for path in bundled.paths():
        spec = load_spec(str(path))
        pc = count(spec)
        rows.append((path.stem, spec, pc))
    if as_json:
        print_json(
            [
                {
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
                for stem, spec, pc in rows
            ]
        )
        return
    t = Table(title="bundled models", title_justify="left")
    for col, right in (("name", False), ("repo id", False), ("family", False), ("layers", True),
                       ("d_model", True), ("heads/kv", True), ("total", True), ("", True)):
        t.add_column(col, justify="right" if right else "left")
    for stem, spec, pc in rows:
        s = spec.shape
        t.add_row(stem, spec.name, spec.model_type, str(s.num_layers), n(s.hidden_size),
                  f"{s.num_heads}/{s.num_kv_heads}", n(pc.total), short(pc.total))
    show(t)
