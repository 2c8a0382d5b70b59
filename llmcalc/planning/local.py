"""Running a model locally, as llama.cpp does: what fits a machine, and layers offloaded to RAM.

Pure functions; nothing here prints.

- **What fits** (``fit --gpu NAME`` without a model): for each model, the first weight format of
  :data:`LADDER` (its own stored format first, then llama.cpp's usual quantizations, most bits
  first) whose weights and a KV cache of ``min_ctx`` tokens at batch 1 fit the card's memory less
  the headroom; then the largest context at batch 1 in that format and the decode bound at
  ``min_ctx`` (llmcalc.planning.serving: every step reads every weight and the whole cache once).
- **Offload** (llama.cpp's ``-ngl N``), by the engine's rule (llama-cpp-python 0.3.36's
  vendor/llama.cpp, src/llama-model.cpp: load_tensors, ``i_gpu_start = max(n_layer + 1 − N, 0)``):
  the output layer counts as one of the N and goes to the GPU first, then the last N − 1 layers;
  the rest — and the token embeddings, which llama.cpp keeps in system memory — on the CPU. Each
  layer's KV cache lives where the layer runs. A decode step reads the GPU's share at the GPU's bandwidth and the CPU's at
  the system memory's: step ≥ GPU bytes read / GPU bandwidth + CPU bytes read / RAM bandwidth,
  where a layer's bytes read are a token's (``step_weight_bytes``): of its routed experts the k of E
  one token reaches, of the token embeddings one row, of a multimodal checkpoint's tower none
  (llama.cpp keeps it in its own mmproj file). Every byte held is not a byte read: a bound from the
  bytes held would be slower than the engine (Qwen3.6-35B-A3B's 256 experts, 8 a token).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llmcalc.errors import LLMCalcError, ParameterError
from llmcalc.formulas import memory
from llmcalc.formulas.quant import (
    FORMATS,
    StoredFormat,
    WeightFormat,
    from_config,
    gathered_row_bytes,
    is_routed_expert,
    kv_dtype_for,
    layer_weight_bytes,
    run_weight_bytes,
    weight_bytes,
)
from llmcalc.model.spec import ModelSpec, Tensor, image_cross_tokens
from llmcalc.planning.hardware import DEFAULT_HEADROOM, Accelerator, usable_memory
from llmcalc.planning.serving import DecodeBound, decode_bound
from llmcalc.planning.serving import fit as serving_fit
from llmcalc.units import DType

# llama.cpp's common formats, most bits first (GGUF F16, Q8_0, Q4_K_M, Q4_0)
LADDER: tuple[WeightFormat, ...] = (DType.fp16, FORMATS["q8_0"], FORMATS["q4_k_m"], FORMATS["q4_0"])
DEFAULT_MIN_CTX = 4096
# dual-channel DDR5-5600: 2 channels × 8 bytes × 5.6 GT/s
DEFAULT_RAM_BANDWIDTH = 89_600_000_000
MAX_OFFLOAD_LAYERS = 65_536  # layers walked one by one for an offload split


@dataclass(frozen=True)
class LocalFit:
    """One model on one machine: the best format that fits ``min_ctx`` at batch 1, or None."""

    name: str
    parameters: int
    format: WeightFormat | None  # None: not even the smallest format fits
    weights: int | None
    largest_ctx: int | None  # at batch 1 in that format, capped at the model's limit
    context_limit: int
    decode: DecodeBound | None  # at min(min_ctx, limit)


def ladder(spec: ModelSpec) -> tuple[WeightFormat, ...]:
    """The model's own stored format first (a GGUF file's, a quantization_config's), then LADDER
    from the first rung with fewer bytes."""
    own = from_config(spec.config)
    if own is None:
        return LADDER
    own_bytes = weight_bytes(spec, own)
    return (own, *(f for f in LADDER if weight_bytes(spec, f) < own_bytes))


def best_fit(
    name: str, spec: ModelSpec, *, accelerator: Accelerator, gpus: int = 1,
    headroom: float = DEFAULT_HEADROOM, min_ctx: int = DEFAULT_MIN_CTX,
) -> LocalFit:
    """The first format of :func:`ladder` in which ``min_ctx`` tokens (or the model's whole
    context, when shorter) fit at batch 1."""
    parameters = memory.weight_elements(spec)
    for fmt in ladder(spec):
        kv = kv_dtype_for(fmt)
        f = serving_fit(spec, accelerator=accelerator, gpus=gpus, dtype=fmt, kv_dtype=kv,
                        batch=1, headroom=headroom)
        need = min(min_ctx, f.context_limit)
        if f.ctx is not None and f.ctx >= need:
            bound = decode_bound(spec, batch=1, ctx=need, dtype=fmt, kv_dtype=kv,
                                 bandwidth=gpus * accelerator.bandwidth) if accelerator.bandwidth else None
            return LocalFit(name, parameters, fmt, f.weights, f.ctx, f.context_limit, bound)
    limit = spec.shape.max_position_embeddings or 0
    return LocalFit(name, parameters, None, None, None, limit, None)


SORT_KEYS: dict[str, Callable[[LocalFit], tuple[object, ...]]] = {
    "params": lambda r: (-r.parameters, r.name),
    "name": lambda r: (r.name,),
    "ctx": lambda r: (-(r.largest_ctx or 0), r.name),
    "speed": lambda r: (-(r.decode.tokens_per_sec if r.decode else 0.0), r.name),
}


def what_fits(
    models: Sequence[tuple[str, Callable[[], ModelSpec]]], *, accelerator: Accelerator,
    gpus: int = 1, headroom: float = DEFAULT_HEADROOM, min_ctx: int = DEFAULT_MIN_CTX,
    sort: str = "params", fitting_only: bool = True,
) -> tuple[list[LocalFit], list[str]]:
    """Every model that fits (or all, with ``fitting_only`` False), sorted by ``sort``; and the
    names of those that could not be planned, each with its reason in brackets (a model that reads images through cross-attention,
    an encoder …) — skipped, not guessed."""
    if sort not in SORT_KEYS:
        raise ParameterError("{sort} {value}: sort by one of " + ", ".join(SORT_KEYS), value=sort)
    rows: list[LocalFit] = []
    skipped: list[str] = []
    for name, load in models:
        try:
            spec = load()
            # text tokens only: a language model that reads images through cross-attention is
            # sized with --images, which this list does not take
            if image_cross_tokens(spec):
                skipped.append(f"{name} (reads images through cross-attention, whose cache and "
                               "FLOPs depend on the images: size it with memory --images)")
                continue
            row = best_fit(name, spec, accelerator=accelerator, gpus=gpus, headroom=headroom,
                           min_ctx=min_ctx)
        except LLMCalcError as e:
            skipped.append(f"{name} ({' '.join(str(e).split())})")
            continue
        if row.format is not None or not fitting_only:
            rows.append(row)
    return sorted(rows, key=SORT_KEYS[sort]), skipped


# ---- offload ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Offload:
    """llama.cpp's split of a model between one GPU and system memory at a context."""

    layers: int
    gpu_layers: int  # the last ``gpu_layers`` layers run on the GPU
    output_on_gpu: bool
    ngl: int  # llama.cpp's -ngl: the output layer (counted first) and gpu_layers
    gpu_bytes: int  # weights + KV cache on the GPU
    cpu_bytes: int  # weights + KV cache in system memory
    gpu_read: int  # bytes a decode step reads on the GPU (a token's experts, the cache)
    cpu_read: int  # bytes it reads in system memory
    usable: int  # the GPU's memory less the headroom
    gpu_bandwidth: int
    ram_bandwidth: int
    seconds_per_token: float
    tokens_per_sec: float


