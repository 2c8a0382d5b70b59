"""LFM2 (Liquid AI, 2025): gated short-convolution layers and attention layers (``layer_types`` or
``full_attn_idxs``), each followed by a SwiGLU MLP.

Per layer: operator_norm and ffn_norm [d]; ``conv`` (``_ssm.short_conv``: in_proj 3d × d, depthwise
conv of conv_L_cache taps, out_proj) or ``self_attn`` (q, k, v, out_proj without biases, RMSNorm on
q and k over head_dim); ``feed_forward`` w1, w3 [ff', d], w2 [d, ff'] with ff' = intermediate_size,
or, with block_auto_adjust_ff_dim, ⌈multiplier · ⌊2·ff/3⌋ / block_multiple_of⌉ · block_multiple_of
(Lfm2MLP). Outer: model.embed_tokens, model.embedding_norm (the final norm), lm_head (tied by
default). Tensor names as in transformers ``Lfm2ForCausalLM``.

LFM3 (transformers ``models/lfm3/modeling_lfm3.py``) is LFM2 with three changes, described below as
such: a ``sliding_attention`` layer type (attention within ``sliding_window`` tokens); attention as
Qwen3's (q_proj, k_proj, v_proj, o_proj with ``attention_bias``, q_norm and k_norm over head_dim)
plus a per-head sigmoid output gate ``g_proj`` [h, d] (``use_attention_gate``); RMSNorms after the
mixer and after the MLP (``post_operator_norm``, ``post_ffn_norm``, with ``use_sandwich_norm``).
Its MLP is w1, w3 [ff, d], w2 [d, ff] at intermediate_size as given (Lfm2MoeMLP).
"""

from __future__ import annotations

from dataclasses import replace

from pydantic import AliasChoices
from pydantic import Field

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
from llmcalc.families._ssm import mixed_layers
from llmcalc.families._ssm import residue_plan
from llmcalc.families._ssm import short_conv
from llmcalc.model.spec import MoE
from llmcalc.model.spec import Tensor

KINDS = {"conv": "conv", "full_attention": "attention", "attention": "attention"}


class Lfm2Config(DecoderConfig):
    transformers_class = "Lfm2Config"

    num_key_value_heads: Size | None  # transformers' Lfm2Config default, not the heads
    # LFM2's own names win over the standard ones, as transformers reads them
    intermediate_size: Size = Field(
        validation_alias=AliasChoices("block_ff_dim", "intermediate_size")
    )
    tie_word_embeddings: bool = Field(
        validation_alias=AliasChoices("tie_embedding", "tie_word_embeddings")
    )
    conv_bias: bool
    conv_L_cache: Size
    block_multiple_of: Size = 256
    block_ffn_dim_multiplier: float | int | None = 1.0
    block_auto_adjust_ff_dim: bool = True
    full_attn_idxs: list[Count] | None = None
    layer_types: list[str] | None = None

    @property
    def ff(self) -> int:
        """The MLP width transformers' Lfm2MLP builds."""
        ff = self.intermediate_size
        if not self.block_auto_adjust_ff_dim:
            return ff
        ff = int(2 * ff / 3)
        if self.block_ffn_dim_multiplier is not None:
            ff = int(self.block_ffn_dim_multiplier * ff)
            m = self.block_multiple_of
            ff = m * ((ff + m - 1) // m)
        return ff


def _mixer_kinds(c: Lfm2Config) -> list[str]:
    """Each layer's mixer, "conv" or "attention", from layer_types or full_attn_idxs."""
    L = c.num_hidden_layers
    if c.layer_types is not None:
        return listed_kinds(c.layer_types, L, KINDS, shown=("conv", "full_attention"))
    full = set(c.full_attn_idxs) if c.full_attn_idxs is not None else None
    return ["attention" if full is None or i in full else "conv" for i in range(L)]


def _mixer(c: Lfm2Config, kind: str) -> LayerBuild:
    """A layer's two norms and its mixer: attention, or the gated short convolution."""
    d, p = c.hidden_size, "model.layers.{i}"
    norms = [
        *norm(f"{p}.operator_norm", f"{kind}/norm", d, bias=False),
        *norm(f"{p}.ffn_norm", "mlp/norm", d, bias=False),
    ]
    if kind == "attention":
        h, kv, hd = c.num_attention_heads, c.resolved_kv_heads, c.resolved_head_dim
        a = f"{p}.self_attn"
        attn = [
            *linear(f"{a}.q_proj", "attn/q_proj", h * hd, d, bias=False),
            *linear(f"{a}.k_proj", "attn/k_proj", kv * hd, d, bias=False),
            *linear(f"{a}.v_proj", "attn/v_proj", kv * hd, d, bias=False),
            *linear(f"{a}.out_proj", "attn/out_proj", d, h * hd, bias=False),
            *rename(qk_norms(a, hd, hd), {"q_norm": "q_layernorm", "k_norm": "k_layernorm"}),
        ]
        return [*attn, *norms], c.attention(), None
    tensors, mixer = short_conv(f"{p}.conv", d, kernel=c.conv_L_cache, bias=c.conv_bias)
    return [*tensors, *norms], None, mixer


def describe(c: Lfm2Config) -> Architecture:
    d, v = c.hidden_size, c.vocab_size
    require(c.ff > 0, "intermediate_size", f"gives an MLP width of {c.ff}")

    def build(kind: str) -> LayerBuild:
        tensors, attention, mixer = _mixer(c, kind)
        return [*tensors, *swiglu_w("model.layers.{i}.feed_forward", d, c.ff)], attention, mixer

    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings,
                                    final_norm="model.embedding_norm"),
        layer_groups=mixed_layers(plan_from_kinds(_mixer_kinds(c)), build),
    )


