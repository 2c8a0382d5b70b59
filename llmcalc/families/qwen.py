"""Qwen2 / Qwen2.5 (``model_type: qwen2``) and Qwen3 (``qwen3``): Llama-style GQA decoders.

Source: Yang et al. 2024 (Qwen2, Qwen2.5); Qwen Team 2025 (Qwen3); tensor names and shapes as in
transformers ``Qwen2ForCausalLM`` and ``Qwen3ForCausalLM``. Qwen2 biases q, k and v (never o); Qwen3
drops those biases (``attention_bias``) and adds RMSNorm(head_dim) on queries and keys, with
``head_dim`` given (transformers default 128). With ``use_sliding_window`` the layers from
``max_window_layers`` on (or those ``layer_types`` names ``sliding_attention``) attend within
``sliding_window``; the tensors are the same either way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from llmcalc.families._base import (
    Architecture,
    Count,
    FamilyConfig,
    Size,
    embedding,
    gqa_projections,
    grouped_layers,
    layer_kinds,
    lm_head,
    norm,
    resolve_head_dim,
    resolve_kv_heads,
    swiglu,
    uniform_layers,
)
from llmcalc.spec import Attention, LayerGroup, Shape, Tensor

FULL, SLIDING = "full_attention", "sliding_attention"


class Qwen2Config(FamilyConfig):
    transformers_class = "Qwen2Config"

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    num_key_value_heads: Size | None = None  # absent: equal to the heads (MHA)
    head_dim: Size | None = None  # absent: hidden_size / num_attention_heads
    intermediate_size: Size
    vocab_size: Size
    max_position_embeddings: Size | None = None
    use_sliding_window: bool = False
    sliding_window: Size | None = 4096  # read only with use_sliding_window
    max_window_layers: Count = 28
    layer_types: list[str] | None = None
    tie_word_embeddings: bool = False


class Qwen3Config(Qwen2Config):
    transformers_class = "Qwen3Config"

    head_dim: Size = 128
    attention_bias: bool = False


def qwen_layer_kinds(c: Qwen2Config) -> list[str]:
    """Full or sliding attention per layer, as transformers' Qwen2/Qwen3 configs derive it."""
    if c.layer_types is not None:  # validated against the layer count and the known types
        return layer_kinds(c.layer_types, c.num_hidden_layers, pattern=1)
    sliding = c.use_sliding_window and c.sliding_window is not None
    return [
        SLIDING if sliding and i >= c.max_window_layers else FULL
        for i in range(c.num_hidden_layers)
    ]


def _groups(
    c: Qwen2Config, layer: Sequence[Tensor], h: int, kv: int, hd: int
) -> tuple[LayerGroup, ...]:
    kinds = qwen_layer_kinds(c)
    window = c.sliding_window if c.use_sliding_window else None
    windows = {FULL: None, SLIDING: window}
    if len(set(kinds)) == 1:
        return uniform_layers(len(kinds), layer, Attention(h, kv, hd, hd, window=windows[kinds[0]]))
    return grouped_layers(
        kinds, lambda kind: (layer, Attention(h, kv, hd, hd, window=windows[kind]))
    )


def describe(c: Qwen2Config) -> Architecture:
    """Qwen2: q: (h·hd) × d + bias;  k, v: (kv·hd) × d + bias;  o: d × (h·hd), no bias."""
    return _decoder(
        c, lambda a, d, h, kv, hd: gqa_projections(a, d, h, kv, hd, bias=True, o_bias=False)
    )


def describe_qwen3(c: Qwen3Config) -> Architecture:
    """Qwen3: q, o: (h·hd) × d;  k, v: (kv·hd) × d;  q_norm, k_norm: [hd] (RMSNorm per head)."""
    return _decoder(
        c,
        lambda a, d, h, kv, hd: [
            *gqa_projections(a, d, h, kv, hd, bias=c.attention_bias),
            *norm(f"{a}.q_norm", "attn/q_norm", hd, bias=False),
            *norm(f"{a}.k_norm", "attn/k_norm", hd, bias=False),
        ],
    )


def _decoder(
    c: Qwen2Config, attention: Callable[[str, int, int, int, int], list[Tensor]]
) -> Architecture:
    """The shared decoder around ``attention(prefix, d, h, kv, hd)``: RMSNorms, SwiGLU MLP."""
    d, v, ff, h = c.hidden_size, c.vocab_size, c.intermediate_size, c.num_attention_heads
    hd = resolve_head_dim(
        d, h, c.head_dim, hidden_field="hidden_size", heads_field="num_attention_heads"
    )
    kv = resolve_kv_heads(
        h, c.num_key_value_heads, heads_field="num_attention_heads", kv_field="num_key_value_heads"
    )
    p = "model.layers.{i}"
    layer = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=False),
        *attention(f"{p}.self_attn", d, h, kv, hd),
        *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=False),
        *swiglu(f"{p}.mlp", "mlp", d, ff),
    ]
    embed = "model.embed_tokens.weight"
    tensors = (
        embedding("model.embed_tokens", "embed/tokens", v, d),
        *norm("model.norm", "final_norm", d, bias=False),
        *lm_head("lm_head", v, d, tied_to=embed if c.tie_word_embeddings else None),
    )
    return Architecture(
        shape=Shape(
            num_layers=c.num_hidden_layers,
            hidden_size=d,
            num_heads=h,
            num_kv_heads=kv,
            head_dim=hd,
            intermediate_size=ff,
            vocab_size=v,
            tied_embeddings=c.tie_word_embeddings,
            max_position_embeddings=c.max_position_embeddings,
        ),
        tensors=tensors,
        layer_groups=_groups(c, layer, h, kv, hd),
    )
