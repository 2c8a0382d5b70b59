"""DBRX (Databricks 2024): a fused-qkv GQA decoder with 16 fine-grained experts, 4 used per token.

Tensor names and shapes as in transformers ``DbrxForCausalLM``: ``transformer.wte``, per block a
bias-free LayerNorm before attention (``norm_1``) and before the MoE (``norm_2``), ``Wqkv``
[d + 2·kv·hd, d], ``out_proj`` [d, d], the router ``ffn.router.layer`` [E, d] and the experts stored
row-stacked: ``ffn.experts.mlp.w1``, ``v1`` (gate, up) and ``w2`` (down, transposed), each
[E·ff, d]. The attention and MoE settings are nested in ``attn_config`` and ``ffn_config``.
"""

from __future__ import annotations

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import check_top_k
from llmcalc.families._base import embedding
from llmcalc.families._base import linear
from llmcalc.families._base import lm_head
from llmcalc.families._base import norm
from llmcalc.families._base import require
from llmcalc.families._base import resolve_head_dim
from llmcalc.families._base import resolve_kv_heads
from llmcalc.families._base import router
from llmcalc.families._base import uniform_layers
from llmcalc.model.spec import Attention
from llmcalc.model.spec import MoE
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor


class _Nested(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)


class DbrxAttnConfig(_Nested):
    kv_n_heads: Size = 1


class DbrxFfnConfig(_Nested):
    ffn_hidden_size: Size = 3584
    moe_num_experts: Size = 4
    moe_top_k: Size = 1


class DbrxConfig(FamilyConfig):
    transformers_class = "DbrxConfig"

    d_model: Size
    n_heads: Size
    n_layers: Size
    max_seq_len: Size
    vocab_size: Size
    attn_config: DbrxAttnConfig = Field(default_factory=DbrxAttnConfig)
    ffn_config: DbrxFfnConfig = Field(default_factory=DbrxFfnConfig)
    tie_word_embeddings: bool  # transformers refuses true


def describe(c: DbrxConfig) -> Architecture:
    require(
        not c.tie_word_embeddings,
        "tie_word_embeddings",
        "tie_word_embeddings is not supported for DBRX models (transformers refuses it)",
    )
    d, v, L, h = c.d_model, c.vocab_size, c.n_layers, c.n_heads
    ff, E, k = c.ffn_config.ffn_hidden_size, c.ffn_config.moe_num_experts, c.ffn_config.moe_top_k
    check_top_k(k, E, k_field="ffn_config.moe_top_k", e_field="ffn_config.moe_num_experts")
    hd = resolve_head_dim(d, h, hidden_field="d_model", heads_field="n_heads")
    kv = resolve_kv_heads(
        h, c.attn_config.kv_n_heads, heads_field="n_heads", kv_field="attn_config.kv_n_heads"
    )
    p = "transformer.blocks.{i}"
    a = f"{p}.norm_attn_norm"
    # Wqkv: (d + 2·kv·hd) × d;  out_proj: d × d;  experts: w1, v1, w2 each [E·ff, d]
    experts = [
        Tensor(f"{p}.ffn.experts.mlp.{w}", (E * ff, d), f"moe/experts/{w}", matmul=True, experts=E)
        for w in ("w1", "v1", "w2")
    ]
    layer = [
        *norm(f"{a}.norm_1", "attn/norm", d, bias=False),
        *linear(f"{a}.attn.Wqkv", "attn/Wqkv", h * hd + 2 * kv * hd, d, bias=False),
        *linear(f"{a}.attn.out_proj", "attn/out_proj", d, h * hd, bias=False),
        *norm(f"{a}.norm_2", "moe/norm", d, bias=False),
        *router(f"{p}.ffn.router.layer", d, E),
        *experts,
    ]
    wte = "transformer.wte"
    tensors = (
        embedding(wte, "embed/tokens", v, d),
        *norm("transformer.norm_f", "final_norm", d, bias=False),
        *lm_head("lm_head", v, d, tied_to=f"{wte}.weight" if c.tie_word_embeddings else None),
    )
    return Architecture(
        shape=Shape(L, d, h, kv, hd, ff, v, c.tie_word_embeddings, c.max_seq_len),
        tensors=tensors,
        layer_groups=uniform_layers(L, layer, Attention(h, kv, hd, hd), name="moe"),
        moe=MoE(num_experts=E, experts_per_tok=k),
    )
