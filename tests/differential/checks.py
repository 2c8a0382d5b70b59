"""One changed config against transformers: what llmcalc says beside what transformers builds.

A check takes a :class:`~variants.Variant` and returns an :class:`Outcome`; ``CHECKS`` names them
(one column each in ``bench/differential.py``). The count check builds the config on the meta
device (no storage) and requires llmcalc's total to equal the parameters' numel, its breakdown to
add up to it and its named tensors (a second path) to hold as many; where llmcalc refuses, the
refusal must be one line. The FLOPs and cache checks run the config cut to 1 and 2 layers for real
(measure.py): FlopCounterMode's count must equal ``llmcalc flops``' full prefill, the bytes of
transformers' cache ``llmcalc memory``'s.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import measure
from variants import Variant

from llmcalc import count, spec_from_dict
from llmcalc.errors import ConfigError, UsageError

EXACT = "exact"  # llmcalc's figure equals transformers'
REFUSED = "refused"  # llmcalc refuses in one line a config transformers builds
BOTH_REFUSE = "both refuse"  # transformers cannot build it either, and llmcalc refuses it
UNBUILT = "unbuilt"  # llmcalc counts a config transformers refuses to build
WRONG = "wrong"  # a different figure, a breakdown that does not add up, or a traceback
UNMEASURED = "unmeasured"  # figures no forward pass here can check (a whole model, too large)
KINDS = (EXACT, REFUSED, BOTH_REFUSE, UNBUILT, WRONG, UNMEASURED)


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

    from llmcalc.verify.reference import WHOLE_MODEL_AUTO, model_class

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


def transformers_model(config: dict[str, Any], spec: Any = None) -> Any:
    """``config`` built by transformers on the meta device (raises what transformers raises), by
    the class verify picks for ``spec`` where llmcalc read one (a whole model where llmcalc
    describes one, even when the type's default config is refused: Qwen4-Exp's default has no
    indexer heads, its cut to linear-attention layers does), else the type's."""
    import torch
    import transformers

    from llmcalc.verify.reference import model_class

    model_type = config["model_type"]
    fields = {k: v for k, v in config.items() if k != "model_type"}
    hf = transformers.AutoConfig.for_model(model_type, **fields)
    auto = model_class(spec) if spec is not None else _auto_class(model_type)
    with torch.device("meta"), _no_torch_init():
        return auto.from_config(hf)


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
        model = transformers_model(variant.config, spec if ours is not None else None)
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


# ---- FLOPs and cache bytes: a real forward pass of the config cut to 1 and 2 layers (measure.py) ---


def _forwards(
    variant: Variant,
) -> tuple[list[measure.Forward], dict[str, Any], str, Outcome | None]:
    """:func:`_measured`, where llmcalc refuses the forward pass of a config it counts
    (ModelSpec.forward_unmodelled): refused where transformers runs it, refused by both where it
    cannot (a Gemma 4 assistant runs only on its backbone's keys and values)."""
    forwards, config, shrunk, ended = _measured(variant)
    try:
        why = spec_from_dict(variant.config, name=variant.label).forward_unmodelled
    except (ConfigError, UsageError):
        why = ""
    if not why or (ended is not None and ended.kind != UNBUILT):
        return forwards, config, shrunk, ended
    return [], config, shrunk, Outcome(REFUSED if ended is None else BOTH_REFUSE, why)


def _measured(
    variant: Variant,
) -> tuple[list[measure.Forward], dict[str, Any], str, Outcome | None]:
    """The measured copies, the config they were cut from (:func:`measure.fitted`'s) and what it
    changed, or the outcome that ends the check before any comparison: llmcalc's refusal as the
    count check classes it, verify's refusal to build the cut copy (unmeasured), or what
    transformers raises (unbuilt). Where the smaller copy fails and the config itself fits, the
    config is run instead: its own failure is transformers'."""
    try:
        spec_from_dict(variant.config, name=variant.label)
    except (ConfigError, UsageError):
        return [], variant.config, "", count_outcome(variant)
    config, shrunk = measure.fitted(variant)
    error: Exception
    try:
        forwards = [measure.measure(config, depth=max(measure.DEPTHS))]
        try:  # a 1-layer cut transformers refuses (OLMo-Hybrid's needs an attention layer)
            forwards.insert(0, measure.measure(config, depth=min(measure.DEPTHS)))
        except Exception as e:  # noqa: BLE001 - the 2-layer copy is measured all the same
            note = f"{min(measure.DEPTHS)} layer: {_first_line(e)[:120]}"
            return forwards, config, ", ".join(x for x in (shrunk, note) if x), None
        return forwards, config, shrunk, None
    except ConfigError as e:
        if "transformers cannot" not in str(e):  # verify's limits, not transformers' refusal
            return [], config, shrunk, Outcome(UNMEASURED, str(e))
        error = e
    except Exception as e:  # noqa: BLE001 - whatever transformers raises is its refusal
        error = e
    try:
        too_large = bool(shrunk) and bool(measure._too_large(variant.config))
    except (ConfigError, UsageError):  # the config's cut copy is no model llmcalc reads
        too_large = True
    if too_large:  # the smaller copy, not the config: nothing said about the config itself
        return [], config, shrunk, Outcome(UNMEASURED, f"{shrunk}: {_first_line(error)}")
    if shrunk:
        try:
            forwards = [measure.measure(variant.config, depth=d) for d in measure.DEPTHS]
            return forwards, variant.config, "", None
        except ConfigError as e:
            if "transformers cannot" not in str(e):
                return [], variant.config, "", Outcome(UNMEASURED, str(e))
            error = e
        except Exception as e:  # noqa: BLE001 - whatever transformers raises is its refusal
            error = e
    return [], variant.config, "", Outcome(UNBUILT, _first_line(error))


