"""Ground truth for the KV cache: llmcalc's bytes equal the nbytes of the keys and values that a
transformers model keeps after a forward pass with ``use_cache=True``.

Each model is cut to 2 layers, built on the CPU in bf16 with random weights and run on 2 random
sequences of 8 tokens. With transformers' ``StaticCache`` (preallocated, what serving keeps) a
sliding-window layer holds its whole window, which is llmcalc's convention; the default
``DynamicCache`` trims a sliding layer to window − 1 tokens between steps (the next token brings
its own K and V), which the last test pins.
"""

from __future__ import annotations

import pytest

from llmcalc import load_spec
from llmcalc.formulas.memory import kv_cache_bytes, kv_cache_bytes_per_token
from llmcalc.units import DType
from llmcalc.verify.reference import LAYER_COUNT_FIELDS, measure_forward

BATCH, SEQ, LAYERS = 2, 8, 2
SMALL = ["hidden_size=256", "intermediate_size=512", "vocab_size=1000"]

MODELS = [
    ("gpt2", [], "multi-head attention: 12 kv heads of 64"),
    ("tinyllama-1.1b", [], "GQA: 4 kv heads of 64"),
    ("falcon-7b", [], "multi-query attention: 1 kv head of 64"),
    ("mistral-7b", ["sliding_window=4"], "sliding window of 4 over 8 tokens"),
    ("deepseek-v2-lite", [], "MLA: the latent, kv_lora_rank 512 + rope head dim 64 per layer"),
    # layer 0 full, layer 1 sliding (Granite SWA: full every 4th from 0), with sinks
    (
        "granite-swa-default",
        [*SMALL, "num_attention_heads=4", "sliding_window=4"],
        "full and sliding layers, sinks",
    ),
    # EXAONE 4: sliding, then full (every 2nd)
    ("exaone-4.0-32b", [*SMALL, "sliding_window=4", "sliding_window_pattern=2"], "pattern"),
    (
        "minicpm3-default",
        [*SMALL, "num_attention_heads=4", "num_key_value_heads=4"],
        "MLA in a dense model: kv_lora_rank 256 + rope head dim 32",
    ),
]


def cut(name: str, overrides: list[str]):  # noqa: ANN201 - a ModelSpec
    spec = load_spec(name, overrides=overrides)
    field = next(f for f in LAYER_COUNT_FIELDS if f in spec.config)
    return load_spec(name, overrides=[*overrides, f"{field}={LAYERS}"])


@pytest.mark.torch
@pytest.mark.parametrize(("name", "overrides", "covers"), MODELS, ids=[m[0] for m in MODELS])
def test_static_cache_bytes(name: str, overrides: list[str], covers: str) -> None:
    spec = cut(name, overrides)
    m = measure_forward(spec, num_layers=LAYERS, seq_len=SEQ, batch=BATCH, static_cache=True)
    assert m.kv_cache_bytes == kv_cache_bytes(spec, batch=BATCH, ctx=SEQ, dtype=DType.bf16), covers


@pytest.mark.torch
def test_full_attention_dynamic_cache_holds_every_token() -> None:
    spec = cut("tinyllama-1.1b", [])
    m = measure_forward(spec, num_layers=LAYERS, seq_len=SEQ, batch=BATCH, use_cache=True)
    per_token = kv_cache_bytes_per_token(spec, dtype=DType.bf16)
    assert per_token == 2 * LAYERS * 4 * 64 * 2
    assert m.kv_cache_bytes == BATCH * SEQ * per_token


@pytest.mark.torch
def test_dynamic_sliding_cache_keeps_window_minus_one() -> None:
    spec = cut("mistral-7b", ["sliding_window=4"])
    m = measure_forward(spec, num_layers=LAYERS, seq_len=SEQ, batch=BATCH, use_cache=True)
    assert m.cache_layers == ("DynamicSlidingWindowLayer",) * LAYERS
    assert m.kv_cache_bytes == kv_cache_bytes(spec, batch=BATCH, ctx=4 - 1, dtype=DType.bf16)
