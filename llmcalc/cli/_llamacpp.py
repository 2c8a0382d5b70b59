"""llama.cpp's own flags (under llama-server's long names), shared by the commands that take
``--engine llama.cpp``, and the one step that turns them into the engine's parameters."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from llmcalc.errors import UsageError

CtxSizeOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--ctx-size", metavar="N", help="With --engine llama.cpp: as --ctx, llama.cpp's "
                 "total n_ctx shared by --parallel sequences (0: the model's training context, "
                 "llama-server's default; --ctx's default 4k applies otherwise).",
                 show_default=False),
]
BatchSizeOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--batch-size", metavar="N", help="llama.cpp's logical batch (default 2048).",
                 show_default=False),
]
UbatchSizeOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--ubatch-size", metavar="N", help="llama.cpp's physical batch (default 512).",
                 show_default=False),
]
CacheTypeKOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--cache-type-k", metavar="TYPE", help="llama.cpp's K cache type: f32, f16, "
                 "bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1 (default f16).", show_default=False),
]
CacheTypeVOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--cache-type-v", metavar="TYPE", help="llama.cpp's V cache type (default f16; "
                 "a quantized one needs flash attention).", show_default=False),
]
FlashAttnOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--flash-attn", metavar="on|off|auto", help="llama.cpp's flash attention "
                 "(default auto: on for the CPU backend).", show_default=False),
]
NGpuLayersOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--n-gpu-layers", "--gpu-layers", metavar="N", help="llama.cpp's -ngl: the "
                 "output layer counts as one and goes first, the token embedding stays on the CPU "
                 "(default 0 here: llama-server's auto fits the free GPU memory, see fit).",
                 show_default=False),
]
NCpuMoeOpt = Annotated[
    int, typer.Option("--n-cpu-moe", metavar="N", help="Keep the experts of the first N layers "
                      "on the CPU (llama.cpp).")
]
OverrideTensorOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option("--override-tensor", metavar="PATTERN=BUFT", help="llama.cpp's -ot: tensors "
                 "whose name matches the regex go to that buffer type (CPU keeps them in RAM).",
                 show_default=False),
]
SwaFullOpt = Annotated[
    bool, typer.Option("--swa-full", help="llama.cpp: a full-size cache for sliding-window layers.")
]
ParallelOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--parallel", metavar="N", help="llama.cpp's sequences (server slots; default as "
                 "llama-server's auto: 4 with a unified KV cache).", show_default=False),
]
KvUnifiedOpt = Annotated[
    Optional[bool],  # noqa: UP045
    typer.Option("--kv-unified/--no-kv-unified", help="llama.cpp: one KV buffer shared by all "
                 "sequences.", show_default=False),
]
NoMmapOpt = Annotated[
    bool, typer.Option("--no-mmap", help="llama.cpp: read the weights into a buffer instead of "
                       "mapping the file.")
]


def engine_params(*, ctx: str, ctx_size: str | None, batch_size: int | None,
                  ubatch_size: int | None, cache_type_k: str | None, cache_type_v: str | None,
                  flash_attn: str | None, n_gpu_layers: int | None, swa_full: bool,
                  parallel: int | None, kv_unified: bool | None, no_mmap: bool,
                  version: str | None = None) -> Any:
    """llama.cpp's parameters: unset flags take llama-server's defaults (common/common.h
    common_params; tools/server/server.cpp: main — --parallel auto is 4 with kv_unified)."""
    from llmcalc.planning.engines.llama_cpp import LAST_OLD_PADDING_BUILD, Params
    from llmcalc.units import parse_context

    if ctx_size is not None and ctx != "4k":
        raise UsageError("--ctx and --ctx-size are the same flag: give one")
    if ctx_size is not None and ctx_size.strip() == "0":
        n_ctx = 0
    elif ctx_size is not None:
        n_ctx = parse_context(ctx_size, option="--ctx-size")
    else:
        n_ctx = parse_context(ctx, option="--ctx")
    n_parallel = 4 if parallel is None else parallel
    unified = (parallel is None) if kv_unified is None else kv_unified
    build = int(version[1:]) if version is not None and version[:1] == "b" else None
    if build is not None and build <= LAST_OLD_PADDING_BUILD and parallel is None:
        # before ggml-org/llama.cpp#16736 (2025-10, with #16812) llama-server started one slot
        # (common_params n_parallel 1) and no unified cache unless -kvu
        n_parallel, unified = 1, bool(kv_unified)
    return Params(n_ctx=n_ctx, n_batch=2048 if batch_size is None else batch_size,
                  n_ubatch=512 if ubatch_size is None else ubatch_size,
                  type_k=(cache_type_k or "f16").lower(), type_v=(cache_type_v or "f16").lower(),
                  flash_attn=_flash_attn(flash_attn),
                  n_gpu_layers=0 if n_gpu_layers is None else n_gpu_layers, swa_full=swa_full,
                  n_parallel=n_parallel, kv_unified=unified, mmap=not no_mmap, build=build)


def _flash_attn(value: str | None) -> str:
    """-fa's value: on/off/auto, and the spellings common/arg.cpp's is_truthy/is_falsey take."""
    text = (value or "auto").strip().lower()
    return {"1": "on", "true": "on", "enabled": "on", "0": "off", "false": "off",
            "disabled": "off"}.get(text, text)


NoKvOffloadOpt = Annotated[
    bool, typer.Option("--no-kv-offload", "-nkvo", hidden=True, help="With --engine llama.cpp: "
                       "the KV cache in host memory.")
]
SplitModeOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--split-mode", "-sm", hidden=True, metavar="layer|row|none", show_default=False,
                 help="With --engine llama.cpp and several GPUs: layer (default) or row splits the "
                 "layers over them, none keeps everything on the main GPU."),
]

FitTargetOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--fit-target", metavar="MiB", help="With --engine llama.cpp: GPU memory "
                 "--fit leaves free (default 1024).", show_default=False),
]


def header_for(model: str, version: str | None, dtype: str | None = None, *,
               as_json: bool = False, notes: list[str] | None = None,
               overrides: list[str] | None = None) -> Any:
    """The GGUF header --engine llama.cpp reads: a local GGUF file's, or an HF config's as
    llama.cpp's converter and llama-quantize would write it at the GGUF quant type --dtype names
    (llmcalc.planning.engines.llama_cpp_quant); its note on stderr, or added to ``notes`` for
    --json."""
    notes = [] if notes is None else notes
    from llmcalc.cli._common import show, spec_for
    from llmcalc.inputs.gguf_file import read_header
    from llmcalc.planning.engines import llama_cpp as engine

    # a build (b6490) is taken with the pinned source's rules: the KV cells differ between builds
    # only in n_ctx's padding (docs/serving-engines.md); another llama-cpp-python is refused
    if version is not None and version != engine.VERSION and not version.startswith("b"):
        raise UsageError(f"--engine llama.cpp=={version}: llmcalc follows llama-cpp-python "
                         f"{engine.VERSION}'s llama.cpp only")
    path = gguf_file(model)
    if path is not None:
        if overrides:
            raise UsageError("--set: a GGUF file is read as it is")
        if dtype is not None:
            raise UsageError(f"--dtype {dtype}: a GGUF file is loaded with its own tensor types")
        return read_header(path)
    if dtype is None:
        raise UsageError(f"{model}: --engine llama.cpp reads a GGUF file, or an HF config with a "
                         "GGUF quant type (--dtype q4_k_m, q8_0, q4_0, fp16, bf16)")
    from rich.text import Text

    from llmcalc.planning.engines.llama_cpp_quant import convert

    converted = convert(spec_for(model, overrides), dtype.lower())
    note = f"weights as {converted.mix} gives them" + (
        f"; {converted.approximate}" if converted.approximate else "")
    if as_json:
        notes.append(note)
    else:
        show(Text(f"note: {note}"))
    return converted.header


def fit_llama_cpp(model: str, version: str | None, dtype: str | None, params: Any, *,
                  ngl_given: bool,
                  n_cpu_moe: int, override_tensor: list[str], fit_target: int | None,
                  gpu: str | None, gpu_mem: str | None, how: Any, n_gpus: int = 1,
                  kv_memory: str | None = None, overrides: list[str] | None = None) -> None:
    """`fit MODEL --engine llama.cpp`: llama-server's --fit, and the command line that loads that
    plan; exit 1 where the plan does not load on the card(s). With ``n_gpus`` > 1 the plan is fitted
    to their memory together and its layers split over them as llama.cpp's --split-mode layer does
    (the KV cache per GPU: llmcalc.planning.engines.llama_cpp.kv_summary)."""
    from llmcalc.cli._common import Format, print_json, show
    from llmcalc.planning.engines.llama_cpp import cells_from_kv_bytes, kv_summary
    from llmcalc.planning.engines.llama_cpp_fit import FIT_TARGET_MIB, fit, server_command
    from llmcalc.planning.hardware import parse_bytes, require, resolve
    from llmcalc.render.llama_cpp import fit_json, fit_view

    notes: list[str] = []
    params = with_build(params, version)
    local = gguf_file(model)
    if local is None or not _engine_follows(local):
        from llmcalc.cli._common import spec_for
        from llmcalc.formulas.gguf_mix import ARCHS

        spec = spec_for(model, overrides)
        if local is not None or str(spec.config.get("model_type", "")) not in ARCHS:
            _kv_only(spec, params, ngl_given=ngl_given, gpu=gpu, gpu_mem=gpu_mem, how=how,
                     n_gpus=n_gpus, kv_memory=kv_memory, gguf=local is not None)
            return
    dtype = _nearest_quant(dtype, notes) if local is None else dtype
    if dtype is None and local is None:
        dtype = "q4_k_m"
        notes.append("no --dtype: the weights taken as Q4_K_M (the KV cache does not depend on "
                     "the weights' quant type)")
        if how is not Format.json:
            from rich.text import Text

            show(Text(f"note: {notes[-1]}"))
    header = header_for(model, version, dtype, as_json=how is Format.json, notes=notes,
                        overrides=overrides)
    if params.n_gpu_layers >= 1 << 30:  # -ngl all: every layer and the output one
        from dataclasses import replace

        from llmcalc.planning.engines.llama_cpp import hparams

        params = replace(params, n_gpu_layers=hparams(header).n_layer + 1)
    acc = resolve(gpu, memory=gpu_mem, bandwidth=None, needs=("memory",))
    require(acc, "memory_bytes")
    if n_gpus < 1:
        raise UsageError(f"--gpus {n_gpus}: at least 1")
    f = fit(header, params, free=acc.memory_bytes * n_gpus,
            margin_mib=FIT_TARGET_MIB if fit_target is None else fit_target,
            ngl_given=ngl_given, n_cpu_moe=n_cpu_moe, override_tensor=override_tensor)
    kv = kv_summary(f.plan, n_gpus=n_gpus)
    logged = None
    if kv_memory is not None:
        logged = cells_from_kv_bytes(f.plan, parse_bytes(kv_memory, option="--kv-memory"))
    if n_gpus > 1:
        notes.append(f"{n_gpus} GPUs: --fit over their memory together; layers split evenly "
                     "(--split-mode layer, equal free memory)")
    if local is None:  # an HF config: the command names the file the conversion would write
        gguf = model if dtype is None else f"{Path(model).name}-{dtype.upper()}.gguf"
    else:  # a .gguf path as given; a model Ollama pulled by its blob, which llama-server loads
        gguf = model if local == Path(model) else str(local)
    command = server_command(gguf, f)
    if how is Format.json:
        data = fit_json(f, accelerator=acc, command=command, kv=kv, n_gpus=n_gpus,
                        tokens_from_log=logged)
        print_json({**data, "notes": notes + data["notes"]})
    elif how is Format.table:
        show(fit_view(model, f, accelerator=acc, command=command, kv=kv, n_gpus=n_gpus,
                      tokens_from_log=logged))
    else:
        raise UsageError(f"--format {how.value}: fit --engine llama.cpp prints a table or JSON")
    if f.left < 0:
        raise typer.Exit(1)


def _engine_follows(path: Path) -> bool:
    """Whether llmcalc follows llama.cpp's buffers for this GGUF's architecture (llama_cpp.SUPPORTED)."""
    from llmcalc.inputs.gguf_file import read_header
    from llmcalc.planning.engines.llama_cpp import SUPPORTED

    return read_header(path).architecture in SUPPORTED


def _kv_only(spec: Any, params: Any, *, ngl_given: bool, gpu: str | None, gpu_mem: str | None,
             how: Any, n_gpus: int, kv_memory: str | None, gguf: bool = False) -> None:
    """An HF model whose GGUF llmcalc does not write, or (``gguf``) a GGUF file read back whose
    architecture's buffers llmcalc does not follow (gpt-oss): llama.cpp's KV cache alone
    (llama_cpp.spec_plan), every layer on the GPU(s) unless -ngl says otherwise; --fit is not
    run (it needs the weights' tensors), so the context is the one given (0: the model's)."""
    from llmcalc.cli._common import Format, print_json, show
    from llmcalc.planning.engines.llama_cpp import (
        VERSION,
        cells_from_kv_bytes,
        kv_summary,
        spec_plan,
    )
    from llmcalc.planning.hardware import parse_bytes, require, resolve
    from llmcalc.render.llama_cpp import kv_keys, plan_json

    acc = resolve(gpu, memory=gpu_mem, bandwidth=None, needs=("memory",))
    require(acc, "memory_bytes")
    if n_gpus < 1:
        raise UsageError(f"--gpus {n_gpus}: at least 1")
    n_layer_all = len({il for g in spec.layer_groups for il in g.layers})
    ngl = min(params.n_gpu_layers, n_layer_all + 1) if ngl_given else n_layer_all + 1
    plan = spec_plan(spec, params, n_gpu_layers=ngl)
    kv = kv_summary(plan, n_gpus=n_gpus)
    logged = None
    if kv_memory is not None:
        logged = cells_from_kv_bytes(plan, parse_bytes(kv_memory, option="--kv-memory"))
    keys = kv_keys(kv, n_gpus=n_gpus, tokens_from_log=logged)
    why = ("llmcalc does not follow llama.cpp's buffers for this GGUF's architecture" if gguf
           else "llmcalc does not write its GGUF")
    note = (f"model_type {spec.config.get('model_type')!r}: {why}, so only the KV cache is laid "
            "out (no weights, no --fit: the context as given, every layer on the GPU unless "
            "--n-gpu-layers)")
    if how is Format.json:
        print_json({"engine": "llama.cpp", "engine_version": f"llama-cpp-python=={VERSION}",
                    "gpu": acc.name, **keys, "n_ctx": plan.context.n_ctx,
                    "n_gpu_layers": ngl, "plan": plan_json(plan), "notes": [note]})
    elif how is Format.table:
        from rich.table import Table
        from rich.text import Text

        from llmcalc.limits import escape

        t = Table(title=f"{escape(spec.name)} in llama.cpp (llama-cpp-python {VERSION}): KV "
                  f"cache on {n_gpus} × {escape(acc.name)}", title_justify="left")
        t.add_column("")
        t.add_column("value", justify="right")
        t.add_row("kv_cache_bytes", f"{keys['kv_cache_bytes'] / 2**20:,.2f} MiB per GPU")
        t.add_row("kv_cache_tokens", f"{keys['kv_cache_tokens']:,}"
                  + (f" ({kv.streams} streams × {keys['kv_cache_cells']:,} cells)"
                     if kv.streams > 1 else " cells"))
        t.add_row("max_concurrency", f"{keys['max_concurrency']:,.2f} × {kv.n_ctx_seq:,} tokens")
        t.add_row("n_ctx", f"{plan.context.n_ctx:,}")
        t.add_row("--n-gpu-layers", f"{ngl:,}")
        for c in plan.caches:
            if c.layers:
                t.add_row(f"KV {c.name}", f"{c.cells:,} cells × {len(c.layers)} layers, "
                          f"{(c.k_bytes + c.v_bytes) / 2**20:,.2f} MiB")
        show(t)
        show(Text(f"note: {note}"))
    else:
        raise UsageError(f"--format {how.value}: fit --engine llama.cpp prints a table or JSON")


def with_build(params: Any, version: str | None) -> Any:
    """The parameters with the build --engine llama.cpp==bNNNN names (its padding rule:
    llmcalc.planning.engines.llama_cpp.padding)."""
    from dataclasses import replace

    if version is not None and version.startswith("b"):
        return replace(params, build=int(version[1:]))
    return params


def _nearest_quant(dtype: str | None, notes: list[str]) -> str | None:
    """A llama.cpp quant type llmcalc does not write (q1_0, q2_0 …; mxfp4 as MXFP4_MOE) as the
    nearest one it does — q8_0 from 6 bits up, q4_k_m below — said in a note: the KV cache, the
    figure --engine llama.cpp is held to, does not depend on the weights' quant type."""
    import re

    from llmcalc.formulas.gguf_mix import canonical
    from llmcalc.planning.engines.llama_cpp_quant import FTYPES

    if dtype is None or canonical(dtype) in FTYPES:
        return dtype
    if dtype.lower() == "mxfp4":  # a GGUF's MXFP4 is llama-quantize's MXFP4_MOE (llama-quant.cpp)
        notes.append(f"--dtype {dtype}: written as llama-quantize's MXFP4_MOE (3-D expert tensors "
                     "MXFP4, every other quantized tensor Q8_0)")
        return "mxfp4_moe"
    m = re.fullmatch(r"(?:i?q|tq)(\d)(?:_[a-z0-9_]+)?|(mxfp4)", dtype.lower())
    if m is None:
        return dtype  # convert() refuses it, naming the types it writes
    nearest = "q8_0" if m.group(1) is not None and int(m.group(1)) >= 6 else "q4_k_m"
    notes.append(f"--dtype {dtype}: weights taken as {nearest} (llmcalc writes the GGUF of "
                 f"{', '.join(FTYPES)}); the KV cache does not depend on them")
    return nearest


