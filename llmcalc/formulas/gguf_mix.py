"""llama.cpp's choice of a ggml type for each tensor when ``llama-quantize`` writes a GGUF of a
quant type (``--dtype q4_k_m``, ``q4_0``, ``q8_0``): the one implementation behind both the weight
bytes of an HF config (:mod:`llmcalc.formulas.quant`) and the GGUF an HF config converts to
(:mod:`llmcalc.planning.engines.llama_cpp_quant`).

Source: llama-cpp-python 0.3.36, ``vendor/llama.cpp/src/llama-quant.cpp``:

- ``tensor_get_category``: a tensor's category from its GGUF name (``attn_qkv`` before ``attn_v``);
  ``category_is_attn_v``: attn_v, a fused attn_qkv and attn_kv_b are treated alike — so the
  ``ATTENTION_QKV`` branch of ``llama_tensor_get_type_impl`` is never reached and a fused qkv gets
  attn_v's type.
- ``tensor_allows_quantization``: 2-D and 3-D tensors (``ggml_n_dims``: trailing sizes of 1 do not
  count) whose name ends in ``weight``, not norms, not the ``ffn_gate_inp`` routers; what is not
  quantized keeps the converter's type (F32 for these).
- ``llama_tensor_get_type_impl`` for the quant types ``--dtype`` names: OUTPUT (and TOKEN_EMBD when
  there is no ``output.weight``, ``has_tied_embeddings``) Q6_K, or Q8_0 where its rows are not whole
  blocks of the quant type or the type is Q8_0; for Q4_K_M, attn_v-like tensors Q6_K where
  ``use_more_bits(i_attention_wv, n_attention_wv)`` (the i-th attn_v-like tensor of all), a 70B's
  others Q5_K, an 8-expert model's Q8_0; an 8-expert model's attn_k Q8_0 and attn_output Q5_K;
  ffn_down Q6_K where ``use_more_bits(i_layer, n_layer)`` — with more than one expert the layer
  from the name, else the running count of ffn_down tensors (``layer_info``; ``n_ffn_down`` is
  ``n_layer_all`` in ``init_quantize_state_counters``).
- ``tensor_type_fallback``: rows that are not whole blocks: Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0,
  Q2_K / Q3_K / TQ1_0 / TQ2_0 → Q4_0, the 256-block i-quants → IQ4_NL, a 32-block type kept; F16
  if that still does not divide the row.
- the quantizer visits tensors by layer, then by name (``llama-model-loader.h``,
  ``weight_name_comparer``), so the running counts follow the layers.
- ``LLM_TYPE_70B`` (``models/llama.cpp``: 80 layers with GQA and not 8 experts; ``models/qwen2.cpp``:
  80 layers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from llmcalc.errors import UsageError
from llmcalc.model.spec import LayerSet, ModelSpec, Run, Tensor

# model_type → the GGUF architecture convert_hf_to_gguf.py writes (Mistral and Mixtral as llama)
ARCHS = {"llama": "llama", "mistral": "llama", "mixtral": "llama", "qwen2": "qwen2",
         "qwen3": "qwen3", "qwen2_moe": "qwen2moe", "qwen3_moe": "qwen3moe", "gemma2": "gemma2",
         "gemma3_text": "gemma3", "phi3": "phi3"}
# --dtype → llama-quantize's file type (tools/quantize/quantize.cpp QUANT_OPTIONS, lower-case) and
# its default ggml type (llama-quant.cpp llama_ftype_get_default_type). Q1_0 and Q2_0 (new in this
# build: Q1_0's rows of 128 have no fallback, Q2_0 no size in gguf-py) are not followed.
QUANT_TYPES = {
    "q4_0": "Q4_0", "q4_1": "Q4_1", "q5_0": "Q5_0", "q5_1": "Q5_1", "q8_0": "Q8_0",
    "mxfp4_moe": "MXFP4", "q2_k": "Q2_K", "q2_k_s": "Q2_K", "q3_k_s": "Q3_K", "q3_k_m": "Q3_K",
    "q3_k_l": "Q3_K", "q4_k_s": "Q4_K", "q4_k_m": "Q4_K", "q5_k_s": "Q5_K", "q5_k_m": "Q5_K",
    "q6_k": "Q6_K", "iq2_xxs": "IQ2_XXS", "iq2_xs": "IQ2_XS", "iq2_s": "IQ2_XS", "iq2_m": "IQ2_S",
    "iq3_xxs": "IQ3_XXS", "iq3_xs": "IQ3_S", "iq3_s": "IQ3_S", "iq3_m": "IQ3_S", "iq1_s": "IQ1_S",
    "iq1_m": "IQ1_M", "iq4_nl": "IQ4_NL", "iq4_xs": "IQ4_XS", "tq1_0": "TQ1_0", "tq2_0": "TQ2_0"}
# other names of the same types: llama-quantize's aliases (Q3_K, Q4_K, Q5_K: the _M mixes) and
# the names llama.cpp prints for a file's type (llama-model-loader.cpp llama_ftype_name: what
# llama-bench's "model" column and the load log show, e.g. "Q4_K - Medium", "IQ3_S mix - 3.66 bpw")
ALIASES = {"q3_k": "q3_k_m", "q4_k": "q4_k_m", "q5_k": "q5_k_m", "mxfp4 moe": "mxfp4_moe",
           "q2_k - medium": "q2_k", "q2_k - small": "q2_k_s", "q3_k - small": "q3_k_s",
           "q3_k - medium": "q3_k_m", "q3_k - large": "q3_k_l", "q4_k - small": "q4_k_s",
           "q4_k - medium": "q4_k_m", "q5_k - small": "q5_k_s", "q5_k - medium": "q5_k_m",
           "tq1_0 - 1.69 bpw ternary": "tq1_0", "tq2_0 - 2.06 bpw ternary": "tq2_0",
           "iq2_xxs - 2.0625 bpw": "iq2_xxs", "iq2_xs - 2.3125 bpw": "iq2_xs",
           "iq2_s - 2.5 bpw": "iq2_s", "iq2_m - 2.7 bpw": "iq2_m", "iq3_xs - 3.3 bpw": "iq3_xs",
           "iq3_xxs - 3.0625 bpw": "iq3_xxs", "iq1_s - 1.5625 bpw": "iq1_s",
           "iq1_m - 1.75 bpw": "iq1_m", "iq4_nl - 4.5 bpw": "iq4_nl", "iq4_xs - 4.25 bpw": "iq4_xs",
           "iq3_s - 3.4375 bpw": "iq3_s", "iq3_s mix - 3.66 bpw": "iq3_m"}


def canonical(text: str) -> str:
    """``text`` lower-cased, a type's other name (``ALIASES``) as its --dtype name."""
    key = " ".join(text.strip().lower().split())
    return ALIASES.get(key, key)


