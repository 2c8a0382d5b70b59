"""Encoder LMs and encoder–decoders: exact against transformers' whole-model class.

Encoder LMs (bert, roberta, deberta-v2, modernbert) are counted as their ``…ForMaskedLM``: every
tensor name and shape and the total equal the model built on the meta device, on the bundled real
config and on varied configs (depth, width, heads, tied/untied head, relative-position switches,
layer patterns). Their attention is bidirectional: a sequence of n tokens costs n² query–key pairs
(FlopCounterMode equality at 1–2 layers for BERT, ModernBERT and DeBERTa-v3, whose disentangled
attention adds relative-position scores per token and projections of its position table per
sequence) and nothing is cached.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from helpers.encoders import BART_SMALL, BERT_SMALL, build, bundled_is_exact, run_seq2seq
from helpers.reference import numel

from llmcalc import count, load_spec, spec_from_dict
from llmcalc.errors import ConfigError
from llmcalc.formulas.flops import (
    attention_flops_per_token,
    bidirectional_pairs,
    forward_flops_per_sequence,
)
from llmcalc.formulas.memory import kv_cache_bytes_per_token
from llmcalc.units import DType

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def assert_exact(model_type: str, cls: str, fields: dict[str, Any]) -> int:
    real = build(model_type, cls, fields)
    spec = spec_from_dict({**fields, "model_type": model_type}, name=model_type)
    assert dict(spec.named_shapes()) == real
    total = count(spec).total
    assert total == numel(real)
    return total


# ---- encoder LMs: counts ------------------------------------------------------------------------

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
    """The causal-LM walk (tests/families/test_every_causal_lm.py) builds BertLMHeadModel and
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
    from llmcalc.model.spec import spec_part

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
    assert kv_cache_bytes_per_token(spec, dtype=DType.bf16) == 0


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
        # DeBERTa-v3: shared-key disentangled attention over 2·256 relative positions (c2p, p2c)
        ("deberta-v3-base", ["hidden_size=192", "intermediate_size=256", "vocab_size=1000"]),
        # separate position projections for c2p only, a table of 2·64, a convolution layer
        (
            "deberta-v3-base",
            ["hidden_size=192", "intermediate_size=256", "vocab_size=1000",
             "share_att_key=false", 'pos_att_type=["c2p"]', "position_buckets=-1",
             "max_relative_positions=64", "conv_kernel_size=3"],
        ),
    ],
)
def test_encoder_flops_equal_flop_counter(name: str, overrides: list[str]) -> None:
    from llmcalc.verify.reference import extrapolate_layers, measure_forward

    spec = load_spec(name, overrides=overrides)
    one = measure_forward(spec, num_layers=1, seq_len=SEQ, dtype="fp32")
    two = measure_forward(spec, num_layers=2, seq_len=SEQ, dtype="fp32")
    measured = extrapolate_layers(one.flops, two.flops, num_layers=spec.num_layers)
    assert forward_flops_per_sequence(spec, ctx=SEQ, causal=False) == measured


# ---- encoder–decoders: T5, mT5, UMT5 ------------------------------------------------------------

T5_SMALL = {"num_layers": 2, "d_model": 64, "d_kv": 16, "num_heads": 4, "d_ff": 96,
            "vocab_size": 500}


