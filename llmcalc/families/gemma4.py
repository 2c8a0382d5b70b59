"""Gemma 4 text decoders (``gemma4_text``, ``gemma4_unified_text``; Google 2026, "Gemma 4"):
Gemma 3's sandwich-normed layers with per-layer head dims, KV-shared layers, per-layer embeddings
and an optional MoE block beside the dense MLP.

Tensor names and shapes as in transformers ``Gemma4ForCausalLM`` / ``Gemma4UnifiedForCausalLM``
(``models/gemma4/modeling_gemma4.py``, ``models/gemma4_unified/modeling_gemma4_unified.py``):
- attention: q_proj [h·hd, d], o_proj [d, h·hd], q_norm and k_norm [hd] (the v norm has no weight);
  the full-attention layers take ``global_head_dim`` as hd and, with ``attention_k_eq_v``,
  ``num_global_key_value_heads`` kv heads and no v_proj (keys are reused as values); explicit
  ``per_layer_config`` entries ({layer: {head_dim, num_key_value_heads}}) replace that rule;
- KV sharing: the last ``num_kv_shared_layers`` layers attend with the keys and values of the last
  earlier layer of their type; they hold no k_proj, v_proj or k_norm and cache nothing, and with
  ``use_double_wide_mlp`` their MLP is twice as wide (gate, up: 2·ff × d; down: d × 2·ff);
- per-layer embeddings (``gemma4_text`` with ``hidden_size_per_layer_input`` p > 0): as Gemma 3n's
  (see gemma3n.py);
- MoE block (``enable_moe_block``, ``gemma4_text``): beside the dense MLP, a router (proj [E, d],
  scale [d], per_expert_scale [E]), E experts (gate_up_proj [E, 2·f, d], down_proj [E, d, f]) and
  three more norms [d]; top_k_experts of them run per token.
The last layer is always full attention (transformers forces it).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any
from typing import ClassVar
from typing import Literal

from llmcalc.families._base import FULL
from llmcalc.families._base import SLIDING
from llmcalc.families._base import Architecture
from llmcalc.families._base import Count
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import LayerPlan
from llmcalc.families._base import Size
from llmcalc.families._base import check_top_k
from llmcalc.families._base import layer_kinds
from llmcalc.families._base import linear
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import override_plan
from llmcalc.families._base import require
from llmcalc.families._base import resolve_kv_heads
from llmcalc.families._base import routed_experts
from llmcalc.families._base import split_plan
from llmcalc.families._base import swiglu
from llmcalc.families._moe import cross_plans
from llmcalc.families._moe import crossed_name
from llmcalc.families.gemma3n import OWN
from llmcalc.families.gemma3n import SHARED
from llmcalc.families.gemma3n import per_layer_input_layer
from llmcalc.families.gemma3n import per_layer_input_outer
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import MoE
from llmcalc.model.spec import Part
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

PER_LAYER_KEYS = ("head_dim", "num_key_value_heads")  # the per_layer_config overrides read


class Gemma4UnifiedTextConfig(DecoderConfig):
    """``gemma4_unified_text``: no per-layer embeddings, no MoE block."""

    transformers_class = "Gemma4UnifiedTextConfig"

    tie_word_embeddings: bool
    attention_bias: bool
    sliding_window: Size
    layer_types: list[str] | None = None
    use_bidirectional_attention: Literal["all", "vision"] | None
    attention_k_eq_v: bool
    num_kv_shared_layers: Count
    use_double_wide_mlp: bool
    global_head_dim: Size = 512
    num_global_key_value_heads: Size | None = None
    per_layer_config: dict[str, dict[str, Size]] | None = None

    @property
    def window(self) -> int:
        """The sliding window; bidirectional "all" halves it (transformers: w // 2 + 1)."""
        w = self.sliding_window
        return w // 2 + 1 if self.use_bidirectional_attention == "all" else w

    @property
    def ple(self) -> tuple[int, int] | None:
        """(p, V_p) of the per-layer embeddings, or None."""
        return None

    @property
    def moe(self) -> tuple[int, int, int] | None:
        return None


class Gemma4TextConfig(Gemma4UnifiedTextConfig):
    """``gemma4_text``: adds per-layer embeddings and the optional MoE block."""

    transformers_class = "Gemma4TextConfig"

    use_bidirectional_attention: Literal["all", "vision"] | None = None
    vocab_size_per_layer_input: Count  # 0 in an assistant (Gemma4AssistantConfig)
    hidden_size_per_layer_input: Count
    enable_moe_block: bool
    num_experts: Size | None = None
    top_k_experts: Size | None = None
    moe_intermediate_size: Size | None = None

    @property
    def ple(self) -> tuple[int, int] | None:
        p = self.hidden_size_per_layer_input
        return (p, self.vocab_size_per_layer_input) if p else None

    @property
    def moe(self) -> tuple[int, int, int] | None:
        """(experts, top-k, expert width) when the MoE block is on."""
        if not self.enable_moe_block:
            return None
        for name in ("num_experts", "top_k_experts", "moe_intermediate_size"):
            require(getattr(self, name) is not None, name, "must be set when enable_moe_block is true")
        E, k, f = self.num_experts, self.top_k_experts, self.moe_intermediate_size
        assert E is not None and k is not None and f is not None
        check_top_k(k, E, k_field="top_k_experts", e_field="num_experts")
        return E, k, f


def attention_plan(c: Gemma4UnifiedTextConfig) -> tuple[LayerPlan, dict[str, tuple[str, int, int]]]:
    """Each layer's attention kind, and per kind: its layer type, head dim and kv heads."""
    L, h = c.num_hidden_layers, c.num_attention_heads
    hd, kv = c.resolved_head_dim, c.resolved_kv_heads
    types = c.layer_types
    if types is not None:
        require(
            len(types) == L, "layer_types", f"has {len(types)} entries, num_hidden_layers is {L}"
        )
        types = [*types[:-1], FULL]  # transformers forces the last layer to full attention
    plan = layer_kinds(types, L, pattern=6)
    if types is None and L - 1 not in plan.get(FULL, ()):
        plan = override_plan(plan, [L - 1], FULL)
    if c.per_layer_config is None:
        gkv = c.num_global_key_value_heads if c.attention_k_eq_v else None
        full_kv = (
            kv
            if gkv is None
            else resolve_kv_heads(h, gkv, kv_field="num_global_key_value_heads")
        )
        return plan, {SLIDING: (SLIDING, hd, kv), FULL: (FULL, c.global_head_dim, full_kv)}
    geometry = {SLIDING: (SLIDING, hd, kv), FULL: (FULL, hd, kv)}
    moved: dict[str, list[int]] = {}
    for key, overrides in c.per_layer_config.items():
        field = f"per_layer_config.{key}"
        require(key.isdigit() and int(key) < L, field, f"is not a layer index below {L}")
        for name in overrides:
            require(name in PER_LAYER_KEYS, f"{field}.{name}", "is not supported (only head_dim, "
                    "num_key_value_heads)")
        i = int(key)
        kind = next(k for k, layers in plan.items() if i in layers)
        lhd = overrides.get("head_dim", hd)
        lkv = overrides.get("num_key_value_heads", kv)
        # KV heads that do not divide the heads are counted as given (resolve_kv_heads)
        name = kind if (lhd, lkv) == (hd, kv) else f"{kind} (head_dim {lhd}, {lkv} kv heads)"
        geometry[name] = (kind, lhd, lkv)
        moved.setdefault(name, []).append(i)
    for name, indices in moved.items():
        kind = geometry[name][0]
        if name != kind and kind in plan and len(set(indices)) == len(plan[kind]):
            # every layer of its kind (a saved config spells global_head_dim out per layer): the
            # kind keeps its name, with this geometry
            geometry[kind] = geometry[name]
        elif name not in plan:
            plan = override_plan(plan, indices, name)
    return plan, geometry


def sharing_plan(c: Gemma4UnifiedTextConfig, plan: LayerPlan) -> LayerPlan:
    """Layers that cache their own keys and values, then those that reuse an earlier layer's."""
    L, s = c.num_hidden_layers, c.num_kv_shared_layers
    require(s <= L, "num_kv_shared_layers", f"({s}) must not exceed num_hidden_layers ({L})")
    first = L - s
    if 0 < s < L:
        missing = [k for k, layers in plan.items() if next(iter(layers)) >= first]
        require(
            not missing,
            "num_kv_shared_layers",
            f"({s}) leaves no earlier layer of type {', '.join(missing)} to share keys and values "
            "from (transformers refuses this)",
        )
    return split_plan(L, at=first, before=OWN, after=SHARED)


def describe(c: Gemma4UnifiedTextConfig) -> Architecture:
    d, v, L, h, ff = (
        c.hidden_size,
        c.vocab_size,
        c.num_hidden_layers,
        c.num_attention_heads,
        c.intermediate_size,
    )
    b, pl, moe = c.attention_bias, c.ple, c.moe
    p, a = "model.layers.{i}", "model.layers.{i}.self_attn"
    attn, geometry = attention_plan(c)
    plan = cross_plans(attn, sharing_plan(c, attn))

    def layer(kind: str, shared: bool) -> tuple[list[Tensor], Attention]:
        layer_type, hd, kv = geometry[kind]
        tensors = [
            *linear(f"{a}.q_proj", "attn/q_proj", h * hd, d, bias=b),
            *norm(f"{a}.q_norm", "attn/q_norm", hd, bias=False),
            *linear(f"{a}.o_proj", "attn/o_proj", d, h * hd, bias=b),
        ]
        if not shared:
            tensors += linear(f"{a}.k_proj", "attn/k_proj", kv * hd, d, bias=b)
            if not (c.attention_k_eq_v and layer_type == FULL):  # k = v: no v_proj
                tensors += linear(f"{a}.v_proj", "attn/v_proj", kv * hd, d, bias=b)
            tensors += norm(f"{a}.k_norm", "attn/k_norm", hd, bias=False)
        wide = 2 if c.use_double_wide_mlp and shared else 1
        tensors += swiglu(f"{p}.mlp", "mlp", d, wide * ff)  # GeGLU: SwiGLU's shapes
        for x in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                  "post_feedforward_layernorm"):
            tensors += norm(f"{p}.{x}", f"norm/{x}", d, bias=False)
        if pl is not None:
            tensors += per_layer_input_layer(p, d, pl[0])
        if moe is not None:
            E, _, f = moe
            tensors += [
                *linear(f"{p}.router.proj", "moe/router", E, d, bias=False),
                Tensor(f"{p}.router.scale", (d,), "moe/router"),
                Tensor(f"{p}.router.per_expert_scale", (E,), "moe/router"),
                *routed_experts(f"{p}.experts", d, f, E),
            ]
            for x in ("post_feedforward_layernorm_1", "post_feedforward_layernorm_2",
                      "pre_feedforward_layernorm_2"):
                tensors += norm(f"{p}.{x}", f"moe/{x}", d, bias=False)
        window = c.window if layer_type == SLIDING else None
        return tensors, Attention(h, kv, hd, hd, window=window, kv_shared=shared)

    groups = []
    for kinds, layers in plan.items():
        tensors, attention = layer(kinds[0], kinds[1] == SHARED)
        groups.append(LayerGroup(crossed_name(kinds, plan), layers, tuple(tensors), attention))
    outer = (
        *llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
        *(per_layer_input_outer(L, d, pl[0], vocab=pl[1]) if pl is not None else []),
    )
    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=outer,
        layer_groups=tuple(groups),
        moe=MoE(num_experts=moe[0], experts_per_tok=moe[1]) if moe is not None else None,
    )


