"""Zamba and Zamba2 (Zyphra, Glorioso et al. 2024, arXiv 2405.16712, 2411.15242): a Mamba backbone
with transformer blocks shared by several layers (Zamba2 below).

Every layer has a multi-head Mamba mixer (``_ssm.multihead_mamba_mixer``) after an RMSNorm. A
"hybrid" layer first runs the shared block on [hidden, embedding output] (width 2d): RMSNorm [2d],
attention with q, k, v from 2d to heads × head_dim (head_dim = 2d / heads unless given), o_proj to
d, RMSNorm [d] and a gated MLP (gate, up [ff, d], down [d, ff]); then its own ``linear`` [d, d]
into the Mamba layer's input. The block's tensors are stored once, at the first hybrid layer
(``model.layers.{first}.shared_transf``); its matmuls and its keys and values happen at every
hybrid layer (``_ssm.shared_block``). transformers shares it only when tie_word_embeddings is set
(with it untied, every hybrid layer holds a block of its own). Layer kinds: ``layers_block_type``
(``layer_types``) as given, else transformers' default: layers 0, 1 Mamba, 2 hybrid, then layer
i ≥ 3 hybrid when (i − 3) mod attn_layer_period = attn_layer_offset (at least 3 layers; a list has
one entry per layer, as transformers checks). Tensor names as in transformers ``ZambaForCausalLM``
(modeling_zamba.py).
"""

from __future__ import annotations

import math

from pydantic import AliasChoices
from pydantic import Field

from llmcalc.families._base import Architecture
from llmcalc.families._base import Count
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import LayerPlan
from llmcalc.families._base import Size
from llmcalc.families._base import linear
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import override_plan
from llmcalc.families._base import plan_from_kinds
from llmcalc.families._base import require
from llmcalc.families._base import resolve_kv_heads
from llmcalc.families._ssm import LayerBuild
from llmcalc.families._ssm import check_mamba2
from llmcalc.families._ssm import mamba2_mixer
from llmcalc.families._ssm import mixed_layers
from llmcalc.families._ssm import multihead_mamba_mixer
from llmcalc.families._ssm import shared_block
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Mixer
from llmcalc.model.spec import Run
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

MAMBA, HYBRID = "mamba", "hybrid"
# a layers_block_type entry → the layer's kind (transformers remaps "mamba" to "linear_attention")
KIND_OF = {"mamba": MAMBA, "linear_attention": MAMBA, "hybrid": HYBRID}
STORED = "hybrid (shared block stored)"
REUSED = "hybrid (shared block reused)"


class ZambaConfig(FamilyConfig):
    transformers_class = "ZambaConfig"

    vocab_size: Size
    tie_word_embeddings: bool
    hidden_size: Size
    attention_hidden_size: Size | None = None  # absent: 2 · hidden_size
    intermediate_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    attention_head_dim: Size | None = Field(
        None, validation_alias="attention_head_dim")  # head_dim: an alias (dealiased)
    num_key_value_heads: Size
    n_mamba_heads: Size
    max_position_embeddings: Size | None
    attn_layer_period: Size
    attn_layer_offset: int
    mamba_d_state: Size
    mamba_d_conv: Size
    mamba_expand: Size
    mamba_dt_rank: Size | str
    mamba_conv_bias: bool
    mamba_proj_bias: bool
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


# ---- Zamba2 ---------------------------------------------------------------------------------------
#
# Zamba2 (Zyphra, Glorioso et al. 2024, arXiv 2411.15242; transformers modeling_zamba2.py): Zamba
# with Mamba-2 mixers and num_mem_blocks shared blocks taken in turn (ABAB…) by the hybrid layers;
# hybrid layer k (counting hybrid layers only) runs block k mod M and its own LoRA-like adapter
# (gate_up_proj_adapter_list.{k}: Linear(d, r), Linear(r, 2ff); with use_shared_attention_adapter
# also q, k, v adapters Linear(2d, r), Linear(r, 2d)), held in that block's lists. The attention
# width is 2d and head_dim 2d / heads unless a config.json gives them; the MLP is one fused
# gate_up_proj [2ff, d] and down_proj [d, ff] (biases with add_bias_linear); rotary (use_mem_rope)
# has no parameters. The default layer list is transformers' 54-layer one.

ZAMBA2_DEFAULT_LAYERS = (
    [MAMBA] + ([MAMBA] * 5 + [HYBRID]) * 7 + [MAMBA] * 4 + [HYBRID] + [MAMBA] * 3 + [HYBRID]
    + [MAMBA] * 2
)


