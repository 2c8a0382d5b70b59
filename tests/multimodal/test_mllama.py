"""Llama 3.2 Vision (``mllama``) as a whole model: the tiled tower, the projector and the
language model whose cross-attention layers attend to the image's tokens. Exact against
transformers' MllamaForConditionalGeneration on the meta device, part by part (parts split by module
prefix on transformers' side); the tower's FLOPs, a whole prefill's FLOPs and the KV cache (self-
and cross-attention) against FlopCounterMode and the cache of a real forward pass at tiny sizes."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.reference import matches_whole_model

from llmcalc.errors import LLMCalcError, UsageError
from llmcalc.formulas.counting import count
from llmcalc.formulas.flops import flops, part_flops
from llmcalc.formulas.memory import memory
from llmcalc.inputs.config import load_spec, spec_from_dict
from llmcalc.model.spec import spec_part
from llmcalc.units import DType

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

def small_mllama(**changes: Any) -> dict[str, Any]:
    """A small mllama: 4 text layers (1 and 3 cross-attend), a 2 + 1 layer tower, 28 px tiles."""
    text = {"model_type": "mllama_text_model", "num_hidden_layers": 4, "hidden_size": 64,
            "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
            "vocab_size": 300, "pad_token_id": 0, "cross_attention_layers": [1, 3]}
    vision = {"model_type": "mllama_vision_model", "hidden_size": 32, "intermediate_size": 48,
              "num_hidden_layers": 2, "num_global_layers": 1, "attention_heads": 2,
              "image_size": 28, "patch_size": 14, "vision_output_dim": 96,
              "intermediate_layers_indices": [0, 1]}
    text.update(changes.pop("text", {}))
    vision.update(changes.pop("vision", {}))
    return {"model_type": "mllama", "text_config": text, "vision_config": vision, **changes}


# ---- counts ---------------------------------------------------------------------------------------


def test_llama_3_2_11b_vision_whole_model() -> None:
    """10,670,220,835: the published total of Llama 3.2 11B Vision (the model card's "11B")."""
    spec = load_spec("llama-3.2-11b-vision")
    pc = count(spec)
    d, ff, p, tiles, ratios = 1280, 5120, 14, 4, 8 + 1
    n = (560 // p) ** 2 + 1  # 1,601 tokens a tile: 40 × 40 patches and the class token
    layer = 4 * d * d + 2 * d * ff + ff + d + 4 * d  # q k v o, fc1 fc2 + biases, two LayerNorms
    vision = (d * 3 * p * p + d  # patch conv, class token
              + n * d + 1 + ratios * tiles * n * d  # gated positions and tile positions
              + 2 * (ratios * tiles * d + 1)  # pre- and post-tile embeddings with their gates
              + 4 * d  # layernorm_pre, layernorm_post
              + 40 * layer + 8 * 2)  # 32 local + 8 global layers, 2 gates each global
    D, F, V = 4096, 14336, 128256
    mlp = 3 * D * F + 2 * D
    self_layer = 2 * D * D + 2 * 1024 * D + mlp
    cross_layer = self_layer + 2 * 128 + 2  # q_norm, k_norm [head_dim], two gates
    language = (V + 8) * D + 32 * self_layer + 8 * cross_layer + D + V * D
    assert pc.parts == {"language": language, "vision": vision, "projector": 4096 * 7680 + 4096}
    assert (language, vision) == (9_775_192_080, 863_567_379)
    assert pc.total == 10_670_220_835 == spec.expected["total_params"]
    matches_whole_model(spec)


def test_defaults_whole_model() -> None:
    """MllamaConfig() defaults: 448 px tiles, otherwise the 11B's sizes."""
    spec = spec_from_dict({"model_type": "mllama"}, name="mllama-defaults")
    assert count(spec).total == 10_642_941_475
    matches_whole_model(spec)


@pytest.mark.parametrize("fields", [
    small_mllama(),
    small_mllama(vision={"num_hidden_layers": 3, "num_global_layers": 2}),
    small_mllama(vision={"num_hidden_layers": 1, "intermediate_layers_indices": [0],
                 "vision_output_dim": 64}),
    small_mllama(vision={"hidden_size": 48, "attention_heads": 3, "intermediate_size": 40}),
    small_mllama(vision={"patch_size": 7, "image_size": 56}),
    small_mllama(vision={"image_size": 42}),
    small_mllama(vision={"max_num_tiles": 2, "supported_aspect_ratios": [[1, 1], [1, 2], [2, 1]]}),
    small_mllama(vision={"vision_output_dim": 160}),
    small_mllama(text={"cross_attention_layers": [0]}),
    small_mllama(text={"cross_attention_layers": []}),
    small_mllama(text={"cross_attention_layers": [2, 9, -1]}),
    small_mllama(text={"num_hidden_layers": 6, "hidden_size": 96, "num_attention_heads": 6,
               "num_key_value_heads": 3, "vocab_size": 500}),
    small_mllama(text={"num_key_value_heads": 4}),
    small_mllama(text={"tie_word_embeddings": True}, tie_word_embeddings=True),
], ids=["base", "deeper-tower", "one-local", "wider-tower", "patch7", "side42", "two-tiles",
        "output-dim", "cross-first", "no-cross", "cross-out-of-range", "wider-text", "mha", "tie"])
def test_varied_configs_match_transformers(fields: dict[str, Any]) -> None:
    matches_whole_model(spec_from_dict(fields, name="mllama-variant"))


def test_the_head_is_never_tied() -> None:
    """embed_tokens has vocab + 8 rows, lm_head vocab: transformers ties neither way."""
    spec = spec_from_dict(small_mllama(tie_word_embeddings=True), name="tie")
    shapes = dict(spec.named_shapes())
    assert shapes["model.language_model.embed_tokens.weight"] == (308, 64)
    assert shapes["lm_head.weight"] == (300, 64)


def test_bad_heads_is_a_field_error() -> None:
    with pytest.raises(LLMCalcError, match=r"text_config\.num_attention_heads \(4\) must divide "
                       r"text_config\.hidden_size \(66\)"):
        spec_from_dict(small_mllama(text={"hidden_size": 66}), name="bad")


def test_hostile_depths_answer_at_once() -> None:
    import time

    fields = small_mllama(text={"num_hidden_layers": 10**12, "cross_attention_layers": [3, 10**11]},
                  vision={"num_hidden_layers": 10**12, "num_global_layers": 10**12})
    start = time.perf_counter()
    spec = spec_from_dict(fields, name="hostile")
    pc = count(spec)
    r = flops(spec, ctx=1000, images=1)
    assert pc.parts["vision"] > 10**12 and r.parts[0].total > 10**12
    assert time.perf_counter() - start < 5


# ---- image tokens, cross-attention FLOPs and cache -----------------------------------------------


def test_image_tokens_and_cross_attention_of_the_11b() -> None:
    """One image: one <|image|> token in the context, 4 tiles × 1,601 tokens in each of the 8
    cross-attention layers (K and V once, then every text token attends to all 6,404)."""
    spec = load_spec("llama-3.2-11b-vision")
    r = flops(spec, ctx=1000, images=1)
    assert (r.image_tokens, r.ctx, r.source_len, r.source_tokens) == (1, 1001, 6404, "vision")
    assert r.cross_attention_flops_per_token == 8 * 6404 * 2 * 32 * (128 + 128)
    assert r.cross_kv_flops_per_sequence == 2 * 8 * 6404 * 2 * 1024 * 4096
    vision = next(p for p in r.parts if p.part == "vision")
    padded = 4 * 1608  # 1,601 tokens a tile padded to a multiple of 8, 4 tiles
    d, ff = 1280, 5120
    assert vision.tokens == padded
    assert vision.weight == (2 * 4 * 1600 * d * 3 * 14 * 14 + 40 * 2 * padded * (4 * d * d + 2 * d * ff)
                             + 2 * padded * padded)
    assert vision.attention == 40 * padded * padded * 2 * 16 * (80 + 80)
    projector = next(p for p in r.parts if p.part == "projector")
    assert projector.total == 2 * 6404 * 4096 * 7680
    # the cache: 32 self-attention layers × 1,001 tokens, 8 cross-attention layers × 6,404 tokens
    mem = memory(spec, ctx=1001, dtype=DType.bf16, images=1)
    assert mem.cross_kv_cache_bytes == 8 * 6404 * 2 * 8 * 128 * 2 == 209_846_272
    assert mem.kv_cache_bytes == 32 * 1001 * 2 * 8 * 128 * 2 + 209_846_272
    assert mem.weights_bytes == 2 * 10_670_220_835
    # two images: twice the cross-attention cache
    two = memory(spec, ctx=1002, dtype=DType.bf16, images=2)
    assert two.cross_kv_cache_bytes == 2 * 209_846_272


def test_without_an_image_the_cross_attention_layers_are_skipped() -> None:
    spec = load_spec("llama-3.2-11b-vision")
    r = flops(spec, ctx=1000)
    assert r.source_len is None and r.cross_attention_flops_per_token == 0
    assert "no image: the 8 cross-attention layers are skipped (--images N for a context with images)" in r.notes
    # the per-token weights: 32 self-attention layers, no cross-attention layer (its MLP too)
    D, F, V = 4096, 14336, 128256
    assert r.weight_flops_per_token == 2 * (32 * (2 * D * D + 2 * 1024 * D + 3 * D * F) + V * D)
    assert r.active_params == 9_775_192_080
    mem = memory(spec, ctx=1000, dtype=DType.bf16)
    assert mem.cross_kv_cache_bytes == 0 and mem.kv_cache_bytes == 32 * 1000 * 2 * 8 * 128 * 2


def test_language_part_alone_takes_source_len_vision_tokens() -> None:
    """--part language: no images; its cross-attention layers idle, or over --source-len tokens."""
    spec = spec_part(load_spec("llama-3.2-11b-vision"), "language")
    alone = flops(spec, ctx=1000)
    assert alone.weight_flops_per_token == flops(load_spec("llama-3.2-11b-vision"),
                                                 ctx=1000).weight_flops_per_token
    assert any(note.startswith("no image: the 8 cross-attention layers") for note in alone.notes)
    given = flops(spec, ctx=1000, source_len=6404)
    whole = flops(load_spec("llama-3.2-11b-vision"), ctx=999, images=1)
    assert given.cross_attention_flops_per_token == whole.cross_attention_flops_per_token
    assert given.weight_flops_per_token == whole.weight_flops_per_token


def test_source_len_is_refused() -> None:
    spec = load_spec("llama-3.2-11b-vision")
    with pytest.raises(UsageError, match=r"--source-len: meta-llama/Llama-3.2-11B-Vision's "
                       r"cross-attention reads its images' tokens \(6,404 an image\); give --images"):
        flops(spec, ctx=100, images=1, source_len=10)


def _eager(model: Any) -> Any:
    for m in model.modules():
        if hasattr(m, "config"):
            m.config._attn_implementation = "eager"
    return model.eval()


def _inputs(fields: dict[str, Any], text_len: int) -> dict[str, Any]:
    """One image (all its tiles used, the largest aspect ratio) and text_len tokens, the first the
    image token."""
    v = fields["vision_config"]
    tiles, side = v.get("max_num_tiles", 4), v["image_size"]
    ids = torch.arange(2, 2 + text_len).unsqueeze(0)
    return {
        "input_ids": ids,
        "pixel_values": torch.randn(1, 1, tiles, 3, side, side),
        "aspect_ratio_ids": torch.tensor([[1]]),
        "aspect_ratio_mask": torch.ones(1, 1, tiles, dtype=torch.long),
        "cross_attention_mask": torch.ones(1, text_len, 1, tiles, dtype=torch.long),
    }


CHECKED = [
    small_mllama(),
    small_mllama(vision={"num_hidden_layers": 1, "num_global_layers": 2, "intermediate_layers_indices": [0],
                 "vision_output_dim": 64}),
    small_mllama(vision={"max_num_tiles": 2, "supported_aspect_ratios": [[1, 1], [1, 2], [2, 1]],
                 "patch_size": 7}, text={"cross_attention_layers": [0]}),
]


@pytest.mark.parametrize("fields", CHECKED, ids=["base", "two-global", "two-tiles-patch7"])
def test_tower_flops_equal_flop_counter(fields: dict[str, Any]) -> None:
    """One image through the tower (eager attention): FlopCounterMode equals the vision part."""
    from torch.utils.flop_counter import FlopCounterMode

    spec = spec_from_dict(fields, name="flops")
    config = transformers.AutoConfig.for_model(
        "mllama", **{k: v for k, v in fields.items() if k != "model_type"})
    torch.manual_seed(0)
    tower = _eager(transformers.MllamaVisionModel(config.vision_config))
    x = _inputs(fields, 3)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        tower(pixel_values=x["pixel_values"], aspect_ratio_ids=x["aspect_ratio_ids"],
              aspect_ratio_mask=x["aspect_ratio_mask"])
    part = spec.part("vision")
    assert part is not None
    assert counter.get_total_flops() == part_flops(part).total


def _cache_bytes(cache: Any) -> int:
    return sum(t.numel() * t.element_size() for layer in cache.layers
               for t in (getattr(layer, "keys", None), getattr(layer, "values", None))
               if t is not None)


@pytest.mark.parametrize("fields", CHECKED, ids=["base", "two-global", "two-tiles-patch7"])
def test_prefill_flops_and_cache_equal_transformers(fields: dict[str, Any]) -> None:
    """A real forward pass of the whole model (random weights, CPU, fp32): its FlopCounterMode
    count is llmcalc's full prefill with one image (tower, projector, cross-attention K/V, every
    text token through self- and cross-attention layers), its cache the KV bytes (self-attention
    layers: the text tokens; cross-attention layers: every tile's tokens). Text only: the
    cross-attention layers are skipped, and hold nothing."""
    from torch.utils.flop_counter import FlopCounterMode

    transformers.logging.set_verbosity_error()
    spec = spec_from_dict(fields, name="prefill")
    config = transformers.AutoConfig.for_model(
        "mllama", **{k: v for k, v in fields.items() if k != "model_type"})
    torch.manual_seed(0)
    model = _eager(transformers.MllamaForConditionalGeneration(config))
    n = 7
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        out = model(**_inputs(fields, n), use_cache=True)
    r = flops(spec, ctx=n - 1, images=1)  # the image token is one of the n
    assert counter.get_total_flops() == r.forward_flops_per_sequence
    mem = memory(spec, ctx=n, dtype=DType.fp32, images=1)
    assert _cache_bytes(out.cache) == mem.kv_cache_bytes > mem.cross_kv_cache_bytes > 0
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        out = model(input_ids=torch.arange(2, 2 + n).unsqueeze(0), use_cache=True)
    assert counter.get_total_flops() == flops(spec, ctx=n).forward_flops_per_sequence
    assert _cache_bytes(out.cache) == memory(spec, ctx=n, dtype=DType.fp32).kv_cache_bytes


# ---- the CLI ---------------------------------------------------------------------------------------


def test_count_parts_and_part_option(cli: Any) -> None:
    data = cli("count", "llama-3.2-11b-vision", "--json").json()
    assert data["parts"] == {"language": 9_775_192_080, "vision": 863_567_379,
                             "projector": 31_461_376}
    assert data["total_params"] == 10_670_220_835
    assert data["breakdown"]["projector/multi_modal_projector"] == 4096 * 7680 + 4096
    part = cli("count", "llama-3.2-11b-vision", "--part", "language", "--json").json()
    assert part["total_params"] == 9_775_192_080
    part = cli("count", "meta-llama/Llama-3.2-11B-Vision", "--part", "vision", "--json").json()
    assert part["total_params"] == 863_567_379


def test_flops_and_memory_images_option(cli: Any) -> None:
    data = cli("flops", "llama-3.2-11b-vision", "--ctx", "1000", "--images", "1", "--json").json()
    assert (data["image_tokens"], data["ctx"], data["text_tokens"]) == (1, 1001, 1000)
    assert data["per_image"]["vision"]["image_size"] == 560
    out = cli("flops", "llama-3.2-11b-vision", "--ctx", "1000", "--images", "1").stdout
    assert "the 6,404 vision tokens of its images" in out
    assert "of which cross-attention over 6,404 vision tokens" in out
    mem = cli("memory", "llama-3.2-11b-vision", "--ctx", "1000", "--images", "1", "--json").json()
    assert (mem["ctx"], mem["source_len"], mem["cross_kv_cache_bytes"]) == (1001, 6404, 209_846_272)
    assert mem["weights_bytes"] == 21_340_441_670
    # the processor cuts any image into at most 4 tiles of 560 px: --image-size changes nothing
    big = cli("flops", "llama-3.2-11b-vision", "--image-size", "1120", "--images", "1",
              "--json").json()
    assert big["source_len"] == 6404
    assert ("image_size 1120: the processor fits every image into at most 4 tiles of 560×560 "
            "pixels, so the per-image figures are those") in big["notes"]
