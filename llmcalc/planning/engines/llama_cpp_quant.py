"""An HF config in llama.cpp with a GGUF quant type (``memory MODEL --engine llama.cpp --dtype
q4_k_m``): the GGUF header llama.cpp's converter and ``llama-quantize`` would write for it — the
tensors under llama.cpp's names and ggml shapes, each of the type llama.cpp's default mix for that
quant type gives it — so that every engine rule (buffers, placement, --fit) reads it as a file.

Each tensor's type is llama.cpp's mix as :mod:`llmcalc.formulas.gguf_mix` gives it (the one
implementation of llama-quant.cpp's ``llama_tensor_get_type``, which the weights' bytes without an
engine read too), the tensors taken in the order the quantizer visits them: by layer, then by name
(``llama-model-loader.h``, ``weight_name_comparer``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from llmcalc.errors import UsageError
from llmcalc.formulas import gguf_mix
from llmcalc.formulas.gguf_mix import ARCHS
from llmcalc.formulas.quant import FORMATS
from llmcalc.inputs.gguf_file import GgufHeader, GgufTensor
from llmcalc.model.spec import LAYER, ModelSpec
from llmcalc.planning.engines.llama_cpp import row_bytes
from llmcalc.units import DType

# --dtype → llama-quantize's type: its default ggml type (llama_ftype_get_default_type)
FTYPES = {**gguf_mix.QUANT_TYPES, "fp16": "F16", "bf16": "BF16", "fp32": "F32"}
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


def convert(spec: ModelSpec, dtype: str) -> Converted:
    """The GGUF header of ``spec`` converted and quantized to ``dtype`` (a llama-quantize type,
    fp16, bf16, fp32), with its data laid out back to back at 32-byte alignment."""
    model_type = str(spec.config.get("model_type", ""))
    arch = ARCHS.get(model_type)
    if arch is None:
        raise UsageError(f"{spec.name}: model_type {model_type!r} as a GGUF for --engine llama.cpp "
                         f"is followed for {', '.join(sorted(ARCHS))}; name a GGUF file")
    key = DType(dtype).value if dtype in {d.value for d in DType} else gguf_mix.canonical(dtype)
    if key not in FTYPES:
        raise UsageError(f"--dtype {dtype}: with --engine llama.cpp an HF config takes a GGUF quant "
                         f"type: {', '.join(FTYPES)}")
    base = FTYPES[key]
    tensors = list(_gguf_tensors(spec))
    model = gguf_mix.model_of(spec, key) if key in gguf_mix.QUANT_TYPES else None
    kinds = mix_types(tensors, model, base, spec.shape.num_layers)
    out: list[GgufTensor] = []
    offset = 0
    for (name, ne), kind in zip(tensors, kinds, strict=True):
        elements = 1
        for x in ne:
            elements *= x
        nbytes = row_bytes(kind, ne[0]) * (elements // ne[0])
        out.append(GgufTensor(name, kind, ne, elements, nbytes, offset))
        offset += -(-nbytes // GGUF_ALIGNMENT) * GGUF_ALIGNMENT
    n_expert = int(spec.config.get("num_local_experts") or spec.config.get("num_experts") or 0)
    metadata = _metadata(spec, arch, n_expert)
    header = GgufHeader(f"{spec.name} ({key}, as llama.cpp would convert it)", 3, metadata,
                        tuple(out), 0)
    mix = FORMATS[key].description if key in FORMATS else f"GGUF {key.upper()}"
    approximate = ("approximate: the tensors' order in the quantized file is taken as the "
                   "converter's; it decides where the CPU buffer's mapped range ends (totals do "
                   "not depend on it)" if key in gguf_mix.QUANT_TYPES and key not in ("q8_0", "q4_0")
                   else "")
    return Converted(header, f"llama.cpp's default {mix}", approximate)


def mix_types(tensors: list[tuple[str, tuple[int, ...]]], model: gguf_mix.Model | None,
              base: str, n_layer: int) -> list[str]:
    """Each GGUF tensor's ggml type (``tensors``: name and ggml shape, in the file's order) as
    llama-quantize gives it: llama_tensor_get_type's running counts (i_attention_wv of
    n_attention_wv; ``layer_info``: ffn_down / gate / up by layer with several experts, else
    counted), taken in the quantizer's order; ``model`` None: every quantized tensor ``base``."""
    order = sorted(range(len(tensors)), key=lambda k: _visit_key(tensors[k][0]))
    n_wv = sum(1 for n, ne in tensors
               if gguf_mix.gguf_quantized(n, ne) and gguf_mix.gguf_category(n) == gguf_mix.ATTN_V)
    place: dict[int, tuple[int, int]] = {}  # tensor → (its count, what use_more_bits divides)
    counts = {gguf_mix.ATTN_V: 0, gguf_mix.FFN_DOWN: 0, gguf_mix.FFN_GATE: 0, gguf_mix.FFN_UP: 0}
    low_iq = model is not None and model.quant in gguf_mix.LOW_IQ
    for k in order:
        name, ne = tensors[k]
        cat = gguf_mix.gguf_category(name)
        if not gguf_mix.gguf_quantized(name, ne) or cat not in counts:
            continue
        if cat == gguf_mix.ATTN_V:
            place[k] = (counts[cat], n_wv)
        elif model and model.n_expert > 1 and not (low_iq and cat == gguf_mix.FFN_DOWN):
            place[k] = (int(name.split(".")[1]), n_layer)  # layer_info: from the name
        else:
            place[k] = (counts[cat], n_layer)
        counts[cat] += 1
    kinds = []
    for k, (name, ne) in enumerate(tensors):
        kind = "F32"
        if gguf_mix.gguf_quantized(name, ne):
            kind = base
            if model is not None:
                i, n = place.get(k, (0, 0))
                kind = gguf_mix.tensor_type(model, gguf_mix.gguf_category(name), ne[0], i=i, n=n,
                                            experts=len(ne) > 2 and ne[2] > 1)
        kinds.append(kind)
    return kinds


def _visit_key(name: str) -> tuple[int, str]:
    """llama-model-loader.h weight_name_comparer: by layer (-1 outside the layers), then name."""
    m = re.match(r"blk\.(\d+)\.", name)
    return (int(m.group(1)) if m else -1, name)


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

