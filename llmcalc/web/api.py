"""The page's API as plain functions: a request mapping in, the CLI's ``--json`` figures out.

Every figure comes from the functions the CLI calls (``load_spec``/``spec_from_raw``, ``count``,
``flops``, ``memory``, ``fit``, ``plan_training``) rendered by the same ``*_json`` functions, with
each panel's equivalent ``llmcalc …`` command line beside it, so the page and the CLI agree to the
unit. Bad input raises the same :class:`LLMCalcError` the CLI prints as one line.
"""

from __future__ import annotations

import dataclasses
import shlex
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llmcalc.inputs import bundled, family_defaults, scratch
from llmcalc.formulas.activations import serving_kernel
from llmcalc.inputs.config import read_config, spec_from_raw
from llmcalc.formulas.counting import count
from llmcalc.errors import ConfigError, UsageError
from llmcalc.formulas.flops import flops
from llmcalc.planning.hardware import ACCELERATORS, Accelerator, require, resolve, usable_memory
from llmcalc.limits import shown
from llmcalc.formulas.memory import kv_cache_bytes, memory
from llmcalc.planning.serving import ServingFit, fit
from llmcalc.formulas.quant import FORMAT_NAMES, WeightFormat, kv_dtype_for, resolve_format
from llmcalc.render.count import count_json, provenance
from llmcalc.render.fit import fit_json
from llmcalc.render.flops import flops_json
from llmcalc.render.memory import memory_json
from llmcalc.render.train import train_json
from llmcalc.formulas.series import context_grid, flops_series, memory_series
from llmcalc.model.spec import ModelSpec, Origin
from llmcalc.planning.training import DEFAULT_MFU, parallelism, plan_training
from llmcalc.units import MAX_NUMBER, DType, parse_context, parse_count, parse_dtype

PASTED = "pasted config"
MAX_SETS = 64
# dtype/kv_dtype None: the checkpoint's own format (its quantization_config), as the CLI reads it
DEFAULTS = {"ctx": "4k", "batch": "1", "dtype": None, "kv_dtype": None, "gpu": "h100",
            "gpu_mem": None, "gpus": 1, "tokens": None, "ctx_max": "128k"}
MAX_GPUS_SEARCHED = 1 << 16  # the verdict's smallest GPU count is looked for up to here
SCRATCH_TYPES = ("gpt2", "llama", "mixtral", "gpt_neox")
# a knob shown for a loaded model → the config keys that hold it, first match wins
KNOB_KEYS = {
    "d_model": ("hidden_size", "n_embd", "d_model"),
    "layers": ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
}


def catalog() -> dict[str, Any]:
    """What the page offers: bundled models, accelerators, dtypes, from-scratch starting points."""
    return {
        "models": [p.stem for p in bundled.paths()],
        "model_types": family_defaults.model_types(),
        "gpus": [{"key": a.key, "name": a.name, "memory_bytes": a.memory_bytes, "kind": a.kind,
                  "unified_bytes": a.unified_bytes}
                 for a in ACCELERATORS.values()],
        "dtypes": [d.value for d in DType],
        "weight_formats": [*(d.value for d in DType), *FORMAT_NAMES],
        "scratch": {mt: dataclasses.asdict(scratch.knobs_of(mt)) for mt in SCRATCH_TYPES},
        "defaults": DEFAULTS,
    }


@dataclasses.dataclass(frozen=True)
class Resolved:
    """A model from the page, and how the CLI names the same one."""

    spec: ModelSpec
    model_arg: str  # MODEL on the command line
    sets: tuple[str, ...]  # --set fields
    label: str = ""  # how the page names it (default: the spec's name)


def resolve_model(model: Mapping[str, Any], sets: list[str]) -> Resolved:
    """``{"name": …}`` (bundled, model type or Hub id), ``{"text": …}`` or ``{"scratch": knobs}``."""
    if len(sets) > MAX_SETS or not all(isinstance(s, str) for s in sets):
        raise UsageError(f"set: at most {MAX_SETS} key=value strings")
    if "scratch" in model:
        knobs = _knobs(model["scratch"])
        model_type, built = scratch.build(knobs)
        all_sets = (*built, *sets)
        return Resolved(spec_from_raw(read_config(model_type, paths=False), overrides=all_sets),
                        model_type, all_sets,
                        f"from scratch ({model_type})")
    if "text" in model:
        return Resolved(_pasted(_str(model, "text"), _str(model, "format", "json"), sets),
                        "config.json" if model.get("format", "json") == "json" else "config.yaml",
                        tuple(sets))
    name = _str(model, "name").strip()
    if not name:
        raise UsageError("model: give a bundled name, a model type or a Hugging Face id")
    if bundled.find(name) is None and _is_path(name):
        raise UsageError(f"{shown(name)}: a path on the server; paste the config's text instead")
    # a name is never looked up on the server's file system (its working folder included)
    return Resolved(spec_from_raw(read_config(name, paths=False), overrides=sets), name,
                    tuple(sets))


