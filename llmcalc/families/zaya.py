"""ZAYA (Zyphra 2025, transformers ``zaya``): a mixture-of-experts decoder whose attention is
compressed convolutional attention (CCA, arXiv 2510.04476), with an MLP router and learned residual
scales. Tensor names and shapes as in transformers 5.24 ``models/zaya/modeling_zaya.py``.

Per layer:
- CCA: q_proj [h·hd, d], k_proj [kv·hd, d]; the values half from this token (v_proj_current) and half
  from the previous one (v_proj_delayed), each [kv·hd/2, d]; over the C = (h + kv)·hd query and key
  channels a depthwise convolution [C, 1, t0] then a grouped one (h + kv groups of hd) [C, hd, t1],
  each with a bias [C]; qk_norm.temp [kv]; o_proj [d, h·hd]. The cache keeps K and V, the last
  (t0 − 1) + (t1 − 1) positions of the C channels and the previous token's delayed value [kv·hd/2].
- router: down_proj d → r (with bias), then an MLP over r (RMSNorm, fc1 and fc2 r → r with biases,
  out_proj r → E + 1: the last class is "no expert"); every layer but the first adds the previous
  layer's router state scaled by router_states_scale [r].
- E routed SwiGLU experts fused as gate_up_proj [E, 2·ff, d], down_proj [E, d, ff]; top-k = 1.
- two RMSNorms and two residual scalings (hidden_states_scale/bias, residual_scale/bias [d] each).
Outside the layers: input_hidden_states_scale and _bias [d] on the embeddings, an lm_head bias with
lm_head_bias.
"""

from __future__ import annotations

from llmcalc.families._base import FULL
from llmcalc.families._base import SLIDING
from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import LayerPlan
from llmcalc.families._base import Size
from llmcalc.families._base import check_top_k
from llmcalc.families._base import linear
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import require
from llmcalc.families._base import resolve_kv_heads
from llmcalc.families._base import routed_experts
from llmcalc.families._base import split_plan
from llmcalc.families._moe import cross_plans
from llmcalc.families._moe import crossed_name
from llmcalc.families._moe import listed_plan
from llmcalc.model.spec import CCA
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Mixer
from llmcalc.model.spec import MoE
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

FIRST, LATER = "first_layer", "eda"  # the first layer's router has no router_states_scale


class ZayaConfig(FamilyConfig):
    """The fields transformers' ZayaConfig reads (its declared defaults mirror Zyphra/ZAYA1-8B)."""

    transformers_class = "ZayaConfig"

    vocab_size: Size
    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    num_key_value_heads: Size | None
    head_dim: Size
    moe_intermediate_size: Size
    num_experts: Size
    num_experts_per_tok: Size
    router_hidden_size: Size
    cca_time0: Size
    cca_time1: Size
    attention_bias: bool
    lm_head_bias: bool
    tie_word_embeddings: bool
    sliding_window: Size | None = None
    layer_types: list[str] | None = None
    max_position_embeddings: Size | None = None

    def attention_plan(self) -> LayerPlan:
        if self.layer_types is None:
            return {FULL: LayerSet.span(0, self.num_hidden_layers)}
        names = {"hybrid": FULL, "hybrid_sliding": SLIDING}
        n = self.num_hidden_layers
        plan = listed_plan(self.layer_types, n, field="layer_types", names=names)
        require(
            SLIDING not in plan or self.sliding_window is not None,
            "sliding_window",
            "must be set when layer_types lists hybrid_sliding layers",
        )
        return plan


