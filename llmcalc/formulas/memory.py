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
- **compressed attention** (DeepSeek-V4's CSA and HCA layers): besides its window (one tensor read as
  keys and values, kv heads × head dim), a layer keeps each compressor's ⌊ctx/m⌋ pooled entries and
  its unfinished window's ctx mod m tokens (their projected kv and gate), and an overlapping (CSA)
  compressor the last closed window's first series, its gate in float32 (transformers
  ``DeepseekV4HCACache``, ``DeepseekV4CSACache``: :func:`compressor_elements`).
"""

from __future__ import annotations

from dataclasses import dataclass

from llmcalc.errors import UsageError
from llmcalc.formulas import quant
from llmcalc.formulas.quant import QuantFormat
from llmcalc.model.spec import (
    Attention,
    Compressor,
    LayerGroup,
    Mixer,
    ModelSpec,
    context_notes,
    image_cross_source,
    image_cross_tokens,
)
from llmcalc.units import BlockType, CacheDType, DType, nbytes

STATE_FP32 = DType.fp32  # the dtype transformers keeps an SSM state in (MambaMixer, Mamba2Mixer)
TOKEN_ID_BYTES = 8  # a token id a state keeps (torch.long: Qwen4-Exp's n-gram context)


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
    format's codes, scales and zero points and the tensors it keeps wider (llmcalc.formulas.quant)."""
    if isinstance(dtype, QuantFormat):
        return quant.weight_bytes(spec, dtype)
    total = 0
    for t, g in spec.all_tensors():
        if t.tied_to is None:
            total += nbytes(t.numel, dtype) * (len(g.layers) if g is not None else 1)
    return total


# ---- KV cache --------------------------------------------------------------------------------------


def kv_elements_per_layer(attention: Attention, *, decompressed: bool = False) -> int:
    """Cached elements per token in one layer: K and V of each kv head, or the MLA latent, plus a
    sparse-attention indexer's key [index_key_dim] where the layer has its own indexer
    (DeepSeek-V3.2, MiniMax-M3); none in a layer that reads another layer's cache (Gemma 3n's KV
    sharing) or in an encoder's bidirectional attention (the whole sequence is encoded at once)."""
    if attention.memory:  # XLNet: the layer's input hidden states (mems), not K and V
        return attention.memory
    if attention.kv_shared or not attention.causal:  # an encoder's attention caches nothing
        return 0
    index = 0 if attention.index_key_fp32 else attention.index_key_dim
    if attention.kv_latent_dim is not None and not decompressed:
        # kv_lora_rank + qk_rope_head_dim (MLA)
        return attention.kv_latent_dim + index
    if attention.keys_are_values:  # one tensor read as K and V (DeepSeek-V4's compressed layers)
        return attention.kv_heads * attention.qk_head_dim + index
    # K: kv_heads × d_qk, V: kv_heads × d_v  (= 2·kv·hd; MLA decompressed: heads × (d_qk + d_v))
    kv = attention.kv_heads * (attention.qk_head_dim + attention.v_head_dim)
    return kv + index


def fp32_elements_per_layer(attention: Attention) -> int:
    """Cached elements per token in one layer that transformers keeps in float32 whatever the
    cache dtype: dots3-note's indexer keys [index_key_dim] (its indexed layers' rotary cos/sin are
    float32, so the rotated key is; transformers DynamicIndexedLayer.indexer_keys)."""
    if attention.kv_shared or not attention.causal or not attention.index_key_fp32:
        return 0
    return attention.index_key_dim


def compressor_elements(attention: Attention, *, ctx: int) -> tuple[int, int]:
    """One sequence's compressor state in one layer after ``ctx`` tokens (compressed attention),
    as transformers' DeepseekV4HCACache / DeepseekV4CSACache keep it: (elements at the cache dtype,
    elements in float32). Per compressor of entry size c and ratio m, with ctx = q·m + r: the q
    entries it emitted (q·c); the r tokens of the window still open, their projected kv and gate
    (2·r·width, width = c, or 2·c for an overlapping one); and once a window has closed, an
    overlapping compressor's copy of that window's first series, m·c of kv and m·c of gate, the
    gate in float32 (its float32 position bias was added to it)."""
    m = attention.compress
    if not m:
        return 0, 0
    entries, rest = divmod(ctx, m)
    native = fp32 = 0
    for c in attention.compressors:
        native += entries * c.dim + 2 * rest * c.width
        if c.overlap and entries:
            native += m * c.dim
            fp32 += m * c.dim
    return native, fp32


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


def state_dtype(m: Mixer, dtype: CacheDType) -> DType:
    """The SSM state's dtype: float32 where transformers keeps it so, else the cache dtype;
    float32 beside any llama.cpp cache type (src/llama-model.cpp: create_memory gives the
    recurrent cache GGML_TYPE_F32 whatever -ctk/-ctv say)."""
    return STATE_FP32 if m.state_fp32 or isinstance(dtype, BlockType) else dtype


