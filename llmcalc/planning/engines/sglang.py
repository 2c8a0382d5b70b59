"""SGLang's KV cache budget (``fit --engine sglang``), read from its source, by version.

Followed: SGLang 0.5.9 (python/sglang/srt; ``--engine sglang==0.4.0`` … ``==0.5.6`` take the
rules of the newest release read at or below it: 0.4.0, 0.4.3, 0.4.6, 0.4.9, 0.5.1, 0.5.3, 0.5.6,
0.5.9). The pool (0.5.9 srt/model_executor/model_runner_kv_cache_mixin.py
``profile_max_num_token``; 0.4 model_runner.py, the same arithmetic)::

    total       = free memory after start-up (ModelRunner.init_torch_distributed, GiB)
    rest        = (free memory after the weights load) − total × (1 − mem_fraction_static)
    cell_size   = kv_heads_per_rank × (head_dim + v_head_dim) × layers × dtype_bytes
                  (MLA: (kv_lora_rank + qk_rope_head_dim) × layers × dtype_bytes)
    max_total_num_tokens = int(rest × 2³⁰) // cell_size, then whole pages of page_size

``mem_fraction_static``'s default by release (srt/server_args.py), from the card's memory in MiB
and tp (``default_mem_fraction_static``); a vision-language model's default is lowered
(``adjust_mem_fraction_for_vlm``). Sliding-window models split the tokens between a full and a
sliding pool (``set_num_tokens_hybrid_swa``), recurrent hybrids set a mamba state pool aside first
(``handle_max_mamba_cache``). What start-up and loading take beyond the weights (the CUDA context,
NCCL and the custom all-reduce with tp > 1 on NVLink) are estimates from logs. ``kv_memory`` (from
``--kv-memory``) is the KV pool's logged K + V (both pools of a sliding-window model)."""

from __future__ import annotations

from llmcalc.errors import UsageError
from llmcalc.formulas.quant import WeightFormat
from llmcalc.model.spec import GATED_DELTA, MAMBA2, ModelSpec
from llmcalc.planning.engines.budget import (
    EngineBudget,
    cuda_memory,
    fraction,
    kv_bytes_per_token_rank,
    kv_elements_per_token_rank,
    kv_heads_per_rank,
    not_modelled,
    refuse_unfollowed_sparse,
    version_tuple,
    weights_per_gpu,
)
from llmcalc.planning.hardware import DEFAULT_INTERCONNECT, Accelerator, GiB
from llmcalc.units import DType, nbytes

VERSION = "0.5.9"
MiB = 1 << 20
DEFAULT_PAGE_SIZE = 1  # server_args.py ServerArgs.page_size
# server_args.py _handle_gpu_memory_settings (0.5.3 on): (below this many MiB, chunked_prefill_size,
# cuda_graph_max_bs with tp < 4, with tp ≥ 4); 0.5.3 took 16 where 0.5.6 takes 24 below 35 GiB
CARD_DEFAULTS = (
    (20 * 1024, 2048, 8, 8),
    (35 * 1024, 2048, 24, 80),
    (60 * 1024, 4096, 32, 160),
    (90 * 1024, 8192, 256, 512),
    (160 * 1024, 8192, 256, 512),
)
LARGEST_CARD = (16384, 512, 512)
# What start-up holds before the weights load (the card's total less "Load weight begin. avail
# mem"): the CUDA context, 0.38 GiB on an H100 at tp 1 (SGLang's quick-start log: 78.81 free of
# 79.19) and 0.40 on 4 PCIe L4s (llms-in-clouds: 21.63 free of 22.03, NCCL's 0.13 GB within it:
# SGLang's custom all-reduce stays off without NVLink); with tp > 1 on NVLink cards NCCL and the
# custom all-reduce add about 2.2 GiB (sglang#11716, 8 H200s: 137.29–137.52 free of 140.06).
STARTUP = int(0.4 * GiB)
STARTUP_NVLINK = int(2.2 * GiB)
# What loading holds beyond the weights ("Load weight end ... mem usage" less the checkpoint's share):
# 0.13 GiB for Llama-3.1-8B on an H100 (15.09 − 14.96, SGLang's quick start), 0.28 for QwQ-32B
# on 4 L4s (15.54 − 15.26): llmcalc takes 0.2 GiB (rotary tables, workspaces; an estimate)
LOAD_EXTRA = int(0.2 * GiB)
# 0.4.0–0.4.8 server_args.py __post_init__: the default fraction by tp alone (tp ≥ 16, 8, 4, 2, 1)
TP_TABLE = ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87), (1, 0.88))
# 0.5.1 on: swa_full_tokens_ratio (server_args.py), mamba_full_memory_ratio (0.5.6 on)
SWA_FULL_TOKENS_RATIO = 0.8
MAMBA_FULL_MEMORY_RATIO = 0.9
MAMBA_FIXED_SLOTS = 512  # 0.5.3 model_runner.py: max_mamba_cache_size without max_running_requests
# model_runner_kv_cache_mixin.py MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO (0.5.6 on; 0.5.3: 1)
MAMBA_SLOTS_PER_REQUEST = 3
NSA_QUANT_BLOCK = 128  # memory_pool.py NSATokenToKVPool.quant_block_size
NSA_PAGE_SIZE = 64  # server_args.py: "Setting page size to 64 for DeepSeek DSA" (CUDA)
# 0.5.9 model_config.py is_hybrid_swa_model: the architectures given a sliding pool
SWA_ARCHS = ("gpt_oss", "llama4", "llama4_text")


