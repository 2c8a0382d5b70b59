"""The causal-LM types left over, each exact against transformers 5.24.

``bert-generation`` (BertGenerationDecoder, its causal-LM class) and ``roc_bert``
(RoCBertForMaskedLM) are rows of encoder.py; ``xlm`` (XLMWithLMHeadModel) has its own describe
function there. Every tensor name and shape, the total and the parts equal the model built on the
meta device, on the bundled config and on varied configs; FLOPs equal FlopCounterMode for each.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers.encoders import BERT_SMALL, build, bundled_is_exact
from helpers.reference import numel

from llmcalc import count, load_spec, spec_from_dict
from llmcalc.errors import ConfigError
from llmcalc.formulas.flops import forward_flops_per_sequence

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

XLM_SMALL = {"n_layers": 2, "emb_dim": 64, "n_heads": 4, "vocab_size": 500}

# (model_type, class, fields, total, parts)
CASES = [
    # tied: lm_head.decoder is the word table, its bias the head's bias
    ("bert-generation", "BertGenerationDecoder", BERT_SMALL, 124_084,
     {"encoder": 123_584, "lm_head": 500}),
    # untied: decoder V × d with its own bias beside lm_head.bias; causal with is_decoder
    ("bert-generation", "BertGenerationDecoder",
     {**BERT_SMALL, "tie_word_embeddings": False, "is_decoder": True}, 156_584,
     {"encoder": 123_584, "lm_head": 33_000}),
    # pronunciation [910, 768] and shape [24858, 512] tables, map_inputs_layer 64 × (64+768+512)
    ("roc_bert", "RoCBertForMaskedLM", BERT_SMALL, 13_640_756,
     {"encoder": 13_635_968, "mlm_head": 4_788}),
    # no concatenation: the tables stay, no map_inputs_layer
    ("roc_bert", "RoCBertForMaskedLM", {**BERT_SMALL, "concat_input": False}, 13_554_676,
     {"encoder": 13_549_888, "mlm_head": 4_788}),
    # shape disabled: map_inputs_layer 64 × (64 + 32); an untied head
    ("roc_bert", "RoCBertForMaskedLM",
     {**BERT_SMALL, "enable_shape": False, "pronunciation_embed_dim": 32, "shape_vocab_size": 100,
      "tie_word_embeddings": False}, 247_528, {"encoder": 210_240, "mlm_head": 37_288}),
    # its causal-LM class has the masked-LM one's tensors
    ("roc_bert", "RoCBertForCausalLM",
     {**BERT_SMALL, "is_decoder": True, "enable_pronunciation": False}, 13_591_604,
     {"encoder": 13_586_816, "mlm_head": 4_788}),
    ("xlm", "XLMWithLMHeadModel", XLM_SMALL, 165_364, {"encoder": 164_864, "mlm_head": 500}),
    # language embeddings [3, d], an untied pred_layer.proj, causal, 64 positions
    ("xlm", "XLMWithLMHeadModel",
     {**XLM_SMALL, "n_langs": 3, "tie_word_embeddings": False, "causal": True,
      "max_position_embeddings": 64}, 168_884, {"encoder": 136_384, "mlm_head": 32_500}),
    # use_lang_emb false: no language table; sinusoidal positions are still a parameter
    ("xlm", "XLMWithLMHeadModel",
     {**XLM_SMALL, "n_langs": 3, "use_lang_emb": False, "sinusoidal_embeddings": True}, 165_364,
     {"encoder": 164_864, "mlm_head": 500}),
]


@pytest.mark.parametrize(
    ("model_type", "cls", "fields", "total", "parts"), CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)],
)
def test_exact_on_varied_configs(
    model_type: str, cls: str, fields: dict[str, Any], total: int, parts: dict[str, int]
) -> None:
    real = build(model_type, cls, fields)
    spec = spec_from_dict({**fields, "model_type": model_type}, name=model_type)
    assert dict(spec.named_shapes()) == real
    pc = count(spec)
    assert pc.total == numel(real) == total
    assert pc.parts == parts
    assert sum(pc.parts.values()) == pc.total


# transformers' numel of the class built from the bundled config (transformers' defaults)
BUNDLED = [
    ("bert-generation-default", "BertGenerationDecoder", 354_452_662),
    ("roc_bert-default", "RoCBertForMaskedLM", 124_514_106),
    ("xlm-default", "XLMWithLMHeadModel", 667_119_041),
]


@pytest.mark.parametrize(("config", "cls", "total"), BUNDLED)
def test_bundled_config_is_exact(config: str, cls: str, total: int) -> None:
    spec = bundled_is_exact(config, cls, total)
    assert spec.expected["total_params"] == total


@pytest.mark.parametrize(
    ("model_type", "bare", "prefix", "fields", "kwargs"),
    [
        ("bert-generation", "BertGenerationEncoder", "bert", BERT_SMALL, {}),
        ("roc_bert", "RoCBertModel", "roc_bert", BERT_SMALL, {"add_pooling_layer": False}),
        ("xlm", "XLMModel", "transformer", {**XLM_SMALL, "n_langs": 2}, {}),
    ],
)
def test_part_encoder_is_the_bare_encoder(
    model_type: str, bare: str, prefix: str, fields: dict[str, Any], kwargs: dict[str, Any]
) -> None:
    from llmcalc.model.spec import spec_part

    spec = spec_from_dict({**fields, "model_type": model_type}, name=model_type)
    config = transformers.AutoConfig.for_model(model_type, **fields)
    with torch.device("meta"):
        model = getattr(transformers, bare)(config, **kwargs)
    real = {f"{prefix}.{n}": tuple(p.shape) for n, p in model.named_parameters()}
    encoder = spec_part(spec, "encoder")
    assert dict(encoder.named_shapes()) == real
    assert count(spec).parts["encoder"] == count(encoder).total == numel(real)


SEQ = 8
SMALL = ["hidden_size=128", "intermediate_size=192", "num_attention_heads=4", "vocab_size=1000"]


@pytest.mark.parametrize(
    ("name", "overrides", "flops"),
    [
        # the tied decoder V × d, no head transform
        ("bert-generation-default", SMALL, 46_874_624),
        # map_inputs_layer d × (d + 768 + 512) per token
        ("roc_bert-default", SMALL, 27_607_040),
        # 4d-wide FFNs, a language table (a lookup: no FLOPs)
        ("xlm-default", ["emb_dim=128", "n_heads=4", "vocab_size=1000", "n_langs=2"], 40_189_952),
        # causal=true: transformers still multiplies the whole score matrix (masked, not skipped)
        ("xlm-default", ["emb_dim=128", "n_heads=4", "vocab_size=1000", "causal=true"], 40_189_952),
    ],
)
def test_flops_equal_flop_counter(name: str, overrides: list[str], flops: int) -> None:
    from llmcalc.verify.reference import extrapolate_layers, measure_forward

    spec = load_spec(name, overrides=overrides)
    one = measure_forward(spec, num_layers=1, seq_len=SEQ, dtype="fp32")
    two = measure_forward(spec, num_layers=2, seq_len=SEQ, dtype="fp32")
    measured = extrapolate_layers(one.flops, two.flops, num_layers=spec.num_layers)
    assert forward_flops_per_sequence(spec, ctx=SEQ, causal=False) == measured == flops


def test_roc_bert_map_inputs_layer_is_per_token() -> None:
    """The concatenation's projection is the only per-token difference concat_input makes."""
    fields = {**BERT_SMALL, "model_type": "roc_bert"}
    cat = spec_from_dict(fields, name="x")
    plain = spec_from_dict({**fields, "concat_input": False}, name="x")
    width = 64 + 768 + 512
    assert count(cat).total - count(plain).total == 64 * width + 64
    assert forward_flops_per_sequence(cat, ctx=SEQ, causal=False) - forward_flops_per_sequence(
        plain, ctx=SEQ, causal=False) == SEQ * 2 * 64 * width


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("asm=true", "the adaptive-softmax head (asm) is not counted; asm must be false"),
        ("is_encoder=false",
         "XLM can only be used as an encoder (as in transformers); is_encoder must be true"),
    ],
)
def test_xlm_refuses_what_it_does_not_count(cli: Any, field: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_spec("xlm-default", overrides=[field])
    assert str(e.value) == f"configs/xlm-default.yaml: {message}"
    r = cli("count", "xlm-default", "--set", field)
    assert (r.code, r.stderr) == (2, f"error: configs/xlm-default.yaml: {message}\n")


def test_cli_bert_generation_parts(cli: Any) -> None:
    import json

    r = cli("count", "bert-generation-default", "--json")
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["parts"] == {"encoder": 354_402_304, "lm_head": 50_358}
    r = cli("count", "bert-generation-default", "--part", "encoder", "--json")
    assert json.loads(r.stdout)["total_params"] == 354_402_304


# ---- TrOCR: the decoder alone (TrOCRForCausalLM) --------------------------------------------------

TROCR_SMALL = {"decoder_layers": 2, "d_model": 64, "decoder_attention_heads": 4,
               "decoder_ffn_dim": 96, "vocab_size": 500}


@pytest.mark.parametrize(
    ("fields", "total"),
    [
        (TROCR_SMALL, 157_248),
        # untied output_projection, a 48-wide image encoder (cross k/v 64 × 48), no embedding norm
        ({**TROCR_SMALL, "tie_word_embeddings": False, "cross_attention_hidden_size": 48,
          "layernorm_embedding": False}, 185_024),
        # sinusoidal positions are computed on the fly: no tensor
        ({**TROCR_SMALL, "use_learned_position_embeddings": False}, 124_352),
    ],
)
def test_trocr_decoder_is_exact(fields: dict[str, Any], total: int) -> None:
    real = build("trocr", "TrOCRForCausalLM", fields)
    spec = spec_from_dict({**fields, "model_type": "trocr"}, name="trocr")
    assert dict(spec.named_shapes()) == real
    assert count(spec).total == numel(real) == total


def test_trocr_bundled_config_is_exact() -> None:
    spec = load_spec("trocr-default")
    fields = {k: v for k, v in spec.config.items() if k != "model_type"}
    real = build("trocr", "TrOCRForCausalLM", fields)
    assert dict(spec.named_shapes()) == real
    assert count(spec).total == numel(real) == 253_559_808 == spec.expected["total_params"]


def test_trocr_flops_and_cache_equal_transformers() -> None:
    """FlopCounterMode at 1 and 2 layers, carried to 12: 5 decoder tokens cross-attending to 12
    image-encoder states 96 wide (their K/V projected once); the EncoderDecoderCache holds 5 self
    and 12 cross tokens per layer."""
    from torch.utils.flop_counter import FlopCounterMode

    from llmcalc.formulas.memory import kv_cache_bytes
    from llmcalc.units import DType
    from llmcalc.verify.reference import build_random_model, extrapolate_layers

    spec = load_spec("trocr-default", overrides=[
        "vocab_size=1000", "d_model=128", "decoder_ffn_dim=192", "decoder_attention_heads=4",
        "cross_attention_hidden_size=96"])

    def run(layers: int) -> tuple[int, int]:
        model = build_random_model(spec, num_layers=layers, dtype="fp32")
        gen = torch.Generator().manual_seed(1)
        tgt = torch.randint(0, 100, (1, 5), generator=gen)
        image = torch.randn(1, 12, 96, generator=gen)
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            out = model(input_ids=tgt, encoder_hidden_states=image, use_cache=True)
        cache = out.past_key_values
        nbytes = sum(layer.keys.nbytes + layer.values.nbytes
                     for sub in (cache.self_attention_cache, cache.cross_attention_cache)
                     for layer in sub.layers)
        return int(counter.get_total_flops()), nbytes

    (f1, b1), (f2, b2) = run(1), run(2)
    assert forward_flops_per_sequence(spec, ctx=5, causal=False, source_len=12) == (
        extrapolate_layers(f1, f2, num_layers=12)) == 26_574_848
    assert kv_cache_bytes(spec, batch=1, ctx=5, dtype=DType.fp32, source_len=12) == (
        extrapolate_layers(b1, b2, num_layers=12)) == 12 * 2 * 128 * (5 + 12) * 4


def test_xlm_layer_is_its_four_module_lists() -> None:
    """XLM keeps layer i in attentions[i], layer_norm1[i], ffns[i] and layer_norm2[i]."""
    from llmcalc.verify.reference import build_meta_model

    spec = load_spec("xlm-default")
    model = build_meta_model(spec).transformer
    lists = (model.attentions, model.layer_norm1, model.ffns, model.layer_norm2)
    real = {sum(p.numel() for m in lists for p in m[i].parameters()) for i in range(12)}
    d = 2048
    assert real == {count(spec).groups[0].per_layer} == {4 * (d * d + d) + 2 * 4 * d * d + 5 * d + 2 * 2 * d} == {50_358_272}
