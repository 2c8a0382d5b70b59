"""Gemma 2 and Gemma 3 text decoders: sliding and full attention layers, four RMSNorms per layer.

Covers ``gemma2`` (Gemma Team 2024, "Gemma 2": local/global layers alternate) and ``gemma3_text``
(Gemma Team 2025, "Gemma 3": five local layers per global one, q/k RMSNorm over head_dim). A
multimodal ``gemma3`` config is counted for its ``text_config`` (a ``gemma3_text`` model) by the
config loader. Tensor names and shapes as in transformers ``Gemma2ForCausalLM`` / ``Gemma3ForCausalLM``.

Sliding and full layers hold the same tensors but attend differently (window set on the sliding
ones), so they are separate layer groups.
"""

from __future__ import annotations

from typing import ClassVar

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
    resolve_kv_heads,
    swiglu,
)
from llmcalc.spec import Attention, Shape, Tensor


class Gemma2Config(FamilyConfig):
    transformers_class = "Gemma2Config"
    qk_norm: ClassVar[bool] = False

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    num_key_value_heads: Size = 4
    head_dim: Size = 256
    intermediate_size: Size
    vocab_size: Size
    max_position_embeddings: Size | None = None
    tie_word_embeddings: bool = True
    attention_bias: bool = False
    sliding_window: Size | None = 4096
    layer_types: list[str] | None = None

    @property
    def pattern(self) -> int:
        return 2  # Gemma 2: local, global, local, global …


class Gemma3TextConfig(Gemma2Config):
    """Gemma 3 text model; multimodal configs leave most fields out, so they take these defaults."""

    transformers_class = "Gemma3TextConfig"
    qk_norm: ClassVar[bool] = True

    num_attention_heads: Size = 8
    vocab_size: Size = 262_208
    sliding_window_pattern: Size = 6

    @property
    def pattern(self) -> int:
        return self.sliding_window_pattern


def describe(c: Gemma2Config) -> Architecture:
    d, v, ff, hd = c.hidden_size, c.vocab_size, c.intermediate_size, c.head_dim
    h = c.num_attention_heads
    kv = resolve_kv_heads(
        h, c.num_key_value_heads, heads_field="num_attention_heads", kv_field="num_key_value_heads"
    )
    p = "model.layers.{i}"
    qk_norm = (
        [
            *norm(f"{p}.self_attn.q_norm", "attn/q_norm", hd, bias=False),
            *norm(f"{p}.self_attn.k_norm", "attn/k_norm", hd, bias=False),
        ]
        if c.qk_norm
        else []
    )
    # Four RMSNorms: before and after attention, before and after the MLP ("sandwich" norms).
    layer: list[Tensor] = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=False),
        *gqa_projections(f"{p}.self_attn", d, h, kv, hd, bias=c.attention_bias),
        *qk_norm,
        *norm(f"{p}.post_attention_layernorm", "attn/post_norm", d, bias=False),
        *norm(f"{p}.pre_feedforward_layernorm", "mlp/norm", d, bias=False),
        *swiglu(f"{p}.mlp", "mlp", d, ff),  # GeGLU: same shapes as SwiGLU
        *norm(f"{p}.post_feedforward_layernorm", "mlp/post_norm", d, bias=False),
    ]
    windows = {SLIDING: c.sliding_window, FULL: None}
    groups = grouped_layers(
        layer_kinds(c.layer_types, c.num_hidden_layers, pattern=c.pattern),
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
