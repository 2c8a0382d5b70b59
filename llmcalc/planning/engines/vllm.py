"""vLLM's KV cache budget (``fit --engine vllm``), read from its source.

Followed: vLLM 0.21 (the V1 engine, CUDA graphs' memory counted before the KV cache);
``--engine vllm==0.6`` (any version below 0.8) follows the V0 engine; 0.8–0.20 the V1 engine
without the CUDA-graph term, except where 0.8 and 0.9 fall back to V0 (a card before Ampere, a GGUF
checkpoint: ``v0_fallback``). What the profile peaks at, the non-torch memory with tp and the
default utilization change with the version (the constants below, each with its logs).

The budget (vllm/v1/worker/gpu_worker.py ``Worker.determine_available_memory``)::

    requested = total_memory × gpu_memory_utilization
    available_kv = requested − (weights + torch activation peak + non-torch increase [+ CUDA graphs])

and the cache (vllm/v1/core/kv_cache_utils.py ``get_num_blocks``, ``_report_kv_cache_config``)::

    page = block_size × kv_heads_per_rank × (d_k + d_v) × dtype_bytes        (per layer)
    num_blocks = available_kv // page // num_layers;  tokens = num_blocks × block_size
    max_concurrency = num_blocks / cdiv(max_model_len, block_size)

Hybrid models whose recurrent layers are gated-delta (Qwen3-Next, Qwen3.5/3.6) follow V1's hybrid
allocator (``hybrid_layout`` below); other hybrids are refused in one line.

V0 (vllm/worker/worker.py ``Worker.determine_num_available_blocks``): the same budget, blocks of
block_size × (all layers' K and V) bytes, ``num_gpu_blocks = int(available // cache_block_size)``.
The activation peak, the non-torch memory and the CUDA graphs are measured at start-up by the
engine; llmcalc estimates them (llmcalc.planning.engines.budget.forward_peak and the constants
below, each with the log it comes from)."""

from __future__ import annotations

from fractions import Fraction

from llmcalc.errors import UsageError
from llmcalc.formulas.quant import QuantFormat, WeightFormat
from llmcalc.model.spec import GATED_DELTA, ModelSpec
from llmcalc.planning.engines.budget import (
    EngineBudget,
    cuda_memory,
    forward_peak,
    fraction,
    gib,
    kv_bytes_per_token_rank,
    kv_heads_per_rank,
    kv_layers,
    not_modelled,
    weights_per_gpu,
)
from llmcalc.planning.hardware import DEFAULT_INTERCONNECT, Accelerator, GiB
from llmcalc.units import DType

VERSION = "0.21"
V1_FROM = (0, 8)  # VLLM_USE_V1 became the default in 0.8
CUDA_GRAPHS_FROM = (0, 21)  # determine_available_memory subtracts the estimated graph memory

# vllm/config/cache.py CacheConfig: gpu_memory_utilization 0.9, block_size 16; 0.92 in v0.25.0's
# CacheConfig (Field(default=0.92)), where llmcalc starts it (0.21–0.24 not checked)
DEFAULT_UTILIZATION = 0.9
DEFAULT_UTILIZATION_FROM = {(0, 25): 0.92, (0, 0): DEFAULT_UTILIZATION}
DEFAULT_BLOCK_SIZE = 16
# vllm/engine/arg_utils.py EngineArgs._set_default_args (the `vllm serve` defaults): 8192
# batched tokens and 1024 sequences on a card of 70 GiB or more other than an A100, else 2048/256
LARGE_CARD = 70 * GiB
SERVE_DEFAULTS = {True: (8192, 1024), False: (2048, 256)}
# V0 (vllm 0.6/0.7 EngineArgs, SchedulerConfig): no chunked prefill up to 32k context, so the
# profile batch is max(max_model_len, 2048) tokens; above it chunked prefill of 512 tokens
# (0.6: vllm#10517's 35,000-token profile peaked 0.06 GiB) or 2048 from 0.7 (a 131,072-token
# Llama-3.1-8B on an A10 peaked 0.22 GiB, oracle-samples/oci-data-science-ai-samples); 256 sequences
V0_CHUNKED_ABOVE = 32768
V0_CHUNK = {(0, 7): 2048, (0, 0): 512}
V0_MAX_NUM_SEQS = 256
# [max_num_seqs, vocab] float32 tensors V0's dummy sampling holds at its peak (plan(), below)
V0_SAMPLER_TENSORS = 10
# bytes a [max_num_seqs, vocab] element V1's dummy sampling holds (plan(), below), by the version
# it starts from: up to 0.11 the dummy run (vllm#13594: top-k vocab - 1, top-p, the penalties'
# tensors) goes through PyTorch's sort-based top-k/top-p, logged at 38.4–38.9 bytes an element
# (plan(), below); by 0.19 16 bytes (fp32 logits, sorted values, int64 indices; llmcalc takes it
# from 0.12: no log of 0.12–0.18 shows where it changed); from 0.20 FlashInfer's sampler (fp32
# logits and probabilities; vllm#40376 turned it on by default after 0.19.0). A 0.8–0.10 install
# with FlashInfer present samples with it ("Using FlashInfer for top-p & top-k sampling"), about
# 8 bytes: llmcalc follows the plain install
V1_SAMPLER_BYTES = {(0, 20): Fraction(4 + 4), (0, 12): Fraction(4 + 4 + 8),
                    (0, 0): Fraction(77, 2)}
