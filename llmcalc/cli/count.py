"""`llmcalc count MODEL...`: exact parameters by tensor group, per layer and in total; several
models side by side."""

from __future__ import annotations

from typing import Annotated

import typer

from llmcalc.cli._common import (
    ExplainOpt,
    FamilyOpt,
    Format,
    FormatOpt,
    JsonOpt,
    ModelsArg,
    PartOpt,
    RevisionOpt,
    SetOpt,
    StrictOpt,
    TrustRemoteCodeOpt,
    emit,
    handles_errors,
    one_model,
    output_format,
    print_json,
    refuse_explain,
    set_strict,
    show,
    specs_for,
)
from llmcalc.cli._lora import (
    DoraOpt,
    LoraAlphaOpt,
    LoraEmbeddingsOpt,
    LoraExpertsOpt,
    LoraROpt,
    LoraTargetsOpt,
    ModulesToSaveOpt,
    RsloraOpt,
    adapter_options_without_rank,
    config_from_options,
)
from llmcalc.cli._options import speaks_flags
from llmcalc.errors import UsageError
from llmcalc.formulas.counting import count as count_params
from llmcalc.limits import MAX_LISTED_TENSORS
from llmcalc.render.grid import Grid


@handles_errors
@speaks_flags
def count(
    models: ModelsArg,
    set_: SetOpt = None,
    part: PartOpt = None,
    family: FamilyOpt = None,
    strict: StrictOpt = False,
    revision: RevisionOpt = None,
    trust_remote_code: TrustRemoteCodeOpt = False,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    tensors: Annotated[
        bool, typer.Option("--tensors", help="List every named tensor with its shape.")
    ] = False,
    explain: ExplainOpt = False,
    lora_r: LoraROpt = None,
    lora_alpha: LoraAlphaOpt = 32,
    lora_targets: LoraTargetsOpt = None,
    lora_embeddings: LoraEmbeddingsOpt = False,
    lora_experts: LoraExpertsOpt = False,
    modules_to_save: ModulesToSaveOpt = None,
    dora: DoraOpt = False,
    rslora: RsloraOpt = False,
) -> None:
    """Count parameters exactly: per tensor group, per layer, embeddings, lm_head, total.

    Several models print side by side, one column each (--json: an array). With --lora-r:
    trainable and total parameters once peft adds LoRA adapters.
    """
    set_strict(strict)
    how = output_format(fmt, as_json)
    refuse_explain(explain, how)
    if lora_r is None:
        given = adapter_options_without_rank(
            alpha=lora_alpha, targets=lora_targets, embeddings=lora_embeddings,
            experts=lora_experts, modules_to_save=modules_to_save, dora=dora, rslora=rslora)
        if given:
            raise UsageError(f"{', '.join(given)}: give the adapters' rank too, e.g. --lora-r 16 "
                             "(without --lora-r, count shows the model without adapters)")
    else:
        one_model(models, "--lora-r")
        from llmcalc.formulas.lora import lora_count
        from llmcalc.render.lora import lora_explain, lora_json, lora_view

        [(_, spec)] = specs_for(models, set_, family, revision, trust_remote_code, part)
        lc = lora_count(spec, config_from_options(
            spec, r=lora_r, alpha=lora_alpha, targets=lora_targets, embeddings=lora_embeddings,
            experts=lora_experts, modules_to_save=modules_to_save, dora=dora, rslora=rslora))
        if how is not Format.table:
            if how is not Format.json:
                raise UsageError(f"--format {how.value}: LoRA counts print as a table or JSON")
            print_json(lora_json(spec, lc))
            return
        show(lora_view(spec, lc))
        if explain:
            from rich.text import Text

            show(*(Text(line) for line in lora_explain(lc)))
        return
    if tensors:
        one_model(models, "--tensors")
    if explain:
        one_model(models, "--explain")
    from llmcalc.render import count as r

    items = [(m, spec, count_params(spec)) for m, spec in specs_for(models, set_, family, revision, trust_remote_code, part)]

    def data() -> object:
        out = []
        for _, spec, pc in items:
            d = r.count_json(spec, pc)
            if tensors:
                if spec.num_named_tensors > MAX_LISTED_TENSORS:
                    raise UsageError(
                        f"--tensors --json lists at most {MAX_LISTED_TENSORS:,} tensors, one per "
                        f"layer; this model has {spec.num_named_tensors:,} (without --json the "
                        "table lists each tensor once with the layers it repeats in)"
                    )
                d["tensors"] = [{"name": k, "shape": list(v)} for k, v in spec.named_shapes()]
            out.append(d)
        return out if len(out) > 1 else out[0]

    def grids() -> list[Grid]:
        if tensors:
            return [r.tensors_grid(items[0][1])]
        return [r.count_grid(items)]

    def view() -> object:
        _, spec, pc = items[0]
        if tensors:
            return r.tensors_grid(spec)
        return r.count_view(spec, pc)

    if len(items) > 1:
        emit(how, data=data, grids=grids, labels=[m for m, _, _ in items])
        return
    if tensors and how is Format.table:
        emit(how, data=data, grids=grids)
        return
    emit(how, data=data, grids=grids, view=view)
    if explain:
        from rich.text import Text

        _, spec, pc = items[0]
        show(*(Text(line) for line in r.explain_lines(spec, pc)))
