"""`llmcalc train` output: compute and time, memory per GPU with its breakdown, the verdict."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from llmcalc.model.spec import ModelSpec, context_notes
from llmcalc.planning.training import (
    CHINCHILLA_TOKENS_PER_PARAM,
    ZERO_PARTITIONED,
    Recompute,
    TrainingPlan,
)
from llmcalc.render import (
    accelerator_line,
    figures_table,
    gib,
    heading,
    n,
    note_lines,
    sci,
    short,
    verdict,
)
from llmcalc.render.grid import Col, Fig, Grid

STATE_LABELS = {
    "weights": "weights (bf16)",
    "gradients": "gradients (bf16)",
    "optimizer/master_weights": "optimizer: fp32 master weights",
    "optimizer/momentum": "optimizer: fp32 momentum",
    "optimizer/variance": "optimizer: fp32 variance",
}
# the layer-kind plan (--attention): states in the weights' own dtype (torch.optim.AdamW)
STATE_NAMES = {"weights": "weights", "gradients": "gradients",
               "optimizer/master_weights": "optimizer: master weights",
               "optimizer/momentum": "optimizer: momentum", "optimizer/variance": "optimizer: variance"}
WIDTH_NAMES = {4: "fp32", 2: "16-bit"}


def state_label(p: TrainingPlan, key: str) -> str:
    if p.attention is None:
        return STATE_LABELS[key]
    return f"{STATE_NAMES[key]} ({WIDTH_NAMES.get(p.bytes_per_param[key], 'none')})"


RECOMPUTE_LABELS = {
    Recompute.none: "no recomputation",
    Recompute.selective: "selective recomputation",
    Recompute.full: "full recomputation",
}


def flops_sci(value: int) -> str:
    """A FLOP total as it is quoted: 3.78e25 FLOPs (SI prefixes past P mean nothing to readers)."""
    return f"{sci(value)} FLOPs"


def train_view(spec: ModelSpec, plan: TrainingPlan) -> RenderableType:
    p = plan
    head = heading(spec.name, f"{n(p.params)} parameters · training sequence length "
                   f"{n(p.ctx)} (--ctx) · {accelerator_line(p.accelerator, p.par.gpus)}")

    compute = figures_table("compute", "", "value", "")
    compute.add_row("tokens", n(p.tokens), short(p.tokens))
    compute.add_row(
        f"compute-optimal tokens ({CHINCHILLA_TOKENS_PER_PARAM} per parameter, Hoffmann 2022)",
        n(p.compute_optimal_tokens), short(p.compute_optimal_tokens),
    )
    compute.add_section()
    compute.add_row("FLOPs: weights (3 × forward)", f"{p.weight_flops:.4e}", flops_sci(p.weight_flops))
    compute.add_row(
        f"FLOPs: causal attention at {n(p.ctx)}", f"{p.attention_flops:.4e}", flops_sci(p.attention_flops)
    )
    if p.mixer_flops:
        compute.add_row("FLOPs: SSM convolution + state readout", f"{p.mixer_flops:.4e}",
                        flops_sci(p.mixer_flops))
    compute.add_row("training FLOPs", f"{p.training_flops:.4e}", flops_sci(p.training_flops), style="bold")
    compute.add_row(f"6·N·D (rule of thumb, N = {short(p.active_params)} active parameters)",
                    f"{p.six_n_d:.4e}", flops_sci(p.six_n_d))
    compute.add_section()
    compute.add_row(f"GPU-hours at MFU {p.mfu:.0%}", f"{p.time.gpu_hours:,.0f}", "")
    compute.add_row(
        f"wall-clock on {p.par.gpus} GPUs", f"{p.time.wall_days:,.1f} days", "", style="bold"
    )

    par = p.par
    parts = ", ".join(sorted(ZERO_PARTITIONED[par.zero])) or "nothing"
    mem = figures_table(f"memory per GPU (tp {par.tp} × pp {par.pp} × dp {par.dp}; "
                        f"ZeRO-{par.zero} shards {parts} over dp)", "", "bytes/param", "per GPU")
    for key, nbytes in p.states.items():
        mem.add_row(state_label(p, key), str(p.bytes_per_param[key]), gib(nbytes))
    mem.add_row("model states", str(sum(p.bytes_per_param.values())), gib(p.states_total),
                style="bold")
    flash = ", FlashAttention" if p.flash_attention else ""
    kernel = f", {p.attention.value} attention" if p.attention is not None else flash
    mem.add_row(
        f"activations (micro-batch {p.micro_batch}, {RECOMPUTE_LABELS[p.recompute]}{kernel})",
        "", gib(p.activations),
    )
    mem.add_row("logits and loss (start of backward)", "", gib(p.logits))
    if p.temporaries:
        mem.add_row("optimizer step temporaries", "", gib(p.temporaries))
    mem.add_section()
    mem.add_row(f"peak ({p.peak_moment})", "", gib(p.memory_per_gpu), style="bold")
    mem.add_row(f"{p.accelerator.name} memory", "", gib(p.accelerator.memory_bytes))
    mem.add_row(f"usable after {p.headroom:.0%} headroom for the runtime", "",
                gib(p.usable_memory))
    mem.add_row("", "", verdict(p.fits))
    notes = [
        Text(f"accelerator: {p.accelerator.source}", style="dim"),
        Text(
            "activations: Korthikanti et al. 2022, s·b·h·(34 + 5·a·s/h)/t per layer (sequence "
            "parallel with tp), all L layers on the first pipeline stage (1F1B)"
            if p.attention is None else
            "activations: the tensors transformers' layers keep, by layer kind, measured against "
            "PyTorch's allocator (docs/memory-model.md); gradients are held at the optimizer step",
            style="dim",
        ),
    ]
    return Group(head, compute, mem, *notes, *note_lines(context_notes(spec, ctx=p.ctx)))


def train_grid(spec: ModelSpec, plan: TrainingPlan) -> Grid:
    """Compute, time and memory per GPU as one figure / value table."""
    p = plan
    g = Grid(f"{spec.name}: training on {accelerator_line(p.accelerator, p.par.gpus)}",
             [Col("figure"), Col("value", right=True)])
    g.add("parameters", p.params)
    g.add("active parameters", p.active_params)
    g.add("tokens", p.tokens)
    g.add("training sequence length", p.ctx)
    g.add("compute-optimal tokens (20 per parameter)", p.compute_optimal_tokens)
    g.add("training FLOPs", Fig(flops_sci(p.training_flops), p.training_flops), bold=True,
          section=True)
    g.add("6·N·D", Fig(flops_sci(p.six_n_d), p.six_n_d))
    g.add(f"GPU-hours at MFU {p.mfu:.0%}", Fig(f"{p.time.gpu_hours:,.0f}",
                                               round(p.time.gpu_hours, 1)))
    g.add(f"wall-clock days on {p.par.gpus} GPUs", Fig(f"{p.time.wall_days:,.1f}",
                                                      round(p.time.wall_days, 3)))
    par = p.par
    g.add(f"model states per GPU (tp {par.tp} × pp {par.pp} × dp {par.dp}, ZeRO-{par.zero})",
          Fig(gib(p.states_total), p.states_total), section=True)
    g.add("activations per GPU", Fig(gib(p.activations), p.activations))
    g.add("logits and loss per GPU", Fig(gib(p.logits), p.logits))
    g.add("memory per GPU", Fig(gib(p.memory_per_gpu), p.memory_per_gpu), bold=True)
    g.add(f"usable after {p.headroom:.0%} headroom", Fig(gib(p.usable_memory), p.usable_memory))
    g.add("fits", p.fits, bold=True)
    return g


def explain_lines(spec: ModelSpec, plan: TrainingPlan) -> list[str]:
    """Each formula with this run's numbers put in."""
    p, s = plan, spec.shape
    par = p.par
    lines = [
        f"training FLOPs = 3 × (D · W + D / ctx · A_causal(ctx) + D · S) = {p.weight_flops:.4e} + "
        f"{p.attention_flops:.4e} + {p.mixer_flops:.4e} = {p.training_flops:.4e}",
        f"  W = weight FLOPs per token (2 × matrix elements); A_causal = attention of one sequence "
        f"of {n(p.ctx)} tokens over the ctx·(ctx+1)/2 pairs a causal mask keeps; S = SSM "
        f"convolution + state readout per token (0 without SSM layers); on average {n(p.flops_per_token)} per token",
        f"6·N·D = 6 × N_active × D = 6 × {n(p.active_params)} × {n(p.tokens)} = {p.six_n_d:.4e}",
        f"compute-optimal tokens = {CHINCHILLA_TOKENS_PER_PARAM} × N = "
        f"{CHINCHILLA_TOKENS_PER_PARAM} × {n(p.params)} = {n(p.compute_optimal_tokens)}",
        f"GPU-hours = FLOPs / (peak × MFU) / 3600 = {p.training_flops:.4e} / "
        f"({p.accelerator.peak_flops:.4e} × {p.mfu:g}) / 3600 = {p.time.gpu_hours:,.0f}",
        f"days = GPU-hours / GPUs / 24 = {p.time.gpu_hours:,.0f} / {par.gpus} / 24 "
        f"= {p.time.wall_days:,.2f}",
        f"model states per GPU = N / (tp·pp) × bytes/param, ZeRO-{par.zero} parts / dp: "
        f"{n(p.params)} / {par.model_parallel} × {sum(p.bytes_per_param.values())} B → "
        f"{n(p.states_total)} B",
    ]
    for key, nbytes in p.states.items():
        sharded = key.split("/")[0] in ZERO_PARTITIONED[par.zero]
        div = f" / {par.dp}" if sharded else ""
        lines.append(f"  {key}: {p.bytes_per_param[key]} B × N / {par.model_parallel}{div} = "
                     f"{n(nbytes)}")
    a, h, sq, b = s.num_heads, s.hidden_size, p.ctx, p.micro_batch
    if p.attention is not None:
        lines.append(
            f"activations = s·b × Σ over layers of what each keeps per token (norms, "
            f"{p.attention.value} attention, MLP; docs/memory-model.md), "
            f"{RECOMPUTE_LABELS[p.recompute]} = {n(sq)}·{b} tokens → {n(p.activations)}"
        )
    else:
        lines.append(
            f"activations = L × s·b·h·(34 + 5·a·s/h) / t = {s.num_layers} × {n(sq)}·{b}·{n(h)}·"
            f"(34 + 5·{a}·{n(sq)}/{n(h)}) / {par.tp} without recomputation; this run "
            f"({RECOMPUTE_LABELS[p.recompute]}{', FlashAttention' if p.flash_attention else ''}) "
            f"= {n(p.activations)}"
        )
    lines.append(f"logits/loss = 12 B × s·b·V / t = 12 × {n(sq)}·{b}·{n(s.vocab_size)} / "
                 f"{par.tp} = {n(p.logits)}")
    lines.append(
        f"usable per GPU = memory × (1 − headroom) = {n(p.accelerator.memory_bytes)} × "
        f"(1 − {p.headroom:g}) = {n(p.usable_memory)}"
    )
    lines.append(
        (f"total per GPU = {n(p.states_total)} + {n(p.activations)} + {n(p.logits)} = "
         if p.attention is None and p.peak_moment == "start of backward" else
         f"peak per GPU ({p.peak_moment}) = ") + f"{n(p.memory_per_gpu)} "
        f"{'≤' if p.fits else '>'} {n(p.usable_memory)}: "
        f"{'fits' if p.fits else 'does not fit'}"
    )
    return lines


