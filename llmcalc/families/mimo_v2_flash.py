"""MiMo-V2-Flash (Xiaomi 2025): hybrid sliding-window / full attention with attention sinks, and
fine-grained experts after one dense layer.

Tensor names and shapes as in transformers ``MiMoV2FlashForCausalLM``. q/k use ``head_dim``, v and
o ``v_head_dim``; the sliding-window layers hold twice the kv heads of the full ones and a learned
sink logit per head (``sinks`` [h]). Full attention in layer 0 and every 6th layer (i + 1 ≡ 0 mod 6)
unless ``layer_types`` lists them; the first layer is dense unless ``mlp_layer_types`` lists them.
The router is a bare [E, d] parameter (``mlp.gate.weight``); no shared expert.
"""

from __future__ import annotations

from llmcalc.families._base import FULL
from llmcalc.families._base import SLIDING
from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import LayerPlan
from llmcalc.families._base import Size
from llmcalc.families._base import check_top_k
from llmcalc.families._base import layer_kinds
from llmcalc.families._base import linear
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import routed_experts
from llmcalc.families._base import router
from llmcalc.families._base import split_plan
from llmcalc.families._base import swiglu
from llmcalc.families._moe import cross_plans
from llmcalc.families._moe import crossed_name
from llmcalc.families._moe import mlp_kinds_plan
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import MoE
from llmcalc.model.spec import Run
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

DENSE, SPARSE = "dense", "moe"


class MiMoV2FlashConfig(FamilyConfig):
    transformers_class = "MiMoV2FlashConfig"

    vocab_size: Size
    hidden_size: Size
    intermediate_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    num_key_value_heads: Size  # full layers; sliding ones hold twice as many
    max_position_embeddings: Size | None
    tie_word_embeddings: bool
    attention_bias: bool  # q, k, v (o_proj has none)
    moe_intermediate_size: Size
    num_experts_per_tok: Size
    n_routed_experts: Size
    head_dim: Size
    v_head_dim: Size
    sliding_window: Size
    layer_types: list[str] | None = None
    mlp_layer_types: list[str] | None = None


def attention_plan(c: MiMoV2FlashConfig) -> LayerPlan:
    L = c.num_hidden_layers
    if c.layer_types is not None:
        return layer_kinds(c.layer_types, L, pattern=1)
    full = LayerSet(tuple(r for r in (Run(0, min(1, L), 0, 1, 1), Run(5, L, 5, 6, 1)) if len(r)))
    sliding = LayerSet(tuple(r for r in (Run(1, L, 0, 6, 5),) if len(r)))
    return {kind: layers for kind, layers in ((FULL, full), (SLIDING, sliding)) if layers}


def mlp_plan(c: MiMoV2FlashConfig) -> LayerPlan:
    if c.mlp_layer_types is not None:
        return mlp_kinds_plan(c.mlp_layer_types, c.num_hidden_layers, dense=DENSE, sparse=SPARSE)
    return split_plan(c.num_hidden_layers, at=1, before=DENSE, after=SPARSE)


def describe(c: MiMoV2FlashConfig) -> Architecture:
    d, v, E, k = c.hidden_size, c.vocab_size, c.n_routed_experts, c.num_experts_per_tok
    check_top_k(k, E, k_field="num_experts_per_tok", e_field="n_routed_experts")
    h, hd, vd, b = c.num_attention_heads, c.head_dim, c.v_head_dim, c.attention_bias
    p, a = "model.layers.{i}", "model.layers.{i}.self_attn"

    def attn(kv: int, sinks: bool) -> list[Tensor]:
        # q: h·hd × d;  k: kv·hd × d;  v: kv·vd × d;  o: d × h·vd;  sinks [h] on sliding layers
        return [
            *linear(f"{a}.q_proj", "attn/q_proj", h * hd, d, bias=b),
            *linear(f"{a}.k_proj", "attn/k_proj", kv * hd, d, bias=b),
            *linear(f"{a}.v_proj", "attn/v_proj", kv * vd, d, bias=b),
            *linear(f"{a}.o_proj", "attn/o_proj", d, h * vd, bias=False),
            *([Tensor(f"{a}.sinks", (h,), "attn/sinks")] if sinks else []),
            *norm(f"{p}.input_layernorm", "attn/norm", d, bias=False),
            *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=False),
        ]

    kv_full = c.num_key_value_heads
    attention = {
        FULL: (attn(kv_full, False), Attention(h, kv_full, hd, vd)),
        SLIDING: (
            attn(2 * kv_full, True),
            Attention(h, 2 * kv_full, hd, vd, window=c.sliding_window),
        ),
    }
    blocks = {
        DENSE: swiglu(f"{p}.mlp", "mlp", d, c.intermediate_size),
        SPARSE: [
            *router(f"{p}.mlp.gate", d, E),
            *routed_experts(f"{p}.mlp.experts", d, c.moe_intermediate_size, E),
        ],
    }
    plan = cross_plans(attention_plan(c), mlp_plan(c))
    groups = tuple(
        LayerGroup(
            crossed_name(kinds, plan),
            layers,
            (*attention[kinds[0]][0], *blocks[kinds[1]]),
            attention[kinds[0]][1],
        )
        for kinds, layers in plan.items()
    )
    return Architecture(
        shape=Shape(c.num_hidden_layers, d, h, kv_full, hd, c.moe_intermediate_size, v,
                    c.tie_word_embeddings, c.max_position_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
        layer_groups=groups,
        moe=MoE(num_experts=E, experts_per_tok=k),
    )
