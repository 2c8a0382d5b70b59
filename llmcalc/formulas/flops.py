"""Forward and training FLOPs, exactly, from a :class:`ModelSpec` alone.

Conventions (one multiply-add = 2 FLOPs, as ``torch.utils.flop_counter`` counts a matmul):

- **weight FLOPs** per token: 2 × the elements of every matrix a token is multiplied by — each
  ``Tensor`` with ``matmul=True``: all linear layers, the lm_head whether or not it is tied, a MoE
  router and shared experts, and only k of the E routed experts. The embedding lookup, norms, biases,
  activations, softmax and residual adds are elementwise or lookups and are not counted (neither
  does FlopCounterMode count them).
- **attention FLOPs** for one query over n keys, per layer: 2·n·h·d_qk for the scores QKᵀ plus
  2·n·h·d_v for the weighted sum of values (= 4·n·d for multi-head attention with h·d_head = d);
  h is the number of query heads, whatever the number of kv heads (GQA/MQA share K and V, not the
  products). A sliding-window layer sees min(n, window) keys. MLA uses its own head dims.
- **per token at context n**: one token attending to n tokens (itself included): what decoding the
  n-th token with a KV cache costs.
- **per sequence** of n tokens (a prefill): every token's weight FLOPs plus, per layer, the
  query–key pairs times 2·h·(d_qk + d_v). *Full* counts all n² pairs, as FlopCounterMode counts
  attention (the mask zeroes scores but the matmuls are full); *causal* counts the pairs a causal
  or sliding-window mask keeps: Σᵢ min(i, window) for i = 1..n.
- **compressed attention** (DeepSeek-V4's CSA and HCA layers, ``Attention.compress`` m): a query
  reads its window of recent tokens plus one pooled entry per complete window of m tokens of the
  whole context, ⌊n/m⌋ (CSA: at most index_topk of them, chosen by an indexer that scores every
  entry at 2·H_I·d_I FLOPs; its weighted sum over heads is elementwise); the pooling itself (a
  softmax-weighted sum) is elementwise. *Full* per sequence: n·(n + ⌊n/m⌋) pairs (the eager path
  multiplies every query by every token and every entry), and n·⌊n/m⌋ indexer pairs.
- **encoders** (BERT, ModernBERT: ``Attention.causal`` False): attention is bidirectional, every
  token attends to every token of its sequence, so a sequence of n tokens costs n² pairs in both
  figures (ModernBERT's local layers: the pairs within the window either side in the masked one);
  "per token at context n" is one token attending to all n. An encoder caches nothing.
- **sequence mixers other than attention** (Mamba, Mamba-2: ``Mixer``): per token and layer, the
  causal depthwise convolution 2·conv_dim·kernel plus the state readout y = C·h, 2·h·p·N (h state
  heads of p × N; Mamba: d_inner channels of 1 × N). The state update h ← Ā·h + B̄·x is elementwise
  and not counted (nor does FlopCounterMode count it). Constant in the context: a decoding step
  costs the same at token 10 as at token 100k. The RG-LRU (Griffin) has the convolution only: its
  recurrence and output are elementwise, its gates block-diagonal weight matmuls. *Full* per
  sequence is what transformers' torch path runs, as FlopCounterMode counts it: the convolution
  over n + kernel − 1 padded positions, and for Mamba-2 the chunked SSD scan (Dao & Gu 2024, §6:
  2·h·(n'·Q·(N + p) + 2·n'·p·N + (c+1)²·p·N), n' = n rounded up to c chunks of Q); *causal* is
  n × the per-token figure. The gated delta rule,
  KDA, lightning attention and the mLSTM read their state twice per token; their prefills follow
  their torch paths (:func:`gated_delta_chunked_flops`, :func:`kda_chunked_flops`,
  :func:`lightning_block_flops`, :func:`mlstm_chunkwise_flops`); RWKV's WKV is elementwise (0).
  A convolution whose taps are computed per token (Inkling 2's dynamic K/V convs) runs as
  elementwise products and is not counted either; its state is. Attention across depth (Inkling 2's
  queries over the layers' block outputs, 2·q·s·d for scores and values each) is counted per token
  with the mixers, constant in the context; so is DeepSeek-V4's mixing of its hyper-connection
  streams (a streams × streams matrix times the streams, 2·s²·d, twice per layer). A weight a
  token meets once per head (Inkling's relative-bias bank, ``Tensor.uses``) counts 2 × its
  elements × the heads. A looped layer (HRM, Dory, Inkling 2 Loop: ``LayerGroup.repeats``) counts
  every run; a tensor only some runs use (Inkling 2 Loop's message gates, idle in the first pass:
  ``Tensor.repeats``) counts those.
- **training** per token: forward + backward = 3 × forward (the backward pass multiplies by each
  matrix twice: once for the input gradient, once for the weight gradient; Kaplan et al. 2020 §2.1,
  the "6N" rule plus attention).

Source of the seed rule shown beside the exact figure: Kaplan et al. 2020, Table 1 (C_forward ≈ 2N +
2·n_layer·n_ctx·d_attn for the scores; the same again for the values gives 4·n·d·L).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from llmcalc.errors import UsageError
from llmcalc.formulas.counting import LM_HEAD, count, percent_off
from llmcalc.model.spec import (
    CCA,
    GATED_DELTA,
    KDA,
    LIGHTNING,
    MAMBA2,
    MLSTM,
    RG_LRU,
    RWKV,
    Attention,
    Mixer,
    ModelSpec,
    Tensor,
    context_notes,
    image_cross_source,
    image_cross_tokens,
    require_dense,
)
from llmcalc.model.tower_flops import FLOPS_PER_MAC as FLOPS_PER_MAC
from llmcalc.model.tower_flops import PartFlops as PartFlops
from llmcalc.model.tower_flops import pair_flops as pair_flops
from llmcalc.model.tower_flops import part_flops as part_flops

TRAINING_MULTIPLIER = 3  # forward 1× + backward 2× (input and weight gradients)


# ---- weights ---------------------------------------------------------------------------------------


def _experts_per_tok(spec: ModelSpec) -> int:
    return spec.experts_per_tok()


def matmul_elements(t: Tensor, spec: ModelSpec) -> int:
    """Elements of ``t`` one token is multiplied by (0 for lookups, norms, biases; k/E for experts;
    × ``uses`` for a matrix applied once per head)."""
    return t.active_numel(_experts_per_tok(spec)) * t.uses if t.matmul else 0


@dataclass(frozen=True)
class WeightTerm:
    """One weight matrix's FLOPs per token: 2 × the elements used × the layers it repeats in."""

    name: str
    key: str  # breakdown key: its component, ``layers/…`` inside the decoder layers
    shape: tuple[int, ...]
    num_layers: int | None  # None outside the decoder layers
    experts: int  # routed experts it holds (0: not routed)
    experts_per_tok: int  # k of those a token uses
    stacked: bool  # experts on the first dimension of one tensor, not one tensor per expert
    tied_to: str | None  # shares storage, but a token is still multiplied by it
    flops: int


