"""Looped decoders: layers that run several times per token (``LayerGroup.repeats``), counted once for
parameters and once per run for FLOPs and the KV cache.

- ``hrm_text`` (Sapient, "Hierarchical Reasoning Model", Wang et al. 2025; transformers
  ``models/hrm_text/modeling_hrm_text.py``): two stacks of n layers, a low-level ``L_module`` and a
  high-level ``H_module``. Each of H_cycles high cycles runs the L stack L_cycles times, then the H
  stack once: an L layer runs H_cycles·L_cycles times per token, an H layer H_cycles times, so a pair
  of layers runs H_cycles·(L_cycles + 1) times; each run writes its own cache slot. Attention is
  multi-head with a sigmoid output gate: q, k, v, gate_proj [h·hd, d], o_proj [d, h·hd]; a SwiGLU MLP;
  RMSNorms without weights; ``z_L_init`` [d], the low stack's initial state. ``num_hidden_layers`` is
  the per-stack count unless ``num_layers_per_stack`` is set (transformers then stores the inflated
  count there, one cache slot per run).
- ``dory`` (NVIDIA Nemotron-Labs Dory; transformers ``models/dory/modeling_dory.py``): an nGPT-style
  normalized transformer (Loshchilov et al. 2024, "nGPT") whose middle ``n_recurrent_layers`` run
  ``n_recurrent_loops`` times between ``n_input_layers`` and ``n_output_layers`` that run once. L2
  norms have no weights; the learned per-channel scales are parameters: per layer sqk and s_gate
  [h·hd], suv_gate and suv_up [ff], lambda_1 and lambda_2 [d], and lm_head.logit_scale [V]. The cache
  keeps one copy of each recurrent layer per loop (``recurrent_kv_cache_mode`` "per_loop") or one
  (``"last_loop"``: only the last loop writes). Released configs list each layer as an attention
  and an mlp block (``layer_types`` with "mlp", every count doubled); they are read as transformers
  reads them, halved.
"""

from __future__ import annotations

from typing import Literal

from llmcalc.families._base import FULL
from llmcalc.families._base import SLIDING
from llmcalc.families._base import Architecture
from llmcalc.families._base import Count
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import LayerPlan
from llmcalc.families._base import Size
from llmcalc.families._base import layer_kinds
from llmcalc.families._base import linear
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import require
from llmcalc.families._base import resolve_kv_heads
from llmcalc.families._moe import cross_plans
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

# ---- HRM-Text -----------------------------------------------------------------------------------


class HrmTextConfig(DecoderConfig):
    transformers_class = "HrmTextConfig"

    tie_word_embeddings: bool
    attention_bias: bool
    mlp_bias: bool
    H_cycles: Size
    L_cycles: Size
    num_layers_per_stack: Size | None = None

    @property
    def per_stack(self) -> int:
        """Layers in each stack: num_layers_per_stack once transformers has split the count."""
        n = self.num_layers_per_stack
        return self.num_hidden_layers if n is None else n


