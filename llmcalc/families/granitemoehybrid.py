"""Granite 4.0 hybrid (IBM, 2025): Mamba-2 and attention layers as ``layer_types`` lists them, each
followed by routed experts (when num_local_experts > 0) and a shared MLP.

Per layer: input_layernorm and post_attention_layernorm [d]; ``mamba`` (``_ssm.mamba2_mixer``) or
``self_attn`` (q, k, v, o; rotary only when position_embedding_type is "rope", which has no
parameters); ``block_sparse_moe`` router [E, d] and fused experts gate_up [E, 2·ff, d], down [E, d,
ff]; ``shared_mlp`` input_linear [2·ff_shared, d], output_linear [d, ff_shared]. Layer types
"mamba"/"linear_attention" and "attention"/"full_attention" (transformers renames the old names).
The embedding, attention, residual and logit multipliers are scalars, not parameters.
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import Count
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import Size
from llmcalc.families._base import check_top_k
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import linear
from llmcalc.families._base import listed_kinds
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import plan_from_kinds
from llmcalc.families._base import routed_experts
from llmcalc.families._base import router
from llmcalc.families._ssm import LayerBuild
from llmcalc.families._ssm import mamba2_head_dim
from llmcalc.families._ssm import mamba2_mixer
from llmcalc.families._ssm import mixed_layers
from llmcalc.model.spec import MoE

# a config's layer type → the kind of its sequence mixer
MIXER_OF = {"mamba": "mamba", "linear_attention": "mamba",
            "attention": "attention", "full_attention": "attention"}


class GraniteMoeHybridConfig(DecoderConfig):
    transformers_class = "GraniteMoeHybridConfig"

    tie_word_embeddings: bool
    attention_bias: bool
    num_local_experts: Count
    num_experts_per_tok: Size
    shared_intermediate_size: Size
    layer_types: list[str] | None = None  # absent: every layer Mamba
    mamba_n_heads: Size
    mamba_n_groups: Size
    mamba_d_state: Size
    mamba_d_head: Size | str
    mamba_d_conv: Size
    mamba_expand: Size
    mamba_chunk_size: Size
    mamba_conv_bias: bool
    mamba_proj_bias: bool


def describe(c: GraniteMoeHybridConfig) -> Architecture:
    d, v, ff, E = c.hidden_size, c.vocab_size, c.intermediate_size, c.num_local_experts
    d_inner = c.mamba_expand * d
    head_dim = mamba2_head_dim(c.mamba_d_head, d_inner=d_inner, heads=c.mamba_n_heads,
                               groups=c.mamba_n_groups, inner_field="mamba_expand × hidden_size")
    if E:
        check_top_k(c.num_experts_per_tok, E, k_field="num_experts_per_tok",
                    e_field="num_local_experts")
    types = c.layer_types if c.layer_types is not None else ["mamba"] * c.num_hidden_layers
    plan = plan_from_kinds(listed_kinds(types, c.num_hidden_layers, MIXER_OF))
    p = "model.layers.{i}"
    fs = c.shared_intermediate_size
    ffn = [
        *(router(f"{p}.block_sparse_moe.router", d, E) if E else []),
        *(routed_experts(f"{p}.block_sparse_moe.experts", d, ff, E) if E else []),
        *linear(f"{p}.shared_mlp.input_linear", "mlp/shared/input_linear", 2 * fs, d, bias=False),
        *linear(f"{p}.shared_mlp.output_linear", "mlp/shared/output_linear", d, fs, bias=False),
        *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=False),
    ]

    def build(kind: str) -> LayerBuild:
        first = norm(f"{p}.input_layernorm", f"{kind}/norm", d, bias=False)
        if kind == "attention":
            h, kv, hd = c.num_attention_heads, c.resolved_kv_heads, c.resolved_head_dim
            attn = gqa_projections(f"{p}.self_attn", d, h, kv, hd, bias=c.attention_bias)
            return [*first, *attn, *ffn], c.attention(), None
        tensors, mixer = mamba2_mixer(
            f"{p}.mamba", d, d_inner=d_inner, heads=c.mamba_n_heads, head_dim=head_dim,
            groups=c.mamba_n_groups, state=c.mamba_d_state, conv_kernel=c.mamba_d_conv,
            chunk=c.mamba_chunk_size, bias=c.mamba_proj_bias, conv_bias=c.mamba_conv_bias,
        )
        return [*first, *tensors, *ffn], None, mixer

    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
        layer_groups=mixed_layers(plan, build),
        moe=MoE(E, c.num_experts_per_tok) if E else None,
    )
