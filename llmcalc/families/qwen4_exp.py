"""Qwen4-Exp text model (transformers ``models/qwen4_exp/modeling_qwen4_exp.py``,
``Qwen4ExpForCausalLM``; released as Qwen3.8-Flash-Next): Qwen3.5-MoE's layers — gated DeltaNet
in three of every four layers, gated GQA in the fourth, every layer routed with a gated shared
expert — with three changes, described below as such:

- **hyper-connections** (``_hyper.gated_residual``): the hidden state is hc_count streams of
  width d; each layer's attn_hyper_connection and mlp_hyper_connection replace its two norms and
  residual adds; the embedding is repeated into the streams and a last hyper_connection_mixer
  (no injection) mixes them back to d before lm_head. There is no final norm.
- **QSA** on every attention layer (``indexed_attention``; checkpoints say ``full_attention``):
  ``self_attn.indexer`` projects one query of indexer_n_heads heads and one key head (index_qk_proj
  [(H_I + 1)·d_I, d], q_layernorm, k_layernorm [d_I]); it mean-pools the keys in complete blocks
  of indexer_compress_ratio tokens, scores each block (2·H_I·d_I FLOPs) and the softmax reads the
  indexer_budget tokens of the best blocks plus the incomplete block (``Attention.index_block``).
  The cache keeps the raw index keys [d_I] per token beside K and V.
- **per-layer n-gram embeddings** (PLE) on the linear-attention layers ple_layer_ids (one-indexed):
  ``ple.ple_embedding.ngram_embedding`` [rows, e / H] with H = (ngram_size − 1)·heads_per_ngram
  hashed heads, head j of PLE layer k sized by the (k·H + j + 1)-th prime ≥ ngram_vocab_size_base,
  rows = their sum rounded up to make_ngram_vocab_size_divisible_by (a lookup: no FLOPs);
  key_proj [hc·d, e], value_proj [d, e]; norm_key, norm_query, norm_conv [hc·d]; a depthwise conv
  dilated by ngram_size, conv1d [hc·d, 1, k] without padding beyond its state, so one output per
  token: its 2·hc·d·k FLOPs per token are counted with the weights. The layer's state keeps,
  beside the DeltaNet's, that conv's last (k − 1)·ngram_size inputs (hc·d channels, the cache
  dtype) and the last ngram_size − 1 token ids (int64).

The attention layers' q_proj is 2·h·hd × d (the query and its sigmoid output gate), k, v, o and
q_norm, k_norm [hd] as Qwen3.5's; the DeltaNet is ``_ssm.gated_delta_net`` (layout ``qwen3_5``).
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import replace
from typing import ClassVar

from llmcalc.families._base import Architecture
from llmcalc.families._base import LayerPlan
from llmcalc.families._base import Size
from llmcalc.families._base import check_top_k
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import linear
from llmcalc.families._base import listed_kinds
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import override_plan
from llmcalc.families._base import plan_from_kinds
from llmcalc.families._base import qk_norms
from llmcalc.families._base import require
from llmcalc.families._base import routed_experts
from llmcalc.families._base import router
from llmcalc.families._base import swiglu
from llmcalc.families._hyper import gated_residual
from llmcalc.families._ssm import LayerBuild
from llmcalc.families._ssm import gated_delta_net
from llmcalc.families._ssm import mixed_layers
from llmcalc.families._ssm import residue_plan
from llmcalc.families.qwen3_next import Qwen3_5MoeTextConfig
from llmcalc.model.spec import Attention
from llmcalc.model.spec import MoE
from llmcalc.model.spec import Tensor

MIXER_OF = {"linear_attention": "linear_attention", "indexed_attention": "indexed_attention",
            "full_attention": "indexed_attention"}  # checkpoints name the indexed layers full
QSA_FIELDS = ("indexer_n_heads", "indexer_kv_heads", "indexer_head_dim", "indexer_budget",
              "indexer_compress_ratio")
# The most hashed n-gram heads (all PLE layers together) whose table sizes are looked for: each
# is a prime found from the last one, about 13 modular powers apiece (~0.1 ms near 2⁵³), so 4,096
# take well under a second at any base; real configs have a few dozen (Qwen3.8-Flash-Next: 16).
MAX_NGRAM_HEADS = 1 << 12


class Qwen4ExpTextConfig(Qwen3_5MoeTextConfig):
    transformers_class = "Qwen4ExpTextConfig"

    num_experts: Size  # every layer routed: at least one
    hc_count: Size
    hc_lowrank: Size
    ple_layer_ids: list[Size] | None = None
    ple_embed_dim: Size | None = None  # absent: hidden_size
    ple_conv_kernel_size: Size
    ngram_size: Size
    heads_per_ngram: Size
    ngram_vocab_size_base: Size
    make_ngram_vocab_size_divisible_by: Size
    indexer_n_heads: Size | None = None
    indexer_kv_heads: Size | None = None
    indexer_head_dim: Size | None = None
    indexer_budget: Size | None = None
    indexer_compress_ratio: Size | None = None

    mixer_of: ClassVar[dict[str, str]] = MIXER_OF

    def defaulted(self, declared: Collection[str] = ()) -> list[str]:
        # Qwen3.5-MoE's decoder_sparse_step: no Qwen4-Exp field (every layer is routed)
        return [f for f in super().defaulted(declared) if not f.startswith("decoder_sparse_step=")]


# ---- the n-gram tables' sizes: primes ---------------------------------------------------------

# Miller–Rabin with these bases is exact below 3.3·10²⁴ (Sorenson & Webster 2015), far past any
# size a config may give (2⁵³): the same answer as transformers' trial division, in microseconds.
_BASES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)
# The least strong pseudoprime to the first k of them (OEIS A014233), k = 1 … 13: below the k-th,
# the first k bases are already exact (3 bases for tables of ~20M rows, 9 near 2⁵³).
_PSEUDOPRIMES = (2047, 1_373_653, 25_326_001, 3_215_031_751, 2_152_302_898_747,
                 3_474_749_660_383, 341_550_071_728_321, 341_550_071_728_321,
                 3_825_123_056_546_413_051, 3_825_123_056_546_413_051,
                 3_825_123_056_546_413_051, 318_665_857_834_031_151_167_461,
                 3_317_044_064_679_887_385_961_981)


def is_prime(n: int) -> bool:
    if n < 2:
        return False
    for p in _BASES:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    k = next((k for k, psi in enumerate(_PSEUDOPRIMES, 1) if n < psi), len(_BASES))
    for a in _BASES[:k]:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


# Odd numbers sieved by these primes before Miller–Rabin: about 5% of a window is left to test.
_SIEVE_LIMIT = 1 << 16
_SIEVE_WINDOW = 1 << 15  # odd numbers per window


def _small_primes(limit: int) -> list[int]:
    flags = bytearray([1]) * limit
    flags[:2] = b"\0\0"
    for i in range(2, math.isqrt(limit - 1) + 1):
        if flags[i]:
            flags[i * i::i] = bytes(len(range(i * i, limit, i)))
    return [i for i in range(3, limit) if flags[i]]


_SMALL_PRIMES: list[int] = []


def primes_from(start: int, count: int) -> list[int]:
    """The first ``count`` primes ≥ ``start`` (transformers ``_find_nth_prime_after(start − 1, j)``
    for j = 1..count). Windows of odd numbers are sieved by the primes below 2¹⁶ first (a number
    only ever struck for a factor p with p² ≤ it, so no prime is lost) and what is left is
    decided by :func:`is_prime`: the same primes as testing every number, found a window at a
    time."""
    if not _SMALL_PRIMES:
        _SMALL_PRIMES.extend(_small_primes(_SIEVE_LIMIT))
    out: list[int] = [2] if start <= 2 and count > 0 else []
    lo = max(3, start) | 1  # the window's first odd number
    while len(out) < count:
        flags = bytearray([1]) * _SIEVE_WINDOW  # flags[i]: lo + 2·i
        hi = lo + 2 * _SIEVE_WINDOW
        for p in _SMALL_PRIMES:
            first = max(p * p, -(-lo // p) * p)
            if first >= hi:
                if p * p >= hi:
                    break
                continue
            if first % 2 == 0:
                first += p
            i = (first - lo) // 2
            flags[i::p] = bytes(len(range(i, _SIEVE_WINDOW, p)))
        for i in range(_SIEVE_WINDOW):
            if flags[i] and is_prime(lo + 2 * i):
                out.append(lo + 2 * i)
                if len(out) == count:
                    break
        lo = hi
    return out


def ple_layers(c: Qwen4ExpTextConfig) -> list[int]:
    """The PLE layers' one-indexed ids in ascending order (as transformers sorts them): the k-th
    is PLE layer k, whose n-gram heads take the k-th H primes."""
    return sorted(set(c.ple_layer_ids or []))


def ngram_rows(c: Qwen4ExpTextConfig, heads: int) -> list[int]:
    """Rows of each PLE layer's n-gram table, in ple_layer_ids order: Σ of its heads' primes,
    rounded up to make_ngram_vocab_size_divisible_by."""
    ids = ple_layers(c)
    require(len(ids) * heads <= MAX_NGRAM_HEADS, "heads_per_ngram",
            f"{len(ids)} PLE layers × {heads:,} n-gram heads is more than the {MAX_NGRAM_HEADS:,} "
            "tables llmcalc sizes (each a prime found one by one)")
    primes = primes_from(c.ngram_vocab_size_base, len(ids) * heads)
    step = c.make_ngram_vocab_size_divisible_by
    return [math.ceil(sum(primes[k * heads:(k + 1) * heads]) / step) * step
            for k in range(len(ids))]


# ---- layers -------------------------------------------------------------------------------------


def _mixers(c: Qwen4ExpTextConfig) -> tuple[LayerPlan, list[str] | None]:
    """Each layer's mixer as runs, and the list when the config gives one."""
    L = c.num_hidden_layers
    if c.layer_types is not None:
        mixers = listed_kinds(c.layer_types, L, MIXER_OF)
        return plan_from_kinds([f"{m}, moe" for m in mixers]), mixers
    k = c.full_attention_interval

    def kind_of(i: int) -> str:
        return "indexed_attention, moe" if (i + 1) % k == 0 else "linear_attention, moe"

    return residue_plan(L, k, kind_of, field="full_attention_interval"), None