def describe_hrm_text(c: HrmTextConfig) -> Architecture:
    d, v, h, ff, n = c.hidden_size, c.vocab_size, c.num_attention_heads, c.intermediate_size, c.per_stack
    require(  # transformers checks this although head_dim is given (validate_architecture)
        d % h == 0, "num_attention_heads", f"({h}) must divide hidden_size ({d}) for HRM-Text"
    )
    hd, b = c.resolved_head_dim, c.attention_bias

    def stack(name: str) -> list[Tensor]:
        p = f"model.{name}.layers.{{i}}"
        a = f"{p}.self_attn"
        return [
            # multi-head attention with a sigmoid output gate: q, k, v, gate: (h·hd) × d; o: d × (h·hd)
            *linear(f"{a}.q_proj", "attn/q_proj", h * hd, d, bias=b),
            *linear(f"{a}.k_proj", "attn/k_proj", h * hd, d, bias=b),
            *linear(f"{a}.v_proj", "attn/v_proj", h * hd, d, bias=b),
            *linear(f"{a}.o_proj", "attn/o_proj", d, h * hd, bias=b),
            *linear(f"{a}.gate_proj", "attn/gate_proj", h * hd, d, bias=b),
            *linear(f"{p}.mlp.gate_proj", "mlp/gate_proj", ff, d, bias=c.mlp_bias),
            *linear(f"{p}.mlp.up_proj", "mlp/up_proj", ff, d, bias=c.mlp_bias),
            *linear(f"{p}.mlp.down_proj", "mlp/down_proj", d, ff, bias=c.mlp_bias),
        ]

    attention = Attention(h, h, hd, hd)
    layers = LayerSet.span(0, n)
    H, L = c.H_cycles, c.L_cycles
    groups = (
        LayerGroup(f"L_module (runs {H * L}× per token)", layers, tuple(stack("L_module")),
                   attention, repeats=H * L),
        LayerGroup(f"H_module (runs {H}× per token)", layers, tuple(stack("H_module")), attention,
                   repeats=H),
    )
    tensors = (
        *llama_outer_tensors(v, d, tied=c.tie_word_embeddings, final_norm=None),
        Tensor("model.z_L_init", (d,), "embed/z_L_init"),  # the L stack's initial state
    )
    shape = Shape(
        num_layers=n,  # per stack, as num_hidden_layers gives it (two stacks hold parameters)
        hidden_size=d,
        num_heads=h,
        num_kv_heads=h,
        head_dim=hd,
        intermediate_size=ff,
        vocab_size=v,
        tied_embeddings=c.tie_word_embeddings,
        max_position_embeddings=c.max_position_embeddings,
    )
    note = (
        f"looped: each of {n} L-stack layers runs {H * L}× and each of {n} H-stack layers {H}× "
        f"per token (H_cycles={H}, L_cycles={L}); FLOPs and KV count every run, parameters once"
    )
    return Architecture(shape=shape, tensors=tensors, layer_groups=groups, notes=(note,))


# ---- Dory -----------------------------------------------------------------------------------------

INPUT, RECURRENT, OUTPUT = "input", "recurrent", "output"


class DoryConfig(DecoderConfig):
    transformers_class = "DoryConfig"

    tie_word_embeddings: bool
    attention_bias: bool
    mlp_bias: bool
    sliding_window: Size
    layer_types: list[str] | None = None
    n_input_layers: Count
    n_recurrent_layers: Count | None = None
    n_output_layers: Count
    n_recurrent_loops: Size
    recurrent_kv_cache_mode: Literal["per_loop", "last_loop"]


def _dory_layout(c: DoryConfig) -> tuple[int, int, int, int, list[str] | None]:
    """(layers, input, recurrent, output layers, layer types) as transformers reads them: a released
    config's attention + mlp blocks are one layer each, so its counts are halved."""
    L, n_in, n_out, n_rec, types = (
        c.num_hidden_layers,
        c.n_input_layers,
        c.n_output_layers,
        c.n_recurrent_layers,
        c.layer_types,
    )
    if types is not None and "mlp" in types:
        types = types[::2]
        L, n_in, n_out = L // 2, n_in // 2, n_out // 2
        n_rec = None if n_rec is None else n_rec // 2
    if n_rec is None:
        require(
            n_in + n_out <= L,
            "n_input_layers",
            f"n_input_layers ({n_in}) + n_output_layers ({n_out}) exceed num_hidden_layers ({L})",
        )
        n_rec = L - n_in - n_out
    require(
        n_in + n_rec + n_out == L,
        "n_recurrent_layers",
        f"n_input_layers ({n_in}) + n_recurrent_layers ({n_rec}) + n_output_layers ({n_out}) "
        f"must sum to num_hidden_layers ({L})",
    )
    return L, n_in, n_rec, n_out, types


