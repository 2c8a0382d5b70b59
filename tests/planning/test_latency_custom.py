"""A card not in the table (`latency --gpu-flops X --gpu-bandwidth Y --engine E --backend B`): the
bound takes the highest peak ratios a card of the backend holds, so no measurement beats it; the
expected speed reads the card as the one its figures resemble. Every measured row is called again
as such a card (its card's bf16 peak and bandwidth, its backend) and held to both."""

from __future__ import annotations

import re
import statistics
from typing import Any

import pytest

from llmcalc.cli._common import spec_for
from llmcalc.cli.latency import row_latency
from llmcalc.formulas.quant import kv_dtype_for, resolve_format
from llmcalc.planning.hardware import ACCELERATORS, interconnect, lookup, resolve
from llmcalc.planning.latency import Latency, compute_peak, latency
from llmcalc.planning.speed import (
    ENGINE_TERMS,
    TERMS,
    MeasuredRow,
    custom_card,
    loo_errors,
    measured_rows,
    rows_for,
    stand_in_rows,
)
from llmcalc.units import parse_dtype

ENGINES = sorted({(r.engine, r.backend) for r in measured_rows()})


def _called(row: MeasuredRow, gpu: str | None = None) -> Latency:
    """The row's run as a user with a card the table lacks calls it: the row card's bf16 peak and
    bandwidth as --gpu-flops and --gpu-bandwidth (``gpu``: with that --gpu), its backend; at tp > 1
    over its card's own link (as --interconnect names it)."""
    card = lookup(row.gpu) if row.gpu else None
    flops = str(card.peak_flops) if card else row.flops
    bandwidth = str(card.bandwidth) if card else row.bandwidth
    acc = resolve(gpu, flops=flops, bandwidth=bandwidth)
    spec = spec_for(row.model, None)
    weights = resolve_format(spec, row.dtype)
    kv = parse_dtype(row.kv_dtype, option="kv_dtype") if row.kv_dtype else kv_dtype_for(weights)
    return latency(spec, accelerator=acc, interconnect=interconnect(None, card or acc), tp=row.tp,
                   batch=row.batch, ctx=row.ctx, gen=row.gen, dtype=weights, kv_dtype=kv,
                   backend=row.backend)


def _bound(row: MeasuredRow, lat: Latency) -> float:
    if row.stage == "throughput":
        return lat.throughput_per_gpu
    stage = lat.prefill if row.stage == "prefill" else lat.decode
    return row.batch * (row.ctx if row.stage == "prefill" else 1) / stage.seconds


def _loo_called(engine: str, backend: str) -> list[tuple[MeasuredRow, float]]:
    """Each row's leave-one-out error (the fit as `latency --engine` makes it, on the rows' own
    cards) with the row called as a card not in the table."""
    rows = rows_for(engine, backend)
    lent = stand_in_rows(engine, backend)
    stand_ins = [(r, row_latency(r), stages) for r, stages in lent.rows]
    terms = ENGINE_TERMS.get((engine, backend), TERMS) if stand_ins else None
    return loo_errors([(r, row_latency(r)) for r in rows], stand_ins=stand_ins or None,
                      terms=terms, called=[_called(r) for r in rows])


@pytest.fixture(scope="module")
def called_errors() -> list[tuple[MeasuredRow, float]]:
    return [e for engine, backend in ENGINES for e in _loo_called(engine, backend)]


def test_no_measurement_beats_the_bound_of_its_card_called_by_its_figures() -> None:
    for row in measured_rows():
        lat = _called(row)
        assert row.tokens_per_s <= _bound(row, lat), (row.card, row.dtype, row.test)


