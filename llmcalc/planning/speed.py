"""Expected speed on an engine and backend: a model of time per step fitted on published measurements.

The roofline (llmcalc.planning.latency) is a bound no engine beats; this is the speed a user will
see, a step-time model whose coefficients are fitted per engine × backend on the measured rows in
``measured_speed.json`` (each row with its source) by least squares on the relative error:

- decode step:  t = a · bytes / bandwidth + c · layers + f · FLOPs / peak + g · all-reduce
  + c_dc · layers on a data-centre card + c_moe · layers of a mixture of experts (llama.cpp on
  CUDA) + c_tp · layers under tensor parallelism (vLLM on CUDA: ``_decode_features``)
  (a = 1/η_bandwidth, at least 1: ``FLOORS``; c: a per-layer kernel launch / synchronisation
  cost, in ms per layer; f: the
  batch's compute, which batched decode reaches, at most at the FP16 peak (``_fp16_peak``: FP8 weights do not make the step's other work FP8); g:
  the tensor-parallel all-reduces' time at the link's bandwidth); bytes are the roofline's — the
  weights the step reads (MoE: the experts the batch's tokens reach, E·(1 − (1 − k/E)^b) of E) and
  the KV cache at the mean context;
- prefill:      t = p · weight FLOPs / peak + p_att · attention FLOPs / peak + q · bytes /
  bandwidth + r · layers + s · all-reduce + p_dc · FLOPs / peak on a data-centre card
  (p = 1/η_compute at the peak of the format the weights are computed in: the bound's,
  llmcalc.planning.latency.compute_peak, or the engine's own where ``ENGINE_FORMATS`` names it;
  the causal attention's FLOPs have their own share, at most of the FP16 peak; q: the weights
  and cache streamed, e.g. dequantised, once per ubatch; r: per-layer cost; p_kq · weight FLOPs /
  peak more for llama.cpp's K-quant mixes, whose GEMMs unpack 256-weight super-blocks:
  ``K_QUANTS``; p_moe · weight FLOPs / peak more for a mixture of experts, whose tokens are
  gathered per expert into small GEMMs; p_igpu · FLOPs / peak more on a GPU that shares its
  package and power with the CPU: ``INTEGRATED_GPUS``);
- a whole request (a throughput row, output tokens/s per GPU): prefill + (gen − 1) decode steps,
  so such rows inform both stages' coefficients, fitted together.

Coefficients are ≥ 0 (non-negative least squares on the relative error: a term the rows do not
support is 0). An engine × backend with few rows is fitted with fewer terms (``ENGINE_TERMS``),
and one without rows for a stage beside another engine × backend's rows (``STAND_INS``), which
its basis names; its error is the leave-one-out error on its own rows only.

A card not in the table (``--gpu-flops X --gpu-bandwidth Y`` alone) is read as the card its figures
resemble (``custom_card``: GeForce, full-rate workstation or data-centre, AMD; its ratios of each
format's peak to bf16 and its kind), which the expected speed's basis names.

The expected time is never below the roofline's (``max`` with the bound), so the expected tokens/s
never exceed the bound. Pure: nothing here prints or reads a model config; the caller passes each
row's roofline (a :class:`Latency`) in.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from llmcalc.errors import ParameterError
from llmcalc.formulas.gguf_mix import QUANT_TYPES
from llmcalc.formulas.quant import BNB_NAMES
from llmcalc.planning.hardware import Accelerator
from llmcalc.planning.latency import (
    ASSUMED_RATIOS,
    CUSTOM,
    GEFORCE_RATIOS,
    ONE_PEAK,
    Latency,
    compute_peak,
    scalar_bf16,
    with_ratios,
)
from llmcalc.units import DType


@dataclass(frozen=True)
class MeasuredRow:
    """One published measurement: a llama-bench pp512 is ctx 512, gen 1; tg128 ctx 1, gen 128."""

    source: str
    engine: str
    backend: str
    card: str
    hw_class: str  # apple | consumer | datacentre
    gpu: str  # a key of hardware.json, or "" where bandwidth and flops describe the card
    bandwidth: str
    flops: str
    flops_basis: str
    model: str
    dtype: str
    ctx: int
    gen: int
    batch: int
    test: str  # pp… or ttft (prefill), tg… or tpot (decode), throughput (whole requests)
    tokens_per_s: float  # a ttft row: batch × ctx ÷ the time to first token
    tp: int = 1
    kv_dtype: str = ""  # the cache's dtype where the source gives it (else the format's default)
    ttft_ms: float = 0.0  # a ttft row's figure as published
    latency_ms: float = 0.0  # a whole batch's end-to-end latency as published (vLLM benchmark_latency)
    tpot_ms: float = 0.0  # a tpot / tg row's time per output token as published (one decode step)
    total_tokens_per_s: float = 0.0  # a throughput row's output tokens/s over all tp GPUs, as published
    quoted_in: str = ""  # where the figure was read, when not at the source itself
    quote: str = ""  # the line as read
    build: str = ""  # the engine build, where the source gives it
    predates: tuple[int, ...] = ()  # engine PRs the row's build predates, where one changes the fit

    @property
    def stage(self) -> str:
        if self.test.startswith("pp") or self.test == "ttft":
            return "prefill"
        return "decode" if self.test.startswith("tg") or self.test == "tpot" else "throughput"


def _published_tokens_per_s(r: dict[str, Any]) -> float:
    """The row's figure as tokens/s: as published, or from a first-token latency (batch × ctx
    prompt tokens), a time per output token (one decode step of the batch: batch tokens), a
    whole batch's latency (batch × gen output tokens over tp GPUs), or all tp GPUs' output
    tokens/s (over tp)."""
    if "tokens_per_s" in r:
        return float(r["tokens_per_s"])
    if "total_tokens_per_s" in r:
        return float(r["total_tokens_per_s"] / r["tp"])
    if "ttft_ms" in r:
        return float(r["batch"] * r["ctx"] * 1000 / r["ttft_ms"])
    if "tpot_ms" in r:
        return float(r["batch"] * 1000 / r["tpot_ms"])
    return float(r["batch"] * r["gen"] * 1000 / (r["latency_ms"] * r.get("tp", 1)))


def median(values: Any) -> float:
    """statistics.median, imported only where a fit or its error is computed (not at start-up)."""
    import statistics

    return float(statistics.median(values))


@lru_cache(maxsize=1)
def measured_rows() -> tuple[MeasuredRow, ...]:
    text = Path(__file__).with_name("measured_speed.json").read_text(encoding="utf-8")
    rows = json.loads(text)["rows"]
    return tuple(MeasuredRow(
        source=r["source"], engine=r["engine"], backend=r["backend"], card=r["card"],
        hw_class=r["class"], gpu=r.get("gpu", ""), bandwidth=r.get("bandwidth", ""),
        flops=r.get("flops", ""), flops_basis=r.get("flops_basis", ""), model=r["model"],
        dtype=r["dtype"], ctx=r["ctx"], gen=r["gen"], batch=r["batch"], test=r["test"],
        tokens_per_s=_published_tokens_per_s(r),
        tp=r.get("tp", 1), kv_dtype=r.get("kv_dtype", ""), ttft_ms=r.get("ttft_ms", 0.0),
        latency_ms=r.get("latency_ms", 0.0), tpot_ms=r.get("tpot_ms", 0.0),
        total_tokens_per_s=r.get("total_tokens_per_s", 0.0),
        quoted_in=r.get("quoted_in", ""),
        quote=r.get("quote", ""), build=r.get("build", ""),
        predates=tuple(r.get("predates", ())),
    ) for r in rows)


def rows_for(engine: str, backend: str) -> tuple[MeasuredRow, ...]:
    """The rows of one engine × backend, in the file's order."""
    return tuple(r for r in measured_rows() if r.engine == engine and r.backend == backend)


