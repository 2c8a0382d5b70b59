"""Every causal-LM model type of transformers: ``count`` gives the exact total (by formula or
measured) or a one-line error, exit 2 — never a traceback, never a wrong total.

Each type's default config (``AutoConfig.for_model``) is cut to 2 layers where it has a layer
count, counted by llmcalc, and held to ``sum(numel)`` of the model built on the meta device.
"""

from __future__ import annotations

from typing import Any

import pytest

from llmcalc.errors import LLMCalcError
from llmcalc.formulas.counting import count
from llmcalc.inputs.config import spec_from_dict

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

LAYER_FIELDS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
CUT = 2


def small_config(model_type: str) -> Any:
    """The default config, cut to CUT layers through the constructor, so lists derived from the
    depth (layer_types …) follow; None when transformers rejects its own default config."""
    try:
        default = transformers.AutoConfig.for_model(model_type)
    except Exception:  # noqa: BLE001
        return None
    changes = {f: CUT for f in LAYER_FIELDS if isinstance(getattr(default, f, None), int)}
    try:
        return transformers.AutoConfig.for_model(model_type, **changes)
    except Exception:  # noqa: BLE001 - a config that checks its lists against its depth
        return default


def numel_total(config: Any, auto: Any = None) -> int | None:
    try:
        with torch.device("meta"):
            model = (auto or transformers.AutoModelForCausalLM).from_config(config)
    except Exception:  # noqa: BLE001 - transformers cannot build it from its own default
        return None
    return sum(p.numel() for p in model.parameters())


def outcome(model_type: str) -> tuple[str, str]:
    """("formula" | "measured", total), ("error", message), or ("unbuildable", why) when
    transformers cannot build the model from its own default config."""
    config = small_config(model_type)
    theirs = None if config is None else numel_total(config)
    if config is None or theirs is None:
        return "unbuildable", "transformers cannot build it from its default config"
    fields = config.to_dict()
    fields["model_type"] = model_type
    try:
        spec = spec_from_dict(fields, name=model_type)
    except LLMCalcError as e:
        message = str(e)
        assert "\n" not in message, f"{model_type}: a multi-line error: {message!r}"
        return "error", message
    ours = count(spec).total
    if any("counted its text model" in note for note in spec.notes):  # as documented, and said
        theirs = numel_total(config.get_text_config())
    elif spec.parts:  # a whole model (BART, Whisper, BERT): the class llmcalc counts
        from llmcalc.verify.reference import model_class

        theirs = numel_total(config, model_class(spec))
    assert ours == theirs, f"{model_type} ({spec.method}): llmcalc {ours:,}, transformers {theirs:,}"
    return spec.method, f"{ours:,}"


def test_every_causal_lm_model_type() -> None:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    transformers.logging.set_verbosity_error()
    results = {mt: outcome(mt) for mt in sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)}
    methods = [m for m, _ in results.values()]
    assert len(results) == len(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) >= 190
    # every type transformers can build has an exact answer or a one-line error (on 5.24: all but
    # deepseek_v2, whose default has num_experts_per_tok null, of 181 buildable)
    buildable = len(results) - methods.count("unbuildable")
    assert methods.count("formula") + methods.count("measured") >= 0.95 * buildable, {
        mt: msg for mt, (m, msg) in results.items() if m == "error"
    }