def _plan(c: Qwen4ExpTextConfig) -> LayerPlan:
    plan, mixers = _mixers(c)
    k = c.full_attention_interval
    for j, layer_id in enumerate(ple_layers(c)):
        field = f"ple_layer_ids.{c.ple_layer_ids.index(layer_id) if c.ple_layer_ids else j}"
        require(layer_id <= c.num_hidden_layers, field,
                f"layer {layer_id} is past num_hidden_layers ({c.num_hidden_layers}; layers "
                "count from 1)")
        i = layer_id - 1
        linear_layer = mixers[i] == "linear_attention" if mixers else (i + 1) % k != 0
        require(linear_layer, field,
                f"layer {layer_id} is an attention layer; PLE is only on linear_attention layers")
        plan = override_plan(plan, [i], f"linear_attention, moe, ple {j}")
    return plan


def _qsa(c: Qwen4ExpTextConfig) -> Attention:
    """The attention layers' GQA with the QSA indexer's sparsity and cache."""
    for name in QSA_FIELDS:
        require(getattr(c, name) is not None, name,
                "missing required field (transformers builds a QSA indexer on every attention "
                "layer)")
    heads, dim = c.indexer_n_heads or 0, c.indexer_head_dim or 0
    budget, block = c.indexer_budget or 0, c.indexer_compress_ratio or 0
    require(c.indexer_kv_heads == 1, "indexer_kv_heads",
            f"Qwen4-Exp QSA has one index key head, got {c.indexer_kv_heads}")
    require(budget % block == 0, "indexer_budget",
            f"indexer_budget ({budget}) must be a multiple of indexer_compress_ratio ({block})")
    # scores: q [H_I, d_I] · pooled keys per complete block (2·H_I·d_I each); cached: raw keys [d_I]
    return replace(c.attention(), topk=budget, index_block=block,
                   index_pair_flops=2 * heads * dim, index_key_dim=dim)


