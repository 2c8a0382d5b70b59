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

from pydantic import AliasChoices, Field

from llmcalc.families._base import (
    Architecture,
    Count,
    DecoderConfig,
    LayerPlan,
    Size,
    check_top_k,
    embedding,
    linear,
    lm_head,
    norm,
    override_plan,
    periodic_plan,
    plan_from_kinds,
    qk_norms,
    require,
    resolve_kv_heads,
    routed_experts,
    router,
    swiglu,
)
from llmcalc.families._ssm import LayerBuild, depthwise_conv, mixed_layers
from llmcalc.spec import SHORT_CONV, Attention, LayerSet, Mixer, MoE, Run, Tensor

ATTENTION_OF = {"hybrid": "attention", "hybrid_sliding": "sliding_attention"}
FFN_OF = {"dense": "mlp", "sparse": "moe"}


class InklingTextConfig(DecoderConfig):
    transformers_class = "InklingTextConfig"

    num_key_value_heads: Size | None = 8
    head_dim: Size | None = 128
    intermediate_size: Size = 24576
    max_position_embeddings: Size | None = Field(
        131072, validation_alias=AliasChoices("max_position_embeddings", "model_max_length")
    )
    swa_num_attention_heads: Size = 64
    swa_num_key_value_heads: Size = 16
    swa_head_dim: Size = 128
    sliding_window_size: Size = Field(
        512, validation_alias=AliasChoices("sliding_window_size", "sliding_window")
    )
    d_rel: Size = 16
    rel_extent: Size = 1024
    local_layer_ids: list[Count] | None = None
    layer_types: list[str] | None = None
    conv_kernel_size: Size = Field(
        4, validation_alias=AliasChoices("conv_kernel_size", "sconv_kernel_size")
    )
    mlp_layer_types: list[str] | None = None
    dense_mlp_idx: Count = 0  # without mlp_layer_types: the first dense_mlp_idx layers dense
    # in checkpoints that give it, intermediate_size is the experts' width and this the dense MLP's
    dense_intermediate_size: Size | None = None
    moe_intermediate_size: Size = 3072
    n_routed_experts: Size = Field(
        256, validation_alias=AliasChoices("n_routed_experts", "num_local_experts")
    )
    num_experts_per_tok: Size = 6
    n_shared_experts: Size = 2

    @property
    def dense_ff(self) -> int:
        return self.dense_intermediate_size or self.intermediate_size

    @property
    def expert_ff(self) -> int:
        return self.intermediate_size if self.dense_intermediate_size else self.moe_intermediate_size


def _attention_plan(c: InklingTextConfig) -> LayerPlan:
    """Full ("attention") or sliding layers: as listed, else all but local_layer_ids full, else
    every 6th layer full (i + 1 ≡ 0 mod 6), the others sliding."""
    L = c.num_hidden_layers
    if c.layer_types is not None:
        require(len(c.layer_types) == L, "layer_types",
                f"has {len(c.layer_types)} entries, num_hidden_layers is {L}")
        for i, kind in enumerate(c.layer_types):
            require(kind in ATTENTION_OF, f"layer_types.{i}",
                    f"unknown layer type {kind!r} (one of: {', '.join(ATTENTION_OF)})")
        return plan_from_kinds([ATTENTION_OF[kind] for kind in c.layer_types])
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
