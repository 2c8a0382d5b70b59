"""The reference comparison: llmcalc's description of a model against the transformers model built
from the same config on the meta device (torch and transformers are imported lazily, by
``llmcalc.verify.reference``), and the second path that totals are held to: the named tensors' shapes.
"""

from __future__ import annotations

import math
from typing import Any

from llmcalc import count
from llmcalc.model.spec import ModelSpec, spec_part

# lookup tables (nn.Embedding) inside the layers, which transformers' embedding figure counts:
# Qwen4-Exp's hashed n-gram tables
LOOKUPS_IN_LAYERS = ("ple/ngram_embedding",)

_VLM = {"vision": "model.vision_tower.", "projector": "model.multi_modal_projector."}
_QWEN_VL = {"projector": "model.visual.merger.", "vision": "model.visual."}
_PHI4_IMAGE = "model.embed_tokens_extend.image_embed."
_PHI4_AUDIO = "model.embed_tokens_extend.audio_embed."
# module prefixes of each part in a whole model, by model_type (the first prefix a name starts with
# names its part; the rest is the language model)
PART_PREFIXES: dict[str, dict[str, str]] = {
    "llava": _VLM,
    "gemma3": _VLM,
    "mistral3": _VLM,
    "paligemma": _VLM,
    "aya_vision": _VLM,
    "internvl": _VLM,
    "got_ocr2": _VLM,
    "llava_next": {**_VLM, "_newline": "model.image_newline"},
    "llava_onevision": {**_VLM, "_newline": "model.image_newline"},
    "llama4": {"vision": "vision_model.", "projector": "multi_modal_projector."},
    "mllama": {"vision": "model.vision_model.", "projector": "model.multi_modal_projector."},
    "qwen3_vl": {"projector": "model.visual.merger.",
                 "_deepstack": "model.visual.deepstack_merger_list.", "vision": "model.visual."},
    "qwen3_vl_moe": {"projector": "model.visual.merger.",
                     "_deepstack": "model.visual.deepstack_merger_list.", "vision": "model.visual."},
    # the merger is the projector; the rest of model.visual is the tower (no deepstack mergers)
    "qwen2_vl": _QWEN_VL,
    "qwen2_5_vl": _QWEN_VL,
    "qwen3_5": _QWEN_VL,
    "qwen3_5_moe": _QWEN_VL,
    "qwen4_exp": _QWEN_VL,
    "idefics3": {"vision": "model.vision_model.", "projector": "model.connector."},
    "smolvlm": {"vision": "model.vision_model.", "projector": "model.connector."},
    "phi4_multimodal": {"vision": _PHI4_IMAGE + "img_processor.", "projector": _PHI4_IMAGE,
                        "audio": _PHI4_AUDIO + "encoder.", "audio_projector": _PHI4_AUDIO},
    "moss_transcribe_diarize": {"audio": "model.audio_tower.",
                                "projector": "model.multi_modal_projector."},
    "fuyu": {"vision": "model.vision_embed_tokens."},
}
# parameters outside a part's module that belong to it: (part, name prefix)
MOVED = {"_newline": "projector", "_deepstack": "projector"}


def numel(shapes: dict[str, tuple[int, ...]]) -> int:
    """The elements of every shape in a name → shape mapping."""
    return sum(math.prod(s) for s in shapes.values())


def total_from_names(spec: ModelSpec) -> int:
    """The second path to a total: every named tensor's elements, from its shape, one entry per
    layer and per expert as ``named_parameters`` lists them (``count`` sums its components)."""
    return sum(math.prod(shape) for _, shape in spec.named_shapes())


def matches_transformers(spec: ModelSpec, *, per_layer: bool = True, active: bool = False) -> Any:
    """``spec`` against the transformers model built from it on the meta device: every name and
    shape, the total, the embedding and lm_head figures, each layer's count (``per_layer``) and,
    with ``active``, the active count read off the built modules (:func:`hf_active`). Returns the
    model, for a caller's further checks."""
    from llmcalc.verify.reference import build_meta_model, figures

    pc = count(spec)
    model = build_meta_model(spec)
    real = figures(model, spec.num_layers)
    assert dict(spec.named_shapes()) == real.named_shapes
    assert pc.total == real.total
    # transformers' figure counts every nn.Embedding: a whole model's towers' position tables too
    # (pc.embedding is the language model's, as every figure besides total and parts)
    towers = sum(t.numel for p in spec.parts for t in p.tensors
                 if t.component == "embed/positions" and t.name.endswith(".weight"))
    towers += sum(t.numel * len(g.layers) for g in spec.layer_groups for t in g.tensors
                  if t.component in LOOKUPS_IN_LAYERS)
    if spec.main_part == "language":
        assert pc.embedding + towers == real.embedding
        assert pc.lm_head == real.lm_head
    # an encoder–decoder's or encoder LM's embedding modules share one table (`shared` in the
    # encoder, the decoder and the head) and its head is a part of its own: transformers' module
    # walk counts the table once per module, so only the totals, the named shapes and the parts
    # (tests/families/test_encoders_and_seq2seq.py) are compared there
    ours, stored_at = [0] * spec.num_layers, {}
    for group, gc in zip(spec.layer_groups, pc.groups, strict=True):
        tied = {t.tied_to for t in group.tensors if t.tied_to is not None}
        for i in group.layers:
            ours[i] = gc.per_layer
            if tied:  # a shared block (Zamba): counted where stored, held by every layer's module
                stored_at[i] = int(next(iter(tied)).split(".")[2])  # model.layers.<s>.…
    if per_layer:  # (figures() reads one ModuleList per layer: a layer split over several is not)
        # a layer that applies a shared block stored elsewhere counts less than the storing one
        assert all(ours[i] < ours[s] for i, s in stored_at.items())
        assert tuple(ours[stored_at.get(i, i)] for i in range(spec.num_layers)) == real.per_layer
    if active:
        assert pc.active == hf_active(model)
    return model


