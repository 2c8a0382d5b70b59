"""Gemma 4 text decoders (``gemma4_text``, ``gemma4_unified_text``; Google 2026, "Gemma 4"):
Gemma 3's sandwich-normed layers with per-layer head dims, KV-shared layers, per-layer embeddings
and an optional MoE block beside the dense MLP.

Tensor names and shapes as in transformers ``Gemma4ForCausalLM`` / ``Gemma4UnifiedForCausalLM``
(``models/gemma4/modeling_gemma4.py``, ``models/gemma4_unified/modeling_gemma4_unified.py``):
- attention: q_proj [h·hd, d], o_proj [d, h·hd], q_norm and k_norm [hd] (the v norm has no weight);
  the full-attention layers take ``global_head_dim`` as hd and, with ``attention_k_eq_v``,
  ``num_global_key_value_heads`` kv heads and no v_proj (keys are reused as values); explicit
  ``per_layer_config`` entries ({layer: {head_dim, num_key_value_heads}}) replace that rule;
- KV sharing: the last ``num_kv_shared_layers`` layers attend with the keys and values of the last
  earlier layer of their type; they hold no k_proj, v_proj or k_norm and cache nothing, and with
  ``use_double_wide_mlp`` their MLP is twice as wide (gate, up: 2·ff × d; down: d × 2·ff);
- per-layer embeddings (``gemma4_text`` with ``hidden_size_per_layer_input`` p > 0): as Gemma 3n's
  (see gemma3n.py);
- MoE block (``enable_moe_block``, ``gemma4_text``): beside the dense MLP, a router (proj [E, d],
  scale [d], per_expert_scale [E]), E experts (gate_up_proj [E, 2·f, d], down_proj [E, d, f]) and
  three more norms [d]; top_k_experts of them run per token.
The last layer is always full attention (transformers forces it).
"""

from __future__ import annotations

from typing import Literal

from llmcalc.families._base import (
    FULL,
    SLIDING,
    Architecture,
    Count,
    DecoderConfig,
    LayerPlan,
    Size,
    check_top_k,
    layer_kinds,
    linear,
    llama_outer_tensors,
    norm,
    override_plan,
    require,
    resolve_kv_heads,
    routed_experts,
    split_plan,
    swiglu,
)
from llmcalc.families._moe import cross_plans, crossed_name
from llmcalc.families.gemma3n import OWN, SHARED, per_layer_input_layer, per_layer_input_outer
from llmcalc.spec import Attention, LayerGroup, MoE, Tensor

PER_LAYER_KEYS = ("head_dim", "num_key_value_heads")  # the per_layer_config overrides read


class Gemma4UnifiedTextConfig(DecoderConfig):
    """``gemma4_unified_text``: no per-layer embeddings, no MoE block."""

    transformers_class = "Gemma4UnifiedTextConfig"

    vocab_size: Size = 262_144
    hidden_size: Size = 2304
    intermediate_size: Size = 9216
    num_hidden_layers: Size = 30
    num_attention_heads: Size = 8
    num_key_value_heads: Size | None = 4
    head_dim: Size | None = 256
    max_position_embeddings: Size | None = 262_144
    tie_word_embeddings: bool = True
    attention_bias: bool = False
    sliding_window: Size = 1024
    layer_types: list[str] | None = None
    use_bidirectional_attention: Literal["all", "vision"] | None = "vision"
    attention_k_eq_v: bool = False
    num_kv_shared_layers: Count = 0
    use_double_wide_mlp: bool = False
    global_head_dim: Size = 512
    num_global_key_value_heads: Size | None = None
    per_layer_config: dict[str, dict[str, Size]] | None = None

    @property
    def window(self) -> int:
        """The sliding window; bidirectional "all" halves it (transformers: w // 2 + 1)."""
        w = self.sliding_window
        return w // 2 + 1 if self.use_bidirectional_attention == "all" else w

    @property
    def ple(self) -> tuple[int, int] | None:
        """(p, V_p) of the per-layer embeddings, or None."""
        return None

    @property
    def moe(self) -> tuple[int, int, int] | None:
        return None


