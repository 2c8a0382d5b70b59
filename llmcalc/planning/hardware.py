"""Accelerators: memory, memory bandwidth and dense bf16 peak, each from its vendor's datasheet.

Conventions (one for every row, so figures compare):
- ``memory_bytes``: the capacity on the datasheet read in binary units (an "80 GB" card holds
  80 GiB of HBM); runtimes reserve a little of it, which the planners' headroom covers.
- ``bandwidth``: bytes/s, decimal as vendors quote it (3.35 TB/s = 3.35·10¹²).
- ``peak_flops``: dense (no 2:4 sparsity) bf16 tensor-core FLOP/s with fp32 accumulation; where a
  datasheet gives only the sparse figure it is halved, and the source says so; 0 where the vendor
  publishes no such figure (consumer cards and Apple silicon often do not): commands that need it
  ask for ``--gpu-flops``.
- ``fp16_flops``, ``int8_ops``, ``fp8_flops``, ``fp4_flops``: the dense peaks of the other formats
  an engine may compute in (FP16 with FP16 accumulation, INT8, FP8, FP4 on Blackwell), each with
  ``peaks_source``; 0 where none was read. ``--gpu-flops`` replaces only ``peak_flops``: these
  still apply. A figure derived from another (a GeForce card's FP4-with-sparsity "AI TOPS" at the
  ratios of its architecture's whitepaper figures) says so in its source.
- Apple silicon: ``memory_bytes`` is the share of unified memory macOS lets the GPU wire (2/3 up
  to 36 GB, 3/4 above), the whole in ``unified_bytes``.

The rows live in ``hardware.json`` beside this module (one per card, with its source).

``--gpu-mem 80GiB --gpu-flops 989T --gpu-bandwidth 3.35TB/s`` describe a card that is not listed
(or change one field of a listed one).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path

from llmcalc.errors import ParameterError, UsageError
from llmcalc.limits import MAX_OPTION_CHARS, check_option_length

GiB = 1024**3
TB = 10**12
T = 10**12
PREFIXES = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "p": 10**15, "e": 10**18}


@dataclass(frozen=True)
class Accelerator:
    """One accelerator: what the planners need, and where each figure comes from.

    ``memory_bytes`` is what the accelerator's own work may use: a discrete card's memory, or the
    share of an Apple chip's unified memory macOS lets the GPU wire (``unified_bytes`` is the
    whole); ``peak_flops`` is 0 where the vendor publishes no dense figure this table can use."""

    key: str
    name: str
    memory_bytes: int
    bandwidth: int  # bytes/s
    peak_flops: int  # dense bf16 FLOP/s; 0: not published
    source: str
    kind: str = "custom"  # datacenter, workstation, consumer, apple, custom
    unified_bytes: int = 0  # Apple silicon: the unified memory the GPU shares
    cuda_bytes: int = 0  # the memory CUDA reports (a cited log's figure); 0: none logged
    # dense tensor peaks of the other formats (0: none published): FP16 with FP16 accumulation
    # (GeForce runs it at twice its FP32-accumulate rate), INT8 and FP8
    fp16_flops: int = 0
    int8_ops: int = 0
    fp8_flops: int = 0
    peaks_source: str = ""
    fp4_flops: int = 0  # FP4 (NVFP4/MXFP4 block-scaled) tensor peak: Blackwell
    # dense FP16 tensor FLOP per SM and clock over a GeForce SM's 1,024 (A100 2, H100/H200 4, B200
    # 8), from which llama.cpp's MMQ share of a data-centre card's peak is read (with the Hopper
    # SM's mma.sync rate: llmcalc.planning.speed.mmq_sm_rate); 1 for the rest
    sm_rate: int = 1
    # the GPU's published maximum boost clock in MHz and where it is read (0: not in the table):
    # a decode step's per-layer kernels on CUDA take time in GPU cycles (speed.CLOCK_MHZ)
    boost_mhz: int = 0
    clock_source: str = ""

    @property
    def maker(self) -> str:
        """Whose GPU a table card is: "nvidia", "amd", "intel" or "apple" (the first word of its
        name); "" for a card given by its figures alone."""
        if self.kind == "custom":
            return ""
        first = self.name.split(maxsplit=1)[0].lower()
        return first if first in ("nvidia", "amd", "intel", "apple") else ""


TABLE = Path(__file__).with_name("hardware.json")


def _figure(text: str | None) -> int:
    """``"3.35T"`` → 3.35·10¹² (an exact decimal, never a float; the table's figures are plain
    decimals, read digit by digit rather than through Fraction: 720 of them at every start)."""
    if text is None:
        return 0
    whole, _, tenths = text[:-1].partition(".")
    return int(int(whole + tenths) * PREFIXES[text[-1].lower()] // 10 ** len(tenths))


def _apple_share(unified: int, rules: dict[str, str]) -> Fraction:
    return Fraction(rules["up_to_36gib"] if unified <= 36 * GiB else rules["above"])


# the maker's words a card's name (as nvidia-smi, rocm-smi or the table's name field print it)
# begins with, dropped one at a time: "NVIDIA GeForce RTX 4090" is rtx-4090, "AMD Instinct MI300X"
# mi300x, "AMD Radeon 8060S" radeon-8060s, "Apple M3 Max 40-core GPU" m3-max-40c (an alias of
# apple-m3-max); and nvidia-smi's "Generation" after an Ada card's name ("NVIDIA RTX 6000 Ada
# Generation" is rtx-6000-ada)
VENDOR_WORDS = ("nvidia-", "geforce-", "tesla-", "amd-", "instinct-", "radeon-", "intel-", "apple-")


def _normal(name: str) -> str:
    """A card name as keys are spelt: lower case, ``-`` for spaces and ``_``."""
    return "-".join(name.strip().lower().replace("_", "-").split())


# a GPU core count as Apple's and system_profiler's names write it ("M3 Max 40-core GPU",
# "40-Core") read as the table's keys spell it (apple-m3-max-40c)
_CORES = re.compile(r"-(\d+)-?cores?(?:-gpu)?$")


def _spellings(key: str) -> list[str]:
    """``key``, then without each maker's word it begins with (``VENDOR_WORDS``) in turn, each
    also without a trailing ``-generation``, and with a core count as ``-40c``."""
    out = [key]
    while word := next((w for w in VENDOR_WORDS if out[-1].startswith(w)), None):
        out.append(out[-1][len(word):])
    out += [k.removesuffix("-generation") for k in out if k.endswith("-generation")]
    return [*out, *(_CORES.sub(r"-\1c", k) for k in out if _CORES.search(k))]


def _load() -> tuple[dict[str, Accelerator], dict[str, str], dict[str, str], str]:
    """The table file: accelerators by key, aliases, each card's link, Apple's usable share note."""
    data = json.loads(TABLE.read_text(encoding="utf-8"))
    rules = data["apple_usable"]
    accs: dict[str, Accelerator] = {}
    aliases: dict[str, str] = {}
    links: dict[str, str] = {}
    for row in data["accelerators"]:
        memory = row["memory_gib"] * GiB
        unified = memory if row["kind"] == "apple" else 0
        usable = int(memory * _apple_share(memory, rules)) if unified else memory
        source = row["source"] + (f"; {rules['source']}" if unified else "")
        cuda = int(Fraction(row["cuda_gib"]) * GiB) if row.get("cuda_gib") else 0
        accs[row["key"]] = Accelerator(
            row["key"], row["name"], usable, _figure(row["bandwidth"]), _figure(row["flops"]),
            source, row["kind"], unified, cuda, _figure(row.get("fp16_flops")),
            _figure(row.get("int8_ops")), _figure(row.get("fp8_flops")), row.get("peaks_source", ""),
            _figure(row.get("fp4_flops")), row.get("sm_rate", 1), row.get("boost_mhz", 0),
            row.get("clock_source", ""))
        aliases.update(dict.fromkeys(row["aliases"], row["key"]))
        aliases.setdefault(_spellings(_normal(row["name"]))[-1], row["key"])  # "NVIDIA H100 PCIe"
        if row["link"]:
            links[row["key"]] = row["link"]
    return accs, aliases, links, rules["source"]


ACCELERATORS, ALIASES, DEFAULT_INTERCONNECT, APPLE_USABLE = _load()


@dataclass(frozen=True)
class Interconnect:
    """A GPU-to-GPU link: bytes/s in each direction (datasheets quote both directions together)."""

    key: str
    name: str
    bandwidth: int  # bytes/s one way, decimal
    source: str


def _link(key: str, name: str, *, gb_s_total: int, source: str) -> Interconnect:
    return Interconnect(key, name, gb_s_total * 10**9 // 2, source)


INTERCONNECTS: dict[str, Interconnect] = {
    i.key: i
    for i in (
        _link("nvlink2", "NVLink 2 (V100 SXM2)", gb_s_total=300,
              source="Dell EMC Ready Solutions for AI, Deep Learning with NVIDIA, reference guide "
                     "v1.0, p. 17 (manualshelf.com copy): V100-SXM2 NVLink Uni-direction "
                     "Bandwidth 150 GB/s"),
        _link("nvlink3", "NVLink 3 (A100 SXM)", gb_s_total=600,
              source="NVIDIA A100 datasheet: NVLink 600GB/s (both directions)"),
        _link("nvlink4", "NVLink 4 (H100/H200 SXM)", gb_s_total=900,
              source="NVIDIA H100 datasheet: NVLink 900GB/s (both directions)"),
        _link("nvlink5", "NVLink 5 (B200)", gb_s_total=1800,
              source="NVIDIA HGX B200 datasheet: NVLink 1.8TB/s per GPU (both directions)"),
        _link("infinity-fabric", "AMD Infinity Fabric (MI300X)", gb_s_total=896,
              source="AMD Instinct MI300X datasheet: 896 GB/s peak Infinity Fabric bandwidth"),
        _link("pcie5", "PCIe 5.0 x16", gb_s_total=128,
              source="NVIDIA H100 PCIe datasheet: PCIe Gen5 128GB/s (both directions)"),
        _link("pcie4", "PCIe 4.0 x16", gb_s_total=64,
              source="NVIDIA A100 datasheet: PCIe Gen4 64GB/s (both directions)"),
        _link("pcie3", "PCIe 3.0 x16", gb_s_total=32,
              source="NVIDIA T4 datasheet: PCIe Gen3 x16, 32GB/s (both directions)"),
    )
}

def interconnect(name: str | None, acc: Accelerator) -> Interconnect:
    """``--interconnect NAME``, or the card's own link (PCIe 4.0 for a custom card)."""
    key = (name or DEFAULT_INTERCONNECT.get(acc.key, "pcie4")).strip().lower()
    if key not in INTERCONNECTS:
        raise ParameterError("{interconnect} {name}: unknown link; known: {known}",
                             name=name, known=", ".join(INTERCONNECTS))
    return INTERCONNECTS[key]


