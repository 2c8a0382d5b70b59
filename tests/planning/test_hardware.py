"""The accelerator table and the --gpu-mem / --gpu-flops / --gpu-bandwidth parsers."""

from __future__ import annotations

import pytest

from llmcalc.errors import UsageError
from llmcalc.planning.hardware import (
    ACCELERATORS,
    GiB,
    in_table,
    lookup,
    parse_bandwidth,
    parse_bytes,
    parse_flops,
    require,
    resolve,
)
from llmcalc.planning.speed import measured_rows

# Datasheet figures: (memory GiB, bandwidth bytes/s, dense bf16 FLOP/s; 0 where none is published).
G, TF = 10**9, 10**12
DATASHEET = {
    "a100-40gb": (40, 1_555 * G, 312 * TF),
    "a100-80gb": (80, 2_039 * G, 312 * TF),
    "h100": (80, 3_350 * G, 989 * TF),
    "h200": (141, 4_800 * G, 989 * TF),
    "b200": (180, 8_000 * G, 2_250 * TF),
    "mi300x": (192, 5_300 * G, 1_307_400 * G),
    "mi325x": (256, 6_000 * G, 1_307_400 * G),
    "mi250x": (128, 3_276_800 * 10**6, 383 * TF),
    "mi250": (128, 3_276_800 * 10**6, 362_100 * G),
    "l40s": (48, 864 * G, 362_050 * G),
    "l4": (24, 300 * G, 121 * TF),
    "a10": (24, 600 * G, 125 * TF),
    "a10g": (24, 600 * G, 70 * TF),
    "t4": (16, 320 * G, 65 * TF),
    "rtx-6000-ada": (48, 960 * G, 364_250 * G),
    "rtx-a6000": (48, 768 * G, 154_800 * G),
    "rtx-3060": (12, 360 * G, 23_900 * G),
    "rtx-3070": (8, 448 * G, 40_600 * G),
    "rtx-3080": (10, 760 * G, 59_500 * G),
    "rtx-3090": (24, 936 * G, 71 * TF),
    "rtx-3090-ti": (24, 1_008 * G, 80 * TF),
    "rtx-4060-ti-16gb": (16, 288 * G, 44_100 * G),
    "rtx-4070": (12, 504 * G, 58_300 * G),
    "rtx-4080": (16, 716_800 * 10**6, 97_500 * G),
    "rtx-4090": (24, 1_008 * G, 165_200 * G),
    "rtx-5080": (16, 960 * G, 112_600 * G),
    "rtx-5090": (32, 1_792 * G, 209_500 * G),
    "rx-7900-xtx": (24, 960 * G, 122_800 * G),
    "h100-pcie": (80, 2_000 * G, 756 * TF),
    "a40": (48, 696 * G, 149_700 * G),
    "rtx-4070-ti": (12, 504 * G, 80_200 * G),
    "rtx-4070-ti-super": (16, 672 * G, 88_300 * G),
    "rtx-4080-super": (16, 736 * G, 104_500 * G),
    "rtx-pro-6000": (96, 1_792 * G, 500 * TF),
    "strix-halo": (128, 256 * G, 59_400 * G),
    "dgx-spark": (128, 273 * G, 62_500 * G),
    "rtx-5070-ti": (16, 896 * G, 87_875 * G),
    "rtx-5070": (12, 672 * G, 61_750 * G),
    "rtx-5060-ti-16gb": (16, 448 * G, 47_437_500 * 10**6),
    "rtx-4060": (8, 272 * G, 30_250 * G),
    "rtx-4070-super": (12, 504 * G, 71 * TF),
    "l40": (48, 864 * G, 181_050 * G),
    "gb200": (186, 8_000 * G, 2_500 * TF),
    # added for #38's hidden set: each from the source its row names
    "a100-pcie-40gb": (40, 1_555 * G, 312 * TF),
    "a100-pcie-80gb": (80, 1_935 * G, 312 * TF),
    "a30": (24, 933 * G, 165 * TF),
    "rtx-a5500": (24, 768 * G, 139 * TF),
    "rtx-a5000": (24, 768 * G, 111 * TF),
    "rtx-a4500": (20, 640 * G, 95 * TF),
    "rtx-a4000": (16, 448 * G, 77 * TF),
    "rtx-a2000-12gb": (12, 288 * G, 32 * TF),
    "rtx-3060-ti": (8, 448 * G, 34_600 * G),
    "rtx-5000-ada": (32, 576 * G, 261 * TF),
    "rtx-4500-ada": (24, 432 * G, 159 * TF),
    "rtx-4000-ada": (20, 360 * G, 107 * TF),
    "rtx-4000-sff-ada": (20, 280 * G, 77 * TF),
    "rtx-3080-ti": (12, 912 * G, 68_200 * G),
    "rtx-3080-12gb": (12, 912 * G, 61_300 * G),
    "rtx-3070-ti": (8, 608 * G, 43_500 * G),
    "rtx-2080-ti": (11, 616 * G, 56_900 * G),
    "h100-nvl": (94, 3_938 * G, 835_500 * G),
    "h200-nvl": (141, 4_800 * G, 835_500 * G),
    "gh200": (144, 4_900 * G, 990 * TF),
    "gh200-96gb": (96, 4_000 * G, 990 * TF),  # the HBM3 GH200 (Lambda, CSCS Alps)
    "rx-7900-xt": (20, 800 * G, 103 * TF),
    "rx-7900-gre": (16, 576 * G, 92 * TF),
    "rx-7800-xt": (16, 624 * G, 74_600 * G),
    "rx-9070-xt": (16, 640 * G, 195 * TF),
    "rx-6900-xt": (16, 512 * G, 46_080 * G),
    "rx-6800-xt": (16, 512 * G, 41_470 * G),
    "rx-6800": (16, 512 * G, 32_330 * G),
    "arc-a770-16gb": (16, 560 * G, 137_600 * G),
    "arc-b580": (12, 456 * G, 116_500 * G),
    "v100-sxm2-32gb": (32, 900 * G, 125 * TF),
    "v100-sxm2-16gb": (16, 900 * G, 125 * TF),
    "v100-pcie-32gb": (32, 900 * G, 112 * TF),
    "v100-pcie-16gb": (16, 900 * G, 112 * TF),
    "rtx-4060-ti-8gb": (8, 288 * G, 44_100 * G),
    "rtx-5060-ti-8gb": (8, 448 * G, 47_437_500 * 10**6),
    "rtx-5060": (8, 448 * G, 38_375 * G),  # 614 AI TOPS / 16
    "mi210": (64, 1_600 * G, 181 * TF),
    "mi355x": (288, 8 * TF, 2_500 * TF),
    "mi350x": (288, 8 * TF, 2_306_900 * G),
    "radeon-pro-w7900": (48, 864 * G, 122_640 * G),
    "rtx-2080-super": (8, 496 * G, 44_600 * G),
    "rtx-2080": (8, 448 * G, 42_400 * G),
    "rtx-2070-super": (8, 448 * G, 36_250 * G),
    "mi100": (32, 1_230 * G, 92_300 * G),
    "rx-9070": (16, 640 * G, 145 * TF),
    "rx-9060-xt": (16, 320 * G, 103 * TF),
    "r9700": (32, 640 * G, 191 * TF),
}
# The other dense peaks (FP16 with FP16 accumulation, INT8, FP8; 0 where none was read), as their
# sources give them (sparse figures halved).
PEAKS = {
    "a100-80gb": (312 * TF, 624 * TF, 0), "h100": (989 * TF, 1_979 * TF, 1_979 * TF),
    "h100-pcie": (0, 1_513 * TF, 1_513 * TF), "a40": (149_700 * G, 299_300 * G, 0),
    "l40s": (0, 733 * TF, 733 * TF), "rtx-3090": (142 * TF, 284_700 * G, 0), "rtx-4080": (195 * TF, 389_900 * G, 389_900 * G),
    "rtx-4090": (330_300 * G, 660_600 * G, 660_600 * G),
    "rtx-5090": (419_200 * G, 838 * TF, 838_400 * G), "rtx-4080-super": (209 * TF, 418 * TF, 418 * TF),
    "mi300x": (1_305 * TF, 0, 2_610 * TF), "apple-m2-ultra": (0, 0, 0),
}


