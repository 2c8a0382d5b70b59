"""Checking llmcalc against the real thing: a transformers model built from the same config.

The model is built on the meta device (shapes only, no weights, no network). torch and transformers
are imported here alone, lazily; without them the functions raise :class:`MissingExtraError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llmcalc.errors import MissingExtraError
from llmcalc.spec import ModelSpec


@dataclass(frozen=True)
class ModelFigures:
    """Figures read off an instantiated model, independently of llmcalc's tensor names."""

    total: int
    embedding: int  # every nn.Embedding table (token and position)
    lm_head: int  # output projection parameters not shared with the input embedding
    per_layer: tuple[int, ...]  # parameters of each decoder layer, in order
    named_shapes: dict[str, tuple[int, ...]]  # named_parameters(), tied weights once


def _import() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError:
        raise MissingExtraError("building the transformers model") from None
    transformers.logging.set_verbosity_error()
    return torch, transformers


def hf_config(spec: ModelSpec, **changes: Any) -> Any:
    """The transformers config object for ``spec``'s config fields (plus ``changes``)."""
    _, transformers = _import()
    fields = {k: v for k, v in spec.config.items() if k != "model_type"}
    fields.update(changes)
    return transformers.AutoConfig.for_model(spec.model_type, **fields)


def build_meta_model(spec: ModelSpec, *, trust_remote_code: bool = False) -> Any:
    """The causal-LM model for ``spec`` on the meta device: every parameter, no storage."""
    torch, transformers = _import()
    config = hf_config(spec)
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(
            config, trust_remote_code=trust_remote_code
        )


def figures(model: Any, num_layers: int) -> ModelFigures:
    """Total, embedding, lm_head and per-layer counts of an instantiated model."""
    torch, _ = _import()
    params = dict(model.named_parameters())
    total = sum(p.numel() for p in params.values())
    embedding = sum(
        m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Embedding)
    )
    inp, out = model.get_input_embeddings(), model.get_output_embeddings()
    lm_head = 0
    if out is not None:
        lm_head = sum(
            p.numel() for p in out.parameters() if not (inp is not None and p is inp.weight)
        )
    layers = _decoder_layers(model, num_layers, torch)
    per_layer = tuple(sum(p.numel() for p in layer.parameters()) for layer in layers)
    return ModelFigures(
        total=total,
        embedding=embedding,
        lm_head=lm_head,
        per_layer=per_layer,
        named_shapes={name: tuple(p.shape) for name, p in params.items()},
    )


def _decoder_layers(model: Any, num_layers: int, torch: Any) -> Any:
    """The ModuleList of decoder layers: the largest one holding exactly ``num_layers`` modules."""
    lists = [
        m for m in model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) == num_layers
    ]
    if not lists:
        return []
    return max(lists, key=lambda m: sum(p.numel() for p in m.parameters()))
