"""Training formulas against the published figures they come from."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llmcalc import count, load_spec
from llmcalc.errors import UsageError
from llmcalc.planning.training import (
    ADAMW_BYTES,
    ADAMW_BYTES_PER_PARAM,
    Recompute,
    activation_bytes,
    activation_bytes_per_layer,
    compute_optimal_tokens,
    compute_time,
    model_state_bytes,
    parallelism,
    six_n_d,
    training_flops,
)

# ---- compute -------------------------------------------------------------------------------------


def test_chinchilla_70b_1_4t_tokens() -> None:
    # Hoffmann et al. 2022: Chinchilla, 70B parameters trained on 1.4T tokens.
    assert compute_optimal_tokens(70 * 10**9) == 1_400 * 10**9


def test_six_n_d() -> None:
    assert six_n_d(10**9, 2 * 10**9) == 12 * 10**18


def test_llama_3_1_405b_on_15_6t_tokens() -> None:
    # The Llama 3 Herd of Models (2024), §1: 405B parameters, 15.6T tokens, 3.8 × 10²⁵ FLOPs.
    spec = load_spec("llama-3.1-405b")
    n_params = count(spec).total
    assert n_params == 405_853_388_800
    tokens = 15_600_000_000_000
    assert round(six_n_d(n_params, tokens) / 1e25, 1) == 3.8
    f = training_flops(spec, tokens=tokens, ctx=8192)
    assert round(f.weights / 1e25, 1) == 3.8  # 6 × the matrices (all but embedding and norms)
    # the causal attention at the 8K pre-training length adds 4%: 3.94 × 10²⁵ in all
    assert f.attention / f.weights == pytest.approx(0.0419, abs=0.0005)
    assert f.total == f.weights + f.attention
    assert round(f.total / 1e25, 2) == 3.94


def test_training_flops_gpt2_by_hand() -> None:
    # Matrices one token meets: per layer c_attn 768·2304 + c_proj 768² + c_fc 768·3072 +
    # c_proj 3072·768 = 7,077,888, × 12 layers, + the tied lm_head 50257·768 → W = 2 × 123,532,032.
    # Causal attention of one 1024-token sequence: 12 layers × 1024·1025/2 pairs × 2·12·(64 + 64).
    per_sequence = 12 * (1024 * 1025 // 2) * 2 * 12 * 128
    assert per_sequence == 19_346_227_200
    f = training_flops(load_spec("gpt2"), tokens=1024 * 1000, ctx=1024)
    assert f.weights == 3 * 1024 * 1000 * 247_064_064
    assert f.attention == 3 * 1000 * per_sequence


def test_compute_time_by_hand() -> None:
    # 3.6e21 FLOPs at 1e15 peak × 0.5 MFU = 7.2e6 GPU-seconds = 2000 GPU-hours; on 100 GPUs 72,000 s.
    t = compute_time(36 * 10**20, gpus=100, peak_flops=10**15, mfu=0.5)
    assert t.gpu_hours == pytest.approx(2000)
    assert t.wall_seconds == pytest.approx(72_000)
    assert t.wall_days == pytest.approx(72_000 / 86_400)


@pytest.mark.parametrize("mfu", [0, -0.1, 1.5])
def test_mfu_out_of_range(mfu: float) -> None:
    with pytest.raises(UsageError) as e:
        compute_time(10**20, gpus=1, peak_flops=10**15, mfu=mfu)
    assert str(e.value) == f"mfu {mfu:g}: must be a fraction in (0, 1], e.g. 0.4"


# ---- model states --------------------------------------------------------------------------------

N = 7_000_000_000


def test_adamw_is_16_bytes_per_param() -> None:
    # 2 (bf16 weights) + 2 (bf16 grads) + 12 (fp32 master, momentum, variance).
    assert ADAMW_BYTES_PER_PARAM == 16
    states = model_state_bytes(N, par=parallelism(gpus=1))
    assert states["weights"] == 2 * N
    assert states["gradients"] == 2 * N
    optimizer = sum(v for k, v in states.items() if k.startswith("optimizer/"))
    assert optimizer == 12 * N
    assert sum(states.values()) == 16 * N


def test_zero3_over_64_gpus_divides_all_three() -> None:
    plain = model_state_bytes(N, par=parallelism(gpus=64, zero=0))
    zero3 = model_state_bytes(N, par=parallelism(gpus=64, zero=3))
    assert plain == {k: b * N for k, b in ADAMW_BYTES.items()}  # no ZeRO: every GPU holds it all
    assert zero3 == {k: b * N // 64 for k, b in ADAMW_BYTES.items()}
    assert sum(zero3.values()) == 16 * N // 64 == 1_750_000_000


@pytest.mark.parametrize(
    "stage,divided",
    [(0, set()), (1, {"optimizer"}), (2, {"optimizer", "gradients"}),
     (3, {"optimizer", "gradients", "weights"})],
)
def test_zero_stages_partition_their_states(stage: int, divided: set[str]) -> None:
    states = model_state_bytes(N, par=parallelism(gpus=8, zero=stage))
    for key, per_param in ADAMW_BYTES.items():
        expected = per_param * N // (8 if key.split("/")[0] in divided else 1)
        assert states[key] == expected


def test_zero_divides_by_data_parallel_degree_not_all_gpus() -> None:
    # 64 GPUs as tp 4 × pp 2 × dp 8: the model-parallel split divides by 8, ZeRO-3 by dp = 8.
    par = parallelism(gpus=64, tp=4, pp=2, zero=3)
    assert par.dp == 8
    states = model_state_bytes(N, par=par)
    assert states["weights"] == 2 * N // 64
    assert model_state_bytes(N, par=parallelism(gpus=64, tp=4, pp=2))["weights"] == 2 * N // 8


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"gpus": 12, "tp": 8}, "gpus 12: must be a multiple of tp × pp = 8 × 1 = 8"),
        ({"gpus": 8, "zero": 4}, "zero 4: must be a ZeRO stage 0, 1, 2 or 3"),
        ({"gpus": 0}, "gpus 0: must be 1 or more"),
    ],
)
def test_parallelism_errors(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(UsageError) as e:
        parallelism(**kwargs)
    assert str(e.value) == message


# ---- activations (Korthikanti et al. 2022) -------------------------------------------------------

# GPT-3 175B as in Korthikanti et al. 2022, Table 3: a = 96 heads, h = 12288, L = 96, s = 2048.
GPT3 = {"seq": 2048, "hidden": 12288, "heads": 96}


def test_korthikanti_per_layer_formula() -> None:
    s, b, h, a = 2048, 1, 12288, 96
    per_layer = activation_bytes_per_layer(micro_batch=b, **GPT3)
    assert per_layer == s * b * h * (34 + 5 * a * s // h)  # s·b·h·(34 + 5as/h)
    assert 5 * a * s // h == 80  # the paper's GPT-3 example: 5as/h = 80 against 34
    assert per_layer == 2_868_903_936


def test_korthikanti_gpt3_selective_saves_70_percent() -> None:
    none = activation_bytes_per_layer(micro_batch=1, **GPT3)
    selective = activation_bytes_per_layer(micro_batch=1, recompute=Recompute.selective, **GPT3)
    assert selective == 34 * 2048 * 12288
    assert 1 - selective / none == pytest.approx(0.70, abs=0.005)  # §4.3: "reduces ... by 70%"


def test_flash_attention_removes_the_s_squared_term() -> None:
    flash = activation_bytes_per_layer(micro_batch=1, flash_attention=True, **GPT3)
    assert flash == activation_bytes_per_layer(micro_batch=1, recompute=Recompute.selective, **GPT3)
    # doubling s doubles the linear terms only
    doubled = activation_bytes_per_layer(
        seq=4096, micro_batch=1, hidden=12288, heads=96, flash_attention=True
    )
    assert doubled == 2 * flash


def test_full_recompute_keeps_layer_inputs() -> None:
    full = activation_bytes_per_layer(micro_batch=2, recompute=Recompute.full, **GPT3)
    assert full == 2 * 2048 * 2 * 12288


def test_tensor_and_sequence_parallel_divide_by_t() -> None:
    one = activation_bytes_per_layer(micro_batch=1, **GPT3)
    assert activation_bytes_per_layer(micro_batch=1, tp=8, **GPT3) == one // 8


def test_gpt3_175b_all_layers_on_8_way_tensor_parallel() -> None:
    # 96 layers × 2,868,903,936 B / 8 = 34,426,847,232 B ≈ 32 GiB per GPU without recomputation.
    total = activation_bytes(layers=96, micro_batch=1, tp=8, **GPT3)
    assert total == 34_426_847_232
    assert activation_bytes(layers=96, micro_batch=2, tp=8, **GPT3) == 2 * total


@given(
    params=st.integers(1, 10**12),
    tp=st.sampled_from([1, 2, 4, 8]),
    pp=st.sampled_from([1, 2, 4]),
    dp=st.integers(1, 64),
)
def test_each_zero_stage_never_needs_more(params: int, tp: int, pp: int, dp: int) -> None:
    totals = [
        sum(model_state_bytes(params, par=parallelism(gpus=tp * pp * dp, tp=tp, pp=pp,
                                                      zero=z)).values())
        for z in range(4)
    ]
    assert totals == sorted(totals, reverse=True)
    assert totals[0] >= 16 * params // (tp * pp)


@given(
    seq=st.integers(1, 32768),
    b=st.integers(1, 16),
    heads=st.sampled_from([8, 32, 96]),
    recompute=st.sampled_from(list(Recompute)),
)
def test_activations_linear_in_micro_batch(seq: int, b: int, heads: int, recompute: Recompute) -> None:
    one = activation_bytes_per_layer(seq=seq, micro_batch=1, hidden=4096, heads=heads,
                                     recompute=recompute)
    assert activation_bytes_per_layer(seq=seq, micro_batch=b, hidden=4096, heads=heads,
                                      recompute=recompute) == b * one
    full = activation_bytes_per_layer(seq=seq, micro_batch=1, hidden=4096, heads=heads,
                                      recompute=Recompute.full)
    assert full <= one
