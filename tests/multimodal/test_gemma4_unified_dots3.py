"""Gemma 4 12B Unified and dots3_note as whole models, tensor by tensor against
transformers 5.24 on the meta device.

gemma4_unified (``Gemma4UnifiedForConditionalGeneration``) is encoder-free: for the bundled
google/gemma-4-12B-it transformers built 11,959,730,176 parameters: language_model 11,907,350,272,
embed_vision 49,922,304 (its patch pipeline 35,176,704 and its multimodal_embedder 14,745,600),
embed_audio 2,457,600. One image's two matmuls are checked against ``FlopCounterMode``.

dots3_note (``Dots3NoteForConditionalGeneration``): for transformers' default transformers built
287,309,195,008 parameters: language_model 278,773,150,336 + lm_head 778,567,680, vision_tower
6,871,277,312 (the merger 69,220,352 of it), audio_tower 886,199,680. One image's tower (its routed
experts run eagerly) and merger against ``FlopCounterMode``."""

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

UNIFIED = "gemma-4-12b-whole"


def bundled_fields(name: str) -> dict[str, Any]:
    import yaml

    from llmcalc.inputs import bundled

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
            "it to 280 merged patches") in " ".join(cli("flops", UNIFIED, "--image-size", "1024").stderr.split())


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


# ---- dots3_note ----------------------------------------------------------------------------------

DOTS = "dots3-note-whole-default"
D_TEXT = {"hidden_size": 64, "intermediate_size": 96, "moe_intermediate_size": 16,
          "shared_experts_intermediate_size": 16, "num_hidden_layers": 3, "num_attention_heads": 4,
          "num_key_value_heads": 4, "vocab_size": 300, "pad_token_id": 0, "n_routed_experts": 4,
          "num_experts_per_tok": 2, "q_lora_rank": 32, "kv_lora_rank": 16, "qk_nope_head_dim": 16,
          "qk_rope_head_dim": 8, "v_head_dim": 16, "head_dim": 24, "index_head_dim": 16,
          "index_n_heads": 2, "index_topk": 8, "swa_num_attention_heads": 2,
          "swa_num_key_value_heads": 2, "swa_q_lora_rank": 32, "swa_kv_lora_rank": 16,
          "swa_head_dim": 24, "swa_qk_nope_head_dim": 16, "swa_v_head_dim": 16}
D_VISION = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 4,
            "num_attention_heads": 4, "patch_size": 4, "moe_intermediate_size": 8,
            "pyramid_num_routed": [-1, -1, 4, 6], "adapter_in_dim": 32, "adapter_out_dim": 64}
D_AUDIO = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
           "num_attention_heads": 4, "feature_size": 16, "downsample_hidden_size": 8,
           "adapter_input_size": 32, "adapter_out_dim": 64}


