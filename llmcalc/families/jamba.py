"""Jamba (AI21, Lieber et al. 2024): Mamba and attention layers interleaved, MoE every other layer.

Layer i has attention when i mod attn_layer_period = attn_layer_offset, a Mamba mixer otherwise;
its feed-forward is a routed MoE (router [E, d], fused experts) when i mod expert_layer_period =
expert_layer_offset and num_experts > 1, a SwiGLU MLP otherwise. Jamba-v0.1: 1 attention : 7 Mamba,
16 experts top-2 on odd layers. Attention has no positional encoding and no biases; the Mamba mixer
adds RMSNorms on Δ (dt_rank), B and C (N). Tensor names as in transformers ``JambaForCausalLM``.
"""

from __future__ import annotations

import math
import operator
from functools import reduce

from llmcalc.families._base import Architecture
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import Size
from llmcalc.families._base import check_top_k
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import require
from llmcalc.families._base import routed_experts
from llmcalc.families._base import router
from llmcalc.families._base import swiglu
from llmcalc.families._ssm import LayerBuild
from llmcalc.families._ssm import mamba_mixer
from llmcalc.families._ssm import mixed_layers
from llmcalc.families._ssm import residue_plan
from llmcalc.model.spec import MoE


class JambaConfig(DecoderConfig):
    transformers_class = "JambaConfig"

    num_key_value_heads: Size | None  # transformers' JambaConfig default, not the heads
    tie_word_embeddings: bool
    num_experts: Size
    num_experts_per_tok: Size
    expert_layer_period: Size
    expert_layer_offset: int
    attn_layer_period: Size
    attn_layer_offset: int
    mamba_d_state: Size
    mamba_d_conv: Size
    mamba_expand: Size
    mamba_dt_rank: Size | str
    mamba_conv_bias: bool
    mamba_proj_bias: bool

    @property
    def dt_rank(self) -> int:
        r = self.mamba_dt_rank
        if isinstance(r, int):
            return r
        require(r == "auto", "mamba_dt_rank", f"expected a positive integer or 'auto', got {r!r}")
        return math.ceil(self.hidden_size / 16)


def describe(c: JambaConfig) -> Architecture:
    d, v, ff, E = c.hidden_size, c.vocab_size, c.intermediate_size, c.num_experts
    for period, offset, name in ((c.attn_layer_period, c.attn_layer_offset, "attn"),
                                 (c.expert_layer_period, c.expert_layer_offset, "expert")):
        require(0 <= offset < period, f"{name}_layer_offset",
                f"must be at least 0 and smaller than {name}_layer_period ({period}), got {offset}")
    moe = E > 1
    if moe:
        check_top_k(c.num_experts_per_tok, E, k_field="num_experts_per_tok", e_field="num_experts")
    period = reduce(operator.mul, (c.attn_layer_period, c.expert_layer_period)) // math.gcd(
        c.attn_layer_period, c.expert_layer_period
    )

    def kind_of(i: int) -> str:
        mixer = "attention" if i % c.attn_layer_period == c.attn_layer_offset else "mamba"
        ffn = "moe" if moe and i % c.expert_layer_period == c.expert_layer_offset else "mlp"
        return f"{mixer}, {ffn}"

    plan = residue_plan(c.num_hidden_layers, period, kind_of, field="attn_layer_period")
    p = "model.layers.{i}"
    attention = c.attention()

    def build(kind: str) -> LayerBuild:
        mixer_kind, ffn = kind.split(", ")
        ffn_tensors = (
            [*router(f"{p}.feed_forward.router", d, E), *routed_experts(f"{p}.feed_forward.experts", d, ff, E)]
            if ffn == "moe"
            else swiglu(f"{p}.feed_forward", "mlp", d, ff)
        )
        norms = [*norm(f"{p}.input_layernorm", f"{mixer_kind}/norm", d, bias=False),
                 *norm(f"{p}.pre_ff_layernorm", f"{ffn}/norm", d, bias=False)]
        if mixer_kind == "attention":
            h, kv, hd = c.num_attention_heads, c.resolved_kv_heads, c.resolved_head_dim
            return [*norms, *gqa_projections(f"{p}.self_attn", d, h, kv, hd, bias=False),
                    *ffn_tensors], attention, None
        m = f"{p}.mamba"
        mixer_tensors, mixer = mamba_mixer(
            m, d, d_inner=c.mamba_expand * d, state=c.mamba_d_state, conv_kernel=c.mamba_d_conv,
            dt_rank=c.dt_rank, bias=c.mamba_proj_bias, conv_bias=c.mamba_conv_bias,
        )
        ssm_norms = [*norm(f"{m}.dt_layernorm", "mamba/dt_layernorm", c.dt_rank, bias=False),
                     *norm(f"{m}.b_layernorm", "mamba/b_layernorm", c.mamba_d_state, bias=False),
                     *norm(f"{m}.c_layernorm", "mamba/c_layernorm", c.mamba_d_state, bias=False)]
        return [*norms, *mixer_tensors, *ssm_norms, *ffn_tensors], None, mixer

    has_moe = moe and any(kind.endswith("moe") for kind in plan)
    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings, final_norm="model.final_layernorm"),
        layer_groups=mixed_layers(plan, build),
        moe=MoE(E, c.num_experts_per_tok) if has_moe else None,
    )
