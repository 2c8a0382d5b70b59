"""Zamba (Zyphra, Glorioso et al. 2024, arXiv 2405.16712): a Mamba backbone with one transformer
block shared by several layers.

Every layer has a multi-head Mamba mixer (``_ssm.multihead_mamba_mixer``) after an RMSNorm. A
"hybrid" layer first runs the shared block on [hidden, embedding output] (width 2d): RMSNorm [2d],
attention with q, k, v from 2d to heads × head_dim (head_dim = 2d / heads unless given), o_proj to
d, RMSNorm [d] and a gated MLP (gate, up [ff, d], down [d, ff]); then its own ``linear`` [d, d]
into the Mamba layer's input. The block's tensors are stored once, at the first hybrid layer
(``model.layers.{first}.shared_transf``); its matmuls and its keys and values happen at every
hybrid layer (``_ssm.shared_block``). transformers shares it only when tie_word_embeddings is set
(with it untied, every hybrid layer holds a block of its own). Layer kinds: ``layers_block_type`` (``layer_types``) as
given, else transformers' default: layers 0, 1 Mamba, 2 hybrid, then layer i ≥ 3 hybrid when
(i − 3) mod attn_layer_period = attn_layer_offset (at least 3 layers; a list has one entry per
layer, as transformers checks). Tensor names as in
transformers ``ZambaForCausalLM`` (modeling_zamba.py).
"""

from __future__ import annotations

import math

from pydantic import AliasChoices, Field

from llmcalc.families._base import (
    Architecture,
    FamilyConfig,
    LayerPlan,
    Size,
    linear,
    llama_outer_tensors,
    norm,
    override_plan,
    plan_from_kinds,
    require,
    resolve_kv_heads,
)
from llmcalc.families._ssm import LayerBuild, mixed_layers, multihead_mamba_mixer, shared_block
from llmcalc.spec import Attention, LayerSet, Run, Shape, Tensor

MAMBA, HYBRID = "mamba", "hybrid"
# a layers_block_type entry → the layer's kind (transformers remaps "mamba" to "linear_attention")
KIND_OF = {"mamba": MAMBA, "linear_attention": MAMBA, "hybrid": HYBRID}
STORED = "hybrid (shared block stored)"
REUSED = "hybrid (shared block reused)"


class ZambaConfig(FamilyConfig):
    transformers_class = "ZambaConfig"

    vocab_size: Size = 32000
    tie_word_embeddings: bool = True
    hidden_size: Size = 3712
    attention_hidden_size: Size | None = None  # absent: 2 · hidden_size
    intermediate_size: Size = 14848
    num_hidden_layers: Size = 76
    num_attention_heads: Size = 16
    attention_head_dim: Size | None = Field(
        None, validation_alias=AliasChoices("attention_head_dim", "head_dim"))
    num_key_value_heads: Size = 16
    n_mamba_heads: Size = 2
    max_position_embeddings: Size | None = 4096
    attn_layer_period: Size = 6
    attn_layer_offset: int = 4
    mamba_d_state: Size = 16
    mamba_d_conv: Size = 4
    mamba_expand: Size = 2
    mamba_dt_rank: Size | str = "auto"
    mamba_conv_bias: bool = True
    mamba_proj_bias: bool = False
    layers_block_type: list[str] | None = Field(
        None, validation_alias=AliasChoices("layers_block_type", "layer_types"))

    @property
    def dt_rank(self) -> int:
        r = self.mamba_dt_rank
        if isinstance(r, int):
            return r
        require(r == "auto", "mamba_dt_rank", f"expected a positive integer or 'auto', got {r!r}")
        return math.ceil(self.hidden_size / 16)

    def plan(self) -> tuple[int, LayerPlan]:
        """The number of layers and the layers of each kind (mamba, hybrid)."""
        if self.layers_block_type is not None:
            for i, kind in enumerate(self.layers_block_type):
                require(kind in KIND_OF, f"layers_block_type.{i}",
                        f"unknown layer kind {kind!r} (mamba, linear_attention or hybrid)")
            kinds = [KIND_OF[k] for k in self.layers_block_type]
            require(len(kinds) == self.num_hidden_layers, "layers_block_type",
                    f"lists {len(kinds)} layers; num_hidden_layers is {self.num_hidden_layers}")
            return len(kinds), plan_from_kinds(kinds)
        # transformers: [mamba, mamba, hybrid] + [hybrid if j % P == O else mamba for j < L − 3]
        n, period, offset = self.num_hidden_layers, self.attn_layer_period, self.attn_layer_offset
        require(n >= 3, "num_hidden_layers",
                f"the default layer pattern (mamba, mamba, hybrid, …) needs at least 3 layers, got "
                f"{n}; list the layers in layers_block_type")
        mamba = [Run(0, 2, 0, 1, 1)]
        hybrid = [Run(2, 3, 2, 1, 1)]
        if 0 <= offset < period:
            hybrid.append(Run(3 + offset, n, 3 + offset, period, 1))
            mamba.append(Run(3, n, 3, period, offset))
            mamba.append(Run(4 + offset, n, 4 + offset, period, period - offset - 1))
        else:
            mamba.append(Run(3, n, 3, 1, 1))
        return n, {MAMBA: LayerSet(tuple(r for r in mamba if len(r))),
                   HYBRID: LayerSet(tuple(r for r in hybrid if len(r)))}


