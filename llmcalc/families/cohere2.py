"""Cohere 2 (Command R7B, Command A): parallel attention and MLP off one LayerNorm, sliding/full layers.

Source: Cohere 2024–2025 model cards; tensor names and shapes as in transformers
``Cohere2ForCausalLM``. The LayerNorm has a weight and no bias; three sliding-window layers are
followed by one full-attention layer (``sliding_window_pattern`` 4) unless ``layer_types`` says
otherwise. The head is tied to the embedding by default.
"""

from __future__ import annotations

from llmcalc.families._base import (
    FULL,
    SLIDING,
    Architecture,
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
)
from llmcalc.spec import Attention, Shape


class Cohere2Config(FamilyConfig):
    transformers_class = "Cohere2Config"

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    num_key_value_heads: Size | None = None  # absent: equal to the heads (MHA)
    head_dim: Size | None = None
    intermediate_size: Size
    vocab_size: Size
    max_position_embeddings: Size | None = None
    tie_word_embeddings: bool = True
    attention_bias: bool = False
    sliding_window: Size | None = 4096
    sliding_window_pattern: Size = 4
    layer_types: list[str] | None = None


def describe(c: Cohere2Config) -> Architecture:
    d, v, ff = c.hidden_size, c.vocab_size, c.intermediate_size
    h = c.num_attention_heads
    hd = resolve_head_dim(
        d, h, c.head_dim, hidden_field="hidden_size", heads_field="num_attention_heads"
    )
    kv = resolve_kv_heads(
        h, c.num_key_value_heads, heads_field="num_attention_heads", kv_field="num_key_value_heads"
    )
    p = "model.layers.{i}"
    # x + attn(ln(x)) + mlp(ln(x)): one LayerNorm (weight only) feeds both branches.
    layer = [
        *norm(f"{p}.input_layernorm", "norm", d, bias=False),
        *gqa_projections(f"{p}.self_attn", d, h, kv, hd, bias=c.attention_bias),
        *swiglu(f"{p}.mlp", "mlp", d, ff),
    ]
    windows = {SLIDING: c.sliding_window, FULL: None}
    groups = grouped_layers(
        layer_kinds(c.layer_types, c.num_hidden_layers, pattern=c.sliding_window_pattern),
        lambda kind: (layer, Attention(h, kv, hd, hd, window=windows[kind])),
    )
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
        layer_groups=groups,
    )
