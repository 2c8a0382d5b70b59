"""Gemma 4 as a whole model: the vision tower, the audio tower, the two embedders and the
gemma4_text language model, tensor by tensor against transformers 5.24's
``Gemma4ForConditionalGeneration`` on the meta device; one image's tower and embedder FLOPs
against ``FlopCounterMode``. For google/gemma-4-E2B-it transformers built 5,104,297,504
parameters: language_model 4,628,569,344, vision_tower 167,364,608, audio_tower 304,824,608,
embed_vision 1,179,648, embed_audio 2,359,296."""

from __future__ import annotations

import math
from typing import Any

import pytest
from helpers.reference import numel

from llmcalc.errors import LLMCalcError
from llmcalc.formulas.counting import count
from llmcalc.formulas.flops import flops, part_flops
from llmcalc.inputs.config import spec_from_dict
from llmcalc.model.spec import ModelSpec, spec_part

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

NAME = "gemma-4-e2b-whole"


def built(fields: dict[str, Any]) -> dict[str, dict[str, tuple[int, ...]]]:
    """Gemma4ForConditionalGeneration on the meta device, its parameters by top module."""
    transformers.logging.set_verbosity_error()
    cfg = transformers.Gemma4Config(**{k: v for k, v in fields.items()
                                       if k not in ("vision_soft_tokens_per_image", "model_type")})
    with torch.device("meta"):
        model = transformers.Gemma4ForConditionalGeneration(cfg)
    parts: dict[str, dict[str, tuple[int, ...]]] = {}
    for n, p in model.named_parameters():
        parts.setdefault(".".join(n.split(".")[:2]), {})[n] = tuple(p.shape)
    return parts


def matches(spec: ModelSpec, fields: dict[str, Any]) -> None:
    real = built(fields)
    whole = {k: v for part in real.values() for k, v in part.items()}
    assert sorted(spec.named_shapes()) == sorted(whole.items())
    pc = count(spec)
    assert pc.total == numel(whole)
    n = {k: numel(v) for k, v in real.items()}
    expected = {"language": n["model.language_model"] + n.get("lm_head.weight", 0)}
    if "model.vision_tower" in n:
        expected |= {"vision": n["model.vision_tower"], "projector": n["model.embed_vision"]}
    if "model.audio_tower" in n:
        expected["audio"] = n["model.audio_tower"] + n["model.embed_audio"]
    assert pc.parts == expected or (len(expected) == 1 and not pc.parts)
    for name, total in pc.parts.items():
        assert count(spec_part(spec, name)).total == total


def bundled_fields() -> dict[str, Any]:
    import yaml

    from llmcalc.inputs import bundled

    path = bundled.find(NAME)
    assert path is not None
    data = yaml.safe_load(path.read_text())
    return {k: v for k, v in data.items() if k not in ("name", "source", "expected")}


def test_bundled_whole_model() -> None:
    fields = bundled_fields()
    spec = spec_from_dict(fields, name=NAME)
    pc = count(spec)
    # transformers 5.24's figures (module docstring); Google: "5.1B with embeddings"
    assert pc.total == 5_104_297_504
    assert pc.parts == {"language": 4_628_569_344, "vision": 167_364_608, "projector": 1_179_648,
                        "audio": 304_824_608 + 2_359_296}
    # "2.3B effective": the language model less its per-layer embedding table [262144, 35·256]
    assert pc.parts["language"] - 262_144 * 35 * 256 == 2_279_759_104
    matches(spec, fields)


def test_by_hand() -> None:
    """One vision layer and one conformer layer of E2B, and the two stems, by hand."""
    ours = dict(spec_from_dict(bundled_fields(), name=NAME).named_shapes())

    def under(prefix: str) -> int:
        return numel({k: v for k, v in ours.items() if k.startswith(prefix)})

    d, ff, hd = 768, 3072, 64
    assert under("model.vision_tower.encoder.layers.3.") == 4 * d * d + 3 * d * ff + 2 * hd + 4 * d
    assert under("model.vision_tower.patch_embedder.") == d * 3 * 16 * 16 + 2 * 10240 * d
    a = 1024
    conformer = 2 * (2 * 4 * a * a + 2 * a) + 5 * a * a + a // 8 + 3 * a * a + a * 5 + 2 * a + 3 * a
    assert under("model.audio_tower.layers.7.") == conformer
    assert under("model.audio_tower.subsample_conv_projection.") == (
        128 * 9 + 128 + 32 * 128 * 9 + 32 + a * 32 * 32)
    assert under("model.audio_tower.output_proj.") == 1536 * a + 1536


