"""Options that several commands share, declared once; help texts are built from the tables
(:class:`~llmcalc.units.DType`) and the parsers (:mod:`llmcalc.units`), not typed out by hand."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Optional, ParamSpec, TypeVar

import typer

from llmcalc.errors import ParameterError, UsageError
from llmcalc.units import BLOCK_TYPES, DType, parse_context, parse_count

P = ParamSpec("P")
R = TypeVar("R")

SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def _decimal(value: int) -> str:
    """3,200,000; from 10⁹ on, a round count as a power of ten: 70B → 7·10¹⁰."""
    digits = str(value)
    zeros = len(digits) - len(digits.rstrip("0"))
    if value < 10**9 or not zeros:
        return f"{value:,}"
    return f"{value // 10**zeros}·10{str(zeros).translate(SUPERSCRIPT)}"


def _worked(examples: tuple[str, ...], parse: Callable[[str], int]) -> str:
    """'4k = 4,096, 128k = 131,072' — each example read by the parser the option uses."""
    return ", ".join(f"{ex} = {_decimal(parse(ex))}" for ex in examples)


DTYPES = ", ".join(d.value for d in DType)
CONTEXT_SUFFIXES = (
    "binary suffixes, as context windows are quoted: "
    + _worked(("4k", "128k", "1M"), parse_context)
)
# every count takes k and M as a context does (one meaning for a suffix in every option)
COUNT_SUFFIXES = (
    "k and M as for --ctx: "
    + _worked(("1k", "1M"), lambda ex: parse_count(ex, option="--batch"))
)
TOKEN_SUFFIXES = (
    COUNT_SUFFIXES + "; B and T decimal, as token budgets are quoted: "
    + _worked(("70B", "2T"), lambda ex: parse_count(ex, option="--tokens"))
)

KvDTypeOpt = Annotated[
    Optional[str],  # noqa: UP045 - typer reads this annotation at run time
    typer.Option("--kv-dtype", metavar="DTYPE",
                 help=f"KV-cache dtype: {DTYPES}; default (or auto): --dtype (bf16 or fp16 "
                 "beside a quantized format).",
                 show_default=False),
]
CacheDTypeOpt = Annotated[  # latency: a llama.cpp block cache type too
    Optional[str],  # noqa: UP045 - typer reads this annotation at run time
    typer.Option("--kv-dtype", metavar="DTYPE",
                 help=f"KV-cache dtype: {DTYPES}, or llama.cpp's -ctk/-ctv "
                 f"{', '.join(BLOCK_TYPES)}; default: --dtype (bf16 or fp16 beside a quantized "
                 "format; llama.cpp's f16); auto: an engine's 'model data type' (bf16 beside FP8 "
                 "weights), else the default.",
                 show_default=False),
]
CtxOpt = Annotated[
    str, typer.Option("--ctx", metavar="CTX", help=f"Context length in tokens; {CONTEXT_SUFFIXES}.")
]
TrainCtxOpt = Annotated[
    str, typer.Option("--ctx", metavar="CTX", help=f"Training sequence length in tokens; {CONTEXT_SUFFIXES}.")
]
BatchOpt = Annotated[
    str,
    typer.Option("--batch", metavar="N", help="Sequences per forward pass; scales the per-sequence figures "
                 f"({COUNT_SUFFIXES})."),
]
TokensOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--tokens", metavar="TOKENS", help=f"A training token budget; {TOKEN_SUFFIXES}.",
                 show_default=False),
]
ImagesOpt = Annotated[
    int,
    typer.Option("--images", metavar="N", min=0,
                 help="Images per sequence (a vision–language model): each adds its image tokens "
                 "to the context (--ctx counts the text) and its vision encoder's FLOPs."),
]
SourceLenOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--source-len", metavar="TOKENS",
                 help="An encoder–decoder's encoder tokens (the source sequence; --ctx counts the "
                 "decoder's; 1k = 1,024 as for --ctx); default: --ctx.", show_default=False),
]
ImageSizeOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--image-size", metavar="PIXELS", min=1,
                 help="Side in pixels of a square input image, for a vision–language model's "
                 "per-image figures (a tower that resizes every image to its own size ignores it); "
                 "default: the tower's image size.", show_default=False),
]


def image_size_override(image_size: int | None, overrides: list[str] | None) -> list[str] | None:
    """--image-size as the field whole-model configs read for it (image_size, llmcalc's own)."""
    if image_size is None:
        return overrides
    return [*(overrides or []), f"image_size={image_size}"]


# Core parameters whose flag is not simply --name-with-dashes.
FLAGS = {"memory": "--gpu-mem", "flops": "--gpu-flops", "bandwidth": "--gpu-bandwidth"}


def flag(parameter: str) -> str:
    """The command-line spelling of a core function's parameter: micro_batch → --micro-batch."""
    return FLAGS.get(parameter, "--" + parameter.replace("_", "-"))


def speaks_flags(func: Callable[P, R]) -> Callable[P, R]:
    """Reword a core :class:`ParameterError` in the flags the person typed (--gpus, not gpus)."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except ParameterError as e:
            raise UsageError(e.spelled(flag)) from None

    return wrapper


EngineOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--engine", metavar="NAME[==VERSION]",
                 help="Follow an inference engine's own rules: llama.cpp, vllm, sglang, trtllm, "
                 "transformers (a version as vllm==0.6; default: the version llmcalc follows).",
                 show_default=False),
]
