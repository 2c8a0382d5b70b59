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
  a 32-block type kept; F16 if that still does not divide the row.
- the quantizer visits tensors by layer, then by name (``llama-model-loader.h``,
  ``weight_name_comparer``), so the running counts follow the layers.
- ``LLM_TYPE_70B`` (``models/llama.cpp``: 80 layers with GQA and not 8 experts; ``models/qwen2.cpp``:
  80 layers).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from llmcalc.errors import UsageError
from llmcalc.model.spec import LayerSet, ModelSpec, Run, Tensor

# model_type → the GGUF architecture convert_hf_to_gguf.py writes (Mistral and Mixtral as llama)
ARCHS = {"llama": "llama", "mistral": "llama", "mixtral": "llama", "qwen2": "qwen2",
         "qwen3": "qwen3", "qwen2_moe": "qwen2moe", "qwen3_moe": "qwen3moe", "gemma2": "gemma2",
         "gemma3_text": "gemma3", "phi3": "phi3"}
# quant type → llama-quantize's default ggml type (llama_ftype_get_default_type)
QUANT_TYPES = {"q4_k_m": "Q4_K", "q8_0": "Q8_0", "q4_0": "Q4_0"}
# ggml-common.h: elements per block of the types a mix gives
BLOCK = {"F32": 1, "F16": 1, "BF16": 1, "Q4_0": 32, "Q5_0": 32, "Q5_1": 32, "Q8_0": 32,
         "Q4_K": 256, "Q5_K": 256, "Q6_K": 256}
# tensor_type_fallback: a 256-block type's 32-block stand-in
SMALLER = {"Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0"}
MAX_WALK = 1 << 20  # attn_v/ffn_down tensors counted one by one where their layers interleave

OUTPUT, TOKEN_EMBD, ATTN_V, ATTN_K, ATTN_Q, ATTN_OUTPUT, FFN_DOWN, OTHER = (
    "output", "token_embd", "attn_v", "attn_k", "attn_q", "attn_output", "ffn_down", "other")
# tensor_get_category: GGUF name fragments in the order it tests them
_GGUF_CATEGORIES = (("attn_qkv.weight", ATTN_V), ("attn_kv_b.weight", ATTN_V),
                    ("attn_v.weight", ATTN_V), ("attn_k.weight", ATTN_K),
                    ("attn_q.weight", ATTN_Q), ("attn_output.weight", ATTN_OUTPUT),
                    ("ffn_up", OTHER), ("ffn_gate", OTHER), ("ffn_down", FFN_DOWN))
# the same categories for a description's tensors: the component's last part (the HF module name)
_HF_CATEGORIES = {"v_proj": ATTN_V, "qkv": ATTN_V, "qkv_proj": ATTN_V, "k_proj": ATTN_K,
                  "q_proj": ATTN_Q, "o_proj": ATTN_OUTPUT, "down_proj": FFN_DOWN,
                  "fc_out": FFN_DOWN}


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

    quant: str  # q4_k_m, q8_0, q4_0
    n_layer: int
    n_expert: int
    tied: bool  # no output.weight: token_embd takes the output's type
    is_70b: bool


def tensor_type(m: Model, category: str, ne0: int, *, more: bool) -> str:
    """The ggml type of a quantized tensor of ``category`` with rows of ``ne0``; ``more``:
    ``use_more_bits`` picks its place (its layer for ffn_down, its count for attn_v-like)."""
    base = QUANT_TYPES[m.quant]
    kind = base
    if category == OUTPUT or (m.tied and category == TOKEN_EMBD):
        kind = "Q8_0" if ne0 % BLOCK[base] != 0 or base == "Q8_0" else "Q6_K"
    elif m.quant == "q4_k_m" and category == ATTN_V:
        kind = "Q6_K" if more else base
        if m.is_70b and kind == "Q4_K":
            kind = "Q5_K"
        if m.n_expert == 8:
            kind = "Q8_0"
    elif m.quant == "q4_k_m" and category == ATTN_K and m.n_expert == 8:
        kind = "Q8_0"
    elif m.quant == "q4_k_m" and category == FFN_DOWN and more:
        kind = "Q6_K"
    elif m.quant == "q4_k_m" and category == ATTN_OUTPUT and m.n_expert == 8:
        kind = "Q5_K"
    return fallback(kind, ne0)


def expert_count(spec: ModelSpec) -> int:
    """llama.cpp's n_expert: the routed experts of the model's layers."""
    return max((t.experts for t, _ in spec.main_tensors()), default=0)


def model_of(spec: ModelSpec, quant: str) -> Model:
    s = spec.shape
    n_expert = expert_count(spec)
    tied = not any(t.component == "lm_head" and t.tied_to is None for t, _ in spec.main_tensors())
    return Model(quant, s.num_layers, n_expert, tied,
                 is_70b(str(spec.config.get("model_type", "")), n_layer=s.num_layers,
                        n_head=s.num_heads, n_head_kv=s.num_kv_heads, n_expert=n_expert))


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


@dataclass(frozen=True)
class Mix:
    """llama.cpp's mix for one model and quant type: each tensor's ggml type, by layer."""

    model: Model
    attn_v: Counter
    ffn_down: Counter

    def _counter(self, category: str) -> Counter | None:
        return {ATTN_V: self.attn_v, FFN_DOWN: self.ffn_down}.get(category)

    def type_at(self, t: Tensor, layer: int | None, *, main: bool = True) -> str:
        """``t``'s ggml type in ``layer`` (None outside the layers; ``main``: not a tower's)."""
        if not hf_quantized(t):
            return "F32"
        cat = hf_category(t) if main else OTHER
        counter = self._counter(cat)
        more = (counter is not None and layer is not None
                and use_more_bits(counter.place(t.name, layer), counter.n))
        return tensor_type(self.model, cat, t.shape[-1], more=more)

    def types(self, t: Tensor, layers: LayerSet | None, *, main: bool = True
              ) -> list[tuple[str, int]]:
        """(ggml type, how many of ``layers``) for ``t``; one row outside the layers."""
        if layers is None or not hf_quantized(t):
            return [(self.type_at(t, None, main=main), 1 if layers is None else len(layers))]
        cat = hf_category(t) if main else OTHER
        counter = self._counter(cat)
        if counter is None:
            return [(tensor_type(self.model, cat, t.shape[-1], more=False), len(layers))]
        more = counter.more_count(t.name, layers)
        rows = [(tensor_type(self.model, cat, t.shape[-1], more=True), more),
                (tensor_type(self.model, cat, t.shape[-1], more=False), len(layers) - more)]
        return [(k, n) for k, n in rows if n]


def mix(spec: ModelSpec, quant: str) -> Mix:
    """llama.cpp's mix of ``quant`` (q4_k_m, q8_0, q4_0) over ``spec``'s main part."""
    m = model_of(spec, quant)

    def entries(cat: str) -> tuple[tuple[str, LayerSet], ...]:
        found: dict[str, list[LayerSet]] = {}
        for t, g in spec.main_tensors():
            if g is not None and hf_quantized(t) and hf_category(t) == cat:
                found.setdefault(t.name, []).append(g.layers)
        return tuple((nm, _union(sets)) for nm, sets in sorted(found.items()))

    v = entries(ATTN_V)
    return Mix(m, Counter(v, sum(len(ls) for _, ls in v), False),
               Counter(entries(FFN_DOWN), m.n_layer, m.n_expert > 1))


def _union(sets: Iterable[LayerSet]) -> LayerSet:
    runs = tuple(r for ls in sets for r in ls.runs)
    return LayerSet(runs)
