"""The page's API as plain functions: a request mapping in, the CLI's ``--json`` figures out.

Every figure comes from the functions the CLI calls (``load_spec``/``spec_from_raw``, ``count``,
``flops``, ``memory``, ``fit``, ``latency``, ``plan_training``, ``plan_finetune``/``fit_finetune``,
and ``local.what_fits`` for what fits a machine) rendered by the same ``*_json`` functions, with
each panel's equivalent ``llmcalc …`` command line beside it, so the page and the CLI agree to the
unit. Bad input raises the same :class:`LLMCalcError` the CLI prints as one line.
"""

from __future__ import annotations

import dataclasses
import shlex
import tempfile
from collections.abc import Callable, Mapping
from enum import Enum
from pathlib import Path
from typing import Any, TypeVar

from llmcalc.choices import BACKENDS, EngineName, parse_backend, parse_engine
from llmcalc.errors import ConfigError, LLMCalcError, ParameterError, UsageError
from llmcalc.formulas.activations import serving_kernel
from llmcalc.formulas.counting import count
from llmcalc.formulas.flops import flops
from llmcalc.formulas.lora import (
    ALL_LINEAR,
    LoraConfig,
    lora_config,
    lora_count,
    resolve_targets,
)
from llmcalc.formulas.memory import kv_cache_bytes, memory
from llmcalc.formulas.quant import (
    FORMAT_NAMES,
    WeightFormat,
    kv_dtype_for,
    resolve_format,
    serving_kv_default,
)
from llmcalc.formulas.series import context_grid, flops_series, memory_series
from llmcalc.inputs import bundled, family_defaults, ollama, scratch, speccache
from llmcalc.inputs.config import read_config, spec_from_raw
from llmcalc.limits import one_line, shown
from llmcalc.model.spec import ModelSpec, Origin
from llmcalc.planning import local
from llmcalc.planning.finetune import Method, Optimizer, fit_finetune, plan_finetune
from llmcalc.planning.hardware import (
    ACCELERATORS,
    Accelerator,
    interconnect,
    require,
    resolve,
    usable_memory,
)
from llmcalc.planning.latency import engine_kv, kv_given, latency
from llmcalc.planning.serving import ServingFit, decode_bound, fit
from llmcalc.planning.training import DEFAULT_MFU, Recompute, parallelism, plan_training
from llmcalc.render import gib
from llmcalc.render.count import count_json, provenance
from llmcalc.render.finetune import finetune_json, fit_finetune_json
from llmcalc.render.fit import fit_json
from llmcalc.render.flops import flops_json
from llmcalc.render.latency import latency_json
from llmcalc.render.local import what_fits_json
from llmcalc.render.memory import memory_json
from llmcalc.render.train import train_json
from llmcalc.units import (
    MAX_NUMBER,
    CacheDType,
    DType,
    kv_option,
    named,
    parse_context,
    parse_count,
)

PASTED = "pasted config"
# the model a bare page shows: one whose defaults below agree with it (a 4k context within its
# limit, the default LoRA targets among its modules), so the first screen holds no error
DEFAULT_MODEL = "llama-3.1-8b"
MAX_SETS = 64
# dtype/kv_dtype None: the checkpoint's own format (its quantization_config), as the CLI reads it
DEFAULTS = {"ctx": "4k", "batch": "1", "dtype": None, "kv_dtype": None, "gpu": "h100",
            "gpu_mem": None, "gpu_flops": None, "gpu_bandwidth": None, "gpus": 1,
            "tokens": None, "ctx_max": "128k",
            # the speed panel (latency): tokens generated after the prompt, and the engine and
            # backend of the expected speed beside the bound (latency --engine --backend; "none":
            # the bound alone; backend None: the CLI's, choices.DEFAULT_BACKEND)
            "gen": "256", "engine": "llama.cpp", "backend": None,
            # the training panel (train): parallelism and memory savers, as its options
            "tp": 1, "pp": 1, "zero": 0, "micro_batch": 1, "recompute": "none",
            "flash_attention": False,
            # the fine-tuning panel (fit --method / train --method)
            "method": "lora", "optimizer": "adamw", "lora_r": 16, "lora_targets": None}
