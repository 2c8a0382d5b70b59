"""One changed config against transformers: what llmcalc says beside what transformers builds.

A check takes a :class:`~variants.Variant` and returns an :class:`Outcome`; ``CHECKS`` names them
(one column each in ``bench/differential.py``). The count check builds the config on the meta
device (no storage) and requires llmcalc's total to equal the parameters' numel, its breakdown to
add up to it and its named tensors (a second path) to hold as many; where llmcalc refuses, the
refusal must be one line.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from variants import Variant

from llmcalc import count, spec_from_dict
from llmcalc.errors import ConfigError, UsageError

EXACT = "exact"  # llmcalc's figure equals transformers'
REFUSED = "refused"  # llmcalc refuses in one line a config transformers builds
BOTH_REFUSE = "both refuse"  # transformers cannot build it either, and llmcalc refuses it
UNBUILT = "unbuilt"  # llmcalc counts a config transformers refuses to build
WRONG = "wrong"  # a different figure, a breakdown that does not add up, or a traceback
KINDS = (EXACT, REFUSED, BOTH_REFUSE, UNBUILT, WRONG)


@dataclass(frozen=True)
class Outcome:
    kind: str
    detail: str = ""  # the refusal, transformers' error, or the two figures


def _first_line(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    return text.splitlines()[0][:300] if text.strip() else type(e).__name__


@functools.cache
def _auto_class(model_type: str) -> Any:
    """The auto class that builds ``model_type``'s whole model, as verify picks it for the type's
    default config (a whole model's class where llmcalc describes parts, else the causal LM)."""
    import transformers
    from variants import default_config

    from llmcalc.verify import WHOLE_MODEL_AUTO, model_class

    try:
        return model_class(spec_from_dict(default_config(model_type), name=model_type))
    except (ConfigError, UsageError):
        if model_type in transformers.AutoModelForCausalLM._model_mapping._model_mapping:
            return transformers.AutoModelForCausalLM
        for name in WHOLE_MODEL_AUTO:
            auto = getattr(transformers, name)
            if model_type in auto._model_mapping._model_mapping:
                return auto
        return transformers.AutoModel


@contextlib.contextmanager
def _no_torch_init() -> Iterator[None]:
    """torch.nn.init's functions as no-ops: a meta tensor holds no values to fill, and filling
    them is most of a meta build's time. (transformers' own init_weights, which ties weights,
    still runs.)"""
    import torch
    from transformers.initialization import TORCH_INIT_FUNCTIONS

    saved = {name: getattr(torch.nn.init, name) for name in TORCH_INIT_FUNCTIONS}
    try:
        for name in saved:
            setattr(torch.nn.init, name, lambda tensor, *args, **kwargs: tensor)
        yield
    finally:
        for name, fn in saved.items():
            setattr(torch.nn.init, name, fn)


def transformers_model(config: dict[str, Any]) -> Any:
    """``config`` built by transformers on the meta device (raises what transformers raises)."""
    import torch
    import transformers

    model_type = config["model_type"]
    fields = {k: v for k, v in config.items() if k != "model_type"}
    hf = transformers.AutoConfig.for_model(model_type, **fields)
    with torch.device("meta"), _no_torch_init():
        return _auto_class(model_type).from_config(hf)


def count_outcome(variant: Variant) -> Outcome:
    """llmcalc's total of ``variant`` against the numel of transformers' model."""
    try:
        spec = spec_from_dict(variant.config, name=variant.label)
        pc = count(spec)
        ours: int | None = pc.total
    except (ConfigError, UsageError) as e:
        message = str(e)
        if "\n" in message:
            return Outcome(WRONG, f"refusal of more than one line: {message!r}")
        ours, refusal = None, message
    except Exception as e:  # noqa: BLE001 - a traceback is a defect, reported as such
        return Outcome(WRONG, f"llmcalc raised {_first_line(e)}")
    try:
        model = transformers_model(variant.config)
        params = dict(model.named_parameters())
        real = sum(p.numel() for p in params.values())
    except Exception as e:  # noqa: BLE001 - whatever transformers raises is its refusal
        return Outcome(BOTH_REFUSE if ours is None else UNBUILT, _first_line(e))
    if ours is None:
        return Outcome(REFUSED, refusal)
    if ours != real:
        return Outcome(WRONG, f"llmcalc {ours:,}, transformers {real:,}")
    if sum(pc.breakdown.values()) != ours:
        return Outcome(WRONG, f"breakdown adds up to {sum(pc.breakdown.values()):,}, not {ours:,}")
    named = sum(math.prod(shape) for _, shape in spec.named_shapes())
    if named != real:
        return Outcome(WRONG, f"named tensors hold {named:,}, the model {real:,}")
    return Outcome(EXACT)


# the checks, one column each in bench/differential.py
CHECKS: dict[str, Callable[[Variant], Outcome]] = {"count": count_outcome}
