"""`llmcalc train --method lora|qlora|full` output for fine-tuning: memory per GPU, FLOPs, explain."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from llmcalc.model.spec import ModelSpec, context_notes
from llmcalc.planning.finetune import OPTIMIZER_BYTES, FinetuneFit, FinetunePlan
from llmcalc.planning.hardware import Accelerator
from llmcalc.render import (
    accelerator_line,
    figures_table,
    gib,
    heading,
    n,
    note_lines,
    short,
    verdict,
)
from llmcalc.units import DType

STATE_LABELS = {
    "weights": "weights (bf16)",
    "gradients": "gradients (bf16)",
    "optimizer/master_weights": "optimizer: fp32 master weights",
    "optimizer/momentum": "optimizer: momentum",
    "optimizer/variance": "optimizer: variance",
}


def _fmt(p: FinetunePlan) -> str:
    f = p.base_format
    return "" if f is None else f.value


def finetune_view(spec: ModelSpec, p: FinetunePlan, acc: Accelerator) -> RenderableType:
    head = heading(spec.name, f"{p.method.value} fine-tune · {n(p.params)} parameters, "
                   f"{n(p.trainable)} trainable · sequence length {n(p.ctx)} · "
                   f"{accelerator_line(acc, p.tp)}")
    mem = figures_table(f"memory per GPU (tp {p.tp}, optimizer {p.optimizer.value})", "",
                        "bytes/param", "per GPU")
    if p.base_format is not None:
        mem.add_row(f"frozen base ({_fmt(p)})", "", gib(p.frozen_bytes))
    per = OPTIMIZER_BYTES[p.optimizer]
    what = "trainable" if p.lora else "all"
    for key, b in p.states.items():
        mem.add_row(f"{STATE_LABELS[key]} ({what})", str(per[key]), gib(b))
    ck = "gradient checkpointing" if p.checkpointing else "no checkpointing"
    fa = ", FlashAttention" if p.flash_attention else ""
    mem.add_row(f"activations (micro-batch {p.micro_batch}, {ck}{fa})", "", gib(p.activations))
    mem.add_row("logits and loss (fp32 log-probabilities + 2 gradients)", "", gib(p.logits))
    mem.add_section()
    mem.add_row("total", "", gib(p.memory_per_gpu), style="bold")
    mem.add_row(f"usable after {p.headroom:.0%} headroom", "", gib(p.usable_memory))
    mem.add_row("", "", verdict(p.fits))
    comp = figures_table("compute", "", "value")
    base = "6N (trained)" if p.lora is None else "4N (frozen: no weight gradients)"
    comp.add_row(f"FLOPs per token: weights, base {base} + 6 × adapters",
                 n(p.weight_flops_per_token))
    comp.add_row(f"FLOPs per token: causal attention at {n(p.ctx)}",
                 n(p.attention_flops_per_token))
    comp.add_row("FLOPs per token", n(p.flops_per_token), style="bold")
    if p.training_flops is not None and p.tokens is not None:
        comp.add_row(f"FLOPs for {short(p.tokens)} tokens", f"{p.training_flops:.4e}")
    if p.gpu_hours is not None:
        comp.add_row(f"GPU-hours at MFU {p.mfu:.0%}", f"{p.gpu_hours:,.1f}")
    return Group(head, mem, comp, *note_lines((*context_notes(spec, ctx=p.ctx), *p.notes)))


def finetune_json(spec: ModelSpec, p: FinetunePlan, acc: Accelerator) -> dict[str, Any]:
    c = p.lora.config if p.lora else None
    return {
        "notes": [*context_notes(spec, ctx=p.ctx), *p.notes],  # past the window; the format's
        "model": spec.name,
        "method": p.method.value,
        "inputs": {
            "ctx": p.ctx, "micro_batch": p.micro_batch, "optimizer": p.optimizer.value,
            "checkpointing": p.checkpointing, "flash_attention": p.flash_attention, "tp": p.tp,
            "tokens": p.tokens, "headroom": p.headroom, "mfu": p.mfu,
            "base_format": None if p.base_format is None else p.base_format.value,
            "lora": None if c is None else {
                "r": c.r, "alpha": c.alpha, "targets": list(c.targets),
                "embeddings": c.embeddings, "experts": c.experts,
                "modules_to_save": list(c.modules_to_save), "dora": c.dora, "rslora": c.rslora,
            },
            "accelerator": {"name": acc.name, "memory_bytes": acc.memory_bytes,
                            "peak_flops": acc.peak_flops, "source": acc.source},
        },
        "params": p.params,
        "trainable": p.trainable,
        "memory_per_gpu": {"frozen_base": p.frozen_bytes, **p.states,
                           "activations": p.activations, "logits": p.logits},
        "memory_per_gpu_bytes": p.memory_per_gpu,
        "usable_memory_bytes": p.usable_memory,
        "fits": p.fits,
        "flops_per_token": {"weights": p.weight_flops_per_token,
                            "attention": p.attention_flops_per_token,
                            "total": p.flops_per_token},
        "training_flops": p.training_flops,
        "gpu_hours": p.gpu_hours,
    }


def finetune_explain(spec: ModelSpec, p: FinetunePlan) -> list[str]:
    s = spec.shape
    lines = []
    if p.base_format is not None:
        kind = "bf16" if isinstance(p.base_format, DType) else (
            "NF4 + absmax + double quantization (Dettmers et al. 2023 §3)")
        lines.append(f"frozen base = {n(p.params)} parameters in {kind} / tp {p.tp} = "
                     f"{n(p.frozen_bytes)} bytes")
    per = OPTIMIZER_BYTES[p.optimizer]
    lines.append(
        f"states = {n(p.trainable)} trainable / tp {p.tp} × ({' + '.join(str(b) for b in per.values())}"
        f" = {sum(per.values())} B) = {n(p.states_total)} bytes (Rajbhandari et al. 2020 §3.1"
        + ("; 8-bit Adam states, Dettmers et al. 2022" if sum(per.values()) < 16 else "") + ")"
    )
    layer = "s·b·h·34" if p.flash_attention else "s·b·h·(34 + 5·a·s/h)"
    per_layer = f"L × 2·s·b·h + 1 × {layer}" if p.checkpointing else f"L × {layer}"
    lines.append(
        f"activations = ({per_layer}) / t with s {n(p.ctx)}, b {p.micro_batch}, "
        f"h {n(s.hidden_size)}, a {s.num_heads}, L {s.num_layers}, t {p.tp} = "
        f"{n(p.activations)} bytes (Korthikanti et al. 2022; checkpointing keeps each layer's "
        "input and recomputes one layer at a time)"
    )
    lines.append(f"logits/loss = s·b·V × (4 + 4 + 4) / t = {n(p.ctx)}·{p.micro_batch}·"
                 f"{n(s.vocab_size)} × 12 / {p.tp} = {n(p.logits)} bytes")
    lines.append(f"total = {n(p.frozen_bytes)} + {n(p.states_total)} + {n(p.activations)} + "
                 f"{n(p.logits)} = {n(p.memory_per_gpu)} {'≤' if p.fits else '>'} usable "
                 f"{n(p.usable_memory)}")
    passes = "3" if p.lora is None else "2"
    extra = " + 1 recomputed forward" if p.checkpointing else ""
    adapters = p.lora.trainable if p.lora else 0
    lines.append(
        f"FLOPs per token = ({passes}{extra}) × 2N_base + (3{extra}) × 2 × {n(adapters)} adapters"
        f" + (3{extra}) × attention forward = {n(p.weight_flops_per_token)} + "
        f"{n(p.attention_flops_per_token)} = {n(p.flops_per_token)} "
        "(backward = 2 × forward, half of it weight gradients: Kaplan et al. 2020 §2.1)"
    )
    if p.gpu_hours is not None and p.training_flops is not None:
        lines.append(f"GPU-hours = {p.training_flops:.4e} / (peak × MFU {p.mfu:g}) / 3600 = "
                     f"{p.gpu_hours:,.2f}")
    return lines


def fit_finetune_view(spec: ModelSpec, f: FinetuneFit, acc: Accelerator) -> RenderableType:
    if f.plan is None:
        return Group(Text(f"{spec.name}: nothing fits on {acc.name} (not one "
                          f"{'token' if f.solve_for == 'ctx' else 'sequence'})", style="bold red"))
    p = f.plan
    what = (f"largest context at micro-batch {p.micro_batch}: {n(p.ctx)} tokens"
            if f.solve_for == "ctx" else f"largest micro-batch at {n(p.ctx)} tokens: {p.micro_batch}")
    capped = " (the model's max_position_embeddings)" if f.solve_for == "ctx" and p.ctx == f.limit else ""
    return Group(Text(what + capped, style="bold"), finetune_view(spec, p, acc))


def fit_finetune_json(spec: ModelSpec, f: FinetuneFit, acc: Accelerator) -> dict[str, Any]:
    return {
        "model": spec.name,
        "solve_for": f.solve_for,
        "limit": f.limit,
        "ctx": f.plan.ctx if f.plan else None,
        "micro_batch": f.plan.micro_batch if f.plan else None,
        "plan": finetune_json(spec, f.plan, acc) if f.plan else None,
    }
