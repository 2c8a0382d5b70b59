"""OLMo 2 (``model_type: olmo2``): norms after attention and after the MLP (none before), and
RMSNorm over all query and all key channels.

Source: OLMo Team 2024 ("2 OLMo 2 Furious"); tensor names and shapes as in transformers
``Olmo2ForCausalLM``.
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import qk_norms
from llmcalc.families._base import swiglu
from llmcalc.families._base import uniform_layers


class Olmo2Config(DecoderConfig):
    transformers_class = "Olmo2Config"

    attention_bias: bool
    tie_word_embeddings: bool


def describe(c: Olmo2Config) -> Architecture:
    d, v, ff = c.hidden_size, c.vocab_size, c.intermediate_size
    h, hd, kv = c.num_attention_heads, c.resolved_head_dim, c.resolved_kv_heads
    p = "model.layers.{i}"
    a = f"{p}.self_attn"
    # q_norm: [h·hd], k_norm: [kv·hd] (over all heads at once);  post-attention and post-MLP RMSNorms
    layer = [
        *gqa_projections(a, d, h, kv, hd, bias=c.attention_bias),
        *qk_norms(a, h * hd, kv * hd),
        *norm(f"{p}.post_attention_layernorm", "attn/norm", d, bias=False),
        *swiglu(f"{p}.mlp", "mlp", d, ff),
        *norm(f"{p}.post_feedforward_layernorm", "mlp/norm", d, bias=False),
    ]
    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
        layer_groups=uniform_layers(c.num_hidden_layers, layer, c.attention()),
    )
