"""Phi-1/1.5/2 (``model_type: phi``): one LayerNorm feeding attention and MLP in parallel, biases
everywhere including the head, partial rotary.

Source: Gunasekar et al. 2023; Li et al. 2023; Javaheripi et al. 2023 (Phi-2); tensor names and
shapes as in transformers ``PhiForCausalLM``. ``qk_layernorm`` adds LayerNorm(hidden_size / heads)
on queries and keys (shared across heads). Rotary on ``partial_rotary_factor`` of a head adds nothing.
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


class PhiConfig(FamilyConfig):
    transformers_class = "PhiConfig"

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    num_key_value_heads: Size | None = None  # absent: equal to the heads (MHA)
    head_dim: Size | None = None  # absent: hidden_size / num_attention_heads
    intermediate_size: Size
    vocab_size: Size
    max_position_embeddings: Size | None = None
    qk_layernorm: bool = False
    tie_word_embeddings: bool = False


def describe(c: PhiConfig) -> Architecture:
    d, v, ff, h = c.hidden_size, c.vocab_size, c.intermediate_size, c.num_attention_heads
    hd = resolve_head_dim(
        d, h, c.head_dim, hidden_field="hidden_size", heads_field="num_attention_heads"
    )
    kv = resolve_kv_heads(
        h, c.num_key_value_heads, heads_field="num_attention_heads", kv_field="num_key_value_heads"
    )
    p = "model.layers.{i}"
    a = f"{p}.self_attn"
    # q: (h·hd) × d;  k, v: (kv·hd) × d;  dense: d × (h·hd);  fc1: ff × d;  fc2: d × ff; all biased
    layer = [
        *norm(f"{p}.input_layernorm", "norm", d, bias=True),
        *linear(f"{a}.q_proj", "attn/q_proj", h * hd, d, bias=True),
        *linear(f"{a}.k_proj", "attn/k_proj", kv * hd, d, bias=True),
        *linear(f"{a}.v_proj", "attn/v_proj", kv * hd, d, bias=True),
        *linear(f"{a}.dense", "attn/o_proj", d, h * hd, bias=True),
        *linear(f"{p}.mlp.fc1", "mlp/fc_in", ff, d, bias=True),
        *linear(f"{p}.mlp.fc2", "mlp/fc_out", d, ff, bias=True),
    ]
    if c.qk_layernorm:
        layer += [
            *norm(f"{a}.q_layernorm", "attn/q_norm", d // h, bias=True),
            *norm(f"{a}.k_layernorm", "attn/k_norm", d // h, bias=True),
        ]
    embed = "model.embed_tokens.weight"
    tensors = (
        embedding("model.embed_tokens", "embed/tokens", v, d),
        *norm("model.final_layernorm", "final_norm", d, bias=True),
        # lm_head: V × d plus a bias [V] (kept even when the weight is tied)
        *lm_head("lm_head", v, d, tied_to=embed if c.tie_word_embeddings else None, bias=True),
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
