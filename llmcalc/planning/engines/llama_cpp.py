"""llama.cpp's own rules: the buffers it allocates for a GGUF (model, KV K/V, recurrent state) and
where it places them, read from llama-cpp-python 0.3.36's ``vendor/llama.cpp`` (cited below as
``src/<file>: <function>``). Pure: a GGUF header and the engine's parameters in, bytes out.

The compute buffer (the graph's scratch, ``sched_reserve``) is llama_cpp_graph's: the engine's
reserved graphs walked through ggml's allocator, on the CPU backend; with layers on a GPU it is
reported as unknown (None), never guessed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llmcalc.errors import UsageError
from llmcalc.inputs.gguf_file import GgufHeader

VERSION = "0.3.36"  # llama-cpp-python; its vendor/llama.cpp is the source cited below

# common/arg.cpp: kv_cache_types — the cache types -ctk/-ctv accept
CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")
FLASH_ATTN = ("on", "off", "auto")
# ggml/src/ggml-cpu/ggml-cpu.c: the CPU buffer type's alignment (TENSOR_ALIGNMENT)
CPU_ALIGNMENT = 32


@dataclass(frozen=True)
class Params:
    """llama-server's flags that size the buffers; defaults as common/common.h sets them."""

    n_ctx: int = 4096
    n_batch: int = 2048
    n_ubatch: int = 512
    type_k: str = "f16"
    type_v: str = "f16"
    flash_attn: str = "auto"
    n_gpu_layers: int = 0
    swa_full: bool = False
    n_parallel: int = 1
    kv_unified: bool = False
    mmap: bool = True
    build: int | None = None  # a llama.cpp build (b5935 → 5935): the padding rule it used
    offload_kqv: bool = True  # -nkvo: False, the KV cache of every layer in host memory
    split_mode: str = "layer"  # -sm: layer or row (layers split over the GPUs), none (one GPU)


@dataclass(frozen=True)
class Hparams:
    """What llama.cpp's load_hparams reads from a GGUF's metadata, per layer where it varies."""

    arch: str
    n_layer: int
    n_embd: int
    n_head: tuple[int, ...]
    n_head_kv: tuple[int, ...]
    head_k: int
    head_v: int
    n_swa: int
    is_swa: tuple[bool, ...]
    is_recr: tuple[bool, ...]
    n_embd_r: int
    n_embd_s: int


def _per_layer(meta: Mapping[str, Any], key: str, n_layer: int, default: int,
               label: str) -> tuple[int, ...]:
    # src/llama-model-loader.cpp: get_key_or_arr — a scalar or one value per layer
    value = meta.get(key, default)
    if isinstance(value, list):
        if len(value) != n_layer:
            raise UsageError(f"{label}: GGUF metadata {key}: {len(value)} values for "
                             f"{n_layer} layers")
        return tuple(int(v) for v in value)
    return (int(value),) * n_layer


def _swa_pattern(n_layer: int, n_pattern: int, dense_first: bool = False) -> tuple[bool, ...]:
    # src/llama-hparams.cpp: llama_hparams::set_swa_pattern
    if dense_first:
        return tuple(n_pattern == 0 or il % n_pattern != 0 for il in range(n_layer))
    return tuple(n_pattern == 0 or il % n_pattern < n_pattern - 1 for il in range(n_layer))


RECURRENT = ("mamba",)  # src/llama-arch.cpp: llm_arch_is_recurrent (the ones counted here)
SUPPORTED = ("llama", "qwen2", "qwen3", "qwen2moe", "qwen3moe", "phi3", "gemma2", "gemma3",
             "lfm2", "mamba")


