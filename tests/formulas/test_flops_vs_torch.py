"""Ground truth for FLOPs: llmcalc's full-attention prefill count equals torch's FlopCounterMode.

Each bundled model is cut to 1 and to 2 layers, built on the CPU with random weights (eager
attention) and run on a short random sequence; the count is carried linearly to the full depth and
must equal ``forward_flops_per_sequence(spec, ctx=n, causal=False)`` exactly.

FlopCounterMode counts matmuls only (mm, addmm, bmm, baddbmm, SDPA kernels): the linear layers, the
lm_head (also when tied) and the two attention products QKᵀ and softmax·V over all n × n pairs, the
causal mask notwithstanding. It leaves out elementwise work — softmax, norms, activations, the
rotary rotation, residual adds, bias adds, the mask — and the embedding lookup; llmcalc leaves out
the same. It counts an addmm's bias add as nothing, which llmcalc's bias-free weight FLOPs match.
Routed experts run "eager" (one linear per expert over the tokens routed to it: n·k token-expert
products in all, whatever the routing); torch has no FLOP formula for the grouped matmul that
transformers uses by default, which would count the experts as 0.
"""

from __future__ import annotations

import pytest

from llmcalc import load_spec
from llmcalc.flops import forward_flops_per_sequence
from llmcalc.verify import extrapolate_layers, measure_forward

SEQ = 8
LONG = 64
SMALL = ["hidden_size=256", "intermediate_size=512", "vocab_size=1000"]

# name, --set overrides, what it covers
MODELS = [
    ("gpt2", [], "multi-head attention, tied lm_head, Conv1D (addmm) layers"),
    ("llama-3.2-1b", [], "GQA (32 heads, 8 kv heads), tied lm_head"),
    ("qwen2.5-0.5b", [], "GQA with q/k/v biases, tied lm_head"),
    ("falcon-7b", [], "multi-query attention, parallel attention and MLP"),
    ("pythia-1.4b", [], "GPT-NeoX: fused qkv, parallel residual, rotary on a quarter of each head"),
    (
        "mistral-7b",
        ["sliding_window=4"],
        "sliding window (4 < 8 tokens): counted over all n² pairs",
    ),
    ("bloom-560m", [], "ALiBi: the scores come from one baddbmm"),
    # layer 0 is dense, the other 26 MoE: 1 layer measures the dense one, 2 layers add one MoE layer
    ("deepseek-v2-lite", [], "MLA head dims; MoE: router, shared and 6 of 64 routed experts"),
    # dense decoders, narrowed (d 256, vocab 1000) to stay light on the CPU
    (
        "olmo3-default",
        [*SMALL, "num_attention_heads=4", "num_key_value_heads=4"],
        "post-norms, q/k norm over all heads",
    ),
    (
        "glm4-default",
        ["hidden_size=256", "intermediate_size=512", "head_dim=64"],
        "fused gate_up_proj, q/k/v biases, 4 norms",
    ),
    (
        "nanochat-default",
        [*SMALL, "num_attention_heads=4", "num_key_value_heads=4"],
        "plain fc1/fc2 MLP, weightless norms",
    ),
    (
        "codegen-default",
        ["n_embd=256", "n_head=4", "vocab_size=1000"],
        "CodeGen: fused qkv without bias, parallel block, lm_head bias",
    ),
    ("persimmon-default", [*SMALL, "num_attention_heads=4"], "per-head q/k LayerNorm"),
    (
        "minicpm3-default",
        [*SMALL, "num_attention_heads=4", "num_key_value_heads=4"],
        "dense layers with MLA",
    ),
    # state-space layers: the depthwise conv (aten.convolution over n + k − 1 padded positions) and
    # the state readout y = C·h (bmm); the state update is elementwise
    ("mamba-130m", [], "Mamba selective scan: conv over d_inner, readout 2·d_inner·N per token"),
    ("mamba-codestral-7b", ["chunk_size=4"], "Mamba-2 SSD: 2 chunks of 4, inter-chunk einsum"),
    ("mamba-codestral-7b", ["chunk_size=3"], "Mamba-2 SSD: 8 tokens padded to 3 chunks of 3"),
    (
        "diffllama-default",
        [*SMALL, "num_attention_heads=4", "num_key_value_heads=2"],
        "differential attention: two softmax maps per layer over the same Q and K",
    ),
]


