"""Sparse mixture-of-experts decoders with a Llama-style block: a router and E routed SwiGLU experts.

Covers ``mixtral`` (Jiang et al. 2024, "Mixtral of Experts"), ``phimoe`` (Phi-3.5-MoE: LayerNorm
with bias, optional attention and lm_head biases), ``granitemoe`` (IBM Granite 3.0 MoE) and ``olmoe``
(Muennighoff et al. 2024: q/k norms over the whole projection). Tensor names and shapes as in the
transformers v5 ``*ForCausalLM`` classes, which fuse the routed experts into two 3-D parameters.
"""

from __future__ import annotations

from typing import ClassVar

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import check_top_k
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import qk_norms
from llmcalc.families._base import resolve_head_dim
from llmcalc.families._base import resolve_kv_heads
from llmcalc.families._base import routed_experts
from llmcalc.families._base import router
from llmcalc.families._base import uniform_layers
from llmcalc.model.spec import Attention
from llmcalc.model.spec import MoE
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

# ---- the family ------------------------------------------------------------------------------------


class SparseMoEConfig(FamilyConfig):
    """Fields common to the Mixtral-style families; the expert count field differs by model_type."""

    # Where the router and experts live, and the layer norm kind, by model_type.
    moe_module: ClassVar[str] = "mlp"
    router_name: ClassVar[str] = "gate"
    layer_norm_bias: ClassVar[bool] = False  # LayerNorm with bias (phimoe) vs RMSNorm
    experts_field: ClassVar[str] = "num_local_experts"
    # experts the router picks per token whatever num_experts_per_tok says (None: that field)
    routes: ClassVar[int | None] = None

    # declared by Mixtral; GraniteMoE, OLMoE and PhiMoE's attention reads
    # getattr(config, "head_dim", hidden_size // num_attention_heads): a config.json may set it
    head_dim: Size | None = None

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    num_key_value_heads: Size | None = None  # absent: equal to the heads (MHA)
    intermediate_size: Size  # one expert's d_ff
    vocab_size: Size
    max_position_embeddings: Size | None = None
    num_experts_per_tok: Size = 2
    tie_word_embeddings: bool = False

    @property
    def routed(self) -> int:
        experts: int = getattr(self, self.experts_field)
        return experts

    @property
    def qkvo_bias(self) -> bool:
        """q/k/v/o biases: ``attention_bias`` where the model_type reads it, else none (Mixtral)."""
        return bool(getattr(self, "attention_bias", False))

    def qk_norms(self, p: str, h: int, kv: int, hd: int) -> list[Tensor]:
        return []

    def head_dim_field(self) -> int | None:
        return self.head_dim


class MixtralConfig(SparseMoEConfig):
    transformers_class = "MixtralConfig"

    num_key_value_heads: Size
    num_local_experts: Size
    sliding_window: Size | None = None


class PhimoeConfig(SparseMoEConfig):
    transformers_class = "PhimoeConfig"
    router_name: ClassVar[str] = "router"
    layer_norm_bias: ClassVar[bool] = True
    # transformers' sparsemixer (PhimoeTopKRouter) picks a first and a second expert per token;
    # it reads no num_experts_per_tok
    routes: ClassVar[int | None] = 2

    num_key_value_heads: Size
    num_local_experts: Size
    attention_bias: bool
    lm_head_bias: bool
    sliding_window: Size | None = None


class GraniteMoeConfig(SparseMoEConfig):
    transformers_class = "GraniteMoeConfig"
    moe_module: ClassVar[str] = "block_sparse_moe"
    router_name: ClassVar[str] = "router"

    num_local_experts: Size
    attention_bias: bool


class OlmoeConfig(SparseMoEConfig):
    transformers_class = "OlmoeConfig"
    experts_field: ClassVar[str] = "num_experts"

    num_experts: Size
    num_experts_per_tok: Size
    attention_bias: bool

    def qk_norms(self, p: str, h: int, kv: int, hd: int) -> list[Tensor]:
        # OLMoE normalises the whole q and k projections (OlmoeAttention): RMSNorm over hidden_size
        # and (hidden_size // heads)·kv, sized by hidden/heads whatever head_dim a config gives
        d = self.hidden_size
        return qk_norms(p, d, d // h * kv)


def describe(c: SparseMoEConfig) -> Architecture:
    d, v, ff, E = c.hidden_size, c.vocab_size, c.intermediate_size, c.routed
    k = c.num_experts_per_tok
    check_top_k(k, E, k_field="num_experts_per_tok", e_field=c.experts_field)
    h = c.num_attention_heads
    hd = resolve_head_dim(d, h, c.head_dim_field(), floor=True)  # getattr(config, "head_dim", d // h): h·⌊d/h⌋
    kv = resolve_kv_heads(h, c.num_key_value_heads)
    nb = c.layer_norm_bias
    p, moe = "model.layers.{i}", f"model.layers.{{i}}.{c.moe_module}"
    layer = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=nb),
        *gqa_projections(f"{p}.self_attn", d, h, kv, hd, bias=c.qkvo_bias),
        *c.qk_norms(f"{p}.self_attn", h, kv, hd),
        *norm(f"{p}.post_attention_layernorm", "moe/norm", d, bias=nb),
        *router(f"{moe}.{c.router_name}", d, E),
        *routed_experts(f"{moe}.experts", d, ff, E),
    ]
    tensors = llama_outer_tensors(
        v,
        d,
        tied=c.tie_word_embeddings,
        norm_bias=nb,
        head_bias=getattr(c, "lm_head_bias", False),
    )
    window = getattr(c, "sliding_window", None)
    return Architecture(
        shape=Shape(c.num_hidden_layers, d, h, kv, hd, ff, v,
                    c.tie_word_embeddings, c.max_position_embeddings),
        tensors=tensors,
        layer_groups=uniform_layers(
            c.num_hidden_layers, layer, Attention(h, kv, hd, hd, window=window), name="moe"
        ),
        moe=MoE(num_experts=E, experts_per_tok=c.routes or k),
        notes=(f"num_experts_per_tok={k}: the router picks {c.routes} experts per token whatever "
               "it says (transformers' sparsemixer)",) if c.routes not in (None, k) else (),
    )
