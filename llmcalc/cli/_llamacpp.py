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
                  parallel: int | None, kv_unified: bool | None, no_mmap: bool) -> Any:
    """llama.cpp's parameters: unset flags take llama-server's defaults (common/common.h
    common_params; tools/server/server.cpp: main — --parallel auto is 4 with kv_unified)."""
    from llmcalc.planning.engines.llama_cpp import Params
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
    return Params(n_ctx=n_ctx, n_batch=2048 if batch_size is None else batch_size,
                  n_ubatch=512 if ubatch_size is None else ubatch_size,
                  type_k=(cache_type_k or "f16").lower(), type_v=(cache_type_v or "f16").lower(),
                  flash_attn=(flash_attn or "auto").lower(),
                  n_gpu_layers=0 if n_gpu_layers is None else n_gpu_layers, swa_full=swa_full,
                  n_parallel=n_parallel, kv_unified=unified, mmap=not no_mmap)


FitTargetOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--fit-target", metavar="MiB", help="With --engine llama.cpp: GPU memory "
                 "--fit leaves free (default 1024).", show_default=False),
]


def header_for(model: str, version: str | None, dtype: str | None = None, *,
               as_json: bool = False, notes: list[str] | None = None) -> Any:
    """The GGUF header --engine llama.cpp reads: a local GGUF file's, or an HF config's as
    llama.cpp's converter and llama-quantize would write it at the GGUF quant type --dtype names
    (llmcalc.planning.engines.llama_cpp_quant); its note on stderr, or added to ``notes`` for
    --json."""
    notes = [] if notes is None else notes
    from llmcalc.cli._common import show, spec_for
    from llmcalc.inputs.gguf_file import is_gguf_path, read_header
    from llmcalc.planning.engines import llama_cpp as engine

    if version is not None and version != engine.VERSION:
        raise UsageError(f"--engine llama.cpp=={version}: llmcalc follows llama-cpp-python "
                         f"{engine.VERSION}'s llama.cpp only")
    path = Path(model)
    if is_gguf_path(path) and path.is_file():
        if dtype is not None:
            raise UsageError(f"--dtype {dtype}: a GGUF file is loaded with its own tensor types")
        return read_header(path)
    if dtype is None:
        raise UsageError(f"{model}: --engine llama.cpp reads a GGUF file, or an HF config with a "
                         "GGUF quant type (--dtype q4_k_m, q8_0, q4_0, fp16, bf16)")
    from rich.text import Text

    from llmcalc.planning.engines.llama_cpp_quant import convert

    converted = convert(spec_for(model, None), dtype.lower())
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
                  gpu: str | None, gpu_mem: str | None, how: Any) -> None:
    """`fit MODEL --engine llama.cpp`: llama-server's --fit on one GPU, and the command line that
    loads that plan; exit 1 where the plan does not load on the card."""
    from llmcalc.cli._common import Format, print_json, show
    from llmcalc.planning.engines.llama_cpp_fit import FIT_TARGET_MIB, fit, server_command
    from llmcalc.planning.hardware import require, resolve
    from llmcalc.render.llama_cpp import fit_json, fit_view

    notes: list[str] = []
    header = header_for(model, version, dtype, as_json=how is Format.json, notes=notes)
    acc = resolve(gpu, memory=gpu_mem, bandwidth=None, needs=("memory",))
    require(acc, "memory_bytes")
    f = fit(header, params, free=acc.memory_bytes,
            margin_mib=FIT_TARGET_MIB if fit_target is None else fit_target,
            ngl_given=ngl_given, n_cpu_moe=n_cpu_moe, override_tensor=override_tensor)
    # an HF config: the command names the file the conversion would write
    gguf = model if dtype is None else f"{Path(model).name}-{dtype.upper()}.gguf"
    command = server_command(gguf, f)
    if how is Format.json:
        data = fit_json(f, accelerator=acc, command=command)
        print_json({**data, "notes": notes + data["notes"]})
    elif how is Format.table:
        show(fit_view(model, f, accelerator=acc, command=command))
    else:
        raise UsageError(f"--format {how.value}: fit --engine llama.cpp prints a table or JSON")
    if f.left < 0:
        raise typer.Exit(1)


def hidden(option: Any) -> Any:
    """The same option kept out of --help (fit lists the engines' settings in its docs page)."""
    import copy
    import typing

    base, info = typing.get_args(option)
    info = copy.copy(info)
    info.hidden = True
    return Annotated[base, info]


FitCtxSizeOpt = hidden(CtxSizeOpt)
FitBatchSizeOpt = hidden(BatchSizeOpt)
FitUbatchSizeOpt = hidden(UbatchSizeOpt)
FitCacheTypeKOpt = hidden(CacheTypeKOpt)
FitCacheTypeVOpt = hidden(CacheTypeVOpt)
FitFlashAttnOpt = hidden(FlashAttnOpt)
FitNCpuMoeOpt = hidden(NCpuMoeOpt)
FitOverrideTensorOpt = hidden(OverrideTensorOpt)
FitSwaFullOpt = hidden(SwaFullOpt)
FitParallelOpt = hidden(ParallelOpt)
FitKvUnifiedOpt = hidden(KvUnifiedOpt)
FitNoMmapOpt = hidden(NoMmapOpt)