class Gemma4TextConfig(Gemma4UnifiedTextConfig):
    """``gemma4_text``: adds per-layer embeddings and the optional MoE block."""

    transformers_class = "Gemma4TextConfig"

    max_position_embeddings: Size | None = 131_072
    sliding_window: Size = 512
    use_bidirectional_attention: Literal["all", "vision"] | None = None
    vocab_size_per_layer_input: Size = 262_144
    hidden_size_per_layer_input: Count = 256
    enable_moe_block: bool = False
    num_experts: Size | None = None
    top_k_experts: Size | None = None
    moe_intermediate_size: Size | None = None

    @property
    def ple(self) -> tuple[int, int] | None:
        p = self.hidden_size_per_layer_input
        return (p, self.vocab_size_per_layer_input) if p else None

    @property
    def moe(self) -> tuple[int, int, int] | None:
        """(experts, top-k, expert width) when the MoE block is on."""
        if not self.enable_moe_block:
            return None
        for name in ("num_experts", "top_k_experts", "moe_intermediate_size"):
            require(getattr(self, name) is not None, name, "must be set when enable_moe_block is true")
        E, k, f = self.num_experts, self.top_k_experts, self.moe_intermediate_size
        assert E is not None and k is not None and f is not None
        check_top_k(k, E, k_field="top_k_experts", e_field="num_experts")
        return E, k, f


def attention_plan(c: Gemma4UnifiedTextConfig) -> tuple[LayerPlan, dict[str, tuple[str, int, int]]]:
    """Each layer's attention kind, and per kind: its layer type, head dim and kv heads."""
    L, h = c.num_hidden_layers, c.num_attention_heads
    hd, kv = c.resolved_head_dim, c.resolved_kv_heads
    types = c.layer_types
    if types is not None:
        require(
            len(types) == L, "layer_types", f"has {len(types)} entries, num_hidden_layers is {L}"
        )
        types = [*types[:-1], FULL]  # transformers forces the last layer to full attention
    plan = layer_kinds(types, L, pattern=6)
    if types is None and L - 1 not in plan.get(FULL, ()):
        plan = override_plan(plan, [L - 1], FULL)
    if c.per_layer_config is None:
        gkv = c.num_global_key_value_heads if c.attention_k_eq_v else None
        full_kv = (
            kv
            if gkv is None
            else resolve_kv_heads(h, gkv, kv_field="num_global_key_value_heads")
        )
        return plan, {SLIDING: (SLIDING, hd, kv), FULL: (FULL, c.global_head_dim, full_kv)}
    geometry = {SLIDING: (SLIDING, hd, kv), FULL: (FULL, hd, kv)}
    moved: dict[str, list[int]] = {}
    for key, overrides in c.per_layer_config.items():
        field = f"per_layer_config.{key}"
        require(key.isdigit() and int(key) < L, field, f"is not a layer index below {L}")
        for name in overrides:
            require(name in PER_LAYER_KEYS, f"{field}.{name}", "is not supported (only head_dim, "
                    "num_key_value_heads)")
        i = int(key)
        kind = next(k for k, layers in plan.items() if i in layers)
        lhd = overrides.get("head_dim", hd)
        lkv = overrides.get("num_key_value_heads", kv)
        require(h % lkv == 0, f"{field}.num_key_value_heads",
                f"({lkv}) must divide num_attention_heads ({h})")
        name = kind if (lhd, lkv) == (hd, kv) else f"{kind} (head_dim {lhd}, {lkv} kv heads)"
        geometry[name] = (kind, lhd, lkv)
        moved.setdefault(name, []).append(i)
    for name, indices in moved.items():
        kind = geometry[name][0]
        if name != kind and kind in plan and len(set(indices)) == len(plan[kind]):
            # every layer of its kind (a saved config spells global_head_dim out per layer): the
            # kind keeps its name, with this geometry
            geometry[kind] = geometry[name]
        elif name not in plan:
            plan = override_plan(plan, indices, name)
    return plan, geometry


