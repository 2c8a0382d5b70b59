"""Qwen3-Next (Qwen team, 2025): gated DeltaNet linear attention in three of every four layers,
gated softmax attention in the fourth, routed experts with a gated shared expert.

Per layer: input_layernorm, post_attention_layernorm [d]; ``linear_attn`` (``_ssm.gated_delta_net``)
or ``self_attn`` (q_proj 2·h·hd × d: the query and its output gate; k, v, o; q_norm, k_norm over
head_dim); ``mlp``: router ``gate`` [E, d], fused experts, ``shared_expert`` (SwiGLU) and
``shared_expert_gate`` [1, d] when the layer is sparse ((i + 1) mod decoder_sparse_step = 0, not in
mlp_only_layers, num_experts > 0), else a SwiGLU MLP of intermediate_size. Layer types as listed,
else full attention where (i + 1) mod full_attention_interval = 0. Tensor names as in transformers
``Qwen3NextForCausalLM``.

Lara-Mini (transformers ``models/lara_mini/modeling_lara_mini.py``) is Qwen3.5-MoE with three
changes, described below as such: a third layer type, ``sliding_attention`` (within
``sliding_window`` tokens), and by default the pattern linear, sliding, linear, full, sliding
repeating every 5 layers; Qwen3's attention (q_proj h·hd × d, no output gate); the shared expert
added without a ``shared_expert_gate`` (FlintSparseMoeBlock).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import ClassVar

from llmcalc.families._base import Architecture
from llmcalc.families._base import Count
from llmcalc.families._base import DecoderConfig
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
from llmcalc.families._ssm import LayerBuild
from llmcalc.families._ssm import gated_delta_net
from llmcalc.families._ssm import mixed_layers
from llmcalc.families._ssm import residue_plan
from llmcalc.model.spec import MoE

MIXER_OF = {"linear_attention": "linear_attention", "full_attention": "attention"}
SLIDING = {"sliding_attention": "sliding_attention"}


class Qwen3NextConfig(DecoderConfig):
    transformers_class = "Qwen3NextConfig"

    tie_word_embeddings: bool
    attention_bias: bool
    linear_conv_kernel_dim: Size
    linear_key_head_dim: Size
    linear_value_head_dim: Size
    linear_num_key_heads: Size
    linear_num_value_heads: Size
    decoder_sparse_step: Size = 1
    moe_intermediate_size: Size = 512
    shared_expert_intermediate_size: Size = 512
    num_experts_per_tok: Size = 10
    num_experts: Count = 512
    mlp_only_layers: list[Count] | None = None
    layer_types: list[str] | None = None
    full_attention_interval: Size = 4

    # Qwen3.5: the DeltaNet's projections split; its MLP always dense or always routed
    split_projections: ClassVar[bool] = False
    every_layer: ClassVar[str | None] = None  # "mlp" or "moe"; None: decoder_sparse_step decides
    # Lara-Mini: its layer types, its default pattern, plain queries, an ungated shared expert
    mixer_of: ClassVar[dict[str, str]] = MIXER_OF
    default_pattern: ClassVar[tuple[str, ...] | None] = None  # None: full_attention_interval
    output_gate: ClassVar[bool] = True  # q_proj 2·h·hd: the query and its sigmoid output gate
    shared_expert_gate: ClassVar[bool] = True

    @property
    def window(self) -> int | None:
        return None


class Qwen3_5TextConfig(Qwen3NextConfig):
    transformers_class = "Qwen3_5TextConfig"

    split_projections = True
    every_layer = "mlp"


class Qwen3_5MoeTextConfig(Qwen3NextConfig):
    transformers_class = "Qwen3_5MoeTextConfig"

    intermediate_size: Size | None = None  # type: ignore[assignment]  # no dense MLP to size
    num_experts_per_tok: Size
    num_experts: Count
    split_projections = True
    every_layer = "moe"


class LaraMiniConfig(Qwen3NextConfig):
    transformers_class = "LaraMiniConfig"

    intermediate_size: Size | None = None  # type: ignore[assignment]  # every layer routed
    num_experts_per_tok: Size
    num_experts: Count
    sliding_window: Size | None
    split_projections = True
    every_layer = "moe"
    mixer_of = {**MIXER_OF, **SLIDING}
    default_pattern = ("linear_attention", "sliding_attention", "linear_attention",
                       "full_attention", "sliding_attention")
    output_gate = False
    shared_expert_gate = False

    @property
    def window(self) -> int | None:
        return self.sliding_window


def _plan(c: Qwen3NextConfig) -> LayerPlan:
    L, E = c.num_hidden_layers, c.num_experts
    # a type whose every layer is one kind never reads decoder_sparse_step (Qwen3.5-MoE)
    step = 1 if c.every_layer is not None else c.decoder_sparse_step

    def ffn(i: int) -> str:
        if c.every_layer is not None:
            return c.every_layer
        return "moe" if E > 0 and (i + 1) % step == 0 else "mlp"

    if c.layer_types is not None:
        mixers = listed_kinds(c.layer_types, L, c.mixer_of)
        plan = plan_from_kinds([f"{m}, {ffn(i)}" for i, m in enumerate(mixers)])

        def mixer_of(i: int) -> str:
            return mixers[i]
    elif c.default_pattern is not None:  # Lara-Mini: every layer routed, no mlp_only_layers
        pattern = [c.mixer_of[kind] for kind in c.default_pattern]
        return residue_plan(L, len(pattern), lambda i: f"{pattern[i]}, {ffn(i)}",
                            field="layer_types")
    else:
        k = c.full_attention_interval

        def mixer_of(i: int) -> str:
            return "attention" if (i + 1) % k == 0 else "linear_attention"

        period = k * step // math.gcd(k, step)
        # the pattern's period is the two intervals' lcm: name the one that makes it long
        field = "full_attention_interval" if k >= step else "decoder_sparse_step"
        plan = residue_plan(L, period, lambda i: f"{mixer_of(i)}, {ffn(i)}", field=field)
    dense = sorted({i for i in c.mlp_only_layers or [] if i < L}) if c.every_layer is None else []
    for mixer in ("linear_attention", "attention", "sliding_attention"):
        moved = [i for i in dense if mixer_of(i) == mixer]
        plan = override_plan(plan, moved, f"{mixer}, mlp")
    return plan


def describe(c: Qwen3NextConfig) -> Architecture:
    d, v, E = c.hidden_size, c.vocab_size, c.num_experts
    require(c.every_layer != "moe" or E > 0, "num_experts", "must be at least 1")
    if E and c.every_layer != "mlp":
        check_top_k(c.num_experts_per_tok, E, k_field="num_experts_per_tok",
                    e_field="num_experts")
    # projections sized by the key and value heads alone: built whatever their ratio, but the
    # gated delta rule runs value_heads // key_heads value heads per key head, and fails
    ragged = (f"linear_num_key_heads ({c.linear_num_key_heads}) does not divide "
              f"linear_num_value_heads ({c.linear_num_value_heads}): transformers builds the "
              "projections, but its gated delta rule cannot group the value heads by key head"
              ) if c.linear_num_value_heads % c.linear_num_key_heads else ""
    plan = _plan(c)
    p = "model.layers.{i}"
    h, kv, hd = c.num_attention_heads, c.resolved_kv_heads, c.resolved_head_dim

    def build(kind: str) -> LayerBuild:
        mixer_kind, ffn_kind = kind.split(", ")
        if ffn_kind == "moe":
            m = f"{p}.mlp"
            ffn = [
                *router(f"{m}.gate", d, E),
                *routed_experts(f"{m}.experts", d, c.moe_intermediate_size, E),
                *swiglu(f"{m}.shared_expert", "moe/shared_expert", d,
                        c.shared_expert_intermediate_size),
            ]
            if c.shared_expert_gate:  # a sigmoid scale on the shared expert's output: 1 × d
                ffn += linear(f"{m}.shared_expert_gate", "moe/shared_expert_gate", 1, d, bias=False)
        else:
            require(c.intermediate_size is not None, "intermediate_size", "missing required field")
            ffn = swiglu(f"{p}.mlp", "mlp", d, c.intermediate_size or 0)
        norms = [*norm(f"{p}.input_layernorm", f"{mixer_kind}/norm", d, bias=False),
                 *norm(f"{p}.post_attention_layernorm", f"{ffn_kind}/norm", d, bias=False)]
        if mixer_kind != "linear_attention":
            a, bias = f"{p}.self_attn", c.attention_bias
            q_rows = (2 if c.output_gate else 1) * h * hd  # the gated query is twice as wide
            attn = [*linear(f"{a}.q_proj", "attn/q_proj", q_rows, d, bias=bias),
                    *(t for t in gqa_projections(a, d, h, kv, hd, bias=bias)
                      if ".q_proj." not in t.name),
                    *qk_norms(a, hd, hd)]
            window = c.window if mixer_kind == "sliding_attention" else None
            return [*attn, *ffn, *norms], c.attention(window=window), None
        tensors, mixer = gated_delta_net(
            f"{p}.linear_attn", d, key_heads=c.linear_num_key_heads,
            value_heads=c.linear_num_value_heads, key_dim=c.linear_key_head_dim,
            value_dim=c.linear_value_head_dim, kernel=c.linear_conv_kernel_dim,
            layout="qwen3_5" if c.split_projections else "qwen3_next",
        )
        return [*tensors, *ffn, *norms], None, mixer

    has_moe = any(kind.endswith("moe") for kind in plan)
    # the headline d_ff: the dense MLP's, or the experts' where there is none (Qwen3.5-MoE)
    shape = replace(c.shape(tied=c.tie_word_embeddings),
                    intermediate_size=c.intermediate_size or c.moe_intermediate_size)
    return Architecture(
        shape=shape,
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
        layer_groups=mixed_layers(plan, build),
        moe=MoE(E, c.num_experts_per_tok, shared_experts=1) if has_moe else None,
           forward_unmodelled=ragged if any("linear_attention" in k for k in plan) else "",
    )
