"""FLOPs one input costs in a part of a whole model (an image through a vision tower and its
projector, a second of speech through an audio encoder), and of one query–key pair of attention:
below both the families, whose notes quote a part's figure, and :mod:`llmcalc.formulas.flops`.

A multiply-add is 2 FLOPs, as ``torch.utils.flop_counter`` counts a matmul.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmcalc.model.spec import Attention, Part

FLOPS_PER_MAC = 2  # a multiply and an add


def pair_flops(attention: Attention) -> int:
    """FLOPs of one query–key pair in one layer: scores 2·h·d_qk plus value sum 2·h·d_v, once per
    attention map (differential attention: two) (an indexer's scoring is apart:
    :func:`llmcalc.formulas.flops.index_flops`)."""
    a = attention
    return FLOPS_PER_MAC * a.heads * (a.qk_head_dim + a.v_head_dim) * a.maps


@dataclass(frozen=True)
class PartFlops:
    """One part's forward FLOPs for one input (an image at ``input_size``): every matmul times the
    tokens it meets, plus bidirectional attention over all n² pairs of its layers' tokens (what
    FlopCounterMode counts for an encoder). ``context_tokens``: tokens the input adds to the
    language model's context."""

    part: str
    input_size: int | None
    tokens: int  # tokens its layers see
    weight: int
    attention: int
    context_tokens: int
    clip: str = ""  # an audio part: what one input is (Part.clip)

    @property
    def total(self) -> int:
        return self.weight + self.attention


def part_flops(part: Part) -> PartFlops:
    """FLOPs one input costs in ``part``: Σ 2 · matrix elements · tokens through it, plus per layer
    n² · 2·h·(d_qk + d_v) (a Conv2d patch embedding with stride = kernel is one matmul per patch)."""
    weight = 0
    for t, g in part.all_tensors():
        if not t.matmul or t.tied_to is not None:
            continue
        key = t.component if g is None else f"layers/{t.component}"
        weight += FLOPS_PER_MAC * t.numel * (len(g.layers) if g is not None else 1) * part.tokens_for(key)
    n = part.tokens_for("layers")
    attention = sum(
        len(g.layers) * n * n * pair_flops(g.attention)
        for g in part.layer_groups
        if g.attention is not None
    )
    runs = part.passes
    if part.input_flops is not None:
        weight, attention = part.input_flops
    return PartFlops(part.name, part.input_size, runs * n, runs * (weight + part.extra_flops),
                     runs * attention, part.context_tokens, part.clip)