# Each row's leave-one-out error called by its card's figures, median per engine × backend × class
# (docs/latency.md); before the ratios (bf16 the only peak, the card read as nothing in particular)
# in the comment. Where the figures differ from the rows' own cards': the DGX Spark reads as a
# workstation card (229 FLOP/B), the Strix Halo and RX 7900 XTX lose their own terms and peaks
# (the integrated-GPU term; on Vulkan the 7900 XTX reads as GeForce), the H100/A100 rows of
# TensorRT-LLM at TP > 1 keep their NVLink (as --interconnect names it). ROCm and Vulkan with the
# 46 rows of discussions #15021 / #10879 and the HIP / Vulkan PRs (623 rows): an AMD card called by
# its figures on Vulkan reads as GeForce (FP16 at 2x the bf16 figure AMD quotes, its matrix rate).
CALLED = {("llama.cpp", "cpu", "consumer"): 0.21,  # 0.23
          ("llama.cpp", "cuda", "consumer"): 0.077,  # 0.078 before the P40's rows (speed.FEW_FLOP_PER_BYTE); 0.075 before p_tu and p_ws (speed.TURING_NVIDIA); 0.077 with p_kq (speed.K_QUANTS); 0.082 before the Hopper SM's mma.sync rate (speed.mmq_sm_rate); 0.248 (80 rows then); 0.073 (1,088 rows)
          ("llama.cpp", "cuda", "datacentre"): 0.054,  # 0.057 before the P40's rows; 0.06 before p_tu and p_ws; 0.103 before the Hopper SM's mma.sync rate; 0.966 (80 rows then)
          ("llama.cpp", "metal", "apple"): 0.054,  # 0.058 before a_ultra (speed.ULTRA_GPUS: a card by
          # its figures at 800 GB/s or more is an Ultra); 0.053; 0.052 before the Apple generation terms;
          # 0.048 before PR #20361's 18 hybrid rows (a card by its figures: its per-layer costs
          # unknown), 0.052 before the 37 Gemma / Qwen3 rows of 2026 builds
          ("llama.cpp", "rocm", "consumer"): 0.132,  # 0.115 before the MI50's rows (speed.FEW_FLOP_PER_BYTE: they move ROCm's shared prefill terms; 0.118 without its prompt rows); 0.11 with gpt-oss-120b's rows marked before PR #17576 too; 0.114 before PR #17576's p_pre; 0.12 before the 3 ROCm rows of AMD's long prompts; 0.099 (553 rows); 0.155 (1,070); 0.132 (1,078); 0.13 before 2026's 22
          ("llama.cpp", "rocm", "datacentre"): 0.157,  # 0.26 before the MI50's rows (#15021's MI300X and MI210, PR #14949's MI100)
          # 0.165 before AMD's coopmat1 terms and their 20 long-prompt rows (speed.AMD_COOPMAT_GPUS),
          # which a card by its figures takes a third of; 0.431
          ("llama.cpp", "vulkan", "consumer"): 0.201,  # (553 rows); 0.142 (911); 0.178 (1,078)
          ("sglang", "cuda", "datacentre"): 0.108,  # 0.09 on its 54 rows before sg59's 6 one-A100 rows; 0.086 before its attention was held at the FP16 peak (speed.HELD); 0.33 on its 4 rows then; 60 rows now
          ("sglang", "rocm", "datacentre"): 0.167,  # its 30 rows came after the rule
          ("transformers", "cuda", "datacentre"): 0.067,  # 0.845 on its one row; 0.062 (37 rows)
          ("transformers", "cuda", "consumer"): 0.283,  # its RTX 4090 steps, read as GeForce
          ("trtllm", "cuda", "datacentre"): 0.063,  # 0.134 (553 rows)
          ("vllm", "cuda", "datacentre"): 0.053,  # 0.054 before p_att's floor; 0.129 (553 rows)
          ("vllm", "rocm", "datacentre"): 0.034}  # 0.03 with Oracle's 405B rows read with an FP8
          # cache, before vLLM's own default (auto: bf16) was read; 0.04 (0.014 on 11 rows of 553)


