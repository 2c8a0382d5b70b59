"""MiniMax-Text-01 (MiniMax 2025, "MiniMax-01: Scaling Foundation Models with Lightning
Attention"): lightning attention (linear attention computed in blocks) in most layers, GQA softmax
attention in the others, Mixtral's routed experts in every layer.

Per layer: input_layernorm, post_attention_layernorm [d]; ``mlp``: router ``gate`` [E, d] and fused
experts; ``self_attn`` is Mixtral's GQA attention ("full_attention") or lightning attention
("linear_attention"): qkv_proj 3·h·hd × d (q, k and v for every head), output_gate h·hd × d,
norm [h·hd] (RMSNorm), out_proj d × h·hd; its decay rates are buffers, not parameters. Layer types
as listed in ``layer_types``, else full attention at even layers (transformers' default; the
original checkpoints' ``attn_type_list`` is not read by transformers, nor here). Tensor names as in
transformers ``MiniMaxForCausalLM`` (modeling_minimax.py).

State per sequence and lightning layer: the running sum of kᵀ·v, an hd × hd matrix per head, kept
at the model's dtype (``MiniMaxCache.linear_cache``); no convolution.
"""

from __future__ import annotations

from pydantic import AliasChoices
from pydantic import Field

from llmcalc.families._base import Architecture
from llmcalc.families._base import LayerPlan
from llmcalc.families._base import Size
from llmcalc.families._base import check_top_k
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import linear
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import resolve_head_dim
from llmcalc.families._base import resolve_kv_heads
from llmcalc.families._base import routed_experts
from llmcalc.families._base import router
from llmcalc.families._moe import listed_plan
from llmcalc.families._ssm import mixed_layers
from llmcalc.families.mixtral import MixtralConfig
from llmcalc.model.spec import LIGHTNING
from llmcalc.model.spec import Attention
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Mixer
from llmcalc.model.spec import MoE
from llmcalc.model.spec import Run
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor

FULL, LINEAR = "attention", "lightning"


class MiniMaxConfig(MixtralConfig):
    transformers_class = "MiniMaxConfig"

    num_local_experts: Size = Field(
        validation_alias=AliasChoices("num_local_experts", "num_experts"))
    layer_types: list[str] | None = None
    block_size: Size


def layer_plan(c: MiniMaxConfig) -> LayerPlan:
    """Lightning and softmax layers: as listed, else softmax where i is even."""
    L = c.num_hidden_layers
    if c.layer_types is None:
        # full where (i + 1) is odd: layers 0, 2, 4 …; lightning at 1, 3, 5 …
        plan = {FULL: LayerSet((Run(0, L, 0, 2, 1),)), LINEAR: LayerSet((Run(1, L, 1, 2, 1),))}
        return {kind: layers for kind, layers in plan.items() if layers}
    return listed_plan(c.layer_types, L, field="layer_types",
                       names={"full_attention": FULL, "linear_attention": LINEAR})


def lightning_attention(p: str, d: int, *, heads: int, head_dim: int,
                        block: int) -> tuple[list[Tensor], Mixer]:
    """Lightning attention (MiniMax-01 §2.2.1): qkv_proj 3·h·hd × d, output_gate h·hd × d, norm
    [h·hd], out_proj d × h·hd. State: h heads × hd × hd (kᵀ·v summed with a decay), no conv."""
    c, hd = "lightning", heads * head_dim
    tensors = [
        *norm(f"{p}.norm", f"{c}/norm", hd, bias=False),
        *linear(f"{p}.qkv_proj", f"{c}/qkv_proj", 3 * hd, d, bias=False),
        *linear(f"{p}.out_proj", f"{c}/out_proj", d, hd, bias=False),
        *linear(f"{p}.output_gate", f"{c}/output_gate", hd, d, bias=False),
    ]
    mixer = Mixer(LIGHTNING, conv_dim=0, conv_kernel=0, heads=heads, head_dim=head_dim,
                  state_size=head_dim, chunk=block, state_fp32=False)
    return tensors, mixer


def describe(c: MiniMaxConfig) -> Architecture:
    d, v, ff, E, k = (c.hidden_size, c.vocab_size, c.intermediate_size, c.num_local_experts,
                      c.num_experts_per_tok)
    check_top_k(k, E, k_field="num_experts_per_tok", e_field="num_local_experts")
    h = c.num_attention_heads
    hd = resolve_head_dim(d, h, c.head_dim, floor=True)  # getattr(config, "head_dim", d // h): h·⌊d/h⌋
    kv = resolve_kv_heads(h, c.num_key_value_heads)
    p = "model.layers.{i}"
    common = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=False),
        *norm(f"{p}.post_attention_layernorm", "moe/norm", d, bias=False),
        *router(f"{p}.mlp.gate", d, E),
        *routed_experts(f"{p}.mlp.experts", d, ff, E),
    ]
    lightning, mixer = lightning_attention(f"{p}.self_attn", d, heads=h, head_dim=hd,
                                           block=c.block_size)
    softmax = gqa_projections(f"{p}.self_attn", d, h, kv, hd, bias=False)
    attention = Attention(h, kv, hd, hd, window=c.sliding_window)
    builds: dict[str, tuple[list[Tensor], Attention | None, Mixer | None]] = {
        FULL: (softmax, attention, None), LINEAR: (lightning, None, mixer)}

    def build(kind: str) -> tuple[list[Tensor], Attention | None, Mixer | None]:
        tensors, attn, mix = builds[kind]
        return [*tensors, *common], attn, mix

    return Architecture(
        shape=Shape(c.num_hidden_layers, d, h, kv, hd, ff, v,
                    c.tie_word_embeddings, c.max_position_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
        layer_groups=mixed_layers(layer_plan(c), build),
        moe=MoE(num_experts=E, experts_per_tok=k),
    )
