"""LoRA options shared by ``count`` and ``train`` (peft ``LoraConfig`` names)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from llmcalc.spec import ModelSpec

if TYPE_CHECKING:
    from llmcalc.lora import LoraConfig

LoraROpt = Annotated[
    Optional[int],  # noqa: UP045 - typer reads this annotation at run time
    typer.Option("--lora-r", help="LoRA rank r: adds adapters A [r, in] + B [out, r] (peft).",
                 show_default=False),
]
LoraAlphaOpt = Annotated[
    int, typer.Option("--lora-alpha", help="LoRA alpha (scales the update; no count change).")
]
LoraTargetsOpt = Annotated[
    str,
    typer.Option("--lora-targets", metavar="NAMES",
                 help="Modules to adapt, comma-separated as in the transformers module tree, "
                 "or all-linear (every linear but lm_head)."),
]
LoraEmbeddingsOpt = Annotated[
    bool, typer.Option("--lora-embeddings", help="Also adapt the token embedding.")
]
LoraExpertsOpt = Annotated[
    bool, typer.Option("--lora-experts",
                       help="Also adapt fused MoE expert tensors (peft target_parameters).")
]
ModulesToSaveOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--modules-to-save", metavar="NAMES",
                 help="Modules trained in full beside the adapters, e.g. lm_head.",
                 show_default=False),
]
DoraOpt = Annotated[bool, typer.Option("--dora", help="DoRA: a magnitude vector per adapter.")]
RsloraOpt = Annotated[
    bool, typer.Option("--rslora", help="rsLoRA scaling α/√r (changes no count).")
]


def config_from_options(
    spec: ModelSpec, *, r: int, alpha: int, targets: str, embeddings: bool, experts: bool,
    modules_to_save: str | None, dora: bool, rslora: bool,
) -> LoraConfig:
    from llmcalc.lora import lora_config, resolve_targets  # only when adapters are asked for

    names = [t.strip() for t in targets.split(",") if t.strip()]
    return lora_config(
        r=r, alpha=alpha, targets=resolve_targets(spec, names), embeddings=embeddings,
        experts=experts, modules_to_save=(modules_to_save or "").split(","), dora=dora,
        rslora=rslora,
    )
