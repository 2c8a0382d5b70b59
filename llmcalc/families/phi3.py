"""Phi-3 / Phi-4 (``model_type: phi3``): Llama-style blocks with fused qkv and gate/up projections.

Source: Abdin et al. 2024 (Phi-3); tensor names and shapes as in transformers ``Phi3ForCausalLM``.
Every layer attends within ``sliding_window`` when it is set.
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import Size
from llmcalc.families._base import linear
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import uniform_layers


class Phi3Config(DecoderConfig):
    transformers_class = "Phi3Config"

    sliding_window: Size | None = None
    tie_word_embeddings: bool


def describe(c: Phi3Config) -> Architecture:
    d, v, ff = c.hidden_size, c.vocab_size, c.intermediate_size
    h, hd, kv = c.num_attention_heads, c.resolved_head_dim, c.resolved_kv_heads
    p = "model.layers.{i}"
    # qkv_proj: (h + 2·kv)·hd × d;  o: d × (h·hd);  gate_up_proj: 2·ff × d;  down: d × ff; no biases
    layer = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=False),
        *linear(f"{p}.self_attn.qkv_proj", "attn/qkv", (h + 2 * kv) * hd, d, bias=False),
        *linear(f"{p}.self_attn.o_proj", "attn/o_proj", d, h * hd, bias=False),
        *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=False),
        *linear(f"{p}.mlp.gate_up_proj", "mlp/gate_up_proj", 2 * ff, d, bias=False),
        *linear(f"{p}.mlp.down_proj", "mlp/down_proj", d, ff, bias=False),
    ]
    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
        layer_groups=uniform_layers(
            c.num_hidden_layers, layer, c.attention(window=c.sliding_window)
        ),
    )
