"""The accelerator table and the --gpu-mem / --gpu-flops / --gpu-bandwidth parsers."""

from __future__ import annotations

import pytest

from llmcalc.errors import UsageError
from llmcalc.hardware import (
    ACCELERATORS,
    GiB,
    lookup,
    parse_bandwidth,
    parse_bytes,
    parse_flops,
    require,
    resolve,
)

# Datasheet figures: (memory GiB, bandwidth bytes/s, dense bf16 FLOP/s).
DATASHEET = {
    "a100-40gb": (40, 1_555 * 10**9, 312 * 10**12),
    "a100-80gb": (80, 2_039 * 10**9, 312 * 10**12),
    "h100": (80, 3_350 * 10**9, 989 * 10**12),
    "h200": (141, 4_800 * 10**9, 989 * 10**12),
    "b200": (180, 8_000 * 10**9, 2_250 * 10**12),
    "mi300x": (192, 5_300 * 10**9, 1_307_400 * 10**9),
    "rtx4090": (24, 1_008 * 10**9, 165_200 * 10**9),
    "l4": (24, 300 * 10**9, 121 * 10**12),
    "t4": (16, 320 * 10**9, 65 * 10**12),
}


@pytest.mark.parametrize("key", DATASHEET)
def test_table_matches_datasheets(key: str) -> None:
    acc = ACCELERATORS[key]
    mem, bw, peak = DATASHEET[key]
    assert (acc.memory_bytes, acc.bandwidth, acc.peak_flops) == (mem * GiB, bw, peak)
    assert acc.source  # every row says where its figures come from


def test_table_is_exactly_the_listed_cards() -> None:
    assert set(ACCELERATORS) == set(DATASHEET)


@pytest.mark.parametrize(
    "name,key",
    [("H100", "h100"), ("a100", "a100-80gb"), ("A100_40GB", "a100-40gb"), ("4090", "rtx4090"),
     ("MI300X", "mi300x")],
)
def test_lookup_names(name: str, key: str) -> None:
    assert lookup(name).key == key


def test_unknown_gpu_lists_the_known_ones() -> None:
    with pytest.raises(UsageError) as e:
        lookup("v100")
    # the core names resolve()'s parameters; the CLI says --gpu, --gpu-mem, --gpu-flops
    assert str(e.value) == (
        "gpu v100: unknown accelerator; known: a100-40gb, a100-80gb, h100, h200, b200, mi300x, "
        "rtx4090, l4, t4 (or describe one with memory and flops)"
    )


@pytest.mark.parametrize(
    "text,value",
    [("80GiB", 80 * 2**30), ("80GB", 80 * 10**9), ("24 gib", 24 * 2**30), ("1.5TiB", 3 * 2**39),
     ("512MiB", 2**29), ("1e9", 10**9), ("2048", 2048)],
)
def test_parse_bytes(text: str, value: int) -> None:
    assert parse_bytes(text) == value


@pytest.mark.parametrize(
    "text,value",
    [("989T", 989 * 10**12), ("989TFLOPS", 989 * 10**12), ("2.25P", 2_250 * 10**12),
     ("1307.4T", 1_307_400 * 10**9), ("312e12", 312 * 10**12), ("100 TFLOP/s", 10**14)],
)
def test_parse_flops(text: str, value: int) -> None:
    assert parse_flops(text) == value


@pytest.mark.parametrize(
    "text,value",
    [("3.35TB/s", 3_350 * 10**9), ("900GB/s", 9 * 10**11), ("8T", 8 * 10**12), ("300 GBps", 3 * 10**11)],
)
def test_parse_bandwidth(text: str, value: int) -> None:
    assert parse_bandwidth(text) == value


@pytest.mark.parametrize(
    "parse,text,message",
    [
        (parse_bytes, "80 gigs", "--gpu-mem 80 gigs: expected a size such as 80GiB or 24GB"),
        (parse_bytes, "0GB", "--gpu-mem 0GB: must be more than zero"),
        (parse_flops, "fast", "--gpu-flops fast: expected a rate such as 989T or 2.25PFLOPS"),
        (parse_bandwidth, "-1TB/s",
         "--gpu-bandwidth -1TB/s: expected a bandwidth such as 3.35TB/s or 900GB/s"),
    ],
)
def test_parse_errors(parse, text: str, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UsageError) as e:
        parse(text)
    assert str(e.value) == message


def test_resolve_custom_and_override() -> None:
    custom = resolve(None, memory="48GiB", flops="181T")
    assert (custom.memory_bytes, custom.peak_flops, custom.bandwidth) == (48 * GiB, 181 * 10**12, 0)
    assert custom.source == "--gpu-mem 48GiB, --gpu-flops 181T"
    h100 = resolve("h100", flops="700T")  # a measured peak in place of the datasheet's
    assert (h100.memory_bytes, h100.peak_flops) == (80 * GiB, 700 * 10**12)
    assert h100.source.startswith("--gpu-flops 700T; otherwise NVIDIA H100 datasheet")
    with pytest.raises(UsageError) as e:
        require(custom, "memory_bytes", "bandwidth")
    assert str(e.value) == "--gpu-bandwidth is required without --gpu (or pick one with --gpu h100)"


def test_resolve_needs_something() -> None:
    with pytest.raises(UsageError) as e:
        resolve(None)
    assert str(e.value) == "--gpu is required (e.g. --gpu h100), or give --gpu-mem and --gpu-flops"
