"""`llmcalc fit MODEL`: the largest context or batch that fits for serving, and the decode bound."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated, Optional

import typer
from rich.text import Text

from llmcalc.choices import Method, Optimizer
from llmcalc.cli._common import (
    ExplainOpt,
    FamilyOpt,
    Format,
    FormatOpt,
    JsonOpt,
    RevisionOpt,
    SetOpt,
    StrictOpt,
    TrustRemoteCodeOpt,
    emit,
    handles_errors,
    one_model,
    output_format,
    print_json,
    refuse_explain,
    set_strict,
    show,
    specs_for,
    takes_text,
)
from llmcalc.cli._complete import complete_model
from llmcalc.cli._decide import (
    NOT_FIT,
    FailIfNotFitOpt,
    ServePpOpt,
    ServeTpOpt,
    asked_fits,
    fewest_gpus,
    say_serving,
    serving_gpus,
    warn_beyond_window,
)
from llmcalc.cli._engine import (
    BlockSizeOpt,
    ChunkedPrefillSizeOpt,
    EnablePrefixCachingOpt,
    EnforceEagerOpt,
    EngineSettings,
    GpuMemoryUtilizationOpt,
    KvFractionOpt,
    KvMemoryOpt,
    MambaCacheModeOpt,
    MambaSsmCacheDtypeOpt,
    MaxBatchSizeOpt,
    MaxModelLenOpt,
    MaxNumBatchedTokensOpt,
    MaxNumSeqsOpt,
    MaxNumTokensOpt,
    MaxRunningRequestsOpt,
    MemFractionStaticOpt,
    PageSizeOpt,
    TokensPerBlockOpt,
)
from llmcalc.cli._hardware import GpuBandwidthOpt, GpuMemOpt, GpuOpt, GpusOpt, HeadroomOpt
from llmcalc.cli._llamacpp import (
    FitBatchSizeOpt,
    FitCacheTypeKOpt,
    FitCacheTypeVOpt,
    FitCtxSizeOpt,
    FitFlashAttnOpt,
    FitKvUnifiedOpt,
    FitNCpuMoeOpt,
    FitNoMmapOpt,
    FitOverrideTensorOpt,
    FitParallelOpt,
    FitSwaFullOpt,
    FitTargetOpt,
    FitUbatchSizeOpt,
    NoKvOffloadOpt,
    SplitModeOpt,
)
from llmcalc.cli._lora import LoraROpt, LoraTargetsOpt, config_from_options
from llmcalc.cli._options import (
    CONTEXT_SUFFIXES,
    COUNT_SUFFIXES,
    EngineOpt,
    KvDTypeOpt,
    speaks_flags,
)
from llmcalc.cli._prefill import AttentionOpt, PrefillChunkOpt, serving_kernel
from llmcalc.cli._weights import DTypeOpt, show_format_notes
from llmcalc.errors import UsageError
from llmcalc.formulas.quant import WeightFormat, kv_dtype_for, resolve_format
from llmcalc.model.spec import ModelSpec
from llmcalc.planning.hardware import DEFAULT_HEADROOM, Accelerator, require, resolve
from llmcalc.planning.serving import fit as fit_plan
from llmcalc.units import (
    LLAMA_CPP_CACHE,
    MAX_NUMBER,
    DType,
    kv_option,
    parse_context,
    parse_count,
)


@handles_errors
@speaks_flags
def fit(
    models: Annotated[
        Optional[list[str]],  # noqa: UP045 - typer reads this annotation at run time
        typer.Argument(
            help="Models to fit: bundled names, repo ids (org/name:Q4_K_M: a GGUF), config or "
            ".gguf files, Ollama names (llama3.1:8b). Without one: what fits the GPU, of the "
            "bundled, cached and pulled models.",
            show_default=False, metavar="MODEL", autocompletion=complete_model,
        ),
    ] = None,
    gpu: GpuOpt = None,
    gpus: GpusOpt = 1,
    gpu_mem: GpuMemOpt = None,
    gpu_bandwidth: GpuBandwidthOpt = None,
    dtype: DTypeOpt = None,
    kv_dtype: KvDTypeOpt = None,
    batch_text: Annotated[
        Optional[str],  # noqa: UP045 - typer reads this annotation at run time
        typer.Option("--batch", help="Sequences served at once; finds the largest context "
                     f"(default 1; {COUNT_SUFFIXES}).", show_default=False, metavar="N"),
    ] = None,
    ctx: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--ctx", help=f"Context length; finds the largest batch instead; "
                     f"{CONTEXT_SUFFIXES}.", show_default=False, metavar="CTX"),
    ] = None,
    headroom: HeadroomOpt = DEFAULT_HEADROOM,
    set_: SetOpt = None,
    family: FamilyOpt = None,
    strict: StrictOpt = False,
    revision: RevisionOpt = None,
    trust_remote_code: TrustRemoteCodeOpt = False,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    explain: ExplainOpt = False,
    method: Annotated[
        Optional[Method],  # noqa: UP045
        typer.Option("--method", help="Fit a fine-tune instead of serving: lora or qlora "
                     "(gradient checkpointing, FlashAttention, AdamW on the adapters) or full; "
                     "--batch is then the micro-batch.", show_default=False),
    ] = None,
    lora_r: LoraROpt = None,
    lora_targets: LoraTargetsOpt = "q_proj,k_proj,v_proj,o_proj",
    optimizer: Annotated[
        Optimizer, typer.Option("--optimizer", help="Fine-tuning optimizer (with --method).")
    ] = Optimizer.adamw,
    sort: Annotated[
        str, typer.Option("--sort", metavar="KEY", help="Without MODEL: order by params, name, "
                          "ctx or speed.")
    ] = "params",
    match: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--match", metavar="GLOB", help="Without MODEL: only models whose name "
                     "matches (e.g. '*llama*').", show_default=False),
    ] = None,
    show_all: Annotated[
        bool, typer.Option("--all", help="Without MODEL: list the models that do not fit too.")
    ] = False,
    offload: Annotated[
        bool, typer.Option("--offload", help="llama.cpp-style split: as many layers on the GPU "
                           "as fit at --ctx (default 4k), the rest in system memory, and the "
                           "decode bound of both.")
    ] = False,
    ram_bandwidth: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--ram-bandwidth", metavar="RATE", help="With --offload: system memory "
                     "bandwidth (default 89.6GB/s, dual-channel DDR5-5600).", show_default=False),
    ] = None,
    gpu_layers_text: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--n-gpu-layers", "--gpu-layers", metavar="N", help="With --offload: "
                     "llama.cpp's -ngl N, the output layer first (default: as many as fit).",
                     show_default=False),
    ] = None,
    attention: AttentionOpt = None,
    prefill_chunk: PrefillChunkOpt = None,
    tp: ServeTpOpt = None,
    pp: ServePpOpt = None,
    fail_if_not_fit: FailIfNotFitOpt = False,
    engine: EngineOpt = None,
    gpu_memory_utilization: GpuMemoryUtilizationOpt = None,
    max_model_len: MaxModelLenOpt = None,
    max_num_seqs: MaxNumSeqsOpt = None,
    max_num_batched_tokens: MaxNumBatchedTokensOpt = None,
    block_size: BlockSizeOpt = None,
    enforce_eager: EnforceEagerOpt = False,
    enable_prefix_caching: EnablePrefixCachingOpt = False,
    mamba_cache_mode: MambaCacheModeOpt = None,
    mamba_ssm_cache_dtype: MambaSsmCacheDtypeOpt = None,
    mem_fraction_static: MemFractionStaticOpt = None,
    chunked_prefill_size: ChunkedPrefillSizeOpt = None,
    max_running_requests: MaxRunningRequestsOpt = None,
    page_size: PageSizeOpt = None,
    kv_cache_free_gpu_memory_fraction: KvFractionOpt = None,
    max_batch_size: MaxBatchSizeOpt = None,
    max_num_tokens: MaxNumTokensOpt = None,
    tokens_per_block: TokensPerBlockOpt = None,
    kv_memory: KvMemoryOpt = None,
    ctx_size: FitCtxSizeOpt = None,
    batch_size: FitBatchSizeOpt = None,
    ubatch_size: FitUbatchSizeOpt = None,
    cache_type_k: FitCacheTypeKOpt = None,
    cache_type_v: FitCacheTypeVOpt = None,
    flash_attn: FitFlashAttnOpt = None,
    n_cpu_moe: FitNCpuMoeOpt = 0,
    override_tensor: FitOverrideTensorOpt = None,
    swa_full: FitSwaFullOpt = False,
    parallel: FitParallelOpt = None,
    kv_unified: FitKvUnifiedOpt = None,
    no_mmap: FitNoMmapOpt = False,
    fit_target: FitTargetOpt = None,
    no_kv_offload: NoKvOffloadOpt = False,
    split_mode: SplitModeOpt = None,
    ngl_short: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("-ngl", hidden=True, metavar="N", show_default=False,
                     help="llama-server's short name of --n-gpu-layers (N, all or auto)."),
    ] = None,
) -> None:
    """Find the largest context (or batch) whose weights + KV cache fit, and the decode speed bound.

    With both --batch and --ctx: does that fit? Exit 0 yes, 1 no. Several models print side by
    side, on the same GPUs (--json: an array).
    """
    set_strict(strict)
    how = output_format(fmt, as_json)
    refuse_explain(explain, how)
    batch = None if batch_text is None else _batch(batch_text)
    if gpu_layers_text is not None and ngl_short is not None:
        raise UsageError("--n-gpu-layers and -ngl are the same flag: give one")
    gpu_layers = _gpu_layers(gpu_layers_text if ngl_short is None else ngl_short)
    engine_settings = EngineSettings(
        gpu_memory_utilization, max_model_len, max_num_seqs, max_num_batched_tokens, block_size,
        enforce_eager, mem_fraction_static, chunked_prefill_size, max_running_requests, page_size,
        kv_cache_free_gpu_memory_fraction, max_batch_size, max_num_tokens, tokens_per_block,
        kv_memory, enable_prefix_caching=enable_prefix_caching,
        mamba_cache_mode=mamba_cache_mode, mamba_ssm_cache_dtype=mamba_ssm_cache_dtype)
    llama_flags = {flag for flag, value in (
        ("--ctx-size", ctx_size), ("--batch-size", batch_size), ("--ubatch-size", ubatch_size),
        ("--cache-type-k", cache_type_k), ("--cache-type-v", cache_type_v),
        ("--flash-attn", flash_attn), ("--n-cpu-moe", n_cpu_moe or None),
        ("--override-tensor", override_tensor), ("--swa-full", swa_full or None),
        ("--parallel", parallel), ("--kv-unified", kv_unified), ("--no-mmap", no_mmap or None),
        ("--fit-target", fit_target), ("--no-kv-offload", no_kv_offload or None),
        ("--split-mode", split_mode)) if value is not None}
    if engine is not None:
        from llmcalc.choices import EngineName, parse_engine

        chosen = parse_engine(engine)
        if chosen.name is EngineName.llama_cpp:
            _llama_cpp(models, chosen.version, ctx=ctx, ctx_size=ctx_size, batch_size=batch_size,
                       ubatch_size=ubatch_size, cache_type_k=cache_type_k,
                       cache_type_v=cache_type_v, flash_attn=flash_attn, n_gpu_layers=gpu_layers,
                       n_cpu_moe=n_cpu_moe, override_tensor=override_tensor or [],
                       swa_full=swa_full, parallel=parallel, kv_unified=kv_unified,
                       no_mmap=no_mmap, fit_target=fit_target, gpu=gpu, gpu_mem=gpu_mem,
                       how=how, dtype=dtype, gpus=gpus, tp=tp, kv_dtype=kv_dtype,
                       max_model_len=max_model_len, max_num_seqs=max_num_seqs,
                       kv_memory=kv_memory, no_kv_offload=no_kv_offload,
                       split_mode=split_mode, overrides=set_,
                       refused={"--batch": batch is not None,
                                "--headroom": headroom != DEFAULT_HEADROOM, "--offload": offload,
                                "--method": method, "--pp": pp, "--explain": explain,
                                **{k: v for k, v in engine_settings.given().items()
                                   if k not in LLAMA_CPP_TAKES}})
            return
    if llama_flags:
        raise UsageError(f"{', '.join(sorted(llama_flags))}: llama.cpp's flags go with --engine "
                         "llama.cpp")
    if engine is not None or engine_settings.given():
        from llmcalc.cli._engine import fit_engine

        fit_engine(models, engine, engine_settings, gpu=gpu, gpus=gpus, gpu_mem=gpu_mem,
                   dtype=dtype, kv_dtype=kv_dtype, tp=tp, how=how,
                   refused={"--headroom": headroom != DEFAULT_HEADROOM, "--ctx": ctx is not None,
                            "--batch": batch is not None, "--method": method is not None,
                            "--offload": offload, "--pp": pp is not None, "--explain": explain},
                   set_=set_, family=family, revision=revision,
                   trust_remote_code=trust_remote_code)
        return
    if not models:
        if set_ or family or revision or method is not None or offload or explain:
            raise UsageError("--set, --family, --revision, --method, --offload and --explain "
                             "need a MODEL")
        acc = resolve(gpu, memory=gpu_mem, bandwidth=gpu_bandwidth, needs=("memory",))
        require(acc, "memory_bytes")
        _what_fits(acc, gpus=gpus, headroom=headroom, ctx=ctx, sort=sort, match=match,
                   show_all=show_all, how=how)
        return
    if offload:
        one_model(models, "--offload")
    elif ram_bandwidth is not None or gpu_layers is not None:
        raise UsageError("--ram-bandwidth and --gpu-layers go with --offload")
    if explain:
        one_model(models, "--explain")
    specs = [(m, takes_text(spec, "fit"))
             for m, spec in specs_for(models, set_, family, revision, trust_remote_code)]
    acc = resolve(gpu, memory=gpu_mem, bandwidth=gpu_bandwidth, needs=("memory",))
    require(acc, "memory_bytes")
    if method is None:
        for _, spec in specs:
            gpus = serving_gpus(spec, gpus=gpus, tp=tp, pp=pp)
    elif tp is not None or pp is not None:
        raise UsageError("--tp/--pp: for serving; a fine-tune (--method) splits over --gpus")
    if method is not None:
        one_model(models, "--method")
        [(_, spec)] = specs
        from llmcalc.planning.finetune import fit_finetune
        from llmcalc.render.finetune import finetune_explain, fit_finetune_json, fit_finetune_view

        n_ctx = parse_context(ctx, option="--ctx") if ctx is not None else None
        ff = fit_finetune(
            spec, ctx=n_ctx, micro_batch=batch,
            limit=(spec.shape.max_position_embeddings or 1 << 20) if n_ctx is None else 1 << 16,
            method=method, accelerator=acc, optimizer=optimizer, headroom=headroom, tp=gpus,
            attention=attention,
            lora=None if method is Method.full else config_from_options(
                spec, r=16 if lora_r is None else lora_r, alpha=32, targets=lora_targets,
                embeddings=False, experts=False, modules_to_save=None, dora=False, rslora=False),
        )
        if how is not Format.table:
            if how is not Format.json:
                raise UsageError(f"--format {how.value}: a fine-tuning fit prints as a table or JSON")
            print_json(fit_finetune_json(spec, ff, acc))
            return
        show(fit_finetune_view(spec, ff, acc))
        if explain and ff.plan is not None:
            show(*(Text(line) for line in finetune_explain(spec, ff.plan)))
        if fail_if_not_fit and ff.plan is None:
            raise typer.Exit(NOT_FIT)
        return
    # each model's stored format (its quantization_config) unless --dtype names one for all
    formats = {f.value: f for f in (resolve_format(spec, dtype) for _, spec in specs)}
    if len(formats) > 1:
        raise UsageError("the models store different formats (quantization_config): pass --dtype "
                         "to compare them at one")
    [weights] = formats.values()
    kv = kv_option(kv_dtype) or kv_dtype_for(weights)
    n_ctx = parse_context(ctx, option="--ctx") if ctx is not None else None
    if offload:
        from llmcalc.planning.local import DEFAULT_MIN_CTX

        _offload(specs[0][1], acc, weights, kv, n_ctx or DEFAULT_MIN_CTX, ram_bandwidth,
                 gpu_layers, headroom, how)
        return
    from llmcalc.render import fit as r

    if batch is not None and batch < 1:
        raise UsageError(f"--batch {batch}: must be 1 or more")
    if how is not Format.json:
        for _, spec in specs:
            warn_beyond_window(spec, n_ctx)
    chunk = None if prefill_chunk is None else parse_context(prefill_chunk,
                                                             option="--prefill-chunk")
    # both --batch and --ctx: the largest batch at that context answers whether the batch fits
    items = [
        (m, spec, fit_plan(spec, accelerator=acc, gpus=gpus, dtype=weights, kv_dtype=kv,
                           batch=None if n_ctx is not None else batch, ctx=n_ctx,
                           headroom=headroom, attention=serving_kernel(spec, attention),
                           prefill_chunk=chunk))
        for m, spec in specs
    ]
    answers = [asked_fits(f, batch) for _, _, f in items]
    data = [r.fit_json(s, f, accelerator=acc, dtype=weights, kv_dtype=kv) for _, s, f in items]
    emit(how, data=lambda: data if len(data) > 1 else data[0],
         grids=lambda: [r.fit_grid(items, accelerator=acc, dtype=weights, kv_dtype=kv)],
         view=(lambda: r.fit_view(items[0][1], items[0][2], accelerator=acc, dtype=weights,
                                  kv_dtype=kv)) if len(items) == 1 else None,
         labels=[m for m, _, _ in items])
    if explain:
        show(*(Text(line) for line in r.explain_lines(items[0][2], accelerator=acc)))
    show_format_notes(how, [(label, f.notes) for label, _, f in items])

    def fits_on(spec: ModelSpec, g: int) -> bool:
        return asked_fits(fit_plan(spec, accelerator=acc, gpus=g, dtype=weights, kv_dtype=kv,
                                   batch=None if n_ctx is not None else batch, ctx=n_ctx,
                                   headroom=headroom, attention=serving_kernel(spec, attention),
                                   prefill_chunk=chunk), batch)

    if how is Format.table:
        for (label, spec, f), yes in zip(items, answers, strict=True):
            say_serving(label if len(items) > 1 else "", f, batch=batch, yes=yes,
                        gpus_needed=partial(fewest_gpus, partial(fits_on, spec), start=gpus))
    if not all(answers) and (fail_if_not_fit or (batch is not None and n_ctx is not None)):
        raise typer.Exit(NOT_FIT)


def _what_fits(acc: Accelerator, *, gpus: int, headroom: float, ctx: str | None, sort: str,
               match: str | None, show_all: bool, how: Format) -> None:
    """Bundled, locally cached and Ollama's pulled models, each in the best format that fits
    (llmcalc.planning.local)."""
    import fnmatch

    from llmcalc.cli._common import spec_for
    from llmcalc.inputs import bundled
    from llmcalc.planning.local import DEFAULT_MIN_CTX, what_fits
    from llmcalc.render.local import what_fits_grid, what_fits_json

    min_ctx = parse_context(ctx, option="--ctx") if ctx is not None else DEFAULT_MIN_CTX
    names = bundled.with_cached()
    if match is not None:
        names = [m for m in names if fnmatch.fnmatch(m.lower(), match.lower())]

    def loader(model: str) -> Callable[[], ModelSpec]:
        return lambda: spec_for(model, None)

    rows, skipped = what_fits([(m, loader(m)) for m in names], accelerator=acc, gpus=gpus,
                              headroom=headroom, min_ctx=min_ctx, sort=sort,
                              fitting_only=not show_all)
    if how is Format.json:
        print_json(what_fits_json(rows, accelerator=acc, gpus=gpus, min_ctx=min_ctx,
                                  skipped=skipped))
        return
    grid = what_fits_grid(rows, accelerator=acc, gpus=gpus, min_ctx=min_ctx, skipped=skipped)
    emit(how, data=lambda: None, grids=lambda: [grid])


def _batch(text: str) -> int:
    """--batch: a plain integer as typed (0 or less is refused below, in the flag's words), else
    a count with its suffix (1k = 1,024, as every count option reads it)."""
    plain = text.strip()
    if plain.lstrip("+-").isdigit() and abs(int(plain)) <= MAX_NUMBER:
        return int(plain)
    return parse_count(text, option="--batch")


def _offload(spec: ModelSpec, acc: Accelerator, weights: WeightFormat, kv: DType, ctx: int,
             ram_bandwidth: str | None, gpu_layers: int | None, headroom: float, how: Format
             ) -> None:
    from llmcalc.planning.hardware import parse_bandwidth
    from llmcalc.planning.local import DEFAULT_RAM_BANDWIDTH, offload
    from llmcalc.render.local import offload_json, offload_view

    ram = (parse_bandwidth(ram_bandwidth, option="--ram-bandwidth") if ram_bandwidth is not None
           else DEFAULT_RAM_BANDWIDTH)
    o = offload(spec, accelerator=acc, dtype=weights, kv_dtype=kv, ctx=ctx, ram_bandwidth=ram,
                headroom=headroom, ngl=gpu_layers)
    if how is Format.json:
        print_json(offload_json(spec, o, accelerator=acc, dtype=weights.value, ctx=ctx))
    elif how is Format.table:
        show(offload_view(spec, o, accelerator=acc, dtype=weights.value, ctx=ctx))
    else:
        raise UsageError(f"--format {how.value}: an offload split prints as a table or JSON")


# common/arg.cpp: -ngl takes a count, "auto" (the default: --fit's choice) or "all"
NGL_ALL = 1 << 30


def _gpu_layers(text: str | None) -> int | None:
    """-ngl's value: a count (0 or more), ``all`` (every layer: a count above any model's) or
    ``auto`` (not given)."""
    if text is None or text.strip().lower() == "auto":
        return None
    if text.strip().lower() == "all":
        return NGL_ALL
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"--n-gpu-layers {text}: a number of layers, all or auto") from None


# the engine settings fit --engine llama.cpp takes, as llama-server's own: --max-model-len (and
# SGLang's/TensorRT-LLM's names for it) is -c/--ctx-size, --max-num-seqs is -np/--parallel
LLAMA_CPP_TAKES = ("--max-model-len", "--max-num-seqs", "--kv-memory")
# --kv-dtype → llama.cpp's cache type (common/arg.cpp: kv_cache_types)


def _llama_cpp(models: list[str] | None, version: str | None, *, ctx: str | None,
               ctx_size: str | None, batch_size: int | None, ubatch_size: int | None,
               cache_type_k: str | None, cache_type_v: str | None, flash_attn: str | None,
               n_gpu_layers: int | None, n_cpu_moe: int, override_tensor: list[str],
               swa_full: bool, parallel: int | None, kv_unified: bool | None, no_mmap: bool,
               fit_target: int | None, gpu: str | None, gpu_mem: str | None, how: Format,
               dtype: str | None, refused: dict[str, object], gpus: int = 1,
               tp: int | None = None, kv_dtype: str | None = None,
               max_model_len: str | None = None, max_num_seqs: int | None = None,
               kv_memory: str | None = None, no_kv_offload: bool = False,
               split_mode: str | None = None, overrides: list[str] | None = None) -> None:
    """`fit MODEL --engine llama.cpp`: llama-server's --fit (llmcalc.planning.engines.llama_cpp_fit)."""
    from llmcalc.cli._llamacpp import engine_params, fit_llama_cpp

    for flag, given in refused.items():
        if given not in (None, False):
            hint = {"--batch": ": sequences are --parallel N",
                    "--headroom": ": llama.cpp's margin is --fit-target MiB",
                    }.get(flag, "")
            raise UsageError(f"{flag}: not with --engine llama.cpp{hint}")
    if not models:
        raise UsageError("--engine llama.cpp needs a MODEL (a GGUF file)")
    one_model(models, "--engine llama.cpp")
    given = [(n, v) for n, v in (("--ctx", ctx), ("--ctx-size", ctx_size),
                                 ("--max-model-len", max_model_len)) if v is not None]
    if len(given) > 1:
        raise UsageError(f"{given[0][0]} and {given[1][0]} are the same flag: give one")
    if parallel is not None and max_num_seqs is not None:
        raise UsageError("--parallel and --max-num-seqs are the same flag: give one")
    if tp is not None and gpus != 1 and tp != gpus:
        raise UsageError(f"--tp {tp} and --gpus {gpus}: with --engine llama.cpp both are the GPUs "
                         "the layers are split over; give one")
    n_gpus = tp if tp is not None else gpus
    if kv_dtype is not None:
        if cache_type_k is not None or cache_type_v is not None:
            raise UsageError("--kv-dtype and --cache-type-k/--cache-type-v: give one")
        cache = LLAMA_CPP_CACHE.get(kv_dtype.lower())
        if cache is None:
            raise UsageError(f"--kv-dtype {kv_dtype}: llama.cpp's cache types are "
                             f"{', '.join(sorted(set(LLAMA_CPP_CACHE.values())))}")
        cache_type_k = cache_type_v = cache
    # llama-server's default context is 0: the model's, which --fit may reduce; a build up to
    # b6969 took 4,096 (common_params n_ctx from ggml-org/llama.cpp#10136, November 2024: the
    # Arm learning path's b5935 and b6209 logs, no -c, n_ctx = 4096) and had no --fit
    from llmcalc.planning.engines.llama_cpp import LAST_OLD_PADDING_BUILD

    text = given[0][1] if given else None
    if text is None and version is not None and version[:1] == "b" and version[1:].isdigit() \
            and int(version[1:]) <= LAST_OLD_PADDING_BUILD:
        text = "4096"
    params = engine_params(ctx="4k", ctx_size="0" if text is None else text,
                           batch_size=batch_size, ubatch_size=ubatch_size,
                           cache_type_k=cache_type_k, cache_type_v=cache_type_v,
                           flash_attn=flash_attn, n_gpu_layers=n_gpu_layers, swa_full=swa_full,
                           parallel=parallel if parallel is not None else max_num_seqs,
                           kv_unified=kv_unified, no_mmap=no_mmap, version=version)
    mode = (split_mode or "layer").lower()
    if mode not in ("layer", "row", "none"):
        raise UsageError(f"--split-mode {split_mode}: layer, row or none")
    from dataclasses import replace

    params = replace(params, offload_kqv=not no_kv_offload, split_mode=mode)
    if mode == "none":
        n_gpus = 1  # src/llama.cpp: llama_model_load — the main GPU alone
    fit_llama_cpp(models[0], version, dtype, params, ngl_given=n_gpu_layers is not None,
                  n_cpu_moe=n_cpu_moe, override_tensor=override_tensor, fit_target=fit_target,
                  gpu=gpu, gpu_mem=gpu_mem, how=how, n_gpus=n_gpus, kv_memory=kv_memory,
                  overrides=overrides)