def _is_path(name: str) -> bool:
    """Whether a name reads as a path (it is refused unread, never looked up)."""
    return (name.startswith((".", "/", "~", "\\")) or ".." in name or "\\" in name
            or name.endswith((".json", ".yaml", ".yml")))


def needs_hub(request: Mapping[str, Any]) -> bool:
    """Whether ``request`` names a model that is looked up in the Hugging Face cache or on the
    Hub (an ``org/name`` that is no bundled name)."""
    model = request.get("model")
    name = model.get("name") if isinstance(model, Mapping) else None
    return isinstance(name, str) and "/" in name and bundled.find(name) is None


def _pasted(text: str, fmt: str, sets: list[str]) -> ModelSpec:
    """Pasted text through the file loader (its caps and messages), named "pasted config"."""
    if fmt not in ("json", "yaml"):
        raise UsageError(f"format {fmt!r}: must be json or yaml")
    with tempfile.TemporaryDirectory(prefix="llmcalc-") as folder:
        path = Path(folder) / f"config.{fmt}"
        path.write_text(text, encoding="utf-8")
        try:
            raw = read_config(str(path))
        except ConfigError as e:
            raise ConfigError(PASTED, e.detail) from None
    named = raw.name not in ("config", path.name, Path(folder).name)
    raw = dataclasses.replace(raw, path=Path(PASTED), label=PASTED,
                              name=raw.name if named else PASTED, origin=Origin("path", PASTED))
    return spec_from_raw(raw, overrides=sets)


def _knobs(data: Any) -> scratch.Knobs:
    if not isinstance(data, Mapping):
        raise UsageError("scratch: expected a mapping of knobs")
    values: dict[str, Any] = {}
    for f in dataclasses.fields(scratch.Knobs):
        if f.name not in data:
            continue
        v = data[f.name]
        if f.name in ("ffn", "norm", "positions"):
            if not isinstance(v, str):
                raise UsageError(f"{f.name}: expected text")
            values[f.name] = v.lower()
        elif f.name == "tied":
            values[f.name] = bool(v)
        elif f.name == "head_dim" and v in (None, "", 0):
            values[f.name] = None
        else:
            if isinstance(v, bool) or not isinstance(v, int | str) or len(str(v)) > 20:
                raise UsageError(f"{f.name}: expected a whole number, got {shown(v)}")
            try:
                number = int(v)
            except ValueError:
                raise UsageError(f"{f.name}: expected a whole number, got {shown(v)}") from None
            if not 0 <= number <= 2**40:
                raise UsageError(f"{f.name} {number}: out of range")
            values[f.name] = number
    missing = [f.name for f in dataclasses.fields(scratch.Knobs)
               if f.name not in values and f.default is dataclasses.MISSING]
    if missing:
        raise UsageError(f"scratch: missing {', '.join(missing)}")
    return scratch.Knobs(**values)


def _str(data: Mapping[str, Any], key: str, default: str | None = None) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise UsageError(f"{key}: expected text")
    return value


def _opt(request: Mapping[str, Any], key: str) -> Any:
    value = request.get(key, DEFAULTS[key])
    return DEFAULTS[key] if value in (None, "") and DEFAULTS[key] is not None else value


