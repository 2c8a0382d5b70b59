"""Issue 13, encoder LMs and encoder–decoders: exact against transformers' whole-model class.

Encoder LMs (bert, roberta, deberta-v2, modernbert) are counted as their ``…ForMaskedLM``: every
tensor name and shape and the total equal the model built on the meta device, on the bundled real
config and on varied configs (depth, width, heads, tied/untied head, relative-position switches,
layer patterns). Their attention is bidirectional: a sequence of n tokens costs n² query–key pairs
(FlopCounterMode equality at 1–2 layers for BERT and ModernBERT) and nothing is cached.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from llmcalc import count, load_spec, spec_from_dict
from llmcalc.errors import ConfigError
from llmcalc.flops import (
    attention_flops_per_token,
    bidirectional_pairs,
    forward_flops_per_sequence,
)
from llmcalc.memory import kv_cache_bytes_per_token

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")


def build(model_type: str, cls: str, fields: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """named_parameters of transformers' ``cls`` for ``model_type`` with ``fields``, on meta."""
    transformers.logging.set_verbosity_error()
    config = transformers.AutoConfig.for_model(model_type, **fields)
    with torch.device("meta"):
        model = getattr(transformers, cls)(config)
    return {name: tuple(p.shape) for name, p in model.named_parameters()}


def numel(shapes: dict[str, tuple[int, ...]]) -> int:
    total = 0
    for shape in shapes.values():
        n = 1
        for x in shape:
            n *= x
        total += n
    return total


def assert_exact(model_type: str, cls: str, fields: dict[str, Any]) -> int:
    real = build(model_type, cls, fields)
    spec = spec_from_dict({**fields, "model_type": model_type}, name=model_type)
    assert dict(spec.named_shapes()) == real
    total = count(spec).total
    assert total == numel(real)
    return total


# ---- encoder LMs: counts ------------------------------------------------------------------------

BERT_SMALL = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
              "intermediate_size": 96, "vocab_size": 500}
DEBERTA_V3 = {"relative_attention": True, "position_buckets": 256, "norm_rel_ebd": "layer_norm",
              "share_att_key": True, "pos_att_type": "p2c|c2p", "position_biased_input": False}

ENCODER_CASES = [
    ("bert", "BertForMaskedLM", BERT_SMALL, 128_500),
    ("bert", "BertForMaskedLM", {**BERT_SMALL, "tie_word_embeddings": False, "type_vocab_size": 0},
     160_872),
    ("bert", "BertForMaskedLM", {**BERT_SMALL, "num_hidden_layers": 5, "max_position_embeddings": 64},
     187_860),
    ("roberta", "RobertaForMaskedLM", {**BERT_SMALL, "max_position_embeddings": 514}, 128_628),
    ("roberta", "RobertaForMaskedLM", {**BERT_SMALL, "tie_word_embeddings": False}, 161_000),
    ("deberta-v2", "DebertaV2ForMaskedLM", BERT_SMALL, 128_372),
    ("deberta-v2", "DebertaV2ForMaskedLM", {**BERT_SMALL, **DEBERTA_V3}, 128_500),
    # relative attention with separate position projections (c2p, p2c), a conv layer, a narrower
    # embedding with its projection, token types, an untied head
    ("deberta-v2", "DebertaV2ForMaskedLM",
     {**BERT_SMALL, "relative_attention": True, "max_relative_positions": 32,
      "pos_att_type": ["c2p", "p2c"], "conv_kernel_size": 3, "conv_groups": 2,
      "embedding_size": 32, "type_vocab_size": 2, "tie_word_embeddings": False}, 139_528),
    ("deberta-v2", "DebertaV2ForMaskedLM",
     {**BERT_SMALL, "relative_attention": True, "pos_att_type": ["c2p"], "legacy": False}, 202_228),
    ("modernbert", "ModernBertForMaskedLM", {**BERT_SMALL, "num_hidden_layers": 5,
                                              "pad_token_id": 0}, 211_444),
    ("modernbert", "ModernBertForMaskedLM",
     {**BERT_SMALL, "num_hidden_layers": 4, "global_attn_every_n_layers": 2, "norm_bias": True,
      "attention_bias": True, "mlp_bias": True, "classifier_bias": True, "decoder_bias": False,
      "tie_word_embeddings": False, "pad_token_id": 0}, 210_752),
    ("modernbert", "ModernBertForMaskedLM",
     {**BERT_SMALL, "num_hidden_layers": 3, "pad_token_id": 0,
      "layer_types": ["sliding_attention", "full_attention", "sliding_attention"]}, 141_556),
]


