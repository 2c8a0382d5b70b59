"""Kimi Linear (Moonshot AI 2025, "Kimi Linear: An Expressive, Efficient Attention Architecture"):
Kimi Delta Attention (KDA) in most layers, DeepSeek-V2's multi-head latent attention (MLA, without
rotary embeddings) in the others, DeepSeek-V3's MoE (router, fused experts, shared experts) after the
first dense layer(s).

Per layer: input_layernorm, post_attention_layernorm [d]; ``self_attn`` is MLA (deepseek.mla) or
KDA: q, k, v projections h·dk × d each; a depthwise conv (no bias) over q, k, v = 3·h·dk channels;
the forget gate (low rank: f_a_proj dk × d, f_b_proj h·dk × dk; dt_bias [h·dk]; A_log [1, 1, h, 1]);
b_proj h × d (β); the output gate (g_a_proj dk × d, g_b_proj h·dk × dk); o_norm [dk] (a gated
RMSNorm); o_proj d × h·dk. ``mlp`` is a SwiGLU of intermediate_size ("dense") or the MoE ("sparse").
Layer types: as listed, else from the checkpoint's ``linear_attn_config`` (1-based ``kda_layers`` and
``full_attn_layers``), else MLA at every 4th layer from layer 4; MLP types as listed, else the first
``first_k_dense_replace`` (1) dense. Tensor names as in transformers ``KimiLinearForCausalLM``
(modeling_kimi_linear.py), whose config reads heads, head dim and kernel from ``linear_attn_config``
where it is given. ``KimiLinearForCausalLM`` declares no tied weights: lm_head is its own [V, d]
whatever ``tie_word_embeddings`` says.

State per sequence and KDA layer: the conv state (3·h·dk channels × kernel) and a dk × dk matrix per
head in float32; the MLA layers cache the latent (kv_lora_rank + qk_rope_head_dim per token).

``bailing_hybrid`` (Ling 3, inclusionAI; transformers ``BailingHybridForCausalLM``) is this structure
with three changes: KDA's forget and output gates are full rank (``forget_gate.f_proj`` and
``g_proj``, h·dk × d each; A_log [h]), the MLA layers (rotary, as DeepSeek-V3's) gate their output
per head (``g_proj`` h × d, a sigmoid), and the last layer of every ``layer_group_size`` (6) is MLA,
the first ``first_k_dense_replace`` (2) dense. KDA has ``num_attention_heads`` heads of ``head_dim``
and a kernel of ``short_conv_kernel_size`` unless ``linear_num_heads`` / ``linear_head_dim`` /
``linear_conv_kernel_dim`` are given (transformers writes them when it saves a config, whose
``head_dim`` it sets to qk_rope_head_dim). transformers keeps the conv weights, A_log, dt_bias and
the router in float32 and the conv state at the model's dtype. transformers does not build the
checkpoint's multi-token-prediction layer (``num_nextn_predict_layers``, ``model.layers.{L}``: an MLA
+ MoE layer with eh_proj, enorm, hnorm and final_layernorm, sharing the embedding and head, as the
Megatron-Bridge weight map of Ling 3 lists it): not counted, its size given as ``mtp_params``.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import AliasChoices
from pydantic import Field

from llmcalc.families._base import Architecture
from llmcalc.families._base import Count
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import LayerPlan
from llmcalc.families._base import Size
from llmcalc.families._base import check_top_k
from llmcalc.families._base import linear
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import periodic_plan
from llmcalc.families._base import plan_from_kinds
from llmcalc.families._base import require
from llmcalc.families._base import routed_experts
from llmcalc.families._base import router
from llmcalc.families._base import split_plan
from llmcalc.families._base import swiglu
from llmcalc.families._moe import cross_plans
from llmcalc.families._moe import crossed_name
from llmcalc.families._moe import listed_plan
from llmcalc.families._moe import mtp_note
from llmcalc.families._moe import mtp_params
from llmcalc.families._ssm import depthwise_conv
from llmcalc.families.deepseek import mla
from llmcalc.model.spec import KDA
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Mixer
from llmcalc.model.spec import MoE
from llmcalc.model.spec import Run
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

KDA_LAYER, MLA_LAYER, DENSE, SPARSE = "kda", "mla", "dense", "moe"


class LinearAttnConfig(FamilyConfig):
    """The checkpoint's ``linear_attn_config``: KDA sizes and the 1-based layer lists."""

    head_dim: Size | None = None
    num_heads: Size | None = None
    short_conv_kernel_size: Size | None = None
    kda_layers: list[Size] | None = None
    full_attn_layers: list[Size] | None = None


