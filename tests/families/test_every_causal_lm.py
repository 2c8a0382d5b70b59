"""Every causal-LM model type of transformers is counted exactly, or listed with its reason.

Walks ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``: a type in ``MODEL_TYPES`` is built from transformers'
own default config for it, shrunk (few layers, small widths, so a model builds in milliseconds on the
meta device), and llmcalc's formula must give every tensor name and shape and the total; a type
llmcalc does not count must be in ``NOT_COUNTED`` (llmcalc/families/not_counted.py) with a reason,
and that table must be the one docs/models.md shows. A whole model llmcalc counts with its parts (the
…ForConditionalGeneration of BART and Whisper, whose …ForCausalLM is their decoder alone; the
…ForMaskedLM of BERT and RoBERTa, whose causal-LM class has the same tensors) is built with the
class llmcalc counts (``llmcalc.verify.reference.model_class``).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from helpers import docs

from llmcalc import count, spec_from_dict
from llmcalc.families import MODEL_TYPES
from llmcalc.families.not_counted import NOT_COUNTED

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]
from transformers.models.auto.modeling_auto import (  # noqa: E402
    MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
)

CAUSAL_LM = sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
README = docs.page("docs/models.md")
HEADING = "## Causal-LM types not counted"

# Small sizes put over the default config's, where it has the field: 3 layers, d = 64,
# 8 heads of 16 (2 kv heads), ff 96, vocab 512; per-layer lists are dropped so that the config
# class derives them again for 3 layers.
SHRINK: dict[str, int] = {
    "num_hidden_layers": 3,
    "n_layer": 3,
    "num_layers": 3,
    "n_layers": 3,
    "hidden_size": 64,
    "n_embd": 64,
    "d_model": 64,
    "num_attention_heads": 8,
    "n_head": 8,
    "num_heads": 8,
    "n_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "intermediate_size": 96,
    "n_inner": 96,
    "ffn_dim": 96,
    "vocab_size": 512,
}
PER_LAYER = (
    "layer_types",
    "mlp_layer_types",
    "indexer_types",
    "no_rope_layers",
    "mlp_only_layers",
    "attention_types",
    "attention_layers",
    "per_layer_config",
    "num_attention_heads_per_layer",
    "per_layer_config",  # Gemma 4 writes its per-layer head dims keyed by the default's layer indices
)

# Fields a type's default config lacks for transformers to build it (stated, per type).
ROPE = {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}
BUILD_FIXES: dict[str, dict[str, Any]] = {
    # head_dim None: the attention takes None ** -0.5; the rope has no rope_theta
    "hunyuan_v1_dense": {"head_dim": 16, **ROPE},
    "ministral": {"head_dim": 16, **ROPE},
    # num_key_value_heads None: NemotronAttention divides by it
    "nemotron": {"num_key_value_heads": 2, "head_dim": 16, **ROPE},
    # rope_parameters must be keyed by layer type, the default's is empty
    "cohere_compass_text": {
        "rope_parameters": {
            kind: {"rope_type": "default", "rope_theta": 10000.0}
            for kind in ("full_attention", "sliding_attention")
        }
    },
    # the default's attention_types spell out 24 layers
    "gpt_neo": {"attention_types": [[["global", "local"], 1], [["global"], 1]]},
    # top-k unset (transformers reads it only when routing); llmcalc needs it for the active count
    "deepseek_v2": {"num_experts_per_tok": 6},
    # Mamba's intermediate_size, once given, is kept: the default's (expand · its own d) shrinks too
    "mamba": {"intermediate_size": 128},
    "falcon_mamba": {"intermediate_size": 128},
    # Mamba-2 heads × head dim must equal expand · d (2 · 64)
    "bamba": {"mamba_n_heads": 8, "mamba_d_head": 16, "mamba_expand": 2},
    "granitemoehybrid": {"mamba_n_heads": 8, "mamba_d_head": 16, "mamba_expand": 2},
    # 6 heads (its default) do not divide the shrunk d_model of 64
    "whisper": {"encoder_attention_heads": 8, "decoder_attention_heads": 8},
    "plbart": {"encoder_attention_heads": 8, "decoder_attention_heads": 8},
    # MLA: every layer type's kv heads must equal its heads (its sliding layers' sizes: swa_*)
    "dots3_note_text": {"num_key_value_heads": 8},
    # Qwen4ExpConfig(): its text_config leaves the QSA indexer unsized (transformers cannot build
    # it; its index head must hold the rotary dims, all 256 of head_dim); 4 layers (DeltaNet ×3, QSA)
    "qwen4_exp": {"text_config": {"num_hidden_layers": 4, "indexer_n_heads": 2,
                                  "indexer_kv_heads": 1, "indexer_head_dim": 256,
                                  "indexer_budget": 8, "indexer_compress_ratio": 4}},
    # its layers read layer_types by index: keep a 3-layer list (conv, attention, conv)
    "lfm2_moe": {"layer_types": ["conv", "full_attention", "conv"]},
    # the default's list spells out 76 layers, its attention width and head dim follow d 3712; two
    # hybrid layers, as transformers cannot tie a shared block to no other layer
    "zamba": {"layers_block_type": ["hybrid", "mamba", "hybrid"], "attention_hidden_size": 128,
              "attention_head_dim": 16, "mamba_dt_rank": 4},
    # the default's list spells out 54 layers; its derived widths and hybrid ids follow it and d 2560
    "zamba2": {"layers_block_type": ["hybrid", "mamba", "hybrid"], "hybrid_layer_ids": [0, 2],
               "attention_hidden_size": 128, "attention_head_dim": 16, "mamba_headdim": 16},
    # the default's input, recurrent and output sections (doubled by to_dict) must sum to 3 layers
    "dory": {"n_input_layers": 1, "n_recurrent_layers": 1, "n_output_layers": 1},
    # d_head follows d_model // n_head (XLNetConfig refuses another)
    "xlnet": {"d_head": 8},
    # its axial position widths must sum to the width; its layer list sets the depth
    "reformer": {"axial_pos_embds_dim": [16, 48], "attn_layers": ["local", "lsh", "local"]},
}


def shrunk_default(model_type: str) -> dict[str, Any]:
    """transformers' default config for ``model_type``, with the small sizes above."""
    cfg = transformers.AutoConfig.for_model(model_type)
    fields = cfg.to_dict()
    for key in PER_LAYER:
        fields.pop(key, None)
    for key, value in SHRINK.items():
        if isinstance(fields.get(key), int) and not isinstance(fields.get(key), bool):
            fields[key] = value
    if fields.get("pad_token_id") is not None and fields["pad_token_id"] >= SHRINK["vocab_size"]:
        fields["pad_token_id"] = 0
    fields.update(BUILD_FIXES.get(model_type, {}))
    fields["model_type"] = model_type
    return fields


