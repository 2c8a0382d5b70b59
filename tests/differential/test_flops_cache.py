"""Changed configs run for real: FlopCounterMode's FLOPs and the bytes of transformers' cache equal
``llmcalc flops``' full prefill and ``llmcalc memory``'s cache, on copies cut to 1 and 2 layers
(tests/differential/measure.py says how). A seeded sample of tests/differential/variants.py's configs
of every counted type, drawn among those verify builds on the CPU, within a few minutes;
``bench/differential.py`` runs the sweep.
"""

from __future__ import annotations

import random

import pytest

pytest.importorskip("transformers")

import measure  # noqa: E402
from checks import EXACT, WRONG, Outcome, cache_outcome, flops_outcome  # noqa: E402
from measure import SEQ  # noqa: E402
from variants import Variant, counted_types, iter_variants  # noqa: E402

from llmcalc import spec_from_dict  # noqa: E402
from llmcalc.errors import ConfigError  # noqa: E402
from llmcalc.formulas.memory import kv_cache_bytes  # noqa: E402
from llmcalc.units import DType  # noqa: E402
from llmcalc.verify.reference import check_buildable  # noqa: E402

pytestmark = [pytest.mark.torch]

SEED = 0
SAMPLE = 24  # configs run (about 5 s each on one core)


def measurable(variant: Variant) -> bool:
    """llmcalc reads it and verify would build its cut copy (not a whole model, within 4 GiB)."""
    try:
        check_buildable(spec_from_dict(variant.config, name=variant.label), cpu_layers=2)
    except ConfigError:
        return False
    return True


def sample() -> list[Variant]:
    """SAMPLE configs, at most one per type: each type's default or one of its changed configs."""
    rng = random.Random(SEED)
    types = counted_types()
    rng.shuffle(types)
    picked: list[Variant] = []
    for model_type in types:
        variants = list(iter_variants(model_type, seed=SEED))
        variant = rng.choice(variants)
        if measurable(variant):
            picked.append(variant)
        if len(picked) == SAMPLE:
            break
    return picked


@pytest.mark.slow
@pytest.mark.parametrize("variant", sample(), ids=lambda v: v.label)
def test_changed_config_flops_and_cache_equal_transformers(variant: Variant) -> None:
    assert flops_outcome(variant).kind != WRONG, flops_outcome(variant).detail
    assert cache_outcome(variant).kind != WRONG, cache_outcome(variant).detail


def diffllama(**changes: int) -> Variant:
    config = {**next(iter_variants("diffllama")).config, **changes}
    return Variant("diffllama/test", config, "test")


def test_a_wrong_figure_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks themselves: one FLOP or one byte off is wrong, with both figures."""
    variant = diffllama(num_hidden_layers=2, hidden_size=256, intermediate_size=512,
                        num_attention_heads=4, num_key_value_heads=2, vocab_size=1000)
    assert flops_outcome(variant) == cache_outcome(variant) == Outcome(EXACT)
    # one layer, per token 2 × (q, o 256²; k, v 256 × 128; MLP 3 × 256 × 512; lm_head 1,000 × 256)
    # × 64 tokens, plus 2 maps × 2 × 64² pairs × 4 heads × (64 + 64)
    assert 64 * 2 * (2 * 256**2 + 2 * 256 * 128 + 3 * 256 * 512 + 1000 * 256) + (
        2 * 2 * 64**2 * 4 * 128) == 116_654_080
    real_flops, real_cache = measure.ours_flops, measure.ours_cache_bytes
    monkeypatch.setattr(measure, "ours_flops", lambda spec: real_flops(spec) + 1)
    monkeypatch.setattr(measure, "ours_cache_bytes", lambda spec, **kw: real_cache(spec, **kw) + 2)
    assert flops_outcome(variant) == Outcome(
        WRONG, "1 layer(s): llmcalc 116,654,081, FlopCounterMode 116,654,080 (+0.00%)")
    assert cache_outcome(variant) == Outcome(
        WRONG, "1 layer(s), 64 tokens, bf16: llmcalc 32,770 B, transformers 32,768 B "
               "(DynamicLayer)")


def test_dynamic_cache_keeps_window_minus_one() -> None:
    """The one relation the cache check applies: DynamicCache keeps a sliding layer's last
    window − 1 tokens, llmcalc the whole window (StaticCache's)."""
    config = {**next(iter_variants("mistral")).config, "sliding_window": 5, "num_hidden_layers": 2,
              "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4,
              "num_key_value_heads": 2}
    spec = spec_from_dict(config, name="mistral")
    forward = measure.measure(config, depth=2)
    per_token = 2 * 2 * 2 * 64 * 2  # 2 layers × K and V × 2 kv heads × 64, bf16
    assert forward.cache_bytes == {SEQ: 4 * per_token, measure.SHORT: 4 * per_token}
    assert kv_cache_bytes(spec, batch=1, ctx=SEQ, dtype=DType.bf16) == 5 * per_token
    assert measure.ours_cache_bytes(spec, ctx=SEQ, dtype=DType.bf16) == 4 * per_token
