"""Bamba (IBM, 2024): Mamba-2 layers with softmax attention on the layers ``attn_layer_indices``
lists, a SwiGLU MLP after every mixer.

Attention as in Llama (rotary on half of each head, no parameters); the Mamba-2 mixer is
``_ssm.mamba2_mixer`` (gated RMSNorm over d_inner). Tensor names as in transformers
``BambaForCausalLM``: ``model.layers.{i}.self_attn`` or ``.mamba``, ``.feed_forward``,
``.input_layernorm``, ``.pre_ff_layernorm``, ``model.final_layernorm``.
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import Count
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import LayerPlan
from llmcalc.families._base import Size
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import override_plan
from llmcalc.families._base import swiglu
from llmcalc.families._ssm import LayerBuild
from llmcalc.families._ssm import mamba2_head_dim
from llmcalc.families._ssm import mamba2_mixer
from llmcalc.families._ssm import mixed_layers
from llmcalc.model.spec import LayerSet


class BambaConfig(DecoderConfig):
    transformers_class = "BambaConfig"

    tie_word_embeddings: bool
    attention_bias: bool
    mlp_bias: bool
    attn_layer_indices: list[Count] | None = None
    mamba_n_heads: Size
    mamba_d_head: Size | str  # "auto": mamba_expand · hidden_size / mamba_n_heads
    mamba_n_groups: Size
    mamba_d_state: Size
    mamba_d_conv: Size
    mamba_expand: Size
    mamba_chunk_size: Size
    mamba_conv_bias: bool
    mamba_proj_bias: bool


def attention_at(indices: list[int] | None, num_layers: int) -> LayerPlan:
    """Attention on the listed layers, Mamba on the others; an index past the last layer names
    no layer (transformers asks ``i in attn_layer_indices`` of each layer i)."""
    listed = [i for i in indices or [] if i < num_layers]
    return override_plan({"mamba": LayerSet.span(0, num_layers)}, listed, "attention")


def describe(c: BambaConfig) -> Architecture:
    d, v, ff = c.hidden_size, c.vocab_size, c.intermediate_size
    d_inner = c.mamba_expand * d
    head_dim = mamba2_head_dim(c.mamba_d_head, d_inner=d_inner, heads=c.mamba_n_heads,
                               groups=c.mamba_n_groups, inner_field="mamba_expand × hidden_size")
    p = "model.layers.{i}"
    plan = attention_at(c.attn_layer_indices, c.num_hidden_layers)

    def build(kind: str) -> LayerBuild:
        common = [
            *swiglu(f"{p}.feed_forward", "mlp", d, ff, bias=c.mlp_bias),
            *norm(f"{p}.input_layernorm", f"{kind}/norm", d, bias=False),
            *norm(f"{p}.pre_ff_layernorm", "mlp/norm", d, bias=False),
        ]
        if kind == "attention":
            h, kv, hd = c.num_attention_heads, c.resolved_kv_heads, c.resolved_head_dim
            attn = gqa_projections(f"{p}.self_attn", d, h, kv, hd, bias=c.attention_bias)
            return [*attn, *common], c.attention(), None
        tensors, mixer = mamba2_mixer(
            f"{p}.mamba", d, d_inner=d_inner, heads=c.mamba_n_heads, head_dim=head_dim,
            groups=c.mamba_n_groups, state=c.mamba_d_state, conv_kernel=c.mamba_d_conv,
            chunk=c.mamba_chunk_size, bias=c.mamba_proj_bias, conv_bias=c.mamba_conv_bias,
        )
        return [*tensors, *common], None, mixer

    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings,
                                    final_norm="model.final_layernorm"),
        layer_groups=mixed_layers(plan, build),
    )
