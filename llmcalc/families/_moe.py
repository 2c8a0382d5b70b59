"""Shared blocks of the mixture-of-experts decoders: crossing two layer plans, expert layouts other
than transformers' usual fused one, and the attention ideas a few MoE models introduced (Llama 4's
chunked attention, DeepSeek-V3.2's sparse-attention indexer).

One home per idea: a family module that has one of these imports it from here.
"""

from __future__ import annotations

import math

from llmcalc.families._base import LayerPlan
from llmcalc.families._base import linear
from llmcalc.families._base import norm
from llmcalc.families._base import plan_from_kinds
from llmcalc.families._base import require
from llmcalc.families._base import stacked_experts
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Run
from llmcalc.model.spec import Tensor

# ---- layer plans ------------------------------------------------------------------------------------


def _meet(a: Run, b: Run) -> list[Run]:
    """The layers in both runs, as runs (O(lcm of the periods) only when neither is contiguous)."""
    start, stop = max(a.start, b.start), min(a.stop, b.stop)
    if stop <= start:
        return []
    for x, y in ((a, b), (b, a)):
        if y.width >= y.period:  # y is a contiguous span: clip x to it
            run = Run(start, stop, x.origin, x.period, x.width)
            return [run] if len(run) else []
    period = math.lcm(a.period, b.period)
    return [
        Run(start, stop, i, period, 1)
        for i in range(start, min(stop, start + period))
        if i in a and i in b
    ]


def cross_plans(outer: LayerPlan, inner: LayerPlan) -> dict[tuple[str, str], LayerSet]:
    """Every non-empty pair of kinds: a layer's attention kind crossed with its MLP kind, in order of
    first layer."""
    out: dict[tuple[str, str], LayerSet] = {}
    for ko, lo in outer.items():
        for ki, li in inner.items():
            layers = LayerSet(tuple(r for a in lo.runs for b in li.runs for r in _meet(a, b)))
            if layers:
                out[(ko, ki)] = layers
    return dict(sorted(out.items(), key=lambda kv: next(iter(kv[1]))))


def crossed_name(kinds: tuple[str, str], plan: dict[tuple[str, str], LayerSet]) -> str:
    """A crossed group's name: both kinds (``sliding_attention/moe``) where both vary, else the one
    that does (else the second)."""
    outer = {ko for ko, _ in plan}
    inner = {ki for _, ki in plan}
    if len(outer) > 1 and len(inner) > 1:
        return f"{kinds[0]}/{kinds[1]}"
    return kinds[0] if len(outer) > 1 else kinds[1]


def listed_plan(
    kinds: list[str], num_layers: int, *, field: str, names: dict[str, str]
) -> LayerPlan:
    """A config's per-layer list of kinds (``mlp_layer_types``, ``indexer_types`` …), each one of
    ``names`` (config spelling → group name), one entry per layer → the plan."""
    require(
        len(kinds) == num_layers,
        field,
        f"has {len(kinds)} entries, num_hidden_layers is {num_layers}",
    )
    for i, kind in enumerate(kinds):
        require(
            kind in names,
            f"{field}.{i}",
            f"unknown type {kind!r} (one of: {', '.join(names)})",
        )
    return plan_from_kinds([names[k] for k in kinds])


def mlp_kinds_plan(kinds: list[str], num_layers: int, *, dense: str, sparse: str) -> LayerPlan:
    """A config's mlp_layer_types ("dense" / "sparse", one per layer) → the plan."""
    names = {"dense": dense, "sparse": sparse}
    return listed_plan(kinds, num_layers, field="mlp_layer_types", names=names)


# ---- expert layouts -----------------------------------------------------------------------------


def experts_transposed(p: str, d: int, ff: int, num_experts: int) -> list[Tensor]:
    """E SwiGLU experts stored input-first (Llama 4): gate_up_proj [E, d, 2·ff], down_proj [E, ff, d]."""
    return [
        stacked_experts(f"{p}.gate_up_proj", "moe/experts/gate_up_proj", num_experts, d, 2 * ff),
        stacked_experts(f"{p}.down_proj", "moe/experts/down_proj", num_experts, ff, d),
    ]


# ---- DeepSeek sparse attention (DeepSeek-V3.2, GLM-5) -------------------------------------------


def indexer(p: str, d: int, q_lora_rank: int, heads: int, head_dim: int) -> list[Tensor]:
    """The lightning indexer that picks which tokens a query attends to (DeepSeek-V3.2 §2.1):
    wq_b q_lora → heads·hd (from MLA's query latent), wk d → hd with a LayerNorm over hd (weight and
    bias), weights_proj d → heads (one weight per indexer head)."""
    return [
        *linear(f"{p}.wq_b", "attn/indexer/wq_b", heads * head_dim, q_lora_rank, bias=False),
        *linear(f"{p}.wk", "attn/indexer/wk", head_dim, d, bias=False),
        *norm(f"{p}.k_norm", "attn/indexer/k_norm", head_dim, bias=True),
        *linear(f"{p}.weights_proj", "attn/indexer/weights_proj", heads, d, bias=False),
    ]


# ---- multi-token prediction (DeepSeek-V3 §2.2, GLM-4.5) -----------------------------------------


def mtp_params(layer: list[Tensor], *, d: int, vocab: int, modules: int,
               own_vocab: bool = True) -> int:
    """Parameters of ``modules`` multi-token-prediction modules as a checkpoint stores them, each:
    one more decoder layer (``layer``, an MoE one), enorm and hnorm [d], eh_proj [d, 2·d], and its
    own copies of the embedding and of the output head with their norm (embed [V, d], shared_head
    norm [d] and head [V, d]); without ``own_vocab`` (Ling 3) the final norm [d] alone."""
    one = sum(t.numel for t in layer) + 2 * d * d + 3 * d + (2 * vocab * d if own_vocab else 0)
    return modules * one


def mtp_note(n: int, params: int, *, basis: str = "") -> str:
    """``basis``: where the module's structure comes from when no checkpoint index confirms it."""
    holds = (f"by {basis}, a checkpoint holds about {params:,} more" if basis
             else f"a checkpoint holds {params:,} more")
    return (
        f"num_nextn_predict_layers={n}: the multi-token-prediction module is not counted "
        f"(transformers does not build it); {holds} (mtp_params)"
    )
