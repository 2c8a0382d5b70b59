"""`llmcalc flops [MODEL]... --ctx 128k`: forward, prefill, decode and training FLOPs, or a catalog."""

from __future__ import annotations

from rich.text import Text

from llmcalc.cli._common import (
    CatalogModelsArg,
    ExplainOpt,
    FamilyOpt,
    FormatOpt,
    JsonOpt,
    PartOpt,
    RevisionOpt,
    SetOpt,
    StrictOpt,
    TrustRemoteCodeOpt,
    emit,
    forward_specs,
    handles_errors,
    image_specs_for,
    one_model,
    output_format,
    parts_of,
    refuse_explain,
    set_strict,
    show,
)
from llmcalc.cli._options import (
    BatchOpt,
    CtxOpt,
    ImageSizeOpt,
    ImagesOpt,
    SourceLenOpt,
    TokensOpt,
    speaks_flags,
)
from llmcalc.errors import UsageError
from llmcalc.formulas.flops import flops as compute_flops
from llmcalc.units import parse_context, parse_count


@handles_errors
@speaks_flags
def flops(
    models: CatalogModelsArg = None,
    ctx: CtxOpt = "4k",
    batch: BatchOpt = "1",
    tokens: TokensOpt = None,
    images: ImagesOpt = 0,
    source_len: SourceLenOpt = None,
    image_size: ImageSizeOpt = None,
    set_: SetOpt = None,
    part: PartOpt = None,
    family: FamilyOpt = None,
    strict: StrictOpt = False,
    revision: RevisionOpt = None,
    trust_remote_code: TrustRemoteCodeOpt = False,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    explain: ExplainOpt = False,
) -> None:
    """FLOPs per token at a context, per prefill (full and causal), per decode step, for training.

    Weight FLOPs are 2 × the elements of every matrix a token is multiplied by (lm_head included,
    tied or not; for MoE only the active experts); attention adds 2·n·h·(d_qk + d_v) per layer.
    Several models print side by side (--json: an array).
    """
    set_strict(strict)
    how = output_format(fmt, as_json)
    if not models and explain:
        raise UsageError("--explain needs a MODEL")
    refuse_explain(explain, how)
    if explain:
        one_model(models or [], "--explain")
    n_ctx = parse_context(ctx, option="--ctx")
    n_batch = parse_count(batch, option="--batch")
    n_tokens = None if tokens is None else parse_count(tokens, option="--tokens")
    n_source = None if source_len is None else parse_context(source_len, option="--source-len")
    from llmcalc.render import flops as r

    if not models:
        if set_ or family:
            raise UsageError("--set and --family need a MODEL")
        if part or images or image_size:
            raise UsageError("--part, --images and --image-size need a MODEL")
        specs, left_out = forward_specs()
        rows = []
        for stem, spec in specs:
            try:
                rows.append((stem, spec, compute_flops(spec, ctx=n_ctx, batch=n_batch,
                                                       tokens=n_tokens)))
            except UsageError:  # refused at this context (BigBird's block-sparse attention)
                left_out = [*left_out, stem]
        emit(how, data=lambda: [{"name": stem, **r.flops_json(x)} for stem, _, x in rows],
             grids=lambda: [r.catalog_grid(rows, ctx=n_ctx, left_out=left_out)])
        return
    specs = image_specs_for(models, set_, family, revision, trust_remote_code,
                            image_size=image_size)
    if part is not None:
        for _, spec in specs:
            audio = spec.part(part)
            if audio is not None and audio.input == "audio":
                # its input is a clip, not a token context: per-token figures would be made up
                where = ("the per-audio-input rows of `llmcalc flops MODEL`" if audio.clip
                         else "not computed yet")
                raise UsageError(f"--part {part}: {spec.name}'s {part} part takes audio, not a "
                                 f"token context; its FLOPs per input: {where}")
    specs = parts_of(specs, part, images=images)
    items = [(m, spec, compute_flops(spec, ctx=n_ctx, batch=n_batch, tokens=n_tokens, images=images,
                                     source_len=n_source))
             for m, spec in specs]
    from llmcalc.render.count import provenance

    data = [{**r.flops_json(x), **provenance(spec)} for _, spec, x in items]
    emit(how, data=lambda: data if len(data) > 1 else data[0],
         grids=lambda: [r.flops_grid(items)],
         view=(lambda: r.flops_view(items[0][1], items[0][2])) if len(items) == 1 else None,
         labels=[m for m, _, _ in items])
    if explain:
        show(*(Text(line) for line in r.explain_lines(items[0][1], items[0][2])))
