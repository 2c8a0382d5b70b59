"""`llmcalc memory MODEL --ctx 32k --batch 8 --dtype bf16 --kv-dtype fp8`: weights + KV cache."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.text import Text

from llmcalc.cli._common import (
    ExplainOpt,
    FamilyOpt,
    JsonOpt,
    ModelArg,
    SetOpt,
    handles_errors,
    print_json,
    show,
    spec_for,
)
from llmcalc.cli.flops import BatchOpt, CtxOpt
from llmcalc.memory import memory as compute_memory
from llmcalc.render.memory import explain_lines, memory_json, memory_view
from llmcalc.units import DType, parse_context, parse_count, parse_dtype

DTYPES = ", ".join(d.value for d in DType)


@handles_errors
def memory(
    model: ModelArg,
    ctx: CtxOpt = "4k",
    batch: BatchOpt = "1",
    dtype: Annotated[
        str, typer.Option("--dtype", help=f"Weight dtype: {DTYPES} (int4 packs two per byte).")
    ] = "bf16",
    kv_dtype: Annotated[
        Optional[str],  # noqa: UP045 - typer reads this annotation at run time
        typer.Option("--kv-dtype", help=f"KV-cache dtype: {DTYPES}; default: --dtype.",
                     show_default=False),
    ] = None,
    set_: SetOpt = None,
    family: FamilyOpt = None,
    as_json: JsonOpt = False,
    explain: ExplainOpt = False,
) -> None:
    """Bytes of the weights and of the KV cache for a batch of sequences at a context.

    KV cache: 2 (K and V) × layers × kv heads × head dim × bytes per token, sliding-window layers
    capped at their window; for MLA models the compressed latent, with the decompressed per-head
    K and V beside it. GiB in the table, exact bytes in --json.
    """
    n_ctx = parse_context(ctx, option="--ctx")
    n_batch = parse_count(batch, option="--batch")
    w_dtype = parse_dtype(dtype, option="--dtype")
    c_dtype = w_dtype if kv_dtype is None else parse_dtype(kv_dtype, option="--kv-dtype")
    spec = spec_for(model, set_, family)
    result = compute_memory(spec, ctx=n_ctx, batch=n_batch, dtype=w_dtype, kv_dtype=c_dtype)
    if as_json:
        print_json(memory_json(result))
        return
    show(memory_view(spec, result))
    if explain:
        show(*(Text(line) for line in explain_lines(result)))