def test_called_by_figures_errors(called_errors: list[tuple[MeasuredRow, float]]) -> None:
    med: dict[tuple[str, str, str], list[float]] = {}
    for r, e in called_errors:
        med.setdefault((r.engine, r.backend, r.hw_class), []).append(abs(e))
    assert {k: round(statistics.median(v), 3) for k, v in med.items()} == CALLED
    by_stage = {st: round(statistics.median(abs(e) for r, e in called_errors if r.stage == st), 3)
                for st in ("decode", "prefill", "throughput")}
    by_class = {c: round(statistics.median(abs(e) for r, e in called_errors if r.hw_class == c), 3)
                for c in ("apple", "consumer", "datacentre")}
    # before: decode 0.065, prefill 0.135, throughput 0.12; apple 0.053, consumer 0.248, dc 0.139
    # with the 16 CPU rows of a Raspberry Pi 5 (llama.cpp CPU decode 13.3%, prefill 32.7%), the
    # 46 ROCm / Vulkan rows of discussions #15021 / #10879 and the HIP / Vulkan PRs, the 83
    # llama.cpp CUDA rows of cudarows, SGLang's 84 rows and the data-centre rows of dcrows
    # (TensorRT-LLM v0.5.0 / v0.8.0 pages, vLLM's L4, kernel-PR and MI300X rows), the 34 ROCm
    # rows of rocm38d (Strix Halo builds 5863-6865, RX 7900 XTX/XT and PRO W7900 PRs, an MI100)
    # with the 21 Metal PR rows and the Apple generation terms (speed.APPLE_TERMS: a card given by
    # its figures alone on Metal takes half of the terms of M1/M2, its generation unknown), the 41
    # Vulkan rows of vulkan38d (RDNA3 cards called by their figures read as GeForce: FP16 at twice
    # the matrix rate AMD quotes), the 13 llama.cpp CUDA rows of dcdec39 with the GQA re-read
    # of builds without flash attention (speed.py: a_gqa; before: decode 0.073, consumer 0.113,
    # dc 0.079), the 3 ROCm rows of amd39 (PR #18666's 8060S, PR #26284's R9700) with llama.cpp
    # ROCm's prefill at the FP16 peak (speed.ENGINE_FORMATS; before: prefill 0.093, consumer 0.108), the 5 Gated DeltaNet rows of hybrid39 and p_rec,
    # hybrid40's 10 hybrid rows on a Radeon 8060S (Vulkan, ROCm) with c_rec and c_rec_pre (before:
    # decode 0.068, prefill 0.089, consumer 0.106), its 4 RTX 4090 rows (CUDA; consumer 0.11 before),
    # llama.cpp CUDA's per-layer cost in GPU cycles (speed.CLOCK_MHZ: a card by its figures alone
    # read at 2,000 MHz; before: consumer 0.103, dc 0.076),
    # tf41's 12 transformers decode steps of bitsandbytes' benchmark (before: decode 0.069,
    # throughput 0.07, consumer 0.104, dc 0.074), the bytes' coefficient held at 1 or more
    # (speed.FLOORS; before: decode 0.07, throughput 0.071), PR #20361's 18 hybrid Metal rows with
    # c_rec, c_rec_pre and p_rec_pre on Metal (before: prefill 0.087, apple 0.048), the 59 rows of
    # 2026 builds on Metal (Gemma 2/3/4, Qwen3) and ROCm (R9700, RX 9070 / 9070 XT, Strix Halo;
    # before: decode 0.068, prefill 0.085, apple 0.052, consumer 0.112), a Hopper or Blackwell
    # SM's MMQ tiles at its mma.sync rate (speed.mmq_sm_rate; before: prefill 0.087, consumer
    # 0.107, dc 0.075), the 23 AMD long-prompt rows with AMD's coopmat1 terms on Vulkan, which a
    # card by its figures takes a third of (speed.AMD_COOPMAT_GPUS; before: prefill 0.079, consumer
    # 0.105), ROCm's rows of builds before PR #17576's WMMA MMQ taking p_pre (speed.AMD_TILE_PRS;
    # before: prefill 0.087, consumer 0.113; 0.084 with gpt-oss-120b's rows marked too), the
    # attention held at the FP16 peak where an engine does not fit it (speed.HELD), sg59's 6
    # SGLang rows of one A100 (before: decode 0.076, throughput 0.068, dc 0.069), an Apple Ultra's
    # bytes on a term of their own (speed.ULTRA_GPUS; before: decode 0.077, apple 0.058), llama.cpp
    # CUDA without the K-quant term (speed.K_QUANTS; before: prefill 0.085, consumer 0.113), its
    # Turing and workstation terms (speed.TURING_NVIDIA; before: prefill 0.087, consumer 0.115), a
    # P40's and an MI50's rows with f_vec and p_vec (speed.FEW_FLOP_PER_BYTE; before: prefill 0.082,
    # consumer 0.118, dc 0.071)
    assert by_stage == {"decode": 0.07, "prefill": 0.082, "throughput": 0.07}
    assert by_class == {"apple": 0.054, "consumer": 0.127, "datacentre": 0.071}


