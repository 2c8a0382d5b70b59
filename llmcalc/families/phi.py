"""Phi-1/1.5/2 (``model_type: phi``): one LayerNorm feeding attention and MLP in parallel, biases
everywhere including the head, partial rotary.

Source: Gunasekar et al. 2023; Li et al. 2023; Javaheripi et al. 2023 (Phi-2); tensor names and
shapes as in transformers ``PhiForCausalLM``. ``qk_layernorm`` adds LayerNorm(hidden_size / heads)
on queries and keys (shared across heads). Rotary on ``partial_rotary_factor`` of a head adds nothing.
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import fc_mlp
from llmcalc.families._base import linear
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import uniform_layers


class PhiConfig(DecoderConfig):
    transformers_class = "PhiConfig"

    qk_layernorm: bool
    tie_word_embeddings: bool


def describe(c: PhiConfig) -> Architecture:
    d, v, ff = c.hidden_size, c.vocab_size, c.intermediate_size
    h, hd, kv = c.num_attention_heads, c.resolved_head_dim, c.resolved_kv_heads
    p = "model.layers.{i}"
    a = f"{p}.self_attn"
    # q: (h·hd) × d;  k, v: (kv·hd) × d;  dense: d × (h·hd);  fc1: ff × d;  fc2: d × ff; all biased
    layer = [
        *norm(f"{p}.input_layernorm", "norm", d, bias=True),
        *linear(f"{a}.q_proj", "attn/q_proj", h * hd, d, bias=True),
        *linear(f"{a}.k_proj", "attn/k_proj", kv * hd, d, bias=True),
        *linear(f"{a}.v_proj", "attn/v_proj", kv * hd, d, bias=True),
        *linear(f"{a}.dense", "attn/o_proj", d, h * hd, bias=True),
        *fc_mlp(f"{p}.mlp.fc1", f"{p}.mlp.fc2", d, ff, bias=True),
    ]
    if c.qk_layernorm:
        layer += [
            *norm(f"{a}.q_layernorm", "attn/q_norm", d // h, bias=True),
            *norm(f"{a}.k_layernorm", "attn/k_norm", d // h, bias=True),
        ]
    # final LayerNorm;  lm_head: V × d plus a bias [V] (kept even when the weight is tied)
    tensors = llama_outer_tensors(
        v,
        d,
        tied=c.tie_word_embeddings,
        norm_bias=True,
        head_bias=True,
        final_norm="model.final_layernorm",
    )
    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=tensors,
        layer_groups=uniform_layers(c.num_hidden_layers, layer, c.attention()),
    )
