"""Whole vision–language models: parts, the core's API, and exactness against the whole
transformers model (AutoModelForImageTextToText on the meta device), tensor by tensor and part by
part (parts split by module prefix on transformers' side, independently of llmcalc's names)."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.reference import matches_whole_model

from llmcalc.formulas.counting import count
from llmcalc.formulas.flops import flops, part_flops
from llmcalc.formulas.memory import memory
from llmcalc.inputs.config import load_spec, spec_from_dict
from llmcalc.model.spec import spec_part
from llmcalc.units import DType

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

def llava(**changes: Any) -> dict[str, Any]:
    text = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "vocab_size": 300}
    vision = {"model_type": "clip_vision_model", "hidden_size": 32, "intermediate_size": 48,
              "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 56, "patch_size": 14}
    text.update(changes.pop("text", {}))
    vision.update(changes.pop("vision", {}))
    return {"model_type": "llava", "text_config": text, "vision_config": vision, **changes}


# ---- llava ----------------------------------------------------------------------------------------


def test_llava_bundled_whole_model() -> None:
    spec = load_spec("llava-1.5-7b")
    pc = count(spec)
    # Llama-2-7B with a 32,064-token vocabulary + CLIP ViT-L/14-336 + the 2-layer MLP projector
    vision = (1024 + 1024 * 3 * 14 * 14 + 577 * 1024 + 2 * 1024
              + 24 * (4 * (1024 * 1024 + 1024) + 4 * 1024 + 2 * 4096 * 1024 + 4096 + 1024)
              + 2 * 1024)
    projector = 4096 * 1024 + 4096 + 4096 * 4096 + 4096
    assert pc.parts == {"language": 6_738_939_904, "vision": vision, "projector": projector}
    assert vision == 303_507_456 and projector == 20_979_712
    assert pc.total == 7_063_427_072
    matches_whole_model(spec)


@pytest.mark.parametrize("fields", [
    llava(),
    llava(vision={"num_hidden_layers": 3, "hidden_size": 48, "num_attention_heads": 3}),
    llava(vision={"patch_size": 8, "image_size": 64}),
    llava(vision_feature_layer=[-2, -5], vision_feature_select_strategy="full"),
    llava(multimodal_projector_bias=False, tie_word_embeddings=True),
    llava(text={"tie_word_embeddings": True}),
    llava(text={"model_type": "mistral", "sliding_window": 16, "num_hidden_layers": 3}),
    llava(text={"model_type": "qwen2", "hidden_size": 96, "num_attention_heads": 6}),
    llava(vision={"model_type": "siglip_vision_model", "vision_use_head": False}),
    llava(vision={"model_type": "pixtral", "head_dim": 8, "image_size": 64, "patch_size": 8},
          vision_feature_select_strategy="full", vision_feature_layer=-1),
], ids=lambda f: "-".join(f"{k}" for k in f if k not in ("model_type",)) or "base")
def test_llava_varied_configs_match_transformers(fields: dict[str, Any]) -> None:
    matches_whole_model(spec_from_dict(fields, name="llava-variant"))


def test_llava_image_tokens_and_flops() -> None:
    spec = load_spec("llava-1.5-7b")
    r = flops(spec, ctx=1000, images=2)
    assert r.image_tokens == 576  # 24×24 patches; "default" drops the class token
    assert r.ctx == 1000 + 2 * 576
    vision = next(p for p in r.parts if p.part == "vision")
    assert vision.tokens == 577 and vision.input_size == 336
    # patches through the conv, 577 tokens through each layer's matrices, 577² pairs per layer
    d, ff, L = 1024, 4096, 24
    weight = 2 * 576 * d * 3 * 14 * 14 + 2 * 577 * L * (4 * d * d + 2 * d * ff)
    assert vision.weight == weight
    assert vision.attention == L * 577 * 577 * 2 * 16 * (64 + 64)
    proj = next(p for p in r.parts if p.part == "projector")
    assert proj.total == 2 * 576 * (4096 * 1024 + 4096 * 4096)
    text_only = flops(spec, ctx=1000 + 2 * 576)
    assert r.forward_flops_per_sequence == (
        text_only.forward_flops_per_sequence + 2 * (vision.total + proj.total))
    # the language model's per-token figures are those of the language model alone
    assert r.weight_flops_per_token == flops(spec_part(spec, "language"), ctx=1).weight_flops_per_token
    mem = memory(spec, ctx=1000 + 2 * 576, dtype=DType.bf16)
    assert mem.weights_bytes == 2 * count(spec).total  # every part's weights


def test_part_of_a_vision_tower_keeps_no_cache() -> None:
    spec = spec_part(load_spec("llava-1.5-7b"), "vision")
    assert count(spec).total == 303_507_456
    assert memory(spec, ctx=577, dtype=DType.bf16).kv_cache_bytes == 0
    assert spec.parts == () and spec.main_part == "vision"


@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("make", ["llava", "gemma3-head"])
def test_vision_flops_equal_flop_counter(make: str, layers: int) -> None:
    """One image through a 1- and 2-layer tower (CLIP; SigLIP with its pooling head):
    FlopCounterMode (eager attention) equals the vision part's figure."""
    from torch.utils.flop_counter import FlopCounterMode

    if make == "llava":
        fields = llava(vision={"num_hidden_layers": layers})
    else:
        fields = gemma3(vision={"num_hidden_layers": layers, "vision_use_head": True})
    spec = spec_from_dict(fields, name="flops")
    part = spec.part("vision")
    assert part is not None
    config = transformers.AutoConfig.for_model(
        fields["model_type"], **{k: v for k, v in fields.items() if k != "model_type"})
    tower = transformers.AutoModel.from_config(config.vision_config, attn_implementation="eager")
    pixels = torch.zeros(1, 3, 56, 56)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        tower(pixels)
    assert counter.get_total_flops() == part_flops(part).total