TEXT = {"model_type": "gemma4_text", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "global_head_dim": 32, "vocab_size": 300, "vocab_size_per_layer_input": 200,
        "hidden_size_per_layer_input": 8, "num_kv_shared_layers": 2, "sliding_window": 8,
        "layer_types": ["sliding_attention", "full_attention"] * 2}
VISION = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "patch_size": 4,
          "position_embedding_size": 64}
AUDIO = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
         "subsampling_conv_channels": [16, 8], "conv_kernel_size": 3, "output_proj_dims": 48}


@pytest.mark.parametrize("fields", [
    {"text_config": TEXT},
    {"text_config": TEXT, "vision_config": VISION},
    {"text_config": TEXT, "audio_config": AUDIO},
    {"text_config": TEXT, "vision_config": {**VISION, "num_key_value_heads": 4, "head_dim": 16,
                                            "pooling_kernel_size": 2, "use_clipped_linears": True},
     "audio_config": {**AUDIO, "num_attention_heads": 2, "subsampling_conv_channels": [32, 4]}},
    {"text_config": {**TEXT, "hidden_size_per_layer_input": 0, "enable_moe_block": True,
                     "num_experts": 4, "top_k_experts": 2, "moe_intermediate_size": 16},
     "vision_config": VISION, "audio_config": AUDIO},
    {"text_config": TEXT, "vision_config": VISION, "tie_word_embeddings": False},
], ids=["text-only", "vision", "audio", "varied-towers", "moe-text", "untied"])
def test_varied_configs_match_transformers(fields: dict[str, Any]) -> None:
    fields = {"model_type": "gemma4", **fields}
    matches(spec_from_dict(fields, name="gemma4-variant"), fields)


def test_default_config_builds_no_tower() -> None:
    # Gemma4Config() leaves vision_config and audio_config None: the text model alone
    spec = spec_from_dict({"model_type": "gemma4"}, name="g")
    assert not spec.parts
    text = spec_from_dict({"model_type": "gemma4_text"}, name="t")
    assert count(spec).total == count(text).total == numel(
        {k: v for p in built({}).values() for k, v in p.items()})


def image_flops(fields: dict[str, Any]) -> tuple[int, int, int]:
    """FlopCounterMode on get_image_features (tower, pooler, embed_vision) for one square image
    of ⌊√budget⌋·k patches a side, padded to budget·k² patches as the processor does; and the
    soft tokens it returned."""
    from torch.utils.flop_counter import FlopCounterMode

    transformers.logging.set_verbosity_error()
    budget = fields["vision_soft_tokens_per_image"]
    cfg = transformers.Gemma4Config(text_config=fields["text_config"],
                                    vision_config=fields["vision_config"])
    cfg.vision_config._attn_implementation = "eager"
    model = transformers.Gemma4Model(cfg).eval()
    k, p = cfg.vision_config.pooling_kernel_size, cfg.vision_config.patch_size
    n, g = budget * k * k, math.isqrt(budget) * k
    xs, ys = torch.meshgrid(torch.arange(g), torch.arange(g), indexing="xy")
    positions = torch.cat([torch.stack([xs, ys], -1).reshape(-1, 2),
                           torch.full((n - g * g, 2), -1)]).unsqueeze(0)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        out = model.get_image_features(torch.rand(1, n, 3 * p * p), positions)
    return counter.get_total_flops(), sum(o.shape[0] for o in out.pooler_output), n


