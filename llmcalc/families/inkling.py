"""Inkling (Thinking Machines, transformers ``models/inkling/modeling_inkling.py``, the text model
``InklingForCausalLM``): softmax attention in every layer, full or within a sliding window, wrapped
in four short causal convolutions, with a relative-position bias computed from the hidden state.

Per layer: input_layernorm, post_attention_layernorm [d]; ``self_attn``: q_proj h·hd × d, k_proj,
v_proj kv·hd × d, r_proj h·d_rel × d (each head's relative state), o_proj d × h·hd, q_norm and
k_norm over hd, ``k_sconv`` and ``v_sconv`` (depthwise convs over K and V, kv·hd channels) and
``rel_logits_proj.proj`` [d_rel, R], a bank of bias-vs-distance profiles each head mixes
(R = rel_extent in full layers, sliding_window_size in sliding ones, whose heads, kv heads and
head_dim are the ``swa_`` fields); ``attn_sconv`` and ``mlp_sconv`` over d on the attention's and
the MLP's outputs. Every conv: ``InklingShortConvolution``, weight [C, 1, k], no bias, run in
float32 with a residual. The MLP (``mlp_layer_types`` "dense" or "sparse"): gate_proj, up_proj
[ff, d], down_proj [d, ff] and a scalar global_scale; or a router ``gate`` [E + S, d] (the S shared
experts are scored beside the routed ones) with its global_scale [1], routed experts gate_up
[E, 2·ff, d], down [E, d, ff], and ``shared_experts`` stacked [S, ff, d] (gate, up), [S, d, ff]
(down). Outer: model.embed_tokens [V, d] with its embed_norm [d], model.norm, lm_head (never tied).

Cache per sequence and layer: K and V, plus the four convs' last k inputs (2·kv·hd + 2·d channels,
float32 whatever the model's dtype): the conv state is a ``Mixer`` of kind short_conv beside the
attention. FLOPs per token beyond the linear layers: the relative bias, (h × d_rel) · (d_rel × R)
per layer (``Tensor.uses`` = h), and the four convs (flops.conv_flops_per_token).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any
from typing import Self

from pydantic import AliasChoices
from pydantic import Field

from llmcalc.families._base import Architecture
from llmcalc.families._base import Count
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import LayerPlan
from llmcalc.families._base import Size
from llmcalc.families._base import check_top_k
from llmcalc.families._base import embedding
from llmcalc.families._base import linear
from llmcalc.families._base import listed_kinds
from llmcalc.families._base import lm_head
from llmcalc.families._base import norm
from llmcalc.families._base import override_plan
from llmcalc.families._base import periodic_plan
from llmcalc.families._base import plan_from_kinds
from llmcalc.families._base import qk_norms
from llmcalc.families._base import require
from llmcalc.families._base import resolve_kv_heads
from llmcalc.families._base import routed_experts
from llmcalc.families._base import router
from llmcalc.families._base import swiglu
from llmcalc.families._moe import cross_plans
from llmcalc.families._ssm import LayerBuild
from llmcalc.families._ssm import depthwise_conv
from llmcalc.families._ssm import mixed_layers
from llmcalc.limits import shown
from llmcalc.model.spec import SHORT_CONV
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Mixer
from llmcalc.model.spec import MoE
from llmcalc.model.spec import Run
from llmcalc.model.spec import Tensor

ATTENTION_OF = {"hybrid": "attention", "hybrid_sliding": "sliding_attention"}
FFN_OF = {"dense": "mlp", "sparse": "moe"}


class InklingTextConfig(DecoderConfig):
    transformers_class = "InklingTextConfig"

    max_position_embeddings: Size | None = Field(
        validation_alias=AliasChoices("max_position_embeddings", "model_max_length")
    )
    swa_num_attention_heads: Size
    swa_num_key_value_heads: Size
    swa_head_dim: Size
    sliding_window_size: Size = Field(
        validation_alias=AliasChoices("sliding_window_size", "sliding_window")
    )
    d_rel: Size
    rel_extent: Size
    local_layer_ids: list[Count] | None = None
    layer_types: list[str] | None = None
    conv_kernel_size: Size = Field(
        validation_alias=AliasChoices("conv_kernel_size", "sconv_kernel_size")
    )
    mlp_layer_types: list[str] | None = None
    dense_mlp_idx: Count = 0  # without mlp_layer_types: the first dense_mlp_idx layers dense
    # in checkpoints that give it, intermediate_size is the experts' width and this the dense MLP's
    dense_intermediate_size: Size | None = None
    moe_intermediate_size: Size
    n_routed_experts: Size = Field(
        validation_alias=AliasChoices("n_routed_experts", "num_local_experts")
    )
    num_experts_per_tok: Size
    n_shared_experts: Size

    @property
    def dense_ff(self) -> int:
        return self.dense_intermediate_size or self.intermediate_size

    @property
    def expert_ff(self) -> int:
        if self.dense_intermediate_size:
            return self.intermediate_size
        return self.moe_intermediate_size


def _attention_plan(c: InklingTextConfig) -> LayerPlan:
    """Full ("attention") or sliding layers: as listed, else all but local_layer_ids full, else
    every 6th layer full (i + 1 ≡ 0 mod 6), the others sliding."""
    L = c.num_hidden_layers
    if c.layer_types is not None:
        return plan_from_kinds(listed_kinds(c.layer_types, L, ATTENTION_OF))
    if c.local_layer_ids is not None:
        local = sorted({i for i in c.local_layer_ids if i < L})
        return override_plan({"attention": LayerSet.span(0, L)}, local, "sliding_attention")
    return periodic_plan(L, period=6, every="attention", others="sliding_attention")


def _plan(c: InklingTextConfig) -> LayerPlan:
    """Each layer's "<attention kind>, <mlp or moe>"."""
    attention = _attention_plan(c)
    L = c.num_hidden_layers
    if c.mlp_layer_types is not None:
        require(len(c.mlp_layer_types) == L, "mlp_layer_types",
                f"has {len(c.mlp_layer_types)} entries, num_hidden_layers is {L}")
        for i, kind in enumerate(c.mlp_layer_types):
            require(kind in FFN_OF, f"mlp_layer_types.{i}",
                    f"unknown MLP type {kind!r} (one of: {', '.join(FFN_OF)})")
        attention_of = {i: kind for kind, layers in attention.items() for i in layers}
        return plan_from_kinds([f"{attention_of[i]}, {FFN_OF[kind]}"
                                for i, kind in enumerate(c.mlp_layer_types)])
    # the first dense_mlp_idx layers dense: cut each run at that index
    k = c.dense_mlp_idx
    plan: dict[str, list[Run]] = {}
    for kind, layers in attention.items():
        for r in layers.runs:
            for ffn, start, stop in (("mlp", r.start, min(r.stop, k)),
                                     ("moe", max(r.start, k), r.stop)):
                piece = Run(start, stop, r.origin, r.period, r.width)
                if len(piece):
                    plan.setdefault(f"{kind}, {ffn}", []).append(piece)
    return {kind: LayerSet(tuple(runs)) for kind, runs in plan.items()}


