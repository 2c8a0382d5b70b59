"""BERT's and BART's near-copies, each a row of encoder.py or bart.py, exact against
transformers 5.24.

Encoder LMs are counted as their ``…ForMaskedLM`` (``--part encoder``: the bare encoder), the
encoder–decoders as their ``…ForConditionalGeneration`` (Marian: ``MarianMTModel``): every tensor
name and shape, the total and the parts equal the model built on the meta device, on the bundled
config and on varied configs (tied or not, narrower embeddings, pre-/post-norm, adapters, shared or
separate vocabularies). FLOPs equal FlopCounterMode for an encoder with an embedding projection
(ELECTRA's generator), one with language adapters (X-MOD) and a pre-norm one (XLM-R XL), and for
Pegasus and Marian, whose KV cache equals transformers' EncoderDecoderCache bytes.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers.encoders import BART_SMALL, BERT_SMALL, build, bundled_is_exact, run_seq2seq
from helpers.reference import numel

from llmcalc import count, load_spec, spec_from_dict
from llmcalc.errors import ConfigError
from llmcalc.formulas.flops import forward_flops_per_sequence
from llmcalc.formulas.memory import kv_cache_bytes
from llmcalc.units import DType

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

# ---- encoder LMs --------------------------------------------------------------------------------

ENCODER_CASES = [
    ("xlm-roberta", "XLMRobertaForMaskedLM", {}, 128_500),
    ("xlm-roberta", "XLMRobertaForMaskedLM", {"tie_word_embeddings": False}, 161_000),
    ("camembert", "CamembertForMaskedLM", {}, 128_500),
    ("data2vec-text", "Data2VecTextForMaskedLM", {"tie_word_embeddings": False}, 161_000),
    ("roberta-prelayernorm", "RobertaPreLayerNormForMaskedLM", {}, 128_628),
    ("xlm-roberta-xl", "XLMRobertaXLForMaskedLM", {}, 128_564),
    ("electra", "ElectraForMaskedLM", {}, 206_068),  # embedding_size 128 > hidden 64: projected
    ("electra", "ElectraForMaskedLM", {"embedding_size": 64, "tie_word_embeddings": False}, 160_500),
    ("ernie", "ErnieForMaskedLM", {"use_task_id": True}, 128_692),
    ("ibert", "IBertForMaskedLM", {}, 128_500),  # a row written in MODEL_TYPES alone
    ("ibert", "IBertForMaskedLM", {"quant_mode": True, "tie_word_embeddings": False}, 161_000),
    ("megatron-bert", "MegatronBertForMaskedLM", {}, 128_500),
    ("xmod", "XmodForMaskedLM", {}, 136_884),
    ("xmod", "XmodForMaskedLM",
     {"languages": ["en_XX", "de_DE", "fr_XX"], "adapter_layer_norm": True, "pre_norm": True,
      "adapter_reduction_factor": 4}, 141_652),
    ("rembert", "RemBertForMaskedLM", {}, 1_279_220),
    ("rembert", "RemBertForMaskedLM", {"input_embedding_size": 64, "output_embedding_size": 32},
     146_516),
    ("roformer", "RoFormerForMaskedLM", {}, 120_308),
    ("roformer", "RoFormerForMaskedLM", {"embedding_size": 32, "tie_word_embeddings": False},
     120_648),
]


def _exact(model_type: str, cls: str, fields: dict[str, Any]) -> Any:
    real = build(model_type, cls, fields)
    spec = spec_from_dict({**fields, "model_type": model_type}, name=model_type)
    assert dict(spec.named_shapes()) == real
    assert count(spec).total == numel(real)
    return spec


@pytest.mark.parametrize(
    ("model_type", "cls", "extra", "total"), ENCODER_CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(ENCODER_CASES)],
)
def test_encoder_row_is_exact_on_varied_configs(
    model_type: str, cls: str, extra: dict[str, Any], total: int
) -> None:
    spec = _exact(model_type, cls, {**BERT_SMALL, **extra})
    assert count(spec).total == total


# bundled totals: transformers' numel of the …ForMaskedLM / …ForConditionalGeneration built from
# the bundled config (xlm-roberta-base: the model card's "279M"; pegasus-large: "568M" and
# opus-mt-en-de: "73.9M" are those checkpoints' stored tensors, without the two sinusoidal position
# tables of P × d that transformers builds as frozen parameters: 570,797,056 − 2·1024·1024 and
# 74,410,496 − 2·512·512)
BUNDLED = [
    ("xlm-roberta-base", "XLMRobertaForMaskedLM", 278_295_186),
    ("camembert-default", "CamembertForMaskedLM", 109_514_298),
    ("data2vec-text-default", "Data2VecTextForMaskedLM", 109_514_298),
    ("roberta-prelayernorm-default", "RobertaPreLayerNormForMaskedLM", 124_698_201),
    ("xlm-roberta-xl-default", "XLMRobertaXLForMaskedLM", 3_482_741_760),
    ("electra-default", "ElectraForMaskedLM", 13_546_682),
    ("ernie-default", "ErnieForMaskedLM", 109_514_298),
    ("ibert-default", "IBertForMaskedLM", 109_514_298),
    ("megatron-bert-default", "MegatronBertForMaskedLM", 333_671_808),
    ("xmod-default", "XmodForMaskedLM", 116_606_010),
    ("rembert-default", "RemBertForMaskedLM", 993_263_548),
    ("roformer-default", "RoFormerForMaskedLM", 124_197_968),
    ("pegasus-large", "PegasusForConditionalGeneration", 570_797_056),
    ("opus-mt-en-de", "MarianMTModel", 74_410_496),
    ("blenderbot-default", "BlenderbotForConditionalGeneration", 2_696_268_800),
    ("blenderbot-small-default", "BlenderbotSmallForConditionalGeneration", 85_113_344),
    ("plbart-default", "PLBartForConditionalGeneration", 139_220_736),
    ("mvp-default", "MvpForConditionalGeneration", 406_293_504),
]


@pytest.mark.parametrize(("config", "cls", "total"), BUNDLED)
def test_bundled_config_is_exact(config: str, cls: str, total: int) -> None:
    spec = bundled_is_exact(config, cls, total)
    assert spec.expected["total_params"] == total


def test_published_counts_without_the_sinusoidal_tables() -> None:
    assert count(load_spec("pegasus-large")).total - 2 * 1024 * 1024 == 568_699_904  # "568M"
    assert count(load_spec("opus-mt-en-de")).total - 2 * 512 * 512 == 73_886_208  # "73.9M"


@pytest.mark.parametrize(
    ("model_type", "bare", "prefix", "extra"),
    [
        # XLM-RoBERTa registers lm_head before the encoder: the whole model names the shared word
        # embeddings lm_head.decoder.weight, the bare encoder roberta.embeddings.word_embeddings
        ("xlm-roberta", "XLMRobertaModel", "roberta", {}),
        ("electra", "ElectraModel", "electra", {}),
        ("xmod", "XmodModel", "roberta", {"languages": ["en_XX", "de_DE"], "pre_norm": True}),
        ("rembert", "RemBertModel", "rembert", {}),
        ("roberta-prelayernorm", "RobertaPreLayerNormModel", "roberta_prelayernorm", {}),
    ],
)
def test_part_encoder_is_the_bare_encoder(
    model_type: str, bare: str, prefix: str, extra: dict[str, Any]
) -> None:
    from llmcalc.model.spec import spec_part

    fields = {**BERT_SMALL, **extra}
    spec = spec_from_dict({**fields, "model_type": model_type}, name=model_type)
    config = transformers.AutoConfig.for_model(model_type, **fields)
    kwargs = {} if model_type == "electra" else {"add_pooling_layer": False}
    with torch.device("meta"):
        model = getattr(transformers, bare)(config, **kwargs)
    real = {f"{prefix}.{n}": tuple(p.shape) for n, p in model.named_parameters()}
    encoder = spec_part(spec, "encoder")
    assert dict(encoder.named_shapes()) == real
    assert count(spec).parts["encoder"] == count(encoder).total == numel(real)


def test_xlm_roberta_names_the_shared_table_as_transformers_does() -> None:
    spec = load_spec("xlm-roberta-base")
    names = dict(spec.named_shapes())
    assert names["lm_head.decoder.weight"] == (250002, 768)
    assert "roberta.embeddings.word_embeddings.weight" not in names
    pc = count(spec)
    # the table is the encoder's (embed/tokens), not the head's
    assert pc.breakdown["embed/tokens"] == 250002 * 768
    assert pc.parts["mlm_head"] == 768 * 768 + 768 + 2 * 768 + 250002


def test_xmod_runs_one_adapter_per_token() -> None:
    """Three languages' adapters are parameters; a token's FLOPs hold one (2·2·d·d/r)."""
    fields = {**BERT_SMALL, "model_type": "xmod", "languages": ["en_XX", "de_DE", "fr_XX"]}
    three = spec_from_dict(fields, name="x")
    one = spec_from_dict({**fields, "languages": ["en_XX"]}, name="x")
    adapter = (64 * 32 + 32) + (32 * 64 + 64)  # dense1, dense2 with biases, per language
    assert count(three).total - count(one).total == 2 * 2 * adapter  # 2 layers, 2 more languages
    n = 8
    assert forward_flops_per_sequence(three, ctx=n, causal=False) == (
        forward_flops_per_sequence(one, ctx=n, causal=False))


SEQ = 8


@pytest.mark.parametrize(
    ("name", "overrides"),
    [
        # the generator's 128-wide embeddings through embeddings_project to 256
        ("electra-default", ["vocab_size=1000"]),
        # per-language adapters: one runs per token
        ("xmod-default", ["hidden_size=128", "intermediate_size=192", "vocab_size=1000",
                          "num_attention_heads=4",
                          'languages=["en_XX","de_DE"]', "default_language=de_DE"]),
        # pre-norm layers, a final encoder.LayerNorm, no norm after the embeddings
        ("xlm-roberta-xl-default", ["hidden_size=128", "intermediate_size=192",
                                    "num_attention_heads=4", "vocab_size=1000"]),
        # 256-wide input embeddings mapped in, a 1,664-wide untied head
        ("rembert-default", ["hidden_size=128", "intermediate_size=192", "num_attention_heads=4",
                             "vocab_size=1000", "pad_token_id=0"]),
    ],
)
def test_encoder_flops_equal_flop_counter(name: str, overrides: list[str]) -> None:
    from llmcalc.verify.reference import extrapolate_layers, measure_forward

    spec = load_spec(name, overrides=overrides)
    one = measure_forward(spec, num_layers=1, seq_len=SEQ, dtype="fp32")
    two = measure_forward(spec, num_layers=2, seq_len=SEQ, dtype="fp32")
    measured = extrapolate_layers(one.flops, two.flops, num_layers=spec.num_layers)
    assert forward_flops_per_sequence(spec, ctx=SEQ, causal=False) == measured


# ---- encoder–decoders ----------------------------------------------------------------------------

M = {"pad_token_id": 0, "decoder_start_token_id": 0}
UNTIED = {**M, "tie_word_embeddings": False, "decoder_layers": 3, "max_position_embeddings": 64}
ENC_DEC_CASES = [
    ("pegasus", "PegasusForConditionalGeneration", M, 314_240),
    ("pegasus", "PegasusForConditionalGeneration", UNTIED, 333_472),
    ("blenderbot", "BlenderbotForConditionalGeneration", M, 199_552),
    ("blenderbot", "BlenderbotForConditionalGeneration", UNTIED, 333_472),
    ("blenderbot-small", "BlenderbotSmallForConditionalGeneration", M, 248_704),
    ("blenderbot-small", "BlenderbotSmallForConditionalGeneration", UNTIED, 333_472),
    ("plbart", "PLBartForConditionalGeneration", M, 314_496),
    ("plbart", "PLBartForConditionalGeneration", UNTIED, 333_728),
    ("mvp", "MvpForConditionalGeneration", M, 314_496),
    ("mvp", "MvpForConditionalGeneration", UNTIED, 333_728),
    ("marian", "MarianMTModel", M, 313_984),
    ("marian", "MarianMTModel", UNTIED, 333_216),
    # separate vocabularies: encoder [500, d], decoder and lm_head [300, d] (tied, then not)
    ("marian", "MarianMTModel",
     {**M, "share_encoder_decoder_embeddings": False, "decoder_vocab_size": 300}, 333_184),
    ("marian", "MarianMTModel",
     {**M, "share_encoder_decoder_embeddings": False, "decoder_vocab_size": 300,
      "tie_word_embeddings": False}, 352_384),
    # shared: decoder_vocab_size is not read
    ("marian", "MarianMTModel",
     {**M, "share_encoder_decoder_embeddings": True, "decoder_vocab_size": 300}, 313_984),
]


@pytest.mark.parametrize(
    ("model_type", "cls", "extra", "total"), ENC_DEC_CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(ENC_DEC_CASES)],
)
def test_encoder_decoder_row_is_exact_on_varied_configs(
    model_type: str, cls: str, extra: dict[str, Any], total: int
) -> None:
    fields = {**BART_SMALL, **extra}
    real = build(model_type, cls, fields)
    spec = spec_from_dict({**fields, "model_type": model_type}, name=model_type)
    assert dict(spec.named_shapes()) == real
    pc = count(spec)
    encoder = numel({k: v for k, v in real.items() if k.startswith("model.encoder.")})
    assert pc.total == numel(real) == total
    assert pc.parts == {"decoder": total - encoder, "encoder": encoder}


def test_mvp_prompts_are_refused() -> None:
    with pytest.raises(ConfigError) as e:
        spec_from_dict({"model_type": "mvp", "use_prompt": True}, name="bad")
    assert str(e.value) == (
        "bad: MVP's layer-wise prompts (prefix tuning) are not counted; use_prompt must be false"
    )


@pytest.mark.parametrize(
    ("name", "overrides", "layers"),
    [
        # pre-norm, sinusoidal positions, a final norm per stack
        ("pegasus-large", ["vocab_size=1000", "d_model=128", "encoder_ffn_dim=192",
                           "decoder_ffn_dim=192"], 16),
        # post-norm, sinusoidal, no layernorm_embedding
        ("opus-mt-en-de", ["vocab_size=1000", "decoder_vocab_size=1000", "pad_token_id=0",
                           "decoder_start_token_id=0"], 6),
    ],
)
def test_encoder_decoder_flops_and_cache_equal_transformers(
    name: str, overrides: list[str], layers: int
) -> None:
    """FlopCounterMode at 1 and 2 layers per stack, carried to the model's depth: encoder over 12
    source tokens, cross K/V once, decoder over 5 tokens; the EncoderDecoderCache holds 5 self and
    12 cross tokens per decoder layer."""
    from llmcalc.verify.reference import extrapolate_layers

    spec = load_spec(name, overrides=overrides)
    (f1, b1), (f2, b2) = (run_seq2seq(spec, k, source=12, target=5) for k in (1, 2))
    assert forward_flops_per_sequence(spec, ctx=5, causal=False, source_len=12) == (
        extrapolate_layers(f1, f2, num_layers=layers)
    )
    assert kv_cache_bytes(spec, batch=1, ctx=5, dtype=DType.fp32, source_len=12) == (
        extrapolate_layers(b1, b2, num_layers=layers)
    )


def test_a_checkpoint_of_xlm_roberta_is_read_under_either_name() -> None:
    """A checkpoint stores the shared table as roberta.embeddings.word_embeddings.weight (and maybe
    lm_head.decoder.weight too); both read as the one tensor the model lists."""
    from llmcalc.verify.reference import compare

    spec = load_spec("xlm-roberta-base")
    ours = dict(spec.named_shapes())
    stored = {("roberta.embeddings.word_embeddings.weight" if k == "lm_head.decoder.weight" else k): v
              for k, v in ours.items()}
    assert compare(spec, stored, against="ckpt", kind="checkpoint").differences == ()
    both = compare(spec, {**stored, "lm_head.decoder.weight": (250002, 768)}, against="ckpt",
                   kind="checkpoint")
    assert both.differences == ()
    assert both.notes == (
        "roberta.embeddings.word_embeddings.weight is stored although the model ties it; "
        "not counted again",
    )
