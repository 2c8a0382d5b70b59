"""StableLM (``model_type: stablelm``): LayerNorms, SwiGLU, partial rotary, optional qkv bias,
optional per-head q/k LayerNorms and parallel residual.

Source: Stability AI 2023-2024 (StableLM-3B-4E1T, StableLM 2); tensor names and shapes as in
transformers ``StableLmForCausalLM``. The head dim is always hidden_size / heads; ``qk_layernorm``
adds one bias-free LayerNorm(head_dim) per query head and per key/value head; with
``use_parallel_residual`` the block has no ``post_attention_layernorm``. Rotary adds nothing.
"""

from __future__ import annotations

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import linear
from llmcalc.families._base import llama_outer_tensors
from llmcalc.families._base import norm
from llmcalc.families._base import resolve_head_dim
from llmcalc.families._base import resolve_kv_heads
from llmcalc.families._base import swiglu
from llmcalc.families._base import uniform_layers
from llmcalc.model.spec import Attention
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor


class StableLmConfig(FamilyConfig):
    transformers_class = "StableLmConfig"

    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    num_key_value_heads: Size  # the transformers default, not heads
    intermediate_size: Size
    vocab_size: Size
    max_position_embeddings: Size | None = None
    use_qkv_bias: bool
    qk_layernorm: bool
    use_parallel_residual: bool
    tie_word_embeddings: bool


def _per_head_norms(name: str, component: str, heads: int, hd: int) -> list[Tensor]:
    """One LayerNorm(head_dim, bias=False) per head: ``{name}.norms.{n}.weight`` [hd]."""
    return [t for n in range(heads) for t in norm(f"{name}.norms.{n}", component, hd, bias=False)]


def describe(c: StableLmConfig) -> Architecture:
    d, v, ff, h = c.hidden_size, c.vocab_size, c.intermediate_size, c.num_attention_heads
    hd = resolve_head_dim(d, h)
    kv = resolve_kv_heads(h, c.num_key_value_heads)
    p = "model.layers.{i}"
    a = f"{p}.self_attn"
    # q: (h·hd) × d, k, v: (kv·hd) × d (bias with use_qkv_bias);  o: d × d, never biased
    layer = [
        *norm(f"{p}.input_layernorm", "attn/norm", d, bias=True),
        *linear(f"{a}.q_proj", "attn/q_proj", h * hd, d, bias=c.use_qkv_bias),
        *linear(f"{a}.k_proj", "attn/k_proj", kv * hd, d, bias=c.use_qkv_bias),
        *linear(f"{a}.v_proj", "attn/v_proj", kv * hd, d, bias=c.use_qkv_bias),
        *linear(f"{a}.o_proj", "attn/o_proj", d, d, bias=False),
    ]
    if c.qk_layernorm:
        layer += [
            *_per_head_norms(f"{a}.q_layernorm", "attn/q_norm", h, hd),
            *_per_head_norms(f"{a}.k_layernorm", "attn/k_norm", kv, hd),
        ]
    if not c.use_parallel_residual:
        layer += norm(f"{p}.post_attention_layernorm", "mlp/norm", d, bias=True)
    layer += swiglu(f"{p}.mlp", "mlp", d, ff)
    return Architecture(
        shape=Shape(c.num_hidden_layers, d, h, kv, hd, ff, v,
                    c.tie_word_embeddings, c.max_position_embeddings),
        tensors=llama_outer_tensors(v, d, tied=c.tie_word_embeddings, norm_bias=True),
        layer_groups=uniform_layers(c.num_hidden_layers, layer, Attention(h, kv, hd, hd)),
    )