def nvlink(acc: Accelerator) -> bool:
    """Whether the card's GPUs are NVLink peers (hardware.json's link)."""
    return DEFAULT_INTERCONNECT.get(acc.key, "").startswith("nvlink")




def card_defaults(gpu_mem_mib: float, tp: int, version: tuple[int, ...] = (0, 5, 9)
                  ) -> tuple[int, int]:
    """(chunked_prefill_size, cuda_graph_max_bs) SGLang picks for a card of this many MiB."""
    if version < (0, 4, 9):  # 0.4.0–0.4.8: one threshold at 25,000 MiB
        return (2048, 8) if gpu_mem_mib < 25_000 else (8192, 160)
    if version < (0, 5, 3):  # 0.4.9–0.5.2
        chunk = 2048 if gpu_mem_mib < 35 * 1024 else 8192 if gpu_mem_mib < 160 * 1024 else 16384
        return chunk, 160
    for below, chunk, small, large in CARD_DEFAULTS:
        if gpu_mem_mib < below:
            if version < (0, 5, 6) and below == 35 * 1024 and tp < 4:
                small = 16
            return chunk, small if tp < 4 else large
    return LARGEST_CARD[0], LARGEST_CARD[1]


def default_mem_fraction_static(gpu_mem_mib: float, *, tp: int, chunked_prefill_size: int,
                                cuda_graph_max_bs: int,
                                version: tuple[int, ...] = (0, 5, 9)) -> float:
    """server_args.py's default (no DP attention, no speculative decoding), by release:
    0.4.0–0.4.5 a table by tp; 0.4.6–0.4.8 the same up to 81,920 MiB and (mem − 13 GiB) / mem
    above; 0.4.9–0.5.2 a reserve by card class, (9.5 + tp/2) GiB on an 80 GB card; 0.5.3 on
    ``_handle_gpu_memory_settings``'s reserve from chunked_prefill_size and cuda_graph_max_bs."""
    if version < (0, 4, 9):
        if version >= (0, 4, 6) and gpu_mem_mib > 81920:
            return (gpu_mem_mib - 1024 * 13) / gpu_mem_mib
        return next(f for least, f in TP_TABLE if tp >= least)
    if version < (0, 5, 3):
        if gpu_mem_mib < 35 * 1024:
            gib = 2.8 + tp / 10
        elif gpu_mem_mib < 90 * 1024:
            gib = 9.5 + tp / 2
        elif gpu_mem_mib < 160 * 1024:
            gib = 12 + tp / 2
        else:
            gib = 32
        return round((gpu_mem_mib - gib * 1024) / gpu_mem_mib, 3)
    reserved = 512 + max(chunked_prefill_size, 2048) * 1.5 + cuda_graph_max_bs * 2 + tp / 8 * 1024
    if gpu_mem_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((gpu_mem_mib - reserved) / gpu_mem_mib, 3)


def vision_factor(spec: ModelSpec, version: tuple[int, ...]) -> float:
    """What a vision-language model's default fraction is multiplied by (1: not one):
    0.4.9 takes 0.90; 0.5.1 on server_args.py ``adjust_mem_fraction_for_vlm``: 0.95 × (1 − 0.1 ×
    (the ViT's num_hidden_layers × hidden_size² / (24 × 1024²) − 1)), that second factor held to
    0.8–1.05, with 24 layers and 1024 wide where the vision config does not name them
    (``getattr(vision_config, "num_hidden_layers", 24)``: Qwen2.5-VL's config says ``depth``, so 24
    — sglang#11830's log: 0.851 × 0.95 × (1 − 0.1 × (1280² / 1024² − 1)) = 0.7629746875)."""
    vision = spec.config.get("vision_config")
    if not isinstance(vision, dict) or version < (0, 4, 9):
        return 1.0
    if version < (0, 5, 1):
        return 0.90
    layers = vision.get("num_hidden_layers") or 24
    hidden = vision.get("hidden_size") or 1024
    ratio = layers * hidden ** 2 / (24 * 1024 ** 2)
    return 0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))