def train_json(spec: ModelSpec, plan: TrainingPlan) -> dict[str, Any]:
    p = plan
    acc = p.accelerator
    return {
        "notes": list(context_notes(spec, ctx=p.ctx)),  # a sequence past the model's window
        "model": spec.name,
        "params": p.params,
        "active_params": p.active_params,
        "tokens": p.tokens,
        "ctx": p.ctx,
        "training_flops": p.training_flops,
        "training_flops_breakdown": {"weights": p.weight_flops, "attention": p.attention_flops,
                                     "mixers": p.mixer_flops},
        "flops_per_token": p.flops_per_token,
        "six_n_d": p.six_n_d,
        "compute_optimal_tokens": p.compute_optimal_tokens,
        "mfu": p.mfu,
        "gpu_hours": p.time.gpu_hours,
        "wall_clock_days": p.time.wall_days,
        "accelerator": {
            "name": acc.name,
            "memory_bytes": acc.memory_bytes,
            "peak_flops": acc.peak_flops,
            "source": acc.source,
        },
        "parallelism": {
            "gpus": p.par.gpus, "tp": p.par.tp, "pp": p.par.pp, "dp": p.par.dp, "zero": p.par.zero,
        },
        "bytes_per_param": dict(p.bytes_per_param),
        "micro_batch": p.micro_batch,
        "recompute": p.recompute.value,
        "flash_attention": p.flash_attention,
        "memory_per_gpu": {**p.states, "activations": p.activations, "logits/loss": p.logits,
                           "optimizer/temporaries": p.temporaries},
        "memory_per_gpu_bytes": p.memory_per_gpu,
        "peak_moment": p.peak_moment,
        "attention": p.attention.value if p.attention is not None else None,
        "gpu_memory_bytes": acc.memory_bytes,
        "headroom": p.headroom,
        "usable_memory_bytes": p.usable_memory,
        "fits": p.fits,
    }