def weight_terms(spec: ModelSpec) -> tuple[WeightTerm, ...]:
    """Every matrix a token is multiplied by, in spec order (lookups, norms, biases left out)."""
    terms = []
    # the language model; a whole model's parts are per input, but for a part every token goes
    # through (per_token: an encoder LM's head), with its breakdown key prefixed by its name
    entries = [(t, g, "") for t, g in spec.main_tensors()]
    entries += [(t, g, f"{p.name}/") for p in spec.parts if p.per_token for t, g in p.all_tensors()]
    for t, group, prefix in entries:
        elements = matmul_elements(t, spec)
        if not elements or t.per_source:  # cross-attention K, V: per source token, not per token
            continue
        # a looped layer counts every run (of those that use the tensor)
        layers = None if group is None else group.tensor_runs(t)
        if layers == 0:  # a looped layer's tensor no run uses (message gates with one pass)
            continue
        terms.append(WeightTerm(
            name=t.name,
            key=prefix + (t.component if group is None else f"layers/{t.component}"),
            shape=t.shape,
            num_layers=layers,
            experts=(spec.moe.num_experts if spec.moe else t.experts) if t.experts else 0,
            experts_per_tok=_experts_per_tok(spec) if t.experts else 0,
            stacked=t.copies == 1,
            tied_to=t.tied_to,
            flops=FLOPS_PER_MAC * elements * (1 if layers is None else layers),
        ))
    return tuple(terms)


def weight_flops_breakdown(spec: ModelSpec) -> dict[str, int]:
    """Weight FLOPs per token by slash-separated component (``layers/…`` summed over all layers).

    Only components with matmuls appear; the values add up to :func:`weight_flops_per_token`.
    """
    return _by_key(weight_terms(spec))


def _by_key(terms: tuple[WeightTerm, ...]) -> dict[str, int]:
    out: dict[str, int] = {}
    for term in terms:
        out[term.key] = out.get(term.key, 0) + term.flops
    return out


def weight_flops_per_token(spec: ModelSpec) -> int:
    """2 × the matrix elements one token is multiplied by (tied lm_head included, k/E of experts)."""
    return sum(weight_flops_breakdown(spec).values())


def dense_run_flops_per_token(spec: ModelSpec) -> int:
    """FLOPs per token a forward that multiplies every token by all E routed experts does beyond
    the k it routes to (``MoE.dense_run``: Llama 4's eager experts, a dense bmm with the unrouted
    inputs zeroed); 0 where experts run routed. Experts [E, …] used k of E: 2·(E − k)/E × their
    elements, per layer they repeat in."""
    if spec.moe is None or not spec.moe.dense_run:
        return 0
    k = _experts_per_tok(spec)
    return sum(
        FLOPS_PER_MAC * (t.numel - t.active_numel(k)) * (1 if g is None else g.tensor_runs(t))
        for t, g in spec.main_tensors() if t.matmul and t.experts
    )


def routed_experts_note(spec: ModelSpec, *, ctx: int) -> tuple[str, ...]:
    """What the FLOPs count of routed experts where transformers runs them all (``MoE.dense_run``),
    or where a pick may be a zero-computation expert (``MoE.zero_experts``)."""
    if spec.moe is not None and spec.moe.zero_experts:
        k, z = _experts_per_tok(spec), spec.moe.zero_experts
        return (f"routed experts: all {k} picks of a token counted as real experts, the most it "
                f"costs; those that pick one of the {z} zero-computation experts (identities) "
                "cost nothing",)
    extra = dense_run_flops_per_token(spec)
    if not extra or spec.moe is None:
        return ()
    k, e = _experts_per_tok(spec), spec.moe.num_experts
    return (f"routed experts: the {k} of {e} a token is routed to, as a routed kernel runs them; "
            f"transformers' eager forward multiplies every token by all {e} (the others' inputs "
            f"zeroed), {extra:,} FLOPs more per token ({ctx * extra:,} per sequence)",)


# ---- attention -------------------------------------------------------------------------------------


def causal_pairs(*, ctx: int, window: int | None) -> int:
    """Query–key pairs a causal mask keeps over ``ctx`` tokens: Σᵢ min(i, window), i = 1..ctx."""
    # full causal: n(n+1)/2; with a window w < n: w(w+1)/2 for the first w queries + (n−w)·w after
    if window is None or window >= ctx:
        return ctx * (ctx + 1) // 2
    return window * (window + 1) // 2 + (ctx - window) * window