def test_the_rtx_4090_called_by_its_figures(cli: Any) -> None:
    """Llama-2-7B Q4_0 pp512 on an RTX 4090 given as --gpu-flops 165.2T --gpu-bandwidth 1008G: the
    bound at 4x (INT8) the bf16 peak, as the card's own 660.6T; the expected prefill as the card's
    (12,052.5) within 0.03%, where bf16 alone gave 6,171 and a bound (12,376/s) that the
    measured 14,771 tokens/s beat."""
    args = ("latency", "llama-2-7b", "--dtype", "q4_0", "--ctx", "512", "--gen", "1", "--batch",
            "1", "--engine", "llama.cpp", "--backend", "cuda", "--json")
    d = cli(*args[:2], "--gpu-flops", "165.2T", "--gpu-bandwidth", "1008G", *args[2:]).json()
    acc = d["inputs"]["accelerator"]
    assert (acc["peak_flops"], acc["compute_peak_flops"]) == (165_200 * 10**9, 660_800 * 10**9)
    bound_note = ("a card not in the table: the bound assumes its FP16, INT8, FP8 and FP4 peaks at "
                  "2x, 4x, 4x and 8x its bf16 one, the highest ratios a CUDA card of the table "
                  "holds")
    assert acc["assumed_peaks"] == {
        "kind": "custom", "fp16_flops": 330_400 * 10**9, "int8_ops": 660_800 * 10**9,
        "fp8_flops": 660_800 * 10**9, "fp4_flops": 1_321_600 * 10**9, "assumed": bound_note}
    assert d["notes"] == [bound_note]
    e = d["expected"]
    assert e["basis"]["card"] == {
        "kind": "consumer", "fp16_flops": 330_400 * 10**9, "int8_ops": 660_800 * 10**9,
        "fp8_flops": 660_800 * 10**9, "fp4_flops": 1_321_600 * 10**9,
        "assumed": "a card not in the table: the fit assumes it GeForce-like (below 165 bf16 FLOP "
                   "per byte of bandwidth and 1,800 GB/s), consumer: FP16 2x, INT8 4x, FP8 4x and "
                   "FP4 8x its bf16 peak"}
    # decode: the table's RTX 4090 171.5 at its 2,520 MHz; a card by its figures alone has no
    # clock, so its per-layer cost is read at 2,000 MHz (speed.clock_note)
    assert (round(e["prefill_tokens_per_s"], 1), round(e["decode_tokens_per_s"], 1)) == (
        12_286.4, 162.9)
    assert e["basis"]["clock"].startswith("a card given by its figures alone has no boost clock")
    assert round(512 / d["prefill"]["seconds"], 1) == 50_492.8 and 14_771 < 50_492.8
    card = cli(*args[:2], "--gpu", "rtx-4090", *args[2:]).json()
    assert "assumed_peaks" not in card["inputs"]["accelerator"] and card["notes"] == []
    assert "card" not in card["expected"]["basis"]
    assert round(card["expected"]["prefill_tokens_per_s"], 1) == 12_283.3
    # the table prints the fit's assumption as its last row, the bound's as a note
    r = cli(*args[:2], "--gpu-flops", "165.2T", "--gpu-bandwidth", "1008G", *args[2:-1])
    assert r.code == 0 and "card assumed" in r.stdout
    assert " ".join(r.stderr.split()) == "note: " + bound_note  # wrapped at the terminal's width
    strict = cli(*args[:2], "--gpu-flops", "165.2T", "--gpu-bandwidth", "1008G", *args[2:-1],
                 "--strict")
    assert strict.code == 2
    assert " ".join(strict.stderr.split()) == f"error: --strict: the output: {bound_note}"