# A prompt through a recurrent layer (Gated DeltaNet: Qwen3.5/3.6, Qwen3-Next) is a recurrence the
# GEMMs do not carry: llama.cpp's chunked delta-net (src/models/delta-net-base.cpp,
# build_delta_net_chunking) loops over 64-token chunks, a dozen graph nodes each, every chunk
# waiting on the last one's state; its fused GATED_DELTA_NET op (PR #19504) walks the tokens in
# order. p_rec: recurrent layers × ⌈ctx / 64⌉ × 1 ms. Qwen3-Next-80B-A3B Q4_0 on an M2 Ultra (PR
# #19375) ran pp512 and pp2048 at 0.27 and 0.34 of their bound, expected 62% and 58% too fast
# without it (Qwen3-30B-A3B's prefill rows on the same card: -9% to +11%); with it llama.cpp Metal's
# leave-one-out prefill error goes 4.6% → 3.6%, CUDA's 10.8% → 10.6% (0.56 ms a layer and chunk on
# Metal, 0.12 on CUDA, 0.03 on Vulkan; on Metal 0.17 with p_rec_pre below).
# A decode step through such a layer (llama.cpp's qwen35moe.cpp, build_layer_attn_linear) is a
# string of small kernels an attention layer does not have: the beta and alpha projections, sigmoid,
# softplus and the A scale, the conv state's concat and copy back to the cache, ssm_conv, silu, the
# l2 norms of q and k, the recurrence, the gated RMS norm; before a backend had the fused
# GATED_DELTA_NET op (PR #19504: CPU, CUDA; PR #20334: Vulkan) the recurrence itself was a dozen
# more (PR #20091 counts 12 nodes a layer). c_rec: recurrent layers × 1 ms (Mamba-2 layers too);
# c_rec_pre: the same again on a measured row whose build predates its backend's fused op
# (FUSED_DELTA_NET, a row's ``predates``). PR #20334's Radeon 8060S TG, before and after the op:
# Qwen3-Coder-Next 38.04 → 46.64 t/s, Qwen3.5-35B-A3B Q8_0 43.90 → 53.33. On llama.cpp Vulkan's 112
# rows (9 hybrid decode rows: PRs #20334 and #20662, a Strix Halo's b8038 llama-bench and
# llama-server) the leave-one-out decode error goes 11.7% → 8.0% with both (9.9% c_rec alone),
# 0.07 ms a recurrent layer and 0.23 more before the op; pooled decode 6.8% → 6.4%. On CUDA (an
# RTX 4090's Qwen3.5-27B and 35B-A3B tg64, build 8820: +3% and +18% without it) 6.1% → 5.9% over
# its 208 rows, 0.027 ms a layer (no CUDA row predates #19504: c_rec_pre 0). Metal's fused op is
# PR #20361 (ggml/src/ggml-metal/ggml-metal-ops.cpp, ggml_metal_op_gated_delta_net, running
# ggml-metal.metal's kernel_gated_delta_net; merged with #20340's chunked fused path, March 2026:
# ggml's sync commit 6dafac0), whose compare-commits table on an
# M2 Ultra times Qwen3.5-27B Q8_0, Qwen3.5-35B-A3B Q4_0 and Qwen3-Next-80B-A3B Q4_K_M before and
# after it (tg32 17.03 → 20.36, 57.08 → 77.65, 46.58 → 60.67 t/s; pp2048 1.1–1.3× as fast); a
# prompt's chunks cost more before it too (p_rec_pre: recurrent layers × ⌈ctx / 64⌉ × 1 ms again on
# such a row). On Metal's 267 rows (25 hybrid: those 18 and PR #19375's) the three terms take the
# hybrid rows' leave-one-out error from 29.3% to 5.5% (decode, 7 rows) and 15.4% to 7.6% (prefill),
# all rows' 4.8% → 4.7% and 4.5% → 4.4%: 0.10 ms a recurrent layer, 0.14 more before the op; 0.17
# ms a layer and chunk, 0.29 more before it (0.13, 0.14, 0.21 and 0.29 with the 37 Metal rows of 2026
# builds since: docs/latency.md, rows51). ROCm goes without them: its one hybrid decode row
# (Strix Halo tg128 +69%) a leave-one-out error cannot score, and its decode error grew with the
# term (9.2% → 9.3%; with the 22 ROCm rows of 2026 builds, eleven of them hybrid, 7.9% → 10.6%).
# With c_norm beside them (_decode_features: a gated-delta layer's gated RMS norm is its third)
# c_rec is 0.047 ms on Vulkan and 0.023 on CUDA.
DELTA_CHUNK = 64
FUSED_DELTA_NET = {"cuda": 19504, "vulkan": 20334, "metal": 20361}
# transformers' decode step copies its KV cache: its DynamicCache appends each step's keys and values
# with torch.cat (transformers/cache_utils.py, DynamicLayer.update: ``self.keys =
# torch.cat([self.keys, key_states], dim=-2)``; before 4.36, which the A100 rows ran, the same
# torch.cat of each layer's past keys and values in LlamaAttention.forward), which reads the whole
# cache and writes it anew before the attention reads it, where a paged or static cache is only read. CACHE_COPIES: the
# cache's bytes again per step, in the decode step's bytes read (``_decode_features``), two passes
# (the read and the write of the copy). On transformers' 49 rows, the bytes' coefficient at its
# floor (FLOORS), leave-one-out decode 10.9% → 9.0% with it, whole requests 13.2% → 9.3%.
CACHE_COPIES = {"transformers": 2}
LAYER_S = 1e-3  # the per-layer feature is layers × 1 ms, so its coefficient reads in ms per layer
# llama.cpp's K-quant mixes: 256-weight super-blocks with 6-bit sub-block scales and mins
# (ggml-common.h, block_q4_K), which its matrix-multiply kernels unpack with more integer work per
# weight than Q4_0's 32-weight blocks with one FP16 scale. Their prefill reaches a lower share of
# the peak: RTX 4090, Llama-3-8B pp512 (XiongjieDai, one build): Q4_K_M 7,139 t/s, F16 9,382. On
# the 477 llama.cpp, TensorRT-LLM and vLLM rows the term takes leave-one-out prefill error on
# Vulkan from 28.6% to 17.5%, CUDA 13.8% → 12.0%, Metal 5.6% → 5.4% (on Vulkan the integrated-GPU
# term below now carries what it did there). Decode gains nothing from a K-quant term (it read
# worse on CUDA and Vulkan). The rows are Q4_K_M's; every mix llama-quantize builds on a K-quant
# (Q2_K … Q6_K: block_q2_K … block_q6_K, each a 256-weight super-block of 16- or 32-weight
# sub-blocks with their own scales) takes the term too — llama.cpp's tools/quantize/README.md
# (Llama-3.1-8B, one machine) has their pp512 together, 752–822 t/s beside Q8_0's 865 — the
# i-quants and ternary mixes not (no row of theirs to read a share from). llama.cpp CUDA goes
# without the term (ENGINE_TERMS): its MMQ kernels unpack each weight tile once into int8 for the
# tensor cores (PR #7860, June 2024, K-quants on int8 MMA; ggml-cuda/mmq.cuh, load_tiles_q4_K) and
# reuse it across the ubatch's columns, so the unpacking is a small share of a tile's work; its
# Q4_K_M rows above ran before MMQ (PRE_MMQ_SOURCES: dequantised to FP16, no unpacking in the
# GEMM). PR #24127's RTX 4090 table (2026, llama 8B pp512 at n_ubatch 512, the master column) has
# Q4_K_S at 12,394 t/s beside IQ4_NL's 12,352 and Q5_0's 11,810. Fitted with it, p_kq came out
# at 0.30 beside p = 1.72 (a K-quant prompt 18% slower), carried by an RTX 3080's build-3622
# Llama-3.1-8B Q4_K_M pp512 and a Turing RTX 2080 Ti's; without it leave-one-out prefill goes from
# 8.2% to 8.5% and the held-out CUDA prefill rows (bench/speed_holdout.json: Q4_K_M on an RTX
# 3060, 3090 and 5060 Ti, expected 13–29% too slow) from 19.8% to 9.0% (docs/latency.md, kq60).
K_QUANTS = frozenset(q for q, kind in QUANT_TYPES.items() if kind.endswith("_K"))
# GPUs that share one package, its memory and its power budget with the CPU: the Strix Halo's
# Radeon 8060S (120 W for the whole APU in its rows). Under sustained matrix load its clock falls
# below the one its 59.4 TFLOP/s assumes: its llama.cpp pp512 reaches 0.19–0.30 of that peak where
# discrete cards reach 0.33–0.44, and with Vulkan rows of discrete cards at their own shares (RTX
# 3070 / 3090 coopmat2) no other term separates the two; the term (p_igpu, the prefill's FLOPs
# again on such a GPU) takes llama.cpp Vulkan's leave-one-out prefill error from 38.3% to 5.9%.
# The DGX Spark's GB10 is such a GPU too: one package with the Grace CPU, the 128 GB of LPDDR5X
# they share and one power budget for both. Its llama.cpp CUDA pp512 of Llama-2-7B Q4_0 on the
# scoreboard (#15013) is 3,062 t/s, 0.33 of its 125 TFLOP/s FP16 peak, where the GeForce RTX 5060
# Ti, 5070 and 5070 Ti reach 0.53–0.56 of theirs; with it in the set llama.cpp CUDA's
# leave-one-out prefill error is 11.9% over its 163 rows, 13.3% without (consumer prefill 10.4%
# against 13.5%).
INTEGRATED_GPUS = frozenset({"strix-halo", "dgx-spark"})
# Apple GPUs before M3's shader core (M1, M2: Metal GPU families Apple7 and Apple8). Each core's
# on-chip memory is split in fixed shares of registers, threadgroup and tile memory, a kernel holds
# the registers its worst path needs for its whole run, and its ALU pipelines issue fewer kinds of
# instruction at once; M3 (and A17 Pro) brought "Dynamic Caching, flexible on-chip memory, and
# high-performance ALU pipelines" (Apple's tech talk "Explore GPU advancements in M3 and A17 Pro",
# as appleinsider.com/articles/23/11/10/what-apples-three-gpu-enhancements-in-a17-pro-and-m3-
# actually-do retells it), which M4 keeps. llama.cpp's matrix-multiply kernel for quantised weights
# (kernel_mul_mm) unpacks each tile of blocks with integer and scale work into threadgroup memory
# before its FP16 simdgroup multiply-accumulates, work F16 weights skip: on the older shader core it
# shares the ALUs and the fixed registers with the FMAs. One build on three chips shows it
# (XiongjieDai's README, May 2024, Llama-3-8B pp512): Q4_K_M reaches 0.79 of F16's speed on an M1
# Max, 0.85 on an M2 Ultra, 0.90 on an M3 Max. The pp rows show it: with one share of the
# ALU peak for every Apple GPU, quantised prefills on M1 and M2 were expected 5% and 7% too fast
# (medians of 23 and 39 rows), their F16 prefills 7% and 4% too slow, M3's and M4's quantised ones
# 2% and 5% too slow. The term (p_a8: a quantised prefill's weight FLOPs again on an M1 or M2) takes
# llama.cpp Metal's leave-one-out prefill error from 5.8% to 3.6% over its 131 prefill rows (the
# FLOPs again for every format instead, before p_na: 4.6%). A decode step on them costs more per
# layer too (c_a8: the layers again): each step's graph is encoded into Metal command buffers on CPU
# threads (ggml-metal: "we sometimes encode the graph in parallel") and its kernels dispatched one
# by one, and the older chips' CPU and GPU front ends are slower at both; with it the decode error
# goes from 5.1% to 4.8% (0.03 ms a layer over c's 0.14). A term for the memory before M4's LPDDR5X
# instead (the bytes again on M1–M3) made it worse (5.3%). A card given by its figures alone on
# Metal, whose generation they do not tell, takes half of both terms (``_before_m3``): every Metal
# row so called, leave-one-out prefill 4.6%, decode 5.5% (5.3% and 4.8% before the terms; read as
# M3 or later, 6.8% and 5.1%).
APPLE_BEFORE_M3 = ("apple-m1", "apple-m2")
# Apple GPUs with a Neural Accelerator in every GPU core (M5, M5 Pro, M5 Max), which llama.cpp's
# matrix multiplications reach through the Metal 4 tensor API (PR #16634, Oct 2025). The table's
# peak for them is derived from Apple's "over 4x the peak GPU compute for AI" of M4 (hardware.json),
# a lower bound; the first tensor-API kernels reach a smaller share of it than the shader ALUs reach
# of theirs: an M5's pp512 (PR #16634's M5 run: Mistral-7B, Phi-2, TinyLlama Q4_0) was expected
# 23–39% too fast at the share M1–M4 reach. The term (p_na: the prefill's weight FLOPs again on such
# a GPU) takes those three rows' leave-one-out errors to −6% to +8% (each fitted on the other two:
# one source, one chip, so the share is provisional).
NEURAL_ACCELERATOR_GPUS = ("apple-m5",)
# Those first tensor-API kernels shared kernel_mul_mm (ggml/src/ggml-metal/ggml-metal.metal) with
# the simdgroup path (GGML_METAL_HAS_TENSOR ifdefs within one kernel, its data layout and
# threadgroup staging) until PR #20962 ("Optimize Metal Tensor API usage", Apple's
# Developer-Ecosystem-Engineering, opened 2026-03-24) gave the tensor path a kernel of its own
# (64x128 tiles, B read from device memory): on an M5 Max, pp512-pp4096 "geomean improvement of
# ~26%", a TinyLlama Q4_0 ~6.8%, an F16 8B ~71.9%; M1-M4 keep the simdgroup kernel. PR #16634's M5
# rows (October 2025) predate it ("predates": [20962]) and take p_pre as the AMD rows before their
# tiles do (``_before_matrix_tiles``); p_na is then the current kernels' share. With it llama.cpp
# Metal's leave-one-out prefill error is 4.9% either way (PR #16634's three M5 pp512 rows +14..+25%
# -> -5..+8%; the M5 Max's Gemma 4 pp512 of 2026 builds, -20..+2% -> -10..+10%); the scoreboard
# copies' M5 Max and M5 Pro pp512 (b10621, the tensor API on) -12..-21% -> +0..-13%
# (docs/latency.md, m5tiles62).
METAL_TENSOR_TILES = 20962
# Apple's Ultra chips are two Max dies joined by UltraFusion ("2.5TB/s of low-latency,
# inter-processor bandwidth", Apple's M1 Ultra announcement, March 2022; M2 Ultra and M3 Ultra the
# same): each die's memory controllers serve half the memory, so half of a step's weight reads
# cross the bridge, and llama.cpp's decode reaches a smaller share of the nominal 800 GB/s than a
# single die reaches of its own (issue #38's own reading: 0.44 of the bound on an Ultra). With one
# share for every chip, the Ultras' tg rows (M1, M2 and M3 Ultra, 45 rows) were expected 7.1% too
# fast at the median and the rest 2.9% too slow. The term (a_ultra: the decode's bytes again on an
# Ultra) takes llama.cpp Metal's leave-one-out decode error from 6.2% to 5.5% (Ultras +3.2%, the
# rest −0.9%), the Apple class from 5.4% to 5.1%, and on the held-out rows Metal's decode from 7.4%
# to 6.9% (itsmostafa's M3 Ultra: +3.5..+15.8% → −6.1..+7.6%); the layers again on an Ultra instead
# (a cross-die synchronisation a kernel) fitted its own rows better (5.1%) and the held-out rows
# worse (7.8%). A card given by its figures alone on Metal is read as an Ultra at 800 GB/s or more
# (every Ultra's bandwidth; no single die reaches it).
ULTRA_GPUS = ("apple-m1-ultra", "apple-m2-ultra", "apple-m3-ultra")
ULTRA_BANDWIDTH = 800e9
APPLE_TERMS = ("p_a8", "p_na", "c_a8", "a_ultra")  # fitted on llama.cpp Metal only
# llama.cpp's Vulkan matrix multiplications on AMD cards with cooperative matrices (KHR_coopmat:
# RDNA3's and RDNA 3.5's WMMA, RDNA4's) ran with generic tile sizes until PR #18749 ("Vulkan:
# Optimize Matmul parameters for AMD GPUs with Coopmat support", January 2026), which gave AMD its
# own: on the Radeon 8060S, Llama 3 8B pp512 went 644.84 -> 875.24 t/s (Q4_0), 529.50 -> 793.51
# (Q4_K_S), 422.37 -> 742.46 (Q8_0), the build otherwise the same, and "a brief test also showed
# improvements on AMD RX 9060 XT". A row measured on an AMD card on an earlier build says so
# (measured_speed.json: "predates": [18749]); its prefill takes the weights' FLOPs again (p_pre,
# ``_prefill_features``), and the expected figure, which describes a current build, does not. The
# rows that predate it: the RX 7800 XT's (PR #13324, May 2025: pp512 1,242 t/s, 0.17 of its 74.6
# TFLOP/s peak, where the scoreboard's RX 7900 XTX reaches 0.30), the RX 9070 XT's of PRs #13506
# and #13326 (May 2025), the Strix Halo's of llm-tracker (May 2025) and of PR #18280's "before"
# column (December 2025). With the term llama.cpp Vulkan's leave-one-out prefill error over its
# 102 rows goes from 18.7% to 14.4% (decode unchanged); scoreboard rows whose build no source
# dates count as current.
AMD_COOPMAT_TUNING = 18749
# ROCm's counterpart: llama.cpp's HIP MMQ kernels ran RDNA3's and RDNA 3.5's quantised GEMMs on
# dp4a tiles until PR #17576 ("HIP: enable WMMA-MMQ INT kernels for RDNA 3", opened 2025-11-28,
# after PR #17156 did RDNA4's) put them on the cards' int8 WMMA. One Radeon 8060S benchmarked on
# every build (kyuz0/amd-strix-halo-toolboxes, benchmark/results, ROCm 6.4.4, Llama 2 7B Q4_0
# pp512): 1,116 t/s on b7034 (2025-11-15), 1,539 on b7423 (2025-12-21), tg128 51 on both. A
# quantised row of an RDNA3 card on a build dated before it says so ("predates": [17576]) and
# takes p_pre as the Vulkan rows before PR #18749 do; 16-bit weights go to hipBLAS and are not
# touched (ggml/src/ggml-cuda/mmq.cu, ggml_cuda_should_use_mmq: MMQ only for quantised types).
# gpt-oss-120b's rows are not marked: on that box its MXFP4 pp512 went 762 -> 654 t/s (llama.cpp
# issue #17917 bisects the regression to this PR). The held-out Strix Halo rows of b9187 were
# expected 18-28% slow at pp512 without it.
ROCM_WMMA_MMQ = 17576
AMD_TILE_PRS = {"vulkan": AMD_COOPMAT_TUNING, "rocm": ROCM_WMMA_MMQ}
# llama.cpp CUDA builds from before MMQ became the default for quantised prefill (PR #8075, June
# 2024: "mul_mat_q instead of FP16 cuBLAS GEMM"): they dequantised each quantised weight matrix to
# FP16 in a scratch buffer (ggml-cuda.cu, ggml_cuda_op_mul_mat_cublas: to_fp16_cuda, then
# cublasGemmEx in CUBLAS_COMPUTE_16F) once per ubatch of 512 tokens (llama-bench's default
# n_ubatch), so such a prefill is an FP16 GEMM at the card's own rate (no MMQ share, no K-quant
# unpacking) plus the FP16 copy written and read again: 4 bytes per weight per ubatch. RTX 4090,
# CodeLlama-7B (#4766, January 2024): F16 pp512 11,048 t/s (46 ms), Q4_0 7,980 (64 ms) where the
# FP16 copy is 27 GB at 1.0 TB/s: 27 ms. These rows' sources (their builds: January to May 2024);
# a user's run is read as a current build (MMQ).
PRE_MMQ_SOURCES = frozenset({
    "https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference/blob/"
    "00dd2bdeb2404263f22bd6c1cd46ce397e341db5/README.md",  # May 2024
    "https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference/blob/"
    "aa72e0ec86c356c41f8281c9733e9a13c3675800/README.md",  # May 2024
    "https://github.com/ggml-org/llama.cpp/pull/4766",  # January 2024
    "https://github.com/ggml-org/llama.cpp/pull/4844",  # master of 2024-01-09
    "https://github.com/ggml-org/llama.cpp/pull/6017",  # March 2024
    "https://github.com/ggml-org/llama.cpp/pull/7676"})  # master of June 2024
LLAMA_UBATCH = 512


def pre_mmq(row: MeasuredRow) -> bool:
    """Whether a measured row ran a llama.cpp CUDA build from before MMQ (``PRE_MMQ_SOURCES``)."""
    return (row.engine, row.backend) == ("llama.cpp", "cuda") and row.source in PRE_MMQ_SOURCES


# Those builds ran attention without flash attention (llama.cpp's FA kernels came in April 2024 and
# llama-bench left them off by default until "auto" in September 2025): per layer a KQ GEMM writes
# the F32 score matrix, soft_max_ext reads and writes it, and the KQV GEMM reads it again, converted
# to FP16 for cuBLAS (llama.cpp's build_attn without flash_attn; ggml_cuda_op_mul_mat_cublas's
# to_fp16 of src1): 4 + 4 + 4 + 4 + 2 + 2 = SCORE_BYTES bytes a score. Each ubatch's scores cover
# its tokens against every key so far, not the causal half. The rows are Llama-2/3 and CodeLlama,
# whose heads are HEAD_DIM wide: a pair's attention FLOPs are 4 · HEAD_DIM a head
# (llmcalc.formulas.flops.pair_flops: 2 · h · (d_qk + d_v)). Leave-one-out on the 190 llama.cpp
# CUDA rows, with the dequantisation above: prefill 11.6% → 10.3%, data-centre 14.8% → 13.8%
# (at 16 or 24 bytes a score 10.4% / 10.5%); on the 163 rows before cuda38d's 9.1% (11.4% without
# either term). A100 PCIe F16 pp8192 (#6017) 4% too fast, RTX 4090 Q4_K_M pp4096 (XiongjieDai) 2%
# (36% without either term).
SCORE_BYTES = 20
HEAD_DIM = 128
# Their decode steps ran that attention through the mat-vecs for non-contiguous F16 of
# ggml-cuda.cu (2024): ggml_cuda_mul_mat_vec_p021 and ggml_cuda_mul_mat_vec_nc, whose kernels
# (mul_mat_p021_f16_f32 for K, mul_mat_vec_nc_f16_f32 for V) run a thread block per query head, each
# reading its KV head's rows (channel_x = channel / channel_x_divisor), so under grouped-query
# attention a KV head's cache is read once per query head of its group. a_gqa (decode): the step's
# cache bytes again for each further head of a group (Latency.kv_group − 1) at the bandwidth, on
# those builds only. XiongjieDai's Llama-3-8B Q4_K_M tg4096 were expected 1–16 points further too
# fast than its tg512 on each card (RTX 3090 +17% / +33%), 1.4 fitted on llama.cpp CUDA: its
# leave-one-out decode error 7.7% → 5.6% over 191 rows (consumer rows 7.7% → 6.2%, data-centre
# 13.8% → 11.6%); the RTX 3090's tg4096 +20%.


def score_bytes(lat: Latency) -> float:
    """The score matrices' bytes of an attention without flash attention (``SCORE_BYTES``): the
    causal pairs of every head and layer (the attention FLOPs over 4 · ``HEAD_DIM``), times the
    ubatch blocks' share, (ctx + ubatch) / (ctx + 1)."""
    u = min(LLAMA_UBATCH, lat.ctx)
    return SCORE_BYTES * lat.prefill_attention_flops / (4 * HEAD_DIM) * (lat.ctx + u) / (lat.ctx + 1)


