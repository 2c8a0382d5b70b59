"""What transformers and torch measure for one config, beside what llmcalc says, cut to 1 and 2 layers.

A config dict is validated by llmcalc, cut to each of :data:`DEPTHS` decoder layers (the layer
pattern's first layers: llmcalc.verify.reference.cut_fields), built on the CPU with random weights
(``attn_implementation="eager"``: torch 2.13's FlopCounterMode has no formula for the CPU SDPA
kernel; routed experts "eager", k per token as the router picks them) and run once on :data:`SEQ`
random tokens with a cache, then (the 2-layer copy) once on :data:`SHORT` tokens:

- **FLOPs**: FlopCounterMode's total for the :data:`SEQ`-token forward must equal
  ``forward_flops_per_sequence(cut, ctx=SEQ, causal=False)`` (``llmcalc flops``' "prefill, full
  attention" figure; its causal figure is what a kernel that skips masked pairs would do, which
  FlopCounterMode never sees).
- **cache**: the nbytes of every key, value and state tensor transformers' cache holds after each
  forward must equal ``memory(cut, ctx=n).kv_cache_bytes`` at n = :data:`SEQ` (and :data:`SHORT`),
  which together pin the bytes per token and the state per sequence. One documented relation:
  transformers' default DynamicCache keeps a sliding-window layer's last window − 1 tokens (the
  next token brings its own K and V; a window of 1 keeps every token), where llmcalc counts the
  whole window (what StaticCache preallocates): :func:`dynamic_cache_view` applies it.

The forwards run in bf16: the count is of matmul shapes, the same in any dtype, and bf16 tells a
state transformers keeps in float32 from one at the cache dtype. A model that cannot run in bf16
on the CPU is run in fp32. The measurements of one config are kept (:func:`measure`), so the
FLOPs and cache checks share them.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import re
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from variants import Variant

from llmcalc import spec_from_dict
from llmcalc.errors import ConfigError, UsageError
from llmcalc.formulas.flops import dense_run_flops_per_token, forward_flops_per_sequence
from llmcalc.formulas.memory import has_cross_attention, memory
from llmcalc.model.spec import ModelSpec
from llmcalc.units import DType

SEQ = 64  # tokens of the measured forward pass
SHORT = 32  # a second cached length: with SEQ, the bytes per token and the state per sequence
DEPTHS = (1, 2)
DTYPES = (DType.bf16, DType.fp32)  # the first that runs on the CPU
FIT_VOCAB = 1024
FIT_EXPERTS = (4, 8, 16, 32, 64)
FFN_WIDTH = re.compile(r"intermediate_size|ffn_hidden_size")  # feed-forward widths, halved to fit
FIT_HALVINGS = 4
FIT_MIN_WIDTH = 64


@dataclass(frozen=True)
class Forward:
    """One cut copy's measurements: FLOPs of a SEQ-token forward, and the cache bytes after SEQ
    and SHORT tokens (None: transformers returned no cache, or ``cache_error`` says why it could
    not run with one)."""

    depth: int
    dtype: DType
    flops: int
    flops_by_op: dict[str, int]
    cache_bytes: dict[int, int | None]
    cache_layers: tuple[str, ...] = ()
    cache_error: str = ""
    zero_picks: int = 0  # routed picks of zero-computation experts in the SEQ-token forward


def cut_spec(spec: ModelSpec, *, num_layers: int) -> ModelSpec:
    """``spec`` with its config cut to ``num_layers`` decoder layers, as the measured copy is."""
    from llmcalc.verify.reference import cut_fields

    return spec_from_dict({**spec.config, **cut_fields(spec, num_layers=num_layers)}, name=spec.name)


def _run(spec: ModelSpec, *, depth: int, dtype: DType) -> Forward:
    from llmcalc.verify.reference import build_random_model, run_forward

    model = build_random_model(spec, num_layers=depth, dtype=dtype.value)
    if hasattr(model, "set_default_language"):  # X-MOD: one language's adapters
        model.set_default_language(next(iter(model.config.languages)))
    # a decoder's cross-attention to an encoder it lacks (TrOCR); a whole model's to its images
    # stays idle on text (Mllama: flops' "no image" note)
    encoder_states = has_cross_attention(spec) and not whole_model(spec)
    lengths = (SEQ, SHORT) if depth == max(DEPTHS) else (SEQ,)
    zero = _count_zero_picks(model)
    try:
        runs = {n: run_forward(model, seq_len=n, use_cache=True, encoder_states=encoder_states)
                for n in lengths}
    except Exception:  # noqa: BLE001 - a cut to linear-attention layers: give the positions
        zero.clear()
        try:
            with _linear_only_cache():
                runs = {n: run_forward(model, seq_len=n, use_cache=True, position_ids=True,
                                       encoder_states=encoder_states)
                        for n in lengths}
        except Exception as e:  # noqa: BLE001 - it cannot run with a cache: FLOPs without
            zero.clear()
            plain = run_forward(model, seq_len=SEQ, encoder_states=encoder_states)
            error = f"{type(e).__name__}: {e}".splitlines()[0][:300]
            return Forward(depth, dtype, plain.flops, plain.flops_by_op, {}, (), error,
                           zero.get(SEQ, 0))
    if all(m.kv_cache_bytes is None for m in runs.values()) and _keeps_states(model):
        # RecurrentGemma returns no cache: given one, its attention layers fill it and its
        # recurrent layers keep their states in their modules (verify.MODULE_STATES)
        from transformers import DynamicCache

        with _linear_only_cache():
            runs = {n: run_forward(model, seq_len=n, use_cache=True, position_ids=True,
                                   cache=DynamicCache(config=model.config)) for n in lengths}
    full = runs[SEQ]
    return Forward(depth, dtype, full.flops, full.flops_by_op,
                   {n: m.kv_cache_bytes for n, m in runs.items()}, full.cache_layers,
                   zero_picks=zero.get(SEQ, 0))


def _keeps_states(model: Any) -> bool:
    from llmcalc.verify.reference import MODULE_STATES

    return any(hasattr(m, name) for m in model.modules() for name in MODULE_STATES)


def _count_zero_picks(model: Any) -> dict[int, int]:
    """Picks of zero-computation experts (LongCat-Flash's identities, no FLOPs) per forward, keyed
    by the tokens it ran: an experts module's routed indices past its real experts."""
    counts: dict[int, int] = {}

    def hook(module: Any, args: tuple[Any, ...]) -> None:
        hidden, indices = args[0], args[1]
        tokens = hidden.shape[0]
        counts[tokens] = counts.get(tokens, 0) + int((indices >= module.num_routed_experts).sum())

    for module in model.modules():
        if getattr(module, "zero_expert_num", 0) and hasattr(module, "num_routed_experts"):
            module.register_forward_pre_hook(hook)
    return counts


def expert_pick_flops(spec: ModelSpec) -> int:
    """FLOPs of one token through one routed expert of one layer: 2 × one expert's elements."""
    group = next(g for g in spec.layer_groups if any(t.experts for t in g.tensors))
    return sum(2 * t.numel // t.experts for t in group.tensors if t.matmul and t.experts)


@contextlib.contextmanager
def _linear_only_cache() -> Iterator[None]:
    """A cache of linear-attention (SSM) layers only: transformers' mask helper asks it for the
    tokens before the prefill and the mask's sizes, which only attention layers keep, and raises
    (``get_seq_length`` …); in a prefill they are 0 and the query's length, given instead."""
    from transformers.cache_utils import Cache

    real_offset, real_sizes = Cache.get_query_offset, Cache.get_mask_sizes

    def offset(self: Any, layer_idx: int = 0) -> int:
        try:
            return int(real_offset(self, layer_idx))
        except ValueError:
            return 0

    def sizes(self: Any, query_length: int, layer_idx: int = 0) -> tuple[int, int]:
        try:
            return real_sizes(self, query_length, layer_idx)  # type: ignore[no-any-return]
        except ValueError:
            return query_length, 0

    Cache.get_query_offset, Cache.get_mask_sizes = offset, sizes  # type: ignore[method-assign]
    try:
        yield
    finally:
        Cache.get_query_offset, Cache.get_mask_sizes = real_offset, real_sizes  # type: ignore[method-assign]


@functools.lru_cache(maxsize=8)
def _measure(config_json: str, depth: int) -> Forward:
    spec = spec_from_dict(json.loads(config_json), name="measured")
    error: Exception | None = None
    for dtype in DTYPES:
        try:
            return _run(spec, depth=depth, dtype=dtype)
        except Exception as e:  # noqa: BLE001 - bf16 not on the CPU: the next dtype
            error = _released(e)
        finally:
            gc.collect()  # the copy just run, before the next is built (see _released)
    assert error is not None
    raise error


def _released(error: BaseException) -> BaseException:
    """``error`` with the finished frames of its traceback (and of those it was raised from)
    cleared: they hold the model that failed. A transformers model is held in reference cycles
    that only the collector frees, so each copy transformers could not run stayed in memory: the
    sweep's EXAONE-MoE worker, 64 experts a layer in bf16 then fp32, reached 24 GB and was killed."""
    todo, seen = [error], set()
    while todo:  # the errors it was raised from and during, each once (a chain may loop)
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        traceback.clear_frames(e.__traceback__)  # type: ignore[arg-type]
        todo += [x for x in (e.__cause__, e.__context__, *getattr(e, "exceptions", ()))
                 if isinstance(x, BaseException)]
    return error


def _too_large(config: dict[str, Any]) -> str:
    """Why ``config``'s cut copy is too large to build here ("" where it fits): more than verify's
    CPU limit of weights, held in bf16 (verify's own check assumes fp32)."""
    from llmcalc.formulas.counting import count
    from llmcalc.verify.reference import MAX_CPU_BYTES

    spec = _spec(config)
    if spec is None:
        return ""
    try:
        nbytes = 2 * count(cut_spec(spec, num_layers=max(DEPTHS))).total
    except (ConfigError, UsageError) as e:  # llmcalc reads no cut copy of it
        return f"the {max(DEPTHS)}-layer copy: {e}"
    if nbytes <= MAX_CPU_BYTES:
        return ""
    return (f"the {max(DEPTHS)}-layer copy needs {nbytes / 1024**3:,.1f} GiB of bf16 weights, "
            f"more than {MAX_CPU_BYTES // 1024**3} GiB")


_HALF = object()  # _set's value: half the old one


def _set(config: dict[str, Any], want: Any, value: Any) -> dict[str, Any]:
    """``config`` (sub-configs walked into) with every field ``want(key, old)`` picks set to
    ``value`` (:data:`_HALF`: half its old value)."""
    out = {}
    for key, old in config.items():
        if isinstance(old, dict):
            out[key] = _set(old, want, value)
        elif want(key, old):
            out[key] = old // 2 if value is _HALF else value
        else:
            out[key] = old
    return out


def fitted(variant: Variant) -> tuple[dict[str, Any], str]:
    """``variant``'s config with what its change left alone made smaller, and what that was (""
    when nothing): the vocabulary to FIT_VOCAB (the lm_head is most of a cut copy's work, and
    the simplest of its matmuls), then where the copy would still exceed verify's CPU limit the
    routed experts to the fewest of FIT_EXPERTS (dividing the original, at least 2k) that fit. A
    different config, checked the same way: the figures still follow from it."""
    config = variant.config
    done = []
    if "vocab" not in variant.change:
        smaller = _set(config, lambda key, old: key == "vocab_size" and isinstance(old, int)
                       and old > FIT_VOCAB, FIT_VOCAB)
        # token ids past the smaller vocabulary (a padding_idx must be inside the table)
        smaller = _set(smaller, lambda key, old: key.endswith("token_id") and isinstance(old, int)
                       and old >= FIT_VOCAB, FIT_VOCAB - 1)
        if smaller != config and _spec(smaller) is not None:
            config = smaller
            done.append(f"vocab_size={FIT_VOCAB}")
    spec = _spec(config)
    if (spec is not None and spec.moe is not None and spec.moe.experts_per_tok is not None
            and _too_large(config) and "expert" not in variant.change):
        e, k = spec.moe.num_experts, spec.moe.experts_per_tok
        for fewer in (n for n in FIT_EXPERTS if 2 * k <= n < e and e % n == 0):
            smaller = _set(config, lambda key, old: "expert" in key and old == e, fewer)
            if (s := _spec(smaller)) is not None and s.moe is not None and s.moe.num_experts == fewer:
                config = smaller
                done.append(f"{fewer} routed experts")
                if not _too_large(config):
                    break
    # then the feed-forward widths halved (dense, shared and routed experts' alike) until it fits
    # (all but a width the change set: the change is what is checked)
    halved = 0
    changed = set(re.findall(r"([\w.]+)=", variant.change))
    keep = {path.rsplit(".", 1)[-1] for path in changed}
    for _ in range(FIT_HALVINGS):
        if spec is None or not _too_large(config):
            break
        smaller = _set(config, lambda key, old: bool(FFN_WIDTH.search(key)) and key not in keep
                       and isinstance(old, int) and not isinstance(old, bool)
                       and old > FIT_MIN_WIDTH, _HALF)
        if _spec(smaller) is None:
            break
        config, halved = smaller, halved + 1
    if halved:
        done.append(f"feed-forward widths / {2**halved}")
    return config, ", ".join(done)


def _spec(config: dict[str, Any]) -> ModelSpec | None:
    try:
        return spec_from_dict(config, name="measured")
    except (ConfigError, UsageError):
        return None


def measure(config: dict[str, Any], *, depth: int) -> Forward:
    """``config`` cut to ``depth`` layers, built and run (kept for the next check of the same
    config). Raises llmcalc's ConfigError where verify refuses to build the copy (a whole model, or
    more weights than verify's CPU limit), else what transformers raises."""
    from llmcalc.verify.reference import LAYER_COUNT_FIELDS, check_buildable

    spec = spec_from_dict(config, name="measured")
    check_buildable(spec)
    if whole_model(spec) and not isinstance(config.get("text_config"), dict) and not any(
            f in config for f in LAYER_COUNT_FIELDS):  # Phi-4-multimodal's are at the top
        raise ConfigError("measured", "a whole model without its text_config: no language model "
                                      "fields to cut")
    if reason := _too_large(config):
        raise ConfigError("measured", reason)
    return _measure(json.dumps(config, sort_keys=True), depth)


def whole_model(spec: ModelSpec) -> bool:
    """A language model with towers (vision, audio): measured on text alone, its towers idle."""
    return bool(spec.parts) and spec.main_part == "language"


TEXT_ONLY = "text only: the whole model run on text tokens, its towers idle"


def ours_flops(spec: ModelSpec) -> int:
    """llmcalc's prefill of one SEQ-token sequence over all n² pairs (what FlopCounterMode sees),
    plus, where transformers multiplies every token by all routed experts (``MoE.dense_run``:
    Llama 4), the FLOPs ``llmcalc flops``' note gives for the experts a token is not routed to."""
    return (forward_flops_per_sequence(spec, ctx=SEQ, causal=False)
            + SEQ * dense_run_flops_per_token(spec))


def dynamic_cache_view(spec: ModelSpec) -> ModelSpec:
    """``spec`` as transformers' DynamicCache holds it: each sliding window w keeps w − 1 tokens
    (w = 1: every token)."""
    groups = tuple(
        g if g.attention is None or g.attention.window is None
        else replace(g, attention=replace(
            g.attention, window=g.attention.window - 1 if g.attention.window > 1 else None))
        for g in spec.layer_groups
    )
    return replace(spec, layer_groups=groups)


def ours_cache_bytes(spec: ModelSpec, *, ctx: int, dtype: DType) -> int:
    """``llmcalc memory``'s cache bytes for one sequence of ``ctx`` tokens, under the DynamicCache
    relation (:func:`dynamic_cache_view`)."""
    return memory(dynamic_cache_view(spec), ctx=ctx, dtype=dtype).kv_cache_bytes