def test_count_json_parts_and_part_option(cli: Any) -> None:
    data = cli("count", "llava-1.5-7b", "--json").json()
    assert data["parts"] == {"language": 6_738_939_904, "vision": 303_507_456,
                             "projector": 20_979_712}
    assert sum(data["breakdown"].values()) == data["total_params"] == 7_063_427_072
    assert data["breakdown"]["projector/linear_1"] == 4096 * 1024 + 4096
    part = cli("count", "llava-1.5-7b", "--part", "vision", "--json").json()
    assert part["total_params"] == 303_507_456
    out = cli("count", "llava-1.5-7b").stdout
    assert "parts (whole model)" in out and "vision (whole part)" in out
    bad = cli("count", "llava-1.5-7b", "--part", "audio")
    assert bad.code == 2
    assert "--part audio: llava-hf/llava-1.5-7b-hf has the parts language, vision, projector" in bad.stderr
    one = cli("count", "llama-2-7b", "--part", "vision")
    assert one.code == 2
    assert "is one model, without parts" in one.stderr


def test_flops_and_memory_images_option(cli: Any) -> None:
    data = cli("flops", "llava-1.5-7b", "--ctx", "1000", "--images", "1", "--json").json()
    assert data["image_tokens"] == 576 and data["ctx"] == 1576 and data["text_tokens"] == 1000
    assert data["per_image"]["vision"]["image_size"] == 336
    # LLaVA resizes every image to its tower's 336 px: the figures stay, and a note says why
    big = cli("flops", "llava-1.5-7b", "--image-size", "672", "--json").json()
    assert big["image_tokens"] == 576
    assert ("image_size 672: the processor resizes every image to 336×336 pixels, so the "
            "per-image figures are those") in big["notes"]
    # Pixtral takes an image at its size: 448 px = 32 × 32 patches, merged 2 × 2, a break per row
    pix = cli("flops", "mistral3-small-3.1-24b", "--image-size", "448", "--json").json()
    assert pix["image_tokens"] == 16 * 17
    assert pix["per_image"]["vision"]["tokens"] == 32 * 32
    assert pix["per_image"]["vision"]["image_size"] == 448
    mem = cli("memory", "llava-1.5-7b", "--ctx", "1000", "--images", "2", "--json").json()
    plain = cli("memory", "llava-1.5-7b", "--ctx", str(1000 + 2 * 576), "--json").json()
    assert mem["kv_cache_bytes"] == plain["kv_cache_bytes"]
    no = cli("flops", "llama-2-7b", "--images", "1")
    assert no.code == 2
    assert "--images 1: meta-llama/Llama-2-7b-hf takes no images" in no.stderr


def test_llava_hostile_fields() -> None:
    from llmcalc.errors import ConfigError

    with pytest.raises(ConfigError, match="vision_config.patch_size"):
        spec_from_dict(llava(vision={"patch_size": 100}), name="bad")
    with pytest.raises(ConfigError, match="vision_config.hidden_size must be a positive integer"):
        spec_from_dict(llava(vision={"hidden_size": 0}), name="bad")
    with pytest.raises(ConfigError, match="text_config.num_hidden_layers must be"):
        spec_from_dict(llava(text={"num_hidden_layers": -1}), name="bad")
    huge = spec_from_dict(llava(vision={"num_hidden_layers": 10**12},
                                text={"num_hidden_layers": 10**12}), name="huge")
    assert count(huge).parts["vision"] > 10**12


# ---- gemma3 ---------------------------------------------------------------------------------------


def gemma3(**changes: Any) -> dict[str, Any]:
    text = {"model_type": "gemma3_text", "hidden_size": 64, "intermediate_size": 96,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "head_dim": 16, "vocab_size": 300, "sliding_window": 8}
    vision = {"model_type": "siglip_vision_model", "hidden_size": 32, "intermediate_size": 48,
              "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 56, "patch_size": 14,
              "vision_use_head": False}
    text.update(changes.pop("text", {}))
    vision.update(changes.pop("vision", {}))
    return {"model_type": "gemma3", "mm_tokens_per_image": 4, "text_config": text,
            "vision_config": vision, **changes}


def test_gemma3_4b_whole_model() -> None:
    spec = load_spec("gemma-3-4b")
    pc = count(spec)
    d, ff, L, n = 1152, 4304, 27, 64 * 64
    vision = (d * 3 * 14 * 14 + d + n * d
              + L * (4 * (d * d + d) + 4 * d + 2 * ff * d + ff + d) + 2 * d)
    assert pc.parts == {"language": 3_880_263_168, "vision": vision, "projector": d * 2560 + d}
    assert pc.total == 4_300_079_472  # "4.3B": the text model is 3.88B
    matches_whole_model(spec)
    r = flops(spec, ctx=1000, images=1)
    assert r.image_tokens == 256 and r.ctx == 1256


@pytest.mark.parametrize("fields", [
    gemma3(),
    gemma3(vision={"num_hidden_layers": 3, "hidden_size": 48, "num_attention_heads": 3}),
    gemma3(vision={"patch_size": 8, "image_size": 64}, mm_tokens_per_image=16),
    gemma3(vision={"vision_use_head": True}),
    gemma3(tie_word_embeddings=False),
    gemma3(text={"hidden_size": 96, "num_hidden_layers": 3, "intermediate_size": 128}),
], ids=["base", "vision-size", "patch-tokens", "head", "untied", "text-size"])
def test_gemma3_varied_configs_match_transformers(fields: dict[str, Any]) -> None:
    matches_whole_model(spec_from_dict(fields, name="gemma3-variant"))


