"""Numbers people type: context lengths, token counts, data types.

A suffix means one thing in every option: ``k`` = 1,024 and ``M`` = 1,048,576, as context windows
are quoted (a "4k context" holds 4,096 tokens, 128k = 131,072), for a batch, a token count or a rate
as for a context; ``B`` = 10⁹ and ``T`` = 10¹² (billion and trillion, as token budgets and
parameter counts are quoted: 2T tokens = 2·10¹²), taken where a count can reach them (not a
context). Both also take plain integers. Anything else (``12q``, ``-5``, ``0``, an empty string) is
a :class:`UsageError` naming the option.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from enum import Enum

from llmcalc.errors import UsageError
from llmcalc.limits import check_option_length

MAX_NUMBER = 2**53 - 1  # as for sizes in a config: every product stays exact and inside a float

# suffix (matched in any case) → multiplier, one table for every option: k and M binary, as
# context windows are quoted; B and T the billion and trillion of token budgets and parameter counts
CONTEXT_SUFFIXES: dict[str, int] = {"k": 2**10, "M": 2**20}
COUNT_SUFFIXES: dict[str, int] = {**CONTEXT_SUFFIXES, "B": 10**9, "T": 10**12}

_NUMBER = re.compile(r"^\s*([+-]?(?:\d+(?:\.\d+)?|\.\d+))\s*([a-z]?)\s*$", re.IGNORECASE)


def _parse(text: str, *, option: str, suffixes: dict[str, int], example: str) -> int:
    check_option_length(option, text)
    m = _NUMBER.match(text)
    by_letter = {"": 1, **{s.lower(): v for s, v in suffixes.items()}}
    multiplier = by_letter.get(m.group(2).lower()) if m else None
    if m is None or multiplier is None:
        known = ", ".join(suffixes)
        raise UsageError(
            f"{option} {text!r}: expected a positive whole number, optionally with a suffix "
            f"({known}), e.g. {example}"
        )
    try:
        value = Decimal(m.group(1)) * multiplier
    except InvalidOperation:  # pragma: no cover - the regex admits only plain decimals
        raise UsageError(f"{option} {text!r}: not a number") from None
    if value != value.to_integral_value():
        raise UsageError(f"{option} {text!r}: must come to a whole number, got {value.normalize():f}")
    if value <= 0:
        raise UsageError(f"{option} {text!r}: must be a positive number")
    if value > MAX_NUMBER:
        raise UsageError(f"{option} {text!r}: must be at most 2^53 - 1 (9,007,199,254,740,991)")
    return int(value)


# binary byte units, largest first: a size is shown in the largest one it reaches
BYTE_UNITS: tuple[tuple[str, int], ...] = (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20),
                                           ("KiB", 2**10))


def byte_unit(nbytes: float) -> tuple[str, int]:
    """The unit a size is shown in: the largest of TiB, GiB, MiB, KiB it reaches, else bytes
    (``B``). Tables, plots and the page pick units with this one function."""
    for name, size in BYTE_UNITS:
        if abs(nbytes) >= size:
            return name, size
    return "B", 1


def size_text(nbytes: float, *, unit: tuple[str, int] | None = None, digits: int = 2) -> str:
    """A size in its unit (:func:`byte_unit`, or ``unit``): 12.55 GiB, 112.31 KiB, 512 B."""
    name, size = unit or byte_unit(nbytes)
    if size == 1:
        return f"{nbytes:,.0f} B"
    return f"{nbytes / size:,.{digits}f} {name}"


def parse_context(text: str, *, option: str = "--ctx") -> int:
    """A context length in tokens: ``4096``, ``4k`` (= 4,096), ``128k`` (= 131,072), ``1M``."""
    return _parse(text, option=option, suffixes=CONTEXT_SUFFIXES, example="4096, 4k, 128k, 1M")


def parse_count(text: str, *, option: str) -> int:
    """A count (a batch, tokens, a rate): ``1000``, ``1k`` (= 1,024), ``3M`` (= 3,145,728), ``70B``
    (= 7·10¹⁰), ``2T`` (= 2·10¹²); k and M as in a context, B and T decimal."""
    return _parse(text, option=option, suffixes=COUNT_SUFFIXES, example="1000, 1k, 3M, 70B, 2T")


class DType(str, Enum):
    """Element types for weights and caches."""

    fp32 = "fp32"
    fp16 = "fp16"
    bf16 = "bf16"
    fp8 = "fp8"
    int8 = "int8"
    int4 = "int4"


# bits per element; bytes of n elements = ceil(n · bits / 8) (int4 packs two per byte)
DTYPE_BITS: dict[DType, int] = {
    DType.fp32: 32,
    DType.fp16: 16,
    DType.bf16: 16,
    DType.fp8: 8,
    DType.int8: 8,
    DType.int4: 4,
}

# other spellings people and torch use → the canonical name
DTYPE_ALIASES: dict[str, DType] = {
    "float32": DType.fp32,
    "float": DType.fp32,
    "float16": DType.fp16,
    "half": DType.fp16,
    "f16": DType.fp16,  # GGUF's and llama.cpp's spellings (llama-bench's type column, -ctk f16)
    "f32": DType.fp32,
    "bfloat16": DType.bf16,
    "float8": DType.fp8,
    "float8_e4m3fn": DType.fp8,
    "float8_e5m2": DType.fp8,
    "fp8_e4m3fn": DType.fp8,
    "fp8_e4m3": DType.fp8,
    "fp8_e5m2": DType.fp8,
    "e4m3": DType.fp8,
    "e5m2": DType.fp8,
}


def parse_dtype(text: str, *, option: str = "--dtype") -> DType:
    """``bf16`` (or ``bfloat16``, any case) → :class:`DType`; unknown names raise UsageError."""
    key = text.strip().lower()
    try:
        return DType(key)
    except ValueError:
        pass
    if key in DTYPE_ALIASES:
        return DTYPE_ALIASES[key]
    known = ", ".join(d.value for d in DType)
    if key in BLOCK_TYPES:  # parse_cache_dtype takes it
        raise UsageError(f"{option} {text!r}: a llama.cpp cache type, which latency and fit "
                         f"--engine llama.cpp take; here use one of {known}")
    raise UsageError(f"{option} {text!r}: unknown dtype; use one of {known}")


@dataclass(frozen=True)
class BlockType:
    """A llama.cpp cache type (``-ctk``/``-ctv q8_0`` …): ``block`` values stored together in
    ``size`` bytes, a scale (and for q4_1/q5_1 a minimum) beside them; f16, bf16 and f32 are
    blocks of one (``GGML_CACHE_TYPES``)."""

    value: str
    block: int
    size: int


# ggml/src/ggml-common.h, the block structs of the cache types common/arg.cpp's kv_cache_types
# takes beyond f32/f16/bf16: block_q8_0 {fp16 d; int8 qs[32]}, block_q4_0 {fp16 d; uint8 qs[16]},
# block_q4_1 {fp16 d, m; qs[16]}, block_q5_0 {fp16 d; qh[4]; qs[16]}, block_q5_1 {fp16 d, m;
# qh[4]; qs[16]}, block_iq4_nl {fp16 d; qs[16]}: 32 values each
BLOCK_TYPES: dict[str, BlockType] = {
    name: BlockType(name, 32, size)
    for name, size in (("q8_0", 34), ("q4_0", 18), ("q4_1", 20), ("q5_0", 22), ("q5_1", 24),
                       ("iq4_nl", 18))
}
# llama.cpp's unquantised cache types as ggml names them: one value a block
GGML_CACHE_TYPES: dict[str, BlockType] = {
    "f32": BlockType("f32", 1, 4), "f16": BlockType("f16", 1, 2), "bf16": BlockType("bf16", 1, 2),
    **BLOCK_TYPES,
}
CacheDType = DType | BlockType  # a cache's element type: a dtype, or one of llama.cpp's types
# --kv-dtype → llama.cpp's cache type (common/arg.cpp: kv_cache_types): int8 and int4 as the block
# types of their width; fp8 it has none
LLAMA_CPP_CACHE = {"fp16": "f16", "f16": "f16", "bf16": "bf16", "fp32": "f32", "f32": "f32",
                   "int8": "q8_0", "int4": "q4_0", **{name: name for name in BLOCK_TYPES}}


def parse_cache_dtype(text: str, *, option: str = "--kv-dtype") -> CacheDType:
    """A cache dtype (``parse_dtype``) or a llama.cpp block type (``q8_0`` …, ``BLOCK_TYPES``)."""
    key = text.strip().lower()
    if key in BLOCK_TYPES:
        return BLOCK_TYPES[key]
    try:
        return parse_dtype(text, option=option)
    except UsageError:
        known = ", ".join([*(d.value for d in DType), *BLOCK_TYPES])
        raise UsageError(f"{option} {text!r}: unknown dtype; use one of {known}") from None


def is_auto(text: str | None) -> bool:
    """``auto``: vLLM's, SGLang's and transformers' spelling of their default dtype."""
    return text is not None and text.strip().lower() == "auto"


def named(text: str | None) -> bool:
    """Whether an option names a dtype: given, and not ``auto`` (``is_auto``)."""
    return text is not None and not is_auto(text)


def kv_option(text: str | None) -> DType | None:
    """``--kv-dtype`` as given; None where it is left out or ``auto`` (``is_auto``), so the
    command's own default applies."""
    return None if text is None or is_auto(text) else parse_dtype(text, option="--kv-dtype")


def nbytes(elements: int, dtype: CacheDType) -> int:
    """Bytes that ``elements`` values take at ``dtype``, rounded up to a whole byte (a block type:
    to a whole block)."""
    if isinstance(dtype, BlockType):
        return -(-elements // dtype.block) * dtype.size
    return -(-elements * DTYPE_BITS[dtype] // 8)
