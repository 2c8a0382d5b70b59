"""`llmcalc count MODEL`: exact parameters by tensor group, per layer and in total."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from llmcalc.cli._common import (
    ExplainOpt,
    FamilyOpt,
    JsonOpt,
    ModelArg,
    RevisionOpt,
    SetOpt,
    TrustRemoteCodeOpt,
    handles_errors,
    print_json,
    show,
    spec_for,
)
from llmcalc.cli._options import check_explain
from llmcalc.counting import count as count_params
from llmcalc.render.count import count_json, count_view, explain_lines, tensors_view


@handles_errors
def count(
    model: ModelArg,
    set_: SetOpt = None,
    family: FamilyOpt = None,
    revision: RevisionOpt = None,
    trust_remote_code: TrustRemoteCodeOpt = False,
    as_json: JsonOpt = False,
    tensors: Annotated[
        bool, typer.Option("--tensors", help="List every named tensor with its shape.")
    ] = False,
    explain: ExplainOpt = False,
) -> None:
    """Count a model's parameters exactly: per tensor group, per layer, embeddings, lm_head, total."""
    check_explain(explain=explain, as_json=as_json)
    spec = spec_for(model, set_, family, revision, trust_remote_code)
    pc = count_params(spec)
    if as_json:
        data = count_json(spec, pc)
        if tensors:
            data["tensors"] = [
                {"name": name, "shape": list(shape)} for name, shape in spec.named_shapes()
            ]
        print_json(data)
        return
    if tensors:
        show(tensors_view(spec))
        return
    show(count_view(spec, pc))
    if explain:
        show(*(Text(line) for line in explain_lines(spec, pc)))
