"""Phi-4-multimodal as a whole model: the Phi-4-mini language model, the SigLIP tower and
image projector, the Conformer speech encoder and its projectors, exact against transformers'
Phi4MultimodalForCausalLM on the meta device part by part (parts split by module prefix on
transformers' side); per-image FLOPs and image tokens against the model's own image embedding under
FlopCounterMode; the audio encoder's FLOPs likewise."""

from __future__ import annotations

import math
from typing import Any

import pytest
from helpers.reference import matches_whole_model

from llmcalc.families._audio import ConformerConfig, conformer_flops
from llmcalc.families.phi4mm import image_tokens
from llmcalc.formulas.counting import count
from llmcalc.formulas.flops import flops, part_flops
from llmcalc.formulas.memory import memory
from llmcalc.inputs.config import load_spec, spec_from_dict
from llmcalc.units import DType

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch



def small(**changes: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "model_type": "phi4_multimodal", "vocab_size": 300, "hidden_size": 64,
        "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "pad_token_id": 0,
        "vision_config": {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
                          "num_attention_heads": 2, "image_size": 56, "crop_size": 56,
                          "patch_size": 14},
        "audio_config": {"hidden_size": 32, "intermediate_size": 40, "num_blocks": 2,
                         "num_attention_heads": 4, "ext_pw_out_channel": 32,
                         "depthwise_separable_out_channel": 32, "nemo_conv_channels": 16,
                         "input_size": 20, "bias_max_distance": 30},
    }
    for key, value in changes.items():
        fields[key] = {**fields[key], **value} if isinstance(value, dict) and key in fields else value
    return fields


# ---- parameters -----------------------------------------------------------------------------------


def test_bundled_whole_model() -> None:
    spec = load_spec("microsoft/Phi-4-multimodal-instruct")
    d, v, ff, layers = 3072, 200064, 8192, 32
    language = v * d + layers * ((24 + 16) * 128 * d + d * d + 2 * ff * d + d * ff + 2 * d) + d
    dv, fv = 1152, 4304
    vit_layer = 4 * (dv * dv + dv) + 4 * dv + fv * dv + fv + dv * fv + dv
    head = dv + 3 * dv * dv + 3 * dv + dv * dv + dv + 2 * dv + fv * dv + fv + dv * fv + dv
    vision = dv * 3 * 14 * 14 + dv + 1024 * dv + 27 * vit_layer + 2 * dv + head
    projector = 2 * dv + d * dv + d + d * d + d
    da, fa = 1024, 1536
    macaron = 2 * da + 2 * fa * da + 2 * fa + da * fa + da
    block = (2 * macaron + 4 * (da * da + da) + 2 * da + 2 * da + 2 * da * da + 2 * da
             + 3 * da + da + da * da + da + da * da + da + 4 * da)
    subsampling = (9 * da + da) + 2 * (9 * da + da + da * da + da) + da * da * 10 + da
    audio = subsampling + 2 * 500 * 16 + 24 * block
    audio_projector = 2 * (d * da + d + d * d + d)
    parts = {"language": language, "vision": vision, "projector": projector, "audio": audio,
             "audio_projector": audio_projector}
    assert parts == {"language": 3_836_021_760, "vision": 428_565_440, "projector": 12_984_576,
                     "audio": 441_238_144, "audio_projector": 25_178_112}
    assert count(spec).total == sum(parts.values()) == 4_743_988_032
    assert matches_whole_model(spec) == parts


def test_lora_adapters_are_counted_apart(cli: Any) -> None:
    """The original checkpoint's vision (r 256) and speech (r 320) LoRA on qkv, o, gate_up and
    down of all 32 layers: outside the model transformers builds; with them the published 5.6B."""
    d, ff = 3072, 8192
    per_rank = 32 * ((d + 5120) + (d + d) + (d + 2 * ff) + (ff + d))
    lora = (256 + 320) * per_rank
    assert lora == 830_472_192
    assert 4_743_988_032 + lora == 5_574_460_224  # "5.6B"
    data = cli("count", "microsoft/Phi-4-multimodal-instruct", "--json").json()
    assert data["lora_params"] == lora and data["total_params"] == 4_743_988_032
    assert data["parts"]["audio"] == 441_238_144


