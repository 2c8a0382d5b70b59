"""DeepSeek-V4: compressed attention (CSA and HCA), hyper-connections, hash-routed MoE layers.

Source: DeepSeek-AI 2026, "DeepSeek-V4: Towards Highly Efficient Million-Token Context Intelligence"
§2; tensor names and shapes as transformers 5.24 ``DeepseekV4ForCausalLM`` builds them
(modeling_deepseek_v4.py), which does not build the multi-token-prediction module (mtp_params).

What is there, layer by layer:

- **attention**: queries through a latent (q_a_proj d → q_lora, q_a_norm, q_b_proj → h·hd, then
  an unweighted RMSNorm per head); one key/value head (kv_proj d → hd, kv_norm) read as both keys
  and values; a learned attention sink per head (``sinks`` [h], one more logit in the softmax); and
  the grouped low-rank output projection: o_a_proj a block-diagonal [g·o_lora, h·hd/g] (each of the
  g head groups projected to o_lora on its own, one bmm: 2·h·hd·o_lora FLOPs a token, as a linear
  of its size) then o_b_proj g·o_lora → d. No MLA: the cache holds the key/value head itself.
- **layer kinds** (``layer_types``, or a checkpoint's ``compress_ratios`` 0 / 4 / 128): every
  layer attends within a ``sliding_window`` of recent tokens. Sliding layers do only that; their
  plain sliding cache keeps the shared key/value tensor twice, as K and as V. HCA (heavily
  compressed) layers add a compressor that pools each complete window of m' tokens (its rate in
  ``compress_rates``) into one entry: kv_proj and gate_proj d → hd, a learned position_bias
  [m', hd] on the gate, a softmax-weighted sum over the window, kv_norm. CSA (compressed sparse)
  layers pool every m tokens from two overlapping series (kv and gate d → 2·hd: each entry spans
  its window and the one before) and add the lightning indexer, its own compressor at
  index_head_dim plus q_b_proj q_lora → H_I·d_I and weights_proj d → H_I, which scores every
  pooled entry (2·H_I·d_I a pair; the weighted sum over heads is elementwise) and keeps
  ``index_topk`` of them for the softmax. Compressed layers cache one K=V tensor for their
  window, the pooled entries and the compressors' open window (llmcalc.formulas.memory).
- **hyper-connections** (mHC, ``hc_mult`` = s streams; llmcalc.families._hyper): the residual is
  s streams of width d; attn_hc and ffn_hc each compute pre/post/comb weights with fn
  [(2 + s)·s, s·d] from the normed streams, and the Sinkhorn-normalised comb mixes the streams
  (2·s²·d FLOPs a token, counted across depth); model.hc_head collapses them before the final
  norm.
- **MoE**: every layer; a router of E × d, E experts of moe_intermediate_size (SwiGLU with clamped
  gate and up) and one shared expert of moe_intermediate_size (transformers does not read
  n_shared_experts). The first ``num_hash_layers`` layers (``mlp_layer_types`` "hash_moe") pick
  their experts by token id from a frozen tid2eid table, a buffer, not a parameter: their tensors
  and FLOPs are the learned router's (its logits still weight the picked experts).

transformers keeps the norms, sinks, position biases and hyper-connection weights in float32
(``_keep_in_fp32_modules_strict``); llmcalc's weight bytes use one dtype for every tensor.
"""

from __future__ import annotations

from dataclasses import replace

from pydantic import AliasChoices
from pydantic import Field

from llmcalc.families._base import Architecture
from llmcalc.families._base import Count
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import LayerPlan
from llmcalc.families._base import Size
from llmcalc.families._base import check_top_k
from llmcalc.families._base import linear
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import planned_layers
from llmcalc.families._base import require
from llmcalc.families._base import routed_experts
from llmcalc.families._base import router
from llmcalc.families._base import swiglu
from llmcalc.families._hyper import hyper_connection
from llmcalc.families._hyper import hyper_head
from llmcalc.families._hyper import stream_mixing_flops
from llmcalc.families._moe import listed_plan
from llmcalc.families._moe import mtp_note
from llmcalc.families._moe import mtp_params
from llmcalc.model.spec import Attention
from llmcalc.model.spec import Compressor
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import MoE
from llmcalc.model.spec import Run
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

