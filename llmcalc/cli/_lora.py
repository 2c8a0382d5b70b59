"""LoRA options shared by ``count`` and ``train`` (peft ``LoraConfig`` names)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from llmcalc.model.spec import ModelSpec

if TYPE_CHECKING:
    from llmcalc.formulas.lora import LoraConfig

LoraROpt = Annotated[
    Optional[int],  # noqa: UP045 - typer reads this annotation at run time
    typer.Option("--lora-r", help="LoRA rank r: adds adapters A [r, in] + B [out, r] (peft).",
                 show_default=False),
]
LoraAlphaOpt = Annotated[
    int, typer.Option("--lora-alpha", help="LoRA alpha (scales the update; no count change).")
]
DEFAULT_TARGETS = "q_proj,k_proj,v_proj,o_proj"
LoraTargetsOpt = Annotated[
    Optional[str],  # noqa: UP045 - None: DEFAULT_TARGETS (and, for count, not given)
    typer.Option("--lora-targets", metavar="NAMES",
                 help="Modules to adapt, comma-separated as in the transformers module tree, "
                 f"or all-linear (every linear but lm_head); default {DEFAULT_TARGETS}.",
                 show_default=False),
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


def adapter_options_without_rank(
    *, alpha: int, targets: str | None, embeddings: bool, experts: bool,
    modules_to_save: str | None, dora: bool, rslora: bool,
) -> list[str]:
    """The adapter options given, for a command told no --lora-r: they would change nothing."""
    given = {"--lora-alpha": alpha != 32, "--lora-targets": targets is not None,
             "--lora-embeddings": embeddings, "--lora-experts": experts,
             "--modules-to-save": modules_to_save is not None, "--dora": dora, "--rslora": rslora}
    return [name for name, on in given.items() if on]


def config_from_options(
    spec: ModelSpec, *, r: int, alpha: int, targets: str | None, embeddings: bool, experts: bool,
    modules_to_save: str | None, dora: bool, rslora: bool,
) -> LoraConfig:
    from llmcalc.formulas.lora import (  # only when adapters are asked for
        lora_config,
        resolve_targets,
    )

    names = [t.strip() for t in (targets or DEFAULT_TARGETS).split(",") if t.strip()]
    return lora_config(
        r=r, alpha=alpha, targets=resolve_targets(spec, names), embeddings=embeddings,
        experts=experts, modules_to_save=(modules_to_save or "").split(","), dora=dora,
        rslora=rslora,
    )
