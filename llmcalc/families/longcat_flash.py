"""LongCat-Flash (Meituan 2025, "LongCat-Flash Technical Report"): shortcut-connected MoE with
zero-computation experts.

Each of ``num_layers`` layers holds two MLA attention sublayers (DeepSeek-V2's, see deepseek.py),
two dense SwiGLU MLPs of ``ffn_hidden_size`` and one MoE block, and two norms before and after
attention. The router ``mlp.router.classifier`` [E + Z, d] scores E real experts and Z
zero-computation experts, which return their input unchanged: a token picks k of E + Z, so its
routed compute varies between 0 and k real experts; the active count here is the upper bound (all
k real). Tensor names and shapes as in transformers ``LongcatFlashForCausalLM``, which allocates
gate_up_proj for all E + Z experts ([E + Z, 2·ff, d]; the zero experts' slices are never read) and
down_proj for the E real ones ([E, d, ff]).

FLOPs and KV: the two attention sublayers are one layer group with twice the heads and twice the
cached latent (2 · (kv_lora_rank + qk_rope_head_dim) per token per layer).
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import check_top_k
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import stacked_experts
from llmcalc.families._base import swiglu
from llmcalc.families._base import uniform_layers
from llmcalc.families.deepseek import mla
from llmcalc.model.spec import Attention
from llmcalc.model.spec import MoE
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor


class LongcatFlashConfig(FamilyConfig):
    transformers_class = "LongcatFlashConfig"

    vocab_size: Size
    hidden_size: Size
    num_layers: Size
    num_attention_heads: Size
    max_position_embeddings: Size | None
    tie_word_embeddings: bool
    attention_bias: bool
    ffn_hidden_size: Size
    q_lora_rank: Size
    kv_lora_rank: Size
    qk_nope_head_dim: Size
    qk_rope_head_dim: Size
    # LongcatFlashConfig derives it from nope + rope when null; given (a saved config), q_b_proj
    # and the attention's query heads use it as it is
    qk_head_dim: Size | None = None
    v_head_dim: Size
    moe_topk: Size
    n_routed_experts: Size
    zero_expert_num: int  # 0 or null: none
    expert_ffn_hidden_size: Size
    router_bias: bool = False


def describe(c: LongcatFlashConfig) -> Architecture:
    d, v, L, h = c.hidden_size, c.vocab_size, c.num_layers, c.num_attention_heads
    E, Z, k, ff = (
        c.n_routed_experts,
        max(c.zero_expert_num or 0, 0),
        c.moe_topk,
        c.expert_ffn_hidden_size,
    )
    check_top_k(k, E + Z, k_field="moe_topk", e_field="n_routed_experts + zero_expert_num")
    p = "model.layers.{i}"
    layer: list[Tensor] = []
    for s in (0, 1):  # two attention sublayers, two dense MLPs, two pairs of norms
        layer += [
            *norm(f"{p}.input_layernorm.{s}", "attn/norm", d, bias=False),
            *mla(f"{p}.self_attn.{s}", c),  # type: ignore[arg-type]  # the MLA fields of DeepseekConfig
            *norm(f"{p}.post_attention_layernorm.{s}", "mlp/norm", d, bias=False),
            *swiglu(f"{p}.mlps.{s}", "mlp", d, c.ffn_hidden_size),
        ]
    m = f"{p}.mlp"
    # router [E + Z, d];  gate_up [E + Z, 2·ff, d] (as transformers allocates it), down [E, d, ff]
    layer += [
        Tensor(f"{m}.router.classifier.weight", (E + Z, d), "moe/router", matmul=True),
        *([Tensor(f"{m}.router.classifier.bias", (E + Z,), "moe/router")] if c.router_bias else []),
        stacked_experts(f"{m}.experts.gate_up_proj", "moe/experts/gate_up_proj", E + Z, 2 * ff, d),
        stacked_experts(f"{m}.experts.down_proj", "moe/experts/down_proj", E, d, ff),
    ]
    qk = c.qk_head_dim or c.qk_nope_head_dim + c.qk_rope_head_dim
    latent = c.kv_lora_rank + c.qk_rope_head_dim
    attention = Attention(2 * h, 2 * h, qk, c.v_head_dim, kv_latent_dim=2 * latent)
    return Architecture(
        shape=Shape(L, d, h, h, qk, ff, v, c.tie_word_embeddings, c.max_position_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
        layer_groups=uniform_layers(L, layer, attention, name="moe"),
        moe=MoE(num_experts=E, experts_per_tok=k, zero_experts=Z),
        notes=(
            f"zero_expert_num={Z}: a token's {k} routed picks may include zero-computation experts; "
            f"the active count assumes all {k} are real experts (the upper bound)",
        )
        if Z
        else (),
    )