class KimiLinearConfig(FamilyConfig):
    transformers_class = "KimiLinearConfig"
    full_rank_gates: ClassVar[bool] = False  # KDA's forget and output gates: low rank (Kimi)
    gated_mla: ClassVar[bool] = False  # a per-head sigmoid gate on MLA's output (g_proj h × d)
    top_k_field: ClassVar[str] = "num_experts_per_token"  # as the checkpoint's config.json spells it

    vocab_size: Size
    hidden_size: Size
    intermediate_size: Size
    moe_intermediate_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    max_position_embeddings: Size | None = Field(
        validation_alias=AliasChoices("model_max_length", "max_position_embeddings"))
    attention_bias: bool
    q_lora_rank: Size | None = None
    kv_lora_rank: Size
    qk_nope_head_dim: Size
    qk_rope_head_dim: Size
    v_head_dim: Size
    num_local_experts: Size = Field(
        validation_alias=AliasChoices("num_experts", "num_local_experts"))
    num_experts_per_tok: Size = Field(
        validation_alias=AliasChoices("num_experts_per_token", "num_experts_per_tok"))
    n_shared_experts: Count = Field(
        validation_alias=AliasChoices("num_shared_experts", "n_shared_experts"))
    first_k_dense_replace: Count = 1
    mlp_layer_types: list[str] | None = None
    layer_types: list[str] | None = None
    linear_head_dim: Size
    linear_num_heads: Size
    linear_conv_kernel_dim: Size
    linear_attn_config: LinearAttnConfig | None = None

    def _linear(self, name: str, own: int) -> int:
        given = getattr(self.linear_attn_config, name, None) if self.linear_attn_config else None
        return own if given is None else int(given)

    @property
    def kda_heads(self) -> int:
        return self._linear("num_heads", self.linear_num_heads)

    @property
    def kda_head_dim(self) -> int:
        return self._linear("head_dim", self.linear_head_dim)

    @property
    def kda_kernel(self) -> int:
        return self._linear("short_conv_kernel_size", self.linear_conv_kernel_dim)

    @property
    def mtp_layers(self) -> int:
        return 0


class BailingHybridConfig(KimiLinearConfig):
    """Ling 3 (transformers BailingHybridConfig): what changes from Kimi Linear is in the module
    docstring; the defaults are the class's (its docstring names inclusionAI/Ling-3.0-Flash)."""

    transformers_class = "BailingHybridConfig"
    full_rank_gates = True
    gated_mla = True
    top_k_field = "num_experts_per_tok"

    max_position_embeddings: Size | None = Field(
        validation_alias=AliasChoices("model_max_length", "max_position_embeddings"))
    num_local_experts: Size = Field(
        validation_alias=AliasChoices("num_experts", "num_local_experts"))
    first_k_dense_replace: Count
    head_dim: Size  # KDA's head dim (MLA's are qk_nope/qk_rope/v_head_dim)
    short_conv_kernel_size: Size
    layer_group_size: Size  # the last layer of each group is MLA
    # transformers derives these from head_dim, num_attention_heads and short_conv_kernel_size
    # unless given (a config transformers saved gives them)
    linear_head_dim: Size | None = None  # type: ignore[assignment]
    linear_num_heads: Size | None = None  # type: ignore[assignment]
    linear_conv_kernel_dim: Size | None = None  # type: ignore[assignment]
    num_nextn_predict_layers: Count = Field(
        validation_alias=AliasChoices("num_nextn_predict_layers", "num_mtp_layers"))

    @property
    def kda_heads(self) -> int:
        return self.linear_num_heads or self.num_attention_heads

    @property
    def kda_head_dim(self) -> int:
        return self.linear_head_dim or self.head_dim

    @property
    def kda_kernel(self) -> int:
        return self.linear_conv_kernel_dim or self.short_conv_kernel_size

    @property
    def mtp_layers(self) -> int:
        return self.num_nextn_predict_layers