# ---- the whole model (gemma4): vision tower + audio tower + embedders + the text model above -----
#
# transformers Gemma4ForConditionalGeneration (gemma4/modeling_gemma4.py): model.vision_tower
# (Gemma4VisionModel), model.audio_tower (Gemma4AudioModel), model.embed_vision / model.embed_audio
# (Gemma4MultimodalEmbedder), model.language_model (Gemma4TextModel: the family above), the head
# tied to the text embedding as the top-level tie_word_embeddings says (default true). A tower and
# its embedder exist only when its sub-config is given: Gemma4Config() alone builds neither.
# The towers' linears are Gemma4ClippableLinear: an nn.Linear without bias under ``.linear`` (with
# use_clipped_linears, four scalar buffers beside it, which are not parameters).


class Gemma4VisionConfig(FamilyConfig):
    """Gemma4VisionConfig (defaults: family_defaults.json, google/gemma-4-E2B's sizes)."""

    transformers_class = "Gemma4VisionConfig"

    hidden_size: Size
    intermediate_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    num_key_value_heads: Size
    head_dim: Size
    pooling_kernel_size: Size
    patch_size: Size
    position_embedding_size: Size


class Gemma4AudioConfig(FamilyConfig):
    """Gemma4AudioConfig (defaults: family_defaults.json, google/gemma-4-E2B's sizes)."""

    transformers_class = "Gemma4AudioConfig"

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    subsampling_conv_channels: list[Size]
    conv_kernel_size: Size
    output_proj_dims: Size


