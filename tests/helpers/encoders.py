"""Encoder LMs and encoder–decoders against transformers' whole-model class (``…ForMaskedLM``,
``…ForConditionalGeneration``), built by class name on the meta device or run on the CPU."""

from __future__ import annotations

from typing import Any

from helpers.reference import numel
from llmcalc import count, load_spec
from llmcalc.model.spec import ModelSpec

BERT_SMALL = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
              "intermediate_size": 96, "vocab_size": 500}
BART_SMALL = {"encoder_layers": 2, "decoder_layers": 2, "d_model": 64, "encoder_attention_heads": 4,
              "decoder_attention_heads": 4, "encoder_ffn_dim": 96, "decoder_ffn_dim": 96,
              "vocab_size": 500}


def build(model_type: str, cls: str, fields: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """named_parameters of transformers' ``cls`` for ``model_type`` with ``fields``, on meta."""
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    config = transformers.AutoConfig.for_model(model_type, **fields)
    with torch.device("meta"):
        model = getattr(transformers, cls)(config)
    return {name: tuple(p.shape) for name, p in model.named_parameters()}


def bundled_is_exact(config: str, cls: str, total: int) -> ModelSpec:
    """The bundled ``config`` against transformers' ``cls`` built from its fields on the meta
    device: every name and shape, and the total (``total``, as written in the test)."""
    spec = load_spec(config)
    fields = {k: v for k, v in spec.config.items() if k != "model_type"}
    real = build(spec.model_type, cls, fields)
    assert dict(spec.named_shapes()) == real
    assert count(spec).total == numel(real) == total
    return spec


def run_seq2seq(spec: Any, layers: int, *, source: int, target: int) -> tuple[int, int]:
    """FlopCounterMode's total and the EncoderDecoderCache's bytes (self + cross) of one forward
    pass of a ``layers``-layer copy over ``source`` encoder and ``target`` decoder tokens."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from llmcalc.verify.reference import build_random_model

    model = build_random_model(spec, num_layers=layers, dtype="fp32")
    gen = torch.Generator().manual_seed(1)
    src = torch.randint(0, 100, (1, source), generator=gen)
    tgt = torch.randint(0, 100, (1, target), generator=gen)
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        out = model(input_ids=src, decoder_input_ids=tgt, use_cache=True)
    cache = out.past_key_values
    assert type(cache).__name__ == "EncoderDecoderCache"
    nbytes = sum(
        layer.keys.nbytes + layer.values.nbytes
        for sub in (cache.self_attention_cache, cache.cross_attention_cache)
        for layer in sub.layers
    )
    return int(counter.get_total_flops()), nbytes
