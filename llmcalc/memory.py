"""Bytes of the weights and of the KV cache, exactly, from a :class:`ModelSpec` alone.

Conventions:

- **weights**: every parameter once (a tied lm_head adds nothing) at one dtype. Bytes of a tensor are
  ceil(elements · bits / 8), rounded up per tensor: int4 packs two values per byte and a tensor with
  an odd element count takes one more half-filled byte (as a packed checkpoint stores it).
- **KV cache** per token and layer: K and V, kv_heads × (d_qk + d_v) elements (= 2 · kv heads ·
  head dim for ordinary attention; MQA has one kv head, GQA a few). A sliding-window layer holds at
  most ``window`` tokens (what a preallocated cache such as transformers' ``StaticCache`` keeps;
  its ``DynamicCache`` trims to window − 1 between steps). Byte totals round up once, at the end.
- **MLA** (DeepSeek-V2 §2.1): the cache holds the compressed latent, kv_lora_rank + rope head dim
  elements per token and layer (current transformers and serving engines); the decompressed per-head
  K and V that older implementations keep, heads × (d_qk + d_v), is given beside it.
- **recurrent state** (layers with a ``Mixer``: Mamba, Mamba-2): per sequence and layer, whatever
  the context, the convolution state (conv_dim × kernel, at the cache dtype) and the SSM state
  (heads × head_dim × state_size, in float32 where transformers keeps it so, else at the cache
  dtype), as transformers' cache allocates them. ``kv_cache_bytes`` holds the attention layers'
  keys and values for batch × ctx tokens plus batch × this state.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmcalc import quant
from llmcalc.errors import UsageError
from llmcalc.quant import QuantFormat
from llmcalc.spec import Attention, LayerGroup, Mixer, ModelSpec, context_notes
from llmcalc.units import DType, nbytes

STATE_FP32 = DType.fp32  # the dtype transformers keeps an SSM state in (MambaMixer, Mamba2Mixer)


def _check(**values: int) -> None:
    for name, value in values.items():
        if value <= 0:
            raise UsageError(f"{name} must be a positive number, got {value}")


# ---- weights ---------------------------------------------------------------------------------------


def weight_elements(spec: ModelSpec) -> int:
    """Every parameter once (tied tensors counted where they are stored)."""
    return sum(
        t.numel * (len(g.layers) if g is not None else 1)
        for t, g in spec.all_tensors()
        if t.tied_to is None
    )


def weight_bytes(spec: ModelSpec, *, dtype: DType | QuantFormat) -> int:
    """All parameters at ``dtype``: Σ over tensors of ceil(elements · bits / 8); a quantized
    format's codes, scales and zero points and the tensors it keeps wider (llmcalc.quant)."""
    if isinstance(dtype, QuantFormat):
        return quant.weight_bytes(spec, dtype)
    total = 0
    for t, g in spec.all_tensors():
        if t.tied_to is None:
            total += nbytes(t.numel, dtype) * (len(g.layers) if g is not None else 1)
    return total


# ---- KV cache --------------------------------------------------------------------------------------


def kv_elements_per_layer(attention: Attention, *, decompressed: bool = False) -> int:
    """Cached elements per token in one layer: K and V of each kv head, or the MLA latent; none in a
    layer that reads another layer's cache (Gemma 3n's KV sharing); plus the sparse-attention
    indexer's keys [index_head_dim] where the layer has its own indexer (DeepSeek-V3.2)."""
    if attention.kv_shared:
        return 0
    if attention.kv_latent_dim is not None and not decompressed:
        # kv_lora_rank + qk_rope_head_dim (MLA)
        return attention.kv_latent_dim + attention.index_key_dim
    # K: kv_heads × d_qk, V: kv_heads × d_v  (= 2·kv·hd; MLA decompressed: heads × (d_qk + d_v))
    kv = attention.kv_heads * (attention.qk_head_dim + attention.v_head_dim)
    return kv + attention.index_key_dim


def is_mla(spec: ModelSpec) -> bool:
    return any(
        g.attention is not None and g.attention.kv_latent_dim is not None for g in spec.layer_groups
    )


def kv_elements_per_token(spec: ModelSpec, *, decompressed: bool = False) -> int:
    """Cached elements one token adds across all layers (before any window is full)."""
    return sum(
        g.cached_runs * kv_elements_per_layer(g.attention, decompressed=decompressed)
        for g in spec.layer_groups
        if g.attention is not None
    )


# ---- recurrent state (SSM layers) -------------------------------------------------------------------


def state_dtype(m: Mixer, dtype: DType) -> DType:
    """The SSM state's dtype: float32 where transformers keeps it so, else the cache dtype."""
    return STATE_FP32 if m.state_fp32 else dtype


def state_bytes_per_layer(m: Mixer, *, dtype: DType) -> int:
    """One sequence's state in one layer: conv_dim × kernel at ``dtype`` + h × p × N (fp32)."""
    return nbytes(m.conv_elements, dtype) + nbytes(m.state_elements, state_dtype(m, dtype))


def state_bytes_per_sequence(spec: ModelSpec, *, dtype: DType) -> int:
    """The recurrent state one sequence keeps across all layers, whatever its length (0: none)."""
    return sum(
        g.cached_runs * state_bytes_per_layer(g.mixer, dtype=dtype)
        for g in spec.layer_groups
        if g.mixer is not None
    )


def kv_cache_bytes_per_token(
    spec: ModelSpec, *, dtype: DType, decompressed: bool = False
) -> int:
    """Bytes one token adds to the cache: 2 · layers · kv heads · head dim · bytes (MLA: the latent)."""
    return nbytes(kv_elements_per_token(spec, decompressed=decompressed), dtype)


