"""Speech–text models as whole models: an audio encoder, a projector and a language model.

The language model is its text_config described by its own text family (:func:`_vision.text_model`,
renamed under ``model.language_model``); the audio encoder is a shared block (Whisper's:
:func:`bart.whisper_encoder`); a model type is a row: its encoder, its projector, how many tokens
one clip adds to the context.

- ``moss_transcribe_diarize`` (OpenMOSS 2026, MOSS-Transcribe-Diarize): transformers
  moss_transcribe_diarize/modeling_moss_transcribe_diarize.py ``MossTranscribeDiarizeForConditionalGeneration``,
  configuration_moss_transcribe_diarize.py. A Whisper encoder (``model.audio_tower``: conv1
  [d_a, mels, 3], conv2 [d_a, d_a, 3], positions [P_src, d_a], pre-norm layers with no bias on
  k_proj, a final LayerNorm); ``audio_merge_size`` (m) consecutive encoder frames concatenated;
  the projector (``model.multi_modal_projector``): linear_1 [d_t, d_a·m], SiLU, linear_2
  [d_t, d_t] (biases with projector_bias), a LayerNorm [d_t] with bias; a Qwen3 language model
  whose head is tied as the top-level tie_word_embeddings says (true by default; text_config's own
  false does not untie it).

Per clip: the encoder always runs whole 30 s windows (2·P_src mel frames; the model rejects any
other length), so its FLOPs are one window's whatever the clip's length up to 30 s. The context
holds ⌈⌈frames / 2⌉ / m⌉ audio tokens for the clip's frames (100 a second at a hop of 160 samples
at 16 kHz): 13 for one second, 375 for a whole window (processing_moss_transcribe_diarize.py
``_get_audio_token_length``); the projector runs on those rows only.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from typing import ClassVar

from pydantic import AliasChoices
from pydantic import Field

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import linear
from llmcalc.families._base import norm
from llmcalc.families._vision import projector
from llmcalc.families._vision import read_sub
from llmcalc.families._vision import text_model
from llmcalc.families.bart import whisper_encoder
from llmcalc.families.vlm import LANGUAGE
from llmcalc.families.vlm import CompositeConfig
from llmcalc.model.tower_flops import part_flops

# feature_extraction_moss_transcribe_diarize.py: 16 kHz, a hop of 160 samples → 100 mel frames a
# second (the frame mask samples the audio every hop)
SECOND_FRAMES = 16000 // 160


class MossTranscribeDiarizeAudioConfig(FamilyConfig):
    """The Whisper encoder's sizes, under the config's names or Whisper's (its attribute_map)."""

    transformers_class = "MossTranscribeDiarizeAudioConfig"

    hidden_size: Size = Field(validation_alias=AliasChoices("d_model", "hidden_size"))
    num_hidden_layers: Size = Field(validation_alias=AliasChoices("encoder_layers", "num_hidden_layers"))
    num_attention_heads: Size = Field(
        validation_alias=AliasChoices("encoder_attention_heads", "num_attention_heads"))
    intermediate_size: Size = Field(
        validation_alias=AliasChoices("encoder_ffn_dim", "intermediate_size"))
    num_mel_bins: Size
    max_source_positions: Size


class MossTranscribeDiarizeConfig(CompositeConfig):
    transformers_class = "MossTranscribeDiarizeConfig"
    composite_type: ClassVar[str] = "moss_transcribe_diarize"
    default_text: ClassVar[str] = "qwen3"
    default_tie: ClassVar[bool] = True
    tie_from_text: ClassVar[bool] = False

    audio_config: dict[str, Any] | None = None
    audio_merge_size: Size
    projector_bias: bool


def audio_tokens(frames: int, merge: int) -> int:
    """Tokens a clip of ``frames`` mel frames (one window) adds to the context: conv2's stride 2,
    then whole groups of ``merge`` frames (the last zero-padded)."""
    conv = (frames - 1) // 2 + 1
    return -(-conv // merge)


def describe_moss_transcribe_diarize(c: MossTranscribeDiarizeConfig) -> Architecture:
    text = c.text()
    lm = text_model(text, rename=LANGUAGE, tied=c.tied(text))
    a = read_sub(MossTranscribeDiarizeAudioConfig, c.sub("audio_config", "moss_transcribe_diarize_audio"),
                 "audio_config")
    d_a, d_t, m = a.hidden_size, lm.shape.hidden_size, c.audio_merge_size
    tokens = audio_tokens(SECOND_FRAMES, m)
    window = audio_tokens(2 * a.max_source_positions, m)
    audio = replace(
        whisper_encoder("model.audio_tower", d=d_a, mels=a.num_mel_bins, src=a.max_source_positions,
                        layers=a.num_hidden_layers, ff=a.intermediate_size,
                        heads=a.num_attention_heads, name="audio",
                        heads_field="audio_config.num_attention_heads"),
        context_tokens=window, input="audio",
        clip=f"one 30 s window ({2 * a.max_source_positions:,} mel frames)",
    )
    p = "model.multi_modal_projector"
    proj = [
        *linear(f"{p}.linear_1", "linear_1", d_t, d_a * m, bias=c.projector_bias),
        *linear(f"{p}.linear_2", "linear_2", d_t, d_t, bias=c.projector_bias),
        *norm(f"{p}.norm", "norm", d_t, bias=True),
    ]
    # the projector meets the clip's merged rows: one second's
    head = replace(projector(proj, tokens=tokens, d_in=d_a * m, d_out=d_t), input="audio",
                   clip=f"one second of speech ({SECOND_FRAMES} mel frames)")
    note = (
        f"audio: one second of speech, {SECOND_FRAMES} mel frames, is {tokens} tokens in the "
        f"context ({window} for a whole 30 s window); the encoder runs on whole windows of "
        f"{2 * a.max_source_positions:,} frames, {part_flops(audio).total:,} FLOPs each, the "
        f"projector {part_flops(head).total:,} FLOPs a second"
    )
    return replace(lm, notes=(*lm.notes, note), parts=(audio, head))
