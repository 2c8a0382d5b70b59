"""Phi-4-multimodal (Microsoft 2025, "Phi-4-Mini Technical Report: Compact yet Powerful Multimodal
Language Models via Mixture-of-LoRAs") as a whole model: transformers
phi4_multimodal/modeling_phi4_multimodal.py ``Phi4MultimodalForCausalLM`` (the class the causal-LM
auto mapping builds: it holds every part), configuration_phi4_multimodal.py.

- language: the Phi-4-mini decoder, Phi-3's tensors under the same names (:mod:`phi3`), its fields
  at the config's top level;
- vision: a SigLIP tower with its attention-pooling head (``…image_embed.img_processor``; the
  features are read at ``feature_layer``, but every layer and the head run);
- projector: img_projection_up [d_t, d_v], img_projection_down [d_t, d_t] (biases, GELU between)
  and two learned separators, global_img_feature_extensor [1, 1, d_v] and sub_img_feature_extensor
  [1, 1, 1, d_v];
- audio: a Conformer encoder (:mod:`_audio`), and audio_projector: up [d_t, d_a · downsample_rate]
  and down [d_t, d_t] twice, for speech alone and for speech with an image (one pair runs).

An image is cut into crops of crop_size pixels (a square of side S: k × k crops, k = ⌈S / crop⌉ up
to the processor's 36 crops, 6 a side) plus the whole image resized to one crop; the tower runs on
each. Its g × g pooled features (g = ⌈crop / patch / 2⌉, AvgPool 2 × 2) give the context g² + g
global tokens (a separator after each row), one global separator, then (k·g)² + k·g sub-image
tokens: 256 + 1 + 256·k² + 16·k + 16 at 448 px and patch 14, as
image_processing_phi4_multimodal.py counts them.

Not built by transformers: the vision and speech LoRA adapters of the original checkpoint
(``vision_lora``, ``speech_lora``: lora_A [r, in], lora_B [out, r] on qkv_proj, o_proj,
gate_up_proj and down_proj of every layer); the converter drops them (they ship as PEFT adapters).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from llmcalc.families._audio import ConformerConfig
from llmcalc.families._audio import conformer
from llmcalc.families._base import Architecture
from llmcalc.families._base import FieldError
from llmcalc.families._base import Size
from llmcalc.families._base import linear
from llmcalc.families._base import require
from llmcalc.families._vision import SIGLIP
from llmcalc.families._vision import VisionConfig
from llmcalc.families._vision import projector
from llmcalc.families._vision import read_sub
from llmcalc.families._vision import sub_fields
from llmcalc.families._vision import vit
from llmcalc.families.phi3 import Phi3Config
from llmcalc.families.phi3 import describe as describe_phi3
from llmcalc.model.spec import Part
from llmcalc.model.spec import Tensor

# image_processing_phi4_multimodal.py: dynamic_hd, the most crops one image is cut into
MAX_CROPS = 36
# feature_extraction_phi4_multimodal.py: 16 kHz, 25 ms windows every 10 ms → one second of speech
SECOND_FRAMES = (16000 - 400) // 160 + 1

IMAGE = "model.embed_tokens_extend.image_embed"
AUDIO = "model.embed_tokens_extend.audio_embed"

# Phi4MultimodalVisionAttention: head_dim = embed_dim // heads, whatever a config's head_dim says
PHI4MM_VIT = replace(SIGLIP, head_dim_field=False)


class Phi4MultimodalVisionConfig(VisionConfig):
    transformers_class = "Phi4MultimodalVisionConfig"

    crop_size: Size


class Phi4MultimodalConfig(Phi3Config):
    """The language model's fields at the top level (Phi-3's), the towers' in vision_config and
    audio_config (absent: their class defaults)."""

    transformers_class = "Phi4MultimodalConfig"

    vision_config: dict[str, Any] | None = None
    audio_config: dict[str, Any] | None = None
    # llmcalc's own (--image-size): the side of a square input image the per-image figures assume
    image_size: Size | None = None
    # the original (phi4mm) checkpoint's adapters, {"r": rank, …}: counted apart (lora_params)
    vision_lora: dict[str, Any] | None = None
    speech_lora: dict[str, Any] | None = None

    def sub(self, key: str, default_type: str) -> dict[str, Any]:
        from llmcalc.inputs import family_defaults

        absent = (family_defaults.sub_defaults("phi4_multimodal") or {}).get(key) or {}
        return sub_fields(getattr(self, key), key, default_type, absent)


def crops_a_side(side: int, crop: int) -> int:
    """Crops a side of a square image (Phi4MultimodalImageProcessor.dynamic_preprocess): ⌈side /
    crop⌉, or past 36 crops the largest square grid of at most 36 (its aspect-ratio search)."""
    k = -(-side // crop)
    return k if k * k <= MAX_CROPS else math.isqrt(MAX_CROPS)


def image_tokens(side: int, crop: int, patch: int) -> tuple[int, int]:
    """(tower runs, context tokens) of one square image of ``side`` pixels."""
    k = crops_a_side(side, crop)
    per_side = crop // patch
    g = (per_side + per_side % 2) // 2  # an odd grid is reflection-padded, then pooled 2 × 2
    return 1 + k * k, g * g + g + 1 + (k * g) ** 2 + k * g


def lora_params(c: Phi4MultimodalConfig) -> int:
    """The vision and speech adapters' parameters: r · (in + out) for each adapted linear."""
    d, ff = c.hidden_size, c.intermediate_size
    h, hd, kv = c.num_attention_heads, c.resolved_head_dim, c.resolved_kv_heads
    # (in, out) of qkv_proj, o_proj, gate_up_proj, down_proj
    linears = [(d, (h + 2 * kv) * hd), (h * hd, d), (d, 2 * ff), (ff, d)]
    total = 0
    for key in ("vision_lora", "speech_lora"):
        adapter = getattr(c, key)
        if adapter is None:
            continue
        r = adapter.get("r")
        if not isinstance(r, int) or isinstance(r, bool) or r < 1:
            raise FieldError(f"{key}.r", f"{key}.r must be a positive integer, got {r!r}")
        total += c.num_hidden_layers * sum(r * (i + o) for i, o in linears)
    return total


