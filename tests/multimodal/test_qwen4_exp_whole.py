"""Qwen4-Exp (Qwen3.8-Flash-Next) as a whole model: Qwen3.5's tower and patch merger
(Qwen4ExpVisionModel is Qwen3_5MoeVisionModel) and the Qwen4-Exp language model (hyper-connections,
QSA, per-layer n-gram embeddings), exact part by part against transformers'
Qwen4ExpForConditionalGeneration on the meta device; the tower's per-image FLOPs against
FlopCounterMode; the image tokens one image adds; the language model's state and KV, unchanged by
the images, against the cache a real forward pass of the whole model fills. dots3_note's parts as
transformers builds them (counted whole in test_gemma4_unified_dots3.py)."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.reference import matches_whole_model, qwen_tower_flops, text_forward_cache

from llmcalc.formulas.counting import count
from llmcalc.formulas.flops import flops, part_flops
from llmcalc.formulas.memory import (
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    state_bytes_per_sequence,
)
from llmcalc.inputs.config import load_spec, spec_from_dict
from llmcalc.model.spec import spec_part
from llmcalc.units import DType

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


BUNDLED = "qwen3.8-flash-next-whole"


def qwen4(**changes: Any) -> dict[str, Any]:
    """A small Qwen4-Exp whole model: 4 language layers (DeltaNet ×3 — the second with PLE — and
    QSA), 3 hyper-connection streams, 4 experts; a 3-layer tower merged into d 64."""
    text: dict[str, Any] = {
        "vocab_size": 128, "hidden_size": 64, "num_hidden_layers": 4,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8,
        "linear_value_head_dim": 12, "moe_intermediate_size": 24,
        "shared_expert_intermediate_size": 32, "num_experts": 4, "num_experts_per_tok": 2,
        "hc_count": 3, "hc_lowrank": 16, "indexer_n_heads": 2, "indexer_kv_heads": 1,
        "indexer_head_dim": 16, "indexer_budget": 4, "indexer_compress_ratio": 2,
        "eos_token_id": 1, "pad_token_id": 0,
        "ple_layer_ids": [2], "ple_embed_dim": 32, "ple_conv_kernel_size": 3, "ngram_size": 3,
        "heads_per_ngram": 2, "ngram_vocab_size_base": 50, "make_ngram_vocab_size_divisible_by": 8,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                            "partial_rotary_factor": 0.5, "mrope_section": [2, 1, 1]},
    }
    vision = {"hidden_size": 32, "depth": 3, "num_heads": 2, "intermediate_size": 40,
              "out_hidden_size": 64, "num_position_embeddings": 64}
    text.update(changes.pop("text", {}))
    vision.update(changes.pop("vision", {}))
    return {"model_type": "qwen4_exp", "text_config": text, "vision_config": vision,
            "image_token_id": 120, "video_token_id": 121, "vision_start_token_id": 122,
            "vision_end_token_id": 123, **changes}


# Qwen3.5's tower as the checkpoint gives it (d 1152, 27 layers, MLP 4304, patch 16 × 16 × 2
# frames, a 2,304-entry position table) and its merger (LayerNorm [d], fc1 [4d, 4d], fc2 [out, 4d])
D, L, FF = 1152, 27, 4304
TOWER = D * 3 * 2 * 16 * 16 + D + 2304 * D + L * (4 * D + 3 * D * D + 3 * D + D * D + D + 2 * FF * D
                                                  + FF + D)
MERGER = 2 * D + (4 * D) ** 2 + 4 * D + 2560 * 4 * D + 2560


def test_bundled_whole_model() -> None:
    spec = load_spec(BUNDLED)
    pc = count(spec)
    text = count(load_spec("qwen3.8-flash-next"))
    # the language model is the bundled text model to the parameter; + the tower + the merger
    # into the language model's 2,560
    assert pc.parts == {"language": 176_943_899_520, "vision": TOWER, "projector": MERGER}
    assert pc.parts["language"] == text.total
    assert (TOWER, MERGER) == (415_891_440, 33_039_616)
    assert pc.total == 177_392_830_576
    # all of the tower and merger is active, and 10 of 512 experts (the n-gram table a lookup)
    assert count(spec_part(spec, "language")).active == text.active == 58_507_240_320
    assert pc.active == text.active + TOWER + MERGER == 58_956_171_376
    matches_whole_model(spec)


@pytest.mark.parametrize("fields", [
    qwen4(),
    # transformers builds no deepstack mergers (Qwen3.5's tower) whatever the vision config lists
    qwen4(vision={"deepstack_visual_indexes": [0, 2]}),
    qwen4(vision={"spatial_merge_size": 1, "patch_size": 8, "temporal_patch_size": 1}),
    qwen4(vision={"depth": 5, "hidden_size": 48, "num_heads": 3, "num_position_embeddings": 100,
                  "out_hidden_size": 96}, text={"hidden_size": 96}),
    qwen4(tie_word_embeddings=True),
    # a text_config that ties does not tie the whole model (the top level decides)
    qwen4(text={"tie_word_embeddings": True}),
    # an old checkpoint's vision_config names the composite type (read as qwen4_exp_vision)
    qwen4(vision={"model_type": "qwen4_exp"}),
    qwen4(text={"num_hidden_layers": 6, "ple_layer_ids": [5, 1], "num_experts": 6,
                "num_experts_per_tok": 3, "hc_count": 2,
                "layer_types": ["linear_attention", "full_attention", "linear_attention",
                                "indexed_attention", "linear_attention", "full_attention"]}),
    qwen4(text={"ple_layer_ids": []}),
], ids=["base", "deepstack-ignored", "merge-1-patch-8", "wider", "tied", "text-tied",
        "old-vision-type", "layer-types-two-ple", "no-ple"])
def test_varied_configs_match_transformers(fields: dict[str, Any]) -> None:
    matches_whole_model(spec_from_dict(fields, name="qwen4-exp-variant"))


def test_text_tied_only_stays_untied() -> None:
    spec = spec_from_dict(qwen4(text={"tie_word_embeddings": True}), name="t")
    untied = spec_from_dict(qwen4(), name="u")
    tied = spec_from_dict(qwen4(tie_word_embeddings=True), name="v")
    assert count(spec).total == count(untied).total == count(tied).total + 128 * 64


@pytest.mark.parametrize("side", [224, 256])
def test_tower_flops_equal_flop_counter(side: int) -> None:
    """One image through the tower and the merger (eager attention): FlopCounterMode equals the
    vision and projector parts' figures."""
    measured, vision, proj, grid, built = qwen_tower_flops(qwen4(), side=side)
    assert built == "Qwen4ExpForConditionalGeneration"
    assert vision.input_tokens[0][1] == grid * grid
    assert vision.context_tokens == (grid // 2) ** 2  # what one image adds to the context
    assert measured == part_flops(vision).total + part_flops(proj).total
    # the merger by hand: fc1 [4d, 4d] and fc2 [64, 4d] on each merged token
    assert part_flops(proj).total == 2 * (grid // 2) ** 2 * (128 * 128 + 64 * 128)


def test_bundled_tower_flops_by_hand() -> None:
    """The checkpoint's tower on one 896 × 896 image: 3,136 patches of 16 through 27 layers, then
    784 merged tokens into the language model."""
    r = flops(load_spec(BUNDLED), ctx=1000, images=1)
    vision = next(p for p in r.parts if p.part == "vision")
    proj = next(p for p in r.parts if p.part == "projector")
    n = 56 * 56
    # per patch: the patch conv [1152, 3·2·16·16] and per layer qkv, proj, fc1, fc2 (2 FLOPs a
    # weight); attention over all n patches: QKᵀ and AV, 2·2·1152 per pair, in each layer
    per_patch = 2 * (D * 1536 + L * (3 * D * D + D * D + 2 * FF * D))
    assert vision.tokens == n
    assert (vision.weight, vision.attention) == (n * per_patch, L * n * n * 4 * D)
    assert proj.total == 2 * 784 * ((4 * D) ** 2 + 2560 * 4 * D)
    assert vision.context_tokens == 784


def test_image_tokens_and_images_option(cli: Any) -> None:
    spec = load_spec(BUNDLED)
    r = flops(spec, ctx=1000, images=2)
    assert r.image_tokens == 28 * 28  # 896 px: 56 × 56 patches of 16, merged 2 × 2
    assert r.ctx == 1000 + 2 * 784
    small = cli("flops", BUNDLED, "--image-size", "448", "--json").json()
    assert small["image_tokens"] == 14 * 14
    assert small["per_image"]["vision"]["tokens"] == 28 * 28
    mem = cli("memory", BUNDLED, "--ctx", "1000", "--images", "2", "--json").json()
    plain = cli("memory", BUNDLED, "--ctx", str(1000 + 2 * 784), "--json").json()
    assert mem["kv_cache_bytes"] == plain["kv_cache_bytes"]
    assert mem["state_bytes_per_sequence"] == plain["state_bytes_per_sequence"] == 116_379_664


def test_state_and_kv_of_the_whole_model() -> None:
    """The whole model keeps the language model's cache, as the text model alone: 12 QSA layers of
    K, V and index keys, 36 DeltaNet states (layer 2's with its PLE conv and n-gram ids)."""
    whole, text = load_spec(BUNDLED), load_spec("qwen3.8-flash-next")
    for ctx in (1, 4096, 131_072):
        assert kv_cache_bytes(whole, batch=2, ctx=ctx, dtype=DType.bf16) == kv_cache_bytes(
            text, batch=2, ctx=ctx, dtype=DType.bf16)
    # … and the first QSA layer's 3 int64 position ids a token (ModelSpec.cache_bytes_per_token)
    assert kv_cache_bytes_per_token(whole, dtype=DType.bf16) == 12 * (2 * 512 + 128) * 2 + 24
    gdn = 10_240 * 4 * 2 + 48 * 128 * 128 * 4
    state = 36 * gdn + 10_240 * 9 * 2 + 2 * 8
    assert state_bytes_per_sequence(whole, dtype=DType.bf16) == state == 116_379_664
    assert kv_cache_bytes(whole, batch=1, ctx=1000, dtype=DType.bf16) == (
        state + 1000 * (12 * 1152 * 2 + 24))


def test_cache_of_a_whole_model_forward_pass() -> None:
    """A text forward pass of 2 × 8 tokens through the whole (small) model in bf16: the bytes of
    its cache (DeltaNet conv and recurrent states, the PLE conv state and n-gram ids, the QSA
    layer's K, V, index keys and position ids) are llmcalc's."""
    fields = qwen4()
    spec = spec_from_dict(fields, name="qwen4-exp-cache")
    measured, kinds = text_forward_cache(fields, token_ids=(2, 100))
    assert kinds == ["LinearAttentionLayer"] * 3 + ["DynamicIndexedLayer"]
    assert measured == kv_cache_bytes(spec, batch=2, ctx=8, dtype=DType.bf16)


def test_transformers_default_config_is_refused(cli: Any) -> None:
    """Qwen4ExpConfig() leaves the QSA indexer's sizes unset: transformers cannot build its own
    default (a TypeError in the indexer), and llmcalc says which field is missing, exit 2."""
    config = transformers.AutoConfig.for_model("qwen4_exp")
    with pytest.raises(TypeError), torch.device("meta"):
        transformers.AutoModelForImageTextToText.from_config(config)
    r = cli("count", "qwen4_exp")
    assert r.code == 2
    assert r.stderr.strip() == (
        "error: qwen4_exp (transformers defaults): text_config.indexer_n_heads: missing required "
        "field "
        "(transformers builds a QSA indexer on every attention layer)")


# ---- dots3_note: counted as a whole (tests/multimodal/test_gemma4_unified_dots3.py) -----------------------------------


def test_dots3_note_parts_as_transformers_builds_them() -> None:
    """dots3_note's default, part by part as transformers builds it (routed experts in 17 of the
    tower's 42 layers, 4, 8, …, 64, 64 experts; an audio encoder of three stride-2 Conv2d and 32
    layers), now counted whole."""
    from collections import Counter

    from llmcalc.families import MODEL_TYPES
    from llmcalc.families.not_counted import NOT_COUNTED

    assert "dots3_note" in MODEL_TYPES and "dots3_note" not in NOT_COUNTED
    transformers.logging.set_verbosity_error()
    config = transformers.AutoConfig.for_model("dots3_note")
    v, a = config.vision_config, config.audio_config
    assert v.mlp_layer_types == ["dense"] * 25 + ["sparse"] * 17
    assert [v.per_layer_config[i].num_local_experts for i in range(25, 42)] == [
        *range(4, 65, 4), 64]
    assert a.num_hidden_layers == 32
    with torch.device("meta"):
        model = transformers.AutoModelForImageTextToText.from_config(config)
    assert len(model.model.audio_tower.conv_stem.convs) == 3
    parts: Counter[str] = Counter()
    for name, p in model.named_parameters():
        parts[name.split(".")[1] if name.startswith("model.") else name.split(".")[0]] += p.numel()
    assert dict(parts) == {"language_model": 278_773_150_336, "vision_tower": 6_871_277_312,
                           "audio_tower": 886_199_680, "lm_head": 778_567_680}
    # its language model with the head is the text model llmcalc counts
    text = count(load_spec("dots3-note-text-default")).total
    assert text == parts["language_model"] + parts["lm_head"] == 279_551_718_016
    whole = count(load_spec("dots3_note"))
    assert whole.total == sum(parts.values()) == 287_309_195_008
    assert whole.parts["vision"] + whole.parts["projector"] == parts["vision_tower"]
    assert whole.parts["audio"] == parts["audio_tower"]