def dequant_bytes(lat: Latency) -> float:
    """The FP16 copy of the GEMMs' weights written and read once per ubatch (``PRE_MMQ_SOURCES``):
    the weights' parameters are the dense FLOPs over 2 per token."""
    tokens = lat.batch * lat.ctx
    params = (lat.prefill.flops - lat.prefill_attention_flops) / (2 * tokens)
    return -(-tokens // LLAMA_UBATCH) * 4 * params


# FP8 weights served by SGLang: each FP8 linear quantises its input to FP8 in a kernel of its own
# before the GEMM (python/sglang/srt/layers/quantization/fp8_utils.py: a per-token-group FP8
# quantisation, sglang_per_token_group_quant_fp8, then the block-scaled FP8 GEMM; on ROCm Triton's
# or AITER's block-scale GEMM), so an FP8 layer launches more kernels than a BF16 one; the decode
# step runs them under CUDA graphs, the prefill eagerly from Python. Its cost is per layer, not per
# byte: SGLang's DeepSeek-R1 FP8 decode on 8 × B200 takes 9.2 ms a step, 0.58 ms of it reading the
# weights, where BF16 models of as many layers take half the per-layer time; on 8 × MI300X
# DeepSeek-V3.1 and Qwen3-Coder-480B FP8 take 262–396 µs a layer, Llama 4's BF16 108–138 µs. The
# terms (r_fp8, c_fp8: the layers again for FP8 weights, prefill and decode) take SGLang's
# leave-one-out error on CUDA from 35.1% to 11.5% (prefill) and 18.6% to 5.3% (decode), on ROCm
# from 55.6% to 39.9% and 28.5% to 15.4%; leaving out each model × card whole, from 41.4% to 14.8%
# and 21.8% to 15.8% on CUDA, 61.0% to 48.8% and 33.1% to 21.7% on ROCm. Fitted on SGLang only.
FP8_TERMS = ("r_fp8", "c_fp8")
# A served request's fixed cost (o, prefill, SGLang only): bench_serving times the first token
# from the HTTP request's send to its first streamed chunk (python/sglang/bench_serving.py: ttft =
# the first chunk's time − st), so it holds the request's parsing, tokenisation, scheduling and
# the first token's detokenisation and streaming, once per request whatever the prompt or model:
# gpt-oss-120b on 8 × B200 returns a 332-token prompt's first token in 31.8 ms, Gemma 4 E2B on one
# H200 a 610-token one in 54.2 ms. A feature of 1 ms per row, so its coefficient reads in ms:
# 10.9 on CUDA, 55.8 on ROCm. On SGLang's 54 CUDA rows (with the cookbook's gpt-oss, Gemma 4,
# Qwen3-235B-A22B and Qwen3.6 rows of dc38d) the leave-one-out prefill error goes from 11.8% to
# 10.4%, on its 30 ROCm rows from 39.9% to 34.6% (on the 36 CUDA rows before dc38d's it read
# 11.5% → 16.9%: with no TP 8 row of a small prompt among them the per-layer r alone carried it).
# Offline rows (TensorRT-LLM's gptSessionBenchmark, vLLM's benchmark_latency, llama-bench) have no
# request to serve: not theirs.
PREFILL_TERMS = 23  # _prefill_features' length; the row features are prefill's, then decode's 17
STAGES = ("prefill", "decode")


# The formats an engine × backend's prefill is fitted against, where not the bound's highest
# (llmcalc.planning.latency.COMPUTE_FORMATS): llama.cpp's rows on CUDA and Vulkan reach one share
# of the FP16-accumulate peak whatever the weights (RTX 4090, Llama-3-8B pp512: F16 0.43 of 330
# TFLOP/s, Q4_K_M 0.33; of the INT8 peak Q4_K_M would be 0.16), so FP16 is their reference.
# SGLang's first-token rows (Qwen3.6-35B-A3B, 8,192 tokens) gain little from FP8 weights (H200
# 182 → 138 ms, B200 98 → 116 ms), so its prefill is fitted against the 16-bit peak.
# llama.cpp on ROCm too: RDNA4's INT8 WMMA rate is twice its FP16 one (R9700: 383 against 191
# TFLOP/s; RDNA3 and the Strix Halo run both at one rate), but its HIP MMQ kernels do not reach it.
# PR #26284's tables at n_ubatch 512 (Llama-3-8B Q4_K_M pp2048): R9700 4,095 t/s, RX 7900 XTX
# 3,227, 1.27x, where the FP16 peaks are 1.56x apart and the INT8 ones 3.1x. Against the INT8
# peak the R9700's row was expected 45% too fast when left out, against FP16 3%; leave-one-out
# prefill over ROCm's 64 rows 13.9% → 13.1% (the 61 rows before, no RDNA4 among them: the same).
ENGINE_FORMATS: dict[tuple[str, str], tuple[str, ...]] = {
    ("llama.cpp", "cuda"): ("fp16",), ("llama.cpp", "vulkan"): ("fp16",),
    ("llama.cpp", "rocm"): ("fp16",), ("sglang", "cuda"): ("fp16",), ("sglang", "rocm"): ("fp16",)}
# llama.cpp's CUDA prefill of quantised weights runs its MMQ kernels (the default since PR #8075,
# June 2024: "mul_mat_q instead of FP16 cuBLAS GEMM"), int8 tensor-core tiles on the mma.sync
# instructions every NVIDIA GPU since Turing has. They reach about what a GeForce SM does per
# clock — 1,024 FP16-accumulate FLOP (RTX 4090: 330.3 TFLOP/s over 128 SMs at 2.52 GHz) — not the
# data-centre SMs' own tensor rate: 2,048 FLOP per SM and clock on an A100 (312 TFLOP/s, 108 SMs at
# 1.41 GHz), 4,096 on an H100/H200 (989.4 TFLOP/s, 132 SMs at 1.83 GHz; the H100 PCIe's 114 SMs
# the same), 8,192 on a B200 (2.25 PFLOP/s, 148 SMs at a 1.86 GHz tensor clock; the GB200 the same
# SM). On the CUDA scoreboard (#15013: Llama-2-7B Q4_0 pp512, flash attention off) an H100 makes
# 10,163 t/s, an H200 10,429 and a B200 10,532 beside an RTX 4090's 11,993, where their peaks are
# 3.0, 3.0 and 6.8 times the 4090's. A quantised prefill on these cards is fitted against their
# FP16 peak over that ratio; F16/BF16 weights still go to cuBLAS at the card's own rate. (SMs and
# clocks: glennklockwood.com/garden/processors/h100, hmc-tech.com's A100 and B200 pages,
# chipsandcheese's B200 article, the RTX 4090's Founders Edition specification.) With it the
# data-centre prefill term p_dc fits to 0.1 (2.8 without) and llama.cpp CUDA's leave-one-out error
# over its 163 rows goes from 8.5% to 8.1% (consumer rows 7.7% → 7.2%, data-centre 13.1% → 12.8%;
# prefill alone 11.8% → 11.9%), the B200's pp512 from 125% over to 1% under, the H100's and
# H200's from 8–25% over to 9–22% under; the H100 PCIe's F16 rows (cuBLAS, May 2024), which p_dc
# took down, are 71–96% over.
# A Hopper SM is not an A100 SM at twice the rate for those tiles: it reaches its dense peak only
# through the warpgroup wgmma instructions, and the warp-level mma.sync that MMQ's tiles issue
# (ggml/src/ggml-cuda/mma.cuh, ggml_cuda_mma::mma: mma.sync.aligned.m16n8k32 on int8 tiles; ggml at
# d99724f2) reaches about 0.65 of it — 494 of 757 TFLOP/s on an H800, against
# about 0.96 for wgmma (arXiv 2501.12084, as github.com/waynehacking8/blackwell-tensorcore-kernels'
# README quotes it at commit c289bde) — 0.65 × 4,096 = 2,673 FLOP a clock, 1.31 times an A100 SM's
# 2,048 (an A100 has no wgmma: mma.sync is its peak). The scoreboard's per-SM-clock speeds say the
# same: H100 10,163 t/s over 132 SMs at 1.83 GHz, A100 4,967 over 108 at 1.41, 1.29 times. So a
# Hopper card's MMQ rate is its peak over sm_rate / 1.31 (3.06); Blackwell's data-centre SM, whose
# full rate is its tcgen05 instructions', is taken at Hopper's mma.sync rate per clock (no
# measurement of its mma.sync share was found). llama.cpp CUDA's leave-one-out prefill error on its
# data-centre rows goes from 14.5% to 4.8% (the H100's and H200's pp512 from 15–26% under to 3–16%
# under, the A100's from 5–15% over to 9% under–0.4% over, the B200's from 8% under to 5% over), on
# its consumer rows 9.2% → 8.5%; decode does not move; held-out (bench/speed_holdout.py, which has
# no quantised prefill on these cards) data-centre 10.8% → 10.7%, the rest the same.
HOPPER_MMA_SYNC_SHARE = 494 / 757  # of a Hopper SM's dense tensor peak, reached by mma.sync
# a Hopper SM's mma.sync FLOP a clock over an A100 SM's: 0.65 × 4,096 / 2,048 = 1.31
HOPPER_OVER_A100 = HOPPER_MMA_SYNC_SHARE * 4_096 / 2_048


def sm_rate(a: Accelerator) -> int:
    """A table card's ``sm_rate`` (hardware.json; 1 where it has none: GeForce, workstation cards, the
    V100, whose Volta SM has GeForce's rate); a card not in the table that ``custom_card`` reads as
    data-centre takes the rate of the table's data-centre cards of its bf16 peak: below 500
    TFLOP/s an A100's SM (A100 312, A30 165), below 1,500 a Hopper SM (H100 PCIe 756, H100 NVL 835,
    H100 and H200 989), above it a Blackwell SM (B200 2,250, GB200 2,500)."""
    if a.key != CUSTOM or a.kind != "datacenter":
        return a.sm_rate
    return 2 if a.peak_flops < 500 * 10**12 else 4 if a.peak_flops < 1_500 * 10**12 else 8


def mmq_sm_rate(a: Accelerator) -> float:
    """What a card's FP16 peak is divided by for llama.cpp's MMQ tiles: its ``sm_rate``, over the
    Hopper SM's mma.sync rate per clock against an A100 SM's (1.31) from Hopper on."""
    rate = sm_rate(a)
    return rate / HOPPER_OVER_A100 if rate >= 4 else rate


# A card given by its figures alone (no table key): the bound takes the highest ratios a card of the
# backend holds (llmcalc.planning.latency.ASSUMED_RATIOS); the fit reads the card its figures
# resemble. GeForce runs its bf16 with FP32 accumulation at half the FP16-accumulate rate, which
# leaves its bf16 figure low beside its bandwidth: every GeForce card of hardware.json is below 180
# FLOP per byte (RTX 4090 164, 4070 Ti 159, 5090 117, 3090 76), every other CUDA card at or above
# 200 (A10 208, A40 215, RTX A6000 201, T4 203, L40S 419, H100 295, H200 206) but the A100 80GB
# (153), whose HBM2e (2.04 TB/s) no GDDR card reaches (RTX 5090: 1.792 TB/s). So on CUDA and
# Vulkan a card below 165 FLOP/B and 1.8 TB/s reads as GeForce (FP16 2x, INT8 4x, FP8 4x, FP4 8x,
# consumer), one from 200 FLOP/B or 1.9 TB/s at the full-rate ratios of the data-centre and
# workstation cards (H100: FP16 1x, INT8 and FP8 2x; B200 FP4 4x), data-centre where the bandwidth
# is HBM's (at least 1.5 TB/s: the A100 40GB's 1.555 is the table's lowest), else workstation; in
# between the ratios pass linearly from one to the other (geforce_share), so that a figure 1%
# higher does not halve an expected prefill (at one cut-off, 180 FLOP/B, Llama-3.1-8B Q4_K_M's
# pp512 on llama.cpp CUDA at 1 TB/s went 10,345 → 5,634 tokens/s between 179 and 181 TFLOP/s);
# the table's cards there: the RTX A4000 (172 FLOP/B), the A30 (177), the RTX A5500 (181), all
# full-rate, which the cut at 180 had read as GeForce but the last. The kind stays a cut: consumer
# while the GeForce share is at least half (the data-centre terms, p_dc, c_dc and a_dc, are
# fitted on a card's kind). Two cards of the table fall on the
# wrong side: the L40 (209 FLOP/B, FP16 2x) and the DGX Spark (229, GeForce's ratios). On ROCm the
# AMD cards' ratios (RX 7900 XTX and Strix Halo: one matrix rate for FP16 and INT8; MI300X FP8
# 2x), data-centre at HBM bandwidth; on Metal one figure for every format; a CPU the bound's
# ratios to its FP32 FMA peak (latency.ASSUMED_RATIOS: INT8 8x, FP16 2x).
# Each rule against every measured row re-called as a custom card (docs/latency.md): GeForce
# ratios for every CUDA card left TensorRT-LLM's rows at 28.5% (its H100/A100 FP8 and FP16 at 4x/2x),
# this split at 8.1% (as their cards: 8.0%).
GEFORCE_FLOP_PER_BYTE = (165, 200)  # GeForce's ratios below the first, the full rate from the second
GDDR_BANDWIDTH = (1_800 * 10**9, 1_900 * 10**9)  # the same in bytes/s
HBM_MIN_BANDWIDTH = 1_500 * 10**9
_FULL_RATE = {"fp16": 1, "int8": 2, "fp8": 2, "fp4": 4}
_AMD = {"fp16": 1, "int8": 1, "fp8": 2, "fp4": 2}


def _between(x: float, band: tuple[int, int]) -> float:
    """1 up to ``band``'s first figure, 0 from its second, linear in between."""
    lo, hi = band
    return min(1.0, max(0.0, (hi - x) / (hi - lo)))


def geforce_share(bf16: int, bandwidth: int) -> float:
    """How GeForce-like a CUDA or Vulkan card given by its figures is (``GEFORCE_FLOP_PER_BYTE``,
    ``GDDR_BANDWIDTH``): 1 below both bands' first figures, 0 from either's second."""
    return _between(bf16 / bandwidth, GEFORCE_FLOP_PER_BYTE) * _between(bandwidth, GDDR_BANDWIDTH)


# A card with under 50 FLOP of its figure per byte of bandwidth is one without tensor or matrix
# cores whose figure is its vector ALUs' (a Tesla P40 11.76T FP32 / 346 GB/s: 34; M40 24; K80 18;
# an Instinct MI50 26.5T packed FP16 / 1,024 GB/s: 26); every table card with tensor or matrix
# cores has over 60 (RTX 3060 66, MI100 75; RDNA2's packed FP16, 63-90, is above it too). There a
# decode step's mat-vec arithmetic (unpacking the quantised weights, the dot products, the scales)
# no longer hides under the read. f_vec: the step's FLOPs at the card's figure; p_vec, its prefill
# twin: the weights' FLOPs at it. On llama.cpp's CUDA, ROCm and Vulkan backends, fitted on a P40's
# rows (llama.cpp PRs #4766, #24127, #7716) and an MI50's (kyuz0's gfx906 toolbox README, iacopPBK's
# llama.cpp-gfx906 README's upstream column, PR #27841), each card by its figures: f_vec 3.0 on
# CUDA, 4.6 on ROCm; p_vec 0 on both (the P40's prompts sit on CUDA's shared terms; the MI50's run
# 10-14% faster than the RDNA cards' terms expect, and no coefficient goes below 0, so they move
# ROCm's shared terms); Vulkan has no such row (0). Left out: PR #4766's Q3_K_S and Q2_K rows (their unpacking does more a
# weight: tg128 expected 2.2x the measured) and BF16 on an MI50 (no BF16 ALUs). What each moved:
# docs/latency.md, fewflops63.
FEW_FLOP_PER_BYTE = 50


def few_flops_per_byte(acc: Accelerator, backend: str) -> bool:
    """Whether ``acc``, on a GPU backend, has under ``FEW_FLOP_PER_BYTE`` FLOP of its figure per
    byte of bandwidth: a card without tensor or matrix cores (the comment above)."""
    return (backend in ("cuda", "rocm", "vulkan")
            and acc.peak_flops < FEW_FLOP_PER_BYTE * acc.bandwidth)


def custom_card(acc: Accelerator, backend: str) -> Accelerator:
    """The card a custom card's figures resemble on ``backend``, with its ratios and kind, its
    ``peaks_source`` saying what was assumed."""
    bf16, bw = acc.peak_flops, acc.bandwidth
    hbm = bw >= HBM_MIN_BANDWIDTH
    if backend in ("cuda", "vulkan"):
        w = geforce_share(bf16, bw)
        (f_lo, f_hi), (b_lo, b_hi) = GEFORCE_FLOP_PER_BYTE, (g // 10**9 for g in GDDR_BANDWIDTH)
        ratios: Mapping[str, float] = {k: w * GEFORCE_RATIOS[k] + (1 - w) * _FULL_RATE[k]
                                       for k in _FULL_RATE}
        full = "data-centre" if hbm else "workstation"
        kind = "consumer" if w >= 0.5 else "datacenter" if hbm else "workstation"
        if w == 1:
            like = (f"GeForce-like (below {f_lo} bf16 FLOP per byte of bandwidth and "
                    f"{b_lo:,} GB/s)")
        elif w == 0:
            like = (f"{full}-like (at least {f_hi} bf16 FLOP per byte of bandwidth or "
                    f"{b_hi:,} GB/s; HBM from {HBM_MIN_BANDWIDTH // 10**9:,} GB/s)")
        else:
            like = (f"{w:.0%} GeForce-like, {1 - w:.0%} {full}-like ({bf16 / bw:.0f} bf16 FLOP per "
                    f"byte at {bw // 10**9:,} GB/s: GeForce's ratios below {f_lo} FLOP/B and "
                    f"{b_lo:,} GB/s, the full rate from {f_hi} or {b_hi:,}, blended between)")
    elif backend == "rocm":
        ratios, kind = _AMD, "datacenter" if hbm else "consumer"
        like = f"an AMD card (HBM from {HBM_MIN_BANDWIDTH // 10**9:,} GB/s: data-centre)"
    elif backend == "cpu":  # the bound's: a CPU's FP32 FMA peak, its int8 dot products 8x
        ratios, kind, like = ASSUMED_RATIOS["cpu"], acc.kind, "a CPU given by its FP32 FMA peak"
    else:
        ratios, kind, like = ONE_PEAK, acc.kind, f"one figure for every format on {backend}"
        if backend == "metal":  # which Apple GPU generation the figures are is not told
            like += ("; an Apple GPU of unknown generation, half way between M1/M2's shader core "
                     "and M3's (speed.APPLE_BEFORE_M3)")
    why = (f"a card not in the table: the fit assumes it {like}, {kind}: FP16 {ratios['fp16']:.3g}x, "
           f"INT8 {ratios['int8']:.3g}x, FP8 {ratios['fp8']:.3g}x and FP4 {ratios['fp4']:.3g}x its "
           "bf16 peak")
    if few_flops_per_byte(acc, backend):
        why += (f"; under {FEW_FLOP_PER_BYTE} FLOP of it per byte of bandwidth, read as a card "
                "without tensor or matrix cores, the figure its vector ALUs' (f_vec, p_vec: a card "
                "with them is given by its dense bf16 tensor figure)")
    return replace(with_ratios(acc, ratios, why), kind=kind)


def fit_card(lat: Latency, backend: str) -> Accelerator:
    """The card whose peaks and kind the fit reads: the row's or the user's, or for a custom card
    (no table key) ``custom_card``."""
    a = lat.accelerator
    return a if a.key != CUSTOM else custom_card(a, backend)


def _fit_peak(lat: Latency, backend: str) -> float:
    """The bound's peak of ``lat``'s weights on the card the fit reads (``fit_card``)."""
    a = lat.accelerator
    return lat.peak_flops if a.key != CUSTOM else compute_peak(fit_card(lat, backend), lat.dtype)


def fit_bound_seconds(lat: Latency, backend: str) -> tuple[float, float]:
    """The prefill's and a decode step's bound on the card the fit reads: the expected time is never
    below them (nor below the printed bound, whose peaks are at least these)."""
    k = max(1.0, lat.peak_flops / _fit_peak(lat, backend))  # never below the printed bound
    p, d = lat.prefill, lat.decode
    return (max(p.compute_s * k, p.memory_s) + p.comm_s, max(d.compute_s * k, d.memory_s) + d.comm_s)


def runs_mmq(lat: Latency, engine: str, backend: str, *, mmq: bool = True) -> bool:
    """Whether llama.cpp CUDA runs ``lat``'s prefill GEMMs in its MMQ kernels: quantised weights on
    a build with MMQ the default (``mmq``; ``PRE_MMQ_SOURCES``)."""
    return mmq and (engine, backend) == ("llama.cpp", "cuda") and not isinstance(lat.dtype, DType)


def engine_peak(lat: Latency, engine: str, backend: str, *, mmq: bool = True) -> float:
    """The peak an engine's prefill is fitted against: the bound's, or its ``ENGINE_FORMATS``;
    llama.cpp CUDA's quantised prefill on a data-centre card at its MMQ share (``mmq_sm_rate``),
    unless ``mmq`` is off (a build before MMQ was the default: cuBLAS at the card's own rate,
    ``PRE_MMQ_SOURCES``); llama.cpp Vulkan's BF16 on a Radeon at the bound's FP32 vector rate
    (``scalar_bf16``: no matrix cores)."""
    formats = ENGINE_FORMATS.get((engine, backend))
    if formats is None or scalar_bf16(lat.accelerator, lat.dtype, engine, backend):
        return _fit_peak(lat, backend)
    a = fit_card(lat, backend)
    peaks = {"fp16": a.fp16_flops, "int8": a.int8_ops, "fp8": a.fp8_flops}
    peak = max(a.peak_flops, *(peaks[f] for f in formats)) or _fit_peak(lat, backend)
    if runs_mmq(lat, engine, backend, mmq=mmq):
        return peak / mmq_sm_rate(a)
    return peak


def _fp16_peak(lat: Latency, peak: float, backend: str) -> float:
    """The peak the work outside the weights' GEMMs runs at: at most the FP16 one. Attention (the
    prefill's FMHA, the decode step's reads of an FP8 cache dequantised to FP16), the activations'
    quantisation and the norms run in FP16/BF16 whatever the weights' format, so an FP8 or INT8
    weight peak overstates them. TensorRT-LLM's rows show it: fitted at the FP8 peak, the expected
    speed of H100/H200 FP8 Mistral-7B at batch 896 is 38–44% above the measured and that of A100
    FP16 rows 14–18% below; at the FP16 peak the leave-one-out error of its whole requests goes
    from 11.6% to 8.8%, of its first-token rows from 8.1% to 7.4%."""
    a = fit_card(lat, backend)
    return min(peak, a.fp16_flops or a.peak_flops or peak)


def _before_m3(lat: Latency, backend: str) -> float:
    """1 on an Apple GPU before M3's shader core (``APPLE_BEFORE_M3``), 0 on any other card; a card
    given by its figures alone on Metal, whose generation they do not tell, 0.5."""
    key = lat.accelerator.key
    if key == CUSTOM and backend == "metal":
        return 0.5
    return float(key.startswith(APPLE_BEFORE_M3))


def _ultra(lat: Latency, backend: str) -> bool:
    """An Apple Ultra chip (``ULTRA_GPUS``: two dies), or a card given by its figures alone on Metal
    at an Ultra's bandwidth (``ULTRA_BANDWIDTH``)."""
    a = lat.accelerator
    if a.key == CUSTOM:
        return backend == "metal" and a.bandwidth >= ULTRA_BANDWIDTH
    return a.key.startswith(ULTRA_GPUS)


# the PR that gave each backend's matrix units their own tiles (p_pre: a measured row's build
# before it): AMD's on Vulkan and ROCm, an M5's tensor-API kernel on Metal
MATRIX_TILE_PRS = {**AMD_TILE_PRS, "metal": METAL_TENSOR_TILES}


def _before_matrix_tiles(lat: Latency, backend: str, predates: tuple[int, ...]) -> bool:
    """A measured row's build before its backend's matrix-unit tiles (``MATRIX_TILE_PRS``): on
    Vulkan any weights (PR #18749 tuned every matmul), on ROCm quantised ones (PR #17576's MMQ;
    16-bit weights go to hipBLAS), on Metal an M5's (PR #20962; M1-M4 keep the simdgroup kernel)."""
    if MATRIX_TILE_PRS.get(backend, 0) not in predates:
        return False
    if backend == "rocm":
        return not isinstance(lat.dtype, DType)
    return backend != "metal" or lat.accelerator.key.startswith(NEURAL_ACCELERATOR_GPUS)


def _fp8_weights(lat: Latency) -> bool:
    """Whether the weights are FP8 (``FP8_TERMS``)."""
    return lat.dtype is DType.fp8


def _fp8_gemms(lat: Latency, backend: str) -> bool:
    """FP8 weights on a card with FP8 tensor cores (its FP8 peak above its FP16 one): the GEMMs run
    in FP8, each input quantised to FP8 first, and reach a smaller share of their doubled peak
    than FP16 GEMMs do of theirs (p_tc, ``_tc_gemms``: first fitted as FP8's alone, for
    TensorRT-LLM and vLLM on CUDA). Its first-token rows (TensorRT-LLM's performance pages,
    v0.5–v0.9) are FP8 on the H100, H200 and L40S and FP16 on the A100, all of batch 1 at 128 and
    2,048 tokens: without the term the FP8 rows' shortfall
    was booked to the attention (p_att 7.49: the FMHA at 13% of the FP16 peak, p 1.22), which the
    2,048-token prompts alone carry, so a batch of shorter prompts was expected too fast. With
    it: FP16 GEMMs at 0.73 of their peak (p 1.37), FP8 ones at 0.58 (p + p_tc = 1.73), the
    attention at 0.57 (p_att 1.75); leave-one-out first-token error 5.7% → 5.5%, whole requests
    7.6% → 7.6%; vLLM's (its prefill fitted on those rows) whole requests 7.1% → 6.9%, decode
    steps 2.4% → 2.6%. Among SGLang's terms it moves none of its errors, so it is not among them."""
    a = fit_card(lat, backend)
    return _fp8_weights(lat) and a.fp8_flops > (a.fp16_flops or a.peak_flops)


def _tc_gemms(lat: Latency, backend: str) -> bool:
    """GEMMs on FP8-era tensor cores, which reach a smaller share of their peak than an A100's
    (p_tc): FP8 GEMMs (``_fp8_gemms``), and any GEMM on a Hopper or Blackwell SM (``sm_rate``
    4 or 8). The largest matmuls a search of shapes finds (stas00/ml-engineering,
    compute/accelerator/README.md, "Maximum Achievable Matmul FLOPS comparison table", torch
    2.6–2.7) reach 86.9% of the BF16 peak on an A100 SXM, 80.3% on an H100 SXM (the H200 the
    same), 83.8% on a GH200 and 77.6% on a B200; in FP8 70.9% on an H100 and 73.4% on an H200.
    On TensorRT-LLM's fitted rows the two readings are one: every FP8 first-token row is an H100,
    H200 or L40S, every 16-bit one an A100, so the fit cannot say whether a Hopper card's 16-bit
    GEMMs take the A100's share or the FP8 one; leave-one-out is the same either way (its
    first-token rows 5.5%, whole requests 7.6%; vLLM's whole requests 6.9% → 7.0%). Argonne's
    LLM-Inference-Bench (arXiv 2411.00136; held out in bench/speed_holdout.json) says which: 16
    prompts of 1,024 tokens, FP16 weights, on an H100 SXM were expected 21–25% too fast
    (TensorRT-LLM) and 28–36% (vLLM) at the A100's share, the GH200's 12–16%; at the FP8 share
    0–3% too slow and −3–+3%, the GH200's 12–15% too slow, while the A100's rows of the same table
    stay within 8% (the held-out prefill median 18.5% → 15.4%). llama.cpp's CUDA fit goes without
    the term: its quantised prefill runs MMQ tiles at their own rate (``mmq_sm_rate``), and its
    two 16-bit Hopper rows (an H100 PCIe's F16 pp512 and pp4096, May 2024, cuBLAS) alone would set
    it, at 0.46 of the A100's share: leave-one-out prefill 10.3% → 11.0%."""
    return _fp8_gemms(lat, backend) or sm_rate(fit_card(lat, backend)) >= 4


# A decode step's kernels on CUDA are launched from a CUDA graph (llama.cpp since PR #6766:
# ggml/src/ggml-cuda/ggml-cuda.cu, ggml_backend_cuda_graph_compute captures the step's kernels
# and replays them as one graph), so
# what each layer's small kernels (norms, RoPE, the KV cache's copy, the element-wise ops between
# the GEMVs) cost beyond their bytes is time on the GPU, counted in its cycles: per layer
# (c_clk) the reference 2,000 MHz over the card's published boost clock (hardware.json
# boost_mhz). On llama.cpp CUDA's rows it takes the place of the per-layer cost c: an A100
# (1,410 MHz) runs a small model's tg128 at a smaller share of its bound than an H100 (1,980)
# or an RTX 4090 (2,520) does. A card whose clock the table lacks (or one given by its figures
# alone) is read at the reference clock, and the basis says so.
CLOCK_MHZ = 2_000


def clock_scale(a: Accelerator) -> float:
    """The reference clock over ``a``'s boost clock (1 where the table has none)."""
    return CLOCK_MHZ / a.boost_mhz if a.boost_mhz else 1.0


def _decode_features(lat: Latency, engine: str, backend: str, *, old_build: bool = False,
                     predates: tuple[int, ...] = ()) -> tuple[float, ...]:
    """Weights and KV cache read at the bandwidth (transformers' cache copied too:
    ``CACHE_COPIES``), layers (launch/sync), the batch's FLOPs (at
    most at the FP16 peak: ``_fp16_peak``), the tensor-parallel all-reduces, and the layers again
    on a data-centre card (its own per-layer cost: llama.cpp's tg128 reaches 0.32–0.38 of the bound
    on an H100/A100, 0.65–0.72 on GeForce), and the layers again for a mixture of experts (its
    own per-layer cost: llama.cpp's MoE FFN (llama-graph.cpp build_moe_ffn) adds the router's
    logits, softmax, top-k (argsort + view), get_rows of the k weights, a mul_mat_id per expert
    projection and the weighted sum of the k outputs, each its own kernel launch over a
    [d, k] activation; with the gpt-oss rows as MXFP4 experts their tg128 on GeForce cards were
    expected 3–41% too fast from bytes alone. Fitted on llama.cpp CUDA only (ENGINE_TERMS): 0.038
    ms a layer of a mixture of experts (0.034 in the fit of 1,148 rows), its leave-one-out decode
    error 7.1% → 5.8%; on Metal the term takes it 4.8% → 5.1%, on ROCm (23 rows) 14.7% → 15.3%
    (its one MoE decode row does not identify it), on Vulkan (61 rows) 5.0% → 4.8% but its class
    median 9.5% → 10.2%; one per active expert instead of one per layer fits CUDA no better:
    5.8%), and the bytes again on a
    data-centre card: HBM's bandwidth at its latency needs more bytes in flight than llama.cpp's
    batch-1 mat-vec kernels keep (Little's law), so a large read reaches less of it than on GDDR —
    Llama-3-8B F16 tg512 (XiongjieDai, May 2024) at 0.40 of the bound on an A100 SXM and 0.51 on an
    H100 PCIe, 0.74–0.82 on an RTX 4090, RTX 6000 Ada, RTX A6000, A40 and L40S. Fitted on llama.cpp
    CUDA only (ENGINE_TERMS): its leave-one-out decode error 7.7% → 7.4% over its 163 rows,
    data-centre decode rows 12.9% → 11.1%. Its fitted cards are HBM2e to HBM3e at 1.9–8 TB/s;
    below ``HBM_MIN_BANDWIDTH`` (a V100's or an A30's HBM2, 0.9 TB/s) the bytes go again at that
    rate, not the card's (the kernels' bytes in flight cover more of a slower card's latency ×
    bandwidth): a_dc · bytes / max(bandwidth, 1.5 TB/s), no fitted row moved (a_dc65 in
    docs/latency.md: the held-out V100 and A30 decode rows 15.9% → 7.0%); and the layers again
    for FP8 weights (``FP8_TERMS``: their activations' quantisation kernels); and the layers again
    under tensor parallelism (``c_tp``: each layer's two all-reduces, after the attention's output
    projection and the MLP's down projection (Megatron-LM, Shoeybi et al. 2019, §3), are each a
    collective launch and a synchronisation of every GPU, a fixed latency the bytes at the link's
    bandwidth (g) leave out: a decode step's messages are batch × d_model × 2 B, kilobytes. Fitted
    on vLLM CUDA only (ENGINE_TERMS): its whole requests at TP 2–8 and its single-GPU decode steps
    (an L4) sat on one per-layer cost c, the L4's steps expected 18–30% too slow; with c_tp vLLM's
    leave-one-out decode error goes from 19.0% to 7.8%, its whole requests' 12.4% → 12.2%.
    TensorRT-LLM's rows gain nothing from it (its whole requests 7.0% → 7.1%, and a prefill twin of
    it, 6.0% → 6.8%), and vLLM on ROCm has only TP 8 rows, where it is the per-layer cost c again),
    and the layers again on an Apple GPU before M3 (``APPLE_BEFORE_M3``: c_a8), and the KV cache's
    bytes again for each further query head of a group on a build without flash attention
    (``old_build``: a_gqa, the comment above ``score_bytes``), and the recurrent layers (c_rec),
    again on a measured row of a build before its backend's fused GATED_DELTA_NET op (``predates``:
    c_rec_pre, ``DELTA_CHUNK``'s comment), and the norms a layer runs beyond the two of a pre-norm
    block (c_norm, ``latency.layer_norms``): each an RMS norm and its weight's multiply, launched
    and synchronised like the layer's other kernels; Gemma 3 and 4 run six to nine (pre- and
    post-norms of both blocks, the query and key norms), Qwen3 four, and their tg rows were
    expected too fast from a cost per layer alone (left out: gemma-3-4b on the DGX Spark +8% and
    +11%, now +6% and +10%; gemma-4-26b-a4b on an RX 7900 XTX +72% on Vulkan and ROCm, now −21% and
    +7%, on an R9700 +37%, now −12%). Fitted on llama.cpp CUDA, Vulkan and ROCm: 0.004, 0.016 and
    0.022 ms a norm beside 0.033, 0.029 and 0.048 a layer; leave-one-out decode error CUDA 6.2% →
    6.0%, Vulkan 8.4% → 8.2%, ROCm 8.7% → 8.6% (there identified by few rows: Gemma 4's two, and
    the hybrid layers' gated norm, which ROCm's c_rec leaves out). On Metal it takes 4.7% to 4.8%,
    so Metal goes without it (ENGINE_TERMS); TensorRT-LLM has no row with more than two norms a
    layer; and the bytes again on an Apple Ultra (a_ultra: two dies, half the reads across
    UltraFusion; ``ULTRA_GPUS``' comment), fitted on llama.cpp Metal only; and the step's FLOPs at
    the card's figure on a card with few FLOP per byte (f_vec: ``FEW_FLOP_PER_BYTE``' comment)."""
    d, peak = lat.decode, engine_peak(lat, engine, backend)
    dc = fit_card(lat, backend).kind == "datacenter"
    copies = CACHE_COPIES.get(engine, 0) * lat.decode_kv_bytes
    read = (d.bytes + copies) / lat.accelerator.bandwidth
    hbm_read = (d.bytes + copies) / max(lat.accelerator.bandwidth, HBM_MIN_BANDWIDTH)  # a_dc
    return (read, lat.layers * LAYER_S, d.flops / _fp16_peak(lat, peak, backend), d.comm_s,
            lat.layers * LAYER_S * dc, lat.layers * LAYER_S * lat.moe, hbm_read * dc,
            lat.layers * LAYER_S * _fp8_weights(lat), lat.layers * LAYER_S * (lat.tp > 1),
            lat.layers * LAYER_S * _before_m3(lat, backend),
            lat.decode_kv_bytes * (lat.kv_group - 1) * old_build / lat.accelerator.bandwidth,
            lat.recurrent_layers * LAYER_S,
            lat.recurrent_layers * LAYER_S * (FUSED_DELTA_NET.get(backend, 0) in predates),
            max(lat.norms - 2 * lat.layers, 0) * LAYER_S,  # c_norm: the norms beyond two a layer
            lat.layers * LAYER_S * clock_scale(lat.accelerator),  # c_clk: layers in GPU cycles
            read * _ultra(lat, backend),  # a_ultra: the bytes again across UltraFusion
            d.flops / lat.accelerator.peak_flops
            * few_flops_per_byte(lat.accelerator, backend))  # f_vec: FEW_FLOP_PER_BYTE's comment


# llama.cpp's Vulkan flash attention takes one of three paths (ggml/src/ggml-vulkan/ggml-vulkan.cpp,
# get_fa_tuning_params: the FaCodePath chosen as device->coopmat2 ? FA_COOPMAT2 :
# coopmat1_fa_support ? FA_COOPMAT1 : FA_SCALAR, then FA_SCALAR for coopmat1 on NVIDIA_TURING):
# VK_NV_cooperative_matrix2, NVIDIA's extension (llama.cpp PR #10206, "VK_NV_cooperative_matrix2
# support for mul_mat and FlashAttention2"), runs it on the tensor cores of an NVIDIA GPU from
# Ampere on; Turing takes the scalar path (coopmat1 flash attention disabled there by PR #19290),
# AMD and Intel GPUs coopmat1 or scalar. So on Vulkan the attention's share of the peak is
# fitted apart for NVIDIA's coopmat2 (p_cm2) and the rest (p_att): an RTX 3070's Llama-3-8B Q4_K_M
# pp16384 runs at 0.71 of its pp512's tokens/s (PR #12833, coopmat2), where one p_att for every
# card expected 0.21 of the measured rate when it was left out; AMD's coopmat1 has terms of its
# own (AMD_COOPMAT_GPUS). A card given by its figures alone, whose maker they do not tell, takes a
# third of each path.
TURING_NVIDIA = frozenset({"rtx-2080-ti", "rtx-2080-super", "rtx-2080", "rtx-2070-super", "t4"})
PRE_AMPERE_NVIDIA = TURING_NVIDIA | {"v100-sxm2-32gb", "v100-sxm2-16gb", "v100-pcie-32gb",
                                     "v100-pcie-16gb"}
# llama.cpp's CUDA prefill on two kinds of NVIDIA card reaches less of the peak than a GeForce from
# Ampere on does, each a term of its own (llama.cpp CUDA only: p_tu, p_ws, the weights' FLOPs again):
# - a Turing GPU's quantised weights (TURING_NVIDIA): MMQ's int8 tiles are built on Ampere's
#   mma.sync.m16n8k32; Turing has only m8n8k16 and runs each as four (ggml/src/ggml-cuda/mma.cuh,
#   mma() on int8 tiles: "On Turing m16n8k32 mma is not available, use 4x m8n8k16 mma
#   instead"). Left out, a T4's Llama-2-7B Q4_0 pp512 (#15013) was expected 111% too fast, an
#   RTX 2080 Ti's Llama-2-13B Q4_K_M 56% (geerlingguy/ai-benchmarks#46). Volta has no int8 MMA at
#   all (its MMQ runs dp4a): its V100 rows are not fitted, and on the scoreboard copies below the
#   term took its pp512 from +14% to -28%, so it stays Turing's;
# - a workstation card (the table's kind: the RTX A- and Ada and Blackwell PRO cards, A40, L40(S),
#   A10, L4, T4, the DGX Spark), whatever the weights: the GeForce dies at 70-300 W of board power
#   where a GeForce of the die draws 350-575 W, sustaining less of the boost clock their peaks are
#   quoted at under a GEMM's load. The RTX PRO 6000 (188 SMs at 2.62 GHz; the scoreboard does not
#   say whether the 600 W Workstation or the 300 W Max-Q edition) ran its pp512 at 14,855 t/s beside
#   the RTX 5090's 14,970 (170 SMs at 2.41 GHz); left out it was expected 20% too fast, its
#   gpt-oss-20b and 120b pp2048 (#15396) 42% and 80%. A card given by its figures alone reads as one
#   as far as it is not GeForce-like and not HBM (workstation_share).
# Fitted (p 1.65, p_tu 1.33, p_ws 0.55; p_igpu 0.91 → 0.50, the DGX Spark being both): llama.cpp
# CUDA's leave-one-out prefill 8.5% → 7.1% (the T4's +111% → +16%, the RTX 2080 Ti's +56% → -16%, the
# RTX PRO 6000's pp512 +20% → -5%); held-out prefill 11.2% (CUDA's 7 rows 9.0% → 4.9%); on 76
# scoreboard rows read from copies (bench/scoreboard_copies.json: #15013's, #10879's, #15021's,
# #4167's, none fitted) prefill 14.9% → 12.2%, their workstation cards' pp512 from +7% to +42% (RTX
# A5000, RTX A6000, A40, L40, RTX 6000 Ada, RTX PRO 6000 Max-Q) to -12% to +17% (docs/latency.md,
# tu60).


# AMD's GPUs with cooperative matrices (RDNA3's and RDNA 3.5's WMMA, RDNA4's: gfx11 and gfx12), whose
# Vulkan drivers expose VK_KHR_cooperative_matrix and full subgroups, so llama.cpp takes the coopmat1
# flash attention on them (ggml-vulkan.cpp: coopmat1_fa_support = coopmat_support &&
# subgroup_require_full_support; ggml_vk_khr_cooperative_matrix_support allows AMD's own
# drivers, AMDVLK and the proprietary one, on RDNA3 only, where RADV has it from RDNA3 on); RDNA2
# (RX 6000) has no matrix cores and takes the scalar path, as Turing does. Intel's Xe2 (the Arc
# B580) runs coopmat1 too, but its rows (pp512 only) sit 3–10 times from any of these fits, so it
# stays with the scalar path's terms rather than take AMD's. So on Vulkan their attention (p_cm1) and their weights' GEMMs, coopmat1's tiles
# (p_mm1: the weights' FLOPs again), are fitted apart from the scalar path's and coopmat2's. With
# one p_att for them and Turing, set by an RTX 2080 Ti's TinyLlama pp4096 (the scalar path: the
# attention's FLOPs at 1/49.5 of the FP16 peak), which on their pp512 rows also stood in for a
# slower GEMM, a long prompt was expected far too slow: a Strix Halo's gpt-oss-120b pp65536 (b9049)
# at 106 tokens/s where it ran 294, an RX 7900 XTX's gpt-oss-20b pp8192 (b7951) at 1,687 where it
# ran 3,060–3,738. 23 llama-bench rows of 2026 builds at the default ubatch of 512 (Strix Halo:
# gpt-oss-120b and Qwen3.6-35B-A3B to pp65536, Qwen3.5-27B to pp32768 on Vulkan and ROCm; an RX
# 7900 XTX's Qwen3.5-27B pp2048 and pp4096), 23.5% off when held out, are fitted (runs at a larger
# ubatch, which reads the weights fewer times, are not); with them and the two terms llama.cpp
# Vulkan's leave-one-out prefill error is 9.7% over 78 rows (11.7% on the 58 before them, which were
# at 12.8%; the new ones 4.7%), ROCm's 12.6% over 46 (12.9% on its 43, from 13.2%); the attention
# on AMD's coopmat1 runs at 1/7.4 of the FP16 peak, the GEMMs take 0.39 times their FLOPs at the
# peak more. A card given by its figures alone, whose maker they do not tell, takes a third of
# each path (coopmat2_share): on the held-out rows (bench/speed_holdout.py, 213 then) prefill 10.3% →
# 7.5%, the RX 9070 XT's given by its figures pp512 +5–10% → +2–7%, pp2048 −6% either way (half
# coopmat2's and half coopmat1's: +15%; half coopmat2's and half the scalar path's as before: −10%).
AMD_COOPMAT_GPUS = frozenset({"rx-7900-xtx", "rx-7900-xt", "rx-7900-gre", "rx-7800-xt",
                              "radeon-pro-w7900", "strix-halo", "rx-9070-xt", "rx-9070",
                              "rx-9060-xt", "r9700"})


def coopmat1_share(a: Accelerator, backend: str) -> float:
    """The share of the prefill that runs llama.cpp Vulkan's coopmat1 flash attention and GEMM
    tiles: 1 on an AMD GPU with cooperative matrices (``AMD_COOPMAT_GPUS``), 0 on any other (and
    on any other backend), a third on a card given by its figures alone."""
    if backend != "vulkan":
        return 0.0
    if a.key == CUSTOM:
        return 1 / 3
    return float(a.key in AMD_COOPMAT_GPUS)


def coopmat2_share(a: Accelerator, backend: str) -> float:
    """The share of the attention that runs llama.cpp Vulkan's coopmat2 flash attention: 1 on an
    NVIDIA GPU from Ampere on, 0 on any other (and on any other backend), a third on a card given
    by its figures alone (a third coopmat1's, a third the scalar path's)."""
    if backend != "vulkan":
        return 0.0
    if a.key == CUSTOM:
        return 1 / 3
    return float(a.maker == "nvidia" and a.key not in PRE_AMPERE_NVIDIA)


def workstation_share(lat: Latency, engine: str, backend: str) -> float:
    """How much of a workstation card llama.cpp CUDA's p_ws reads ``lat``'s as (``TURING_NVIDIA``'s
    comment): a table card by its kind; a card given by its figures alone as far as it is not
    GeForce-like (``geforce_share``) and its bandwidth not HBM's, so that a figure 1% higher does
    not move the expected prefill by the term's whole share."""
    if (engine, backend) != ("llama.cpp", "cuda"):
        return 0.0
    a = lat.accelerator
    if a.key != CUSTOM:
        return float(a.kind == "workstation")
    return 0.0 if a.bandwidth >= HBM_MIN_BANDWIDTH else 1 - geforce_share(a.peak_flops, a.bandwidth)


def _prefill_features(lat: Latency, engine: str, backend: str, *, old_build: bool = False,
                      predates: tuple[int, ...] = (),
                      ) -> tuple[float, ...]:
    """The weights' FLOPs at the engine's compute peak, bytes streamed, layers (launch/sync), the
    tensor-parallel all-reduces, the FLOPs again on a data-centre card (its own share of the peak:
    llama.cpp's pp512 on an H100/A100 reaches a quarter to a third of GeForce's share), the
    causal attention's FLOPs (their own share, at most at the FP16 peak: a pp4096 reaches less of
    the peak than a pp512), and the weights' FLOPs again for a K-quant mix (``K_QUANTS``) and for a
    mixture of experts (llama.cpp's mul_mat_id gathers each expert's tokens into its own small
    GEMM: gpt-oss-20b's pp2048 on GeForce cards reached 0.39–0.64 of the speed a dense model of its
    active size is expected at; the term takes llama.cpp CUDA's leave-one-out prefill error from
    15.4% to 12.0%), the FLOPs again on an integrated GPU (``INTEGRATED_GPUS``), the layers
    again for FP8 weights (``FP8_TERMS``), the weights' FLOPs again where they run in FP8 or on a
    Hopper or Blackwell SM (``_tc_gemms``), the weights' FLOPs again on a build that predates
    its backend's matrix-unit tiles (``_before_matrix_tiles``: a measured row's ``predates``; a run
    the caller asks about is a current build, so its ``predates`` is empty), a quantised
    prefill's weight FLOPs again on an Apple GPU before M3's shader core (``APPLE_BEFORE_M3``), the
    weights' FLOPs again on an Apple GPU with Neural Accelerators (``NEURAL_ACCELERATOR_GPUS``), the
    recurrent layers once per 64 prompt tokens (p_rec, ``DELTA_CHUNK``), again on a measured row of a
    build before its backend's fused GATED_DELTA_NET op (p_rec_pre), 1 ms for the request
    served (o: SGLang's fixed cost of a request, ``PREFILL_TERMS``), Vulkan's coopmat terms
    (p_cm2, p_cm1, p_mm1) and, on llama.cpp CUDA, the weights' FLOPs again in MMQ on a Turing GPU
    and on a workstation card (p_tu, p_ws: ``TURING_NVIDIA``'s comment), and the weights' FLOPs at
    the card's figure on a card with few FLOP per byte (p_vec: ``FEW_FLOP_PER_BYTE``' comment).
    ``old_build``: a measured row of a llama.cpp CUDA build from before MMQ was the default
    (``PRE_MMQ_SOURCES``): quantised weights dequantised to FP16 for cuBLAS (its GEMMs at the card's
    own FP16 rate, no K-quant unpacking in them, the FP16 copy's bytes streamed:
    ``dequant_bytes``), and attention without flash attention (its score matrix's bytes streamed:
    ``score_bytes``)."""
    cublas = old_build and not isinstance(lat.dtype, DType)
    p, peak = lat.prefill, engine_peak(lat, engine, backend, mmq=not cublas)
    dc = fit_card(lat, backend).kind == "datacenter"
    dense = p.flops - lat.prefill_attention_flops
    kq = getattr(lat.dtype, "gguf", "") in K_QUANTS and not cublas
    key = lat.accelerator.key
    streamed = (p.bytes + (dequant_bytes(lat) if cublas else 0)
                + (score_bytes(lat) if old_build else 0))
    cm2 = coopmat2_share(lat.accelerator, backend)
    cm1 = coopmat1_share(lat.accelerator, backend)
    attention = lat.prefill_attention_flops / _fp16_peak(lat, peak, backend)
    chunks = lat.recurrent_layers * -(-lat.ctx // DELTA_CHUNK) * LAYER_S  # DELTA_CHUNK's comment
    return (dense / peak, streamed / lat.accelerator.bandwidth, lat.layers * LAYER_S, p.comm_s,
            p.flops / peak * dc, attention * (1 - cm2 - cm1),
            dense / peak * kq, dense / peak * lat.moe,
            p.flops / peak * (lat.accelerator.key in INTEGRATED_GPUS),
            lat.layers * LAYER_S * _fp8_weights(lat), dense / peak * _tc_gemms(lat, backend),
            dense / peak * _before_matrix_tiles(lat, backend, predates),
            dense / peak * _before_m3(lat, backend) * (not isinstance(lat.dtype, DType)),
            dense / peak * key.startswith(NEURAL_ACCELERATOR_GPUS),
            chunks, chunks * (FUSED_DELTA_NET.get(backend, 0) in predates),  # p_rec, p_rec_pre
            LAYER_S,  # o: 1 ms a request
            attention * cm2,  # p_cm2: Vulkan's coopmat2 flash attention
            attention * cm1,  # p_cm1: Vulkan's coopmat1 flash attention (AMD_COOPMAT_GPUS)
            dense / peak * cm1,  # p_mm1: and its GEMM tiles
            dense / peak * (runs_mmq(lat, engine, backend, mmq=not cublas)
                            and key in TURING_NVIDIA),  # p_tu: MMQ on Turing (TURING_NVIDIA)
            dense / peak * workstation_share(lat, engine, backend),  # p_ws
            dense / lat.accelerator.peak_flops
            * few_flops_per_byte(lat.accelerator, backend))  # p_vec: FEW_FLOP_PER_BYTE's comment


def _row_features(row: MeasuredRow, lat: Latency) -> tuple[float, ...]:
    """The 40 features of one row (prefill's 23, then decode's 17): a throughput row's request takes
    the prefill and gen − 1 decode steps (TTFT + (gen − 1) × TPOT, as the roofline's end to end)."""
    pre = _prefill_features(lat, row.engine, row.backend, old_build=pre_mmq(row),
                             predates=row.predates)
    dec = _decode_features(lat, row.engine, row.backend, old_build=pre_mmq(row),
                           predates=row.predates)
    if row.stage == "prefill":
        return pre + (0.0,) * len(dec)
    if row.stage == "decode":
        return (0.0,) * len(pre) + dec
    return pre + tuple((lat.gen - 1) * x for x in dec)


def _measured_seconds(row: MeasuredRow) -> float:
    """A prefill of batch × ctx tokens, one decode step of the batch, or a whole request."""
    if row.stage == "prefill":
        return row.batch * row.ctx / row.tokens_per_s
    if row.stage == "decode":
        return row.batch / row.tokens_per_s
    return row.batch * row.gen / (row.tokens_per_s * row.tp)  # out tokens/s per GPU


def _solve(a: list[list[float]], b: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting; None when the system is singular."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        if abs(m[p][c]) < 1e-12 * max(1.0, max(abs(x) for x in m[p][:n])):
            return None
        m[c], m[p] = m[p], m[c]
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c], strict=True)]
    return [m[i][n] / m[i][i] for i in range(n)]


# The bytes' coefficient a is 1/η of the bandwidth: at least 1, since no step reads its bytes faster
# than the card's memory delivers them. Fitted free, the overlap of a step's costs that the sum of
# terms adds (eager PyTorch's kernel launches under the GPU's reads, TensorRT-LLM's batched compute
# under them) took it below 1: transformers 0.74, TensorRT-LLM 0.97. Held at 1 (the fit solves for
# a − 1 ≥ 0): transformers' leave-one-out decode 9.2% → 9.0%, whole requests 10.7% → 9.3%, its
# data-centre rows 7.4% → 6.7%; TensorRT-LLM's prefill 5.6% → 5.7%, whole requests 7.4% → 7.6%, its
# rows 6.9% → 6.7%; every other engine's a was above 1 already. The attention's coefficient p_att is
# 1/η of the FP16 peak (``_fp16_peak``) likewise: at least 1, since no prefill runs its attention
# faster than the card's FP16 matrix peak. vLLM's first-token rows (TensorRT-LLM's, stand-ins: prompts
# of 128 to 2,048 tokens) and its whole requests (Mixtral, 1,000 tokens in) leave the attention
# unidentified: fitted free it was 0, so a long prompt's attention was charged only through the
# roofline bound (at the weights' format's peak: FP8's 1 PFLOP/s for MXFP4 on an RTX PRO 6000), and
# gpt-oss-20b's 131,072-token first token there was expected in 2.5 s where it took 21.4 s
# (millstoneai.com, vLLM, held out); at 1 in 5.3 s. vLLM's leave-one-out errors are unchanged (decode
# 2.6%, whole requests 7.0%); on the held-out rows (294) prefill 12.5% → 11.2%. Every other engine
# that fits p_att has it above 1 already (TensorRT-LLM 1.75, llama.cpp 2.9-55). SGLang, vLLM on
# ROCm and transformers do not fit it (fitted free it took SGLang's prefill from 10.4% to 20.6%),
# so they hold it at its floor (``HELD``) rather than at 0: Llama-3.1-8B BF16 at 131,072 tokens on
# an H100 was expected at SGLang's bound, 20,468 tokens/s, above vLLM's 16,677, only because its
# attention cost nothing. Held, SGLang's leave-one-out prefill error goes 10.4% → 11.4% (its
# prompts are 610–8,192 tokens; the bound had charged their attention at the FP8 peak).
FLOORS = {"a": 1.0, "p_att": 1.0}
# Terms every engine × backend charges at least at their floor: one that does not fit a term
# (ENGINE_TERMS) holds it at its floor, where the rows exercise its feature, not at 0.
HELD = ("p_att",)


@lru_cache(maxsize=1)
def _floors() -> tuple[float, ...]:
    """``FLOORS`` in ``TERMS``' order (0 for a term without one)."""
    return tuple(FLOORS.get(t, 0.0) for t in TERMS)


@dataclass(frozen=True)
class _Sums:
    """The normal equations of Σ(c·y − 1)² over rows y = features / measured seconds, with each
    coefficient's floor (``FLOORS``) taken out: Σ(c′·y − (1 − floor·y))², c = floor + c′."""

    s: tuple[tuple[float, ...], ...]  # Σ y yᵀ
    b: tuple[float, ...]  # Σ y (1 − floor·y)
    m: int  # rows

    @staticmethod
    def of(ys: list[tuple[float, ...]]) -> _Sums:
        n, f = len(ys[0]), _floors()
        rest = [1 - sum(a * b for a, b in zip(f, y, strict=True)) for y in ys]
        return _Sums(tuple(tuple(sum(y[i] * y[j] for y in ys) for j in range(n)) for i in range(n)),
                     tuple(sum(y[i] * t for y, t in zip(ys, rest, strict=True)) for i in range(n)),
                     len(ys))

    def without(self, y: tuple[float, ...]) -> _Sums:
        t = 1 - sum(a * b for a, b in zip(_floors(), y, strict=True))
        return _Sums(tuple(tuple(v - y[i] * y[j] for j, v in enumerate(row))
                           for i, row in enumerate(self.s)),
                     tuple(v - y[i] * t for i, v in enumerate(self.b)), self.m - 1)


def _nnls(sums: _Sums, held: frozenset[int] = frozenset()) -> tuple[float, ...]:
    """Non-negative least squares of Σ(Σ_j c_j·y_j − 1)² on its normal equations (Lawson & Hanson
    1974, ch. 23, in Gram form): coefficients ≥ 0, since a negative cost has no meaning, and at
    least their ``FLOORS``; ``held`` ones exactly at their floor (``HELD``); a feature the rows
    never exercise (an all-zero column) stays 0."""
    n = len(sums.b)
    c = [0.0] * n
    free = {j for j in range(n) if sums.s[j][j] > 0 and j not in held}
    active: list[int] = []
    tol = 1e-12 * max((abs(v) for v in sums.b), default=1.0)

    def gradient() -> list[float]:  # b − S c: the descent direction of each coefficient
        return [sums.b[i] - sum(sums.s[i][j] * c[j] for j in range(n)) for i in range(n)]

    for _ in range(3 * n):
        w = gradient()
        candidates = [j for j in free if w[j] > tol]
        if not candidates:
            break
        j = max(candidates, key=lambda k: w[k])
        free.discard(j)
        active.append(j)
        while True:
            z = _solve([[sums.s[i][k] for k in active] for i in active], [sums.b[i] for i in active])
            if z is None:  # a feature collinear with the active ones: drop it for good
                active.remove(j)
                break
            if min(z) > 0:
                for i, v in zip(active, z, strict=True):
                    c[i] = v
                break
            alpha = min(c[i] / (c[i] - v) for i, v in zip(active, z, strict=True) if v <= 0)
            for i, v in zip(active, z, strict=True):
                c[i] += alpha * (v - c[i])
            for i in [i for i in active if c[i] <= tol]:
                active.remove(i)
                free.add(i)
                c[i] = 0.0
            if not active:
                break
    # each floor back on, where the rows exercise its feature (else the term is not fitted: 0)
    return tuple(v + f * (sums.s[j][j] > 0) for j, (v, f) in enumerate(zip(c, _floors(), strict=True)))


@dataclass(frozen=True)
class Fit:
    """Coefficients of one stage's step-time model and the rows they came from."""

    stage: str
    coefficients: tuple[float, ...]
    rows: int  # the engine's own rows measuring this stage (throughput rows inform both stages)
    loo_median_abs_error: float | None  # leave-one-out over this stage's rows, as a fraction
    stand_in: str = ""  # whose rows joined the fit and why (STAND_INS), or ""
    stand_in_rows: int = 0  # how many of them
    stand_in_stages: tuple[str, ...] = ()  # the stages they inform (STAND_INS)
    max_batch: int = 0  # the largest batch among the rows fitted for this stage (stand-ins too)

    def seconds(self, features: tuple[float, ...]) -> float:
        return sum(c * x for c, x in zip(self.coefficients, features, strict=True))


@dataclass(frozen=True)
class Model:
    """One engine × backend's fit: both stages, and the error on whole-request throughput rows."""

    prefill: Fit
    decode: Fit
    throughput_rows: int
    throughput_loo_median_abs_error: float | None
    # (card key, stage, the signed leave-one-out errors of its rows of that stage)
    by_card: tuple[tuple[str, str, tuple[float, ...]], ...] = ()


# A card whose own rows the fit misses by far makes its expected figures less certain than the
# engine's median error says: llama.cpp Vulkan's Intel Arc rows (A770, B580: its matrix cores run
# coopmat on Xe2 only, PR #14001) are expected 3-11x too fast in prefill and 1.3-2.3x in decode when
# left out, where the median row of the backend is 8-14% off. Past CARD_CAUTION (a stage's median
# |error| over the card's rows) the expected figure says so, with the rows' figures.
CARD_CAUTION = 0.25


def card_caution(model: Model, key: str) -> str:
    """What the fit's own rows on card ``key`` were off by, where a stage's are past
    ``CARD_CAUTION``; "" where none is (or the card has no rows)."""
    far = [f"{stage} {min(errs):+.0%}" + (f" to {max(errs):+.0%} ({len(errs)} rows)"
                                           if len(errs) > 1 else " (1 row)")
           for card, stage, errs in model.by_card
           if card == key and median(abs(e) for e in errs) > CARD_CAUTION]
    if not far:
        return ""
    return ("this card's own measured rows sit far from the fit (expected / measured − 1, each "
            f"left out): {', '.join(far)}; its expected figures are less certain")


# transformers runs bitsandbytes' weights through kernels of its own, and its fitted rows are 16-bit
# only. bitsandbytes' benchmark (benchmarking/README.md at 81e6345: v0.45.0.dev, transformers 4.46.3
# through optimum-benchmark; T4 Qwen2.5-3B FP16, RTX 4090 Llama-3.1-8B and H100 Llama-3.1-8B and
# Qwen2.5-32B BF16, batch 1, 8 and 32) times their decode steps beside the 16-bit step of the same
# model, card and batch: LLM.int8() (load_in_8bit at transformers' default outlier threshold, 6.0)
# 1.7-4.3x it: each linear quantises its input, finds the outlier columns (a sync with the host),
# runs the int8 GEMM, its dequantisation and the outliers' 16-bit GEMM
# (bitsandbytes/autograd/_functions.py, MatMul8bitLt.forward); 4-bit (NF4, with and without double
# quantisation) 0.7-2.5x: at batch > 1 each linear dequantises its weights to 16 bits before the
# GEMM (matmul_4bit, MatMul4Bit.forward), 4 more bytes a weight. The fit reads them at the 16-bit
# rows' costs, their bytes fewer. Fitted with per-layer costs of their own on the README's 51 rows,
# the 16-bit decode rows went from 9.0% to 16.1% (the hosts' speed sets those costs: an int8 layer
# 0.7 ms on the RTX 4090's host, 1.8 on the H100's, 3.6 on the T4's), so the figure says so instead
# (docs/latency.md, bnb60).
BNB_STEP = {"int8": ("LLM.int8() (load_in_8bit)", "1.7-4.3x"), "4-bit": ("4-bit (load_in_4bit)", "0.7-2.5x")}


# llama.cpp's fitted Vulkan rows hold no BF16 weights. On a Radeon they run the scalar FP32 shaders
# (latency.scalar_bf16), whose peak the expected figures take, and a mixture of experts' run slower
# still (mul_mat_id over many small experts in those shaders): a Strix Halo's Qwen3.6-35B-A3B BF16
# (kyuz0/amd-strix-halo-toolboxes, b9193; held out in bench/speed_holdout.json) ran pp512 at 328.4
# t/s and tg128 at 10.68 where they expect 656 and 32.1, 0.50 and 0.33 of them; its dense
# Gemma-4-31B BF16 (b9187) within 18%, so a dense model's figures go without the caution.
SCALAR_BF16_MOE = ("0.50", "0.33")  # measured / expected: pp512, tg128


def weights_caution(lat: Latency, engine: str, backend: str) -> str:
    """What the fit does not know of bitsandbytes' weights under transformers (``BNB_STEP``) and of
    a mixture of experts' BF16 weights in llama.cpp Vulkan's scalar shaders (``SCALAR_BF16_MOE``);
    "" for any other weights or engine."""
    if lat.moe and scalar_bf16(lat.accelerator, lat.dtype, engine, backend):
        pp, tg = SCALAR_BF16_MOE
        return ("llama.cpp's fitted Vulkan rows hold no BF16 weights; on a Radeon (no bf16 in "
                "AMD's Vulkan drivers) they run the scalar FP32 shaders, whose peak these figures "
                "take, and a mixture of experts' slower still: a Strix Halo's Qwen3.6-35B-A3B BF16 "
                f"(b9193) ran pp512 at {pp} and tg128 at {tg} of them; likely too fast")
    if engine != "transformers":
        return ""
    if lat.dtype is DType.int8:
        name, ratio = BNB_STEP["int8"]
    elif not isinstance(lat.dtype, DType) and lat.dtype.name in BNB_NAMES:
        name, ratio = BNB_STEP["4-bit"]
    else:
        return ""
    return (f"transformers' fitted rows are 16-bit, these weights bitsandbytes' {name}: in "
            f"bitsandbytes' own benchmark (v0.45; T4, RTX 4090, H100) their decode step took {ratio} "
            "the 16-bit step of the same model, card and batch, where these figures read their "
            "fewer bytes at the 16-bit rows' costs; likely too fast")


def first_step_floor(decode_rows: int, lent_for: tuple[str, ...]) -> bool:
    """Whether the prefill's expected time is held to at least a decode step's without its cache
    reads (``cacheless``): a prefill reads every weight, launches every layer's kernels and does at
    least a step's work, so the first token is not expected sooner than the next, nor a whole
    request's output tokens/s above the batch's decode rate (before, up to 2x where the prefill
    sat at the bound and the step carried its layers' costs: transformers, Gemma-3-27B AWQ on a
    V100, 3-token prompts, batch 4; now within the step's cache reads, 0.2% on a grid of prompts
    of 1-128 tokens, batches 1-256). Held where decode steps were measured: the engine's own
    (``decode_rows``) or its stand-in's (``lent_for``, the stages stand-in rows inform, holds
    "decode": transformers' CUDA rows on ROCm and Metal). TensorRT-LLM and vLLM on ROCm fit
    their decode on whole requests alone: TensorRT-LLM's step carried to batch 1 (a 7B FP8 on an
    H100 at 143 tokens/s) would sit above its own first-token rows at 128 tokens (leave-one-out
    5.5% -> 6.8%), so both keep their own prefill. Elsewhere no fitted, leave-one-out or held-out
    figure moves (``loo_errors`` holds the floor as ``expected`` does)."""
    return decode_rows > 0 or "decode" in lent_for


def cacheless(lat: Latency) -> Latency:
    """``lat`` with its decode step's cache reads taken off (a GPU's share: ``decode_kv_bytes`` is
    the tp ranks' together) and its FLOPs at most the prefill's: the weights it reads, its layers'
    launches, its all-reduces and the work a prefill does too (``first_step_floor``)."""
    kv = -(-lat.decode_kv_bytes // lat.tp)
    return replace(lat, decode=replace(lat.decode, bytes=lat.decode.bytes - kv,
                                       flops=min(lat.decode.flops, lat.prefill.flops)),
                   decode_kv_bytes=0)


def _predicted(row: MeasuredRow, lat: Latency, c: tuple[float, ...], *, floor: bool) -> float:
    """Seconds the fit gives a row, each stage at least the bound's; with ``floor``, the prefill
    at least a decode step without its cache (``first_step_floor``)."""
    pf = _prefill_features(lat, row.engine, row.backend, old_build=pre_mmq(row),
                            predates=row.predates)
    k = len(pf)
    bound_pre, bound_dec = fit_bound_seconds(lat, row.backend)
    kw: dict[str, Any] = dict(old_build=pre_mmq(row), predates=row.predates)
    step = (sum(a * b for a, b in zip(c[k:], _decode_features(cacheless(lat), row.engine,
                                                              row.backend, **kw), strict=True))
            if floor else 0.0)
    pre = max(sum(a * b for a, b in zip(c[:k], pf, strict=True)), bound_pre, step)
    df = _decode_features(lat, row.engine, row.backend, **kw)
    dec = max(sum(a * b for a, b in zip(c[k:], df, strict=True)), bound_dec)
    if row.stage == "prefill":
        return pre
    if row.stage == "decode":
        return dec
    return pre + (lat.gen - 1) * dec


# The 40 terms in _row_features' order (prefill's 23, then decode's 17).
TERMS = ("p", "q", "r", "s", "p_dc", "p_att", "p_kq", "p_moe", "p_igpu", "r_fp8", "p_tc", "p_pre", "p_a8", "p_na",
         "p_rec", "p_rec_pre", "o", "p_cm2", "p_cm1", "p_mm1", "p_tu", "p_ws", "p_vec", "a", "c", "f", "g", "c_dc", "c_moe", "a_dc",
         "c_fp8", "c_tp", "c_a8", "a_gqa", "c_rec", "c_rec_pre", "c_norm", "c_clk", "a_ultra", "f_vec")
# What each term's feature is, as `latency --json` names it (basis.prefill.model / decode.model);
# "measured rows only": a feature a current build, the one a caller asks about, does not have.
TERM_TEXT: dict[str, str] = {
    "p": "weight FLOPs / peak", "q": "bytes / bandwidth", "r": "layers × 1 ms",
    "s": "all-reduce time", "p_dc": "FLOPs / peak on a data-centre card",
    "p_att": "attention FLOPs / peak", "p_kq": "weight FLOPs / peak for a K-quant mix",
    "p_moe": "weight FLOPs / peak for a mixture of experts",
    "p_igpu": "FLOPs / peak on an integrated GPU", "r_fp8": "layers × 1 ms for FP8 weights",
    "p_tc": "weight FLOPs / peak on FP8-era tensor cores (FP8 weights on FP8 tensor cores; any "
            "weights on a Hopper or Blackwell SM)",
    "p_pre": "weight FLOPs / peak on a build before its backend's matrix-unit tiles: PR #18749's "
             "on Vulkan and PR #17576's on ROCm (AMD), PR #20962's on an M5's Metal (measured "
             "rows only)",
    "p_a8": "quantised weight FLOPs / peak on an Apple GPU before M3",
    "p_na": "weight FLOPs / peak on an Apple GPU with Neural Accelerators",
    "p_rec": "recurrent layers × prompt chunks of 64 × 1 ms",
    "p_rec_pre": "recurrent layers × prompt chunks of 64 × 1 ms on a build before the backend's fused "
                 "GATED_DELTA_NET op (measured rows only)", "o": "1 ms a served request",
    "p_cm2": "attention FLOPs / peak in Vulkan's coopmat2 flash attention (NVIDIA from Ampere on)",
    "p_cm1": "attention FLOPs / peak in Vulkan's coopmat1 flash attention (AMD from RDNA3 on)",
    "p_mm1": "weight FLOPs / peak in Vulkan's coopmat1 matrix multiplications (AMD from RDNA3 on)",
    "p_tu": "quantised weight FLOPs / peak in llama.cpp CUDA's MMQ on a Turing GPU",
    "p_ws": "weight FLOPs / peak on an NVIDIA workstation card, llama.cpp CUDA",
    "p_vec": f"weight FLOPs / the card's figure on a card with under {FEW_FLOP_PER_BYTE} FLOP of it "
             "per byte of bandwidth (no tensor or matrix cores)",
    "a": "bytes / bandwidth", "c": "layers × 1 ms", "f": "FLOPs / peak", "g": "all-reduce time",
    "c_dc": "layers × 1 ms on a data-centre card",
    "c_moe": "layers × 1 ms for a mixture of experts",
    "a_dc": "bytes / max(bandwidth, 1,500 GB/s) on a data-centre card",
    "c_fp8": "layers × 1 ms for FP8 weights",
    "c_tp": "layers × 1 ms under tensor parallelism",
    "c_a8": "layers × 1 ms on an Apple GPU before M3",
    "a_gqa": "KV bytes × (query heads per KV head − 1) / bandwidth on a build without flash "
             "attention (measured rows only)",
    "c_rec": "recurrent layers × 1 ms",
    "c_rec_pre": "recurrent layers × 1 ms on a build before the backend's fused GATED_DELTA_NET op "
                 "(measured rows only)",
    "c_norm": "norms beyond two a layer × 1 ms",
    "c_clk": f"layers × 1 ms × {CLOCK_MHZ:,} MHz / the card's boost clock",
    "a_ultra": "bytes / bandwidth on an Apple Ultra chip (two dies)",
    "f_vec": f"FLOPs / the card's figure on a card with under {FEW_FLOP_PER_BYTE} FLOP of it per "
             "byte of bandwidth (no tensor or matrix cores)"}


def step_model(stage: str) -> str:
    """A stage's time per step as the sum of its terms (``TERM_TEXT``), in the order of its
    coefficients."""
    names = TERMS[:PREFILL_TERMS] if stage == "prefill" else TERMS[PREFILL_TERMS:]
    return "t = " + " + ".join(f"{n} · {TERM_TEXT[n]}" for n in names)
# llama.cpp CUDA's prefill on Turing and workstation cards (TURING_NVIDIA's comment)
CUDA_CARD_TERMS = ("p_tu", "p_ws")
# the recurrent layers beyond p_rec (DELTA_CHUNK's comment)
RECURRENT_TERMS = ("c_rec", "c_rec_pre", "p_rec_pre")
# the terms but llama.cpp CUDA's own decode terms, MoE, HBM and the GQA re-read (_decode_features),
# SGLang's FP8 terms and vLLM's tensor-parallel one: llama.cpp's other backends and TensorRT-LLM
_NO_C_MOE = tuple(t for t in TERMS
                  if t not in ("c_moe", "a_dc", "a_gqa", *FP8_TERMS, "c_tp", "o", *APPLE_TERMS, "c_clk",
                               *CUDA_CARD_TERMS))
# llama.cpp Metal and ROCm (and Vulkan's coopmat terms, p_cm2, p_cm1 and p_mm1: coopmat2_share,
# coopmat1_share)
_NO_REC = tuple(t for t in _NO_C_MOE if t not in (*RECURRENT_TERMS, "p_cm2", "p_cm1", "p_mm1"))
# The terms an engine × backend is fitted with, where not all 36: vLLM's rows (its nightly
# benchmark_latency, batch 8, 32 in / 128 out, on H200/H100/A100 at TP 1, 2, 4) are seven whole
# requests whose time is nearly all decode steps, each ≈ bytes / bandwidth + a per-layer cost
# (Llama-3.1-8B: 6.5 ms a step on an H200, 7.8 on an H100, their bounds 3.2 and 4.5 ms: 3.3–3.4 ms
# over on both); all the terms on seven rows overfit. Its prefill terms are TensorRT-LLM's
# (p, q, r, s, p_dc, p_att, p_tc: _tc_gemms), fitted on TensorRT-LLM's first-token rows standing in (STAND_INS):
# with p alone those 56 rows sit 35% from the fit (the 128-token prompts' fixed costs), with these
# 7.2%, and vLLM's 27 whole requests' leave-one-out error goes from 17.1% to 12.9% (the kernel
# PRs' 1,000-token Mixtral prompts at TP 2–8: their prefill and its all-reduces). Its decode adds
# the tensor-parallel per-layer cost c_tp (_decode_features): with the six decode steps of an L4
# (vLLM 0.23, a closed-loop sweep, batch 1–32) beside whole requests at TP 1–8. Its prefill adds
# p_moe (_prefill_features): vLLM's fused_moe kernel, like llama.cpp's mul_mat_id, sorts each
# expert's tokens into its own GEMM; with it the whole requests' leave-one-out error goes from
# 12.2% to 10.8% (the Mixtral rows at 1,000 tokens in, batch 64: 2 × A100 +71% → +26%, 8 × H100
# +125% → +97%), its decode steps stay at 7.8%. Its decode adds the batch's compute f, as vLLM on
# ROCm: on the 692 rows, decode 7.8% → 2.4% (the L4's batch-32 step was expected 18% too fast),
# whole requests 9.2% → 7.1%. f = 4.7 (the batch's FLOPs at 0.21 of the FP16 peak: small-M GEMMs
# in tiles of 64–128 rows, the fused_moe kernels) is read off rows of batch 64 at most
# (TensorRT-LLM's, to batch 1,024, give 1.2): a batch of 256 is beyond what any vLLM row shows.
# TensorRT-LLM's go without the MoE terms: its only MoE rows (Mixtral-8x7B, v0.9.0) sit in
# tables labelled FP8 when its FP8 Mixtral came later (docs/latency.md), and fitted with the term its leave-one-out errors grow (first-token rows 7.4%
# → 7.9%, whole requests 8.8% → 9.2%).
# SGLang (its rows: first-token latencies at concurrency 1, decode steps at concurrency 1–100, of
# 2–685B models on B200, H200, H100, A100 and MI300X at TP 1–8) is fitted with p, r and a, c, f,
# each stage with its FP8 layers (FP8_TERMS): at 610-token prompts its first token costs 47–214 ms
# where the prompt's FLOPs take 2–34 ms at the peak; the rest is per layer (the prefill runs
# eagerly, each layer's kernels launched from Python: r 1.3 ms a layer on CUDA); its batch-1
# decode steps take 62–396 µs a layer over reading the weights, and at concurrency 16–100 the
# batch's compute (f) adds (leave-one-out decode error on CUDA 7.0% → 5.3%, ROCm 15.9% → 15.4%).
# With the all-reduces (s, g), the attention's FLOPs (p_att) or the MoE terms as well, the
# leave-one-out errors grow or the coefficients leave physical ranges (p_att carrying the prompt's
# length with p at 0; p_moe: p below 1).
# transformers' rows (stock generate: the A10G's Llama 7B FP16 at 1,000 tokens in, 200 out;
# optimum-benchmark's running-llamas on an A100-SXM4-80GB, Llama-2-7B and 13B FP16 at batch 1–64,
# transformers 4.33 and 4.35, eager attention: each prefill, its decode steps and whole generate
# calls; bitsandbytes' benchmark, transformers 4.46 with SDPA: decode steps of Qwen2.5-3B on a T4,
# Llama-3.1-8B on an RTX 4090 and an H100, Qwen2.5-32B on the H100, batch 1–32) are fitted with p,
# a, c and f: a prefill at 0.40 of the FP16 peak (p 2.48); the bytes at the bandwidth (a at its
# floor, FLOORS: 0.74 fitted free, the GPU's reads overlapping the CPU's launches of the next
# kernels, which the sum of terms adds); 0.52 ms a layer a step (eager PyTorch launches each op from
# Python: Llama-2-7B's batch-1 step takes 25.8 ms on the A100, its weights 6.6 ms at the
# bandwidth); the batch's FLOPs at 0.41 of the FP16 peak (f 2.45). Leave-one-out over the 49:
# decode 9.0%, prefill 3.0%, whole requests 9.3%. The RTX 4090's steps are expected 30–40% too
# slow (a fast desktop CPU's launches hidden under 15 ms of bytes); the A100's eager steps at
# batch 64 (a 17 GB cache copied each step, memory reserved near all of the card's 85 GB) 62% too
# fast. The A10G's row left out: 0.6% too fast (59% on the first 37 rows, all but it on one card,
# with a free). With c alone, as on its one row before, the prefill was the bound's.
# llama.cpp on a CPU (27 llama-bench rows of four CPUs: pp512/pp4096/tg128; a Raspberry Pi 5
# at 1–4 threads): the prefill's dense and attention FLOPs at the CPU's INT8 dot-product peak
# (``--gpu-flops`` is the FP32 FMA peak of the cores its threads run on, cores × clock × FP32 FMA
# lanes a cycle × 2; the int8 and FP16 peaks follow: llmcalc.planning.latency.ASSUMED_RATIOS),
# the decode's bytes at the memory's bandwidth, a per-layer cost c — ggml's CPU backend has every
# thread meet at a barrier after each node of the graph (ggml-cpu.c, ggml_graph_compute_thread:
# ggml_barrier between nodes), a dozen a layer — and the step's FLOPs f, which few cores do not
# hide behind the reads (a Pi 5 core decodes Llama-3.2-1B at 10.3 tokens/s, two at 14.4). The
# Snapdragon 8cx Gen 3's tg128 of TinyLlama (22 layers) was 0.36 of the bandwidth bound where the
# x86 rows' Llama-3.2-3B reached 0.58–0.61; on the 11 rows of three CPUs c took leave-one-out
# decode error from 18.1% to 2.0%, and on all 27 f takes it from 15.4% to 13.3% (prefill 32.7%
# either way; q, r and p_kq: r only shifts error between the Pi's two models). vLLM on ROCm adds
# the batch's compute f: its rows reach batch 256 (Llama 3.1 405B FP8 on 8 × MI300X), where decode is compute
# bound.
_EAGER = ("p", "a", "c", "f")  # transformers' eager PyTorch (its comment above)
ENGINE_TERMS: dict[tuple[str, str], tuple[str, ...]] = {
    ("vllm", "cuda"): ("p", "q", "r", "s", "p_dc", "p_att", "p_moe", "p_tc", "a", "c", "f", "c_tp"),
    ("sglang", "cuda"): ("p", "r", "r_fp8", "o", "a", "c", "f", "c_fp8"),
    ("sglang", "rocm"): ("p", "r", "r_fp8", "o", "a", "c", "f", "c_fp8"), ("vllm", "rocm"): ("p", "a", "c", "f"),
    ("llama.cpp", "cuda"): tuple(t for t in TERMS
                                 if t not in (*FP8_TERMS, "p_tc", "c_tp", "o", *APPLE_TERMS, "c",
                                              "p_cm2", "p_cm1", "p_mm1", "p_kq")),  # K_QUANTS
    ("transformers", "cuda"): _EAGER, ("transformers", "rocm"): _EAGER,
    ("transformers", "metal"): _EAGER, ("llama.cpp", "cpu"): ("p", "p_att", "a", "c", "f"),
    ("trtllm", "cuda"): (*(t for t in _NO_REC if t not in ("p_moe", "p_rec", "c_norm")), "p_tc"),
    # Metal without c_norm (_decode_features), with the recurrent layers' (DELTA_CHUNK's comment)
    ("llama.cpp", "metal"): (*(t for t in _NO_REC if t != "c_norm"), *APPLE_TERMS, *RECURRENT_TERMS),
    ("llama.cpp", "rocm"): _NO_REC,
    ("llama.cpp", "vulkan"): _NO_C_MOE}

# Stand-ins: an engine × backend whose own published rows do not inform a stage (or are none) is
# fitted on its own rows together with another engine × backend's, named here with the reason; the
# expected figure's basis says so, and its error is the leave-one-out error on its OWN rows only
# (the stand-in rows stay in every fit). Both engines batch continuously with CUDA graphs and paged
# attention kernels (FlashInfer / FlashAttention), which is why vLLM's decode rows join SGLang's
# CUDA decode fit: SGLang's own are steps of 26–685B models (and Gemma 4's small ones) at
# concurrency 1–100, vLLM's batch-8 steps of 8–70B models; with them SGLang's leave-one-out decode
# error was 5.3%, without 5.7%. With vLLM's rows of dcrows among them (an L4's decode steps of a
# 0.5B model, vLLM's batch compute f and tensor-parallel term c_tp) it is 8.2%, so SGLang's CUDA
# decode is fitted on its own rows again (5.7%; 9.7% with AccelMark's one-A100 rows of Llama-3-8B,
# Llama-3.1-8B and Qwen2.5-0.5B, whose single GPU the TP 2–8 rows had left expected 13–24% too
# slow: docs/latency.md, sg59). SGLang's ROCm rows (MI300X) are fitted alone: with vLLM's ROCm rows
# beside them (Llama 3.1 405B FP8 at batch 1–256) its decode error grew (on its 16 concurrency-1
# rows: 52% alone with p, r, a, c; 91% with vLLM's rows and f).
# (the other engine × backend, the stages its rows inform, why); a stand-in for decode only
# enters the fit with its prefill features at 0 (vLLM's rows are whole requests of 32-token
# prompts: their prefill share is a remainder, not a prefill measurement). A stand-in for the
# prefill only lends the rows that measure a prefill (first-token, pp): a whole request's time is
# mostly decode steps, which its prefill features at 0 would book to the prefill (``_lends``).
# vLLM's own CUDA rows are whole requests of 32-token prompts, whose prefill share is a remainder:
# fitted on them alone, its prefill coefficient p came out at 4.1, a 2,048-token Llama-2-7B FP16
# prefill on an H100 at 18,169 tokens/s, 0.25 of the bound, where TensorRT-LLM's first-token rows
# reach 0.4–0.9 of it. One published vLLM prefill measurement at a stated prompt length, batch,
# card and version was found (a single request's TTFT: vLLM 0.23 serving Qwen2.5-0.5B on an L4,
# 256 tokens in 27 ms at the median, 0.12 of the bound: the HTTP request, tokenisation and
# scheduling, not the prefill's FLOPs, so 218% off when left out), so
# TensorRT-LLM's first-token rows (its performance page: H100, H200, A100, L40S; FP16 and FP8;
# 128 and 2,048 tokens) stand in for vLLM's prefill: both run cuBLAS/CUTLASS GEMMs at the weights'
# format (FP8 with FP8 weights) and FlashAttention-class prefill kernels. vLLM's CUDA prefill is
# then fitted with TensorRT-LLM's prefill terms (ENGINE_TERMS), its decode with its own.
STAND_INS: dict[tuple[str, str], tuple[tuple[str, str], tuple[str, ...], str]] = {
    ("vllm", "rocm"): (("sglang", "cuda"), ("prefill",), "no published prefill measurement on "
                       "ROCm was found: SGLang's CUDA first-token rows (H200, B200, H100, A100) stand in "
                       "for the prefill"),
    ("vllm", "cuda"): (("trtllm", "cuda"), ("prefill",), "one published vLLM prefill "
                       "measurement (a first-token latency at a stated prompt length) was found, "
                       "mostly a served request's fixed costs (an L4, a 0.5B model, 256 tokens): "
                       "TensorRT-LLM's CUDA first-token rows (H100, H200, A100, L40S) stand in for "
                       "the prefill"),
    ("transformers", "rocm"): (("transformers", "cuda"), STAGES, "no published transformers "
                               "measurement on ROCm was found: its CUDA rows (eager PyTorch: "
                               "a per-layer launch cost) stand in"),
    ("transformers", "metal"): (("transformers", "cuda"), STAGES, "no published transformers "
                                "measurement on Metal (MPS) was found: its CUDA rows (eager "
                                "PyTorch: a per-layer launch cost) stand in"),
}


@dataclass(frozen=True)
class StandIns:
    """The rows fitted beside an engine × backend's own (``STAND_INS``, followed through): each
    with the stages it informs; ``why`` says whose they are (the expected figure's basis)."""

    rows: tuple[tuple[MeasuredRow, tuple[str, ...]], ...]
    why: str


def _lends(row: MeasuredRow, stages: tuple[str, ...]) -> bool:
    """Whether a stand-in row informs the stages lent: a first-token / pp row the prefill, a tg
    row the decode, a whole request (mostly decode steps) the decode."""
    return row.stage in stages or (row.stage == "throughput" and "decode" in stages)


def stand_in_rows(engine: str, backend: str) -> StandIns:
    """``STAND_INS`` of an engine × backend, followed through; no rows and "" when none."""
    rows: list[tuple[MeasuredRow, tuple[str, ...]]] = []
    notes: list[str] = []
    key: tuple[str, str] = (engine, backend)
    stages: tuple[str, ...] = STAGES
    while key in STAND_INS:
        key, lent, why = STAND_INS[key]
        stages = tuple(st for st in stages if st in lent)
        if not stages:  # the chain lends nothing further
            break
        rows.extend((r, stages) for r in rows_for(*key) if _lends(r, stages))
        notes.append(why)
    return StandIns(tuple(rows), "; ".join(notes))


def _ys(pairs: list[tuple[MeasuredRow, Latency]], terms: tuple[str, ...] | None = None,
        ) -> list[tuple[float, ...]]:
    """Each row's features over its measured seconds; a term the fitted engine × backend is not
    fitted with (``ENGINE_TERMS``: ``terms``, else the row's own) is 0 in every row, so its
    coefficient stays 0, unless it is ``HELD`` at its floor."""
    out = []
    for r, lat in pairs:
        keep = (*(terms if terms is not None else ENGINE_TERMS.get((r.engine, r.backend), TERMS)),
                *HELD)
        out.append(tuple(x / _measured_seconds(r) if t in keep else 0.0
                         for t, x in zip(TERMS, _row_features(r, lat), strict=True)))
    return out


StandInPairs = list[tuple[MeasuredRow, Latency, tuple[str, ...]]]


def _held(terms: tuple[str, ...]) -> frozenset[int]:
    """The indices of the ``HELD`` terms an engine × backend fitted with ``terms`` does not fit."""
    return frozenset(TERMS.index(t) for t in HELD if t not in terms)


def _lent_ys(stand_ins: StandInPairs, terms: tuple[str, ...]) -> list[tuple[float, ...]]:
    """Stand-in rows' features (``_ys``), each stage they do not inform at 0."""
    ys = _ys([(r, lat) for r, lat, _ in stand_ins], terms)
    k = PREFILL_TERMS
    return [tuple(0.0 if ("prefill" if i < k else "decode") not in stages else x
                  for i, x in enumerate(y)) for y, (_, _, stages) in zip(ys, stand_ins, strict=True)]


def loo_errors(pairs: list[tuple[MeasuredRow, Latency]], stage: str | None = None, *,
               stand_ins: StandInPairs | None = None, terms: tuple[str, ...] | None = None,
               called: list[Latency] | None = None) -> list[tuple[MeasuredRow, float]]:
    """Each row's signed error (expected / measured speed − 1) with that row left out of the fit;
    only ``stage``'s rows (prefill, decode, throughput) when given. ``stand_ins`` (another engine
    × backend's rows, ``STAND_INS``) stay in every fit and are not scored; ``terms``: the fitted
    engine × backend's (``ENGINE_TERMS``), else each row's own; ``called``: each row's run as a
    user calls it, when not as fitted (a row's card given by its figures alone: ``custom_card``)."""
    ys = _ys(pairs, terms)
    sums = _Sums.of(ys + (_lent_ys(stand_ins, terms or TERMS) if stand_ins else []))
    own = terms or (ENGINE_TERMS.get((pairs[0][0].engine, pairs[0][0].backend), TERMS) if pairs
                    else TERMS)  # the fitted engine × backend's terms: its own rows'
    held = _held(own)
    floor = first_step_floor(sum(r.stage == "decode" for r, _ in pairs),
                             tuple(st for _, _, stages in stand_ins or [] for st in stages))
    out = []
    for i, ((row, lat), y) in enumerate(zip(pairs, ys, strict=True)):
        if stage is not None and row.stage != stage:
            continue
        c = _nnls(sums.without(y), held)
        run = lat if called is None else called[i]
        out.append((row, _measured_seconds(row) / _predicted(row, run, c, floor=floor) - 1))
    return out


def _median(errors: list[tuple[MeasuredRow, float]]) -> float | None:
    return median(abs(e) for _, e in errors) if len(errors) > 2 else None


def _max_batch(pairs: list[tuple[MeasuredRow, Latency]], stand_ins: StandInPairs, stage: str) -> int:
    """The largest batch among the rows that inform ``stage``'s terms: its own rows and whole
    requests (both stages), and the stand-in rows lent for it."""
    own = [r.batch for r, _ in pairs if r.stage in (stage, "throughput")]
    lent = [r.batch for r, _, stages in stand_ins
            if stage in stages and r.stage in (stage, "throughput")]
    return max(own + lent, default=0)


BEYOND = ("batch {batch} is past the largest batch of the {stage} rows fitted ({rows}): the "
          "figure extrapolates their terms, and its error there is not measured")


def beyond_rows(model: Model, batch: int) -> str:
    """What the expected figure says where the call's batch is past every fitted row's of a stage
    (``Fit.max_batch``); "" where it is not."""
    past = [(f.stage, f.max_batch) for f in (model.prefill, model.decode) if batch > f.max_batch]
    if not past:
        return ""
    return BEYOND.format(batch=f"{batch:,}", stage=" and ".join(st for st, _ in past),
                         rows=", ".join(f"{st} {n:,}" for st, n in past))


def fit_model(pairs: list[tuple[MeasuredRow, Latency]], *, engine: str, backend: str,
              stand_ins: StandInPairs | None = None, stand_in: str = "") -> Model:
    """Both stages' coefficients from an engine × backend's rows (and its ``STAND_INS`` rows,
    ``stand_ins``, described by ``stand_in``), with the leave-one-out error on its own rows."""
    everything = pairs + [(r, lat) for r, lat, _ in stand_ins or []]
    if not everything:  # no readable published measurement of this engine on this backend
        raise ParameterError(f"{{engine}} {{value}}: no published measurements of {engine} on the "
                             f"{backend} backend were found, so there is no expected speed to give "
                             "(without --engine: the bound)", value=engine)
    for stage in STAGES:
        if not any(r.stage in (stage, "throughput") for r, _ in everything):
            raise ParameterError(f"{{engine}} {{value}}: no published {stage} measurements on the "
                                 f"{backend} backend to fit an expected speed on", value=engine)
    terms = ENGINE_TERMS.get((engine, backend), TERMS)
    c = _nnls(_Sums.of(_ys(pairs, terms) + _lent_ys(stand_ins or [], terms)), _held(terms))
    k = PREFILL_TERMS
    errors = loo_errors(pairs, stand_ins=stand_ins, terms=terms) if len(pairs) > 2 else []
    lent = len(stand_ins or [])
    informed = tuple(st for st in STAGES if any(st in stages for _, _, stages in stand_ins or []))
    fits = {stage: Fit(stage, coef, sum(r.stage == stage for r, _ in pairs),
                       _median([(r, e) for r, e in errors if r.stage == stage]), stand_in, lent,
                       informed, _max_batch(pairs, stand_ins or [], stage))
            for stage, coef in (("prefill", c[:k]), ("decode", c[k:]))}
    through = [(r, e) for r, e in errors if r.stage == "throughput"]
    cards: dict[tuple[str, str], list[float]] = {}
    for r, e in errors:
        if r.gpu:
            cards.setdefault((r.gpu, r.stage), []).append(e)
    return Model(fits["prefill"], fits["decode"], sum(r.stage == "throughput" for r, _ in pairs),
                 _median(through), tuple((k, st, tuple(v)) for (k, st), v in cards.items()))


@dataclass(frozen=True)
class Expected:
    """What ``latency --engine`` adds beside the bound."""

    engine: str
    backend: str
    prefill_tokens_per_s: float
    decode_tokens_per_s: float
    throughput_tokens_per_s: float
    prefill: Fit
    decode: Fit
    throughput_rows: int = 0
    throughput_loo_median_abs_error: float | None = None
    assumed_card: Accelerator | None = None  # a custom card: what the fit read it as (custom_card)
    caution: str = ""  # the card's own rows far from the fit (card_caution)
    weights: str = ""  # weights the fitted rows have not run (weights_caution)
    beyond: str = ""  # the call's batch past every fitted row's (beyond_rows)
    clock: str = ""  # the card's boost clock read at CLOCK_MHZ, the table having none (clock_note)


def clock_note(lat: Latency, model: Model) -> str:
    """What the decode's per-layer cost in GPU cycles (c_clk) assumed of a card whose boost clock
    the table lacks; "" where the fit has no such cost or the card's clock is known."""
    a = lat.accelerator
    if a.boost_mhz or not model.decode.coefficients[TERMS.index("c_clk") - PREFILL_TERMS]:
        return ""
    whose = ("a card given by its figures alone has no boost clock" if a.key == CUSTOM
             else f"{a.name}'s boost clock is not in the table")
    return (f"{whose}: a decode step's per-layer cost (c_clk, counted in GPU cycles) is read at "
            f"{CLOCK_MHZ:,} MHz")


def expected(lat: Latency, *, engine: str, backend: str, model: Model) -> Expected:
    """Expected speed of the run ``lat`` describes; each step's time is at least the bound's."""
    bound_pre, bound_dec = fit_bound_seconds(lat, backend)
    step = (model.decode.seconds(_decode_features(cacheless(lat), engine, backend))
            if first_step_floor(model.decode.rows, model.decode.stand_in_stages) else 0.0)
    t_pre = max(model.prefill.seconds(_prefill_features(lat, engine, backend)), bound_pre, step)
    t_dec = max(model.decode.seconds(_decode_features(lat, engine, backend)), bound_dec)
    e2e = t_pre + (lat.gen - 1) * t_dec
    return Expected(
        engine=engine, backend=backend,
        prefill_tokens_per_s=lat.batch * lat.ctx / t_pre,
        decode_tokens_per_s=lat.batch / t_dec,
        throughput_tokens_per_s=lat.batch * lat.gen / e2e / lat.tp,
        prefill=model.prefill, decode=model.decode, throughput_rows=model.throughput_rows,
        throughput_loo_median_abs_error=model.throughput_loo_median_abs_error,
        assumed_card=fit_card(lat, backend) if lat.accelerator.key == CUSTOM else None,
        caution=card_caution(model, lat.accelerator.key),
        weights=weights_caution(lat, engine, backend),
        beyond=beyond_rows(model, lat.batch),
        clock=clock_note(lat, model),
    )