def calculate(request: Mapping[str, Any]) -> dict[str, Any]:
    """Every panel's figures for one model, as the CLI's --json prints them."""
    model = request.get("model")
    if not isinstance(model, Mapping):
        raise UsageError("model: expected {name}, {text} or {scratch}")
    sets = request.get("set") or []
    if not isinstance(sets, list):
        raise UsageError("set: expected a list of key=value strings")
    r = resolve_model(model, sets)
    spec = r.spec
    ctx_text, batch_text = str(_opt(request, "ctx")), str(_opt(request, "batch"))
    ctx = parse_context(ctx_text, option="--ctx")
    batch = parse_count(batch_text, option="--batch")
    dtype_text, kv_text = _text_or_none(request, "dtype"), _text_or_none(request, "kv_dtype")
    # each model's stored format unless a dtype is named (memory/fit read it so)
    dtype = resolve_format(spec, dtype_text)
    kv_dtype = (kv_dtype_for(dtype) if kv_text is None
                else parse_dtype(kv_text, option="--kv-dtype"))
    gpu, gpu_mem = _text_or_none(request, "gpu"), _text_or_none(request, "gpu_mem")
    gpus = _opt(request, "gpus")
    if isinstance(gpus, bool) or not isinstance(gpus, int) or not 1 <= gpus <= MAX_NUMBER:
        raise UsageError(f"--gpus {shown(gpus)}: expected a whole number from 1 to 2^53 - 1")
    tokens_text = request.get("tokens") or None
    tokens = None if tokens_text is None else parse_count(str(tokens_text), option="--tokens")
    ctx_max_text = str(_opt(request, "ctx_max"))
    ctx_max = parse_context(ctx_max_text, option="--ctx-max")
    acc = resolve(gpu, memory=gpu_mem, needs=("memory",))
    require(acc, "memory_bytes")

    pc = count(spec)
    f = flops(spec, ctx=ctx, batch=batch, tokens=tokens)
    m = memory(spec, ctx=ctx, batch=batch, dtype=dtype, kv_dtype=kv_dtype)
    kernel = serving_kernel(spec)  # the prefill, as `llmcalc fit` counts it
    sf = fit(spec, accelerator=acc, gpus=gpus, dtype=dtype, kv_dtype=kv_dtype, batch=batch,
             attention=kernel)
    # the largest batch at the context (fit --ctx); a model that caches nothing has no bound
    cached = kv_cache_bytes(spec, batch=1, ctx=ctx, dtype=kv_dtype) > 0
    at_ctx = fit(spec, accelerator=acc, gpus=gpus, dtype=dtype, kv_dtype=kv_dtype,
                 ctx=ctx, attention=kernel) if cached else None
    # training time needs the card's FLOP rate (the CLI's train asks for --gpu-flops without it)
    plan = plan_training(spec, tokens=tokens, ctx=ctx, accelerator=acc, mfu=DEFAULT_MFU,
                         par=parallelism(gpus=gpus)) if acc.peak_flops > 0 else None
    # the charts reach the chosen context, and hold a point at it
    grid = tuple(sorted({*context_grid(max(ctx_max, ctx)), ctx}))
    fs = flops_series(spec, grid)
    ms = memory_series(spec, grid, batch=batch, dtype=dtype, kv_dtype=kv_dtype)

    def cli(command: str, *options: str) -> str:
        words = ["llmcalc", *command.split(), r.model_arg]
        for s in r.sets:
            words += ["--set", s]
        return shlex.join([*words, *options])

    dt = [*([] if dtype_text is None else ["--dtype", dtype_text]),
          *([] if kv_text is None else ["--kv-dtype", kv_text])]
    hw = [*([] if gpu is None else ["--gpu", gpu]),
          *([] if gpu_mem is None else ["--gpu-mem", gpu_mem]), "--gpus", str(gpus)]
    tok = [] if tokens_text is None else ["--tokens", str(tokens_text)]
    memory_figures = {**memory_json(m), **provenance(spec)}  # as the CLI's memory --json
    return {
        "label": r.label or spec.name,
        "verdict": verdict(spec, memory_figures, at_ctx, sf, acc, dtype=dtype,
                           kv_dtype=kv_dtype),
        "count": count_json(spec, pc),
        "flops": {**flops_json(f), **provenance(spec)},  # as the CLI's flops/memory --json
        "memory": memory_figures,
        "fit": fit_json(spec, sf, accelerator=acc, dtype=dtype, kv_dtype=kv_dtype),
        "fit_at_ctx": None if at_ctx is None else fit_json(spec, at_ctx, accelerator=acc,
                                                           dtype=dtype, kv_dtype=kv_dtype),
        "train": None if plan is None else train_json(spec, plan),
        "series": {
            "ctx": list(fs.ctx),
            "weight_flops_per_token": fs.weight_flops_per_token,
            "attention_flops_per_token": list(fs.attention_flops_per_token),
            "crossover_ctx": fs.crossover_ctx,
            "weights_bytes": ms.weights_bytes,
            "kv_cache_bytes": list(ms.kv_cache_bytes),
            "usable_bytes": sf.usable,  # the fit's budget: memory less its headroom
            "chosen_ctx": ctx,
            "context_limit": sf.context_limit,
        },
        "commands": {
            "count": cli("count", "--json"),
            "flops": cli("flops", "--ctx", ctx_text, "--batch", str(batch), *tok, "--json"),
            "memory": cli("memory", "--ctx", ctx_text, "--batch", str(batch), *dt, "--json"),
            "fit": cli("fit", *hw, "--batch", str(batch), *dt, "--json"),
            **({} if at_ctx is None else
               {"fit_at_ctx": cli("fit", *hw, "--ctx", ctx_text, *dt, "--json")}),
            **({} if plan is None else
               {"train": cli("train", *hw, "--ctx", ctx_text, *tok, "--json")}),
            "plot": cli("plot flops", "--ctx-max", ctx_max_text, "-o", "chart.svg"),
        },
        "knobs": _knob_keys(spec),
    }


