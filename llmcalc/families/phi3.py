"""Phi-3 / Phi-4 (``model_type: phi3``): Llama-style blocks with fused qkv and gate/up projections.

Source: Abdin et al. 2024 (Phi-3); tensor names and shapes as in transformers ``Phi3ForCausalLM``.
Every layer attends within ``sliding_window`` when it is set.
"""

from __future__ import annotations

from llmcalc.families._base import (
    Architecture,
    FamilyConfig,
    Size,
    embedding,
    linear,
    lm_head,
    norm,
    resolve_head_dim,
    resolve_kv_heads,
    uniform_layers,
)
from llmcalc.spec import Attention, Shape


class Phi3Config(FamilyConfig):
    transformers_class = "Phi3Config"

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    num_key_value_heads: Size | None = None  # absent: equal to the heads (MHA)
    head_dim: Size | None = None  # absent: hidden_size / num_attention_heads
    intermediate_size: Size
    vocab_size: Size
    max_position_embeddings: Size | None = None
    sliding_window: Size | None = None
    tie_word_embeddings: bool = False


def describe(c: Phi3Config) -> Architecture:
    d, v, ff, h = c.hidden_size, c.vocab_size, c.intermediate_size, c.num_attention_heads
    hd = resolve_head_dim(
        d, h, c.head_dim, hidden_field="hidden_size", heads_field="num_attention_heads"
    )
    kv = resolve_kv_heads(
        h, c.num_key_value_heads, heads_field="num_attention_heads", kv_field="num_key_value_heads"
    )
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
        layer_groups=uniform_layers(
            c.num_hidden_layers, layer, Attention(h, kv, hd, hd, window=c.sliding_window)
        ),
    )