FLASHINFER_SAMPLER_FROM = (0, 20)
# vllm/engine/arg_utils.py EngineArgs._is_v1_supported_oracle (0.8, 0.9): "Compute Capability < 8.0
# is not supported by the V1 Engine. Falling back to V0" (the HF cookbook's Colab T4 log, 0.8.2);
# a GGUF checkpoint ran V0 as well (eformat/ragit-dev's 0.8 log: worker.py, executor_base.py).
# The cards before Ampere llmcalc's table knows; V1 takes them from 0.10
V0_FALLBACK_UNTIL = (0, 10)
PRE_AMPERE = ("t4", "v100", "rtx-20", "quadro-rtx", "titan-rtx")

# Non-torch memory (cuBLAS workspaces; NCCL and the custom all-reduce buffers with tp > 1), as
# vLLM measures it in the profile ("non-torch forward increase memory"). At tp 1 the logs spread
# from 0.05 GiB (A10, oracle-samples above) through 0.20 (RTX 3090, vllm#14447) to 0.35 (RTX 3090,
# vllm#10517); vLLM 0.19's H100 sweep (llm-d-planner accuracy/results/v0.19.0, 50 runs) logs
# 0.24–0.27 GiB: llmcalc takes 0.25 GiB. With tp > 1, NCCL and vLLM's custom all-reduce buffers
# (vllm/distributed/device_communicators/custom_all_reduce.py, used where the GPUs are NVLink
# peers) add to the rank the KV budget follows (the smallest rank's): the H100 sweep logs 2.06–2.21
# GiB in all at tp 2 and 4 (NVLink), so 1.85 GiB more; vllm#13061's two PCIe RTX 4090s, where the
# custom all-reduce stays off, 1.2 GiB below the rank whose figure it logged: 1.45 GiB more.
# Up to 0.11 the V1 engine's NVLink ranks logged far less: llm-d-benchmark's vLLM 0.11 H100 runs
# 0.55 GiB at tp 2 against 0.13 at tp 1 (0.42 more); llmcalc takes the 0.19 figure from 0.12 on (no
# log of 0.12–0.18 at tp > 1 checks where it changed). PCIe datacenter cards, whose ranks are P2P
# peers without NVLink, add next to nothing: vllm#15815's two L40S (V0 0.7) log 0.30 GiB on both
# ranks (0.05 more); GeForce cards (no P2P) keep vllm#13061's 1.45.
NON_TORCH = int(0.25 * GiB)
NON_TORCH_TP = {True: int(1.85 * GiB), False: int(1.45 * GiB)}  # keyed by "NVLink peers"
NON_TORCH_TP_V1_EARLY = int(0.42 * GiB)  # NVLink, V1 before 0.12
NON_TORCH_TP_PCIE_P2P = int(0.05 * GiB)  # datacenter/workstation PCIe cards
# CUDA graphs (0.21: "Estimated CUDA graph memory: N GiB total", subtracted since 0.21): logs show
# 0.61 to 1.58 GiB with the default capture sizes (0.30 with two), whatever the model's size;
# llmcalc takes 1 GiB, none with --enforce-eager
CUDA_GRAPHS = 1 * GiB


