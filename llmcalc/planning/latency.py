"""Serving latency on an accelerator: prefill, decode, throughput — roofline bounds.

Pure functions over a :class:`ModelSpec`, an :class:`Accelerator` and the serving options; nothing
here prints. Sources, each used once below:

- roofline (Williams et al. 2009): a step takes at least max(FLOPs / (peak × compute efficiency),
  bytes / (bandwidth × bandwidth efficiency)); with both efficiencies 1 (the defaults) the figures
  are bounds — no real engine is faster; the peak is the highest of the formats an engine may
  compute the weight format in (:func:`compute_peak`; a card not in the table at the highest
  ratios to its bf16 peak a card of the backend holds: ``ASSUMED_RATIOS``);
- prefill of ``ctx`` prompt tokens: the forward FLOPs of the causal pairs (llmcalc.formulas.flops),
  with the LM head run for the last prompt token of each sequence only (``PREFILL_HEAD_NOTE``),
  against the weights read once and the cache written once; the first token comes out of it, so
  the time to first token (TTFT) is the prefill;
- decode: each step makes one token per sequence, reading every weight once (for mixture-of-experts
  models the experts the batch's tokens are routed to: E·(1 − (1 − k/E)^b) of E per layer, expected
  under uniform routing; of an embedding table, a gather, only the b rows looked up, unless it is
  tied to the LM head, whose matmul reads it whole: llmcalc.formulas.quant.step_weight_bytes) and
  the whole KV cache, at the mean context ctx + (gen − 1)/2 of the generation, and writes each
  sequence's recurrent state back whole (``state_write_bytes``); the FLOPs are the
  batch's per-token forward FLOPs at that context;
- tensor parallelism (Shoeybi et al. 2019, "Megatron-LM" §3): weights, FLOPs and KV heads split over
  tp GPUs; where a layer has fewer KV heads than tp, each GPU holds, writes and reads one of them
  whole, as vLLM, SGLang and TensorRT-LLM replicate them (llmcalc.planning.engines.budget:
  kv_heads_per_rank, the rule the engines' KV budgets use too, and check_serving_tp, the tp they
  refuse); an MLA latent cache, which has no heads to split, whole on every GPU; two all-reduces
  per layer (after attention and after the MLP) of tokens × d_model activations at 2 bytes; a ring all-reduce sends 2·(tp − 1)/tp of the buffer from each GPU
  (Patarasuk & Yuan 2009), over one direction of the link (llmcalc.planning.hardware.INTERCONNECTS); the
  communication is added to the step, not overlapped;
- decode turns compute bound (the ridge) at the batch b where b·F/P = (W + b·KV)/B: b* = W/B ÷
  (F/P − KV/B), F the FLOPs and KV the cache bytes of one sequence's step, W the weight bytes;
- speculative decoding (Leviathan et al. 2023, §3.1 and Theorem 3.8): with acceptance rate α and γ
  draft tokens a target step yields (1 − α^(γ+1)) / (1 − α) tokens on average, and the walltime
  improves by (1 − α^(γ+1)) / ((1 − α)(γ·c + 1)), c the draft's step time over the target's (both
  from this roofline).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from llmcalc.errors import ParameterError, UsageError
from llmcalc.formulas import flops, memory
from llmcalc.formulas.gguf_mix import QUANT_TYPES
from llmcalc.formulas.quant import (
    QuantFormat,
    WeightFormat,
    format_notes,
    gathered_row_bytes,
    kv_dtype_for,
    run_weight_bytes,
    serving_kv_default,
    step_weight_bytes,
    weight_bytes,
)
from llmcalc.model.spec import ModelSpec, context_notes
from llmcalc.planning.engines.budget import ENGINE_NAMES, check_serving_tp, replicated_kv
from llmcalc.planning.hardware import Accelerator, Interconnect
from llmcalc.units import (
    GGML_CACHE_TYPES,
    LLAMA_CPP_CACHE,
    BlockType,
    CacheDType,
    DType,
    is_auto,
    parse_cache_dtype,
    size_text,
)

ACTIVATION_BYTES = 2  # bf16/fp16 activations in the all-reduce
ALL_REDUCES_PER_LAYER = 2  # Megatron-LM §3: one after attention, one after the MLP

# A serving engine's prefill multiplies only the hidden state it samples from by the LM head [V, d]:
# the last prompt token of each sequence, not all ctx of them (transformers' forward, which
# `llmcalc flops` counts, runs the head on every position). Read in each engine's source:
# - llama.cpp: llama-bench's test_prompt (tools/llama-bench/llama-bench.cpp) decodes
#   llama_batch_get_one(tokens, n_tokens), a batch with no logits array; llama_batch_allocr::init
#   (src/llama-batch.cpp) then marks "the output only for the last token", and each model's graph
#   gathers those rows (build_inp_out_ids, "skip computing output for unused tokens") in its last
#   layer, so the head sees one row (that layer's FFN too: a llama.cpp saving not counted here);
# - vLLM: GPUModelRunner._prepare_inputs (vllm/v1/worker/gpu_model_runner.py) sets logits_indices =
#   query_start_loc[1:] - 1, each request's last scheduled token, and execute_model passes
#   hidden_states[logits_indices] to model.compute_logits;
# - SGLang: LogitsProcessor.forward (python/sglang/srt/layers/logits_processor.py), in extend mode
#   without input logprobs, takes hidden_states[cumsum(extend_seq_lens) - 1] before the head;
# - TensorRT-LLM: DecoderModelForCausalLM.forward (tensorrt_llm/models/modeling_utils.py) calls
#   gather_last_token_logits(hidden_states, last_token_ids, …) before self.lm_head; an engine built
#   with gather_context_logits (off by default) keeps every position's logits.
# A chunked prompt (llama-bench's n_batch, vLLM's chunked prefill) runs it once per chunk: one row
# of a chunk's hundreds to thousands, not counted.
PREFILL_HEAD_NOTE = "LM head for the last prompt token only, as engines run it"


@dataclass(frozen=True)
class Stage:
    """One stage (the prefill, or one decode step): what it does and how long each bound takes."""

    flops: int  # per GPU
    bytes: int  # read or written per GPU
    comm_bytes: int  # sent per GPU by the all-reduces
    compute_s: float
    memory_s: float
    comm_s: float

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s >= self.memory_s else "memory"

    @property
    def seconds(self) -> float:
        return max(self.compute_s, self.memory_s) + self.comm_s


@dataclass(frozen=True)
class Speculation:
    draft: str
    accept_rate: float
    draft_tokens: int
    draft_step_s: float
    cost_ratio: float  # c = draft step / target step
    tokens_per_step: float  # (1 − α^(γ+1)) / (1 − α)
    speedup: float  # tokens_per_step / (γ·c + 1)


@dataclass(frozen=True)
class Latency:
    """Everything ``llmcalc latency`` reports."""

    model: str
    accelerator: Accelerator
    interconnect: Interconnect
    tp: int
    batch: int
    ctx: int
    gen: int
    dtype: WeightFormat
    kv_dtype: CacheDType
    compute_efficiency: float
    bandwidth_efficiency: float
    weight_bytes: int  # all of them, all GPUs
    prefill: Stage
    decode: Stage  # one step at the mean context
    decode_ctx: int
    ttft_s: float
    tpot_s: float  # time per output token, per sequence
    e2e_s: float  # TTFT + (gen − 1) × TPOT
    whole_s: float  # the batch's whole requests, prefill and decode overlapped (whole_requests_s)
    tokens_per_s_per_request: float
    tokens_per_s: float  # whole batch, decode
    tokens_per_s_per_gpu: float
    throughput_per_gpu: float  # batch·gen / whole_s / tp: output tokens/s/GPU over whole requests
    ridge_batch: int | None  # decode turns compute bound here (None: never)
    speculation: Speculation | None
    layers: int = 0  # the model's layers (the expected speed's per-layer cost)
    peak_flops: int = 0  # the peak the stages ran at: compute_peak(accelerator, dtype, engine)
    prefill_attention_flops: int = 0  # per GPU: the causal attention's share of prefill.flops
    prefill_note: str = ""  # what the prefill's FLOPs leave out of a whole forward (PREFILL_HEAD_NOTE)
    moe: bool = False  # routed experts (the expected speed's own terms: prefill GEMMs, decode)
    # the decode step's KV cache read at the mean context, the tp ranks' together (replicated_kv:
    # ÷ tp is one GPU's)
    decode_kv_bytes: int = 0
    kv_group: int = 1  # query heads per KV head (grouped-query attention; 1 without)
    recurrent_layers: int = 0  # layers with a recurrent state matrix (Gated DeltaNet, Mamba)
    norms: int = 0  # normalisations over the layers (layer_norms: the expected speed's c_norm)
    # what the figures are read with: a prompt past the window (the words flops and memory
    # use), what the weights' format leaves wide (formulas.quant.format_notes)
    notes: tuple[str, ...] = ()


# The tensor formats an engine may run a weight format's GEMMs in, beside bf16: any weights can be
# dequantised to FP16 (FP16 accumulation: cuBLAS's F16 GEMM, twice the FP32-accumulate rate on
# GeForce); integer-quantised weights also on INT8 tensor cores (llama.cpp's MMQ quantises the
# activations to int8 for the GGUF block formats; W8A8 int8), FP8 weights on FP8 ones. NVFP4 with
# an input scale (W4A4) runs on FP4 tensor cores where the card has them (Blackwell): vLLM's
# ModelOptNvFp4LinearMethod.apply quantises the activations (_custom_ops.scaled_fp4_quant) and
# multiplies FP4 × FP4 (cutlass_scaled_fp4_mm, sm100a/sm120a kernels); TensorRT-LLM's
# NVFP4LinearMethod (_torch/modules/linear.py) does the same with trtllm.fp4_quantize and
# trtllm.nvfp4_gemm. nvfp4-a16 (weights only) stays at FP16; MXFP4 (gpt-oss) runs W4A8 (MXFP8
# activations) in both, at the FP8 rate.
_INT8 = ("fp16", "int8")
COMPUTE_FORMATS: dict[str, tuple[str, ...]] = {
    "int8": _INT8, "int4": _INT8, "q8_0": _INT8, "q4_0": _INT8, "q4_k_m": _INT8,
    "fp8": ("fp16", "fp8"), "fp8-block": ("fp16", "fp8"),
    "mxfp4": ("fp16", "int8", "fp8"), "nvfp4": ("fp16", "fp4"),
}
# every other llama-quantize mix: MMQ (ggml-cuda/mmq.cu, ggml_cuda_should_use_mmq) takes their main
# types on INT8 tensor cores, but IQ1_M, TQ1_0 and TQ2_0, which are dequantised for an FP16 GEMM
COMPUTE_FORMATS.update({q: _INT8 for q, kind in QUANT_TYPES.items()
                        if q not in COMPUTE_FORMATS and kind not in ("IQ1_M", "TQ1_0", "TQ2_0")})


# A card given by its figures alone (``--gpu-flops X --gpu-bandwidth Y``, no ``--gpu``): X is its
# dense bf16 (FP32-accumulate) peak and its other formats' peaks are unknown, so the bound takes, for
# each format, the highest ratio to the bf16 peak that any card of hardware.json reaching the
# backend holds (an assumption, labelled as one in --json and the table's notes):
# - CUDA: GeForce runs FP16-accumulate at 2x its FP32-accumulate bf16 rate (every RTX 30/40/50 row,
#   e.g. RTX 4090 330.3T / 165.2T), INT8 and FP8 at 4x (RTX 4090 660.6T; Ampere's INT8 4x with no
#   FP8), FP4 at 8x on Blackwell (RTX 5090 1,676T / 209.5T; the DGX Spark's GB10 too); data-centre
#   and workstation cards hold at most half of each (H100 2x INT8/FP8, B200 4x FP4). Pascal's dp4a
#   INT8 is 4x its FP32 rate, inside the same 4x.
# - Vulkan: llama.cpp's Vulkan backend runs on NVIDIA cards with coopmat2 at FP16 accumulate and
#   any card may be one: CUDA's ratios.
# - ROCm: AMD quotes its FP16 figure at the matrix (WMMA/MFMA) rate, which is its bf16 one (RX 7900
#   XTX 122.8T, MI300X 1,305T beside bf16 1,307.4T): FP16 1x; the MI300X's FP8 is 2x (2,610T), the
#   Strix Halo's INT8 1x; INT8 and FP4 (no AMD card of the table has an FP4 figure) take FP8's 2x.
# - Metal: Apple's M1–M4 GPUs run FP16 at their FP32 rate, one figure per chip: 1x.
# - CPU: the figure is the FP32 FMA peak of the cores the threads run on (cores × clock × FP32 FMA
#   lanes a cycle × 2), but llama.cpp's quantised GEMMs run on integer dot products, which do more
#   multiply-adds an instruction: Arm's SDOT "performs the dot product of the four 8-bit elements
#   in each 32-bit element" (16 a 128-bit vector where FMLA does 4 FP32 FMAs: 4x), its i8mm
#   USMMLA/SMMLA "multiplies the 2x8 matrix ... by the 8x2 matrix" into a 2x2 32-bit result, "an
#   8-way dot product per destination element" (32: 8x; developer.arm.com, vusmmlaq_s32), x86's
#   VNNI vpdpbusd four u8×s8 products a 32-bit lane (4x); FP16 FMLA (Armv8.2) fills 8 lanes of a
#   128-bit vector where FP32 fills 4 (2x). A Raspberry Pi 5's Llama-3.2-1B Q4_K_M pp512 on one to
#   three Cortex-A76 cores ran at 1.06–1.15x their FP32 FMA peak (measured_speed.json): INT8 8x,
#   FP16 2x; no CPU has FP8 or FP4 arithmetic (their weights are unpacked to INT8 dot products).
# Without a backend (no --engine) the bound takes the highest of all: CUDA's.
GEFORCE_RATIOS = {"fp16": 2, "int8": 4, "fp8": 4, "fp4": 8}
ONE_PEAK = {"fp16": 1, "int8": 1, "fp8": 1, "fp4": 1}  # one figure for every format (Apple)
ASSUMED_RATIOS: dict[str, dict[str, int]] = {
    "cuda": GEFORCE_RATIOS, "vulkan": GEFORCE_RATIOS,
    "rocm": {"fp16": 1, "int8": 2, "fp8": 2, "fp4": 2}, "metal": ONE_PEAK,
    "cpu": {"fp16": 2, "int8": 8, "fp8": 1, "fp4": 1}}
BACKEND_NAMES = {"cuda": "CUDA", "vulkan": "Vulkan", "rocm": "ROCm", "metal": "Metal", "cpu": "CPU"}
CUSTOM = "custom"  # the key of a card given by its figures alone (hardware.resolve)


def with_ratios(acc: Accelerator, ratios: Mapping[str, float], why: str) -> Accelerator:
    """``acc`` with each format's peak at ``ratios`` × its bf16 peak (whole FLOP/s), ``why`` its
    peaks' source."""
    bf16 = acc.peak_flops
    return replace(acc, fp16_flops=round(bf16 * ratios["fp16"]), int8_ops=round(bf16 * ratios["int8"]),
                   fp8_flops=round(bf16 * ratios["fp8"]), fp4_flops=round(bf16 * ratios["fp4"]),
                   peaks_source=why)