def _cca(a: str, c: ZayaConfig, kv: int) -> list[Tensor]:
    d, h, hd, bias = c.hidden_size, c.num_attention_heads, c.head_dim, c.attention_bias
    q, ch = f"{a}.qkv_proj", (h + kv) * hd
    return [
        *linear(f"{q}.q_proj", "attn/q_proj", h * hd, d, bias=bias),
        *linear(f"{q}.k_proj", "attn/k_proj", kv * hd, d, bias=bias),
        *linear(f"{q}.v_proj_current", "attn/v_proj", kv * hd // 2, d, bias=bias),
        *linear(f"{q}.v_proj_delayed", "attn/v_proj", kv * hd // 2, d, bias=bias),
        # depthwise [C, 1, t0] and grouped [C, hd, t1] convolutions: 2 FLOPs a weight, per token
        Tensor(f"{q}.conv_qk_depthwise.weight", (ch, 1, c.cca_time0), "attn/conv_qk", matmul=True),
        Tensor(f"{q}.conv_qk_depthwise.bias", (ch,), "attn/conv_qk"),
        Tensor(f"{q}.conv_qk_grouped.weight", (ch, hd, c.cca_time1), "attn/conv_qk", matmul=True),
        Tensor(f"{q}.conv_qk_grouped.bias", (ch,), "attn/conv_qk"),
        Tensor(f"{a}.qk_norm.temp", (kv,), "attn/qk_norm"),
        *linear(f"{a}.o_proj", "attn/o_proj", d, h * hd, bias=bias),
    ]


def _router(g: str, c: ZayaConfig, *, eda: bool) -> list[Tensor]:
    d, r, classes = c.hidden_size, c.router_hidden_size, c.num_experts + 1
    m = f"{g}.router_mlp"
    return [
        *([Tensor(f"{g}.router_states_scale", (r,), "moe/router")] if eda else []),
        *linear(f"{g}.down_proj", "moe/router", r, d, bias=True),
        *norm(f"{m}.norm", "moe/router", r, bias=False),
        *linear(f"{m}.fc1", "moe/router", r, r, bias=True),
        *linear(f"{m}.fc2", "moe/router", r, r, bias=True),
        *linear(f"{m}.out_proj", "moe/router", classes, r, bias=False),
    ]


def _residual_scale(p: str, d: int) -> list[Tensor]:
    names = ("hidden_states_scale", "hidden_states_bias", "residual_scale", "residual_bias")
    return [Tensor(f"{p}.{n}", (d,), "norm/residual_scale") for n in names]


def describe(c: ZayaConfig) -> Architecture:
    d, v, L = c.hidden_size, c.vocab_size, c.num_hidden_layers
    E, k = c.num_experts, c.num_experts_per_tok
    check_top_k(k, E, k_field="num_experts_per_tok", e_field="num_experts")
    h, hd, t0, t1 = c.num_attention_heads, c.head_dim, c.cca_time0, c.cca_time1
    kv = resolve_kv_heads(h, c.num_key_value_heads)
    require(t0 + t1 > 2, "cca_time1", "cca_time0 + cca_time1 must exceed 2 (a convolution state)")
    p = "model.layers.{i}"
    common = [
        *_cca(f"{p}.self_attn", c, kv),
        *routed_experts(f"{p}.mlp.experts", d, c.moe_intermediate_size, E),
        *norm(f"{p}.input_layernorm", "norm/input_layernorm", d, bias=False),
        *norm(f"{p}.post_attention_layernorm", "norm/post_attention_layernorm", d, bias=False),
        *_residual_scale(f"{p}.post_attention_residual_scale", d),
        *_residual_scale(f"{p}.post_mlp_residual_scale", d),
    ]
    g = f"{p}.mlp.gate"
    routers = {FIRST: _router(g, c, eda=False), LATER: _router(g, c, eda=True)}
    # the cache: the last (t0 − 1) + (t1 − 1) of C conv channels, the delayed value [kv·hd/2];
    # beyond the weights a decoding step recomputes t1 − 1 depthwise positions, and a prefill does
    # so once and projects a zero vector for the first token's delayed value
    ch, half = (h + kv) * hd, kv * hd // 2
    depthwise_extra = 2 * ch * t0 * (t1 - 1)
    mixer = Mixer(
        kind=CCA,
        conv_dim=ch,
        conv_kernel=(t0 - 1) + (t1 - 1),
        heads=1,
        head_dim=half,
        state_size=1,
        state_fp32=False,
        step_flops=depthwise_extra,
        prefill_flops=depthwise_extra + 2 * d * half,
    )
    windows = {FULL: None, SLIDING: c.sliding_window}
    plan = cross_plans(c.attention_plan(), split_plan(L, at=1, before=FIRST, after=LATER))
    groups = tuple(
        LayerGroup(
            crossed_name(kinds, plan),
            layers,
            (*common, *routers[kinds[1]]),
            Attention(h, kv, hd, hd, window=windows[kinds[0]]),
            mixer,
        )
        for kinds, layers in plan.items()
    )
    outer = llama_outer_tensors(v, d, tied=c.tie_word_embeddings, head_bias=c.lm_head_bias)
    scales = (
        Tensor("model.input_hidden_states_scale", (d,), "embed/scale"),
        Tensor("model.input_hidden_states_bias", (d,), "embed/scale"),
    )
    return Architecture(
        shape=Shape(L, d, h, kv, hd, c.moe_intermediate_size, v,
                    c.tie_word_embeddings, c.max_position_embeddings),
        tensors=(*outer, *scales),
        layer_groups=groups,
        moe=MoE(num_experts=E, experts_per_tok=k),
    )
