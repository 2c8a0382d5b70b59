"""Audio parts of whole models in `flops`: each per input as its family defines one (Part.clip),
apart from the per-image figures; a part whose FLOPs are not computed says so, and `--part` of an
audio part is refused rather than given per-token figures of a token context it does not have."""

from __future__ import annotations

import json
from typing import Any

import pytest

from llmcalc import load_spec
from llmcalc.formulas.flops import part_flops


def test_phi4_audio_per_second_of_speech(cli: Any) -> None:
    r = cli("flops", "phi-4-multimodal-instruct", "--json")
    assert r.code == 0
    out = json.loads(r.stdout)
    audio = out["per_audio_input"]
    # held to FlopCounterMode by tests/multimodal/test_phi4_multimodal.py (98 mel frames: 13 encoder tokens)
    assert audio["audio"] == {"input": "one second of speech (98 mel frames)",
                              "flops": 12_884_357_120, "weight_flops": audio["audio"]["weight_flops"],
                              "attention_flops": audio["audio"]["attention_flops"], "tokens": 13,
                              "context_tokens": 13}
    assert audio["audio_projector"]["flops"] == 327_155_712
    spec = load_spec("phi-4-multimodal-instruct")
    part = spec.part("audio")
    assert part is not None and part_flops(part).total == audio["audio"]["flops"]
    assert set(out["per_image"]) == {"vision", "projector"}  # the audio parts are not per image


def test_moss_encoder_per_window_projector_per_second(cli: Any) -> None:
    out = json.loads(cli("flops", "moss-transcribe-diarize-default", "--json").stdout)
    audio = out["per_audio_input"]
    assert (audio["audio"]["input"], audio["audio"]["flops"], audio["audio"]["context_tokens"]) == (
        "one 30 s window (3,000 mel frames)", 1_138_065_408_000, 375)
    assert (audio["projector"]["input"], audio["projector"]["flops"]) == (
        "one second of speech (100 mel frames)", 136_314_880)
    assert "per_image" not in out


@pytest.mark.parametrize("model", ["gemma-3n-defaults", "gemma-4-e2b-whole"])
def test_uncomputed_audio_is_said_not_shown(cli: Any, model: str) -> None:
    out = json.loads(cli("flops", model, "--json").stdout)
    assert "per_audio_input" not in out
    assert set(out["per_image"]) == {"vision", "projector"}
    assert "audio: the FLOPs of an audio input are not computed yet" in out["notes"]


@pytest.mark.parametrize(("model", "part", "where"), [
    ("gemma-4-e2b-whole", "audio", "not computed yet"),
    ("phi-4-multimodal-instruct", "audio_projector",
     "the per-audio-input rows of `llmcalc flops MODEL`"),
])
def test_flops_of_an_audio_part_is_refused(cli: Any, model: str, part: str, where: str) -> None:
    r = cli("flops", model, "--part", part)
    name = load_spec(model).name
    assert (r.code, r.stdout) == (2, "")
    assert r.stderr == (f"error: --part {part}: {name}'s {part} part takes audio, not a token "
                        f"context; its FLOPs per input: {where}\n")
