"""An HF config in llama.cpp with a GGUF quant type (``memory MODEL --engine llama.cpp --dtype
q4_k_m``): the GGUF header llama.cpp's converter and ``llama-quantize`` would write for it — the
tensors under llama.cpp's names and ggml shapes, each of the type llama.cpp's default mix for that
quant type gives it — so that every engine rule (buffers, placement, --fit) reads it as a file.

The mix follows llama-cpp-python 0.3.36's ``vendor/llama.cpp/src/llama-quant.cpp``:
``tensor_allows_quantization`` (1-D tensors, norms and ``ffn_gate_inp`` routers stay as converted,
F32), ``llama_tensor_get_type_impl`` (for Q4_K_M: ``output.weight`` — and a tied ``token_embd`` —
Q6_K, or Q8_0 where its rows are not whole 256-blocks; ``attn_v`` (and a fused ``attn_qkv``,
``category_is_attn_v``) and ``ffn_down`` Q6_K in the
layers ``use_more_bits`` picks; an 8-expert model's ``attn_v``/``attn_k`` Q8_0 and ``attn_output``
Q5_K; a 70B's other ``attn_v`` Q5_K) and ``tensor_type_fallback`` (rows that are not whole blocks:
Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0, then F16). ``use_more_bits`` is llmcalc's own
(llmcalc.formulas.quant), the rule the k-quant layouts there use.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from llmcalc.errors import UsageError
from llmcalc.formulas.quant import FORMATS, use_more_bits
from llmcalc.inputs.gguf_file import GgufHeader, GgufTensor
from llmcalc.model.spec import LAYER, ModelSpec
from llmcalc.planning.engines.llama_cpp import row_bytes
from llmcalc.units import DType

# model_type → the GGUF architecture convert_hf_to_gguf.py writes (Mistral and Mixtral as llama)
ARCHS = {"llama": "llama", "mistral": "llama", "mixtral": "llama", "qwen2": "qwen2",
         "qwen3": "qwen3", "qwen2_moe": "qwen2moe", "qwen3_moe": "qwen3moe", "gemma2": "gemma2",
         "gemma3_text": "gemma3", "phi3": "phi3"}
# --dtype → llama-quantize's type: its default ggml type (llama_ftype_get_default_type)
FTYPES = {"q4_k_m": "Q4_K", "q8_0": "Q8_0", "q4_0": "Q4_0", "fp16": "F16", "bf16": "BF16",
          "fp32": "F32"}
GGUF_ALIGNMENT = 32  # gguf.h: GGUF_DEFAULT_ALIGNMENT, each tensor's data offset

# HF tensor name (layer as {i}) → llama.cpp's (convert_hf_to_gguf.py's tensor map for these types)
NAMES = [
    (r"model\.embed_tokens\.weight", "token_embd.weight"),
    (r"model\.norm\.weight", "output_norm.weight"),
    (r"lm_head\.weight", "output.weight"),
    (r"model\.layers\.{i}\.input_layernorm\.weight", "blk.{i}.attn_norm.weight"),
    (r"model\.layers\.{i}\.self_attn\.q_proj\.(weight|bias)", "blk.{i}.attn_q.{0}"),
    (r"model\.layers\.{i}\.self_attn\.k_proj\.(weight|bias)", "blk.{i}.attn_k.{0}"),
    (r"model\.layers\.{i}\.self_attn\.v_proj\.(weight|bias)", "blk.{i}.attn_v.{0}"),
    (r"model\.layers\.{i}\.self_attn\.o_proj\.(weight|bias)", "blk.{i}.attn_output.{0}"),
    (r"model\.layers\.{i}\.self_attn\.q_norm\.weight", "blk.{i}.attn_q_norm.weight"),
    (r"model\.layers\.{i}\.self_attn\.k_norm\.weight", "blk.{i}.attn_k_norm.weight"),
    (r"model\.layers\.{i}\.post_attention_layernorm\.weight", "blk.{i}.ffn_norm.weight"),
    (r"model\.layers\.{i}\.self_attn\.qkv_proj\.weight", "blk.{i}.attn_qkv.weight"),
    (r"model\.layers\.{i}\.mlp\.gate_up_proj\.weight", "blk.{i}.ffn_up.weight"),
    (r"model\.layers\.{i}\.mlp\.gate_proj\.weight", "blk.{i}.ffn_gate.weight"),
    (r"model\.layers\.{i}\.mlp\.up_proj\.weight", "blk.{i}.ffn_up.weight"),
    (r"model\.layers\.{i}\.mlp\.down_proj\.weight", "blk.{i}.ffn_down.weight"),
    (r"model\.layers\.{i}\.mlp\.gate\.weight", "blk.{i}.ffn_gate_inp.weight"),
    (r"model\.layers\.{i}\.mlp\.experts\.gate_up_proj", "blk.{i}.ffn_gate_up_exps"),
    (r"model\.layers\.{i}\.mlp\.experts\.down_proj", "blk.{i}.ffn_down_exps.weight"),
    (r"model\.layers\.{i}\.mlp\.shared_expert\.(gate|up|down)_proj\.weight",
     "blk.{i}.ffn_{0}_shexp.weight"),
    (r"model\.layers\.{i}\.mlp\.shared_expert_gate\.weight", "blk.{i}.ffn_gate_inp_shexp.weight"),
]


# Gemma's norms: post_attention_layernorm follows attention (conversion/gemma.py's tensor map)
GEMMA_NAMES = [
    (r"model\.layers\.{i}\.post_attention_layernorm\.weight", "blk.{i}.post_attention_norm.weight"),
    (r"model\.layers\.{i}\.pre_feedforward_layernorm\.weight", "blk.{i}.ffn_norm.weight"),
    (r"model\.layers\.{i}\.post_feedforward_layernorm\.weight", "blk.{i}.post_ffw_norm.weight"),
]


@dataclass(frozen=True)
class Converted:
    header: GgufHeader
    mix: str  # how the mix is named: llama.cpp's default mix for the type
    approximate: str  # what is not exact ("" when nothing)


def _gguf_tensors(spec: ModelSpec) -> Iterator[tuple[str, tuple[int, ...]]]:
    """(llama.cpp name, ggml shape) of every tensor the converter writes, in layer order."""
    table = (GEMMA_NAMES if spec.config.get("model_type") in ("gemma2", "gemma3_text") else []) + NAMES
    compiled = [(re.compile(hf.replace("{i}", re.escape(LAYER)) + "$"), gg) for hf, gg in table]

    def name(hf: str) -> str:
        for pattern, gg in compiled:
            m = pattern.match(hf)
            if m:
                return gg.replace("{0}", m.group(1)) if m.groups() else gg
        raise UsageError(f"{spec.name}: tensor {hf} has no llama.cpp name llmcalc knows")

    layers: dict[int, list[tuple[str, str, tuple[int, ...]]]] = {}
    head: list[tuple[str, tuple[int, ...]]] = []
    tail: list[tuple[str, tuple[int, ...]]] = []
    for t, group in spec.all_tensors():
        if t.tied_to is not None:
            continue  # a tied lm_head: llama.cpp loads token_embd again
        gg = name(t.name)
        shape = tuple(reversed(t.shape))  # ggml order: the row length first
        if group is None:
            (head if gg.startswith("token_embd") else tail).append((gg, shape))
            continue
        for il in group.layers:
            layers.setdefault(il, []).append((t.name, gg.replace(LAYER, str(il)), shape))
    yield from _rope_tensors(spec)
    yield from head
    for il in sorted(layers):
        for _hf, gg, shape in sorted(layers[il]):  # a shard's tensors in name order
            if gg.endswith("ffn_gate_up_exps"):  # the converter splits the fused experts
                d, ff2, n_exp = shape
                yield gg.replace("gate_up", "gate") + ".weight", (d, ff2 // 2, n_exp)
                yield gg.replace("gate_up", "up") + ".weight", (d, ff2 // 2, n_exp)
            else:
                yield gg, shape
    yield from sorted(tail)


def _rope_tensors(spec: ModelSpec) -> Iterator[tuple[str, tuple[int, ...]]]:
    """The RoPE factors the converter precomputes, [head_dim / 2] F32: Llama 3.1's rope_freqs
    (conversion/llama.py, rope_type llama3), Phi-3's long and short factors (conversion/phi.py,
    longrope)."""
    rope = spec.config.get("rope_scaling") or {}
    kind = str(rope.get("rope_type") or rope.get("type") or "").lower()
    half = (spec.shape.head_dim or spec.shape.hidden_size // spec.shape.num_heads) // 2
    if kind == "llama3" and spec.config.get("model_type") in ("llama", "mistral"):
        yield "rope_freqs.weight", (half,)
    if kind in ("longrope", "su") and spec.config.get("model_type") == "phi3":
        yield "rope_factors_long.weight", (half,)
        yield "rope_factors_short.weight", (half,)


def _quantized(name: str, shape: tuple[int, ...]) -> bool:
    # llama-quant.cpp: tensor_allows_quantization (a "weight" of 2+ dims, not a norm or a router)
    return (name.endswith("weight") and len(shape) >= 2 and "_norm.weight" not in name
            and "ffn_gate_inp.weight" not in name and "ffn_gate_inp_shexp" not in name)


def _block(type_name: str) -> int:
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    return GGML_QUANT_SIZES[GGMLQuantizationType[type_name]][0]


def _fallback(type_name: str, ne0: int) -> str:
    # llama-quant.cpp: tensor_type_fallback
    if ne0 % _block(type_name) == 0:
        return type_name
    smaller = {"Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0"}.get(type_name, type_name)
    return smaller if ne0 % _block(smaller) == 0 else "F16"


def convert(spec: ModelSpec, dtype: str) -> Converted:
    """The GGUF header of ``spec`` converted and quantized to ``dtype`` (q4_k_m, q8_0, q4_0, fp16,
    bf16, fp32), with its data laid out back to back at 32-byte alignment."""
    model_type = str(spec.config.get("model_type", ""))
    arch = ARCHS.get(model_type)
    if arch is None:
        raise UsageError(f"{spec.name}: model_type {model_type!r} as a GGUF for --engine llama.cpp "
                         f"is followed for {', '.join(sorted(ARCHS))}; name a GGUF file")
    key = DType(dtype).value if dtype in {d.value for d in DType} else dtype
    if key not in FTYPES:
        raise UsageError(f"--dtype {dtype}: with --engine llama.cpp an HF config takes a GGUF quant "
                         f"type: {', '.join(FTYPES)}")
    base = FTYPES[key]
    shape = spec.shape
    n_layer = shape.num_layers
    n_expert = int(spec.config.get("num_local_experts") or spec.config.get("num_experts") or 0)
    gqa = shape.num_heads != shape.num_kv_heads
    is_70b = n_layer == 80 and (arch == "qwen2" or (arch == "llama" and gqa and not n_expert))
    tensors = list(_gguf_tensors(spec))
    names = {n for n, _ in tensors}
    tied = "output.weight" not in names
    n_wv = sum(1 for n, _ in tensors if n.endswith(("attn_v.weight", "attn_qkv.weight")))
    i_wv = i_down = 0
    out: list[GgufTensor] = []
    offset = 0
    for name, ne in tensors:
        kind = "F32"
        if _quantized(name, ne):
            kind = base
            if base not in ("F16", "BF16", "F32"):
                kind = _mix_type(key, base, name, ne, n_layer=n_layer, n_expert=n_expert,
                                 tied=tied, is_70b=is_70b, i_wv=i_wv, n_wv=n_wv, i_down=i_down)
                kind = _fallback(kind, ne[0])
            if name.endswith(("attn_v.weight", "attn_qkv.weight")):
                i_wv += 1
            if "ffn_down" in name:
                i_down += 1
        elements = 1
        for x in ne:
            elements *= x
        nbytes = row_bytes(kind, ne[0]) * (elements // ne[0])
        out.append(GgufTensor(name, kind, ne, elements, nbytes, offset))
        offset += -(-nbytes // GGUF_ALIGNMENT) * GGUF_ALIGNMENT
    metadata = _metadata(spec, arch, n_expert)
    header = GgufHeader(f"{spec.name} ({key}, as llama.cpp would convert it)", 3, metadata,
                        tuple(out), 0)
    mix = FORMATS[key].description if key in FORMATS else f"GGUF {key.upper()}"
    approximate = ("approximate: the tensors' order in a converted file (taken as layer order) "
                   "decides which layers' attn_v and ffn_down get more bits and where the CPU "
                   "buffer's mapped range ends; totals do not depend on it"
                   if key == "q4_k_m" else "")
    return Converted(header, f"llama.cpp's default {mix}", approximate)


def _mix_type(ftype: str, base: str, name: str, ne: tuple[int, ...], *, n_layer: int,
              n_expert: int, tied: bool, is_70b: bool, i_wv: int, n_wv: int, i_down: int) -> str:
    """llama-quant.cpp: llama_tensor_get_type_impl for the types --dtype names."""
    if name == "output.weight" or (tied and name == "token_embd.weight"):
        # OUTPUT (and a tied TOKEN_EMBD): Q8_0 where rows are not whole blocks, else Q6_K
        if ne[0] % _block(base) != 0:
            return "Q8_0"
        return base if base == "Q8_0" else "Q6_K"
    if ftype != "q4_k_m":
        return base
    if name.endswith(("attn_v.weight", "attn_qkv.weight")):  # category_is_attn_v
        kind = "Q6_K" if use_more_bits(i_wv, n_wv) else base
        if is_70b and kind == "Q4_K":
            kind = "Q5_K"
        return "Q8_0" if n_expert == 8 else kind
    if name.endswith("attn_k.weight"):
        return "Q8_0" if n_expert == 8 else base
    if "ffn_down" in name:
        # layer_info: the counter for one expert, the block number from the name for several
        il = int(name.split(".")[1]) if n_expert > 1 else i_down
        return "Q6_K" if use_more_bits(il, n_layer) else base
    if name.endswith("attn_output.weight") and n_expert == 8:
        return "Q5_K"
    return base


def _metadata(spec: ModelSpec, arch: str, n_expert: int) -> dict[str, Any]:
    """The {arch}.* keys llama.cpp's load_hparams reads (the converter's names)."""
    s = spec.shape
    meta: dict[str, Any] = {
        "general.architecture": arch,
        f"{arch}.block_count": s.num_layers,
        f"{arch}.embedding_length": s.hidden_size,
        f"{arch}.attention.head_count": s.num_heads,
        f"{arch}.attention.head_count_kv": s.num_kv_heads,
        f"{arch}.context_length": s.max_position_embeddings or 0,
    }
    if s.head_dim and s.head_dim * s.num_heads != s.hidden_size:
        meta[f"{arch}.attention.key_length"] = meta[f"{arch}.attention.value_length"] = s.head_dim
    if s.intermediate_size:
        meta[f"{arch}.feed_forward_length"] = s.intermediate_size
    window = spec.config.get("sliding_window")
    if arch in ("gemma2", "gemma3") and window:
        # conversion/gemma.py: the window, and which layers slide (transformers' layer_types)
        meta[f"{arch}.attention.sliding_window"] = int(window)
        kinds = spec.config.get("layer_types")
        if isinstance(kinds, list) and len(kinds) == s.num_layers:
            meta[f"{arch}.attention.sliding_window_pattern"] = [k == "sliding_attention"
                                                                for k in kinds]
        elif spec.config.get("sliding_window_pattern"):
            period = int(spec.config["sliding_window_pattern"])
            meta[f"{arch}.attention.sliding_window_pattern"] = [
                (il + 1) % period != 0 for il in range(s.num_layers)]
    if n_expert:
        meta[f"{arch}.expert_count"] = n_expert
        meta[f"{arch}.expert_used_count"] = int(spec.config.get("num_experts_per_tok") or 0)
    return meta

