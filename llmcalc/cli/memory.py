"""`llmcalc memory MODEL --ctx 32k --batch 8 --dtype bf16 --kv-dtype fp8`: weights + KV cache."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from llmcalc import hub
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
from llmcalc.cli._options import BatchOpt, CtxOpt, DTypeOpt, KvDTypeOpt, check_explain, speaks_flags
from llmcalc.errors import LLMCalcError
from llmcalc.memory import memory as compute_memory
from llmcalc.render.count import provenance
from llmcalc.render.memory import explain_lines, memory_json, memory_view
from llmcalc.safetensors_index import (
    StoredWeights,
    bytes_by_dtype,
    has_safetensors,
    read_checkpoint,
)
from llmcalc.spec import ModelSpec
from llmcalc.units import parse_context, parse_count, parse_dtype


def stored_weights(spec: ModelSpec, model: str) -> StoredWeights | None:
    """What the checkpoint behind MODEL stores, by dtype: a Hub repo's safetensors headers (range
    requests) or a local folder's; None when there is no checkpoint to read."""
    origin = spec.origin
    where = spec.name
    try:
        if origin is not None and origin.repo_id is not None:
            where = f"{spec.name} (Hub, safetensors headers)"
            return StoredWeights(where, bytes_by_dtype(hub.read_checkpoint(origin.repo_id, origin.revision)))
        folder = Path(model)
        if has_safetensors(folder):
            where = str(folder)
            return StoredWeights(where, bytes_by_dtype(read_checkpoint(folder)))
    except LLMCalcError as e:
        return StoredWeights(where, error=str(e))
    return None


@handles_errors
@speaks_flags
def memory(
    model: ModelArg,
    ctx: CtxOpt = "4k",
    batch: BatchOpt = "1",
    dtype: DTypeOpt = "bf16",
    kv_dtype: KvDTypeOpt = None,
    set_: SetOpt = None,
    family: FamilyOpt = None,
    revision: RevisionOpt = None,
    trust_remote_code: TrustRemoteCodeOpt = False,
    as_json: JsonOpt = False,
    explain: ExplainOpt = False,
) -> None:
    """Bytes of the weights and of the KV cache for a batch of sequences at a context.

    KV cache: 2 (K and V) × layers × kv heads × head dim × bytes per token, sliding-window layers
    capped at their window; for MLA models the compressed latent, with the decompressed per-head
    K and V beside it. GiB in the table, exact bytes in --json.
    """
    check_explain(explain=explain, as_json=as_json)
    n_ctx = parse_context(ctx, option="--ctx")
    n_batch = parse_count(batch, option="--batch")
    w_dtype = parse_dtype(dtype, option="--dtype")
    c_dtype = w_dtype if kv_dtype is None else parse_dtype(kv_dtype, option="--kv-dtype")
    spec = spec_for(model, set_, family, revision, trust_remote_code)
    result = compute_memory(spec, ctx=n_ctx, batch=n_batch, dtype=w_dtype, kv_dtype=c_dtype)
    stored = None if set_ else stored_weights(spec, model)
    if as_json:
        print_json({**memory_json(result, stored), **provenance(spec)})
        return
    show(memory_view(spec, result, stored))
    if explain:
        show(*(Text(line) for line in explain_lines(result)))