class Zamba2Config(FamilyConfig):
    transformers_class = "Zamba2Config"

    vocab_size: Size
    max_position_embeddings: Size
    hidden_size: Size
    num_hidden_layers: Size
    layers_block_type: list[str] | None = None
    layer_types: list[str] | None = None  # its alias (see kinds)
    mamba_d_state: Size
    mamba_d_conv: Size
    mamba_expand: Size
    mamba_ngroups: Size
    n_mamba_heads: Size
    chunk_size: Size
    add_bias_linear: bool
    intermediate_size: Size | None = None  # absent: 4 · hidden_size
    num_attention_heads: Size
    num_key_value_heads: Size | None = None  # absent: the heads
    num_mem_blocks: Size
    use_shared_attention_adapter: bool
    adapter_rank: Size
    use_long_context: bool
    tie_word_embeddings: bool
    # derived in Zamba2Config.__post_init__, but a config.json's values (as save_pretrained writes
    # them) are set after it and win: absent, 2d, 2d / heads, d_inner / n_mamba_heads, the hybrids
    attention_hidden_size: Size | None = None
    attention_head_dim: Size | None = Field(
        None, validation_alias="attention_head_dim")  # head_dim: an alias (dealiased)
    mamba_headdim: Size | None = None
    hybrid_layer_ids: list[Count] | None = None

    def kinds(self) -> list[str]:
        field = "layers_block_type" if self.layer_types is None else "layer_types"
        listed = self.layers_block_type if self.layers_block_type is not None else self.layer_types
        if listed is None:
            kinds = list(ZAMBA2_DEFAULT_LAYERS)
        else:
            for i, kind in enumerate(listed):
                require(kind in KIND_OF, f"{field}.{i}",
                        f"unknown layer kind {kind!r} (mamba, linear_attention or hybrid)")
            kinds = [KIND_OF[k] for k in listed]
        require(len(kinds) == self.num_hidden_layers, field,
                f"lists {len(kinds)} layers; num_hidden_layers is {self.num_hidden_layers}")
        # the adapters' slots are hybrid_layer_ids: as given, else Zamba2Config derives them from
        # layers_block_type before the alias layer_types is applied (so from the default list);
        # where they are not the hybrid layers, a layer finds no adapter and the model cannot run
        if self.hybrid_layer_ids is not None:
            slots, field = list(self.hybrid_layer_ids), "hybrid_layer_ids"
        elif self.layers_block_type is None:
            slots, field = _hybrids(ZAMBA2_DEFAULT_LAYERS), "layer_types"
        else:
            slots = _hybrids(kinds)
        require(slots == _hybrids(kinds), field,
                "transformers' Zamba2 places the adapters by hybrid_layer_ids (derived from "
                "layers_block_type, or from the default layers when the list is named "
                "layer_types), which must list the hybrid layers, else the model cannot run")
        return kinds


def _hybrids(kinds: list[str]) -> list[int]:
    return [i for i, kind in enumerate(kinds) if kind == HYBRID]


def zamba2_block(p: str, c: Zamba2Config, *, hd: int, kv: int) -> list[Tensor]:
    """One shared block without its adapters: RMSNorm [2d]; q [h·hd, 2d], k, v [kv·hd, 2d],
    o [d, h·hd]; RMSNorm [d]; gate_up [2ff, d], down [d, ff] (Zamba2AttentionDecoderLayer)."""
    d, h = c.hidden_size, c.num_attention_heads
    ff, d2, bias = c.intermediate_size or 4 * d, c.attention_hidden_size or 2 * d, c.add_bias_linear
    return [
        *norm(f"{p}.input_layernorm", "shared/attn/norm", d2, bias=False),
        *linear(f"{p}.self_attn.q_proj", "shared/attn/q_proj", h * hd, d2, bias=False),
        *linear(f"{p}.self_attn.k_proj", "shared/attn/k_proj", kv * hd, d2, bias=False),
        *linear(f"{p}.self_attn.v_proj", "shared/attn/v_proj", kv * hd, d2, bias=False),
        *linear(f"{p}.self_attn.o_proj", "shared/attn/o_proj", d, h * hd, bias=False),
        *norm(f"{p}.pre_ff_layernorm", "shared/mlp/norm", d, bias=False),
        *linear(f"{p}.feed_forward.gate_up_proj", "shared/mlp/gate_up_proj", 2 * ff, d, bias=bias),
        *linear(f"{p}.feed_forward.down_proj", "shared/mlp/down_proj", d, ff, bias=bias),
    ]


def zamba2_adapters(p: str, c: Zamba2Config, k: int, *, applied: bool = True) -> list[Tensor]:
    """Hybrid layer k's adapters, entry k of its block's lists: gate_up Linear(d, r), Linear(r, 2ff)
    (and q, k, v: Linear(2d, r), Linear(r, 2d) with use_shared_attention_adapter). ``applied``:
    multiplied by (False for the entries an untied block holds for other layers)."""
    d, r = c.hidden_size, c.adapter_rank
    ff, d2 = c.intermediate_size or 4 * d, c.attention_hidden_size or 2 * d
    pairs = [(f"{p}.feed_forward.gate_up_proj_adapter_list.{k}", "shared/mlp/adapter", d, 2 * ff)]
    if c.use_shared_attention_adapter:
        pairs += [(f"{p}.self_attn.linear_{x}_adapter_list.{k}", "shared/attn/adapter", d2, d2)
                  for x in "qkv"]
    return [Tensor(f"{name}.{j}.weight", shape, component, matmul=applied)
            for name, component, n_in, n_out in pairs
            for j, shape in ((0, (r, n_in)), (1, (n_out, r)))]


