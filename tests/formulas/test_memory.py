"""Weight and KV-cache bytes from the spec alone: hand-derived figures, conventions, the CLI.

The match with a real transformers cache is in test_kv_cache_vs_transformers.py.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from llmcalc import count, load_spec
from llmcalc.formulas.memory import kv_cache_bytes, kv_cache_bytes_per_token, memory, weight_bytes
from llmcalc.model.spec import Attention, LayerGroup, ModelSpec, Shape, Tensor
from llmcalc.units import DType


def test_hand_derived_kv_per_token() -> None:
    # 2 (K, V) × 32 layers × 32 kv heads × 128 head dim × 2 bytes
    assert kv_cache_bytes_per_token(load_spec("llama-2-7b"), dtype=DType.bf16) == 524_288
    # 2 × 32 layers × 8 kv heads × 128 × 2 bytes
    assert kv_cache_bytes_per_token(load_spec("llama-3-8b"), dtype=DType.bf16) == 131_072


def test_kv_heads_equal_to_heads_is_multi_head_attention() -> None:
    mha = load_spec("llama-3-8b", overrides=["num_key_value_heads=32"])
    assert kv_cache_bytes_per_token(mha, dtype=DType.bf16) == 2 * 32 * 4096 * 2
    mqa = load_spec("llama-3-8b", overrides=["num_key_value_heads=1"])
    assert kv_cache_bytes_per_token(mqa, dtype=DType.bf16) == 2 * 32 * 128 * 2


def test_weight_bytes_by_dtype() -> None:
    spec = load_spec("llama-2-7b")
    total = count(spec).total  # 6,738,415,616
    expected = {DType.fp32: 4 * total, DType.fp16: 2 * total, DType.bf16: 2 * total,
                DType.fp8: total, DType.int8: total, DType.int4: total // 2}
    assert {d: weight_bytes(spec, dtype=d) for d in DType} == expected
    # a tied lm_head is stored once
    assert weight_bytes(load_spec("gpt2"), dtype=DType.fp32) == 4 * 124_439_808


def _odd_spec() -> ModelSpec:
    """One layer with a 3-element and a 5 × 3 tensor: odd element counts, for int4 rounding."""
    layer = (Tensor("l.{i}.a", (3,), "a"), Tensor("l.{i}.b", (5, 3), "b", matmul=True))
    return ModelSpec(
        name="odd", model_type="test", family="test", shape=Shape(2, 3, 1, 1, 3, 5, 7, False),
        tensors=(Tensor("embed", (7, 3), "embed/tokens"),),
        layer_groups=(LayerGroup("decoder", (0, 1), layer, Attention(1, 1, 3, 3)),),
    )


def test_int4_rounds_up_per_tensor() -> None:
    # 21 → 11 bytes; per layer 3 → 2 and 15 → 8, × 2 layers; not ceil(51 / 2) = 26
    assert weight_bytes(_odd_spec(), dtype=DType.int4) == 11 + 2 * (2 + 8)
    # KV: 2 layers × (3 + 3) elements per token = 12 → 6 bytes; 3 tokens: 36 → 18 bytes
    assert kv_cache_bytes_per_token(_odd_spec(), dtype=DType.int4) == 6
    assert kv_cache_bytes(_odd_spec(), batch=1, ctx=3, dtype=DType.int4) == 18


def test_sliding_window_layers_hold_at_most_their_window() -> None:
    spec = load_spec("mistral-7b")  # window 4,096; 32 layers × 8 kv heads × 128
    per_token = 2 * 32 * 8 * 128 * 2
    assert kv_cache_bytes(spec, batch=1, ctx=1000, dtype=DType.bf16) == 1000 * per_token
    assert kv_cache_bytes(spec, batch=1, ctx=4096, dtype=DType.bf16) == 4096 * per_token
    assert kv_cache_bytes(spec, batch=8, ctx=32_768, dtype=DType.bf16) == 8 * 4096 * per_token


@given(st.integers(1, 64), st.integers(1, 1 << 20))
def test_kv_bytes_grow_linearly_in_batch_times_context(batch: int, ctx: int) -> None:
    spec = load_spec("llama-3-8b")
    assert kv_cache_bytes(spec, batch=batch, ctx=ctx, dtype=DType.fp8) == batch * ctx * 65_536


def _mla_spec() -> ModelSpec:
    """DeepSeek-V3's attention shape: 61 layers, 128 heads, qk 192 (128 + 64 rope), v 128, latent
    512 + 64."""
    attn = Attention(128, 128, 192, 128, kv_latent_dim=512 + 64)
    return ModelSpec(
        name="mla", model_type="test", family="test", shape=Shape(61, 7168, 128, 128, 128, 18432, 129280, False),
        tensors=(),
        layer_groups=(LayerGroup("decoder", tuple(range(61)), (), attn),),
    )


def test_mla_latent_and_decompressed() -> None:
    spec = _mla_spec()
    assert kv_cache_bytes_per_token(spec, dtype=DType.bf16) == 61 * 576 * 2  # 70,272
    assert kv_cache_bytes_per_token(spec, dtype=DType.bf16, decompressed=True) == (
        61 * 128 * (192 + 128) * 2
    )
    r = memory(spec, ctx=1000, batch=2, dtype=DType.bf16)
    assert r.mla
    assert r.kv_cache_bytes == 2 * 1000 * 70_272
    assert r.kv_cache_bytes_decompressed == 2 * 1000 * 4_997_120


# ---- CLI --------------------------------------------------------------------------------------------


def test_cli_json(cli) -> None:
    r = cli("memory", "mistral-7b", "--ctx", "32k", "--batch", "8", "--dtype", "bf16",
            "--kv-dtype", "fp8", "--json")
    assert r.code == 0, r.stderr
    data = r.json()
    weights = 2 * 7_241_732_096
    kv = 8 * 4096 * 32 * 8 * 256  # window-capped, 1 byte per element
    assert {k: data[k] for k in ("model", "ctx", "batch", "dtype", "kv_dtype", "weights_bytes",
                                 "kv_cache_bytes_per_token", "kv_cache_bytes", "total_bytes")} == {
        "model": "mistralai/Mistral-7B-v0.1",
        "ctx": 32_768,
        "batch": 8,
        "dtype": "bf16",
        "kv_dtype": "fp8",
        "weights_bytes": weights,
        "kv_cache_bytes_per_token": 65_536,
        "kv_cache_bytes": kv,
        "total_bytes": weights + kv,
    }


def test_cli_kv_dtype_defaults_to_dtype(cli) -> None:
    data = cli("memory", "llama-2-7b", "--ctx", "4k", "--dtype", "fp16", "--json").json()
    assert (data["kv_dtype"], data["kv_cache_bytes_per_token"]) == ("fp16", 524_288)
    assert data["kv_cache_bytes"] == 4096 * 524_288


def test_cli_table_and_explain(cli) -> None:
    r = cli("memory", "mistral-7b", "--ctx", "32k", "--batch", "8", "--kv-dtype", "fp8", "--explain")
    assert r.code == 0, r.stderr
    assert "13.49 GiB" in r.stdout and "2.00 GiB" in r.stdout and "15.49 GiB" in r.stdout
    assert "decoder: 32 layers × 8 kv heads × (128 + 128) (K and V) = 65,536 elements" in r.stdout
    assert "KV cache = 8 × (32 × min(32,768, window 4,096) × 2,048) elements × 8 bits / 8" in r.stdout


NOTE_8B_16K = (
    "context 16,384 is above the model's max_position_embeddings (8,192); "
    "the figures assume it runs there anyway"
)


def test_cli_ctx_beyond_max_position_embeddings_is_noted_not_refused(cli) -> None:
    # Llama 3 8B states max_position_embeddings 8192; 16k still computes, with a note.
    r = cli("memory", "llama-3-8b", "--ctx", "16k", "--json")
    assert r.code == 0, r.stderr
    data = r.json()
    assert data["notes"] == [NOTE_8B_16K]
    assert data["kv_cache_bytes"] == 16_384 * 131_072
    table = cli("memory", "llama-3-8b", "--ctx", "16k").stderr  # notes: on stderr
    assert f"note: {NOTE_8B_16K}" in table.replace("\n", " ")
    assert "note:" not in cli("memory", "llama-3-8b", "--ctx", "8k").stdout
    assert cli("memory", "llama-3-8b", "--ctx", "8k", "--json").json()["notes"] == []