# Unit suffixes: decimal (kB, MB, GB, TB) and binary (KiB, MiB, GiB, TiB) bytes; decimal prefixes
# for FLOP/s and bandwidth.
BYTE_UNITS = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}

_NUMBER = r"(\d+(?:\.\d*)?|\.\d+)(?:e([+-]?\d+))?"
_BYTES = re.compile(rf"^{_NUMBER}\s*([kmgt]i?b|b)?$", re.IGNORECASE)
_RATE = re.compile(rf"^{_NUMBER}\s*([kmgtpe]?)\s*(?:flop/?s|flops)?$", re.IGNORECASE)
_BANDWIDTH = re.compile(rf"^{_NUMBER}\s*([kmgt]?)b?\s*(?:/s|ps)?$", re.IGNORECASE)


# Share of a card's memory a plan leaves free: the runtime (CUDA context, communication buffers),
# allocator fragmentation and, for serving, activations. ``fit`` and ``train`` both use it.
DEFAULT_HEADROOM = 0.10


def check_headroom(headroom: float) -> None:
    if not 0 <= headroom < 1:
        raise ParameterError(
            "{headroom} {value:g}: must be a fraction in [0, 1), e.g. 0.1", value=headroom
        )


def usable_memory(memory_bytes: int, *, headroom: float) -> int:
    """memory × (1 − headroom), rounded down; exact (0.1 is taken as 1/10, not as a float)."""
    check_headroom(headroom)
    return int(memory_bytes * (1 - Fraction(repr(headroom))))