T = TypeVar("T")
MAX_USERS = 1024  # the speed panel's users table stops here (or at the largest batch that fits)
# the figures of `latency --json` the users table shows for each batch
USERS_FIGURES = ("ttft_s", "tpot_s", "tokens_per_s_per_request", "tokens_per_s")
FINETUNE_BATCH_LIMIT = 1 << 16  # the largest micro-batch `fit --method --ctx` looks for
MAX_GPUS_SEARCHED = 1 << 16  # the verdict's smallest GPU count is looked for up to here
SCRATCH_TYPES = ("gpt2", "llama", "mixtral", "gpt_neox")
# a knob shown for a loaded model → the config keys that hold it, first match wins
KNOB_KEYS = {
    "d_model": ("hidden_size", "n_embd", "d_model"),
    "layers": ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
}


def catalog() -> dict[str, Any]:
    """What the page offers: bundled models (then those Ollama pulled here), accelerators, dtypes,
    from-scratch starting points."""
    return {
        "models": [p.stem for p in bundled.paths()] + ollama.pulled_names(),
        "model_types": family_defaults.model_types(),
        "gpus": [{"key": a.key, "name": a.name, "memory_bytes": a.memory_bytes, "kind": a.kind,
                  "unified_bytes": a.unified_bytes}
                 for a in ACCELERATORS.values()],
        "dtypes": [d.value for d in DType],
        "engines": [e.value for e in EngineName],
        "backends": list(BACKENDS),
        "weight_formats": [*(d.value for d in DType), *FORMAT_NAMES],
        "scratch": {mt: dataclasses.asdict(scratch.knobs_of(mt)) for mt in SCRATCH_TYPES},
        "defaults": DEFAULTS,
        "default_model": DEFAULT_MODEL,
    }


@dataclasses.dataclass(frozen=True)
class Resolved:
    """A model from the page, and how the CLI names the same one."""

    spec: ModelSpec
    model_arg: str  # MODEL on the command line
    sets: tuple[str, ...]  # --set fields
    label: str = ""  # how the page names it (default: the spec's name)


def resolve_model(model: Mapping[str, Any], sets: list[str]) -> Resolved:
    """``{"name": …}`` (bundled, model type, Ollama name or Hub id), ``{"text": …}`` or
    ``{"scratch": knobs}``."""
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
        raise UsageError("model: give a bundled name, a model type, an Ollama name or a Hugging "
                         "Face id")
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