def assumed_peaks(acc: Accelerator, backend: str | None) -> Accelerator:
    """A custom card (no table key) with the bound's ``ASSUMED_RATIOS`` for ``backend`` (CUDA's,
    the highest, without one); a table card as it is (``--gpu-flops`` replaces only its bf16)."""
    if acc.key != CUSTOM:
        return acc
    r = ASSUMED_RATIOS[backend or "cuda"]
    which = f"a {BACKEND_NAMES[backend]} card" if backend else "any card (no --backend: CUDA's)"
    return with_ratios(acc, r, f"a card not in the table: the bound assumes its FP16, INT8, FP8 "
                       f"and FP4 peaks at {r['fp16']}x, {r['int8']}x, {r['fp8']}x and {r['fp4']}x "
                       f"its bf16 one, the highest ratios {which} of the table holds")


# 16-bit weights an engine multiplies with FP32 accumulation, at the card's bf16 (FP32-accumulate)
# peak, never at GeForce's twice-as-fast FP16-accumulate one, so ``--gpu-flops`` (that bf16 figure)
# sets their peak:
# - vLLM, SGLang and transformers run an unquantised linear layer as torch's F.linear, and
#   TensorRT-LLM's PyTorch backend too (UnquantizedLinearMethod, _torch/modules/linear.py); PyTorch's
#   cuBLAS GEMMs (aten/src/ATen/cuda/CUDABlas.cpp, gemm_internal_cublas_half_helper and
#   _bfloat16_helper) pass float alpha/beta and compute type CUDA_R_32F for fp16 and bf16 alike;
# - llama.cpp on CUDA runs BF16 weights through cublasGemmEx(..., CUDA_R_16BF, ...) with float
#   alpha (FP32 accumulation), but F16 weights, and quantised ones it dequantises for cuBLAS, with
#   CUBLAS_COMPUTE_16F on NVIDIA cards (FP32 only on AMD CDNA and RDNA4):
#   ggml_cuda_op_mul_mat_cublas (ggml/src/ggml-cuda/ggml-cuda.cu). So a llama.cpp F16 prefill keeps
#   the card's FP16-accumulate peak, a format of its own that ``--gpu-flops`` does not restate.
# Without an engine the bound takes the highest any engine may reach (FP16 accumulation).
FP32_ACCUMULATE: dict[str, tuple[str, ...]] = {
    "vllm": ("bf16", "fp16"), "sglang": ("bf16", "fp16"), "trtllm": ("bf16", "fp16"),
    "transformers": ("bf16", "fp16"), "llama.cpp": ("bf16",)}
