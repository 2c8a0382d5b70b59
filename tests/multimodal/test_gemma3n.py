"""Gemma 3n as a whole model: the gemma3n_text language model, the USM audio encoder and
the two embedders exact against transformers' own modules on the meta device (they need no timm),
and the MobileNetV5 tower exact, tensor by tensor, against the named parameters of timm 1.0.31's
``mobilenetv5_300m_enc`` recorded in tests/data/mobilenetv5_300m_enc.json.

timm is not in the test environment: it imports torchvision at its top, and PyPI's torchvision
0.28.0 (the release pinned to torch 2.13.0) is a CUDA build whose ops fail to load beside the CPU
torch (``operator torchvision::nms does not exist``), which then breaks ``import transformers``
itself. The recorded tensors were read with timm 1.0.31 built on the meta device; there the whole
Gemma3nForConditionalGeneration (transformers 5.24, default config) held 7,818,517,072 parameters:
language_model 6,835,235,568, vision_tower 294,126,912, audio_tower 681,348,640, embed_vision
4,460,544, embed_audio 3,345,408."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import REPO
from helpers.reference import numel

from llmcalc.errors import LLMCalcError
from llmcalc.formulas.counting import count
from llmcalc.formulas.flops import flops
from llmcalc.inputs.config import spec_from_dict
from llmcalc.model.spec import ModelSpec, spec_part

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

TIMM = REPO / "tests" / "data" / "mobilenetv5_300m_enc.json"
TOWER = "model.vision_tower.timm_model."


def modules(fields: dict[str, Any]) -> dict[str, dict[str, tuple[int, ...]]]:
    """transformers' parts of Gemma3nForConditionalGeneration but the timm tower, each built
    alone on the meta device and named as in the whole model."""
    from transformers.models.gemma3n import modeling_gemma3n as m

    transformers.logging.set_verbosity_error()
    cfg = transformers.Gemma3nConfig(**fields)
    with torch.device("meta"):
        built = {
            "model.language_model.": transformers.AutoModel.from_config(cfg.text_config),
            "model.audio_tower.": m.Gemma3nAudioEncoder(cfg.audio_config),
            "model.embed_vision.": m.Gemma3nMultimodalEmbedder(cfg.vision_config, cfg.text_config),
            "model.embed_audio.": m.Gemma3nMultimodalEmbedder(cfg.audio_config, cfg.text_config),
        }
    return {prefix: {prefix + n: tuple(p.shape) for n, p in mod.named_parameters()}
            for prefix, mod in built.items()}


def timm_tower() -> dict[str, tuple[int, ...]]:
    return {TOWER + n: tuple(s) for n, s in json.loads(TIMM.read_text()).items()}


def matches(spec: ModelSpec, fields: dict[str, Any]) -> None:
    """Every tensor's name and shape equal; each part equal to its modules."""
    real = modules(fields)
    whole = {**timm_tower(), **{k: v for part in real.values() for k, v in part.items()}}
    assert sorted(spec.named_shapes()) == sorted(whole.items())
    pc = count(spec)
    assert pc.total == numel(whole)
    assert pc.parts == {
        "language": numel(real["model.language_model."]),
        "vision": numel(timm_tower()),
        "projector": numel(real["model.embed_vision."]),
        "audio": numel(real["model.audio_tower."]) + numel(real["model.embed_audio."]),
    }
    for name, n in pc.parts.items():
        assert count(spec_part(spec, name)).total == n


def test_default_whole_model() -> None:
    spec = spec_from_dict({"model_type": "gemma3n"}, name="gemma3n")
    pc = count(spec)
    # the figures transformers 5.24 + timm 1.0.31 gave for the whole model (module docstring)
    assert pc.total == 7_818_517_072
    assert pc.parts == {"language": 6_835_235_568, "vision": 294_126_912,
                        "projector": 4_460_544, "audio": 681_348_640 + 3_345_408}
    matches(spec, {})
    r = flops(spec, ctx=1000, images=1)
    assert r.image_tokens == 256 and r.ctx == 1256


def test_mobilenet_by_block_kind() -> None:
    """Hand counts of one block of each kind, from the recorded timm tensors."""
    tower = timm_tower()
    ours = dict(spec_from_dict({"model_type": "gemma3n"}, name="g").named_shapes())
    # blocks.2.9: multi-query attention on 640 channels, 12 query heads of 64, kv stride 2 (k 3)
    mqa = 640 + 768 * 640 + 2 * (640 * 9 + 640 + 64 * 640) + 640 * 768 + 640
    # blocks.1.0: uir a3 k5 s2 e6, 128 → 256
    uir = 128 * 9 + 128 + 768 * 128 + 768 + 768 * 25 + 768 + 256 * 768 + 256 + 256
    for block, n in (("blocks.2.9.", mqa), ("blocks.1.0.", uir)):
        assert numel({k: v for k, v in tower.items() if k.startswith(TOWER + block)}) == n
        assert numel({k: v for k, v in ours.items() if k.startswith(TOWER + block)}) == n


