"""Llama-style decoders: RMSNorm, rotary positions, GQA attention, SwiGLU MLP, optional tied head.

Covers ``llama`` (Llama 1/2/3, TinyLlama), ``mistral`` (sliding window), ``gemma`` (head_dim
given, tied head by default) and ``granite`` (IBM Granite 3: Llama tensors; its embedding, residual,
attention and logit multipliers are scalars in the config, not parameters). Source: Touvron et al.
2023; Jiang et al. 2023; Gemma Team 2024; IBM 2024 (Granite 3.0); tensor names and shapes as in
transformers ``LlamaForCausalLM`` and its copies.
"""

from __future__ import annotations

from llmcalc.families._base import (
    Architecture,
    FamilyConfig,
    Size,
    embedding,
    gqa_projections,
    lm_head,
    norm,
    resolve_head_dim,
    resolve_kv_heads,
    swiglu,
    uniform_layers,
)
from llmcalc.spec import Attention, Shape


class LlamaConfig(FamilyConfig):
    transformers_class = "LlamaConfig"

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    num_key_value_heads: Size | None = None  # absent: equal to the heads (MHA)
    head_dim: Size | None = None  # absent: hidden_size / num_attention_heads
    intermediate_size: Size
    vocab_size: Size
    max_position_embeddings: Size | None = None
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False


class MistralConfig(LlamaConfig):
    transformers_class = "MistralConfig"

    sliding_window: Size | None = None


class GraniteConfig(LlamaConfig):
    transformers_class = "GraniteConfig"


class GemmaConfig(LlamaConfig):
    transformers_class = "GemmaConfig"

    tie_word_embeddings: bool = True


def describe(c: LlamaConfig) -> Architecture:
    d, v, ff = c.hidden_size, c.vocab_size, c.intermediate_size
    h = c.num_attention_heads
    hd = resolve_head_dim(
        d, h, c.head_dim, hidden_field="hidden_size", heads_field="num_attention_heads"
    )
    kv = resolve_kv_heads(
        h, c.num_key_value_heads, heads_field="num_attention_heads", kv_field="num_key_value_heads"
    )
    p = "model.layers.{i}"
    layer = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=False),
        *gqa_projections(f"{p}.self_attn", d, h, kv, hd, bias=c.attention_bias),
        *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=False),
        *swiglu(f"{p}.mlp", "mlp", d, ff, bias=c.mlp_bias),
    ]
    embed = "model.embed_tokens.weight"
    tensors = (
        embedding("model.embed_tokens", "embed/tokens", v, d),
        *norm("model.norm", "final_norm", d, bias=False),
        *lm_head("lm_head", v, d, tied_to=embed if c.tie_word_embeddings else None),
    )
    window = getattr(c, "sliding_window", None)
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
        layer_groups=uniform_layers(
            c.num_hidden_layers, layer, Attention(h, kv, hd, hd, window=window)
        ),
    )
