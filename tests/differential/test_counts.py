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
    # transformers builds it (the heads' reshape fails only in a forward pass): counted as built
    assert count_outcome(odd) == Outcome(EXACT)
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


@pytest.mark.parametrize("model_type", ["llava_next", "llava_onevision"])
def test_a_patch_larger_than_the_image_is_refused(model_type: str) -> None:
    """Any-resolution tiling of a tower whose patch (14) exceeds its image: one line, no traceback."""
    from variants import default_config

    config = default_config(model_type)
    config["vision_config"]["image_size"] = 3
    outcome = count_outcome(Variant(model_type, config, "image_size 3"))
    assert outcome == Outcome(
        REFUSED, f"{model_type}: vision_config.patch_size (14) must not exceed image_size (3)")


@pytest.mark.parametrize(("model_type", "change"), [
    ("falcon", {"new_decoder_architecture": True, "num_kv_heads": 3}),
    ("qwen2", {"num_key_value_heads": 5}),
    ("mixtral", {"num_key_value_heads": 3}),
])
def test_kv_heads_that_do_not_divide_the_heads_count_as_built(
        model_type: str, change: dict[str, object]) -> None:
    """transformers builds k/v projections of kv·head_dim whatever the heads (only the forward's
    repeat of each KV head fails): llmcalc counts them, exactly."""
    from variants import default_config

    odd = Variant(f"{model_type}/odd kv", {**default_config(model_type), **change}, "odd kv")
    assert count_outcome(odd) == Outcome(EXACT)


@pytest.mark.parametrize(("model_type", "change"), [
    ("olmo", {"head_dim": 256}), ("qwen2_moe", {"head_dim": 64}), ("granitemoe", {"head_dim": 64}),
    ("phimoe", {"head_dim": 3}), ("olmoe", {"head_dim": 64}),  # read with getattr, undeclared
    ("jetmoe", {"head_dim": 64}), ("zamba", {"head_dim": 64}), ("zamba2", {"head_dim": 64}),
    ("glm4_moe_lite", {"head_dim": 32}),  # attribute_map aliases
    ("kolibri1", {"num_local_experts": 16}),
])
def test_aliases_and_fields_read_with_getattr_count_as_transformers_reads_them(
        model_type: str, change: dict[str, object]) -> None:
    from variants import default_config

    changed = Variant(f"{model_type}/changed", {**default_config(model_type), **change}, "changed")
    assert count_outcome(changed) == Outcome(EXACT)