@pytest.mark.torch
@pytest.mark.parametrize(
    ("name", "overrides", "covers"), MODELS, ids=[" ".join([m[0], *m[1]]) for m in MODELS]
)
def test_full_prefill_equals_flop_counter(name: str, overrides: list[str], covers: str) -> None:
    spec = load_spec(name, overrides=overrides)
    one = measure_forward(spec, num_layers=1, seq_len=SEQ)
    two = measure_forward(spec, num_layers=2, seq_len=SEQ)
    measured = extrapolate_layers(one.flops, two.flops, num_layers=spec.num_layers)
    assert measured == forward_flops_per_sequence(spec, ctx=SEQ, causal=False), covers
    # nothing but matmuls was counted
    assert set(two.flops_by_op) <= {
        "aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm", "aten.convolution"
    }


@pytest.mark.torch
def test_batch_scales_the_count() -> None:
    spec = load_spec("gpt2")
    m = measure_forward(spec, num_layers=1, seq_len=SEQ, batch=3)
    one_layer = load_spec("gpt2", overrides=["n_layer=1"])
    assert m.flops == 3 * forward_flops_per_sequence(one_layer, ctx=SEQ, causal=False)


@pytest.mark.torch
def test_sliding_window_mask_is_not_a_saving_flop_counter_sees() -> None:
    """The causal count is what a windowed kernel could skip; FlopCounterMode counts the full one."""
    spec = load_spec("mistral-7b", overrides=["sliding_window=4", "num_hidden_layers=1"])
    m = measure_forward(spec, num_layers=1, seq_len=SEQ)
    full = forward_flops_per_sequence(spec, ctx=SEQ, causal=False)
    causal = forward_flops_per_sequence(spec, ctx=SEQ, causal=True)
    pair = 2 * 32 * 256  # one query-key pair in one layer: 2 · h · (d_qk + d_v)
    assert m.flops == full
    assert full - causal == (64 - 26) * pair  # 8 × 8 pairs; the mask keeps 1+2+3+4+4+4+4+4 = 26


@pytest.mark.torch
def test_differential_attention_counts_both_maps() -> None:
    """DiffLlama runs softmax attention twice per layer (two calls sharing Q and K, each over half
    of V repeated to all kv heads): 2 maps × 2 · 64² · 32 heads · (64 + 64) per layer."""
    spec = load_spec("diffllama-default", overrides=["num_hidden_layers=2"])
    m = measure_forward(spec, num_layers=2, seq_len=LONG, dtype="fp32")
    assert m.flops == forward_flops_per_sequence(spec, ctx=LONG, causal=False) == 25_702_694_912
    assert m.flops_by_op["aten.bmm"] == 2 * 2 * 2 * LONG**2 * 32 * (64 + 64) == 134_217_728


@pytest.mark.torch
def test_grouped_mm_experts_count_as_eager() -> None:
    """transformers' default experts implementation multiplies the routed tokens by torch's
    grouped_mm, which torch 2.13's FlopCounterMode counts as 0 (Lara-Mini then reads 7.2% below
    llmcalc); counted from its shapes, k = 4 experts per token, it equals the eager loop."""
    spec = load_spec("lara-mini-default", overrides=["num_hidden_layers=2"])
    eager = measure_forward(spec, num_layers=2, seq_len=LONG, dtype="fp32")
    grouped = measure_forward(spec, num_layers=2, seq_len=LONG, dtype="fp32", experts="grouped_mm")
    assert grouped.flops == eager.flops == forward_flops_per_sequence(spec, ctx=LONG, causal=False)
    assert eager.flops == 23_897_145_344
    # 2 layers × 64 tokens × 4 experts: gate_up 2 × 1,024 × 1,024, down 1,024 × 512, 2 FLOPs each
    assert grouped.flops_by_op["aten._grouped_mm"] == 2 * LONG * 4 * 2 * (1024 * 1024 + 1024 * 512)
    assert grouped.flops - grouped.flops_by_op["aten._grouped_mm"] == 22_286_532_608


@pytest.mark.torch
def test_altup_router_runs_twice_and_predicts_with_a_matmul() -> None:
    """Gemma 3n's AltUp: per layer the router [n, d] reads the stream in predict and again in
    correct, and predict multiplies the n streams by an n × n matrix per token (a bmm)."""
    spec = load_spec("gemma-3n-text-defaults", overrides=[
        "num_hidden_layers=2", "num_kv_shared_layers=0", "vocab_size=1000",
        "vocab_size_per_layer_input=1000", "hidden_size=256", "intermediate_size=512"])
    m = measure_forward(spec, num_layers=2, seq_len=LONG)
    assert m.flops == forward_flops_per_sequence(spec, ctx=LONG, causal=False) == 646_729_728
    # attention 2 layers × 64² × 2 × 8 heads × (256 + 256); AltUp 2 layers × 64 × 2 × 256 × 4²
    assert m.flops_by_op["aten.bmm"] == 2 * LONG**2 * 2 * 8 * 512 + 2 * LONG * 2 * 256 * 16
