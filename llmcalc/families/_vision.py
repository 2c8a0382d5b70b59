"""Vision towers and projectors of vision–language models, as :class:`Part` s of a whole model.

One ViT description (Dosovitskiy et al. 2021) serves the towers transformers builds for its VLMs;
a tower is a row of switches in :class:`ViT`: its module names, LayerNorm or RMSNorm, biases, a
class token, learned position embeddings (or rotary ones: none stored). Shapes as in transformers
``CLIPVisionTransformer`` (clip/modeling_clip.py), ``SiglipVisionTransformer``
(siglip/modeling_siglip.py) and ``PixtralVisionModel`` (pixtral/modeling_pixtral.py):

- patch embedding: Conv2d(channels, d, kernel = stride = patch) → weight [d, channels, p, p]
  (+ bias [d]); a matmul per patch, 2·d·channels·p² FLOPs each;
- per layer: q, k, v, o [d, d] (+ biases), two norms [d], an MLP fc1 [ff, d], fc2 [d, ff] (or a
  gated one: gate, up [ff, d], down [d, ff]); bidirectional attention over all its tokens.

Also here: how a VLM's text model is described by its own family and renamed into the whole
model (:func:`text_model`), and the config fields composite configs share.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import replace
from typing import Any

from pydantic import AliasChoices
from pydantic import Field
from pydantic import ValidationError

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import FieldError
from llmcalc.families._base import Size
from llmcalc.families._base import linear
from llmcalc.families._base import norm
from llmcalc.families._base import override_plan
from llmcalc.families._base import require
from llmcalc.families._base import resolve_head_dim
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Part
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

# ---- sub-configs: a composite config's text_config / vision_config --------------------------------


def sub_fields(
    fields: Mapping[str, Any] | None, key: str, default_type: str, absent: Mapping[str, Any]
) -> dict[str, Any]:
    """A sub-config's fields as transformers builds them (configuration_utils.SubConfigSpec): a
    mapping given in the config on its model_type's class defaults (``default_type`` when it names
    none); absent, the composite class's own defaults ``absent`` (its init_kwargs)."""
    from llmcalc.inputs import family_defaults

    if fields is None:
        fields = dict(absent)
        fields.setdefault("model_type", default_type)
        base = family_defaults.sub_defaults(str(fields["model_type"])) or {}
        return {**base, **fields}
    if not isinstance(fields, Mapping):
        raise FieldError(key, f"{key} must be a mapping")
    model_type = fields.get("model_type", default_type)
    if not isinstance(model_type, str):
        raise FieldError(f"{key}.model_type", f"{key}.model_type must be a string")
    declared = family_defaults.sub_defaults(model_type)
    if declared is None:
        raise FieldError(f"{key}.model_type", f"{key}.model_type {model_type!r} is not supported here")
    return {**declared, **dict(fields), "model_type": model_type}


def read_sub(cls: type[FamilyConfig], fields: Mapping[str, Any], key: str) -> Any:
    """Validate a sub-config; a bad field is named with its path (``vision_config.hidden_size``)."""
    try:
        return cls.read(fields)
    except ValidationError as e:
        from llmcalc.inputs.validation import validation_message

        message = validation_message(e)
        raise FieldError(f"{key}.", f"{key}.{message}") from None


def text_model(
    fields: Mapping[str, Any], *, rename: Callable[[str], str], tied: bool
) -> Architecture:
    """The language model of a VLM: ``fields`` (its text_config) described by the text family of
    its model_type, tensors renamed into the whole model (``model.layers`` →
    ``model.language_model.layers``), the head tied to the embedding when the whole model ties."""
    from llmcalc.families import MODEL_TYPES

    model_type = str(fields.get("model_type"))
    fam = MODEL_TYPES.get(model_type)
    if fam is None:
        raise FieldError("text_config.model_type", f"text_config.model_type {model_type!r} is not supported")
    cfg = read_sub(fam.config, {**fields, "tie_word_embeddings": tied}, "text_config")
    try:
        arch = fam.describe(cfg)
    except FieldError as e:  # the text family names its own fields: give them their path
        if e.field.startswith("text_config."):
            raise
        message = str(e)
        raise FieldError(f"text_config.{e.field}", f"text_config.{message}"
                         if message.startswith(e.field) else f"text_config.{e.field}: {message}") from None
    names = {t.name: rename(t.name) for t in arch.tensors}

    def moved(t: Tensor) -> Tensor:
        return replace(t, name=rename(t.name), tied_to=None if t.tied_to is None else names.get(
            t.tied_to, rename(t.tied_to)))

    return replace(
        arch,
        tensors=tuple(moved(t) for t in arch.tensors),
        layer_groups=tuple(
            replace(g, tensors=tuple(moved(t) for t in g.tensors)) for g in arch.layer_groups
        ),
    )


