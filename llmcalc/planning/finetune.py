"""Fine-tuning plans: full, LoRA and QLoRA — memory per GPU and FLOPs per token.

Pure functions; nothing here prints. Sources, each used once below:

- memory of a full fine-tune: the model states of :mod:`llmcalc.planning.training` (mixed-precision AdamW,
  16 bytes per parameter, Rajbhandari et al. 2020 §3.1);
- LoRA (Hu et al. 2021 §4.2): the base stays frozen at its dtype (no gradients, no optimizer
  state); only the adapters (:mod:`llmcalc.formulas.lora`) carry weights, gradients and AdamW states — the
  same 16 bytes per trainable parameter;
- QLoRA (Dettmers et al. 2023 §3): the frozen base in NF4 with double quantization
  (:mod:`llmcalc.formulas.quant`), adapters in bf16 with the same states; paged optimizers move optimizer
  states to CPU memory only on a spike, so the steady-state GPU bytes are the same;
- 8-bit optimizers (Dettmers et al. 2022, "8-bit Optimizers via Block-wise Quantization"): Adam's
  two states at 1 byte each instead of 4 (+ the fp32 master weights, 4 bytes): 2 + 2 + 4 + 2 = 10
  bytes per trainable parameter;
- activations: Korthikanti et al. 2022 as ``train`` uses them (llmcalc.planning.training); gradient
  checkpointing is their full recomputation (only each layer's input is kept), plus one layer's
  full activations while it is recomputed for its backward pass (Chen et al. 2016). The frozen
  layers' activations are needed all the same: the gradient flows back through them to the
  adapters. The adapters' own r-wide activations (2·r bytes per token per adapter) are left out;
- logits and loss: at the start of backward transformers' causal-LM loss holds the fp32
  log-probabilities, their gradient and the logits' gradient, 12 bytes per token and vocabulary
  entry (llmcalc.formulas.activations.LOSS_BYTES_FP32, measured), divided by tp;
- with ``attention`` set, the whole step is transformers' modules on PyTorch, layer kind by layer
  kind (llmcalc.formulas.activations.step_memory, measured against the allocator);
- FLOPs per token: the backward pass costs two forward passes, one for the gradients of the
  activations and one for those of the weights (Kaplan et al. 2020 §2.1: C ≈ 6N, 2N forward +
  4N backward). A frozen weight needs no weight gradient: 2N + 2N = 4N for the base, 6 per adapter
  parameter; the attention core (no weights) is forward + 2 × forward, as in full training.
  Gradient checkpointing runs the forward once more (Chen et al. 2016): + 2N + 2·adapters + the
  attention forward.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llmcalc.choices import Method as Method
from llmcalc.choices import Optimizer as Optimizer
from llmcalc.errors import ParameterError
from llmcalc.formulas import activations as act
from llmcalc.formulas import flops, memory
from llmcalc.formulas.counting import count
from llmcalc.formulas.lora import LoraConfig, LoraCount, lora_count
from llmcalc.formulas.quant import FORMATS, WeightFormat, format_notes
from llmcalc.model.spec import ModelSpec
from llmcalc.planning.hardware import DEFAULT_HEADROOM, Accelerator, usable_memory
from llmcalc.planning.serving import largest
from llmcalc.planning.training import (
    ADAMW_BYTES,
    DEFAULT_MFU,
    Recompute,
    activation_bytes,
    ceil_div,
    check_mfu,
    compute_time,
)
from llmcalc.units import DType

# bytes per trainable parameter by state (weights and gradients bf16; fp32 master; Adam's m and v)
OPTIMIZER_BYTES: dict[Optimizer, dict[str, int]] = {
    Optimizer.adamw: dict(ADAMW_BYTES),
    Optimizer.paged_adamw: dict(ADAMW_BYTES),
    Optimizer.adamw_8bit: {**ADAMW_BYTES, "optimizer/momentum": 1, "optimizer/variance": 1},
    Optimizer.paged_adamw_8bit: {**ADAMW_BYTES, "optimizer/momentum": 1, "optimizer/variance": 1},
}

BASE_FORMAT: dict[Method, WeightFormat | None] = {
    Method.full: None,  # trained: its bytes are in the model states
    Method.lora: DType.bf16,
    Method.qlora: FORMATS["nf4"],
}

LOGITS_BYTES = act.LOSS_BYTES_FP32  # fp32 log-probabilities, their gradient, the logits' gradient

# Per token: forward passes run by each part (Kaplan et al. 2020 §2.1)
FROZEN_PASSES = 2  # forward + activation gradients
TRAINED_PASSES = 3  # forward + activation gradients + weight gradients


@dataclass(frozen=True)
class FinetunePlan:
    """What ``train --method lora|qlora|full`` reports for fine-tuning."""

    method: Method
    optimizer: Optimizer
    lora: LoraCount | None
    params: int  # the base model's parameters
    trainable: int
    base_format: WeightFormat | None
    frozen_bytes: int  # the frozen base at its format (0 for a full fine-tune)
    states: dict[str, int]  # bytes of the trainable parameters' states, by OPTIMIZER_BYTES key
    activations: int
    logits: int
    ctx: int
    micro_batch: int
    checkpointing: bool
    flash_attention: bool
    tp: int
    memory_per_gpu: int
    headroom: float
    usable_memory: int
    fits: bool
    flops_per_token: int
    weight_flops_per_token: int  # base weights at 4N (6N if trained) + adapters at 6 per param
    attention_flops_per_token: int
    tokens: int | None
    training_flops: int | None
    mfu: float
    gpu_hours: float | None  # training_flops / (peak × mfu) / 3600, with --tokens
    notes: tuple[str, ...] = ()  # what the frozen base's format leaves wide (QLoRA on an MoE)

    @property
    def states_total(self) -> int:
        return sum(self.states.values())


def finetune_flops_per_token(
    spec: ModelSpec, *, ctx: int, trainable_adapters: int, base_trained: bool, checkpointing: bool
) -> tuple[int, int]:
    """(weights, attention) FLOPs per token: base 2N·(2 or 3) + 6·adapters, attention 3 × forward;
    checkpointing adds one more forward of each."""
    spec.require_token_plans("fine-tuning plan")
    w = flops.weight_flops_per_token(spec)  # 2N (matrix elements × 2)
    a = flops.attention_flops_per_sequence(spec, ctx=ctx, causal=True) // ctx
    adapter = flops.FLOPS_PER_MAC * trainable_adapters
    base_passes = TRAINED_PASSES if base_trained else FROZEN_PASSES
    extra = 1 if checkpointing else 0
    weights = (base_passes + extra) * w + (TRAINED_PASSES + extra) * adapter
    attention = (flops.TRAINING_MULTIPLIER + extra) * a
    return weights, attention


def plan_finetune(
    spec: ModelSpec,
    *,
    method: Method,
    lora: LoraConfig | None,
    accelerator: Accelerator,
    ctx: int,
    micro_batch: int = 1,
    optimizer: Optimizer = Optimizer.adamw,
    checkpointing: bool = True,
    flash_attention: bool = True,
    tp: int = 1,
    tokens: int | None = None,
    headroom: float = DEFAULT_HEADROOM,
    mfu: float = DEFAULT_MFU,
    attention: act.Kernel | None = None,
) -> FinetunePlan:
    """Memory per GPU and FLOPs of one fine-tuning setup; tp splits every part evenly.

    ``attention`` (one GPU, LoRA or full with AdamW): the peak of transformers' modules on
    PyTorch (llmcalc.formulas.activations.step_memory) — a bf16 base (fp32 for full) with peft's fp32
    adapters, the optimizer step's foreach temporaries included.
    """
    if micro_batch < 1:
        raise ParameterError("{micro_batch} {value}: must be 1 or more", value=micro_batch)
    if tp < 1:
        raise ParameterError("{tp} {value}: must be 1 or more", value=tp)
    if method is not Method.full and lora is None:
        raise ParameterError("{method} {name}: needs {lora_r}", name=method.value)
    params = count(spec).total
    lc = lora_count(spec, lora) if method is not Method.full and lora is not None else None
    trainable = params if lc is None else lc.trainable
    fmt = BASE_FORMAT[method]
    frozen = ceil_div(memory.weight_bytes(spec, dtype=fmt), tp) if fmt is not None else 0
    per_param = OPTIMIZER_BYTES[optimizer]
    shard = ceil_div(trainable, tp)
    states = {k: shard * b for k, b in per_param.items()}
    s = spec.shape
    acts = activation_bytes(
        layers=s.num_layers, seq=ctx, micro_batch=micro_batch, hidden=s.hidden_size,
        heads=s.num_heads, tp=tp, recompute=Recompute.full if checkpointing else Recompute.none,
        flash_attention=flash_attention,
    )
    if checkpointing:  # the layer being recomputed holds its full activations once
        acts += activation_bytes(
            layers=1, seq=ctx, micro_batch=micro_batch, hidden=s.hidden_size, heads=s.num_heads,
            tp=tp, recompute=Recompute.none, flash_attention=flash_attention,
        )
    logits = ceil_div(LOGITS_BYTES * ctx * micro_batch * s.vocab_size, tp)
    total = frozen + sum(states.values()) + acts + logits
    if attention is not None:
        if tp != 1 or method is Method.qlora or optimizer is not Optimizer.adamw:
            raise ParameterError("{attention} {name}: the layer-kind plan is for LoRA or full "
                                 "fine-tuning with AdamW on one GPU", name=attention.value)
        adapters = sum(a.modules for a in lc.adapters) if lc else 0
        r = lc.config.r if lc else 0
        step = act.step_memory(
            spec, batch=micro_batch, seq=ctx, kernel=attention, recompute_full=checkpointing,
            precision=act.Precision(2 if lc else 4), lora_params=lc.trainable if lc else 0,
            lora_adapters=adapters, lora_r=r)
        acts, logits, total = step.activations, step.logits, step.peak
    usable = usable_memory(accelerator.memory_bytes, headroom=headroom)
    w, a = finetune_flops_per_token(
        spec, ctx=ctx, trainable_adapters=lc.trainable if lc else 0,
        base_trained=method is Method.full, checkpointing=checkpointing,
    )
    check_mfu(mfu)
    work = None if tokens is None else tokens * (w + a)
    return FinetunePlan(
        method=method, optimizer=optimizer, lora=lc, params=params, trainable=trainable,
        base_format=fmt, frozen_bytes=frozen, states=states, activations=acts, logits=logits, ctx=ctx,
        micro_batch=micro_batch, checkpointing=checkpointing, flash_attention=flash_attention,
        tp=tp, memory_per_gpu=total, headroom=headroom, usable_memory=usable,
        fits=total <= usable, flops_per_token=w + a, weight_flops_per_token=w,
        attention_flops_per_token=a, tokens=tokens,
        training_flops=work, mfu=mfu,
        gpu_hours=None if work is None else compute_time(
            work, gpus=1, peak_flops=accelerator.peak_flops, mfu=mfu).gpu_hours,
        notes=format_notes(spec, fmt) if fmt is not None else (),
    )


@dataclass(frozen=True)
class FinetuneFit:
    """``fit --method``: the largest context (or micro-batch) and the plan at it."""

    solve_for: str  # "ctx" or "micro_batch"
    limit: int
    plan: FinetunePlan | None  # None when nothing fits


def fit_finetune(
    spec: ModelSpec, *, ctx: int | None, micro_batch: int | None, limit: int,
    **options: Any,
) -> FinetuneFit:
    """Largest ``ctx`` ≤ ``limit`` at ``micro_batch`` (default 1), or, with ``ctx`` given, the
    largest micro-batch (up to ``limit``); memory grows with both."""
    if ctx is not None and micro_batch is not None:
        raise ParameterError("{batch} and {ctx}: give one; fit finds the largest value of the other")
    if ctx is not None:
        best = largest(lambda b: plan_finetune(spec, ctx=ctx, micro_batch=b, **options).fits,
                        limit)
        plan = plan_finetune(spec, ctx=ctx, micro_batch=best, **options) if best else None
        return FinetuneFit("micro_batch", limit, plan)
    b = micro_batch or 1
    best = largest(lambda c: plan_finetune(spec, ctx=c, micro_batch=b, **options).fits, limit)
    plan = plan_finetune(spec, ctx=best, micro_batch=b, **options) if best else None
    return FinetuneFit("ctx", limit, plan)
