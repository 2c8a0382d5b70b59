"""StarCoder2 (``model_type: starcoder2``): GQA with biases, a plain GELU MLP, LayerNorms, sliding window.

Source: Lozhkov et al. 2024 (StarCoder 2); tensor names and shapes as in transformers
``Starcoder2ForCausalLM``. ``use_bias`` puts biases on all four attention projections and both MLP
linears; every layer attends within ``sliding_window`` when it is set.
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import Size
from llmcalc.families._base import fc_mlp
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import uniform_layers


class Starcoder2Config(DecoderConfig):
    transformers_class = "Starcoder2Config"

    num_key_value_heads: Size  # the transformers default, not heads
    sliding_window: Size | None = None
    use_bias: bool
    tie_word_embeddings: bool


def describe(c: Starcoder2Config) -> Architecture:
    d, v, ff = c.hidden_size, c.vocab_size, c.intermediate_size
    h, hd, kv = c.num_attention_heads, c.resolved_head_dim, c.resolved_kv_heads
    p = "model.layers.{i}"
    # q, o: (h·hd) × d;  k, v: (kv·hd) × d;  c_fc: ff × d;  c_proj: d × ff  (biases with use_bias)
    layer = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=True),
        *gqa_projections(f"{p}.self_attn", d, h, kv, hd, bias=c.use_bias),
        *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=True),
        *fc_mlp(f"{p}.mlp.c_fc", f"{p}.mlp.c_proj", d, ff, bias=c.use_bias),
    ]
    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings, norm_bias=True),
        layer_groups=uniform_layers(
            c.num_hidden_layers, layer, c.attention(window=c.sliding_window)
        ),
    )