def whole_model_parameters(spec: ModelSpec) -> dict[str, tuple[int, ...]]:
    """name → shape of the whole transformers model (…ForConditionalGeneration) built on meta."""
    import transformers

    from llmcalc.verify.reference import build_meta_model

    transformers.logging.set_verbosity_error()
    model = build_meta_model(spec)
    # the whole model's class (Phi-4-multimodal and Fuyu register theirs as causal LMs)
    assert type(model).__name__.endswith(("ForConditionalGeneration", "ForCausalLM"))
    return {name: tuple(p.shape) for name, p in model.named_parameters()}


def matches_whole_model(spec: ModelSpec) -> dict[str, int]:
    """A whole model (tower, projector, language model …) against transformers' part by part:
    names and shapes equal, total equal, and each part equal to transformers' modules under its
    prefix (``PART_PREFIXES[model_type]``; the rest is the main part), split on transformers' side
    independently of llmcalc's names. Returns the parameters by part."""
    real = whole_model_parameters(spec)
    ours = dict(spec.named_shapes())
    assert sorted(ours.items()) == sorted(real.items())
    pc = count(spec)
    assert pc.total == numel(real)
    prefixes = PART_PREFIXES[spec.model_type]
    by_part = {spec.main_part: 0, **{name: 0 for name in prefixes if name not in MOVED}}
    for name, shape in real.items():
        part = next((p for p, pre in prefixes.items() if name.startswith(pre)), spec.main_part)
        by_part[MOVED.get(part, part)] += math.prod(shape)
    assert pc.parts == by_part
    for name, n in by_part.items():
        assert count(spec_part(spec, name)).total == n
    return by_part


def hf_active(model: Any) -> int:
    """Active parameters of a transformers MoE model, from its modules alone.

    Every parameter counts whole, except those under a routed-experts module (an ``experts``
    attribute, or a module class named ``…Experts``, holding ``num_experts`` fused experts), of which
    k of E count, k being the config's ``num_experts_per_tok`` (DBRX: ``ffn_config.moe_top_k``).
    Shared experts and routers live outside those modules and count whole.
    """
    config = model.config
    # Aria's text model says moe_topk; DBRX ffn_config.moe_top_k
    k = (
        getattr(config, "num_experts_per_tok", None)
        or getattr(config, "moe_topk", None)
        or config.ffn_config.moe_top_k
    )
    if isinstance(k, list):  # per layer (Hunyuan); llmcalc requires them equal
        k = k[0]
    total = sum(p.numel() for p in model.parameters())
    routed = active_routed = 0
    modules = dict(model.named_modules())
    found = [
        name
        for name, module in modules.items()
        if name.rsplit(".", 1)[-1] == "experts" or type(module).__name__.endswith("Experts")
    ]
    # the innermost: JetMoE's attention "experts" hold a router and a bias beside two Experts modules
    for name in found:
        if any(other.startswith(name + ".") for other in found):
            continue
        module = modules[name]
        experts = getattr(module, "num_experts", None)
        for p in module.parameters():
            # LongCat-Flash's experts have no num_experts: each parameter leads with its own count
            e = experts or p.shape[0]
            assert p.numel() % e == 0
            routed += p.numel()
            active_routed += p.numel() // e * k
    assert routed > 0
    return total - routed + active_routed


def text_forward_cache(fields: dict[str, Any], *, token_ids: tuple[int, int]) -> tuple[int, list[str]]:
    """A text forward pass of 2 × 8 tokens (ids in ``token_ids``) through the whole model that
    ``fields`` describe, in bf16: the bytes of the cache it leaves and its layers' kinds."""
    import torch
    import transformers

    from llmcalc.verify.reference import _cached_tensors

    config = transformers.AutoConfig.for_model(
        fields["model_type"], **{k: v for k, v in fields.items() if k != "model_type"})
    torch.manual_seed(0)
    model = transformers.AutoModelForImageTextToText.from_config(config, dtype=torch.bfloat16)
    ids = torch.randint(*token_ids, (2, 8))
    with torch.no_grad():
        out = model(input_ids=ids, use_cache=True)
    cache = out.past_key_values
    measured = sum(t.nbytes for layer in cache.layers for t in _cached_tensors(layer))
    return measured, [type(layer).__name__ for layer in cache.layers]


def qwen_tower_flops(fields: dict[str, Any], *, side: int) -> tuple[int, Any, Any, int, str]:
    """One ``side`` × ``side`` image through a Qwen-VL-style whole model's tower and merger (eager
    attention, patches of 16 merged 2 × 2): FlopCounterMode's total, the vision and projector
    parts of llmcalc's spec for ``fields`` at that image size, the patch grid's side and the
    class transformers built."""
    import torch
    import transformers
    from torch.utils.flop_counter import FlopCounterMode

    from llmcalc.inputs.config import spec_from_dict

    fields = {**fields, "image_size": side}
    spec = spec_from_dict(fields, name="tower-flops")
    config = transformers.AutoConfig.for_model(
        fields["model_type"],
        **{k: v for k, v in fields.items() if k not in ("model_type", "image_size")})
    model = transformers.AutoModelForImageTextToText.from_config(config, attn_implementation="eager")
    grid = side // 16
    pixels = torch.zeros(grid * grid, 3 * 2 * 16 * 16)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model.model.visual(pixels, grid_thw=torch.tensor([[1, grid, grid]]))
    vision, proj = spec.part("vision"), spec.part("projector")
    assert vision is not None and proj is not None
    return counter.get_total_flops(), vision, proj, grid, type(model).__name__
