"""GPT-NeoX / Pythia (``model_type: gpt_neox``): fused qkv, parallel residual, partial rotary.

Source: Black et al. 2022 (GPT-NeoX-20B); Biderman et al. 2023 (Pythia); tensor names and shapes as
in transformers ``GPTNeoXForCausalLM`` (v5 calls the head ``lm_head``; checkpoints say ``embed_out``).
Rotary positions (on ``rotary_pct`` of each head) and the parallel residual (``use_parallel_residual``)
add no parameters: both LayerNorms exist either way.
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import fc_mlp
from llmcalc.families._base import fused_mha
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import resolve_head_dim
from llmcalc.families._base import uniform_layers
from llmcalc.model.spec import Attention
from llmcalc.model.spec import Shape


class GPTNeoXConfig(FamilyConfig):
    transformers_class = "GPTNeoXConfig"

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    intermediate_size: Size
    vocab_size: Size
    max_position_embeddings: Size | None = None
    tie_word_embeddings: bool
    attention_bias: bool


def describe(c: GPTNeoXConfig) -> Architecture:
    d, v, ff, h = c.hidden_size, c.vocab_size, c.intermediate_size, c.num_attention_heads
    hd = resolve_head_dim(d, h)
    p = "gpt_neox.layers.{i}"
    # query_key_value: 3d × d (q, k, v fused);  dense: d × d;  MLP: ff × d and d × ff, all biased
    layer = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=True),
        *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=True),
        *fused_mha(f"{p}.attention.query_key_value", f"{p}.attention.dense", d, bias=c.attention_bias),
        *fc_mlp(f"{p}.mlp.dense_h_to_4h", f"{p}.mlp.dense_4h_to_h", d, ff, bias=True),
    ]
    tensors = llama_outer_tensors(v, d, tied=c.tie_word_embeddings, embed="gpt_neox.embed_in",
                                  final_norm="gpt_neox.final_layer_norm", norm_bias=True)
    return Architecture(
        shape=Shape(c.num_hidden_layers, d, h, h, hd, ff, v,
                    c.tie_word_embeddings, c.max_position_embeddings),
        tensors=tensors,
        layer_groups=uniform_layers(c.num_hidden_layers, layer, Attention(h, h, hd, hd)),
    )
