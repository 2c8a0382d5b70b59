"""Nemotron-H (NVIDIA, 2025): each layer is one block — a Mamba-2 mixer ("M"), attention ("*"), a
squared-ReLU MLP ("-") or routed experts ("E") — after one RMSNorm, as ``hybrid_override_pattern``
(or ``layers_block_type``) lists them; the number of layers is the pattern's length.

Blocks as transformers ``NemotronHForCausalLM`` builds them (``model.layers.{i}.norm``, ``.mixer``):
Mamba-2 with inner width mamba_num_heads × mamba_head_dim (``_ssm.mamba2_mixer``); attention q, k,
v, o without biases (head_dim given, no rotary parameters); MLP up [ff, d], down [d, ff] (no gate);
MoE: router ``gate`` [E, d] (its e_score_correction_bias is a buffer), experts up [E, ff, d'],
down [E, d', ff] with d' = moe_latent_size (projected by fc1/fc2_latent_proj) or d, and a
shared-expert MLP. Outer: ``model.embeddings``, ``model.norm_f``, ``lm_head`` (never tied: the
transformers model ties nothing, whatever tie_word_embeddings says).
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import check_top_k
from llmcalc.families._base import embedding
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import linear
from llmcalc.families._base import lm_head
from llmcalc.families._base import norm
from llmcalc.families._base import plan_from_kinds
from llmcalc.families._base import require
from llmcalc.families._base import resolve_kv_heads
from llmcalc.families._base import router
from llmcalc.families._base import stacked_experts
from llmcalc.families._ssm import LayerBuild
from llmcalc.families._ssm import mamba2_mixer
from llmcalc.families._ssm import mixed_layers
from llmcalc.model.spec import Attention
from llmcalc.model.spec import MoE
from llmcalc.model.spec import Shape

# a pattern character or a layers_block_type entry → the block's kind
KIND_OF = {
    "M": "mamba", "*": "attention", "-": "mlp", "E": "moe",
    "mamba": "mamba", "linear_attention": "mamba", "attention": "attention",
    "full_attention": "attention", "mlp": "mlp", "moe": "moe",
}


class NemotronHConfig(FamilyConfig):
    transformers_class = "NemotronHConfig"

    vocab_size: Size
    hidden_size: Size
    hybrid_override_pattern: str | None = None
    layers_block_type: list[str] | None = None
    num_hidden_layers: Size | None = None  # ignored, as transformers does: the pattern's length
    num_attention_heads: Size
    num_key_value_heads: Size | None
    head_dim: Size
    max_position_embeddings: Size | None = None
    attention_bias: bool
    intermediate_size: Size
    mlp_bias: bool
    ssm_state_size: Size
    mamba_num_heads: Size
    mamba_head_dim: Size
    n_groups: Size
    conv_kernel: Size
    chunk_size: Size
    use_conv_bias: bool
    use_bias: bool
    n_routed_experts: Size
    num_experts_per_tok: Size
    moe_intermediate_size: Size
    moe_shared_expert_intermediate_size: Size
    moe_latent_size: Size | None = None

    def kinds(self) -> list[str]:
        if self.layers_block_type is not None:
            listed, field = list(self.layers_block_type), "layers_block_type"
        elif self.hybrid_override_pattern is not None:
            listed, field = list(self.hybrid_override_pattern), "hybrid_override_pattern"
        else:
            listed, field = ["mamba", "moe", "attention", "mlp"], "layers_block_type"
        for i, kind in enumerate(listed):
            require(kind in KIND_OF, f"{field}.{i}", f"unknown layer kind {kind!r} "
                    "(M, *, -, E or mamba, attention, mlp, moe)")
        return [KIND_OF[kind] for kind in listed]


def describe(c: NemotronHConfig) -> Architecture:
    d, v, E = c.hidden_size, c.vocab_size, c.n_routed_experts
    kinds = c.kinds()
    require(len(kinds) > 0, "hybrid_override_pattern", "lists no layers")
    require(c.mamba_num_heads % c.n_groups == 0, "n_groups",
            f"n_groups ({c.n_groups}) must divide mamba_num_heads ({c.mamba_num_heads})")
    kv = resolve_kv_heads(c.num_attention_heads, c.num_key_value_heads)
    h, hd = c.num_attention_heads, c.head_dim
    if "moe" in kinds:
        check_top_k(c.num_experts_per_tok, E, k_field="num_experts_per_tok",
                    e_field="n_routed_experts")
    p = "model.layers.{i}.mixer"
    d_in = c.moe_latent_size or d

    def build(kind: str) -> LayerBuild:
        first = norm("model.layers.{i}.norm", f"{kind}/norm", d, bias=False)
        if kind == "attention":
            return [*first, *gqa_projections(p, d, h, kv, hd, bias=c.attention_bias)], (
                Attention(h, kv, hd, hd)), None
        if kind == "mlp":
            return [*first, *linear(f"{p}.up_proj", "mlp/up_proj", c.intermediate_size, d,
                                    bias=c.mlp_bias),
                    *linear(f"{p}.down_proj", "mlp/down_proj", d, c.intermediate_size,
                            bias=c.mlp_bias)], None, None
        if kind == "moe":
            ff, fs = c.moe_intermediate_size, c.moe_shared_expert_intermediate_size
            latent = [
                *linear(f"{p}.fc1_latent_proj", "moe/latent_proj", d_in, d, bias=c.mlp_bias),
                *linear(f"{p}.fc2_latent_proj", "moe/latent_proj", d, d_in, bias=c.mlp_bias),
            ] if c.moe_latent_size else []
            return [
                *first,
                stacked_experts(f"{p}.experts.up_proj", "moe/experts/up_proj", E, ff, d_in),
                stacked_experts(f"{p}.experts.down_proj", "moe/experts/down_proj", E, d_in, ff),
                *router(f"{p}.gate", d, E),
                *linear(f"{p}.shared_experts.up_proj", "moe/shared/up_proj", fs, d,
                        bias=c.mlp_bias),
                *linear(f"{p}.shared_experts.down_proj", "moe/shared/down_proj", d, fs,
                        bias=c.mlp_bias),
                *latent,
            ], None, None
        tensors, mixer = mamba2_mixer(
            p, d, d_inner=c.mamba_num_heads * c.mamba_head_dim, heads=c.mamba_num_heads,
            head_dim=c.mamba_head_dim, groups=c.n_groups, state=c.ssm_state_size,
            conv_kernel=c.conv_kernel, chunk=c.chunk_size, bias=c.use_bias,
            conv_bias=c.use_conv_bias,
        )
        return [*first, *tensors], None, mixer

    embed = "model.embeddings"
    # transformers' NemotronHForCausalLM ties nothing (_tied_weights_keys is empty), whatever
    # tie_word_embeddings says: its lm_head is always a parameter of its own
    tied = False
    return Architecture(
        shape=Shape(num_layers=len(kinds), hidden_size=d, num_heads=h, num_kv_heads=kv,
                    head_dim=hd, intermediate_size=c.intermediate_size, vocab_size=v,
                    tied_embeddings=tied, max_position_embeddings=c.max_position_embeddings),
        tensors=(
            embedding(embed, "embed/tokens", v, d),
            *norm("model.norm_f", "final_norm", d, bias=False),
            *lm_head("lm_head", v, d, tied_to=None),
        ),
        layer_groups=mixed_layers(plan_from_kinds(kinds), build),
        moe=MoE(E, c.num_experts_per_tok, shared_experts=1) if "moe" in kinds else None,
    )