ENC_DEC_CASES = [
    ("t5", "T5ForConditionalGeneration", T5_SMALL),
    ("t5", "T5ForConditionalGeneration", {**T5_SMALL, "num_decoder_layers": 3, "num_layers": 1}),
    ("t5", "T5ForConditionalGeneration",
     {**T5_SMALL, "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False,
      "relative_attention_num_buckets": 8, "d_kv": 32}),
    ("mt5", "MT5ForConditionalGeneration", {**T5_SMALL, "num_decoder_layers": 1}),
    ("umt5", "UMT5ForConditionalGeneration", {**T5_SMALL, "num_layers": 3, "num_decoder_layers": 2}),
    ("umt5", "UMT5ForConditionalGeneration", {**T5_SMALL, "feed_forward_proj": "relu"}),
    ("bart", "BartForConditionalGeneration", BART_SMALL),
    ("bart", "BartForConditionalGeneration",
     {**BART_SMALL, "tie_word_embeddings": False, "max_position_embeddings": 64,
      "decoder_layers": 1, "decoder_ffn_dim": 128, "decoder_attention_heads": 8}),
    ("mbart", "MBartForConditionalGeneration", BART_SMALL),
    ("mbart", "MBartForConditionalGeneration",
     {**BART_SMALL, "tie_word_embeddings": False, "encoder_layers": 3}),
    ("whisper", "WhisperForConditionalGeneration", {"encoder_layers": 2, "decoder_layers": 3}),
    ("whisper", "WhisperForConditionalGeneration",
     {**BART_SMALL, "decoder_attention_heads": 8, "decoder_ffn_dim": 128, "num_mel_bins": 128,
      "tie_word_embeddings": False, "max_source_positions": 100, "max_target_positions": 64,
      "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "decoder_start_token_id": 3}),
]


@pytest.mark.parametrize(
    ("model_type", "cls", "fields"), ENC_DEC_CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(ENC_DEC_CASES)],
)
def test_encoder_decoder_is_exact_on_varied_configs(
    model_type: str, cls: str, fields: dict[str, Any]
) -> None:
    real = build(model_type, cls, fields)
    spec = spec_from_dict({**fields, "model_type": model_type}, name=model_type)
    assert dict(spec.named_shapes()) == real
    pc = count(spec)
    assert pc.total == numel(real)
    # part by part: the encoder's tensors are those named encoder.*, the rest is the decoder's
    encoder = {k: v for k, v in real.items() if k.startswith(("encoder.", "model.encoder."))}
    assert pc.parts == {"decoder": numel(real) - numel(encoder), "encoder": numel(encoder)}


ENC_DEC_BUNDLED = [
    ("t5-small", "T5ForConditionalGeneration", 60_506_624),
    ("flan-t5-base", "T5ForConditionalGeneration", 222_903_552),
    ("byt5-small", "T5ForConditionalGeneration", 299_072_512),
    ("mt5-small", "MT5ForConditionalGeneration", 172_119_424),
    ("umt5-small", "UMT5ForConditionalGeneration", 175_333_376),
    ("bart-base", "BartForConditionalGeneration", 139_420_416),
    ("mbart-large-50", "MBartForConditionalGeneration", 610_879_488),
    ("whisper-tiny", "WhisperForConditionalGeneration", 37_760_640),
]


@pytest.mark.parametrize(("config", "cls", "total"), ENC_DEC_BUNDLED)
def test_encoder_decoder_bundled_config_is_exact(config: str, cls: str, total: int) -> None:
    bundled_is_exact(config, cls, total)


def test_t5_lm_head_is_tied_whatever_the_config_says() -> None:
    """transformers 5.24's T5Config forces tie_word_embeddings; flan-t5's own lm_head.weight is a
    tensor its checkpoint holds that the model does not build: stated, in no count."""
    spec = load_spec("flan-t5-base")
    assert spec.unbuilt == (("lm_head.weight", 32128 * 768),)
    assert any("ties lm_head to shared anyway" in note for note in spec.notes)
    assert count(spec).breakdown.get("lm_head", 0) == 0


def test_t5_per_part_breakdown() -> None:
    pc = count(load_spec("t5-small"))
    assert pc.breakdown["embed/tokens"] == 32128 * 512  # shared, once, in the decoder part
    assert pc.parts["encoder"] == 6 * (4 * 512 * 512 + 2 * 512 * 2048 + 2 * 512) + 32 * 8 + 512
    assert pc.parts["decoder"] == (
        32128 * 512 + 6 * (8 * 512 * 512 + 2 * 512 * 2048 + 3 * 512) + 32 * 8 + 512
    )


def test_t5_cross_attention_figures() -> None:
    """Per generated token: self-attention over ctx, cross-attention over source_len; the cross
    K/V projections run once per source token, not per generated token."""
    from llmcalc.formulas.flops import flops
    from llmcalc.formulas.memory import memory

    spec = load_spec("t5-small")
    r = flops(spec, ctx=100, source_len=400)
    pair = 2 * 8 * (64 + 64)
    assert r.cross_attention_flops_per_token == 6 * 400 * pair
    assert r.attention_flops_per_token == 6 * 100 * pair + 6 * 400 * pair
    # weights per token: self q, k, v, o + cross q, o + MLP, per layer; lm_head (tied) — no cross k, v
    assert r.weight_flops_per_token == 2 * (6 * (6 * 512 * 512 + 2 * 512 * 2048) + 32128 * 512)
    assert r.cross_kv_flops_per_sequence == 2 * 6 * 2 * 512 * 512 * 400
    assert r.encoder_flops_per_sequence == (
        400 * 2 * 6 * (4 * 512 * 512 + 2 * 512 * 2048) + 6 * 400 * 400 * pair
    )
    m = memory(spec, ctx=100, source_len=400, dtype=DType.bf16)
    # self: 6 layers × 2·512 × 100 tokens; cross: 6 × 2·512 × 400; 2 bytes each
    assert m.cross_kv_cache_bytes == 6 * 2 * 512 * 400 * 2
    assert m.kv_cache_bytes == 6 * 2 * 512 * (100 + 400) * 2


def test_t5_flops_and_cache_equal_transformers() -> None:
    """FlopCounterMode at 1 and 2 layers per stack, carried to 6: encoder over 12 source tokens,
    cross K/V once, decoder over 5 tokens (full self-attention pairs, 5 × 12 cross pairs); the
    EncoderDecoderCache holds 5 self and 12 cross tokens per decoder layer."""
    from llmcalc.formulas.memory import kv_cache_bytes
    from llmcalc.verify.reference import extrapolate_layers

    spec = load_spec("t5-small", overrides=["vocab_size=1000"])
    (f1, b1), (f2, b2) = (run_seq2seq(spec, k, source=12, target=5) for k in (1, 2))
    assert forward_flops_per_sequence(spec, ctx=5, causal=False, source_len=12) == (
        extrapolate_layers(f1, f2, num_layers=6)
    )
    assert kv_cache_bytes(spec, batch=1, ctx=5, dtype=DType.fp32, source_len=12) == (
        extrapolate_layers(b1, b2, num_layers=6)
    )


WHISPER_SMALL_VOCAB = ["vocab_size=1000", "pad_token_id=0", "bos_token_id=1", "eos_token_id=2",
                       "decoder_start_token_id=3"]


def test_whisper_flops_and_cache_equal_transformers() -> None:
    """Whisper's encoder reads 30 s (3,000 mel frames: conv1 over 3,000, conv2 down to 1,500) and
    its decoder cross-attends to 1,500 positions whatever --source-len says; FlopCounterMode (the
    convolutions included) and the EncoderDecoderCache's bytes at 1 and 2 layers per stack."""
    from torch.utils.flop_counter import FlopCounterMode

    from llmcalc.formulas.memory import kv_cache_bytes
    from llmcalc.verify.reference import build_random_model, extrapolate_layers

    def run(layers: int) -> tuple[int, int]:
        cut = load_spec("whisper-tiny", overrides=[
            *WHISPER_SMALL_VOCAB, f"encoder_layers={layers}", f"decoder_layers={layers}"])
        model = build_random_model(cut, num_layers=layers, dtype="fp32")
        gen = torch.Generator().manual_seed(1)
        features = torch.randn(1, 80, 3000, generator=gen)
        tgt = torch.randint(0, 100, (1, 5), generator=gen)
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            out = model(input_features=features, decoder_input_ids=tgt, use_cache=True)
        cache = out.past_key_values
        nbytes = sum(layer.keys.nbytes + layer.values.nbytes
                     for sub in (cache.self_attention_cache, cache.cross_attention_cache)
                     for layer in sub.layers)
        return int(counter.get_total_flops()), nbytes

    spec = load_spec("whisper-tiny", overrides=WHISPER_SMALL_VOCAB)
    (f1, b1), (f2, b2) = run(1), run(2)
    measured = extrapolate_layers(f1, f2, num_layers=4)
    assert forward_flops_per_sequence(spec, ctx=5, causal=False) == measured == 40_609_320_960
    assert forward_flops_per_sequence(spec, ctx=5, causal=False, source_len=7) == measured
    cache = extrapolate_layers(b1, b2, num_layers=4)
    assert kv_cache_bytes(spec, batch=1, ctx=5, dtype=DType.fp32, source_len=7) == cache
    assert cache == 4 * 2 * 384 * (5 + 1500) * 4  # fp32: self 5 tokens, cross 1,500


# ---- the command line -----------------------------------------------------------------------------


def test_cli_part_encoder_counts_the_bare_encoder(cli: Any) -> None:
    import json

    r = cli("count", "bert-base-uncased", "--json")
    assert r.code == 0
    data = json.loads(r.stdout)
    assert data["total_params"] == 109_514_298
    assert data["parts"] == {"encoder": 108_891_648, "mlm_head": 622_650}
    r = cli("count", "bert-base-uncased", "--part", "encoder", "--json")
    assert r.code == 0
    assert json.loads(r.stdout)["total_params"] == 108_891_648
    r = cli("count", "t5-small", "--part", "encoder", "--json")
    assert json.loads(r.stdout)["total_params"] == 18_881_280
    r = cli("count", "t5-small", "--part", "vision")
    assert (r.code, r.stderr) == (
        2, "error: --part vision: google-t5/t5-small has the parts decoder, encoder\n"
    )


def test_cli_source_len(cli: Any) -> None:
    import json

    r = cli("flops", "t5-small", "--ctx", "100", "--source-len", "400", "--json")
    assert r.code == 0, r.stderr
    data = json.loads(r.stdout)
    pair = 2 * 8 * (64 + 64)
    assert data["source_len"] == 400
    assert data["cross_attention_flops_per_token"] == 6 * 400 * pair
    assert data["cross_kv_flops_per_sequence"] == 2 * 6 * 2 * 512 * 512 * 400
    r = cli("memory", "t5-small", "--ctx", "100", "--source-len", "400", "--json")
    assert r.code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["cross_kv_cache_bytes"] == 6 * 2 * 512 * 400 * 2
    assert data["kv_cache_bytes"] == 6 * 2 * 512 * 500 * 2
    r = cli("flops", "t5-small", "--source-len", "0")
    assert r.code == 2
    assert r.stderr.startswith("error: --source-len")
    # a decoder-only model has no encoder: the option changes nothing there
    r = cli("flops", "gpt2", "--ctx", "64", "--source-len", "400", "--json")
    assert "source_len" not in json.loads(r.stdout)


@pytest.mark.parametrize(
    "fields",
    [
        {"model_type": "t5", "num_layers": 10**12, "num_decoder_layers": 10**12},
        {"model_type": "umt5", "num_layers": 10**12},
        {"model_type": "bart", "encoder_layers": 10**12, "decoder_layers": 10**12},
        {"model_type": "whisper", "encoder_layers": 10**12, "decoder_layers": 10**12},
    ],
    ids=["t5", "umt5", "bart", "whisper"],
)
def test_encoder_decoder_with_a_huge_depth_answers_at_once(fields: dict[str, Any]) -> None:
    from llmcalc.formulas.flops import flops
    from llmcalc.formulas.memory import memory

    start = time.perf_counter()
    spec = spec_from_dict(fields, name="deep")
    assert count(spec).total > 10**12
    assert flops(spec, ctx=4096, source_len=4096).forward_flops_per_sequence > 0
    assert memory(spec, ctx=4096, dtype=DType.bf16).cross_kv_cache_bytes > 0
    assert time.perf_counter() - start < 2


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"model_type": "t5", "feed_forward_proj": "gated-gelu-x"},
         "feed_forward_proj: must be gated-ACT or ACT (e.g. gated-gelu, relu), got 'gated-gelu-x'"),
        ({"model_type": "bart", "d_model": 64, "decoder_attention_heads": 5},
         "decoder_attention_heads (5) must divide d_model (64) when head_dim is not given"),
        ({"model_type": "whisper", "d_model": 64, "encoder_attention_heads": 6},
         "encoder_attention_heads (6) must divide d_model (64) when head_dim is not given"),
    ],
)
def test_encoder_decoder_bad_input_names_the_field(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as e:
        spec_from_dict(fields, name="bad")
    assert str(e.value) == f"bad: {message}"


@pytest.mark.parametrize("name", ["bart-base", "mbart-large-50"])
def test_verify_flops_runs_an_encoder_decoder(name: str) -> None:
    """``llmcalc verify --flops``: source and decoder sequences of seq_len tokens, both stacks cut
    to 1 and 2 layers, FlopCounterMode against the formula (encoder, cross K/V, decoder)."""
    from llmcalc.verify.reference import verify_flops

    spec = load_spec(name, overrides=["vocab_size=1000", "d_model=192", "encoder_ffn_dim=256",
                                      "decoder_ffn_dim=256"])
    check = verify_flops(spec, seq_len=8)
    assert check.ok, check
