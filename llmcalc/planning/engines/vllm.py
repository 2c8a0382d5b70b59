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

Models with recurrent layers (Mamba, Mamba-2, short conv, gated delta, linear attention: Jamba,
granite-4.0-h, Bamba, Nemotron-H, Falcon-H1, Zamba2, LFM2, MiniMax, Qwen3-Next/3.5/3.6, and pure
SSMs) follow V1's hybrid allocator (``state_page``, ``hybrid_layout`` below), Mamba hybrids before
0.10.2 V0's MambaCacheManager (``MAMBA_V1_FROM``); other recurrent kinds are refused in one line.

V0 (vllm/worker/worker.py ``Worker.determine_num_available_blocks``): the same budget, blocks of
block_size × (all layers' K and V) bytes, ``num_gpu_blocks = int(available // cache_block_size)``.
The activation peak, the non-torch memory and the CUDA graphs are measured at start-up by the
engine; llmcalc estimates them (llmcalc.planning.engines.budget.forward_peak and the constants
below, each with the log it comes from)."""

from __future__ import annotations

import math
from fractions import Fraction

from llmcalc.errors import UsageError
from llmcalc.formulas.quant import QuantFormat, WeightFormat
from llmcalc.model.spec import GATED_DELTA, LIGHTNING, MAMBA, MAMBA2, SHORT_CONV, Mixer, ModelSpec
from llmcalc.planning.engines.budget import (
    EngineBudget,
    cuda_memory,
    deepseek_sparse,
    forward_peak,
    fraction,
    gib,
    kv_bytes_per_token_rank,
    kv_heads_per_rank,
    kv_layers,
    not_modelled,
    refuse_unfollowed_sparse,
    version_tuple,
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


# vllm/model_executor/models/config.py HybridAttentionMambaModelConfig.verify_and_update_config
# (from 0.19 vllm/platforms/interface.py Platform._align_hybrid_block_size): the attention block
# grows in steps of the kernel's alignment (16 tokens) until its page holds the mamba state page,
# and the mamba page is padded to the attention page
HYBRID_BLOCK_ALIGN = 16
# vllm/v1/kv_cache_interface.py MambaSpec.max_memory_usage_bytes: a request holds 1 state page per
# mamba group with mamba_cache_mode "none", 2 with "align" (prefix caching on). The gated-delta
# rows (Qwen3.6 logs run with prefix caching) hold 2. For Mamba/Mamba-2/short-conv/linear-attention
# models prefix caching stays off by default (vllm#23716, from 0.10.2: "none", 1 page) until
# vllm#50991 (merged 2026-08-04, taken as 0.27) turned it on in "align" mode (2 pages).
MAMBA_PAGES_PER_REQUEST = 2
STATE_ALIGN_DEFAULT_FROM = (0, 27)
# --enable-prefix-caching on a Mamba hybrid (models/config.py MambaModelConfig): vLLM 0.10 turned
# it off for them; from vllm#25752 (Mamba-2 automatic prefix caching, merged 2025-10, taken as
# 0.11.1) models that support it (Mamba, Mamba-2: SupportsMambaPrefixCaching) take
# mamba_cache_mode "all", the others "align". In "all" mode the attention block is a multiple of
# lcm(the config's mamba chunk size, 16) (platforms/interface.py _align_hybrid_block_size:
# granite-4.0-h 768 tokens with prefix caching, 528 without, vllm-gaudi#1453) and a request holds
# cdiv(max_model_len, block) pages in each Mamba group (MambaSpec.max_memory_usage_bytes)
MAMBA_PREFIX_CACHING_FROM = (0, 11, 1)
MAMBA_CACHE_MODES = ("none", "align", "all")
# vllm#20016 (June 2025) let V1 run hybrid SSM/attention models and vllm#23716 (merged 2025-08-27,
# taken as 0.10.2) turned prefix caching off for them so that V1 could run them by default; before
# that they ran on V0, whose MambaCacheManager (vllm/model_executor/models/mamba_cache.py) holds
# one conv + temporal state per Mamba layer for each of max_num_seqs sequences (padded to the
# CUDA-graph batch sizes: 8-multiples, vllm/config.py ``_get_graph_batch_size``; exactly
# max_num_seqs with --enforce-eager), allocated in the profiling forward (so taken before the KV
# cache), at the model's dtype; the KV blocks then hold the attention layers only
# (worker/cache_engine.py ``get_cache_block_size``: the attention layers' count)
MAMBA_V1_FROM = (0, 10, 2)
# vllm/v1/core/kv_cache_utils.py _report_kv_cache_config: num_blocks // len(groups) × the smallest
# block size until vllm#38364/#40694 (April 2026, taken as 0.20) logged int(max_concurrency ×
# max_model_len); LFM2.5 on vLLM 0.17 (217,264 tokens with 40,738 blocks in 3 groups) and
# Qwen3.5-27B on 0.19 (vllm#40691: 290,864 tokens at 33.04x of 32,768) show the old rule
HYBRID_TOKENS_FROM_CONCURRENCY = (0, 20)
# recurrent mixers vLLM V1 keeps in MambaSpec pages (mamba_utils.MambaStateShapeCalculator)
STATE_KINDS = {GATED_DELTA, MAMBA, MAMBA2, SHORT_CONV, LIGHTNING}


# models/config.py NemotronHForCausalLMConfig: where the config names no mamba_ssm_cache_dtype,
# float16 in vLLM 0.13 (NGC 26.01's log: "Updating mamba_ssm_cache_dtype to 'float16' for NemotronH
# model"), float32 in the current source ("Only float32 is known to have no accuracy issues");
# the release between is not known: taken as 0.20
NEMOTRON_H_FP32_DEFAULT_FROM = (0, 20)


SSM_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}

# DeepSeek sparse attention (DeepSeek-V3.2-Exp came out 2025-09-29, after vLLM 0.10.2; 0.11.0
# is the first release with it, vllm#25988 of 2025-09-30 among its fixes). Beside each
# layer's MLA latent vLLM caches the indexer's key (vllm/model_executor/models/deepseek_v2.py
# ``Indexer``: a ``DeepseekV32IndexerCache`` of head_dim index_head_dim + index_head_dim // 128 × 4,
# uint8: fp8 values and a float32 scale per 128; its MLAAttentionSpec one head). The two specs
# differ, so vllm/v1/core/kv_cache_utils.py puts every layer in one group
# (``UniformTypeKVCacheSpecs``: a block costs the sum of all their pages), and
# vllm/platforms/cuda.py forces blocks of 64 ("Forcing kv cache block size to 64 for
# FlashMLASparse backend"). An fp8 cache becomes "fp8_ds_mla" (models/config.py
# ``DeepseekV32ForCausalLM.verify_and_update_config``): 656 bytes a token (kv_cache_interface.py
# ``MLAAttentionSpec.real_page_size_bytes``; 512 fp8, 4 float32 scales, 64 bf16 rope values).
# "auto", vLLM's default, meant fp8_ds_mla too from vllm#25988 (0.11.0) and bf16 in later
# releases, from one llmcalc has not pinned: for a bf16 cache llmcalc passes
# --kv-cache-dtype bfloat16, a bf16 latent in every release. Later releases turn fp8 into
# fp8_ds_mla in the MLA layer only under the FLASHMLA_SPARSE backend (model_executor/layers/
# attention/mla_attention.py ``MLAAttention``), Hopper's only sparse one; on Blackwell (platforms/cuda.py
# ``_get_backend_priorities``, vllm#35807) an fp8 cache prefers FLASHINFER_MLA_SPARSE, plain
# fp8 (576 bytes): llmcalc counts fp8 on Hopper cards only
SPARSE_MLA_FROM = (0, 11)
HOPPER = ("h100", "h200", "h800", "h20", "gh200")
SPARSE_MLA_BLOCK = 64
INDEX_QUANT_BLOCK = 128
FP8_DS_MLA_BYTES = 656
FP8_DS_MLA_LATENT = 576  # kv_lora_rank 512 + rope 64: the only shape fp8_ds_mla packs


def sparse_mla_bytes(spec: ModelSpec, *, kv_dtype: DType, ver: tuple[int, ...],
                     acc: Accelerator) -> int | None:
    """KV bytes a token takes on one rank, every layer, for a model with DeepSeek sparse
    attention (an MLA latent with an indexer: topk and index_key_dim): the latent (bf16, or
    fp8_ds_mla's 656 bytes) and the indexer's key, both whole on every rank (SPARSE_MLA_FROM
    above). None for other models; refused before vLLM ran them or for another cache dtype."""
    groups = [g for g in spec.layer_groups if g.attention is not None
              and not g.attention.kv_shared and g.attention.causal]
    if not deepseek_sparse(spec):
        return None
    if kv_dtype not in (DType.bf16, DType.fp8):
        raise UsageError(f"--kv-dtype {kv_dtype.value}: vLLM caches {spec.name}'s sparse "
                         "attention in bfloat16 or fp8 (fp8_ds_mla) only; use --kv-dtype bf16 "
                         "or fp8")
    if kv_dtype == DType.fp8 and not acc.key.startswith(HOPPER):
        raise UsageError(f"--kv-dtype fp8: on {acc.name} vLLM's fp8 cache for {spec.name}'s "
                         "sparse attention is fp8_ds_mla (656 bytes a token a layer) or plain "
                         "fp8 (576) by the attention backend it picks, which llmcalc does not "
                         "follow off Hopper; use --kv-dtype bf16")
    total = 0
    for g in groups:
        a = g.attention
        assert a is not None
        latent = a.kv_latent_dim or 0
        if kv_dtype == DType.fp8:
            if latent != FP8_DS_MLA_LATENT:
                raise UsageError(f"--kv-dtype fp8: vLLM's fp8_ds_mla cache packs a latent of "
                                 f"{FP8_DS_MLA_LATENT}, not {spec.name}'s {latent}; use "
                                 "--kv-dtype bf16")
            latent = FP8_DS_MLA_BYTES
        else:
            latent *= 2
        index = (a.index_key_dim + a.index_key_dim // INDEX_QUANT_BLOCK * 4
                 if a.topk and a.index_key_dim else 0)
        total += g.cached_runs * (latent + index)
    return total


def ssm_state_bytes(spec: ModelSpec, act_bytes: int, ver: tuple[int, ...] = (0, 21),
                    named: str | None = None) -> int:
    """Bytes of one element of the temporal (SSM) state: mamba_ssm_cache_dtype, "auto" = the conv
    state's (the model's) dtype (mamba_utils.py ``MambaStateDtypeCalculator._mamba_state_dtype``),
    overridden per model in models/config.py: Qwen3.5 takes its config's ``mamba_ssm_dtype``
    (``Qwen3_5ForConditionalGenerationConfig``); Nemotron-H its config's
    ``mamba_ssm_cache_dtype`` (``NemotronHForCausalLMConfig``, default above). ``named``: the
    --mamba-ssm-cache-dtype given ("auto" or None: the rules above)."""
    if named is not None and named != "auto":
        return SSM_DTYPE_BYTES[named]
    text = spec.config.get("text_config")
    cfg = text if isinstance(text, dict) else spec.config
    named = cfg.get("mamba_ssm_dtype")
    if cfg.get("model_type") == "nemotron_h" or spec.config.get("model_type") == "nemotron_h":
        named = cfg.get("mamba_ssm_cache_dtype",
                        "float32" if ver >= NEMOTRON_H_FP32_DEFAULT_FROM else "float16")
    return SSM_DTYPE_BYTES.get(str(named), act_bytes)


def state_page(spec: ModelSpec, m: Mixer, *, tp: int, act_bytes: int,
               ver: tuple[int, ...] = (0, 21), ssm_dtype: str | None = None) -> int:
    """One recurrent layer's state on one rank, in bytes (vllm/model_executor/layers/mamba/
    mamba_utils.py ``MambaStateShapeCalculator``; conv state at the model's dtype, temporal
    state at :func:`ssm_state_bytes`):

    - Mamba (``mamba1_state_shape``): conv (kernel − 1) × d_inner/tp, ssm d_inner/tp × N;
    - Mamba-2 (``mamba2_state_shape``): the B/C groups G are replicated up to tp where tp does not
      divide them (``extra_groups_for_head_shards``: G + tp − G), conv (kernel − 1) ×
      (d_inner + 2·G'·N)/tp, ssm heads/tp × head_dim × N;
    - short conv (LFM2, ``short_conv_state_shape``): conv (kernel − 1) × d/tp only;
    - gated delta (``gated_delta_net_state_shape``): conv (kernel − 1) × (2·k_heads·d_k +
      v_heads·d_v)/tp, ssm v_heads/tp × d_v × d_k;
    - linear attention (MiniMax, ``linear_attention_state_shape``): heads/tp × d × d at the
      model's dtype."""
    ssm = ssm_state_bytes(spec, act_bytes, ver, ssm_dtype) if ver >= MAMBA_V1_FROM else act_bytes
    if m.kind == LIGHTNING:
        return (m.heads // tp) * m.head_dim * m.state_size * act_bytes
    conv_dim = m.conv_dim
    if m.kind == MAMBA2:
        inner = m.heads * m.head_dim
        groups = (m.conv_dim - inner) // (2 * m.state_size)
        groups += 0 if groups % tp == 0 else tp - groups
        conv_dim = inner + 2 * groups * m.state_size
    conv = (m.conv_kernel - 1) * (conv_dim // tp) * act_bytes
    if m.kind == SHORT_CONV:
        return conv
    if m.kind == MAMBA:
        return conv + (m.conv_dim // tp) * m.state_size * ssm
    return conv + (m.heads // tp) * m.head_dim * m.state_size * ssm


def hybrid_layout(spec: ModelSpec, *, tp: int, per_token_layer: int, act_bytes: int = 2,
                  ver: tuple[int, ...] = (0, 21), ssm_dtype: str | None = None,
                  chunk_align: int = 0) -> tuple[int, int, int, int, int]:
    """(block_size, page bytes, group_size, attention groups, mamba groups) for a model with
    recurrent layers in vLLM V1: the state page of one layer on one rank (:func:`state_page`);
    the attention block 16 × cdiv(state, 16 × one token's page), its page the common page, the
    state page padded to it. Layers are grouped by type into groups of the smallest type's layer
    count (vllm/v1/core/kv_cache_utils.py ``_get_kv_cache_groups_uniform_page_size``: the
    largest where the largest is under 1.25 × the smallest; a type's last group padded).
    Without attention (a pure SSM) the block is max_model_len tokens (MambaModelConfig:
    mamba_block_size = max_model_len) and all layers form one group: block 0 here.
    ``chunk_align``: mamba_cache_mode "all"'s lcm(chunk size, 16) (MAMBA_PREFIX_CACHING_FROM)."""
    mixers = [g for g in spec.layer_groups if g.mixer is not None]
    m = mixers[0].mixer
    assert m is not None
    state = state_page(spec, m, tp=tp, act_bytes=act_bytes, ver=ver, ssm_dtype=ssm_dtype)
    attention = kv_layers(spec)
    recurrent = sum(g.cached_runs for g in mixers)
    if attention == 0:
        return 0, state, recurrent, 0, 1
    if chunk_align:
        tokens = -(-state // per_token_layer)  # attn_tokens_per_mamba_state
        block = chunk_align * -(-tokens // chunk_align)
    else:
        align = HYBRID_BLOCK_ALIGN
        block = align * -(-state // (align * per_token_layer))
    group = min(attention, recurrent)
    if max(attention, recurrent) < group * 1.25:
        group = max(attention, recurrent)
    return (block, block * per_token_layer, group, -(-attention // group),
            -(-recurrent // group))


def runs(spec: ModelSpec, ver: tuple[int, ...]) -> None:
    """Refuse a model vLLM ``ver`` does not run at all, as ``latency --engine vllm`` does too:
    DeepSeek sparse attention before ``SPARSE_MLA_FROM``; gated-delta layers before V1, or
    without attention layers beside them."""
    if deepseek_sparse(spec) and ver < SPARSE_MLA_FROM:
        raise UsageError("--engine vllm==" + ".".join(map(str, ver)) + f": {spec.name} has "
                         "DeepSeek sparse attention, which vLLM runs (with its indexer cache) from "
                         "0.11; use --engine vllm==0.11 or later")
    kinds = {g.mixer.kind for g in spec.layer_groups if g.mixer is not None}
    if kinds == {GATED_DELTA} and not (ver >= V1_FROM and kv_layers(spec) > 0):
        raise UsageError(f"--engine vllm: {spec.name} keeps gated-delta state, which vLLM runs "
                         "on V1 (--engine vllm==0.8 or later) beside attention only")


def recurrent_refusal(spec: ModelSpec, ver: tuple[int, ...]) -> str | None:
    """Why vLLM's cache for this model's recurrent layers is not followed (None: it is)."""
    kinds = {g.mixer.kind for g in spec.layer_groups if g.mixer is not None}
    if not kinds:
        return None
    name = ", ".join(sorted(kinds))
    if len(kinds) > 1 or not kinds <= STATE_KINDS:
        return (f"--engine vllm: {spec.name} keeps {name} state, whose pages in vLLM's hybrid "
                "allocator llmcalc does not follow (it follows Mamba, Mamba-2, short-conv, "
                "gated-delta and linear-attention layers)")
    if kinds == {GATED_DELTA}:
        return None  # runs() refuses where vLLM does not run it
    if ver < MAMBA_V1_FROM and (kv_layers(spec) == 0 or LIGHTNING in kinds):
        return ("--engine vllm==" + ".".join(map(str, ver)) + f": {spec.name} keeps {name} "
                "state with " + ("no attention layers" if kv_layers(spec) == 0 else
                                 "linear attention") + ", which vLLM before 0.10.2 runs on V0 "
                "with no KV blocks to count, not followed; use --engine vllm==0.10.2 or later")
    groups = {(g.attention.kv_heads, g.attention.qk_head_dim, g.attention.v_head_dim,
               g.attention.kv_latent_dim) for g in spec.layer_groups
              if g.attention is not None and not g.attention.kv_shared and g.cached_runs}
    if len(groups) > 1 or any(a[3] is not None for a in groups):
        return (f"--engine vllm: {spec.name} pairs its {name} state with attention layers of "
                "other than one plain K/V shape, whose page vLLM aligns in a way llmcalc does not "
                "follow")
    return None


# vllm/v1/core/kv_cache_utils.py (the hybrid allocator, from 0.10): layers of different attention
# types (full, sliding window, Llama 4's chunked local attention) are grouped by type, each group
# with its own blocks from one shared pool
WINDOW_GROUPS_FROM = (0, 10)
# kv_cache_utils.py ``unify_kv_cache_spec_page_size`` (vllm#24949, Sept 2025, taken as 0.11):
# where the attention types' pages differ in size (Gemma 4's sliding layers 256 wide beside its
# global ones 512 wide; any mix of head_dim or KV heads across types), each smaller page's block
# grows by max page // its page (NotImplementedError where that does not divide), so that all
# groups share one page; before it the hybrid allocator required one page size
MIXED_PAGES_FROM = (0, 11)
# vllm/config/vllm.py ``VllmConfig.max_in_flight_tokens`` (vllm#47728, in 0.26.0, tt-xla#5908):
# a sliding-window or chunked-local group holds its window plus max_concurrent_batches ×
# max_num_batched_tokens (2 batches with async scheduling, on by default, at pp 1); before it
# one batch
IN_FLIGHT_FROM = (0, 26)
IN_FLIGHT_BATCHES = 2


def window_layout(spec: ModelSpec, *, tp: int, model_len: int, batched: int, block: int,
                  ver: tuple[int, ...] = (0, 21)) -> tuple[int, int, int, Fraction] | None:
    """(group size, blocks one request holds, layer slots, the widest type's share of a token's
    cache: its width over all cached layers' widths) where the model
    mixes attention types (vLLM V1 ≥ 0.10), None where it has one. Layers are grouped by type in
    groups of the smallest type's count — the largest where it is under 1.25 × the smallest — a
    type's last group padded (vllm/v1/core/kv_cache_utils.py
    ``_get_kv_cache_groups_uniform_page_size``); num_blocks = available // page // group size.
    Where the types' pages differ (``unify_kv_cache_spec_page_size``, MIXED_PAGES_FROM) the page
    is the widest type's (a token's cache × that share, × ``block``) and a narrower type's block
    is ``block`` × widest // its width; a type of another width is a type of its own (its spec
    differs). One request holds per full-attention group
    cdiv(max_model_len, block) blocks, per sliding-window group cdiv(min(window − 1 + in-flight
    tokens, max_model_len), block) + 1 (kv_cache_interface.py
    ``SlidingWindowSpec.max_memory_usage_bytes``: "+1" as the window may start mid-block), per
    chunked-local group cdiv(min(chunk + in-flight tokens, max_model_len), block)
    (``ChunkedLocalAttentionSpec``); in-flight tokens max_num_batched_tokens, from
    IN_FLIGHT_FROM twice that. Checked against vLLM 0.19's logs: Gemma 3 27B (52 sliding + 10
    full layers: 7 groups of 10, 8 padding slots), Gemma 3 4B (29 + 5: 7 groups of 5) and 12B
    (40 + 8), Gemma 2, gpt-oss, Llama 4 Scout; and Gemma 4 E2B's (12 sliding layers 256 wide, 3
    full 512 wide: 5 groups of 3, the sliding blocks of 32 tokens) on 0.21 and 0.29. KV-shared
    layers (Gemma 3n, Gemma 4: ``kv_sharing_target_layer_name``, V1 only) get no spec and hold no
    pages (vllm/v1/worker/gpu_model_runner.py ``GPUModelRunner.get_kv_cache_spec``)."""
    counts: dict[tuple[str, int, int], int] = {}
    for g in spec.layer_groups:
        a = g.attention
        if a is None or a.kv_shared or not a.causal or g.cached_runs == 0:
            continue
        kind = ("chunked" if a.chunked else "sliding") if a.window else "full"
        width = a.kv_latent_dim or kv_heads_per_rank(a.kv_heads, tp) * (a.qk_head_dim
                                                                         + a.v_head_dim)
        key = (kind, a.window or 0, width)
        counts[key] = counts.get(key, 0) + g.cached_runs
    if len({k[:2] for k in counts}) < 2:
        return None
    widest = max(k[2] for k in counts)
    if len({k[2] for k in counts}) > 1 and ver < MIXED_PAGES_FROM:
        raise UsageError("--engine vllm==" + ".".join(map(str, ver)) + f": {spec.name} mixes "
                         "attention layers of different cache widths, whose pages vLLM's hybrid "
                         "allocator before 0.11 does not unify; use --engine vllm==0.11 or later")
    if any(widest % k[2] for k in counts):
        raise UsageError(f"--engine vllm: {spec.name}: The page size of the layer is not "
                         "divisible by the maximum page size. Cannot unify by adjusting "
                         "block_size. (vLLM's unify_kv_cache_spec_page_size refuses its mix of "
                         "cache widths " + ", ".join(str(w) for w in sorted({k[2] for k in counts}))
                         + ")")
    group = min(counts.values())
    if max(counts.values()) < group * 1.25:
        group = max(counts.values())
    in_flight = batched * (IN_FLIGHT_BATCHES if ver >= IN_FLIGHT_FROM else 1)
    per_request = slots = 0
    for (kind, window, width), n in counts.items():
        groups = -(-n // group)
        slots += groups * group
        size = block * (widest // width)
        if kind == "full":
            held = -(-model_len // size)
        elif kind == "sliding":
            held = -(-min(window - 1 + in_flight, model_len) // size) + 1
        else:
            held = -(-min(window + in_flight, model_len) // size)
        per_request += groups * held
    return group, per_request, slots, Fraction(widest, sum(k[2] * n for k, n in counts.items()))


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




def defaults(acc: Accelerator) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) `vllm serve` takes on this card (V1)."""
    large = cuda_memory(acc) >= LARGE_CARD and "a100" not in acc.key
    return SERVE_DEFAULTS[large]


def state_cache_mode(spec: ModelSpec, mixers: set[str], ver: tuple[int, ...],
                     prefix_caching: bool | None, mode: str | None) -> str:
    """vLLM's mamba_cache_mode for these settings (models/config.py
    ``MambaModelConfig.verify_and_update_config``): "none" without prefix caching (off by
    default for hybrids until STATE_ALIGN_DEFAULT_FROM; the gated-delta rows, which run with it,
    "align"); with it the mode given, else "all" for Mamba/Mamba-2 models (which support it),
    "align" for the others; before MAMBA_PREFIX_CACHING_FROM vLLM turns it off for Mamba models."""
    if mode is not None and mode not in MAMBA_CACHE_MODES:
        raise UsageError(f"--mamba-cache-mode {mode}: expected none, align or all")
    if mixers == {GATED_DELTA}:
        on = True if prefix_caching is None else prefix_caching
    else:
        on = (ver >= STATE_ALIGN_DEFAULT_FROM if prefix_caching is None else prefix_caching) \
            and ver >= MAMBA_PREFIX_CACHING_FROM
    if not on:
        return "none"
    supports_all = bool(mixers) and mixers <= {MAMBA, MAMBA2}
    if mode is None or mode == "none":
        return "all" if supports_all and ver < STATE_ALIGN_DEFAULT_FROM else "align"
    return "align" if mode == "all" and not supports_all else mode


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
    enable_prefix_caching: bool | None = None,
    mamba_cache_mode: str | None = None,
    mamba_ssm_cache_dtype: str | None = None,
) -> EngineBudget:
    """vLLM's budget on one GPU of ``accelerator`` with these settings (None: vLLM's default).
    ``enable_prefix_caching``, ``mamba_cache_mode``, ``mamba_ssm_cache_dtype`` matter for models
    with recurrent layers only (MAMBA_PREFIX_CACHING_FROM, ssm_state_bytes)."""
    ver = version_tuple(version, VERSION)
    v1 = ver >= V1_FROM and not v0_fallback(ver, accelerator, dtype)
    mixers = {g.mixer.kind for g in spec.layer_groups if g.mixer is not None}
    runs(spec, ver)
    refused = recurrent_refusal(spec, ver)
    if refused is not None:
        raise UsageError(refused)
    hybrid = bool(mixers) and (ver >= MAMBA_V1_FROM or mixers == {GATED_DELTA})
    v0_states = bool(mixers) and not hybrid
    if v1 and v0_states:  # a Mamba hybrid before 0.10.2: vLLM runs it on V0
        v1 = False
    if not mixers:
        not_modelled(spec, "vllm")
    refuse_unfollowed_sparse(spec, "vllm")
    sparse = sparse_mla_bytes(spec, kv_dtype=kv_dtype, ver=ver, acc=accelerator)
    util = fraction(gpu_memory_utilization if gpu_memory_utilization is not None
                    else next(u for since, u in DEFAULT_UTILIZATION_FROM.items() if ver >= since),
                    "--gpu-memory-utilization")
    block = SPARSE_MLA_BLOCK if sparse is not None else block_size or DEFAULT_BLOCK_SIZE
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
    if v0_states:  # V0's MambaCacheManager (MAMBA_V1_FROM above)
        graph_seqs = seqs if enforce_eager or seqs <= 2 else 4 if seqs <= 4 else -(-seqs // 8) * 8
        act_bytes = 4 if "32" in str(getattr(dtype, "value", dtype)) else 2
        terms["mamba_cache"] = graph_seqs * sum(
            g.cached_runs * state_page(spec, g.mixer, tp=tp, act_bytes=act_bytes, ver=ver)
            for g in spec.layer_groups if g.mixer is not None)
    per_token = (sparse if sparse is not None
                 else kv_bytes_per_token_rank(spec, tp=tp, kv_dtype=kv_dtype))
    layers = kv_layers(spec)
    attention_groups, mamba_groups = 1, 0
    windows = (window_layout(spec, tp=tp, model_len=model_len, batched=batched, block=block,
                             ver=ver)
               if v1 and ver >= WINDOW_GROUPS_FROM and not hybrid and sparse is None else None)
    mode = state_cache_mode(spec, mixers, ver, enable_prefix_caching, mamba_cache_mode)
    state_pages = 1 if mode == "none" else MAMBA_PAGES_PER_REQUEST
    if hybrid:
        act_bytes = 4 if "32" in str(getattr(dtype, "value", dtype)) else 2
        per_layer = per_token // layers if layers else 0
        chunk = max((g.mixer.chunk or 0) for g in spec.layer_groups if g.mixer is not None) \
            if mode == "all" else 0
        block, page, layers, attention_groups, mamba_groups = hybrid_layout(
            spec, tp=tp, per_token_layer=per_layer, act_bytes=act_bytes, ver=ver,
            ssm_dtype=mamba_ssm_cache_dtype,
            chunk_align=math.lcm(chunk or 1, HYBRID_BLOCK_ALIGN) if mode == "all" else 0)
        if not block:  # a pure SSM: one state page a request, its block max_model_len tokens
            block, attention_groups = model_len, 0
        elif block_size and block_size > block:  # a larger --block-size is kept as given
            block, page = block_size, block_size * per_layer
    elif sparse is not None:  # the latent and indexer layers: one UniformTypeKVCacheSpecs group
        page, layers = block * per_token, 1
    else:
        page = block * (per_token // layers) if v1 else block * per_token  # V1: one layer's page
        if v1 and layers and per_token % layers:
            # one attention type, layers of different widths (UniformTypeKVCacheSpecs): one group,
            # a block costs the sum of the layers' pages (kv_cache_utils.py
            # get_kv_cache_config_from_groups: available // that sum)
            page, layers = block * per_token, 1
    available = kv_memory if kv_memory is not None else requested - sum(terms.values())
    # kv_cache_utils.get_max_concurrency_for_kv_cache_config: the blocks one request holds, its
    # attention pages plus each mamba group's state pages; a hybrid's logged token count is
    # _report_kv_cache_config's int(max_concurrency × max_model_len) (before 0.20:
    # num_blocks // groups × block_size)
    if mode == "all":  # a state page per block of the request's length
        state_pages = -(-model_len // block)
    per_request = (attention_groups * -(-model_len // block) + mamba_groups * state_pages)
    groups = attention_groups + mamba_groups
    if windows is not None:
        layers, per_request, slots, share = windows
        page = block * int(per_token * share)  # the widest type's page (MIXED_PAGES_FROM)
        groups = slots // layers
    blocks = max(available, 0) // page // (layers if v1 else 1)
    tokens = blocks * block
    concurrency = blocks / per_request if v1 else tokens / model_len
    # _report_kv_cache_config's rule before 0.20 holds for every multi-group layout, the window
    # groups too: gpt-oss-120b on vLLM 0.10.1.1 (18 full + 18 sliding layers, 2 groups) logged
    # 2,640,144 tokens = num_blocks // 2 × 16 at 284.25x of 16,384, where int(284.25 × 16,384)
    # would be 4,657,152
    if (hybrid or windows is not None) and ver < HYBRID_TOKENS_FROM_CONCURRENCY:
        tokens = blocks // groups * block
    elif hybrid or windows is not None:
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
    if sparse is not None and kv_dtype == DType.bf16:  # not "auto" (SPARSE_MLA_FROM above)
        settings["kv_cache_dtype"] = "bfloat16"
    for key, value in (("enable_prefix_caching", enable_prefix_caching),
                       ("mamba_cache_mode", mamba_cache_mode),
                       ("mamba_ssm_cache_dtype", mamba_ssm_cache_dtype)):
        if value is not None:  # given: named in the settings and the command
            settings[key] = value
    return EngineBudget(
        engine="vllm", version=".".join(map(str, ver)), cuda_memory_bytes=total,
        usable_bytes=requested, terms=terms, kv_cache_bytes=max(available, 0),
        bytes_per_token=per_token, block_tokens=block, kv_cache_tokens=tokens,
        max_model_len=model_len, max_concurrency=concurrency, settings=settings,
        command=command(spec, settings, kv_dtype=kv_dtype, dtype=dtype),
        refusal=refusal, from_log=kv_memory is not None,
        tokens_rule=(f"blocks // {groups} groups × {block}"
                     if (hybrid or windows is not None) and ver < HYBRID_TOKENS_FROM_CONCURRENCY
                     else f"concurrency × max_model_len, blocks of {block}"
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
    if s.get("kv_cache_dtype"):
        parts.append(f"--kv-cache-dtype {s['kv_cache_dtype']}")
    elif kv_dtype.value.startswith("fp8"):
        parts.append("--kv-cache-dtype fp8")
    if s["enforce_eager"]:
        parts.append("--enforce-eager")
    if s.get("enable_prefix_caching"):
        parts.append("--enable-prefix-caching")
    for key in ("mamba_cache_mode", "mamba_ssm_cache_dtype"):
        if s.get(key) is not None:
            parts.append(f"--{key.replace('_', '-')} {s[key]}")
    return " ".join(parts)
