"""Qwen2 / Qwen2.5 (``model_type: qwen2``) and Qwen3 (``qwen3``): Llama-style GQA decoders.

Source: Yang et al. 2024 (Qwen2, Qwen2.5); Qwen Team 2025 (Qwen3); tensor names and shapes as in
transformers ``Qwen2ForCausalLM`` and ``Qwen3ForCausalLM``. Qwen2 biases q, k and v (never o); Qwen3
drops those biases (``attention_bias``) and adds RMSNorm(head_dim) on queries and keys, with
``head_dim`` given (transformers default 128). With ``use_sliding_window`` the layers from
``max_window_layers`` on (or those ``layer_types`` names ``sliding_attention``) attend within
``sliding_window``; the tensors are the same either way.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence

from llmcalc.families._base import FULL
from llmcalc.families._base import SLIDING
from llmcalc.families._base import Architecture
from llmcalc.families._base import Count
from llmcalc.families._base import DecoderConfig
from llmcalc.families._base import LayerPlan
from llmcalc.families._base import Size
from llmcalc.families._base import gqa_projections
from llmcalc.families._base import layer_kinds
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import qk_norms
from llmcalc.families._base import sliding_full_layers
from llmcalc.families._base import split_plan
from llmcalc.families._base import swiglu
from llmcalc.families._base import uniform_layers
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Tensor


class Qwen2Config(DecoderConfig):
    transformers_class = "Qwen2Config"

    use_sliding_window: bool = False
    sliding_window: Size | None = 4096  # read only with use_sliding_window
    max_window_layers: Count = 28
    layer_types: list[str] | None = None
    tie_word_embeddings: bool = False


class Qwen3Config(Qwen2Config):
    transformers_class = "Qwen3Config"

    head_dim: Size = 128
    attention_bias: bool = False


def qwen_layer_kinds(c: Qwen2Config) -> LayerPlan:
    """Full or sliding attention per layer, as transformers' Qwen2/Qwen3 configs derive it."""
    if c.layer_types is not None:  # validated against the layer count and the known types
        return layer_kinds(c.layer_types, c.num_hidden_layers, pattern=1)
    sliding = c.use_sliding_window and c.sliding_window is not None
    if not sliding:
        return {FULL: LayerSet.span(0, c.num_hidden_layers)}
    return split_plan(c.num_hidden_layers, at=c.max_window_layers, before=FULL, after=SLIDING)


def _groups(c: Qwen2Config, layer: Sequence[Tensor]) -> tuple[LayerGroup, ...]:
    plan = qwen_layer_kinds(c)
    window = c.sliding_window if c.use_sliding_window else None
    if len(plan) == 1:
        only = window if SLIDING in plan else None
        return uniform_layers(c.num_hidden_layers, layer, c.attention(window=only))
    return sliding_full_layers(plan, layer, c, window=window)


def describe(c: Qwen2Config) -> Architecture:
    """Qwen2: q: (h·hd) × d + bias;  k, v: (kv·hd) × d + bias;  o: d × (h·hd), no bias."""
    return _decoder(
        c, lambda a, d, h, kv, hd: gqa_projections(a, d, h, kv, hd, bias=True, o_bias=False)
    )


def describe_qwen3(c: Qwen3Config) -> Architecture:
    """Qwen3: q, o: (h·hd) × d;  k, v: (kv·hd) × d;  q_norm, k_norm: [hd] (RMSNorm per head)."""
    return _decoder(
        c,
        lambda a, d, h, kv, hd: [
            *gqa_projections(a, d, h, kv, hd, bias=c.attention_bias),
            *qk_norms(a, hd, hd),
        ],
    )


def _decoder(
    c: Qwen2Config, attention: Callable[[str, int, int, int, int], list[Tensor]]
) -> Architecture:
    """The shared decoder around ``attention(prefix, d, h, kv, hd)``: RMSNorms, SwiGLU MLP."""
    d, v, ff = c.hidden_size, c.vocab_size, c.intermediate_size
    h, hd, kv = c.num_attention_heads, c.resolved_head_dim, c.resolved_kv_heads
    p = "model.layers.{i}"
    layer = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=False),
        *attention(f"{p}.self_attn", d, h, kv, hd),
        *norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=False),
        *swiglu(f"{p}.mlp", "mlp", d, ff),
    ]
    return Architecture(
        shape=c.shape(tied=c.tie_word_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings),
        layer_groups=_groups(c, layer),
    )