# The cards added with FP4 (Blackwell) and the other peaks: (FP16 with FP16 accumulation, INT8, FP8,
# FP4), dense. A GeForce card's "AI TOPS" (FP4 with sparsity on Blackwell, FP8 on Ada) gives its
# peaks at its architecture's whitepaper ratios, those the RTX 5090 and RTX 4090 rows hold.
PEAKS_FP4 = {
    "rtx-5070-ti": (175_750 * G, 351_500 * G, 351_500 * G, 703 * TF),
    "rtx-5070": (123_500 * G, 247 * TF, 247 * TF, 494 * TF),
    "rtx-5060-ti-16gb": (94_875 * G, 189_750 * G, 189_750 * G, 379_500 * G),
    "rtx-4060": (60_500 * G, 121 * TF, 121 * TF, 0),
    "rtx-4070-super": (142 * TF, 284 * TF, 284 * TF, 0),
    "l40": (362 * TF, 362 * TF, 362 * TF, 0),
    "gb200": (2_500 * TF, 0, 5_000 * TF, 10_000 * TF),
    "b200": (2_250 * TF, 0, 4_500 * TF, 9_000 * TF),
    "rtx-5090": (419_200 * G, 838 * TF, 838_400 * G, 1_676 * TF),
    "rtx-5080": (225_200 * G, 450_200 * G, 450_200 * G, 900_500 * G),
    "rtx-pro-6000": (500 * TF, 1_000 * TF, 1_000 * TF, 2_000 * TF),
    "dgx-spark": (125 * TF, 250 * TF, 250 * TF, 500 * TF),
    "rtx-4070": (116_600 * G, 233_200 * G, 233_200 * G, 0),
    "rtx-3060": (47_700 * G, 95 * TF, 0, 0), "rtx-a6000": (155 * TF, 310 * TF, 0, 0),
    "h100": (989 * TF, 1_979 * TF, 1_979 * TF, 0),  # Hopper: no FP4 tensor cores
}