@pytest.mark.parametrize(
    ("model_type", "cls", "fields", "total"),
    ENCODER_CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(ENCODER_CASES)],
)
def test_encoder_lm_is_exact_on_varied_configs(
    model_type: str, cls: str, fields: dict[str, Any], total: int
) -> None:
    assert assert_exact(model_type, cls, fields) == total


@pytest.mark.parametrize(
    ("config", "cls", "total"),
    [
        ("bert-base-uncased", "BertForMaskedLM", 109_514_298),
        ("roberta-base", "RobertaForMaskedLM", 124_697_433),
        ("deberta-v3-base", "DebertaV2ForMaskedLM", 184_551_780),
        ("modernbert-base", "ModernBertForMaskedLM", 149_655_232),
    ],
)
def test_encoder_lm_bundled_config_is_exact(config: str, cls: str, total: int) -> None:
    spec = load_spec(config)
    fields = {k: v for k, v in spec.config.items() if k != "model_type"}
    real = build(spec.model_type, cls, fields)
    assert dict(spec.named_shapes()) == real
    assert count(spec).total == numel(real) == total


def test_bert_causal_lm_class_has_the_masked_lm_tensors() -> None:
    """The causal-LM walk (tests/test_every_causal_lm.py) builds BertLMHeadModel and
    RobertaForCausalLM: the same tensors as the …ForMaskedLM llmcalc counts, so it stays truthful."""
    for model_type, causal, masked in [
        ("bert", "BertLMHeadModel", "BertForMaskedLM"),
        ("roberta", "RobertaForCausalLM", "RobertaForMaskedLM"),
    ]:
        assert build(model_type, causal, BERT_SMALL) == build(model_type, masked, BERT_SMALL)


def test_encoder_breakdown_names_the_head() -> None:
    spec = load_spec("bert-base-uncased")
    pc = count(spec)
    # transform dense 768² + bias, LayerNorm 2·768, the decoder's bias [V]; the decoder is tied
    assert pc.breakdown["mlm_head/dense"] == 768 * 768 + 768
    assert pc.breakdown["mlm_head/norm"] == 2 * 768
    assert pc.breakdown["mlm_head/bias"] == 30522
    assert pc.breakdown.get("mlm_head/lm_head", 0) == 0
    assert pc.breakdown["embed/token_types"] == 2 * 768
    assert pc.parts == {"encoder": 109_514_298 - 622_650, "mlm_head": 622_650}
    assert pc.parts["mlm_head"] == 768 * 768 + 768 + 2 * 768 + 30522


def test_part_encoder_is_the_bare_encoder() -> None:
    """--part encoder: transformers' BertModel without its pooler (add_pooling_layer=False)."""
    from llmcalc.spec import spec_part

    spec = load_spec("bert-base-uncased")
    fields = {k: v for k, v in spec.config.items() if k != "model_type"}
    config = transformers.AutoConfig.for_model("bert", **fields)
    with torch.device("meta"):
        bare = transformers.BertModel(config, add_pooling_layer=False)
    real = {f"bert.{n}": tuple(p.shape) for n, p in bare.named_parameters()}
    encoder = spec_part(spec, "encoder")
    assert dict(encoder.named_shapes()) == real
    assert count(encoder).total == numel(real) == 108_891_648


# ---- encoder LMs: attention is bidirectional ----------------------------------------------------