class Lfm2MoeConfig(Lfm2Config):
    transformers_class = "Lfm2MoeConfig"

    intermediate_size: Size  # the dense layers' MLP, as given (no auto-adjust)
    layer_types: list[str]  # required here: transformers indexes it for every layer
    moe_intermediate_size: Size
    num_dense_layers: Count
    num_experts: Size
    num_experts_per_tok: Size


def describe_moe(c: Lfm2MoeConfig) -> Architecture:
    """LFM2-MoE: LFM2's layers with a SwiGLU MLP in the first num_dense_layers, routed experts
    after them (router ``gate`` [E, d], its expert_bias a buffer; experts gate_up [E, 2·ff, d],
    down [E, d, ff])."""
    d, v, L, E = c.hidden_size, c.vocab_size, c.num_hidden_layers, c.num_experts
    check_top_k(c.num_experts_per_tok, E, k_field="num_experts_per_tok", e_field="num_experts")
    mixers = _mixer_kinds(c)
    kinds = [f"{m}, {'mlp' if i < c.num_dense_layers else 'moe'}" for i, m in enumerate(mixers)]
    p = "model.layers.{i}"

    def build(kind: str) -> LayerBuild:
        mixer_kind, ffn_kind = kind.split(", ")
        f = f"{p}.feed_forward"
        ffn = (
            swiglu_w(f, d, c.intermediate_size)
            if ffn_kind == "mlp"
            else [*router(f"{f}.gate", d, E),
                  *routed_experts(f"{f}.experts", d, c.moe_intermediate_size, E)]
        )
        tensors, attention, mixer = _mixer(c, mixer_kind)
        return [*tensors, *ffn], attention, mixer

    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings,
                                    final_norm="model.embedding_norm"),
        layer_groups=mixed_layers(plan_from_kinds(kinds), build),
        moe=MoE(E, c.num_experts_per_tok) if L > c.num_dense_layers else None,
    )


def swiglu_w(p: str, d: int, ff: int) -> list[Tensor]:
    """LFM2's names for the SwiGLU MLP: w1 (gate), w3 (up) [ff, d], w2 (down) [d, ff]."""
    names = {"gate_proj": "w1", "up_proj": "w3", "down_proj": "w2"}
    return rename(swiglu(p, "mlp", d, ff), names)


def rename(tensors: list[Tensor], names: dict[str, str]) -> list[Tensor]:
    """The same tensors with module names replaced (``q_norm`` → ``q_layernorm``)."""
    out = []
    for t in tensors:
        name = t.name
        for old, new in names.items():
            name = name.replace(f".{old}.", f".{new}.")
        out.append(replace(t, name=name))
    return out


# ---- LFM3: LFM2 with sliding attention, Qwen3 attention + output gate, sandwich norms ----------

LFM3_KINDS = {"conv": "conv", "full_attention": "attention",
              "sliding_attention": "sliding_attention"}


class Lfm3Config(DecoderConfig):
    transformers_class = "Lfm3Config"

    tie_word_embeddings: bool
    attention_bias: bool
    conv_bias: bool
    conv_L_cache: Size
    sliding_window: Size | None
    use_sandwich_norm: bool
    use_attention_gate: bool
    layer_types: list[str] | None = None


def _lfm3_plan(c: Lfm3Config) -> LayerPlan:
    """Layer kinds as listed, else Lfm3Config's default: full attention where i mod 4 = 2, sliding
    where i mod 4 = 0 (but not layer 0), the short convolution elsewhere."""
    L = c.num_hidden_layers
    if c.layer_types is not None:
        return plan_from_kinds(listed_kinds(c.layer_types, L, LFM3_KINDS))
    by_residue = {0: "sliding_attention", 2: "attention"}
    plan = residue_plan(L, 4, lambda r: by_residue.get(r, "conv"), field="layer_types")
    return override_plan(plan, [0], "conv")


def describe_lfm3(c: Lfm3Config) -> Architecture:
    d, v, p = c.hidden_size, c.vocab_size, "model.layers.{i}"
    h, kv, hd = c.num_attention_heads, c.resolved_kv_heads, c.resolved_head_dim

    def build(kind: str) -> LayerBuild:
        norms = [*norm(f"{p}.operator_norm", f"{kind}/norm", d, bias=False),
                 *norm(f"{p}.ffn_norm", "mlp/norm", d, bias=False)]
        if c.use_sandwich_norm:  # RMSNorm on the mixer's and the MLP's outputs
            norms += [*norm(f"{p}.post_operator_norm", f"{kind}/post_norm", d, bias=False),
                      *norm(f"{p}.post_ffn_norm", "mlp/post_norm", d, bias=False)]
        mlp = swiglu_w(f"{p}.feed_forward", d, c.intermediate_size)
        if kind == "conv":
            tensors, mixer = short_conv(f"{p}.conv", d, kernel=c.conv_L_cache, bias=c.conv_bias)
            return [*tensors, *mlp, *norms], None, mixer
        a = f"{p}.self_attn"
        attn = [*gqa_projections(a, d, h, kv, hd, bias=c.attention_bias), *qk_norms(a, hd, hd)]
        if c.use_attention_gate:  # g_proj: h × d, one sigmoid gate per head
            attn += linear(f"{a}.g_proj", "attn/g_proj", h, d, bias=False)
        window = c.sliding_window if kind == "sliding_attention" else None
        return [*attn, *mlp, *norms], c.attention(window=window), None

    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings,
                                    final_norm="model.embedding_norm"),
        layer_groups=mixed_layers(_lfm3_plan(c), build),
    )