def hparams(header: GgufHeader) -> Hparams:
    """The hyperparameters that size llama.cpp's caches, from the GGUF's metadata."""
    meta = header.metadata
    arch = header.architecture
    if arch not in SUPPORTED:
        raise UsageError(f"{header.label}: general.architecture {arch!r} is not one llmcalc "
                         f"follows llama.cpp for ({', '.join(SUPPORTED)})")

    def key(name: str) -> str:
        return f"{arch}.{name}"

    if key("block_count") not in meta or key("embedding_length") not in meta:
        raise UsageError(f"{header.label}: GGUF metadata {key('block_count')} or "
                         f"{key('embedding_length')} is missing")
    n_layer = int(meta[key("block_count")])
    n_embd = int(meta[key("embedding_length")])
    recurrent = arch in RECURRENT
    # src/llama-model.cpp: llama_model::load_hparams — head counts default to 0 for recurrent models
    n_head = _per_layer(meta, key("attention.head_count"), n_layer, 0 if recurrent else 1,
                        header.label)
    n_head_kv = _per_layer(meta, key("attention.head_count_kv"), n_layer, n_head[0],
                           header.label)
    n_head_kv = tuple(kv if key("attention.head_count_kv") in meta else h
                      for kv, h in zip(n_head_kv, n_head, strict=True))
    # the head size: n_embd / n_head unless key_length / value_length say otherwise
    base = n_embd // n_head[0] if n_head[0] else 0
    head_k = int(meta.get(key("attention.key_length"), base))
    head_v = int(meta.get(key("attention.value_length"), base))
    n_swa = int(meta.get(key("attention.sliding_window"), 0))
    is_swa: tuple[bool, ...] = (False,) * n_layer
    pattern = meta.get(key("attention.sliding_window_pattern"))
    if arch == "gemma2":  # src/models/gemma2.cpp: load_arch_hparams (n_swa 4096, pattern 2)
        n_swa = n_swa or 4096
        is_swa = _swa_layers(pattern, n_layer, 2)
    elif arch == "gemma3" and n_swa > 0:  # src/models/gemma3.cpp: load_arch_hparams (pattern 6)
        is_swa = _swa_layers(pattern, n_layer, 6)
    elif arch == "phi3":  # src/models/phi3.cpp: load_arch_hparams — Phi's SWA is disabled
        n_swa = 0
    elif arch not in ("gemma3", "lfm2"):
        n_swa = 0  # the other architectures counted here read no sliding window
    is_recr: tuple[bool, ...] = (recurrent,) * n_layer
    n_embd_r = n_embd_s = 0
    if arch == "lfm2":
        # src/models/lfm2.cpp: load_arch_hparams — a layer without KV heads is a short conv;
        # src/llama-hparams.cpp: n_embd_r = n_embd × (L_cache − 1), n_embd_s = 0
        is_recr = tuple(kv == 0 for kv in n_head_kv)
        if n_swa > 0:  # every attention layer slides
            is_swa = tuple(not r for r in is_recr)
        l_cache = int(meta.get(key("shortconv.l_cache"), 0))
        n_embd_r = n_embd * (l_cache - 1)
    elif recurrent:
        # src/llama-hparams.cpp: n_embd_r = (d_conv − 1)(d_inner + 2·n_group·d_state),
        # n_embd_s = d_state × d_inner
        d_conv = int(meta.get(key("ssm.conv_kernel"), 0))
        d_inner = int(meta.get(key("ssm.inner_size"), 0))
        d_state = int(meta.get(key("ssm.state_size"), 0))
        n_group = int(meta.get(key("ssm.group_count"), 0))
        n_embd_r = (d_conv - 1 if d_conv > 0 else 0) * (d_inner + 2 * n_group * d_state)
        n_embd_s = d_state * d_inner
    return Hparams(arch, n_layer, n_embd, n_head, n_head_kv, head_k, head_v, n_swa, is_swa,
                   is_recr, n_embd_r, n_embd_s)


def _swa_layers(pattern: Any, n_layer: int, default: int) -> tuple[bool, ...]:
    # src/llama-model.cpp: llama_model_base::load_swa_pattern — an array of flags, or a period
    if isinstance(pattern, list):
        return tuple(bool(v) for v in pattern)
    return _swa_pattern(n_layer, int(pattern) if pattern is not None else default)


def _pad(x: int, n: int) -> int:
    return (x + n - 1) // n * n  # ggml.h: GGML_PAD


def row_bytes(type_name: str, n: int) -> int:
    """ggml_row_size: bytes of n elements of a ggml type (whole blocks)."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    block, block_bytes = GGML_QUANT_SIZES[GGMLQuantizationType[type_name.upper()]]
    if n % block:
        raise UsageError(f"a row of {n} is not whole {type_name} blocks of {block}")
    return n // block * block_bytes


def _is_quantized(type_name: str) -> bool:
    return type_name not in ("f32", "f16", "bf16")


def check_cache_blocks(hp: Hparams, p: Params, label: str) -> None:
    """src/llama-context.cpp: llama_init_from_model — with flash attention on or auto, a quantized
    K (V) cache type's block must divide every layer's K (V) head size (the engine checks the head,
    not the row of all KV heads: head 80 in q8_0 is refused even where 2 heads make whole blocks)."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    if p.flash_attn == "off":
        return
    for flag, type_name, head in (("--cache-type-k", p.type_k, hp.head_k),
                                  ("--cache-type-v", p.type_v, hp.head_v)):
        if not _is_quantized(type_name):
            continue
        block = GGML_QUANT_SIZES[GGMLQuantizationType[type_name.upper()]][0]
        if head % block:
            raise UsageError(f"{label}: {flag} {type_name}: llama.cpp refuses a cache whose "
                             f"block of {block} does not divide the head size {head} with flash "
                             "attention (--flash-attn on or auto)")


# ggml-org/llama.cpp#17046 (2025-11-06) padded the cache to 256 cells whatever the attention; it
# fixed #17058, a regression its title places in b6969, the last build llmcalc takes as older.
# Builds up to it are taken with the rule of #7257 (2024-05-13): 256 with flash attention, 32
# without (src/llama-kv-cache.cpp: get_padding), flash attention off unless -fa on (their default).
# Between #16812 (2025-10-28) and #17046 the cache was not padded at all: those few builds are
# taken as the older ones.
LAST_OLD_PADDING_BUILD = 6969


def padding(p: Params) -> int:
    """The cells llama.cpp pads n_ctx to: 256 (src/llama-context.cpp: GGML_PAD(n_ctx, 256)), or
    for a build up to b6969, 256 with flash attention on and 32 otherwise."""
    if p.build is not None and p.build <= LAST_OLD_PADDING_BUILD:
        return 256 if p.flash_attn == "on" else 32
    return 256