def dots_built(fields: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    transformers.logging.set_verbosity_error()
    cfg = transformers.Dots3NoteConfig(**{k: v for k, v in fields.items() if k != "model_type"})
    with torch.device("meta"):
        model = transformers.Dots3NoteForConditionalGeneration(cfg)
    return {n: tuple(p.shape) for n, p in model.named_parameters()}


def dots_matches(spec: ModelSpec, fields: dict[str, Any]) -> None:
    real = dots_built(fields)
    assert sorted(spec.named_shapes()) == sorted(real.items())
    pc = count(spec)
    assert pc.total == numel(real)

    def under(prefix: str) -> int:
        return numel({k: v for k, v in real.items() if k.startswith(prefix)})

    merger = under("model.vision_tower.merger.")
    assert pc.parts == {"language": under("model.language_model.") + under("lm_head."),
                        "vision": under("model.vision_tower.") - merger, "projector": merger,
                        "audio": under("model.audio_tower.")}
    for name, total in pc.parts.items():
        assert count(spec_part(spec, name)).total == total


def test_dots3_bundled_whole_model() -> None:
    fields = bundled_fields(DOTS)
    spec = spec_from_dict(fields, name=DOTS)
    pc = count(spec)
    assert pc.total == 287_309_195_008
    assert pc.parts == {"language": 278_773_150_336 + 778_567_680, "vision": 6_802_056_960,
                        "projector": 69_220_352, "audio": 886_199_680}
    assert pc.parts["vision"] + pc.parts["projector"] == 6_871_277_312
    # the model type alone is transformers' default: the same model
    assert count(spec_from_dict({"model_type": "dots3_note"}, name="d")).total == pc.total
    dots_matches(spec, {k: v for k, v in fields.items() if k not in ("name", "source", "expected")})


@pytest.mark.parametrize("bundled", [False, True], ids=["small", "bundled"])
def test_dots3_active_reads_each_tower_layer_top_k(bundled: bool) -> None:
    """Active parameters: the language model's (its own top-k of its experts) plus the towers,
    whose MoE layers each use their own top-k of their own experts — read off the built modules
    (each vision block's ``mlp.experts`` and its router's top_k)."""
    fields: dict[str, Any] = {"model_type": "dots3_note", **D_TEXT, "vision_config": D_VISION,
                              "audio_config": D_AUDIO}
    if bundled:
        fields = {k: v for k, v in bundled_fields(DOTS).items()
                  if k not in ("name", "source", "expected")}
    spec = spec_from_dict(fields, name="dots3-active")
    transformers.logging.set_verbosity_error()
    cfg = transformers.Dots3NoteConfig(**{k: v for k, v in fields.items() if k != "model_type"})
    with torch.device("meta"):
        model = transformers.Dots3NoteForConditionalGeneration(cfg)
    towers = sum(p.numel() for n, p in model.named_parameters()
                 if n.startswith(("model.vision_tower.", "model.audio_tower.")))
    text = count(spec_part(spec, "language")).active
    assert count(spec).active == text + towers - _unused_experts(model)


def _unused_experts(model: Any) -> int:
    """Routed-expert parameters a patch does not use: (E − k)/E of each vision MoE layer's."""
    total = 0
    for block in model.model.vision_tower.blocks:
        experts = getattr(block.mlp, "experts", None)
        if experts is None:
            continue
        stacked = sum(p.numel() for p in experts.parameters())
        e, k = experts.num_experts, block.mlp.gate.top_k
        total += stacked // e * (e - k)
    assert total > 0  # the tower has MoE layers
    return total


def test_dots3_tower_by_hand() -> None:
    """The default tower's layers by hand: d 1536, 24 heads, ff 4224, experts of width 2112."""
    ours = dict(spec_from_dict({"model_type": "dots3_note"}, name="d").named_shapes())

    def under(prefix: str) -> int:
        return numel({k: v for k, v in ours.items() if k.startswith(prefix)})

    d, ff, f, hd = 1536, 4224, 2112, 64
    common = 4 * d * d + 2 * hd + 2 * d
    assert under("model.vision_tower.blocks.0.") == common + 3 * d * ff
    for layer, experts in ((25, 4), (40, 64), (41, 64)):
        assert under(f"model.vision_tower.blocks.{layer}.") == common + experts * (3 * d * f + d)
    assert under("model.vision_tower.merger.") == 2 * d + 4 * d * (4 * d + 1) + 5120 * (4 * d + 1)
    a = 1280
    assert under("model.audio_tower.layers.7.") == 4 * a * a + 3 * a + 3 * a * 5120 + 2 * 5120 + a + 2 * a
    assert under("model.audio_tower.conv_stem.") == (
        480 * 9 + 480 + 2 * (480 * 480 * 9 + 480) + 480 * 16 * a)


@pytest.mark.parametrize("changes", [
    {},
    {"vision_config": {**D_VISION, "pyramid_num_routed": None, "mlp_layer_types":
                       ["dense", "sparse", "dense", "sparse"], "num_local_experts": 5,
                       "per_layer_config": {"3": {"num_local_experts": 3}}, "attention_bias": True,
                       "mlp_bias": False}},
    {"vision_config": {**D_VISION, "mlp_bias": True, "pyramid_num_routed": [-1] * 4,
                       "spatial_merge_size": 1, "adapter_merge_size": 1}},
    {"audio_config": {**D_AUDIO, "attention_bias": False, "feature_size": 20}},
    {"tie_word_embeddings": True},
], ids=["small", "listed-sparse", "dense-tower", "audio-no-bias", "tied"])
def test_dots3_varied_configs_match_transformers(changes: dict[str, Any]) -> None:
    fields: dict[str, Any] = {"model_type": "dots3_note", **D_TEXT, "vision_config": D_VISION,
                              "audio_config": D_AUDIO, **changes}
    if fields["vision_config"].get("pyramid_num_routed", 0) is None:
        fields["vision_config"] = {k: v for k, v in fields["vision_config"].items()
                                   if k != "pyramid_num_routed"}
    dots_matches(spec_from_dict(fields, name="dots-variant"), fields)


def test_dots3_text_config_nested() -> None:
    fields = {"model_type": "dots3_note", "text_config": D_TEXT, "vision_config": D_VISION,
              "audio_config": D_AUDIO}
    flat = {"model_type": "dots3_note", **D_TEXT, "vision_config": D_VISION, "audio_config": D_AUDIO}
    assert sorted(spec_from_dict(fields, name="n").named_shapes()) == sorted(
        spec_from_dict(flat, name="f").named_shapes())


@pytest.mark.parametrize("side", [64, 100])
def test_dots3_image_flops_equal_flop_counter(side: int) -> None:
    """FlopCounterMode on get_image_features for one square image of ``side`` pixels as
    Qwen2VLImageProcessor resizes it (the routed experts run eagerly: FlopCounterMode does not see
    grouped_mm)."""
    from torch.utils.flop_counter import FlopCounterMode

    from llmcalc.families._vision import smart_grid

    fields = {"model_type": "dots3_note", **D_TEXT, "vision_config": D_VISION,
              "audio_config": D_AUDIO, "image_size": side}
    spec = spec_from_dict(fields, name="d")
    transformers.logging.set_verbosity_error()
    cfg = transformers.Dots3NoteConfig(**D_TEXT, vision_config=D_VISION, audio_config=D_AUDIO)
    cfg.vision_config._attn_implementation = "eager"
    model = transformers.Dots3NoteModel(cfg).eval()
    for module in model.modules():
        if type(module).__name__ == "Dots3NoteExperts":
            module.config._experts_implementation = "eager"
    g = smart_grid(side, 4, 2)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        out = model.get_image_features(torch.rand(g * g, 3 * 4 * 4), torch.tensor([[1, g, g]]))
    tower, proj = spec.part("vision"), spec.part("projector")
    assert tower is not None and proj is not None
    assert part_flops(tower).total + part_flops(proj).total == counter.get_total_flops()
    assert part_flops(tower).tokens == g * g
    soft = sum(o.shape[0] for o in out.pooler_output)
    assert flops(spec, ctx=10, images=1).image_tokens == soft == (g // 2) ** 2


def test_dots3_bundled_image_figures(cli: Any) -> None:
    data = cli("flops", DOTS, "--ctx", "1000", "--images", "1", "--json").json()
    # 896 px: a 64 × 64 patch grid, 1,024 merged tokens
    assert (data["image_tokens"], data["ctx"]) == (1024, 2024)
    vision = data["per_image"]["vision"]
    assert (vision["tokens"], vision["image_size"]) == (4096, 896)
    n, d = 4096, 1536
    dense = 25 * 2 * n * (4 * d * d + 3 * d * 4224)
    sparse = sum(2 * n * (4 * d * d + e * d + 2 * 3 * d * 2112)
                 for e in [*range(4, 65, 4), 64])
    assert vision["weight_flops"] == 2 * n * d * 3 * 14 * 14 + dense + sparse
    assert vision["attention_flops"] == 42 * n * n * 4 * d
    notes = " ".join(cli("count", DOTS).stderr.split())  # notes on stderr
    assert "audio tower: parameters and weights only; its FLOPs per clip are not computed" in notes


@pytest.mark.parametrize(("changes", "text"), [
    ({"vision_config": {"pyramid_num_routed": [4, 8]}},
     "vision_config.pyramid_num_routed has 2 entries, num_hidden_layers is 42"),
    ({"vision_config": {"mlp_layer_types": ["dense"] * 41 + ["moe"]}},
     "vision_config.mlp_layer_types.41: unknown type 'moe' (one of: dense, sparse)"),
    ({"vision_config": {"per_layer_config": {"30": {"intermediate_size": 8}}}},
     "vision_config.per_layer_config.30.intermediate_size is not supported (only "
     "num_local_experts, num_experts_per_tok)"),
    ({"vision_config": {"adapter_out_dim": 4096}},
     "vision_config.adapter_out_dim (4096) must equal the text hidden_size (5120)"),
    ({"audio_config": {"num_attention_heads": 7}},
     "audio_config.num_attention_heads (7) must divide hidden_size (1280)"),
])
def test_dots3_bad_configs_are_refused(changes: dict[str, Any], text: str, cli: Any,
                                       write: Any) -> None:
    fields = {"model_type": "dots3_note", **changes}
    with pytest.raises(LLMCalcError) as e:
        spec_from_dict(fields, name="d")
    assert text in str(e.value)
    r = cli("count", write("bad.json", fields))
    assert r.code == 2
    assert r.stderr.endswith(f"bad.json: {text}\n")