class Gemma4Config(FamilyConfig):
    """Gemma4Config: three sub-configs (text absent: its class defaults; vision or audio absent or
    null: no such tower) and the soft-token budget of one image (the processor's max_soft_tokens,
    280 by default; config.json states it as vision_soft_tokens_per_image)."""

    transformers_class = "Gemma4Config"

    text_config: dict[str, Any] | None = None
    vision_config: dict[str, Any] | None = None
    audio_config: dict[str, Any] | None = None
    vision_soft_tokens_per_image: Size = 280
    tie_word_embeddings: bool
    image_size: Size | None = None  # llmcalc's own (--image-size): the processor resizes anyway


def vision_tower(prefix: str, v: Gemma4VisionConfig, *, budget: int) -> Part:
    """Gemma4VisionModel under ``prefix``: patch_embedder.input_proj [d, 3·p²] (patches unfolded
    by the processor) and position_embedding_table [2, P, d] (x and y tables, looked up, no
    matmul); per layer q_proj [h·hd, d], k_proj, v_proj [kv·hd, d], o_proj [d, h·hd] (each
    ``….linear.weight``), q_norm and k_norm [hd] (the v norm has no weight), four RMSNorms [d]
    (input, post-attention, pre- and post-feedforward) and a gated MLP gate, up [ff, d], down
    [d, ff]; no final norm (the pooler and the standardize buffers hold no parameters).

    One image (image_processing_gemma4.py): resized, aspect kept, to at most N = budget · k²
    patches (k = pooling_kernel_size) and padded to exactly N; every matmul and the bidirectional
    attention run over all N (padding masked, not skipped). The pooler averages each k × k block by
    a one-hot matmul [budget, N] @ [N, d] (2·budget·N·d FLOPs; none when k = 1). A square image
    becomes ⌊√budget⌋·k patches a side (768 px at 280), so ⌊√budget⌋² soft tokens reach the
    language model (256 at 280; the padded slots are dropped)."""
    d, ff, h, kv, hd = (v.hidden_size, v.intermediate_size, v.num_attention_heads,
                        v.num_key_value_heads, v.head_dim)
    require(h % kv == 0, "vision_config.num_key_value_heads",
            f"vision_config.num_key_value_heads ({kv}) must divide num_attention_heads ({h})")
    k, p = v.pooling_kernel_size, v.patch_size
    n = budget * k * k
    e = f"{prefix}.patch_embedder"
    outer = [
        Tensor(f"{e}.input_proj.weight", (d, 3 * p * p), "embed/patch", matmul=True),
        Tensor(f"{e}.position_embedding_table", (2, v.position_embedding_size, d), "embed/positions"),
    ]
    lp = f"{prefix}.encoder.layers.{{i}}"
    a, m = f"{lp}.self_attn", f"{lp}.mlp"
    layer = [
        *linear(f"{a}.q_proj.linear", "attn/q_proj", h * hd, d, bias=False),
        *linear(f"{a}.k_proj.linear", "attn/k_proj", kv * hd, d, bias=False),
        *linear(f"{a}.v_proj.linear", "attn/v_proj", kv * hd, d, bias=False),
        *linear(f"{a}.o_proj.linear", "attn/o_proj", d, h * hd, bias=False),
        *norm(f"{a}.q_norm", "attn/q_norm", hd, bias=False),
        *norm(f"{a}.k_norm", "attn/k_norm", hd, bias=False),
        *linear(f"{m}.gate_proj.linear", "mlp/gate_proj", ff, d, bias=False),
        *linear(f"{m}.up_proj.linear", "mlp/up_proj", ff, d, bias=False),
        *linear(f"{m}.down_proj.linear", "mlp/down_proj", d, ff, bias=False),
    ]
    for x in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
              "post_feedforward_layernorm"):
        layer += norm(f"{lp}.{x}", f"norm/{x}", d, bias=False)
    L = v.num_hidden_layers
    group = LayerGroup("vision", LayerSet.span(0, L), tuple(layer), Attention(h, kv, hd, hd))
    side = math.isqrt(budget)
    return Part(
        name="vision", tensors=tuple(outer), layer_groups=(group,),
        shape=Shape(L, d, h, kv, hd, ff, 0, False, v.position_embedding_size),
        input_tokens=(("", n),), context_tokens=side * side, input_size=side * k * p,
        extra_flops=2 * budget * n * d if k > 1 else 0,
    )


