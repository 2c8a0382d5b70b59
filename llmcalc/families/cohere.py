"""Command R (``model_type: cohere``): one bias-free LayerNorm feeding attention and MLP in parallel,
optional q/k LayerNorms per head, tied head.

Source: Cohere 2024 (Command R); tensor names and shapes as in transformers ``CohereForCausalLM``.
Its LayerNorm has a weight and no bias; with ``use_qk_norm`` the query norm weight is [h, hd] and
the key norm weight [kv, hd]. ``logit_scale`` multiplies the logits and holds no parameter.
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import swiglu
from llmcalc.families._base import uniform_layers
from llmcalc.model.spec import Tensor


class CohereConfig(DecoderConfig):
    transformers_class = "CohereConfig"

    attention_bias: bool
    use_qk_norm: bool
    tie_word_embeddings: bool


def describe(c: CohereConfig) -> Architecture:
    d, v, ff = c.hidden_size, c.vocab_size, c.intermediate_size
    h, hd, kv = c.num_attention_heads, c.resolved_head_dim, c.resolved_kv_heads
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
    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
        layer_groups=uniform_layers(c.num_hidden_layers, layer, c.attention()),
    )
