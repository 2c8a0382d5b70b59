"""JetMoE (Shen et al. 2024, "JetMoE: Reaching Llama2 Performance with 0.1M Dollars"): experts in
the attention as well as in the MLP.

Tensor names and shapes as in transformers ``JetMoeForCausalLM``. Attention is a mixture of
attention heads (MoA): one shared kv_proj d → 2·kv·hd (kv = num_key_value_heads, hd = kv_channels),
and E query/output experts, input_linear [E, kv·hd, d] and output_linear [E, d, kv·hd], of which
k answer each token, so a token has k·kv query heads; a router [E, d] and an output bias [d]. The
MLP: E SwiGLU experts, input_linear [E, 2·ff, d] and output_linear [E, d, ff], a router and a bias.
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import check_top_k
from llmcalc.families._base import linear
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import router
from llmcalc.families._base import stacked_experts
from llmcalc.families._base import uniform_layers
from llmcalc.model.spec import Attention
from llmcalc.model.spec import MoE
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor


class JetMoeConfig(FamilyConfig):
    transformers_class = "JetMoeConfig"

    vocab_size: Size
    hidden_size: Size
    num_hidden_layers: Size
    num_key_value_heads: Size
    kv_channels: Size
    intermediate_size: Size
    max_position_embeddings: Size | None
    num_local_experts: Size
    num_experts_per_tok: Size
    tie_word_embeddings: bool


def _moe(p: str, component: str, d: int, inner: int, E: int, *, gated: bool) -> list[Tensor]:
    """JetMoE's expert block: router [E, d], input_linear [E, (2·)inner, d], output_linear
    [E, d, inner] and an output bias [d]."""
    width = 2 * inner if gated else inner
    return [
        Tensor(f"{p}.bias", (d,), f"{component}/bias"),
        stacked_experts(f"{p}.input_linear.weight", f"{component}/input_linear", E, width, d),
        stacked_experts(f"{p}.output_linear.weight", f"{component}/output_linear", E, d, inner),
        *router(f"{p}.router.layer", d, E),
    ]


def describe(c: JetMoeConfig) -> Architecture:
    d, v, L, E, k = (
        c.hidden_size,
        c.vocab_size,
        c.num_hidden_layers,
        c.num_local_experts,
        c.num_experts_per_tok,
    )
    check_top_k(k, E, k_field="num_experts_per_tok", e_field="num_local_experts")
    kv, hd = c.num_key_value_heads, c.kv_channels
    p = "model.layers.{i}"
    a = f"{p}.self_attention"
    layer = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=False),
        *linear(f"{a}.kv_proj", "attn/kv_proj", 2 * kv * hd, d, bias=False),
        *_moe(f"{a}.experts", "attn/experts", d, kv * hd, E, gated=False),
        *norm(f"{p}.post_attention_layernorm", "moe/norm", d, bias=False),
        *_moe(f"{p}.mlp", "moe/experts", d, c.intermediate_size, E, gated=True),
    ]
    return Architecture(
        shape=Shape(L, d, k * kv, kv, hd, c.intermediate_size, v,
                    c.tie_word_embeddings, c.max_position_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
        layer_groups=uniform_layers(L, layer, Attention(k * kv, kv, hd, hd), name="moe"),
        moe=MoE(num_experts=E, experts_per_tok=k),
    )