SLIDING = "sliding_attention"
CSA = "compressed_sparse_attention"
HCA = "heavily_compressed_attention"
LAYER_KINDS = (SLIDING, CSA, HCA)
# a checkpoint's compress_ratios name each layer's kind by its rate (transformers
# _COMPRESS_RATIO_TO_LAYER_TYPE); the rates themselves are compress_rates'
RATIO_KINDS = {0: SLIDING, 4: CSA, 128: HCA}
DEFAULT_RATES = {CSA: 4, HCA: 128}
MLP_KINDS = ("hash_moe", "moe")


class DeepseekV4Config(FamilyConfig):
    """The fields transformers' DeepseekV4Config reads for its tensors; defaults are its own
    (DeepSeek-V4-Flash's sizes), legacy spellings of checkpoints read as it reads them."""

    transformers_class = "DeepseekV4Config"

    vocab_size: Size
    hidden_size: Size
    moe_intermediate_size: Size = Field(
        validation_alias=AliasChoices("moe_intermediate_size", "intermediate_size")
    )
    num_hidden_layers: Size
    num_attention_heads: Size
    head_dim: Size
    q_lora_rank: Size
    num_experts_per_tok: Size
    n_routed_experts: Size = Field(
        validation_alias=AliasChoices("n_routed_experts", "num_local_experts")
    )
    n_shared_experts: Count  # not read by transformers: one shared expert whatever it says
    max_position_embeddings: Size | None
    layer_types: list[str] | None = None
    compress_ratios: list[int] | None = None  # a checkpoint's per-layer 0 / 4 / 128
    compress_rates: dict[str, Size] | None = None
    compress_rate_csa: Size | None = None  # legacy: folded into compress_rates
    compress_rate_hca: Size | None = None
    hc_mult: Size
    mlp_layer_types: list[str] | None = None
    num_hash_layers: Count | None = None  # legacy: the first layers hash-routed (default 3)
    sliding_window: Size
    o_groups: Size
    o_lora_rank: Size
    index_n_heads: Size
    index_head_dim: Size
    index_topk: Size
    num_nextn_predict_layers: Count
    tie_word_embeddings: bool
    mlp_bias: bool

    def rates(self) -> dict[str, int]:
        """Each compressed kind's rate: compress_rates (whole, as given), else 4 and 128, with the
        legacy compress_rate_csa / compress_rate_hca over them."""
        rates = dict(self.compress_rates) if self.compress_rates is not None else dict(DEFAULT_RATES)
        if self.compress_rate_csa is not None:
            rates[CSA] = self.compress_rate_csa
        if self.compress_rate_hca is not None:
            rates[HCA] = self.compress_rate_hca
        return rates

    def listed_kinds(self) -> tuple[list[str], str] | None:
        """The per-layer attention kinds a config lists (layer_types, else a checkpoint's
        compress_ratios), with the field they came from; None: transformers' default pattern."""
        if self.layer_types is not None:
            return self.layer_types, "layer_types"
        if self.compress_ratios is None:
            return None
        for i, ratio in enumerate(self.compress_ratios):
            require(
                ratio in RATIO_KINDS,
                f"compress_ratios.{i}",
                f"{ratio} names no layer kind (0 sliding, 4 compressed sparse, 128 heavily "
                "compressed attention; the rates are compress_rates')",
            )
        return [RATIO_KINDS[r] for r in self.compress_ratios], "compress_ratios"


def attention_plan(c: DeepseekV4Config) -> LayerPlan:
    """Each layer's kind: as listed (a longer list cut to the layers, as transformers cuts it),
    else transformers' default: two HCA layers, then HCA and CSA in turn (HCA at 2, 4, …)."""
    L = c.num_hidden_layers
    listed = c.listed_kinds()
    if listed is not None:
        kinds, where = listed
        return listed_plan(kinds[:L], L, field=where, names={k: k for k in LAYER_KINDS})
    plan = {
        HCA: LayerSet(tuple(r for r in (Run(0, min(3, L)), Run(4, L, 4, 2, 1)) if len(r))),
        CSA: LayerSet(tuple(r for r in (Run(3, L, 3, 2, 1),) if len(r))),
    }
    return {kind: layers for kind, layers in plan.items() if layers}