def sharing_plan(c: Gemma4UnifiedTextConfig, plan: LayerPlan) -> LayerPlan:
    """Layers that cache their own keys and values, then those that reuse an earlier layer's."""
    L, s = c.num_hidden_layers, c.num_kv_shared_layers
    require(s <= L, "num_kv_shared_layers", f"({s}) must not exceed num_hidden_layers ({L})")
    first = L - s
    if 0 < s < L:
        missing = [k for k, layers in plan.items() if next(iter(layers)) >= first]
        require(
            not missing,
            "num_kv_shared_layers",
            f"({s}) leaves no earlier layer of type {', '.join(missing)} to share keys and values "
            "from (transformers refuses this)",
        )
    return split_plan(L, at=first, before=OWN, after=SHARED)


def describe(c: Gemma4UnifiedTextConfig) -> Architecture:
    d, v, L, h, ff = (
        c.hidden_size,
        c.vocab_size,
        c.num_hidden_layers,
        c.num_attention_heads,
        c.intermediate_size,
    )
    b, pl, moe = c.attention_bias, c.ple, c.moe
    p, a = "model.layers.{i}", "model.layers.{i}.self_attn"
    attn, geometry = attention_plan(c)
    plan = cross_plans(attn, sharing_plan(c, attn))

    def layer(kind: str, shared: bool) -> tuple[list[Tensor], Attention]:
        layer_type, hd, kv = geometry[kind]
        tensors = [
            *linear(f"{a}.q_proj", "attn/q_proj", h * hd, d, bias=b),
            *norm(f"{a}.q_norm", "attn/q_norm", hd, bias=False),
            *linear(f"{a}.o_proj", "attn/o_proj", d, h * hd, bias=b),
        ]
        if not shared:
            tensors += linear(f"{a}.k_proj", "attn/k_proj", kv * hd, d, bias=b)
            if not (c.attention_k_eq_v and layer_type == FULL):  # k = v: no v_proj
                tensors += linear(f"{a}.v_proj", "attn/v_proj", kv * hd, d, bias=b)
            tensors += norm(f"{a}.k_norm", "attn/k_norm", hd, bias=False)
        wide = 2 if c.use_double_wide_mlp and shared else 1
        tensors += swiglu(f"{p}.mlp", "mlp", d, wide * ff)  # GeGLU: SwiGLU's shapes
        for x in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                  "post_feedforward_layernorm"):
            tensors += norm(f"{p}.{x}", f"norm/{x}", d, bias=False)
        if pl is not None:
            tensors += per_layer_input_layer(p, d, pl[0])
        if moe is not None:
            E, _, f = moe
            tensors += [
                *linear(f"{p}.router.proj", "moe/router", E, d, bias=False),
                Tensor(f"{p}.router.scale", (d,), "moe/router"),
                Tensor(f"{p}.router.per_expert_scale", (E,), "moe/router"),
                *routed_experts(f"{p}.experts", d, f, E),
            ]
            for x in ("post_feedforward_layernorm_1", "post_feedforward_layernorm_2",
                      "pre_feedforward_layernorm_2"):
                tensors += norm(f"{p}.{x}", f"moe/{x}", d, bias=False)
        window = c.window if layer_type == SLIDING else None
        return tensors, Attention(h, kv, hd, hd, window=window, kv_shared=shared)

    groups = []
    for kinds, layers in plan.items():
        tensors, attention = layer(kinds[0], kinds[1] == SHARED)
        groups.append(LayerGroup(crossed_name(kinds, plan), layers, tuple(tensors), attention))
    outer = (
        *llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
        *(per_layer_input_outer(L, d, pl[0], vocab=pl[1]) if pl is not None else []),
    )
    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=outer,
        layer_groups=tuple(groups),
        moe=MoE(num_experts=moe[0], experts_per_tok=moe[1]) if moe is not None else None,
    )
