"""Falcon-H1 (TII, 2025): attention and a Mamba-2 mixer side by side in every layer (their outputs
added), then a SwiGLU MLP.

Per layer: input_layernorm, pre_ff_layernorm [d]; ``self_attn`` q, k, v, o (attention_bias);
``mamba`` (``_ssm.mamba2_mixer``) of inner width mamba_d_ssm (else mamba_expand · d), in_proj bias
mamba_proj_bias, out_proj bias projectors_bias, the gated RMSNorm only with mamba_rms_norm;
``feed_forward`` gate, up, down (mlp_bias). Every layer keeps both a KV cache and a Mamba state.
The µP multipliers (embedding, attention, SSM, MLP, lm_head) and the mup_vector are scalars and a
buffer, not parameters. Tensor names as in transformers ``FalconH1ForCausalLM``.
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import Size
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import swiglu
from llmcalc.families._base import uniform_layers
from llmcalc.families._ssm import mamba2_head_dim
from llmcalc.families._ssm import mamba2_mixer
from llmcalc.model.spec import LayerGroup


class FalconH1Config(DecoderConfig):
    transformers_class = "FalconH1Config"

    tie_word_embeddings: bool
    attention_bias: bool
    mlp_bias: bool
    projectors_bias: bool
    mamba_d_ssm: Size | None
    mamba_n_heads: Size
    mamba_d_head: Size | str
    mamba_n_groups: Size
    mamba_d_state: Size
    mamba_d_conv: Size
    mamba_expand: Size
    mamba_chunk_size: Size
    mamba_conv_bias: bool
    mamba_proj_bias: bool
    mamba_rms_norm: bool


def describe(c: FalconH1Config) -> Architecture:
    d, v = c.hidden_size, c.vocab_size
    d_inner = c.mamba_d_ssm if c.mamba_d_ssm is not None else c.mamba_expand * d
    head_dim = mamba2_head_dim(c.mamba_d_head, d_inner=d_inner, heads=c.mamba_n_heads,
                               groups=c.mamba_n_groups, inner_field="mamba_d_ssm")
    p = "model.layers.{i}"
    h, kv, hd = c.num_attention_heads, c.resolved_kv_heads, c.resolved_head_dim
    mamba, mixer = mamba2_mixer(
        f"{p}.mamba", d, d_inner=d_inner, heads=c.mamba_n_heads, head_dim=head_dim,
        groups=c.mamba_n_groups, state=c.mamba_d_state, conv_kernel=c.mamba_d_conv,
        chunk=c.mamba_chunk_size, bias=c.mamba_proj_bias, conv_bias=c.mamba_conv_bias,
        gated_norm=c.mamba_rms_norm, out_bias=c.projectors_bias,
    )
    layer = [
        *swiglu(f"{p}.feed_forward", "mlp", d, c.intermediate_size, bias=c.mlp_bias),
        *mamba,
        *gqa_projections(f"{p}.self_attn", d, h, kv, hd, bias=c.attention_bias),
        *norm(f"{p}.input_layernorm", "attn+mamba/norm", d, bias=False),
        *norm(f"{p}.pre_ff_layernorm", "mlp/norm", d, bias=False),
    ]
    (group,) = uniform_layers(c.num_hidden_layers, layer, c.attention(), "attention + mamba")
    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings,
                                    final_norm="model.final_layernorm"),
        layer_groups=(LayerGroup(group.name, group.layers, group.tensors, group.attention, mixer),),
    )
