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
from checks import (  # noqa: E402
    BOTH_REFUSE,
    EXACT,
    REFUSED,
    WRONG,
    Outcome,
    cache_outcome,
    flops_outcome,
)
from measure import SEQ  # noqa: E402
from variants import Variant, counted_types, iter_variants  # noqa: E402

from llmcalc import spec_from_dict  # noqa: E402
from llmcalc.errors import ConfigError, UsageError  # noqa: E402
from llmcalc.formulas.flops import dense_run_flops_per_token, flops, forward_flops_per_sequence  # noqa: E402
from llmcalc.formulas.memory import kv_cache_bytes  # noqa: E402
from llmcalc.units import DType  # noqa: E402
from llmcalc.verify.reference import check_buildable, cut_fields, kept_layers  # noqa: E402

pytestmark = [pytest.mark.torch]

SEED = 0
SAMPLE = 48  # configs run (a second or a few each on one core): with the tests below, about 1 min


def measurable(variant: Variant) -> bool:
    """llmcalc reads it and its cut copy (made smaller where needed) is within verify's limits."""
    try:
        config, _ = measure.fitted(variant)
        spec = spec_from_dict(config, name=variant.label)
        check_buildable(spec)
    except (ConfigError, UsageError):
        return False
    return not measure._too_large(config)


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