def describe(c: InklingTextConfig) -> Architecture:
    d, v, p, k = c.hidden_size, c.vocab_size, "model.layers.{i}", c.conv_kernel_size
    E, S = c.n_routed_experts, c.n_shared_experts
    plan = _plan(c)
    has_moe = any(kind.endswith("moe") for kind in plan)
    if has_moe:
        check_top_k(c.num_experts_per_tok, E, k_field="num_experts_per_tok",
                    e_field="n_routed_experts")

    def attention_of(kind: str) -> tuple[Attention, int]:
        """The layer's heads, kv heads, head_dim and window; and R, its relative-bias extent."""
        if kind == "sliding_attention":
            h, hd = c.swa_num_attention_heads, c.swa_head_dim
            kv = resolve_kv_heads(h, c.swa_num_key_value_heads,
                                  heads_field="swa_num_attention_heads",
                                  kv_field="swa_num_key_value_heads")
            return Attention(h, kv, hd, hd, window=c.sliding_window_size), c.sliding_window_size
        return c.attention(), c.rel_extent

    def build(kind: str) -> LayerBuild:
        attn_kind, ffn_kind = kind.split(", ")
        attention, extent = attention_of(attn_kind)
        h, kv, hd = attention.heads, attention.kv_heads, attention.qk_head_dim
        a = f"{p}.self_attn"
        attn = [
            *linear(f"{a}.q_proj", "attn/q_proj", h * hd, d, bias=False),
            *linear(f"{a}.k_proj", "attn/k_proj", kv * hd, d, bias=False),
            *linear(f"{a}.v_proj", "attn/v_proj", kv * hd, d, bias=False),
            *linear(f"{a}.r_proj", "attn/r_proj", h * c.d_rel, d, bias=False),
            *linear(f"{a}.o_proj", "attn/o_proj", d, h * hd, bias=False),
            *depthwise_conv(f"{a}.k_sconv.conv1d", "attn/k_sconv", kv * hd, k, bias=False),
            *depthwise_conv(f"{a}.v_sconv.conv1d", "attn/v_sconv", kv * hd, k, bias=False),
            *qk_norms(a, hd, hd),
            # d_rel × R, multiplied by each head's relative state: h uses per token
            Tensor(f"{a}.rel_logits_proj.proj", (c.d_rel, extent), "attn/rel_logits_proj",
                   matmul=True, uses=h),
        ]
        m = f"{p}.mlp"
        if ffn_kind == "moe":
            ffn = [
                *router(f"{m}.gate", d, E + S),  # routed and shared experts scored together
                Tensor(f"{m}.gate.global_scale", (1,), "moe/router"),
                *routed_experts(f"{m}.experts", d, c.expert_ff, E),
                # S shared experts stacked, all of them run: gate, up [S, ff, d], down [S, d, ff]
                Tensor(f"{m}.shared_experts.gate_proj", (S, c.expert_ff, d),
                       "moe/shared_experts/gate_proj", matmul=True),
                Tensor(f"{m}.shared_experts.up_proj", (S, c.expert_ff, d),
                       "moe/shared_experts/up_proj", matmul=True),
                Tensor(f"{m}.shared_experts.down_proj", (S, d, c.expert_ff),
                       "moe/shared_experts/down_proj", matmul=True),
            ]
        else:
            ffn = [*swiglu(m, "mlp", d, c.dense_ff), Tensor(f"{m}.global_scale", (1,), "mlp")]
        outer_convs = [
            *depthwise_conv(f"{p}.attn_sconv.conv1d", f"{attn_kind}/attn_sconv", d, k, bias=False),
            *depthwise_conv(f"{p}.mlp_sconv.conv1d", f"{ffn_kind}/mlp_sconv", d, k, bias=False),
        ]
        norms = [*norm(f"{p}.input_layernorm", f"{attn_kind}/norm", d, bias=False),
                 *norm(f"{p}.post_attention_layernorm", f"{ffn_kind}/norm", d, bias=False)]
        # the four convs' states: K and V (kv·hd each) and the two outputs (d each), in float32
        mixer = Mixer(SHORT_CONV, conv_dim=2 * kv * hd + 2 * d, conv_kernel=k, heads=0,
                      head_dim=0, state_size=0, conv_fp32=True)
        return [*attn, *ffn, *outer_convs, *norms], attention, mixer

    embed = "model.embed_tokens"
    return Architecture(
        shape=c.shape(tied=False),
        tensors=(
            embedding(embed, "embed/tokens", v, d),
            *norm(f"{embed}.embed_norm", "embed/norm", d, bias=False),
            *norm("model.norm", "final_norm", d, bias=False),
            *lm_head("lm_head", v, d, tied_to=None),
        ),
        layer_groups=mixed_layers(plan, build),
        moe=MoE(E, c.num_experts_per_tok, shared_experts=S) if has_moe else None,
    )


