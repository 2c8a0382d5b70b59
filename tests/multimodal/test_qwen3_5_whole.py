"""Qwen3.5 and Qwen3.5-MoE as whole models: Qwen3-VL's tower and patch merger without
deepstack mergers, and the hybrid gated-DeltaNet language model, exact part by part
against transformers' Qwen3_5ForConditionalGeneration / Qwen3_5MoeForConditionalGeneration on the
meta device; the tower's per-image FLOPs against FlopCounterMode; the language model's state and
KV against the cache a real forward pass of the whole model fills."""

from __future__ import annotations

import math
from typing import Any

import pytest
from helpers.reference import matches_whole_model, qwen_tower_flops, text_forward_cache

from llmcalc.formulas.counting import count
from llmcalc.formulas.flops import flops, part_flops
from llmcalc.formulas.memory import kv_cache_bytes, memory, state_bytes_per_sequence
from llmcalc.inputs.config import load_spec, spec_from_dict
from llmcalc.model.spec import spec_part
from llmcalc.units import DType

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch



def qwen35(model_type: str = "qwen3_5", **changes: Any) -> dict[str, Any]:
    """A small Qwen3.5 whole model: 4 language layers (DeltaNet ×3, attention), a 3-layer tower."""
    text: dict[str, Any] = {
        "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 4,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 300,
        "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 16,
        "linear_value_head_dim": 16,
    }
    if model_type == "qwen3_5_moe":
        text.update(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=24,
                    shared_expert_intermediate_size=32)
    vision = {"hidden_size": 32, "depth": 3, "num_heads": 2, "intermediate_size": 40,
              "out_hidden_size": 64, "num_position_embeddings": 64}
    text.update(changes.pop("text", {}))
    vision.update(changes.pop("vision", {}))
    return {"model_type": model_type, "text_config": text, "vision_config": vision, **changes}


# Qwen3.5's tower at its defaults (d 1152, 27 layers, MLP 4304, patch 16 × 16 × 2 frames, a
# 2,304-entry position table) and its merger (LayerNorm [d], fc1 [4d, 4d], fc2 [out, 4d])
D, L, FF = 1152, 27, 4304
TOWER = D * 3 * 2 * 16 * 16 + D + 2304 * D + L * (4 * D + 3 * D * D + 3 * D + D * D + D + 2 * FF * D
                                                  + FF + D)


def merger(out: int) -> int:
    return 2 * D + (4 * D) ** 2 + 4 * D + out * 4 * D + out


def test_qwen3_5_defaults_whole_model() -> None:
    spec = load_spec("qwen3.5-default")
    pc = count(spec)
    # Qwen3_5Config(): the default text model (bundled as qwen3.5-text-config-defaults) + the tower
    # + the merger into out_hidden_size 3,584
    assert pc.parts == {"language": 8_953_803_264, "vision": TOWER, "projector": merger(3584)}
    assert TOWER == 415_891_440 and merger(3584) == 37_759_232
    assert pc.parts["language"] == count(load_spec("qwen3.5-text-config-defaults")).total
    assert pc.total == 9_407_453_936
    matches_whole_model(spec)
    assert spec.model_type == load_spec("qwen3_5").model_type == "qwen3_5"
    assert count(load_spec("qwen3_5")).total == pc.total


def test_qwen3_6_35b_a3b_whole_model() -> None:
    spec = load_spec("qwen3.6-35b-a3b")
    pc = count(spec)
    # "35B total, 3B active": the text model bundled as qwen3.5-35b-a3b, the tower, the merger
    assert pc.parts == {"language": 34_660_610_688, "vision": TOWER, "projector": merger(2048)}
    assert pc.parts["language"] == count(load_spec("qwen3.5-35b-a3b")).total
    assert pc.total == 35_107_181_936
    # all of the tower and merger is active, and the top-8 + shared expert of the language model
    language = count(spec_part(spec, "language")).active
    assert language == 3_454_988_928
    assert pc.active == language + TOWER + merger(2048) == 3_901_560_176
    matches_whole_model(spec)
    # the checkpoint's vision_config names the old model_type "qwen3_5_moe", read as
    # qwen3_5_moe_vision (Qwen3_5MoeConfig.__post_init__)
    assert spec.config["vision_config"]["model_type"] == "qwen3_5_moe_vision"


@pytest.mark.parametrize("fields", [
    qwen35(),
    # transformers builds no deepstack mergers for Qwen3.5 whatever the vision config lists
    qwen35(vision={"deepstack_visual_indexes": [0, 2]}),
    qwen35(vision={"spatial_merge_size": 1, "patch_size": 8, "temporal_patch_size": 1}),
    qwen35(vision={"depth": 5, "hidden_size": 48, "num_heads": 3, "num_position_embeddings": 100}),
    qwen35(tie_word_embeddings=True),
    # a text_config that ties does not tie the whole model (the top level decides)
    qwen35(text={"tie_word_embeddings": True}),
    qwen35(vision={"model_type": "qwen3_5"}),
    qwen35(text={"layer_types": ["full_attention", "linear_attention", "linear_attention"],
                 "num_hidden_layers": 3}),
    qwen35(text={"full_attention_interval": 2, "num_hidden_layers": 5}),
    qwen35("qwen3_5_moe"),
    qwen35("qwen3_5_moe", vision={"deepstack_visual_indexes": [1]}, tie_word_embeddings=True),
    qwen35("qwen3_5_moe", text={"num_experts": 8, "num_experts_per_tok": 1,
                                "shared_expert_intermediate_size": 16},
           vision={"model_type": "qwen3_5_moe"}),
], ids=["base", "deepstack-ignored", "merge-1-patch-8", "wider-tower", "tied", "text-tied",
        "old-vision-type", "layer-types", "interval-2", "moe", "moe-deepstack-tied",
        "moe-experts-old-type"])