def _gpus(request: Mapping[str, Any]) -> int:
    """The GPU count: a JSON integer (not its digits as text, unlike the panels' settings)."""
    gpus = _opt(request, "gpus")
    if isinstance(gpus, bool) or not isinstance(gpus, int) or not 1 <= gpus <= MAX_NUMBER:
        raise UsageError(f"--gpus {shown(gpus)}: expected a whole number from 1 to 2^53 - 1")
    return gpus


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
    named_dtype = named(dtype_text)  # else the checkpoint's
    given_kv = kv_option(kv_text)
    kv_dtype = kv_dtype_for(dtype) if given_kv is None else given_kv
    gpu, gpu_mem = _text_or_none(request, "gpu"), _text_or_none(request, "gpu_mem")
    gpu_flops = _text_or_none(request, "gpu_flops")
    gpu_bw = _text_or_none(request, "gpu_bandwidth")
    gpus = _gpus(request)
    tokens_text = request.get("tokens") or None
    tokens = None if tokens_text is None else parse_count(str(tokens_text), option="--tokens")
    ctx_max_text = str(_opt(request, "ctx_max"))
    ctx_max = parse_context(ctx_max_text, option="--ctx-max")
    acc = resolve(gpu, memory=gpu_mem, bandwidth=gpu_bw, needs=("memory",))
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
    card = [] if gpu is None else ["--gpu", gpu]
    mem = [] if gpu_mem is None else ["--gpu-mem", gpu_mem]
    fl = [] if gpu_flops is None else ["--gpu-flops", gpu_flops]
    bw = [] if gpu_bw is None else ["--gpu-bandwidth", gpu_bw]  # fit and latency read it
    hw = [*card, *mem, "--gpus", str(gpus)]
    tok = [] if tokens_text is None else ["--tokens", str(tokens_text)]
    commands = {
        "count": cli("count", "--json"),
        "flops": cli("flops", "--ctx", ctx_text, "--batch", str(batch), *tok, "--json"),
        "memory": cli("memory", "--ctx", ctx_text, "--batch", str(batch), *dt, "--json"),
        "fit": cli("fit", *hw, *bw, "--batch", str(batch), *dt, "--json"),
        **({} if at_ctx is None else
           {"fit_at_ctx": cli("fit", *hw, *bw, "--ctx", ctx_text, *dt, "--json")}),
        "plot": cli("plot flops", "--ctx-max", ctx_max_text, "-o", "chart.svg"),
    }
    # the panels below answer on their own: a setting one of them refuses (a card without a FLOP
    # rate, a TP degree that does not divide the GPUs) is that panel's error, the rest stand
    unavailable: dict[str, str] = {}

    def panel(name: str, work: Callable[[], T]) -> T | None:
        try:
            return work()
        except ParameterError as e:  # worded in the options, as the CLI and the page say them
            unavailable[name] = one_line(e.spelled(lambda p: "--" + p.replace("_", "-")))
        except LLMCalcError as e:
            unavailable[name] = one_line(str(e))
        return None

    gen_text = str(_opt(request, "gen"))
    by_batch: list[dict[str, Any]] = []

    need = sf.weights + kv_cache_bytes(spec, batch=batch, ctx=ctx, dtype=kv_dtype)

    def speed() -> dict[str, Any]:
        if need > sf.usable:  # a setup that does not run has no speed
            where = f"{gpus} × {acc.name}" if gpus > 1 else acc.name
            raise UsageError(f"does not fit {where} at batch {batch:,} × context {ctx:,} "
                             f"({gib(need)} needed, {gib(sf.usable)} usable): no speed for "
                             "a setup that does not run")
        card_only = resolve(gpu, flops=gpu_flops, bandwidth=gpu_bw, needs=("flops", "bandwidth"))
        require(card_only, "peak_flops", "bandwidth")
        gen = parse_count(gen_text, option="--gen")
        # the backend the command shown names (latency --engine): a card not in the table takes
        # its ratios in the bound (llmcalc.planning.latency.assumed_peaks); a backend that is not
        # one, or an engine without rows on it, is the expected panel's error, and the bound
        # stands as without --engine (the command shown drops it)
        bound_backend = bound_engine = None
        bound_kv: CacheDType = kv_dtype  # the cache the bound runs with (the CLI's: engine_kv)
        if engine_text.lower() != "none":
            from llmcalc.cli.latency import fitted

            try:
                bound_backend = parse_backend(backend_text, card_only)
                parsed = parse_engine(engine_text)
                bound_engine = parsed.name.value
                fitted(bound_engine, bound_backend)  # or the CLI refuses
                bound_kv = engine_kv(spec, kv_given(kv_text), dtype,
                                     bound_engine,  # or the CLI refuses
                                     parsed.version, acc=card_only, given=named_dtype)
            except LLMCalcError:
                bound_backend = bound_engine = None

        def at(b: int) -> dict[str, Any]:
            return latency_json(latency(
                spec, accelerator=card_only, interconnect=interconnect(None, card_only), tp=gpus,
                batch=b, ctx=ctx, gen=gen, dtype=dtype,
                kv_dtype=bound_kv, backend=bound_backend,
                engine=bound_engine))

        commands["latency"] = cli("latency", *card, *fl, *bw, "--tp", str(gpus), "--batch",
                                  str(batch), "--ctx", ctx_text, "--gen", gen_text, *dt, "--json")
        # users served together: 1, 2, 4 … up to the largest batch that fits at the context
        top = MAX_USERS if at_ctx is None else min(MAX_USERS, at_ctx.batch or 0)
        users = {b: at(b) for b in
                 sorted({*(1 << i for i in range(top.bit_length())), *([top] if top else [])})}
        by_batch.extend({"batch": b, **{k: figures[k] for k in USERS_FIGURES}}
                        for b, figures in users.items())
        chosen = users[batch] if batch in users else at(batch)  # the chosen batch: once
        if engine_text.lower() != "none":  # the expected speed beside the bound (latency --engine)
            expect(card_only, gen)
            chosen = {**chosen, **({} if expected is None else {"expected": expected[0]})}
        return {**chosen, **provenance(spec)}  # as the CLI's latency --json

    # the expected speed: an engine without measurements on the backend is the engine field's
    # error (as the CLI refuses `latency --engine`), and the bound stands without it
    engine_text = str(_opt(request, "engine")).strip()
    backend_text = _text_or_none(request, "backend")
    expected: tuple[dict[str, Any], dict[str, Any]] | None = None

    def expect(card_only: Accelerator, gen: int) -> None:
        nonlocal expected
        from llmcalc.cli.latency import expected_for
        from llmcalc.render.latency import expected_json, expected_view

        def work() -> tuple[dict[str, Any], dict[str, Any]]:
            parsed = parse_engine(engine_text)
            engine = parsed.name.value
            backend = parse_backend(backend_text, card_only)
            lat = latency(spec, accelerator=card_only, interconnect=interconnect(None, card_only),
                          tp=gpus, batch=batch, ctx=ctx, gen=gen, dtype=dtype,
                          kv_dtype=engine_kv(spec, kv_given(kv_text), dtype,
                                             engine, parsed.version,
                                             acc=card_only, given=named_dtype),
                          backend=backend,
                          engine=engine)
            e = expected_for(lat, engine=engine, backend=backend)
            return expected_json(e), expected_view(lat, e)

        expected = panel("expected", work)
        if expected is not None:
            commands["latency"] += " " + shlex.join(
                ["--engine", engine_text, *([] if backend_text is None else
                                            ["--backend", backend_text])])

    lat_json = panel("latency", speed)
    options = PanelOptions(request)

    def training() -> dict[str, Any]:
        # training time needs the card's FLOP rate (the CLI's train asks for --gpu-flops)
        with_flops = resolve(gpu, memory=gpu_mem, flops=gpu_flops)
        require(with_flops, "memory_bytes", "peak_flops")
        o = options.train()
        plan = plan_training(spec, tokens=tokens, ctx=ctx, accelerator=with_flops,
                             mfu=DEFAULT_MFU,
                             par=parallelism(gpus=gpus, tp=o.tp, pp=o.pp, zero=o.zero),
                             micro_batch=o.micro_batch, recompute=o.recompute,
                             flash_attention=o.flash_attention)
        commands["train"] = cli("train", *hw, *fl, "--ctx", ctx_text, *tok, *o.words(), "--json")
        return train_json(spec, plan)

    train_figures = panel("train", training)

    finetune_plan: dict[str, Any] | None = None
    panel_notes: dict[str, str] = {}  # a panel's note beside its figures (not an error)

    def finetuning() -> dict[str, Any]:
        nonlocal finetune_plan
        o = options.finetune()

        def adapters(targets: tuple[str, ...]) -> LoraConfig:
            c = lora_config(
                r=o.lora_r, alpha=32, targets=resolve_targets(spec, targets), embeddings=False,
                experts=False, modules_to_save=[""], dora=False, rslora=False)
            lora_count(spec, c)  # the targets checked against the model's modules here
            return c

        lora = None
        if o.method is not Method.full:
            try:
                lora = adapters(o.targets or LoraConfig.targets)
            except ParameterError:
                if o.targets is not None:  # targets typed in: their error stands
                    raise
                # the field left blank on a model without q/k/v/o projections (GPT-2's c_attn):
                # every linear layer, said so, and the command line names it
                lora = adapters((ALL_LINEAR,))
                o = dataclasses.replace(o, targets=(ALL_LINEAR,))
                panel_notes["finetune"] = (
                    f"LoRA targets: {','.join(LoraConfig.targets)} (the default) match no module "
                    "of this model, so every linear layer but lm_head is adapted "
                    f"(--lora-targets {ALL_LINEAR})")
        common: dict[str, Any] = dict(method=o.method, accelerator=acc, optimizer=o.optimizer,
                                      tp=gpus, lora=lora)
        # the largest micro-batch at the context, as `fit --method` finds it (any card)
        ff = fit_finetune(spec, ctx=ctx, micro_batch=None, limit=FINETUNE_BATCH_LIMIT, **common)
        commands["finetune_fit"] = cli("fit", *hw, "--ctx", ctx_text, *o.words(), "--json")
        # the plan at the chosen micro-batch, as `train --method lora|qlora` prints it (it wants
        # a FLOP rate; `train --method full` is the training panel's plan, with its options)
        with_flops = resolve(gpu, memory=gpu_mem, flops=gpu_flops)
        if with_flops.peak_flops > 0 and o.method is not Method.full:
            plan = plan_finetune(spec, ctx=ctx, micro_batch=options.micro_batch,
                                 tokens=tokens, **{**common, "accelerator": with_flops})
            finetune_plan = finetune_json(spec, plan, with_flops)
            commands["finetune"] = cli("train", *card, *mem, *fl, "--tp", str(gpus), "--ctx",
                                       ctx_text, "--micro-batch", str(options.micro_batch),
                                       *tok, *o.words(), "--json")
        return fit_finetune_json(spec, ff, acc)

    finetune_fit = panel("finetune", finetuning)

    def serving_engine(name: str) -> Callable[[], dict[str, Any]]:
        """`fit --engine NAME --max-model-len CTX --tp GPUS`: the engine's KV budget on one GPU."""
        def work() -> dict[str, Any]:
            from llmcalc.choices import parse_engine
            from llmcalc.cli._engine import EngineSettings, engine_plan
            from llmcalc.planning.latency import engine_weights
            from llmcalc.render.engine import engine_json

            # the weights and cache `fit --engine` takes (the engine's own default cache)
            engine_weights(dtype, name, acc, given=named_dtype)
            kv = given_kv or serving_kv_default(name, dtype, spec.config, given=named_dtype)
            b = engine_plan(spec, parse_engine(name), EngineSettings(max_model_len=ctx_text),
                            acc=acc, dtype=dtype, kv_dtype=kv, tp=gpus)
            if b.refusal is None:  # the CLI exits 1 where the engine would refuse to start
                commands[f"engine_{name}"] = cli("fit", *card, *mem, "--engine", name, "--tp",
                                                 str(gpus), "--max-model-len", ctx_text, *dt,
                                                 "--json")
            return engine_json(spec, b, accelerator=acc)
        return work

    engines = {f"engine_{n}": panel(f"engine_{n}", serving_engine(n))
               for n in ("vllm", "sglang", "trtllm")}

    def offloading() -> dict[str, Any]:
        """`fit --offload --ctx CTX`: llama.cpp's -ngl split at the context, as the CLI prints it."""
        from llmcalc.planning.local import offload
        from llmcalc.render.local import offload_json

        with_bw = resolve(gpu, memory=gpu_mem, bandwidth=gpu_bw, needs=("memory", "bandwidth"))
        require(with_bw, "memory_bytes", "bandwidth")
        o = offload(spec, accelerator=with_bw, dtype=dtype, kv_dtype=kv_dtype, ctx=ctx)
        commands["offload"] = cli("fit", *card, *mem, *bw, "--offload", "--ctx", ctx_text, *dt,
                                  "--json")
        return offload_json(spec, o, accelerator=with_bw, dtype=dtype.value, ctx=ctx)

    offload_figures = panel("offload", offloading)
    memory_figures = {**memory_json(m), **provenance(spec)}  # as the CLI's memory --json
    return {
        "label": r.label or spec.name,
        "verdict": verdict(spec, memory_figures, at_ctx, sf, acc, dtype=dtype,
                           kv_dtype=kv_dtype, speed=lat_json),
        "count": count_json(spec, pc),
        "flops": {**flops_json(f), **provenance(spec)},  # as the CLI's flops/memory --json
        "memory": memory_figures,
        "fit": fit_json(spec, sf, accelerator=acc, dtype=dtype, kv_dtype=kv_dtype),
        "fit_at_ctx": None if at_ctx is None else fit_json(spec, at_ctx, accelerator=acc,
                                                           dtype=dtype, kv_dtype=kv_dtype),
        "latency": lat_json,
        "latency_expected": None if expected is None else expected[1],
        "latency_by_batch": by_batch,
        "train": train_figures,
        "finetune": finetune_plan,
        "finetune_fit": finetune_fit,
        **engines,
        "offload": offload_figures,
        "unavailable": unavailable,
        "panel_notes": panel_notes,
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
        "commands": commands,
        "knobs": _knob_keys(spec),
    }