def conv_dtype(m: Mixer, dtype: CacheDType) -> DType:
    """The convolution state's dtype: the cache dtype, or float32 where transformers keeps it so
    (or beside a block type, as ``state_dtype``)."""
    return STATE_FP32 if m.conv_fp32 or isinstance(dtype, BlockType) else dtype


def state_bytes_per_layer(m: Mixer, *, dtype: CacheDType) -> int:
    """One sequence's state in one layer: conv_dim × kernel at ``dtype`` + h × p × N (fp32)
    (+ the int64 token ids it keeps)."""
    return nbytes(m.conv_elements, conv_dtype(m, dtype)) + nbytes(
        m.state_elements, state_dtype(m, dtype)
    ) + TOKEN_ID_BYTES * m.token_ids


def state_bytes_per_sequence(spec: ModelSpec, *, dtype: CacheDType) -> int:
    """The recurrent state one sequence keeps across all layers, whatever its length (0: none)."""
    return sum(
        g.cached_runs * state_bytes_per_layer(g.mixer, dtype=dtype)
        for g in spec.layer_groups
        if g.mixer is not None
    )


def fp32_elements_per_token(spec: ModelSpec) -> int:
    """Cached elements one token adds across all layers that stay float32 (0 for most models)."""
    return sum(
        g.cached_runs * fp32_elements_per_layer(g.attention)
        for g in spec.layer_groups
        if g.attention is not None
    )


def kv_cache_bytes_per_token(
    spec: ModelSpec, *, dtype: CacheDType, decompressed: bool = False
) -> int:
    """Bytes one token adds to the cache: 2 · layers · kv heads · head dim · bytes (MLA: the latent),
    plus the elements transformers keeps in float32."""
    spec.require_forward()
    return (
        nbytes(kv_elements_per_token(spec, decompressed=decompressed), dtype)
        + nbytes(fp32_elements_per_token(spec), STATE_FP32)
        + spec.cache_bytes_per_token
    )


def _group_kv_elements(g: LayerGroup, *, ctx: int, decompressed: bool, fp32: bool = False) -> int:
    """A group's cached elements for one sequence at ``ctx``: those at the cache dtype, or
    (``fp32``) those kept in float32."""
    if g.attention is None:
        return 0
    per_layer = (
        fp32_elements_per_layer(g.attention)
        if fp32
        else kv_elements_per_layer(g.attention, decompressed=decompressed)
    )
    compressed = compressor_elements(g.attention, ctx=ctx)[1 if fp32 else 0]
    return g.cached_runs * (g.attention.cached_tokens(ctx) * per_layer + compressed)


def has_cross_attention(spec: ModelSpec) -> bool:
    """An encoder–decoder: its decoder layers attend to the encoder's output."""
    return any(g.cross_attention is not None for g in spec.layer_groups)


def cross_kv_cache_bytes(spec: ModelSpec, *, batch: int, source_len: int,
                         dtype: CacheDType) -> int:
    """An encoder–decoder's cross-attention cache (transformers' EncoderDecoderCache
    cross_attention_cache): per decoder layer the keys and values of all ``source_len`` encoder
    tokens, computed once and kept for the whole generation; 0 for a model without."""
    _check(source_len=source_len)
    elements = sum(
        len(g.layers) * source_len * cross_kv_elements(g.cross_attention)
        for g in spec.layer_groups
        if g.cross_attention is not None
    )
    return nbytes(batch * elements, dtype)


def cross_kv_elements(attention: Attention) -> int:
    """Cross-attention K and V per source token and layer: kv heads × (d_qk + d_v)."""
    return attention.kv_heads * (attention.qk_head_dim + attention.v_head_dim)


def kv_cache_bytes(
    spec: ModelSpec,
    *,
    batch: int,
    ctx: int,
    dtype: CacheDType,
    decompressed: bool = False,
    source_len: int | None = None,
) -> int:
    """The whole cache for ``batch`` sequences of ``ctx`` tokens: keys and values (sliding layers
    capped at their window) plus each sequence's recurrent state; an encoder–decoder adds the
    cross-attention keys and values of ``source_len`` encoder tokens (default: ``ctx``)."""
    _check(batch=batch, ctx=ctx)
    spec.require_forward()
    ctx = cached_tokens(spec, ctx=ctx)
    elements = sum(
        _group_kv_elements(g, ctx=ctx, decompressed=decompressed) for g in spec.layer_groups
    )
    fp32 = sum(
        _group_kv_elements(g, ctx=ctx, decompressed=decompressed, fp32=True)
        for g in spec.layer_groups
    )
    cross = 0
    if has_cross_attention(spec):
        from llmcalc.formulas.flops import source_len_of

        if source_len is None and image_cross_tokens(spec):
            source_len = image_cross_tokens(spec)  # images in the cross-attention: one image
        # Whisper's encoder: a fixed number of tokens
        n = source_len_of(spec, ctx if source_len is None else source_len)
        cross = cross_kv_cache_bytes(spec, batch=batch, source_len=n, dtype=dtype)
    return (
        nbytes(batch * elements, dtype)
        + nbytes(batch * fp32, STATE_FP32)
        + batch * ctx * spec.cache_bytes_per_token
        + cross
        + batch * state_bytes_per_sequence(spec, dtype=dtype)
    )