TEXT = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 300,
        "vocab_size_per_layer_input": 200, "hidden_size_per_layer_input": 8,
        "num_kv_shared_layers": 2, "laurel_rank": 4, "sliding_window": 8,
        "layer_types": ["sliding_attention", "full_attention"] * 2}


@pytest.mark.parametrize("fields", [
    {"text_config": TEXT},
    {"text_config": TEXT, "audio_config": {"hidden_size": 64, "conf_num_attention_heads": 4,
                                           "conf_num_hidden_layers": 2}},
    {"text_config": {**TEXT, "hidden_size": 96, "altup_num_inputs": 2},
     "audio_config": {"hidden_size": 48, "conf_num_attention_heads": 2, "conf_num_hidden_layers": 1,
                      "input_feat_size": 64, "sscp_conv_channel_size": [16, 8],
                      "conf_conv_kernel_size": 3}},
    {"text_config": TEXT, "tie_word_embeddings": False},
    {"text_config": TEXT, "vision_config": {"vocab_size": 64},
     "audio_config": {"vocab_size": 32, "hidden_size": 32, "conf_num_attention_heads": 2,
                      "conf_num_hidden_layers": 1}},
], ids=["text", "audio-size", "audio-stem", "untied", "embedders"])
def test_varied_configs_match_transformers(fields: dict[str, Any]) -> None:
    spec = spec_from_dict({"model_type": "gemma3n", **fields}, name="gemma3n-variant")
    if fields.get("tie_word_embeddings") is False:
        # the whole model's head is its own matrix then; transformers' Gemma3nTextModel has none
        lm = count(spec_part(spec, "language")).breakdown.get("lm_head", 0)
        assert lm == TEXT["vocab_size"] * TEXT["hidden_size"]
        return
    matches(spec, fields)


@pytest.mark.parametrize(("fields", "text"), [
    ({"vision_config": {"architecture": "mobilenetv5_base"}}, "vision_config.architecture"),
    ({"vision_config": {"model_args": {"drop_rate": 0.1}}}, "vision_config.model_args"),
    ({"vision_soft_tokens_per_image": 100}, "vision_soft_tokens_per_image must be 256"),
])
def test_an_unfollowed_tower_is_refused(fields: dict[str, Any], text: str) -> None:
    with pytest.raises(LLMCalcError, match=text):
        spec_from_dict({"model_type": "gemma3n", **fields}, name="g")


def test_part_language_is_the_text_model() -> None:
    spec = spec_from_dict({"model_type": "gemma3n"}, name="g")
    assert count(spec_part(spec, "language")).total == 6_835_235_568  # gemma-3n-text-defaults


def test_tower_flops_per_image() -> None:
    """FlopCounterMode on timm 1.0.31's mobilenetv5_300m_enc (meta device, one 768 × 768 image)
    counted 871,482,949,632: convolutions 775,676,657,664, multi-query attention 95,806,291,968."""
    r = flops(spec_from_dict({"model_type": "gemma3n"}, name="g"), ctx=1, images=1)
    vision = next(p for p in r.parts if p.part == "vision")
    assert (vision.weight, vision.attention) == (775_676_657_664, 95_806_291_968)
    assert vision.total == 871_482_949_632 and vision.input_size == 768


def test_verify_without_timm_names_what_it_did_not_compare(cli: Any) -> None:
    # timm cannot be imported beside the CPU torch (see the module docstring): the tower's tensors
    # are llmcalc's own, so verify counts only the others as matched and says so, in the table, the
    # JSON and check's reason
    r = cli("verify", "gemma-3n-defaults", "--json")
    assert r.code == 0
    out = json.loads(r.stdout)
    assert (out["match"], out["matched_tensors"], out["unchecked_tensors"]) == (True, 1083, 548)
    assert "timm cannot be imported, so the tower's 548 tensors are not compared" in out["against"]
    r = cli("check", "configs/gemma-3n-defaults.yaml", "--verify", "--json")
    assert r.code == 0
    assert "transformers matches (1083 tensors; 548 not compared:" in r.stdout
