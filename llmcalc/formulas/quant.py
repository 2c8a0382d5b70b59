"""Quantized weight formats: the bytes a checkpoint really stores, scales and zero points included.

A format is a row of :data:`FORMATS`: for each *role* a tensor plays (a decoder linear weight, a
fused expert tensor, the token embedding, lm_head, a router, a vector such as a norm or a bias) the
:class:`Layout` it is stored in. A layout stores ``bits`` per element plus, per block of ``block``
consecutive elements of a row, ``block_bits`` of scale/zero point; some add bits per input column
(GPTQ's ``g_idx``), per group of blocks (bitsandbytes' double quantization) or per tensor (code
books). Byte counts are exact per tensor (packing rounded up as the format packs), then summed.

Layouts, each from its format's source (the tests rebuild them from the real quantizers or from
the tensors such checkpoints hold):

- **bitsandbytes NF4 / FP4** (Dettmers et al. 2023, "QLoRA" §3; bitsandbytes ``quantize_4bit``):
  the flattened weight in blocks of 64, two 4-bit codes per byte, one absmax per block. With
  double quantization (QLoRA's default, ``nf4``/``fp4``) the absmax is itself quantized to 8 bits
  with one fp32 absmax per 256 blocks: 4 + 8/64 + 32/(64·256) = 4.127 bits per weight; without
  (``nf4-nodq``) an fp32 absmax per block: 4.5 bits. Per tensor: the 16-entry fp32 code (64 B) and,
  with double quantization, the 256-entry fp32 nested code (1,024 B). The packed JSON quant state
  (~100–200 B per tensor) is metadata and not counted. Embeddings, lm_head, norms and biases stay
  in the compute dtype: transformers' bitsandbytes quantizer converts ``nn.Linear`` only and keeps
  lm_head — so under transformers v5 a MoE model's fused expert tensors and its router stay bf16
  too (they are parameters, not ``nn.Linear``s).
- **GPTQ** (Frantar et al. 2023; the AutoGPTQ/GPTQModel ``QuantLinear`` layout): for a linear
  [out N, in K] at 4 bits and group size g: qweight int32 [K/8, N], qzeros int32 [K/g, N/8],
  scales fp16 [K/g, N], g_idx int32 [K]. **AWQ** (Lin et al. 2024; AutoAWQ ``WQLinear_GEMM``):
  qweight int32 [K, N/8], qzeros int32 [K/g, N/8], scales fp16 [K/g, N]. Both ≈ 4 + 16/g + 4/g
  bits per weight (4.156 at g = 128). Decoder linears (experts included) are quantized; embeddings,
  lm_head, routers, norms and biases stay fp16.
- **MXFP4** (OCP Microscaling Formats v1.0: 32 FP4 E2M1 elements share one 8-bit E8M0 scale, 4.25
  bits per weight): as gpt-oss stores it (``*_blocks`` uint8 [..., in/32, 16] + ``*_scales`` uint8
  [..., in/32]), the fused expert weights only; attention, router, embeddings and lm_head stay bf16
  (gpt-oss's ``quantization_config.modules_to_not_convert``).
- **FP8 with block scales** (DeepSeek-V3 §3.3.2; transformers' FineGrainedFP8): e4m3 weights, one
  fp32 ``weight_scale_inv`` per 128 × 128 tile (8.002 bits per weight); read from a config's
  ``quantization_config`` (``quant_method: fp8``, ``weight_block_size``) or ``--dtype fp8-block``.
- **FP8 with FP4 experts** (DeepSeek-V4's checkpoints: ``quantization_config`` fp8 with
  ``scale_fmt: ue8m0`` and the config's ``expert_dtype: fp4``; DeepSeek-V4 inference ``model.py``,
  ``fp4_block_size = 32``): linears e4m3 with one ue8m0 (8-bit) scale per 128 × 128 tile (8.0005
  bits per weight), routed experts FP4 e2m1 with one ue8m0 scale per 32 along the input (the MXFP4
  layout, 4.25 bits); embeddings, lm_head, routers and vectors bf16, as for ``fp8-block``. A
  checkpoint with fp8 experts (``expert_dtype: fp8`` or none) keeps fp32 scales: ``fp8-block``.
- **NVFP4** (NVIDIA's 4-bit float for Blackwell, as ModelOpt and llm-compressor export it and vLLM
  loads it: vLLM ``modelopt.py`` ``ModelOptNvFp4LinearMethod.create_weights``,
  ``compressed_tensors_w4a4_nvfp4.py`` ``CompressedTensorsW4A4Fp4.create_weights``): for a linear
  [out N, in K] the codes ``weight`` uint8 [N, K/2] (two e2m1 a byte), ``weight_scale`` e4m3
  [N, K/16] (one per 16 inputs) and per matrix the fp32 ``weight_scale_2`` and ``input_scale``
  (compressed-tensors: ``weight_global_scale``, ``input_global_scale``; weight-only ``W4A16_NVFP4``
  / ``NVFP4A16`` stores no input scale): 4.5 bits per weight + 8 (4) bytes per matrix. Every
  matmul weight of a linear role is quantized, routed experts included, a fused expert tensor
  counted as the matrices a checkpoint stores (each expert's gate_proj and up_proj apart, as the
  Qwen and DeepSeek NVFP4 checkpoints hold them); embeddings, norms, biases and convolutions stay
  bf16, and so does what ModelOpt's ``_default_disabled_quantizer_cfg``
  (``modelopt/torch/quantization/config.py``) leaves unquantized — lm_head, routers (``*router*``,
  ``*mlp.gate.*``), ``*mlp.shared_expert_gate.*``, the mixers' conv1d — and the vision towers vLLM
  loads unquantized (``get_quant_method``: ``vision_tower``, ``vision_model``, ``visual``). From a
  config: ``quant_method: modelopt`` with ``quant_algo: NVFP4`` (or ``W4A16_NVFP4``; flat, or
  nested under ``quantization`` as hf_quant_config.json has it), or ``compressed-tensors`` with
  ``format: nvfp4-pack-quantized``; its ``ignore`` / ``exclude_modules`` kept bf16 too.
- **GGUF** (ggml ``ggml-common.h`` block structs): q8_0 = 34 B per 32 (fp16 scale + 32 int8),
  q4_0 = 18 B per 32, Q4_K = 144 B per 256, Q5_K = 176 B per 256, Q6_K = 210 B per 256; 1-D tensors
  are f32. **q4_k_m**, **q4_0**, **q8_0**: each tensor of the type llama.cpp's mix gives it
  (:mod:`llmcalc.formulas.gguf_mix`, llama-quant.cpp ``llama_tensor_get_type``: Q4_K_M's Q6_K
  output and attn_v / fused attn_qkv / ffn_down in the places ``use_more_bits`` picks, the
  8-expert and 70B bumps, the fallbacks for rows that are not whole blocks), the same types the
  GGUF of ``--engine llama.cpp`` holds. Every other type llama-quantize writes (q5_k_m, q6_k,
  q3_k_m, iq4_xs, iq2_xxs, tq1_0, mxfp4_moe …: ``gguf_mix.QUANT_TYPES``) likewise, each ggml type
  at its block's bytes (``gguf_mix.GGML_SIZES``).

The plain element types (fp32 … int4, :class:`~llmcalc.units.DType`) store every tensor at that
width with no scales; they stay what ``--dtype`` meant before.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from llmcalc.errors import UsageError
from llmcalc.formulas.gguf_mix import GGML_SIZES, QUANT_TYPES, canonical, mix
from llmcalc.model.spec import LAYER, ModelSpec, Tensor
from llmcalc.units import DType, named, nbytes, parse_dtype

# ---- layouts -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """How one tensor is stored: ``bits`` per element, and per block of ``block`` elements of a row
    ``block_bits`` of scales/zeros (``flat``: blocks run over the flattened tensor, as bitsandbytes
    does, instead of along each row). ``pack_bits``: elements are packed into words of that many bits
    along the packed axis (GPTQ/AWQ int32); ``column_bits``: bits per input column (GPTQ ``g_idx``);
    ``super_blocks`` /
    ``super_bits``: a second level of scale per that many blocks (double quantization);
    ``tensor_bytes``: per tensor constants (code books). GPTQ/AWQ zero points take ``bits`` each,
    packed like the weights."""

    name: str
    bits: int
    block: int = 0
    block_bits: int = 0
    flat: bool = False
    pack: str = ""  # "rows" (GPTQ: K/8 × N), "cols" (AWQ: K × N/8) or "" (plain bytes)
    column_bits: int = 0
    super_blocks: int = 0
    super_bits: int = 0
    tensor_bytes: int = 0
    tile: int = 0  # square tiles of tile × tile elements share one scale of block_bits (FP8)
    matrix_bytes: int = 0  # per weight matrix a checkpoint stores (NVFP4's fp32 global scales)

    def nbytes(self, shape: tuple[int, ...], *, matrices: int | None = None) -> int:
        """Exact bytes of one tensor of ``shape`` ([..., out, in]: rows are the last dimension);
        ``matrices``: how many weight matrices a checkpoint stores for it (default: the leading
        dimensions' product), each with ``matrix_bytes`` of its own."""
        numel = math.prod(shape)
        if self.tile and len(shape) >= 2:  # weight_scale_inv [⌈out/t⌉, ⌈in/t⌉] per matrix
            *lead, n_out, k_in = shape
            tiles = -(-n_out // self.tile) * -(-k_in // self.tile)
            return math.prod(lead) * (n_out * k_in * self.bits + tiles * self.block_bits) // 8
        if len(shape) < 2 or not self.block:
            return -(-numel * self.bits // 8) + self.tensor_bytes
        if self.flat:  # bitsandbytes: the tensor flattened, blocks of `block`
            blocks = -(-numel // self.block)
            supers = -(-blocks // self.super_blocks) if self.super_blocks else 0
            return (
                -(-numel * self.bits // 8)
                + -(-blocks * self.block_bits // 8)
                + supers * self.super_bits // 8
                + self.tensor_bytes
            )
        *lead, n_out, k_in = shape
        mats = math.prod(lead)
        groups = -(-k_in // self.block)
        if self.pack:  # GPTQ / AWQ: int32 words of 32 / bits elements
            per_word = 32 // self.bits
            if self.pack == "rows":
                qweight = -(-k_in // per_word) * n_out * 4
            else:
                qweight = k_in * -(-n_out // per_word) * 4
            qzeros = groups * -(-n_out // per_word) * 4
            scales = groups * n_out * self.block_bits // 8
            g_idx = k_in * self.column_bits // 8
            return mats * (qweight + qzeros + scales + g_idx) + self.tensor_bytes
        # block formats along each row (MXFP4, NVFP4, GGUF): bits per element + bits per block
        per_row = -(-(k_in * self.bits + groups * self.block_bits) // 8)
        stored = mats if matrices is None else matrices
        return mats * n_out * per_row + self.tensor_bytes + stored * self.matrix_bytes


def _plain(bits: int, name: str) -> Layout:
    return Layout(name, bits)


BF16 = _plain(16, "bf16")
FP16 = _plain(16, "fp16")
F32 = _plain(32, "f32")

# bitsandbytes 4-bit, blocksize 64 (Dettmers et al. 2023 §3)
BNB4_DQ = Layout("4-bit, 64-blocks, 8-bit absmax + fp32 per 256 blocks", 4, block=64,
                 block_bits=8, flat=True, super_blocks=256, super_bits=32,
                 tensor_bytes=16 * 4 + 256 * 4)
BNB4 = Layout("4-bit, 64-blocks, fp32 absmax", 4, block=64, block_bits=32, flat=True,
              tensor_bytes=16 * 4)


def gptq_layout(group: int) -> Layout:
    return Layout(f"int4, group {group}, fp16 scale + int4 zero, g_idx", 4, block=group,
                  block_bits=16, pack="rows", column_bits=32)


def awq_layout(group: int) -> Layout:
    return Layout(f"int4, group {group}, fp16 scale + int4 zero", 4, block=group, block_bits=16,
                  pack="cols")


def fp8_block_layout(tile: int, *, ue8m0: bool = False) -> Layout:
    """e4m3 weights, one scale per tile × tile block: fp32, or ue8m0 (an 8-bit power of two)."""
    scale = "ue8m0" if ue8m0 else "fp32"
    return Layout(f"fp8 e4m3, {tile}×{tile} tiles, {scale} scale", 8, block_bits=8 if ue8m0 else 32,
                  tile=tile)


MXFP4 = Layout("fp4 e2m1, 32-blocks, e8m0 scale", 4, block=32, block_bits=8)


def nvfp4_layout(*, input_scale: bool = True) -> Layout:
    """NVFP4: weight uint8 [N, K/2] + weight_scale e4m3 [N, K/16] + per matrix the fp32
    weight_scale_2 and (W4A4) input_scale (vLLM ModelOptNvFp4LinearMethod.create_weights)."""
    scalars = 2 if input_scale else 1
    return Layout(f"fp4 e2m1, 16-blocks, e4m3 scale, {scalars} fp32 per matrix", 4, block=16,
                  block_bits=8, matrix_bytes=4 * scalars)


def _gguf(name: str, block_bytes: int, block: int, scale_bytes: int) -> Layout:
    """A ggml block of ``block`` elements in ``block_bytes``: quants plus ``scale_bytes``."""
    bits = (block_bytes - scale_bytes) * 8 // block
    return Layout(name, bits, block=block, block_bits=scale_bytes * 8)


Q8_0 = _gguf("Q8_0", 34, 32, 2)
Q4_0 = _gguf("Q4_0", 18, 32, 2)
Q5_0 = _gguf("Q5_0", 22, 32, 2)
Q5_1 = _gguf("Q5_1", 24, 32, 4)
Q4_K = _gguf("Q4_K", 144, 256, 16)
Q5_K = _gguf("Q5_K", 176, 256, 16)
Q6_K = _gguf("Q6_K", 210, 256, 18)
# the ggml types llama.cpp's mix gives (formulas.gguf_mix), each as its layout; the others from
# ggml-common.h's block sizes (gguf_mix.GGML_SIZES), their bits split as whole bits per element
# and the rest of the block's bytes (only the bytes per block are read)
GGML_LAYOUTS = {"Q8_0": Q8_0, "Q4_0": Q4_0, "Q5_0": Q5_0, "Q5_1": Q5_1, "Q4_K": Q4_K,
                "Q5_K": Q5_K, "Q6_K": Q6_K, "F16": FP16, "F32": F32}
for _kind, (_block, _bytes) in GGML_SIZES.items():
    if _kind not in GGML_LAYOUTS and _block > 1:
        GGML_LAYOUTS[_kind] = _gguf(_kind, _bytes, _block, _bytes - _bytes * 8 // _block * _block // 8)


# ---- roles ----------------------------------------------------------------------------------------

def role(t: Tensor) -> str:
    """What a tensor is, for choosing its layout."""
    if len(t.shape) < 2 or (t.experts and len(t.shape) == 2 and not t.matmul):
        return "vector"  # norms, biases (per-expert biases [E, d] too), sinks
    if t.component.startswith("embed"):
        return "embedding"
    if t.component == "lm_head":
        return "lm_head"
    if t.component == "moe/router":
        return "router"
    if t.experts and not t.matmul:
        return "vector"
    return "experts" if t.experts else "linear"


@dataclass(frozen=True)
class QuantFormat:
    """A weight format: the layout of each role; ``gguf`` (a llama.cpp quant type: q4_k_m, q8_0,
    q4_0): each tensor's layout is the ggml type llama.cpp's mix gives it (:mod:`gguf_mix`)."""

    name: str
    description: str
    layouts: Mapping[str, Layout]
    source: str
    kv_default: DType = DType.bf16
    keep: tuple[str, ...] = ()  # name patterns (``{i}`` → any layer) kept at ``rest``
    rest: Layout = BF16
    gguf: str = ""
    bits_label: str = ""
    # NVFP4: only weights a matmul multiplies by are quantized (not convolutions or gate params)
    matmul_only: bool = False
    # name patterns (``{i}`` for the layer) kept at ``rest`` in the layers listed only (a
    # quantization_config's exclusions that name one layer, model.layers.3.mlp.gate …)
    keep_layers: tuple[tuple[str, frozenset[int]], ...] = ()
    # compressed-tensors ``re:`` exclusions: regular expressions matched at a module name's start
    keep_regex: tuple[str, ...] = ()

    @property
    def value(self) -> str:  # spelled like DType.value where a dtype is printed
        return self.name

    def kept(self, t: Tensor) -> bool:
        """``t`` stays at ``rest`` in every layer."""
        return (self.matmul_only and not t.matmul) or any(
            fnmatch.fnmatchcase(t.name.replace(LAYER, "*"), p) or fnmatch.fnmatchcase(t.name, p)
            for p in self.keep) or any(_regex_keeps(rx, t) for rx in self.keep_regex)

    def kept_layers(self, t: Tensor) -> frozenset[int]:
        """The layers in which a pattern naming one layer keeps ``t`` at ``rest``."""
        hits = [layers for p, layers in self.keep_layers if fnmatch.fnmatchcase(t.name, p)]
        return frozenset().union(*hits) if hits else frozenset()

    def layout(self, t: Tensor) -> Layout:
        """``t``'s layout by its role (a format without a GGUF mix)."""
        if self.kept(t):
            return self.rest
        return self.layouts.get(role(t), self.rest)


def _regex_keeps(rx: str, t: Tensor) -> bool:
    """Whether the exclusion ``re:rx`` names ``t``'s module (compressed-tensors matches with
    ``re.match``); one that picks layers by their number is refused rather than guessed."""
    module = t.name.rsplit(".", 1)[0]
    first, second = (re.match(rx, module.replace(LAYER, str(i))) is not None for i in (0, 1))
    if first != second:
        raise UsageError(f"quantization_config: ignore entry 're:{rx}' picks layers by number, "
                         "which is not supported; pass --dtype")
    return first


def _fmt(name: str, description: str, source: str, rest: Layout = BF16, **roles: Layout
         ) -> QuantFormat:
    return QuantFormat(name, description, roles, source, rest=rest)


BNB_SOURCE = "Dettmers et al. 2023 (QLoRA) §3; bitsandbytes quantize_4bit, blocksize 64"
FORMATS: dict[str, QuantFormat] = {
    "nf4": _fmt("nf4", "bitsandbytes NF4, double quantization", BNB_SOURCE,
                linear=BNB4_DQ),
    "fp4": _fmt("fp4", "bitsandbytes FP4, double quantization", BNB_SOURCE,
                linear=BNB4_DQ),
    "nf4-nodq": _fmt("nf4-nodq", "bitsandbytes NF4, fp32 absmax", BNB_SOURCE,
                     linear=BNB4),
    "mxfp4": _fmt("mxfp4", "MXFP4 experts (gpt-oss layout)",
                  "OCP Microscaling Formats v1.0; gpt-oss checkpoints", experts=MXFP4),
    "q8_0": QuantFormat("q8_0", "GGUF Q8_0", {}, "ggml block_q8_0; llama-quant.cpp", rest=F32,
                        gguf="q8_0"),
    "q4_0": QuantFormat("q4_0", "GGUF Q4_0", {}, "ggml block_q4_0; llama-quant.cpp", rest=F32,
                        gguf="q4_0"),
    "q4_k_m": QuantFormat("q4_k_m", "GGUF Q4_K_M mix", {},
                          "ggml block_q4_K / block_q6_K; llama-quant.cpp llama_tensor_get_type",
                          rest=F32, gguf="q4_k_m"),
}
# every other file type llama-quantize writes (gguf_mix.QUANT_TYPES), named as it names them
for _q in QUANT_TYPES:
    FORMATS.setdefault(_q, QuantFormat(
        _q, f"GGUF {_q.upper()} mix", {}, "ggml-common.h block structs; llama-quant.cpp "
        "llama_tensor_get_type", rest=F32, gguf=_q))
# Per-output-channel 8-bit weights: one fp32 scale per row of every linear (and expert) matrix,
# embeddings and lm_head kept bf16 — compressed-tensors' FP8_DYNAMIC and W8A8 (int8) schemes as
# RedHatAI/llm-compressor export them (weight [N, K] 8-bit + weight_scale [N, 1] fp32), which
# vLLM serves as stored
CHANNEL_SCALED_FP8 = Layout("fp8 e4m3, an fp32 scale per output channel", 8, block=1 << 40,
                            block_bits=32)
CHANNEL_SCALED_INT8 = Layout("int8, an fp32 scale per output channel", 8, block=1 << 40,
                             block_bits=32)
CT_SOURCE = "llm-compressor / compressed-tensors FP8_DYNAMIC and W8A8 schemes (channel strategy)"
FORMATS["fp8-channel"] = _fmt("fp8-channel", "FP8 e4m3, per-channel fp32 scales", CT_SOURCE,
                              linear=CHANNEL_SCALED_FP8, experts=CHANNEL_SCALED_FP8)
FORMATS["w8a8"] = _fmt("w8a8", "INT8 weights, per-channel fp32 scales", CT_SOURCE,
                       linear=CHANNEL_SCALED_INT8, experts=CHANNEL_SCALED_INT8)
FORMATS["fp8-block"] = QuantFormat(
    "fp8-block", "FP8 e4m3 with 128×128 block scales", {"linear": fp8_block_layout(128),
                                                        "experts": fp8_block_layout(128)},
    "DeepSeek-V3 §3.3.2 (fine-grained quantization); transformers FineGrainedFP8",
)
FP8_FP4_SOURCE = ("DeepSeek-V4 checkpoints (quantization_config scale_fmt ue8m0, expert_dtype fp4); "
                  "DeepSeek-V4 inference model.py, fp4_block_size 32")


def fp8_fp4(tile: int) -> QuantFormat:
    """DeepSeek-V4's storage: FP8 linears with ue8m0 tile scales, MXFP4-laid FP4 routed experts."""
    return QuantFormat("fp8-fp4" if tile == 128 else f"fp8-fp4-tile{tile}",
                       f"FP8 e4m3 with ue8m0 {tile}×{tile} block scales, FP4 e2m1 experts",
                       {"linear": fp8_block_layout(tile, ue8m0=True), "experts": MXFP4},
                       FP8_FP4_SOURCE)


FORMATS["fp8-fp4"] = fp8_fp4(128)
NVFP4_SOURCE = ("NVIDIA ModelOpt NVFP4 (_default_disabled_quantizer_cfg); vLLM modelopt.py "
                "ModelOptNvFp4LinearMethod, compressed_tensors_w4a4_nvfp4.py")
# ModelOpt's _default_disabled_quantizer_cfg (modelopt/torch/quantization/config.py): quantizer
# name patterns (module name + ".weight_quantizer"), so they match the tensors' names too
MODELOPT_DISABLED = ("*lm_head*", "*proj_out.*", "*block_sparse_moe.gate*", "*router*",
                     "*mlp.gate.*", "*mlp.shared_expert_gate.*", "*linear_attn.conv1d*",
                     "*mixer.conv1d*", "*output_layer*", "output.*")
# the towers vLLM's ModelOptQuantConfigBase.get_quant_method loads unquantized
VLLM_UNQUANTIZED_TOWERS = ("*vision_tower*", "*vision_model*", "*visual*")


def nvfp4(*, input_scale: bool = True, keep: tuple[str, ...] = (),
          keep_layers: tuple[tuple[str, frozenset[int]], ...] = (),
          keep_regex: tuple[str, ...] = ()) -> QuantFormat:
    """NVFP4 linears and experts (W4A4: with the fp32 input scale; W4A16 without), the rest bf16."""
    lay = nvfp4_layout(input_scale=input_scale)
    return QuantFormat(
        "nvfp4" if input_scale else "nvfp4-a16",
        "NVFP4: fp4 e2m1, an e4m3 scale per 16, fp32 per matrix" + ("" if input_scale else
                                                                     ", weights only"),
        {"linear": lay, "experts": lay}, NVFP4_SOURCE,
        keep=(*MODELOPT_DISABLED, *VLLM_UNQUANTIZED_TOWERS, *keep), matmul_only=True,
        keep_layers=keep_layers, keep_regex=keep_regex)


FORMATS["nvfp4"] = nvfp4()
DEFAULT_GROUP = 128
_GROUPED = re.compile(r"^(gptq|awq)(?:[-_:]?g(?:roup)?(\d+))?$")


def grouped(kind: str, group: int) -> QuantFormat:
    """GPTQ or AWQ at a group size (default 128); fp16 for what stays unquantized."""
    if group < 1 or group & (group - 1):
        raise UsageError(f"--dtype {kind}: group size {group} must be a power of two, e.g. 128")
    lay = gptq_layout(group) if kind == "gptq" else awq_layout(group)
    name = kind if group == DEFAULT_GROUP else f"{kind}-g{group}"
    source = ("Frantar et al. 2023; AutoGPTQ QuantLinear" if kind == "gptq"
              else "Lin et al. 2024; AutoAWQ WQLinear_GEMM")
    return QuantFormat(name, f"{kind.upper()} int4, group {group}", {"linear": lay, "experts": lay},
                       source, kv_default=DType.fp16, rest=FP16)


@dataclass(frozen=True)
class LayoutBytes:
    """The tensors stored in one layout: how many elements, how many bytes."""

    layout: str
    elements: int
    bytes: int


@dataclass(frozen=True)
class StoredFormat(QuantFormat):
    """The bytes a file really stores, read from it rather than derived from a layout: a GGUF
    file's tensor table (bytes by ggml type, ggml's block structs) — ``stored`` by type, and the
    routed experts' share (``*_exps`` tensors) for what one decode step reads."""

    stored: tuple[LayoutBytes, ...] = ()
    expert_bytes: int = 0
    layer_bytes: tuple[int, ...] = ()  # blk.N.* by N, for a split between GPU and system memory
    head_bytes: int = 0  # output and output_norm
    embed_bytes: int = 0  # token_embd, the lookup table a step reads rows of


WeightFormat = DType | QuantFormat
FORMAT_NAMES = (*FORMATS, "gptq", "awq")
# llama-quantize's types beyond the three named with the other formats, listed as a group
LLAMA_QUANTIZE_MORE = tuple(q for q in QUANT_TYPES if q not in ("q8_0", "q4_0", "q4_k_m"))


def parse_weight_format(text: str, *, option: str = "--dtype") -> WeightFormat:
    """A plain dtype (bf16, bfloat16, float8_e4m3fn, int4 …) or a quantized format (nf4, mxfp4,
    gptq, gptq-g64, awq, q4_k_m, q8_0 …)."""
    key = canonical(text)  # llama.cpp's names of its types too (Q4_K - Medium …)
    if key in FORMATS:
        return FORMATS[key]
    m = _GROUPED.match(key)
    if m:
        return grouped(m.group(1), int(m.group(2) or DEFAULT_GROUP))
    try:
        return parse_dtype(text, option=option)
    except UsageError:
        plain = ", ".join(d.value for d in DType)
        if key.endswith("_xl") or key.startswith(("ud-", "ud_")):  # UD-Q4_K_XL, Q8_K_XL …
            # Unsloth's dynamic GGUFs choose each tensor's type per model: no llama-quantize
            # type's bytes (or speed) stand for them
            raise UsageError(f"{option} {text!r}: an Unsloth dynamic mix, whose tensor types "
                             "differ by model (no llama-quantize type); give the .gguf file as "
                             "the model, whose header has each tensor's type") from None
        raise UsageError(
            f"{option} {text!r}: unknown dtype; use one of {plain}, or a quantized format: "
            f"{', '.join(n for n in FORMAT_NAMES if n not in LLAMA_QUANTIZE_MORE)}, or a "
            f"llama-quantize type: {', '.join(LLAMA_QUANTIZE_MORE)}"
        ) from None


def kv_dtype_for(fmt: WeightFormat) -> DType:
    """The KV cache's dtype when only the weights' format is given."""
    return fmt if isinstance(fmt, DType) else fmt.kv_default


# The engines' kv_cache_dtype "auto" is the model's activation dtype beside weights named by --dtype
# or a checkpoint that states no cache: vLLM vllm/config/cache.py CacheConfig.cache_dtype "auto" →
# ModelConfig.dtype (fp16 for GPTQ/AWQ, bf16 for an FP8 or INT8 checkpoint); SGLang
# server_args.kv_cache_dtype "auto" alike. A quantized weight format never makes their cache
# int4/int8/fp8 by itself (serving_kv_default says where a checkpoint does).
WIDE_KV = (DType.fp32, DType.fp16, DType.bf16)


def engine_kv_default(kv: DType) -> DType:
    """The model's dtype as a cache keeps it: a wide dtype as is, else bf16 (2 bytes)."""
    return kv if kv in WIDE_KV else DType.bf16


# A Model Optimizer checkpoint states its cache in its quantization_config (config.json's, flat;
# hf_quant_config.json's shape, under "quantization"): kv_cache_quant_algo FP8, NVFP4 or null, or
# (its newer exports) kv_cache_scheme {"num_bits": 8, "type": "float", "dynamic": false}, FP8.
# Where --kv-dtype is auto or left out:
# - TensorRT-LLM takes it, FP8 or NVFP4 and no other for a pre-quantized checkpoint, else the
#   model's dtype (tensorrt_llm/llmapi/llm_utils.py, ModelLoader._update_from_hf_quant_config).
#   Model Optimizer writes FP8 there unless told otherwise (examples/llm_ptq/hf_ptq.py:
#   --kv_cache_qformat, default "fp8"), so its formats named by --dtype, FP8 per tensor and NVFP4,
#   have an FP8 cache (fp8-block and fp8-fp4 are DeepSeek's checkpoints, which state none);
# - vLLM takes FP8 and keeps the model's dtype for any other value (vllm/utils/torch_utils.py,
#   resolve_kv_cache_dtype_string, get_kv_cache_quant_algo_string: kv_cache_scheme first;
#   MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP {"fp8": "fp8_e4m3"}; vllm-project/vllm#29980);
# - SGLang likewise: FP8, else the model's dtype (sglang/srt/model_executor/model_runner.py,
#   ModelRunner.configure_kv_cache_dtype: quant_config.kv_cache_quant_algo).
def _modelopt(q: Mapping[str, Any]) -> bool:
    """A Model Optimizer quantization_config: its quant_method, or hf_quant_config.json's shape
    (no method, a modelopt producer)."""
    method, producer = str(q.get("quant_method", "")).lower(), q.get("producer")
    return method.startswith("modelopt") or (
        not method and isinstance(producer, Mapping) and producer.get("name") == "modelopt")


def checkpoint_kv(config: Mapping[str, Any]) -> tuple[DType | None, object]:
    """The cache a Model Optimizer checkpoint states: (fp8, its value) for FP8, (None, None) for
    none stated, (None, its value) for another (NVFP4, or anything else)."""
    q = config.get("quantization_config")
    if not isinstance(q, Mapping) or not _modelopt(q):
        return None, None
    inner = q.get("quantization", q)
    if not isinstance(inner, Mapping):
        return None, None
    value = next((v for v in (inner.get("kv_cache_scheme"), q.get("kv_cache_scheme"),
                              inner.get("kv_cache_quant_algo"), q.get("kv_cache_quant_algo"))
                  if v), None)
    fp8 = (isinstance(value, str) and value.upper() == "FP8") or (
        isinstance(value, Mapping) and value.get("dynamic") is False
        and value.get("num_bits") == 8 and value.get("type") == "float")
    return (DType.fp8 if fp8 else None), value


def serving_kv_default(engine: str, weights: WeightFormat, config: Mapping[str, Any], *,
                       given: bool) -> DType:
    """The cache vLLM, SGLang, TensorRT-LLM or transformers keeps by default ("auto") beside
    weights named by --dtype (``given``) or the checkpoint's own (``config``)."""
    stated, value = (None, None) if given else checkpoint_kv(config)
    if engine in ("vllm", "sglang", "trtllm") and stated is not None:
        return stated
    if engine == "trtllm" and value is not None:
        shown = repr(value[:40]) if isinstance(value, str) else f"of type {type(value).__name__}"
        raise UsageError(f"quantization_config: kv_cache_quant_algo {shown} is not sized "
                         "(TensorRT-LLM's FP8 is); pass --kv-dtype")
    if engine == "trtllm" and given and (weights is DType.fp8 or weights.value.startswith("nvfp4")):
        return DType.fp8
    return engine_kv_default(kv_dtype_for(weights))


# ---- a config's quantization_config -----------------------------------------------------------


def from_config(config: Mapping[str, Any]) -> QuantFormat | None:
    """The format a config's ``quantization_config`` names (None without one), with its
    ``modules_to_not_convert`` kept at bf16: mxfp4 (gpt-oss), fp8 block-scaled (DeepSeek-V3; with
    the config's ``expert_dtype: fp4``, DeepSeek-V4's fp8-fp4), gptq/awq (bits 4, group_size),
    bitsandbytes 4-bit (nf4/fp4, double quantization as configured)."""
    q = config.get("quantization_config")
    if not isinstance(q, Mapping):
        return None
    method = str(q.get("quant_method", "")).lower()
    fmt: QuantFormat
    if method == "gguf":
        return stored_gguf(q)
    if _modelopt(q):
        return modelopt_nvfp4(q)
    if method == "compressed-tensors":
        return compressed_tensors_nvfp4(q)
    if method == "mxfp4":
        fmt = FORMATS["mxfp4"]
    elif method == "fp8" and q.get("weight_block_size"):
        size = q["weight_block_size"]
        tile = int(size[0]) if isinstance(size, list) and size and size[0] == size[-1] else 0
        if tile < 1:
            raise UsageError(f"quantization_config: fp8 weight_block_size {size!r} is not a "
                             "square tile; pass --dtype")
        experts = str(config.get("expert_dtype") or "fp8").lower()
        if experts == "fp4":  # DeepSeek-V4: ue8m0 scales throughout, FP4 routed experts
            fmt = fp8_fp4(tile)
        elif experts != "fp8":
            raise UsageError(f"quantization_config: fp8 with expert_dtype {experts!r} is not "
                             "supported (fp8 or fp4); pass --dtype")
        else:
            base = FORMATS["fp8-block"]
            lay = fp8_block_layout(tile)
            fmt = QuantFormat(base.name if tile == 128 else f"fp8-block{tile}", base.description,
                              {"linear": lay, "experts": lay}, base.source)
    elif method in ("gptq", "awq"):
        if int(q.get("bits", 4)) != 4:
            raise UsageError(f"quantization_config: {method} with bits {q.get('bits')} is not "
                             "supported (4-bit only); pass --dtype")
        fmt = grouped(method, int(q.get("group_size", DEFAULT_GROUP)))
    elif method == "bitsandbytes" and q.get("load_in_4bit"):
        kind = str(q.get("bnb_4bit_quant_type", "fp4")).lower()
        dq = bool(q.get("bnb_4bit_use_double_quant", False))
        fmt = FORMATS[kind if dq else "nf4-nodq"]
        if not dq and kind == "fp4":
            fmt = QuantFormat("fp4-nodq", "bitsandbytes FP4, fp32 absmax", fmt.layouts, fmt.source)
    else:
        raise UsageError(f"quantization_config: quant_method {method!r} is not supported; "
                         f"pass --dtype (one of {', '.join(FORMAT_NAMES)})")
    skip = q.get("modules_to_not_convert") or ()
    if skip:
        patterns = tuple(f"{m}.*" for m in skip if isinstance(m, str))
        fmt = replace(fmt, description=fmt.description + " (quantization_config)",
                      keep=(*fmt.keep, *patterns))
    return fmt


def modelopt_nvfp4(q: Mapping[str, Any]) -> QuantFormat:
    """ModelOpt's quantization_config (config.json: flat, with ``ignore``; hf_quant_config.json:
    under ``quantization``, with ``exclude_modules``), read as vLLM's
    ``ModelOptQuantConfigBase.from_config`` reads it: NVFP4 (W4A4) or W4A16_NVFP4."""
    inner = q["quantization"] if isinstance(q.get("quantization"), Mapping) else q
    algo = str(inner.get("quant_algo") or "").upper()
    if algo not in ("NVFP4", "W4A16_NVFP4"):
        raise UsageError(f"quantization_config: modelopt quant_algo {algo or None!r} is not "
                         "supported (NVFP4 or W4A16_NVFP4); pass --dtype")
    groups = [g for g in (inner.get("config_groups") or {}).values() if isinstance(g, Mapping)]
    size = inner.get("group_size")
    if size is None:
        size = next((g["weights"].get("group_size") for g in groups
                     if isinstance(g.get("weights"), Mapping)), None)
    _nvfp4_group(size)
    # an input scale per matrix, unless weight-only or activations scaled on the fly
    acts = [g.get("input_activations") for g in groups]
    dynamic = bool(acts) and all(isinstance(a, Mapping) and a.get("dynamic") is True for a in acts)
    key = "exclude_modules" if "exclude_modules" in inner else "ignore"
    return _nvfp4_excluding(inner.get(key), key, input_scale=algo == "NVFP4" and not dynamic)


def compressed_tensors_nvfp4(q: Mapping[str, Any]) -> QuantFormat:
    """compressed-tensors (llm-compressor) NVFP4: ``format: nvfp4-pack-quantized``, every group's
    weights float 4-bit in groups of 16; an input global scale where the groups quantize inputs
    (NVFP4), none where they do not (NVFP4A16)."""
    groups = [g for g in (q.get("config_groups") or {}).values() if isinstance(g, Mapping)]
    kinds = {str(g.get("format") or q.get("format") or "") for g in groups} or {
        str(q.get("format") or "")}
    if kinds != {"nvfp4-pack-quantized"}:
        raise UsageError("quantization_config: compressed-tensors format "
                         f"{', '.join(sorted(kinds)) or None!r} is not supported "
                         "(nvfp4-pack-quantized); pass --dtype")
    for g in groups:
        weights = g.get("weights")
        w: Mapping[str, Any] = weights if isinstance(weights, Mapping) else {}
        if w.get("type") != "float" or w.get("num_bits") != 4:
            raise UsageError("quantization_config: compressed-tensors weights "
                             f"{w.get('type')!r} {w.get('num_bits')!r}-bit are not NVFP4 (float "
                             "4-bit); pass --dtype")
        _nvfp4_group(w.get("group_size"))
        if "lm_head" in (g.get("targets") or ()):
            raise UsageError("quantization_config: compressed-tensors NVFP4 with lm_head among "
                             "the targets is not supported (lm_head is kept bf16); pass --dtype")
    inputs = {bool(g.get("input_activations")) for g in groups}
    if len(inputs) > 1:
        raise UsageError("quantization_config: compressed-tensors groups with and without input "
                         "activations are not supported; pass --dtype")
    return _nvfp4_excluding(q.get("ignore"), "ignore", input_scale=inputs != {False})


def _nvfp4_group(size: object) -> None:
    if size is not None and size != 16:
        raise UsageError(f"quantization_config: NVFP4 group_size {size!r} is not supported "
                         "(16); pass --dtype")


_NUMBERED = re.compile(r"\.(\d+)(?=\.|$)")


def _nvfp4_excluding(entries: object, key: str, *, input_scale: bool) -> QuantFormat:
    """NVFP4 with a config's exclusions kept bf16 beside ModelOpt's own: a module name (its
    tensors), a wildcard, ``re:`` a regular expression; one naming a layer (model.layers.3.mlp.gate)
    holds in that layer only."""
    if entries is None:
        entries = []
    if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
        raise UsageError(f"quantization_config: {key} must be a list of module names")
    keep: list[str] = []
    regex: list[str] = []
    layers: dict[str, set[int]] = {}
    for entry in entries:
        if entry.startswith("re:"):
            regex.append(entry[3:])
            continue
        numbers = _NUMBERED.findall(entry)
        if len(numbers) > 1:
            raise UsageError(f"quantization_config: {key} entry {entry!r} names one expert or "
                             "sub-block of a layer, which is not supported; pass --dtype")
        patterns = (entry,) if entry.endswith("*") else (entry, entry + ".*")
        if not numbers:
            keep += patterns
            continue
        for p in patterns:
            layers.setdefault(_NUMBERED.sub("." + LAYER, p, count=1), set()).add(int(numbers[0]))
    return nvfp4(input_scale=input_scale, keep=tuple(keep),
                 keep_layers=tuple((p, frozenset(ix)) for p, ix in layers.items()),
                 keep_regex=tuple(regex))


def stored_gguf(q: Mapping[str, Any]) -> StoredFormat:
    """A GGUF file's storage (:func:`llmcalc.inputs.gguf_model.quantization_config`): its bytes by ggml
    type as the tensor table gives them; the KV cache at f16, llama.cpp's default cache type."""
    types = q.get("types")
    rows = tuple(LayoutBytes(str(k), int(v[1]), int(v[2])) for k, v in types.items()
                 ) if isinstance(types, Mapping) else ()
    kind = str(q.get("file_type") or "/".join(r.layout for r in rows))
    return StoredFormat(f"gguf {kind}", "as the GGUF file stores it", {}, "the file's tensor table",
                        kv_default=DType.fp16, stored=rows,
                        expert_bytes=int(q.get("expert_bytes", 0)),
                        layer_bytes=tuple(int(b) for b in q.get("layer_bytes") or ()),
                        head_bytes=int(q.get("head_bytes", 0)),
                        embed_bytes=int(q.get("embed_bytes", 0)))


def is_routed_expert(t: Tensor) -> bool:
    """A routed expert's tensor (what a decode step reads only for the experts its tokens reach)."""
    return t.experts > 0


# Lookup tables [rows, width] a token reads one row of: an embedding lookup is a gather —
# transformers' nn.Embedding (torch.nn.functional.embedding) and llama.cpp's ggml_get_rows read
# only the rows of the ids looked up (token ids; position ids for learned positions, GPT-2's wpe;
# Gemma 3n's per-layer embeddings, [vocab, layers × width], by token id).
GATHERED = frozenset({"embed/tokens", "embed/positions", "embed/per_layer", "embed/token_types",
                      "embed/segments"})


def gathered_tables(spec: ModelSpec) -> tuple[Tensor, ...]:
    """The main part's 2-D lookup tables (``GATHERED``) a step reads only rows of: not one a matmul
    shares (a tied lm_head multiplies every token by the whole table, so it is read whole, once)."""
    whole = {t.tied_to for t, _ in spec.all_tensors() if t.tied_to is not None and t.matmul}
    return tuple(t for t, g in spec.main_tensors()
                 if g is None and t.tied_to is None and t.component in GATHERED
                 and len(t.shape) == 2 and t.name not in whole)


def _gathered_bytes(spec: ModelSpec, fmt: WeightFormat) -> list[tuple[int, int]]:
    """(bytes, rows) of each of :func:`gathered_tables`: a GGUF file's own token_embd bytes."""
    tables = gathered_tables(spec)
    if isinstance(fmt, StoredFormat):  # llama.cpp's GGUF holds one lookup table, token_embd
        return [(fmt.embed_bytes, t.shape[0]) for t in tables if t.component == "embed/tokens"]
    def only(table: Tensor) -> Callable[[Tensor], bool]:
        return lambda x: x is table

    return [(weight_bytes(spec, fmt, select=only(t)), t.shape[0]) for t in tables]


# A whole multimodal model's input towers: a text prompt and the tokens generated after it run
# none of them (transformers' Qwen3_5MoeModel.forward calls the visual tower only when
# pixel_values are given; llama.cpp keeps a tower in its own mmproj file, which llama-bench never
# loads), so a text step reads none of their weights.
TOWER_PARTS = frozenset({"vision", "projector", "audio", "audio_projector"})
# An encoder–decoder's encoder runs once over the input, in the prefill (its FLOPs are there:
# flops.forward_flops_per_sequence); a decode step runs the decoder alone and reads none of it.
ENCODER_PARTS = frozenset({"encoder"})


def _tower(spec: ModelSpec, parts: frozenset[str] = TOWER_PARTS) -> frozenset[int]:
    """The ids of the tensors of ``spec``'s parts named in ``parts`` (the input towers')."""
    return frozenset(id(t) for p in spec.parts if p.name in parts for t, _ in p.all_tensors())


def tower_bytes(spec: ModelSpec, fmt: WeightFormat, parts: frozenset[str] = TOWER_PARTS) -> int:
    """Bytes of ``spec``'s input towers (``TOWER_PARTS``, or the parts named) in ``fmt``; 0 for a
    file's stored bytes, which are known by type only (a GGUF file holds the language model
    alone)."""
    tower = _tower(spec, parts)
    if not tower or isinstance(fmt, StoredFormat):
        return 0
    return weight_bytes(spec, fmt, select=lambda t: id(t) in tower)


def _unrun(decode: bool) -> frozenset[str]:
    """The parts a text step does not run: the towers, and in a decode step the encoder too."""
    return TOWER_PARTS | ENCODER_PARTS if decode else TOWER_PARTS


def run_weight_bytes(spec: ModelSpec, fmt: WeightFormat, *, decode: bool = False) -> int:
    """Bytes of the weights a text step runs through, each whole: all but the input towers'
    (:func:`tower_bytes`), and in a ``decode`` step an encoder's (``ENCODER_PARTS``)."""
    return weight_bytes(spec, fmt) - tower_bytes(spec, fmt, _unrun(decode))


def step_weight_bytes(spec: ModelSpec, fmt: WeightFormat, *, tokens: int,
                      decode: bool = False) -> int:
    """Weight bytes one forward step of text over ``tokens`` tokens reads: of the weights it runs
    through (:func:`run_weight_bytes`) the routed experts those tokens reach,
    E·(1 − (1 − k/E)^tokens) of E (expected under uniform routing), of each lookup table
    (:func:`gathered_tables`) the rows looked up, min(tokens, rows) of them, and the rest whole."""
    total = run_weight_bytes(spec, fmt, decode=decode)
    for size, rows in _gathered_bytes(spec, fmt):
        total -= size - size * min(tokens, rows) // rows
    if spec.moe is None:
        return total
    tower = _tower(spec, _unrun(decode))  # a tower's own experts (dots3-note's) are not run
    experts = (weight_bytes(spec, fmt, select=lambda t: is_routed_expert(t) and id(t) not in tower)
               if tower and not isinstance(fmt, StoredFormat)
               else weight_bytes(spec, fmt, select=is_routed_expert))
    e, k = spec.moe.num_experts, spec.experts_per_tok()
    touched = 1 - (1 - k / e) ** tokens
    return total - experts + round(experts * touched)


def gathered_row_bytes(spec: ModelSpec, fmt: WeightFormat) -> tuple[int, float]:
    """(bytes of the lookup tables, bytes one token reads of them: a row of each)."""
    parts = _gathered_bytes(spec, fmt)
    return sum(b for b, _ in parts), sum(b / r for b, r in parts)


# ---- bytes of a whole model ----------------------------------------------------------------------


def breakdown(
    spec: ModelSpec, fmt: WeightFormat, *, select: Callable[[Tensor], bool] | None = None
) -> tuple[LayoutBytes, ...]:
    """Bytes of every stored tensor (tied ones once; only those ``select`` keeps) grouped by the
    layout each is stored in; the parts add up to :func:`weight_bytes`."""
    if isinstance(fmt, StoredFormat):
        if select is None:
            return fmt.stored
        if select is is_routed_expert:
            return (LayoutBytes("routed experts", 0, fmt.expert_bytes),)
        raise UsageError(f"{fmt.name}: the file's bytes are known by type, not by this selection")
    totals: dict[str, list[int]] = {}

    def add(lay: Layout, t: Tensor, times: int) -> None:
        row = totals.setdefault(lay.name, [0, 0])
        row[0] += t.numel * times
        row[1] += tensor_bytes(lay, t) * times

    if isinstance(fmt, QuantFormat) and fmt.gguf:
        m = mix(spec, fmt.gguf)
        main = {id(t) for t, _ in spec.main_tensors()}
        for t, g in spec.all_tensors():
            if t.tied_to is None and (select is None or select(t)):
                for kind, times in m.types(t, None if g is None else g.layers,
                                           main=id(t) in main):
                    add(GGML_LAYOUTS[kind], t, times)
        return tuple(LayoutBytes(k, e, b) for k, (e, b) in totals.items())
    for t, g in spec.all_tensors():
        if t.tied_to is not None or (select is not None and not select(t)):
            continue
        if isinstance(fmt, DType):
            row = totals.setdefault(fmt.value, [0, 0])
            times = len(g.layers) if g is not None else 1
            row[0] += t.numel * times
            row[1] += nbytes(t.numel, fmt) * times
            continue
        if g is None:
            add(fmt.layout(t), t, 1)
        else:
            # exclusions naming single layers: counted over those layers, not walked
            kept = sum(1 for i in fmt.kept_layers(t) if i in g.layers)
            if kept:
                add(fmt.rest, t, kept)
            if len(g.layers) - kept:
                add(fmt.layout(t), t, len(g.layers) - kept)
    return tuple(LayoutBytes(k, e, b) for k, (e, b) in totals.items())


def layer_weight_bytes(spec: ModelSpec, fmt: WeightFormat, *,
                       select: Callable[[Tensor], bool] | None = None) -> list[int]:
    """Bytes of each of the main part's layers in ``fmt`` (llama.cpp's mix layer by layer; only the
    tensors ``select`` keeps): walks the layers, for a split between GPU and system memory."""
    m = mix(spec, fmt.gguf) if isinstance(fmt, QuantFormat) and fmt.gguf else None
    out = [0] * spec.num_layers
    for g in spec.layer_groups:
        for t in g.tensors:
            if t.tied_to is not None or (select is not None and not select(t)):
                continue
            for i in g.layers:
                if isinstance(fmt, DType):
                    out[i] += nbytes(t.numel, fmt)
                elif m is not None:
                    out[i] += tensor_bytes(GGML_LAYOUTS[m.type_at(t, i)], t)
                else:
                    out[i] += tensor_bytes(fmt.rest if i in fmt.kept_layers(t)
                                           else fmt.layout(t), t)
    return out


def stored_matrices(t: Tensor) -> int:
    """Weight matrices a checkpoint stores for one copy of ``t``: each stacked expert's, a fused
    expert ``gate_up_proj`` as its gate_proj and up_proj apart (per-expert checkpoints: Qwen,
    Mixtral, DeepSeek, and their NVFP4 exports)."""
    lead = math.prod(t.shape[:-2]) if len(t.shape) > 2 else 1
    return 2 * lead if t.experts and t.component.endswith("gate_up_proj") else lead


def tensor_bytes(lay: Layout, t: Tensor) -> int:
    """Bytes of ``t`` (all its copies) stored in ``lay``."""
    return lay.nbytes(t.shape, matrices=stored_matrices(t)) * t.copies


def weight_bytes(
    spec: ModelSpec, fmt: WeightFormat, *, select: Callable[[Tensor], bool] | None = None
) -> int:
    """Bytes a checkpoint of ``spec`` stores in ``fmt``: quantized codes, their scales and zero
    points, and the tensors kept in higher precision (only those ``select`` keeps)."""
    return sum(p.bytes for p in breakdown(spec, fmt, select=select))


BNB_NAMES = ("nf4", "fp4", "nf4-nodq", "fp4-nodq")


def format_notes(spec: ModelSpec, fmt: WeightFormat) -> tuple[str, ...]:
    """What a format leaves wide that a reader would not expect: bitsandbytes (transformers'
    ``replace_with_bnb_linear``) swaps only ``nn.Linear`` modules, so experts stored as fused
    parameters stay bf16 — how many, and their bytes (2 each, as :func:`breakdown` counts them);
    and mxfp4, gpt-oss's layout (experts MXFP4, the rest bf16), on a model with no experts: every
    weight stays bf16."""
    if isinstance(fmt, QuantFormat) and fmt.name == "mxfp4" and spec.moe is None:
        return (f"mxfp4: gpt-oss's layout puts only a mixture's experts in MXFP4; {spec.name} has "
                "no experts, so every weight stays bf16 (a GGUF file of llama-quantize's "
                "MXFP4_MOE type is --dtype mxfp4_moe)",)
    if not isinstance(fmt, QuantFormat) or fmt.name not in BNB_NAMES:
        return ()
    [wide] = breakdown(spec, DType.bf16, select=_fused_expert) or (LayoutBytes("bf16", 0, 0),)
    if not wide.elements:
        return ()
    return (f"{fmt.name}: bitsandbytes quantizes only nn.Linear, so the fused expert weights "
            f"({wide.elements:,} parameters, {wide.bytes:,} bytes) stay bf16",)


def _fused_expert(t: Tensor) -> bool:
    return role(t) == "experts"


def resolve_format(spec: ModelSpec, text: str | None, *, option: str = "--dtype") -> WeightFormat:
    """``--dtype`` as given, or else (or ``auto``, as vLLM's and transformers' own default is
    spelt) the config's ``quantization_config``, or else bf16."""
    if text is not None and named(text):
        return parse_weight_format(text, option=option)
    return from_config(spec.config) or DType.bf16