def mixer_plan(c: KimiLinearConfig) -> LayerPlan:
    """KDA and MLA layers: layer_types, else the checkpoint's 1-based lists, else MLA at i ≡ 0
    (mod 4), i > 0 (Ling 3: layer_types, else MLA closing each layer_group_size)."""
    L = c.num_hidden_layers
    names = {"linear_attention": KDA_LAYER, "full_attention": MLA_LAYER}
    if c.layer_types is not None:
        return listed_plan(c.layer_types, L, field="layer_types", names=names)
    if isinstance(c, BailingHybridConfig):  # MLA at (i + 1) ≡ 0 (mod layer_group_size)
        return periodic_plan(L, period=c.layer_group_size, every=MLA_LAYER, others=KDA_LAYER)
    lac = c.linear_attn_config
    if lac is not None and lac.kda_layers is not None and lac.full_attn_layers is not None:
        kinds: dict[int, str] = {}
        for field, kind, listed in (("full_attn_layers", MLA_LAYER, lac.full_attn_layers),
                                    ("kda_layers", KDA_LAYER, lac.kda_layers)):
            for j, layer in enumerate(listed):
                require(layer <= L, f"linear_attn_config.{field}.{j}",
                        f"layer {layer} is past num_hidden_layers ({L}; layers count from 1)")
                kinds[layer - 1] = kind  # as transformers: a layer in both lists is KDA
        require(len(kinds) == L, "linear_attn_config",
                f"kda_layers and full_attn_layers name {len(kinds)} of the {L} layers; "
                "each layer must be in one of them")
        return plan_from_kinds([kinds[i] for i in range(L)])
    full = LayerSet((Run(4, L, 0, 4, 1),))
    linear = LayerSet(tuple(r for r in (Run(0, min(1, L)), Run(1, L, 1, 4, 3)) if len(r)))
    plan = {KDA_LAYER: linear, MLA_LAYER: full}
    return {kind: layers for kind, layers in plan.items() if layers}


def mlp_plan(c: KimiLinearConfig) -> LayerPlan:
    L = c.num_hidden_layers
    if c.mlp_layer_types is None:
        return split_plan(L, at=c.first_k_dense_replace, before=DENSE, after=SPARSE)
    return listed_plan(c.mlp_layer_types, L, field="mlp_layer_types",
                       names={"dense": DENSE, "sparse": SPARSE})


def kda(p: str, d: int, *, heads: int, head_dim: int, kernel: int,
        full_rank_gates: bool = False) -> tuple[list[Tensor], Mixer]:
    """Kimi Delta Attention (Kimi Linear §3): the gated delta rule with a per-channel decay.
    q, k, v: h·dk × d; conv over 3·h·dk channels; forget gate f_a dk × d, f_b h·dk × dk, dt_bias
    [h·dk], A_log [1, 1, h, 1]; β: b_proj h × d; output gate g_a dk × d, g_b h·dk × dk; o_norm [dk];
    o_proj d × h·dk. ``full_rank_gates`` (Ling 3): forget gate f_proj h·dk × d, A_log [h]; output
    gate g_proj h·dk × d. State: h heads × dk × dk (float32); conv: 3·h·dk × kernel."""
    c, hd = "kda", heads * head_dim
    f = f"{p}.forget_gate"
    if full_rank_gates:
        gates = [
            Tensor(f"{f}.A_log", (heads,), f"{c}/forget_gate"),
            *linear(f"{f}.f_proj", f"{c}/forget_gate", hd, d, bias=False),
            *linear(f"{p}.g_proj", f"{c}/output_gate", hd, d, bias=False),
        ]
    else:
        gates = [
            Tensor(f"{f}.A_log", (1, 1, heads, 1), f"{c}/forget_gate"),
            *linear(f"{f}.f_a_proj", f"{c}/forget_gate", head_dim, d, bias=False),
            *linear(f"{f}.f_b_proj", f"{c}/forget_gate", hd, head_dim, bias=False),
            *linear(f"{p}.g_a_proj", f"{c}/output_gate", head_dim, d, bias=False),
            *linear(f"{p}.g_b_proj", f"{c}/output_gate", hd, head_dim, bias=False),
        ]
    tensors = [
        *linear(f"{p}.q_proj", f"{c}/q_proj", hd, d, bias=False),
        *linear(f"{p}.k_proj", f"{c}/k_proj", hd, d, bias=False),
        *linear(f"{p}.v_proj", f"{c}/v_proj", hd, d, bias=False),
        *depthwise_conv(f"{p}.conv1d", f"{c}/conv1d", 3 * hd, kernel, bias=False),
        Tensor(f"{f}.dt_bias", (hd,), f"{c}/forget_gate"),
        *gates,
        *linear(f"{p}.b_proj", f"{c}/b_proj", heads, d, bias=False),
        *norm(f"{p}.o_norm", f"{c}/o_norm", head_dim, bias=False),
        *linear(f"{p}.o_proj", f"{c}/o_proj", d, hd, bias=False),
    ]
    mixer = Mixer(KDA, conv_dim=3 * hd, conv_kernel=kernel, heads=heads, head_dim=head_dim,
                  state_size=head_dim, chunk=64)
    return tensors, mixer