def test_qwen3_5_varied_configs_match_transformers(fields: dict[str, Any]) -> None:
    matches_whole_model(spec_from_dict(fields, name="qwen3.5-variant"))


def test_text_tied_only_stays_untied() -> None:
    spec = spec_from_dict(qwen35(text={"tie_word_embeddings": True}), name="t")
    untied = spec_from_dict(qwen35(), name="u")
    tied = spec_from_dict(qwen35(tie_word_embeddings=True), name="v")
    assert count(spec).total == count(untied).total == count(tied).total + 300 * 64


@pytest.mark.parametrize(("model_type", "side"), [("qwen3_5", 224), ("qwen3_5_moe", 256)])
def test_qwen3_5_tower_flops_equal_flop_counter(model_type: str, side: int) -> None:
    """One image through the tower and the merger (eager attention): FlopCounterMode equals the
    vision and projector parts' figures."""
    measured, vision, proj, grid, _ = qwen_tower_flops(qwen35(model_type), side=side)
    assert vision.input_tokens[0][1] == grid * grid
    assert measured == part_flops(vision).total + part_flops(proj).total
    # the merger by hand: fc1 [4d, 4d] and fc2 [64, 4d] on each merged token
    assert part_flops(proj).total == 2 * (grid // 2) ** 2 * (128 * 128 + 64 * 128)


def test_image_tokens_and_images_option(cli: Any) -> None:
    spec = load_spec("qwen3.6-35b-a3b")
    r = flops(spec, ctx=1000, images=2)
    assert r.image_tokens == 28 * 28  # 896 px: 56 × 56 patches of 16, merged 2 × 2
    assert r.ctx == 1000 + 2 * 784
    vision = next(p for p in r.parts if p.part == "vision")
    assert vision.tokens == 56 * 56
    small = cli("flops", "qwen3.6-35b-a3b", "--image-size", "448", "--json").json()
    assert small["image_tokens"] == 14 * 14
    assert small["per_image"]["vision"]["tokens"] == 28 * 28
    mem = cli("memory", "qwen3.6-35b-a3b", "--ctx", "1000", "--images", "2", "--json").json()
    plain = cli("memory", "qwen3.6-35b-a3b", "--ctx", str(1000 + 2 * 784), "--json").json()
    assert mem["kv_cache_bytes"] == plain["kv_cache_bytes"]
    assert mem["state_bytes_per_sequence"] == plain["state_bytes_per_sequence"] > 0


def test_state_and_kv_of_the_whole_model() -> None:
    """The whole model keeps the language model's cache: 10 attention layers of K and V and 30
    DeltaNet states, as the text model alone; weights are every part's."""
    whole = load_spec("qwen3.6-35b-a3b")
    text = load_spec("qwen3.5-35b-a3b")
    for ctx in (1, 4096, 131_072):
        assert kv_cache_bytes(whole, batch=2, ctx=ctx, dtype=DType.bf16) == kv_cache_bytes(
            text, batch=2, ctx=ctx, dtype=DType.bf16)
    # per sequence: conv state [2·16·128 + 32·128, kernel 4] in bf16 and the recurrent state
    # [32, 128, 128] in float32, in each of the 30 DeltaNet layers
    state = 30 * ((2 * 16 * 128 + 32 * 128) * 4 * 2 + 32 * 128 * 128 * 4)
    assert state_bytes_per_sequence(whole, dtype=DType.bf16) == state
    # the 10 attention layers: K and V of 2 heads of 256 per token
    per_token = 10 * 2 * 2 * 256 * 2
    assert kv_cache_bytes(whole, batch=1, ctx=1000, dtype=DType.bf16) == state + 1000 * per_token
    mem = memory(whole, ctx=1000, dtype=DType.bf16)
    assert mem.weights_bytes == 2 * count(whole).total


@pytest.mark.parametrize("model_type", ["qwen3_5", "qwen3_5_moe"])
def test_cache_of_a_whole_model_forward_pass(model_type: str) -> None:
    """A text forward pass of 2 × 8 tokens through the whole (small) model in bf16: the bytes of
    its cache (DeltaNet conv and recurrent states, the attention layer's K and V) are llmcalc's."""
    fields = qwen35(model_type)
    spec = spec_from_dict(fields, name="qwen3.5-cache")
    measured, kinds = text_forward_cache(fields, token_ids=(0, 300))
    assert kinds == ["LinearAttentionLayer"] * 3 + ["DynamicLayer"]
    assert measured == kv_cache_bytes(spec, batch=2, ctx=8, dtype=DType.bf16)
    assert measured > 2 * state_bytes_per_sequence(spec, dtype=DType.bf16)


def test_count_json_and_part_option(cli: Any) -> None:
    data = cli("count", "qwen3.6-35b-a3b", "--json").json()
    assert data["parts"] == {"language": 34_660_610_688, "vision": 415_891_440,
                             "projector": 30_679_808}
    assert sum(data["breakdown"].values()) == data["total_params"] == 35_107_181_936
    language = cli("count", "qwen3.6-35b-a3b", "--part", "language", "--json").json()
    assert language["total_params"] == count(load_spec("qwen3.5-35b-a3b")).total
    vision = cli("count", "qwen3.5-default", "--part", "vision", "--json").json()
    assert vision["total_params"] == TOWER
    assert math.isclose(TOWER / 1e6, 415.9, abs_tol=0.05)