@dataclass(frozen=True)
class Context:
    """The context the engine settles on (src/llama-context.cpp: llama_context::llama_context)."""

    n_ctx: int
    n_ctx_seq: int
    n_seq: int
    n_stream: int
    n_batch: int
    n_ubatch: int
    flash_attn: bool
    pad: int = 256  # the cells n_ctx (and the sliding-window cache) are padded to


def context(p: Params, *, n_ctx_train: int) -> Context:
    """n_ctx padded to 256; without --kv-unified each of --parallel sequences gets n_ctx / n_seq,
    padded to 256, and n_ctx becomes their sum; n_batch ≤ the n_ctx given (unpadded),
    n_ubatch ≤ n_batch."""
    for name, value in (("--batch-size", p.n_batch), ("--ubatch-size", p.n_ubatch),
                        ("--parallel", p.n_parallel)):
        if value < 1:
            raise UsageError(f"{name} {value}: at least 1")
    if p.type_k not in CACHE_TYPES or p.type_v not in CACHE_TYPES:
        bad = p.type_k if p.type_k not in CACHE_TYPES else p.type_v
        raise UsageError(f"cache type {bad!r}: llama.cpp takes {', '.join(CACHE_TYPES)}")
    if p.flash_attn not in FLASH_ATTN:
        raise UsageError(f"--flash-attn {p.flash_attn!r}: on, off or auto")
    # src/llama-context.cpp: llama_init_from_model — a quantized V cache needs flash attention
    if _is_quantized(p.type_v) and p.flash_attn == "off":
        raise UsageError(f"--cache-type-v {p.type_v}: llama.cpp refuses a quantized V cache "
                         "without flash attention (--flash-attn on or auto)")
    n_ctx_raw = p.n_ctx if p.n_ctx > 0 else n_ctx_train
    pad = padding(p)
    n_ctx = _pad(n_ctx_raw, pad)
    n_seq = p.n_parallel
    if p.kv_unified:
        n_ctx_seq = n_ctx
    else:
        n_ctx_seq = _pad(n_ctx // n_seq, pad)
        n_ctx = n_ctx_seq * n_seq
    # causal attention: the batch is limited by n_ctx as given, before its padding
    n_batch = min(n_ctx_raw, p.n_batch)
    n_ubatch = min(n_batch, p.n_ubatch)
    # flash attention "auto" resolves to on for the CPU backend (it supports FLASH_ATTN_EXT)
    return Context(n_ctx, n_ctx_seq, n_seq, 1 if p.kv_unified else n_seq, n_batch, n_ubatch,
                   p.flash_attn != "off", pad)


@dataclass(frozen=True)
class Cache:
    """One KV cache (the full one, or the sliding-window one): cells and per-layer bytes."""

    name: str
    cells: int
    layers: tuple[int, ...]
    k_bytes: int
    v_bytes: int
    per_layer: tuple[tuple[int, int], ...] = ()  # (K, V) bytes of each of ``layers``
    widths: tuple[tuple[int, int], ...] = ()  # (K, V) row lengths (ne0) of each of ``layers``


def kv_caches(hp: Hparams, p: Params, ctx: Context) -> list[Cache]:
    """src/llama-kv-cache.cpp: llama_kv_cache::llama_kv_cache — per attention layer a K tensor
    [n_embd_k_gqa, kv_size, n_stream] and a V tensor [n_embd_v_gqa, kv_size, n_stream];
    src/llama-kv-cache-iswa.cpp: llama_kv_cache_iswa — the SWA layers' cache holds
    pad256(min(n_ctx_seq, n_swa × (unified ? n_seq : 1) + n_ubatch)) cells unless --swa-full."""
    # a layer with KV heads has a KV cache, recurrent state beside it or not (Falcon-H1's
    # layers hold both; a Mamba or short-conv layer has no KV heads)
    attn = [il for il in range(hp.n_layer) if hp.n_head_kv[il] > 0]
    if not attn:  # a recurrent model (mamba) has no KV cache at all
        return []
    swa = [il for il in attn if hp.is_swa[il]]
    full = [il for il in attn if not hp.is_swa[il]]
    size_swa = _pad(min(ctx.n_ctx_seq, hp.n_swa * (ctx.n_seq if p.kv_unified else 1)
                        + ctx.n_ubatch), ctx.pad)
    if p.swa_full:
        size_swa = ctx.n_ctx_seq
    groups = [("full", full, ctx.n_ctx_seq)]
    if swa:
        groups.append(("swa", swa, size_swa))
    out = []
    v_trans = not ctx.flash_attn
    v_max = max((hp.n_head_kv[il] * hp.head_v for il in attn), default=0)
    for name, layers, cells in groups:
        per_layer = []
        widths = []
        for il in layers:
            n_k = hp.n_head_kv[il] * hp.head_k
            # [TAG_V_CACHE_VARIABLE]: a transposed V is as wide as the widest layer's
            n_v = v_max if v_trans else hp.n_head_kv[il] * hp.head_v
            widths.append((n_k, n_v))
            per_layer.append((row_bytes(p.type_k, n_k) * cells * ctx.n_stream,
                              row_bytes(p.type_v, n_v) * cells * ctx.n_stream))
        out.append(Cache(name, cells, tuple(layers), sum(k for k, _ in per_layer),
                         sum(v for _, v in per_layer), tuple(per_layer), tuple(widths)))
    return out


def recurrent_bytes(hp: Hparams, ctx: Context) -> int:
    """src/llama-memory-recurrent.cpp: llama_memory_recurrent — per recurrent layer R [n_embd_r,
    mem_size] and S [n_embd_s, mem_size], f32, mem_size = max(1, n_seq_max)."""
    rows = max(1, ctx.n_seq)
    return sum(4 * (hp.n_embd_r + hp.n_embd_s) * rows for il in range(hp.n_layer)
               if hp.is_recr[il])


def model_buffer_bytes(header: GgufHeader, *, mmap: bool) -> int:
    """The CPU model buffer. With mmap: the file's byte range from the first tensor's data to the
    last one's end (src/llama-model.cpp: load_tensors, llama_model_loader::get_mapping_range);
    without: each tensor in its own aligned slot of one buffer
    (ggml-alloc.c: ggml_backend_alloc_ctx_tensors_from_buft); a tied output (TENSOR_DUPLICATED)
    shares token_embd's data on the CPU, no second copy (held to the engine in tests). Repacked layouts (CPU_REPACK) are
    not modelled: this is the layout without repacking."""
    if not header.tensors:
        return 0
    if mmap:
        first = min(t.offset for t in header.tensors)
        last = max(t.offset + t.nbytes for t in header.tensors)
        return last - first
    return sum(_pad(t.nbytes, CPU_ALIGNMENT) for t in header.tensors)


def gpu_layer_start(n_layer: int, n_gpu_layers: int) -> int:
    """src/llama-model.cpp: load_tensors — i_gpu_start = max(n_layer + 1 − n_gpu_layers, 0): the
    output layer counts as one of -ngl's layers and is placed first; layers ≥ i_gpu_start go to
    the GPU, the token embedding stays on the CPU."""
    return max(n_layer + 1 - n_gpu_layers, 0)


def layer_on_gpu(il: int, n_layer: int, n_gpu_layers: int) -> bool:
    """Layer il (n_layer: the output layer) on the GPU under -ngl n_gpu_layers."""
    return il >= gpu_layer_start(n_layer, n_gpu_layers)


@dataclass(frozen=True)
class Buffers:
    """What llama.cpp allocates, in bytes (CPU backend)."""

    model: int
    kv_caches: Sequence[Cache]
    recurrent: int
    context: Context

    @property
    def kv_k(self) -> int:
        return sum(c.k_bytes for c in self.kv_caches)

    @property
    def kv_v(self) -> int:
        return sum(c.v_bytes for c in self.kv_caches)

    @property
    def total(self) -> int:
        return self.model + self.kv_k + self.kv_v + self.recurrent


def buffers(header: GgufHeader, p: Params) -> Buffers:
    hp = hparams(header)
    n_ctx_train = int(header.metadata.get(f"{hp.arch}.context_length", 0) or 0)
    ctx = context(p, n_ctx_train=n_ctx_train)
    check_cache_blocks(hp, p, header.label)
    caches = kv_caches(hp, p, ctx)
    return Buffers(model_buffer_bytes(header, mmap=p.mmap), caches, recurrent_bytes(hp, ctx), ctx)


# common/common.h: LLM_FFN_EXPS_REGEX, llm_ffn_block_regex — --n-cpu-moe N keeps the experts of
# blocks 0..N-1 on the CPU, one override "blk\.<i>\.ffn_(up|down|gate|gate_up)_(ch|)exps" each
FFN_EXPS_REGEX = r"\.ffn_(up|down|gate|gate_up)_(ch|)exps"
GPU_ALIGNMENT = 128  # ggml/src/ggml-cuda/ggml-cuda.cu: ggml_backend_cuda_buffer_type_get_alignment
# ggml/src/ggml-cuda/common.cuh: MATRIX_ROW_PADDING — a quantized tensor's allocation is one row
# part longer when its rows are not whole multiples of 512 ([TAG_ALLOC_SIZE_EXPAND])
MATRIX_ROW_PADDING = 512

# src/llama-arch.cpp: LLM_TENSOR_INFOS — the layer each tensor is loaded with. The input layer
# (always the CPU), the output layer (counted as one of -ngl's), and the repeating layers' tensors
# the models create once per layer without a block number (TENSOR_DUPLICATED after layer 0).
INPUT_TENSORS = ("token_embd.", "pos_embd.", "token_types.")
OUTPUT_TENSORS = ("output.", "output_norm.", "cls.", "cls_out.", "cls_norm.", "dense_2.",
                  "dense_3.")
PER_LAYER_TENSORS = ("rope_freqs.", "rope_factors_long.", "rope_factors_short.")


def tensor_layers(name: str, n_layer: int, arch: str = "") -> tuple[int, ...]:
    """The layers whose device holds the tensor: (-1,) the input layer, (n_layer,) the output layer,
    (i,) block i; every block for the per-layer tensors created without a block number
    (src/models/llama.cpp: rope_freqs, src/models/phi3.cpp: rope_factors_long/short)."""
    if name.startswith("blk."):
        index = name.split(".")[1]
        if index.isdigit():
            return (int(index),)
    if name.startswith("token_embd_norm."):
        # lfm2 names its output norm token_embd_norm (LLM_TENSOR_OUTPUT_NORM_LFM2, an output-layer
        # tensor); elsewhere it is LLM_TENSOR_TOKEN_EMBD_NORM, created with block 0
        return (n_layer,) if arch == "lfm2" else (0,)
    if name.startswith(INPUT_TENSORS):
        return (-1,)
    if name.startswith(OUTPUT_TENSORS):
        return (n_layer,)
    if name.startswith(PER_LAYER_TENSORS):
        return tuple(range(n_layer))
    raise UsageError(f"tensor {name!r}: llmcalc does not know which layer llama.cpp loads it "
                     "with (src/llama-arch.cpp: LLM_TENSOR_INFOS)")


def overrides(n_cpu_moe: int, override_tensor: Sequence[str]) -> list[tuple[str, str]]:
    """(pattern, buffer type) in the order the engine tries them: -ot's, then --n-cpu-moe's."""
    out = []
    for item in override_tensor:
        for part in item.split(","):
            pattern, sep, buft = part.partition("=")
            if not sep or not pattern or not buft:
                raise UsageError(f"--override-tensor {part!r}: <tensor name pattern>=<buffer type>")
            out.append((pattern, buft))
    if n_cpu_moe < 0:
        raise UsageError(f"--n-cpu-moe {n_cpu_moe}: at least 0")
    out += [(rf"blk\.{i}{FFN_EXPS_REGEX}", "CPU") for i in range(n_cpu_moe)]
    return out


def placement(header: GgufHeader, n_layer: int, n_gpu_layers: int,
              rules: Sequence[tuple[str, str]] = ()) -> dict[str, str]:
    """Tensor name → "CPU" or "GPU", as src/llama-model.cpp: load_tensors assigns the layers with
    one GPU: the repeating layers from i_gpu_start and the output layer (counted as one of -ngl's)
    on the GPU, the input layer on the CPU; src/llama-model-loader.cpp: create_tensor — the first
    -ot pattern found in the name (std::regex_search) decides instead, "CPU…" keeping the tensor in
    host memory. A tensor the engine creates again for another layer (TENSOR_DUPLICATED) gets one
    copy per buffer type: a tied output loaded as the output layer (TIED), a per-layer tensor such
    as rope_freqs on each device that holds a layer (``<name> (copy)``)."""
    import re

    start = gpu_layer_start(n_layer, n_gpu_layers)
    compiled = [(re.compile(p), b) for p, b in rules]
    arch = header.architecture

    def device(name: str, il: int) -> str:
        for pattern, buft in compiled:
            if pattern.search(name):
                return "CPU" if buft.upper().startswith("CPU") else "GPU"
        return "GPU" if il >= 0 and il >= start else "CPU"

    out = {}
    for t in header.tensors:
        layers = tensor_layers(t.name, n_layer, arch)
        first = device(t.name, layers[0])
        out[t.name] = first
        if any(device(t.name, il) != first for il in layers[1:]):
            out[f"{t.name} (copy)"] = "GPU" if first == "CPU" else "CPU"
    names = {t.name for t in header.tensors}
    if "token_embd.weight" in names and ("output.weight" not in names or arch == "gemma2"):
        # a tied output: token_embd created again (TENSOR_DUPLICATED) for the output layer, a
        # second copy where the output layer is on the GPU (on the CPU it shares the data)
        out[TIED] = device("token_embd.weight", n_layer)
    return out


TIED = "token_embd.weight (output)"


def gpu_alloc_bytes(type_name: str, ne0: int, nbytes: int) -> int:
    """What one tensor takes in a CUDA buffer: ggml_backend_cuda_buffer_type_get_alloc_size (a
    quantized row padded to MATRIX_ROW_PADDING once per tensor), aligned to 128
    (ggml-alloc.c: ggml_backend_alloc_ctx_tensors_from_buft)."""
    size = nbytes
    if _is_quantized(type_name.lower()) and ne0 % MATRIX_ROW_PADDING:
        size += row_bytes(type_name, MATRIX_ROW_PADDING - ne0 % MATRIX_ROW_PADDING)
    return _pad(size, GPU_ALIGNMENT)


def model_buffers(header: GgufHeader, place: Mapping[str, str], *, mmap: bool) -> dict[str, int]:
    """Model buffer per device: the CPU's as model_buffer_bytes does it over its tensors (a GPU in
    the build puts its pinned host buffer first in the CPU's list, so nothing is repacked:
    src/llama-model.cpp: make_cpu_buft_list), the GPU's each tensor as gpu_alloc_bytes says."""
    by_name = {t.name: t for t in header.tensors}
    held: dict[str, list[Any]] = {"CPU": [], "GPU": []}
    for key, dev in place.items():
        name = TIED.split(" ")[0] if key == TIED else key.removesuffix(" (copy)")
        if key == TIED and dev == place.get("token_embd.weight"):
            continue  # the same buffer type: the output shares the token embedding
        held[dev].append(by_name[name])
    cpu = held["CPU"]
    if mmap and cpu:
        cpu_bytes = max(t.offset + t.nbytes for t in cpu) - min(t.offset for t in cpu)
    else:
        cpu_bytes = sum(_pad(t.nbytes, CPU_ALIGNMENT) for t in {id(t): t for t in cpu}.values())
    gpu = sum(gpu_alloc_bytes(t.type, t.shape[0] if t.shape else 1, t.nbytes)
              for t in held["GPU"])
    return {"CPU": cpu_bytes, "GPU": gpu}


@dataclass(frozen=True)
class Device:
    """One device's buffers (bytes); compute None: not modelled (a plan with GPU layers)."""

    name: str
    model: int
    kv_k: int
    kv_v: int
    recurrent: int
    compute: int | None = None

    @property
    def total(self) -> int:
        """The buffers' sum, the compute buffer included where it is modelled."""
        return self.model + self.kv_k + self.kv_v + self.recurrent + (self.compute or 0)


@dataclass(frozen=True)
class Plan:
    """A GGUF in llama.cpp under the given flags: the context it settles on, its caches and what
    each device holds."""

    params: Params
    hparams: Hparams
    context: Context
    caches: Sequence[Cache]
    recurrent: int
    devices: Sequence[Device]

    @property
    def model(self) -> int:
        return sum(d.model for d in self.devices)

    @property
    def kv_k(self) -> int:
        return sum(d.kv_k for d in self.devices)

    @property
    def kv_v(self) -> int:
        return sum(d.kv_v for d in self.devices)

    @property
    def compute(self) -> int | None:
        """The compute buffers' sum; None where one is not modelled."""
        parts = [d.compute for d in self.devices]
        return None if any(c is None for c in parts) else sum(c or 0 for c in parts)

    @property
    def total(self) -> int:
        return sum(d.total for d in self.devices)

    def device(self, name: str) -> Device | None:
        return next((d for d in self.devices if d.name == name), None)


def _state_by_device(hp: Hparams, p: Params, ctx: Context, caches: Sequence[Cache],
                     start: int) -> tuple[dict[str, list[int]], dict[str, int]]:
    """K and V bytes ([K, V]) and recurrent-state bytes on the CPU and the GPU: a layer's live where
    the layer does (src/llama-kv-cache.cpp: model.dev_layer, with offload_kqv; -nkvo keeps them in
    host memory), each tensor on the GPU in its own aligned slot of the CUDA buffer."""
    kv = {"CPU": [0, 0], "GPU": [0, 0]}
    for cache in caches:
        for il, (k, v), (n_k, n_v) in zip(cache.layers, cache.per_layer, cache.widths,
                                          strict=True):
            if il >= start and p.offload_kqv:
                kv["GPU"][0] += gpu_alloc_bytes(p.type_k, n_k, k)
                kv["GPU"][1] += gpu_alloc_bytes(p.type_v, n_v, v)
            else:
                kv["CPU"][0] += k
                kv["CPU"][1] += v
    rows = max(1, ctx.n_seq)
    rs = {"CPU": 0, "GPU": 0}
    for il in range(hp.n_layer):
        if hp.is_recr[il]:
            # src/llama-memory-recurrent.cpp: R [n_embd_r, rows] and S [n_embd_s, rows], f32
            r, s = 4 * hp.n_embd_r * rows, 4 * hp.n_embd_s * rows
            if il >= start and p.offload_kqv:
                rs["GPU"] += _pad(r, GPU_ALIGNMENT) + _pad(s, GPU_ALIGNMENT)
            else:
                rs["CPU"] += r + s
    return kv, rs


def plan(header: GgufHeader, p: Params, *, n_cpu_moe: int = 0,
         override_tensor: Sequence[str] = ()) -> Plan:
    """Everything llama.cpp allocates for the GGUF but its compute buffer, per device. The KV and
    recurrent state of a layer live where the layer does (src/llama-kv-cache.cpp: model.dev_layer,
    with offload_kqv, llama-server's default)."""
    try:
        hp = hparams(header)
        n_ctx_train = int(header.metadata.get(f"{hp.arch}.context_length", 0) or 0)
    except (TypeError, ValueError) as e:
        raise UsageError(f"{header.label}: GGUF metadata not as llama.cpp reads it ({e})") from None
    ctx = context(p, n_ctx_train=n_ctx_train)
    check_cache_blocks(hp, p, header.label)
    if p.n_gpu_layers < 0:
        raise UsageError(f"--n-gpu-layers {p.n_gpu_layers}: at least 0 (auto is fit's to find)")
    place = placement(header, hp.n_layer, p.n_gpu_layers, overrides(n_cpu_moe, override_tensor))
    weights = model_buffers(header, place, mmap=p.mmap)
    start = gpu_layer_start(hp.n_layer, p.n_gpu_layers)
    caches = kv_caches(hp, p, ctx)
    kv, rs = _state_by_device(hp, p, ctx, caches, start)
    devices = [Device(name, weights[name], kv[name][0], kv[name][1], rs[name])
               for name in ("CPU", "GPU")
               if name == "CPU" or weights[name] or kv[name][0] or rs[name]]
    from llmcalc.planning.engines.llama_cpp_graph import GRAPHS, compute_bytes

    if len(devices) == 1 and hp.arch in GRAPHS:  # the CPU backend alone: its compute buffer
        compute = compute_bytes(header, hp, ctx, caches, p.type_k, p.type_v)
        cpu = devices[0]
        devices = [Device("CPU", cpu.model, cpu.kv_k, cpu.kv_v, cpu.recurrent, compute)]
    return Plan(p, hp, ctx, caches, rs["CPU"] + rs["GPU"], devices)


def _f32(x: float) -> float:
    """A value as a C float holds it (the split points are computed in float)."""
    import struct

    return float(struct.unpack("f", struct.pack("f", x))[0])


def layer_gpus(n_layer: int, n_gpu_layers: int, n_gpus: int) -> tuple[int, ...]:
    """The GPU (0…n_gpus−1) or the CPU (−1) of each layer 0…n_layer (n_layer: the output layer)
    under llama.cpp's default --split-mode layer over ``n_gpus`` cards of equal free memory:
    src/llama-model.cpp: load_tensors — the split points are the cumulative shares of each
    device's free memory (float), and layer il goes to the first device whose split point exceeds
    float(il − i_gpu_start) / act_gpu_layers (std::upper_bound)."""
    if n_gpus < 1:
        raise UsageError(f"{n_gpus} GPUs: at least 1")
    start = gpu_layer_start(n_layer, n_gpu_layers)
    act = min(n_gpu_layers, n_layer + 1)
    free = _f32(1.0)  # equal cards: the shares do not depend on the figure
    sums = []
    total = 0.0
    for _ in range(n_gpus):
        total = _f32(total + free)
        sums.append(total)
    splits = [_f32(s / total) for s in sums]
    out = []
    for il in range(n_layer + 1):
        if il < start or il - start >= act:
            out.append(-1)
            continue
        x = _f32(_f32(float(il - start)) / act)
        out.append(min(next((i for i, s in enumerate(splits) if s > x), n_gpus - 1), n_gpus - 1))
    return tuple(out)


@dataclass(frozen=True)
class KvSummary:
    """The KV cache as llama.cpp's log shows it and as fit --engine reports it for every engine:
    ``cells`` one stream's cells as the log counts them ("llama_kv_cache: size = … ( N cells, …)":
    the full-attention cache's kv_size — n_ctx with a unified cache, n_ctx_seq per stream
    without; the sliding-window cache's where every attention layer slides; a recurrent model's
    state cells, max(1, n_seq_max), where it keeps no KV cache), ``streams`` the copies of it
    (--no-kv-unified: one per sequence; ``tokens`` = cells × streams, the n_ctx the log prints),
    ``max_concurrency`` the sequences of n_ctx_seq tokens it holds at once, and the bytes of K, V
    and recurrent state on each device."""

    cells: int
    streams: int
    n_ctx_seq: int
    max_concurrency: float
    cpu_bytes: int
    gpu_bytes: tuple[int, ...]  # per GPU, in device order (CUDA0, CUDA1, …)
    logged_bytes: int  # Σ ggml_nbytes of every cache's K and V: the log's "size = … MiB"

    @property
    def per_gpu(self) -> int:
        """The most any one GPU holds (the figure compared with one card)."""
        return max(self.gpu_bytes, default=0)


def kv_summary(p: Plan, *, n_gpus: int = 1) -> KvSummary:
    """:class:`KvSummary` of a plan, its GPU layers split over ``n_gpus`` equal cards."""
    hp, ctx = p.hparams, p.context
    n_gpu_layers = p.params.n_gpu_layers
    where = layer_gpus(hp.n_layer, n_gpu_layers, n_gpus)
    if not p.params.offload_kqv:  # -nkvo: src/llama-kv-cache.cpp keeps every layer on the CPU
        where = tuple(-1 for _ in where)
    elif p.params.split_mode == "none":  # src/llama.cpp: llama_model_load — the main GPU alone
        where = tuple(min(w, 0) for w in where)
    gpu = [0] * n_gpus
    cpu = 0
    for cache in p.caches:
        for il, (k, v), (n_k, n_v) in zip(cache.layers, cache.per_layer, cache.widths,
                                          strict=True):
            if where[il] >= 0:  # each tensor in its own aligned slot of the CUDA buffer
                gpu[where[il]] += (gpu_alloc_bytes(p.params.type_k, n_k, k)
                                   + gpu_alloc_bytes(p.params.type_v, n_v, v))
            else:
                cpu += k + v
    rows = max(1, ctx.n_seq)
    for il in range(hp.n_layer):
        if hp.is_recr[il]:
            r, s = 4 * hp.n_embd_r * rows, 4 * hp.n_embd_s * rows
            if where[il] >= 0:
                gpu[where[il]] += _pad(r, GPU_ALIGNMENT) + _pad(s, GPU_ALIGNMENT)
            else:
                cpu += r + s
    if any(c.layers for c in p.caches):
        # the base cache's kv_size, n_ctx_seq, which the log prints even where every attention
        # layer slides and the base cache holds 0 layers (llama_kv_cache_iswa)
        cells = ctx.n_ctx_seq
        streams = ctx.n_stream
        concurrency = cells * streams / ctx.n_ctx_seq
    else:  # src/llama-memory-recurrent.cpp: one state cell per sequence
        cells, streams = rows, 1
        concurrency = float(rows)
    logged = sum(c.k_bytes + c.v_bytes for c in p.caches)
    return KvSummary(cells, streams, ctx.n_ctx_seq, concurrency, cpu, tuple(gpu), logged)


def cells_from_kv_bytes(p: Plan, kv_bytes: int) -> int:
    """The full-attention cells a logged KV size holds (``--kv-memory``: the "llama_kv_cache: size
    = … MiB" figure, all caches' K and V): the sliding-window cache's bytes (fixed by n_swa and
    n_ubatch) taken out, the rest over one full cell's K and V bytes over every full layer and
    stream, to the nearest cell: exact where a cell is more than the 0.01 MiB the figure is
    printed to."""
    full = [c for c in p.caches if c.layers and c.name == "full"]
    fixed = sum(c.k_bytes + c.v_bytes for c in p.caches if c.layers and c.name != "full")
    target = full[0] if full else next((c for c in p.caches if c.layers), None)
    if target is None:
        raise UsageError("--kv-memory: the model keeps no KV cache in llama.cpp")
    if not full:
        fixed = 0
    per_cell = (target.k_bytes + target.v_bytes) // target.cells
    # the logged size is a whole number of cells printed to 0.01 MiB: the nearest count
    return max(0, round((kv_bytes - fixed) / per_cell))


def hparams_from_spec(spec: Any) -> tuple[Hparams, int]:
    """The cache-sizing hyperparameters llama.cpp would read from the GGUF of an HF model whose
    architecture llmcalc does not convert (llama_cpp_quant covers ten): per layer the KV heads (0
    for a layer without its own cache: a Mamba/linear-attention layer, or one that reuses another
    layer's K and V), sliding or chunked windows (llama_kv_cache_iswa: one n_swa for the model),
    MLA's cache as llama.cpp lays it out since its MLA rework (src/llama-model.cpp, deepseek2:
    n_head_kv 1, K the latent + rope dims, V a view of K: no bytes of its own), and the recurrent
    state's rows (src/llama-hparams.cpp: n_embd_r, n_embd_s). The head sizes are the first
    attention layer's; a layer whose heads are a whole multiple of them counts as that many more
    heads (the same row bytes). Returns the hparams and n_ctx_train (max_position_embeddings)."""
    layers: dict[int, Any] = {}
    for g in spec.layer_groups:
        for il in g.layers:
            layers[il] = g
    if not layers:
        raise UsageError(f"{spec.name}: no decoder layers to lay a llama.cpp cache out for")
    n_layer = max(layers) + 1
    n_head_kv, is_swa, is_recr = [], [], []
    head_k = head_v = n_swa = n_embd_r = n_embd_s = 0
    for il in range(n_layer):
        g = layers.get(il)
        a = g.attention if g is not None else None
        mixer = g.mixer if g is not None else None
        if mixer is not None:
            n_embd_r = max(n_embd_r, mixer.conv_dim * max(mixer.conv_kernel - 1, 0))
            n_embd_s = max(n_embd_s, mixer.state_elements)
        if a is None or a.kv_shared or not a.causal:
            n_head_kv.append(0)
            is_swa.append(False)
            is_recr.append(mixer is not None)
            continue
        if a.kv_latent_dim is not None:
            kv, k, v = 1, a.kv_latent_dim, 0
        else:
            kv, k, v = a.kv_heads, a.qk_head_dim, a.v_head_dim
            if a.keys_are_values:  # one cached tensor read as K and V (DeepSeek-V4): V no bytes
                v = 0
        if not head_k:
            head_k, head_v = k, v
        if (k, v) != (head_k, head_v) and k % head_k == 0 and (
                v * head_k == k * head_v):  # a wider head (Gemma 4's full layers): as more heads
            kv = kv * k // head_k
        n_head_kv.append(kv)
        is_swa.append(a.window is not None)
        if a.window is not None:
            n_swa = max(n_swa, a.window)
        is_recr.append(mixer is not None)  # attention beside a mixer (Falcon-H1): both caches
    heads = tuple(g.attention.heads if g is not None and g.attention is not None else 0
                  for g in (layers.get(il) for il in range(n_layer)))
    hp = Hparams(str(spec.config.get("model_type", "")), n_layer, spec.shape.hidden_size, heads,
                 tuple(n_head_kv), head_k, head_v, n_swa, tuple(is_swa), tuple(is_recr),
                 n_embd_r, n_embd_s)
    return hp, int(spec.shape.max_position_embeddings or 0)


def spec_plan(spec: Any, p: Params, *, n_gpu_layers: int) -> Plan:
    """The KV cache (and recurrent state) llama.cpp allocates for an HF model's GGUF, without its
    weights (no GGUF to place): the same context, cache and placement rules as :func:`plan`, every
    layer's cache on the GPU from i_gpu_start. Devices hold the KV only (model buffer 0)."""
    hp, n_ctx_train = hparams_from_spec(spec)
    if p.n_ctx == 0 and n_ctx_train <= 0:
        raise UsageError(f"{spec.name}: max_position_embeddings is missing: give --ctx-size")
    p = Params(**{**p.__dict__, "n_gpu_layers": n_gpu_layers})
    ctx = context(p, n_ctx_train=n_ctx_train)
    check_cache_blocks(hp, p, spec.name)
    caches = kv_caches(hp, p, ctx)
    start = gpu_layer_start(hp.n_layer, n_gpu_layers)
    kv, rs = _state_by_device(hp, p, ctx, caches, start)
    devices = [Device(name, 0, kv[name][0], kv[name][1], rs[name]) for name in ("CPU", "GPU")]
    return Plan(p, hp, ctx, caches, rs["CPU"] + rs["GPU"], devices)