def swa_bytes(spec: ModelSpec, version: tuple[int, ...], *, tp: int,
              kv_dtype: DType) -> tuple[int, int]:
    """(full, sliding) KV bytes a token takes on one rank where SGLang gives the sliding-window
    layers their own pool, else (all, 0). 0.5.1–0.5.8: every model whose layers have a sliding
    window (Gemma 2/3, gpt-oss; model_runner.py, not Llama 4); 0.5.9: the architectures of
    ``is_hybrid_swa_model`` (gpt-oss, Llama 4's chunked layers)."""
    full = swa = 0
    for g in spec.layer_groups:
        a = g.attention
        if a is None or a.kv_shared or not a.causal:
            continue
        cached = g.cached_runs * (a.kv_latent_dim if a.kv_latent_dim is not None
                                  else kv_heads_per_rank(a.kv_heads, tp)
                                  * (a.qk_head_dim + a.v_head_dim))
        if a.window is not None:
            swa += cached
        else:
            full += cached
    full, swa = nbytes(full, kv_dtype), nbytes(swa, kv_dtype)
    model_type = str(spec.config.get("model_type", ""))
    if version < (0, 5, 1) or not swa or not full:
        return full + swa, 0
    if version < (0, 5, 9):
        return (full + swa, 0) if model_type.startswith("llama4") else (full, swa)
    return (full, swa) if model_type in SWA_ARCHS else (full + swa, 0)


