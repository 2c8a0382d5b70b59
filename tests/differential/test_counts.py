"""Changed configs of every counted type, counted by llmcalc and built by transformers: the same
total (the breakdown and the named tensors adding up to it), or a one-line refusal.

A seeded sample of tests/differential/variants.py's configs: each type's default config and
``SAMPLE`` of its changed ones. ``bench/differential.py`` runs them all.
"""

from __future__ import annotations

import random

import pytest
from checks import BOTH_REFUSE, EXACT, KINDS, REFUSED, WRONG, Outcome, count_outcome
from variants import Variant, counted_types, iter_variants

pytest.importorskip("transformers")

SEED = 0
SAMPLE = 2  # changed configs per type, besides its default


def sample(model_type: str) -> list:  # type: ignore[type-arg]
    defaults, *changed = iter_variants(model_type, seed=SEED)
    return [defaults, *random.Random(f"{SEED}:{model_type}").sample(changed, min(SAMPLE, len(changed)))]


@pytest.mark.parametrize("model_type", counted_types())
def test_changed_configs_count_as_transformers_builds(model_type: str) -> None:
    outcomes = {v.label: count_outcome(v) for v in sample(model_type)}
    assert all(o.kind in KINDS for o in outcomes.values())
    wrong = {label: o.detail for label, o in outcomes.items() if o.kind == WRONG}
    assert not wrong


def test_a_wrong_total_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check itself: a total one parameter off is wrong, a refusal is its one line."""
    import dataclasses

    import checks

    real = checks.count
    monkeypatch.setattr(checks, "count",
                        lambda spec: dataclasses.replace(real(spec), total=real(spec).total + 1))
    llama = next(iter_variants("llama"))
    assert count_outcome(llama) == Outcome(WRONG, "llmcalc 6,738,415,617, transformers 6,738,415,616")
    monkeypatch.undo()
    assert count_outcome(llama) == Outcome(EXACT)
    odd = Variant("llama/kv 5", {**llama.config, "num_key_value_heads": 5}, "kv 5")
    # transformers builds it (the heads' reshape fails only in a forward pass): not a model
    assert count_outcome(odd) == Outcome(
        REFUSED, "llama/kv 5: num_key_value_heads (5) must divide num_attention_heads (32)")
    both = Variant("llama/layers 2.5", {**llama.config, "num_hidden_layers": 2.5}, "layers 2.5")
    assert count_outcome(both).kind == BOTH_REFUSE


@pytest.mark.parametrize("model_type", ["gemma4_unified_assistant", "gemma4_assistant"])
def test_gemma4_assistants_are_never_their_text_model(model_type: str) -> None:
    """Causal LMs of their own that llmcalc does not count: measured on transformers' model (exact)
    or refused where transformers cannot build them, never counted as their text_config alone."""
    from variants import default_config

    outcome = count_outcome(Variant(model_type, default_config(model_type), "defaults"))
    assert outcome.kind == {"gemma4_unified_assistant": EXACT,
                            "gemma4_assistant": BOTH_REFUSE}[model_type]