NOT_IN_TABLE = "(not in the table: the figures given describe it)"


# a memory size in a card's name, as nvidia-smi and shops write it ("NVIDIA A100 80GB PCIe", "RTX
# 3090 24GB", "H100 80 GB"): the key it spells with the size joined ("A100 40 GB" is a100-40gb),
# else the card the name names without it, where that is the table card's memory (another size is
# another card: an M3 Max's 64 GB is not the table's 128 GB one); at most four ASCII digits
_MEMORY = re.compile(r"-([0-9]{1,4})-?gb(?=-|$)")


def _memory_gb(acc: Accelerator) -> int:
    """The memory a table card's datasheet names, in GB as its name writes it (an Apple chip's
    unified memory; the table reads "80 GB" as 80 GiB, ``memory_bytes``)."""
    return (acc.unified_bytes or acc.memory_bytes) // GiB


def _table_key(name: str) -> str | None:
    """The table key ``--gpu NAME`` names (a key, an alias or a spelling of either), else None."""
    return next((ALIASES.get(k, k) for k in _spellings(name) if ALIASES.get(k, k) in ACCELERATORS),
                None)


def _key(name: str) -> tuple[str | None, str]:
    """The table key of ``--gpu NAME`` (``_table_key``, else the name without its memory size
    where the card has that memory: ``_MEMORY``), and what was read of a memory size the card
    does not have ("" where none)."""
    normal = _normal(name)
    if (key := _table_key(normal)) is not None or not (size := _MEMORY.search(normal)):
        return key, ""
    if (key := _table_key(_MEMORY.sub(r"-\1gb", normal, count=1))) is not None:
        return key, ""  # "A100 40 GB": a100-40gb
    key = _table_key(normal[:size.start()] + normal[size.end():])
    if key is None or _memory_gb(ACCELERATORS[key]) == int(size[1]):
        return key, ""
    return None, f"; the table's {key} has {_memory_gb(ACCELERATORS[key])} GB, not {int(size[1])}"


