"""`llmcalc train`, `fit` and `mfu`: the planners' figures, their JSON, their errors and exit codes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from llmcalc import load_spec
from llmcalc.errors import UsageError
from llmcalc.planning.hardware import ACCELERATORS, GiB, lookup, resolve
from llmcalc.planning.serving import fit, model_flops_utilisation
from llmcalc.units import DType

# PaLM 540B (Chowdhery et al. 2022, Table 1): 118 layers, d_model 18432, 48 heads of 256,
# multi-query attention, SwiGLU with d_ff = 4·d_model, 256k vocabulary, shared input/output
# embeddings. As a llama-family config it has 540,358,649,856 parameters (the paper: 540.35B).
PALM = {
    "model_type": "llama", "hidden_size": 18432, "intermediate_size": 73728,
    "num_hidden_layers": 118, "num_attention_heads": 48, "num_key_value_heads": 1,
    "head_dim": 256, "vocab_size": 256000, "tie_word_embeddings": True,
}


# ---- mfu -----------------------------------------------------------------------------------------


def test_palm_540b_mfu_46_2_percent(write: Any) -> None:
    # PaLM, Table 3 / App. B: 238.3K tokens/s on 6144 TPU v4 chips (275 TFLOP/s bf16 each), sequence
    # length 2048 → 46.2% MFU, counting 6N + 12·L·H·Q·T per token.
    spec = load_spec(write("palm.json", PALM))
    u = model_flops_utilisation(
        spec, tokens_per_sec=238_300, ctx=2048, gpus=6144, accelerator=resolve(None, flops="275T")
    )
    # N = 540,358,649,856, of which the 2·118 + 1 RMSNorm vectors (no matmul) are 237 × 18432
    matrices = 540_358_649_856 - 237 * 18432
    assert u.flops_per_token == 6 * matrices + 12 * 118 * 48 * 256 * 2048
    assert round(u.mfu * 100, 1) == 46.2
    assert u.mfu_causal < u.mfu  # the causal mask keeps about half the attention pairs


def test_mfu_cli_gpt2_by_hand(cli: Any) -> None:
    # GPT-2: matrices one token is multiplied by: 12 × 7,077,888 + the tied lm_head 38,597,376
    # = 123,532,032 → W = 247,064,064; PaLM attention at T = 1024: 12 · 1024 · 2·12·(64+64).
    per_token = 3 * (247_064_064 + 12 * 1024 * 2 * 12 * 128)
    assert per_token == 854_438_400
    run = cli("mfu", "gpt2", "--tokens-per-sec", "50000", "--gpu-flops", "100T", "--ctx", "1k",
              "--json")
    assert run.code == 0, run.stderr
    data = run.json()
    assert data["flops_per_token"] == per_token
    assert data["tokens_per_sec"] == 50_000
    assert data["mfu"] == pytest.approx(50_000 * per_token / 1e14)
    assert data["ctx"] == 1024
    assert set(data) >= {"mfu", "mfu_causal", "achieved_flops_per_gpu", "peak_flops_per_gpu"}


def test_mfu_table_and_explain(cli: Any) -> None:
    run = cli("mfu", "gpt2", "--tokens-per-sec", "50k", "--gpu", "a100", "--explain")
    assert run.code == 0, run.stderr
    assert "sequence length 4,096 (--ctx)" in run.stdout
    assert "MFU = tokens/s × FLOPs per token / (GPUs × peak)" in run.stdout


# ---- train ---------------------------------------------------------------------------------------


def test_train_json_keys_and_figures(cli: Any) -> None:
    run = cli("train", "llama-3.1-405b", "--tokens", "15.6T", "--gpus", "16384", "--gpu", "h100",
              "--ctx", "8k", "--tp", "8", "--pp", "16", "--zero", "1", "--flash-attention", "--json")
    assert run.code == 0, run.stderr
    d = run.json()
    assert {"training_flops", "compute_optimal_tokens", "gpu_hours", "memory_per_gpu_bytes",
            "fits"} <= set(d)
    assert d["ctx"] == 8192 and d["tokens"] == 15_600_000_000_000
    assert d["training_flops"] == pytest.approx(3.94e25, rel=0.01)
    assert d["compute_optimal_tokens"] == 20 * 405_853_388_800
    # model states: N / (tp·pp) = 3,170,729,600 params per GPU; ZeRO-1 shards the 12 optimizer
    # bytes over dp = 128. Activations: 126 layers × 34·s·b·h / t with FlashAttention.
    shard = 405_853_388_800 // 128
    assert d["memory_per_gpu"]["weights"] == 2 * shard
    assert d["memory_per_gpu"]["optimizer/momentum"] == 4 * shard // 128
    assert d["memory_per_gpu"]["activations"] == 126 * 34 * 8192 * 16384 // 8 == 71_873_593_344
    # logits and loss at the start of backward: 12 B × s × V over the tp vocabulary shards
    assert d["memory_per_gpu"]["logits/loss"] == 12 * 8192 * 128_256 // 8 == 1_576_009_728
    assert d["memory_per_gpu_bytes"] == 84_853_767_644 + 1_576_009_728
    assert d["peak_moment"] == "start of backward"
    # 80.5 GiB per GPU is beyond the H100's 80 GiB and the 72 GiB left after the
    # 10% headroom ``fit`` also keeps: 80 GiB × 0.9 = 77,309,411,328 B
    assert d["headroom"] == 0.1
    assert d["usable_memory_bytes"] == 80 * GiB * 9 // 10 == 77_309_411_328
    assert d["fits"] is False
    assert d["parallelism"] == {"gpus": 16384, "tp": 8, "pp": 16, "dp": 128, "zero": 1}
    assert d["gpu_hours"] == pytest.approx(d["training_flops"] / (989e12 * 0.4) / 3600)


def test_train_without_flash_attention_does_not_fit(cli: Any) -> None:
    run = cli("train", "llama-3.1-405b", "--tokens", "15.6T", "--gpus", "16384", "--gpu", "h100",
              "--ctx", "8k", "--tp", "8", "--pp", "16", "--zero", "1")
    assert run.code == 0, run.stderr
    assert "does not fit" in run.stdout
    assert "training sequence length 8,192 (--ctx)" in run.stdout


def test_train_defaults_state_ctx_and_tokens(cli: Any) -> None:
    run = cli("train", "gpt2", "--gpu", "a100-40gb", "--json")
    assert run.code == 0, run.stderr
    d = run.json()
    assert d["ctx"] == 4096  # the stated default
    assert d["tokens"] == d["compute_optimal_tokens"] == 20 * 124_439_808
    assert d["mfu"] == 0.4
    table = cli("train", "gpt2", "--gpu", "a100-40gb")
    assert "training sequence length 4,096 (--ctx)" in table.stdout
    assert "fits" in table.stdout


def test_train_headroom_decides_the_verdict(cli: Any) -> None:
    args = ("train", "llama-3.1-405b", "--tokens", "15.6T", "--gpus", "16384", "--gpu", "h100",
            "--ctx", "8k", "--tp", "8", "--pp", "16", "--zero", "2", "--flash-attention")
    # 80,137,860,822 B per GPU (ZeRO-2 shards the gradients too): over 80 GiB × 0.9, within
    # 80 GiB × 0.99 = 85,040,352,460
    none = cli(*args, "--headroom", "0.01", "--json").json()
    assert none["memory_per_gpu_bytes"] == 80_137_860_822
    assert none["usable_memory_bytes"] == 85_040_352_460 and none["fits"] is True
    table = cli(*args)
    assert table.code == 0, table.stderr
    assert "usable after 10% headroom for the runtime" in table.stdout
    assert "72.00 GiB" in table.stdout
    assert "does not fit" in table.stdout
    explain = cli(*args, "--explain")
    assert ("usable per GPU = memory × (1 − headroom) = 85,899,345,920 × (1 − 0.1) = "
            "77,309,411,328") in explain.stdout
    assert ("total per GPU = 6,688,257,750 + 71,873,593,344 + 1,576,009,728 = 80,137,860,822 > "
            "77,309,411,328: does not fit") in explain.stdout
    bad = cli("train", "gpt2", "--gpu", "h100", "--headroom", "1")
    assert bad.code == 2
    assert bad.stderr == "error: --headroom 1: must be a fraction in [0, 1), e.g. 0.1\n"


def test_train_and_fit_share_the_headroom() -> None:
    from llmcalc.planning import hardware, training
    from llmcalc.planning import serving as planning

    assert planning.DEFAULT_HEADROOM is hardware.DEFAULT_HEADROOM
    assert training.DEFAULT_HEADROOM is hardware.DEFAULT_HEADROOM
    assert hardware.usable_memory(80 * GiB, headroom=0.1) == 77_309_411_328


def test_train_six_n_d_counts_active_parameters_of_moe(cli: Any) -> None:
    # Mixtral 8x7B: 46,702,792,704 parameters, 12,879,925,248 of them used per token (2 of 8
    # experts); 6·N·D for MoE takes the active N. Memory still holds all of them.
    args = ("train", "mixtral-8x7b", "--gpu", "h100", "--gpus", "64", "--tokens", "1T")
    d = cli(*args, "--json").json()
    assert d["params"] == 46_702_792_704 and d["active_params"] == 12_879_925_248
    assert d["six_n_d"] == 6 * 12_879_925_248 * 10**12
    assert d["memory_per_gpu"]["weights"] == 2 * 46_702_792_704
    out = cli(*args, "--explain").stdout
    assert "6·N·D (rule of thumb, N = 12.9B active parameters)" in out
    assert "6·N·D = 6 × N_active × D = 6 × 12,879,925,248 × 1,000,000,000,000 = 7.7280e+22" in out


def test_train_zero3_over_64_gpus(cli: Any) -> None:
    plain = cli("train", "llama-2-7b", "--gpu", "h100", "--gpus", "64", "--json").json()
    zero3 = cli("train", "llama-2-7b", "--gpu", "h100", "--gpus", "64", "--zero", "3",
                "--json").json()
    n_params = 6_738_415_616
    for key, per_param in plain["bytes_per_param"].items():
        assert plain["memory_per_gpu"][key] == per_param * n_params
        assert zero3["memory_per_gpu"][key] == per_param * n_params // 64
    assert sum(zero3["bytes_per_param"].values()) == 16


def test_train_explain(cli: Any) -> None:
    run = cli("train", "gpt2", "--gpu", "h100", "--explain", "--recompute", "selective")
    assert run.code == 0, run.stderr
    assert "compute-optimal tokens = 20 × N = 20 × 124,439,808 = 2,488,796,160" in run.stdout
    assert "activations = L × s·b·h·(34 + 5·a·s/h) / t" in run.stdout


# ---- fit -----------------------------------------------------------------------------------------


def test_fit_largest_batch_by_hand(cli: Any) -> None:
    # Llama 2 70B on 2 × H100: bf16 weights 2 × 68,976,648,192 B; usable 0.9 × 160 GiB; KV per
    # sequence of 4096 tokens = 80 layers × 2 × 8 kv heads × 128 × 2 B × 4096. The prefill (sdpa,
    # the whole prompt at once) holds, per prompt token, 4 hidden-wide and 3 MLP-wide tensors at
    # 2 B: (4 × 8192 + 3 × 28,672) × 2 = 237,568 B, split over the 2 GPUs.
    weights = 2 * 68_976_648_192
    usable = 160 * GiB * 9 // 10
    per_sequence = 80 * 2 * 8 * 128 * 2 * 4096
    prefill = (4 * 8192 + 3 * 28_672) * 2 * 4096 // 2
    run = cli("fit", "llama-2-70b", "--gpu", "h100", "--gpus", "2", "--ctx", "4k", "--json")
    assert run.code == 0, run.stderr
    d = run.json()
    assert d["weight_bytes"] == weights and d["usable_bytes"] == usable
    assert d["attention"] == "sdpa"
    assert d["max_batch"] == (usable - weights) // (per_sequence + prefill) == 9
    assert d["kv_cache_bytes"] == 9 * per_sequence
    assert d["prefill_bytes"] == 9 * prefill
    assert d["peak_bytes"] == weights + 9 * (per_sequence + prefill) <= usable
    # roofline: a step reads the weights and the whole cache once, at 2 × 3.35 TB/s — of the
    # 32,000 × 8,192 embedding table (a gather) only the 9 rows looked up
    read = weights - (32_000 - 9) * 8_192 * 2
    step = (read + 9 * per_sequence) / 6.7e12
    assert d["decode"]["seconds_per_step"] == pytest.approx(step)
    assert d["decode"]["tokens_per_sec"] == pytest.approx(9 / step)
    # chunked prefill (8,192 tokens in flight): the transient stops growing with the batch
    chunked = cli("fit", "llama-2-70b", "--gpu", "h100", "--gpus", "2", "--ctx", "4k",
                  "--prefill-chunk", "8k", "--json").json()
    chunk = (4 * 8192 + 3 * 28_672) * 2 * 8192 // 2
    assert chunked["max_batch"] == (usable - weights - chunk) // per_sequence == 11
    assert chunked["prefill_bytes"] == chunk


def test_fit_largest_context_fp8_cache() -> None:
    # Llama 3 8B on one H100, bf16 weights, fp8 cache: 32 layers × 2 × 8 × 128 × 1 B = 65,536 B
    # per token; with max_position_embeddings lifted the cache takes what the weights leave.
    spec = load_spec("llama-3-8b", overrides=["max_position_embeddings=4194304"])
    f = fit(spec, accelerator=lookup("h100"), dtype=DType.bf16, kv_dtype=DType.fp8)
    assert f.kv_bytes_per_token == 65_536
    budget = 80 * GiB * 9 // 10 - 2 * 8_030_261_248
    assert f.ctx == budget // 65_536 == 934_583
    assert not f.limited_by_context_limit
    capped = fit(load_spec("llama-3-8b"), accelerator=lookup("h100"), dtype=DType.bf16,
                 kv_dtype=DType.fp8)
    assert capped.ctx == 8192 and capped.limited_by_context_limit


def test_fit_cli_table(cli: Any) -> None:
    run = cli("fit", "llama-3-8b", "--gpu", "h100", "--dtype", "bf16", "--kv-dtype", "fp8")
    assert run.code == 0, run.stderr
    assert "largest context at batch 1" in run.stdout
    assert "capped at the model's max_position_embeddings (8,192)" in run.stdout
    assert "tokens/s per sequence" in run.stdout


def test_fit_nothing_fits(cli: Any) -> None:
    run = cli("fit", "llama-2-70b", "--gpu", "rtx4090", "--json")
    assert run.code == 0, run.stderr
    d = run.json()
    assert d["fits"] is False and d["decode"] is None
    # no context fits: null, not a 0 that reads like an answer; the batch asked for stays
    assert d["solved_for"] == "ctx"
    assert d["ctx"] is None and d["max_ctx"] is None and d["kv_cache_bytes"] is None
    assert d["batch"] == 1
    table = cli("fit", "llama-2-70b", "--gpu", "rtx4090")
    assert "the weights leave no room for a KV cache" in table.stdout
    assert "KV cache at batch" not in table.stdout


def test_fit_no_sequence_fits_beside_the_weights(cli: Any) -> None:
    # Llama 2 7B on one 24 GiB card: bf16 weights 13,476,831,232 B leave 21.6 GiB − 12.55 GiB;
    # one sequence of 1M tokens needs 32 × 2 × 32 × 128 × 2 B × 2^20 = 512 GiB.
    run = cli("fit", "llama-2-7b", "--gpu", "rtx4090", "--ctx", "1M", "--json")
    assert run.code == 0, run.stderr
    d = run.json()
    assert d["solved_for"] == "batch" and d["fits"] is False
    assert d["ctx"] == 1_048_576 and d["batch"] is None and d["max_batch"] is None
    assert d["kv_cache_bytes"] is None and d["decode"] is None
    table = cli("fit", "llama-2-7b", "--gpu", "rtx4090", "--ctx", "1M")
    assert "not one sequence of 1,048,576 tokens fits beside the weights" in table.stdout
    assert "KV cache at batch" not in table.stdout


def test_fit_batch_of_a_model_that_keeps_no_cache() -> None:
    # BERT keeps no KV cache and no state (0 B a token): weights alone, 2 × 109,514,298 B in
    # bf16, set what fits, so any batch does; the search's cap answers, and says so
    from helpers.shell import llmcalc

    from llmcalc.planning.serving import UNBOUNDED_BATCH_LIMIT

    run = llmcalc("fit", "bert-base-uncased", "--gpu", "h100", "--ctx", "512")
    assert run.returncode == 0, run.stderr
    assert "largest batch at context 512 │ 16,777,216" in " ".join(run.stdout.split())
    assert ("the model keeps no KV cache or state: memory sets no largest batch; capped at the "
            "16,777,216 searched") in run.stdout
    asked = llmcalc("fit", "bert-base-uncased", "--gpu", "h100", "--batch", "64", "--ctx", "512")
    assert asked.returncode == 0, asked.stderr
    assert "batch 64 at context 512: fits (the largest batch is 16,777,216)" in asked.stdout
    d = llmcalc("fit", "bert-base-uncased", "--gpu", "h100", "--ctx", "512", "--json")
    data = json.loads(d.stdout)
    assert data["max_batch"] == UNBOUNDED_BATCH_LIMIT == 2**24
    assert data["weight_bytes"] == 2 * 109_514_298 and data["kv_cache_bytes"] == 0
    # weights that do not fit still answer "not one"
    small = llmcalc("fit", "bert-base-uncased", "--gpu-mem", "100MB", "--ctx", "512", "--json")
    assert small.returncode == 0, small.stderr
    assert json.loads(small.stdout)["max_batch"] is None


def test_fit_core_returns_none_not_zero() -> None:
    f = fit(load_spec("llama-2-70b"), accelerator=lookup("rtx4090"), dtype=DType.bf16,
            kv_dtype=DType.bf16)
    assert (f.fits, f.batch, f.ctx, f.kv_bytes, f.decode) == (False, 1, None, None, None)


# ---- errors --------------------------------------------------------------------------------------


KNOWN = ", ".join(ACCELERATORS)


@pytest.mark.parametrize(
    "args,message",
    [
        (("train", "gpt2"), "--gpu is required (e.g. --gpu h100), or give --gpu-mem and --gpu-flops"),
        (("train", "gpt2", "--gpu-mem", "80GiB"),
         "--gpu-flops is required without --gpu (or pick one with --gpu h100)"),
        (("train", "gpt2", "--gpu", "k80"),
         f"--gpu k80: unknown accelerator; known: {KNOWN} (or describe it with --gpu-mem and "
         "--gpu-flops)"),
        (("train", "gpt2", "--gpu", "h100", "--gpus", "12", "--tp", "8"),
         "--gpus 12: must be a multiple of --tp × --pp = 8 × 1 = 8"),
        (("train", "gpt2", "--gpu", "h100", "--zero", "4"),
         "--zero 4: must be a ZeRO stage 0, 1, 2 or 3"),
        (("train", "gpt2", "--gpu", "h100", "--mfu", "40"),
         "--mfu 40: must be a fraction in (0, 1], e.g. 0.4"),
        (("train", "gpt2", "--gpu", "h100", "--micro-batch", "0"),
         "--micro-batch 0: must be 1 or more"),
        (("fit", "gpt2", "--gpu", "h100", "--batch", "0", "--ctx", "1k"),
         "--batch 0: must be 1 or more"),
        (("fit", "gpt2", "--gpu", "h100", "--headroom", "1.5"),
         "--headroom 1.5: must be a fraction in [0, 1), e.g. 0.1"),
        (("fit", "gpt2", "--gpu-mem", "24GB", "--gpu-flops", "1P"),
         "No such option: --gpu-flops"),
        (("mfu", "gpt2", "--tokens-per-sec", "50k"),
         "--gpu is required (e.g. --gpu h100), or give --gpu-flops"),
        (("fit", "gpt2"), "--gpu is required (e.g. --gpu h100), or give --gpu-mem"),
        (("fit", "gpt2", "--gpu", "k80"),
         f"--gpu k80: unknown accelerator; known: {KNOWN} (or describe it with --gpu-mem)"),
        (("mfu", "gpt2", "--tokens-per-sec", "50k", "--gpu-flops", "fast"),
         "--gpu-flops fast: expected a rate such as 989T or 2.25PFLOPS"),
    ],
)
def test_errors_one_line_exit_2(cli: Any, args: tuple[str, ...], message: str) -> None:
    run = cli(*args)
    assert run.code == 2
    assert message in run.stderr
    if not message.startswith("No such option"):
        assert run.stderr == f"error: {message}\n"


@pytest.mark.parametrize(
    "args,message",
    [
        (("flops", "--ctx", "128k", "--explain"), "--explain needs a MODEL"),
        (("flops", "--json", "--explain"), "--explain needs a MODEL"),
        (("count", "gpt2", "--json", "--explain"), "--explain and --json cannot be combined"),
        (("flops", "gpt2", "--json", "--explain"), "--explain and --json cannot be combined"),
        (("memory", "gpt2", "--json", "--explain"), "--explain and --json cannot be combined"),
        (("train", "gpt2", "--gpu", "h100", "--json", "--explain"),
         "--explain and --json cannot be combined"),
        (("fit", "gpt2", "--gpu", "h100", "--json", "--explain"),
         "--explain and --json cannot be combined"),
        (("mfu", "gpt2", "--gpu", "h100", "--tokens-per-sec", "50k", "--json", "--explain"),
         "--explain and --json cannot be combined"),
    ],
)
def test_explain_is_never_silently_dropped(cli: Any, args: tuple[str, ...], message: str) -> None:
    run = cli(*args)
    assert (run.code, run.stdout, run.stderr) == (2, "", f"error: {message}\n")


def test_fit_usage_error_from_core() -> None:
    # An API caller reads its own parameter names; the CLI rewords the same error in flags.
    with pytest.raises(UsageError) as e:
        fit(load_spec("gpt2"), accelerator=lookup("h100"), gpus=0, dtype=DType.bf16,
            kv_dtype=DType.bf16)
    assert str(e.value) == "gpus 0: must be 1 or more"
    with pytest.raises(UsageError) as e:
        fit(load_spec("gpt2"), accelerator=lookup("h100"), batch=2, ctx=1024, dtype=DType.bf16,
            kv_dtype=DType.bf16)
    assert str(e.value) == "batch and ctx: give one; fit finds the largest value of the other"
    with pytest.raises(UsageError) as e:
        model_flops_utilisation(load_spec("gpt2"), tokens_per_sec=0, ctx=1024, gpus=1,
                                accelerator=lookup("h100"))
    assert str(e.value) == "tokens_per_sec 0: must be more than zero"


@pytest.mark.parametrize(
    "args,message",
    [
        (("fit", "gpt2", "--gpu", "h100", "--gpus", "0"), "--gpus 0: must be 1 or more"),
        (("fit", "gpt2", "--gpu", "h100", "--batch", "0"), "--batch 0: must be 1 or more"),
        (("mfu", "gpt2", "--gpu", "h100", "--tokens-per-sec", "50k", "--gpus", "0"),
         "--gpus 0: must be 1 or more"),
        (("train", "gpt2", "--gpu", "h100", "--pp", "0"), "--pp 0: must be 1 or more"),
        (("train", "gpt2", "--gpu", "h100", "--headroom", "-0.5"),
         "--headroom -0.5: must be a fraction in [0, 1), e.g. 0.1"),
    ],
)
def test_cli_spells_core_parameters_as_flags(cli: Any, args: tuple[str, ...], message: str) -> None:
    run = cli(*args)
    assert (run.code, run.stderr) == (2, f"error: {message}\n")


def test_parameter_error_spelling() -> None:
    from llmcalc.cli._options import flag
    from llmcalc.errors import ParameterError

    e = ParameterError("{gpu} {name}: unknown; try {memory} and {micro_batch}", name="{x}")
    assert str(e) == "gpu {x}: unknown; try memory and micro_batch"
    assert e.parameters == ("gpu", "memory", "micro_batch")
    assert e.spelled(flag) == "--gpu {x}: unknown; try --gpu-mem and --micro-batch"