# the file types llama-quantize refuses to write without an importance matrix
# (llama-quant.cpp tensor_requires_imatrix: IQ1/IQ2/IQ3_XXS tensors, Q2_K_S's Q2_K): their mix is
# taken with one (qs.has_imatrix); every other type as llama-quantize writes it by default, without
IMATRIX_TYPES = frozenset({"iq1_s", "iq1_m", "iq2_xxs", "iq2_xs", "iq2_s", "iq2_m", "iq3_xxs",
                           "q2_k_s"})
# ggml-common.h block structs (ggml.c type_traits): (elements per block, bytes per block)
GGML_SIZES = {"F32": (1, 4), "F16": (1, 2), "BF16": (1, 2), "Q4_0": (32, 18), "Q4_1": (32, 20),
              "Q5_0": (32, 22), "Q5_1": (32, 24), "Q8_0": (32, 34), "MXFP4": (32, 17),
              "IQ4_NL": (32, 18), "Q2_K": (256, 84), "Q3_K": (256, 110), "Q4_K": (256, 144),
              "Q5_K": (256, 176), "Q6_K": (256, 210), "IQ2_XXS": (256, 66), "IQ2_XS": (256, 74),
              "IQ2_S": (256, 82), "IQ3_XXS": (256, 98), "IQ3_S": (256, 110), "IQ1_S": (256, 50),
              "IQ1_M": (256, 56), "IQ4_XS": (256, 136), "TQ1_0": (256, 54), "TQ2_0": (256, 66)}