def in_table(name: str) -> bool:
    """Whether ``--gpu NAME`` is a table card (or one of its aliases)."""
    return _key(name)[0] is not None


def lookup(name: str, *, needs: tuple[str, ...] = ("memory", "flops")) -> Accelerator:
    """The table row for ``--gpu NAME`` (case-insensitive; a100 means the 80 GB one; a memory size
    in the name read as ``_key`` reads it); ``needs`` names the figures a custom card must then be
    given (the options the command has)."""
    key, other_memory = _key(name)
    if key is None:
        known = ", ".join(ACCELERATORS)
        raise ParameterError(
            "{gpu} {name}: unknown accelerator{other_memory}; known: {known} "
            f"(or describe it with {_given(needs)})",
            name=name, known=known, other_memory=other_memory,
        )
    return ACCELERATORS[key]


MAX_EXPONENT = 30  # 1e30 bytes or FLOP/s is far past any card; a larger exponent is a typo


def _number(mantissa: str, exponent: str | None) -> Fraction:
    value = Fraction(mantissa)
    if exponent:
        e = int(exponent)
        if abs(e) > MAX_EXPONENT:
            raise UsageError(f"exponent e{exponent} is out of range (at most ±{MAX_EXPONENT})")
        value *= Fraction(10) ** e
    return value


def _whole(value: Fraction, text: str, option: str, unit: str, units: str, example: str) -> int:
    """``value`` in whole units; a positive figure under one unit (``--gpu-flops 0.4``: 0.4 FLOP/s)
    is refused by name rather than dropped to 0, which would read as the option not given."""
    if value <= 0:
        raise UsageError(f"{option} {text}: must be more than zero")
    if value < 1:
        raise UsageError(f"{option} {text}: under 1 {unit} (a figure without a unit is in "
                         f"{units}); give a unit, e.g. {example}")
    return int(value)  # a fraction of a byte or a FLOP/s is dropped


def parse_bytes(text: str, *, option: str = "--gpu-mem") -> int:
    """``80GiB`` → 85,899,345,920; ``80GB`` → 80·10⁹ (GB is decimal, GiB binary)."""
    check_option_length(option, text)
    m = _BYTES.match(text.strip())
    if not m:
        raise UsageError(f"{option} {text}: expected a size such as 80GiB or 24GB")
    unit = (m.group(3) or "").lower()
    return _whole(_number(m.group(1), m.group(2)) * BYTE_UNITS[unit], text, option, "byte",
                  "bytes", "24GB")


def parse_flops(text: str, *, option: str = "--gpu-flops") -> int:
    """``989T`` or ``989TFLOPS`` → 989·10¹² FLOP/s; ``2.25P`` → 2.25·10¹⁵."""
    check_option_length(option, text)
    m = _RATE.match(text.strip())
    if not m:
        raise UsageError(f"{option} {text}: expected a rate such as 989T or 2.25PFLOPS")
    return _whole(_number(m.group(1), m.group(2)) * PREFIXES[m.group(3).lower()], text, option,
                  "FLOP/s", "FLOP/s", "989T for 989 TFLOP/s")


