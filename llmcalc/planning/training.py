"""Planning a training run: compute, compute-optimal tokens, GPU time, and memory per GPU.

Pure functions over plain numbers (and a :class:`ModelSpec` where the model's shape is needed);
nothing here prints. Sources, each used once below:

- training FLOPs: forward + backward = 3 × forward (llmcalc.formulas.flops), i.e. 6·N per token for the
  weights plus the attention a causal mask keeps, averaged over a sequence of ``ctx`` tokens;
- compute-optimal tokens: Hoffmann et al. 2022 ("Chinchilla"), ≈ 20 tokens per parameter;
- model-state bytes: mixed-precision AdamW, 2 + 2 + 12 bytes per parameter, and the ZeRO stages
  (Rajbhandari et al. 2020, §3.1 and §5);
- the verdict: model states + activations against the card's memory less the same headroom
  ``fit`` leaves (llmcalc.planning.hardware.DEFAULT_HEADROOM, 10%) for the runtime and allocator slack;
- activation bytes: Korthikanti et al. 2022, §4 and Table 2 — derived for a GPT-3 layer (4h MLP,
  multi-head attention, dropout) on Megatron-LM's fused kernels; for other layers (SwiGLU, GQA,
  MoE) it is the stated estimate. With ``attention`` set, the plan is instead that of transformers'
  modules on PyTorch's allocator, layer kind by layer kind (llmcalc.formulas.activations, measured);
- logits and loss: the fp32 log-probabilities, their gradient and the logits' gradient at the
  start of backward, 12 B per token and vocabulary entry (llmcalc.formulas.activations.LOSS_BYTES_FP32),
  split over tp by a vocabulary-parallel cross-entropy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

from llmcalc.errors import ParameterError
from llmcalc.formulas import activations as act
from llmcalc.formulas import flops
from llmcalc.formulas.counting import count
from llmcalc.model.spec import ModelSpec
from llmcalc.planning.hardware import DEFAULT_HEADROOM, Accelerator, usable_memory

# ---- compute -------------------------------------------------------------------------------------

# Hoffmann et al. 2022, §3 and Table 3: the compute-optimal model sees ≈ 20 tokens per parameter
# (Chinchilla: 70B parameters, 1.4T tokens).
CHINCHILLA_TOKENS_PER_PARAM = 20

SECONDS_PER_HOUR = 3600
SECONDS_PER_DAY = 86400


def compute_optimal_tokens(params: int) -> int:
    """Hoffmann et al. 2022: D_opt ≈ 20 · N."""
    return CHINCHILLA_TOKENS_PER_PARAM * params


@dataclass(frozen=True)
class TrainingFlops:
    """Training FLOPs of ``tokens`` tokens in sequences of ``ctx``: weights and causal attention."""

    weights: int
    attention: int
    mixers: int = 0  # SSM layers' convolution + state readout, n steps per sequence

    @property
    def total(self) -> int:
        return self.weights + self.attention + self.mixers


def training_flops(spec: ModelSpec, *, tokens: int, ctx: int) -> TrainingFlops:
    """3 × the forward pass over D tokens: 3 · (D · W + (D / ctx) · A_causal(ctx)).

    W: weight FLOPs per token (2 × matrix elements, ≈ 2·N); A_causal(ctx): attention FLOPs of one
    sequence over the ctx(ctx+1)/2 query–key pairs a causal mask keeps (sliding windows fewer);
    plus, for SSM layers, D × their per-token convolution and state readout (flops.py).
    """
    spec.require_token_plans("training plan")
    if tokens < 1:
        raise ParameterError("{tokens} {value}: must be 1 or more", value=tokens)
    per_sequence = flops.attention_flops_per_sequence(spec, ctx=ctx, causal=True)
    return TrainingFlops(
        weights=flops.TRAINING_MULTIPLIER * tokens * flops.weight_flops_per_token(spec),
        attention=flops.TRAINING_MULTIPLIER * tokens * per_sequence // ctx,
        mixers=flops.TRAINING_MULTIPLIER * tokens * flops.mixer_flops_per_token_all(spec),
    )


def six_n_d(params: int, tokens: int) -> int:
    """The headline rule: 6 · N · D training FLOPs (weights only, no attention term).

    N is the parameters a token uses: for mixture-of-experts models the active ones (shared
    weights plus k of the E routed experts), as MoE papers quote 6·N·D; for dense models all.
    """
    return flops.FLOPS_PER_MAC * flops.TRAINING_MULTIPLIER * params * tokens


@dataclass(frozen=True)
class ComputeTime:
    """How long ``flops`` take on ``gpus`` accelerators of ``peak_flops`` each at utilisation ``mfu``."""

    gpu_seconds: float
    gpu_hours: float
    wall_seconds: float
    wall_days: float


def compute_time(flops: int, *, gpus: int, peak_flops: int, mfu: float) -> ComputeTime:
    """seconds on one GPU = FLOPs / (peak · MFU); wall-clock = that / GPUs."""
    check_mfu(mfu)
    gpu_seconds = flops / (peak_flops * mfu)
    wall = gpu_seconds / gpus
    return ComputeTime(gpu_seconds, gpu_seconds / SECONDS_PER_HOUR, wall, wall / SECONDS_PER_DAY)


def check_mfu(mfu: float) -> None:
    if not 0 < mfu <= 1:
        raise ParameterError("{mfu} {value:g}: must be a fraction in (0, 1], e.g. 0.4", value=mfu)


# ---- model states: weights, gradients, optimizer -------------------------------------------------

# Mixed-precision AdamW, bytes per parameter (Rajbhandari et al. 2020, §3.1: 2Ψ + 2Ψ + 12Ψ):
# bf16/fp16 weights and gradients; fp32 master weights, first moment (momentum) and second moment
# (variance) for the optimizer.
ADAMW_BYTES: dict[str, int] = {
    "weights": 2,
    "gradients": 2,
    "optimizer/master_weights": 4,
    "optimizer/momentum": 4,
    "optimizer/variance": 4,
}
ADAMW_BYTES_PER_PARAM = sum(ADAMW_BYTES.values())  # 16

# Which model states each ZeRO stage partitions over the data-parallel group (Rajbhandari et al.
# 2020, §5: P_os, P_os+g, P_os+g+p).
ZERO_PARTITIONED: dict[int, frozenset[str]] = {
    0: frozenset(),
    1: frozenset({"optimizer"}),
    2: frozenset({"optimizer", "gradients"}),
    3: frozenset({"optimizer", "gradients", "weights"}),
}


@dataclass(frozen=True)
class Parallelism:
    """How ``gpus`` are used: tensor × pipeline model parallelism, data parallelism over the rest."""

    gpus: int
    tp: int = 1
    pp: int = 1
    zero: int = 0

    @property
    def dp(self) -> int:
        return self.gpus // (self.tp * self.pp)

    @property
    def model_parallel(self) -> int:
        return self.tp * self.pp


def parallelism(*, gpus: int, tp: int = 1, pp: int = 1, zero: int = 0) -> Parallelism:
    """Check the degrees: tp·pp must divide the GPU count, ZeRO is a stage 0–3."""
    for name, value in (("gpus", gpus), ("tp", tp), ("pp", pp)):
        if value < 1:
            raise ParameterError(f"{{{name}}} {{value}}: must be 1 or more", value=value)
    if zero not in ZERO_PARTITIONED:
        raise ParameterError("{zero} {value}: must be a ZeRO stage 0, 1, 2 or 3", value=zero)
    if gpus % (tp * pp):
        raise ParameterError(
            "{gpus} {value}: must be a multiple of {tp} × {pp} = {t} × {p} = {product}",
            value=gpus, t=tp, p=pp, product=tp * pp,
        )
    return Parallelism(gpus=gpus, tp=tp, pp=pp, zero=zero)


def tp_heads(spec: ModelSpec) -> tuple[list[int], list[int]]:
    """Each layer kind's attention heads and (latent-free) KV heads: what tensor parallelism
    splits over its GPUs."""
    kinds = [g.attention for g in spec.layer_groups if g.attention is not None]
    return (sorted({a.heads for a in kinds}),
            sorted({a.kv_heads for a in kinds if not a.kv_latent_dim}))


def tp_unit(spec: ModelSpec) -> int:
    """The largest tensor-parallel degree dividing every head count (0: no attention to split);
    a ``tp`` fits the heads when it divides this."""
    heads, kv = tp_heads(spec)
    return math.gcd(*heads, *kv) if heads or kv else 0


def check_tp_heads(spec: ModelSpec, tp: int) -> None:
    """Tensor parallelism splits each layer's attention heads and KV heads over the GPUs: ``tp``
    must divide them all. Megatron-LM asserts it (megatron/core/transformer/attention.py:
    ``divide(num_attention_heads, world_size)`` and ``divide(num_query_groups, world_size)``);
    an engine that repeats KV heads is not modelled, and ``fit`` refuses it too."""
    if tp == 1:
        return
    heads, kv = tp_heads(spec)
    if any(h % tp for h in (*heads, *kv)):
        shown = "/".join(map(str, heads)) + " attention heads" + (
            f" and {'/'.join(map(str, kv))} KV heads" if kv else "")
        raise ParameterError("{tp} {value}: {name}'s {shown} do not split evenly over {value} "
                             "GPUs; use a {tp} that divides them", value=tp, name=spec.name,
                             shown=shown)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def model_state_bytes(params: int, *, par: Parallelism) -> dict[str, int]:
    """Bytes per GPU of each model state (the :data:`ADAMW_BYTES` keys).

    Tensor and pipeline parallelism split the parameters evenly over tp·pp GPUs (an ideal split);
    ZeRO then partitions the states of its stage over the data-parallel degree dp = GPUs / (tp·pp),
    never over all GPUs (dividing by both would count the model-parallel split twice).
    """
    shard = ceil_div(params, par.model_parallel)
    partitioned = ZERO_PARTITIONED[par.zero]
    out = {}
    for key, per_param in ADAMW_BYTES.items():
        kind = key.split("/")[0]
        divisor = par.dp if kind in partitioned else 1
        out[key] = ceil_div(shard * per_param, divisor)
    return out


# ---- activations ---------------------------------------------------------------------------------


class Recompute(str, Enum):
    """What is recomputed in the backward pass instead of stored (Korthikanti et al. 2022, §4)."""

    none = "none"  # store every activation
    selective = "selective"  # recompute the attention core (QKᵀ, softmax, dropout, ·V)
    full = "full"  # store only each layer's input; recompute the layer


# Korthikanti et al. 2022, §4.1: one GPT layer stores 34·s·b·h bytes (16-bit activations and 1-byte
# dropout masks: attention 11sbh, MLP 19sbh, layer norms 4sbh) plus 5·a·s²·b bytes in the attention
# core (softmax 2as²b, its dropout mask as²b, dropout output 2as²b). Full recomputation keeps only
# the layer input, 2·s·b·h. With tensor + sequence parallelism (§4.2.2) every term is divided by t.
LINEAR_BYTES = {Recompute.none: 34, Recompute.selective: 34, Recompute.full: 2}
KEEPS_ATTENTION_SCORES = {Recompute.none: True, Recompute.selective: False, Recompute.full: False}
ATTENTION_SCORE_BYTES = 5


def activation_bytes_per_layer(
    *,
    seq: int,
    micro_batch: int,
    hidden: int,
    heads: int,
    tp: int = 1,
    recompute: Recompute = Recompute.none,
    flash_attention: bool = False,
) -> int:
    """Korthikanti et al. 2022: s·b·h·(34 + 5·a·s/h) / t bytes per layer without recomputation.

    Selective recomputation, and FlashAttention (which never stores the s × s scores), remove the
    5·a·s²·b term; full recomputation leaves 2·s·b·h. Assumes sequence parallelism with tp > 1.
    """
    s, b, h, a = seq, micro_batch, hidden, heads
    total = LINEAR_BYTES[recompute] * s * b * h
    if KEEPS_ATTENTION_SCORES[recompute] and not flash_attention:
        total += ATTENTION_SCORE_BYTES * a * s * s * b
    return ceil_div(total, tp)


def activation_bytes(
    *,
    layers: int,
    seq: int,
    micro_batch: int,
    hidden: int,
    heads: int,
    tp: int = 1,
    recompute: Recompute = Recompute.none,
    flash_attention: bool = False,
) -> int:
    """Activations on the busiest GPU: all ``layers`` layers' worth, whatever the pipeline degree.

    Korthikanti et al. 2022, §4.2.3: with the 1F1B schedule the first of p stages holds L/p layers
    for p micro-batches in flight, i.e. L layers' activations.
    """
    return layers * activation_bytes_per_layer(
        seq=seq, micro_batch=micro_batch, hidden=hidden, heads=heads, tp=tp,
        recompute=recompute, flash_attention=flash_attention,
    )


# ---- a whole plan --------------------------------------------------------------------------------

DEFAULT_CTX = 4096
DEFAULT_MFU = 0.4


@dataclass(frozen=True)
class TrainingPlan:
    """Everything ``llmcalc train`` reports, computed from the spec and the options."""

    params: int
    tokens: int
    ctx: int
    flops_per_token: int  # 3 × forward at ctx: weights plus causal attention
    weight_flops: int  # the weights' share over all tokens (≈ 6·N·D)
    attention_flops: int  # the causal attention's share over all tokens
    training_flops: int  # weight_flops + attention_flops + mixer_flops
    active_params: int  # parameters one token uses: all of them, or k of E routed experts (MoE)
    six_n_d: int  # 6 · N · D with N = active_params (the MoE convention), beside the exact figure
    compute_optimal_tokens: int
    accelerator: Accelerator
    mfu: float
    time: ComputeTime
    par: Parallelism
    micro_batch: int
    recompute: Recompute
    flash_attention: bool
    states: dict[str, int]  # ADAMW_BYTES keys → bytes per GPU
    activations: int  # bytes per GPU
    memory_per_gpu: int
    headroom: float  # share of each GPU's memory left for the runtime
    usable_memory: int  # memory per GPU × (1 − headroom)
    fits: bool  # memory_per_gpu ≤ usable_memory
    mixer_flops: int = 0  # SSM layers' convolution + state readout over all tokens
    logits: int = 0  # logits and loss at the start of backward (12 B per token × vocab / tp)
    temporaries: int = 0  # the optimizer step's intermediates (foreach: one more copy)
    bytes_per_param: dict[str, int] = field(default_factory=lambda: dict(ADAMW_BYTES))
    # the layer-kind plan (--attention): transformers' kernel, weights' precision, the moment of
    # the peak ("start of backward" or "optimizer step"); None: Korthikanti's estimate
    attention: act.Kernel | None = None
    precision: act.Precision | None = None
    peak_moment: str = "start of backward"

    @property
    def states_total(self) -> int:
        return sum(self.states.values())


def plan_training(
    spec: ModelSpec,
    *,
    tokens: int | None,
    ctx: int,
    accelerator: Accelerator,
    mfu: float,
    par: Parallelism,
    micro_batch: int = 1,
    recompute: Recompute = Recompute.none,
    flash_attention: bool = False,
    headroom: float = DEFAULT_HEADROOM,
    attention: act.Kernel | None = None,
    precision: act.Precision | None = None,
    optimizer: act.OptimizerImpl = act.OptimizerImpl.fused,
    loss: act.Loss = act.Loss.full,
) -> TrainingPlan:
    """Compute, time and memory per GPU of a run; ``tokens`` None means the compute-optimal count.

    The run fits when its peak — model states + activations + logits and loss at the start of
    backward, or the optimizer step's temporaries — stays within each GPU's memory less
    ``headroom``. ``attention`` (sdpa, eager, flash) plans transformers' modules on one GPU
    (llmcalc.formulas.activations.step_memory) at ``precision`` (default: fp32 weights under bf16 autocast)
    with the AdamW implementation ``optimizer``; without it, Megatron-LM's fused kernels and
    mixed-precision states (Korthikanti et al.; fused Adam: no temporaries).
    """
    if micro_batch < 1:
        raise ParameterError("{micro_batch} {value}: must be 1 or more", value=micro_batch)
    check_mfu(mfu)
    check_tp_heads(spec, par.tp)
    usable = usable_memory(accelerator.memory_bytes, headroom=headroom)
    spec.experts_per_tok()  # refuses a config whose experts per token are unset
    pc = count(spec)
    active = pc.active or 0
    optimal = compute_optimal_tokens(pc.total)
    tokens = optimal if tokens is None else tokens
    compute = training_flops(spec, tokens=tokens, ctx=ctx)
    s = spec.shape
    states = model_state_bytes(pc.total, par=par)
    activations = activation_bytes(
        layers=s.num_layers, seq=ctx, micro_batch=micro_batch, hidden=s.hidden_size,
        heads=s.num_heads, tp=par.tp, recompute=recompute, flash_attention=flash_attention,
    )
    logits = ceil_div(act.loss_bytes(tokens=ctx * micro_batch, vocab=s.vocab_size, loss=loss),
                      par.tp)
    temps = ceil_div(act.OPTIMIZER_TEMP_COPIES[optimizer] * 4 * pc.total, par.model_parallel) \
        if optimizer is act.OptimizerImpl.foreach else 0
    per_gpu = max(sum(states.values()) + activations + logits, sum(states.values()) + temps)
    moment = "start of backward"
    per_param = dict(ADAMW_BYTES)
    if attention is not None:
        if par.gpus != 1:
            raise ParameterError("{attention} {name}: the layer-kind plan is for one GPU; drop "
                                 "--gpus/--tp/--pp/--zero", name=attention.value)
        precision = precision or act.Precision(4, amp=True)
        step = act.step_memory(
            spec, batch=micro_batch, seq=ctx, precision=precision, kernel=attention,
            recompute_full=recompute is Recompute.full, optimizer=optimizer, loss=loss)
        w = precision.weight_bytes
        per_param = {"weights": w, "gradients": w, "optimizer/master_weights": 0,
                     "optimizer/momentum": w, "optimizer/variance": w}
        states = {"weights": step.weights, "gradients": step.gradients,
                  "optimizer/master_weights": 0, "optimizer/momentum": step.optimizer // 2,
                  "optimizer/variance": step.optimizer - step.optimizer // 2}
        activations, logits, temps, per_gpu = (step.activations, step.logits, step.temporaries,
                                               step.peak)
        if step.optimizer_step > step.start_of_backward:
            moment = "optimizer step"
    return TrainingPlan(
        params=pc.total,
        tokens=tokens,
        ctx=ctx,
        flops_per_token=compute.total // tokens,
        weight_flops=compute.weights,
        attention_flops=compute.attention,
        mixer_flops=compute.mixers,
        training_flops=compute.total,
        active_params=active,
        six_n_d=six_n_d(active, tokens),
        compute_optimal_tokens=optimal,
        accelerator=accelerator,
        mfu=mfu,
        time=compute_time(
            compute.total, gpus=par.gpus, peak_flops=accelerator.peak_flops, mfu=mfu
        ),
        par=par,
        micro_batch=micro_batch,
        recompute=recompute,
        flash_attention=flash_attention,
        states=states,
        activations=activations,
        memory_per_gpu=per_gpu,
        headroom=headroom,
        usable_memory=usable,
        fits=per_gpu <= usable,
        logits=logits,
        temporaries=temps,
        bytes_per_param=per_param,
        attention=attention,
        precision=precision if attention is not None else None,
        peak_moment=moment,
    )
