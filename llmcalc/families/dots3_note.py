"""dots3-note as a whole model (``dots3_note``; rednote 2026): a Qwen-style vision tower whose later
layers route each patch to experts, a Whisper-style audio encoder, and the dots3_note_text language
model (see deepseek.py).

Tensor names and shapes as in transformers ``Dots3NoteForConditionalGeneration``
(``models/dots3_note/modeling_dots3_note.py``):
- model.vision_tower (Dots3NoteVisionModel): patch_embed.proj Conv2d [d, C, p, p] + bias [d] (one
  frame: the processor's patches are reshaped to C × p × p), patch_embed.norm [d]; per block norm1,
  norm2 [d], attn.qkv [3d, d], attn.proj [d, d] (biases with attention_bias), attn.q_norm and k_norm
  [d / h], and an MLP: dense (gate, up [ff, d], down [d, ff], biases with mlp_bias) or, where
  mlp_layer_types says sparse, E routed experts (experts.gate_up_proj [E, 2·f, d], down_proj
  [E, d, f]; gate.weight [E, d]; no shared expert), E and top-k per layer (per_layer_config); a
  final norm [d]; merger (the projector): ln_q LayerNorm [d], mlp.0 [4d, 4d], mlp.2 [d_t, 4d] with
  biases (s = 2: 2 × 2 patches merged);
- model.audio_tower (Dots3NoteAudioModel): conv_stem of three Conv2d 3 × 3 stride 2 with bias
  ([c, 1, 3, 3], then [c, c, 3, 3] twice) and conv_out [d, c·⌈F / 8⌉] without bias; per layer q_proj
  [d, d] + bias, k_proj [d, d], v_proj, o_proj [d, d] + bias (attention_bias), gate_up_proj [2·ff, d]
  and down_proj [d, ff] with biases, two RMSNorms [d]; layer_norm [d]; adapter: LayerNorm [d], fc1
  [d_t, d], fc2 [d_t, d_t] with biases;
- model.language_model and lm_head: dots3_note_text, its fields at the top level of a published
  config (Dots3NoteConfig.__post_init__) or under text_config.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import linear
from llmcalc.families._base import norm
from llmcalc.families._base import plan_from_kinds
from llmcalc.families._base import require
from llmcalc.families._base import routed_experts
from llmcalc.families._base import swiglu
from llmcalc.families._vision import prefixer
from llmcalc.families._vision import read_sub
from llmcalc.families._vision import smart_grid
from llmcalc.families._vision import text_model
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Part
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

# transformers' default expert schedule (Dots3NoteVisionConfig.__post_init__): 25 dense layers, then
# 4, 8, …, 64 and 64 routed experts
PYRAMID = [-1] * 25 + list(range(4, 65, 4)) + [64]
PER_LAYER_KEYS = ("num_local_experts", "num_experts_per_tok")
SAMPLING_RATE = 16_000


class Dots3NoteVisionConfig(FamilyConfig):
    """Dots3NoteVisionConfig (defaults: transformers 5.24's). The figures assume a square image of
    image_size pixels (llmcalc's own, --image-size), resized as Qwen2VLImageProcessor does."""

    transformers_class = "Dots3NoteVisionConfig"

    hidden_size: Size = 1536
    intermediate_size: Size = 4224
    num_hidden_layers: Size = 42
    num_attention_heads: Size = 24
    num_channels: Size = 3
    patch_size: Size = 14
    moe_intermediate_size: Size = 2112
    spatial_merge_size: Size = 2
    attention_bias: bool = False
    mlp_bias: bool = False
    mlp_layer_types: list[str] | None = None
    pyramid_num_routed: list[int] | None = None
    num_local_experts: Size = 64
    num_experts_per_tok: Size | None = None
    capacity_factor: Size = 2  # the old name of num_experts_per_tok
    per_layer_config: dict[str, dict[str, Size]] | None = None
    adapter_in_dim: Size = 1536
    adapter_out_dim: Size = 5120
    adapter_merge_size: Size = 2
    image_size: Size = 896


class Dots3NoteAudioConfig(FamilyConfig):
    """Dots3NoteAudioConfig (defaults: transformers 5.24's)."""

    transformers_class = "Dots3NoteAudioConfig"

    hidden_size: Size = 1280
    intermediate_size: Size = 5120
    num_hidden_layers: Size = 32
    num_attention_heads: Size = 20
    feature_size: Size = 128
    hop_length: Size = 160
    downsample_hidden_size: Size = 480
    # derived in __post_init__ (c · ⌈features / 8⌉); a config.json's, set after it, wins
    conv_output_size: Size | None = None
    attention_bias: bool = True
    adapter_input_size: Size = 1280
    adapter_out_dim: Size = 5120


class Dots3NoteConfig(FamilyConfig):
    """Dots3NoteConfig: vision_config and audio_config (absent: their class defaults; transformers
    always builds both towers) and the language model's fields at the top level or in
    text_config."""

    model_config = ConfigDict(**{**FamilyConfig.model_config, "extra": "allow"})

    transformers_class = "Dots3NoteConfig"

    text_config: dict[str, Any] | None = None
    vision_config: dict[str, Any] | None = None
    audio_config: dict[str, Any] | None = None
    tie_word_embeddings: bool
    image_size: Size | None = None  # llmcalc's own (--image-size)

    def text(self) -> dict[str, Any]:
        from llmcalc.inputs import family_defaults

        base = family_defaults.sub_defaults("dots3_note_text") or {}
        given = self.text_config if self.text_config is not None else dict(self.model_extra or {})
        return {**base, **given, "model_type": "dots3_note_text"}


def expert_plan(v: Dots3NoteVisionConfig) -> list[tuple[int, int] | None]:
    """Each tower layer's (experts, top-k), None for a dense layer, as __post_init__ derives them:
    pyramid_num_routed (or, with neither it nor mlp_layer_types, the default schedule), else
    mlp_layer_types; per_layer_config's entries override."""
    L = v.num_hidden_layers
    k = v.num_experts_per_tok or v.capacity_factor
    pyramid = v.pyramid_num_routed
    if pyramid is None and v.mlp_layer_types is None:
        pyramid = PYRAMID
    layers: list[tuple[int, int] | None]
    if pyramid is not None:
        field, n = "vision_config.pyramid_num_routed", len(pyramid)
        layers = [(e, min(k, e)) if e > 0 else None for e in pyramid]
    else:
        assert v.mlp_layer_types is not None
        field, n = "vision_config.mlp_layer_types", len(v.mlp_layer_types)
        for i, kind in enumerate(v.mlp_layer_types):
            require(kind in ("dense", "sparse"), f"{field}.{i}",
                    f"{field}.{i}: unknown type {kind!r} (one of: dense, sparse)")
        layers = [(v.num_local_experts, k) if t == "sparse" else None for t in v.mlp_layer_types]
    require(n == L, field, f"{field} has {n} entries, num_hidden_layers is {L}")
    for key, overrides in (v.per_layer_config or {}).items():
        where = f"vision_config.per_layer_config.{key}"
        require(key.isdigit() and int(key) < L, where, f"{where} is not a layer index below {L}")
        for name in overrides:
            require(name in PER_LAYER_KEYS, f"{where}.{name}",
                    f"{where}.{name} is not supported (only {', '.join(PER_LAYER_KEYS)})")
        entry = layers[int(key)]
        if entry is not None:
            layers[int(key)] = (overrides.get("num_local_experts", entry[0]),
                                overrides.get("num_experts_per_tok", entry[1]))
    for i, entry in enumerate(layers):
        if entry is not None:
            require(entry[1] <= entry[0], "vision_config.num_experts_per_tok",
                    f"vision_config.num_experts_per_tok ({entry[1]}) exceeds layer {i}'s "
                    f"{entry[0]} experts")
    return layers


def vision_tower(prefix: str, v: Dots3NoteVisionConfig, *, d_t: int) -> tuple[Part, Part]:
    """The tower and its merger (the projector) for one square image of image_size pixels.

    FLOPs per image of n patches (grid² after Qwen2-VL's smart_resize): the patch conv 2·n·d·C·p²;
    per layer qkv and proj 2·n·4d², bidirectional attention over the image n²·4d, a dense MLP
    2·n·3·d·ff or a sparse one 2·n·(E·d + k·3·d·f) (the router, k experts a patch); the merger on
    n / s² merged tokens. Each image attends within itself (cu_seqlens)."""
    d, h, ff, f, C, p = (v.hidden_size, v.num_attention_heads, v.intermediate_size,
                         v.moe_intermediate_size, v.num_channels, v.patch_size)
    require(d % h == 0, "vision_config.num_attention_heads",
            f"vision_config.num_attention_heads ({h}) must divide hidden_size ({d})")
    require(v.adapter_in_dim == d, "vision_config.adapter_in_dim",
            f"vision_config.adapter_in_dim ({v.adapter_in_dim}) must equal hidden_size ({d})")
    s = v.spatial_merge_size
    require(v.adapter_merge_size == s, "vision_config.adapter_merge_size",
            f"vision_config.adapter_merge_size ({v.adapter_merge_size}) must equal "
            f"spatial_merge_size ({s})")
    require(v.adapter_out_dim == d_t, "vision_config.adapter_out_dim",
            f"vision_config.adapter_out_dim ({v.adapter_out_dim}) must equal the text hidden_size "
            f"({d_t})")
    hd, b = d // h, v.attention_bias
    outer = [
        Tensor(f"{prefix}.patch_embed.proj.weight", (d, C, p, p), "embed/patch", matmul=True),
        Tensor(f"{prefix}.patch_embed.proj.bias", (d,), "embed/patch"),
        *norm(f"{prefix}.patch_embed.norm", "embed/norm", d, bias=False),
        *norm(f"{prefix}.norm", "final_norm", d, bias=False),
    ]
    lp = f"{prefix}.blocks.{{i}}"
    common = [
        *norm(f"{lp}.norm1", "norm/norm1", d, bias=False),
        *linear(f"{lp}.attn.qkv", "attn/qkv", 3 * d, d, bias=b),
        *linear(f"{lp}.attn.proj", "attn/proj", d, d, bias=b),
        *norm(f"{lp}.attn.q_norm", "attn/q_norm", hd, bias=False),
        *norm(f"{lp}.attn.k_norm", "attn/k_norm", hd, bias=False),
        *norm(f"{lp}.norm2", "norm/norm2", d, bias=False),
    ]
    experts = expert_plan(v)
    names = ["dense" if e is None else f"sparse ({e[0]} experts, top-{e[1]})" for e in experts]
    by_name = dict(zip(names, experts, strict=True))
    side = v.image_size
    grid = smart_grid(side, p, s)
    n, merged = grid * grid, (grid // s) ** 2
    attention = Attention(h, h, hd, hd)
    groups, weight = [], 2 * n * d * C * p * p
    for name, layers in plan_from_kinds(names).items():
        entry = by_name[name]
        if entry is None:
            mlp = swiglu(f"{lp}.mlp", "mlp", d, ff, bias=v.mlp_bias)
            per_token = 3 * d * ff
        else:
            E, k = entry
            mlp = [*routed_experts(f"{lp}.mlp.experts", d, f, E),
                   *linear(f"{lp}.mlp.gate", "moe/router", E, d, bias=False)]
            per_token = E * d + k * 3 * d * f
        groups.append(LayerGroup(name, layers, (*common, *mlp), attention,
                                 experts_per_tok=None if entry is None else entry[1]))
        weight += len(layers) * 2 * n * (4 * d * d + per_token)
    L = v.num_hidden_layers
    tower = Part(
        name="vision", tensors=tuple(outer), layer_groups=tuple(groups),
        shape=Shape(L, d, h, h, hd, ff, 0, False), input_tokens=(("", n),),
        context_tokens=merged, input_size=side,
        input_flops=(weight, L * n * n * 2 * h * (hd + hd)),
    )
    w = d * s * s
    m = f"{prefix}.merger"
    proj = [*norm(f"{m}.ln_q", "ln_q", d, bias=True),
            *linear(f"{m}.mlp.0", "mlp/0", w, w, bias=True),
            *linear(f"{m}.mlp.2", "mlp/2", d_t, w, bias=True)]
    return tower, Part(name="projector", tensors=tuple(proj), shape=Shape(0, d_t, 0, 0, 0, w, 0, False),
                       input_tokens=(("", merged),))


def audio_tower(prefix: str, a: Dots3NoteAudioConfig, *, d_t: int) -> Part:
    """The audio encoder (parameters; its FLOPs per clip are not computed). One soft token per
    8·hop_length samples (the stem's three stride-2 convs)."""
    d, h, ff, c = a.hidden_size, a.num_attention_heads, a.intermediate_size, a.downsample_hidden_size
    require(d % h == 0, "audio_config.num_attention_heads",
            f"audio_config.num_attention_heads ({h}) must divide hidden_size ({d})")
    require(a.adapter_input_size == d, "audio_config.adapter_input_size",
            f"audio_config.adapter_input_size ({a.adapter_input_size}) must equal hidden_size ({d})")
    require(a.adapter_out_dim == d_t, "audio_config.adapter_out_dim",
            f"audio_config.adapter_out_dim ({a.adapter_out_dim}) must equal the text hidden_size "
            f"({d_t})")
    st = f"{prefix}.conv_stem"
    outer: list[Tensor] = []
    for i, c_in in enumerate((1, c, c)):
        outer += [Tensor(f"{st}.convs.{i}.weight", (c, c_in, 3, 3), "conv_stem/conv", matmul=True),
                  Tensor(f"{st}.convs.{i}.bias", (c,), "conv_stem/conv")]
    conv_out = a.conv_output_size or c * ((a.feature_size + 7) // 8)
    outer += linear(f"{st}.conv_out", "conv_stem/conv_out", d, conv_out, bias=False)
    outer += norm(f"{prefix}.layer_norm", "final_norm", d, bias=False)
    ad = f"{prefix}.adapter"
    outer += [*norm(f"{ad}.norm", "adapter/norm", d, bias=True),
              *linear(f"{ad}.fc1", "adapter/fc1", d_t, d, bias=True),
              *linear(f"{ad}.fc2", "adapter/fc2", d_t, d_t, bias=True)]
    lp, b = f"{prefix}.layers.{{i}}", a.attention_bias
    layer = [
        *linear(f"{lp}.self_attn.q_proj", "attn/q_proj", d, d, bias=b),
        *linear(f"{lp}.self_attn.k_proj", "attn/k_proj", d, d, bias=False),
        *linear(f"{lp}.self_attn.v_proj", "attn/v_proj", d, d, bias=b),
        *linear(f"{lp}.self_attn.o_proj", "attn/o_proj", d, d, bias=b),
        *linear(f"{lp}.mlp.gate_up_proj", "mlp/gate_up_proj", 2 * ff, d, bias=True),
        *linear(f"{lp}.mlp.down_proj", "mlp/down_proj", d, ff, bias=True),
        *norm(f"{lp}.input_layernorm", "norm/input_layernorm", d, bias=False),
        *norm(f"{lp}.post_attention_layernorm", "norm/post_attention_layernorm", d, bias=False),
    ]
    L = a.num_hidden_layers
    group = LayerGroup("audio", LayerSet.span(0, L), tuple(layer), Attention(h, h, d // h, d // h))
    return Part(name="audio", tensors=tuple(outer), layer_groups=(group,),
                shape=Shape(L, d, h, h, d // h, ff, 0, False), input="audio")


def describe(c: Dots3NoteConfig) -> Architecture:
    from dataclasses import replace

    lm = text_model(c.text(), rename=prefixer("model.", "model.language_model."),
                    tied=c.tie_word_embeddings)
    d_t = lm.shape.hidden_size
    vision_fields = dict(c.vision_config or {})
    if c.image_size is not None:
        vision_fields["image_size"] = c.image_size
    v = read_sub(Dots3NoteVisionConfig, vision_fields, "vision_config")
    tower, proj = vision_tower("model.vision_tower", v, d_t=d_t)
    a = read_sub(Dots3NoteAudioConfig, c.audio_config or {}, "audio_config")
    audio = audio_tower("model.audio_tower", a, d_t=d_t)
    grid = smart_grid(v.image_size, v.patch_size, v.spatial_merge_size)
    per_token = 8 * a.hop_length
    notes = (
        f"per-image figures for a {v.image_size}×{v.image_size} image, resized to "
        f"{grid * v.patch_size} px (--image-size for another; the tower takes images at their own "
        "size)",
        f"audio tower: parameters and weights only; its FLOPs per clip are not computed (one "
        f"second, {SAMPLING_RATE:,} samples, is {-(-SAMPLING_RATE // per_token)} tokens in the "
        "context)",
    )
    return replace(lm, notes=(*lm.notes, *notes), parts=(tower, proj, audio))