BLOCK = {k: b for k, (b, _) in GGML_SIZES.items()}
# tensor_type_fallback: a 256-block type's 32-block stand-in
SMALLER = {"Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0", "Q2_K": "Q4_0", "Q3_K": "Q4_0",
           "TQ1_0": "Q4_0", "TQ2_0": "Q4_0", "IQ1_S": "IQ4_NL", "IQ1_M": "IQ4_NL",
           "IQ2_XXS": "IQ4_NL", "IQ2_XS": "IQ4_NL", "IQ2_S": "IQ4_NL", "IQ3_XXS": "IQ4_NL",
           "IQ3_S": "IQ4_NL", "IQ4_XS": "IQ4_NL"}
# llama_tensor_get_type_impl's groups of file types
LOW_IQ = frozenset({"iq2_xxs", "iq2_xs", "iq1_s", "iq2_s", "iq2_m", "iq1_m"})
_OUTPUT_Q5_K = LOW_IQ | {"iq3_xxs"}
_MOE8_ATTN_OUTPUT_Q5_K = frozenset({"q2_k", "iq3_xs", "iq3_xxs", "q3_k_s", "q3_k_m", "iq4_nl",
                                    "q4_k_s", "q4_k_m", "iq3_s", "iq3_m", "iq4_xs"})
MAX_WALK = 1 << 20  # attn_v/ffn_down tensors counted one by one where their layers interleave

OUTPUT, TOKEN_EMBD, ATTN_V, ATTN_K, ATTN_Q, ATTN_OUTPUT, FFN_DOWN, FFN_UP, FFN_GATE, OTHER = (
    "output", "token_embd", "attn_v", "attn_k", "attn_q", "attn_output", "ffn_down", "ffn_up",
    "ffn_gate", "other")
# tensor_get_category: GGUF name fragments in the order it tests them
_GGUF_CATEGORIES = (("attn_qkv.weight", ATTN_V), ("attn_kv_b.weight", ATTN_V),
                    ("attn_v.weight", ATTN_V), ("attn_k.weight", ATTN_K),
                    ("attn_q.weight", ATTN_Q), ("attn_output.weight", ATTN_OUTPUT),
                    ("ffn_up", FFN_UP), ("ffn_gate", FFN_GATE), ("ffn_down", FFN_DOWN))
# the same categories for a description's tensors: the component's last part (the HF module name)
_HF_CATEGORIES = {"v_proj": ATTN_V, "qkv": ATTN_V, "qkv_proj": ATTN_V, "k_proj": ATTN_K,
                  "q_proj": ATTN_Q, "o_proj": ATTN_OUTPUT, "down_proj": FFN_DOWN,
                  "fc_out": FFN_DOWN, "fc_in": FFN_UP, "up_proj": FFN_UP, "gate_up_proj": FFN_UP,
                  "gate_proj": FFN_GATE}