def gguf_file(model: str) -> Path | None:
    """The GGUF file on this machine that MODEL names: a .gguf path, or the blob of a model Ollama
    pulled (llmcalc.inputs.ollama); None for an HF config (a bundled name, a repo id …)."""
    from llmcalc.inputs.config import pulled
    from llmcalc.inputs.gguf_file import is_gguf_path

    if is_gguf_path(Path(model)) and Path(model).is_file():
        return Path(model)
    found = pulled(model)
    return None if found is None else found.blob



def hidden(option: Any, *short: str) -> Any:
    """The same option kept out of --help (fit lists the engines' settings in its docs page),
    with llama-server's short names too (common/arg.cpp: -c, -np, -ctk …)."""
    import copy
    import typing

    base, info = typing.get_args(option)
    info = copy.copy(info)
    info.hidden = True
    info.param_decls = (*info.param_decls, *short)
    return Annotated[base, info]


FitCtxSizeOpt = hidden(CtxSizeOpt, "-c")
FitBatchSizeOpt = hidden(BatchSizeOpt, "-b")
FitUbatchSizeOpt = hidden(UbatchSizeOpt, "-ub")
FitCacheTypeKOpt = hidden(CacheTypeKOpt, "-ctk")
FitCacheTypeVOpt = hidden(CacheTypeVOpt, "-ctv")
FitFlashAttnOpt = hidden(FlashAttnOpt, "-fa")
FitNCpuMoeOpt = hidden(NCpuMoeOpt, "-ncmoe")
FitOverrideTensorOpt = hidden(OverrideTensorOpt, "-ot")
FitSwaFullOpt = hidden(SwaFullOpt)
FitParallelOpt = hidden(ParallelOpt, "-np")
FitKvUnifiedOpt = hidden(KvUnifiedOpt, "-kvu/-no-kvu")
FitNoMmapOpt = hidden(NoMmapOpt)
