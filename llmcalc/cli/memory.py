"""`llmcalc memory MODEL... --ctx 32k --batch 8 --dtype bf16 --kv-dtype fp8`: weights + KV cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text

from llmcalc.cli._common import (
    CatalogModelsArg,
    ExplainOpt,
    FamilyOpt,
    Format,
    FormatOpt,
    JsonOpt,
    PartOpt,
    RevisionOpt,
    SetOpt,
    StrictOpt,
    TrustRemoteCodeOpt,
    emit,
    handles_errors,
    image_specs_for,
    one_model,
    output_format,
    parts_of,
    print_json,
    refuse_explain,
    set_strict,
    show,
)
from llmcalc.cli._llamacpp import (
    BatchSizeOpt,
    CacheTypeKOpt,
    CacheTypeVOpt,
    CtxSizeOpt,
    FlashAttnOpt,
    KvUnifiedOpt,
    NCpuMoeOpt,
    NGpuLayersOpt,
    NoMmapOpt,
    OverrideTensorOpt,
    ParallelOpt,
    SwaFullOpt,
    UbatchSizeOpt,
)
from llmcalc.cli._options import (
    BatchOpt,
    CtxOpt,
    EngineOpt,
    ImageSizeOpt,
    ImagesOpt,
    KvDTypeOpt,
    SourceLenOpt,
    speaks_flags,
)
from llmcalc.cli._prefill import AttentionOpt, PrefillChunkOpt
from llmcalc.cli._weights import DTypeOpt, show_format_notes
from llmcalc.errors import UsageError
from llmcalc.formulas.memory import memory as compute_memory
from llmcalc.formulas.quant import format_notes, kv_dtype_for, resolve_format
from llmcalc.inputs.safetensors_index import DTypeBytes, StoredWeights
from llmcalc.model.spec import ModelSpec
from llmcalc.render import gib
from llmcalc.units import kv_option, parse_context, parse_count


def stored_weights(spec: ModelSpec, model: str) -> StoredWeights | None:
    """What the checkpoint behind MODEL stores, by dtype: a Hub repo's safetensors headers (range
    requests) or a local folder's; None when there is no checkpoint to read."""
    from llmcalc.errors import LLMCalcError
    from llmcalc.inputs import hub
    from llmcalc.inputs.safetensors_index import bytes_by_dtype, has_safetensors, read_checkpoint

    origin = spec.origin
    where = spec.name
    gguf = _gguf_rows(spec)
    if gguf is not None:
        return StoredWeights(f"{model} (GGUF tensor table)", gguf, as_computed=True)
    try:
        if origin is not None and origin.repo_id is not None:
            from llmcalc.inputs import hub

            where = f"{spec.name} (Hub, safetensors headers)"
            return StoredWeights(where, bytes_by_dtype(hub.read_checkpoint(origin.repo_id, origin.revision)))
        folder = Path(model)
        if has_safetensors(folder):
            where = str(folder)
            return StoredWeights(where, bytes_by_dtype(read_checkpoint(folder)))
    except LLMCalcError as e:
        return StoredWeights(where, error=str(e))
    return None


def _gguf_rows(spec: ModelSpec) -> tuple[DTypeBytes, ...] | None:
    """A GGUF file's bytes by ggml type, as its tensor table gives them (None for other inputs)."""
    q = spec.config.get("quantization_config")
    if not isinstance(q, dict) or q.get("quant_method") != "gguf":
        return None
    return tuple(DTypeBytes(str(k), int(v[0]), int(v[1]), int(v[2]))
                 for k, v in dict(q.get("types") or {}).items())