def what_fits(request: Mapping[str, Any]) -> dict[str, Any]:
    """The bundled and locally cached models on the chosen GPUs, each in the best format that
    fits (``llmcalc fit --gpu NAME --all --json``, no model): every row, sorted by parameters;
    the page sorts and filters them."""
    gpu, gpu_mem = _text_or_none(request, "gpu"), _text_or_none(request, "gpu_mem")
    gpu_bw = _text_or_none(request, "gpu_bandwidth")
    gpus = _gpus(request)
    ctx_text = str(_opt(request, "ctx"))
    min_ctx = parse_context(ctx_text, option="--ctx")
    acc = resolve(gpu, memory=gpu_mem, bandwidth=gpu_bw, needs=("memory",))
    require(acc, "memory_bytes")
    models = [(name, _local_loader(name)) for name in bundled.with_cached()]
    rows, skipped = local.what_fits(models, accelerator=acc, gpus=gpus, min_ctx=min_ctx,
                                    fitting_only=False)
    words = ["llmcalc", "fit", *([] if gpu is None else ["--gpu", gpu]),
             *([] if gpu_mem is None else ["--gpu-mem", gpu_mem]),
             *([] if gpu_bw is None else ["--gpu-bandwidth", gpu_bw]), "--gpus", str(gpus),
             "--ctx", ctx_text, "--all", "--json"]
    return {**what_fits_json(rows, accelerator=acc, gpus=gpus, min_ctx=min_ctx,
                             skipped=skipped),
            "command": shlex.join(words)}


