"""MOSS-Transcribe-Diarize as a whole model: the Whisper encoder, the merged-frame
projector and the Qwen3 language model, exact against transformers'
MossTranscribeDiarizeForConditionalGeneration on the meta device part by part (parts split by module
prefix on transformers' side); the encoder's FLOPs per 30 s window and the projector's per second
against FlopCounterMode; audio tokens as the processor counts them; the KV cache is Qwen3's."""

from __future__ import annotations

import math
from typing import Any

import pytest
from helpers.reference import matches_whole_model

from llmcalc.families.audio_lm import audio_tokens
from llmcalc.formulas.counting import count
from llmcalc.formulas.flops import part_flops
from llmcalc.formulas.memory import memory
from llmcalc.inputs.config import load_spec, spec_from_dict
from llmcalc.units import DType

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

BUNDLED = "moss-transcribe-diarize-default"


def small(**changes: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "model_type": "moss_transcribe_diarize",
        "text_config": {"model_type": "qwen3", "vocab_size": 300, "hidden_size": 64,
                        "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
                        "num_key_value_heads": 2, "head_dim": 16},
        "audio_config": {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
                         "num_attention_heads": 4, "num_mel_bins": 16, "max_source_positions": 60},
    }
    for key, value in changes.items():
        fields[key] = {**fields[key], **value} if isinstance(value, dict) and key in fields else value
    return fields


# ---- parameters -----------------------------------------------------------------------------------


def test_bundled_whole_model() -> None:
    spec = load_spec(BUNDLED)
    d, v, ff, layers, hd = 1024, 151936, 3072, 28, 128
    # Qwen3: q [16·128, d], k, v [8·128, d], o [d, 16·128], q/k norms [128], two norms, SwiGLU
    language = v * d + layers * ((16 + 8 + 8) * hd * d + 16 * hd * d + 2 * hd + 2 * d
                                 + 3 * ff * d) + d
    da, fa, mels, src = 1024, 4096, 80, 1500
    # Whisper: k [d, d] without bias; q, v, out_proj with; two LayerNorms; fc1, fc2
    block = 4 * da * da + 3 * da + 4 * da + 2 * fa * da + fa + da
    audio = da * mels * 3 + da + da * da * 3 + da + src * da + 2 * da + 24 * block
    projector = 1024 * 4 * da + 1024 + 1024 * 1024 + 1024 + 2 * 1024
    parts = {"language": language, "audio": audio, "projector": projector}
    assert parts == {"language": 596_049_920, "audio": 307_216_384, "projector": 5_246_976}
    assert count(spec).total == sum(parts.values()) == 908_513_280
    assert matches_whole_model(spec) == parts


def test_transformers_defaults_are_the_bundled_config() -> None:
    assert count(load_spec("moss_transcribe_diarize")).total == 908_513_280


@pytest.mark.parametrize("changes", [
    {},
    {"audio_config": {"num_hidden_layers": 3, "hidden_size": 48, "num_attention_heads": 6,
                      "intermediate_size": 40}},
    {"audio_config": {"num_mel_bins": 128, "max_source_positions": 100}},
    # Whisper's own names, read as MossTranscribeDiarizeAudioConfig's attribute_map reads them
    {"audio_config": {"d_model": 40, "encoder_layers": 1, "encoder_attention_heads": 5,
                      "encoder_ffn_dim": 24}},
    {"audio_merge_size": 2, "projector_bias": False},
    {"text_config": {"hidden_size": 96, "num_attention_heads": 6, "num_key_value_heads": 3,
                     "num_hidden_layers": 3, "head_dim": 32}},
    {"tie_word_embeddings": False},
    {"text_config": {"tie_word_embeddings": False}},  # the top level's true still ties
], ids=["base", "audio-wide", "audio-mels", "whisper-names", "merge-2-no-bias", "language",
        "untied", "text-untied"])
def test_varied_configs_match_transformers(changes: dict[str, Any]) -> None:
    matches_whole_model(spec_from_dict(small(**changes), name="moss-variant"))