def audio_tower(prefix: str, a: Gemma4AudioConfig) -> Part:
    """Gemma4AudioModel under ``prefix`` (USM, Zhang et al. 2023; Gemma 3n's encoder in other
    module names, see gemma3n.py): a stem of two Conv2d 3 × 3 stride 2 without bias, [c₀, 1, 3, 3]
    and [c₁, c₀, 3, 3], each with a LayerNorm [c] without bias, and input_proj_linear
    [d, (c₀ // 4)·c₁] (transformers sizes it so); per conformer layer two half-step feed-forwards
    (ffw_layer_1 [4d, d], ffw_layer_2 [d, 4d], pre and post norms [d]), chunked local attention
    (q, k, v, post [d, d] as h·hd with hd = d // h, relative_k_proj [h·hd, d] over the sinusoidal
    relative positions, per_dim_scale [hd]), a light conv (linear_start [2d, d] gated,
    depthwise_conv1d [d, 1, K], linear_end [d, d], two norms [d]) and three norms [d]
    (norm_pre_attn, norm_post_attn, norm_out); then output_proj [o, d] + bias [o]."""
    d, h = a.hidden_size, a.num_attention_heads
    require(d % h == 0, "audio_config.num_attention_heads",
            f"audio_config.num_attention_heads ({h}) must divide hidden_size ({d})")
    chans = a.subsampling_conv_channels
    require(len(chans) == 2, "audio_config.subsampling_conv_channels",
            "audio_config.subsampling_conv_channels must name two channel sizes")
    hd, (c0, c1) = d // h, chans
    s = f"{prefix}.subsample_conv_projection"
    outer = [
        Tensor(f"{s}.layer0.conv.weight", (c0, 1, 3, 3), "subsample/conv", matmul=True),
        *norm(f"{s}.layer0.norm", "subsample/norm", c0, bias=False),
        Tensor(f"{s}.layer1.conv.weight", (c1, c0, 3, 3), "subsample/conv", matmul=True),
        *norm(f"{s}.layer1.norm", "subsample/norm", c1, bias=False),
        *linear(f"{s}.input_proj_linear", "subsample/input_proj", d, (c0 // 4) * c1, bias=False),
    ]
    p = f"{prefix}.layers.{{i}}"
    layer: list[Tensor] = []
    for ffw in ("feed_forward1", "feed_forward2"):
        layer += [*linear(f"{p}.{ffw}.ffw_layer_1.linear", "ffw/ffw_layer_1", 4 * d, d, bias=False),
                  *linear(f"{p}.{ffw}.ffw_layer_2.linear", "ffw/ffw_layer_2", d, 4 * d, bias=False),
                  *norm(f"{p}.{ffw}.pre_layer_norm", "ffw/norm", d, bias=False),
                  *norm(f"{p}.{ffw}.post_layer_norm", "ffw/norm", d, bias=False)]
    at = f"{p}.self_attn"
    layer += [*(t for x in ("q_proj", "k_proj", "v_proj")
                for t in linear(f"{at}.{x}.linear", f"attn/{x}", h * hd, d, bias=False)),
              *linear(f"{at}.post.linear", "attn/post", d, d, bias=False),
              *linear(f"{at}.relative_k_proj", "attn/relative_k_proj", h * hd, d, bias=False),
              Tensor(f"{at}.per_dim_scale", (hd,), "attn/per_dim_scale")]
    lc = f"{p}.lconv1d"
    layer += [*linear(f"{lc}.linear_start.linear", "lconv/linear_start", 2 * d, d, bias=False),
              *linear(f"{lc}.linear_end.linear", "lconv/linear_end", d, d, bias=False),
              Tensor(f"{lc}.depthwise_conv1d.weight", (d, 1, a.conv_kernel_size),
                     "lconv/depthwise_conv1d"),
              *norm(f"{lc}.pre_layer_norm", "lconv/norm", d, bias=False),
              *norm(f"{lc}.conv_norm", "lconv/norm", d, bias=False)]
    for x in ("norm_pre_attn", "norm_post_attn", "norm_out"):
        layer += norm(f"{p}.{x}", "norm", d, bias=False)
    outer += linear(f"{prefix}.output_proj", "output_proj", a.output_proj_dims, d, bias=True)
    L = a.num_hidden_layers
    group = LayerGroup("conformer", LayerSet.span(0, L), tuple(layer), Attention(h, h, hd, hd))
    return Part(name="audio", tensors=tuple(outer), layer_groups=(group,),
                shape=Shape(L, d, h, h, hd, 4 * d, 0, False), input="audio")


def embedder(prefix: str, component: str, d_in: int, d_t: int) -> list[Tensor]:
    """Gemma4MultimodalEmbedder: an RMSNorm without weight, then embedding_projection [d_t, d_in]."""
    return linear(f"{prefix}.embedding_projection", component, d_t, d_in, bias=False)


def _language_model(c: Gemma4Config, text_type: str) -> Architecture:
    """The language model of a whole Gemma 4 (its text_config on ``text_type``'s defaults)."""
    from llmcalc.families._vision import prefixer
    from llmcalc.families._vision import sub_fields
    from llmcalc.families._vision import text_model
    from llmcalc.inputs import family_defaults

    text = sub_fields(c.text_config, "text_config", text_type,
                      family_defaults.sub_defaults(text_type) or {})
    return text_model(text, rename=prefixer("model.", "model.language_model."),
                      tied=c.tie_word_embeddings)


def describe_gemma4(c: Gemma4Config) -> Architecture:
    from llmcalc.families._vision import read_sub
    from llmcalc.families._vision import sub_fields

    lm = _language_model(c, "gemma4_text")
    d_t = lm.shape.hidden_size
    parts: list[Part] = []
    notes: tuple[str, ...] = ()
    if c.vision_config is not None:
        fields = sub_fields(c.vision_config, "vision_config", "gemma4_vision", {})
        v = read_sub(Gemma4VisionConfig, fields, "vision_config")
        tower = vision_tower("model.vision_tower", v, budget=c.vision_soft_tokens_per_image)
        # the soft tokens that reach the language model go through the norm and the projection
        parts += [tower, Part(name="projector",
                              tensors=tuple(embedder("model.embed_vision", "embed_vision",
                                                     v.hidden_size, d_t)),
                              shape=Shape(0, d_t, 0, 0, 0, v.hidden_size, 0, False),
                              input_tokens=(("", tower.context_tokens),))]
        side = tower.input_size
        if c.image_size is not None and c.image_size != side:
            notes += (f"image_size {c.image_size}: the processor resizes every square image to "
                      f"{side}×{side} pixels and pads its patches to "
                      f"{tower.tokens_for('layers'):,}; the per-image figures are the same",)
    if c.audio_config is not None:
        fields = sub_fields(c.audio_config, "audio_config", "gemma4_audio", {})
        a = read_sub(Gemma4AudioConfig, fields, "audio_config")
        audio = audio_tower("model.audio_tower", a)
        parts.append(replace(audio, tensors=(*audio.tensors, *embedder(
            "model.embed_audio", "embed_audio", a.output_proj_dims, d_t))))
        notes += ("audio tower: parameters and weights only; its FLOPs per clip are not computed",)
    return replace(lm, notes=(*lm.notes, *notes), parts=tuple(parts))


# ---- the encoder-free whole model (gemma4_unified) -----------------------------------------------
#
# transformers Gemma4UnifiedForConditionalGeneration (gemma4_unified/modeling_gemma4_unified.py): no
# vision or audio tower. model.embed_vision (Gemma4UnifiedVisionEmbedder) projects raw merged pixel
# patches, model.embed_audio (Gemma4UnifiedMultimodalEmbedder) raw waveform frames; the language
# model is gemma4_unified_text (the family above). Each embedder exists only when its sub-config is
# given (Gemma4UnifiedConfig() alone builds neither).

AUDIO_RATE = 16_000  # Hz: the feature extractor's sampling rate; one soft token per frame


class Gemma4UnifiedVisionConfig(FamilyConfig):
    """Gemma4UnifiedVisionConfig (defaults: family_defaults.json, google/gemma-4-12B's sizes)."""

    transformers_class = "Gemma4UnifiedVisionConfig"

    patch_size: Size
    pooling_kernel_size: Size
    mm_embed_dim: Size
    mm_posemb_size: Size
    output_proj_dims: Size


class Gemma4UnifiedAudioConfig(FamilyConfig):
    """Gemma4UnifiedAudioConfig: one soft token is a raw frame of audio_embed_dim samples (640 at
    16 kHz: 40 ms)."""

    transformers_class = "Gemma4UnifiedAudioConfig"

    audio_embed_dim: Size


class Gemma4UnifiedConfig(Gemma4Config):
    """Gemma4UnifiedConfig: Gemma4Config's fields, encoder-free sub-configs."""

    transformers_class = "Gemma4UnifiedConfig"


def unified_vision(prefix: str, v: Gemma4UnifiedVisionConfig, *, d_t: int,
                   budget: int) -> tuple[Part, Part]:
    """Gemma4UnifiedVisionEmbedder under ``prefix``, as the vision part and the projector: patch_ln1
    LayerNorm [P] with P = (k·p)²·3 (k × k patches of p² pixels merged by the processor),
    patch_dense [m, P] + bias [m], patch_ln2 [m], pos_embedding [S, 2, m] (x and y rows, looked up,
    no matmul), pos_norm [m] (LayerNorms with bias); then multimodal_embedder (an RMSNorm without
    weight, embedding_projection [d_t, o] with o = output_proj_dims).

    One image (image_processing_gemma4_unified.py): resized, aspect kept, to at most budget · k²
    patches of p pixels, merged k × k and padded to exactly ``budget`` merged patches; both
    matmuls run over all of them (get_image_features drops the padding after the projection). A
    square image becomes ⌊√budget⌋·k·p pixels a side (768 at 280), ⌊√budget⌋² soft tokens."""
    k, p, m = v.pooling_kernel_size, v.patch_size, v.mm_embed_dim
    P = (k * p) ** 2 * 3
    tensors = [
        *norm(f"{prefix}.patch_ln1", "patch_ln1", P, bias=True),
        *linear(f"{prefix}.patch_dense", "patch_dense", m, P, bias=True),
        *norm(f"{prefix}.patch_ln2", "patch_ln2", m, bias=True),
        Tensor(f"{prefix}.pos_embedding", (v.mm_posemb_size, 2, m), "pos_embedding"),
        *norm(f"{prefix}.pos_norm", "pos_norm", m, bias=True),
    ]
    side = math.isqrt(budget)
    vision = Part(name="vision", tensors=tuple(tensors),
                  shape=Shape(0, m, 0, 0, 0, 0, 0, False, v.mm_posemb_size),
                  input_tokens=(("", budget),), context_tokens=side * side, input_size=side * k * p)
    o = v.output_proj_dims
    proj = embedder(f"{prefix}.multimodal_embedder", "embedding_projection", o, d_t)
    return vision, Part(name="projector", tensors=tuple(proj),
                        shape=Shape(0, d_t, 0, 0, 0, o, 0, False), input_tokens=(("", budget),))


def describe_gemma4_unified(c: Gemma4UnifiedConfig) -> Architecture:
    from llmcalc.families._vision import read_sub
    from llmcalc.families._vision import sub_fields

    lm = _language_model(c, "gemma4_unified_text")
    d_t = lm.shape.hidden_size
    parts: list[Part] = []
    notes: tuple[str, ...] = ()
    if c.vision_config is not None:
        fields = sub_fields(c.vision_config, "vision_config", "gemma4_unified_vision", {})
        v = read_sub(Gemma4UnifiedVisionConfig, fields, "vision_config")
        vision, proj = unified_vision("model.embed_vision", v, d_t=d_t,
                                      budget=c.vision_soft_tokens_per_image)
        parts += [vision, proj]
        side = vision.input_size
        if c.image_size is not None and c.image_size != side:
            notes += (f"image_size {c.image_size}: the processor resizes every square image to "
                      f"{side}×{side} pixels and pads it to {c.vision_soft_tokens_per_image:,} "
                      "merged patches; the per-image figures are the same",)
    if c.audio_config is not None:
        fields = sub_fields(c.audio_config, "audio_config", "gemma4_unified_audio", {})
        a = read_sub(Gemma4UnifiedAudioConfig, fields, "audio_config")
        s = a.audio_embed_dim
        n = -(-AUDIO_RATE // s)  # soft tokens of one second: ⌈duration / (s samples)⌉
        audio = Part(name="audio", tensors=tuple(embedder("model.embed_audio", "embed_audio", s, d_t)),
                     shape=Shape(0, d_t, 0, 0, 0, s, 0, False), input_tokens=(("", n),),
                     context_tokens=n, input="audio")
        parts.append(audio)
        notes += (f"audio (not in the per-image figures): one second of audio, {AUDIO_RATE:,} "
                  f"samples in frames of {s}, is {n} tokens in the context; its projection costs "
                  f"{2 * n * s * d_t:,} FLOPs",)
    return replace(lm, notes=(*lm.notes, *notes), parts=tuple(parts))


# ---- the assistants (gemma4_assistant, gemma4_unified_assistant): a drafter on the backbone's KV --
#
# transformers Gemma4AssistantForCausalLM / Gemma4UnifiedAssistantForCausalLM
# (gemma4_assistant/modeling_gemma4_assistant.py, and its unified copy): the text model of the
# text_config's type under ``model.`` with every layer reading the backbone's keys and values
# (__post_init__ sets num_kv_shared_layers to the depth when the config leaves it 0), so no layer
# holds k_proj, v_proj or k_norm; pre_projection [d, 2·B] from the backbone's embedding and hidden
# state (B = backbone_hidden_size), post_projection [B, d] back, lm_head [V, d] tied to the
# embedding as the top-level tie_word_embeddings says, and with use_ordered_embeddings the masked
# embedder's centroids [C, d] (its token ordering is a buffer).


class Gemma4UnifiedAssistantConfig(FamilyConfig):
    transformers_class = "Gemma4UnifiedAssistantConfig"
    model_type: ClassVar[str] = "gemma4_unified_assistant"
    text_type: ClassVar[str] = "gemma4_unified_text"

    text_config: dict[str, Any] | None = None
    backbone_hidden_size: Size
    use_ordered_embeddings: bool
    num_centroids: Size
    tie_word_embeddings: bool


class Gemma4AssistantConfig(Gemma4UnifiedAssistantConfig):
    transformers_class = "Gemma4AssistantConfig"
    model_type = "gemma4_assistant"
    text_type = "gemma4_text"


# Gemma4AssistantConfig.validate_architecture: the text fields it holds to one value
ASSISTANT_TEXT = (("hidden_size_per_layer_input", 0), ("enable_moe_block", False),
                  ("use_double_wide_mlp", False), ("vocab_size_per_layer_input", 0))


def describe_gemma4_assistant(c: Gemma4UnifiedAssistantConfig) -> Architecture:
    from llmcalc.families._vision import sub_fields
    from llmcalc.families._vision import text_model
    from llmcalc.inputs import family_defaults

    own = family_defaults.sub_defaults(c.model_type) or {}
    text = sub_fields(c.text_config, "text_config", c.text_type, own.get("text_config", {}))
    if not text.get("num_kv_shared_layers"):
        text["num_kv_shared_layers"] = text.get("num_hidden_layers")
    if c.text_type == "gemma4_text":
        for name, value in ASSISTANT_TEXT:
            require(text.get(name) == value, f"text_config.{name}",
                    f"text_config.{name} must be {str(value).lower()} in a Gemma 4 assistant, got "
                    f"{text.get(name)} (Gemma4AssistantConfig)")
        require(text["num_kv_shared_layers"] == text.get("num_hidden_layers"),
                "text_config.num_kv_shared_layers", "text_config.num_kv_shared_layers must equal "
                "num_hidden_layers in a Gemma 4 assistant (Gemma4AssistantConfig)")
    lm = text_model(text, rename=lambda name: name, tied=c.tie_word_embeddings)
    d, b = lm.shape.hidden_size, c.backbone_hidden_size
    extra = [
        *linear("pre_projection", "projection/pre", d, 2 * b, bias=False),
        *linear("post_projection", "projection/post", b, d, bias=False),
        *(linear("masked_embedding.centroids", "lm_head/centroids", c.num_centroids, d, bias=False)
          if c.use_ordered_embeddings else []),
    ]
    return replace(lm, tensors=(*lm.tensors, *extra), forward_unmodelled=(
        "a Gemma 4 assistant drafts on its backbone's keys and values (shared_kv_states): it has "
        "no forward pass or cache of its own"))