def test_transformers_defaults_whole_model() -> None:
    parts = matches_whole_model(load_spec("phi4_multimodal"))
    assert sum(parts.values()) == 5_308_268_992  # 32 heads, an untied head, bias table of 2,000


@pytest.mark.parametrize("changes", [
    {},
    {"vision_config": {"num_hidden_layers": 3, "hidden_size": 48, "num_attention_heads": 3}},
    {"vision_config": {"patch_size": 8, "image_size": 64, "crop_size": 64}},  # odd grid: padded
    {"vision_config": {"image_size": 42}},  # crops of 56 px, positions of 42
    {"audio_config": {"num_blocks": 3, "hidden_size": 48, "num_attention_heads": 6,
                      "ext_pw_out_channel": 48, "depthwise_separable_out_channel": 24}},
    {"audio_config": {"time_reduction": 4, "input_size": 33, "bias_symmetric": True}},
    {"audio_config": {"time_reduction": 16, "depthwise_multiplier": 2, "kernel_size": 5}},
    {"audio_config": {"downsample_rate": 2, "nemo_conv_channels": 8}},
    {"hidden_size": 96, "num_attention_heads": 6, "num_key_value_heads": 3, "num_hidden_layers": 3},
    {"tie_word_embeddings": True, "sliding_window": 16},
], ids=["base", "vision-wide", "vision-patch-8", "vision-crop", "audio-wide", "audio-tr4",
        "audio-tr16", "audio-downsample", "language", "tied"])
def test_varied_configs_match_transformers(changes: dict[str, Any]) -> None:
    matches_whole_model(spec_from_dict(small(**changes), name="phi4mm-variant"))


# ---- image tokens and FLOPs ------------------------------------------------------------------------


@pytest.mark.parametrize(("side", "k"), [(448, 1), (500, 2), (896, 2), (1000, 3), (2688, 6),
                                         (3000, 6), (100, 1)])
def test_image_tokens_as_the_processor_counts(side: int, k: int) -> None:
    # image_processing_phi4_multimodal.py: 256 + 1 + (mask tokens) + (mask rows) + 16 for a
    # square image in k × k crops of 448 px (no padding masked)
    assert image_tokens(side, 448, 14) == (1 + k * k, 256 + 1 + 256 * k * k + 16 * k + 16)


def test_bundled_image_and_audio_figures(cli: Any) -> None:
    data = cli("flops", "microsoft/Phi-4-multimodal-instruct", "--ctx", "1000", "--images", "1",
               "--json").json()
    assert data["image_tokens"] == 545 and data["ctx"] == 1545
    assert set(data["per_image"]) == {"vision", "projector"}  # the audio parts run per clip
    assert data["per_image"]["vision"]["image_size"] == 448
    big = cli("flops", "microsoft/Phi-4-multimodal-instruct", "--image-size", "896", "--json").json()
    assert big["image_tokens"] == 256 + 1 + 1024 + 32 + 16
    spec = load_spec("microsoft/Phi-4-multimodal-instruct")
    audio = spec.part("audio")
    assert audio is not None and audio.context_tokens == 13  # 1 s: 98 frames, ⌈98 / 8⌉
    assert any("one second of speech, 98 mel frames, is 13 tokens" in n for n in spec.notes)
    # the tower runs on the crop and the resized whole image: twice one crop's figures
    one = flops(spec_from_dict({**dict(spec.config), "image_size": 448}, name="x"), ctx=1)
    four = flops(spec_from_dict({**dict(spec.config), "image_size": 896}, name="x"), ctx=1)
    v1 = next(p for p in one.parts if p.part == "vision")
    v4 = next(p for p in four.parts if p.part == "vision")
    assert v4.total * 2 == v1.total * 5