def cached_tokens(spec: ModelSpec, *, ctx: int) -> int:
    """Tokens the cache holds for a sequence of ``ctx``: ctx, plus the prompt tokens a model
    prepends inside its forward (CPM-Ant's prompt_length, transformers CpmAntModel.forward: cached
    with the text's keys and values)."""
    return ctx + spec.prefix_tokens


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
    cross: bool = False  # an encoder–decoder's cross-attention cache: tokens are encoder tokens
    index_key_dim: int = 0  # a sparse-attention indexer's cached key per token
    index_key_fp32: bool = False  # …kept in float32 (not in elements_per_token then)
    keys_are_values: bool = False  # one tensor read as K and V (DeepSeek-V4's compressed layers)
    compress: int = 0  # compressed attention: one pooled entry per this many tokens
    compressors: tuple[Compressor, ...] = ()
    compressor_elements: int = 0  # per layer at this context, at the cache dtype
    compressor_fp32: int = 0  # per layer at this context, in float32 (overlapping gates)


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
    conv_dtype: DType | None = None  # None: the cache dtype
    token_ids: int = 0  # int64 token ids kept beside (Qwen4-Exp's n-gram context)


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
    # an encoder–decoder: the encoder tokens the cross-attention cache holds, and its bytes (in
    # kv_cache_bytes); None / 0 for a model without cross-attention
    source_len: int | None = None
    cross_kv_cache_bytes: int = 0
    # bytes per token beside the layers' K and V, whatever the dtype (ModelSpec.cache_bytes_per_token)
    fixed_bytes_per_token: int = 0
    source_tokens: str = "encoder"  # or "vision": the images' tokens (Llama 3.2 Vision)


def memory(
    spec: ModelSpec,
    *,
    ctx: int,
    batch: int = 1,
    dtype: DType | QuantFormat,
    kv_dtype: DType | None = None,
    source_len: int | None = None,
    images: int = 0,
) -> MemoryResult:
    """All of ``llmcalc memory``'s figures; the cache uses ``kv_dtype`` (default: ``dtype``, or
    for a quantized format the dtype it computes in). An encoder–decoder caches, besides its
    decoder's ``ctx`` tokens, the cross-attention K and V of ``source_len`` encoder tokens
    (default: ``ctx``); a model whose cross-attention reads images (Llama 3.2 Vision) those of
    ``images`` images, its cross-attention layers idle without one."""
    _check(batch=batch, ctx=ctx)
    source_tokens = "vision" if image_cross_tokens(spec) else "encoder"
    kv_dtype = quant.kv_dtype_for(dtype) if kv_dtype is None else kv_dtype
    weights = weight_bytes(spec, dtype=dtype)
    spec, source_len = image_cross_source(spec, images=images, source_len=source_len)
    cross_model = has_cross_attention(spec)
    source = None
    if cross_model:
        from llmcalc.formulas.flops import (
            source_len_of,  # Whisper's encoder: a fixed number of tokens
        )

        source = source_len_of(spec, ctx if source_len is None else source_len)
    kv = kv_cache_bytes(spec, batch=batch, ctx=ctx, dtype=kv_dtype, source_len=source)
    cross_bytes = (
        cross_kv_cache_bytes(spec, batch=batch, source_len=source, dtype=kv_dtype)
        if source is not None
        else 0
    )
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
            tokens=g.attention.cached_tokens(cached_tokens(spec, ctx=ctx)),
            index_key_dim=g.attention.index_key_dim,
            index_key_fp32=g.attention.index_key_fp32,
            keys_are_values=g.attention.keys_are_values,
            compress=g.attention.compress,
            compressors=g.attention.compressors,
            compressor_elements=compressor_elements(g.attention, ctx=ctx)[0],
            compressor_fp32=compressor_elements(g.attention, ctx=ctx)[1],
        )
        for g in spec.layer_groups
        if g.attention is not None
    ) + tuple(
        KVTerm(
            group=f"{g.name} cross-attention",
            num_layers=len(g.layers),
            kv_heads=g.cross_attention.kv_heads,
            qk_head_dim=g.cross_attention.qk_head_dim,
            v_head_dim=g.cross_attention.v_head_dim,
            window=None,
            latent_dim=None,
            elements_per_token=cross_kv_elements(g.cross_attention),
            tokens=source,
            cross=True,
        )
        for g in spec.layer_groups
        if g.cross_attention is not None and source is not None
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
            conv_dtype=conv_dtype(g.mixer, kv_dtype),
            token_ids=g.mixer.token_ids,
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
        notes=(*context_notes(spec, ctx=ctx), *quant.format_notes(spec, dtype)),
        weight_parts=quant.breakdown(spec, dtype),
        state_bytes_per_sequence=state_bytes_per_sequence(spec, dtype=kv_dtype),
        state_terms=state_terms,
        source_len=source,
        cross_kv_cache_bytes=cross_bytes,
        source_tokens=source_tokens,
        fixed_bytes_per_token=spec.cache_bytes_per_token,
    )