def describe(c: Phi4MultimodalConfig) -> Architecture:
    lm = describe_phi3(c)
    d_t = c.hidden_size
    v = read_sub(Phi4MultimodalVisionConfig, c.sub("vision_config", "phi4_multimodal_vision"),
                 "vision_config")
    require(v.patch_size <= v.crop_size, "vision_config.crop_size",
            f"vision_config.crop_size ({v.crop_size}) must not be below patch_size ({v.patch_size})")
    side = c.image_size or v.crop_size
    runs, tokens = image_tokens(side, v.crop_size, v.patch_size)
    per_side = v.crop_size // v.patch_size
    # every crop (and the resized whole image) is crop_size pixels a side
    tower = vit(f"{IMAGE}.img_processor", v, PHI4MM_VIT, context_tokens=tokens, head=True,
                patches=per_side * per_side, image_side=side, passes=runs)
    d_v = v.hidden_size
    proj = [
        Tensor(f"{IMAGE}.global_img_feature_extensor", (1, 1, d_v), "separators"),
        Tensor(f"{IMAGE}.sub_img_feature_extensor", (1, 1, 1, d_v), "separators"),
        *linear(f"{IMAGE}.img_projection_up", "img_projection_up", d_t, d_v, bias=True),
        *linear(f"{IMAGE}.img_projection_down", "img_projection_down", d_t, d_t, bias=True),
    ]
    a = read_sub(ConformerConfig, c.sub("audio_config", "phi4_multimodal_audio"), "audio_config")
    audio = conformer(f"{AUDIO}.encoder", a, frames=SECOND_FRAMES)
    n = audio.tokens_for("layers")
    # the feature extractor's audio_embed_sizes: ⌈frames / time_reduction⌉, then ⌈· / downsample⌉
    speech_tokens = -(-n // a.downsample_rate)
    d_a = a.hidden_size * a.downsample_rate
    heads = [t for mode in ("speech", "vision_speech") for t in (
        *linear(f"{AUDIO}.up_proj_for_{mode}", f"up_proj_for_{mode}", d_t, d_a, bias=True),
        *linear(f"{AUDIO}.down_proj_for_{mode}", f"down_proj_for_{mode}", d_t, d_t, bias=True))]
    # one pair runs on the encoder's n tokens of a clip
    second = f"one second of speech ({SECOND_FRAMES} mel frames)"
    audio_proj = Part(name="audio_projector", tensors=tuple(heads), input_tokens=(("", n),),
                      input_flops=(2 * n * (d_a * d_t + d_t * d_t), 0), input="audio",
                      clip=second)
    audio = replace(audio, context_tokens=speech_tokens, clip=second)
    lora = lora_params(c)
    notes: tuple[str, ...] = (
        f"per-image figures for a {side}×{side} image: {runs - 1} crop(s) of {v.crop_size} px and "
        f"the whole image resized, each through the tower (--image-size for another)",
        f"audio (not in the per-image figures): one second of speech, {SECOND_FRAMES} mel frames, "
        f"is {speech_tokens} tokens in the context; the encoder's forward costs "
        f"{sum(audio.input_flops or (0,)):,} FLOPs, the audio projector's "
        f"{sum(audio_proj.input_flops or (0,)):,}",
    )
    if lora:
        notes += (f"the checkpoint's vision and speech LoRA adapters, {lora:,} parameters "
                  "(lora_params), are not in the model transformers builds nor in these counts",)
    return Architecture(
        shape=lm.shape, tensors=lm.tensors, layer_groups=lm.layer_groups, notes=(*lm.notes, *notes),
        unbuilt=(("lora_params", lora),) if lora else (),
        parts=(tower, projector(proj, tokens=tokens, d_in=d_v, d_out=d_t), audio, audio_proj),
    )
