"""LoRA adapters exactly as peft builds them: trainable and total parameters, per module kind.

Source: Hu et al. 2021 ("LoRA") — a frozen weight W [out, in] gets a trainable update B·A with
A [r, in] and B [out, r]: r·(in + out) parameters; peft (``LoraConfig``) decides which modules get
one. Rules followed here, as peft 0.21 applies them:

- ``target_modules`` names match a module whose dotted name ends with the name (``q_proj`` matches
  ``model.layers.0.self_attn.q_proj``); ``all-linear`` targets every ``nn.Linear``/``Conv1D`` except
  the output layer (lm_head);
- an ``nn.Embedding`` target (``--lora-embeddings``) gets A [r, num_embeddings], B [dim, r];
- fused expert tensors [E, a, b] are ``nn.Parameter``s, reached through ``target_parameters``
  (``--lora-experts``): A [r·E, a], B [b, r·E] — r·E·(a + b);
- DoRA (Liu et al. 2024) adds a magnitude vector of out_features per adapted linear (dim per
  embedding);
- ``modules_to_save`` trains a full copy of each named module (its weight and bias), which peft
  keeps beside the frozen original, so the total grows by the same amount;
- rsLoRA (Kalajdzievski 2023) scales the update by α/√r instead of α/r: the parameter counts do
  not change, nor does ``lora_alpha``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from llmcalc.errors import ParameterError
from llmcalc.formulas.counting import count
from llmcalc.model.spec import LayerGroup, ModelSpec, Tensor

ALL_LINEAR = "all-linear"


@dataclass(frozen=True)
class LoraConfig:
    """The peft ``LoraConfig`` fields that change a parameter count (``alpha`` and ``rslora`` only
    scale the update and are carried for display)."""

    r: int = 16
    alpha: int = 32
    targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    embeddings: bool = False
    experts: bool = False
    modules_to_save: tuple[str, ...] = ()
    dora: bool = False
    rslora: bool = False


def lora_config(
    *,
    r: int = 16,
    alpha: int = 32,
    targets: Sequence[str] | str = ("q_proj", "k_proj", "v_proj", "o_proj"),
    embeddings: bool = False,
    experts: bool = False,
    modules_to_save: Sequence[str] = (),
    dora: bool = False,
    rslora: bool = False,
) -> LoraConfig:
    """Check and normalise the options: ``targets`` as a list or a comma-separated string."""
    if r < 1:
        raise ParameterError("{lora_r} {value}: must be 1 or more", value=r)
    names = tuple(
        s.strip() for s in (targets.split(",") if isinstance(targets, str) else targets)
        if s.strip()
    )
    if not names and not embeddings and not experts:
        raise ParameterError("{lora_targets}: name at least one module, e.g. q_proj,v_proj")
    saved = tuple(m.strip() for m in modules_to_save if m.strip())
    return LoraConfig(r, alpha, names, embeddings, experts, saved, dora, rslora)


def _module(t: Tensor) -> str:
    return t.name.rsplit(".", 1)[0]


def _is_linear(t: Tensor, *, linear_router: bool = False) -> bool:
    """An ``nn.Linear``/``Conv1D`` weight: a 2-D matrix a token is multiplied by, not an expert
    stack, not the router unless ``linear_router`` (see :data:`LINEAR_ROUTERS`)."""
    return (
        t.matmul and len(t.shape) == 2 and not t.component.startswith("embed")
        and (linear_router or t.component != "moe/router") and t.name.endswith(".weight")
    )


def _matches(module: str, targets: Sequence[str]) -> bool:
    return any(module == n or module.endswith("." + n) for n in targets)


@dataclass(frozen=True)
class AdapterKind:
    """The adapters on one kind of module (``attn/q_proj``): how many modules, parameters each."""

    component: str
    modules: int
    params: int  # all of them: modules × (r·(in + out) [+ DoRA magnitude])


@dataclass(frozen=True)
class LoraCount:
    """What peft's ``print_trainable_parameters`` shows, with the adapters by module kind."""

    config: LoraConfig
    base_params: int
    adapters: tuple[AdapterKind, ...]
    saved_params: int  # trainable copies of modules_to_save

    @property
    def adapter_params(self) -> int:
        return sum(a.params for a in self.adapters)

    @property
    def trainable(self) -> int:
        return self.adapter_params + self.saved_params

    @property
    def total(self) -> int:
        return self.base_params + self.trainable

    @property
    def trainable_percent(self) -> float:
        return 100 * self.trainable / self.total


# peft 0.21's bridge for MoE models whose v4 expert linears transformers v5 fused into stacked
# parameters (peft utils/transformers_weight_conversion.py, per transformers' conversion pattern):
# a v4 name among the targets (all-linear includes them) becomes a parameter target instead —
# the router ``gate`` and the stacked experts, the fused gate_up at rank r × (names fused) — and
# no longer targets any module (a dense layer's or shared expert's gate_proj keeps none).
MOE_V4_NAMES: dict[str, dict[str, str]] = {
    "mixtral": {"gate": "gate", "w1": "gate_up_proj", "w3": "gate_up_proj", "w2": "down_proj"},
    "qwen2_moe": {"gate": "gate", "gate_proj": "gate_up_proj", "up_proj": "gate_up_proj",
                  "down_proj": "down_proj"},
}
# model type → its pattern (transformers' _MODEL_TO_CONVERSION_PATTERN, plus mixtral, which peft
# adds); qwen2_moe itself is not bridged: its shared expert's linears keep their adapters
MOE_V4_PATTERN = {
    "mixtral": "mixtral", "qwen3_moe": "qwen2_moe", "deepseek_v2": "qwen2_moe",
    "deepseek_v3": "qwen2_moe", "olmoe": "qwen2_moe",
}
# model types whose router is an ``nn.Linear`` (PhimoeTopKRouter subclasses it); the others'
# routers are bare parameters in transformers v5 and no module target reaches them
LINEAR_ROUTERS = frozenset({"phimoe"})