# The cards added for #38's hidden set: (FP16 with FP16 accumulation, INT8, FP8, FP4), dense, as
# their sources give them or derive them (0 where none was read).
PEAKS_ADDED = {
    "a100-pcie-40gb": (312 * TF, 624 * TF, 0, 0),
    "a100-pcie-80gb": (312 * TF, 624 * TF, 0, 0),
    "a30": (165 * TF, 330 * TF, 0, 0),
    "rtx-a5500": (139 * TF, 278 * TF, 0, 0),
    "rtx-a5000": (111 * TF, 222 * TF, 0, 0),
    "rtx-a4500": (95 * TF, 189 * TF, 0, 0),
    "rtx-a4000": (77 * TF, 153 * TF, 0, 0),
    "rtx-a2000-12gb": (32 * TF, 64 * TF, 0, 0),
    "rtx-3060-ti": (69_100 * G, 138 * TF, 0, 0),
    "rtx-5000-ada": (261 * TF, 522 * TF, 522 * TF, 0),
    "rtx-4500-ada": (159 * TF, 317 * TF, 317 * TF, 0),
    "rtx-4000-ada": (107 * TF, 214 * TF, 214 * TF, 0),
    "rtx-4000-sff-ada": (77 * TF, 153 * TF, 153 * TF, 0),
    "rtx-3080-ti": (136_400 * G, 272_800 * G, 0, 0),
    "rtx-3080-12gb": (122_600 * G, 245_100 * G, 0, 0),
    "rtx-3070-ti": (87 * TF, 174 * TF, 0, 0),
    "rtx-2080-ti": (113_800 * G, 227_700 * G, 0, 0),
    "h100-nvl": (835_500 * G, 1_671 * TF, 1_671 * TF, 0),
    "h200-nvl": (835_500 * G, 1_670_500 * G, 1_670_500 * G, 0),
    "gh200": (990 * TF, 1_979 * TF, 1_979 * TF, 0),
    "gh200-96gb": (990 * TF, 1_979 * TF, 1_979 * TF, 0),
    "rx-7900-xt": (0, 103 * TF, 0, 0),
    "rx-7900-gre": (0, 92 * TF, 0, 0),
    "rx-7800-xt": (0, 74_600 * G, 0, 0),
    "rx-9070-xt": (0, 389 * TF, 389 * TF, 0),
    "rx-6900-xt": (0, 0, 0, 0),
    "rx-6800-xt": (0, 0, 0, 0),
    "rx-6800": (0, 0, 0, 0),
    "arc-a770-16gb": (0, 275_100 * G, 0, 0),
    "arc-b580": (0, 233 * TF, 0, 0),
    "v100-sxm2-32gb": (0, 0, 0, 0),
    "v100-sxm2-16gb": (0, 0, 0, 0),
    "v100-pcie-32gb": (0, 0, 0, 0),
    "v100-pcie-16gb": (0, 0, 0, 0),
    "rtx-4060-ti-8gb": (88 * TF, 177 * TF, 177 * TF, 0),
    "rtx-5060-ti-8gb": (94_875 * G, 189_750 * G, 189_750 * G, 379_500 * G),
    "rtx-5060": (76_750 * G, 153_500 * G, 153_500 * G, 307 * TF),
    "mi210": (0, 181 * TF, 0, 0),
    "mi355x": (0, 5_000 * TF, 0, 0),
    "mi350x": (0, 0, 0, 0),
    "radeon-pro-w7900": (0, 0, 0, 0),
    "rtx-2080-super": (89_200 * G, 178_400 * G, 0, 0),
    "rtx-2080": (84_800 * G, 169_600 * G, 0, 0),
    "rtx-2070-super": (72_500 * G, 145 * TF, 0, 0),
    "mi100": (184_600 * G, 184_600 * G, 0, 0),
    "rx-9070": (0, 289 * TF, 0, 0),
    "rx-9060-xt": (0, 205 * TF, 0, 0),
    "r9700": (0, 383 * TF, 383 * TF, 0),
}


