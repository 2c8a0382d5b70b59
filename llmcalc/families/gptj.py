"""GPT-J (``model_type: gptj``): one LayerNorm feeding attention and MLP in parallel, biased head.

Source: Wang & Komatsuzaki 2021 (GPT-J-6B); tensor names and shapes as in transformers
``GPTJForCausalLM``. Rotary positions on ``rotary_dim`` dimensions of each head add no parameters.
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import GPT2StyleConfig
from llmcalc.families._base import fc_mlp
from llmcalc.families._base import linear
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import uniform_layers
from llmcalc.model.spec import Attention
from llmcalc.model.spec import Shape


class GPTJConfig(GPT2StyleConfig):
    transformers_class = "GPTJConfig"

    tie_word_embeddings: bool


def describe(c: GPTJConfig) -> Architecture:
    d, v, h = c.n_embd, c.vocab_size, c.n_head
    hd, ff = c.resolved_head_dim, c.d_ff
    p = "transformer.h.{i}"
    # q, k, v, out: d × d without bias;  fc_in: ff × d, fc_out: d × ff with bias;  one LayerNorm
    layer = [
        *norm(f"{p}.ln_1", "norm", d, bias=True),
        *linear(f"{p}.attn.q_proj", "attn/q_proj", d, d, bias=False),
        *linear(f"{p}.attn.k_proj", "attn/k_proj", d, d, bias=False),
        *linear(f"{p}.attn.v_proj", "attn/v_proj", d, d, bias=False),
        *linear(f"{p}.attn.out_proj", "attn/o_proj", d, d, bias=False),
        *fc_mlp(f"{p}.mlp.fc_in", f"{p}.mlp.fc_out", d, ff, bias=True),
    ]
    tensors = llama_outer_tensors(v, d, tied=c.tie_word_embeddings, embed="transformer.wte",
                                  final_norm="transformer.ln_f", norm_bias=True, head_bias=True)
    return Architecture(
        shape=Shape(c.n_layer, d, h, h, hd, ff, v, c.tie_word_embeddings, c.n_positions),
        tensors=tensors,
        layer_groups=uniform_layers(c.n_layer, layer, Attention(h, h, hd, hd)),
        notes=c.d_ff_notes(),
    )