# ---- Inkling 2: attention over block outputs, gated output, sinks, dynamic convs in full layers --
#
# transformers ``models/inkling2/modeling_inkling2.py`` (``Inkling2ForCausalLM``). Against Inkling:
# - q_proj.linear h·hd × d with norm.scale [h, hd]; k_proj, v_proj .linear kv·hd × d, each with its
#   conv ``sconv``: static (conv1d [kv·hd, 1, k]) in sliding layers, dynamic in full layers
#   (static_weight [k, kv·hd] plus per-token taps from weight_proj (kv·k) × d, one set per kv head,
#   applied as elementwise products); o_proj.gate_proj h·hd × d (a sigmoid gate on the attention
#   output) and o_proj.linear d × h·hd; sink_proj h × d (one sink logit per head);
#   relative_position_bias.linear h·d_rel × d, .norm.scale [h, d_rel], .proj [d_rel, R].
# - Attention residuals over blocks of n = n_layers_per_attn_res_block layers: every layer reads its
#   input as attention of learned queries (attention_input.query [d], or [3, d] for a full layer's
#   q, k, v inputs; none in layer 0; mlp_input.query [d]) over the block outputs so far plus the
#   running partial sum; model.final_input.query [d] does so before the final norm. Full layers
#   norm their three inputs (q_, k_, v_input_layernorm [d]).
# - Routed experts only (softcapped SwiGLU), router ``gate`` [E, d] (fp32); post_attention_ and
#   post_mlp_convolution (conv1d [d, 1, k]); lm_head [unpadded_vocab_size, d].

