"""`llmcalc train MODEL`: training compute, GPU time, and whether the run fits in GPU memory."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer
from rich.text import Text

from llmcalc.choices import Kernel, Loss, Method, Optimizer, OptimizerImpl
from llmcalc.cli._common import (
    ExplainOpt,
    FamilyOpt,
    Format,
    FormatOpt,
    JsonOpt,
    ModelArg,
    RevisionOpt,
    SetOpt,
    StrictOpt,
    TrustRemoteCodeOpt,
    emit,
    handles_errors,
    output_format,
    print_json,
    refuse_assumed,
    refuse_explain,
    set_strict,
    show,
    spec_for,
    takes_text,
)
from llmcalc.cli._decide import (
    NOT_FIT,
    FailIfNotFitOpt,
    say_change,
    smallest_change,
    training_changes,
)
from llmcalc.cli._hardware import GpuFlopsOpt, GpuMemOpt, GpuOpt, GpusOpt, HeadroomOpt
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
from llmcalc.cli._options import COUNT_SUFFIXES, TrainCtxOpt, speaks_flags
from llmcalc.errors import UsageError
from llmcalc.formulas.activations import Precision
from llmcalc.planning.hardware import DEFAULT_HEADROOM, require, resolve
from llmcalc.planning.training import (
    CHINCHILLA_TOKENS_PER_PARAM,
    DEFAULT_CTX,
    DEFAULT_MFU,
    Recompute,
    TrainingPlan,
    parallelism,
    plan_training,
    tp_unit,
)
from llmcalc.render.train import explain_lines, train_grid, train_json, train_view
from llmcalc.units import parse_context, parse_count


@handles_errors
@speaks_flags
def train(
    model: ModelArg,
    tokens: Annotated[
        Optional[str],  # noqa: UP045 - typer reads this annotation at run time
        typer.Option("--tokens", metavar="TOKENS",
            help=f"Training tokens; {COUNT_SUFFIXES} (default: the compute-optimal "
            f"{CHINCHILLA_TOKENS_PER_PARAM} per parameter).",
            show_default=False,
        ),
    ] = None,
    gpus: GpusOpt = 1,
    gpu: GpuOpt = None,
    gpu_mem: GpuMemOpt = None,
    gpu_flops: GpuFlopsOpt = None,
    mfu: Annotated[
        float, typer.Option("--mfu", metavar="FRACTION", help="Model FLOPs utilisation to assume (0–1).")
    ] = DEFAULT_MFU,
    ctx: TrainCtxOpt = str(DEFAULT_CTX),
    tp: Annotated[int, typer.Option("--tp", metavar="N", help="Tensor-parallel degree.")] = 1,
    pp: Annotated[int, typer.Option("--pp", metavar="N", help="Pipeline-parallel degree.")] = 1,
    zero: Annotated[
        int, typer.Option("--zero", metavar="STAGE", help="ZeRO stage 0–3, sharding over the data-parallel GPUs.")
    ] = 0,
    micro_batch: Annotated[
        int, typer.Option("--micro-batch", metavar="N", help="Sequences per GPU per step (activation memory).")
    ] = 1,
    recompute: Annotated[
        Optional[Recompute],  # noqa: UP045
        typer.Option("--recompute", metavar="none|selective|full",
                     help="Activation recomputation (default: none; for "
                     "lora/qlora full, i.e. gradient checkpointing).", show_default=False),
    ] = None,
    flash_attention: Annotated[
        Optional[bool],  # noqa: UP045
        typer.Option(
            "--flash-attention/--no-flash-attention",
            help="FlashAttention: the s × s attention scores are never stored (default: off; "
            "on for lora/qlora, as transformers' SDPA attention).",
            show_default=False,
        ),
    ] = None,
    method: Annotated[
        Method, typer.Option("--method", help="full: pre-training plan (all weights trained); "
                             "lora: frozen bf16 base + adapters; qlora: frozen NF4 base + adapters "
                             "(adapters: --lora-r, default 16, on --lora-targets).")
    ] = Method.full,
    optimizer: Annotated[
        Optimizer, typer.Option("--optimizer", help="Fine-tuning optimizer (lora/qlora): AdamW "
                                "16 B per trainable parameter, 8-bit Adam 10 B; paged variants "
                                "hold the same GPU bytes.")
    ] = Optimizer.adamw,
    lora_r: LoraROpt = None,
    lora_alpha: LoraAlphaOpt = 32,
    lora_targets: LoraTargetsOpt = "q_proj,k_proj,v_proj,o_proj",
    lora_embeddings: LoraEmbeddingsOpt = False,
    lora_experts: LoraExpertsOpt = False,
    modules_to_save: ModulesToSaveOpt = None,
    dora: DoraOpt = False,
    rslora: RsloraOpt = False,
    attention: Annotated[
        Optional[Kernel],  # noqa: UP045
        typer.Option("--attention", help="Plan transformers' layers on PyTorch kind by kind "
                     "(measured against the allocator; one GPU) with this attention kernel; "
                     "default: Megatron-LM's fused kernels (Korthikanti et al.).",
                     show_default=False),
    ] = None,
    weights_dtype: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--dtype", metavar="fp32|bf16", help="With --attention: the weights' dtype "
                     "(default fp32 with --amp).", show_default=False),
    ] = None,
    amp: Annotated[
        Optional[bool],  # noqa: UP045
        typer.Option("--amp/--no-amp", help="With --attention: bf16 autocast over fp32 weights "
                     "(default: on unless --dtype bf16).", show_default=False),
    ] = None,
    optimizer_impl: Annotated[
        Optional[OptimizerImpl],  # noqa: UP045
        typer.Option("--optimizer-impl", help="AdamW implementation: foreach allocates one more "
                     "copy of the parameters during its step, loop twice the largest tensor, fused "
                     "nothing (default: fused; foreach with --attention, as PyTorch on CUDA).",
                     show_default=False),
    ] = None,
    loss: Annotated[
        Loss, typer.Option("--loss", help="Cross-entropy over the vocabulary: full (12 B per token "
                           "× vocabulary at the start of backward) or chunked (1,024 tokens at "
                           "a time).")
    ] = Loss.full,
    headroom: HeadroomOpt = DEFAULT_HEADROOM,
    set_: SetOpt = None,
    family: FamilyOpt = None,
    strict: StrictOpt = False,
    revision: RevisionOpt = None,
    trust_remote_code: TrustRemoteCodeOpt = False,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    explain: ExplainOpt = False,
    fail_if_not_fit: FailIfNotFitOpt = False,
) -> None:
    """Plan a training run: FLOPs (6·N·D plus causal attention), GPU-hours, memory per GPU, fit."""
    set_strict(strict)
    how = output_format(fmt, as_json)
    refuse_explain(explain, how)
    spec = takes_text(spec_for(model, set_, family, revision, trust_remote_code), "train")
    acc = resolve(gpu, memory=gpu_mem, flops=gpu_flops)
    require(acc, "memory_bytes", "peak_flops")
    if method is not Method.full:
        from llmcalc.planning.finetune import plan_finetune
        from llmcalc.render.finetune import finetune_explain, finetune_json, finetune_view

        lora = config_from_options(
            spec, r=16 if lora_r is None else lora_r, alpha=lora_alpha, targets=lora_targets,
            embeddings=lora_embeddings, experts=lora_experts, modules_to_save=modules_to_save,
            dora=dora, rslora=rslora)
        fp = plan_finetune(
            spec, method=method, lora=lora, accelerator=acc,
            ctx=parse_context(ctx, option="--ctx"), micro_batch=micro_batch, optimizer=optimizer,
            checkpointing=(recompute or Recompute.full) is not Recompute.none,
            flash_attention=True if flash_attention is None else flash_attention, tp=tp,
            tokens=parse_count(tokens, option="--tokens") if tokens is not None else None,
            headroom=headroom, mfu=mfu, attention=attention,
        )
        if how is not Format.table:
            if how is not Format.json:
                raise UsageError(f"--format {how.value}: a fine-tuning plan prints as a table or JSON")
            print_json(finetune_json(spec, fp, acc))
        else:
            refuse_assumed(finetune_json(spec, fp, acc)["notes"], "the output")  # --strict
            show(finetune_view(spec, fp, acc))
            if explain:
                show(*(Text(line) for line in finetune_explain(spec, fp)))
        if fail_if_not_fit and not fp.fits:
            raise typer.Exit(NOT_FIT)
        return
    precision = None
    if attention is not None:
        precision = precision_from(weights_dtype, amp)
    elif weights_dtype is not None or amp is not None:
        raise UsageError("--dtype and --amp: they apply with --attention (the layer-kind plan)")
    asked: dict[str, Any] = {"tp": tp, "zero": zero,
                             "recompute": (recompute or Recompute.none).value,
                             "flash_attention": bool(flash_attention)}

    def planned(**change: Any) -> TrainingPlan:
        o = {**asked, **change}
        return plan_training(
            spec,
            tokens=parse_count(tokens, option="--tokens") if tokens is not None else None,
            ctx=parse_context(ctx, option="--ctx"),
            accelerator=acc,
            mfu=mfu,
            par=parallelism(gpus=gpus, tp=o["tp"], pp=pp, zero=o["zero"]),
            micro_batch=micro_batch,
            recompute=Recompute(o["recompute"]),
            flash_attention=o["flash_attention"],
            headroom=headroom,
            attention=attention,
            precision=precision,
            optimizer=optimizer_impl or (OptimizerImpl.fused if attention is None
                                         else OptimizerImpl.foreach),
            loss=loss,
        )

    plan = planned()
    emit(how, data=lambda: train_json(spec, plan), grids=lambda: [train_grid(spec, plan)],
         view=lambda: train_view(spec, plan))
    if explain:
        show(*(Text(line) for line in explain_lines(spec, plan)))
    if how is Format.table and not plan.fits:
        say_change(smallest_change(
            training_changes(gpus=gpus, tp=tp, pp=pp, zero=zero, recompute=asked["recompute"],
                             flash_attention=asked["flash_attention"], heads=tp_unit(spec)),
            lambda change: planned(**change).fits), fits=False)
    if fail_if_not_fit and not plan.fits:
        raise typer.Exit(NOT_FIT)


# the weights' dtype of a layer-kind plan → bytes per element
WEIGHT_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}


def precision_from(dtype: str | None, amp: bool | None) -> Precision:
    """--dtype/--amp → Precision: fp32 weights under bf16 autocast unless told otherwise."""
    from llmcalc.units import parse_dtype

    name = "fp32" if dtype is None else parse_dtype(dtype, option="--dtype").value
    if name not in WEIGHT_BYTES:
        raise UsageError(f"--dtype {name}: the layer-kind plan trains fp32, bf16 or fp16 weights")
    use_amp = (name == "fp32") if amp is None else amp
    if use_amp and name != "fp32":
        raise UsageError(f"--amp: autocast runs over fp32 weights, not --dtype {name}")
    return Precision(WEIGHT_BYTES[name], amp=use_amp)