def test_untied_head_is_counted() -> None:
    tied = count(spec_from_dict(small(), name="x")).total
    untied = count(spec_from_dict(small(tie_word_embeddings=False), name="x")).total
    assert untied - tied == 300 * 64


# ---- audio tokens and FLOPs -----------------------------------------------------------------------


@pytest.mark.parametrize(("seconds", "tokens"), [(1, 13), (2, 25), (4.5, 57), (30, 375)])
def test_audio_tokens_as_the_processor_counts(seconds: float, tokens: int) -> None:
    """The processor's count for one clip of up to 30 s (its frame mask: 100 frames a second)."""
    from transformers import MossTranscribeDiarizeFeatureExtractor

    fe = MossTranscribeDiarizeFeatureExtractor()
    out = fe([[0.0] * int(seconds * 16000)], sampling_rate=16000, return_tensors="pt")
    frames = int(out["input_features_mask"].sum())
    assert audio_tokens(frames, 4) == tokens
    conv = (out["input_features_mask"].sum(-1) - 1) // 2 + 1  # _get_audio_token_length
    assert int((conv + 3) // 4) == tokens


def test_bundled_audio_note_and_no_images(cli: Any) -> None:
    spec = load_spec(BUNDLED)
    audio, proj = spec.part("audio"), spec.part("projector")
    assert audio is not None and proj is not None
    # the encoder's input is one 30 s window (375 context tokens), the projector's one second
    assert audio.context_tokens == 375 and proj.tokens_for("") == 13
    assert audio.input == proj.input == "audio"
    # one 30 s window: conv1 over 3,000 frames, conv2 and 24 layers over 1,500 positions, and
    # attention 1,500² · 2·16·(64 + 64) a layer
    d, ff, n = 1024, 4096, 1500
    weight = (2 * 3000 * d * 80 * 3 + 2 * n * d * d * 3
              + 24 * 2 * n * (4 * d * d + 2 * ff * d))
    attention = 24 * n * n * 2 * 16 * (64 + 64)
    assert part_flops(audio).total == weight + attention == 1_138_065_408_000
    assert part_flops(proj).total == 2 * 13 * (4096 * 1024 + 1024 * 1024) == 136_314_880
    assert any("one second of speech, 100 mel frames, is 13 tokens in the context (375 for a "
               "whole 30 s window); the encoder runs on whole windows of 3,000 frames, "
               "1,138,065,408,000 FLOPs each, the projector 136,314,880 FLOPs a second" in note
               for note in spec.notes)
    bad = cli("flops", BUNDLED, "--images", "1")
    assert bad.code == 2
    assert "--images 1: moss_transcribe_diarize (transformers defaults) takes no images" in bad.stderr


@pytest.mark.parametrize("changes", [{}, {"audio_config": {"max_source_positions": 37}},
                                     {"audio_merge_size": 3}])
def test_audio_flops_equal_flop_counter(changes: dict[str, Any]) -> None:
    """The audio tower on one whole window and the projector on one second's merged rows (eager
    attention): FlopCounterMode equals the parts' figures."""
    from torch.utils.flop_counter import FlopCounterMode

    fields = small(**changes)
    spec = spec_from_dict(fields, name="moss-flops")
    audio, proj = spec.part("audio"), spec.part("projector")
    assert audio is not None and proj is not None
    config = transformers.AutoConfig.for_model(
        "moss_transcribe_diarize", **{k: v for k, v in fields.items() if k != "model_type"})
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    a = config.audio_config
    feats = torch.zeros(1, a.num_mel_bins, 2 * a.max_source_positions)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        hidden = model.model.audio_tower(feats).last_hidden_state
    assert hidden.shape[1] == a.max_source_positions
    assert counter.get_total_flops() == part_flops(audio).total
    rows = proj.tokens_for("")  # one second's merged rows, the context tokens
    assert rows == audio_tokens(100, config.audio_merge_size)
    assert audio.context_tokens == audio_tokens(2 * a.max_source_positions, config.audio_merge_size)
    merged = torch.zeros(rows, a.hidden_size * config.audio_merge_size)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model.model.multi_modal_projector(merged)
    assert counter.get_total_flops() == part_flops(proj).total


# ---- the language model: KV and the CLI -------------------------------------------------------------


def test_kv_cache_is_the_language_models() -> None:
    m = memory(load_spec(BUNDLED), ctx=1000, batch=1, dtype=DType.bf16)
    # 28 layers × K and V × 8 kv heads × 128 × 2 bytes per token
    assert m.kv_cache_bytes == 28 * 2 * 8 * 128 * 2 * 1000 == 114_688_000


def test_part_option_and_parts_in_json(cli: Any) -> None:
    whole = cli("count", BUNDLED, "--json").json()
    assert whole["total_params"] == 908_513_280
    assert whole["parts"] == {"language": 596_049_920, "audio": 307_216_384, "projector": 5_246_976}
    audio = cli("count", BUNDLED, "--part", "audio", "--json").json()
    assert audio["total_params"] == 307_216_384 and audio["num_layers"] == 24
    proj = cli("count", BUNDLED, "--part", "projector", "--json").json()
    assert proj["total_params"] == 5_246_976
    lang = cli("count", BUNDLED, "--part", "language", "--json").json()
    assert lang["total_params"] == 596_049_920 and lang["tied_embeddings"] is True
    bad = cli("count", BUNDLED, "--part", "vision")
    assert bad.code == 2
    assert ("--part vision: moss_transcribe_diarize (transformers defaults) has the parts "
            "language, audio, projector") in bad.stderr


# ---- fuyu: a linear patch embedding and a Persimmon language model ----------------------------------

def fuyu_small(**changes: Any) -> dict[str, Any]:
    text = {"model_type": "persimmon", "vocab_size": 300, "hidden_size": 64,
            "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4}
    return {"model_type": "fuyu", "text_config": text, **changes}


def test_fuyu_defaults_whole_model() -> None:
    d, v, ff, layers = 4096, 262144, 16384, 36
    # Persimmon: query_key_value [3d, d] and dense [d, d] with biases, q/k LayerNorms [64] with
    # biases, two LayerNorms, dense_h_to_4h / dense_4h_to_h with biases; untied head
    layer = 3 * d * d + 3 * d + d * d + d + 4 * 64 + 4 * d + 2 * ff * d + ff + d
    language = 2 * v * d + layers * layer + 2 * d
    vision = d * 30 * 30 * 3 + d
    parts = {"language": language, "vision": vision}
    assert parts == {"language": 9_397_175_296, "vision": 11_063_296}
    spec = load_spec("fuyu-default")
    assert count(spec).total == 9_408_238_592
    assert matches_whole_model(spec) == parts


@pytest.mark.parametrize("fields", [
    fuyu_small(),
    fuyu_small(patch_size=16, num_channels=1),
    fuyu_small(tie_word_embeddings=True),
    # a flat (pre-v5) config: the text model's fields at the top level (FuyuConfig.__post_init__)
    {"model_type": "fuyu", "vocab_size": 300, "hidden_size": 48, "intermediate_size": 80,
     "num_hidden_layers": 3, "num_attention_heads": 3, "patch_size": 10},
], ids=["base", "patch-16-gray", "tied", "flat"])
def test_fuyu_varied_configs_match_transformers(fields: dict[str, Any]) -> None:
    matches_whole_model(spec_from_dict(fields, name="fuyu-variant"))


@pytest.mark.parametrize(("side", "patches", "tokens"), [
    (300, 100, 111), (301, 121, 133), (2160, 36 * 36, 36 * 37 + 1), (1080, 1296, 1333)])
def test_fuyu_image_tokens_and_flops(side: int, patches: int, tokens: int) -> None:
    from transformers import FuyuImageProcessor

    spec = spec_from_dict({**fuyu_small(), "image_size": side}, name="fuyu-image")
    vision = spec.part("vision")
    assert vision is not None and vision.context_tokens == tokens
    out = FuyuImageProcessor()(torch.zeros(3, side, side), return_tensors="pt")
    h, w = int(out["image_unpadded_heights"][0][0]), int(out["image_unpadded_widths"][0][0])
    assert math.ceil(h / 30) * math.ceil(w / 30) == patches
    assert part_flops(vision).total == 2 * patches * 64 * 30 * 30 * 3