def use_more_bits(i: int, n: int) -> bool:
    """llama.cpp ``use_more_bits``: the first and last eighth of the layers, every third between."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def gguf_category(name: str) -> str:
    """llama-quant.cpp ``tensor_get_category`` (attn_v-like categories as one)."""
    if name == "output.weight":
        return OUTPUT
    if name in ("token_embd.weight", "per_layer_token_embd.weight"):
        return TOKEN_EMBD
    return next((cat for part, cat in _GGUF_CATEGORIES if part in name), OTHER)


def hf_category(t: Tensor) -> str:
    """The category llama.cpp gives ``t`` once converted (its GGUF name's)."""
    if t.component == "lm_head":
        return OUTPUT
    if t.component == "embed/tokens":
        return TOKEN_EMBD
    return _HF_CATEGORIES.get(t.component.rsplit("/", 1)[-1], OTHER)


def ggml_n_dims(ne: tuple[int, ...]) -> int:
    """ggml_n_dims of a tensor of ggml shape ``ne`` (row length first): trailing 1s do not count."""
    n = len(ne)
    while n > 1 and ne[n - 1] == 1:
        n -= 1
    return n


def gguf_quantized(name: str, ne: tuple[int, ...]) -> bool:
    """llama-quant.cpp ``tensor_allows_quantization`` for the converted tensors' names."""
    return (ggml_n_dims(ne) >= 2 and name.endswith("weight") and "_norm.weight" not in name
            and "ffn_gate_inp.weight" not in name)


def hf_quantized(t: Tensor) -> bool:
    """The same for a description's tensor: a weight of 2+ ggml dimensions, not a router, a bias
    or a per-expert vector."""
    return (ggml_n_dims(tuple(reversed(t.shape))) >= 2 and t.component != "moe/router"
            and not t.name.endswith("bias") and not (t.experts and not t.matmul))


def fallback(kind: str, ne0: int) -> str:
    """llama-quant.cpp ``tensor_type_fallback`` for rows of ``ne0`` elements."""
    if ne0 % BLOCK[kind] == 0:
        return kind
    smaller = SMALLER.get(kind, kind)
    return smaller if ne0 % BLOCK[smaller] == 0 else "F16"


def is_70b(model_type: str, *, n_layer: int, n_head: int, n_head_kv: int, n_expert: int) -> bool:
    """llama.cpp's LLM_TYPE_70B, the one model size its Q4_K_M mix reads."""
    arch = ARCHS.get(model_type)
    return n_layer == 80 and (arch == "qwen2" or (arch == "llama" and n_head != n_head_kv
                                                  and n_expert != 8))


@dataclass(frozen=True)
class Model:
    """What llama_tensor_get_type_impl reads of the whole model."""

    quant: str  # a QUANT_TYPES key
    n_layer: int
    n_expert: int
    tied: bool  # no output.weight: token_embd takes the output's type
    is_70b: bool
    n_gqa: int = 1  # llama_hparams::n_gqa(): query heads per KV head (integer division)
    imatrix: bool | None = None  # quantized with an importance matrix (None: IMATRIX_TYPES)

    @property
    def has_imatrix(self) -> bool:
        return self.quant in IMATRIX_TYPES if self.imatrix is None else self.imatrix


def tensor_type(m: Model, category: str, ne0: int, *, i: int = 0, n: int = 0,
                experts: bool = False) -> str:
    """The ggml type of a quantized tensor of ``category`` with rows of ``ne0``: llama-quant.cpp
    ``llama_tensor_get_type_impl`` then ``tensor_type_fallback``. ``i`` of ``n``: the tensor's
    place in its running count (attn_v-like: i_attention_wv of n_attention_wv; ffn_down / gate /
    up: ``layer_info``'s layer of n_layer, for the low i-quants' ffn_down the raw count);
    ``experts``: a 3-D tensor of several experts (``ne[2] > 1``)."""
    return fallback(_impl(m, category, ne0, i, n, experts), ne0)


def _impl(m: Model, cat: str, ne0: int, i: int, n: int, experts: bool) -> str:  # noqa: C901
    q, base = m.quant, QUANT_TYPES[m.quant]
    more = use_more_bits(i, n) if n else False
    if cat == OUTPUT or (m.tied and cat == TOKEN_EMBD):
        if q == "mxfp4_moe" or ne0 % BLOCK[base] != 0:
            return "Q8_0"
        if q in _OUTPUT_Q5_K:
            return "Q5_K"
        return "Q6_K" if base != "Q8_0" else base
    if q == "mxfp4_moe":
        return "MXFP4" if experts else "Q8_0"
    if cat == TOKEN_EMBD:
        return {"iq2_xxs": "Q2_K", "iq2_xs": "Q2_K", "iq1_s": "Q2_K", "iq1_m": "Q2_K",
                "iq2_s": "IQ3_S", "iq2_m": "IQ3_S", "iq3_xxs": "IQ3_S", "tq1_0": "Q4_K",
                "tq2_0": "Q4_K"}.get(q, base)
    if q in LOW_IQ:
        low = "IQ3_S" if q in ("iq2_s", "iq2_m") else "Q2_K"
        if cat == ATTN_V:
            return "Q4_K" if m.n_gqa >= 4 or m.n_expert >= 4 else low
        if cat == ATTN_K and m.n_expert == 8:
            return "Q4_K"
        if cat == FFN_DOWN:
            return low if i < n // 8 else base
        if cat == ATTN_OUTPUT:
            if m.n_expert == 8:
                return "Q5_K"
            return {"iq1_s": "IQ2_XXS", "iq1_m": "IQ2_XXS", "iq2_s": "IQ3_S",
                    "iq2_m": "IQ3_S"}.get(q, base)
        return base
    if cat == ATTN_V:
        kind = base
        if q == "q2_k":
            kind = "Q4_K" if m.n_gqa >= 4 else "Q3_K"
        elif q == "q2_k_s" and m.n_gqa >= 4:
            kind = "Q4_K"
        elif q == "iq3_xxs":
            kind = "Q4_K" if m.n_gqa >= 4 else "IQ3_XXS" if m.has_imatrix else "IQ3_S"
        elif q in ("iq3_xs", "iq3_s") and m.n_gqa >= 4:
            kind = "Q4_K"
        elif q == "iq3_m":
            kind = "Q4_K"
        elif q == "q3_k_m":
            kind = "Q5_K" if i < 2 else "Q4_K"
        elif q == "q3_k_l":
            kind = "Q5_K"
        elif q in ("iq4_nl", "iq4_xs") and m.n_gqa >= 4:
            kind = "Q5_K"
        elif q in ("q4_k_m", "q5_k_m") and more:
            kind = "Q6_K"
        elif q == "q4_k_s" and i < 4:
            kind = "Q5_K"
        if m.is_70b and kind in ("Q3_K", "Q4_K"):
            kind = "Q5_K"
        return "Q8_0" if m.n_expert == 8 else kind
    if cat == ATTN_K:
        if m.n_expert == 8:
            return "Q8_0"
        return {"iq3_xs": "IQ3_XXS", "iq3_xxs": "IQ2_S"}.get(q, base)
    if cat == ATTN_Q:
        return {"iq3_xs": "IQ3_XXS", "iq3_xxs": "IQ2_S"}.get(q, base)
    if cat == FFN_DOWN:
        first = i < n // 8
        if q == "q2_k":
            return "Q3_K"
        if q == "q2_k_s":
            return "Q4_K" if first else base
        if q == "iq3_xxs" and not m.has_imatrix:
            return "Q4_K" if first else "Q3_K"
        if q == "q3_k_m":
            return "Q5_K" if i < n // 16 else "Q4_K"
        if q == "iq3_m" and (first or (m.n_expert == 8 and more)):
            return "Q4_K"
        if q == "q3_k_l":
            return "Q5_K"
        if q == "q4_k_m":
            return "Q6_K" if more else base
        if first and q in ("iq4_nl", "iq4_xs") and not m.has_imatrix:
            return "Q5_K"
        if q == "q5_k_m" and more:
            return "Q6_K"
        if q == "q4_k_s" and first:
            return "Q5_K"
        if q in ("q4_0", "q5_0") and m.has_imatrix and first:
            return "Q4_1" if q == "q4_0" else "Q5_1"
        return base
    if cat == ATTN_OUTPUT:
        if m.n_expert == 8:
            return "Q5_K" if q in _MOE8_ATTN_OUTPUT_Q5_K else base
        return {"q2_k": "Q3_K", "iq3_xxs": "IQ3_S", "q3_k_m": "Q4_K", "q3_k_l": "Q5_K",
                "iq3_m": "Q4_K"}.get(q, base)
    if cat in (FFN_GATE, FFN_UP) and q == "iq3_xs" and n // 8 <= i < 7 * n // 8:
        return "IQ3_XXS"
    return base


def expert_count(spec: ModelSpec) -> int:
    """llama.cpp's n_expert: the routed experts of the model's layers."""
    return max((t.experts for t, _ in spec.main_tensors()), default=0)


def model_of(spec: ModelSpec, quant: str) -> Model:
    s = spec.shape
    n_expert = expert_count(spec)
    tied = not any(t.component == "lm_head" and t.tied_to is None for t, _ in spec.main_tensors())
    return Model(quant, s.num_layers, n_expert, tied,
                 is_70b(str(spec.config.get("model_type", "")), n_layer=s.num_layers,
                        n_head=s.num_heads, n_head_kv=s.num_kv_heads, n_expert=n_expert),
                 s.num_heads // s.num_kv_heads if s.num_kv_heads else 0)


# ---- which attn_v and ffn_down tensors use_more_bits picks, counted over layer runs ----------------


def _count_in(run: Run, lo: int, hi: int, *, mod: int = 1) -> int:
    """Members i of ``run`` with lo <= i < hi and, where ``mod`` > 1, (i - lo) % mod == mod - 1;
    counted in O(lcm(period, mod)) steps, never layer by layer."""
    import math

    start, stop = max(lo, run.start), min(hi, run.stop)
    if stop <= start:
        return 0
    clipped = Run(start, stop, run.origin, run.period, run.width)
    if mod == 1:
        return len(clipped)
    span = math.lcm(run.period, mod)

    def hits(a: int, b: int) -> int:
        return sum(1 for i in range(a, b) if i in clipped and (i - lo) % mod == mod - 1)

    full = (stop - start) // span
    return full * hits(start, start + span) + hits(start + full * span, stop)


def more_bits_layers(layers: LayerSet, n: int) -> int:
    """How many of ``layers`` llama.cpp's ``use_more_bits`` picks in an ``n``-layer model: the
    first and last eighth, and every third layer between (O(runs), whatever ``n`` is)."""
    a, b = n // 8, 7 * n // 8
    total = 0
    for r in layers.runs:
        total += _count_in(r, 0, a) + _count_in(r, b, r.stop) + _count_in(r, a, b, mod=3)
    return total


def _below(layers: LayerSet, x: int) -> int:
    return sum(_count_in(r, 0, x) for r in layers.runs)


@dataclass(frozen=True)
class Counter:
    """One running count of llama-quant.cpp (attn_v-like tensors, or a dense model's ffn_down):
    the layer sets of its tensors (main part, quantized), in the quantizer's order within a layer;
    ``n`` the count use_more_bits divides (all the tensors, or n_layer); ``by_layer``: the place is
    the layer itself (ffn_down with several experts, from the name)."""

    entries: tuple[tuple[str, LayerSet], ...]
    n: int
    by_layer: bool
    _walked: dict[tuple[str, int], int] = field(default_factory=dict, compare=False, repr=False)

    def place(self, name: str, layer: int) -> int:
        """The count's value when the quantizer reaches ``name`` in ``layer``."""
        if self.by_layer:
            return layer
        if len(self.entries) == 1:
            return _below(self.entries[0][1], layer)
        if not self._walked:
            total = sum(len(ls) for _, ls in self.entries)
            if total > MAX_WALK:
                raise UsageError(f"GGUF mix: {total:,} attn_v-like tensors of different shapes "
                                 f"are counted one by one, at most {MAX_WALK:,}")
            seen = sorted((i, nm) for nm, ls in self.entries for i in ls)
            self._walked.update({(nm, i): k for k, (i, nm) in enumerate(seen)})
        return self._walked[(name, layer)]

    def more_count(self, name: str, layers: LayerSet) -> int:
        """How many of ``name``'s tensors in ``layers`` use_more_bits picks: O(runs) where the
        places are the layers, or one tensor's layers all counted; else one by one."""
        if self.by_layer:
            return more_bits_layers(layers, self.n)
        if len(self.entries) == 1:
            every = self.entries[0][1]
            if _below(every, len(every)) == len(every):  # layers 0 … k-1: place == layer
                return more_bits_layers(layers, self.n)
            if len(layers) == len(every):
                return more_bits_layers(LayerSet.span(0, len(layers)), self.n)
        if len(layers) > MAX_WALK:
            raise UsageError(f"GGUF mix: {len(layers):,} layers of {name} are counted one by "
                             f"one, at most {MAX_WALK:,}")
        return sum(1 for i in layers if use_more_bits(self.place(name, i), self.n))

    def kinds(self, name: str, layers: LayerSet, kind_at: Callable[[int], str]
              ) -> dict[str, int]:
        """How many of ``name``'s tensors in ``layers`` get each type, ``kind_at`` giving the type
        at a place: O(runs) where the places are the layers (the type at a place depends only on
        which side of 2, 4, n/16, n/8 and 7n/8 it lies and on its residue mod 3 after n/8), one by
        one otherwise."""
        spans: LayerSet | None = None
        if self.by_layer:
            spans = layers
        elif len(self.entries) == 1:
            every = self.entries[0][1]
            if _below(every, len(every)) == len(every):
                spans = layers
            elif len(layers) == len(every):
                spans = LayerSet.span(0, len(layers))
        out: dict[str, int] = {}
        if spans is None:
            if len(layers) > MAX_WALK:
                raise UsageError(f"GGUF mix: {len(layers):,} layers of {name} are counted one by "
                                 f"one, at most {MAX_WALK:,}")
            for il in layers:
                k = kind_at(self.place(name, il))
                out[k] = out.get(k, 0) + 1
            return out
        n, ref = self.n, self.n // 8
        cuts = sorted({0, 2, 4, n // 16, n // 8, 7 * n // 8} | {r.stop for r in spans.runs})
        for lo, hi in zip(cuts, cuts[1:], strict=False):
            for res in range(3):
                first = lo + (res - (lo - ref)) % 3
                if first >= hi:
                    continue
                count = sum(_count_res(r, lo, hi, ref, res) for r in spans.runs)
                if count:
                    k = kind_at(first)
                    out[k] = out.get(k, 0) + count
        return out


def _count_res(run: Run, lo: int, hi: int, ref: int, res: int) -> int:
    """Members i of ``run`` with lo <= i < hi and (i - ref) % 3 == res, in O(lcm(period, 3))."""
    import math

    start, stop = max(lo, run.start), min(hi, run.stop)
    if stop <= start:
        return 0
    clipped = Run(start, stop, run.origin, run.period, run.width)
    span = math.lcm(run.period, 3)

    def hits(a: int, b: int) -> int:
        return sum(1 for i in range(a, b) if i in clipped and (i - ref) % 3 == res)

    full = (stop - start) // span
    return full * hits(start, start + span) + hits(start + full * span, stop)


@dataclass(frozen=True)
class Mix:
    """llama.cpp's mix for one model and quant type: each tensor's ggml type, by layer."""

    model: Model
    attn_v: Counter
    ffn_down: Counter
    ffn_gate: Counter | None = None
    ffn_up: Counter | None = None

    def _counter(self, category: str) -> Counter | None:
        return {ATTN_V: self.attn_v, FFN_DOWN: self.ffn_down, FFN_GATE: self.ffn_gate,
                FFN_UP: self.ffn_up}.get(category)

    def type_at(self, t: Tensor, layer: int | None, *, main: bool = True) -> str:
        """``t``'s ggml type in ``layer`` (None outside the layers; ``main``: not a tower's)."""
        if not hf_quantized(t):
            return "F32"
        cat = hf_category(t) if main else OTHER
        counter = self._counter(cat)
        i, n = ((counter.place(t.name, layer), counter.n)
                if counter is not None and layer is not None else (0, 0))
        return tensor_type(self.model, cat, t.shape[-1], i=i, n=n, experts=t.experts > 1)

    def types(self, t: Tensor, layers: LayerSet | None, *, main: bool = True
              ) -> list[tuple[str, int]]:
        """(ggml type, how many of ``layers``) for ``t``; one row outside the layers."""
        if layers is None or not hf_quantized(t):
            return [(self.type_at(t, None, main=main), 1 if layers is None else len(layers))]
        cat = hf_category(t) if main else OTHER
        counter = self._counter(cat)
        experts = t.experts > 1
        if counter is None:
            return [(tensor_type(self.model, cat, t.shape[-1], experts=experts), len(layers))]
        found = counter.kinds(t.name, layers, lambda i: tensor_type(
            self.model, cat, t.shape[-1], i=i, n=counter.n, experts=experts))
        return sorted(found.items(), key=lambda kv: -BLOCK_BITS.get(kv[0], 0))


# the order types() lists a tensor's types in: the wider first, as before
BLOCK_BITS = {k: 8 * nb / b for k, (b, nb) in GGML_SIZES.items()}


def mix(spec: ModelSpec, quant: str) -> Mix:
    """llama.cpp's mix of ``quant`` (a QUANT_TYPES key) over ``spec``'s main part."""
    m = model_of(spec, quant)

    def entries(*cats: str) -> tuple[tuple[str, LayerSet], ...]:
        found: dict[str, list[LayerSet]] = {}
        for t, g in spec.main_tensors():
            if g is not None and hf_quantized(t) and hf_category(t) in cats:
                found.setdefault(t.name, []).append(g.layers)
        return tuple((nm, _union(sets)) for nm, sets in sorted(found.items()))

    v = entries(ATTN_V)
    # layer_info: with several experts the layer from the name, else the running count; the low
    # i-quants' ffn_down rule reads the raw count (qs.i_ffn_down) whatever the experts
    by_layer = m.n_expert > 1 and quant not in LOW_IQ
    return Mix(m, Counter(v, sum(len(ls) for _, ls in v), False),
               Counter(entries(FFN_DOWN), m.n_layer, by_layer),
               Counter(entries(FFN_GATE), m.n_layer, m.n_expert > 1),
               Counter(entries(FFN_UP), m.n_layer, m.n_expert > 1))


def _union(sets: Iterable[LayerSet]) -> LayerSet:
    runs = tuple(r for ls in sets for r in ls.runs)
    return LayerSet(runs)