def _build(fields: dict[str, Any], auto: Any = None) -> dict[str, tuple[int, ...]]:
    """The model's named shapes: the causal LM, or the class ``auto`` (a whole model's)."""
    transformers.logging.set_verbosity_error()
    kwargs = {k: v for k, v in fields.items() if k != "model_type"}
    config = transformers.AutoConfig.for_model(fields["model_type"], **kwargs)
    with torch.device("meta"):
        model = (auto or transformers.AutoModelForCausalLM).from_config(config)
    return {name: tuple(p.shape) for name, p in model.named_parameters()}


def test_every_type_is_counted_or_listed() -> None:
    unaccounted = [t for t in CAUSAL_LM if t not in MODEL_TYPES and t not in NOT_COUNTED]
    assert unaccounted == [], f"neither counted nor in NOT_COUNTED: {unaccounted}"
    both = sorted(set(MODEL_TYPES) & set(NOT_COUNTED))
    assert both == [], f"counted, yet listed as not counted: {both}"
    stale = sorted(set(NOT_COUNTED) - set(CAUSAL_LM))
    assert stale == [], f"NOT_COUNTED lists types transformers does not have: {stale}"


COUNTED = [t for t in CAUSAL_LM if t in MODEL_TYPES]


# Types whose transformers default cannot be shrunk by the fields above (nested sub-configs or
# per-layer values this walk does not rewrite); each is exact on its bundled config instead
# (tests/docs/test_readme_models.py builds every bundled config with transformers).
NOT_SHRINKABLE = {
    "dbrx": "attention settings live in a nested attn_config without rope_theta",
    "gemma3n_text": "per-layer AltUp/LAuReL sizes follow the unshrunk width",
    "gemma3n": "its whole class builds its vision tower with timm, which cannot be imported beside "
               "the CPU torch; tests/multimodal/test_gemma3n.py holds it part by part",
    "hunyuan_v1_moe": "per-layer expert widths are a list of the default's 32 layers",
    "dots1": "its default's expert layout does not build at the shrunk width",
    "gemma4_assistant": "transformers refuses its class defaults (text_config's per-layer inputs "
                        "must be 0 in an assistant)",
}


@pytest.mark.parametrize("model_type", COUNTED)
def test_default_config_counts_exactly(model_type: str) -> None:
    if model_type in NOT_SHRINKABLE:
        pytest.skip(f"exact on its bundled config; {NOT_SHRINKABLE[model_type]}")
    from llmcalc.verify.reference import model_class

    fields = shrunk_default(model_type)
    spec = spec_from_dict(fields, name=model_type)
    real = _build(fields, model_class(spec))
    assert dict(spec.named_shapes()) == real
    assert count(spec).total == sum(_numel(s) for s in real.values())


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for x in shape:
        n *= x
    return n


def readme_table() -> list[tuple[str, str]]:
    """(model_type, reason) rows of the docs/models.md table under ``HEADING``."""
    text = README.read_text(encoding="utf-8")
    assert HEADING in text, f"docs/models.md has no '{HEADING}' section"
    section = text.split(HEADING, 1)[1].split("\n#", 1)[0]
    rows = []
    for line in section.splitlines()[1:]:
        m = re.fullmatch(r"\| `([^`]+)` \| (.+) \|", line.strip())
        if m:
            rows.append((m.group(1), m.group(2)))
    return rows


def expected_readme_table() -> list[str]:
    lines = ["| model_type | why not counted |", "|---|---|"]
    lines += [f"| `{t}` | {reason} |" for t, reason in sorted(NOT_COUNTED.items())]
    return lines


def test_readme_shows_the_table() -> None:
    assert readme_table() == sorted(NOT_COUNTED.items())


if __name__ == "__main__":
    print("\n".join(expected_readme_table()))
