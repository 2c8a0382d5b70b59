"""StarCoder2 (``model_type: starcoder2``): GQA with biases, a plain GELU MLP, LayerNorms, sliding window.

Source: Lozhkov et al. 2024 (StarCoder 2); tensor names and shapes as in transformers
``Starcoder2ForCausalLM``. ``use_bias`` puts biases on all four attention projections and both MLP
linears; every layer attends within ``sliding_window`` when it is set.
"""

from __future__ import annotations

from llmcalc.families._base import (
    Architecture,
    FamilyConfig,
    Size,
    embedding,
    gqa_projections,
    linear,
    lm_head,
    norm,
    resolve_head_dim,
    resolve_kv_heads,
    uniform_layers,
)
from llmcalc.spec import Attention, Shape


class Starcoder2Config(FamilyConfig):
    transformers_class = "Starcoder2Config"

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    num_key_value_heads: Size = 2  # the transformers default, not heads
    head_dim: Size | None = None  # absent: hidden_size / num_attention_heads
    intermediate_size: Size
    vocab_size: Size
    max_position_embeddings: Size | None = None
    sliding_window: Size | None = None
    use_bias: bool = True
    tie_word_embeddings: bool = True


def describe(c: Starcoder2Config) -> Architecture:
    d, v, ff, h = c.hidden_size, c.vocab_size, c.intermediate_size, c.num_attention_heads
    hd = resolve_head_dim(
        d, h, c.head_dim, hidden_field="hidden_size", heads_field="num_attention_heads"
    )
    kv = resolve_kv_heads(
        h, c.num_key_value_heads, heads_field="num_attention_heads", kv_field="num_key_value_heads"
    )
    p = "model.layers.{i}"
    # q, o: (h·hd) × d;  k, v: (kv·hd) × d;  c_fc: ff × d;  c_proj: d × ff  (biases with use_bias)
    layer = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=True),
        *gqa_projections(f"{p}.self_attn", d, h, kv, hd, bias=c.use_bias),
        *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=True),
        *linear(f"{p}.mlp.c_fc", "mlp/fc_in", ff, d, bias=c.use_bias),
        *linear(f"{p}.mlp.c_proj", "mlp/fc_out", d, ff, bias=c.use_bias),
    ]
    embed = "model.embed_tokens.weight"
    tensors = (
        embedding("model.embed_tokens", "embed/tokens", v, d),
        *norm("model.norm", "final_norm", d, bias=True),
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
