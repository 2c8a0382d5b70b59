"""OLMo 2 (``model_type: olmo2``): norms after attention and after the MLP (none before), and
RMSNorm over all query and all key channels.

Source: OLMo Team 2024 ("2 OLMo 2 Furious"); tensor names and shapes as in transformers
``Olmo2ForCausalLM``.
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


class Olmo2Config(FamilyConfig):
    transformers_class = "Olmo2Config"

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    num_key_value_heads: Size | None = None  # absent: equal to the heads (MHA)
    head_dim: Size | None = None  # absent: hidden_size / num_attention_heads
    intermediate_size: Size
    vocab_size: Size
    max_position_embeddings: Size | None = None
    attention_bias: bool = False
    tie_word_embeddings: bool = False


def describe(c: Olmo2Config) -> Architecture:
    d, v, ff, h = c.hidden_size, c.vocab_size, c.intermediate_size, c.num_attention_heads
    hd = resolve_head_dim(
        d, h, c.head_dim, hidden_field="hidden_size", heads_field="num_attention_heads"
    )
    kv = resolve_kv_heads(
        h, c.num_key_value_heads, heads_field="num_attention_heads", kv_field="num_key_value_heads"
    )
    p = "model.layers.{i}"
    a = f"{p}.self_attn"
    # q_norm: [h·hd], k_norm: [kv·hd] (over all heads at once);  post-attention and post-MLP RMSNorms
    layer = [
        *gqa_projections(a, d, h, kv, hd, bias=c.attention_bias),
        *norm(f"{a}.q_norm", "attn/q_norm", h * hd, bias=False),
        *norm(f"{a}.k_norm", "attn/k_norm", kv * hd, bias=False),
        *norm(f"{p}.post_attention_layernorm", "attn/norm", d, bias=False),
        *swiglu(f"{p}.mlp", "mlp", d, ff),
        *norm(f"{p}.post_feedforward_layernorm", "mlp/norm", d, bias=False),
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
        layer_groups=uniform_layers(c.num_hidden_layers, layer, Attention(h, kv, hd, hd)),
    )
