"""The validated model description every quantity is computed from.

A family module turns a config into a :class:`ModelSpec`: the named tensors the transformers model
creates (names as in its module tree, shapes from the config) plus the few facts about attention and
experts that FLOPs and memory need. Parameter counts are sums over the tensors; nothing downstream
reads the config again.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

LAYER = "{i}"  # stands for the layer index in a layer tensor's name
EXPERT = "{e}"  # stands for the expert index where experts are separate modules


@dataclass(frozen=True)
class Tensor:
    """One parameter tensor (or, with ``{e}`` in its name, one per routed expert).

    ``component`` is the breakdown key (``attn/q_proj``); ``matmul`` marks weight matrices a token is
    multiplied by (2 FLOPs per element); ``experts`` is the number of routed experts it holds, stacked
    on the first dimension or expanded over ``{e}``; ``tied_to`` names the tensor it shares storage
    with (counted once, there, but still multiplied by in the forward pass).
    """

    name: str
    shape: tuple[int, ...]
    component: str
    matmul: bool = False
    experts: int = 0
    tied_to: str | None = None

    @property
    def copies(self) -> int:
        """How many real tensors this entry stands for within one layer."""
        return self.experts if EXPERT in self.name else 1

    @property
    def numel(self) -> int:
        return math.prod(self.shape) * self.copies

    def active_numel(self, experts_per_tok: int) -> int:
        """Elements one token uses: all of them, or k of the E routed experts."""
        if not self.experts:
            return self.numel
        return self.numel // self.experts * experts_per_tok


@dataclass(frozen=True)
class Attention:
    """What one layer's attention costs per token; shapes of its weights live in the tensors.

    ``kv_latent_dim`` is set for multi-head latent attention (MLA): the per-token cache is that latent
    instead of per-head K and V.
    """

    heads: int
    kv_heads: int
    qk_head_dim: int
    v_head_dim: int
    window: int | None = None
    kv_latent_dim: int | None = None

    def tokens_seen(self, ctx: int) -> int:
        """Tokens one query attends to, and one layer's cache holds, at context ``ctx``: all of
        them, or at most the last ``window`` (sliding-window attention)."""
        return ctx if self.window is None else min(ctx, self.window)


@dataclass(frozen=True)
class LayerGroup:
    """Decoder layers that share one structure; tensor names carry ``{i}`` for the layer index."""

    name: str
    layers: tuple[int, ...]
    tensors: tuple[Tensor, ...]
    attention: Attention


@dataclass(frozen=True)
class MoE:
    """Routed experts: ``num_experts`` per MoE layer, ``experts_per_tok`` of them used per token."""

    num_experts: int
    experts_per_tok: int
    shared_experts: int = 0


@dataclass(frozen=True)
class Shape:
    """The headline dimensions shown beside every figure."""

    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tied_embeddings: bool
    max_position_embeddings: int | None = None


@dataclass(frozen=True)
class Origin:
    """Where a config was read: ``source`` is path, bundled, cache (the local Hugging Face cache)
    or hub (downloaded now); ``repo_id`` and ``revision`` for the last two."""

    source: str
    path: str
    repo_id: str | None = None
    revision: str | None = None


@dataclass(frozen=True)
class ModelSpec:
    """A model as llmcalc sees it: its shape, its named tensors and where they came from.

    ``tensors`` are those outside the decoder layers (embeddings, final norm, lm_head …);
    ``notes`` say what was assumed (stated defaults, a text model taken from a multimodal config).
    """

    name: str
    model_type: str
    family: str
    shape: Shape
    tensors: tuple[Tensor, ...]
    layer_groups: tuple[LayerGroup, ...]
    moe: MoE | None = None
    source: str | None = None
    notes: tuple[str, ...] = ()
    expected: Mapping[str, Any] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)
    origin: Origin | None = None
    # "formula": a family module describes it; "measured": read off transformers' model (seconds it took)
    method: str = "formula"
    measured_seconds: float = 0.0

    @property
    def num_layers(self) -> int:
        return self.shape.num_layers

    def all_tensors(self) -> Iterator[tuple[Tensor, LayerGroup | None]]:
        """Every tensor entry once, with the layer group it repeats in (None outside the layers)."""
        for t in self.tensors:
            yield t, None
        for g in self.layer_groups:
            for t in g.tensors:
                yield t, g

    def named_shapes(self) -> Iterator[tuple[str, tuple[int, ...]]]:
        """Concrete (name, shape) of every parameter, tied ones once, as ``named_parameters`` gives.

        Stacked experts keep their expert dimension; ``{e}`` names expand to one entry per expert.
        """
        for t, g in self.all_tensors():
            if t.tied_to is not None:
                continue
            for i in g.layers if g is not None else (None,):
                name = t.name if i is None else t.name.replace(LAYER, str(i))
                if EXPERT in name:
                    for e in range(t.experts):
                        yield name.replace(EXPERT, str(e)), t.shape
                else:
                    yield name, t.shape


def context_notes(spec: ModelSpec, *, ctx: int) -> tuple[str, ...]:
    """What a figure at ``ctx`` should be read with: a context past max_position_embeddings."""
    limit = spec.shape.max_position_embeddings
    if limit is None or ctx <= limit:
        return ()
    return (
        f"context {ctx:,} is above the model's max_position_embeddings ({limit:,}); "
        "the figures assume it runs there anyway",
    )
