"""Llama-style decoders: RMSNorm, rotary positions, GQA attention, SwiGLU MLP, optional tied head.

Covers ``llama`` (Llama 1/2/3, TinyLlama), ``mistral`` (sliding window), ``gemma`` (head_dim
given, tied head by default) and ``granite`` (IBM Granite 3: Llama tensors; its embedding, residual,
attention and logit multipliers are scalars in the config, not parameters). Source: Touvron et al.
2023; Jiang et al. 2023; Gemma Team 2024; IBM 2024 (Granite 3.0); tensor names and shapes as in
transformers ``LlamaForCausalLM`` and its copies.
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import Size
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import swiglu
from llmcalc.families._base import uniform_layers


class LlamaConfig(DecoderConfig):
    transformers_class = "LlamaConfig"

    tie_word_embeddings: bool
    attention_bias: bool = False
    mlp_bias: bool = False


class MistralConfig(LlamaConfig):
    transformers_class = "MistralConfig"

    sliding_window: Size | None = None


class GraniteConfig(LlamaConfig):
    transformers_class = "GraniteConfig"


class GemmaConfig(LlamaConfig):
    transformers_class = "GemmaConfig"



def describe(c: LlamaConfig) -> Architecture:
    d, v, ff = c.hidden_size, c.vocab_size, c.intermediate_size
    h, hd, kv = c.num_attention_heads, c.resolved_head_dim, c.resolved_kv_heads
    p = "model.layers.{i}"
    layer = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=False),
        *gqa_projections(f"{p}.self_attn", d, h, kv, hd, bias=c.attention_bias),
        *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=False),
        *swiglu(f"{p}.mlp", "mlp", d, ff, bias=c.mlp_bias),
    ]
    window = getattr(c, "sliding_window", None)
    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
        layer_groups=uniform_layers(c.num_hidden_layers, layer, c.attention(window=window)),
    )