def test_a_named_card_the_table_lacks_is_its_figures(cli: Any) -> None:
    """`--gpu p100 --gpu-flops X --gpu-bandwidth Y`: the name labels the card, the figures are it:
    the same bound and expected figures as the figures alone, where the name had been refused."""
    args = ("latency", "llama-2-7b", "--dtype", "q4_0", "--ctx", "512", "--gen", "1", "--batch",
            "1", "--engine", "llama.cpp", "--backend", "cuda", "--json")
    figures = ("--gpu-flops", "19.05T", "--gpu-bandwidth", "732G")
    named = cli(*args[:2], "--gpu", "p100", *figures, *args[2:])
    assert named.code == 0
    d, alone = named.json(), cli(*args[:2], *figures, *args[2:]).json()
    assert d["inputs"]["accelerator"]["name"] == (
        "p100 (not in the table: the figures given describe it)")
    assert d["expected"] == alone["expected"] and d["prefill"] == alone["prefill"]
    e = d["expected"]
    # 19.05 TFLOP/s at 732 GB/s: 26 FLOP a byte, a card without tensor cores (speed.FEW_FLOP_PER_BYTE:
    # a decode step's FLOPs at that figure again, f_vec; p_vec fits to 0)
    assert (round(e["prefill_tokens_per_s"], 1), round(e["decode_tokens_per_s"], 1)) == (
        1_646.5, 99.8)
    short = cli(*args[:2], "--gpu", "p100", "--gpu-flops", "19.05T", *args[2:])
    assert short.code == 2
    assert short.stderr.strip() == ("error: --gpu-bandwidth is required: --gpu p100 is not in the "
                                    "table, so the figures given describe it")


@pytest.mark.parametrize(("backend", "dtype", "ratio"), [
    (None, "q4_0", 4),  # no --engine: the highest of any backend, CUDA's INT8
    ("cuda", "nvfp4", 8), ("vulkan", "q4_0", 4), ("cuda", "bf16", 2),
    ("rocm", "q4_0", 2), ("rocm", "bf16", 1), ("metal", "q4_0", 1), ("cpu", "fp8", 2), ("cpu", "q4_0", 8),
])
def test_a_custom_cards_bound_takes_its_backends_ratios(backend: str | None, dtype: str,
                                                       ratio: int) -> None:
    spec = spec_for("llama-3.1-8b", None)
    acc = resolve(None, flops="100T", bandwidth="1T")
    lat = latency(spec, accelerator=acc, interconnect=interconnect(None, acc), ctx=512, gen=1,
                  dtype=resolve_format(spec, dtype), backend=backend)
    assert lat.peak_flops == ratio * 100 * 10**12


