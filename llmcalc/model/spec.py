"""The validated model description every quantity is computed from.

A family module turns a config into a :class:`ModelSpec`: the named tensors the transformers model
creates (names as in its module tree, shapes from the config) plus the few facts about attention and
experts that FLOPs and memory need. Parameter counts are sums over the tensors; nothing downstream
reads the config again.
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from llmcalc.errors import UsageError

LAYER = "{i}"  # stands for the layer index in a layer tensor's name
EXPERT = "{e}"  # stands for the expert index where experts are separate modules


@dataclass(frozen=True)
class Tensor:
    """One parameter tensor (or, with ``{e}`` in its name, one per routed expert).

    ``component`` is the breakdown key (``attn/q_proj``); ``matmul`` marks weight matrices a token is
    multiplied by (2 FLOPs per element); ``experts`` is the number of routed experts it holds, stacked
    on the first dimension or expanded over ``{e}``; ``tied_to`` names the tensor it shares storage
    with (counted once, there, but still multiplied by in the forward pass). ``per_source``: a matmul
    an encoder–decoder's decoder applies to the encoder's output (cross-attention K and V), once per
    source token and sequence, not per generated token.
    with (counted once, there, but still multiplied by in the forward pass); ``uses`` is how many
    times one token is multiplied by it (1; once per head for a bank shared by the heads, as
    Inkling's relative-position profiles). ``repeats``: in a looped layer (``LayerGroup.repeats``),
    the runs that use this tensor where fewer than the layer's (Inkling 2 Loop's message gates: every
    pass but the first); None: every run.
    """

    name: str
    shape: tuple[int, ...]
    component: str
    matmul: bool = False
    experts: int = 0
    tied_to: str | None = None
    per_source: bool = False
    uses: int = 1
    repeats: int | None = None
    # a tied entry whose module is registered before its owner's (XLM-RoBERTa's lm_head comes before
    # its encoder): named_parameters lists the shared tensor under this entry's name
    named_first: bool = False

    @property
    def copies(self) -> int:
        """How many real tensors this entry stands for within one layer."""
        return self.experts if EXPERT in self.name else 1

    @property
    def numel(self) -> int:
        return math.prod(self.shape) * self.copies

    def active_numel(self, experts_per_tok: int) -> int:
        """Elements one token uses: all of them, or k of the E routed experts."""
        if not self.experts:
            return self.numel
        return self.numel // self.experts * experts_per_tok


@dataclass(frozen=True)
class Compressor:
    """One KV compressor of DeepSeek-V4's compressed attention (DeepSeek-AI 2026, "DeepSeek-V4"
    §2.3; transformers ``DeepseekV4HCACompressor``, ``DeepseekV4CSACompressor`` and the one inside
    its ``DeepseekV4Indexer``): it pools each complete window of the layer's ``Attention.compress``
    tokens into one entry of ``dim`` elements, kept in the cache. ``overlap`` (CSA): each token
    projects two series of ``dim`` (kv and gate 2·dim wide), an entry pooling its window's second
    and the previous window's first, so the cache also keeps the last window's first series."""

    dim: int
    overlap: bool = False

    @property
    def width(self) -> int:
        """Features one token projects for it, for kv and for the gate each: dim, or 2·dim."""
        return 2 * self.dim if self.overlap else self.dim


@dataclass(frozen=True)
class Attention:
    """What one layer's attention costs per token; shapes of its weights live in the tensors.

    ``kv_latent_dim`` is set for multi-head latent attention (MLA): the per-token cache is that latent
    instead of per-head K and V. ``chunked`` (Llama 4): ``window`` is a chunk size; a query attends
    to the earlier tokens of its own chunk, and the cache holds at most one chunk, as a window's.
    ``kv_shared`` (Gemma 3n): the layer attends with another layer's keys and values and caches none.
    ``causal`` False (an encoder: BERT, ModernBERT): every token attends to every token of its
    sequence, both ways (within ``window`` tokens either side, ModernBERT's local layers), and
    nothing is cached: the whole sequence is encoded at once. DeBERTa's disentangled attention:
    each query also scores against ``position_keys`` relative-position vectors (2·span per
    c2p / p2c term, 2·h·d_qk FLOPs each), and the layer projects its relative-position table
    once per sequence, whatever its length (``sequence_flops``).
    ``topk`` (DeepSeek sparse attention, DeepSeek-V3.2-Exp §2.1): a query attends to at most
    ``topk`` tokens that a lightning indexer picks after scoring every earlier token at
    ``index_pair_flops`` per query–key pair (0 where a layer reuses another's choice; MiniMax-M3's
    block-sparse layers: the indexer's cost, their block choice not modelled); it caches
    ``index_key_dim`` elements per token for that (its single-head keys), in float32 where
    ``index_key_fp32`` (dots3-note rotates them with float32 cos/sin, so transformers' cache keeps
    them so), else at the cache dtype.
    ``index_block`` (Qwen4-Exp's QSA, transformers ``Qwen4ExpTextQSAIndexer``): the indexer scores
    one mean-pooled key per complete block of ``index_block`` tokens (query i: ⌊i / b⌋ blocks, in
    a per-query loop, so a full forward pass counts those too, not n²), and the softmax reads the
    ``topk`` tokens of the blocks it picks plus the incomplete tail: min(i, topk + i mod b) keys.
    ``keys_are_values`` (DeepSeek-V4's compressed layers): one cached tensor of kv_heads ×
    qk_head_dim per token is read as both keys and values.
    ``compress`` (DeepSeek-V4's CSA and HCA layers): beside its ``window`` of recent tokens, a query
    attends to one pooled entry per complete window of ``compress`` tokens of the whole context
    (query i: ⌊i / m⌋ of them, at most ``topk`` where an indexer picks them: CSA), made by
    ``compressors`` (the first makes the keys and values; a second, the indexer's, the keys its
    indexer scores at ``index_pair_flops`` per query–entry pair).
    ``maps`` (differential attention, DiffLlama): the layer runs softmax attention this many times
    over the same queries and keys, each time against all of its value heads (transformers'
    ``DiffLlamaAttention``: two calls, each over one half of V repeated to the full kv heads), so
    every query–key pair costs ``maps`` × 2·h·(d_qk + d_v); the cache holds K and V once.
    ``sparse_beyond`` (BigBird's block-sparse attention, Reformer's chunked local and LSH
    attention): the layer attends in full over sequences of up to this many tokens and in blocks
    or chunks past it (``ModelSpec.sparse_what``), which no formula here follows: figures past it
    are refused (:func:`require_dense`).
    ``relative_positions`` (a, b) (XLNet's relative attention, Dai et al. 2019 §3.3): over a
    sequence of n tokens each query also scores a·n + b relative positions (2·h·d_qk each; XLNet
    bidirectional: 2n, unidirectional: n + 1), whose keys the layer projects once per sequence
    from a sinusoid table through a matrix of ``relative_proj`` elements (2 FLOPs each a position).
    ``memory`` (XLNet's mems, Transformer-XL): in place of keys and values, the layer keeps its
    input hidden states, ``memory`` elements a token, of at most ``memory_len`` tokens (None: all),
    for the next segment to attend to; cached whether or not the attention is causal.
    """

    heads: int
    kv_heads: int
    qk_head_dim: int
    v_head_dim: int
    window: int | None = None
    kv_latent_dim: int | None = None
    chunked: bool = False
    kv_shared: bool = False
    causal: bool = True
    position_keys: int = 0
    sequence_flops: int = 0
    topk: int | None = None
    index_pair_flops: int = 0
    index_key_dim: int = 0
    index_key_fp32: bool = False
    index_block: int = 0
    keys_are_values: bool = False
    compress: int = 0
    compressors: tuple[Compressor, ...] = ()
    maps: int = 1
    sparse_beyond: int | None = None
    relative_positions: tuple[int, int] = (0, 0)
    relative_proj: int = 0
    memory: int = 0
    memory_len: int | None = None

    def relative_count(self, ctx: int) -> int:
        """Relative positions one query scores over a sequence of ``ctx`` tokens: a·ctx + b."""
        a, b = self.relative_positions
        return a * ctx + b if a or b else 0

    def cached_tokens(self, ctx: int) -> int:
        """Tokens one layer's cache holds at ``ctx``: those its attention sees, or its memory's."""
        if self.memory:
            return ctx if self.memory_len is None else min(ctx, self.memory_len)
        return self.tokens_seen(ctx)

    def compressed_entries(self, ctx: int) -> int:
        """Pooled entries emitted at context ``ctx`` (compressed attention): ⌊ctx / m⌋."""
        return ctx // self.compress if self.compress else 0

    def tokens_seen(self, ctx: int) -> int:
        """Tokens one query attends to, and one layer's cache holds, at context ``ctx``: all of
        them, or at most the last ``window`` (sliding-window attention); bidirectional, at most
        ``window`` either side and itself (2·window + 1)."""
        if self.window is None:
            return ctx
        return min(ctx, self.window if self.causal else 2 * self.window + 1)

    def keys_attended(self, ctx: int) -> int:
        """Keys one query's softmax attention reads at context ``ctx``: those it sees, or at most
        ``topk`` of them (sparse attention); compressed attention: its window, plus the pooled
        entries, at most ``topk`` of them."""
        seen = self.tokens_seen(ctx)
        if self.compress:
            entries = self.compressed_entries(ctx)
            return seen + (entries if self.topk is None else min(entries, self.topk))
        if self.topk is None:
            return seen
        tail = seen % self.index_block if self.index_block else 0  # QSA: the incomplete block
        return min(seen, self.topk + tail)

    def keys_indexed(self, ctx: int) -> int:
        """What one query's indexer scores at context ``ctx``: every key it sees, or (QSA) one
        pooled key per complete block of them, or (compressed attention) every pooled entry."""
        if self.compress:
            return self.compressed_entries(ctx)
        seen = self.tokens_seen(ctx)
        return seen // self.index_block if self.index_block else seen


# Sequence mixers other than softmax attention, by ``Mixer.kind``.
MAMBA = "mamba"  # selective scan (Gu & Dao 2023): one N-state per channel
MAMBA2 = "mamba2"  # state-space duality, chunked scan (Dao & Gu 2024): one p × N state per head
GATED_DELTA = "gated_delta"  # gated delta rule (Yang et al. 2024), chunked: a dk × dv state per head
KDA = "kda"  # Kimi Delta Attention (Kimi Linear 2025): the gated delta rule, decay per channel
LIGHTNING = "lightning"  # lightning attention (MiniMax-01 2025): linear attention in blocks, decayed
RWKV = "rwkv"  # RWKV-4 time mix (Peng et al. 2023): token shift + WKV, elementwise per channel
MLSTM = "mlstm"  # xLSTM's mLSTM (Beck et al. 2024): a dk × dv matrix memory per head, chunked
SHORT_CONV = "short_conv"  # a gated causal convolution alone (LFM2): a conv state, no SSM state
# real-gated linear recurrent unit (Griffin, De et al. 2024, §2.4; RecurrentGemma): a diagonal
# recurrence, one fp32 value per channel, its gates block-diagonal matmuls (weights), no readout;
# its conv state keeps the last kernel − 1 inputs (transformers RecurrentGemmaRecurrentBlock)
RG_LRU = "rg_lru"
CCA = "cca"  # compressed convolutional attention (ZAYA): q/k convolutions and a delayed value beside
# softmax attention; its convolutions are weight matmuls, what it adds is step_flops / prefill_flops


@dataclass(frozen=True)
class Mixer:
    """A layer's sequence mixer when it is not softmax attention: what it keeps per sequence.

    Per sequence and layer, whatever the context, the cache holds a convolution state (the last
    ``conv_kernel`` inputs of each of ``conv_dim`` channels of a causal depthwise convolution) and a
    recurrent state of ``heads`` × ``head_dim`` × ``state_size`` elements (Mamba: d_inner channels
    of head_dim 1, each with an N-state; Mamba-2: h heads of p × N), plus ``extra_state`` elements
    kept beside those matrices (the mLSTM's normalizer and stabilizer). ``state_fp32``: transformers
    keeps the recurrent state in float32 whatever the model's dtype. ``chunk``: the chunk length of
    a chunked scan (Mamba-2 SSD), which sets the FLOPs its torch path spends on a prefill.
    ``conv_fp32``: the convolution state too is kept in float32 (Inkling runs its convs in fp32).
    ``elementwise_conv_dim``: channels of ``conv_dim`` whose convolution has per-token taps and
    runs as elementwise products (Inkling 2's dynamic convs): in the state, not in the FLOPs.
    ``step_flops`` / ``prefill_flops`` (CCA): what a decoding step / a whole prefill spends beyond the
    weights (convolution positions recomputed from the state; the delayed value's first step).
    ``extra_conv``: more convolution state at the conv state's dtype, beside conv_dim × kernel
    (Qwen4-Exp's per-layer n-gram embedding: its own dilated conv's last inputs; that conv's FLOPs
    are counted with the weights). ``token_ids``: token ids the state keeps, int64 whatever the
    dtype (Qwen4-Exp: the last ngram_size − 1 ids its n-gram hashes need). ``piece``: a prefill
    longer than this runs through the layers in pieces of it, the state carried between them
    (xLSTM's max_inference_chunksize); 0: whole.
    """

    kind: str
    conv_dim: int
    conv_kernel: int
    heads: int
    head_dim: int
    state_size: int
    chunk: int | None = None
    state_fp32: bool = True
    extra_state: int = 0  # more recurrent state beside the matrices (mLSTM: normalizer, stabilizer)
    conv_fp32: bool = False
    elementwise_conv_dim: int = 0
    step_flops: int = 0
    prefill_flops: int = 0
    extra_conv: int = 0
    token_ids: int = 0
    piece: int = 0

    @property
    def conv_elements(self) -> int:
        """Convolution state per sequence: conv_dim channels × conv_kernel columns (RG-LRU: the
        kernel − 1 inputs a step needs beside the new one), + extra_conv."""
        columns = self.conv_kernel - 1 if self.kind == RG_LRU else self.conv_kernel
        return self.conv_dim * columns + self.extra_conv

    @property
    def state_elements(self) -> int:
        """Recurrent state per sequence: heads × head_dim × state_size (+ extra_state)."""
        return self.heads * self.head_dim * self.state_size + self.extra_state


@dataclass(frozen=True)
class Run:
    """Layer indices i with ``start <= i < stop`` and ``(i - origin) % period < width``.

    One run stands for a contiguous span (``width == period``), every k-th layer (``width == 1``) or
    a repeating block ("5 of every 6"), however many layers it holds: sizes are computed, never
    enumerated, so a config's layer count costs nothing.
    """

    start: int
    stop: int
    origin: int = 0
    period: int = 1
    width: int = 1

    def _upto(self, x: int) -> int:
        """Members of the unbounded pattern below ``x`` (relative to a fixed point; differences only)."""
        q, r = divmod(x - self.origin, self.period)
        return q * self.width + min(r, self.width)

    def __len__(self) -> int:
        return max(0, self._upto(self.stop) - self._upto(self.start)) if self.stop > self.start else 0

    def __contains__(self, i: object) -> bool:
        return (
            isinstance(i, int)
            and self.start <= i < self.stop
            and (i - self.origin) % self.period < self.width
        )

    def __iter__(self) -> Iterator[int]:
        i = self.start
        while i < self.stop:
            offset = (i - self.origin) % self.period
            if offset < self.width:
                yield i
                i += 1
            else:
                i += self.period - offset

    @property
    def first(self) -> int:
        return next(iter(self))

    @property
    def last(self) -> int:
        """The largest member (the run must not be empty)."""
        x = self.stop - 1
        offset = (x - self.origin) % self.period
        return x if offset < self.width else x - (offset - self.width + 1)

    def describe(self) -> str:
        """0..31, 5..47 every 6th, 0..46 (5 of every 6), or the index alone."""
        first, last = self.first, self.last
        if first == last:
            return str(first)
        if self.width >= self.period or len(self) == last - first + 1:
            return f"{first}..{last}"
        if self.width == 1:
            return f"{first}..{last} every {_ordinal(self.period)}"
        return f"{first}..{last} ({self.width} of every {self.period})"


def _ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


@dataclass(frozen=True, eq=False)
class LayerSet:
    """A set of layer indices as disjoint :class:`Run` s: its size and description cost O(runs).

    ``len``, ``in`` and iteration (ascending) work as on a tuple of indices; only iteration is
    proportional to the number of layers, and only output that lists every layer iterates.
    """

    runs: tuple[Run, ...]

    @classmethod
    def span(cls, start: int, stop: int) -> LayerSet:
        """Layers start..stop-1."""
        return cls((Run(start, stop, start, 1, 1),) if stop > start else ())

    @classmethod
    def of(cls, indices: Iterable[int]) -> LayerSet:
        """Explicit indices (from a config's list: bounded by the input), merged into spans."""
        runs: list[Run] = []
        begin = prev = None
        for i in sorted(set(indices)):
            if prev is not None and i == prev + 1:
                prev = i
                continue
            if begin is not None and prev is not None:
                runs.append(Run(begin, prev + 1, begin, 1, 1))
            begin = prev = i
        if begin is not None and prev is not None:
            runs.append(Run(begin, prev + 1, begin, 1, 1))
        return cls(tuple(runs))

    def __len__(self) -> int:
        return self._size

    @functools.cached_property
    def _size(self) -> int:
        """Computed once: formulas ask a group's size many times, and a config's list of layer
        kinds can make thousands of runs."""
        return sum(len(r) for r in self.runs)

    def __eq__(self, other: object) -> bool:
        """The same layers, however the runs spell them (compared index by index: for tests)."""
        if not isinstance(other, LayerSet):
            return NotImplemented
        if self.runs == other.runs:
            return True
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash((len(self), next(iter(self), None)))

    def __bool__(self) -> bool:
        return any(len(r) for r in self.runs)

    def __contains__(self, i: object) -> bool:
        return any(i in r for r in self.runs)

    def __iter__(self) -> Iterator[int]:
        return heapq.merge(*(iter(r) for r in self.runs))

    def describe(self, *, most: int = 6) -> str:
        """A compact description: ``0..31``, ``5..47 every 6th``, ``0,3,7``; long lists elided."""
        runs = [r for r in self.runs if len(r)]
        parts = [r.describe() for r in sorted(runs, key=lambda r: r.first)]
        if len(parts) > most:
            parts = [*parts[: most - 1], f"… ({len(parts) - most + 1} more)"]
        return ",".join(parts)


@dataclass(frozen=True)
class LayerGroup:
    """Decoder layers that share one structure; tensor names carry ``{i}`` for the layer index.

    ``attention`` is None for a layer without softmax attention (a Mamba layer); ``mixer`` describes
    a sequence mixer other than attention, with the state it keeps (None: attention only).
    ``cross_attention``: an encoder–decoder's decoder layer also attends to the encoder's output
    (all source tokens, K and V computed once per source token and cached).

    Looped layers (HRM's cycles, Dory's recurrent section, Inkling 2 Loop's passes) run ``repeats``
    times per token: FLOPs count every run, parameters once; the cache holds ``cached_repeats``
    copies per layer (default: one per run, as when every run writes its own cache slot). A tensor
    only some runs use says how many (``Tensor.repeats``).
    """

    name: str
    layers: LayerSet
    tensors: tuple[Tensor, ...]
    attention: Attention | None
    mixer: Mixer | None = None
    cross_attention: Attention | None = None
    repeats: int = 1
    cached_repeats: int | None = None
    # routed experts a token uses in this group when not the model's num_experts_per_tok
    # (dots3-note's vision tower: each MoE layer its own expert count and top-k)
    experts_per_tok: int | None = None

    @property
    def runs(self) -> int:
        """Layer applications per token: layers × repeats (what FLOPs count)."""
        return len(self.layers) * self.repeats

    def tensor_runs(self, t: Tensor) -> int:
        """Applications per token of the layer tensor ``t``: layers × the runs that use it."""
        return len(self.layers) * (self.repeats if t.repeats is None else t.repeats)

    @property
    def cached_runs(self) -> int:
        """Caches the group keeps per sequence: layers × cached repeats (what KV bytes count)."""
        cached = self.repeats if self.cached_repeats is None else self.cached_repeats
        return len(self.layers) * cached


@dataclass(frozen=True)
class MoE:
    """Routed experts: ``num_experts`` per MoE layer, ``experts_per_tok`` of them used per token."""

    num_experts: int
    experts_per_tok: int | None  # None: the config leaves it unset (DeepseekV2Config's default)
    shared_experts: int = 0
    # transformers' forward multiplies every token by all E routed experts, the unrouted ones'
    # inputs zeroed (Llama 4's Llama4TextExperts: one dense bmm); llmcalc's figures count the k a
    # routed kernel runs, and flops says how many more the dense run does
    dense_run: bool = False
    # zero-computation experts besides the E real ones (LongCat-Flash): a token's k picks may be
    # identities that cost nothing; the figures count all k as real experts, the most a token costs
    zero_experts: int = 0


@dataclass(frozen=True)
class Shape:
    """The headline dimensions shown beside every figure."""

    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tied_embeddings: bool
    max_position_embeddings: int | None = None


@dataclass(frozen=True)
class Part:
    """A part of a whole model besides its main one (the language model): a vision or audio encoder,
    a projector, the encoder of an encoder–decoder. Tensors are named as in the whole model's
    ``named_parameters``; ``tensors`` are those outside its repeated layers.

    Per input (one image): ``input_tokens`` is how many tokens each of its matmuls meets, by
    component prefix (the longest prefix of a tensor's component that is listed; ``""`` for the
    rest): a ViT's patch embedding meets the patches, its layers the patches and a class token.
    Its layer groups attend bidirectionally over ``input_tokens`` of ``"layers"``.
    ``context_tokens`` is how many tokens one input adds to the language model's context (after
    merging or pooling); ``input_size`` what the figures assume (an image's side in pixels).
    ``per_token``: every token of the main part goes on through this part (an encoder LM's
    masked-LM head after its encoder), so its matmuls are in the per-token figures, not per input.
    ``cross_tokens``: tokens one input puts before the language model's cross-attention layers,
    whose K and V are computed once per input and cached (Llama 3.2 Vision: every tile's patches
    and class token); 0 where the language model reads the input through its context alone.
    """

    name: str  # "vision", "projector", "audio", "encoder"
    tensors: tuple[Tensor, ...]
    layer_groups: tuple[LayerGroup, ...] = ()
    shape: Shape | None = None
    input_tokens: tuple[tuple[str, int], ...] = ()
    context_tokens: int = 0
    input_size: int | None = None
    per_token: bool = False
    # FLOPs per input that tensors × tokens do not give (SigLIP's attention-pooling head: one
    # query over all tokens)
    extra_flops: int = 0
    # times the part runs per input (LLaVA-NeXT's tower: the base image and each crop); FLOPs only
    passes: int = 1
    # (weight, attention) FLOPs per input when the family computes them whole (SAM's windowed
    # attention with padding and relative positions); None: from the tensors and input_tokens
    input_flops: tuple[int, int] | None = None
    # what one input is: "image" (the per-image figures and image tokens sum these parts), or
    # "audio" (one clip, its figures apart: Phi-4-multimodal's speech encoder)
    input: str = "image"
    cross_tokens: int = 0
    # an audio part's one input in words ("one second of speech") where its FLOPs per input are
    # computed (and held to FlopCounterMode); empty: they are not computed, and flops says so
    clip: str = ""

    def all_tensors(self) -> Iterator[tuple[Tensor, LayerGroup | None]]:
        for t in self.tensors:
            yield t, None
        for g in self.layer_groups:
            for t in g.tensors:
                yield t, g

    def tokens_for(self, key: str) -> int:
        """Tokens one input sends through the tensors of breakdown key ``key`` (``layers/…`` inside
        the layers): the longest listed prefix, else the ``""`` entry, else 0."""
        best, tokens = -1, 0
        for prefix, n in self.input_tokens:
            if (key == prefix or key.startswith(prefix + "/") or prefix == "") and len(prefix) > best:
                best, tokens = len(prefix), n
        return tokens


@dataclass(frozen=True)
class Origin:
    """Where a config was read: ``source`` is path, bundled, cache (the local Hugging Face cache),
    hub (downloaded now), sibling (an instruction-tuned sibling's repo id read as its base's
    bundled config: ``path``) or ollama (a model Ollama pulled: ``path`` its GGUF blob);
    ``repo_id`` for cache, hub and sibling, ``revision`` for cache and hub."""

    source: str
    path: str
    repo_id: str | None = None
    revision: str | None = None


@dataclass(frozen=True)
class ModelSpec:
    """A model as llmcalc sees it: its shape, its named tensors and where they came from.

    ``tensors`` are those outside the decoder layers (embeddings, final norm, lm_head …);
    ``notes`` say what was assumed (stated defaults, a text model taken from a multimodal config).
    """

    name: str
    model_type: str
    family: str
    shape: Shape
    tensors: tuple[Tensor, ...]
    layer_groups: tuple[LayerGroup, ...]
    moe: MoE | None = None
    source: str | None = None
    notes: tuple[str, ...] = ()
    expected: Mapping[str, Any] = field(default_factory=dict)
    # parameters a checkpoint holds that transformers does not build, not in any count (mtp_params)
    unbuilt: tuple[tuple[str, int], ...] = ()
    config: Mapping[str, Any] = field(default_factory=dict)
    origin: Origin | None = None
    # FLOPs per token of matmuls across depth, not across the sequence (Inkling 2's attention over
    # block outputs; DeepSeek-V4's hyper-connections mixing their residual streams): constant in
    # the context, counted with the mixers; depth_flops_what says what they are, for --explain
    depth_flops_per_token: int = 0
    depth_flops_what: str = "attention over the layers' block outputs"
    # bytes per token and sequence the cache keeps beside the layers' keys and values, whatever
    # the cache dtype (Qwen4-Exp: the first QSA layer's 3 int64 position ids, for every indexer)
    cache_bytes_per_token: int = 0
    # why the forward pass is not modelled, where its FLOPs and cache are no formula of the weights
    # (a byte model whose patches depend on the text; prompt tokens prepended to every sequence):
    # counts stand, and flops, memory and the plans on them refuse in one line (require_forward)
    forward_unmodelled: str = ""
    # tokens the model prepends to every sequence inside its forward (CPM-Ant's prompt tokens):
    # they run through the layers, are attended to and cached, but not through the head
    prefix_tokens: int = 0
    # FLOPs once per sequence whatever its length (BigBird's pooler: its first token through d × d)
    sequence_flops: int = 0
    # what attention runs past a layer's Attention.sparse_beyond, for the refusal
    sparse_what: str = ""
    # "formula": a family module describes it; "measured": read off transformers' model (seconds it took)
    method: str = "formula"
    measured_seconds: float = 0.0
    # a whole model: its other parts (vision tower, projector …); tensors and layer_groups above are
    # its main part, named main_part, which everything per token (FLOPs, KV cache) reads
    parts: tuple[Part, ...] = ()
    main_part: str = "language"

    @property
    def num_layers(self) -> int:
        return self.shape.num_layers

    def require_forward(self) -> None:
        """Refuse a figure of the forward pass (FLOPs, cache bytes) this spec does not model."""
        if self.forward_unmodelled:
            raise UsageError(f"{self.name}: FLOPs and cache bytes are not computed: "
                             f"{self.forward_unmodelled}")

    def require_token_plans(self, what: str) -> None:
        """Refuse a plan (``what``: training, latency …) that takes every token through every
        matmul once, for a model whose forward also runs prompt tokens of its own or a matmul
        once per sequence: flops and memory count those, the plans do not."""
        extra = (f"its {self.prefix_tokens} prompt tokens run through the layers of every sequence"
                 if self.prefix_tokens else
                 f"{self.sequence_flops:,} of its FLOPs are once per sequence (a pooler)"
                 if self.sequence_flops else "")
        if extra:
            raise UsageError(f"{self.name}: no {what}: {extra}, which the plan does not follow "
                             "(flops and memory count them)")

    def main_tensors(self) -> Iterator[tuple[Tensor, LayerGroup | None]]:
        """The main part's tensor entries (the language model of a whole model), with their group."""
        for t in self.tensors:
            yield t, None
        for g in self.layer_groups:
            for t in g.tensors:
                yield t, g

    def all_tensors(self) -> Iterator[tuple[Tensor, LayerGroup | None]]:
        """Every tensor entry of the whole model once (main part, then the other parts), with the
        layer group it repeats in (None outside the layers)."""
        yield from self.main_tensors()
        for p in self.parts:
            yield from p.all_tensors()

    def part(self, name: str) -> Part | None:
        return next((p for p in self.parts if p.name == name), None)

    @property
    def part_names(self) -> tuple[str, ...]:
        """The main part first, then the others, as ``--part`` takes them."""
        return (self.main_part, *(p.name for p in self.parts)) if self.parts else ()

    @property
    def num_named_tensors(self) -> int:
        """How many entries :meth:`named_shapes` yields, computed without listing them."""
        return sum(
            t.copies * (len(g.layers) if g is not None else 1)
            for t, g in self.all_tensors()
            if t.tied_to is None
        )

    def listed_names(self) -> dict[str, str]:
        """Owner name → the name ``named_parameters`` lists it under, where a tied entry's module
        comes first (``Tensor.named_first``); only for owners and tied entries both in this spec."""
        return {
            t.tied_to: t.name
            for t, _ in self.all_tensors()
            if t.tied_to is not None and t.named_first
        }

    def experts_per_tok(self) -> int:
        """Routed experts one token uses (0 without experts); a config that leaves the number
        unset has a total but no per-token figure: refused here, naming the field."""
        if self.moe is None:
            return 0
        if self.moe.experts_per_tok is None:
            from llmcalc.errors import ConfigError

            raise ConfigError(self.name, "num_experts_per_tok is null: the experts a token uses, "
                              "and so its active parameters and FLOPs, are undefined")
        return self.moe.experts_per_tok

    def named_shapes(self) -> Iterator[tuple[str, tuple[int, ...]]]:
        """Concrete (name, shape) of every parameter, tied ones once, as ``named_parameters`` gives.

        Stacked experts keep their expert dimension; ``{e}`` names expand to one entry per expert.
        A shared tensor is named as its first registered module names it (``Tensor.named_first``).
        """
        listed = self.listed_names()
        for t, g in self.all_tensors():
            if t.tied_to is not None:
                continue
            for i in g.layers if g is not None else (None,):
                name = listed.get(t.name, t.name) if i is None else t.name.replace(LAYER, str(i))
                if EXPERT in name:
                    for e in range(t.experts):
                        yield name.replace(EXPERT, str(e)), t.shape
                else:
                    yield name, t.shape


CACHE_NOTE = "KV cache:"  # a spec note that memory figures are read with (a family's cache layout)


def require_dense(spec: ModelSpec, attention: Attention, *, tokens: int) -> None:
    """Refuse a figure at ``tokens`` where ``attention`` is block-sparse (``sparse_beyond``)."""
    if attention.sparse_beyond is not None and tokens > attention.sparse_beyond:
        past = attention.sparse_beyond
        raise UsageError(f"{spec.name}: FLOPs past {past:,} token{'' if past == 1 else 's'} "
                         f"({tokens:,} asked) are not computed: {spec.sparse_what} runs there, "
                         "which these formulas do not follow")


def image_cross_tokens(spec: ModelSpec) -> int:
    """Tokens one image puts before the language model's cross-attention layers (Llama 3.2
    Vision: every tile's patches and class token); 0 where cross-attention, if any, reads an
    encoder's output."""
    return sum(p.cross_tokens for p in spec.parts)


def image_cross_source(
    spec: ModelSpec, *, images: int, source_len: int | None
) -> tuple[ModelSpec, int | None]:
    """The spec and cross-attention source for ``images`` images of a model whose cross-attention
    reads them: images × :func:`image_cross_tokens` tokens, or, without an image, the language
    model as a text-only input runs it (MllamaTextModel skips a cross-attention layer when it has
    no image and nothing cached: its MLP too). Other models: as given."""
    per_image = image_cross_tokens(spec)
    # layers that only cross-attend (no self-attention): a language model that reads images so,
    # alone (--part language) it takes --source-len vision tokens, or none
    image_only = any(g.attention is None and g.cross_attention is not None
                     for g in spec.layer_groups)
    if not per_image and (not image_only or source_len is not None):
        return spec, source_len
    if per_image and source_len is not None:
        raise UsageError(f"--source-len: {spec.name}'s cross-attention reads its images' tokens "
                         f"({per_image:,} an image); give --images")
    if images:
        return spec, images * per_image
    kept = tuple(g for g in spec.layer_groups if g.attention is not None or g.cross_attention is None)
    skipped = sum(len(g.layers) for g in spec.layer_groups if g not in kept)
    note = (f"no image: the {skipped} cross-attention layers are skipped (--images N for a "
            "context with images)")
    return replace(spec, layer_groups=kept, notes=(*spec.notes, note)), None


def context_notes(spec: ModelSpec, *, ctx: int) -> tuple[str, ...]:
    """What a figure at ``ctx`` should be read with: a context past max_position_embeddings, a
    family's note on its KV cache."""
    # a measured model: say what was measured and what was left out (attention, KV cache)
    measured = tuple(n for n in spec.notes
                     if spec.method == "measured" or n.startswith(CACHE_NOTE))
    limit = spec.shape.max_position_embeddings
    if limit is None or ctx <= limit:
        return measured
    return (
        *measured,
        f"context {ctx:,} is above the model's max_position_embeddings ({limit:,}); "
        "the figures assume it runs there anyway",
    )


def spec_part(spec: ModelSpec, name: str) -> ModelSpec:
    """One part of a whole model alone, as a spec of its own (``--part``): the main part without the
    others, or another part's tensors and layers as the main ones. Raises ``KeyError`` for a name
    the model has no part of (the caller says which names it has)."""
    import dataclasses

    if name == spec.main_part:
        return dataclasses.replace(
            spec,
            parts=(),
            notes=(*spec.notes, f"--part {name}: the {name} model alone, without "
                   + ", ".join(p.name for p in spec.parts)),
        )
    part = spec.part(name)
    if part is None:
        raise KeyError(name)
    shape = part.shape or Shape(0, 0, 0, 0, 0, 0, 0, False)
    # an encoder's layers attend to their input and cache nothing: kv_shared (caches none) keeps
    # their attention FLOPs and gives no KV cache
    groups = tuple(
        g if g.attention is None
        else dataclasses.replace(g, attention=dataclasses.replace(g.attention, kv_shared=True))
        for g in part.layer_groups
    )
    return dataclasses.replace(
        spec,
        shape=shape,
        tensors=part.tensors,
        layer_groups=groups,
        moe=None,
        parts=(),
        main_part=name,
        unbuilt=(),
        expected={},
        notes=(*spec.notes, f"--part {name}: the {name} part alone; per-token figures treat its "
               "tokens as a sequence; it keeps no KV cache"),
    )
