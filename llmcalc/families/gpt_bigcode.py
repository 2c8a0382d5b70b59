"""GPT-BigCode / StarCoder (``model_type: gpt_bigcode``): GPT-2 blocks with multi-query attention.

Source: Allal et al. 2023 (SantaCoder); Li et al. 2023 (StarCoder); tensor names and shapes as in
transformers ``GPTBigCodeForCausalLM`` (nn.Linear, so weights are [out, in], unlike GPT-2's Conv1D).
"""

from __future__ import annotations

from pydantic import AliasChoices
from pydantic import Field

from llmcalc.families._base import Architecture
from llmcalc.families._base import GPT2StyleConfig
from llmcalc.families._base import Size
from llmcalc.families._base import fc_mlp
from llmcalc.families._base import gpt2_outer_tensors
from llmcalc.families._base import linear
from llmcalc.families._base import norm
from llmcalc.families._base import require
from llmcalc.families._base import uniform_layers
from llmcalc.model.spec import Attention
from llmcalc.model.spec import Shape


class GPTBigCodeConfig(GPT2StyleConfig):
    transformers_class = "GPTBigCodeConfig"

    n_positions: Size = Field(
        validation_alias=AliasChoices("n_positions", "max_position_embeddings")
    )
    multi_query: bool
    add_cross_attention: bool
    tie_word_embeddings: bool


def describe(c: GPTBigCodeConfig) -> Architecture:
    require(not c.add_cross_attention, "add_cross_attention", "cross-attention is not supported")
    d, v, h = c.n_embd, c.vocab_size, c.n_head
    hd, ff = c.resolved_head_dim, c.d_ff
    kv = 1 if c.multi_query else h
    p = "transformer.h.{i}"
    # c_attn: (d + 2·kv·hd) × d  (MQA: kv = 1);  c_proj: d × d;  c_fc: ff × d;  mlp c_proj: d × ff
    layer = [
        *norm(f"{p}.ln_1", "attn/norm", d, bias=True),
        *linear(f"{p}.attn.c_attn", "attn/qkv", d + 2 * kv * hd, d, bias=True),
        *linear(f"{p}.attn.c_proj", "attn/o_proj", d, d, bias=True),
        *norm(f"{p}.ln_2", "mlp/norm", d, bias=True),
        *fc_mlp(f"{p}.mlp.c_fc", f"{p}.mlp.c_proj", d, ff, bias=True),
    ]
    return Architecture(
        shape=Shape(c.n_layer, d, h, kv, hd, ff, v, c.tie_word_embeddings, c.n_positions),
        tensors=gpt2_outer_tensors(v, d, c.n_positions, tied=c.tie_word_embeddings),
        layer_groups=uniform_layers(c.n_layer, layer, Attention(h, kv, hd, hd)),
        notes=c.d_ff_notes(),
    )
