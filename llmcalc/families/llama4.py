"""Llama 4 text decoder (``llama4_text``): MoE layers interleaved with dense ones, chunked attention.

Source: Meta 2025, "The Llama 4 herd"; tensor names and shapes as in transformers
``Llama4ForCausalLM``. A MoE layer holds a router [E, d], E routed experts stored input-first
(gate_up_proj [E, d, 2·ff], down_proj [E, ff, d]) and one shared expert (a SwiGLU of ff), all of
``intermediate_size``; the other layers hold a dense SwiGLU of ``intermediate_size_mlp``. Scout
(16 experts) makes every layer MoE; Maverick (128) every other one.

Attention: the RoPE layers attend within chunks of ``attention_chunk_size`` (chunked attention: the
cache holds at most one chunk, like a sliding window); every ``no_rope_layer_interval``-th layer uses
no RoPE and attends to the whole context. The q/k norm is an L2 norm without weights.
"""

from __future__ import annotations

from llmcalc.families._base import FULL
from llmcalc.families._base import Architecture
from llmcalc.families._base import Count
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import LayerPlan
from llmcalc.families._base import Size
from llmcalc.families._base import check_top_k
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import override_plan
from llmcalc.families._base import periodic_plan
from llmcalc.families._base import plan_from_kinds
from llmcalc.families._base import require
from llmcalc.families._base import router
from llmcalc.families._base import swiglu
from llmcalc.families._moe import cross_plans
from llmcalc.families._moe import crossed_name
from llmcalc.families._moe import experts_transposed
from llmcalc.families._moe import listed_plan
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import MoE
from llmcalc.model.spec import Tensor

CHUNKED = "chunked_attention"
DENSE, SPARSE = "dense", "moe"


class Llama4TextConfig(DecoderConfig):
    transformers_class = "Llama4TextConfig"

    intermediate_size: Size  # one routed expert and the shared expert
    intermediate_size_mlp: Size  # the dense layers
    tie_word_embeddings: bool
    attention_bias: bool
    num_experts_per_tok: Size
    num_local_experts: Size
    moe_layers: list[Count] | None = None  # absent: every interleave_moe_layer_step-th layer
    interleave_moe_layer_step: Size
    no_rope_layers: list[Count] | None = None  # 1: RoPE (chunked), 0: no RoPE (full)
    no_rope_layer_interval: Size
    attention_chunk_size: Size | None
    layer_types: list[str] | None = None


def mlp_plan(c: Llama4TextConfig) -> LayerPlan:
    L = c.num_hidden_layers
    if c.moe_layers is None:
        return periodic_plan(L, period=c.interleave_moe_layer_step, every=SPARSE, others=DENSE)
    # the listed layers are MoE, the rest dense
    return override_plan({DENSE: LayerSet.span(0, L)}, [i for i in c.moe_layers if i < L], SPARSE)


def attention_plan(c: Llama4TextConfig) -> LayerPlan:
    L = c.num_hidden_layers
    if c.layer_types is not None:
        names = {CHUNKED: CHUNKED, FULL: FULL}
        return listed_plan(c.layer_types, L, field="layer_types", names=names)
    if c.attention_chunk_size is None:
        return {FULL: LayerSet.span(0, L)}
    if c.no_rope_layers:
        require(
            len(c.no_rope_layers) == L,
            "no_rope_layers",
            f"has {len(c.no_rope_layers)} entries, num_hidden_layers is {L}",
        )
        return plan_from_kinds([CHUNKED if r else FULL for r in c.no_rope_layers])
    return periodic_plan(L, period=c.no_rope_layer_interval, every=FULL, others=CHUNKED)


def describe(c: Llama4TextConfig) -> Architecture:
    d, v, E, k = c.hidden_size, c.vocab_size, c.num_local_experts, c.num_experts_per_tok
    check_top_k(k, E, k_field="num_experts_per_tok", e_field="num_local_experts")
    h, hd, kv = c.num_attention_heads, c.resolved_head_dim, c.resolved_kv_heads
    p = "model.layers.{i}"
    attn = [
        *gqa_projections(f"{p}.self_attn", d, h, kv, hd, bias=c.attention_bias),
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=False),
        *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=False),
    ]
    f = f"{p}.feed_forward"
    blocks: dict[str, list[Tensor]] = {
        DENSE: swiglu(f, "mlp", d, c.intermediate_size_mlp),
        # router E × d;  experts [E, d, 2·ff], [E, ff, d];  shared expert: a SwiGLU of ff
        SPARSE: [
            *router(f"{f}.router", d, E),
            *experts_transposed(f"{f}.experts", d, c.intermediate_size, E),
            *swiglu(f"{f}.shared_expert", "moe/shared_expert", d, c.intermediate_size),
        ],
    }
    attention = {
        FULL: Attention(h, kv, hd, hd),
        CHUNKED: Attention(h, kv, hd, hd, window=c.attention_chunk_size, chunked=True),
    }
    plan = cross_plans(attention_plan(c), mlp_plan(c))
    groups = tuple(
        LayerGroup(
            crossed_name(kinds, plan), layers, (*attn, *blocks[kinds[1]]), attention[kinds[0]]
        )
        for kinds, layers in plan.items()
    )
    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
        layer_groups=groups,
        moe=MoE(num_experts=E, experts_per_tok=k, shared_experts=1, dense_run=True),
    )