def layer_split(spec: ModelSpec, fmt: WeightFormat) -> tuple[list[int], int, int]:
    """(bytes of each layer, bytes that follow the last layer, all weight bytes) in ``fmt``: a
    GGUF file's own (its blk.N.* tensors, output and output_norm), else from the description,
    without a multimodal checkpoint's tower (llama.cpp's model file holds none: its mmproj file)."""
    if isinstance(fmt, StoredFormat):
        if not fmt.layer_bytes:
            raise ParameterError("{dtype} {value}: the file's bytes by layer are not known; pass a "
                                 "format such as q4_k_m", value=fmt.value)
        return list(fmt.layer_bytes), fmt.head_bytes, weight_bytes(spec, fmt)
    n = spec.num_layers
    if n > MAX_OFFLOAD_LAYERS:
        raise ParameterError("{offload}: {name} has " + f"{n:,} layers; a split is searched "
                             f"layer by layer, over at most {MAX_OFFLOAD_LAYERS:,}",
                             name=spec.name)
    return layer_weight_bytes(spec, fmt), _head_bytes(spec, fmt), run_weight_bytes(spec, fmt)


def offload(
    spec: ModelSpec, *, accelerator: Accelerator, dtype: WeightFormat, kv_dtype: DType, ctx: int,
    ram_bandwidth: int = DEFAULT_RAM_BANDWIDTH, headroom: float = DEFAULT_HEADROOM,
    ngl: int | None = None,
) -> Offload:
    """The largest -ngl (or ``ngl``) whose weights and KV cache fit the GPU, as llama.cpp counts
    it (the output layer first, then the layers from the last), and the decode bound of that split.
    The KV cache is spread evenly over the layers (exact for models whose layers all attend alike)."""
    from llmcalc.planning.engines.llama_cpp import gpu_layer_start

    if ctx < 1:
        raise ParameterError("{ctx} {value}: must be 1 or more", value=ctx)
    if ram_bandwidth <= 0 or accelerator.bandwidth <= 0:
        raise ParameterError("{ram_bandwidth}: the GPU's and the system memory's bandwidth are "
                             "both needed")
    layer, head, total = layer_split(spec, dtype)
    n = len(layer)
    kv_total = memory.kv_cache_bytes(spec, batch=1, ctx=ctx, dtype=kv_dtype)
    kv_layer = [kv_total // n + (1 if i < kv_total % n else 0) for i in range(n)] if n else []
    usable = usable_memory(accelerator.memory_bytes, headroom=headroom)

    def on_gpu(k: int) -> int:
        start = gpu_layer_start(n, k)  # layers start … n − 1 and the output layer (index n)
        return (head if start <= n else 0) + sum(layer[start:]) + sum(kv_layer[start:])

    if ngl is None:
        k = 0
        while k <= n and on_gpu(k + 1) <= usable:
            k += 1
    else:
        if ngl < 0:
            raise ParameterError("{gpu_layers} {value}: must be 0 or more", value=ngl)
        k = min(ngl, n + 1)  # src/llama-model.cpp: act_gpu_layers = min(n_gpu_layers, n_layer + 1)
    gpu = on_gpu(k)
    cpu = total + kv_total - gpu
    # what a token reads: held bytes less each layer's unreached experts; outside the layers and
    # the head, a row of each embedding table (no tower: not in llama.cpp's model file)
    start = gpu_layer_start(n, k)
    unread = layer_unread(spec, dtype)
    gpu_read = gpu - sum(unread[start:])
    rest = max(total - sum(layer) - head, 0)  # the token embeddings and such
    cpu_read = (sum(layer[:start]) - sum(unread[:start]) + sum(kv_layer[:start])
                + (0 if start <= n else head) + min(rest, round(gathered_row_bytes(spec, dtype)[1])))
    seconds = gpu_read / accelerator.bandwidth + cpu_read / ram_bandwidth
    return Offload(n, max(k - 1, 0), k >= 1, k, gpu, cpu, gpu_read, cpu_read, usable,
                   accelerator.bandwidth, ram_bandwidth, seconds, 1 / seconds)


def layer_unread(spec: ModelSpec, fmt: WeightFormat) -> list[int]:
    """Bytes of each layer a decode step of one token does not read: its routed experts but the k
    of E the token reaches (a GGUF file's expert bytes spread evenly over the MoE layers)."""
    n = spec.num_layers
    if spec.moe is None:
        return [0] * n
    e, k = spec.moe.num_experts, spec.experts_per_tok()
    if isinstance(fmt, StoredFormat):
        moe = sorted({i for g in spec.layer_groups if any(is_routed_expert(t) for t in g.tensors)
                      for i in g.layers})
        per = [0] * n
        for j, i in enumerate(moe):
            per[i] = fmt.expert_bytes // len(moe) + (j < fmt.expert_bytes % len(moe))
    else:
        per = layer_weight_bytes(spec, fmt, select=is_routed_expert)
    return [b * (e - k) // e for b in per]


def _head_bytes(spec: ModelSpec, fmt: WeightFormat) -> int:
    """What follows the last layer in ``fmt``: the final norm and the output head — for tied
    embeddings the embedding matrix again, which llama.cpp keeps as the output on the GPU."""
    main = {id(t) for t, _ in spec.main_tensors()}  # not a tower's own final norm

    def after_layers(t: Tensor) -> bool:
        return id(t) in main and t.component.startswith(("lm_head", "final_norm"))

    head = weight_bytes(spec, fmt, select=after_layers)
    if any(t.tied_to is not None and t.component.startswith("lm_head") for t, _ in spec.all_tensors()):
        head += weight_bytes(spec, fmt, select=lambda t: t.component == "embed/tokens")
    return head
