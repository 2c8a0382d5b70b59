"""Qwen mixture-of-experts decoders: fine-grained routed experts, dense layers where the config says.

Covers ``qwen2_moe`` (Qwen1.5-MoE, Qwen2-57B-A14B: qkv biases, one shared expert scaled by a sigmoid
shared-expert gate) and ``qwen3_moe`` (Qwen3-30B-A3B, Qwen3-235B-A22B: q/k RMSNorm over head_dim, no
shared expert). Source: Qwen Team 2024, 2025; tensor names and shapes as in transformers
``Qwen2MoeForCausalLM`` / ``Qwen3MoeForCausalLM``.

A layer is MoE unless listed in ``mlp_only_layers`` or off the ``decoder_sparse_step`` stride; the
others are dense SwiGLU layers of ``intermediate_size``, in their own layer group.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import AliasChoices
from pydantic import Field

from llmcalc.families._base import Architecture
from llmcalc.families._base import Count
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import LayerPlan
from llmcalc.families._base import Size
from llmcalc.families._base import check_top_k
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import linear
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import override_plan
from llmcalc.families._base import periodic_plan
from llmcalc.families._base import planned_layers
from llmcalc.families._base import qk_norms
from llmcalc.families._base import resolve_head_dim
from llmcalc.families._base import resolve_kv_heads
from llmcalc.families._base import routed_experts
from llmcalc.families._base import router
from llmcalc.families._base import swiglu
from llmcalc.model.spec import Attention
from llmcalc.model.spec import MoE
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

DENSE, SPARSE = "dense", "moe"


class QwenMoeConfig(FamilyConfig):
    """Fields both Qwen MoE generations read."""

    qk_norm: ClassVar[bool] = False

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    intermediate_size: Size  # dense (mlp_only) layers
    moe_intermediate_size: Size  # one routed expert
    vocab_size: Size
    max_position_embeddings: Size | None = None
    # declared by Qwen3-MoE; Qwen2-MoE's attention reads getattr(config, "head_dim", d / heads)
    head_dim: Size | None = None  # absent: hidden_size / num_attention_heads
    decoder_sparse_step: Size = 1
    mlp_only_layers: list[Count] | None = None  # null or absent: none
    tie_word_embeddings: bool = False
    # Defaults differ by generation (these are Qwen2-MoE's; Qwen3-MoE overrides them).
    num_key_value_heads: Size = 16
    num_experts: Size = 60
    num_experts_per_tok: Size = 4


class Qwen2MoeConfig(QwenMoeConfig):
    transformers_class = "Qwen2MoeConfig"

    shared_expert_intermediate_size: Size
    qkv_bias: bool  # q, k, v biases; o_proj has none


class Qwen3MoeConfig(QwenMoeConfig):
    transformers_class = "Qwen3MoeConfig"
    qk_norm: ClassVar[bool] = True

    num_key_value_heads: Size
    # transformers 5 writes num_local_experts (the attribute num_experts maps to); older
    # config.json files say num_experts. Given both (a written text_config on its class defaults,
    # which name the __init__ argument), the attribute wins, as in transformers.
    num_experts: Size = Field(
        validation_alias=AliasChoices("num_local_experts", "num_experts")
    )
    num_experts_per_tok: Size
    attention_bias: bool  # q, k, v and o biases


def layer_kinds(c: QwenMoeConfig) -> LayerPlan:
    """MoE where (i + 1) is a multiple of decoder_sparse_step and i is not in mlp_only_layers."""
    plan = periodic_plan(
        c.num_hidden_layers, period=c.decoder_sparse_step, every=SPARSE, others=DENSE
    )
    dense = [i for i in c.mlp_only_layers or () if i < c.num_hidden_layers]
    return override_plan(plan, dense, DENSE)


def describe(c: QwenMoeConfig) -> Architecture:
    d, v, E, k = c.hidden_size, c.vocab_size, c.num_experts, c.num_experts_per_tok
    check_top_k(k, E, k_field="num_experts_per_tok", e_field="num_experts")
    h = c.num_attention_heads
    hd = resolve_head_dim(d, h, c.head_dim, floor=True)  # getattr(config, "head_dim", d // h): h·⌊d/h⌋
    kv = resolve_kv_heads(h, c.num_key_value_heads)
    shared_ff = getattr(c, "shared_expert_intermediate_size", 0)
    bias = getattr(c, "qkv_bias", False) or getattr(c, "attention_bias", False)
    o_bias = getattr(c, "attention_bias", False)
    p = "model.layers.{i}"
    attn: list[Tensor] = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=False),
        *gqa_projections(f"{p}.self_attn", d, h, kv, hd, bias=bias, o_bias=o_bias),
    ]
    if c.qk_norm:
        attn += qk_norms(f"{p}.self_attn", hd, hd)
    attn += norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=False)
    dense_mlp = swiglu(f"{p}.mlp", "mlp", d, c.intermediate_size)
    # router E × d;  experts [E, 2·ff, d] and [E, d, ff];  shared expert (Qwen2-MoE): a SwiGLU of
    # shared_expert_intermediate_size and its gate 1 × d (a sigmoid scalar per token).
    moe_mlp = [
        *router(f"{p}.mlp.gate", d, E),
        *routed_experts(f"{p}.mlp.experts", d, c.moe_intermediate_size, E),
    ]
    if shared_ff:
        moe_mlp += [
            *swiglu(f"{p}.mlp.shared_expert", "moe/shared_expert", d, shared_ff),
            *linear(f"{p}.mlp.shared_expert_gate", "moe/shared_expert_gate", 1, d, bias=False),
        ]
    blocks = {DENSE: dense_mlp, SPARSE: moe_mlp}
    attention = Attention(h, kv, hd, hd)
    groups = planned_layers(layer_kinds(c), lambda kind: ([*attn, *blocks[kind]], attention))
    return Architecture(
        shape=Shape(c.num_hidden_layers, d, h, kv, hd, c.moe_intermediate_size, v,
                    c.tie_word_embeddings, c.max_position_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
        layer_groups=groups,
        moe=MoE(num_experts=E, experts_per_tok=k, shared_experts=1 if shared_ff else 0),
    )