def flops_outcome(variant: Variant) -> Outcome:
    """FlopCounterMode's count of a SEQ-token forward of ``variant`` cut to 1 and 2 layers against
    ``forward_flops_per_sequence``."""
    forwards, config, shrunk, ended = _forwards(variant)
    if ended is not None:
        return ended
    spec = spec_from_dict(config, name=variant.label)
    for f in forwards:
        try:
            cut = measure.cut_spec(spec, num_layers=f.depth)
            # flops' note: every pick counted as a real expert; those of a zero expert cost nothing
            ours = measure.ours_flops(cut) - (
                f.zero_picks * measure.expert_pick_flops(cut) if f.zero_picks else 0)
        except (ConfigError, UsageError) as e:  # a figure refused at this length (block-sparse)
            message = str(e)
            if "\n" in message:
                return Outcome(WRONG, f"refusal of more than one line: {message!r}")
            return Outcome(REFUSED, message)
        except Exception as e:  # noqa: BLE001 - a traceback is a defect, reported as such
            return Outcome(WRONG, f"{f.depth} layer(s): llmcalc raised {_first_line(e)}")
        if ours != f.flops:
            return Outcome(WRONG, f"{f.depth} layer(s): llmcalc {ours:,}, FlopCounterMode "
                                  f"{f.flops:,} ({(ours - f.flops) / f.flops:+.2%})")
    return Outcome(EXACT, _said(spec, shrunk))


def _said(spec: Any, *details: str) -> str:
    """An exact outcome's detail: what the measured copy changed, and what it measured."""
    moe = spec.moe
    dense = "experts run dense (flops' note)" if moe is not None and moe.dense_run else ""
    zero = ("picks of zero experts taken off (flops' note)" if moe is not None and moe.zero_experts
            else "")
    text = measure.TEXT_ONLY if measure.whole_model(spec) else ""
    return "; ".join(d for d in (*details, text, dense, zero) if d)


def cache_outcome(variant: Variant) -> Outcome:
    """The bytes transformers' cache holds after SEQ and SHORT tokens of ``variant`` cut to 1 and 2
    layers against ``memory``'s cache bytes."""
    forwards, config, shrunk, ended = _forwards(variant)
    if ended is not None:
        return ended
    spec = spec_from_dict(config, name=variant.label)
    ran = [f for f in forwards if not f.cache_error]
    if not ran:
        return Outcome(UNBUILT, f"transformers cannot run with a cache: {forwards[0].cache_error}")
    if all(not f.cache_bytes.get(measure.SEQ) and f.cache_layers == () for f in ran):
        ours = measure.ours_cache_bytes(measure.cut_spec(spec, num_layers=ran[0].depth),
                                        ctx=measure.SEQ, dtype=ran[0].dtype)
        if ours:  # OpenAI GPT: no cache at all, the prefix recomputed at every step
            return Outcome(UNBUILT, f"transformers keeps no cache for this model; llmcalc: {ours:,} B")
    for f in ran:
        cut = measure.cut_spec(spec, num_layers=f.depth)
        for n, theirs in f.cache_bytes.items():
            try:
                ours = measure.ours_cache_bytes(cut, ctx=n, dtype=f.dtype)
            except Exception as e:  # noqa: BLE001 - a traceback is a defect, reported as such
                return Outcome(WRONG, f"{f.depth} layer(s): llmcalc raised {_first_line(e)}")
            if ours != (theirs or 0):
                return Outcome(WRONG, f"{f.depth} layer(s), {n} tokens, {f.dtype.value}: llmcalc "
                                      f"{ours:,} B, transformers {theirs or 0:,} B "
                                      f"({', '.join(f.cache_layers) or 'no cache'})")
    # a depth transformers cannot run with a cache (a cut to linear-attention layers only)
    skipped = [f"{f.depth} layer(s) without a cache: {f.cache_error}" for f in forwards
               if f.cache_error]
    return Outcome(EXACT, _said(spec, shrunk, *skipped))


# the checks, one column each in bench/differential.py
CHECKS: dict[str, Callable[[Variant], Outcome]] = {
    "count": count_outcome, "flops": flops_outcome, "cache": cache_outcome,
}