def describe_zamba2(c: Zamba2Config) -> Architecture:
    d, v, M = c.hidden_size, c.vocab_size, c.num_mem_blocks
    d_inner, H = c.mamba_expand * d, c.n_mamba_heads
    p_head = c.mamba_headdim or d_inner // H
    check_mamba2(d_inner=d_inner, heads=H, head_dim=p_head, groups=c.mamba_ngroups,
                 inner_field="mamba_expand × hidden_size", heads_field="n_mamba_heads",
                 groups_field="mamba_ngroups", groups_divide=False)
    # Zamba2MambaMixer builds its B/C groups whatever they divide; its scan then cannot run
    ungrouped = (f"mamba_ngroups ({c.mamba_ngroups}) does not divide n_mamba_heads ({H}): "
                 "transformers builds the model, but its scan cannot run"
                 if H % c.mamba_ngroups else "")
    h = c.num_attention_heads
    hd = c.attention_head_dim or 2 * d // h
    require(hd > 0, "num_attention_heads",
            f"num_attention_heads ({h}) must not exceed 2 × hidden_size ({2 * d})")
    kv = resolve_kv_heads(h, c.num_key_value_heads)
    kinds = c.kinds()
    hybrids = _hybrids(kinds)
    K = len(hybrids)
    p = "model.layers.{i}"
    blk = f"{p}.shared_transformer"

    def mamba_layer(m: str) -> tuple[list[Tensor], Mixer]:
        tensors, mixer = mamba2_mixer(
            f"{m}.mamba", d, d_inner=d_inner, heads=H, head_dim=p_head,
            groups=c.mamba_ngroups, state=c.mamba_d_state, conv_kernel=c.mamba_d_conv,
            chunk=c.chunk_size, bias=c.add_bias_linear,
            conv_bias=True)  # Zamba2MambaMixer's conv1d always has a bias (use_conv_bias unread)
        return [*norm(f"{m}.input_layernorm", "mamba/norm", d, bias=False), *tensors], mixer

    attention = Attention(h, kv, hd, hd)
    mamba_tensors, mixer = mamba_layer(p)
    hybrid_tensors, _ = mamba_layer(f"{p}.mamba_decoder")
    hybrid_tensors = [*linear(f"{p}.linear", "hybrid/linear", d, d, bias=False), *hybrid_tensors]
    block = zamba2_block(blk, c, hd=hd, kv=kv)
    groups = [LayerGroup(MAMBA, plan_from_kinds(kinds)[MAMBA], tuple(mamba_tensors), None, mixer)
              ] if MAMBA in kinds else []
    for b in range(min(M, K)):
        mine = range(b, K, M)  # the hybrid layers that run block b
        if c.tie_word_embeddings:
            # stored at its first layer, with every adapter of its list; the others reuse it
            adapters = [t for k in mine for t in zamba2_adapters(blk, c, k)]
            groups.append(LayerGroup(f"hybrid (block {b} stored)", LayerSet.of([hybrids[b]]),
                                     (*block, *adapters, *hybrid_tensors), attention, mixer))
            reused = LayerSet.of(hybrids[k] for k in mine[1:])
            if reused:
                groups.append(LayerGroup(
                    f"hybrid (block {b} reused)", reused,
                    (*shared_block(block, stored_at=hybrids[b]), *hybrid_tensors), attention,
                    mixer))
        else:
            # untied (transformers then ties nothing): each layer holds a whole block with the
            # adapter entries of all of block b's layers, and applies one of them (all one shape)
            adapters = [t for k in mine for t in zamba2_adapters(blk, c, k, applied=k == b)]
            groups.append(LayerGroup(f"hybrid (block {b})", LayerSet.of(hybrids[k] for k in mine),
                                     (*block, *adapters, *hybrid_tensors), attention, mixer))
    groups.sort(key=lambda g: next(iter(g.layers)))
    return Architecture(
        shape=Shape(num_layers=len(kinds), hidden_size=d, num_heads=h, num_kv_heads=kv,
                    head_dim=hd, intermediate_size=c.intermediate_size or 4 * d, vocab_size=v,
                    tied_embeddings=c.tie_word_embeddings,
                    max_position_embeddings=16384 if c.use_long_context
                    else c.max_position_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings,
                                    final_norm="model.final_layernorm"),
        layer_groups=tuple(groups),
        forward_unmodelled=ungrouped,
    )