# vLLM's GGUF GEMMs (vllm/model_executor/layers/quantization/gguf.py, _fused_mul_mat_gguf, and
# SGLang's copy of it, python/sglang/srt/layers/quantization/gguf.py): llama.cpp b2899's MMQ
# (csrc/quantization/gguf/mmq.cuh, "copied from llama.cpp b2899"), whose int8 dot products are
# dp4a on the CUDA cores, before llama.cpp's MMQ took the tensor cores; or, for a type without
# it, the weights dequantised and multiplied by torch (FP32 accumulation). dp4a's rate is at most
# the bf16 tensor peak on every card in the table (an RTX 3090: about 71T beside 71T; an A100:
# 39T beside 312T), so the bf16 peak is theirs: not the INT8 tensor-core peak llama.cpp's MMQ has.
GGUF_ON_BF16_PEAK = frozenset({"vllm", "sglang"})
# the ggml types those gguf.py files run (UNQUANTIZED_TYPES, STANDARD_QUANT_TYPES, KQUANT_TYPES,
# IMATRIX_QUANT_TYPES; any other raises "Unsupported GGUF quantization type"): no MXFP4, TQ1_0 or
# TQ2_0, so the mixes built on them (mxfp4_moe, tq1_0, tq2_0) do not load
SERVING_GGUF_TYPES = frozenset({
    "F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K",
    "Q6_K", "IQ1_M", "IQ1_S", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ4_XS", "IQ4_NL"})
# llama.cpp's Vulkan backend multiplies BF16 weights on matrix cores only where the driver has
# VK_KHR_shader_bfloat16 (PR #12554, "vulkan: Add bfloat16 support": "The extension is required for
# coopmat multiply support"); without it the GEMM takes the scalar shaders, each bf16 promoted to
# fp32 (PR #19793: a device that "does not have bf16 support ... falls back to the scalar path";
# ggml/src/ggml-vulkan/ggml-vulkan.cpp, ggml_vk_load_shaders, creates pipeline_matmul_bf16 only
# under coopmat_bf16_support, as issue #28342 reads it).
# AMD's drivers expose none: ggml_vulkan's device line reads "bf16: 0" for the Radeon 8060S under
# RADV and AMDVLK (kyuz0/amd-strix-halo-toolboxes, benchmark/results), the R9700 under AMDVLK
# (kyuz0/amd-r9700-ai-toolboxes) and the RX 7900 XTX under RADV (PR #27952). So a Radeon's BF16
# weights on Vulkan peak at its FP32 vector rate: the table's figure (its FP16 matrix rate) over
# RADEON_FP32_DIVISOR: RDNA3 and 3.5 issue two FP32 FMAs a lane a clock where WMMA does four FP16
# ones (RX 7900 XTX: 61.44 of 122.8 TFLOP/s), RDNA4's WMMA is twice RDNA3's a CU (RX 9070 XT:
# 48.66 of 195), RDNA2's figure is its packed FP16 rate (RX 6900 XT: 23.04 of 46.08). The Strix
# Halo's Gemma-4-31B BF16 pp512 (b9187) ran at 136 t/s on Vulkan and 428 on ROCm (hipBLAS's WMMA).
RDNA4 = frozenset({"rx-9070-xt", "rx-9070", "rx-9060-xt", "r9700"})


def radeon_fp32_divisor(acc: Accelerator) -> int:
    """How many times a Radeon's FP32 vector rate its table figure is (``RDNA4``: 4, the rest 2);
    0 for any other card (data-centre Instinct cards, other makers, a card given by its figures)."""
    if acc.maker != "amd" or acc.kind == "datacenter":
        return 0
    return 4 if acc.key in RDNA4 else 2


def scalar_bf16(acc: Accelerator, dtype: WeightFormat, engine: str | None,
                backend: str | None) -> bool:
    """BF16 weights that llama.cpp's Vulkan backend multiplies in its scalar FP32 shaders: on a
    Radeon, whose drivers have no bf16 (``RDNA4``'s comment)."""
    return (engine == "llama.cpp" and backend == "vulkan" and dtype is DType.bf16
            and radeon_fp32_divisor(acc) > 0)


def compute_peak(acc: Accelerator, dtype: WeightFormat, *, engine: str | None = None,
                 backend: str | None = None) -> int:
    """The dense peak FLOP/s a step on ``dtype`` weights may reach: the largest of the card's bf16
    peak and the peaks of the formats in ``COMPUTE_FORMATS`` (FP16 for the rest); 16-bit weights
    an engine multiplies with FP32 accumulation (``FP32_ACCUMULATE``; llama.cpp's BF16 on CUDA), and
    vLLM's and SGLang's GGUF types (``GGUF_ON_BF16_PEAK``), at the bf16 peak alone; llama.cpp
    Vulkan's BF16 on a Radeon at its FP32 vector rate (``scalar_bf16``)."""
    if scalar_bf16(acc, dtype, engine, backend):
        return acc.peak_flops // radeon_fp32_divisor(acc)
    peaks = {"fp16": acc.fp16_flops, "int8": acc.int8_ops, "fp8": acc.fp8_flops,
             "fp4": acc.fp4_flops}
    name = dtype.value if not dtype.value.startswith("fp8-fp4") else "fp8-block"
    if engine is not None and name in FP32_ACCUMULATE.get(engine, ()) and (
            engine != "llama.cpp" or backend == "cuda"):
        return acc.peak_flops
    if engine in GGUF_ON_BF16_PEAK and _gguf(dtype):
        return acc.peak_flops
    return max(acc.peak_flops, *(peaks[k] for k in COMPUTE_FORMATS.get(name, ("fp16",))))


def _check_fraction(name: str, value: float) -> None:
    if not 0 < value <= 1:
        raise ParameterError(f"{{{name}}} {{value:g}}: must be a fraction in (0, 1]", value=value)


def _stage(
    *, flops_: int, bytes_: int, comm: int, acc: Accelerator, link: Interconnect, tp: int,
    ce: float, be: float,
) -> Stage:
    f, b = -(-flops_ // tp), -(-bytes_ // tp)
    return Stage(f, b, comm, f / (acc.peak_flops * ce), b / (acc.bandwidth * be),
                 comm / link.bandwidth if tp > 1 else 0.0)


def whole_requests_s(prefill: Stage, step: Stage, gen: int, *, one: tuple[Stage, Stage]) -> float:
    """The bound on the batch's whole requests (its prefill and gen − 1 decode steps, without
    speculation): all their FLOPs at the peak or all their bytes at the bandwidth, whichever is
    longer, with their all-reduces; and at least one request's own path, its prompt's prefill then
    gen − 1 steps, each a pass over the weights (``one``: those two stages at batch 1), which no
    schedule shortens: at batch 1 the stages' sum. Not the batch's stages' sum (TTFT + (gen − 1) ×
    TPOT): a server that batches one request's prompt with the others' decode steps reads the
    weights once for both (vLLM's V1 scheduler, vllm/v1/core/sched/scheduler.py Scheduler.schedule:
    no prefill or decode phase, each step a token budget over running requests' decode tokens and
    waiting ones' prompt chunks; TensorRT-LLM's in-flight batching likewise),
    so a prompt-heavy load at concurrency runs faster than prefill then decode: vLLM 0.19 on an
    A100 80GB PCIe served Qwen2.5-7B FP16 at 2,048 tokens in, 128 out, concurrency 16 at 906.6
    output tokens/s, past the stages' sum (829.4)."""
    compute = prefill.compute_s + (gen - 1) * step.compute_s
    memory = prefill.memory_s + (gen - 1) * step.memory_s
    own = one[0].seconds + (gen - 1) * one[1].seconds
    return max(max(compute, memory) + prefill.comm_s + (gen - 1) * step.comm_s, own)


def all_reduce_bytes(spec: ModelSpec, *, tokens: int, tp: int) -> int:
    """Bytes each GPU sends: 2 all-reduces per layer of tokens × d_model × 2 B, ring 2(tp−1)/tp."""
    if tp == 1:
        return 0
    buffer = tokens * spec.shape.hidden_size * ACTIVATION_BYTES
    return ALL_REDUCES_PER_LAYER * spec.num_layers * buffer * 2 * (tp - 1) // tp


def engine_cache(spec: ModelSpec, kv: CacheDType, engine: str | None) -> CacheDType:
    """The cache dtype the engine keeps for ``--kv-dtype kv``. llama.cpp's (``LLAMA_CPP_CACHE``,
    as ``fit --engine llama.cpp`` reads it): int8 and int4 are its q8_0 and q4_0 blocks, fp8 it
    has none; a quantised block only on heads it divides, by the llama.cpp plan's own rule
    (``llama_cpp.check_cache_blocks``). A block type (-ctk/-ctv) with another engine is refused."""
    if engine == "llama.cpp" and not isinstance(kv, BlockType):
        name = LLAMA_CPP_CACHE.get(kv.value)
        if name is None:
            raise UsageError(f"--kv-dtype {kv.value}: llama.cpp's cache types are "
                             f"{', '.join(sorted(set(LLAMA_CPP_CACHE.values())))}")
        kv = GGML_CACHE_TYPES[name]  # as ggml names it: its recurrent state F32 beside it
    if not isinstance(kv, BlockType):
        return kv
    if engine not in (None, "llama.cpp"):
        raise UsageError(f"--kv-dtype {kv.value}: a llama.cpp cache type (-ctk/-ctv); "
                         f"--engine {engine} keeps its cache in fp16, bf16 or fp8")
    if kv.block > 1:  # f16, bf16, f32: blocks of one
        from llmcalc.planning.engines import llama_cpp

        hp, _ = llama_cpp.hparams_from_spec(spec)
        llama_cpp.check_cache_blocks(hp, llama_cpp.Params(type_k=kv.value, type_v=kv.value),
                                     spec.name)
    return kv


def engine_runs(spec: ModelSpec, engine: str | None, version: str | None = None) -> None:
    """Refuse a model the engine (at ``version``, else the one its module pins) does not run at
    all, by the engine plan's own rule (``vllm.runs``, ``trtllm.runs``): no expected speed for
    it."""
    if engine == "vllm":  # each engine's module imported only where asked (start-up)
        from llmcalc.planning.engines import vllm
        from llmcalc.planning.engines.budget import version_tuple

        vllm.runs(spec, version_tuple(version, vllm.VERSION))
    elif engine == "trtllm":
        from llmcalc.planning.engines import trtllm

        trtllm.runs(spec, version)


# The weights an engine runs as they are stored; a format it converts on load runs as what it
# becomes, which is the --dtype to give:
# - llama.cpp runs GGUF tensor types (ggml.h, enum ggml_type: the quant types, F32/F16/BF16, MXFP4,
#   NVFP4 since PR #19769); it has no FP8 type, and a bitsandbytes, GPTQ, AWQ or compressed-tensors
#   checkpoint becomes a GGUF type when convert_hf_to_gguf.py and llama-quantize write it;
# - TensorRT-LLM quantizes by its QuantAlgo (tensorrt_llm/quantization/mode.py: FP8, INT8
#   SmoothQuant, weight-only INT8/INT4, AWQ, GPTQ, NVFP4, MXFP4): no GGUF type, no bitsandbytes;
# - transformers dequantizes a GGUF file as it loads it (modeling_gguf_pytorch_utils.py,
#   load_gguf_checkpoint: gguf.dequantize each tensor, then the torch dtype asked for).
# vLLM and SGLang load all of these (vLLM's gguf and bitsandbytes quantization methods).
# TensorRT-LLM's precisions by GPU (its support matrix, 0.18: Hopper SM90 and Ada SM89 FP8, Ampere
# SM80/SM86 FP32, FP16, BF16, INT8, INT4; Model Optimizer's: FP4 on Blackwell and later): FP8
# weights need an NVIDIA table card with an FP8 peak (Ada and later), NVFP4 one with an FP4 peak.
LLAMA_CPP_CHECKPOINT_FORMATS = ("mxfp4", "nvfp4")  # non-GGUF formats llama.cpp has a type of


def _gguf(weights: WeightFormat) -> bool:
    return isinstance(weights, QuantFormat) and (bool(weights.gguf)
                                                  or weights.name.startswith("gguf "))


def engine_weights(weights: WeightFormat, engine: str | None,
                   acc: Accelerator | None = None, *, given: bool = True) -> None:
    """Refuse weights ``engine`` does not run as stored, or (TensorRT-LLM) not on ``acc``'s NVIDIA
    architecture (the rules above): no expected speed for them. ``given``: named by ``--dtype``,
    else the checkpoint's own format (its quantization_config, a GGUF file's types)."""
    name = weights.value if isinstance(weights, DType) else weights.name
    what = f"--dtype {name}" if given else f"the checkpoint's {name} weights"
    if engine == "trtllm" and acc is not None and acc.maker == "nvidia":
        fp8 = weights is DType.fp8 or name.startswith("fp8")  # fp8-block, -channel, -fp4 too
        if (fp8 and not acc.fp8_flops) or (name.startswith("nvfp4") and not acc.fp4_flops):
            need = "FP8 needs an Ada, Hopper or Blackwell GPU" if fp8 else "NVFP4 needs a Blackwell GPU"
            raise UsageError(f"{what}: TensorRT-LLM's {need}, not the {acc.name}")
    if engine == "llama.cpp" and (weights is DType.fp8 or (
            isinstance(weights, QuantFormat) and not _gguf(weights)
            and not name.startswith(LLAMA_CPP_CHECKPOINT_FORMATS))):
        why = ("ggml has no FP8 type" if weights is DType.fp8 else
               "a checkpoint in this format becomes a ggml type when converted")
        raise UsageError(f"{what}: llama.cpp runs a GGUF file's types ({why}); give the file's "
                         "with --dtype, e.g. q8_0 or q4_k_m")
    if engine == "trtllm" and (_gguf(weights) or (isinstance(weights, QuantFormat)
                                                 and weights.description.startswith("bitsandbytes"))):
        raise UsageError(f"{what}: not a TensorRT-LLM quantization (its QuantAlgo: FP8, INT8, INT4 "
                         "AWQ/GPTQ, NVFP4, MXFP4)")
    if engine in GGUF_ON_BF16_PEAK and (base := QUANT_TYPES.get(name)) is not None and (
            base not in SERVING_GGUF_TYPES):
        raise UsageError(f"{what}: {ENGINE_NAMES[engine]}'s GGUF support has no {base} kernel "
                         "(its gguf.py runs F32, F16, BF16, Q4_0-Q8_0, Q2_K-Q6_K and the IQ "
                         "types); give another GGUF type")
    if engine == "transformers" and _gguf(weights):
        raise UsageError(f"{what}: transformers dequantizes a GGUF file as it loads it; give the "
                         "dtype it runs in (--dtype bf16)")


def kv_given(text: str | None) -> CacheDType | None:
    """``latency --kv-dtype`` as given (llama.cpp's block types too); None (``engine_kv``'s
    default, which is every engine's "auto") where it is left out or ``auto``."""
    if text is None or is_auto(text):
        return None
    return parse_cache_dtype(text, option="--kv-dtype")


def engine_kv(spec: ModelSpec, kv: CacheDType | None, weights: WeightFormat,
              engine: str | None, version: str | None = None, *,
              acc: Accelerator | None = None, given: bool = True) -> CacheDType:
    """The cache ``latency`` runs with: ``--kv-dtype`` as the engine keeps it (``engine_cache``),
    else llama.cpp's f16 (common/common.h: cache_type_k and cache_type_v default to F16), vLLM's,
    SGLang's, TensorRT-LLM's and transformers' "auto" (``serving_kv_default``: bf16 beside FP8
    weights but TensorRT-LLM's FP8, as its FP8 rows state; a checkpoint's kv_cache_quant_algo) or,
    without an engine, the weights' default (``kv_dtype_for``); refused for a model
    the engine does not run (``engine_runs``) or weights it does not run as stored, or not on
    ``acc`` (``engine_weights``)."""
    engine_runs(spec, engine, version)
    engine_weights(weights, engine, acc, given=given)
    if kv is None:
        kv = (DType.fp16 if engine == "llama.cpp"
              else kv_dtype_for(weights) if engine is None
              else serving_kv_default(engine, weights, spec.config, given=given))
    return engine_cache(spec, kv, engine)


def layer_norms(spec: ModelSpec) -> int:
    """The normalisations the layers run, each a kernel or two a step: a layer's modules named as
    a norm (``q_norm``, ``post_feedforward_layernorm_1``, GPT-2's ``ln_1`` by its component
    ``attn/norm``), weight and bias (or scale) one norm. A norm without weights (OLMo's LayerNorm,
    Gemma 4's value norm, Llama 4's q/k norm) is not counted."""
    def module(name: str) -> str:
        return name.removesuffix(".weight").removesuffix(".bias").removesuffix(".scale")

    return sum(len(g.layers) * len({module(t.name) for t in g.tensors
                                    if "norm" in module(t.name).rsplit(".", 1)[-1]
                                    or "norm" in t.component.rsplit("/", 1)[-1]})
               for g in spec.layer_groups)


def kv_group(spec: ModelSpec) -> int:
    """Query heads per KV head (1 without grouped-query attention, or with no shape known)."""
    shape = spec.shape
    return max(shape.num_heads // shape.num_kv_heads, 1) if shape and shape.num_kv_heads else 1


def state_write_bytes(spec: ModelSpec, *, batch: int, kv_dtype: CacheDType, tp: int = 1) -> int:
    """A decode step's write of each sequence's recurrent state (Mamba, Gated DeltaNet, short
    convolutions), besides its read in the cache's bytes: the whole state is replaced every token,
    where attention appends one token's keys and values. llama.cpp's qwen35/qwen3next graphs (e.g.
    src/models/qwen35moe.cpp, build_layer_attn_linear; delta-net-base.cpp returns the new state)
    ggml_cpy the new conv and delta-net states back into the recurrent cache each ubatch (fp32),
    as transformers' cache updates them in place."""
    return batch * memory.state_bytes_per_sequence(replicated_kv(spec, tp), dtype=kv_dtype)


def capacity_notes(weights: int, acc: Accelerator, tp: int) -> tuple[str, ...]:
    """Where the weights alone, split evenly over ``tp`` GPUs (the least each holds), are more than
    a GPU's memory: the times are those of a card that holds them, which this one cannot run as
    given (a card given by its figures alone states no memory)."""
    share = -(-weights // tp)
    if not acc.memory_bytes or share <= acc.memory_bytes:
        return ()
    split = f" ({size_text(share)} a GPU at --tp {tp})" if tp > 1 else ""
    # Apple silicon: the share of unified memory macOS lets the GPU wire (hardware.py)
    held = "of unified memory its GPU may wire" if acc.maker == "apple" else "of memory"
    return (f"the weights, {size_text(weights)}{split}, are more than the {acc.name}'s "
            f"{size_text(acc.memory_bytes)} {held}: these times are for a card that holds "
            "them (llmcalc fit sizes what runs)",)


def encoder_only(spec: ModelSpec) -> bool:
    """Every attention layer bidirectional and keeping no memory (BERT, RoBERTa, ModernBERT as
    transformers builds them): a new token changes every earlier token's states, so there is no
    decode step of one token over a cache to time (XLNet's mems are one: it is not)."""
    att = [g.attention for g in spec.layer_groups if g.attention is not None]
    return bool(att) and not any(a.causal or a.memory for a in att)


def decode_step(
    spec: ModelSpec, *, batch: int, ctx: int, dtype: WeightFormat, kv_dtype: CacheDType,
    acc: Accelerator, link: Interconnect, tp: int, ce: float, be: float, tokens: int = 1,
) -> Stage:
    """One decode step: ``tokens`` new tokens per sequence (1, or γ + 1 when verifying drafts);
    each GPU reads its KV heads' cache (``replicated_kv``: one whole head where tp exceeds them)."""
    read = (step_weight_bytes(spec, dtype, tokens=batch * tokens, decode=True)
            + memory.kv_cache_bytes(replicated_kv(spec, tp), batch=batch, ctx=ctx, dtype=kv_dtype)
            + state_write_bytes(spec, batch=batch, kv_dtype=kv_dtype, tp=tp))
    work = batch * tokens * flops.forward_flops_per_token(spec, ctx=ctx)
    return _stage(flops_=work, bytes_=read, comm=all_reduce_bytes(spec, tokens=batch * tokens, tp=tp),
                  acc=acc, link=link, tp=tp, ce=ce, be=be)


def ridge_batch(
    spec: ModelSpec, *, ctx: int, dtype: WeightFormat, kv_dtype: CacheDType, acc: Accelerator,
    ce: float, be: float, tp: int = 1,
) -> int | None:
    """The smallest batch at which a decode step is compute bound (dense weights read once, and
    a row of each lookup table per sequence; the KV heads as the tp GPUs hold them)."""
    tables, row = gathered_row_bytes(spec, dtype)
    w = (run_weight_bytes(spec, dtype, decode=True) - tables) / (acc.bandwidth * be)
    per_seq = (flops.forward_flops_per_token(spec, ctx=ctx) / (acc.peak_flops * ce)
               - (memory.kv_cache_bytes(replicated_kv(spec, tp), batch=1, ctx=ctx,
                                        dtype=kv_dtype) + row
                  + state_write_bytes(spec, batch=1, kv_dtype=kv_dtype, tp=tp))
               / (acc.bandwidth * be))
    if per_seq <= 0:
        return None
    b = w / per_seq
    return max(1, -int(-b // 1))


def latency(
    spec: ModelSpec,
    *,
    accelerator: Accelerator,
    interconnect: Interconnect,
    tp: int = 1,
    batch: int = 1,
    ctx: int,
    gen: int,
    dtype: WeightFormat = DType.bf16,
    kv_dtype: CacheDType = DType.bf16,
    compute_efficiency: float = 1.0,
    bandwidth_efficiency: float = 1.0,
    backend: str | None = None,
    engine: str | None = None,
    draft: ModelSpec | None = None,
    accept_rate: float = 0.7,
    draft_tokens: int = 4,
) -> Latency:
    spec.require_token_plans("latency")
    if gen > 1 and encoder_only(spec):
        raise UsageError(f"{spec.name}: an encoder (every attention layer bidirectional, no cache): "
                         "it generates no tokens; --gen 1 gives one forward pass over --ctx tokens")
    for name, value in (("tp", tp), ("batch", batch), ("ctx", ctx), ("gen", gen)):
        if value < 1:
            raise ParameterError(f"{{{name}}} {{value}}: must be 1 or more", value=value)
    _check_fraction("compute_efficiency", compute_efficiency)
    _check_fraction("bandwidth_efficiency", bandwidth_efficiency)
    check_serving_tp(spec, tp)
    custom = accelerator.key == CUSTOM
    accelerator = assumed_peaks(accelerator, backend)  # a custom card: the backend's ratios
    peak = compute_peak(accelerator, dtype, engine=engine, backend=backend)
    acc = replace(accelerator, peak_flops=peak)  # the stages run at the weight format's peak
    link, ce, be = interconnect, compute_efficiency, bandwidth_efficiency
    kw = dict(acc=acc, link=link, tp=tp, ce=ce, be=be)
    head = flops.lm_head_flops_per_token(spec)  # skipped for all but one prompt token a sequence

    def prefill_of(seqs: int) -> Stage:
        return _stage(
            flops_=seqs * (flops.forward_flops_per_sequence(spec, ctx=ctx, causal=True)
                           - (ctx - 1) * head),
            bytes_=step_weight_bytes(spec, dtype, tokens=seqs * ctx)
            + memory.kv_cache_bytes(replicated_kv(spec, tp), batch=seqs, ctx=ctx, dtype=kv_dtype),
            comm=all_reduce_bytes(spec, tokens=seqs * ctx, tp=tp), **kw,  # type: ignore[arg-type]
        )

    def step_of(seqs: int) -> Stage:
        return decode_step(spec, batch=seqs, ctx=mean_ctx, dtype=dtype, kv_dtype=kv_dtype,
                           **kw)  # type: ignore[arg-type]

    mean_ctx = ctx + (gen - 1) // 2
    prefill, step = prefill_of(batch), step_of(batch)
    tpot = step.seconds
    e2e = prefill.seconds + (gen - 1) * tpot
    whole = whole_requests_s(prefill, step, gen, one=(prefill_of(1), step_of(1)) if batch > 1
                             else (prefill, step))
    spec_result = None
    if draft is not None:
        _check_fraction("accept_rate", accept_rate)
        if accept_rate >= 1:
            raise ParameterError("{accept_rate} {value:g}: must be below 1", value=accept_rate)
        if draft_tokens < 1:
            raise ParameterError("{draft_tokens} {value}: must be 1 or more", value=draft_tokens)
        d_step = decode_step(draft, batch=batch, ctx=mean_ctx, dtype=dtype, kv_dtype=kv_dtype,
                             **kw).seconds  # type: ignore[arg-type]
        c = d_step / tpot
        a, g = accept_rate, draft_tokens
        per_step = (1 - a ** (g + 1)) / (1 - a)
        spec_result = Speculation(draft.name, a, g, d_step, c, per_step, per_step / (g * c + 1))
    return Latency(
        model=spec.name, accelerator=accelerator, interconnect=link, tp=tp, batch=batch, ctx=ctx,
        gen=gen, dtype=dtype, kv_dtype=kv_dtype, compute_efficiency=ce, bandwidth_efficiency=be,
        weight_bytes=weight_bytes(spec, dtype), prefill=prefill, decode=step,
        decode_ctx=mean_ctx, ttft_s=prefill.seconds, tpot_s=tpot, e2e_s=e2e, whole_s=whole,
        tokens_per_s_per_request=1 / tpot, tokens_per_s=batch / tpot,
        tokens_per_s_per_gpu=batch / tpot / tp, throughput_per_gpu=batch * gen / whole / tp,
        ridge_batch=ridge_batch(spec, ctx=mean_ctx, dtype=dtype, kv_dtype=kv_dtype, acc=acc,
                                ce=ce, be=be, tp=tp),
        speculation=spec_result, layers=spec.num_layers, peak_flops=peak,
        prefill_attention_flops=-(-batch * flops.attention_flops_per_sequence(
            spec, ctx=ctx, causal=True) // tp),
        prefill_note=PREFILL_HEAD_NOTE if head else "",
        moe=spec.moe is not None,
        decode_kv_bytes=memory.kv_cache_bytes(replicated_kv(spec, tp), batch=batch, ctx=mean_ctx,
                                              dtype=kv_dtype),
        kv_group=kv_group(spec),
        recurrent_layers=sum(len(g.layers) for g in spec.layer_groups
                             if g.mixer is not None and g.mixer.state_elements),
        norms=layer_norms(spec),
        notes=(*context_notes(spec, ctx=ctx), *format_notes(spec, dtype),
               *capacity_notes(weight_bytes(spec, dtype), accelerator, tp),
               *((accelerator.peaks_source,) if custom else ())),
    )