@pytest.mark.parametrize(("changes", "side"), [
    ({}, None), ({}, 120), ({"vision_config": {"patch_size": 8}}, 100),
    ({"vision_config": {"num_hidden_layers": 1}}, 200),
])
def test_image_flops_and_tokens_equal_the_model(changes: dict[str, Any], side: int | None) -> None:
    """The model's image embedding on one image (global + k × k crops, no padding): its output has
    the part's context tokens, and FlopCounterMode (eager attention) equals vision + projector."""
    from torch.utils.flop_counter import FlopCounterMode

    fields = small(**changes, **({"image_size": side} if side else {}))
    spec = spec_from_dict(fields, name="phi4mm-flops")
    vision, proj = spec.part("vision"), spec.part("projector")
    assert vision is not None and proj is not None
    config = transformers.AutoConfig.for_model(
        "phi4_multimodal", **{k: v for k, v in fields.items() if k not in ("model_type", "image_size")})
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    embed = model.model.embed_tokens_extend.image_embed
    v = config.vision_config
    crop, runs, tokens = v.crop_size, vision.passes, vision.context_tokens
    k = math.isqrt(runs - 1)
    grid = crop // v.patch_size
    ids = torch.full((1, tokens), v.image_token_id)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        out = embed(ids, torch.zeros(1, tokens, 64), image_pixel_values=torch.zeros(1, runs, 3, crop, crop),
                    image_sizes=torch.tensor([[k * crop, k * crop]]),
                    image_attention_mask=torch.ones(1, runs, grid, grid))
    assert out.shape == (1, tokens, 64)
    assert counter.get_total_flops() == part_flops(vision).total + part_flops(proj).total


@pytest.mark.parametrize("frames", [98, 37, 4100])
@pytest.mark.parametrize("audio", [{}, {"time_reduction": 4, "kernel_size": 5,
                                        "depthwise_multiplier": 2}])
def test_audio_flops_equal_flop_counter(frames: int, audio: dict[str, Any]) -> None:
    """One clip through the Conformer (past 500 tokens in padded windows of 500) and the speech
    projector: FlopCounterMode equals conformer_flops and the parts' figures."""
    from torch.utils.flop_counter import FlopCounterMode

    from llmcalc.families._vision import read_sub

    fields = small(audio_config=audio)
    spec = spec_from_dict(fields, name="phi4mm-audio")
    config = transformers.AutoConfig.for_model(
        "phi4_multimodal", **{k: v for k, v in fields.items() if k != "model_type"})
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    embed = model.model.embed_tokens_extend.audio_embed
    feats = torch.zeros(1, frames, config.audio_config.input_size)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        hidden = embed.encoder(feats, None)
    c = read_sub(ConformerConfig, {**config.audio_config.to_dict()}, "audio_config")
    ours = conformer_flops(c, frames=frames)
    assert hidden.shape[1] == ours.tokens
    assert counter.get_total_flops() == ours.weight + ours.attention
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        embed.down_proj_for_speech(torch.nn.functional.gelu(embed.up_proj_for_speech(hidden)))
    if frames == 98 and not audio:
        part, proj = spec.part("audio"), spec.part("audio_projector")
        assert part is not None and proj is not None
        assert part_flops(part).total == ours.weight + ours.attention
        assert part_flops(proj).total == counter.get_total_flops()


# ---- the language model: KV and the CLI -------------------------------------------------------------


def test_kv_cache_is_the_language_models_with_image_tokens() -> None:
    spec = load_spec("microsoft/Phi-4-multimodal-instruct")
    m = memory(spec, ctx=1000 + 2 * 545, batch=1, dtype=DType.bf16)
    # 32 layers × K and V × 8 kv heads × 128 × 2 bytes per token
    assert m.kv_cache_bytes == 32 * 2 * 8 * 128 * 2 * (1000 + 2 * 545)
    phi3 = load_spec("phi-3-mini-4k")  # the same decoder with MHA: 32 kv heads
    assert memory(phi3, ctx=100, batch=1, dtype=DType.bf16).kv_cache_bytes == 32 * 2 * 32 * 96 * 2 * 100


def test_part_option_and_parts_in_json(cli: Any) -> None:
    name = "microsoft/Phi-4-multimodal-instruct"
    audio = cli("count", name, "--part", "audio", "--json").json()
    assert audio["total_params"] == 441_238_144
    lang = cli("count", name, "--part", "language", "--json").json()
    assert lang["total_params"] == 3_836_021_760
    bad = cli("count", name, "--part", "speech")
    assert bad.code == 2
    assert ("--part speech: microsoft/Phi-4-multimodal-instruct has the parts language, vision, "
            "projector, audio, audio_projector") in bad.stderr
    mem = cli("memory", name, "--ctx", "1000", "--images", "1", "--json").json()
    plain = cli("memory", name, "--ctx", "1545", "--part", "language", "--json").json()
    assert mem["kv_cache_bytes"] == plain["kv_cache_bytes"]