def _v4_bridge(model_type: str, c: LoraConfig) -> tuple[LoraConfig, dict[str, int]]:
    """The config peft really applies, and the parameter targets → their rank."""
    names = MOE_V4_NAMES.get(MOE_V4_PATTERN.get(model_type, ""), {})
    hit = [n for n in c.targets if n in names]
    if not hit:
        return c, {}
    params: dict[str, int] = {}
    for new in dict.fromkeys(names[n] for n in hit):
        olds = [o for o, v in names.items() if v == new]
        present = [o for o in olds if o in hit]
        if len(present) < len(olds):
            raise ParameterError(
                "{lora_targets}: " + ", ".join(present) + " is fused with "
                + ", ".join(o for o in olds if o not in present) + " in this model; target both"
            )
        params[new] = c.r * len(olds)
    rest = tuple(n for n in c.targets if n not in names)
    return LoraConfig(c.r, c.alpha, rest, c.embeddings, c.experts, c.modules_to_save, c.dora,
                      c.rslora), params


# model types whose linears are transformers ``Conv1D`` (weight [in, out])
CONV1D_MODELS = frozenset({"gpt2"})


def _adapter(
    t: Tensor, c: LoraConfig, *, conv1d: bool, params: dict[str, int], linear_router: bool
) -> int | None:
    """Parameters of the adapter on one tensor (one layer, all its experts), or None."""
    r = c.r
    last = t.name.rsplit(".", 1)[-1]
    if t.component == "moe/router" and "gate" in params and t.name.endswith(".gate.weight"):
        return params["gate"] * sum(t.shape)  # a bare parameter [E, d]: A [r, d] + B [E, r]
    if t.matmul and len(t.shape) == 3 and t.experts and last in params:
        e, a, b = t.shape
        return params[last] * e * (a + b)
    if _is_linear(t, linear_router=linear_router):
        if not _matches(_module(t), c.targets):
            return None
        out_f = t.shape[1 if conv1d and t.component != "lm_head" else 0]
        per = r * sum(t.shape) + (out_f if c.dora else 0)  # A [r, in] + B [out, r] (+ m [out])
        return per * t.copies
    if t.component == "embed/tokens" and t.tied_to is None and len(t.shape) == 2:
        if not (c.embeddings or _matches(_module(t), c.targets)):
            return None
        return r * sum(t.shape) + (t.shape[1] if c.dora else 0)  # A [r, V] + B [d, r] (+ m [d])
    if c.experts and t.matmul and len(t.shape) == 3 and t.experts:
        e, a, b = t.shape
        return r * e * (a + b)  # A [r·E, a] + B [b, r·E]
    return None


def lora_count(spec: ModelSpec, config: LoraConfig) -> LoraCount:
    """Trainable and total parameters once peft has added ``config``'s adapters to ``spec``."""
    c = config
    c, params = _v4_bridge(spec.model_type, c)
    if c.dora and (params or c.experts):
        raise ParameterError(
            "{dora}: peft cannot put DoRA on fused expert tensors or routers reached as "
            "parameters (target_parameters); target the attention only, e.g. q_proj,v_proj"
        )
    kinds: dict[str, list[int]] = {}
    saved = 0
    names = {t.name for t, _ in spec.all_tensors()}
    for t, g in spec.all_tensors():
        times = len(g.layers) if isinstance(g, LayerGroup) else 1
        n = _adapter(t, c, conv1d=spec.model_type in CONV1D_MODELS, params=params,
                     linear_router=spec.model_type in LINEAR_ROUTERS)
        if n is not None:
            row = kinds.setdefault(t.component, [0, 0])
            row[0] += times * t.copies
            row[1] += times * n
        if c.modules_to_save and _matches(_module(t), c.modules_to_save):
            saved += t.numel * times
    for m in c.modules_to_save:
        if not any(_matches(n.rsplit(".", 1)[0], (m,)) for n in names):
            raise ParameterError(
                "{modules_to_save} {name}: no module of this model has that name", name=m
            )
    if not kinds and not saved:
        raise ParameterError(
            "{lora_targets} {names}: no module of this model matches (names as in the "
            "transformers module tree, e.g. q_proj; or all-linear)",
            names=",".join(c.targets),
        )
    adapters = tuple(AdapterKind(k, m, p) for k, (m, p) in kinds.items())
    return LoraCount(config, count(spec).total, adapters, saved)


def resolve_targets(spec: ModelSpec, targets: Sequence[str]) -> tuple[str, ...]:
    """``all-linear`` → the last names of every linear module but lm_head, as peft expands it."""
    if ALL_LINEAR not in targets:
        return tuple(targets)
    found: dict[str, None] = {}
    for t, _ in spec.all_tensors():
        if _is_linear(t, linear_router=spec.model_type in LINEAR_ROUTERS) and (
            t.component != "lm_head"
        ):
            found[_module(t).rsplit(".", 1)[-1]] = None
    bridged = MOE_V4_NAMES.get(MOE_V4_PATTERN.get(spec.model_type, ""), {})
    found.update(dict.fromkeys(bridged))  # peft adds the v4 expert and router names
    return tuple(found) + tuple(n for n in targets if n != ALL_LINEAR)