def indexer_bytes(spec: ModelSpec) -> int:
    """Bytes a token adds to DeepSeek sparse attention's (NSA) indexer keys, every layer:
    index_head_dim fp8 values and a float32 scale per 128 (model_runner_kv_cache_mixin.py
    ``get_cell_size_per_token``: index_head_dim + index_head_dim // 128 × 4, uint8)."""
    total = 0
    for g in spec.layer_groups:
        a = g.attention
        if a is not None and a.kv_latent_dim is not None and a.topk and a.index_key_dim:
            total += g.cached_runs * (a.index_key_dim + a.index_key_dim // NSA_QUANT_BLOCK * 4)
    return total


def mamba_state_per_request(spec: ModelSpec, tp: int) -> int:
    """Bytes one request's recurrent state takes on one rank, every recurrent layer
    (configs/mamba_utils.py ``Mamba2StateShape.create``, ``mamba_cache_per_req``): the conv state
    conv_dim/tp × (kernel − 1) in bf16 and the temporal state heads/tp × head_dim × state_size in
    mamba_ssm_dtype (float32 unless the config says bfloat16)."""
    text = spec.config.get("text_config")
    cfg = text if isinstance(text, dict) else spec.config
    ssm_bytes = 2 if cfg.get("mamba_ssm_dtype") in ("bfloat16", "float16") else 4
    total = 0
    for g in spec.layer_groups:
        m = g.mixer
        if m is None:
            continue
        total += g.cached_runs * ((m.conv_dim // tp) * (m.conv_kernel - 1) * 2
                                  + (m.heads // tp) * m.head_dim * m.state_size * ssm_bytes)
    return total


def plan(
    spec: ModelSpec,
    *,
    accelerator: Accelerator,
    dtype: WeightFormat,
    kv_dtype: DType,
    tp: int = 1,
    version: str | None = None,
    mem_fraction_static: float | None = None,
    chunked_prefill_size: int | None = None,
    max_running_requests: int | None = None,
    page_size: int | None = None,
    context_length: int | None = None,
    kv_memory: int | None = None,
) -> EngineBudget:
    """SGLang's pool on one GPU of ``accelerator`` (None: SGLang's default)."""
    refuse_unfollowed_sparse(spec, "sglang")
    ver = version_tuple(version, VERSION)
    mixers = {g.mixer.kind for g in spec.layer_groups if g.mixer is not None}
    recurrent = bool(mixers)
    if recurrent and not (mixers <= {GATED_DELTA, MAMBA2} and ver >= (0, 5, 3)):
        if mixers <= {GATED_DELTA, MAMBA2}:
            raise UsageError(f"--engine sglang=={'.'.join(map(str, ver))}: SGLang gives "
                             f"{spec.name}'s recurrent state a pool from 0.5.3 "
                             "(HybridReqToTokenPool)")
        not_modelled(spec, "sglang")
    if kv_elements_per_token_rank(spec, tp=1) == 0:
        not_modelled(spec, "sglang")
    total = cuda_memory(accelerator)
    gpu_mem = total / MiB
    chunk, graph_bs = card_defaults(gpu_mem, tp, ver)
    chunk = chunked_prefill_size or chunk
    if mem_fraction_static is not None:
        mfs = fraction(mem_fraction_static, "--mem-fraction-static")
    else:
        default = default_mem_fraction_static(gpu_mem, tp=tp, chunked_prefill_size=chunk,
                                              cuda_graph_max_bs=graph_bs, version=ver)
        mfs = fraction(default * vision_factor(spec, ver), "--mem-fraction-static")
    indexer = indexer_bytes(spec) if ver >= (0, 5, 3) else 0
    page = page_size or (NSA_PAGE_SIZE if indexer else DEFAULT_PAGE_SIZE)
    if page < 1:
        raise UsageError(f"--page-size {page}: must be 1 or more")
    context = context_length or spec.shape.max_position_embeddings or 2048
    startup = STARTUP + (STARTUP_NVLINK if tp > 1 and nvlink(accelerator) else 0)
    after_start = total - startup  # profile_max_num_token's total_gpu_memory
    terms = {
        "startup": startup,
        "reserved": int(after_start * (1 - mfs)),  # activations, CUDA graphs: outside the pool
        "weights": weights_per_gpu(spec, dtype=dtype, tp=tp),
        "load_extra": LOAD_EXTRA,
    }
    full, swa = swa_bytes(spec, ver, tp=tp, kv_dtype=kv_dtype)
    cell = kv_bytes_per_token_rank(spec, tp=tp, kv_dtype=kv_dtype) + indexer
    rest = total - sum(terms.values())
    slots = 0
    if recurrent and kv_memory is None:
        per_request = mamba_state_per_request(spec, tp)
        if ver < (0, 5, 6):
            slots = max_running_requests or MAMBA_FIXED_SLOTS
        else:
            slots = int(max(rest, 0) * MAMBA_FULL_MEMORY_RATIO / (1 + MAMBA_FULL_MEMORY_RATIO)
                        // per_request)
        terms["mamba_state"] = slots * per_request
        rest -= terms["mamba_state"]
    if kv_memory is not None:
        rest = kv_memory
    tokens = max(rest, 0) // cell // page * page
    swa_tokens = 0
    if swa:
        # set_num_tokens_hybrid_swa: the pool's bytes (whole tokens of every layer, or the logged
        # K + V of both pools) split so the sliding pool holds swa_full_tokens_ratio of the full
        # pool's tokens: full = bytes / (F + ratio × S), F and S a token's full and sliding bytes
        pool = max(rest, 0) if kv_memory is not None else max(rest, 0) // cell * cell
        tokens = int(pool / (full + SWA_FULL_TOKENS_RATIO * swa)) // page * page
        swa_tokens = int(tokens * SWA_FULL_TOKENS_RATIO) // page * page
    requests = max_running_requests or min(max(int(tokens / context * 512), 2048), 4096)
    if recurrent and slots and not max_running_requests:
        requests = min(requests, slots // (MAMBA_SLOTS_PER_REQUEST if ver >= (0, 5, 6) else 1))
    refusal = None
    if tokens <= 0:
        refusal = ("Not enough memory. Please try to increase --mem-fraction-static. "
                   f"Current value: self.server_args.mem_fraction_static={float(mfs)}")
    settings: dict[str, object] = {
        "tp_size": tp, "mem_fraction_static": float(mfs), "chunked_prefill_size": chunk,
        "cuda_graph_max_bs": graph_bs, "max_running_requests": requests, "page_size": page,
        "context_length": context,
    }
    if swa:
        settings["swa_full_tokens_ratio"] = SWA_FULL_TOKENS_RATIO
        settings["swa_layer_tokens"] = swa_tokens
    if slots:
        settings["max_mamba_cache_size"] = slots
    kv_bytes = max(rest, 0)
    return EngineBudget(
        engine="sglang", version=".".join(map(str, ver)), cuda_memory_bytes=total,
        usable_bytes=total, terms=terms, kv_cache_bytes=kv_bytes, bytes_per_token=cell,
        block_tokens=page, kv_cache_tokens=tokens, max_model_len=context,
        max_concurrency=tokens / context, settings=settings,
        command=command(spec, settings, kv_dtype=kv_dtype), refusal=refusal,
        from_log=kv_memory is not None,
        tokens_rule=(f"full-attention pool; the sliding pool holds {swa_tokens:,}" if swa
                     else ""),
    )


def command(spec: ModelSpec, s: dict[str, object], *, kv_dtype: DType) -> str:
    """The `python -m sglang.launch_server` line with these settings."""
    model = spec.origin.repo_id if spec.origin and spec.origin.repo_id else spec.name
    parts = [f"python -m sglang.launch_server --model-path {model}", f"--tp {s['tp_size']}",
             f"--mem-fraction-static {s['mem_fraction_static']}",
             f"--context-length {s['context_length']}",
             f"--chunked-prefill-size {s['chunked_prefill_size']}",
             f"--max-running-requests {s['max_running_requests']}",
             f"--page-size {s['page_size']}"]
    if kv_dtype.value.startswith("fp8"):
        parts.append("--kv-cache-dtype fp8_e4m3")
    return " ".join(parts)