@handles_errors
@speaks_flags
def memory(
    models: CatalogModelsArg = None,
    ctx: CtxOpt = "4k",
    images: ImagesOpt = 0,
    source_len: SourceLenOpt = None,
    image_size: ImageSizeOpt = None,
    batch: BatchOpt = "1",
    dtype: DTypeOpt = None,
    kv_dtype: KvDTypeOpt = None,
    set_: SetOpt = None,
    part: PartOpt = None,
    family: FamilyOpt = None,
    strict: StrictOpt = False,
    revision: RevisionOpt = None,
    trust_remote_code: TrustRemoteCodeOpt = False,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    explain: ExplainOpt = False,
    attention: AttentionOpt = None,
    prefill_chunk: PrefillChunkOpt = None,
    engine: EngineOpt = None,
    ctx_size: CtxSizeOpt = None,
    batch_size: BatchSizeOpt = None,
    ubatch_size: UbatchSizeOpt = None,
    cache_type_k: CacheTypeKOpt = None,
    cache_type_v: CacheTypeVOpt = None,
    flash_attn: FlashAttnOpt = None,
    n_gpu_layers: NGpuLayersOpt = None,
    n_cpu_moe: NCpuMoeOpt = 0,
    override_tensor: OverrideTensorOpt = None,
    swa_full: SwaFullOpt = False,
    parallel: ParallelOpt = None,
    kv_unified: KvUnifiedOpt = None,
    no_mmap: NoMmapOpt = False,
) -> None:
    """Bytes of the weights and of the KV cache for a batch of sequences at a context.

    KV cache: 2 (K and V) × layers × kv heads × head dim × bytes per token, sliding-window layers
    capped at their window; for MLA models the compressed latent, with the decompressed per-head
    K and V beside it; SSM layers (Mamba, hybrids) keep a fixed state per sequence beside it. GiB
    in the table, exact bytes in --json. Several models print side by side; without MODEL, one row
    per bundled model.

    --engine llama.cpp: the buffers llama.cpp itself allocates for a GGUF under its own flags
    (model, KV K and V, recurrent state; per device), held to the engine (llama-cpp-python 0.3.36).
    """
    set_strict(strict)
    how = output_format(fmt, as_json)
    refuse_explain(explain, how)
    given = {name for name, value in (
        ("batch", None if batch == "1" else batch), ("kv_dtype", kv_dtype), ("ctx_size", ctx_size),
        ("batch_size", batch_size), ("ubatch_size", ubatch_size), ("cache_type_k", cache_type_k),
        ("cache_type_v", cache_type_v), ("flash_attn", flash_attn), ("n_gpu_layers", n_gpu_layers),
        ("n_cpu_moe", n_cpu_moe or None), ("override_tensor", override_tensor),
        ("swa_full", swa_full or None), ("parallel", parallel), ("kv_unified", kv_unified),
        ("no_mmap", no_mmap or None)) if value is not None}
    engine_flags = {"ctx_size", "batch_size", "ubatch_size", "cache_type_k", "cache_type_v",
                    "flash_attn", "n_gpu_layers", "n_cpu_moe", "override_tensor", "swa_full",
                    "parallel", "kv_unified", "no_mmap"}
    if engine is not None:
        from llmcalc.choices import EngineName, parse_engine

        chosen = parse_engine(engine)
        if chosen.name is EngineName.llama_cpp:
            from llmcalc.cli._llamacpp import engine_params

            if "batch" in given:
                raise UsageError("--batch: with --engine llama.cpp, sequences are --parallel N")
            if "kv_dtype" in given:
                raise UsageError("--kv-dtype: with --engine llama.cpp, the cache types are "
                                 "--cache-type-k and --cache-type-v")
            params = engine_params(
                ctx=ctx, ctx_size=ctx_size, batch_size=batch_size,
                ubatch_size=ubatch_size, cache_type_k=cache_type_k, cache_type_v=cache_type_v,
                flash_attn=flash_attn, n_gpu_layers=n_gpu_layers, swa_full=swa_full,
                parallel=parallel, kv_unified=kv_unified, no_mmap=no_mmap,
                version=chosen.version)
            if not models:
                raise UsageError("--engine llama.cpp needs a MODEL (a GGUF file)")
            one_model(models, "--engine llama.cpp")
            _llama_cpp(models[0], params, chosen.version, dtype, n_cpu_moe, override_tensor or [],
                       how)
            return
        raise UsageError(f"--engine {chosen}: memory follows llama.cpp's rules only "
                         "(--engine llama.cpp)")
    if given & engine_flags:
        flags = ", ".join("--" + f.replace("_", "-") for f in sorted(given & engine_flags))
        raise UsageError(f"{flags}: llama.cpp's flags go with --engine llama.cpp")
    if not models:
        if explain or set_ or family:
            raise UsageError("--explain, --set and --family need a MODEL")
        if part or images or image_size:
            raise UsageError("--part, --images and --image-size need a MODEL")
        _catalog(parse_context(ctx, option="--ctx"), parse_count(batch, option="--batch"),
                 dtype, kv_dtype, how)
        return
    if explain:
        one_model(models, "--explain")
    n_ctx = parse_context(ctx, option="--ctx")
    n_batch = parse_count(batch, option="--batch")
    n_source = None if source_len is None else parse_context(source_len, option="--source-len")
    from llmcalc.render import memory as r

    def measure(spec: ModelSpec) -> Any:
        # the weight format is each model's own (its quantization_config) unless --dtype names one
        w_dtype = resolve_format(spec, dtype)
        c_dtype = kv_option(kv_dtype) or kv_dtype_for(w_dtype)
        return compute_memory(spec, ctx=n_ctx + with_images(spec, images), batch=n_batch,
                              dtype=w_dtype, kv_dtype=c_dtype, source_len=n_source, images=images)

    from llmcalc.render.count import provenance

    specs = parts_of(image_specs_for(models, set_, family, revision, trust_remote_code,
                                     image_size=image_size), part, images=images)
    items = [(m, spec, measure(spec)) for m, spec in specs]
    # one model: what its checkpoint stores, by dtype, beside the computed weight bytes
    as_stored = not set_ and image_size is None
    stored = stored_weights(items[0][1], items[0][0]) if len(items) == 1 and as_stored else None
    data = [{**r.memory_json(x, stored), **provenance(spec)} for _, spec, x in items]
    peaks: list[dict[str, int]] = []
    if attention is not None:  # the prefill's transients beside the steady state
        from llmcalc.formulas.activations import prefill_bytes, require_supported
        from llmcalc.units import DType

        chunk = None if prefill_chunk is None else parse_context(prefill_chunk,
                                                                 option="--prefill-chunk")
        for (_, spec, x), d in zip(items, data, strict=True):
            require_supported(spec, training=False)
            t = prefill_bytes(spec, batch=n_batch, tokens=n_ctx, kernel=attention, chunk=chunk,
                              act_bytes=4 if x.dtype is DType.fp32 else 2)
            peaks.append({"steady_bytes": x.total_bytes, "prefill_bytes": t,
                          "peak_bytes": x.total_bytes + t})
            d.update(attention=attention.value, prefill_chunk=chunk, **peaks[-1])
    elif prefill_chunk is not None:
        raise UsageError("--prefill-chunk: it applies with --attention")
    emit(how, data=lambda: data if len(data) > 1 else data[0],
         grids=lambda: [r.memory_grid(items)],
         view=(lambda: r.memory_view(items[0][1], items[0][2], stored)) if len(items) == 1 else None,
         labels=[m for m, _, _ in items])
    if peaks and how is Format.table:
        for (m, _, _), p in zip(items, peaks, strict=True):
            show(Text(f"{m}: steady state {gib(p['steady_bytes'])} + prefill transients "
                      f"({attention.value if attention else ''}) {gib(p['prefill_bytes'])} = peak "
                      f"{gib(p['peak_bytes'])}"))
    if explain:
        show(*(Text(line) for line in r.explain_lines(items[0][2])))
    if len(items) > 1 or how in (Format.csv, Format.markdown):  # (the table view prints its own)
        show_format_notes(how, [(m, format_notes(spec, x.dtype)) for m, spec, x in items])


