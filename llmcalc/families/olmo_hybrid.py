"""OLMo-Hybrid (AI2): gated DeltaNet layers and OLMo 2 attention layers as ``layer_types`` lists
them (default: full attention in every 4th layer, i mod 4 = 3, and at least in the last), each
with a SwiGLU MLP.

DeltaNet layers are pre-norm (input_layernorm, post_attention_layernorm) with ``linear_attn``
(``_ssm.gated_delta_net``, OLMo layout: q, k, v, a, b, g, o projections, o_norm); attention layers
are OLMo 2's post-norm (post_attention_layernorm, post_feedforward_layernorm) with q_norm and k_norm
over all of q and k. Linear heads default to the attention heads, dk to 0.75·d / hk, dv to 2·dk.
Tensor names as in transformers ``OlmoHybridForCausalLM``.
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import Size
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import listed_kinds
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import periodic_plan
from llmcalc.families._base import plan_from_kinds
from llmcalc.families._base import qk_norms
from llmcalc.families._base import require
from llmcalc.families._base import swiglu
from llmcalc.families._ssm import LayerBuild
from llmcalc.families._ssm import gated_delta_net
from llmcalc.families._ssm import mixed_layers

MIXER_OF = {"linear_attention": "linear_attention", "full_attention": "attention"}


class OlmoHybridConfig(DecoderConfig):
    transformers_class = "OlmoHybridConfig"

    tie_word_embeddings: bool
    attention_bias: bool
    layer_types: list[str] | None = None
    linear_num_key_heads: Size | None = None
    linear_num_value_heads: Size | None = None
    linear_key_head_dim: Size | None = None
    linear_value_head_dim: Size | None = None
    linear_conv_kernel_dim: Size


def describe(c: OlmoHybridConfig) -> Architecture:
    d, v, L = c.hidden_size, c.vocab_size, c.num_hidden_layers
    if c.layer_types is not None:
        plan = plan_from_kinds(listed_kinds(c.layer_types, L, MIXER_OF))
    elif L >= 4:
        plan = periodic_plan(L, period=4, every="attention", others="linear_attention")
    else:  # fewer than 4 layers: the last one is the attention layer
        plan = plan_from_kinds(["linear_attention"] * (L - 1) + ["attention"])
    hk = c.linear_num_key_heads or c.num_attention_heads
    hv = c.linear_num_value_heads or c.num_attention_heads
    dk = c.linear_key_head_dim or int(0.75 * d / hk)
    dv = c.linear_value_head_dim or 2 * dk
    require(dk > 0, "linear_key_head_dim", f"0.75 × hidden_size / heads gives {dk}")
    p = "model.layers.{i}"
    mlp = swiglu(f"{p}.mlp", "mlp", d, c.intermediate_size)

    def build(kind: str) -> LayerBuild:
        if kind == "attention":
            h, kv, hd = c.num_attention_heads, c.resolved_kv_heads, c.resolved_head_dim
            a = f"{p}.self_attn"
            return [
                *gqa_projections(a, d, h, kv, hd, bias=c.attention_bias),
                *qk_norms(a, h * hd, kv * hd),
                *mlp,
                *norm(f"{p}.post_attention_layernorm", "attention/norm", d, bias=False),
                *norm(f"{p}.post_feedforward_layernorm", "mlp/norm", d, bias=False),
            ], c.attention(), None
        tensors, mixer = gated_delta_net(
            f"{p}.linear_attn", d, key_heads=hk, value_heads=hv, key_dim=dk, value_dim=dv,
            kernel=c.linear_conv_kernel_dim, layout="olmo_hybrid",
        )
        return [
            *tensors, *mlp,
            *norm(f"{p}.input_layernorm", "linear_attention/norm", d, bias=False),
            *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=False),
        ], None, mixer

    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
        layer_groups=mixed_layers(plan, build),
    )