def parse_bandwidth(text: str, *, option: str = "--gpu-bandwidth") -> int:
    """``3.35TB/s`` → 3.35·10¹² bytes/s (decimal, as vendors quote bandwidth)."""
    check_option_length(option, text)
    m = _BANDWIDTH.match(text.strip())
    if not m:
        raise UsageError(f"{option} {text}: expected a bandwidth such as 3.35TB/s or 900GB/s")
    return _whole(_number(m.group(1), m.group(2)) * PREFIXES[m.group(3).lower()], text, option,
                  "byte/s", "bytes/s", "0.4TB/s for 400 GB/s")


def resolve(
    gpu: str | None,
    *,
    memory: str | None = None,
    flops: str | None = None,
    bandwidth: str | None = None,
    needs: tuple[str, ...] = ("memory", "flops"),
) -> Accelerator:
    """``--gpu`` from the table, with any of ``--gpu-mem/--gpu-flops/--gpu-bandwidth`` replacing
    its figure; without ``--gpu`` the explicit figures describe a custom card (missing ones are 0
    and :func:`require` names the option a command needs)."""
    given_any = memory is not None or flops is not None or bandwidth is not None
    if gpu is None and not given_any:
        options = " and ".join(f"--gpu-{'mem' if x == 'memory' else x}" for x in needs)
        raise UsageError(f"--gpu is required (e.g. --gpu h100), or give {options}")
    custom = Accelerator("custom", "custom", 0, 0, 0, "")
    if gpu is not None and given_any and not in_table(gpu):
        # a card the table lacks, named and described by its figures (--gpu p100 --gpu-flops 19T
        # --gpu-bandwidth 732G): the figures are the card, the name only labels it
        if len(gpu) > MAX_OPTION_CHARS:
            raise UsageError(f"--gpu: {len(gpu):,} characters; a card's name is read up to "
                             f"{MAX_OPTION_CHARS}")
        custom = replace(custom, name=f"{gpu} {NOT_IN_TABLE}")
        gpu = None
    base = lookup(gpu, needs=needs) if gpu is not None else custom
    figures = {"memory_bytes": parse_bytes(memory) if memory is not None else base.memory_bytes,
               "peak_flops": parse_flops(flops) if flops is not None else base.peak_flops,
               "bandwidth": parse_bandwidth(bandwidth) if bandwidth is not None else base.bandwidth}
    # a table card's own figure restated (--gpu h100 --gpu-flops 989T) leaves the card as it is,
    # its source too, so that its output is --gpu h100's
    given = [
        f"{option} {text}"
        for option, text, field_ in (("--gpu-mem", memory, "memory_bytes"),
                                     ("--gpu-flops", flops, "peak_flops"),
                                     ("--gpu-bandwidth", bandwidth, "bandwidth"))
        if text is not None and (gpu is None or figures[field_] != getattr(base, field_))
    ]
    if not given:
        return base
    return replace(
        base,
        name=base.name if base.name != "custom" else "custom accelerator",
        source=", ".join(given) + (f"; otherwise {base.source}" if base.source else ""),
        memory_bytes=figures["memory_bytes"], peak_flops=figures["peak_flops"],
        bandwidth=figures["bandwidth"],
    )


def _given(needs: tuple[str, ...]) -> str:
    """'{memory} and {flops}': the parameters a custom card needs, as template fields."""
    return " and ".join("{" + x + "}" for x in needs)


REQUIRED_OPTION = {"memory_bytes": "--gpu-mem", "peak_flops": "--gpu-flops",
                   "bandwidth": "--gpu-bandwidth"}


def require(acc: Accelerator, *fields: str) -> None:
    """A custom card must state each figure the command uses."""
    for f in fields:
        if getattr(acc, f) <= 0:
            if acc.kind != "custom":
                raise UsageError(f"{REQUIRED_OPTION[f]} is required: the table has no published "
                                 f"figure for {acc.name} ({acc.key})")
            if acc.name.endswith(NOT_IN_TABLE):
                name = acc.name.removesuffix(f" {NOT_IN_TABLE}")
                raise UsageError(f"{REQUIRED_OPTION[f]} is required: --gpu {name} is not in the "
                                 "table, so the figures given describe it")
            raise UsageError(
                f"{REQUIRED_OPTION[f]} is required without --gpu (or pick one with --gpu h100)"
            )
