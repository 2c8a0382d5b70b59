"""`llmcalc flops [MODEL] --ctx 128k`: forward, prefill, decode and training FLOPs, or a catalog."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.text import Text

from llmcalc import bundled
from llmcalc.cli._common import (
    ExplainOpt,
    FamilyOpt,
    JsonOpt,
    RevisionOpt,
    SetOpt,
    TrustRemoteCodeOpt,
    handles_errors,
    print_json,
    show,
    spec_for,
)
from llmcalc.cli._options import BatchOpt, CtxOpt, TokensOpt, check_explain, speaks_flags
from llmcalc.config import load_spec
from llmcalc.errors import UsageError
from llmcalc.flops import flops as compute_flops
from llmcalc.render.count import provenance
from llmcalc.render.flops import catalog_view, explain_lines, flops_json, flops_view
from llmcalc.units import parse_context, parse_count


@handles_errors
@speaks_flags
def flops(
    model: Annotated[
        Optional[str],  # noqa: UP045 - typer reads this annotation at run time
        typer.Argument(
            help="A bundled model name, a config.json, a checkpoint folder or a YAML file. "
            "Without it: one row per bundled model.",
            show_default=False,
        ),
    ] = None,
    ctx: CtxOpt = "4k",
    batch: BatchOpt = "1",
    tokens: TokensOpt = None,
    set_: SetOpt = None,
    family: FamilyOpt = None,
    revision: RevisionOpt = None,
    trust_remote_code: TrustRemoteCodeOpt = False,
    as_json: JsonOpt = False,
    explain: ExplainOpt = False,
) -> None:
    """FLOPs per token at a context, per prefill (full and causal), per decode step, for training.

    Weight FLOPs are 2 × the elements of every matrix a token is multiplied by (lm_head included,
    tied or not; for MoE only the active experts); attention adds 2·n·h·(d_qk + d_v) per layer.
    """
    if model is None and explain:
        raise UsageError("--explain needs a MODEL")
    check_explain(explain=explain, as_json=as_json)
    n_ctx = parse_context(ctx, option="--ctx")
    n_batch = parse_count(batch, option="--batch")
    n_tokens = None if tokens is None else parse_count(tokens, option="--tokens")
    if model is None:
        if set_ or family:
            raise UsageError("--set and --family need a MODEL")
        _catalog(n_ctx, n_batch, n_tokens, as_json=as_json)
        return
    spec = spec_for(model, set_, family, revision, trust_remote_code)
    result = compute_flops(spec, ctx=n_ctx, batch=n_batch, tokens=n_tokens)
    if as_json:
        print_json({**flops_json(result), **provenance(spec)})
        return
    show(flops_view(spec, result))
    if explain:
        show(*(Text(line) for line in explain_lines(spec, result)))


def _catalog(ctx: int, batch: int, tokens: int | None, *, as_json: bool) -> None:
    rows = []
    for path in bundled.paths():
        spec = load_spec(str(path))
        rows.append((path.stem, compute_flops(spec, ctx=ctx, batch=batch, tokens=tokens)))
    if as_json:
        print_json([{"name": stem, **flops_json(r)} for stem, r in rows])
        return
    show(catalog_view(rows, ctx=ctx))