def verdict(spec: ModelSpec, mem: Mapping[str, Any], at_ctx: ServingFit | None,
            at_batch: ServingFit, acc: Accelerator, *, dtype: WeightFormat, kv_dtype: DType
            ) -> dict[str, Any]:
    """The first screen's answer: whether the chosen batch × context fits the chosen GPUs (as
    ``fit --ctx`` decides it: weights + cache within memory less headroom), the bar's parts, the
    smallest GPU count that fits, and the largest batch (at the context) and context (at the
    batch; None where nothing is cached, so memory bounds no batch)."""
    ctx, batch = int(mem["ctx"]), int(mem["batch"])
    state = batch * int(mem["state_bytes_per_sequence"])
    f = at_batch  # weights, capacity and budget do not depend on what fit solves for
    need = f.weights + kv_cache_bytes(spec, batch=batch, ctx=ctx, dtype=kv_dtype)
    usable = f.usable
    return {
        "fits": need <= usable,
        "ctx": ctx,
        "batch": batch,
        "dtype": dtype.value,
        "kv_dtype": kv_dtype.value,
        "accelerator": acc.name,
        "gpus": f.gpus,
        "memory_bytes": f.capacity,
        "headroom": f.headroom,
        "usable_bytes": usable,
        "needed_bytes": need,
        "parts": {  # the stacked bar, left to right; headroom and free close it to memory_bytes
            "weights": f.weights,
            "kv_cache": need - f.weights - state,
            "recurrent_state": state,
            "headroom": f.capacity - usable,
            "free": max(0, usable - need),
        },
        "min_gpus": _min_gpus(need, acc, f.headroom),
        "max_batch": None if at_ctx is None else at_ctx.batch,
        "batch_unbounded": at_ctx is None,
        "max_ctx": at_batch.ctx,
        "limited_by_context_limit": at_batch.limited_by_context_limit,
        "context_limit": at_batch.context_limit,
    }


def _min_gpus(need: int, acc: Accelerator, headroom: float) -> int | None:
    """Smallest n whose usable memory (n cards less headroom) holds ``need``; None past
    :data:`MAX_GPUS_SEARCHED`."""
    lo, hi = 1, MAX_GPUS_SEARCHED
    if usable_memory(hi * acc.memory_bytes, headroom=headroom) < need:
        return None
    while lo < hi:  # usable memory grows with n: the first n that holds it
        mid = (lo + hi) // 2
        if usable_memory(mid * acc.memory_bytes, headroom=headroom) >= need:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _text_or_none(request: Mapping[str, Any], key: str) -> str | None:
    """An optional text setting: absent, null or blank is None (the CLI's default)."""
    value = request.get(key, DEFAULTS.get(key))
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str) or len(value) > 100:
        raise UsageError(f"{key}: expected text")
    return value.strip()


def _knob_keys(spec: ModelSpec) -> dict[str, dict[str, Any]]:
    out = {}
    for knob, keys in KNOB_KEYS.items():
        key = next((k for k in keys if k in spec.config), None)
        if key is not None:
            out[knob] = {"key": key, "value": spec.config[key]}
    return out