def test_the_table_cards_read_as_their_kind_of_card() -> None:
    """custom_card on each NVIDIA card of the table given by its figures: its FP16 ratio (1 where
    the table holds one peak for every format) and whether it is a data-centre card; the cards on
    the wrong side of the rule are listed in docs/latency.md."""
    wrong, kind = set(), set()
    for key, a in ACCELERATORS.items():
        if not a.name.startswith("NVIDIA"):
            continue
        c = custom_card(resolve(None, flops=str(a.peak_flops), bandwidth=str(a.bandwidth)), "cuda")
        if round((a.fp16_flops or a.peak_flops) / a.peak_flops) != c.fp16_flops // a.peak_flops:
            wrong.add(key)
        if (a.kind == "datacenter") != (c.kind == "datacenter"):
            kind.add(key)
    # two of the 60 cards the rule was drawn on (L40, DGX Spark) and the A10G, and cards added
    # since: full-rate workstation Ampere and the V100s below 165 FLOP/B read as GeForce; between
    # 165 and 200 the ratios pass from GeForce's to the full rate (speed.geforce_share): the RTX
    # A4000 (172 FLOP/B) at FP16 1.8x, the A30 (177) 1.66x, the RTX A5500 (181) 1.54x, each below 2
    assert wrong == {"l40", "dgx-spark", "a10g", "rtx-a2000-12gb", "rtx-a4500",
                     "rtx-a5000", "v100-pcie-16gb", "v100-pcie-32gb", "v100-sxm2-16gb",
                     "v100-sxm2-32gb"}
    # HBM below 1 TB/s read as consumer; the RTX PRO 6000's 1.79 TB/s GDDR7 read as data-centre
    assert kind == {"a30", "v100-pcie-16gb", "v100-pcie-32gb", "v100-sxm2-16gb", "v100-sxm2-32gb",
                    "rtx-pro-6000"}


def test_an_apple_chip_with_another_core_count_by_its_key() -> None:
    """`--gpu apple-m1-max --gpu-flops 7.8T --gpu-bandwidth 400G` (a 24-core M1 Max): the chip's
    other peaks (none: Apple has one figure) and kind apply; the rows measured on such chips are
    expected as when called by their figures alone, and none beats the bound."""
    # the rows on a chip's other core counts: keys such as apple-m1-max-24c (Apple M1 Max 24-core)
    rows = [r for r in rows_for("llama.cpp", "metal") if re.fullmatch(r"apple-.*-\d+c", r.gpu)]
    assert len(rows) == 74
    for row in rows:
        chip = row.gpu.rsplit("-", 1)[0]  # apple-m1-max-24c: the M1 Max
        if chip not in ACCELERATORS:  # Apple M1 7-core GPU: the base M1
            chip = "apple-" + row.card.split()[1].lower()
        keyed, alone = _called(row, chip), _called(row)
        assert keyed.accelerator.kind == "apple" and keyed.peak_flops == alone.peak_flops
        assert row.tokens_per_s <= _bound(row, keyed)
        assert compute_peak(keyed.accelerator, keyed.dtype) == keyed.accelerator.peak_flops


@pytest.mark.parametrize("backend", ["cuda", "vulkan"])
def test_a_figure_a_little_higher_moves_the_expected_prefill_a_little(cli: Any, backend: str) -> None:
    """The GeForce ratios pass to the full rate between 165 and 200 bf16 FLOP per byte: at one cut-off (180 FLOP/B) Llama-3.1-8B Q4_K_M's pp512 on llama.cpp CUDA at
    1 TB/s went 10,345 -> 5,634 tokens/s between 179 and 181 TFLOP/s."""
    def pp512(flops: str, bandwidth: str = "1000G") -> float:
        out = cli("latency", "llama-3.1-8b", "--gpu-flops", flops, "--gpu-bandwidth", bandwidth,
                  "--dtype", "q4_k_m", "--ctx", "512", "--gen", "1", "--engine", "llama.cpp",
                  "--backend", backend, "--json").json()
        return float(out["expected"]["prefill_tokens_per_s"])
    steps = [pp512(f"{t}T") for t in range(160, 206, 1)]
    assert max(abs(b / a - 1) for a, b in zip(steps, steps[1:], strict=False)) < 0.03
    assert steps[0] / steps[-1] > 1.4  # GeForce's FP16-accumulate and INT8 rates, then the full rate
