"""`fit --engine vllm|sglang|trtllm`: the engine's KV budget as its start-up log would show it,
term by term, as a table or JSON (llmcalc.planning.engines)."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text

from llmcalc.model.spec import ModelSpec
from llmcalc.planning.engines.budget import ENGINE_NAMES, EngineBudget
from llmcalc.planning.hardware import Accelerator
from llmcalc.render import figures_table, gib, heading, n

TERM_LABELS = {
    "weights": "weights per GPU",
    "activation_peak": "activation peak (profiling run)",
    "non_torch": "non-torch memory (cuBLAS, NCCL, all-reduce)",
    "cuda_graphs": "CUDA graphs",
    "mamba_cache": "Mamba states (V0: max_num_seqs of them)",
    "startup": "start-up (CUDA context, NCCL)",
    "reserved": "reserved: 1 − mem_fraction_static",
    "context": "CUDA context, runtime (NCCL)",
    "kept_free": "kept free: 1 − free_gpu_memory_fraction",
    "mamba_state": "recurrent state pool (max_mamba_cache_size)",
    "load_extra": "loading's other allocations",
    "execution_context": "execution context (the engine's activations)",
    "runtime_buffers": "runtime buffers (logits, output ids)",
    "decoder": "decoder (sampling buffers)",
}
USABLE_LABELS = {"vllm": "total × gpu_memory_utilization", "sglang": "total",
                 "trtllm": "total"}


def engine_json(spec: ModelSpec, b: EngineBudget, *, accelerator: Accelerator) -> dict[str, Any]:
    """Top level: kv_cache_bytes (per GPU), kv_cache_tokens, max_concurrency, and each term of
    the budget under its own key (``<term>_bytes``)."""
    out: dict[str, Any] = {
        "model": spec.name, "engine": b.engine, "engine_version": b.version,
        "gpu": accelerator.name, "cuda_memory_bytes": b.cuda_memory_bytes,
        "usable_bytes": b.usable_bytes,
    }
    out.update({f"{name}_bytes": value for name, value in b.terms.items()})
    out.update({
        "kv_cache_bytes": b.kv_cache_bytes, "kv_cache_from_log": b.from_log,
        "kv_bytes_per_token": b.bytes_per_token, "block_tokens": b.block_tokens,
        "kv_cache_tokens": b.kv_cache_tokens, "max_model_len": b.max_model_len,
        "max_concurrency": round(b.max_concurrency, 4), "settings": b.settings,
        "command": b.command, "starts": b.refusal is None,
    })
    if b.refusal is not None:
        out["refusal"] = b.refusal
    return out


def engine_view(spec: ModelSpec, b: EngineBudget, *, accelerator: Accelerator) -> Group:
    name = ENGINE_NAMES[b.engine]
    settings = ", ".join(f"{k} {v}" for k, v in b.settings.items())
    t = figures_table(f"{name} {b.version} on one {accelerator.name}", "", "per GPU")
    t.add_row("memory CUDA reports", gib(b.cuda_memory_bytes))
    if b.usable_bytes != b.cuda_memory_bytes:
        t.add_row(USABLE_LABELS[b.engine], gib(b.usable_bytes))
    for term, value in b.terms.items():
        t.add_row(f"− {TERM_LABELS.get(term, term)}", gib(value))
    t.add_row(Text("KV cache" + (" (from --kv-memory)" if b.from_log else ""), style="bold"),
              Text(gib(b.kv_cache_bytes), style="bold"))
    t.add_row("KV bytes per token", n(b.bytes_per_token))
    t.add_row(f"KV cache tokens ({b.tokens_rule or f'blocks of {b.block_tokens}'})",
              n(b.kv_cache_tokens))
    t.add_row(f"max concurrency at {n(b.max_model_len)} tokens", f"{b.max_concurrency:.2f}x")
    lines: list[Text | Any] = [heading(spec.name, settings), t]
    if b.refusal is not None:
        lines.append(Text(f"{name} would refuse to start: {b.refusal}", style="bold red"))
    lines.append(Text(b.command))
    return Group(*lines)