def _group_kv_elements(g: LayerGroup, *, ctx: int, decompressed: bool) -> int:
    if g.attention is None:
        return 0
    return (
        g.cached_runs
        * g.attention.tokens_seen(ctx)
        * kv_elements_per_layer(g.attention, decompressed=decompressed)
    )


def kv_cache_bytes(
    spec: ModelSpec, *, batch: int, ctx: int, dtype: DType, decompressed: bool = False
) -> int:
    """The whole cache for ``batch`` sequences of ``ctx`` tokens: keys and values (sliding layers
    capped at their window) plus each sequence's recurrent state."""
    _check(batch=batch, ctx=ctx)
    elements = sum(
        _group_kv_elements(g, ctx=ctx, decompressed=decompressed) for g in spec.layer_groups
    )
    return nbytes(batch * elements, dtype) + batch * state_bytes_per_sequence(spec, dtype=dtype)


# ---- the command's figures -------------------------------------------------------------------------


@dataclass(frozen=True)
class KVTerm:
    """One layer group's cache, for ``--explain``."""

    group: str
    num_layers: int
    kv_heads: int
    qk_head_dim: int
    v_head_dim: int
    window: int | None
    latent_dim: int | None
    elements_per_token: int  # per layer
    tokens: int  # cached per sequence at this context
    index_key_dim: int = 0  # the sparse-attention indexer's cached key per token (DeepSeek-V3.2)


@dataclass(frozen=True)
class StateTerm:
    """One layer group's recurrent state per sequence, for ``--explain``."""

    group: str
    num_layers: int
    kind: str
    conv_elements: int  # per layer
    state_elements: int  # per layer
    state_dtype: DType
    bytes_per_layer: int


@dataclass(frozen=True)
class MemoryResult:
    """Everything ``llmcalc memory`` shows."""

    model: str
    ctx: int
    batch: int
    dtype: DType | QuantFormat
    kv_dtype: DType
    weight_elements: int
    weights_bytes: int
    kv_cache_bytes_per_token: int
    kv_cache_bytes: int
    total_bytes: int
    kv_terms: tuple[KVTerm, ...]
    mla: bool
    # MLA only: the decompressed per-head K and V older implementations cache
    kv_cache_bytes_per_token_decompressed: int | None
    kv_cache_bytes_decompressed: int | None
    notes: tuple[str, ...] = ()  # e.g. ctx beyond the model's max_position_embeddings
    weight_parts: tuple[quant.LayoutBytes, ...] = ()  # bytes by storage layout (sums to weights)
    state_bytes_per_sequence: int = 0  # SSM layers' conv + recurrent state, whatever the context
    state_terms: tuple[StateTerm, ...] = ()


def memory(
    spec: ModelSpec,
    *,
    ctx: int,
    batch: int = 1,
    dtype: DType | QuantFormat,
    kv_dtype: DType | None = None,
) -> MemoryResult:
    """All of ``llmcalc memory``'s figures; the cache uses ``kv_dtype`` (default: ``dtype``, or
    for a quantized format the dtype it computes in)."""
    _check(batch=batch, ctx=ctx)
    kv_dtype = quant.kv_dtype_for(dtype) if kv_dtype is None else kv_dtype
    weights = weight_bytes(spec, dtype=dtype)
    kv = kv_cache_bytes(spec, batch=batch, ctx=ctx, dtype=kv_dtype)
    mla = is_mla(spec)
    terms = tuple(
        KVTerm(
            group=g.name,
            num_layers=g.cached_runs,
            kv_heads=g.attention.kv_heads,
            qk_head_dim=g.attention.qk_head_dim,
            v_head_dim=g.attention.v_head_dim,
            window=g.attention.window,
            latent_dim=g.attention.kv_latent_dim,
            elements_per_token=kv_elements_per_layer(g.attention),
            tokens=g.attention.tokens_seen(ctx),
            index_key_dim=g.attention.index_key_dim,
        )
        for g in spec.layer_groups
        if g.attention is not None
    )
    state_terms = tuple(
        StateTerm(
            group=g.name,
            num_layers=g.cached_runs,
            kind=g.mixer.kind,
            conv_elements=g.mixer.conv_elements,
            state_elements=g.mixer.state_elements,
            state_dtype=state_dtype(g.mixer, kv_dtype),
            bytes_per_layer=state_bytes_per_layer(g.mixer, dtype=kv_dtype),
        )
        for g in spec.layer_groups
        if g.mixer is not None
    )
    return MemoryResult(
        model=spec.name,
        ctx=ctx,
        batch=batch,
        dtype=dtype,
        kv_dtype=kv_dtype,
        weight_elements=weight_elements(spec),
        weights_bytes=weights,
        kv_cache_bytes_per_token=kv_cache_bytes_per_token(spec, dtype=kv_dtype),
        kv_cache_bytes=kv,
        total_bytes=weights + kv,
        kv_terms=terms,
        mla=mla,
        kv_cache_bytes_per_token_decompressed=kv_cache_bytes_per_token(
            spec, dtype=kv_dtype, decompressed=True
        )
        if mla
        else None,
        kv_cache_bytes_decompressed=kv_cache_bytes(
            spec, batch=batch, ctx=ctx, dtype=kv_dtype, decompressed=True
        )
        if mla
        else None,
        notes=context_notes(spec, ctx=ctx),
        weight_parts=quant.breakdown(spec, dtype),
        state_bytes_per_sequence=state_bytes_per_sequence(spec, dtype=kv_dtype),
        state_terms=state_terms,
    )
