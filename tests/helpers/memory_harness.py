"""Measure what PyTorch really allocates for a training step or a prefill + decode of a small
transformers model: the peak and its parts, for comparison with llmcalc's memory plans.

Used by bench/memory_vs_measured.py (the whole grid) and tests/test_memory_measured.py (a few
cases). On the CPU the peak comes from ``torch.distributed._tools.mem_tracker.MemTracker`` (a
dispatch mode that sees every storage created and freed, sorted into parameters, gradients,
optimizer states, activations and temporaries); ``torch.profiler`` with ``profile_memory=True``
measures the same allocations independently (its ``[memory]`` events, summed in time order). On a
GPU the allocator's own ``torch.cuda.max_memory_allocated`` is read beside them.

A training step is measured as the second of two (forward with labels, backward, AdamW step,
``zero_grad(set_to_none=True)``): the first creates the optimizer states, as in a long run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

# Small models the grid is built from: the three shapes, shrunk to run on two shared CPU
# cores (the memory model is per token and per layer, so the terms are the same at any width).
GPT2 = {"model_type": "gpt2", "n_embd": 256, "n_layer": 4, "n_head": 4, "vocab_size": 8192,
        "n_positions": 4608, "attn_pdrop": 0.0, "embd_pdrop": 0.0,
        "resid_pdrop": 0.0}
LLAMA = {"model_type": "llama", "hidden_size": 384, "intermediate_size": 1152,
         "num_hidden_layers": 4, "num_attention_heads": 6, "num_key_value_heads": 2,
         "vocab_size": 8192, "max_position_embeddings": 4096, "tie_word_embeddings": False}
MIXTRAL = {"model_type": "mixtral", "hidden_size": 256, "intermediate_size": 512,
           "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
           "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 8192,
           "max_position_embeddings": 4096, "tie_word_embeddings": False}
MODELS: dict[str, dict[str, Any]] = {"gpt2": GPT2, "llama": LLAMA, "mixtral": MIXTRAL}


@dataclass(frozen=True)
class Case:
    """One measured setup. ``mode``: "train" (one optimizer step) or "infer" (prefill + decode)."""

    model: str  # a MODELS key
    mode: str
    batch: int
    seq: int  # training sequence length, or the prompt length
    dtype: str = "fp32"  # the weights' dtype
    amp: bool = False  # bf16 autocast around the forward pass (fp32 weights)
    attention: str = "sdpa"  # transformers' attn_implementation: sdpa or eager
    recompute: str = "none"  # none or full (gradient checkpointing)
    lora_r: int = 0  # LoRA adapters on q,k,v,o (peft), the base frozen
    optimizer: str = "foreach"  # AdamW implementation: loop, foreach or fused
    new_tokens: int = 4  # decode steps after the prefill (infer)

    @property
    def name(self) -> str:
        bits = [self.model, self.mode, f"b{self.batch}", f"s{self.seq}", self.dtype,
                self.attention]
        if self.amp:
            bits.append("amp")
        if self.mode == "train":
            bits += [f"rc-{self.recompute}", self.optimizer]
            if self.lora_r:
                bits.append(f"lora{self.lora_r}")
        return " ".join(bits)


@dataclass
class Measured:
    """The peak (bytes) and MemTracker's categories at that moment; phases: the tracker's total
    at the end of each phase; profiler: the profiler's own peak, when asked for; cuda: the CUDA
    allocator's peak, on a GPU."""

    peak: int
    parts: dict[str, int]
    phases: dict[str, int] = field(default_factory=dict)
    profiler: int | None = None
    cuda: int | None = None