def _catalog(ctx: int, batch: int, dtype: str | None, kv_dtype: str | None, how: Format) -> None:
    """One row per bundled model: weights, KV per token, state per sequence, total at ctx × batch."""
    from llmcalc.cli._common import forward_specs
    from llmcalc.render.memory import catalog_view, memory_json

    rows = []
    specs, left_out = forward_specs()
    for stem, spec in specs:
        w_dtype = resolve_format(spec, dtype)
        c_dtype = kv_option(kv_dtype) or kv_dtype_for(w_dtype)
        rows.append((stem, compute_memory(spec, ctx=ctx, batch=batch, dtype=w_dtype,
                                          kv_dtype=c_dtype)))
    if how is Format.json:
        print_json([{"name": stem, **memory_json(r)} for stem, r in rows])
    elif how is Format.table:
        show(catalog_view(rows, ctx=ctx, left_out=left_out))
    else:
        raise UsageError(f"--format {how.value}: the catalog prints as a table or JSON")


def with_images(spec: ModelSpec, images: int) -> int:
    """Tokens ``images`` images add to the language model's context (--images)."""
    if not images:
        return 0
    from llmcalc.formulas.flops import image_tokens

    per_image = image_tokens(spec)
    if not per_image:
        raise UsageError(f"--images {images}: {spec.name} takes no images")
    return images * per_image


def _llama_cpp(model: str, params: Any, version: str | None, dtype: str | None, n_cpu_moe: int,
               override_tensor: list[str], how: Format) -> None:
    """memory --engine llama.cpp: a GGUF file's buffers in llama.cpp, per device."""
    from llmcalc.cli._llamacpp import header_for, with_build
    from llmcalc.planning.engines import llama_cpp as engine
    from llmcalc.render.llama_cpp import plan_json, plan_view

    notes: list[str] = []
    params = with_build(params, version)
    header = header_for(model, version, dtype, as_json=how is Format.json, notes=notes)
    plan = engine.plan(header, params, n_cpu_moe=n_cpu_moe, override_tensor=override_tensor)
    if how is Format.json:
        print_json({**plan_json(plan), **({"notes": notes} if notes else {})})
    elif how is Format.table:
        show(plan_view(model, plan))
    else:
        raise UsageError(f"--format {how.value}: memory --engine llama.cpp prints a table or JSON")
