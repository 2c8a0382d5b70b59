"""Gemma 4 12B Unified and dots3_note as whole models (issue 13), tensor by tensor against
transformers 5.24 on the meta device.

gemma4_unified (``Gemma4UnifiedForConditionalGeneration``) is encoder-free: for the bundled
google/gemma-4-12B-it transformers built 11,959,730,176 parameters: language_model 11,907,350,272,
embed_vision 49,922,304 (its patch pipeline 35,176,704 and its multimodal_embedder 14,745,600),
embed_audio 2,457,600. One image's two matmuls are checked against ``FlopCounterMode``."""

from __future__ import annotations

import math
from typing import Any

import pytest

from llmcalc.config import spec_from_dict
from llmcalc.counting import count
from llmcalc.errors import LLMCalcError
from llmcalc.flops import flops, part_flops
from llmcalc.spec import ModelSpec, spec_part

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

UNIFIED = "gemma-4-12b-whole"


def numel(shapes: dict[str, tuple[int, ...]]) -> int:
    return sum(math.prod(s) for s in shapes.values())


def bundled_fields(name: str) -> dict[str, Any]:
    import yaml

    from llmcalc import bundled

    path = bundled.find(name)
    assert path is not None
    data = yaml.safe_load(path.read_text())
    return {k: v for k, v in data.items() if k not in ("name", "source", "expected")}


# ---- gemma4_unified ------------------------------------------------------------------------------

