"""Cohere 2 (Command R7B, Command A): parallel attention and MLP off one LayerNorm, sliding/full layers.

Source: Cohere 2024–2025 model cards; tensor names and shapes as in transformers
``Cohere2ForCausalLM``. The LayerNorm has a weight and no bias; three sliding-window layers are
followed by one full-attention layer (``sliding_window_pattern`` 4) unless ``layer_types`` says
otherwise. The head is tied to the embedding by default.
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import Size
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import layer_kinds
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import sliding_full_layers
from llmcalc.families._base import swiglu


class Cohere2Config(DecoderConfig):
    transformers_class = "Cohere2Config"

    tie_word_embeddings: bool
    attention_bias: bool
    sliding_window: Size | None
    sliding_window_pattern: Size = 4
    layer_types: list[str] | None = None


def describe(c: Cohere2Config) -> Architecture:
    d, v, ff = c.hidden_size, c.vocab_size, c.intermediate_size
    h, hd, kv = c.num_attention_heads, c.resolved_head_dim, c.resolved_kv_heads
    p = "model.layers.{i}"
    # x + attn(ln(x)) + mlp(ln(x)): one LayerNorm (weight only) feeds both branches.
    layer = [
        *norm(f"{p}.input_layernorm", "norm", d, bias=False),
        *gqa_projections(f"{p}.self_attn", d, h, kv, hd, bias=c.attention_bias),
        *swiglu(f"{p}.mlp", "mlp", d, ff),
    ]
    kinds = layer_kinds(c.layer_types, c.num_hidden_layers, pattern=c.sliding_window_pattern)
    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
        layer_groups=sliding_full_layers(kinds, layer, c, window=c.sliding_window),
    )
