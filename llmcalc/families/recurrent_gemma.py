"""RecurrentGemma (Google, Botev et al. 2024, arXiv 2404.07839): Griffin's residual blocks (De et
al. 2024), recurrent (RG-LRU) or local attention, each followed by a gated MLP.

Layer i's temporal block is ``block_types[i mod len(block_types)]`` (transformers repeats the list
100 times, so at most 100 × its length layers): "recurrent" — ``_ssm.rg_lru_block`` over lru_width
channels (default hidden_size) with num_attention_heads gate blocks — or "attention": q, k, v
(biases with attention_bias) and o (always a bias), heads × head_dim (hidden_size / heads unless
given), over the last attention_window_size tokens (rotary on part of each head: no parameters).
Every layer: temporal_pre_norm, channel_pre_norm (RMSNorm [d]); MLP gate, up [ff/2, d], down
[d, ff/2], all with biases (ff = intermediate_size). Tensor names as in transformers
``RecurrentGemmaForCausalLM`` (modeling_recurrent_gemma.py); the lm_head is tied by default.
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import linear
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import require
from llmcalc.families._base import resolve_kv_heads
from llmcalc.families._ssm import LayerBuild
from llmcalc.families._ssm import mixed_layers
from llmcalc.families._ssm import residue_plan
from llmcalc.families._ssm import rg_lru_block
from llmcalc.model.spec import Attention
from llmcalc.model.spec import Shape

KINDS = ("recurrent", "attention")
REPEATS = 100  # RecurrentGemmaConfig.layers_block_type: (block_types * 100)[:num_hidden_layers]


class RecurrentGemmaConfig(FamilyConfig):
    transformers_class = "RecurrentGemmaConfig"

    num_hidden_layers: Size
    vocab_size: Size
    hidden_size: Size
    intermediate_size: Size
    num_attention_heads: Size
    num_key_value_heads: Size | None = None  # absent: the heads
    head_dim: Size | None = None  # absent: hidden_size // heads (a config.json's value wins)
    lru_width: Size | None = None  # absent: hidden_size
    attention_window_size: Size
    conv1d_width: Size
    block_types: list[str] = list(("recurrent", "recurrent", "attention"))
    attention_bias: bool
    tie_word_embeddings: bool


def describe(c: RecurrentGemmaConfig) -> Architecture:
    d, v, h, L = c.hidden_size, c.vocab_size, c.num_attention_heads, c.num_hidden_layers
    for i, kind in enumerate(c.block_types):
        require(kind in KINDS, f"block_types.{i}", f"unknown block type {kind!r} (recurrent or "
                "attention)")
    period = len(c.block_types)
    require(period > 0, "block_types", "lists no block types")
    require(L <= REPEATS * period, "num_hidden_layers",
            f"transformers repeats block_types {REPEATS} times: at most {REPEATS * period} "
            f"layers, got {L}")
    hd = c.head_dim or d // h
    require(hd > 0, "num_attention_heads",
            f"num_attention_heads ({h}) must not exceed hidden_size ({d})")
    kv = resolve_kv_heads(h, c.num_key_value_heads)
    width = c.lru_width or d
    # the gates' blocks are lru_width // heads wide (transformers RecurrentGemmaRglru.block_width):
    # built whatever the remainder, but the forward reshapes lru_width into heads blocks and fails
    ragged = (f"num_attention_heads ({h}) does not divide lru_width ({width}): transformers builds "
              f"the gates' blocks {width // h} wide, but its forward cannot reshape {width} "
              f"channels into {h} blocks") if width % h else ""
    ff = c.intermediate_size // 2
    plan = residue_plan(L, period, lambda r: c.block_types[r], field="block_types")
    p = "model.layers.{i}"
    t = f"{p}.temporal_block"

    def build(kind: str) -> LayerBuild:
        common = [
            *norm(f"{p}.temporal_pre_norm", f"{kind}/norm", d, bias=False),
            *norm(f"{p}.channel_pre_norm", "mlp/norm", d, bias=False),
            *linear(f"{p}.mlp_block.gate_proj", "mlp/gate_proj", ff, d, bias=True),
            *linear(f"{p}.mlp_block.up_proj", "mlp/up_proj", ff, d, bias=True),
            *linear(f"{p}.mlp_block.down_proj", "mlp/down_proj", d, ff, bias=True),
        ]
        if kind == "attention":
            b = c.attention_bias
            return [
                *common,
                *linear(f"{t}.q_proj", "attn/q_proj", h * hd, d, bias=b),
                *linear(f"{t}.k_proj", "attn/k_proj", kv * hd, d, bias=b),
                *linear(f"{t}.v_proj", "attn/v_proj", kv * hd, d, bias=b),
                *linear(f"{t}.o_proj", "attn/o_proj", d, h * hd, bias=True),
            ], Attention(h, kv, hd, hd, window=c.attention_window_size), None
        tensors, mixer = rg_lru_block(t, d, width=width, heads=h, kernel=c.conv1d_width)
        return [*common, *tensors], None, mixer

    return Architecture(
        shape=Shape(num_layers=L, hidden_size=d, num_heads=h, num_kv_heads=kv, head_dim=hd,
                    intermediate_size=c.intermediate_size, vocab_size=v,
                    tied_embeddings=c.tie_word_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings,
                                    final_norm="model.final_norm"),
        layer_groups=mixed_layers(plan, build),
        forward_unmodelled=ragged if "recurrent" in plan else "",
    )