def chunked_causal_pairs(*, ctx: int, chunk: int) -> int:
    """Pairs a chunked causal mask keeps (Llama 4): each full chunk c(c+1)/2, the last r(r+1)/2."""
    full, rest = divmod(ctx, chunk)
    return full * (chunk * (chunk + 1) // 2) + rest * (rest + 1) // 2


def bidirectional_pairs(*, ctx: int, window: int | None) -> int:
    """Query–key pairs of bidirectional attention over ``ctx`` tokens: all n², or with a window of
    w either side (|i − j| ≤ w) n + 2·Σ_{d=1..m} (n − d), m = min(w, n − 1)."""
    if window is None or window >= ctx - 1:
        return ctx * ctx
    return ctx + 2 * (window * ctx - window * (window + 1) // 2)


def attention_causal_pairs(attention: Attention, *, ctx: int) -> int:
    """Pairs one layer's mask keeps: causal (chunked, windowed, top-k or full: query i reads
    min(i, window, topk) keys) or, for an encoder's bidirectional attention, every pair (within
    the window either side)."""
    if not attention.causal:
        return bidirectional_pairs(ctx=ctx, window=attention.window)
    if attention.compress:  # the window's pairs and each query's pooled entries (≤ topk)
        return causal_pairs(ctx=ctx, window=attention.window) + compressed_pairs(
            ctx=ctx, ratio=attention.compress, topk=attention.topk)
    if attention.chunked and attention.window is not None:
        return chunked_causal_pairs(ctx=ctx, chunk=attention.window)
    if attention.index_block and attention.topk is not None and attention.window is None:
        return qsa_causal_pairs(ctx=ctx, budget=attention.topk, block=attention.index_block)
    caps = [c for c in (attention.window, attention.topk) if c is not None]
    return causal_pairs(ctx=ctx, window=min(caps) if caps else None)


def qsa_causal_pairs(*, ctx: int, budget: int, block: int) -> int:
    """Pairs QSA's softmax reads over ``ctx`` tokens: Σᵢ min(i, budget + i mod b), i = 1..ctx
    (budget a multiple of b). Query i reads all i keys while ⌊i/b⌋·b ≤ budget, i.e. for
    i < budget + b; after that the budget and its incomplete block's i mod b keys, which cycle
    through 0..b−1 from i = budget + b on."""
    head = min(ctx, budget + block - 1)
    pairs = head * (head + 1) // 2
    rest = ctx - head  # queries budget + b … ctx
    cycles, left = divmod(rest, block)
    return pairs + budget * rest + cycles * (block * (block - 1) // 2) + left * (left - 1) // 2


def block_pairs(*, ctx: int, block: int) -> int:
    """Query–block pairs QSA's indexer scores over ``ctx`` tokens: Σᵢ ⌊i/b⌋, i = 1..ctx
    (= b·q(q − 1)/2 + q·(r + 1) for ctx = q·b + r)."""
    q, r = divmod(ctx, block)
    return block * q * (q - 1) // 2 + q * (r + 1)


def compressed_pairs(*, ctx: int, ratio: int, topk: int | None) -> int:
    """Query–entry pairs of compressed attention over ``ctx`` tokens (DeepSeek-V4's CSA and HCA):
    query i reads the ⌊i/m⌋ entries its past has closed, at most K = topk of them:
    Σᵢ min(⌊i/m⌋, K), i = 1..ctx. Below i = K·m all of them (:func:`block_pairs`), then K each."""
    if topk is None:
        return block_pairs(ctx=ctx, block=ratio)
    head = min(ctx, topk * ratio - 1)
    return block_pairs(ctx=head, block=ratio) + topk * (ctx - head)


def index_flops(attention: Attention, *, pairs: int) -> int:
    """The sparse-attention indexer scoring ``pairs`` query–key pairs (0 without an indexer)."""
    return pairs * attention.index_pair_flops


def attention_layer_flops_per_token(attention: Attention, *, ctx: int) -> int:
    """One token in one layer: the keys its softmax reads × 2·h·(d_qk + d_v), plus the indexer
    scoring every key it sees (DeepSeek sparse attention)."""
    return attention.keys_attended(ctx) * pair_flops(attention) + index_flops(
        attention, pairs=attention.keys_indexed(ctx)
    )


def _check_ctx(ctx: int) -> None:
    if ctx <= 0:
        raise UsageError(f"ctx must be a positive number of tokens, got {ctx}")


def position_flops(attention: Attention, *, ctx: int) -> int:
    """One query's scores against relative positions, 2·h·d_qk each: DeBERTa's c2p / p2c
    (``position_keys``, whatever the length), XLNet's a·n + b over n = ``ctx`` tokens."""
    keys = attention.position_keys + attention.relative_count(ctx)
    return FLOPS_PER_MAC * attention.heads * attention.qk_head_dim * keys


def relative_proj_flops(attention: Attention, *, ctx: int) -> int:
    """XLNet: the relative positions' keys projected once per sequence of ``ctx`` tokens,
    (a·n + b) positions × 2 × d × h·d_qk (transformers XLNetRelativeAttention: k_head_r =
    einsum("ibh,hnd->ibnd", r, self.r), r [a·n + b, batch, d])."""
    return FLOPS_PER_MAC * attention.relative_count(ctx) * attention.relative_proj


def attention_flops_per_token(spec: ModelSpec, *, ctx: int) -> int:
    """One token attending to ``ctx`` tokens, all layers: Σ layers · keys · 2·h·(d_qk + d_v)
    (+ its relative-position scores, DeBERTa)."""
    _check_ctx(ctx)
    ctx = layer_tokens(spec, ctx=ctx)
    return sum(
        runs * (attention_layer_flops_per_token(a, ctx=ctx) + position_flops(a, ctx=ctx))
        for runs, a in _dense_attention(spec, tokens=ctx)
    )


def layer_tokens(spec: ModelSpec, *, ctx: int) -> int:
    """Tokens the layers run on and attend to for a sequence of ``ctx``: ctx, plus the prompt
    tokens a model prepends inside its forward (``ModelSpec.prefix_tokens``: CPM-Ant)."""
    return ctx + spec.prefix_tokens


def _dense_attention(spec: ModelSpec, *, tokens: int) -> list[tuple[int, Attention]]:
    """(runs, attention) of each layer group with attention, each held to attend in full at
    ``tokens`` (block-sparse or chunked attention past its threshold is refused: require_dense)."""
    out = [(g.runs, g.attention) for g in spec.layer_groups if g.attention is not None]
    for _, a in out:
        require_dense(spec, a, tokens=tokens)
    return out


# ---- sequence mixers other than attention (SSM) ---------------------------------------------------


def conv_flops_per_token(m: Mixer) -> int:
    """The causal depthwise convolution: 2 · conv_dim · kernel per token (less the channels whose
    taps are per-token products, elementwise by torch's convention)."""
    return FLOPS_PER_MAC * (m.conv_dim - m.elementwise_conv_dim) * m.conv_kernel


def readout_flops_per_token(m: Mixer) -> int:
    """The state readout y = C·h: 2 · h · p · N per token (Gu & Dao 2023 Alg. 2; Dao & Gu 2024)."""
    return FLOPS_PER_MAC * m.heads * m.head_dim * m.state_size


# State reads (y = C·h) per token by mixer kind (1 unless listed): the gated delta rule also reads
# the state with the key (S·k) before its rank-1 update (KDA too; lightning attention forms kᵀ·v); the RG-LRU's output is its state itself
# (h ← a ⊙ h + x, elementwise: no matmul), its gates are weights (in the weight FLOPs).
STATE_READS = {GATED_DELTA: 2, KDA: 2, LIGHTNING: 2, MLSTM: 2, RG_LRU: 0, RWKV: 0}


def mixer_flops_per_token(m: Mixer) -> int:
    """One decoding step of one layer's mixer: convolution + state reads, whatever the context;
    lightning attention forms kᵀ·v (2·h·dk·dv) before reading the state with q."""
    if m.kind == CCA:
        return m.step_flops
    if m.kind == RWKV:
        return 0  # token shift and WKV: elementwise per channel, no matmul (Peng et al. 2023 §4)
    if m.kind == MLSTM:  # C += k·vᵀ, q·C, q·n (Beck et al. 2024, eq. 19-27)
        return 2 * readout_flops_per_token(m) + FLOPS_PER_MAC * m.heads * m.state_size
    return conv_flops_per_token(m) + STATE_READS.get(m.kind, 1) * readout_flops_per_token(m)


def gated_delta_chunked_flops(m: Mixer, *, ctx: int) -> int:
    """The gated delta rule over ``ctx`` tokens as transformers' torch path runs it (chunks of
    Q = 64, Yang et al. 2024 §3): per head, within chunks K_β·Kᵀ and Q·Kᵀ (2·n'·Q·dk each), then per
    chunk the state read with K and Q (2·Q·dk·dv each), the intra-chunk product with the values
    (2·Q·Q·dv) and the state update Kᵀ·V (2·Q·dk·dv); the triangular solves are not matmuls
    FlopCounterMode counts. n' = ctx padded to whole chunks; h value heads, dk = state_size,
    dv = head_dim."""
    q = m.chunk or ctx
    padded = -(-ctx // q) * q
    dk, dv = m.state_size, m.head_dim
    return FLOPS_PER_MAC * m.heads * padded * (2 * q * dk + q * dv + 3 * dk * dv)


def kda_chunked_flops(m: Mixer, *, ctx: int) -> int:
    """Kimi Delta Attention over ``ctx`` tokens as transformers' torch path runs it
    (``chunk_kimi_delta_attention``, chunks of Q = 64): per head, within chunks the solved
    intra-chunk matrix times the values and the decayed keys (2·n'·Q·dv + 2·n'·Q·dk), then per chunk
    the state read with the decayed queries and with the keys (2·Q·dk·dv each), the intra-chunk
    product with the new values (2·Q·Q·dv) and the state update (2·Q·dk·dv). The per-channel decay
    makes the intra-chunk key products elementwise multiply-and-sums, which FlopCounterMode does
    not count (nor does llmcalc). n' = ctx padded to whole chunks; dk = state_size, dv = head_dim."""
    q = m.chunk or ctx
    padded = -(-ctx // q) * q
    dk, dv = m.state_size, m.head_dim
    return FLOPS_PER_MAC * m.heads * padded * (q * dk + 2 * q * dv + 3 * dk * dv)


def lightning_block_flops(m: Mixer, *, ctx: int) -> int:
    """Lightning attention over ``ctx`` tokens as transformers' torch path runs it (MiniMax-01
    §2.2.1, blocks of B = block_size, the last one shorter, not padded): per head and block of b
    tokens, within the block Q·Kᵀ (2·b²·dk) and its decayed product with V (2·b²·dv), across
    blocks the state read Q·S (2·b·dk·dv) and the block's Kᵀ·V added to it (2·b·dk·dv); the decays
    are elementwise. dk = state_size, dv = head_dim."""
    b = m.chunk or ctx
    full, rest = divmod(ctx, b)
    squares = full * b * b + rest * rest  # Σ b² over the blocks
    dk, dv = m.state_size, m.head_dim
    return FLOPS_PER_MAC * m.heads * (squares * (dk + dv) + 2 * ctx * dk * dv)


def mlstm_chunkwise_flops(m: Mixer, *, ctx: int) -> int:
    """The mLSTM over ``ctx`` tokens as transformers' native inference path runs it: a prefill
    longer than ``m.piece`` (max_inference_chunksize) in pieces of it, each from the state the
    last left (xLSTMModel.forward), else whole; each piece as :func:`_mlstm_piece_flops`."""
    p = m.piece if 0 < m.piece < ctx else ctx
    whole, rest = divmod(ctx, p)
    return whole * _mlstm_piece_flops(m, tokens=p) + (_mlstm_piece_flops(m, tokens=rest) if rest else 0)


def _mlstm_piece_flops(m: Mixer, *, tokens: int) -> int:
    """The mLSTM over one call of ``tokens`` (``wrap_chunkwise_arbitrary_sequence_length``): the
    first n' = ⌊tokens / c⌋·c in chunks of c, per head the chunk's state update Kᵀ·V (2·c·dk·dv),
    within chunks Q·Kᵀ (2·c²·dk) and its product with V (2·c²·dv), the states read with Q
    (2·c·dk·dv) and the normalizer with Q (2·c·dk); the last tokens − n' one recurrent step each
    (:func:`mixer_flops_per_token`). The gates and the stabilizer are elementwise. dk =
    state_size, dv = head_dim."""
    c = m.chunk or tokens
    chunked = tokens // c * c
    dk, dv = m.state_size, m.head_dim
    per_head = chunked * (2 * dk * dv + c * dk + c * dv + dk)
    return FLOPS_PER_MAC * m.heads * per_head + (tokens - chunked) * mixer_flops_per_token(m)


def ssd_chunked_flops(m: Mixer, *, ctx: int) -> int:
    """Mamba-2's chunked scan over ``ctx`` tokens as its torch path runs it (Dao & Gu 2024, §6).

    n' = ctx padded to c chunks of Q: C·Bᵀ within chunks 2·h·n'·Q·N, its product with x 2·h·n'·Q·p,
    the chunk states 2·h·n'·p·N, the inter-chunk recurrence 2·h·(c+1)²·p·N (an einsum over all
    chunk pairs), the states read out 2·h·n'·p·N. An einsum whose sum runs over one element (a
    state of N = 1, chunks of Q = 1) is a broadcast multiply, no matmul: FlopCounterMode does not
    count it, nor does llmcalc.
    """
    q = m.chunk or ctx
    chunks = -(-ctx // q)
    padded = chunks * q
    h, p, n = m.heads, m.head_dim, m.state_size

    def macs(summed: int, elements: int) -> int:  # an einsum's MACs, none where it sums one term
        return 0 if summed == 1 else elements

    return FLOPS_PER_MAC * h * (
        macs(n, padded * q * n)  # C·Bᵀ within chunks, summed over N
        + macs(q, padded * q * p)  # its product with x, over the chunk's Q tokens
        + macs(q, padded * p * n)  # the chunk states, over Q
        + macs(chunks + 1, (chunks + 1) ** 2 * p * n)  # the inter-chunk recurrence
        + macs(n, padded * p * n)  # the states read out, over N
    )


def mixer_flops_per_sequence(m: Mixer, *, ctx: int, causal: bool) -> int:
    """One layer's mixer over a prefill of ``ctx`` tokens: n × the per-token figure (causal), or
    what the torch path runs (full): the convolution over ctx + kernel − 1 padded positions and, for
    Mamba-2, the chunked scan."""
    if causal or m.kind == RWKV:
        return ctx * mixer_flops_per_token(m)
    if m.kind == CCA:
        return m.prefill_flops
    conv = conv_flops_per_token(m) * (ctx + m.conv_kernel - 1)
    if m.kind == MAMBA2:
        return conv + ssd_chunked_flops(m, ctx=ctx)
    if m.kind == GATED_DELTA:
        return conv + gated_delta_chunked_flops(m, ctx=ctx)
    if m.kind == KDA:
        return conv + kda_chunked_flops(m, ctx=ctx)
    if m.kind == LIGHTNING:
        return conv + lightning_block_flops(m, ctx=ctx)
    if m.kind == MLSTM:
        return conv + mlstm_chunkwise_flops(m, ctx=ctx)
    return conv + ctx * STATE_READS.get(m.kind, 1) * readout_flops_per_token(m)


def mixer_flops_per_token_all(spec: ModelSpec) -> int:
    """Σ over layers with a mixer of its per-token FLOPs (0 for attention-only models), and any
    matmuls across depth (``ModelSpec.depth_flops_per_token``)."""
    return spec.depth_flops_per_token + sum(
        g.runs * mixer_flops_per_token(g.mixer)
        for g in spec.layer_groups
        if g.mixer is not None
    )


def _mixer_flops_per_sequence(spec: ModelSpec, *, ctx: int, causal: bool) -> int:
    return ctx * spec.depth_flops_per_token + sum(
        g.runs * mixer_flops_per_sequence(g.mixer, ctx=ctx, causal=causal)
        for g in spec.layer_groups
        if g.mixer is not None
    )


def forward_flops_per_token(spec: ModelSpec, *, ctx: int) -> int:
    """Weight, attention and mixer FLOPs of one token at context ``ctx`` (decoding with a cache)."""
    spec.require_forward()
    return (
        weight_flops_per_token(spec)
        + attention_flops_per_token(spec, ctx=ctx)
        + mixer_flops_per_token_all(spec)
    )


def attention_flops_per_sequence(spec: ModelSpec, *, ctx: int, causal: bool) -> int:
    """Attention FLOPs of a prefill of ``ctx`` tokens: pairs (n² full, or causal) · 2·h·(d_qk + d_v)."""
    _check_ctx(ctx)
    ctx = layer_tokens(spec, ctx=ctx)
    return sum(
        runs
        * (
            _pairs(a, ctx=ctx, causal=causal) * pair_flops(a)
            + index_flops(a, pairs=_index_pairs(a, ctx=ctx, causal=causal))
            # DeBERTa, XLNet: every query's (or key's) relative-position scores, the table's
            # projections
            + ctx * position_flops(a, ctx=ctx)
            + relative_proj_flops(a, ctx=ctx)
            + a.sequence_flops
        )
        for runs, a in _dense_attention(spec, tokens=ctx)
    )


def _pairs(attention: Attention, *, ctx: int, causal: bool) -> int:
    """Pairs the softmax attention computes: all n² (a dense kernel: FlopCounterMode counts them
    with the sparse mask too, as transformers' eager path runs), or those the mask keeps.
    Compressed attention (DeepSeek-V4): every query against all n tokens and all ⌊n/m⌋ entries."""
    if causal:
        return attention_causal_pairs(attention, ctx=ctx)
    return ctx * (ctx + attention.compressed_entries(ctx))


def _index_pairs(attention: Attention, *, ctx: int, causal: bool) -> int:
    """Pairs the indexer scores: every earlier token (causal) or all n² (its dense matmul); QSA's
    per-query loop scores the complete blocks each query sees, in both figures; DeepSeek-V4's
    CSA indexer scores the pooled entries: each query's ⌊i/m⌋, or all n × ⌊n/m⌋ (one matmul)."""
    if attention.compress:
        m = attention.compress
        return block_pairs(ctx=ctx, block=m) if causal else ctx * (ctx // m)
    if attention.index_block:
        return block_pairs(ctx=ctx, block=attention.index_block)
    return causal_pairs(ctx=ctx, window=attention.window) if causal else ctx * ctx


def forward_flops_per_sequence(
    spec: ModelSpec, *, ctx: int, causal: bool, source_len: int | None = None
) -> int:
    """A forward pass over ``ctx`` tokens: ctx × weight FLOPs + attention over full or causal pairs
    + the mixers' scans; an encoder–decoder (``ctx`` decoder tokens) adds its encoder over
    ``source_len`` tokens (default: ``ctx``), the cross-attention K/V projections of those tokens
    (once) and ctx × source_len cross-attention pairs.

    ``causal=False`` is what FlopCounterMode counts for a real forward pass (the full n × n score
    and value matmuls, the padded convolution, the chunked scan); ``causal=True`` counts only the
    pairs the mask keeps and n recurrent steps. A model's own prompt tokens (CPM-Ant's P) run
    through the layers beside the ctx tokens and are attended to (n + P per query); its matmuls
    once per sequence (BigBird's pooler) are added once.
    """
    spec.require_forward()
    encdec = 0
    if has_cross_attention(spec):
        n = source_len_of(spec, ctx if source_len is None else source_len)
        encdec = (
            encoder_flops(spec, source_len=n).total
            + cross_kv_flops(spec, source_len=n)
            + ctx * cross_attention_flops_per_token(spec, source_len=n)
        )
    return (
        ctx * weight_flops_per_token(spec)
        + spec.prefix_tokens * layer_weight_flops_per_token(spec)
        + attention_flops_per_sequence(spec, ctx=ctx, causal=causal)
        + _mixer_flops_per_sequence(spec, ctx=ctx, causal=causal)
        + spec.sequence_flops
        + encdec
    )


def layer_weight_flops_per_token(spec: ModelSpec) -> int:
    """The weight FLOPs per token inside the layers (what a prompt token a model prepends costs:
    CPM-Ant's run through the layers, not the head)."""
    return sum(term.flops for term in weight_terms(spec) if term.num_layers is not None)


def lm_head_flops_per_token(spec: ModelSpec) -> int:
    """The LM head's weight FLOPs per token: 2 × V × d for the output projection lm_head [V, d]
    (tied or not), with a transform of its own before it (ModernBERT-decoder's lm_head.dense
    [d, d]); the part of :func:`weight_flops_per_token` only a token whose logits are wanted needs.
    An encoder's masked-LM head (``mlm_head/…``) is not it: fill-mask reads every position."""
    return sum(t.flops for t in weight_terms(spec) if t.num_layers is None
               and (t.key == LM_HEAD or t.key.startswith(f"{LM_HEAD}/")))


# ---- encoder–decoders: the encoder and the decoder's cross-attention -------------------------------
# The encoder runs once per source sequence of n tokens (bidirectional: n² pairs per layer); each
# decoder layer projects the encoder's n outputs to K and V once (per_source tensors; cached for
# the whole generation) and every generated token attends to all n of them: n · 2·h·(d_qk + d_v)
# per layer and token, besides its causal self-attention over the generated tokens.


def has_cross_attention(spec: ModelSpec) -> bool:
    return any(g.cross_attention is not None for g in spec.layer_groups)


def source_len_of(spec: ModelSpec, source_len: int) -> int:
    """The encoder tokens: as asked, or the fixed number an encoder part states (Whisper: the
    1,500 positions of 30 s of audio, whatever is asked)."""
    _check_ctx(source_len)
    part = spec.part("encoder")
    fixed = part.tokens_for("layers") if part is not None and part.input_tokens else 0
    return fixed or source_len


def encoder_flops(spec: ModelSpec, *, source_len: int) -> PartFlops:
    """The encoder part over one source sequence of ``source_len`` tokens (every matmul meets each
    token, unless the part states its own tokens), bidirectional n² attention per layer."""
    part = spec.part("encoder")
    if part is None:
        return PartFlops("encoder", None, 0, 0, 0, 0)
    if not part.input_tokens:
        part = replace(part, input_tokens=(("", source_len),))
    for g in part.layer_groups:  # BigBird-Pegasus: block-sparse past its threshold, refused
        if g.attention is not None:
            require_dense(spec, g.attention, tokens=part.tokens_for("layers"))
    return part_flops(part)


def cross_kv_flops(spec: ModelSpec, *, source_len: int) -> int:
    """Cross-attention K and V projections of ``source_len`` encoder tokens in every decoder
    layer: 2 · matrix elements · layers · source_len, once per source sequence."""
    return sum(
        FLOPS_PER_MAC * t.numel * len(g.layers) * source_len
        for g in spec.layer_groups
        for t in g.tensors
        if t.per_source and t.matmul
    )


def cross_attention_flops_per_token(spec: ModelSpec, *, source_len: int) -> int:
    """One generated token attending to ``source_len`` encoder tokens in every decoder layer:
    Σ layers · source_len · 2·h·(d_qk + d_v)."""
    return sum(
        len(g.layers) * source_len * pair_flops(g.cross_attention)
        for g in spec.layer_groups
        if g.cross_attention is not None
    )


def training_flops_per_token(spec: ModelSpec, *, ctx: int) -> int:
    """Forward + backward of one token at context ``ctx``: 3 × :func:`forward_flops_per_token`."""
    return TRAINING_MULTIPLIER * forward_flops_per_token(spec, ctx=ctx)


def attention_crossover_ctx(spec: ModelSpec) -> int | None:
    """The smallest context at which attention FLOPs per token exceed weight FLOPs per token.

    None when that never happens: every layer is sliding-window and even a full window stays below,
    or no layer has attention (a measured recurrent model).
    """
    weight = weight_flops_per_token(spec)
    windows = [g.attention.window for g in spec.layer_groups if g.attention is not None]
    if not windows or not any(pair_flops(g.attention) for g in spec.layer_groups
                              if g.attention is not None):
        return None  # no attention layer (a recurrent model, or one measured without attention)
    if all(w is not None for w in windows):
        cap = max(w for w in windows if w is not None)
        if attention_flops_per_token(spec, ctx=cap) <= weight:
            return None
    # attention per token is non-decreasing in ctx: double, then bisect
    hi = 1
    while attention_flops_per_token(spec, ctx=hi) <= weight:
        hi *= 2
    lo = hi // 2  # attention(lo) <= weight, or lo == 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if attention_flops_per_token(spec, ctx=mid) > weight:
            hi = mid
        else:
            lo = mid
    return hi


def main_active(spec: ModelSpec) -> int:
    """Active parameters of the main part (the language model of a whole model)."""
    spec.experts_per_tok()  # refuses a config whose experts per token are unset
    pc = count(spec)
    return (pc.active or 0) - sum(n for name, n in pc.parts.items() if name != spec.main_part)


def seed_rule_per_token(spec: ModelSpec, *, ctx: int) -> int:
    """The rule of thumb 2N + 4·n·d·L, N the (active) parameter count of the language model
    (Kaplan et al. 2020)."""
    s = spec.shape
    return 2 * main_active(spec) + 4 * ctx * s.hidden_size * s.num_layers


# ---- a whole model's other parts, per input (one image) -------------------------------------------


def image_tokens(spec: ModelSpec) -> int:
    """Tokens one image adds to the language model's context (0: no image input)."""
    return sum(p.context_tokens for p in spec.parts if p.input == "image")


# ---- the command's figures -------------------------------------------------------------------------


@dataclass(frozen=True)
class AttentionTerm:
    """One layer group's attention, per token at the context asked for (for ``--explain``)."""

    group: str
    num_layers: int
    heads: int
    qk_head_dim: int
    v_head_dim: int
    window: int | None
    keys: int  # keys one query's softmax reads at this context
    per_layer: int  # keys · 2·h·(d_qk + d_v) + index_keys · index_pair_flops
    causal_pairs: int
    topk: int | None = None  # sparse attention: at most topk keys per query
    index_keys: int = 0  # keys the indexer scores (every key the query sees)
    index_pair_flops: int = 0  # 2·H_I·(d_I + 1) per scored key
    index_causal_pairs: int = 0
    index_block: int = 0  # QSA: the indexer scores pooled blocks of this many keys
    compress: int = 0  # compressed attention: one pooled entry per this many tokens, besides the window
    compressed_keys: int = 0  # pooled entries one query reads at this context (≤ topk)
    full_pairs: int = 0  # pairs a prefill's dense kernels compute (n², or n·(n + ⌊n/m⌋))
    maps: int = 1  # softmax attention runs per layer (differential attention: 2)


@dataclass(frozen=True)
class MixerTerm:
    """One layer group's non-attention sequence mixer at the context asked for (for ``--explain``)."""

    group: str
    num_layers: int
    mixer: Mixer
    per_layer: int  # per token: 2·conv_dim·kernel + 2·h·p·N
    full_per_layer: int  # one sequence's prefill as the torch path runs it
    causal_per_layer: int  # one sequence's prefill as n recurrent steps


@dataclass(frozen=True)
class FlopsResult:
    """Everything ``llmcalc flops`` shows; per-sequence figures are for ``batch`` sequences."""

    model: str
    ctx: int
    batch: int
    tokens: int | None  # a training token budget, when asked
    weight_flops_per_token: int
    weight_terms: tuple[WeightTerm, ...]  # per matrix, for ``--explain``
    weight_breakdown: dict[str, int]  # the terms summed per component
    attention_flops_per_token: int
    attention_terms: tuple[AttentionTerm, ...]
    forward_flops_per_token: int
    forward_flops_per_sequence: int  # full n × n attention, × batch
    forward_flops_per_sequence_causal: int  # masked pairs only, × batch
    decode_flops_per_step: int  # one new token per sequence at position ctx with the cache, × batch
    training_flops_per_token: int
    training_flops: int | None  # × tokens
    seed_rule_per_token: int
    seed_rule_percent_off: float  # of the seed rule against the exact forward figure
    attention_crossover_ctx: int | None
    active_params: int
    notes: tuple[str, ...] = ()  # e.g. ctx beyond the model's max_position_embeddings
    mixer_flops_per_token: int = 0  # SSM layers' convolution + state readout, constant in ctx
    mixer_terms: tuple[MixerTerm, ...] = ()
    # a whole model: each part's FLOPs per input (one image), the image tokens one image adds to
    # the context, and the images a sequence holds (their parts' FLOPs are in the per-sequence
    # figures, their tokens in ``ctx`` = text tokens + images × image_tokens)
    parts: tuple[PartFlops, ...] = ()
    # audio parts, per input (Part.clip): apart from every figure above, whose context is text and
    # image tokens
    audio_parts: tuple[PartFlops, ...] = ()
    image_tokens: int = 0
    images: int = 0
    text_tokens: int | None = None
    # an encoder–decoder: ``ctx`` is the decoder's tokens; the encoder reads ``source_len`` tokens
    # once per sequence (its FLOPs, and the cross-attention K/V projections of its output, are in
    # the per-sequence figures); the per-token attention includes the cross-attention
    source_len: int | None = None
    cross_attention_flops_per_token: int = 0
    encoder_flops_per_sequence: int = 0
    cross_kv_flops_per_sequence: int = 0
    # what the cross-attention's source tokens are: an encoder's, or the images' ("vision")
    source_tokens: str = "encoder"
    # prompt tokens the model prepends inside its forward (CPM-Ant), through the layers at
    # layer_weight_flops_per_token each; FLOPs once per sequence (BigBird's pooler)
    prefix_tokens: int = 0
    layer_weight_flops_per_token: int = 0
    sequence_flops: int = 0


def flops(
    spec: ModelSpec,
    *,
    ctx: int,
    batch: int = 1,
    tokens: int | None = None,
    images: int = 0,
    source_len: int | None = None,
) -> FlopsResult:
    """All of ``llmcalc flops``'s figures for ``spec`` at context ``ctx``.

    With ``images`` (a whole model that takes images), ``ctx`` counts the text tokens; each image
    adds :func:`image_tokens` to the language model's context and its parts' FLOPs to every
    per-sequence figure. An encoder–decoder's ``ctx`` is its decoder's tokens, attending to
    ``source_len`` encoder tokens (default: ``ctx``; Whisper: its fixed 1,500).
    """
    _check_ctx(ctx)
    spec.require_forward()
    if images < 0:
        raise UsageError(f"--images must be zero or more, got {images}")
    per_image = image_tokens(spec)
    if images and not per_image:
        raise UsageError(f"--images {images}: {spec.name} takes no images")
    text_tokens = ctx
    ctx = ctx + images * per_image
    active = main_active(spec)
    source_tokens = "vision" if image_cross_tokens(spec) else "encoder"
    spec, source_len = image_cross_source(spec, images=images, source_len=source_len)
    encdec = has_cross_attention(spec)
    source = source_len_of(spec, ctx if source_len is None else source_len) if encdec else None
    part_figures = tuple(
        part_flops(p) for p in spec.parts
        if not p.per_token and p.input == "image" and not (encdec and p.name == "encoder")
    )
    image_flops = images * sum(p.total for p in part_figures)
    audio_figures = tuple(part_flops(p) for p in spec.parts if p.input == "audio" and p.clip)
    uncomputed = [p.name for p in spec.parts if p.input == "audio" and not p.clip]
    w_terms = weight_terms(spec)
    weight = sum(term.flops for term in w_terms)
    cross = cross_attention_flops_per_token(spec, source_len=source) if source else 0
    attention = attention_flops_per_token(spec, ctx=ctx) + cross
    mixer = mixer_flops_per_token_all(spec)
    forward = weight + attention + mixer
    training = TRAINING_MULTIPLIER * forward
    seed = seed_rule_per_token(spec, ctx=ctx)
    actx = layer_tokens(spec, ctx=ctx)  # the layers also attend to prompt tokens of their own
    terms = tuple(
        AttentionTerm(
            group=g.name,
            num_layers=g.runs,
            heads=g.attention.heads,
            qk_head_dim=g.attention.qk_head_dim,
            v_head_dim=g.attention.v_head_dim,
            window=g.attention.window,
            keys=g.attention.keys_attended(actx),
            per_layer=attention_layer_flops_per_token(g.attention, ctx=actx),
            causal_pairs=attention_causal_pairs(g.attention, ctx=actx),
            topk=g.attention.topk,
            index_keys=g.attention.keys_indexed(actx) if g.attention.index_pair_flops else 0,
            index_pair_flops=g.attention.index_pair_flops,
            index_causal_pairs=_index_pairs(g.attention, ctx=actx, causal=True)
            if g.attention.index_pair_flops
            else 0,
            index_block=g.attention.index_block,
            compress=g.attention.compress,
            compressed_keys=g.attention.keys_attended(actx) - g.attention.tokens_seen(actx)
            if g.attention.compress
            else 0,
            full_pairs=_pairs(g.attention, ctx=actx, causal=False),
            maps=g.attention.maps,
        )
        for g in spec.layer_groups
        if g.attention is not None
    )
    mixer_terms = tuple(
        MixerTerm(
            group=g.name,
            num_layers=g.runs,
            mixer=g.mixer,
            per_layer=mixer_flops_per_token(g.mixer),
            full_per_layer=mixer_flops_per_sequence(g.mixer, ctx=ctx, causal=False),
            causal_per_layer=mixer_flops_per_sequence(g.mixer, ctx=ctx, causal=True),
        )
        for g in spec.layer_groups
        if g.mixer is not None
    )
    return FlopsResult(
        model=spec.name,
        ctx=ctx,
        batch=batch,
        tokens=tokens,
        weight_flops_per_token=weight,
        weight_terms=w_terms,
        weight_breakdown=_by_key(w_terms),
        attention_flops_per_token=attention,
        attention_terms=terms,
        forward_flops_per_token=forward,
        forward_flops_per_sequence=batch
        * (forward_flops_per_sequence(spec, ctx=ctx, causal=False, source_len=source) + image_flops),
        forward_flops_per_sequence_causal=batch
        * (forward_flops_per_sequence(spec, ctx=ctx, causal=True, source_len=source) + image_flops),
        decode_flops_per_step=batch * forward,
        training_flops_per_token=training,
        training_flops=None if tokens is None else training * tokens,
        seed_rule_per_token=seed,
        seed_rule_percent_off=percent_off(seed, forward),
        attention_crossover_ctx=attention_crossover_ctx(spec),
        active_params=active,
        # and what an --image-size came to (a tower that resizes every image ignores it)
        notes=(*context_notes(spec, ctx=ctx),
               *routed_experts_note(spec, ctx=ctx),
               *(note for note in spec.notes if (spec.parts and note.startswith("image_size "))
                 or note.startswith("no image: ")),
               *([f"{', '.join(uncomputed)}: the FLOPs of an audio input are not computed yet"]
                 if uncomputed else [])),
        mixer_flops_per_token=mixer,
        mixer_terms=mixer_terms,
        parts=part_figures,
        audio_parts=audio_figures,
        image_tokens=per_image,
        images=images,
        text_tokens=text_tokens if images else None,
        source_len=source,
        cross_attention_flops_per_token=cross,
        encoder_flops_per_sequence=encoder_flops(spec, source_len=source).total if source else 0,
        cross_kv_flops_per_sequence=cross_kv_flops(spec, source_len=source) if source else 0,
        source_tokens=source_tokens,
        prefix_tokens=spec.prefix_tokens,
        layer_weight_flops_per_token=layer_weight_flops_per_token(spec),
        sequence_flops=spec.sequence_flops,
    )