def describe(c: Qwen4ExpTextConfig) -> Architecture:
    d, v, E, hc = c.hidden_size, c.vocab_size, c.num_experts, c.hc_count
    check_top_k(c.num_experts_per_tok, E, k_field="num_experts_per_tok", e_field="num_experts")
    require(hc > 1, "hc_count", f"Qwen4-Exp mixes at least 2 residual streams, got {hc}")
    # projections sized by the key and value heads alone: built whatever their ratio, but the
    # gated delta rule runs value_heads // key_heads value heads per key head, and fails
    ragged = (f"linear_num_key_heads ({c.linear_num_key_heads}) does not divide "
              f"linear_num_value_heads ({c.linear_num_value_heads}): transformers builds the "
              "projections, but its gated delta rule cannot group the value heads by key head"
              ) if c.linear_num_value_heads % c.linear_num_key_heads else ""
    plan = _plan(c)
    e = c.ple_embed_dim or d
    ngram_heads = (c.ngram_size - 1) * c.heads_per_ngram
    rows: list[int] = []
    if c.ple_layer_ids:
        require(c.ngram_size >= 2, "ngram_size", f"must be at least 2 with PLE layers, got "
                f"{c.ngram_size}")
        require(e % ngram_heads == 0, "ple_embed_dim",
                f"ple_embed_dim ({e}) must be divisible by the {ngram_heads} n-gram heads "
                f"((ngram_size − 1) × heads_per_ngram)")
        rows = ngram_rows(c, ngram_heads)
    attention = _qsa(c) if any(k.startswith("indexed") for k in plan) else None
    p = "model.layers.{i}"
    h, kv, hd = c.num_attention_heads, c.resolved_kv_heads, c.resolved_head_dim

    def ple(k: int) -> list[Tensor]:
        # n-gram table (lookup), key per stream hc·d × e, value d × e, three norms over the
        # streams, the dilated depthwise conv [hc·d, 1, k]: 2 FLOPs a weight per token
        q, width, kernel = f"{p}.ple", hc * d, c.ple_conv_kernel_size
        return [
            Tensor(f"{q}.ple_embedding.ngram_embedding.weight", (rows[k], e // ngram_heads),
                   "ple/ngram_embedding"),
            *linear(f"{q}.key_proj", "ple/key_proj", width, e, bias=False),
            *linear(f"{q}.value_proj", "ple/value_proj", d, e, bias=False),
            *(t for name in ("norm_key", "norm_query", "norm_conv")
              for t in norm(f"{q}.{name}", f"ple/{name}", width, bias=False)),
            Tensor(f"{q}.conv1d.weight", (width, 1, kernel), "ple/conv1d", matmul=True),
        ]

    def build(kind: str) -> LayerBuild:
        mixer_kind, _, *extra = kind.split(", ")
        m = f"{p}.mlp"
        ffn = [
            *router(f"{m}.gate", d, E),
            *routed_experts(f"{m}.experts", d, c.moe_intermediate_size, E),
            *swiglu(f"{m}.shared_expert", "moe/shared_expert", d, c.shared_expert_intermediate_size),
            # a sigmoid scale on the shared expert's output: 1 × d
            *linear(f"{m}.shared_expert_gate", "moe/shared_expert_gate", 1, d, bias=False),
        ]
        hyper = [*gated_residual(f"{p}.attn_hyper_connection", "hyper/attn", d, streams=hc,
                                 rank=c.hc_lowrank),
                 *gated_residual(f"{p}.mlp_hyper_connection", "hyper/mlp", d, streams=hc,
                                 rank=c.hc_lowrank)]
        if mixer_kind == "indexed_attention":
            a, bias = f"{p}.self_attn", c.attention_bias
            ix = f"{a}.indexer"
            dim = c.indexer_head_dim or 0
            attn = [*linear(f"{a}.q_proj", "attn/q_proj", 2 * h * hd, d, bias=bias),
                    *(t for t in gqa_projections(a, d, h, kv, hd, bias=bias)
                      if ".q_proj." not in t.name),
                    *qk_norms(a, hd, hd),
                    # one projection: H_I query heads and the one key head, d_I each
                    *linear(f"{ix}.index_qk_proj", "attn/indexer/qk_proj",
                            ((c.indexer_n_heads or 0) + 1) * dim, d, bias=False),
                    *norm(f"{ix}.q_layernorm", "attn/indexer/q_norm", dim, bias=False),
                    *norm(f"{ix}.k_layernorm", "attn/indexer/k_norm", dim, bias=False)]
            return [*attn, *ffn, *hyper], attention, None
        tensors, mixer = gated_delta_net(
            f"{p}.linear_attn", d, key_heads=c.linear_num_key_heads,
            value_heads=c.linear_num_value_heads, key_dim=c.linear_key_head_dim,
            value_dim=c.linear_value_head_dim, kernel=c.linear_conv_kernel_dim, layout="qwen3_5",
        )
        if extra:  # a PLE layer: its conv's (k − 1)·ngram_size inputs and ngram_size − 1 ids
            k = int(extra[0].removeprefix("ple "))
            conv_state = hc * d * (c.ple_conv_kernel_size - 1) * c.ngram_size
            mixer = replace(mixer, extra_conv=conv_state, token_ids=c.ngram_size - 1)
            return [*tensors, *ffn, *ple(k), *hyper], None, mixer
        return [*tensors, *ffn, *hyper], None, mixer

    shape = replace(c.shape(tied=c.tie_word_embeddings), intermediate_size=c.moe_intermediate_size)
    outer = (*llama_outer_tensors(v, d, tied=c.tie_word_embeddings, final_norm=None),
             *gated_residual("model.hyper_connection_mixer", "hyper/final_mixer", d, streams=hc,
                             rank=c.hc_lowrank, inject=False))
    return Architecture(
        shape=shape,
        tensors=outer,
        layer_groups=mixed_layers(plan, build),
        moe=MoE(E, c.num_experts_per_tok, shared_experts=1),
        # the first QSA layer's cache also keeps the indexers' rotary position ids, 3 (mRoPE axes)
        # int64 per token (transformers DynamicIndexedLayer.indexer_position_ids [3, batch, n])
        cache_bytes_per_token=3 * 8 if attention is not None else 0,
           forward_unmodelled=ragged if any("linear_attention" in k for k in plan) else "",
    )