# ---- mistral3 -------------------------------------------------------------------------------------


def mistral3(**changes: Any) -> dict[str, Any]:
    text = {"model_type": "mistral", "hidden_size": 64, "intermediate_size": 96, "head_dim": 16,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "vocab_size": 300, "tie_word_embeddings": False}
    vision = {"model_type": "pixtral", "hidden_size": 32, "intermediate_size": 48, "head_dim": 8,
              "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 64, "patch_size": 8}
    text.update(changes.pop("text", {}))
    vision.update(changes.pop("vision", {}))
    return {"model_type": "mistral3", "text_config": text, "vision_config": vision, **changes}


def test_mistral_small_3_1_whole_model_ties_as_transformers_does() -> None:
    spec = load_spec("mistral3-small-3.1-24b")
    pc = count(spec)
    # no top-level tie_word_embeddings: Mistral3Config's default (true) ties the head, although
    # text_config alone would not (22.90B, not 23.57B, for the language model)
    assert spec.shape.tied_embeddings
    assert pc.parts["language"] == 22_901_314_560
    d, ff, L = 1024, 4096, 24
    assert pc.parts["vision"] == d * 3 * 14 * 14 + d + L * (4 * d * d + 2 * d + 3 * ff * d)
    assert pc.parts["projector"] == d + 4 * d * d + 5120 * d + 5120 * 5120
    assert pc.total == 23_340_272_640
    matches_whole_model(spec)
    r = flops(spec, ctx=100, images=1)
    assert r.image_tokens == 55 * 56  # 110 × 110 patches merged 2 × 2, a break token per row
    vision = next(p for p in r.parts if p.part == "vision")
    assert vision.tokens == 110 * 110


@pytest.mark.parametrize("fields", [
    mistral3(),
    mistral3(tie_word_embeddings=False),
    mistral3(text={"tie_word_embeddings": True}, tie_word_embeddings=False),
    mistral3(vision={"num_hidden_layers": 3, "hidden_size": 48, "num_attention_heads": 4}),
    mistral3(vision={"patch_size": 4, "image_size": 32}, spatial_merge_size=4),
    mistral3(vision_feature_layer=[-1, -2], multimodal_projector_bias=True),
    mistral3(text={"model_type": "ministral3", "hidden_size": 96, "num_attention_heads": 6}),
], ids=["base", "untied", "text-tied-top-untied", "vision-size", "merge-4", "two-layers", "ministral3"])
def test_mistral3_varied_configs_match_transformers(fields: dict[str, Any]) -> None:
    matches_whole_model(spec_from_dict(fields, name="mistral3-variant"))


# ---- paligemma ------------------------------------------------------------------------------------


def paligemma(**changes: Any) -> dict[str, Any]:
    text = {"model_type": "gemma", "hidden_size": 64, "intermediate_size": 96, "head_dim": 16,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 1,
            "vocab_size": 300}
    vision = {"model_type": "siglip_vision_model", "hidden_size": 32, "intermediate_size": 48,
              "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 56, "patch_size": 14,
              "vision_use_head": False}
    text.update(changes.pop("text", {}))
    vision.update(changes.pop("vision", {}))
    return {"model_type": "paligemma", "projection_dim": 64, "text_config": text,
            "vision_config": vision, **changes}


def test_paligemma_3b_whole_model() -> None:
    spec = load_spec("paligemma-3b-224")
    pc = count(spec)
    d, ff, L = 1152, 4304, 27
    vision = (d * 3 * 14 * 14 + d + 256 * d
              + L * (4 * (d * d + d) + 4 * d + 2 * ff * d + ff + d) + 2 * d)
    assert pc.parts == {"language": 2_508_662_784, "vision": vision,
                        "projector": 2048 * 1152 + 2048}
    assert pc.total == 2_923_466_480
    matches_whole_model(spec)
    assert flops(spec, ctx=10).image_tokens == 256


@pytest.mark.parametrize("fields", [
    paligemma(),
    paligemma(vision={"vision_use_head": True}),
    paligemma(vision={"num_hidden_layers": 3, "hidden_size": 48, "num_attention_heads": 3,
                      "image_size": 64, "patch_size": 8}),
    paligemma(tie_word_embeddings=False),
    paligemma(text={"model_type": "gemma2", "sliding_window": 16, "num_hidden_layers": 3}),
], ids=["base", "head", "vision-size", "untied", "gemma2"])
def test_paligemma_varied_configs_match_transformers(fields: dict[str, Any]) -> None:
    matches_whole_model(spec_from_dict(fields, name="paligemma-variant"))


# ---- llava_next -----------------------------------------------------------------------------------


def test_llava_next_mistral_7b_whole_model() -> None:
    spec = load_spec("llava-v1.6-mistral-7b")
    pc = count(spec)
    assert pc.parts == {"language": 7_242_256_384, "vision": 303_507_456,
                        "projector": 20_979_712 + 4096}
    assert pc.total == 7_566_747_648
    matches_whole_model(spec)
    r = flops(spec, ctx=10)
    # a 672 × 672 image: 2 × 2 tiles of 336 + the whole image, 48 × 48 grid tokens, 48 newlines,
    # 576 base tokens
    assert r.image_tokens == 2304 + 48 + 576 == 2928
    vision = next(p for p in r.parts if p.part == "vision")
    assert vision.tokens == 5 * 577


@pytest.mark.parametrize("side", [336, 500, 672, 700, 1008, 2000])
def test_llava_next_image_tokens_equal_the_processor(side: int) -> None:
    from types import SimpleNamespace

    from transformers.models.llava_next.processing_llava_next import LlavaNextProcessor

    fields = {**load_spec("llava-v1.6-mistral-7b").config, "image_size": side}
    spec = spec_from_dict(fields, name="llava-next")
    pinpoints = fields["image_grid_pinpoints"]
    processor = SimpleNamespace(image_processor=SimpleNamespace(image_grid_pinpoints=pinpoints),
                                patch_size=14, num_additional_image_tokens=1,
                                vision_feature_select_strategy="default")
    processor._get_unpadded_features = lambda *a: LlavaNextProcessor._get_unpadded_features(
        processor, *a)
    theirs = LlavaNextProcessor._get_number_of_features(processor, side, side, 336, 336)
    # the processor counts the class token, then drops it for the "default" strategy
    assert flops(spec, ctx=1).image_tokens == theirs - 1


def llava_next(**changes: Any) -> dict[str, Any]:
    fields = llava(**changes)
    return {**fields, "model_type": "llava_next",
            "image_grid_pinpoints": fields.get("image_grid_pinpoints", [[56, 112], [112, 112]])}


@pytest.mark.parametrize("fields", [
    llava_next(),
    llava_next(vision={"num_hidden_layers": 3, "hidden_size": 48, "num_attention_heads": 3}),
    llava_next(vision_feature_select_strategy="full", multimodal_projector_bias=False),
    llava_next(tie_word_embeddings=True),
    llava_next(text={"model_type": "qwen2", "hidden_size": 96, "num_attention_heads": 6}),
], ids=["base", "vision-size", "full", "tied", "qwen2"])
def test_llava_next_varied_configs_match_transformers(fields: dict[str, Any]) -> None:
    matches_whole_model(spec_from_dict(fields, name="llava-next-variant"))


# ---- llava_onevision ------------------------------------------------------------------------------


def test_llava_onevision_defaults_whole_model() -> None:
    spec = load_spec("llava-onevision-default")
    pc = count(spec)
    assert pc.total == 12_469_102_112
    assert pc.parts["projector"] == 4096 * 1152 + 4096 + 4096 * 4096 + 4096 + 4096
    matches_whole_model(spec)


@pytest.mark.parametrize("side", [384, 500, 800, 1200, 2304])
@pytest.mark.parametrize("strategy", ["full", "default"])
def test_llava_onevision_image_tokens_equal_the_processor(side: int, strategy: str) -> None:
    from types import SimpleNamespace

    from transformers.models.llava_onevision.processing_llava_onevision import (
        LlavaOnevisionProcessor,
    )

    from llmcalc.families.vlm import ONEVISION_PINPOINTS

    config = transformers.AutoConfig.for_model("llava_onevision")
    assert config.image_grid_pinpoints == ONEVISION_PINPOINTS
    spec = spec_from_dict({"model_type": "llava_onevision", "image_size": side,
                           "vision_feature_select_strategy": strategy}, name="ov")
    processor = SimpleNamespace(
        image_processor=SimpleNamespace(image_grid_pinpoints=ONEVISION_PINPOINTS),
        num_image_tokens=729, vision_aspect_ratio="anyres_max_9")
    processor._get_unpadded_features = lambda *a: LlavaOnevisionProcessor._get_unpadded_features(
        processor, *a)
    theirs = LlavaOnevisionProcessor._get_number_of_features(processor, side, side, 384, 384)
    assert flops(spec, ctx=1).image_tokens == theirs - (strategy == "default")


def llava_onevision(**changes: Any) -> dict[str, Any]:
    fields = llava(vision={"model_type": "siglip_vision_model", "vision_use_head": False,
                           **changes.pop("vision", {})}, **changes)
    return {**fields, "model_type": "llava_onevision",
            "image_grid_pinpoints": [[56, 56], [56, 112], [112, 112]]}


@pytest.mark.parametrize("fields", [
    llava_onevision(),
    llava_onevision(vision={"num_hidden_layers": 3, "hidden_size": 48, "num_attention_heads": 3}),
    llava_onevision(vision_feature_layer=[-1, -2], vision_feature_select_strategy="default"),
    llava_onevision(text={"tie_word_embeddings": True}),
], ids=["base", "vision-size", "two-layers", "text-tied"])
def test_llava_onevision_varied_configs_match_transformers(fields: dict[str, Any]) -> None:
    matches_whole_model(spec_from_dict(fields, name="ov-variant"))


# ---- aya_vision -----------------------------------------------------------------------------------


def test_aya_vision_8b_whole_model() -> None:
    spec = load_spec("aya-vision-8b")
    pc = count(spec)
    d, a = 1152, 28672
    assert pc.parts["language"] == 8_028_033_024  # the bundled command-r7b
    assert pc.parts["projector"] == 2 * 4 * d + a * 4 * d + a + 4096 * (a // 2) + 4096
    assert pc.total == 8_631_842_032
    matches_whole_model(spec)
    r = flops(spec, ctx=1)
    assert r.image_tokens == 13 * 13  # 26 × 26 patches of a 364 px tile, shuffled 2 × 2


def aya(**changes: Any) -> dict[str, Any]:
    fields = gemma3(**changes)
    fields.pop("mm_tokens_per_image")
    fields["text_config"] = {"model_type": "cohere2", "hidden_size": 64, "intermediate_size": 96,
                             "num_hidden_layers": 2, "num_attention_heads": 4,
                             "num_key_value_heads": 2, "vocab_size": 300, "sliding_window": 8,
                             **changes.get("text", {})}
    return {**fields, "model_type": "aya_vision"}


@pytest.mark.parametrize("fields", [
    aya(),
    aya(downsample_factor=4, alignment_intermediate_size=40),
    aya(vision={"num_hidden_layers": 3, "hidden_size": 48, "num_attention_heads": 3,
                "vision_use_head": True}),
    aya(tie_word_embeddings=False),
], ids=["base", "shuffle-4", "vision-size", "untied"])
def test_aya_vision_varied_configs_match_transformers(fields: dict[str, Any]) -> None:
    matches_whole_model(spec_from_dict(fields, name="aya-variant"))


# ---- internvl -------------------------------------------------------------------------------------


def test_internvl_defaults_whole_model_ties_as_transformers_does() -> None:
    spec = load_spec("internvl-default")
    pc = count(spec)
    assert spec.shape.tied_embeddings  # top-level true wins over text_config's false
    d, L = 1024, 24
    vision = (d + 1025 * d + d * 3 * 14 * 14 + d
              + L * (3 * d * d + d * d + d + 2 * 4096 * d + 4096 + d + 4 * d + 2 * d))
    assert pc.parts["vision"] == vision
    assert pc.total == 11_765_025_792
    matches_whole_model(spec)
    assert flops(spec, ctx=1).image_tokens == 256


def internvl(**changes: Any) -> dict[str, Any]:
    text = {"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 96,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "vocab_size": 300, "tie_word_embeddings": False}
    vision = {"model_type": "internvl_vision", "hidden_size": 32, "intermediate_size": 48,
              "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": [56, 56],
              "patch_size": [14, 14]}
    text.update(changes.pop("text", {}))
    vision.update(changes.pop("vision", {}))
    return {"model_type": "internvl", "text_config": text, "vision_config": vision, **changes}


@pytest.mark.parametrize("fields", [
    internvl(),
    internvl(vision={"use_qk_norm": True, "attention_bias": True, "norm_type": "rms_norm"}),
    internvl(vision={"use_absolute_position_embeddings": False, "use_mean_pooling": False}),
    internvl(vision={"image_size": [64, 32], "patch_size": [8, 8], "num_hidden_layers": 3}),
    internvl(downsample_ratio=0.25, vision={"image_size": 112, "patch_size": 14}),
    internvl(tie_word_embeddings=False),
], ids=["base", "qk-norm-rms-bias", "no-positions-post-norm", "rect", "ratio-quarter", "untied"])
def test_internvl_varied_configs_match_transformers(fields: dict[str, Any]) -> None:
    matches_whole_model(spec_from_dict(fields, name="internvl-variant"))


# ---- idefics3 / smolvlm ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["idefics3-default", "smolvlm-default"])
def test_idefics3_smolvlm_defaults_whole_model(name: str) -> None:
    spec = load_spec(name)
    pc = count(spec)
    d = 1152
    assert pc.parts["projector"] == 4096 * d * 4
    assert pc.total == 6_909_685_760
    matches_whole_model(spec)
    assert flops(spec, ctx=1).image_tokens == 49 // 4  # 7 × 7 patches of 32 px, shuffled 2 × 2


@pytest.mark.parametrize("model_type", ["idefics3", "smolvlm"])
@pytest.mark.parametrize("changes", [
    {},
    {"scale_factor": 4, "vision": {"image_size": 64, "patch_size": 8}},
    {"vision": {"num_hidden_layers": 3, "hidden_size": 48, "num_attention_heads": 3}},
    {"tie_word_embeddings": True},
    {"text": {"tie_word_embeddings": True}},
], ids=["base", "scale-4", "vision-size", "tied", "text-tied"])
def test_idefics3_smolvlm_varied_configs_match_transformers(
    model_type: str, changes: dict[str, Any]
) -> None:
    fields = llava(**{k: v for k, v in changes.items() if k != "vision"},
                   vision={"model_type": f"{model_type}_vision", **changes.get("vision", {})})
    matches_whole_model(spec_from_dict({**fields, "model_type": model_type}, name="idefics"))


# ---- got_ocr2 -------------------------------------------------------------------------------------


def got(**changes: Any) -> dict[str, Any]:
    text = {"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 96,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "vocab_size": 300}
    vision = {"hidden_size": 32, "output_channels": 16, "num_hidden_layers": 3,
              "num_attention_heads": 2, "image_size": 80, "patch_size": 8, "window_size": 3,
              "global_attn_indexes": [1], "mlp_dim": 48}
    text.update(changes.pop("text", {}))
    vision.update(changes.pop("vision", {}))
    return {"model_type": "got_ocr2", "text_config": text, "vision_config": vision, **changes}


def test_got_ocr2_defaults_whole_model() -> None:
    spec = load_spec("got-ocr2-default")
    pc = count(spec)
    assert pc.total == 560_528_640
    matches_whole_model(spec)
    assert flops(spec, ctx=1).image_tokens == 256  # 64 × 64 patches, two stride-2 convolutions


@pytest.mark.parametrize("fields", [
    got(),
    got(vision={"use_rel_pos": False, "use_abs_pos": False, "qkv_bias": False}),
    got(vision={"global_attn_indexes": [0, 2, 7], "window_size": 5}),
    got(tie_word_embeddings=False),
], ids=["base", "no-rel-abs", "globals", "untied"])
def test_got_ocr2_varied_configs_match_transformers(fields: dict[str, Any]) -> None:
    matches_whole_model(spec_from_dict(fields, name="got-variant"))


@pytest.mark.parametrize("vision", [{}, {"window_size": 4, "global_attn_indexes": [0]},
                                    {"use_rel_pos": False, "num_hidden_layers": 1}])
def test_sam_tower_and_projector_flops_equal_flop_counter(vision: dict[str, Any]) -> None:
    """SAM's windowed (padded) and global attention with relative positions, the neck and the
    stride-2 projector: FlopCounterMode equals the parts' figures."""
    from torch.utils.flop_counter import FlopCounterMode

    fields = got(vision=vision)
    spec = spec_from_dict(fields, name="got-flops")
    config = transformers.AutoConfig.for_model(
        "got_ocr2", **{k: v for k, v in fields.items() if k != "model_type"})
    with torch.device("cpu"):
        model = transformers.AutoModelForImageTextToText.from_config(config)
    pixels = torch.zeros(1, 3, 80, 80)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        features = model.model.vision_tower(pixels).last_hidden_state
    vision_part, proj = spec.part("vision"), spec.part("projector")
    assert vision_part is not None and proj is not None
    assert counter.get_total_flops() == part_flops(vision_part).total
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model.model.multi_modal_projector(features)
    assert counter.get_total_flops() == part_flops(proj).total


# ---- qwen2_vl / qwen2_5_vl ------------------------------------------------------------------------


def qwen_vl(model_type: str, **changes: Any) -> dict[str, Any]:
    text = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300}
    if model_type == "qwen2_vl":
        vision = {"embed_dim": 32, "depth": 2, "num_heads": 2, "mlp_ratio": 2, "hidden_size": 64}
    else:
        vision = {"hidden_size": 32, "depth": 3, "num_heads": 2, "intermediate_size": 40,
                  "out_hidden_size": 64, "fullatt_block_indexes": [1], "window_size": 112}
    text.update(changes.pop("text", {}))
    vision.update(changes.pop("vision", {}))
    return {"model_type": model_type, "text_config": text, "vision_config": vision, **changes}


@pytest.mark.parametrize("model_type", ["qwen2_vl", "qwen2_5_vl"])
def test_qwen_vl_defaults_whole_model(model_type: str) -> None:
    spec = load_spec(model_type)  # the transformers class defaults
    matches_whole_model(spec)
    r = flops(spec, ctx=1)
    assert r.image_tokens == 32 * 32  # an 896 px image: 64 × 64 patches of 14, merged 2 × 2


@pytest.mark.parametrize("model_type", ["qwen2_vl", "qwen2_5_vl"])
@pytest.mark.parametrize("changes", [
    {},
    {"vision": {"spatial_merge_size": 4, "temporal_patch_size": 1, "patch_size": 7}},
    {"tie_word_embeddings": True},
    {"text": {"tie_word_embeddings": True}},
], ids=["base", "merge-4", "tied", "text-tied"])
def test_qwen_vl_varied_configs_match_transformers(model_type: str, changes: dict[str, Any]) -> None:
    matches_whole_model(spec_from_dict(qwen_vl(model_type, **changes), name="qwen-vl"))


def test_qwen2_vl_flat_config_reads_the_top_level_text_fields() -> None:
    fields = qwen_vl("qwen2_vl")
    text = fields.pop("text_config")
    flat = {**fields, **text}
    matches_whole_model(spec_from_dict(flat, name="qwen-flat"))
    assert count(spec_from_dict(flat, name="flat")).total == count(
        spec_from_dict(qwen_vl("qwen2_vl"), name="nested")).total


@pytest.mark.parametrize("side", [896, 1000, 1400, 100])
def test_qwen_vl_image_tokens_follow_smart_resize(side: int) -> None:
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

    h, w = smart_resize(side, side)
    spec = spec_from_dict({**qwen_vl("qwen2_vl"), "image_size": side}, name="q")
    assert flops(spec, ctx=1).image_tokens == (h // 28) * (w // 28)


@pytest.mark.parametrize("model_type", ["qwen2_vl", "qwen2_5_vl"])
@pytest.mark.parametrize("side", [224, 252])
def test_qwen_vl_tower_flops_equal_flop_counter(model_type: str, side: int) -> None:
    """One image through a 2–3-layer Qwen-ViT (Qwen2.5: windows, one full layer) and its merger:
    FlopCounterMode (eager attention) equals the parts' figures."""
    from torch.utils.flop_counter import FlopCounterMode

    fields = {**qwen_vl(model_type), "image_size": side}
    spec = spec_from_dict(fields, name="qwen-flops")
    config = transformers.AutoConfig.for_model(
        model_type, **{k: v for k, v in fields.items() if k not in ("model_type", "image_size")})
    config.vision_config._attn_implementation = "eager"
    model = transformers.AutoModelForImageTextToText.from_config(config, attn_implementation="eager")
    grid = side // 14
    pixels = torch.zeros(grid * grid, 3 * 2 * 14 * 14)
    thw = torch.tensor([[1, grid, grid]])
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model.model.visual(pixels, grid_thw=thw)
    vision, proj = spec.part("vision"), spec.part("projector")
    assert vision is not None and proj is not None
    assert counter.get_total_flops() == part_flops(vision).total + part_flops(proj).total



@pytest.mark.parametrize(("name", "total", "parts"), [
    ("qwen2.5-vl-7b", 8_292_166_656,
     {"language": 7_615_616_512, "vision": 631_975_680, "projector": 44_574_464}),
    ("qwen2-vl-2b", 2_208_985_600,
     {"language": 1_543_714_304, "vision": 631_183_360, "projector": 34_087_936}),
])
def test_qwen_vl_bundled_whole_models(name: str, total: int, parts: dict[str, int]) -> None:
    spec = load_spec(name)
    pc = count(spec)
    assert pc.total == total and pc.parts == parts  # Qwen2.5-VL-7B: "8.3B"
    matches_whole_model(spec)
    assert spec.notes[-1].startswith("per-image figures for a 896×896 image")



def test_verify_whole_model_and_its_flops_refusal(cli: Any) -> None:
    out = cli("verify", "llava-1.5-7b")
    assert out.code == 0
    assert "vision (whole part)" in out.stdout and "projector (whole part)" in out.stdout
    assert "LlavaForConditionalGeneration" in out.stdout
    refused = cli("verify", "llava-1.5-7b", "--flops")
    assert refused.code != 0
    assert "this is a whole model (language, vision, projector)" in " ".join(refused.stderr.split())



def test_part_and_images_need_a_model(cli: Any) -> None:
    for command in ("flops", "memory"):
        r = cli(command, "--images", "2")
        assert (r.code, r.stderr) == (2, "error: --part, --images and --image-size need a MODEL\n")



HOSTILE_LAYERS = 10**12


@pytest.mark.parametrize("name", [
    "llava-1.5-7b", "pixtral-12b", "gemma-3-4b", "mistral3-small-3.1-24b", "paligemma-3b-224",
    "llava-v1.6-mistral-7b", "llava-onevision-default", "aya-vision-8b", "internvl-default",
    "idefics3-default", "smolvlm-default", "got-ocr2-default", "qwen2-vl-2b", "qwen2.5-vl-7b",
    "llama-4-scout-whole", "qwen3vl-default",
])
def test_hostile_depths_answer_at_once(name: str) -> None:
    """10^12 layers in the tower and in the language model: counted and priced without walking
    them (layer sets are runs)."""
    import time

    fields = dict(load_spec(name).config)
    text = fields.get("text_config")
    if isinstance(text, dict):
        fields["text_config"] = {**text, "num_hidden_layers": HOSTILE_LAYERS}
    else:
        fields["num_hidden_layers"] = HOSTILE_LAYERS
    vision = dict(fields.get("vision_config") or {})
    vision["depth" if name.startswith("qwen") else "num_hidden_layers"] = HOSTILE_LAYERS
    if name == "qwen3vl-default":
        fields["text_config"] = {"num_hidden_layers": HOSTILE_LAYERS}
    fields["vision_config"] = vision
    if "gemma-3" in name:
        fields["text_config"].pop("layer_types", None)
    start = time.perf_counter()
    spec = spec_from_dict(fields, name="hostile")
    pc = count(spec)
    r = flops(spec, ctx=1000, images=1)
    assert pc.parts["vision"] > HOSTILE_LAYERS and r.parts[0].total > HOSTILE_LAYERS
    assert time.perf_counter() - start < 5


def test_internvl_tiny_downsample_ratio_is_a_field_error() -> None:
    from llmcalc.errors import ConfigError

    with pytest.raises(ConfigError, match="downsample_ratio must be in"):
        spec_from_dict(internvl(downsample_ratio=1e-300), name="bad")



def test_llava_with_a_pixtral_tower_counts_break_tokens() -> None:
    fields = llava(vision={"model_type": "pixtral", "image_size": 64, "patch_size": 8},
                   vision_feature_select_strategy="full", vision_feature_layer=-1)
    spec = spec_from_dict({**fields, "image_size": 40}, name="pixtral-12b-like")
    r = flops(spec, ctx=1)
    assert r.image_tokens == 5 * 5 + 5  # 40 px: 5 × 5 patches of 8, a break (or end) per row
    assert next(p for p in r.parts if p.part == "vision").tokens == 25



def test_pixtral_12b_whole_model() -> None:
    spec = load_spec("pixtral-12b")
    pc = count(spec)
    d, L = 1024, 24
    assert pc.parts["vision"] == d * 3 * 16 * 16 + d + L * (4 * d * d + 2 * d + 3 * 4096 * d)
    assert pc.total == 12_682_739_712
    matches_whole_model(spec)
    assert flops(spec, ctx=1).image_tokens == 64 * 65  # 1024 px: 64 rows of 64 patches + a break



# ---- llama4 ---------------------------------------------------------------------------------------


def llama4(**changes: Any) -> dict[str, Any]:
    text = {"model_type": "llama4_text", "hidden_size": 64, "intermediate_size": 32,
            "intermediate_size_mlp": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 300, "num_local_experts": 4,
            "num_experts_per_tok": 1}
    vision = {"hidden_size": 32, "intermediate_size": 128, "num_hidden_layers": 2,
              "num_attention_heads": 2, "image_size": 56, "patch_size": 14,
              "vision_output_dim": 40, "projector_input_dim": 48, "projector_output_dim": 48}
    text.update(changes.pop("text", {}))
    vision.update(changes.pop("vision", {}))
    return {"model_type": "llama4", "text_config": text, "vision_config": vision, **changes}


def test_llama4_scout_whole_model() -> None:
    spec = load_spec("llama-4-scout-whole")
    pc = count(spec)
    # "109B total": the bundled text model (llama-4-scout) + the 34-layer tower + the projector
    assert pc.parts["language"] == count(load_spec("llama-4-scout")).total == 107_769_861_120
    assert pc.parts["projector"] == 5120 * 4096
    assert pc.total == 108_641_793_536
    matches_whole_model(spec)
    assert flops(spec, ctx=1).image_tokens == 144  # 24 × 24 patches of a 336 px tile, shuffled


def test_llama4_defaults_whole_model() -> None:
    spec = load_spec("llama4")
    assert count(spec).total == 108_225_039_360
    matches_whole_model(spec)
    assert flops(spec, ctx=1).image_tokens == 256  # 32 × 32 patches, shuffled by 0.5


@pytest.mark.parametrize("fields", [
    llama4(),
    llama4(text={"tie_word_embeddings": True}),
    llama4(tie_word_embeddings=True),
    llama4(vision={"pixel_shuffle_ratio": 0.25, "image_size": 112, "num_hidden_layers": 3,
                   "multi_modal_projector_bias": True}),
], ids=["base", "text-tied", "top-tied", "shuffle-quarter"])
def test_llama4_varied_configs_match_transformers(fields: dict[str, Any]) -> None:
    matches_whole_model(spec_from_dict(fields, name="llama4-variant"))


def test_llama4_vision_flops_equal_flop_counter() -> None:
    """One tile through a 2-layer Llama 4 tower and its adapter (eager attention): FlopCounterMode
    equals the vision part's figure."""
    from torch.utils.flop_counter import FlopCounterMode

    fields = llama4(vision={"vision_output_dim": 48})
    spec = spec_from_dict(fields, name="llama4-flops")
    config = transformers.AutoConfig.for_model(
        "llama4", **{k: v for k, v in fields.items() if k != "model_type"})
    model = transformers.AutoModelForImageTextToText.from_config(config, attn_implementation="eager")
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model.vision_model(torch.zeros(1, 3, 56, 56))
    vision = spec.part("vision")
    assert vision is not None
    assert counter.get_total_flops() == part_flops(vision).total



# ---- qwen3_vl -------------------------------------------------------------------------------------


def qwen3_vl(**changes: Any) -> dict[str, Any]:
    text = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 300}
    vision = {"hidden_size": 32, "depth": 3, "num_heads": 2, "intermediate_size": 40,
              "out_hidden_size": 64, "num_position_embeddings": 64, "deepstack_visual_indexes": [0, 2]}
    text.update(changes.pop("text", {}))
    vision.update(changes.pop("vision", {}))
    return {"model_type": "qwen3_vl", "text_config": text, "vision_config": vision, **changes}


def test_qwen3_vl_defaults_whole_model() -> None:
    spec = load_spec("qwen3_vl")
    matches_whole_model(spec)
    assert count(spec).total == 12_616_410_352
    assert flops(spec, ctx=1).image_tokens == 28 * 28  # 896 px: 56 × 56 patches of 16, merged 2 × 2


@pytest.mark.parametrize("fields", [
    qwen3_vl(),
    qwen3_vl(vision={"deepstack_visual_indexes": [], "spatial_merge_size": 1}),
    qwen3_vl(tie_word_embeddings=True),
    qwen3_vl(vision={"model_type": "qwen3_vl", "depth": 4}),
], ids=["base", "no-deepstack", "tied", "old-vision-type"])
def test_qwen3_vl_varied_configs_match_transformers(fields: dict[str, Any]) -> None:
    matches_whole_model(spec_from_dict(fields, name="qwen3-vl"))


@pytest.mark.parametrize("side", [224, 256])
def test_qwen3_vl_tower_flops_equal_flop_counter(side: int) -> None:
    from torch.utils.flop_counter import FlopCounterMode

    fields = {**qwen3_vl(), "image_size": side}
    spec = spec_from_dict(fields, name="qwen3-flops")
    config = transformers.AutoConfig.for_model(
        "qwen3_vl", **{k: v for k, v in fields.items() if k not in ("model_type", "image_size")})
    model = transformers.AutoModelForImageTextToText.from_config(config, attn_implementation="eager")
    grid = spec.part("vision").input_tokens[0][1]  # type: ignore[union-attr]
    side_patches = int(grid**0.5)
    pixels = torch.zeros(grid, 3 * 2 * 16 * 16)
    thw = torch.tensor([[1, side_patches, side_patches]])
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model.model.visual(pixels, grid_thw=thw)
    vision, proj = spec.part("vision"), spec.part("projector")
    assert vision is not None and proj is not None
    deepstack = 2 * 2 * (32 * 4) * (32 * 4 + 64) * (side_patches // 2) ** 2  # two more mergers
    assert counter.get_total_flops() == part_flops(vision).total + part_flops(proj).total
    assert part_flops(proj).total > deepstack



def test_qwen3_vl_moe_defaults_whole_model() -> None:
    spec = load_spec("qwen3vl-moe-default")
    pc = count(spec)
    assert pc.total == 14_052_070_640
    # all of the tower and mergers is active, and the top-k of the language model's experts
    assert pc.active == pc.total - pc.parts["language"] + count(spec_part(spec, "language")).active
    matches_whole_model(spec)


@pytest.mark.parametrize("text", [
    {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 24},
    {"num_experts": 8, "num_experts_per_tok": 1, "moe_intermediate_size": 16,
     "decoder_sparse_step": 2, "mlp_only_layers": [0]},
], ids=["moe", "sparse-step"])
def test_qwen3_vl_moe_varied_configs_match_transformers(text: dict[str, Any]) -> None:
    fields = {**qwen3_vl(text=text), "model_type": "qwen3_vl_moe"}
    matches_whole_model(spec_from_dict(fields, name="qwen3-vl-moe"))