FULL, SLIDING = "attention", "sliding_attention"


class Inkling2TextConfig(DecoderConfig):
    transformers_class = "Inkling2TextConfig"

    intermediate_size: Size = Field(  # the experts' width (transformers maps one onto the other)
        validation_alias=AliasChoices("moe_intermediate_size", "intermediate_size")
    )
    unpadded_vocab_size: Size
    max_position_embeddings: Size | None = Field(
        validation_alias=AliasChoices("max_position_embeddings", "model_max_length")
    )
    swa_num_attention_heads: Size
    swa_num_key_value_heads: Size
    swa_head_dim: Size
    sliding_window_size: Size = Field(
        validation_alias=AliasChoices("sliding_window_size", "sliding_window")
    )
    d_rel: Size
    rel_extent: Size
    layer_types: list[str] | None = None
    conv_kernel_size: Size = Field(
        validation_alias=AliasChoices("conv_kernel_size", "sconv_kernel_size")
    )
    n_routed_experts: Size = Field(
        validation_alias=AliasChoices("n_routed_experts", "num_local_experts")
    )
    num_experts_per_tok: Size
    n_layers_per_attn_res_block: Size


def _inkling2_plan(c: Inkling2TextConfig) -> LayerPlan:
    """Full or sliding layers, as listed or every 6th full; layer 0 on its own (it reads no
    attention_input)."""
    L = c.num_hidden_layers
    if c.layer_types is not None:
        plan = plan_from_kinds(listed_kinds(c.layer_types, L, ATTENTION_OF))
    else:
        plan = periodic_plan(L, period=6, every=FULL, others=SLIDING)
    first = next(kind for kind, layers in plan.items() if 0 in layers)
    return override_plan(plan, [0], f"{first}, layer 0")


def _sum_ceil(layers: LayerSet, n: int) -> int:
    """Σ ⌈i / n⌉ over ``layers``, in O(runs × width × log): each run's members at one offset form
    an arithmetic progression, summed by :func:`floor_sum`."""
    total = 0
    for r in layers.runs:
        for w in range(min(r.width, r.period)):
            first = r.start + (r.origin + w - r.start) % r.period  # first member ≥ start
            if first < r.stop:
                count = (r.stop - first + r.period - 1) // r.period
                total += floor_sum(count, n, r.period, first + n - 1)
    return total