def test_bidirectional_pairs() -> None:
    assert bidirectional_pairs(ctx=8, window=None) == 64
    assert bidirectional_pairs(ctx=8, window=7) == 64
    # |i − j| ≤ 2 over 8 tokens: 8 + 2·(7 + 6) = 34
    assert bidirectional_pairs(ctx=8, window=2) == 34
    assert bidirectional_pairs(ctx=1, window=3) == 1


def test_encoder_attention_is_every_pair_and_caches_nothing() -> None:
    spec = load_spec("bert-base-uncased")
    n = 512
    # per layer: n² pairs · 2·h·(d_qk + d_v) = n² · 4·768, 12 layers; the masked figure is the same
    full = forward_flops_per_sequence(spec, ctx=n, causal=False)
    assert forward_flops_per_sequence(spec, ctx=n, causal=True) == full
    weights = full - 12 * n * n * 4 * 768
    assert weights == n * 2 * (12 * (4 * 768 * 768 + 2 * 768 * 3072) + 768 * 768 + 30522 * 768)
    assert attention_flops_per_token(spec, ctx=n) == 12 * n * 4 * 768
    assert kv_cache_bytes_per_token(spec, dtype="bf16") == 0


def test_modernbert_local_layers_mask_to_their_window() -> None:
    spec = load_spec("modernbert-base")
    # 22 layers: 8 global (0, 3, …, 21), 14 local with |i − j| ≤ 64
    n, pair = 1024, 2 * 12 * (64 + 64)
    full = forward_flops_per_sequence(spec, ctx=n, causal=False)
    masked = forward_flops_per_sequence(spec, ctx=n, causal=True)
    assert full - masked == 14 * (n * n - bidirectional_pairs(ctx=n, window=64)) * pair
    assert attention_flops_per_token(spec, ctx=n) == (8 * n + 14 * 129) * pair


# ---- hostile input ------------------------------------------------------------------------------


def test_encoder_with_a_huge_depth_answers_at_once() -> None:
    start = time.perf_counter()
    spec = spec_from_dict(
        {"model_type": "modernbert", "num_hidden_layers": 10**12, "hidden_size": 64,
         "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 500},
        name="deep",
    )
    assert count(spec).total > 10**12
    assert time.perf_counter() - start < 2


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"model_type": "bert", "hidden_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 5, "intermediate_size": 96, "vocab_size": 500},
         "num_attention_heads (5) must divide hidden_size (64) when head_dim is not given"),
        ({**BERT_SMALL, "model_type": "roberta", "add_cross_attention": True},
         "add_cross_attention: cross-attention (an encoder–decoder's decoder) is not supported"),
        ({**BERT_SMALL, "model_type": "deberta-v2", "conv_kernel_size": 3, "conv_groups": 3},
         "conv_groups (3) must divide hidden_size (64)"),
        ({**BERT_SMALL, "model_type": "deberta-v2", "legacy": False, "embedding_size": 32},
         "the non-legacy head needs embedding_size = hidden_size (64)"),
    ],
)
def test_encoder_bad_input_names_the_field(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as e:
        spec_from_dict(fields, name="bad")
    assert str(e.value) == f"bad: {message}"


# ---- FLOPs against FlopCounterMode ---------------------------------------------------------------

SEQ = 8


@pytest.mark.parametrize(
    ("name", "overrides"),
    [
        ("bert-base-uncased", ["hidden_size=192", "intermediate_size=256", "vocab_size=1000"]),
        (
            "modernbert-base",
            ["hidden_size=128", "intermediate_size=192", "vocab_size=1000",
             "num_attention_heads=4", "pad_token_id=0"],
        ),
    ],
)
def test_encoder_flops_equal_flop_counter(name: str, overrides: list[str]) -> None:
    from llmcalc.verify import extrapolate_layers, measure_forward

    spec = load_spec(name, overrides=overrides)
    one = measure_forward(spec, num_layers=1, seq_len=SEQ, dtype="fp32")
    two = measure_forward(spec, num_layers=2, seq_len=SEQ, dtype="fp32")
    measured = extrapolate_layers(one.flops, two.flops, num_layers=spec.num_layers)
    assert forward_flops_per_sequence(spec, ctx=SEQ, causal=False) == measured
