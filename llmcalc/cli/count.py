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
    SetOpt,
    handles_errors,
    print_json,
    show,
    spec_for,
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
    config_from_options,
)
from llmcalc.cli._options import check_explain, speaks_flags
from llmcalc.counting import count as count_params
from llmcalc.errors import UsageError
from llmcalc.limits import MAX_LISTED_TENSORS
from llmcalc.render.count import count_json, count_view, explain_lines, tensors_view


@handles_errors
@speaks_flags
def count(
    model: ModelArg,
    set_: SetOpt = None,
    family: FamilyOpt = None,
    as_json: JsonOpt = False,
    tensors: Annotated[
        bool, typer.Option("--tensors", help="List every named tensor with its shape.")
    ] = False,
    explain: ExplainOpt = False,
    lora_r: LoraROpt = None,
    lora_alpha: LoraAlphaOpt = 32,
    lora_targets: LoraTargetsOpt = "q_proj,k_proj,v_proj,o_proj",
    lora_embeddings: LoraEmbeddingsOpt = False,
    lora_experts: LoraExpertsOpt = False,
    modules_to_save: ModulesToSaveOpt = None,
    dora: DoraOpt = False,
    rslora: RsloraOpt = False,
) -> None:
    """Count a model's parameters exactly: per tensor group, per layer, embeddings, lm_head, total.

    With --lora-r: trainable and total parameters once peft adds LoRA adapters.
    """
    check_explain(explain=explain, as_json=as_json)
    spec = spec_for(model, set_, family)
    if lora_r is not None:
        from llmcalc.lora import lora_count
        from llmcalc.render.lora import lora_explain, lora_json, lora_view

        lc = lora_count(spec, config_from_options(
            spec, r=lora_r, alpha=lora_alpha, targets=lora_targets, embeddings=lora_embeddings,
            experts=lora_experts, modules_to_save=modules_to_save, dora=dora, rslora=rslora))
        if as_json:
            print_json(lora_json(spec, lc))
            return
        show(lora_view(spec, lc))
        if explain:
            show(*(Text(line) for line in lora_explain(lc)))
        return
    pc = count_params(spec)
    if as_json:
        data = count_json(spec, pc)
        if tensors:
            if spec.num_named_tensors > MAX_LISTED_TENSORS:
                raise UsageError(
                    f"--tensors --json lists at most {MAX_LISTED_TENSORS:,} tensors, one per layer; "
                    f"this model has {spec.num_named_tensors:,} (without --json the table lists "
                    "each tensor once with the layers it repeats in)"
                )
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