def _local_loader(name: str) -> Callable[[], ModelSpec]:
    """A model of the what-fits list, read as `fit` reads it (a bundled one from the spec cache)."""
    return lambda: speccache.load(name, lambda: spec_from_raw(read_config(name, paths=False)))


def verdict(spec: ModelSpec, mem: Mapping[str, Any], at_ctx: ServingFit | None,
            at_batch: ServingFit, acc: Accelerator, *, dtype: WeightFormat, kv_dtype: DType,
            speed: Mapping[str, Any] | None = None) -> dict[str, Any]:
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
        # no speed for a setup that does not run
        "decode": None if need > usable else _decode(spec, speed, acc, batch=batch, ctx=ctx,
                                                     gpus=f.gpus, dtype=dtype, kv_dtype=kv_dtype),
    }


def _decode(spec: ModelSpec, speed: Mapping[str, Any] | None, acc: Accelerator, *, batch: int,
            ctx: int, gpus: int, dtype: WeightFormat, kv_dtype: DType) -> dict[str, Any] | None:
    """The decode speed at the chosen batch × context: the latency roofline's (``latency
    --json``: compute or memory bound, at the mean context while generating) where the card has a
    FLOP rate, else the memory-bandwidth bound at the context (the weights a step uses and the cache read
    once a step, as ``fit`` bounds it); None for a card with neither."""
    if speed is not None:
        return {"source": "latency", "batch": batch, "ctx": speed["decode_step"]["ctx"],
                "tokens_per_sec_per_sequence": speed["tokens_per_s_per_request"],
                "tokens_per_sec": speed["tokens_per_s"], "ttft_s": speed["ttft_s"]}
    if acc.bandwidth <= 0:
        return None
    d = decode_bound(spec, batch=batch, ctx=ctx, dtype=dtype, kv_dtype=kv_dtype,
                     bandwidth=gpus * acc.bandwidth)
    return {"source": "bandwidth", "batch": batch, "ctx": ctx,
            "tokens_per_sec_per_sequence": d.tokens_per_sec_per_sequence,
            "tokens_per_sec": d.tokens_per_sec, "ttft_s": None}


