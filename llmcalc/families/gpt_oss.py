"""gpt-oss (OpenAI 2025): MoE with biased experts, attention sinks, alternating sliding/full layers.

Source: OpenAI 2025, "gpt-oss-120b & gpt-oss-20b Model Card" §2; tensor names and shapes as in
transformers ``GptOssForCausalLM``. Every layer is MoE; the q/k/v/o projections carry biases
(``attention_bias``), each head has one learned sink logit, the router has a bias, and the fused
experts are stored transposed with a bias per expert: gate_up_proj [E, d, 2·ff] + [E, 2·ff],
down_proj [E, ff, d] + [E, d].
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import Size
from llmcalc.families._base import check_top_k
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import layer_kinds
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import router
from llmcalc.families._base import sliding_full_layers
from llmcalc.families._base import stacked_experts
from llmcalc.model.spec import MoE
from llmcalc.model.spec import Tensor


class GptOssConfig(DecoderConfig):
    """``intermediate_size`` is one expert's d_ff."""

    transformers_class = "GptOssConfig"

    num_key_value_heads: Size
    head_dim: Size
    num_local_experts: Size
    num_experts_per_tok: Size
    sliding_window: Size | None
    layer_types: list[str] | None = None
    attention_bias: bool
    tie_word_embeddings: bool


def experts(p: str, d: int, ff: int, num_experts: int) -> list[Tensor]:
    """Fused experts, transposed, with biases: [E, d, 2·ff] + [E, 2·ff];  [E, ff, d] + [E, d]."""
    component = "moe/experts"
    return [
        stacked_experts(f"{p}.gate_up_proj", f"{component}/gate_up_proj", num_experts, d, 2 * ff),
        Tensor(
            f"{p}.gate_up_proj_bias",
            (num_experts, 2 * ff),
            f"{component}/gate_up_proj",
            experts=num_experts,
        ),
        stacked_experts(f"{p}.down_proj", f"{component}/down_proj", num_experts, ff, d),
        Tensor(
            f"{p}.down_proj_bias", (num_experts, d), f"{component}/down_proj", experts=num_experts
        ),
    ]


def describe(c: GptOssConfig) -> Architecture:
    d, v, ff = c.hidden_size, c.vocab_size, c.intermediate_size
    E, k = c.num_local_experts, c.num_experts_per_tok
    check_top_k(k, E, k_field="num_experts_per_tok", e_field="num_local_experts")
    h, hd, kv = c.num_attention_heads, c.resolved_head_dim, c.resolved_kv_heads
    p = "model.layers.{i}"
    layer = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=False),
        *gqa_projections(f"{p}.self_attn", d, h, kv, hd, bias=c.attention_bias),
        Tensor(f"{p}.self_attn.sinks", (h,), "attn/sinks"),  # one learned sink logit per head
        *norm(f"{p}.post_attention_layernorm", "moe/norm", d, bias=False),
        *router(f"{p}.mlp.router", d, E, bias=True),
        *experts(f"{p}.mlp.experts", d, ff, E),
    ]
    kinds = layer_kinds(c.layer_types, c.num_hidden_layers, pattern=2)
    # transformers' GptOss rotary step (``_apply_rotary_emb``) splits a head with torch.chunk into
    # ceil(hd/2) and floor(hd/2) against cos/sin of ceil(hd/2): an odd head broadcasts its keys to
    # hd + 1 (head_dim 3, cached 4 wide beside values of 3) or fails, so its forward is not modelled
    odd = (f"head_dim {hd}: GptOss's rotary step halves each head with torch.chunk, and an odd "
           "head's halves broadcast against cos/sin to a wider key or fail; not modelled"
           if hd % 2 else "")
    return Architecture(
        forward_unmodelled=odd,
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
        layer_groups=sliding_full_layers(kinds, layer, c, window=c.sliding_window),
        moe=MoE(num_experts=E, experts_per_tok=k),
    )