@pytest.mark.parametrize("key", PEAKS_ADDED)
def test_the_added_cards_peaks(key: str) -> None:
    acc = ACCELERATORS[key]
    assert (acc.fp16_flops, acc.int8_ops, acc.fp8_flops, acc.fp4_flops) == PEAKS_ADDED[key]
    assert bool(acc.peaks_source) == any(PEAKS_ADDED[key])


def test_the_added_apple_variants_are_the_figures_their_measured_rows_use() -> None:
    """llama.cpp #4167's rows of the GPU variants the table lacked name the variant's card row
    (they carried its bandwidth and derived FLOP/s, the same two, until the Metal fit read each
    chip's generation from its key: speed.APPLE_BEFORE_M3); its bandwidth is the scoreboard line's."""
    pairs = {
        "apple-m1-7c": "Apple M1 7-core GPU", "apple-m1-pro-14c": "Apple M1 Pro 14-core GPU",
        "apple-m1-max-24c": "Apple M1 Max 24-core GPU", "apple-m1-ultra-48c": "Apple M1 Ultra 48-core GPU",
        "apple-m2-8c": "Apple M2 8-core GPU", "apple-m2-pro-16c": "Apple M2 Pro 16-core GPU",
        "apple-m2-max-30c": "Apple M2 Max 30-core GPU", "apple-m2-ultra-60c": "Apple M2 Ultra 60-core GPU",
        "apple-m3-pro-14c": "Apple M3 Pro 14-core GPU", "apple-m3-ultra-60c": "Apple M3 Ultra 60-core GPU",
        "apple-m4-pro-16c": "Apple M4 Pro 16-core GPU",
    }
    scoreboard = "https://github.com/ggml-org/llama.cpp/discussions/4167"
    for key, card in pairs.items():
        rows = [r for r in measured_rows() if r.gpu == key]
        assert rows and {r.card for r in rows} == {card}
        for row in (r for r in rows if r.source == scoreboard):  # | M1 Pro | 14 | 200 | ...
            _, cores, bandwidth = (cell.strip() for cell in row.quote.strip("|").split("|")[:3])
            assert f" {cores}-core " in card
            assert ACCELERATORS[key].bandwidth == parse_bandwidth(f"{bandwidth}G")