@dataclasses.dataclass(frozen=True)
class TrainOptions:
    """The training panel's options, as `llmcalc train` takes them."""

    tp: int
    pp: int
    zero: int
    micro_batch: int
    recompute: Recompute
    flash_attention: bool

    def words(self) -> list[str]:
        """The options that differ from the CLI's defaults."""
        out = [*(["--tp", str(self.tp)] if self.tp != 1 else []),
               *(["--pp", str(self.pp)] if self.pp != 1 else []),
               *(["--zero", str(self.zero)] if self.zero else []),
               *(["--micro-batch", str(self.micro_batch)] if self.micro_batch != 1 else []),
               *(["--recompute", self.recompute.value]
                 if self.recompute is not Recompute.none else [])]
        return out + (["--flash-attention"] if self.flash_attention else [])


@dataclasses.dataclass(frozen=True)
class FinetuneOptions:
    """The fine-tuning panel's options, as `llmcalc fit --method` takes them."""

    method: Method
    optimizer: Optimizer
    lora_r: int
    targets: tuple[str, ...] | None  # None: the CLI's default targets

    def words(self) -> list[str]:
        out = ["--method", self.method.value]
        if self.optimizer is not Optimizer.adamw:
            out += ["--optimizer", self.optimizer.value]
        if self.method is not Method.full:
            out += ["--lora-r", str(self.lora_r)]
            if self.targets is not None:
                out += ["--lora-targets", ",".join(self.targets)]
        return out