def unified_built(fields: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    transformers.logging.set_verbosity_error()
    cfg = transformers.Gemma4UnifiedConfig(**{k: v for k, v in fields.items() if k not in (
        "vision_soft_tokens_per_image", "model_type")})
    with torch.device("meta"):
        model = transformers.Gemma4UnifiedForConditionalGeneration(cfg)
    return {n: tuple(p.shape) for n, p in model.named_parameters()}


def unified_matches(spec: ModelSpec, fields: dict[str, Any]) -> None:
    real = unified_built(fields)
    assert sorted(spec.named_shapes()) == sorted(real.items())
    pc = count(spec)
    assert pc.total == numel(real)

    def under(prefix: str) -> int:
        return numel({k: v for k, v in real.items() if k.startswith(prefix)})

    proj = under("model.embed_vision.multimodal_embedder.")
    expected = {"language": under("model.language_model.") + under("lm_head.")}
    if proj:
        expected |= {"vision": under("model.embed_vision.") - proj, "projector": proj}
    if under("model.embed_audio."):
        expected["audio"] = under("model.embed_audio.")
    assert pc.parts == expected or (len(expected) == 1 and not pc.parts)
    assert sum(pc.breakdown.values()) == pc.total
    for name, total in pc.parts.items():
        assert count(spec_part(spec, name)).total == total


def test_unified_bundled_whole_model() -> None:
    fields = bundled_fields(UNIFIED)
    spec = spec_from_dict(fields, name=UNIFIED)
    pc = count(spec)
    # transformers 5.24's figures (module docstring); Google's model card: 11.95B
    assert pc.total == 11_959_730_176
    assert pc.parts == {"language": 11_907_350_272, "vision": 35_176_704,
                        "projector": 14_745_600, "audio": 2_457_600}
    unified_matches(spec, fields)


def test_unified_by_hand() -> None:
    """The 12B's embedders by hand: 48-pixel merged patches of 6,912 values, m = d_t = 3840."""
    ours = dict(spec_from_dict(bundled_fields(UNIFIED), name=UNIFIED).named_shapes())
    P, m = 48 * 48 * 3, 3840
    assert numel({k: v for k, v in ours.items() if k.startswith("model.embed_vision.")
                  and "multimodal" not in k}) == 2 * P + P * m + m + 2 * m + 1120 * 2 * m + 2 * m
    assert ours["model.embed_vision.multimodal_embedder.embedding_projection.weight"] == (m, m)
    assert ours["model.embed_audio.embedding_projection.weight"] == (m, 640)


U_TEXT = {"model_type": "gemma4_unified_text", "hidden_size": 64, "intermediate_size": 128,
          "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
          "head_dim": 16, "global_head_dim": 32, "vocab_size": 300, "sliding_window": 8,
          "layer_types": ["sliding_attention", "full_attention"] * 2}
U_VISION = {"patch_size": 4, "pooling_kernel_size": 2, "mm_embed_dim": 48, "mm_posemb_size": 20,
            "output_proj_dims": 48}


@pytest.mark.parametrize("fields", [
    {"text_config": U_TEXT},
    {"text_config": U_TEXT, "vision_config": U_VISION},
    {"text_config": U_TEXT, "audio_config": {"audio_embed_dim": 80}},
    {"text_config": {**U_TEXT, "attention_k_eq_v": True, "num_global_key_value_heads": 1,
                     "num_kv_shared_layers": 2, "use_double_wide_mlp": True},
     "vision_config": {**U_VISION, "pooling_kernel_size": 3, "output_proj_dims": 24},
     "audio_config": {"audio_embed_dim": 32}},
    {"text_config": U_TEXT, "vision_config": U_VISION, "tie_word_embeddings": False},
], ids=["text-only", "vision", "audio", "varied", "untied"])
def test_unified_varied_configs_match_transformers(fields: dict[str, Any]) -> None:
    fields = {"model_type": "gemma4_unified", **fields}
    unified_matches(spec_from_dict(fields, name="unified-variant"), fields)


def test_unified_default_config_builds_no_embedder() -> None:
    spec = spec_from_dict({"model_type": "gemma4_unified"}, name="u")
    assert not spec.parts
    assert count(spec).total == numel(unified_built({})) == count(
        spec_from_dict({"model_type": "gemma4_unified_text"}, name="t")).total


@pytest.mark.parametrize(("vision", "budget"), [(U_VISION, 20), (
    {**U_VISION, "pooling_kernel_size": 3, "mm_embed_dim": 40, "output_proj_dims": 40}, 9)])
def test_unified_image_flops_equal_flop_counter(vision: dict[str, Any], budget: int) -> None:
    """FlopCounterMode on get_image_features for one square image of ⌊√budget⌋² merged patches,
    padded to ``budget`` as the processor does."""
    from torch.utils.flop_counter import FlopCounterMode

    fields = {"model_type": "gemma4_unified", "text_config": U_TEXT, "vision_config": vision,
              "vision_soft_tokens_per_image": budget}
    spec = spec_from_dict(fields, name="u")
    transformers.logging.set_verbosity_error()
    cfg = transformers.Gemma4UnifiedConfig(text_config=U_TEXT, vision_config=vision)
    model = transformers.Gemma4UnifiedModel(cfg).eval()
    k, p = cfg.vision_config.pooling_kernel_size, cfg.vision_config.patch_size
    g = math.isqrt(budget)
    xs, ys = torch.meshgrid(torch.arange(g), torch.arange(g), indexing="xy")
    positions = torch.cat([torch.stack([xs, ys], -1).reshape(-1, 2),
                           torch.full((budget - g * g, 2), -1)]).unsqueeze(0)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        out = model.get_image_features(torch.rand(1, budget, 3 * (k * p) ** 2), positions)
    vision_part, proj = spec.part("vision"), spec.part("projector")
    assert vision_part is not None and proj is not None
    assert part_flops(vision_part).total + part_flops(proj).total == counter.get_total_flops()
    assert part_flops(vision_part).tokens == budget
    soft = sum(o.shape[0] for o in out.pooler_output)
    assert flops(spec, ctx=10, images=1).image_tokens == soft == g * g


def test_unified_audio_flops_equal_flop_counter() -> None:
    """One second of audio: 25 frames of 640 samples through embed_audio."""
    from torch.utils.flop_counter import FlopCounterMode

    fields = {"model_type": "gemma4_unified", "text_config": U_TEXT, "audio_config": {}}
    spec = spec_from_dict(fields, name="u")
    audio = spec.part("audio")
    assert audio is not None and audio.context_tokens == 25
    model = transformers.Gemma4UnifiedModel(transformers.Gemma4UnifiedConfig(
        text_config=U_TEXT, audio_config={})).eval()
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model.embed_audio(torch.rand(1, 25, 640))
    assert counter.get_total_flops() == part_flops(audio).total == 2 * 25 * 640 * 64
    assert ("audio (not in the per-image figures): one second of audio, 16,000 samples in frames "
            "of 640, is 25 tokens in the context; its projection costs 2,048,000 FLOPs") in spec.notes


def test_unified_bundled_image_figures(cli: Any) -> None:
    # one 768-pixel square image: 256 soft tokens, 280 merged patches through both matmuls
    data = cli("flops", UNIFIED, "--ctx", "1000", "--images", "1", "--json").json()
    assert (data["image_tokens"], data["ctx"], data["text_tokens"]) == (256, 1256, 1000)
    vision, proj = data["per_image"]["vision"], data["per_image"]["projector"]
    assert vision["flops"] == 2 * 280 * 6912 * 3840 == 14_863_564_800
    assert (vision["tokens"], vision["image_size"]) == (280, 768)
    assert proj["flops"] == 2 * 280 * 3840 * 3840 == 8_257_536_000
    big = cli("flops", UNIFIED, "--image-size", "1024", "--ctx", "1000", "--images", "1", "--json")
    assert big.json()["per_image"] == data["per_image"]
    assert ("image_size 1024: the processor resizes every square image to 768×768 pixels and pads "
            "it to 280 merged patches") in cli("flops", UNIFIED, "--image-size", "1024").stdout


def test_unified_part_option(cli: Any) -> None:
    assert cli("count", UNIFIED, "--part", "audio", "--json").json()["total_params"] == 2_457_600
    bad = cli("count", UNIFIED, "--part", "speech")
    assert bad.code == 2
    assert ("--part speech: google/gemma-4-12B-it (whole model) has the parts language, vision, "
            "projector, audio") in bad.stderr


def test_unified_bad_sub_config_is_refused(cli: Any, write: Any) -> None:
    fields = {"model_type": "gemma4_unified", "vision_config": {"mm_embed_dim": 0}}
    text = "vision_config.mm_embed_dim must be a positive integer, got 0"
    with pytest.raises(LLMCalcError, match=text):
        spec_from_dict(fields, name="u")
    r = cli("count", write("bad.json", fields))
    assert r.code == 2
    assert r.stderr.endswith(f"bad.json: {text}\n")
