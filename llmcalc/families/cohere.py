"""Command R (``model_type: cohere``): one bias-free LayerNorm feeding attention and MLP in parallel,
optional q/k LayerNorms per head, tied head.

Source: Cohere 2024 (Command R); tensor names and shapes as in transformers ``CohereForCausalLM``.
Its LayerNorm has a weight and no bias; with ``use_qk_norm`` the query norm weight is [h, hd] and
the key norm weight [kv, hd]. ``logit_scale`` multiplies the logits and holds no parameter.
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
from llmcalc.spec import Attention, Shape, Tensor


class CohereConfig(FamilyConfig):
    transformers_class = "CohereConfig"

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    num_key_value_heads: Size | None = None  # absent: equal to the heads (MHA)
    head_dim: Size | None = None  # absent: hidden_size / num_attention_heads
    intermediate_size: Size
    vocab_size: Size
    max_position_embeddings: Size | None = None
    attention_bias: bool = False
    use_qk_norm: bool = False
    tie_word_embeddings: bool = True


def describe(c: CohereConfig) -> Architecture:
    d, v, ff, h = c.hidden_size, c.vocab_size, c.intermediate_size, c.num_attention_heads
    hd = resolve_head_dim(
        d, h, c.head_dim, hidden_field="hidden_size", heads_field="num_attention_heads"
    )
    kv = resolve_kv_heads(
        h, c.num_key_value_heads, heads_field="num_attention_heads", kv_field="num_key_value_heads"
    )
    p = "model.layers.{i}"
    a = f"{p}.self_attn"
    layer = [
        *norm(f"{p}.input_layernorm", "norm", d, bias=False),
        *gqa_projections(a, d, h, kv, hd, bias=c.attention_bias),
        *swiglu(f"{p}.mlp", "mlp", d, ff),
    ]
    if c.use_qk_norm:
        # q_norm: [h, hd];  k_norm: [kv, hd]  (a LayerNorm weight per head)
        layer += [
            Tensor(f"{a}.q_norm.weight", (h, hd), "attn/q_norm"),
            Tensor(f"{a}.k_norm.weight", (kv, hd), "attn/k_norm"),
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
