"""Vision–language models as whole models: a vision tower, a projector and a language model.

The language model is its text_config described by its own text family (:func:`_vision.text_model`)
and renamed under ``model.language_model``; the tower is the shared ViT (:mod:`_vision`); a model
type is a row: its tower's names, its projector, how many image tokens reach the context.

- ``llava`` (Liu et al. 2023, "Improved Baselines with Visual Instruction Tuning"): CLIP ViT tower,
  two-layer MLP projector (linear_1 [d_t, d_v·k], linear_2 [d_t, d_t], with biases; k feature
  layers), language model; transformers llava/modeling_llava.py, configuration_llava.py.
- the others, each a config class and a short describe function below: ``llava_next``,
  ``llava_onevision`` (anyres grids), ``gemma3``, ``paligemma``, ``mistral3``, ``aya_vision``,
  ``internvl``, ``idefics3`` / ``smolvlm``, ``got_ocr2`` (SAM tower), ``qwen2_vl`` / ``qwen2_5_vl``
  / ``qwen3_vl`` / ``qwen3_vl_moe`` / ``qwen3_5`` / ``qwen3_5_moe`` / ``qwen4_exp`` (Qwen-ViT),
  ``llama4``, ``mllama`` (a tiled tower, and a language model whose cross-attention layers attend
  to the image's tokens instead of reading them in the context), ``fuyu`` (no tower: a linear patch
  embedding into Persimmon).

Per image, a part's FLOPs are its matrices times the tokens they meet plus bidirectional attention
(tower_flops.part_flops); ``context_tokens`` on the tower is what one image adds to the language
model's context, as the type's processor counts it.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any
from typing import ClassVar

from pydantic import ConfigDict

from llmcalc.families._base import MAX_SIZE
from llmcalc.families._base import Architecture
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import FieldError
from llmcalc.families._base import Size
from llmcalc.families._base import embedding
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import linear
from llmcalc.families._base import lm_head
from llmcalc.families._base import norm
from llmcalc.families._base import override_plan
from llmcalc.families._base import require
from llmcalc.families._base import resolve_head_dim
from llmcalc.families._base import resolve_kv_heads
from llmcalc.families._base import swiglu
from llmcalc.families._vision import CLIP
from llmcalc.families._vision import INTERNVIT
from llmcalc.families._vision import LLAMA4_VIT
from llmcalc.families._vision import PIXTRAL
from llmcalc.families._vision import QWEN2_5_VIT
from llmcalc.families._vision import QWEN2_VIT
from llmcalc.families._vision import QWEN3_VIT
from llmcalc.families._vision import SIGLIP
from llmcalc.families._vision import InternVisionConfig
from llmcalc.families._vision import MllamaVisionConfig
from llmcalc.families._vision import QwenVisionConfig
from llmcalc.families._vision import SamVisionConfig
from llmcalc.families._vision import VisionConfig
from llmcalc.families._vision import ViT
from llmcalc.families._vision import mllama_tower
from llmcalc.families._vision import prefixer
from llmcalc.families._vision import projector
from llmcalc.families._vision import read_sub
from llmcalc.families._vision import sam_tower
from llmcalc.families._vision import styled
from llmcalc.families._vision import sub_fields
from llmcalc.families._vision import text_model
from llmcalc.families._vision import vit
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Part
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

# The towers a composite config's vision_config may name, by its model_type.
TOWERS: dict[str, ViT] = {
    "clip_vision_model": CLIP,
    "siglip_vision_model": SIGLIP,
    "pixtral": PIXTRAL,
    "internvl_vision": INTERNVIT,
    "idefics3_vision": SIGLIP,
    "smolvlm_vision": SIGLIP,
    "llama4_vision_model": LLAMA4_VIT,
}


class SiglipVisionConfig(VisionConfig):
    transformers_class = "SiglipVisionConfig"

    vision_use_head: bool = True


class CompositeConfig(FamilyConfig):
    """What every VLM config holds: its two sub-configs (absent: the class's defaults) and a
    top-level tie_word_embeddings (absent: the class default)."""

    text_config: dict[str, Any] | None = None
    vision_config: dict[str, Any] | None = None
    tie_word_embeddings: bool | None = None
    # llmcalc's own (--image-size): the side of a square input image the per-image figures assume
    image_size: Size | None = None

    # model_type of the composite config, its sub-configs' default model types
    composite_type: ClassVar[str] = ""
    default_text: ClassVar[str] = "llama"
    default_vision: ClassVar[str] = "clip_vision_model"
    # the class default of the top-level tie_word_embeddings, and whether __post_init__ turns it on
    # when text_config ties (a pre-v5 config saved it there)
    default_tie: ClassVar[bool] = False
    tie_from_text: ClassVar[bool] = True

    def sub(self, key: str, default_type: str) -> dict[str, Any]:
        from llmcalc.inputs import family_defaults

        absent = (family_defaults.sub_defaults(self.composite_type) or {}).get(key) or {}
        return sub_fields(getattr(self, key), key, default_type, absent)

    def text(self) -> dict[str, Any]:
        return self.sub("text_config", self.default_text)

    def tower(self, prefix: str, *, context_tokens: int, **kw: Any) -> tuple[Part, VisionConfig]:
        """The vision tower as a part (a SigLIP tower with its pooling head when it uses one)."""
        v, style = self.vision()
        head = bool(getattr(v, "vision_use_head", False))
        return vit(prefix, v, style, context_tokens=context_tokens, head=head, **kw), v

    def resized_note(self, v: VisionConfig | SamVisionConfig) -> tuple[str, ...]:
        """A tower that resizes every image to its own size: --image-size changes nothing."""
        if self.image_size is None or self.image_size == v.image_size:
            return ()
        return (f"image_size {self.image_size}: the processor resizes every image to "
                f"{v.image_size}×{v.image_size} pixels, so the per-image figures are those",)

    def vision(self) -> tuple[VisionConfig, ViT]:
        fields = self.sub("vision_config", self.default_vision)
        kind = str(fields["model_type"])
        style = TOWERS.get(kind)
        if style is None:
            raise FieldError(
                "vision_config.model_type",
                f"vision_config.model_type {kind!r} is not supported (one of: {', '.join(TOWERS)})",
            )
        classes: dict[str, type[VisionConfig]] = {
            "siglip_vision_model": SiglipVisionConfig, "internvl_vision": InternVisionConfig}
        cls = classes.get(kind, VisionConfig)
        c = read_sub(cls, fields, "vision_config")
        return c, styled(style, c)

    def tied(self, text: dict[str, Any]) -> bool:
        """The whole model ties its head as its top-level tie_word_embeddings says (modeling_utils
        reads the top-level config); some classes also tie when only text_config does
        (LlavaConfig.__post_init__ and its copies). A text_config's own false does not untie it."""
        # an explicit null is kept by the class and reads as false (tie_weights tests its truth)
        given = "tie_word_embeddings" in self.model_fields_set
        top = bool(self.tie_word_embeddings) if given else self.default_tie
        return top or (self.tie_from_text and bool(text.get("tie_word_embeddings")))


LANGUAGE = prefixer("model.", "model.language_model.")


class FeatureLayersConfig(CompositeConfig):
    """Which tower layers feed the projector (one, or a list concatenated along the width)."""

    vision_feature_layer: int | list[int] = -2
    multimodal_projector_bias: bool = True


class LlavaConfig(FeatureLayersConfig):
    transformers_class = "LlavaConfig"
    composite_type: ClassVar[str] = "llava"

    vision_feature_layer: int | list[int]
    vision_feature_select_strategy: str


def _feature_layers(c: FeatureLayersConfig) -> int:
    layers = c.vision_feature_layer
    n = 1 if isinstance(layers, int) else len(layers)
    require(n > 0, "vision_feature_layer", "vision_feature_layer must name at least one layer")
    return n


def _select(c: LlavaConfig, patches: int, class_token: bool) -> int:
    """Image tokens the projector sees: "default" drops the first token (the class token of a
    CLIP tower, a patch of a tower without one), "full" keeps them all."""
    strategy = c.vision_feature_select_strategy
    require(strategy in ("default", "full"), "vision_feature_select_strategy",
            f"vision_feature_select_strategy must be default or full, got {strategy!r}")
    tokens = patches + (1 if class_token else 0)
    return tokens - 1 if strategy == "default" else tokens


def describe(c: LlavaConfig) -> Architecture:
    text = c.text()
    lm = text_model(text, rename=LANGUAGE, tied=c.tied(text))
    v, style = c.vision()
    notes = c.resized_note(v)
    if style is PIXTRAL:
        # Pixtral-12B is a llava with a Pixtral tower: the image at its own size up to image_size,
        # its patch rows each closed by an [IMG_BREAK] (the last by [IMG_END]) in the context
        pixels = min(c.image_size or v.image_size, v.image_size)
        side = -(-pixels // v.patch_size)
        tokens = _select(c, side * side, False)
        tower, _ = c.tower("model.vision_tower", context_tokens=tokens + side,
                           patches=side * side, image_side=pixels)
        notes = ()
    else:
        tokens = _select(c, v.patches, style.class_token)
        tower, _ = c.tower("model.vision_tower", context_tokens=tokens)
    d_v, d_t = v.hidden_size, lm.shape.hidden_size
    bias = c.multimodal_projector_bias
    p = "model.multi_modal_projector"
    proj = [
        *linear(f"{p}.linear_1", "linear_1", d_t, d_v * _feature_layers(c), bias=bias),
        *linear(f"{p}.linear_2", "linear_2", d_t, d_t, bias=bias),
    ]
    return _whole(lm, tower, projector(proj, tokens=tokens, d_in=d_v, d_out=d_t), notes=notes)


def _whole(lm: Architecture, *parts: Part, notes: tuple[str, ...] = ()) -> Architecture:
    """The language model's architecture (every field of it: its depth FLOPs, its cache's extra
    bytes …) with the other parts beside it."""
    return replace(lm, notes=(*lm.notes, *notes), parts=parts)


# ---- gemma3 ----------------------------------------------------------------------------------------


class Gemma3Config(CompositeConfig):
    """Gemma 3 (Gemma Team 2025): SigLIP tower, average-pooled to mm_tokens_per_image tokens, an
    RMSNorm and one projection matrix, the Gemma 3 text model; gemma3/modeling_gemma3.py."""

    transformers_class = "Gemma3Config"
    composite_type: ClassVar[str] = "gemma3"
    default_text: ClassVar[str] = "gemma3_text"
    default_vision: ClassVar[str] = "siglip_vision_model"
    default_tie: ClassVar[bool] = True
    tie_from_text: ClassVar[bool] = False

    mm_tokens_per_image: Size


def describe_gemma3(c: Gemma3Config) -> Architecture:
    text = c.text()
    lm = text_model(text, rename=LANGUAGE, tied=c.tied(text))
    tower, v = c.tower("model.vision_tower", context_tokens=c.mm_tokens_per_image)
    # the patch grid is average-pooled to mm_tokens_per_image tokens (AvgPool2d), the number the
    # processor puts in the context for one image
    tokens = c.mm_tokens_per_image
    d_v, d_t = v.hidden_size, lm.shape.hidden_size
    p = "model.multi_modal_projector"
    proj = [
        # a Parameter [d_v, d_t] the pooled tokens are multiplied by (torch.matmul)
        Tensor(f"{p}.mm_input_projection_weight", (d_v, d_t), "mm_input_projection", matmul=True),
        *norm(f"{p}.mm_soft_emb_norm", "mm_soft_emb_norm", d_v, bias=False),
    ]
    return _whole(lm, tower, projector(proj, tokens=tokens, d_in=d_v, d_out=d_t),
                  notes=c.resized_note(v))



# ---- mistral3 --------------------------------------------------------------------------------------


class Mistral3Config(FeatureLayersConfig):
    """Mistral 3 (Mistral Small 3.1): Pixtral tower (RMSNorm, gated MLP, rotary positions), a
    projector of RMSNorm, a patch merger (merging_layer [d_v, d_v·s²] over s × s patches) and llava's
    two linears; mistral3/modeling_mistral3.py. The top-level tie_word_embeddings (class default
    true) decides, whatever text_config says."""

    transformers_class = "Mistral3Config"
    composite_type: ClassVar[str] = "mistral3"
    default_text: ClassVar[str] = "mistral"
    default_vision: ClassVar[str] = "pixtral"
    default_tie: ClassVar[bool] = True
    tie_from_text: ClassVar[bool] = False

    vision_feature_layer: int | list[int]
    multimodal_projector_bias: bool
    spatial_merge_size: Size


def describe_mistral3(c: Mistral3Config) -> Architecture:
    text = c.text()
    lm = text_model(text, rename=LANGUAGE, tied=c.tied(text))
    v, _ = c.vision()
    s = c.spatial_merge_size
    # Pixtral takes an image at its own size up to image_size a side, in whole patches
    pixels = min(c.image_size or v.image_size, v.image_size)
    side = -(-pixels // v.patch_size)
    require(s <= side, "spatial_merge_size",
            f"spatial_merge_size ({s}) must not exceed the patches per side ({side})")
    merged = (side // s) ** 2
    # an image of rows × cols merged patches takes rows × (cols + 1) context tokens: an [IMG_BREAK]
    # after each row, [IMG_END] after the last (PixtralProcessor)
    tower, _ = c.tower("model.vision_tower", context_tokens=(side // s) * (side // s + 1),
                       patches=side * side, image_side=pixels)
    d_v, d_t = v.hidden_size, lm.shape.hidden_size
    bias = c.multimodal_projector_bias
    p = "model.multi_modal_projector"
    proj = [
        *norm(f"{p}.norm", "norm", d_v, bias=False),
        *linear(f"{p}.patch_merger.merging_layer", "patch_merger", d_v, d_v * s * s, bias=False),
        *linear(f"{p}.linear_1", "linear_1", d_t, d_v * _feature_layers(c), bias=bias),
        *linear(f"{p}.linear_2", "linear_2", d_t, d_t, bias=bias),
    ]
    return _whole(lm, tower, projector(proj, tokens=merged, d_in=d_v, d_out=d_t))



# ---- paligemma -------------------------------------------------------------------------------------


class PaliGemmaConfig(CompositeConfig):
    """PaliGemma (Beyer et al. 2024): SigLIP tower, one linear [projection_dim, d_v] (+ bias), a
    Gemma (PaliGemma 2: Gemma 2) language model; every patch is an image token.
    paligemma/modeling_paligemma.py."""

    transformers_class = "PaliGemmaConfig"
    composite_type: ClassVar[str] = "paligemma"
    default_text: ClassVar[str] = "gemma"
    default_vision: ClassVar[str] = "siglip_vision_model"
    default_tie: ClassVar[bool] = True
    tie_from_text: ClassVar[bool] = False

    projection_dim: Size


def describe_paligemma(c: PaliGemmaConfig) -> Architecture:
    text = c.text()
    lm = text_model(text, rename=LANGUAGE, tied=c.tied(text))
    v, _ = c.vision()
    tower, _ = c.tower("model.vision_tower", context_tokens=v.patches)
    p = "model.multi_modal_projector"
    proj = linear(f"{p}.linear", "linear", c.projection_dim, v.hidden_size, bias=True)
    return _whole(lm, tower, projector(proj, tokens=v.patches, d_in=v.hidden_size,
                                       d_out=c.projection_dim), notes=c.resized_note(v))



# ---- llava_next ------------------------------------------------------------------------------------


DEFAULT_PINPOINTS = [[336, 672], [672, 336], [672, 672], [1008, 336], [336, 1008]]


class LlavaNextConfig(LlavaConfig):
    """LLaVA-NeXT (Liu et al. 2024, "LLaVA-NeXT: improved reasoning, OCR, and world knowledge"):
    llava's parts plus image_newline [d_t] (counted with the projector), and "anyres" images: the
    image is fitted to the best of image_grid_pinpoints, cut into tiles of the tower's size, and
    the tower runs on each tile and on the whole image resized; llava_next/modeling_llava_next.py,
    processing_llava_next.py (_get_number_of_features)."""

    transformers_class = "LlavaNextConfig"
    composite_type: ClassVar[str] = "llava_next"
    tie_from_text: ClassVar[bool] = False

    image_grid_pinpoints: list[list[Size]] | None = None


def best_resolution(side: int, pinpoints: list[list[int]]) -> tuple[int, int]:
    """image_processing_utils.select_best_resolution for a square image of ``side`` pixels: the
    pinpoint that keeps the most of it, then wastes the least."""
    best, most, least = (pinpoints[0][0], pinpoints[0][1]), 0, float("inf")
    for height, width in pinpoints:
        scale = min(width / side, height / side)
        kept = min(int(side * scale) * int(side * scale), side * side)
        wasted = width * height - kept
        if kept > most or (kept == most and wasted < least):
            best, most, least = (height, width), kept, wasted
    return best


def anyres(
    side: int, pinpoints: list[list[int]], tile: int, per_side: int, max_tiles: int | None = None
) -> tuple[int, int, int]:
    """(tower runs, unpadded grid tokens, newline tokens) for a square image of ``side`` pixels
    with ``per_side`` features a tile side (LlavaNextProcessor._get_number_of_features /
    _get_unpadded_features); ``max_tiles``: LLaVA-OneVision's anyres_max_N, which shrinks a grid of
    more than about N tiles' features (ratio > 1.1) by that ratio a side."""
    best_h, best_w = best_resolution(side, pinpoints)
    scale_h, scale_w = best_h // tile, best_w // tile
    height, width = per_side * scale_h, per_side * scale_w
    if 1 > width / height:  # the original is square: aspect ratio 1
        padding = (height - int(round(side * (width / side), 7))) // 2
        height -= 2 * padding
    else:
        padding = (width - int(round(side * (height / side), 7))) // 2
        width -= 2 * padding
    if max_tiles is not None:
        ratio = math.sqrt(height * width / (max_tiles * per_side**2))
        if ratio > 1.1:
            return 1 + scale_h * scale_w, int(height // ratio) * int(width // ratio), int(height // ratio)
    return 1 + scale_h * scale_w, height * width, height


def describe_llava_next(c: LlavaNextConfig) -> Architecture:
    text = c.text()
    lm = text_model(text, rename=LANGUAGE, tied=c.tied(text))
    v, style = c.vision()
    v.check()  # a patch larger than the image leaves no grid to tile
    pinpoints = c.image_grid_pinpoints or DEFAULT_PINPOINTS
    require(bool(pinpoints) and all(len(p) == 2 and min(p) >= v.image_size for p in pinpoints),
            "image_grid_pinpoints",
            f"image_grid_pinpoints must be [height, width] pairs of at least the tower's image size "
            f"({v.image_size})")
    # per-image figures for a square image: --image-size, else the largest square the grid fits
    side = c.image_size or max(min(p) for p in pinpoints)
    runs, grid, newlines = anyres(side, pinpoints, v.image_size, v.image_size // v.patch_size)
    per_run = _select(c, v.patches, style.class_token)
    tower, _ = c.tower("model.vision_tower", context_tokens=per_run + grid + newlines,
                       image_side=side, passes=runs)
    d_v, d_t = v.hidden_size, lm.shape.hidden_size
    bias = c.multimodal_projector_bias
    p = "model.multi_modal_projector"
    proj = [
        *linear(f"{p}.linear_1", "linear_1", d_t, d_v * _feature_layers(c), bias=bias),
        *linear(f"{p}.linear_2", "linear_2", d_t, d_t, bias=bias),
        Tensor("model.image_newline", (d_t,), "image_newline"),  # appended after each grid row
    ]
    return _whole(lm, tower, projector(proj, tokens=runs * per_run, d_in=d_v, d_out=d_t))



# ---- llava_onevision -------------------------------------------------------------------------------


class LlavaOnevisionConfig(LlavaNextConfig):
    """LLaVA-OneVision (Li et al. 2024): llava_next's parts (a SigLIP tower, a Qwen2 language model by
    default), its anyres grid capped at about N tiles' features (vision_aspect_ratio anyres_max_N);
    llava_onevision/modeling_llava_onevision.py, processing_llava_onevision.py."""

    transformers_class = "LlavaOnevisionConfig"
    composite_type: ClassVar[str] = "llava_onevision"
    default_text: ClassVar[str] = "qwen2"
    default_vision: ClassVar[str] = "siglip_vision_model"
    tie_from_text: ClassVar[bool] = True

    vision_aspect_ratio: str


# LlavaOnevisionConfig.__post_init__: every [384·i, 384·j], i, j = 1..6
ONEVISION_PINPOINTS = [[384 * i, 384 * j] for i in range(1, 7) for j in range(1, 7)]


def describe_llava_onevision(c: LlavaOnevisionConfig) -> Architecture:
    text = c.text()
    lm = text_model(text, rename=LANGUAGE, tied=c.tied(text))
    v, style = c.vision()
    v.check()  # a patch larger than the image leaves no grid to tile
    pinpoints = c.image_grid_pinpoints or ONEVISION_PINPOINTS
    require(bool(pinpoints) and all(len(p) == 2 and min(p) >= v.image_size for p in pinpoints),
            "image_grid_pinpoints",
            f"image_grid_pinpoints must be [height, width] pairs of at least the tower's image size "
            f"({v.image_size})")
    ratio = c.vision_aspect_ratio
    digits = ratio.removeprefix("anyres_max_")
    require(ratio.startswith("anyres_max_") and digits.isdigit() and 0 < int(digits) <= 10**6,
            "vision_aspect_ratio", f"vision_aspect_ratio must be anyres_max_N, got {ratio!r}")
    side = c.image_size or max(min(p) for p in pinpoints)
    per_run = _select(c, v.patches, style.class_token)
    runs, grid, newlines = anyres(side, pinpoints, v.image_size, math.isqrt(v.patches),
                                  max_tiles=int(digits))
    # the grid, a newline after each of its rows, then the whole image's features
    tower, _ = c.tower("model.vision_tower", context_tokens=grid + newlines + per_run,
                       image_side=side, passes=runs)
    d_v, d_t = v.hidden_size, lm.shape.hidden_size
    bias = c.multimodal_projector_bias
    p = "model.multi_modal_projector"
    proj = [
        *linear(f"{p}.linear_1", "linear_1", d_t, d_v * _feature_layers(c), bias=bias),
        *linear(f"{p}.linear_2", "linear_2", d_t, d_t, bias=bias),
        Tensor("model.image_newline", (d_t,), "image_newline"),
    ]
    return _whole(lm, tower, projector(proj, tokens=runs * per_run, d_in=d_v, d_out=d_t))



# ---- aya_vision ------------------------------------------------------------------------------------

PER_TILE = ("per-image figures are for one tile at the tower's size: the processor cuts a large "
            "image into several tiles (and a thumbnail), each costing these, with a few marker "
            "tokens around them")


class AyaVisionConfig(CompositeConfig):
    """Aya Vision (Cohere 2025): SigLIP tower, pixel shuffle by downsample_factor f (f² tokens into
    one), LayerNorm [d_v·f²], a SwiGLU projector linear_1 [A, d_v·f²], linear_2 [d_t, A/2] (A =
    alignment_intermediate_size, default d_t), a Cohere 2 language model;
    aya_vision/modeling_aya_vision.py."""

    transformers_class = "AyaVisionConfig"
    composite_type: ClassVar[str] = "aya_vision"
    default_text: ClassVar[str] = "cohere2"
    default_vision: ClassVar[str] = "siglip_vision_model"
    default_tie: ClassVar[bool] = True
    tie_from_text: ClassVar[bool] = False

    vision_feature_layer: int | list[int]
    vision_feature_select_strategy: str
    downsample_factor: Size
    alignment_intermediate_size: Size | None = None


def describe_aya_vision(c: AyaVisionConfig) -> Architecture:
    text = c.text()
    lm = text_model(text, rename=LANGUAGE, tied=c.tied(text))
    v, _ = c.vision()
    f = c.downsample_factor
    side = v.image_size // v.patch_size
    require(f <= side, "downsample_factor",
            f"downsample_factor ({f}) must not exceed the patches per side ({side})")
    tokens = (side // f) ** 2  # pixel shuffle: f × f patches into one token
    tower, _ = c.tower("model.vision_tower", context_tokens=tokens)
    d_v, d_t = v.hidden_size, lm.shape.hidden_size
    a = c.alignment_intermediate_size or d_t
    p = "model.multi_modal_projector"
    proj = [
        *norm(f"{p}.layernorm", "layernorm", d_v * f * f, bias=True),
        *linear(f"{p}.linear_1", "linear_1", a, d_v * f * f, bias=True),
        *linear(f"{p}.linear_2", "linear_2", d_t, a // 2, bias=True),
    ]
    return _whole(lm, tower, projector(proj, tokens=tokens, d_in=d_v, d_out=d_t),
                  notes=(PER_TILE,))



# ---- internvl --------------------------------------------------------------------------------------


class InternVLConfig(CompositeConfig):
    """InternVL 3 (Zhu et al. 2025): InternViT tower (class token and positions as Parameters, layer
    scale, optional q/k norms), its class token dropped, pixel shuffle by 1 / downsample_ratio, a
    projector LayerNorm [d_v·s²], linear_1 [d_t, d_v·s²], linear_2 [d_t, d_t], a Qwen2 language
    model; internvl/modeling_internvl.py."""

    transformers_class = "InternVLConfig"
    composite_type: ClassVar[str] = "internvl"
    default_text: ClassVar[str] = "qwen2"
    default_vision: ClassVar[str] = "internvl_vision"
    default_tie: ClassVar[bool] = True
    tie_from_text: ClassVar[bool] = False

    downsample_ratio: float
    vision_feature_layer: int | list[int]
    vision_feature_select_strategy: str


def describe_internvl(c: InternVLConfig) -> Architecture:
    text = c.text()
    lm = text_model(text, rename=LANGUAGE, tied=c.tied(text))
    v, _ = c.vision()
    ratio = c.downsample_ratio
    require(0 < ratio <= 1 and 1 / ratio <= MAX_SIZE, "downsample_ratio",
            f"downsample_ratio must be in (0, 1] and not below 1 / (2^53 - 1), got {ratio}")
    s = int(1 / ratio)  # int(1 / downsample_ratio) as the projector's width has it
    (h, w), (ph, pw) = v.image_hw, v.patch_hw
    tokens = int(h // ph * ratio) * int(w // pw * ratio)  # pixel_shuffle's view sizes
    tower, _ = c.tower("model.vision_tower", context_tokens=tokens)
    d_v, d_t = v.hidden_size, lm.shape.hidden_size
    p = "model.multi_modal_projector"
    proj = [
        *norm(f"{p}.layer_norm", "layer_norm", d_v * s * s, bias=True),
        *linear(f"{p}.linear_1", "linear_1", d_t, d_v * s * s, bias=True),
        *linear(f"{p}.linear_2", "linear_2", d_t, d_t, bias=True),
    ]
    return _whole(lm, tower, projector(proj, tokens=tokens, d_in=d_v, d_out=d_t),
                  notes=(PER_TILE,))



# ---- idefics3 / smolvlm ----------------------------------------------------------------------------


class Idefics3Config(CompositeConfig):
    """Idefics3 (Laurençon et al. 2024) and SmolVLM (Marafioti et al. 2025): a SigLIP tower
    (model.vision_model), pixel shuffle by scale_factor s, one linear [d_t, d_v·s²] without bias
    (model.connector), a Llama language model under model.text_model;
    idefics3/modeling_idefics3.py, smolvlm/modeling_smolvlm.py."""

    transformers_class = "Idefics3Config"
    composite_type: ClassVar[str] = "idefics3"
    default_vision: ClassVar[str] = "idefics3_vision"
    tie_from_text: ClassVar[bool] = False

    scale_factor: Size


class SmolVLMConfig(Idefics3Config):
    transformers_class = "SmolVLMConfig"
    composite_type: ClassVar[str] = "smolvlm"
    default_vision: ClassVar[str] = "smolvlm_vision"


def describe_idefics3(c: Idefics3Config) -> Architecture:
    text = c.text()
    lm = text_model(text, rename=prefixer("model.", "model.text_model."), tied=c.tied(text))
    v, _ = c.vision()
    f = c.scale_factor
    side = v.image_size // v.patch_size
    require(f <= side, "scale_factor",
            f"scale_factor ({f}) must not exceed the patches per side ({side}): the pixel shuffle "
            f"merges {f} × {f} patches into a token, and a {v.image_size} px image holds "
            f"{side} of {v.patch_size} px per side (transformers' vision forward fails)")
    tokens = v.patches // (f * f)  # pixel shuffle: s × s patches into one token
    tower, _ = c.tower("model.vision_model", context_tokens=tokens)
    d_v, d_t = v.hidden_size, lm.shape.hidden_size
    proj = linear("model.connector.modality_projection.proj", "modality_projection", d_t,
                  d_v * f * f, bias=False)
    return _whole(lm, tower, projector(proj, tokens=tokens, d_in=d_v, d_out=d_t),
                  notes=(PER_TILE,))



# ---- got_ocr2 --------------------------------------------------------------------------------------


class GotOcr2Config(CompositeConfig):
    """GOT-OCR 2.0 (Wei et al. 2024): SAM ViT-B tower with its neck, a projector of two stride-2
    3 × 3 convolutions (conv_upsampler1 [2c, c, 3, 3], conv_upsampler2 [d_t, 2c, 3, 3], no bias)
    and a linear [d_t, d_t], a Qwen2 language model; got_ocr2/modeling_got_ocr2.py."""

    transformers_class = "GotOcr2Config"
    composite_type: ClassVar[str] = "got_ocr2"
    default_text: ClassVar[str] = "qwen2"
    default_vision: ClassVar[str] = "got_ocr2_vision"
    default_tie: ClassVar[bool] = True
    tie_from_text: ClassVar[bool] = False


def describe_got_ocr2(c: GotOcr2Config) -> Architecture:
    text = c.text()
    lm = text_model(text, rename=LANGUAGE, tied=c.tied(text))
    fields = c.sub("vision_config", "got_ocr2_vision")
    v = read_sub(SamVisionConfig, fields, "vision_config")
    tower, g = sam_tower("model.vision_tower", v)
    c_out, d_t = v.output_channels, lm.shape.hidden_size
    # each stride-2 convolution with padding 1 halves the grid (rounding up)
    half = (g + 1) // 2
    tokens = ((half + 1) // 2) ** 2
    tower = replace(tower, context_tokens=tokens)
    p = "model.multi_modal_projector"
    proj = [
        Tensor(f"{p}.conv_upsampler1.weight", (2 * c_out, c_out, 3, 3), "conv_upsampler1", matmul=True),
        Tensor(f"{p}.conv_upsampler2.weight", (d_t, 2 * c_out, 3, 3), "conv_upsampler2", matmul=True),
        *linear(f"{p}.multimodal_projector", "multimodal_projector", d_t, d_t, bias=True),
    ]
    part = projector(proj, tokens=tokens, d_in=c_out, d_out=d_t)
    part = replace(part, input_tokens=(("conv_upsampler1", half * half), ("", tokens)))
    return _whole(lm, tower, part, notes=c.resized_note(v))



# ---- qwen2_vl / qwen2_5_vl -------------------------------------------------------------------------

# text_config model types whose language model is a text family's under another name
TEXT_AS = {
    "qwen2_vl_text": "qwen2",
    "qwen2_5_vl_text": "qwen2",
    "qwen3_vl_text": "qwen3",
    "qwen3_vl_moe_text": "qwen3_moe",
}


class Qwen2VLConfig(CompositeConfig):
    """Qwen2-VL (Wang et al. 2024) and Qwen2.5-VL (Bai et al. 2025): a Qwen-ViT tower (model.visual;
    Qwen2.5-VL: RMSNorm, gated MLP, windowed attention but in fullatt_block_indexes), its patch
    merger (LayerNorm, mlp.0 [d·s², d·s²], mlp.2 [d_out, d·s²]: the projector), a Qwen2 language
    model (qwen2_vl/modeling_qwen2_vl.py, qwen2_5_vl/modeling_qwen2_5_vl.py). A config without
    text_config keeps its text fields at the top level (Qwen2VLConfig.__post_init__)."""

    # the top level's other fields are the text model's in a flat (pre-v5) config
    model_config = ConfigDict(**{**FamilyConfig.model_config, "extra": "allow"})

    transformers_class = "Qwen2VLConfig"
    composite_type: ClassVar[str] = "qwen2_vl"
    default_text: ClassVar[str] = "qwen2_vl_text"
    default_vision: ClassVar[str] = "qwen2_vl_vision"
    tie_from_text: ClassVar[bool] = True

    def text(self) -> dict[str, Any]:
        from llmcalc.inputs import family_defaults

        if self.text_config is None:
            flat = {k: v for k, v in (self.model_extra or {}).items()
                    if k in (family_defaults.sub_defaults(self.default_text) or {}) or k in FLAT_TEXT}
            fields = {**(family_defaults.sub_defaults(self.default_text) or {}), **flat,
                      "model_type": self.default_text}
        else:
            fields = self.sub("text_config", self.default_text)
        kind = str(fields.get("model_type"))
        if kind in ("qwen2_vl_text", "qwen2_5_vl_text"):
            # Qwen2VLAttention / Qwen2_5_VLAttention: head_dim = hidden_size // heads, whatever a
            # config's head_dim says (Qwen2's own attention reads it), and which must divide
            d, h = fields.get("hidden_size"), fields.get("num_attention_heads")
            if isinstance(d, int) and isinstance(h, int) and h > 0:
                require(d % h == 0, "text_config.num_attention_heads",
                        f"text_config.num_attention_heads ({h}) must divide hidden_size ({d}): "
                        "the text attention of Qwen2-VL and Qwen2.5-VL rejects a remainder")
            fields = {k: v for k, v in fields.items() if k != "head_dim"}
        return {**fields, "model_type": TEXT_AS.get(kind, kind)}


class Qwen2_5_VLConfig(Qwen2VLConfig):
    transformers_class = "Qwen2_5_VLConfig"
    composite_type: ClassVar[str] = "qwen2_5_vl"
    default_text: ClassVar[str] = "qwen2_5_vl_text"
    default_vision: ClassVar[str] = "qwen2_5_vl_vision"


# text fields a flat config may give that have no default of their own (None by default)
FLAT_TEXT = ("num_key_value_heads", "head_dim", "layer_types", "sliding_window")


def describe_qwen2_vl(c: Qwen2VLConfig) -> Architecture:
    from llmcalc.inputs import family_defaults
    from llmcalc.model.tower_flops import part_flops

    text = c.text()
    lm = text_model(text, rename=LANGUAGE, tied=c.tied(text))
    given = c.vision_config
    if isinstance(given, dict) and given.get("model_type") == c.composite_type:
        given = {**given, "model_type": c.default_vision}  # an old checkpoint's name (__post_init__)
    fields = sub_fields(given, "vision_config", c.default_vision,
                        (family_defaults.sub_defaults(c.composite_type) or {}).get("vision_config")
                        or {})
    if c.image_size is not None:
        fields = {**fields, "image_size": c.image_size}
    v = read_sub(QwenVisionConfig, fields, "vision_config")
    qwen25 = c.composite_type == "qwen2_5_vl"
    style = QWEN2_5_VIT if qwen25 else QWEN2_VIT
    m, grid = v.spatial_merge_size, v.grid()
    require(grid % m == 0, "vision_config.spatial_merge_size",
            f"vision_config.spatial_merge_size ({m}) must divide the patch grid ({grid})")
    merged = (grid // m) ** 2
    tower = vit("model.visual", v, style, context_tokens=merged, patches=grid * grid,
                image_side=v.image_size)
    d = v.hidden_size
    d_out = (v.out_hidden_size or d) if qwen25 else lm.shape.hidden_size
    if not qwen25:
        d_out = int(fields.get("hidden_size", d_out))  # Qwen2VLVisionConfig.hidden_size: the output
    p = "model.visual.merger"
    proj = [
        *norm(f"{p}.ln_q", "ln_q", d, bias=not qwen25),
        *linear(f"{p}.mlp.0", "mlp/0", d * m * m, d * m * m, bias=True),
        *linear(f"{p}.mlp.2", "mlp/2", d_out, d * m * m, bias=True),
    ]
    if qwen25 and v.window_size is not None:
        tower = _windowed(tower, v, grid, part_flops(tower))
    side = v.image_size
    note = (f"per-image figures for a {side}×{side} image, resized to {grid * v.patch_size} px "
            "(--image-size for another; the tower takes images at their own size)")
    return _whole(lm, tower, projector(proj, tokens=merged, d_in=d, d_out=d_out), notes=(note,))


def _windowed(tower: Part, v: QwenVisionConfig, grid: int, base: Any) -> Part:
    """Qwen2.5-VL's attention: windows of window_size pixels (in merged units: window_size // s //
    p a side, smaller at the edge) in every layer but fullatt_block_indexes, which see the image."""
    m = v.spatial_merge_size
    units = grid // m
    w = max(1, (v.window_size or 1) // m // v.patch_size)
    q, r = divmod(units, w)
    sides = q * w * w + r * r  # Σ over a side's windows of (units a side)²
    window_pairs = (m**4) * sides * sides  # Σ over windows of (tokens in it)²
    full = {i for i in (v.fullatt_block_indexes or []) if 0 <= i < v.num_hidden_layers}
    group = tower.layer_groups[0]
    attention = group.attention
    assert attention is not None
    per_pair = 2 * attention.heads * (attention.qk_head_dim + attention.v_head_dim)
    n = grid * grid
    pairs = len(full) * n * n + (v.num_hidden_layers - len(full)) * window_pairs
    return replace(tower, input_flops=(base.weight, pairs * per_pair))



# ---- llama4 ----------------------------------------------------------------------------------------


class Llama4Config(CompositeConfig):
    """Llama 4 (Meta 2025): a ViT (unfolded patches into a Linear, class token, 2-D rotary
    positions plus a learned table), pixel shuffle by pixel_shuffle_ratio and a two-layer adapter
    (fc1 [projector_input_dim, intermediate_size], fc2 [projector_output_dim]², no biases), a
    projector linear_1 [d_t, vision_output_dim] without bias, and the Llama 4 causal LM under language_model;
    llama4/modeling_llama4.py. The head is tied as text_config says (the causal LM inside ties its
    own)."""

    transformers_class = "Llama4Config"
    composite_type: ClassVar[str] = "llama4"
    default_text: ClassVar[str] = "llama4_text"
    default_vision: ClassVar[str] = "llama4_vision_model"
    tie_from_text: ClassVar[bool] = True


class Llama4VisionConfig(VisionConfig):
    transformers_class = "Llama4VisionConfig"

    image_size: Size | list[Size]  # type: ignore[assignment]
    patch_size: Size | list[Size]  # type: ignore[assignment]
    vision_output_dim: Size
    pixel_shuffle_ratio: float = 0.5
    projector_input_dim: Size
    projector_output_dim: Size


def describe_llama4(c: Llama4Config) -> Architecture:
    text = c.text()
    tied = bool(text.get("tie_word_embeddings"))
    lm = text_model(text, tied=tied, rename=lambda name: "language_model." + name)
    fields = c.sub("vision_config", c.default_vision)
    v = read_sub(Llama4VisionConfig, fields, "vision_config")
    ratio = v.pixel_shuffle_ratio
    require(0 < ratio <= 1, "vision_config.pixel_shuffle_ratio",
            f"vision_config.pixel_shuffle_ratio must be in (0, 1], got {ratio}")
    (h, w), (ph, pw) = v.image_hw, v.patch_hw
    tokens = int(h // ph * ratio) * int(w // pw * ratio)  # pixel_shuffle's reshapes
    tower = vit("vision_model", v, LLAMA4_VIT, context_tokens=tokens)
    a = "vision_model.vision_adapter.mlp"
    adapter = [
        *linear(f"{a}.fc1", "adapter/fc1", v.projector_input_dim, v.intermediate_size, bias=False),
        *linear(f"{a}.fc2", "adapter/fc2", v.projector_output_dim, v.projector_output_dim,
                bias=False),
    ]
    tower = replace(tower, tensors=(*tower.tensors, *adapter),
                    input_tokens=(*tower.input_tokens, ("adapter", tokens)))
    d_t = lm.shape.hidden_size
    # Llama4MultiModalProjector: bias=False whatever multi_modal_projector_bias says
    proj = linear("multi_modal_projector.linear_1", "linear_1", d_t, v.vision_output_dim,
                  bias=False)
    return _whole(lm, tower, projector(proj, tokens=tokens, d_in=v.vision_output_dim, d_out=d_t),
                  notes=(PER_TILE,))



class Qwen3VLConfig(Qwen2VLConfig):
    """Qwen3-VL (Qwen Team 2025): the Qwen-ViT with a biased patch conv and a learned position table
    (num_position_embeddings, interpolated to the grid), the patch merger (LayerNorm [d], linear_fc1
    [d·s², d·s²], linear_fc2 [d_out, d·s²]) and one deepstack merger per deepstack_visual_indexes
    entry (LayerNorm [d·s²], the same two linears) whose tokens are added inside the language
    model; a Qwen3 language model; qwen3_vl/modeling_qwen3_vl.py."""

    transformers_class = "Qwen3VLConfig"
    composite_type: ClassVar[str] = "qwen3_vl"
    default_text: ClassVar[str] = "qwen3_vl_text"
    default_vision: ClassVar[str] = "qwen3_vl_vision"
    tie_from_text: ClassVar[bool] = False
    # whether the tower builds deepstack_merger_list (Qwen3.5's does not, whatever
    # vision_config.deepstack_visual_indexes says)
    deepstack: ClassVar[bool] = True

    def text(self) -> dict[str, Any]:
        fields = self.sub("text_config", self.default_text)
        kind = str(fields.get("model_type"))
        return {**fields, "model_type": TEXT_AS.get(kind, kind)}


class Qwen3VLMoeConfig(Qwen3VLConfig):
    """Qwen3-VL-MoE: Qwen3-VL's tower and mergers, a Qwen3-MoE language model."""

    transformers_class = "Qwen3VLMoeConfig"
    composite_type: ClassVar[str] = "qwen3_vl_moe"
    default_text: ClassVar[str] = "qwen3_vl_moe_text"
    default_vision: ClassVar[str] = "qwen3_vl_moe_vision"


class Qwen3_5Config(Qwen3VLConfig):
    """Qwen3.5 (Qwen Team 2026): Qwen3-VL's tower (biased patch conv, learned position table) and
    patch merger, no deepstack mergers (Qwen3_5VisionModel builds none), and the hybrid language
    model — gated DeltaNet in three of four layers, gated attention in the fourth (qwen3_5_text,
    families/qwen3_next.py); qwen3_5/modeling_qwen3_5.py. Qwen3.6 checkpoints are this type."""

    transformers_class = "Qwen3_5Config"
    composite_type: ClassVar[str] = "qwen3_5"
    default_text: ClassVar[str] = "qwen3_5_text"
    default_vision: ClassVar[str] = "qwen3_5_vision"
    deepstack: ClassVar[bool] = False


class Qwen3_5MoeConfig(Qwen3_5Config):
    """Qwen3.5-MoE: Qwen3.5's tower and merger, the routed hybrid language model
    (qwen3_5_moe_text); qwen3_5_moe/modeling_qwen3_5_moe.py."""

    transformers_class = "Qwen3_5MoeConfig"
    composite_type: ClassVar[str] = "qwen3_5_moe"
    default_text: ClassVar[str] = "qwen3_5_moe_text"
    default_vision: ClassVar[str] = "qwen3_5_moe_vision"


class Qwen4ExpConfig(Qwen3_5MoeConfig):
    """Qwen4-Exp (Qwen3.8-Flash-Next): Qwen3.5-MoE's tower and merger (Qwen4ExpVisionModel is
    Qwen3_5MoeVisionModel under another name) and the Qwen4-Exp language model — hyper-connections,
    QSA attention, per-layer n-gram embeddings (qwen4_exp_text, families/qwen4_exp.py);
    qwen4_exp/modular_qwen4_exp.py."""

    transformers_class = "Qwen4ExpConfig"
    composite_type: ClassVar[str] = "qwen4_exp"
    default_text: ClassVar[str] = "qwen4_exp_text"
    default_vision: ClassVar[str] = "qwen4_exp_vision"


def describe_qwen3_vl(c: Qwen3VLConfig) -> Architecture:
    from llmcalc.inputs import family_defaults

    text = c.text()
    lm = text_model(text, rename=LANGUAGE, tied=c.tied(text))
    given = c.vision_config
    if isinstance(given, dict) and given.get("model_type") == c.composite_type:
        given = {**given, "model_type": c.default_vision}
    fields = sub_fields(given, "vision_config", c.default_vision,
                        (family_defaults.sub_defaults(c.composite_type) or {}).get("vision_config")
                        or {})
    if c.image_size is not None:
        fields = {**fields, "image_size": c.image_size}
    v = read_sub(QwenVisionConfig, fields, "vision_config")
    m, grid = v.spatial_merge_size, v.grid()
    require(grid % m == 0, "vision_config.spatial_merge_size",
            f"vision_config.spatial_merge_size ({m}) must divide the patch grid ({grid})")
    merged = (grid // m) ** 2
    positions = v.num_position_embeddings
    require(positions is not None, "vision_config.num_position_embeddings",
            "vision_config.num_position_embeddings is required for Qwen3-VL")
    tower = vit("model.visual", v, QWEN3_VIT, context_tokens=merged, patches=grid * grid,
                image_side=v.image_size, positions=positions)
    d, d_out = v.hidden_size, v.out_hidden_size or lm.shape.hidden_size
    wide = d * m * m

    def merger(p: str, norm_width: int) -> list[Tensor]:
        return [
            *norm(f"{p}.norm", "norm", norm_width, bias=True),
            *linear(f"{p}.linear_fc1", "linear_fc1", wide, wide, bias=True),
            *linear(f"{p}.linear_fc2", "linear_fc2", d_out, wide, bias=True),
        ]

    deepstack = len(v.deepstack_visual_indexes or []) if c.deepstack else 0
    proj = [
        *merger("model.visual.merger", d),
        *(t for k in range(deepstack)
          for t in merger(f"model.visual.deepstack_merger_list.{k}", wide)),
    ]
    side = v.image_size
    note = (f"per-image figures for a {side}×{side} image, resized to {grid * v.patch_size} px "
            "(--image-size for another; the tower takes images at their own size)")
    return _whole(lm, tower, projector(proj, tokens=merged, d_in=d, d_out=d_out), notes=(note,))



# ---- mllama ----------------------------------------------------------------------------------------


class MllamaConfig(CompositeConfig):
    """Llama 3.2 Vision (Meta 2024): a tiled ViT with local and gated global layers
    (:func:`_vision.mllama_tower`), one linear projector [d_t, vision_output_dim] (+ bias) and a
    Llama 3.1 language model in which the layers of cross_attention_layers replace self-attention
    with gated cross-attention over the image's tokens; mllama/modeling_mllama.py. The head is never
    tied: embed_tokens has 8 more rows than lm_head (the image token lives there)."""

    transformers_class = "MllamaConfig"
    composite_type: ClassVar[str] = "mllama"
    default_text: ClassVar[str] = "mllama_text_model"
    default_vision: ClassVar[str] = "mllama_vision_model"


class MllamaTextConfig(DecoderConfig):
    """MllamaTextConfig in the fields it shapes tensors with (head_dim is always hidden / heads)."""

    transformers_class = "MllamaTextConfig"

    cross_attention_layers: list[int] | None = None


# MllamaTextConfig.__post_init__'s list when none is given
CROSS_ATTENTION_LAYERS = [3, 8, 13, 18, 23, 28, 33, 38]


def mllama_text(fields: dict[str, Any]) -> Architecture:
    """MllamaTextModel under model.language_model and lm_head: embed_tokens [V + 8, d], Llama
    layers (RMSNorms, GQA q/k/v/o without biases, SwiGLU MLP), a final norm, lm_head [V, d] untied.
    A cross-attention layer (MllamaCrossAttentionDecoderLayer) has no self-attention: cross_attn
    q [h·hd, d], k, v [kv·hd, d] over the vision tokens (once per image, cached), o [d, h·hd],
    q_norm, k_norm [hd], tanh gates cross_attn_attn_gate and cross_attn_mlp_gate [1], its MLP and
    norms. Indices of cross_attention_layers outside the layers are ignored, as transformers does."""
    c = read_sub(MllamaTextConfig, fields, "text_config")
    d, v, ff, L = c.hidden_size, c.vocab_size, c.intermediate_size, c.num_hidden_layers
    h = c.num_attention_heads
    hd = resolve_head_dim(d, h, hidden_field="text_config.hidden_size",
                          heads_field="text_config.num_attention_heads")
    kv = resolve_kv_heads(h, c.num_key_value_heads, heads_field="text_config.num_attention_heads",
                          kv_field="text_config.num_key_value_heads")
    given = c.cross_attention_layers
    cross = [i for i in (CROSS_ATTENTION_LAYERS if given is None else given) if 0 <= i < L]
    p = "model.language_model.layers.{i}"
    around = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=False),
        *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=False),
        *swiglu(f"{p}.mlp", "mlp", d, ff),
    ]
    a = f"{p}.cross_attn"
    cross_layer = [
        *linear(f"{a}.q_proj", "cross_attn/q_proj", h * hd, d, bias=False),
        *(replace(t, per_source=True) for t in (
            *linear(f"{a}.k_proj", "cross_attn/k_proj", kv * hd, d, bias=False),
            *linear(f"{a}.v_proj", "cross_attn/v_proj", kv * hd, d, bias=False))),
        *linear(f"{a}.o_proj", "cross_attn/o_proj", d, h * hd, bias=False),
        *norm(f"{a}.q_norm", "cross_attn/q_norm", hd, bias=False),
        *norm(f"{a}.k_norm", "cross_attn/k_norm", hd, bias=False),
        Tensor(f"{p}.cross_attn_attn_gate", (1,), "cross_attn/gate"),
        Tensor(f"{p}.cross_attn_mlp_gate", (1,), "mlp/gate"),
        *around,
    ]
    self_layer = [*gqa_projections(f"{p}.self_attn", d, h, kv, hd, bias=False), *around]
    attention = Attention(h, kv, hd, hd)
    plan = override_plan({"self_attention": LayerSet.span(0, L)}, cross, "cross_attention")
    groups = tuple(
        LayerGroup(kind, layers, tuple(cross_layer), None,
                   cross_attention=Attention(h, kv, hd, hd, causal=False))
        if kind == "cross_attention" else LayerGroup(kind, layers, tuple(self_layer), attention)
        for kind, layers in plan.items()
    )
    embed = "model.language_model.embed_tokens"
    tensors = (
        embedding(embed, "embed/tokens", v + 8, d),
        *norm("model.language_model.norm", "final_norm", d, bias=False),
        *lm_head("lm_head", v, d, tied_to=None),
    )
    shape = Shape(L, d, h, kv, hd, ff, v, False, c.max_position_embeddings)
    return Architecture(shape=shape, tensors=tensors, layer_groups=groups)


def describe_mllama(c: MllamaConfig) -> Architecture:
    lm = mllama_text(c.text())
    v = read_sub(MllamaVisionConfig, c.sub("vision_config", c.default_vision), "vision_config")
    tower = mllama_tower("model.vision_model", v)
    d_t = lm.shape.hidden_size
    # MllamaModel.multi_modal_projector: Linear(vision_output_dim, d_t) on every tile's tokens
    proj = linear("model.multi_modal_projector", "multi_modal_projector", d_t, v.vision_output_dim,
                  bias=True)
    tiles = v.max_num_tiles
    note = (f"one image is {tiles} tiles of {v.image_size}×{v.image_size} pixels (the processor "
            f"pads every image to max_num_tiles): one <|image|> token in the context, "
            f"{tower.cross_tokens:,} vision tokens in each cross-attention layer's cache; "
            "without an image the cross-attention layers are skipped")
    # the processor fits any image into at most max_num_tiles tiles of image_size: --image-size
    # changes nothing
    resized = () if c.image_size is None or c.image_size == v.image_size else (
        f"image_size {c.image_size}: the processor fits every image into at most {tiles} tiles "
        f"of {v.image_size}×{v.image_size} pixels, so the per-image figures are those",)
    return _whole(lm, tower, projector(proj, tokens=tower.cross_tokens, d_in=v.vision_output_dim,
                                       d_out=d_t), notes=(note, *resized))


# ---- fuyu ------------------------------------------------------------------------------------------

# FuyuConfig.__post_init__: without text_config, these top-level fields are the text model's
FUYU_TEXT = ("vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size",
             "num_hidden_layers", "num_attention_heads", "hidden_act", "initializer_range",
             "layer_norm_eps", "use_cache", "qk_layernorm", "hidden_dropout", "attention_dropout",
             "eos_token_id", "rope_scaling", "rope_theta", "rope_parameters", "partial_rotary_factor")
# image_processing_fuyu.py FuyuImageProcessor.size: a larger image is scaled down to fit
FUYU_MAX_HW = (1080, 1920)


class FuyuConfig(CompositeConfig):
    """Fuyu (Adept 2023, "Fuyu-8B: A Multimodal Architecture for AI Agents"): no vision tower; each
    patch_size² · num_channels patch goes through one linear, vision_embed_tokens [d_t, p²·c] with
    bias, into a Persimmon language model; fuyu/modeling_fuyu.py. A config without text_config
    keeps its text fields at the top level (FuyuConfig.__post_init__)."""

    model_config = ConfigDict(**{**FamilyConfig.model_config, "extra": "allow"})

    transformers_class = "FuyuConfig"
    composite_type: ClassVar[str] = "fuyu"
    default_text: ClassVar[str] = "persimmon"
    tie_from_text: ClassVar[bool] = False

    patch_size: Size
    num_channels: Size
    # FuyuConfig.image_size: the side of the square image the per-image figures assume

    def text(self) -> dict[str, Any]:
        if self.text_config is not None:
            return self.sub("text_config", self.default_text)
        flat = {k: v for k, v in (self.model_extra or {}).items() if k in FUYU_TEXT}
        return {**self.sub("text_config", self.default_text), **flat}


def fuyu_image_tokens(side: int, patch: int) -> tuple[int, int]:
    """(patches, context tokens) of a square image of ``side`` pixels (processing_fuyu.py): scaled
    down to fit 1080 × 1920, cut into rows × cols patches (the last row and column padded); each
    row closed by |NEWLINE|, the image by <s>."""
    h = w = side
    scale = min(FUYU_MAX_HW[0] / side, FUYU_MAX_HW[1] / side)
    if scale < 1:
        h, w = int(side * scale), int(side * scale)
    rows, cols = -(-h // patch), -(-w // patch)
    return rows * cols, rows * (cols + 1) + 1


def describe_fuyu(c: FuyuConfig) -> Architecture:
    text = c.text()
    lm = text_model(text, rename=LANGUAGE, tied=c.tied(text))
    side = c.image_size or 300
    patches, tokens = fuyu_image_tokens(side, c.patch_size)
    d_t, d_in = lm.shape.hidden_size, c.patch_size * c.patch_size * c.num_channels
    embed = linear("model.vision_embed_tokens", "vision_embed_tokens", d_t, d_in, bias=True)
    # the patches meet the linear; the newline and <s> tokens are the language model's embeddings
    part = Part(name="vision", tensors=tuple(embed), shape=Shape(0, d_t, 0, 0, 0, d_in, 0, False),
                input_tokens=(("", patches),), context_tokens=tokens, input_size=side)
    note = (f"per-image figures for a {side}×{side} image: {patches} patches of {c.patch_size} px, "
            f"{tokens} context tokens with a |NEWLINE| a row and <s> (--image-size for another)")
    return _whole(lm, part, notes=(note,))