def test_a_copy_transformers_cannot_run_is_freed_before_the_next(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each dtype's failed copy is gone before the next dtype's is built, and once the error is
    raised: a model held in reference cycles, kept by its error's traceback, ran the sweep's
    EXAONE-MoE worker out of memory."""
    import gc
    import json
    import weakref

    class Model:  # a transformers model: its modules hold each other
        def __init__(self) -> None:
            self.itself = self

    built: list[tuple[DType, weakref.ref[Model]]] = []

    def failing_run(spec: object, *, depth: int, dtype: DType) -> measure.Forward:
        assert all(ref() is None for _, ref in built), "the last copy is still held"
        model = Model()
        built.append((dtype, weakref.ref(model)))
        raise RuntimeError(f"cannot run in {dtype.value}")

    monkeypatch.setattr(measure, "_run", failing_run)
    config = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
              "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100}
    gc.disable()  # only the harness's own collection may free them
    try:
        with pytest.raises(RuntimeError, match=f"^cannot run in {DType.fp32.value}$"):
            measure._measure.__wrapped__(json.dumps(config), 2)
        assert [dtype for dtype, _ in built] == [DType.bf16, DType.fp32]
        assert all(ref() is None for _, ref in built)
    finally:
        gc.enable()


def test_every_error_of_a_chain_is_released_once() -> None:
    """The frames of the error raised, the one it was raised from and the one it was raised
    during are all cleared; a chain that loops (a cause set by hand) ends."""
    import gc
    import weakref

    class Model:
        def __init__(self) -> None:
            self.itself = self

    held: list[weakref.ref[Model]] = []

    def build() -> None:
        model = Model()
        held.append(weakref.ref(model))
        raise KeyError("cannot run")

    def run() -> None:
        try:
            build()
        except KeyError:
            raise RuntimeError("reported") from ValueError("its cause")

    gc.disable()
    try:
        with pytest.raises(RuntimeError) as raised:
            run()
        measure._released(raised.value)
        gc.collect()
        assert held[0]() is None
    finally:
        gc.enable()
    a, b = ValueError("a"), ValueError("b")
    a.__cause__, b.__cause__ = b, a
    assert measure._released(a) is a


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


def small(model_type: str, **changes: object) -> Variant:
    """``model_type``'s default config with ``changes``: a copy small enough to run in seconds."""
    return Variant(f"{model_type}/test", {**next(iter_variants(model_type)).config, **changes}, "test")


def test_dense_run_experts_are_named_and_held() -> None:
    """Llama 4's experts run dense in transformers (every token times all E, the unrouted inputs
    zeroed): FlopCounterMode's count is llmcalc's routed figure plus, exactly, the FLOPs flops'
    note gives for the E − k experts a token is not routed to."""
    variant = small("llama4_text", num_hidden_layers=2, hidden_size=256, intermediate_size=128,
                    intermediate_size_mlp=256, num_attention_heads=4, num_key_value_heads=2,
                    head_dim=64, num_local_experts=4, num_experts_per_tok=1, vocab_size=1000)
    assert flops_outcome(variant) == Outcome(EXACT, "experts run dense (flops' note)")
    cut = measure.cut_spec(spec_from_dict(variant.config, name="llama4_text"), num_layers=1)
    # 3 un-routed experts × 2 × (gate_up 256 × 2·128 + down 128 × 256) in the one MoE layer
    assert dense_run_flops_per_token(cut) == 3 * 2 * (256 * 256 + 128 * 256) == 589_824
    assert measure.measure(variant.config, depth=1).flops == 125_173_760 == (
        forward_flops_per_sequence(cut, ctx=SEQ, causal=False) + SEQ * 589_824)
    assert flops(cut, ctx=SEQ).notes == (
        "routed experts: the 1 of 4 a token is routed to, as a routed kernel runs them; "
        "transformers' eager forward multiplies every token by all 4 (the others' inputs zeroed), "
        "589,824 FLOPs more per token (37,748,736 per sequence)",)


def test_zero_computation_expert_picks_cost_nothing() -> None:
    """LongCat-Flash: llmcalc counts all k picks as real experts (the most, as flops' note says);
    the forward's count is that less, exactly, one expert's FLOPs per pick of a zero expert."""
    variant = small("longcat_flash", num_layers=2, hidden_size=256, ffn_hidden_size=256,
                    expert_ffn_hidden_size=64, num_attention_heads=4, n_routed_experts=4,
                    zero_expert_num=4, moe_topk=2, q_lora_rank=64, kv_lora_rank=32,
                    qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32, head_dim=16,
                    vocab_size=1000)
    assert flops_outcome(variant) == Outcome(EXACT, "picks of zero experts taken off (flops' note)")
    forward = measure.measure(variant.config, depth=1)
    cut = measure.cut_spec(spec_from_dict(variant.config, name="longcat_flash"), num_layers=1)
    assert 0 < forward.zero_picks < 2 * SEQ  # some of the 2 × 64 picks, not all
    assert measure.expert_pick_flops(cut) == 2 * (256 * 2 * 64 + 64 * 256)
    assert forward.flops == measure.ours_flops(cut) - forward.zero_picks * 98_304


def test_whole_model_runs_on_text() -> None:
    """A vision–language model is cut inside its text_config and run on text tokens (none of them
    its image token): the language model's FLOPs and cache, its towers idle."""
    config = next(iter_variants("llava")).config
    text = {**config["text_config"], "hidden_size": 256, "intermediate_size": 512,
            "num_attention_heads": 4, "num_key_value_heads": 2}
    variant = Variant("llava/test", {**config, "text_config": text}, "test")
    spec = spec_from_dict(variant.config, name="llava")
    assert cut_fields(spec, num_layers=1)["text_config"]["num_hidden_layers"] == 1
    detail = f"vocab_size={measure.FIT_VOCAB}; {measure.TEXT_ONLY}"
    assert flops_outcome(variant) == cache_outcome(variant) == Outcome(EXACT, detail)


def test_a_hybrid_cut_keeps_an_attention_layer() -> None:
    """Cut to 2 layers, a pattern whose first layers are all linear attention keeps layer 0 and its
    first full-attention layer, so that transformers' cache holds both kinds and is measured."""
    kinds = ["linear_attention"] * 3 + ["full_attention"]
    assert kept_layers(kinds * 2, num_layers=2) == [0, 3]
    assert kept_layers(kinds * 2, num_layers=1) == [0]
    assert kept_layers(["full_attention", "sliding_attention"] * 2, num_layers=2) == [0, 1]
    variant = small("qwen3_next", num_hidden_layers=8, hidden_size=256, intermediate_size=256,
                    moe_intermediate_size=64, shared_expert_intermediate_size=64,
                    num_attention_heads=4, num_key_value_heads=2, head_dim=64, num_experts=4,
                    num_experts_per_tok=2, linear_num_key_heads=2, linear_num_value_heads=4,
                    vocab_size=1000)
    spec = spec_from_dict(variant.config, name="qwen3_next")
    assert cut_fields(spec, num_layers=2)["layer_types"] == ["linear_attention", "full_attention"]
    assert measure.measure(variant.config, depth=2).cache_layers == (
        "LinearAttentionLayer", "DynamicLayer")
    assert flops_outcome(variant) == cache_outcome(variant) == Outcome(EXACT)


def test_states_kept_in_modules_are_measured() -> None:
    """RecurrentGemma returns no cache: given one, its attention layer fills it (the window − 1
    tokens DynamicCache keeps), and its recurrent layer keeps its states in its modules."""
    variant = small("recurrent_gemma", num_hidden_layers=3, hidden_size=256, lru_width=256,
                    intermediate_size=512, num_attention_heads=4, num_key_value_heads=1,
                    head_dim=64, attention_window_size=16, vocab_size=1000)
    # recurrent: the convolution's last 3 inputs of 256 (bf16) and the RG-LRU's 256 (float32)
    recurrent = 3 * 256 * 2 + 256 * 4
    attention = 2 * 15 * 64 * 2  # K and V, 1 kv head × 64, the last 15 tokens, bf16
    assert measure.measure(variant.config, depth=1).cache_bytes == {SEQ: recurrent}
    assert measure.measure(variant.config, depth=2).cache_bytes == {
        SEQ: recurrent + attention, measure.SHORT: recurrent + attention}
    assert flops_outcome(variant) == cache_outcome(variant) == Outcome(EXACT)


def test_a_forward_llmcalc_refuses_is_refused_by_both_where_transformers_cannot_run_it() -> None:
    """ProphetNet's n-gram streams (ModelSpec.forward_unmodelled): the count is held, the FLOPs
    and cache columns give llmcalc's reason, refused by both: transformers cannot cut it to the
    measured layers (it takes no num_hidden_layers)."""
    variant = next(iter_variants("prophetnet", seed=SEED))
    why = ("ProphetNet's decoder runs 2 n-gram streams beside the main one, with relative "
           "positions of their own")
    assert flops_outcome(variant) == Outcome(BOTH_REFUSE, why)
    assert cache_outcome(variant) == Outcome(BOTH_REFUSE, why)


def test_a_figure_refused_at_the_measured_length_is_refused() -> None:
    """BigBird at block_size 2 with 1 random block attends in full up to 14 tokens and in blocks
    past them: its 64-token FLOPs are refused in llmcalc's one line (its cache, none, is held);
    at block_size 64 the 64 tokens run in full and both are exact."""
    layers = {"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 128,
              "num_attention_heads": 4, "vocab_size": 100, "num_random_blocks": 1}
    variant = small("big_bird", block_size=2, **layers)
    assert flops_outcome(variant) == Outcome(REFUSED, (
        "big_bird/test: FLOPs past 14 tokens (64 asked) are not computed: BigBird's block-sparse "
        "attention (global, window and random blocks) runs there, which these formulas do not "
        "follow"))
    assert cache_outcome(variant) == Outcome(EXACT)
    full = small("big_bird", block_size=64, **layers)
    assert flops_outcome(full) == cache_outcome(full) == Outcome(EXACT)


@pytest.mark.parametrize(("model_type", "width"), [("mistral", 2), ("glm", 1), ("ministral3", 0)])
def test_one_element_heads_as_transformers_runs_them(model_type: str, width: int) -> None:
    """head_dim 1: the rotary step widens the query and key to 2 (Mistral), leaves them at 1
    (GLM's half-rotary slices none off) or broadcasts them to none (Ministral 3): FLOPs and the
    cache (keys of that width, values of 1) as transformers counts and keeps them."""
    variant = small(model_type, num_hidden_layers=2, hidden_size=256, intermediate_size=512,
                    num_attention_heads=4, num_key_value_heads=2, head_dim=1, vocab_size=1000,
                    pad_token_id=0)
    spec = spec_from_dict(variant.config, name=model_type)
    assert {g.attention.qk_head_dim for g in spec.layer_groups if g.attention} == {width}
    forward = measure.measure(variant.config, depth=1)
    assert forward.cache_bytes == {SEQ: 2 * (width + 1) * SEQ * 2}  # 2 KV heads, bf16
    assert flops_outcome(variant) == cache_outcome(variant) == Outcome(EXACT)
