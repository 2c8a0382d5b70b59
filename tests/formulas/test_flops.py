"""FLOPs from the spec alone: hand-derived figures, the conventions, and the CLI.

What the per-token figures include and leave out is stated in llmcalc/formulas/flops.py; the match with
torch's FlopCounterMode on real forward passes is in test_flops_vs_torch.py.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llmcalc import load_spec
from llmcalc.formulas.flops import (
    attention_crossover_ctx,
    attention_flops_per_token,
    causal_pairs,
    flops,
    forward_flops_per_sequence,
    forward_flops_per_token,
    image_cross_source,
    training_flops_per_token,
    weight_flops_breakdown,
    weight_flops_per_token,
)
from llmcalc.inputs import bundled
from llmcalc.model.spec import Attention, LayerGroup, ModelSpec, MoE, Shape, Tensor

LLAMA2_MATMUL = 6_607_077_376  # 6,738,415,616 params − 131,072,000 embedding − 65 × 4,096 norms


def test_llama2_7b_at_4096_by_hand() -> None:
    spec = load_spec("llama-2-7b")
    assert weight_flops_per_token(spec) == 2 * LLAMA2_MATMUL
    assert attention_flops_per_token(spec, ctx=4096) == 4 * 4096 * 4096 * 32
    assert forward_flops_per_token(spec, ctx=4096) == 15_361_638_400
    assert training_flops_per_token(spec, ctx=4096) == 3 * 15_361_638_400


def test_gpt2_by_hand() -> None:
    spec = load_spec("gpt2")  # tied lm_head: listed at 0 parameters, still multiplied by
    d, ff, v, L = 768, 3072, 50257, 12
    per_layer = d * 3 * d + d * d + d * ff + ff * d  # c_attn, c_proj, c_fc, mlp c_proj
    assert weight_flops_per_token(spec) == 2 * (L * per_layer + v * d)  # 2 × 123,532,032
    assert weight_flops_per_token(spec) == 247_064_064
    assert attention_flops_per_token(spec, ctx=1024) == L * 4 * 1024 * d
    assert weight_flops_breakdown(spec)["lm_head"] == 2 * v * d


def test_gqa_shares_k_and_v_not_the_attention_products() -> None:
    spec = load_spec("llama-3-8b")  # 32 query heads, 8 kv heads, head dim 128
    mha = load_spec("llama-3-8b", overrides=["num_key_value_heads=32"])
    assert attention_flops_per_token(spec, ctx=8192) == attention_flops_per_token(mha, ctx=8192)
    assert attention_flops_per_token(spec, ctx=8192) == 32 * 4 * 8192 * 4096
    # k_proj and v_proj shrink from 4096 × 4096 to 1024 × 4096 in each of 32 layers
    diff = weight_flops_per_token(mha) - weight_flops_per_token(spec)
    assert diff == 2 * 32 * 2 * (4096 - 1024) * 4096


def test_sliding_window_caps_the_keys() -> None:
    spec = load_spec("mistral-7b")  # window 4,096
    at_window = 32 * 2 * 4096 * 32 * (128 + 128)
    assert attention_flops_per_token(spec, ctx=4096) == at_window
    assert attention_flops_per_token(spec, ctx=131_072) == at_window
    assert attention_flops_per_token(spec, ctx=1000) == 32 * 2 * 1000 * 32 * 256
    assert attention_crossover_ctx(spec) is None  # 2.1 G of attention never passes 14.2 G of weights


def test_prefill_full_and_causal() -> None:
    spec = load_spec("mistral-7b", overrides=["sliding_window=4"])
    w = weight_flops_per_token(spec)
    pair = 32 * 2 * 32 * 256  # all layers, one query-key pair
    assert forward_flops_per_sequence(spec, ctx=10, causal=False) == 10 * w + 100 * pair
    # causal with window 4 over 10 tokens: 1 + 2 + 3 + 4 + 6 × 4 = 34 pairs
    assert forward_flops_per_sequence(spec, ctx=10, causal=True) == 10 * w + 34 * pair
    plain = load_spec("llama-2-7b")
    assert forward_flops_per_sequence(plain, ctx=10, causal=True) == (
        10 * 2 * LLAMA2_MATMUL + 55 * 32 * 4 * 4096
    )


@given(st.integers(1, 300), st.one_of(st.none(), st.integers(1, 300)))
def test_causal_pairs_count_the_mask(ctx: int, window: int | None) -> None:
    kept = sum(1 for q in range(ctx) for k in range(ctx) if k <= q and (window is None or q - k < window))
    assert causal_pairs(ctx=ctx, window=window) == kept


def test_crossover_is_the_first_context_where_attention_wins() -> None:
    spec = load_spec("llama-2-7b")
    # 13,214,154,752 / (32 layers × 2 × 32 heads × 256) = 25,204.3…
    assert attention_crossover_ctx(spec) == 25_205
    for name in ("gpt2", "llama-3.2-1b", "llama-3-8b"):
        s = load_spec(name)
        c = attention_crossover_ctx(s)
        assert c is not None
        w = weight_flops_per_token(s)
        assert attention_flops_per_token(s, ctx=c) > w >= attention_flops_per_token(s, ctx=c - 1)


def _moe_spec() -> ModelSpec:
    """Two layers, 8 stacked experts of [8, 2·ff, d] and [8, d, ff], top-2, a router, no head tie."""
    d, ff, E = 16, 32, 8
    layer = (
        Tensor("layers.{i}.q", (d, d), "attn/q", matmul=True),
        Tensor("layers.{i}.norm", (d,), "norm"),
        Tensor("layers.{i}.router", (E, d), "moe/router", matmul=True),
        Tensor("layers.{i}.up", (E, 2 * ff, d), "moe/up", matmul=True, experts=E),
        Tensor("layers.{i}.down.{e}", (d, ff), "moe/down", matmul=True, experts=E),
    )
    return ModelSpec(
        name="tiny-moe", model_type="test", family="test",
        shape=Shape(2, d, 2, 2, 8, ff, 100, False),
        tensors=(Tensor("embed", (100, d), "embed/tokens"), Tensor("head", (100, d), "lm_head", matmul=True)),
        layer_groups=(LayerGroup("moe", (0, 1), layer, Attention(2, 2, 8, 8)),),
        moe=MoE(num_experts=E, experts_per_tok=2),
    )


def test_moe_counts_only_the_active_experts() -> None:
    spec = _moe_spec()
    d, ff = 16, 32
    per_layer = d * d + 8 * d + 2 * (2 * ff * d) + 2 * (d * ff)  # q, router, 2 of 8 experts
    assert weight_flops_per_token(spec) == 2 * (2 * per_layer + 100 * d)
    assert sum(weight_flops_breakdown(spec).values()) == weight_flops_per_token(spec)


# the bundled configs whose forward pass is modelled; the others refuse FLOPs (test below)
FORWARD = [p.stem for p in bundled.paths() if not load_spec(p.stem).forward_unmodelled]
UNMODELLED = [p.stem for p in bundled.paths() if load_spec(p.stem).forward_unmodelled]
# …at any length: BigBird's block-sparse and Reformer's chunked attention are refused past their
# thresholds (tests/families/test_forward_prompt_sparse_relative.py)
ANY_LENGTH = [name for name in FORWARD if not any(
    t.attention is not None and t.attention.sparse_beyond is not None
    for t in (*load_spec(name).layer_groups,
              *(g for p in load_spec(name).parts for g in p.layer_groups)))]


@given(st.sampled_from(ANY_LENGTH), st.integers(1, 1 << 20))
def test_parts_add_up_and_grow(name: str, ctx: int) -> None:
    parts_add_up_and_grow(name, ctx)


@pytest.mark.parametrize("name", ANY_LENGTH)
def test_parts_add_up_and_grow_for_every_bundled_config(name: str) -> None:
    # the property above samples; this holds it for each config at one context
    parts_add_up_and_grow(name, 4097)


def parts_add_up_and_grow(name: str, ctx: int) -> None:
    spec = load_spec(name)
    assert sum(weight_flops_breakdown(spec).values()) == weight_flops_per_token(spec)
    r = flops(spec, ctx=ctx, batch=3)
    assert r.forward_flops_per_token == (
        r.weight_flops_per_token + r.attention_flops_per_token + r.mixer_flops_per_token
    )
    assert r.forward_flops_per_sequence >= r.forward_flops_per_sequence_causal
    # without an image, Llama 3.2 Vision's cross-attention layers are skipped, as transformers
    # skips them (image_cross_source); every other model is as given
    text_only, _ = image_cross_source(spec, images=0, source_len=None)
    assert r.forward_flops_per_sequence == 3 * forward_flops_per_sequence(
        text_only, ctx=ctx, causal=False)
    # more context never means less attention, a whole block later for block-sparse attention:
    # Qwen4-Exp's QSA reads topk + (i mod block) keys, fewer just after a block boundary
    step = math.lcm(1, *(g.attention.index_block for g in spec.layer_groups
                         if g.attention is not None and g.attention.index_block))
    assert attention_flops_per_token(spec, ctx=ctx + step) >= attention_flops_per_token(spec, ctx=ctx)


def test_more_layers_never_mean_fewer_flops() -> None:
    small = load_spec("tinyllama-1.1b")
    big = load_spec("tinyllama-1.1b", overrides=["num_hidden_layers=40"])
    assert forward_flops_per_token(big, ctx=2048) > forward_flops_per_token(small, ctx=2048)


# ---- CLI --------------------------------------------------------------------------------------------

JSON_KEYS = {
    "model", "ctx", "weight_flops_per_token", "attention_flops_per_token", "forward_flops_per_token",
    "forward_flops_per_sequence", "forward_flops_per_sequence_causal", "training_flops_per_token",
}


def test_cli_json(cli) -> None:
    r = cli("flops", "llama-2-7b", "--ctx", "4k", "--json", "--batch", "2", "--tokens", "2T")
    assert r.code == 0, r.stderr
    data = r.json()
    assert JSON_KEYS <= set(data)
    assert data["model"] == "meta-llama/Llama-2-7b-hf"
    assert data["ctx"] == 4096
    assert data["forward_flops_per_token"] == 15_361_638_400
    assert data["forward_flops_per_sequence"] == 2 * (4096 * 2 * LLAMA2_MATMUL + 32 * 4096**2 * 2 * 32 * 256)
    assert data["forward_flops_per_sequence_causal"] == 2 * (
        4096 * 2 * LLAMA2_MATMUL + 32 * (4096 * 4097 // 2) * 2 * 32 * 256
    )
    assert data["training_flops_per_token"] == 3 * 15_361_638_400
    assert data["training_flops"] == 2 * 10**12 * 3 * 15_361_638_400
    assert data["attention_crossover_ctx"] == 25_205
    assert data["seed_rule"]["flops_per_token"] == 2 * 6_738_415_616 + 4 * 4096 * 4096 * 32


def test_cli_catalog(cli) -> None:
    r = cli("flops", "--ctx", "128k", "--json")
    assert r.code == 0, r.stderr
    rows = r.json()
    # BigBird's block-sparse attention past 704 tokens and Reformer's chunked attention past 64
    # are left out with the unmodelled ones
    sparse = ["big-bird-default", "bigbird-pegasus-default", "reformer-default"]
    assert [row["name"] for row in rows] == ANY_LENGTH
    assert sorted(set(FORWARD) - set(ANY_LENGTH)) == sparse
    for row in rows:
        assert JSON_KEYS <= set(row)
        assert row["ctx"] == 131_072
    by_name = {row["name"]: row for row in rows}
    assert by_name["llama-2-7b"]["attention_flops_per_token"] == 32 * 4 * 131_072 * 4096
    table = cli("flops", "--ctx", "128k")
    assert table.code == 0
    assert "llama-2-7b" in table.stdout and "forward FLOPs per token at context 131,072 (128k)" in table.stdout
    # the models whose forward pass is not modelled are named, not shown with figures
    left_out = [*UNMODELLED, *sparse]
    assert (f"left out, their FLOPs not computed ({', '.join(left_out)}): `llmcalc flops MODEL` "
            "says why") in " ".join(table.stdout.split())


def test_an_unmodelled_forward_is_refused_in_one_line(cli) -> None:
    """ProphetNet's decoder runs n-gram streams beside the main one: its count stands, its FLOPs,
    cache bytes and the plans on them are refused, one line each, exit 2."""
    assert "prophetnet-default" in UNMODELLED
    assert cli("count", "prophetnet-default", "--json").json()["total_params"] == 391_321_600
    line = ("error: transformers ProphetNetConfig defaults: FLOPs and cache bytes are not "
            "computed: ProphetNet's decoder runs 2 n-gram streams beside the main one, with "
            "relative positions of their own\n")
    for args in (["flops"], ["memory"], ["fit", "--gpu", "h100"], ["latency", "--gpu", "h100"]):
        r = cli(*args, "prophetnet-default")
        assert (r.code, r.stdout, r.stderr) == (2, "", line), args


def test_cpmant_counts_its_prompt_tokens_and_plans_refuse_them(cli) -> None:
    """CPM-Ant prepends its 32 prompt tokens inside the model: flops and memory count them (the
    layers and the cache see ctx + 32 tokens), the plans on every token refuse in one line."""
    assert "cpmant-default" in FORWARD
    r = cli("memory", "cpmant-default", "--ctx", "96", "--json")
    # 48 layers × (96 + 32) tokens × K and V of 32 heads × 128, bf16
    assert r.json()["kv_cache_bytes"] == 48 * 128 * 2 * 32 * 128 * 2
    line = ("error: transformers CpmAntConfig defaults: no latency: its 32 prompt tokens run "
            "through the layers of every sequence, which the plan does not follow (flops and "
            "memory count them)\n")
    r = cli("latency", "cpmant-default", "--gpu", "h100")
    assert (r.code, r.stdout, r.stderr) == (2, "", line)


def test_cli_table_and_explain(cli) -> None:
    r = cli("flops", "llama-2-7b", "--ctx", "4096", "--explain")
    assert r.code == 0, r.stderr
    out = r.stdout
    assert "15,361,638,400" in out
    assert "forward per token = 13,214,154,752 + 2,147,483,648 = 15,361,638,400" in out
    assert "decoder: 32 layers × 2 × 4,096 × 32 heads × (128 + 128) = 2,147,483,648" in out
    assert "model.layers.{i}.mlp.gate_proj.weight: 2 × 32 layers × 11,008 × 4,096 = 2,885,681,152" in out
    tied = cli("flops", "gpt2", "--explain").stdout
    assert "lm_head.weight: 2 × 50,257 × 768 = 77,194,752 (tied to transformer.wte.weight: still multiplied by)" in tied


def test_cli_model_errors(cli) -> None:
    r = cli("flops", "no-such-model")
    assert r.code == 2
    assert r.stderr.startswith("error: unknown model 'no-such-model'")
    r = cli("flops", "--set", "n_layer=2")
    assert (r.code, r.stderr) == (2, "error: --set and --family need a MODEL\n")


def test_flops_and_memory_do_not_import_torch() -> None:
    import subprocess
    import sys

    code = (
        "import sys, llmcalc.formulas.flops, llmcalc.formulas.memory, llmcalc.units, llmcalc.cli.flops, "
        "llmcalc.cli.memory, llmcalc.render.flops, llmcalc.render.memory; "
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_cli_ctx_beyond_max_position_embeddings_is_noted_not_refused(cli) -> None:
    note = (
        "context 16,384 is above the model's max_position_embeddings (8,192); "
        "the figures assume it runs there anyway"
    )
    r = cli("flops", "llama-3-8b", "--ctx", "16k", "--json")
    assert r.code == 0, r.stderr
    assert r.json()["notes"] == [note]
    assert f"note: {note}" in cli("flops", "llama-3-8b", "--ctx", "16k").stderr.replace("\n", " ")
    assert cli("flops", "llama-3-8b", "--ctx", "8k", "--json").json()["notes"] == []
    assert flops(load_spec("llama-3-8b"), ctx=8193).notes == (
        "context 8,193 is above the model's max_position_embeddings (8,192); "
        "the figures assume it runs there anyway",
    )


def test_weight_terms_are_the_explained_figures() -> None:
    # The per-matrix terms --explain prints come from the result, and add up to its total.
    spec = load_spec("mixtral-8x7b")
    r = flops(spec, ctx=4096)
    assert sum(w.flops for w in r.weight_terms) == r.weight_flops_per_token
    assert r.weight_breakdown == weight_flops_breakdown(spec)
    experts = {w.name: w for w in r.weight_terms}["model.layers.{i}.mlp.experts.gate_up_proj"]
    assert (experts.num_layers, experts.experts, experts.experts_per_tok, experts.stacked) == (
        32, 8, 2, True)
    # 2 × 32 layers × 8 experts × 28,672 × 4,096 × 2/8
    assert experts.flops == 2 * 32 * 2 * 28_672 * 4096 == 15_032_385_536


def test_one_rule_for_keys_seen_and_tokens_cached() -> None:
    windowed = Attention(heads=8, kv_heads=2, qk_head_dim=64, v_head_dim=64, window=4096)
    assert [windowed.tokens_seen(c) for c in (1, 4096, 32_768)] == [1, 4096, 4096]
    full = Attention(heads=8, kv_heads=2, qk_head_dim=64, v_head_dim=64)
    assert full.tokens_seen(32_768) == 32_768


@pytest.mark.parametrize(("state_size", "chunk_size", "measured"), [
    (1, 64, 88_819_808),  # C·Bᵀ and the read-out sum over N = 1: broadcast multiplies
    (1, 384, 235_948_128),  # the same, 64 tokens padded to one chunk of 384
    (16, 1, 156_841_472),  # chunks of one token: the products over Q are multiplies
    (16, 64, 93_959_680),
])
def test_mamba2_scan_einsums_over_one_element_are_no_matmuls(
        state_size: int, chunk_size: int, measured: int) -> None:
    """Mamba-2's chunked scan, 1 layer, 64 tokens: FlopCounterMode's count of transformers 5.24.0's
    torch path (eager, bf16 on the CPU), which runs an einsum summing one element as a multiply."""
    from llmcalc import spec_from_dict
    from llmcalc.formulas.flops import forward_flops_per_sequence

    spec = spec_from_dict({"model_type": "mamba2", "hidden_size": 256, "num_heads": 8,
                           "head_dim": 64, "expand": 2, "n_groups": 2, "state_size": state_size,
                           "chunk_size": chunk_size, "conv_kernel": 4, "vocab_size": 1024,
                           "num_hidden_layers": 1}, name="mamba2")
    assert forward_flops_per_sequence(spec, ctx=64, causal=False) == measured