def describe_dory(c: DoryConfig) -> Architecture:
    d, v, h, ff = c.hidden_size, c.vocab_size, c.num_attention_heads, c.intermediate_size
    hd, kv = c.resolved_head_dim, resolve_kv_heads(h, c.num_key_value_heads)
    L, n_in, n_rec, _, types = _dory_layout(c)
    b, mb = c.attention_bias, c.mlp_bias
    p = "model.layers.{i}"
    a = f"{p}.self_attn"
    layer = [
        # GQA: q, o: (h·hd) × d; k, v: (kv·hd) × d; the output gate (h·hd) × d, no bias
        *linear(f"{a}.q_proj", "attn/q_proj", h * hd, d, bias=b),
        *linear(f"{a}.k_proj", "attn/k_proj", kv * hd, d, bias=b),
        *linear(f"{a}.v_proj", "attn/v_proj", kv * hd, d, bias=b),
        *linear(f"{a}.o_proj", "attn/o_proj", d, h * hd, bias=b),
        *linear(f"{a}.gate_proj", "attn/gate_proj", h * hd, d, bias=False),
        # nGPT per-channel scales: the query scale sqk and the gate's s_gate [h·hd]
        Tensor(f"{a}.sqk", (h * hd,), "attn/scales"),
        Tensor(f"{a}.s_gate", (h * hd,), "attn/scales"),
        *linear(f"{p}.mlp.gate_proj", "mlp/gate_proj", ff, d, bias=mb),
        *linear(f"{p}.mlp.up_proj", "mlp/up_proj", ff, d, bias=mb),
        *linear(f"{p}.mlp.down_proj", "mlp/down_proj", d, ff, bias=mb),
        Tensor(f"{p}.mlp.suv_gate", (ff,), "mlp/scales"),
        Tensor(f"{p}.mlp.suv_up", (ff,), "mlp/scales"),
        # the residual's interpolation rates [d]
        Tensor(f"{p}.lambda_1", (d,), "residual/lambda"),
        Tensor(f"{p}.lambda_2", (d,), "residual/lambda"),
    ]
    attn: LayerPlan = layer_kinds(types, L, pattern=4)  # default: every 4th layer full
    sections: LayerPlan = {
        k: s
        for k, s in {
            INPUT: LayerSet.span(0, n_in),
            RECURRENT: LayerSet.span(n_in, n_in + n_rec),
            OUTPUT: LayerSet.span(n_in + n_rec, L),
        }.items()
        if s
    }
    loops = c.n_recurrent_loops
    cached = loops if c.recurrent_kv_cache_mode == "per_loop" else 1
    windows = {SLIDING: c.sliding_window, FULL: None}
    groups = []
    for (section, kind), layers in cross_plans(sections, attn).items():
        looped = section == RECURRENT
        name = f"{section}/{kind}" + (f" (runs {loops}× per token)" if looped else "")
        groups.append(
            LayerGroup(
                name,
                layers,
                tuple(layer),
                Attention(h, kv, hd, hd, window=windows[kind]),
                repeats=loops if looped else 1,
                cached_repeats=cached if looped else None,
            )
        )
    tensors = (
        *llama_outer_tensors(v, d, tied=c.tie_word_embeddings, final_norm=None),
        Tensor("lm_head.logit_scale", (v,), "lm_head"),  # a learned scale per vocabulary entry
    )
    shape = Shape(L, d, h, kv, hd, ff, v, c.tie_word_embeddings, c.max_position_embeddings)
    note = (
        f"looped: the {n_rec} recurrent layers run {loops}× per token (n_recurrent_loops); FLOPs "
        f"count every run, the KV cache {cached} cop{'y' if cached == 1 else 'ies'} per layer "
        f"(recurrent_kv_cache_mode={c.recurrent_kv_cache_mode}), parameters once"
    )
    return Architecture(shape=shape, tensors=tensors, layer_groups=tuple(groups), notes=(note,))