def check_mlp_kinds(c: DeepseekV4Config) -> None:
    """mlp_layer_types: "hash_moe" or "moe" per layer, at least one a layer (cut as transformers
    cuts it). Both kinds hold the same tensors: a hash router's table is a buffer."""
    if c.mlp_layer_types is not None:
        L = c.num_hidden_layers
        listed_plan(c.mlp_layer_types[:L], L, field="mlp_layer_types",
                    names={k: k for k in MLP_KINDS})


def compressor(p: str, component: str, d: int, *, dim: int, ratio: int,
               overlap: bool) -> list[Tensor]:
    """A KV compressor pooling every ``ratio`` tokens into one entry of ``dim``: kv_proj and
    gate_proj d → w and position_bias [ratio, w] (w = dim, or 2·dim for CSA's two overlapping
    series), kv_norm [dim] (transformers DeepseekV4HCACompressor / DeepseekV4CSACompressor)."""
    width = Compressor(dim, overlap).width
    return [
        Tensor(f"{p}.position_bias", (ratio, width), f"{component}/position_bias"),
        *linear(f"{p}.kv_proj", f"{component}/kv_proj", width, d, bias=False),
        *linear(f"{p}.gate_proj", f"{component}/gate_proj", width, d, bias=False),
        *norm(f"{p}.kv_norm", f"{component}/kv_norm", dim, bias=False),
    ]


