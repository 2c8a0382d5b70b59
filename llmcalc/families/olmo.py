"""OLMo (Groeneveld et al. 2024, "OLMo: Accelerating the Science of Language Models"): Llama-style
blocks whose LayerNorms have no parameters at all.

Tensor names and shapes as in transformers ``OlmoForCausalLM``: q/k/v/o (optionally biased), a
SwiGLU MLP, and no norm weights (non-parametric LayerNorm before attention, before the MLP and at
the end).
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import resolve_head_dim
from llmcalc.families._base import resolve_kv_heads
from llmcalc.families._base import swiglu
from llmcalc.families._base import uniform_layers
from llmcalc.model.spec import Attention
from llmcalc.model.spec import Shape


class OlmoConfig(FamilyConfig):
    transformers_class = "OlmoConfig"

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    num_key_value_heads: Size | None = None  # absent: equal to the heads (MHA)
    intermediate_size: Size
    vocab_size: Size
    max_position_embeddings: Size | None = None
    tie_word_embeddings: bool
    attention_bias: bool
    # not declared by OlmoConfig; its attention reads getattr(config, "head_dim", d / heads)
    head_dim: Size | None = None


def describe(c: OlmoConfig) -> Architecture:
    d, v, ff = c.hidden_size, c.vocab_size, c.intermediate_size
    h = c.num_attention_heads
    hd = resolve_head_dim(d, h, c.head_dim, floor=True)  # getattr(config, "head_dim", d // h): h·⌊d/h⌋
    kv = resolve_kv_heads(h, c.num_key_value_heads)
    p = "model.layers.{i}"
    layer = [
        *gqa_projections(f"{p}.self_attn", d, h, kv, hd, bias=c.attention_bias),
        *swiglu(f"{p}.mlp", "mlp", d, ff),
    ]
    return Architecture(
        shape=Shape(c.num_hidden_layers, d, h, kv, hd, ff, v,
                    c.tie_word_embeddings, c.max_position_embeddings),
        # the final LayerNorm holds no parameters
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings, final_norm=None),
        layer_groups=uniform_layers(c.num_hidden_layers, layer, Attention(h, kv, hd, hd)),
    )
