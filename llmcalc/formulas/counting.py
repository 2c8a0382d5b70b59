"""Parameter counts as sums over a model's named tensors.

Everything here is derived from :attr:`ModelSpec.tensors` and its layer groups: a tensor tied to
another is counted once (at the tensor it shares), as ``model.parameters()`` does. The seed rule of
thumb is Kaplan et al. 2020, Table 1: N ≈ 12·L·d² (attention 4d², MLP 8d² per layer), plus the V·d
token embedding.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llmcalc.model.spec import LayerGroup, ModelSpec, Part, Tensor

# every lookup table (nn.Embedding): tokens, positions, per-layer tables, CPM-Ant's segment table
EMBEDDING_COMPONENTS = ("embed/tokens", "embed/positions", "embed/per_layer", "embed/segments")
LM_HEAD = "lm_head"


@dataclass(frozen=True)
class GroupCount:
    """One layer group: how many layers, and one layer's parameters by component."""

    name: str
    num_layers: int
    per_layer: int
    per_layer_active: int | None  # None: experts per token undefined (ModelSpec.experts_per_tok)
    components: dict[str, int]  # component → parameters of one layer

    @property
    def total(self) -> int:
        return self.per_layer * self.num_layers

    @property
    def active(self) -> int | None:
        return None if self.per_layer_active is None else self.per_layer_active * self.num_layers


@dataclass(frozen=True)
class ParamCount:
    """All of a model's parameter figures. ``breakdown`` adds up to ``total``."""

    total: int
    active: int | None  # None: experts per token undefined (ModelSpec.experts_per_tok)
    embedding: int  # token + position tables
    lm_head: int  # 0 when tied
    layers: int  # all decoder layers
    groups: tuple[GroupCount, ...]
    breakdown: dict[str, int]  # slash-separated key → parameters
    rule_of_thumb: int  # 12·L·d² + V·d, shown beside the exact total
    # a whole model: parameters by part ({"language": …, "vision": …}), adding up to total; empty
    # for a model of one part. embedding, lm_head, layers and groups are the main part's.
    parts: dict[str, int] = field(default_factory=dict)


def tensor_params(t: Tensor) -> int:
    """Parameters a tensor entry adds (0 when it shares storage with another)."""
    return 0 if t.tied_to is not None else t.numel


def tensor_active(t: Tensor, spec: ModelSpec, group: LayerGroup | None = None) -> int:
    """Elements of ``t`` one token uses: k of E routed experts, k the group's own top-k if it has
    one, else the model's."""
    if t.tied_to is not None:
        return 0
    if group is not None and group.experts_per_tok is not None:
        return t.active_numel(group.experts_per_tok)
    k = spec.moe.experts_per_tok if spec.moe else 0
    return t.active_numel(k or 0)


def part_active(part: Part, spec: ModelSpec) -> int:
    """What one input uses of a part: all of it but the routed experts, k of each layer's E (a
    part's experts need the group's own top-k; without one all of them count)."""
    active = sum(tensor_params(t) for t in part.tensors)
    for g in part.layer_groups:
        per_layer = sum(
            tensor_params(t) if g.experts_per_tok is None else tensor_active(t, spec, g)
            for t in g.tensors
        )
        active += per_layer * len(g.layers)
    return active


def group_count(group: LayerGroup, spec: ModelSpec) -> GroupCount:
    components: dict[str, int] = {}
    for t in group.tensors:
        components[t.component] = components.get(t.component, 0) + tensor_params(t)
    return GroupCount(
        name=group.name,
        num_layers=len(group.layers),
        per_layer=sum(components.values()),
        per_layer_active=None if _top_k_unset(spec) else
        sum(tensor_active(t, spec, group) for t in group.tensors),
        components=components,
    )


def _top_k_unset(spec: ModelSpec) -> bool:
    return spec.moe is not None and spec.moe.experts_per_tok is None


def rule_of_thumb(spec: ModelSpec) -> int:
    """12·L·d² + V·d (Kaplan et al. 2020, Table 1, plus the token embedding)."""
    s = spec.shape
    return 12 * s.num_layers * s.hidden_size**2 + s.vocab_size * s.hidden_size


def part_breakdown(part: Part, spec: ModelSpec) -> dict[str, int]:
    """A part's parameters by component, keys prefixed ``<part>/`` (``vision/layers/attn/q_proj``)."""
    out: dict[str, int] = {}
    for t in part.tensors:
        key = f"{part.name}/{t.component}"
        out[key] = out.get(key, 0) + tensor_params(t)
    for g in part.layer_groups:
        for component, n in group_count(g, spec).components.items():
            key = f"{part.name}/layers/{component}"
            out[key] = out.get(key, 0) + n * len(g.layers)
    return out


def count(spec: ModelSpec) -> ParamCount:
    """Exact parameter figures of ``spec``: total, active (MoE), embedding, lm_head, breakdown.

    A whole model adds its parts (vision tower, projector …): their breakdown keys are prefixed
    with the part's name, ``parts`` gives each part's total, and all of a part is active but its
    routed experts (k of E a layer, dots3-note's vision tower).
    """
    breakdown: dict[str, int] = {}
    outer_active = 0
    for t in spec.tensors:
        breakdown[t.component] = breakdown.get(t.component, 0) + tensor_params(t)
        outer_active += tensor_active(t, spec)
    groups = tuple(group_count(g, spec) for g in spec.layer_groups)
    for g in groups:
        for component, n in g.components.items():
            key = f"layers/{component}"
            breakdown[key] = breakdown.get(key, 0) + n * g.num_layers
    main = sum(breakdown.values())
    parts: dict[str, int] = {spec.main_part: main} if spec.parts else {}
    for p in spec.parts:
        keys = part_breakdown(p, spec)
        parts[p.name] = parts.get(p.name, 0) + sum(keys.values())
        for key, n in keys.items():
            breakdown[key] = breakdown.get(key, 0) + n
    total = sum(breakdown.values())
    return ParamCount(
        total=total,
        active=None if _top_k_unset(spec) else outer_active
        + sum(g.active or 0 for g in groups) + sum(part_active(p, spec) for p in spec.parts),
        embedding=sum(breakdown.get(c, 0) for c in EMBEDDING_COMPONENTS),
        lm_head=breakdown.get(LM_HEAD, 0),
        layers=sum(g.total for g in groups),
        groups=groups,
        breakdown=breakdown,
        rule_of_thumb=rule_of_thumb(spec),
        parts=parts,
    )


def percent_off(estimate: int, exact: int) -> float:
    """How far an estimate is from the exact figure, in percent of the exact one."""
    return (estimate - exact) / exact * 100.0