def build(case: Case) -> Any:
    """The transformers model of ``case`` (random weights, seed 0), in training or eval mode."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    fields = dict(MODELS[case.model])
    cfg = AutoConfig.for_model(fields.pop("model_type"), **fields)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[case.dtype]
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=case.attention,
                                             dtype=dtype)
    if case.lora_r:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(
            r=case.lora_r, lora_alpha=2 * case.lora_r, lora_dropout=0.0,
            target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
    if case.mode == "train":
        model.train()
        if case.recompute == "full":
            model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False})
            if case.lora_r:
                model.enable_input_require_grads()
    else:
        model.eval()
    return model.to(device())


def device() -> Any:
    import torch

    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _tokens(case: Case, n: int) -> Any:
    import torch

    g = torch.Generator().manual_seed(1)
    return torch.randint(0, MODELS[case.model]["vocab_size"], (case.batch, n), generator=g).to(
        device())


def _autocast(case: Case) -> Any:
    import torch

    if not case.amp:
        return contextlib.nullcontext()
    return torch.autocast(device().type, dtype=torch.bfloat16)


def _optimizer(case: Case, model: Any) -> Any:
    import torch

    kind = {"loop": {"foreach": False}, "foreach": {"foreach": True},
            "fused": {"fused": True}}[case.optimizer]
    return torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4, **kind)


def _train_step(case: Case, model: Any, opt: Any, ids: Any, phases: dict[str, int] | None = None,
                tracker: Any = None) -> None:
    def mark(name: str) -> None:
        if phases is not None and tracker is not None:
            phases[name] = _total(tracker.get_tracker_snapshot("current"))

    with _autocast(case):
        loss = model(input_ids=ids, labels=ids).loss
    mark("after forward")
    loss.backward()
    del loss
    mark("after backward")
    opt.step()
    mark("after optimizer step")
    opt.zero_grad(set_to_none=True)


def _total(snap: dict[Any, dict[str, int]]) -> int:
    return sum(dev.get("Total", 0) for dev in snap.values())


def _parts(snap: dict[Any, dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for dev in snap.values():
        for k, v in dev.items():
            key = getattr(k, "value", str(k))
            out[key] = out.get(key, 0) + v
    return out


@contextlib.contextmanager
def _cuda_peak(out: dict[str, int]) -> Iterator[None]:
    import torch

    if not torch.cuda.is_available():
        yield
        return
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    yield
    torch.cuda.synchronize()
    out["cuda"] = torch.cuda.max_memory_allocated()


def profiler_peak(run: Any) -> int:
    """The peak of the bytes held over ``run()``, from the profiler's allocation events alone
    (allocations and frees in time order; what was held before ``run`` is not counted)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        run()
    held = peak = 0
    events = sorted((e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"),
                    key=lambda e: e.start_ns())
    for e in events:
        held += e.nbytes()
        peak = max(peak, held)
    return peak


def _held(model: Any, opt: Any = None) -> int:
    """Bytes of the model's parameters and buffers and the optimizer's states, by storage."""
    import torch

    seen: dict[int, int] = {}

    def add(t: Any) -> None:
        if isinstance(t, torch.Tensor):
            st = t.untyped_storage()
            seen[st.data_ptr()] = st.nbytes()

    for t in [*model.parameters(), *model.buffers()]:
        add(t)
    if opt is not None:
        for state in opt.state.values():
            for t in state.values():
                add(t)
    return sum(seen.values())


def measure(case: Case, *, profiler: bool = False) -> Measured:
    """Build the model of ``case`` and measure its training step or prefill + decode."""
    return measure_training(case, profiler=profiler) if case.mode == "train" else \
        measure_inference(case, profiler=profiler)


class _NoHook:
    """Stands in for the gradient hooks MemTracker would register on a frozen parameter (torch
    refuses a hook on a tensor that needs no gradient: LoRA's frozen base)."""

    def remove(self) -> None:
        pass


def measure_training(case: Case, *, profiler: bool = False) -> Measured:
    from torch.distributed._tools.mem_tracker import MemTracker

    model = build(case)
    opt = _optimizer(case, model)
    ids = _tokens(case, case.seq)
    _train_step(case, model, opt, ids)  # creates the optimizer states
    tracker = MemTracker()
    for p in model.parameters():
        if not p.requires_grad:  # hook only the trainable parameters
            tracker._param_to_grad_hook_handles[p] = (_NoHook(), _NoHook())
    tracker.track_external(model, opt, ids)
    phases: dict[str, int] = {}
    cuda: dict[str, int] = {}
    with _cuda_peak(cuda), tracker:
        phases["before"] = _total(tracker.get_tracker_snapshot("current"))
        _train_step(case, model, opt, ids, phases, tracker)
    snap = tracker.get_tracker_snapshot("peak")
    out = Measured(peak=_total(snap), parts=_parts(snap), phases=phases, cuda=cuda.get("cuda"))
    if profiler:
        base = _held(model, opt) + ids.untyped_storage().nbytes()
        out.profiler = base + profiler_peak(lambda: _train_step(case, model, opt, ids))
    return out


def _generate(case: Case, model: Any, ids: Any, tracker: Any = None,
              phases: dict[str, int] | None = None) -> None:
    """Prefill the prompt (logits of its last token only, as generate() computes them), then
    decode ``new_tokens`` tokens greedily, one at a time, into transformers' dynamic cache."""
    import torch

    with torch.no_grad():
        out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
        cache = out.past_key_values
        nxt = out.logits[:, -1:].argmax(-1)
        del out
        if phases is not None and tracker is not None:
            phases["after prefill"] = _total(tracker.get_tracker_snapshot("current"))
        for _ in range(case.new_tokens):
            if tracker is not None:
                tracker.reset_mod_stats()
            out = model(input_ids=nxt, past_key_values=cache, use_cache=True, logits_to_keep=1)
            nxt = out.logits[:, -1:].argmax(-1)
            del out
        if phases is not None and tracker is not None:
            phases["after decode"] = _total(tracker.get_tracker_snapshot("current"))
        del cache


def measure_inference(case: Case, *, profiler: bool = False) -> Measured:
    from torch.distributed._tools.mem_tracker import MemTracker

    model = build(case)
    ids = _tokens(case, case.seq)
    tracker = MemTracker()
    tracker.track_external(model, ids)
    phases: dict[str, int] = {}
    cuda: dict[str, int] = {}
    with _cuda_peak(cuda), tracker:
        phases["before"] = _total(tracker.get_tracker_snapshot("current"))
        _generate(case, model, ids, tracker, phases)
    snap = tracker.get_tracker_snapshot("peak")
    out = Measured(peak=_total(snap), parts=_parts(snap), phases=phases, cuda=cuda.get("cuda"))
    if profiler:
        base = _held(model) + ids.untyped_storage().nbytes()
        out.profiler = base + profiler_peak(lambda: _generate(case, model, ids))
    return out


# ---- llmcalc's estimate of the same case ----------------------------------------------------------


def estimate(case: Case) -> dict[str, int]:
    """llmcalc's figures for ``case``: the peak and its parts (bytes), from the formulas alone."""
    from llmcalc.formulas import activations as A
    from llmcalc.formulas import memory
    from llmcalc.formulas.lora import LoraConfig, lora_count
    from llmcalc.inputs.config import spec_from_dict
    from llmcalc.units import DType

    spec = spec_from_dict(MODELS[case.model])
    width = 4 if case.dtype == "fp32" else 2
    if case.mode == "infer":
        dt = DType(case.dtype)
        w = memory.weight_bytes(spec, dtype=dt)
        kv = memory.kv_cache_bytes(spec, batch=case.batch, ctx=case.seq + case.new_tokens, dtype=dt)
        t = A.prefill_bytes(spec, batch=case.batch, tokens=case.seq, act_bytes=width,
                            kernel=A.Kernel(case.attention))
        return {"peak": w + kv + t, "weights": w, "kv cache": kv, "prefill": t,
                "held": w, "transient": kv + t}
    lora = {}
    if case.lora_r:
        lc = lora_count(spec, LoraConfig(r=case.lora_r, alpha=2 * case.lora_r))
        lora = {"lora_params": lc.trainable, "lora_r": case.lora_r,
                "lora_adapters": sum(a.modules for a in lc.adapters)}
    m = A.step_memory(spec, batch=case.batch, seq=case.seq,
                      precision=A.Precision(width, case.amp, cuda=device().type == "cuda"),
                      kernel=A.Kernel(case.attention),
                      recompute_full=case.recompute == "full",
                      optimizer=A.OptimizerImpl(case.optimizer), **lora)
    at_step = m.optimizer_step > m.start_of_backward
    held = m.weights + m.optimizer + (m.temporaries if at_step else 0)
    return {"peak": m.peak, "weights": m.weights, "optimizer": m.optimizer,
            "gradients": m.gradients, "activations": m.activations, "logits/loss": m.logits,
            "temporaries": m.temporaries, "held": held, "transient": m.peak - held}


# MemTracker's categories at the peak, grouped as the estimate's "held" (weights, optimizer states
# and, during step(), the optimizer's intermediates, which it files as optimizer states) and
# "transient" (activations, logits/loss, backward temporaries, gradients).
HELD = ("Parameter", "Buffer", "Optstate", "Other")
TRANSIENT = ("Activation", "Temp", "Gradient")


def measured_split(m: Measured) -> dict[str, int]:
    return {"held": sum(m.parts.get(k, 0) for k in HELD),
            "transient": sum(m.parts.get(k, 0) for k in TRANSIENT)}


def grid() -> list[Case]:
    """The measured grid: dense (GPT-2, GELU, MHA), GQA + SwiGLU (Llama), MoE (Mixtral); fp32, bf16
    and bf16 autocast; recompute none/full; eager/SDPA; LoRA; optimizers; inference at batch 1–4
    and prompts up to 4k."""
    cases: list[Case] = []
    for model in MODELS:
        cases += [
            Case(model, "train", 2, 512),
            Case(model, "train", 2, 512, amp=True),
            Case(model, "train", 2, 512, attention="eager"),
            Case(model, "train", 2, 512, recompute="full"),
            Case(model, "train", 1, 1024, dtype="bf16"),
            Case(model, "infer", 1, 4096),
            Case(model, "infer", 4, 1024),
            Case(model, "infer", 2, 2048, attention="eager"),
        ]
    cases += [
        Case("llama", "train", 1, 1024, amp=True, recompute="full"),
        Case("llama", "train", 2, 512, attention="eager", amp=True),
        Case("llama", "train", 1, 512, optimizer="loop"),
        Case("llama", "train", 1, 512, optimizer="fused"),
        Case("llama", "train", 2, 512, lora_r=16),
        Case("llama", "train", 2, 512, lora_r=16, recompute="full"),
        Case("mixtral", "train", 2, 512, lora_r=8),
        Case("llama", "train", 2, 512, dtype="bf16", lora_r=16, recompute="full"),
        Case("llama", "infer", 1, 4096, attention="eager"),
        Case("llama", "infer", 3, 1024, dtype="bf16"),
        Case("gpt2", "infer", 1, 512),
    ]
    return cases
