"""Numbers people type: a suffix means one thing in every option (k = 1,024, M = 1,048,576 for a
context as for a count; B and T decimal), dtypes; exact error text and exit 2."""

from __future__ import annotations

import pytest

from llmcalc.errors import UsageError
from llmcalc.units import DTYPE_BITS, DType, nbytes, parse_context, parse_count, parse_dtype

CTX_HINT = "expected a positive whole number, optionally with a suffix (k, M), e.g. 4096, 4k, 128k, 1M"


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("4k", 4096), ("128k", 131_072), ("128K", 131_072), ("1M", 1_048_576), ("1m", 1_048_576),
     ("4096", 4096), ("1.5k", 1536), (" 32k ", 32_768), ("+8", 8)],
)
def test_context_is_binary(text: str, tokens: int) -> None:
    assert parse_context(text) == tokens


@pytest.mark.parametrize(
    ("text", "count"),
    [("2T", 2 * 10**12), ("3M", 3_145_728), ("70B", 70 * 10**9), ("1000", 1000),
     ("15k", 15_360), ("1k", 1024), ("1.5k", 1536), ("1m", 1_048_576), ("1.4t", 1_400_000_000_000)],
)
def test_count_suffixes(text: str, count: int) -> None:
    """k and M as a context reads them; B and T, which no context takes, decimal."""
    assert parse_count(text, option="--tokens") == count


@pytest.mark.parametrize("text", ["1k", "4k", "128k", "1M", "1.5k", "2m"])
def test_a_suffix_means_one_thing_in_every_option(text: str) -> None:
    assert parse_count(text, option="--batch") == parse_context(text) == parse_count(
        text, option="--gen")


def test_a_count_that_is_not_whole_in_binary_is_refused() -> None:
    """3.2M tokens is 3,355,443.2 in binary: refused in one line, never rounded silently."""
    with pytest.raises(UsageError) as e:
        parse_count("3.2M", option="--tokens")
    assert str(e.value) == "--tokens '3.2M': must come to a whole number, got 3355443.2"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("12q", f"--ctx '12q': {CTX_HINT}"),
        ("", f"--ctx '': {CTX_HINT}"),
        ("1e3", f"--ctx '1e3': {CTX_HINT}"),
        ("k", f"--ctx 'k': {CTX_HINT}"),
        ("-5", "--ctx '-5': must be a positive number"),
        ("0", "--ctx '0': must be a positive number"),
        ("0k", "--ctx '0k': must be a positive number"),
        ("0.5", "--ctx '0.5': must come to a whole number, got 0.5"),
        ("1.0001k", "--ctx '1.0001k': must come to a whole number, got 1024.1024"),
    ],
)
def test_bad_context(text: str, message: str) -> None:
    with pytest.raises(UsageError) as e:
        parse_context(text)
    assert str(e.value) == message


def test_bad_count_names_its_option() -> None:
    with pytest.raises(UsageError) as e:
        parse_count("12q", option="--tokens")
    assert str(e.value) == (
        "--tokens '12q': expected a positive whole number, optionally with a suffix "
        "(k, M, B, T), e.g. 1000, 1k, 3M, 70B, 2T"
    )
    with pytest.raises(UsageError, match=r"^--batch '-5': must be a positive number$"):
        parse_count("-5", option="--batch")


def test_dtype_table_covers_every_dtype() -> None:
    assert {d: DTYPE_BITS[d] for d in DType} == {
        DType.fp32: 32, DType.fp16: 16, DType.bf16: 16, DType.fp8: 8, DType.int8: 8, DType.int4: 4
    }


@pytest.mark.parametrize(
    ("text", "dtype"),
    [("bf16", DType.bf16), ("BF16", DType.bf16), ("bfloat16", DType.bf16), ("float32", DType.fp32),
     ("half", DType.fp16), ("int4", DType.int4), ("float8_e4m3fn", DType.fp8),
     ("F16", DType.fp16), ("f32", DType.fp32)],  # GGUF's spellings (llama-bench's type column)
)
def test_parse_dtype(text: str, dtype: DType) -> None:
    assert parse_dtype(text, option="--dtype") is dtype


def test_unknown_dtype() -> None:
    with pytest.raises(UsageError) as e:
        parse_dtype("fp7", option="--kv-dtype")
    assert str(e.value) == "--kv-dtype 'fp7': unknown dtype; use one of fp32, fp16, bf16, fp8, int8, int4"


def test_nbytes_rounds_up_to_whole_bytes() -> None:
    assert nbytes(3, DType.int4) == 2  # 12 bits: one and a half bytes, stored in two
    assert nbytes(4, DType.int4) == 2
    assert nbytes(3, DType.bf16) == 6
    assert nbytes(0, DType.fp32) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["flops", "gpt2", "--ctx", "12q"], f"error: --ctx '12q': {CTX_HINT}\n"),
        (["flops", "gpt2", "--ctx", "-5"], "error: --ctx '-5': must be a positive number\n"),
        (["flops", "gpt2", "--ctx", "0"], "error: --ctx '0': must be a positive number\n"),
        (["flops", "gpt2", "--tokens", "0"], "error: --tokens '0': must be a positive number\n"),
        (["flops", "--batch", "0"], "error: --batch '0': must be a positive number\n"),
        (["memory", "gpt2", "--ctx", "12q"], f"error: --ctx '12q': {CTX_HINT}\n"),
        (["memory", "gpt2", "--dtype", "fp7"],
         "error: --dtype 'fp7': unknown dtype; use one of fp32, fp16, bf16, fp8, int8, int4, or a "
         "quantized format: nf4, fp4, nf4-nodq, mxfp4, q8_0, q4_0, q4_k_m, fp8-channel, w8a8, fp8-block, "
         "fp8-fp4, nvfp4, "
         "gptq, awq, or a llama-quantize type: q4_1, q5_0, q5_1, mxfp4_moe, q2_k, q2_k_s, q3_k_s, "
         "q3_k_m, q3_k_l, q4_k_s, q5_k_s, q5_k_m, q6_k, iq2_xxs, iq2_xs, iq2_s, iq2_m, iq3_xxs, "
         "iq3_xs, iq3_s, iq3_m, iq1_s, iq1_m, iq4_nl, iq4_xs, tq1_0, tq2_0\n"),
        (["memory", "gpt2", "--kv-dtype", "int3"],
         "error: --kv-dtype 'int3': unknown dtype; use one of fp32, fp16, bf16, fp8, int8, int4\n"),
    ],
)
def test_cli_number_errors(cli, args: list[str], message: str) -> None:
    r = cli(*args)
    assert (r.code, r.stdout, r.stderr) == (2, "", message)


@pytest.mark.parametrize("command", ["flops", "memory"])
def test_help_explains_the_number_syntax(cli, command: str) -> None:
    r = cli(command, "--help")
    assert r.code == 0
    text = " ".join(r.stdout.translate({ord(c): " " for c in "│╭╮╰╯─"}).split())  # unwrap the box
    for phrase in ("4k = 4,096", "128k = 131,072", "1M = 1,048,576"):
        assert phrase in text
    if command == "flops":  # --batch and --tokens read k and M as --ctx does
        assert "--batch N Sequences per forward pass; scales the per-sequence figures (k and M as " \
            "for --ctx: 1k = 1,024, 1M = 1,048,576)." in text
        assert "1k = 1,024, 1M = 1,048,576; B and T decimal, as token budgets are quoted: 70B = " \
            "7·10¹⁰, 2T = 2·10¹²." in text
    else:
        assert "fp32, fp16, bf16, fp8, int8, int4" in text