def test_the_8gb_variants_compute_as_their_16gb_siblings() -> None:
    """One die, one compare-page column ('16 / 8 GB'): only the memory differs."""
    for small, big in (("rtx-4060-ti-8gb", "rtx-4060-ti-16gb"), ("rtx-5060-ti-8gb", "rtx-5060-ti-16gb")):
        a, b = ACCELERATORS[small], ACCELERATORS[big]
        assert (a.bandwidth, a.peak_flops, a.fp16_flops, a.fp8_flops, a.fp4_flops) == (
            b.bandwidth, b.peak_flops, b.fp16_flops, b.fp8_flops, b.fp4_flops)
        assert (a.memory_bytes, b.memory_bytes) == (8 * GiB, 16 * GiB)


def test_the_derived_geforce_fp16_accumulate_peaks_are_twice_the_fp32_accumulate_ones() -> None:
    """The SILICON table gives these GeForce cards' FP32-accumulate and INT8 peaks; FP16 with FP16
    accumulation is derived at twice the first (its note: GeForce runs it at twice the rate)."""
    for key in ("rtx-3080-ti", "rtx-3080-12gb", "rtx-3070-ti", "rtx-2080-ti"):
        acc = ACCELERATORS[key]
        assert acc.fp16_flops == 2 * acc.peak_flops, key
        assert "twice the FP32-accumulate figure" in acc.peaks_source, key
    for key in ("rtx-2080-super", "rtx-2080", "rtx-2070-super"):  # INT8 read, the rest derived
        acc = ACCELERATORS[key]
        assert (acc.fp16_flops, acc.peak_flops) == (acc.int8_ops // 2, acc.int8_ops // 4), key
        assert "rtx-2080-ti row holds" in acc.peaks_source, key


@pytest.mark.parametrize("key", PEAKS_FP4)
def test_fp4_and_the_added_peaks(key: str) -> None:
    acc = ACCELERATORS[key]
    assert (acc.fp16_flops, acc.int8_ops, acc.fp8_flops, acc.fp4_flops) == PEAKS_FP4[key]
    assert acc.peaks_source


def test_the_derived_geforce_peaks_keep_their_whitepaper_ratios() -> None:
    """The RTX 5090's peaks (FP4 1,676 : FP8 838.4 : FP16 419.2 dense) and the RTX 4090's (FP8
    660.6 : FP16 330.3 : BF16 165.2) are the ratios the derived rows use: each derived peak is
    the AI TOPS over 2, 4, 8, 16 (Blackwell) or 2, 4, 8 (Ada)."""
    b, a = ACCELERATORS["rtx-5090"], ACCELERATORS["rtx-4090"]
    assert round(b.fp4_flops / b.fp16_flops) == 4 and round(b.int8_ops / b.fp16_flops) == 2
    assert round(a.fp8_flops / a.peak_flops) == 4 and round(a.fp16_flops / a.peak_flops) == 2
    for key, ai_tops in (("rtx-5070-ti", 1406), ("rtx-5070", 988), ("rtx-5060-ti-16gb", 759)):
        c = ACCELERATORS[key]
        assert (c.fp4_flops, c.fp8_flops, c.fp16_flops, c.peak_flops) == (
            ai_tops * TF // 2, ai_tops * TF // 4, ai_tops * TF // 8, ai_tops * TF // 16)
        assert f"{ai_tops} AI TOPS (FP4 with sparsity)" in c.peaks_source
    for key, ai_tops in (("rtx-4060", 242), ("rtx-4070-super", 568)):
        c = ACCELERATORS[key]
        assert (c.fp8_flops, c.fp16_flops, c.peak_flops) == (
            ai_tops * TF // 2, ai_tops * TF // 4, ai_tops * TF // 8)
        assert f"{ai_tops} AI TOPS (FP8 with sparsity)" in c.peaks_source


@pytest.mark.parametrize("key", PEAKS)
def test_other_format_peaks(key: str) -> None:
    acc = ACCELERATORS[key]
    assert (acc.fp16_flops, acc.int8_ops, acc.fp8_flops) == PEAKS[key]
    assert bool(acc.peaks_source) == any(PEAKS[key])
# Apple silicon: (unified GiB, bandwidth, GPU FLOP/s); the GPU may wire 2/3 of it up to 36 GB, 3/4
# above. FLOP/s: Apple's own for M1; for M2–M4 (Apple publishes none) GPU cores × 128 ALUs × 2 × clock.
APPLE = {
    "apple-m1-pro": (32, 200 * G, 5_200 * G), "apple-m1-max": (64, 400 * G, 10_400 * G),
    "apple-m1-ultra": (128, 800 * G, 21 * TF), "apple-m2-pro": (32, 200 * G, 6_800 * G),
    "apple-m2-max": (96, 400 * G, 13_600 * G), "apple-m2-ultra": (192, 800 * G, 27_200 * G),
    "apple-m3-pro": (36, 150 * G, 6_350 * G), "apple-m3-max": (128, 400 * G, 14_100 * G),
    "apple-m3-ultra": (512, 819 * G, 28_300 * G), "apple-m4-pro": (64, 273 * G, 8_100 * G),
    "apple-m4-max": (128, 546 * G, 16_200 * G), "apple-m1": (16, 68 * G, 2_600 * G),
    "apple-m2": (24, 100 * G, 3_600 * G), "apple-m3": (24, 100 * G, 3_500 * G),
    "apple-m4": (32, 120 * G, 4 * TF), "apple-m3-max-30c": (96, 300 * G, 10_600 * G),
    "apple-m4-max-32c": (36, 410 * G, 12_900 * G),
    # the GPU variants of llama.cpp discussion #4167 (memory: the chip's largest, as each source says)
    "apple-m1-7c": (16, 68 * G, 2_275 * G),
    "apple-m1-pro-14c": (32, 200 * G, 4_550 * G),
    "apple-m1-max-24c": (64, 400 * G, 7_800 * G),
    "apple-m1-ultra-48c": (128, 800 * G, 15_600 * G),
    "apple-m2-8c": (24, 100 * G, 2_863 * G),
    "apple-m2-pro-16c": (32, 200 * G, 5_726 * G),
    "apple-m2-max-30c": (96, 400 * G, 10_740 * G),
    "apple-m2-ultra-60c": (192, 800 * G, 21_470 * G),
    "apple-m3-pro-14c": (36, 150 * G, 4_946 * G),
    "apple-m3-ultra-60c": (256, 800 * G, 21_200 * G),
    "apple-m4-pro-16c": (64, 273 * G, 6_463 * G),
    # M5: 4x the M4 row's derived ALU figure (Apple's "over 4x the peak GPU compute for AI")
    "apple-m5": (32, 153 * G, 16_160 * G), "apple-m5-pro": (64, 307 * G, 32_320 * G),
    "apple-m5-max": (128, 614 * G, 64_640 * G),
}


@pytest.mark.parametrize("key", APPLE)
def test_apple_silicon_rows(key: str) -> None:
    acc = ACCELERATORS[key]
    unified, bw, peak = APPLE[key]
    share = (2, 3) if unified <= 36 else (3, 4)
    assert (acc.unified_bytes, acc.bandwidth, acc.peak_flops) == (unified * GiB, bw, peak)
    assert acc.memory_bytes == unified * GiB * share[0] // share[1]
    assert "recommendedMaxWorkingSetSize" in acc.source


@pytest.mark.parametrize("key", DATASHEET)
def test_table_matches_datasheets(key: str) -> None:
    acc = ACCELERATORS[key]
    mem, bw, peak = DATASHEET[key]
    assert (acc.memory_bytes, acc.bandwidth, acc.peak_flops) == (mem * GiB, bw, peak)
    assert acc.source  # every row says where its figures come from


def test_table_is_exactly_the_listed_cards() -> None:
    assert set(ACCELERATORS) == set(DATASHEET) | set(APPLE)


@pytest.mark.parametrize(
    "name,key",
    [("H100", "h100"), ("a100", "a100-80gb"), ("A100_40GB", "a100-40gb"), ("4090", "rtx-4090"), ("rtx4090", "rtx-4090"), ("M3-Max", "apple-m3-max"),
     ("MI300X", "mi300x"), ("V100", "v100-sxm2-32gb"), ("a770", "arc-a770-16gb"),
     ("M1_Pro_14c", "apple-m1-pro-14c"), ("3080ti", "rtx-3080-ti"), ("w7900", "radeon-pro-w7900"),
     ("NVIDIA GH200 96GB HBM3", "gh200-96gb"), ("GH200", "gh200")],
)
def test_lookup_names(name: str, key: str) -> None:
    assert lookup(name).key == key


@pytest.mark.parametrize("name,key", [
    # as nvidia-smi and rocm-smi print them, and as the table's name field spells them
    ("NVIDIA GeForce RTX 4090", "rtx-4090"), ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
    ("NVIDIA A100-SXM4-40GB", "a100-40gb"), ("NVIDIA H100 80GB HBM3", "h100"),
    ("NVIDIA H100 PCIe", "h100-pcie"), ("Tesla T4", "t4"), ("NVIDIA RTX A6000", "rtx-a6000"),
    ("AMD Instinct MI300X", "mi300x"), ("AMD Radeon RX 7900 XTX", "rx-7900-xtx"),
    ("Radeon RX 7900 XTX", "rx-7900-xtx"), ("Intel Arc A770", "arc-a770-16gb"),
    ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"), ("  nvidia   h100  nvl ", "h100-nvl"),
    ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"), ("AMD Radeon 8060S", "strix-halo"),
    ("NVIDIA GH200 480GB", "gh200-96gb"), ("NVIDIA H100 SXM5", "h100"), ("A100 SXM4", "a100-80gb"),
])
def test_lookup_a_cards_printed_name(name: str, key: str) -> None:
    assert lookup(name).key == key


@pytest.mark.parametrize("name,key", [
    # a memory size in the name, where it is the card's: "80GB" after or inside the name
    ("H100 80GB", "h100"), ("RTX 3090 24GB", "rtx-3090"), ("rtx-4090-24gb", "rtx-4090"),
    ("l40s-48gb", "l40s"), ("MI300X 192GB", "mi300x"), ("Apple M2 Ultra 192GB", "apple-m2-ultra"),
    ("a100-sxm-80gb", "a100-80gb"), ("A100 SXM 40GB", "a100-40gb"),
    ("RTX 2080 Ti 11 GB", "rtx-2080-ti"),
    # ...a key that holds its size stays that key, spelt with a space too
    ("rtx-4060-ti-8gb", "rtx-4060-ti-8gb"), ("rtx-3080-12gb", "rtx-3080-12gb"),
    ("A100 40 GB", "a100-40gb"), ("RTX 3080 12 GB", "rtx-3080-12gb"),
    ("V100 PCIe 16 GB", "v100-pcie-16gb"), ("GH200 96 GB", "gh200-96gb"),
    ("4060ti 8 gb", "rtx-4060-ti-8gb"),
])
def test_lookup_a_name_with_its_memory(name: str, key: str) -> None:
    assert lookup(name).key == key


@pytest.mark.parametrize("name,told", [
    ("m3-max-64gb", "the table's apple-m3-max has 128 GB, not 64"),
    ("a100-sxm-48gb", "the table's a100-80gb has 80 GB, not 48"),
    ("h100-94gb", "the table's h100 has 80 GB, not 94"),
])
def test_a_memory_size_the_card_lacks_is_another_card(name: str, told: str) -> None:
    with pytest.raises(UsageError) as e:
        lookup(name)
    assert str(e.value).startswith(f"gpu {name}: unknown accelerator; {told}; known: a100-40gb, ")
    assert not in_table(name)


@pytest.mark.parametrize("name", ["h100-" + "9" * 5000 + "gb", "h100 ８０gb", "h100-٨٠gb"])
def test_a_size_is_four_ascii_digits_at_most(name: str) -> None:
    # a longer run, or other scripts' digits, is no size: the name is simply unknown
    with pytest.raises(UsageError) as e:
        lookup(name)
    assert str(e.value).startswith(f"gpu {name}: unknown accelerator; known: a100-40gb, ")


def test_every_cards_name_finds_it() -> None:
    import json

    from llmcalc.planning.hardware import TABLE

    for row in json.loads(TABLE.read_text(encoding="utf-8"))["accelerators"]:
        assert lookup(row["name"]).key == row["key"], row["name"]


def test_unknown_gpu_lists_the_known_ones() -> None:
    with pytest.raises(UsageError) as e:
        lookup("k80")
    # the core names resolve()'s parameters; the CLI says --gpu, --gpu-mem, --gpu-flops
    assert str(e.value) == (
        f"gpu k80: unknown accelerator; known: {', '.join(ACCELERATORS)} (or describe it with "
        "memory and flops)"
    )
    assert ", ".join(ACCELERATORS).startswith("a100-40gb, a100-80gb, h100, h200, b200, mi300x, ")


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


def test_a_card_the_table_lacks_is_named_and_described_by_its_figures() -> None:
    p100 = resolve("p100", flops="19T", bandwidth="732GB/s")
    assert (p100.key, p100.kind, p100.peak_flops, p100.bandwidth, p100.memory_bytes) == (
        "custom", "custom", 19 * 10**12, 732 * 10**9, 0)
    assert p100.name == "p100 (not in the table: the figures given describe it)"
    assert p100.source == "--gpu-flops 19T, --gpu-bandwidth 732GB/s"
    with pytest.raises(UsageError) as e:
        require(resolve("p100", flops="19T"), "peak_flops", "bandwidth")
    assert str(e.value) == ("--gpu-bandwidth is required: --gpu p100 is not in the table, so the "
                            "figures given describe it")
    with pytest.raises(UsageError) as e:  # no figure: the name alone says nothing of the card
        resolve("p100")
    assert str(e.value).startswith("gpu p100: unknown accelerator; known: a100-40gb, ")
    with pytest.raises(UsageError) as e:  # a label, but a bounded one
        resolve("x" * 100, bandwidth="1T")
    assert str(e.value) == "--gpu: 100 characters; a card's name is read up to 64"
    # a table card's name with a figure stays that card, the figure replacing its own
    assert resolve("rtx-4090", bandwidth="900GB/s").key == "rtx-4090"


@pytest.mark.parametrize(
    "name,key",
    [("apple-m3-max-40c", "apple-m3-max"), ("Apple M3 Max 40-core GPU", "apple-m3-max"),
     ("M3 Max 30-Core GPU", "apple-m3-max-30c"), ("m2-ultra-76c", "apple-m2-ultra"),
     ("Apple M1 Pro 14-core", "apple-m1-pro-14c"), ("apple-m4-max-40c", "apple-m4-max"),
     ("m1-8c", "apple-m1")],
)
def test_an_apple_chip_by_its_gpu_core_count(name: str, key: str) -> None:
    # the bare chip key is the top GPU configuration: its FLOP/s over a binned one's is the ratio
    # of their core counts
    assert lookup(name).key == key
    binned = {"apple-m3-max": ("apple-m3-max-30c", 40, 30),
              "apple-m2-ultra": ("apple-m2-ultra-60c", 76, 60)}
    if key in binned:
        other, full, cut = binned[key]
        assert ACCELERATORS[key].peak_flops * cut // full == pytest.approx(
            ACCELERATORS[other].peak_flops, rel=0.01)


def test_resolve_needs_something() -> None:
    with pytest.raises(UsageError) as e:
        resolve(None)
    assert str(e.value) == "--gpu is required (e.g. --gpu h100), or give --gpu-mem and --gpu-flops"


def test_fp8_and_fp4_peaks_mark_the_architectures() -> None:
    """TensorRT-LLM's FP8 and NVFP4 rules (latency.engine_weights) read a card's generation from its
    FP8 and FP4 peaks: every NVIDIA card before Ada (Volta, Turing, Ampere) has no FP8 peak, every
    Ada, Hopper and Blackwell card one, and only Blackwell cards an FP4 peak."""
    nvidia = {k: a for k, a in ACCELERATORS.items() if a.maker == "nvidia"}
    before_ada = {k for k in nvidia if k.startswith(("v100", "t4", "rtx-20", "a10", "a30", "a40",
                                                     "rtx-30", "rtx-a"))}
    assert {k for k, a in nvidia.items() if not a.fp8_flops} == before_ada
    assert {k for k, a in nvidia.items() if a.fp4_flops} == {
        "b200", "gb200", "dgx-spark", "rtx-pro-6000", "rtx-5090", "rtx-5080", "rtx-5070-ti",
        "rtx-5070", "rtx-5060-ti-16gb", "rtx-5060-ti-8gb", "rtx-5060"}
    assert len(before_ada) == 32


def test_every_table_card_has_a_maker() -> None:
    """choices.BACKEND_MAKERS reads a card's maker from its name: every table card has one."""
    from collections import Counter

    assert Counter(a.maker for a in ACCELERATORS.values()) == {
        "nvidia": 68, "apple": 31, "amd": 21, "intel": 2}