def describe(c: DeepseekV4Config) -> Architecture:
    d, L, h, hd, r = c.hidden_size, c.num_hidden_layers, c.num_attention_heads, c.head_dim, c.q_lora_rank
    E, k, ff, s, g = c.n_routed_experts, c.num_experts_per_tok, c.moe_intermediate_size, c.hc_mult, c.o_groups
    check_top_k(k, E, k_field="num_experts_per_tok", e_field="n_routed_experts")
    require(
        h * hd % g == 0,
        "o_groups",
        f"o_groups ({g}) must divide num_attention_heads × head_dim ({h} × {hd}): the grouped "
        "output projection splits the heads into o_groups equal groups",
    )
    plan = attention_plan(c)
    check_mlp_kinds(c)
    rates = c.rates()
    for kind in plan:
        require(kind == SLIDING or kind in rates, "compress_rates", f"has no rate for {kind} layers")

    p, a = "model.layers.{i}", "model.layers.{i}.self_attn"
    # q: d → q_lora → h·hd;  kv: d → hd (one head, K = V);  o: h·hd → g·o_lora (per group) → d
    attn = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=False),
        Tensor(f"{a}.sinks", (h,), "attn/sinks"),
        *linear(f"{a}.q_a_proj", "attn/q_a_proj", r, d, bias=False),
        *norm(f"{a}.q_a_norm", "attn/q_a_norm", r, bias=False),
        *linear(f"{a}.q_b_proj", "attn/q_b_proj", h * hd, r, bias=False),
        *linear(f"{a}.kv_proj", "attn/kv_proj", hd, d, bias=False),
        *norm(f"{a}.kv_norm", "attn/kv_norm", hd, bias=False),
        *linear(f"{a}.o_a_proj", "attn/o_a_proj", g * c.o_lora_rank, h * hd // g, bias=False),
        *linear(f"{a}.o_b_proj", "attn/o_b_proj", d, g * c.o_lora_rank, bias=False),
    ]
    # router E × d;  routed experts [E, 2·ff, d], [E, d, ff];  one shared SwiGLU expert of ff
    moe = [
        *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=False),
        *router(f"{p}.mlp.gate", d, E),
        *routed_experts(f"{p}.mlp.experts", d, ff, E),
        *swiglu(f"{p}.mlp.shared_experts", "moe/shared_experts", d, ff, bias=c.mlp_bias),
    ]
    hyper = [
        *hyper_connection(f"{p}.attn_hc", "hyper/attn", d, streams=s, mix=True),
        *hyper_connection(f"{p}.ffn_hc", "hyper/mlp", d, streams=s, mix=True),
    ]
    ih, idim = c.index_n_heads, c.index_head_dim

    def kind_tensors(kind: str) -> list[Tensor]:
        if kind == SLIDING:
            return []
        m, cp = rates[kind], f"{a}.compressor"
        if kind == HCA:
            return compressor(cp, "attn/compressor", d, dim=hd, ratio=m, overlap=False)
        return [
            *compressor(cp, "attn/compressor", d, dim=hd, ratio=m, overlap=True),
            *compressor(f"{cp}.indexer", "attn/indexer", d, dim=idim, ratio=m, overlap=True),
            *linear(f"{cp}.indexer.q_b_proj", "attn/indexer/q_b_proj", ih * idim, r, bias=False),
            *linear(f"{cp}.indexer.scorer.weights_proj", "attn/indexer/weights_proj", ih, d,
                    bias=False),
        ]

    def kind_attention(kind: str) -> Attention:
        window = Attention(h, 1, hd, hd, window=c.sliding_window)
        if kind == SLIDING:
            return window  # a plain sliding cache: the K = V tensor kept as K and as V
        compressed = Attention(h, 1, hd, hd, window=c.sliding_window, keys_are_values=True,
                               compress=rates[kind])
        if kind == HCA:
            return replace(compressed, compressors=(Compressor(hd),))
        # the indexer scores every pooled entry: q [H_I, d_I] · k [d_I] per head, 2·H_I·d_I
        return replace(compressed, compressors=(Compressor(hd, True), Compressor(idim, True)),
                        topk=c.index_topk, index_pair_flops=2 * ih * idim)

    groups = planned_layers(
        plan, lambda kind: ([*attn, *kind_tensors(kind), *moe, *hyper], kind_attention(kind))
    )
    n_mtp = c.num_nextn_predict_layers
    mtp = 0
    if n_mtp:
        # one more layer (of the kind a longer per-layer list gives it, else sliding, as in both
        # released checkpoints), e_proj and h_proj d × d, enorm, hnorm and norm, its own hc_head
        listed = c.listed_kinds()
        kind = listed[0][L] if listed is not None and len(listed[0]) > L else SLIDING
        require(kind in LAYER_KINDS and (kind == SLIDING or kind in rates),
                f"{listed[1] if listed else 'layer_types'}.{L}",
                f"the multi-token-prediction layer's kind {kind!r} is not one llmcalc can size")
        layer = [*attn, *kind_tensors(kind), *moe, *hyper,
                 *hyper_head("mtp.hc_head", "hyper/final_mixer/hc_head", d, streams=s)]
        mtp = mtp_params(layer, d=d, vocab=c.vocab_size, modules=n_mtp, own_vocab=False)
    notes = [mtp_note(n_mtp, mtp)] if n_mtp else []
    if c.n_shared_experts != 1:
        notes.append(f"n_shared_experts={c.n_shared_experts} is not read by transformers' "
                     "DeepseekV4: one shared expert of moe_intermediate_size, as counted")
    return Architecture(
        shape=Shape(L, d, h, 1, hd, ff, c.vocab_size,
                    c.tie_word_embeddings, c.max_position_embeddings),
        tensors=(
            *llama_outer_tensors(c.vocab_size, d, tied=c.tie_word_embeddings),
            *hyper_head("model.hc_head", "hyper/final_mixer/hc_head", d, streams=s),
        ),
        layer_groups=groups,
        moe=MoE(num_experts=E, experts_per_tok=k, shared_experts=1),
        notes=tuple(notes),
        unbuilt=(("mtp_params", mtp),) if n_mtp else (),
        depth_flops_per_token=stream_mixing_flops(d, streams=s, blocks=2 * L),
        depth_flops_what="hyper-connections mixing their residual streams, 2 a layer",
    )