def shared_transformer(p: str, c: ZambaConfig, *, d2: int, hd: int, kv: int) -> list[Tensor]:
    """The shared block: RMSNorm [2d]; q [h·hd, 2d], k, v [kv·hd, 2d], o [d, h·hd]; RMSNorm [d];
    gate, up [ff, d], down [d, ff] (ZambaAttentionDecoderLayer)."""
    d, h, ff = c.hidden_size, c.num_attention_heads, c.intermediate_size
    return [
        *norm(f"{p}.input_layernorm", "shared/attn/norm", d2, bias=False),
        *linear(f"{p}.self_attn.q_proj", "shared/attn/q_proj", h * hd, d2, bias=False),
        *linear(f"{p}.self_attn.k_proj", "shared/attn/k_proj", kv * hd, d2, bias=False),
        *linear(f"{p}.self_attn.v_proj", "shared/attn/v_proj", kv * hd, d2, bias=False),
        *linear(f"{p}.self_attn.o_proj", "shared/attn/o_proj", d, h * hd, bias=False),
        *norm(f"{p}.pre_ff_layernorm", "shared/mlp/norm", d, bias=False),
        *linear(f"{p}.feed_forward.gate_proj", "shared/mlp/gate_proj", ff, d, bias=False),
        *linear(f"{p}.feed_forward.up_proj", "shared/mlp/up_proj", ff, d, bias=False),
        *linear(f"{p}.feed_forward.down_proj", "shared/mlp/down_proj", d, ff, bias=False),
    ]


def describe(c: ZambaConfig) -> Architecture:
    d, v = c.hidden_size, c.vocab_size
    d_inner = c.mamba_expand * d
    require(d_inner % c.n_mamba_heads == 0, "n_mamba_heads",
            f"n_mamba_heads ({c.n_mamba_heads}) must divide mamba_expand × hidden_size ({d_inner})")
    d2 = c.attention_hidden_size or 2 * d
    h = c.num_attention_heads
    hd = c.attention_head_dim or 2 * d // h
    require(hd > 0, "num_attention_heads",
            f"num_attention_heads ({h}) must not exceed 2 × hidden_size ({2 * d})")
    kv = resolve_kv_heads(h, c.num_key_value_heads)
    num_layers, plan = c.plan()
    hybrid = plan.get(HYBRID)
    # transformers ties the blocks (and the lm_head) only when tie_word_embeddings is set: its
    # PreTrainedModel.get_expanded_tied_weights_keys ignores _tied_weights_keys otherwise, so an
    # untied Zamba stores a block of its own at every hybrid layer
    if hybrid and c.tie_word_embeddings:
        first = next(iter(hybrid))
        plan = override_plan(plan, [first], STORED)
        plan = {(REUSED if k == HYBRID else k): layers for k, layers in plan.items()}
    p = "model.layers.{i}"

    def build(kind: str) -> LayerBuild:
        m = f"{p}.mamba" if kind == MAMBA else f"{p}.mamba_decoder.mamba"
        mixer_tensors, mixer = multihead_mamba_mixer(
            m, d, d_inner=d_inner, heads=c.n_mamba_heads, state=c.mamba_d_state,
            conv_kernel=c.mamba_d_conv, dt_rank=c.dt_rank, bias=c.mamba_proj_bias,
            conv_bias=c.mamba_conv_bias,
        )
        mamba_norm = norm(m.removesuffix(".mamba") + ".input_layernorm", "mamba/norm", d,
                          bias=False)
        if kind == MAMBA:
            return [*mamba_norm, *mixer_tensors], None, mixer
        block = shared_transformer(f"{p}.shared_transf", c, d2=d2, hd=hd, kv=kv)
        if kind == REUSED:
            block = shared_block(block, stored_at=first)
        return [*block, *linear(f"{p}.linear", "hybrid/linear", d, d, bias=False),
                *mamba_norm, *mixer_tensors], Attention(h, kv, hd, hd), mixer

    return Architecture(
        shape=Shape(num_layers=num_layers, hidden_size=d, num_heads=h, num_kv_heads=kv,
                    head_dim=hd, intermediate_size=c.intermediate_size, vocab_size=v,
                    tied_embeddings=c.tie_word_embeddings,
                    max_position_embeddings=c.max_position_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings,
                                    final_norm="model.final_layernorm"),
        layer_groups=mixed_layers(plan, build),
    )