def prefixer(old: str, new: str) -> Callable[[str], str]:
    """``model.x`` → ``model.language_model.x`` (names starting with ``old``; others unchanged)."""
    return lambda name: new + name[len(old):] if name.startswith(old) else name


# ---- the ViT --------------------------------------------------------------------------------------


class VisionConfig(FamilyConfig):
    """The fields a ViT tower's config names alike (CLIPVisionConfig, SiglipVisionConfig …)."""

    transformers_class = "CLIPVisionConfig"

    hidden_size: Size
    intermediate_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    image_size: Size
    patch_size: Size
    num_channels: Size = 3
    head_dim: Size | None = None

    @property
    def image_hw(self) -> tuple[int, int]:
        return _pair(self.image_size)

    @property
    def patch_hw(self) -> tuple[int, int]:
        return _pair(self.patch_size)

    @property
    def ff(self) -> int:
        """The MLP's width."""
        return self.intermediate_size

    @property
    def patch_kernel(self) -> tuple[int, ...]:
        """The patch embedding's kernel: [p, p] (Conv2d), [t, p, p] for Qwen's Conv3d."""
        return self.patch_hw

    @property
    def patches(self) -> int:
        """Patches of one image: (image_size / patch_size)², as Conv2d with stride = kernel makes."""
        (h, w), (ph, pw) = self.image_hw, self.patch_hw
        return (h // ph) * (w // pw)

    @property
    def side(self) -> int:
        """The image's height in pixels (a square image's side)."""
        return self.image_hw[0]

    def check(self) -> None:
        (h, w), (ph, pw) = self.image_hw, self.patch_hw
        require(
            ph <= h and pw <= w,
            "vision_config.patch_size",
            f"vision_config.patch_size ({self.patch_size}) must not exceed image_size ({self.image_size})",
        )


def _pair(value: int | list[int]) -> tuple[int, int]:
    """A size given as one number or as [height, width] (InternViT)."""
    if isinstance(value, int):
        return value, value
    if len(value) != 2:
        raise FieldError("vision_config", "vision_config sizes must be a number or [height, width]")
    return value[0], value[1]


class InternVisionConfig(VisionConfig):
    """InternViT (internvl_vision): sizes as [height, width] pairs, and its own switches."""

    transformers_class = "InternVLVisionConfig"

    image_size: Size | list[Size]  # type: ignore[assignment]
    patch_size: Size | list[Size]  # type: ignore[assignment]
    attention_bias: bool = False
    use_qk_norm: bool = False
    norm_type: str = "layer_norm"
    use_absolute_position_embeddings: bool = True
    use_mean_pooling: bool = True


@dataclass(frozen=True)
class ViT:
    """How one tower names and shapes its tensors; the switches that tell towers apart."""

    embeddings: str = "embeddings"  # module holding the patch (and position) embedding
    patch: str = "patch_embedding"
    patch_bias: bool = False
    class_token: bool = False  # CLIP: embeddings.class_embedding [d], one more position
    class_name: str = "class_embedding"
    positions: str | None = "position_embedding"  # learned [positions, d]; None: rotary
    raw_params: bool = False  # class token and positions as Parameters [1, 1, d], [1, n, d] (InternViT)
    positions_param: bool = False  # positions as a Parameter [n, d], not an nn.Embedding (Llama 4)
    patch_linear: bool = False  # patches unfolded into a Linear [d, channels·p²] (Llama 4)
    pre_norm: str | None = None  # CLIP "pre_layrnorm", Pixtral "ln_pre"
    post_norm: str | None = "post_layernorm"
    layers: str = "encoder.layers"
    attn: str = "self_attn"
    o_proj: str = "out_proj"
    qkv_bias: bool = True
    o_bias: bool = True
    norm1: str = "layer_norm1"
    norm2: str = "layer_norm2"
    norm_bias: bool = True  # LayerNorm; False: RMSNorm
    mlp: str = "mlp"
    gated: bool = False  # gate/up/down instead of fc1/fc2
    fc: tuple[str, str] = ("fc1", "fc2")  # the plain MLP's two linears (Qwen3-VL: linear_fc1, …)
    mlp_bias: bool = True
    head_dim_field: bool = True  # False: head_dim = hidden / heads whatever the config says (Pixtral)
    qkv: str | None = None  # one fused q, k, v projection [3d, d] of this name (Qwen-ViT)
    qk_norm: bool = False  # RMSNorm [d] on all of q and on all of k (InternViT use_qk_norm)
    post_norm_bias: bool | None = None  # None: as norm_bias
    layer_scale: bool = False  # lambda_1, lambda_2 [d] scaling each branch (InternViT)


CLIP = ViT(patch_bias=False, class_token=True, pre_norm="pre_layrnorm")
SIGLIP = ViT(patch_bias=True)
PIXTRAL = ViT(
    embeddings="", patch="patch_conv", positions=None, pre_norm="ln_pre", post_norm=None,
    layers="transformer.layers", attn="attention", o_proj="o_proj", qkv_bias=False, o_bias=False,
    norm1="attention_norm", norm2="ffn_norm", norm_bias=False, mlp="feed_forward", gated=True,
    mlp_bias=False, head_dim_field=False,
)
INTERNVIT = ViT(
    patch="patch_embeddings.projection", patch_bias=True, class_token=True, class_name="cls_token",
    positions="position_embeddings", raw_params=True, post_norm=None, layers="encoder.layer",
    attn="attention", o_proj="projection_layer", qkv_bias=False, norm1="layernorm_before",
    norm2="layernorm_after", layer_scale=True,
)


def styled(style: ViT, c: VisionConfig) -> ViT:
    """A tower's switches that its config sets (InternViT: biases, norms, positions, pooling)."""
    if not isinstance(c, InternVisionConfig):
        return style
    require(c.norm_type in ("layer_norm", "rms_norm"), "vision_config.norm_type",
            f"vision_config.norm_type must be layer_norm or rms_norm, got {c.norm_type!r}")
    return replace(
        style,
        qkv_bias=c.attention_bias,
        qk_norm=c.use_qk_norm,
        norm_bias=c.norm_type == "layer_norm",
        positions=style.positions if c.use_absolute_position_embeddings else None,
        post_norm=None if c.use_mean_pooling else "layernorm",
        post_norm_bias=True,
    )


def _join(*names: str) -> str:
    return ".".join(n for n in names if n)


def pooling_head(prefix: str, d: int, ff: int) -> list[Tensor]:
    """SigLIP's attention-pooling head (siglip/modeling_siglip.py SiglipMultiheadAttentionPoolingHead):
    a probe [1, 1, d]; nn.MultiheadAttention
    in_proj [3d, d] + [3d], out_proj [d, d] + [d]; a LayerNorm; an MLP fc1 [ff, d], fc2 [d, ff]."""
    h = f"{prefix}.head"
    return [
        Tensor(f"{h}.probe", (1, 1, d), "head/probe"),
        Tensor(f"{h}.attention.in_proj_weight", (3 * d, d), "head/attention"),
        Tensor(f"{h}.attention.in_proj_bias", (3 * d,), "head/attention"),
        *linear(f"{h}.attention.out_proj", "head/attention", d, d, bias=True),
        *norm(f"{h}.layernorm", "head/norm", d, bias=True),
        *linear(f"{h}.mlp.fc1", "head/mlp", ff, d, bias=True),
        *linear(f"{h}.mlp.fc2", "head/mlp", d, ff, bias=True),
    ]


def pooling_head_flops(d: int, ff: int, n: int) -> int:
    """One probe query over n tokens: q 2·d² and out 2·d² for the probe, k and v 2·2d²·n for the
    tokens, scores and weighted sum 2·2·n·d, the MLP 2·2·d·ff on the probe."""
    return 2 * d * d + 2 * 2 * d * d * n + 2 * 2 * n * d + 2 * d * d + 2 * 2 * d * ff


def vit(
    prefix: str, c: VisionConfig, style: ViT, *, context_tokens: int, name: str = "vision",
    head: bool = False, patches: int | None = None, image_side: int | None = None,
    passes: int = 1, positions: int | None = None,
) -> Part:
    """A ViT tower under ``prefix`` as a part; one image makes ``c.patches`` patches (+ a class
    token) that every layer sees, or ``patches`` of an ``image_side`` image (a tower that takes
    images at their own size, Pixtral); ``passes``: tower runs per image (the crops of LLaVA-NeXT);
    ``context_tokens`` reach the language model; ``head``: SigLIP's attention-pooling head after
    the last norm (vision_use_head)."""
    c.check()
    d, ff, h = c.hidden_size, c.ff, c.num_attention_heads
    hd = resolve_head_dim(d, h, c.head_dim if style.head_dim_field else None, hidden_field="vision_config.hidden_size",
                          heads_field="vision_config.num_attention_heads")
    emb = _join(prefix, style.embeddings)
    if positions is None:  # a learned table of one image's patches (+ the class token)
        positions = c.patches + (1 if style.class_token else 0)
    seen = c.patches if patches is None else patches
    tokens = seen + (1 if style.class_token else 0)
    outer: list[Tensor] = []
    if style.class_token:
        shape = (1, 1, d) if style.raw_params else (d,)
        outer.append(Tensor(f"{emb}.{style.class_name}", shape, "embed/class"))
    # Conv2d(channels, d, kernel=stride=patch): [d, channels, p, p]; or unfold + Linear
    kernel = (c.num_channels * math.prod(c.patch_kernel),) if style.patch_linear else (
        c.num_channels, *c.patch_kernel)
    patch = Tensor(f"{emb}.{style.patch}.weight", (d, *kernel), "embed/patch", matmul=True)
    outer.append(patch)
    if style.patch_bias:
        outer.append(Tensor(f"{emb}.{style.patch}.bias", (d,), "embed/patch"))
    if style.positions is not None and style.raw_params:
        outer.append(Tensor(f"{emb}.{style.positions}", (1, positions, d), "embed/positions"))
    elif style.positions is not None and style.positions_param:
        outer.append(Tensor(f"{emb}.{style.positions}", (positions, d), "embed/positions"))
    elif style.positions is not None:
        outer.append(Tensor(f"{emb}.{style.positions}.weight", (positions, d), "embed/positions"))
    if style.pre_norm:
        outer += norm(_join(prefix, style.pre_norm), "pre_norm", d, bias=style.norm_bias)
    p = _join(prefix, style.layers, "{i}")
    a = f"{p}.{style.attn}"
    m = f"{p}.{style.mlp}"
    qkv = [
        *linear(f"{a}.q_proj", "attn/q_proj", h * hd, d, bias=style.qkv_bias),
        *linear(f"{a}.k_proj", "attn/k_proj", h * hd, d, bias=style.qkv_bias),
        *linear(f"{a}.v_proj", "attn/v_proj", h * hd, d, bias=style.qkv_bias),
    ] if style.qkv is None else linear(f"{a}.{style.qkv}", "attn/qkv", 3 * h * hd, d,
                                       bias=style.qkv_bias)
    layer = [
        *qkv,
        *linear(f"{a}.{style.o_proj}", "attn/o_proj", d, h * hd, bias=style.o_bias),
        *norm(f"{p}.{style.norm1}", "attn/norm", d, bias=style.norm_bias),
        *norm(f"{p}.{style.norm2}", "mlp/norm", d, bias=style.norm_bias),
    ]
    if style.qk_norm:
        layer += [*norm(f"{a}.q_norm", "attn/q_norm", d, bias=False),
                  *norm(f"{a}.k_norm", "attn/k_norm", d, bias=False)]
    if style.layer_scale:
        layer += [Tensor(f"{p}.lambda_1", (d,), "attn/layer_scale"),
                  Tensor(f"{p}.lambda_2", (d,), "mlp/layer_scale")]
    if style.gated:
        layer += [
            *linear(f"{m}.gate_proj", "mlp/gate_proj", ff, d, bias=style.mlp_bias),
            *linear(f"{m}.up_proj", "mlp/up_proj", ff, d, bias=style.mlp_bias),
            *linear(f"{m}.down_proj", "mlp/down_proj", d, ff, bias=style.mlp_bias),
        ]
    else:
        layer += [
            *linear(f"{m}.{style.fc[0]}", "mlp/fc1", ff, d, bias=style.mlp_bias),
            *linear(f"{m}.{style.fc[1]}", "mlp/fc2", d, ff, bias=style.mlp_bias),
        ]
    if style.post_norm:
        bias = style.norm_bias if style.post_norm_bias is None else style.post_norm_bias
        outer += norm(_join(prefix, style.post_norm), "post_norm", d, bias=bias)
    extra = 0
    if head:
        outer += pooling_head(prefix, d, ff)
        extra = pooling_head_flops(d, ff, tokens)
    group = LayerGroup("vision", LayerSet.span(0, c.num_hidden_layers), tuple(layer),
                       Attention(h, h, hd, hd))
    return Part(
        name=name,
        tensors=tuple(outer),
        layer_groups=(group,),
        shape=Shape(c.num_hidden_layers, d, h, h, hd, ff, 0, False, positions),
        input_tokens=(("embed/patch", seen), ("layers", tokens)),
        context_tokens=context_tokens,
        input_size=c.side if image_side is None else image_side,
        extra_flops=extra,
        passes=passes,
    )


def projector(tensors: list[Tensor], *, tokens: int, d_in: int, d_out: int) -> Part:
    """A projector from the tower's width ``d_in`` to the language model's ``d_out``, meeting
    ``tokens`` tokens per image."""
    return Part(
        name="projector",
        tensors=tuple(tensors),
        shape=Shape(0, d_out, 0, 0, 0, d_in, 0, False),
        input_tokens=(("", tokens),),
    )



# ---- SAM's ViTDet tower (GOT-OCR 2) ---------------------------------------------------------------


class SamVisionConfig(FamilyConfig):
    """GotOcr2VisionConfig: SAM ViT-B (Kirillov et al. 2023) sizes and switches."""

    transformers_class = "GotOcr2VisionConfig"

    hidden_size: Size
    output_channels: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    num_channels: Size = 3
    image_size: Size
    patch_size: Size
    qkv_bias: bool = True
    use_abs_pos: bool = True
    use_rel_pos: bool = True
    window_size: Size
    global_attn_indexes: list[int]
    mlp_dim: Size


def sam_tower(prefix: str, c: SamVisionConfig) -> tuple[Part, int]:
    """SAM's image encoder (got_ocr2/modeling_got_ocr2.py GotOcr2VisionEncoder) as a part, and the
    side of its output grid: patch conv [d, channels, p, p] (+ bias), absolute positions
    [1, g, g, d] (g = image / patch), per layer LayerNorms, qkv [3d, d], proj [d, d], relative
    positions [2s − 1, head_dim] (s = the window, or g in a global layer), MLP lin1 [mlp, d],
    lin2 [d, mlp]; a neck of conv1 1 × 1 [c_out, d] and conv2 3 × 3 [c_out, c_out] with
    LayerNorms. Windowed layers pad the grid to whole windows before attention."""
    d, h, mlp, c_out = c.hidden_size, c.num_attention_heads, c.mlp_dim, c.output_channels
    require(c.patch_size <= c.image_size, "vision_config.patch_size",
            f"vision_config.patch_size ({c.patch_size}) must not exceed image_size ({c.image_size})")
    hd = resolve_head_dim(d, h, hidden_field="vision_config.hidden_size",
                          heads_field="vision_config.num_attention_heads")
    g, w, L = c.image_size // c.patch_size, c.window_size, c.num_hidden_layers
    outer = []
    if c.use_abs_pos:
        outer.append(Tensor(f"{prefix}.pos_embed", (1, g, g, d), "embed/positions"))
    outer += [
        Tensor(f"{prefix}.patch_embed.projection.weight", (d, c.num_channels, c.patch_size,
                                                           c.patch_size), "embed/patch", matmul=True),
        Tensor(f"{prefix}.patch_embed.projection.bias", (d,), "embed/patch"),
        Tensor(f"{prefix}.neck.conv1.weight", (c_out, d, 1, 1), "neck/conv1", matmul=True),
        *norm(f"{prefix}.neck.layer_norm1", "neck/norm", c_out, bias=True),
        Tensor(f"{prefix}.neck.conv2.weight", (c_out, c_out, 3, 3), "neck/conv2", matmul=True),
        *norm(f"{prefix}.neck.layer_norm2", "neck/norm", c_out, bias=True),
    ]
    p = f"{prefix}.layers.{{i}}"

    def layer(side: int) -> tuple[Tensor, ...]:
        rel = [Tensor(f"{p}.attn.rel_pos_h", (2 * side - 1, hd), "attn/rel_pos"),
               Tensor(f"{p}.attn.rel_pos_w", (2 * side - 1, hd), "attn/rel_pos")] if c.use_rel_pos else []
        return (
            *norm(f"{p}.layer_norm1", "attn/norm", d, bias=True),
            *rel,
            *linear(f"{p}.attn.qkv", "attn/qkv", 3 * d, d, bias=c.qkv_bias),
            *linear(f"{p}.attn.proj", "attn/proj", d, d, bias=True),
            *norm(f"{p}.layer_norm2", "mlp/norm", d, bias=True),
            *linear(f"{p}.mlp.lin1", "mlp/lin1", mlp, d, bias=True),
            *linear(f"{p}.mlp.lin2", "mlp/lin2", d, mlp, bias=True),
        )

    # layer i is global when listed in global_attn_indexes (window 0), else windowed
    plan = override_plan({"windowed": LayerSet.span(0, L)},
                         [i for i in c.global_attn_indexes if 0 <= i < L], "global")
    attention = Attention(h, h, hd, hd)
    groups = tuple(LayerGroup(kind, layers, layer(g if kind == "global" else w), attention)
                   for kind, layers in plan.items())
    # FLOPs of one image: the patch conv, neck convs (padding 1 keeps the grid) and MLP on g² tokens;
    # in a windowed layer qkv, proj and attention run on the padded grid, window by window
    padded = -(-g // w) * w
    windows = (padded // w) ** 2
    weight = 2 * g * g * (d * c.num_channels * c.patch_size**2 + c_out * d + c_out * c_out * 9)
    attn_flops = 0
    for kind, layers in plan.items():
        n_tok, side, calls = (g * g, g, 1) if kind == "global" else (padded * padded, w, windows)
        per_layer_w = 2 * n_tok * (3 * d * d + d * d) + 2 * g * g * 2 * d * mlp
        # scores and weighted sum over each window's (or the grid's) side² tokens, plus the
        # decomposed relative positions: two einsums of 2 · heads · side³ · head_dim
        pairs = calls * (side * side) ** 2 * 2 * h * (2 * hd)
        rel = calls * 2 * 2 * h * side**3 * hd if c.use_rel_pos else 0
        weight += len(layers) * per_layer_w
        attn_flops += len(layers) * (pairs + rel)
    part = Part(
        name="vision",
        tensors=tuple(outer),
        layer_groups=groups,
        shape=Shape(L, d, h, h, hd, mlp, 0, False, g * g),
        input_tokens=(("layers", g * g),),
        input_size=c.image_size,
        input_flops=(weight, attn_flops),
    )
    return part, g



# ---- Qwen-ViT (Qwen2-VL, Qwen2.5-VL) ---------------------------------------------------------------


class QwenVisionConfig(VisionConfig):
    """Qwen2VLVisionConfig / Qwen2_5_VLVisionConfig in the shared fields: embed_dim (Qwen2-VL) or
    hidden_size (Qwen2.5-VL) wide, depth layers, num_heads; a Conv3d patch [d, c, t, p, p] over
    temporal_patch_size frames (an image is repeated t times). It has no image size: the figures
    assume a square image of image_size pixels (llmcalc's own, --image-size)."""

    transformers_class = "Qwen2VLVisionConfig"

    hidden_size: Size = Field(validation_alias=AliasChoices("embed_dim", "hidden_size"))
    num_hidden_layers: Size = Field(validation_alias=AliasChoices("depth", "num_hidden_layers"))
    num_attention_heads: Size = Field(validation_alias=AliasChoices("num_heads", "num_attention_heads"))
    num_channels: Size = Field(3, validation_alias=AliasChoices("in_channels", "num_channels"))
    intermediate_size: Size | None = None  # type: ignore[assignment]
    mlp_ratio: Size = 4
    image_size: Size = 896
    patch_size: Size = 14
    temporal_patch_size: Size = 2
    spatial_merge_size: Size = 2
    out_hidden_size: Size | None = None  # Qwen2.5-VL: the merger's output width
    window_size: Size | None = None  # Qwen2.5-VL: windows of window_size pixels a side
    fullatt_block_indexes: list[int] | None = None
    num_position_embeddings: Size | None = None  # Qwen3-VL's learned position table
    deepstack_visual_indexes: list[int] | None = None  # Qwen3-VL: layers feeding extra mergers

    @property
    def ff(self) -> int:
        return self.intermediate_size or self.hidden_size * self.mlp_ratio

    @property
    def patch_kernel(self) -> tuple[int, ...]:
        return (self.temporal_patch_size, self.patch_size, self.patch_size)

    def grid(self) -> int:
        return smart_grid(self.image_size, self.patch_size, self.spatial_merge_size)


def smart_grid(side: int, patch: int, merge: int) -> int:
    """Patches a side of a square image of ``side`` pixels after the processor's smart_resize
    (qwen2_vl/image_processing_qwen2_vl.py: multiples of patch · merge, 56² to 28² · 1280 pixels
    at the default min_pixels and max_pixels)."""
    factor = patch * merge
    lo, hi = 56 * 56, 28 * 28 * 1280
    bar = round(side / factor) * factor
    if bar * bar > hi:
        bar = max(factor, math.floor(side / math.sqrt(side * side / hi) / factor) * factor)
    elif bar * bar < lo:
        bar = math.ceil(side * math.sqrt(lo / (side * side)) / factor) * factor
    return bar // patch


LLAMA4_VIT = ViT(
    embeddings="", patch="patch_embedding.linear", patch_linear=True, class_token=True,
    positions="positional_embedding_vlm", positions_param=True, pre_norm="layernorm_pre",
    post_norm="layernorm_post", layers="model.layers", o_proj="o_proj", norm1="input_layernorm",
    norm2="post_attention_layernorm", head_dim_field=False,  # Llama4VisionAttention: d / heads
)
QWEN2_VIT = ViT(
    embeddings="", patch="patch_embed.proj", positions=None, post_norm=None, layers="blocks",
    attn="attn", qkv="qkv", o_proj="proj", norm1="norm1", norm2="norm2",
    head_dim_field=False,  # Qwen2-VL/2.5-VL/3-VL's VisionAttention: dim // num_heads
)
QWEN2_5_VIT = replace(QWEN2_VIT, norm_bias=False, gated=True)
# Qwen3-VL: a biased patch conv, a learned position table (interpolated to the grid: no matmul)
QWEN3_VIT = replace(QWEN2_VIT, patch_bias=True, positions="pos_embed", fc=("linear_fc1", "linear_fc2"))


# ---- Llama 3.2 Vision's tiled tower (mllama) -------------------------------------------------------


class MllamaVisionConfig(VisionConfig):
    """MllamaVisionConfig: a ViT of num_hidden_layers local and num_global_layers gated global
    layers over max_num_tiles tiles of image_size pixels; vision_output_dim wide outputs (the last
    layer's and intermediate_layers_indices' hidden states, concatenated)."""

    transformers_class = "MllamaVisionConfig"

    num_attention_heads: Size = Field(
        validation_alias=AliasChoices("attention_heads", "num_attention_heads"))
    num_global_layers: Size
    vision_output_dim: Size
    max_num_tiles: Size
    supported_aspect_ratios: list[list[Size]] | None = None

    @property
    def aspect_ratios(self) -> int:
        """max_aspect_ratio_id: the supported aspect ratios (8 by default: 1 × 1 … 4 × 1)."""
        return len(self.supported_aspect_ratios) if self.supported_aspect_ratios is not None else 8


MLLAMA_VIT = ViT(
    embeddings="", patch="patch_embedding", class_token=True, positions=None,
    pre_norm="layernorm_pre", post_norm="layernorm_post", layers="transformer.layers",
    o_proj="o_proj", qkv_bias=False, o_bias=False, norm1="input_layernorm",
    norm2="post_attention_layernorm", head_dim_field=False,
)


def mllama_tower(prefix: str, c: MllamaVisionConfig) -> Part:
    """MllamaVisionModel (mllama/modeling_mllama.py) as a part: the ViT above (patch conv without
    bias, class token, LayerNorms before and after the local layers, q/k/v/o without biases, fc1/fc2
    with), the same layers again as ``global_transformer`` with tanh gates gate_attn, gate_ffn [1]
    on each branch, and its position tables (R = the supported aspect ratios, T = max_num_tiles,
    n = patches + 1): gated_positional_embedding.embedding [n, d] and tile_embedding [R + 1, T·n·d],
    pre- and post-tile embeddings [R + 1, T·d], each with a gate [1].

    One image is T tiles (the processor pads it to max_image_tiles); both encoders attend over all
    T · n' tokens at once (n' = n padded to a multiple of 8; padded tiles and patches are masked,
    their products computed), after an outer product of the aspect-ratio mask, 2·(T·n')² FLOPs.
    Every tile's n tokens go on to the projector and the language model's cross-attention."""
    d, T = c.hidden_size, c.max_num_tiles
    side = c.image_size // c.patch_size
    n = side * side + 1
    padded = -(-n // 8) * 8
    part = vit(prefix, c, MLLAMA_VIT, context_tokens=1, patches=T * side * side)
    local = part.layer_groups[0]
    local_name = _join(prefix, MLLAMA_VIT.layers)
    global_name = _join(prefix, "global_transformer.layers")
    gated = (
        *(replace(t, name=t.name.replace(local_name, global_name, 1)) for t in local.tensors),
        Tensor(f"{global_name}.{{i}}.gate_attn", (1,), "attn/gate"),
        Tensor(f"{global_name}.{{i}}.gate_ffn", (1,), "mlp/gate"),
    )
    groups = (
        replace(local, name="vision (local)"),
        LayerGroup("vision (global)", LayerSet.span(0, c.num_global_layers), gated, local.attention),
    )
    r = c.aspect_ratios + 1
    g = _join(prefix, "gated_positional_embedding")
    tables = [
        Tensor(f"{g}.embedding", (n, d), "embed/positions"),
        Tensor(f"{g}.gate", (1,), "embed/positions"),
        Tensor(f"{g}.tile_embedding.weight", (r, T * n * d), "embed/positions"),
        *(t for kind in ("pre", "post") for t in (
            Tensor(_join(prefix, f"{kind}_tile_positional_embedding.embedding.weight"), (r, T * d),
                   "embed/positions"),
            Tensor(_join(prefix, f"{kind}_tile_positional_embedding.gate"), (1,), "embed/positions"),
        )),
    ]
    tokens = T * padded
    return replace(
        part,
        tensors=(*part.tensors, *tables),
        layer_groups=groups,
        shape=replace(part.shape, num_layers=c.num_hidden_layers + c.num_global_layers,
                      max_position_embeddings=n) if part.shape else None,
        input_tokens=(("embed/patch", T * side * side), ("layers", tokens)),
        extra_flops=2 * tokens * tokens,
        cross_tokens=T * n,
    )