@pytest.mark.parametrize(("vision", "budget"), [
    (VISION, 20), ({**VISION, "pooling_kernel_size": 2, "num_key_value_heads": 4}, 9),
])
def test_image_flops_equal_flop_counter(vision: dict[str, Any], budget: int) -> None:
    fields = {"model_type": "gemma4", "text_config": TEXT, "vision_config": vision,
              "vision_soft_tokens_per_image": budget}
    spec = spec_from_dict(fields, name="g")
    total, soft, n = image_flops(fields)
    tower, proj = spec.part("vision"), spec.part("projector")
    assert tower is not None and proj is not None
    assert part_flops(tower).total + part_flops(proj).total == total
    assert part_flops(tower).tokens == n
    assert flops(spec, ctx=10, images=1).image_tokens == soft == math.isqrt(budget) ** 2


def test_bundled_image_figures(cli: Any) -> None:
    # FlopCounterMode on E2B's get_image_features (CPU, eager, one square image padded to 2,520
    # patches) counted 1,077,809,872,896 and returned 256 soft tokens: tower matmuls
    # 763,987,230,720 + pooling 1,083,801,600 (one-hot [280, 2520] @ [2520, 768]), attention
    # 312,134,860,800, embed_vision 603,979,776 (256 tokens × 1536 × 768 × 2)
    data = cli("flops", NAME, "--ctx", "1000", "--images", "1", "--json").json()
    assert (data["image_tokens"], data["ctx"], data["text_tokens"]) == (256, 1256, 1000)
    vision, proj = data["per_image"]["vision"], data["per_image"]["projector"]
    assert (vision["weight_flops"], vision["attention_flops"]) == (765_071_032_320, 312_134_860_800)
    assert (vision["tokens"], vision["image_size"]) == (2520, 768)
    assert proj["flops"] == 603_979_776
    big = cli("flops", NAME, "--image-size", "1024", "--ctx", "1000", "--images", "1", "--json")
    assert big.json()["per_image"] == data["per_image"]
    assert "image_size 1024: the processor resizes every square image to 768×768" in " ".join(cli(
        "flops", NAME, "--image-size", "1024").stderr.split())


def test_part_option_and_parts_in_json(cli: Any) -> None:
    data = cli("count", NAME, "--json").json()
    assert data["parts"] == {"language": 4_628_569_344, "vision": 167_364_608,
                             "projector": 1_179_648, "audio": 307_183_904}
    assert cli("count", NAME, "--part", "language", "--json").json()["total_params"] == (
        cli("count", "gemma-4-e2b", "--json").json()["total_params"])
    assert cli("count", NAME, "--part", "audio", "--json").json()["total_params"] == 307_183_904
    bad = cli("count", NAME, "--part", "speech")
    assert bad.code == 2
    assert "--part speech: google/gemma-4-E2B-it (whole model) has the parts language, vision, " \
        "projector, audio" in bad.stderr
    assert "audio tower: parameters and weights only; its FLOPs per clip are not computed" in " ".join(cli(
        "count", NAME).stderr.split())


def test_text_only_takes_no_images(cli: Any, write: Any) -> None:
    path = write("g4.json", {"model_type": "gemma4", "text_config": TEXT})
    r = cli("flops", path, "--images", "1")
    assert r.code == 2
    assert "--images 1:" in r.stderr and "takes no images" in r.stderr


@pytest.mark.parametrize(("fields", "text"), [
    ({"vision_config": {"num_key_value_heads": 5}},
     "vision_config.num_key_value_heads (5) must divide num_attention_heads (12)"),
    ({"audio_config": {"num_attention_heads": 7}},
     "audio_config.num_attention_heads (7) must divide hidden_size (1024)"),
    ({"audio_config": {"subsampling_conv_channels": [8, 8, 8]}},
     "audio_config.subsampling_conv_channels must name two channel sizes"),
])
def test_bad_tower_configs_are_refused(fields: dict[str, Any], text: str, cli: Any,
                                       write: Any) -> None:
    with pytest.raises(LLMCalcError, match=text.replace("(", r"\(").replace(")", r"\)")):
        spec_from_dict({"model_type": "gemma4", **fields}, name="g")
    r = cli("count", write("bad.json", {"model_type": "gemma4", **fields}))
    assert r.code == 2
    assert text in r.stderr