# vllm/model_executor/models/config.py HybridAttentionMambaModelConfig.verify_and_update_config:
# the attention block grows in steps of the kernel's alignment (16 tokens) until its page holds
# the mamba state page, and the mamba page is padded to the attention page
HYBRID_BLOCK_ALIGN = 16
# vllm/v1/kv_cache_interface.py MambaSpec.max_memory_usage_bytes: with prefix caching (V1's
# default; mamba_cache_mode "align") a request holds 2 state pages per mamba group, else 1
MAMBA_PAGES_PER_REQUEST = 2


def hybrid_layout(spec: ModelSpec, *, tp: int, per_token_layer: int
                  ) -> tuple[int, int, int, int, int]:
    """(block_size, page bytes, group_size, attention groups, mamba groups) for a gated-delta
    hybrid in vLLM V1: the state page of one layer on one rank
    is the conv state, (kernel − 1) × conv_dim/tp at the model's bf16, plus the temporal state,
    v_heads/tp × d_k × d_v at float32 where the config sets mamba_ssm_dtype float32 (Qwen3.5's
    config override), else bf16 (vllm/model_executor/layers/mamba/mamba_utils.py
    ``MambaStateShapeCalculator.gated_delta_net_state_shape``, ``MambaStateDtypeCalculator``).
    Layers are grouped by type into groups of the smallest type's layer count
    (vllm/v1/core/kv_cache_utils.py ``_get_kv_cache_groups_uniform_page_size``: the largest
    where the largest is under 1.25 × the smallest; a type's last group padded)."""
    mixers = [g for g in spec.layer_groups if g.mixer is not None]
    m = mixers[0].mixer
    assert m is not None
    text = spec.config.get("text_config")
    cfg = text if isinstance(text, dict) else spec.config
    ssm_bytes = 4 if cfg.get("mamba_ssm_dtype") == "float32" else 2
    state = ((m.conv_kernel - 1) * (m.conv_dim // tp) * 2
             + (m.heads // tp) * m.head_dim * m.state_size * ssm_bytes)
    align = HYBRID_BLOCK_ALIGN
    block = align * -(-state // (align * per_token_layer))
    attention = kv_layers(spec)
    recurrent = sum(g.cached_runs for g in mixers)
    group = min(attention, recurrent)
    if max(attention, recurrent) < group * 1.25:
        group = max(attention, recurrent)
    return (block, block * per_token_layer, group, -(-attention // group),
            -(-recurrent // group))


# vllm/v1/core/kv_cache_utils.py (the hybrid allocator, from 0.10): layers of different attention
# types (full, sliding window, Llama 4's chunked local attention) are grouped by type, each group
# with its own blocks from one shared pool
WINDOW_GROUPS_FROM = (0, 10)


def window_layout(spec: ModelSpec, *, tp: int, model_len: int, batched: int, block: int
                  ) -> tuple[int, int, int] | None:
    """(group size, blocks one request holds, layer slots) where the model mixes attention types
    (vLLM V1 ≥ 0.10), None where it has one. Layers are grouped by type in groups of the
    smallest type's count — the largest where it is under 1.25 × the smallest — a type's last
    group padded (vllm/v1/core/kv_cache_utils.py ``_get_kv_cache_groups_uniform_page_size``);
    num_blocks = available // page // group size. One request holds per full-attention group
    cdiv(max_model_len, block) blocks, per sliding-window group cdiv(min(window − 1 +
    max_num_batched_tokens, max_model_len), block) (kv_cache_interface.py
    ``SlidingWindowSpec.max_memory_usage_bytes``), per chunked-local group cdiv(min(chunk +
    max_num_batched_tokens, max_model_len), block) (``ChunkedLocalAttentionSpec``). Checked against
    vLLM 0.19's logs: Gemma 3 27B (52 sliding + 10 full layers: 7 groups of 10, 8 padding
    slots), Gemma 3 4B (29 + 5: 7 groups of 5) and 12B (40 + 8), Gemma 2, gpt-oss, Llama 4 Scout."""
    counts: dict[tuple[str, int], int] = {}
    widths = set()
    for g in spec.layer_groups:
        a = g.attention
        if a is None or a.kv_shared or not a.causal or g.cached_runs == 0:
            continue
        key = ("chunked" if a.chunked else "sliding", a.window) if a.window else ("full", 0)
        counts[key] = counts.get(key, 0) + g.cached_runs
        widths.add(a.kv_latent_dim or kv_heads_per_rank(a.kv_heads, tp) * (a.qk_head_dim
                                                                           + a.v_head_dim))
    if len(counts) < 2:
        return None
    if len(widths) > 1:
        raise UsageError(f"--engine vllm: {spec.name} mixes attention layers of different cache "
                         "widths, whose pages vLLM's hybrid allocator pads in a way llmcalc "
                         "does not follow yet")
    group = min(counts.values())
    if max(counts.values()) < group * 1.25:
        group = max(counts.values())
    per_request = slots = 0
    for (kind, window), n in counts.items():
        groups = -(-n // group)
        slots += groups * group
        if kind == "full":
            held = model_len
        elif kind == "sliding":
            held = min(window - 1 + batched, model_len)
        else:
            held = min(window + batched, model_len)
        per_request += groups * -(-held // block)
    return group, per_request, slots


def nvlink(acc: Accelerator) -> bool:
    """Whether the card's GPUs are NVLink peers (hardware.json's link), where vLLM turns on its
    custom all-reduce."""
    return DEFAULT_INTERCONNECT.get(acc.key, "").startswith("nvlink")


def non_torch_tp(acc: Accelerator, ver: tuple[int, ...], v1: bool) -> int:
    """Non-torch memory tp > 1 adds to a rank (NCCL, the custom all-reduce): NON_TORCH_TP above."""
    if nvlink(acc):
        return NON_TORCH_TP_V1_EARLY if v1 and ver < (0, 12) else NON_TORCH_TP[True]
    return NON_TORCH_TP[False] if acc.kind == "consumer" else NON_TORCH_TP_PCIE_P2P


def v0_fallback(ver: tuple[int, ...], acc: Accelerator, dtype: WeightFormat) -> bool:
    """Whether a V1-era version (0.8, 0.9) runs the V0 engine here (V0_FALLBACK_UNTIL above)."""
    if not V1_FROM <= ver < V0_FALLBACK_UNTIL:
        return False
    return (any(acc.key.startswith(k) for k in PRE_AMPERE)
            or (isinstance(dtype, QuantFormat) and bool(dtype.gguf)))


def v0_profile_seqs(spec: ModelSpec, seqs: int, batched: int) -> int:
    """Sequences V0's profile run samples: max_num_seqs, and for a model that takes images as
    many as max_num_batched_tokens holds of the most image tokens a prompt may bring, at least
    one (vllm/worker/model_runner.py ``GPUModelRunnerBase.profile_run``: max_num_seqs =
    min(max_num_seqs, max_num_batched_tokens // max_mm_tokens)). llmcalc takes a prompt's image
    tokens at the parts' own image size (context_tokens): dynamic-resolution towers (Qwen2-VL's
    16,384 tokens at most) bring more, so fewer sequences still."""
    mm_tokens = sum(p.context_tokens for p in spec.parts if p.input == "image")
    if mm_tokens:
        return max(1, min(seqs, batched // mm_tokens))
    return min(seqs, batched)


def version_tuple(version: str | None) -> tuple[int, ...]:
    return tuple(int(p) for p in (version or VERSION).split("."))


def defaults(acc: Accelerator) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) `vllm serve` takes on this card (V1)."""
    large = cuda_memory(acc) >= LARGE_CARD and "a100" not in acc.key
    return SERVE_DEFAULTS[large]


def plan(
    spec: ModelSpec,
    *,
    accelerator: Accelerator,
    dtype: WeightFormat,
    kv_dtype: DType,
    tp: int = 1,
    version: str | None = None,
    gpu_memory_utilization: float | None = None,
    max_model_len: int | None = None,
    max_num_seqs: int | None = None,
    max_num_batched_tokens: int | None = None,
    block_size: int | None = None,
    enforce_eager: bool = False,
    kv_memory: int | None = None,
) -> EngineBudget:
    """vLLM's budget on one GPU of ``accelerator`` with these settings (None: vLLM's default)."""
    ver = version_tuple(version)
    v1 = ver >= V1_FROM and not v0_fallback(ver, accelerator, dtype)
    mixers = {g.mixer.kind for g in spec.layer_groups if g.mixer is not None}
    hybrid = v1 and mixers == {GATED_DELTA} and kv_layers(spec) > 0
    if not hybrid:
        not_modelled(spec, "vllm")
    util = fraction(gpu_memory_utilization if gpu_memory_utilization is not None
                    else next(u for since, u in DEFAULT_UTILIZATION_FROM.items() if ver >= since),
                    "--gpu-memory-utilization")
    block = block_size or DEFAULT_BLOCK_SIZE
    model_len = max_model_len or spec.shape.max_position_embeddings or 2048
    if v1:
        batched, seqs = defaults(accelerator)
    else:
        chunk = next(c for since, c in V0_CHUNK.items() if ver >= since)
        batched = chunk if model_len > V0_CHUNKED_ABOVE else max(model_len, 2048)
        seqs = V0_MAX_NUM_SEQS
    batched = max_num_batched_tokens or batched
    seqs = max_num_seqs or seqs
    total = cuda_memory(accelerator)
    requested = int(total * util)
    # V1's dummy sampler run (vllm/v1/worker/gpu_model_runner.py _dummy_sampler_run) samples
    # max_num_seqs rows with top-k and top-p: the sampler turns the logits to float32
    # (vllm/v1/sample/sampler.py) and, without FlashInfer's sampler (off by default in 0.19:
    # "FlashInfer top-p/top-k sampling is available but disabled by default"), sorts them
    # (vllm/v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p_pytorch: logits.sort() → fp32
    # values and int64 indices): 4 + 4 + 8 = 16 bytes a [max_num_seqs, vocab] element. vLLM 0.19's
    # H100 sweep logs 15.2–15.9 (Llama-3.1-8B 1.89 GiB, Qwen2.5-7B 2.21, Phi-4 1.52, Gemma 3 3.89
    # with 1,024 sequences). From 0.20 FlashInfer's sampler is on by default (vllm#40376): fp32
    # logits and probabilities, 8 bytes (LMCache#3430's 0.21 run). Up to 0.11 the sort-based pass
    # over vllm#13594's dummy metadata holds 38.5 bytes, as llm-d-benchmark's 0.11 H100 runs log
    # with 1,024 sequences: Llama-3.1-8B 4.76 GiB, Qwen3-0.6B 5.56, Qwen3-32B 5.64, gpt-oss-20b
    # 7.38 (38.4–38.9 bytes). V0's profile_run (vllm/worker/model_runner.py) samples every dummy
    # sequence with SamplingParams(top_p=0.99, top_k=vocab_size - 1), so the sampler's top-k/top-p
    # pass (vllm/model_executor/layers/sampler.py _apply_top_k_top_p, then probs and logprobs) holds
    # about ten [max_num_seqs, vocab] float32-sized tensors at once: the fp32 logits, the sorted
    # logits and their int64 indices (two), the top-k mask, softmax and cumsum of the sorted
    # logits, the re-scattered logits, probs and logprobs. Held to V0 logs of 0.6.5–0.7 with
    # 256 sequences: Meta-Llama-3-8B 1.26 GiB (vllm#10511), Phi-4 0.94 GiB (a 2,048-token
    # profile), Qwen2.5-7B 1.42 GiB (vllm#13882): 10.3, 9.8 and 9.8 such tensors. With chunked
    # prefill (above 32k) the logs show no such peak (vllm#10517's 512-token profile: 0.06 GiB,
    # the A10's 2,048-token one 0.22 GiB): there the profile's bf16 logits are taken.
    if v1:
        per_element = next(b for since, b in V1_SAMPLER_BYTES.items() if ver >= since)
        sampler = int(per_element * min(seqs, batched) * spec.shape.vocab_size)
    elif model_len > V0_CHUNKED_ABOVE:
        sampler = 2 * v0_profile_seqs(spec, seqs, batched) * spec.shape.vocab_size
    else:
        sampler = (V0_SAMPLER_TENSORS * 4 * v0_profile_seqs(spec, seqs, batched)
                   * spec.shape.vocab_size)
    terms = {
        "weights": weights_per_gpu(spec, dtype=dtype, tp=tp),
        "activation_peak": max(forward_peak(spec, tokens=batched, tp=tp), sampler),
        "non_torch": NON_TORCH + (non_torch_tp(accelerator, ver, v1) if tp > 1 else 0),
    }
    if v1 and ver >= CUDA_GRAPHS_FROM:
        terms["cuda_graphs"] = 0 if enforce_eager else CUDA_GRAPHS
    per_token = kv_bytes_per_token_rank(spec, tp=tp, kv_dtype=kv_dtype)
    layers = kv_layers(spec)
    attention_groups, mamba_groups = 1, 0
    windows = (window_layout(spec, tp=tp, model_len=model_len, batched=batched, block=block)
               if v1 and ver >= WINDOW_GROUPS_FROM and not hybrid else None)
    if hybrid:
        block, page, layers, attention_groups, mamba_groups = hybrid_layout(spec, tp=tp,
                                                          per_token_layer=per_token // layers)
    else:
        page = block * (per_token // layers) if v1 else block * per_token  # V1: one layer's page
    available = kv_memory if kv_memory is not None else requested - sum(terms.values())
    # kv_cache_utils.get_max_concurrency_for_kv_cache_config: the blocks one request holds, its
    # attention pages plus each mamba group's state pages; a hybrid's logged token count is
    # _report_kv_cache_config's int(max_concurrency × max_model_len)
    per_request = (attention_groups * -(-model_len // block)
                   + mamba_groups * MAMBA_PAGES_PER_REQUEST)
    if windows is not None:
        layers, per_request, _ = windows
    blocks = max(available, 0) // page // (layers if v1 else 1)
    tokens = blocks * block
    concurrency = blocks / per_request if v1 else tokens / model_len
    if hybrid or windows is not None:
        tokens = int(concurrency * model_len)
    refusal = None
    if available <= 0:
        refusal = ("No available memory for the cache blocks. Try increasing "
                   "`gpu_memory_utilization` when initializing the engine.")
    elif v1 and per_request * page * layers > available:
        refusal = (f"To serve at least one request with the model's max seq len ({model_len}), "
                   f"({gib(per_request * page * layers):.2f} GiB KV cache is needed, which is "
                   f"larger than the available KV cache memory ({gib(available):.2f} GiB). "
                   f"Based on the available memory, the estimated maximum model length is "
                   f"{tokens}. Try increasing `gpu_memory_utilization` or decreasing "
                   "`max_model_len` when initializing the engine.")
    elif not v1 and model_len > tokens:
        refusal = (f"The model's max seq len ({model_len}) is larger than the maximum number of "
                   f"tokens that can be stored in KV cache ({tokens}). Try increasing "
                   "`gpu_memory_utilization` or decreasing `max_model_len` when initializing "
                   "the engine.")
    settings: dict[str, object] = {
        "tensor_parallel_size": tp, "gpu_memory_utilization": float(util),
        "max_model_len": model_len, "max_num_seqs": seqs, "max_num_batched_tokens": batched,
        "block_size": block_size or DEFAULT_BLOCK_SIZE if hybrid else block,
        "enforce_eager": enforce_eager,
    }
    return EngineBudget(
        engine="vllm", version=".".join(map(str, ver)), cuda_memory_bytes=total,
        usable_bytes=requested, terms=terms, kv_cache_bytes=max(available, 0),
        bytes_per_token=per_token, block_tokens=block, kv_cache_tokens=tokens,
        max_model_len=model_len, max_concurrency=concurrency, settings=settings,
        command=command(spec, settings, kv_dtype=kv_dtype, dtype=dtype),
        refusal=refusal, from_log=kv_memory is not None,
        tokens_rule=(f"concurrency × max_model_len, blocks of {block}"
                     if hybrid or windows is not None else ""),
    )


def command(spec: ModelSpec, s: dict[str, object], *, kv_dtype: DType, dtype: WeightFormat
            ) -> str:
    """The `vllm serve` line with these settings."""
    model = spec.origin.repo_id if spec.origin and spec.origin.repo_id else spec.name
    parts = [f"vllm serve {model}", f"--tensor-parallel-size {s['tensor_parallel_size']}",
             f"--gpu-memory-utilization {s['gpu_memory_utilization']}",
             f"--max-model-len {s['max_model_len']}", f"--max-num-seqs {s['max_num_seqs']}",
             f"--max-num-batched-tokens {s['max_num_batched_tokens']}",
             f"--block-size {s['block_size']}"]
    if kv_dtype.value.startswith("fp8"):
        parts.append("--kv-cache-dtype fp8")
    if s["enforce_eager"]:
        parts.append("--enforce-eager")
    return " ".join(parts)