@dataclasses.dataclass(frozen=True)
class PanelOptions:
    """The training and fine-tuning panels' settings, read when each panel is worked out (a bad
    one is that panel's error)."""

    request: Mapping[str, Any]

    @property
    def micro_batch(self) -> int:
        return _whole(self.request, "micro_batch", "--micro-batch", lowest=1)

    def train(self) -> TrainOptions:
        q = self.request
        return TrainOptions(
            tp=_whole(q, "tp", "--tp", lowest=1), pp=_whole(q, "pp", "--pp", lowest=1),
            zero=_whole(q, "zero", "--zero", lowest=0), micro_batch=self.micro_batch,
            recompute=_choice(q, "recompute", "--recompute", Recompute),
            flash_attention=_flag(q, "flash_attention", "--flash-attention"))

    def finetune(self) -> FinetuneOptions:
        q = self.request
        targets = _text_or_none(q, "lora_targets")
        return FinetuneOptions(
            method=_choice(q, "method", "--method", Method),
            optimizer=_choice(q, "optimizer", "--optimizer", Optimizer),
            lora_r=_whole(q, "lora_r", "--lora-r", lowest=1),
            targets=None if targets is None else tuple(
                t.strip() for t in targets.split(",") if t.strip()))


E = TypeVar("E", bound=Enum)


def _whole(request: Mapping[str, Any], key: str, option: str, *, lowest: int) -> int:
    """A whole-number setting: a JSON integer or its digits as text."""
    value = _opt(request, key)
    text = str(value).strip() if isinstance(value, int | str) and not isinstance(value, bool) else ""
    if not text.isdigit() or len(text) > 16 or not lowest <= int(text) <= MAX_NUMBER:
        raise UsageError(f"{option} {shown(value)}: expected a whole number from {lowest} "
                         "to 2^53 - 1")
    return int(text)


def _choice(request: Mapping[str, Any], key: str, option: str, kind: type[E]) -> E:
    value = _opt(request, key)
    for member in kind:
        if member.value == value:
            return member
    raise UsageError(f"{option} {shown(value)}: one of {', '.join(m.value for m in kind)}")


def _flag(request: Mapping[str, Any], key: str, option: str) -> bool:
    value = _opt(request, key)  # unset or empty: the default
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return bool(value == "true")
    raise UsageError(f"{option} {shown(value)}: expected true or false")


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