def floor_sum(count: int, m: int, a: int, b: int) -> int:
    """Σ_{t < count} ⌊(a·t + b) / m⌋ for a, b ≥ 0 (the Euclid-like reduction, O(log))."""
    total = 0
    while count > 0:
        if a >= m:
            total += (count - 1) * count // 2 * (a // m)
            a %= m
        if b >= m:
            total += count * (b // m)
            b %= m
        y = a * count + b
        if y < m:
            break
        count, b, m, a = y // m, y % m, a, m
    return total


def _block_reads(plan: LayerPlan, *, n: int, start: int, stop: int) -> int:
    """Σ queries × sources of the attention over block outputs (Inkling2BlockAttentionResidual)
    in the layers of ``plan``, together layers start..stop-1. Layer i sees B(i) = ⌈i / n⌉ finished
    blocks + its partial sum: its input, B(i) + 1 sources for 1 query (3 in a full layer; none in
    layer 0); its MLP input, one source more where i is a block boundary (i mod n = 0)."""
    every = LayerSet(tuple(r for layers in plan.values() for r in layers.runs))
    full = LayerSet(tuple(r for kind, layers in plan.items() if kind.startswith(FULL)
                          for r in layers.runs))
    sources = _sum_ceil(every, n) + len(every)  # Σ_i (B(i) + 1)
    full_sources = _sum_ceil(full, n) + len(full)
    first = (1 + (2 if 0 in full else 0)) if 0 in every else 0  # layer 0 reads no attention_input
    boundaries = -(-stop // n) - -(-start // n)  # multiples of n in start..stop-1
    return (sources + 2 * full_sources - first) + (sources + boundaries)


def inkling2_depth_flops(plan: LayerPlan, *, d: int, n: int, num_layers: int) -> int:
    """Per token, every attention over block outputs (eager: scores and weighted sum, 2·q·s·d
    each for q queries over s sources): the layers' inputs (:func:`_block_reads`) and the final
    input, B(L) + 1 sources."""
    blocks = -(-num_layers // n)
    return 2 * 2 * d * (_block_reads(plan, n=n, start=0, stop=num_layers) + blocks + 1)


def _inkling2_layer(c: Inkling2TextConfig, kind: str) -> LayerBuild:
    """One Inkling 2 layer of ``kind`` ("attention" or "sliding_attention", ", layer 0" for the
    first): its tensors, attention and conv states."""
    d, p, k, E = c.hidden_size, "model.layers.{i}", c.conv_kernel_size, c.n_routed_experts
    attn_kind = kind.split(", ")[0]
    sliding = attn_kind == SLIDING
    if sliding:
        h, hd = c.swa_num_attention_heads, c.swa_head_dim
        kv = resolve_kv_heads(h, c.swa_num_key_value_heads,
                              heads_field="swa_num_attention_heads",
                              kv_field="swa_num_key_value_heads")
        attention = Attention(h, kv, hd, hd, window=c.sliding_window_size)
        extent = c.sliding_window_size
    else:
        attention, extent = c.attention(), c.rel_extent
        h, kv, hd = attention.heads, attention.kv_heads, attention.qk_head_dim
    a = f"{p}.self_attn"
    kv_convs = []
    for x in ("k", "v"):
        if sliding:  # static taps: a depthwise conv
            kv_convs += depthwise_conv(f"{a}.{x}_proj.sconv.conv1d", f"attn/{x}_sconv",
                                       kv * hd, k, bias=False)
        else:  # taps static_weight + weight_proj(input), one set per kv head
            kv_convs += [Tensor(f"{a}.{x}_proj.sconv.static_weight", (k, kv * hd),
                                f"attn/{x}_sconv"),
                         *linear(f"{a}.{x}_proj.sconv.weight_proj", f"attn/{x}_sconv",
                                 kv * k, d, bias=False)]
    r = f"{a}.relative_position_bias"
    attn = [
        *linear(f"{a}.q_proj.linear", "attn/q_proj", h * hd, d, bias=False),
        Tensor(f"{a}.q_proj.norm.scale", (h, hd), "attn/q_proj"),
        *linear(f"{a}.k_proj.linear", "attn/k_proj", kv * hd, d, bias=False),
        *linear(f"{a}.v_proj.linear", "attn/v_proj", kv * hd, d, bias=False),
        *kv_convs,
        *linear(f"{a}.o_proj.gate_proj", "attn/o_gate", h * hd, d, bias=False),
        *linear(f"{a}.o_proj.linear", "attn/o_proj", d, h * hd, bias=False),
        *linear(f"{a}.sink_proj", "attn/sink_proj", h, d, bias=False),
        *linear(f"{r}.linear", "attn/rel_proj", h * c.d_rel, d, bias=False),
        Tensor(f"{r}.norm.scale", (h, c.d_rel), "attn/rel_proj"),
        # d_rel × R, multiplied by each head's relative state: h uses per token
        Tensor(f"{r}.proj", (c.d_rel, extent), "attn/rel_logits_proj", matmul=True, uses=h),
    ]
    ffn = [*router(f"{p}.mlp.gate", d, E), *routed_experts(f"{p}.mlp.experts", d,
                                                           c.intermediate_size, E)]
    inputs = ["input_layernorm"] if sliding else ["q_input_layernorm", "k_input_layernorm",
                                                  "v_input_layernorm"]
    rest = [
        *(t for name in inputs
          for t in norm(f"{p}.{name}", f"{attn_kind}/norm", d, bias=False)),
        *norm(f"{p}.post_attention_layernorm", "moe/norm", d, bias=False),
        *depthwise_conv(f"{p}.post_attention_convolution.conv1d", f"{attn_kind}/post_conv",
                        d, k, bias=False),
        *depthwise_conv(f"{p}.post_mlp_convolution.conv1d", "moe/post_conv", d, k, bias=False),
        Tensor(f"{p}.mlp_input.query", (d,), "attn_res/query"),
    ]
    if not kind.endswith("layer 0"):  # layer 0 reads the embedding directly
        shape = (d,) if sliding else (3, d)  # one query, or one per q, k, v input
        rest.append(Tensor(f"{p}.attention_input.query", shape, "attn_res/query"))
    # four convs' states in float32: K, V (kv·hd each; dynamic in full layers) and 2 × d
    mixer = Mixer(SHORT_CONV, conv_dim=2 * kv * hd + 2 * d, conv_kernel=k, heads=0,
                  head_dim=0, state_size=0, conv_fp32=True,
                  elementwise_conv_dim=0 if sliding else 2 * kv * hd)
    return [*attn, *ffn, *rest], attention, mixer


def _inkling2_outer(c: Inkling2TextConfig) -> tuple[Tensor, ...]:
    d, embed = c.hidden_size, "model.embed_tokens"
    return (
        embedding(embed, "embed/tokens", c.vocab_size, d),
        *norm(f"{embed}.embed_norm", "embed/norm", d, bias=False),
        Tensor("model.final_input.query", (d,), "attn_res/query"),
        *norm("model.norm", "final_norm", d, bias=False),
        *lm_head("lm_head", c.unpadded_vocab_size, d, tied_to=None),
    )


def describe_inkling2(c: Inkling2TextConfig) -> Architecture:
    E = c.n_routed_experts
    check_top_k(c.num_experts_per_tok, E, k_field="num_experts_per_tok", e_field="n_routed_experts")
    plan = _inkling2_plan(c)
    return Architecture(
        shape=c.shape(tied=False),
        tensors=_inkling2_outer(c),
        layer_groups=mixed_layers(plan, lambda kind: _inkling2_layer(c, kind)),
        moe=MoE(E, c.num_experts_per_tok),
        depth_flops_per_token=inkling2_depth_flops(
            plan, d=c.hidden_size, n=c.n_layers_per_attn_res_block, num_layers=c.num_hidden_layers),
    )


# ---- Inkling 2 Loop: a span of Inkling 2's layers run several passes ------------------------------
#
# transformers ``models/inkling2_loop/modeling_inkling2_loop.py`` (``Inkling2LoopForCausalLM``):
# Inkling 2's layers, of which layers S₀..S₁-1 (loop_layer_index_start, loop_layer_index_end,
# multiples of n = n_layers_per_attn_res_block; none when S₀ ≥ L) run loop_num_passes
# = P times per token. Each pass restarts from the hidden state and block outputs the layers
# before the span left (its attention over block outputs reads what the first pass read) and
# keeps its own K, V and conv states: transformers appends (P − 1) copies of the span's cache
# layers. Each loop
# layer has four message gates (``Inkling2LoopMessageGate``: q, k, v, mlp), down_proj r × 2·d
# over [norm(x), norm(message)] and forget_gate_proj, message_gate_proj d × r (r =
# loop_gate_rank), used in passes 2..P only: ``Tensor.repeats`` = P − 1. Their messages come from
# ``model.message_input.query`` [S₁ − S₀, 4, d]: per loop layer 4 learned queries attend over the
# previous pass's block outputs after its first plus its last output, B = ⌈S₁/n⌉ − S₀/n sources
# (2·4·B·d FLOPs for scores and values each), in passes 2..P.

LOOP = "loop"
# transformers reads these from a checkpoint's loop_config, over the flat fields
LOOP_CONFIG_KEYS = {"core_start": "loop_layer_index_start", "core_end": "loop_layer_index_end",
                    "num_passes": "loop_num_passes", "gate_rank": "loop_gate_rank"}


class Inkling2LoopTextConfig(Inkling2TextConfig):
    transformers_class = "Inkling2LoopTextConfig"

    intermediate_size: Size = Field(  # the experts' width (transformers maps one onto the other)
        validation_alias=AliasChoices("moe_intermediate_size", "intermediate_size")
    )
    n_routed_experts: Size = Field(
        validation_alias=AliasChoices("n_routed_experts", "num_local_experts")
    )
    loop_layer_index_start: Count
    loop_layer_index_end: Count
    loop_num_passes: Count
    loop_gate_rank: Size

    @classmethod
    def read(cls, fields: Mapping[str, Any]) -> Self:
        """As transformers' ``__post_init__``: a ``loop_config`` dict overrides the flat fields."""
        loop = fields.get("loop_config")
        # transformers reads it with .get: anything but a mapping (or null) fails there
        require(loop is None or isinstance(loop, Mapping), "loop_config",
                f"must be a mapping of core_start, core_end, num_passes, gate_rank, got "
                f"{shown(loop)}")
        if isinstance(loop, Mapping):
            fields = {**fields, **{flat: loop[key] for key, flat in LOOP_CONFIG_KEYS.items()
                                   if key in loop}}
        return super().read(fields)


def _check_loop(c: Inkling2LoopTextConfig) -> None:
    """transformers' validate_architecture, a span that does not end before it starts (its
    message queries would have a negative size), and one that starts past the layers (nothing
    loops: a config cut to a few layers) or ends within them."""
    start, end, n = c.loop_layer_index_start, c.loop_layer_index_end, c.n_layers_per_attn_res_block
    require(c.loop_num_passes >= 1, "loop_num_passes",
            f"loop_num_passes ({c.loop_num_passes}) must be at least 1")
    require(start > 0, "loop_layer_index_start",
            f"loop_layer_index_start ({start}) must be greater than 0")
    for field, value in (("loop_layer_index_start", start), ("loop_layer_index_end", end)):
        require(value % n == 0, field,
                f"{field} ({value}) must be a multiple of n_layers_per_attn_res_block ({n})")
    require(end >= start, "loop_layer_index_end",
            f"loop_layer_index_end ({end}) must not be below loop_layer_index_start ({start})")
    L = c.num_hidden_layers
    require(end <= L or start >= L, "loop_layer_index_end",
            f"loop_layer_index_end ({end}) must not exceed num_hidden_layers ({L}) when the loop "
            "starts within the layers (transformers' later passes would index past their cache)")


def _message_gates(p: str, *, d: int, rank: int, runs: int) -> list[Tensor]:
    """The four message gates of a loop layer, each used in ``runs`` of its passes: down_proj
    r × 2·d, forget_gate_proj and message_gate_proj d × r."""
    out = []
    for x in ("q", "k", "v", "mlp"):
        g = f"{p}.{x}_message_gate"
        out += [*linear(f"{g}.down_proj", "loop/message_gate", rank, 2 * d, bias=False),
                *linear(f"{g}.forget_gate_proj", "loop/message_gate", d, rank, bias=False),
                *linear(f"{g}.message_gate_proj", "loop/message_gate", d, rank, bias=False)]
    return [replace(t, repeats=runs) for t in out]


def describe_inkling2_loop(c: Inkling2LoopTextConfig) -> Architecture:
    d, L, n, P = c.hidden_size, c.num_hidden_layers, c.n_layers_per_attn_res_block, c.loop_num_passes
    check_top_k(c.num_experts_per_tok, c.n_routed_experts, k_field="num_experts_per_tok",
                e_field="n_routed_experts")
    _check_loop(c)
    start, end = c.loop_layer_index_start, c.loop_layer_index_end
    stop = min(end, L)  # a span past the layers (a config cut short): nothing loops
    loop = LayerSet.span(start, stop)
    once = LayerSet((*LayerSet.span(0, min(start, L)).runs, *LayerSet.span(stop, L).runs))
    plan = _inkling2_plan(c)
    crossed = cross_plans({k: s for k, s in {"once": once, LOOP: loop}.items() if s}, plan)
    groups = []
    for (section, kind), layers in crossed.items():
        tensors, attention, mixer = _inkling2_layer(c, kind)
        if section == LOOP:
            gates = _message_gates("model.layers.{i}", d=d, rank=c.loop_gate_rank, runs=P - 1)
            groups.append(LayerGroup(f"loop/{kind} (runs {P}× per token)", layers,
                                     (*tensors, *gates), attention, mixer, repeats=P))
        else:
            groups.append(LayerGroup(kind, layers, tuple(tensors), attention, mixer))
    # passes 2..P read their inputs over blocks again, as the first did, and their messages: 4
    # queries per loop layer over the previous pass's B blocks
    blocks = -(-stop // n) - start // n if loop else 0
    loop_plan = {kind: s for (section, kind), s in crossed.items() if section == LOOP}
    once_flops = inkling2_depth_flops(plan, d=d, n=n, num_layers=L)
    again = 2 * 2 * d * (P - 1) * (_block_reads(loop_plan, n=n, start=start, stop=stop)
                                   if loop else 0)
    messages = 2 * 2 * d * (P - 1) * len(loop) * 4 * blocks
    depth = once_flops + again + messages
    note = (
        f"looped: layers {loop.describe()} run {P}× per token (loop_num_passes), each pass with "
        f"its own K/V and conv states, their message gates in passes 2..{P}; parameters once. "
        f"Attention over block outputs per token: {depth:,} = {once_flops:,} (every layer once, "
        f"the final input) + {again:,} (passes 2..{P} reading their inputs) + {messages:,} "
        f"(messages: 4 queries per loop layer over the previous pass's {blocks} blocks)"
        if loop else
        f"nothing loops: loop_layer_index_start..end ({start}, {end}) hold none of the {L} layers"
    )
    return Architecture(
        shape=c.shape(tied=False),
        tensors=(*_inkling2_outer(c),
                 # 4 learned queries (q, k, v, mlp messages) per loop layer, as configured
                 Tensor("model.message_input.query", (end - start, 4, d), "loop/message_query")),
        layer_groups=tuple(groups),
        moe=MoE(c.n_routed_experts, c.num_experts_per_tok),
        notes=(note,),
        depth_flops_per_token=depth,
    )