def describe(c: KimiLinearConfig) -> Architecture:
    d, v, E, k = c.hidden_size, c.vocab_size, c.num_local_experts, c.num_experts_per_tok
    h, L = c.num_attention_heads, c.num_hidden_layers
    p = "model.layers.{i}"
    plan = cross_plans(mixer_plan(c), mlp_plan(c))
    if any(kinds[1] == SPARSE for kinds in plan):
        check_top_k(k, E, k_field=c.top_k_field, e_field="num_experts")
    norms = [*norm(f"{p}.input_layernorm", "attn/norm", d, bias=False),
             *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=False)]
    ffn = {
        DENSE: swiglu(f"{p}.mlp", "mlp", d, c.intermediate_size),
        # router E × d;  routed experts [E, 2·ff, d], [E, d, ff];  shared: one SwiGLU of s·ff
        SPARSE: [*router(f"{p}.mlp.gate", d, E),
                 *routed_experts(f"{p}.mlp.experts", d, c.moe_intermediate_size, E),
                 *swiglu(f"{p}.mlp.shared_experts", "moe/shared_experts", d,
                         c.moe_intermediate_size * c.n_shared_experts)],
    }
    kda_tensors, mixer = kda(f"{p}.self_attn", d, heads=c.kda_heads, head_dim=c.kda_head_dim,
                             kernel=c.kda_kernel, full_rank_gates=c.full_rank_gates)
    qk = c.qk_nope_head_dim + c.qk_rope_head_dim
    # MLA caches the kv latent and the shared rotary key: kv_lora_rank + qk_rope_head_dim per token
    attention = Attention(h, h, qk, c.v_head_dim, kv_latent_dim=c.kv_lora_rank + c.qk_rope_head_dim)
    mla_tensors = mla(f"{p}.self_attn", c)  # type: ignore[arg-type]  # DeepseekConfig's MLA fields
    if c.gated_mla:  # Ling 3: o = o_proj(attn · sigmoid(g_proj(x))), one gate per head
        mla_tensors += linear(f"{p}.self_attn.g_proj", "attn/g_proj", h, d, bias=False)
    groups = []
    for kinds, layers in plan.items():
        mixer_kind, ffn_kind = kinds
        if mixer_kind == MLA_LAYER:
            groups.append(LayerGroup(crossed_name(kinds, plan), layers,
                                     (*mla_tensors, *ffn[ffn_kind], *norms), attention))
        else:
            groups.append(LayerGroup(crossed_name(kinds, plan), layers,
                                     (*kda_tensors, *ffn[ffn_kind], *norms), None, mixer))
    has_moe = any(kinds[1] == SPARSE for kinds in plan)
    # Ling 3's MTP layer (see the module docstring); 0 for Kimi Linear
    n_mtp = c.mtp_layers
    mtp = mtp_params([*mla_tensors, *ffn[SPARSE], *norms], d=d, vocab=v, modules=n_mtp,
                     own_vocab=False)
    return Architecture(
        shape=Shape(L, d, h, h, qk, c.intermediate_size, v, False, c.max_position_embeddings),
        tensors=llama_outer_tensors(v, d, tied=False),  # never tied: see the module docstring
        layer_groups=tuple(groups),
        moe=MoE(E, k, shared_experts=c.n_shared_experts) if has_moe else None,
        notes=(mtp_note(n_mtp, mtp, basis="the tensors Megatron-Bridge's Ling 3 weight map lists "
                        "(not checked against a checkpoint index)"),) if n_mtp else (),
        unbuilt=(("mtp_params", mtp),) if n_mtp else (),
    )
