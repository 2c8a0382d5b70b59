"""xLSTM-7B (Beck et al. 2025, "xLSTM 7B: A Recurrent LLM for Fast and Efficient Inference"):
every block an mLSTM layer (a matrix memory per head) and a gated feed-forward network.

Per block (b = use_bias): norm_mlstm, norm_ffn [d] (RMSNorm, + bias); ``mlstm_layer``: q, k
dqk × d, v and ogate_preact dv × d (+ bias), igate_preact and fgate_preact h × d with bias (weight
mode "fused": qkv_opreact (2·dqk + 2·dv) × d, ifgate_preact 2·h × d), multihead_norm [dv] (+ bias),
out_proj d × dv (+ bias); ``ffn``: proj_up_gate and proj_up up × d (fused: proj_up_gate_z 2·up × d),
proj_down d × up (+ biases). dqk = int(d · qk_dim_factor), dv = int(d · v_dim_factor),
up = d · ffn_proj_factor rounded up to a multiple of ffn_round_up_to_multiple_of. Around them
backbone.embeddings [V, embedding_dim], backbone.out_norm [d] and lm_head [V, d], never tied
(``xLSTMForCausalLM`` declares no tied weights). Tensor names as in transformers
``xLSTMForCausalLM`` (modeling_xlstm.py, its native-PyTorch path).

State per sequence and block, as ``xLSTMCache`` allocates it at the model's dtype: per head the
matrix memory C (dk × dv), the normalizer n (dk) and the stabilizer m (1), with dk, dv the heads'
shares of dqk and dv rounded up to multiples of 64. A prefill longer than max_inference_chunksize
runs through the blocks in pieces of that many tokens (xLSTMModel.forward), each piece's mLSTM
chunked on its own (llmcalc.formulas.flops.mlstm_chunkwise_flops).
"""

from __future__ import annotations

from pydantic import Field

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import embedding
from llmcalc.families._base import linear
from llmcalc.families._base import lm_head
from llmcalc.families._base import norm
from llmcalc.families._base import require
from llmcalc.model.spec import MLSTM
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Mixer
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor


class XLSTMConfig(FamilyConfig):
    transformers_class = "xLSTMConfig"

    vocab_size: Size
    hidden_size: Size
    embedding_dim: Size | None = None  # null: hidden_size
    num_hidden_layers: Size
    num_blocks: Size | None = None  # the blocks built; null: num_hidden_layers
    num_heads: Size
    use_bias: bool
    qk_dim_factor: float = Field(gt=0, le=2**20)
    v_dim_factor: float = Field(gt=0, le=2**20)
    ffn_proj_factor: float = Field(gt=0, le=2**20)
    ffn_round_up_to_multiple_of: Size
    weight_mode: str
    chunk_size: Size
    max_inference_chunksize: Size

    @property
    def blocks(self) -> int:
        return self.num_blocks if self.num_blocks is not None else self.num_hidden_layers


def round_up(x: float, multiple: int) -> int:
    """configuration_xlstm.round_up_to_next_multiple_of, in the same float arithmetic."""
    return int(((x + multiple - 1) // multiple) * multiple)


def block(p: str, c: XLSTMConfig, *, qk: int, v: int, up: int) -> list[Tensor]:
    """One xLSTM block: the mLSTM layer and the gated FFN (see the module docstring)."""
    d, h, b = c.hidden_size, c.num_heads, c.use_bias
    m, f = f"{p}.mlstm_layer", f"{p}.ffn"
    if c.weight_mode == "single":
        projections = [
            *linear(f"{m}.q", "mlstm/q", qk, d, bias=b),
            *linear(f"{m}.k", "mlstm/k", qk, d, bias=b),
            *linear(f"{m}.v", "mlstm/v", v, d, bias=b),
            *linear(f"{m}.ogate_preact", "mlstm/ogate", v, d, bias=b),
            *linear(f"{m}.igate_preact", "mlstm/igate", h, d, bias=True),
            *linear(f"{m}.fgate_preact", "mlstm/fgate", h, d, bias=True),
        ]
        ffn_up = [*linear(f"{f}.proj_up_gate", "ffn/proj_up_gate", up, d, bias=b),
                  *linear(f"{f}.proj_up", "ffn/proj_up", up, d, bias=b)]
    else:
        projections = [
            *linear(f"{m}.qkv_opreact", "mlstm/qkv_opreact", 2 * qk + 2 * v, d, bias=b),
            *linear(f"{m}.ifgate_preact", "mlstm/ifgate", 2 * h, d, bias=True),
        ]
        ffn_up = linear(f"{f}.proj_up_gate_z", "ffn/proj_up_gate_z", 2 * up, d, bias=b)
    return [
        *norm(f"{p}.norm_mlstm", "mlstm/norm", d, bias=b),
        *projections,
        *norm(f"{m}.multihead_norm", "mlstm/multihead_norm", h * (v // h), bias=b),
        *linear(f"{m}.out_proj", "mlstm/out_proj", d, v, bias=b),
        *norm(f"{p}.norm_ffn", "ffn/norm", d, bias=b),
        *ffn_up,
        *linear(f"{f}.proj_down", "ffn/proj_down", d, up, bias=b),
    ]


def describe(c: XLSTMConfig) -> Architecture:
    d, v_, h = c.hidden_size, c.vocab_size, c.num_heads
    require(c.weight_mode in ("single", "fused"), "weight_mode",
            f"expected 'single' or 'fused', got {c.weight_mode!r}")
    qk, v = int(d * c.qk_dim_factor), int(d * c.v_dim_factor)
    up = round_up(d * c.ffn_proj_factor, c.ffn_round_up_to_multiple_of)
    for field, width in (("qk_dim_factor", qk), ("v_dim_factor", v)):
        require(width > 0 and width % h == 0, field,
                f"num_heads ({h}) must divide the width it gives, {width}")
    # the cache's per-head sizes: dqk and dv rounded up to multiples of 64, over the heads
    dk = round_up(d * c.qk_dim_factor, 64) // h
    dv = round_up(d * c.v_dim_factor, 64) // h
    mixer = Mixer(MLSTM, conv_dim=0, conv_kernel=0, heads=h, head_dim=dv, state_size=dk,
                  chunk=c.chunk_size, state_fp32=False, extra_state=h * (dk + 1),
                  piece=c.max_inference_chunksize)
    # the blocks built are num_blocks, the states xLSTMCache holds num_hidden_layers
    # (modeling_xlstm.py: xLSTMCache.__init__); where they differ a cached forward keeps unused
    # states, or fails for want of one
    apart = (f"num_blocks ({c.num_blocks}) blocks are built but xLSTMCache holds the state of "
             f"num_hidden_layers ({c.num_hidden_layers}) layers; not modelled"
             if c.num_blocks is not None and c.num_blocks != c.num_hidden_layers else "")
    layers = (LayerGroup("mlstm", LayerSet.span(0, c.blocks),
                         tuple(block("backbone.blocks.{i}", c, qk=qk, v=v, up=up)), None, mixer),)
    tensors = (
        embedding("backbone.embeddings", "embed/tokens", v_, c.embedding_dim or d),
        *norm("backbone.out_norm", "final_norm", d, bias=False),
        *lm_head("lm_head", v_, d, tied_to=None),
    )
    return Architecture(
        forward_unmodelled=apart,
        shape=Shape(c.blocks, d, h, 0, v // h, up, v_, False),
        tensors=tensors,
        layer_groups=layers,
    )
