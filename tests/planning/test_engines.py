"""fit --engine vllm|sglang|trtllm held to real start-up logs (tests/data/engine_logs.json): the
token count each log shows, the error on each (docs/serving-engines.md states them), the token
count from a logged KV figure exact to its rounding, and the engines' refusals."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from llmcalc.cli._common import spec_for
from llmcalc.planning.engines import sglang, trtllm, vllm
from llmcalc.planning.engines.budget import budget_adds_up
from llmcalc.planning.hardware import GiB, lookup
from llmcalc.units import DType

LOGS = json.loads((Path(__file__).parents[1] / "data" / "engine_logs.json").read_text())["logs"]
BY_ID = {row["id"]: row for row in LOGS}

# llmcalc's token count for each log, and its error against the logged count (docs table)
PREDICTED = {
    "vllm-v0-3090-llama31-8b-20k": 32800,
    "vllm-v0-3090-llama31-8b-29k": 25200,
    "vllm-v0-a10-llama31-8b-131k": 36816,
    "vllm-v0-4090x2-qwen14b-131k": 81536,
    "vllm-v1-h100x4-qwen3-235b-fp8": 305680,
    "sglang-h100x4-qwen3-235b-fp8": 368554,
    "vllm-v1-a5000-qwen3-8b-16k": 45696,
    "vllm-v0-a100-40gb-llama3-8b-8k": 157024,
    "vllm-v0-h100-phi4-gptq-2k": 11584,
}


def _args(row: dict[str, Any], *extra: str) -> list[str]:
    where = ["--gpu", row["gpu"]] if "gpu" in row else ["--gpu-mem", row["gpu_mem"]]
    return ["fit", row["model"], "--engine", row["engine"], "--tp", str(row["tp"]), *where,
            *row["flags"], "--json", *extra]


@pytest.mark.parametrize("log_id", sorted(PREDICTED))
def test_token_count_per_log(cli: Any, log_id: str) -> None:
    row = BY_ID[log_id]
    r = cli(*_args(row))
    assert r.code == (1 if row.get("refused") else 0)
    assert json.loads(r.stdout)["kv_cache_tokens"] == PREDICTED[log_id]


def test_errors_over_the_logs() -> None:
    """Median error at most 5%. The logs off by more than 10% are two, each for a term the log
    shows and llmcalc cannot know: the vLLM run with the LMCache connector's buffers, and the A100
    run whose profile peaked at 9.37 GiB where vLLM's maintainers logged 1.26 GiB for the same
    model and token budget (vllm#10511) — 2 of 9, above the 15% the issue asks for."""
    errors = {i: abs(p - BY_ID[i]["tokens"]) / BY_ID[i]["tokens"] for i, p in PREDICTED.items()}
    assert statistics.median(errors.values()) <= 0.05
    assert sorted(i for i, e in errors.items() if e > 0.10) == [
        "vllm-v0-a100-40gb-llama3-8b-8k", "vllm-v1-h100x4-qwen3-235b-fp8"]
    assert round(errors["sglang-h100x4-qwen3-235b-fp8"], 4) == 0.0031
    assert round(errors["vllm-v0-h100-phi4-gptq-2k"], 4) == 0.0126


def test_docs_state_each_error_and_the_summary() -> None:
    """docs/serving-engines.md's table gives each log's count and signed error, and the median
    and the share off by more than 10% as computed here."""
    doc = (Path(__file__).parents[2] / "docs" / "serving-engines.md").read_text()
    signed = {i: (p - BY_ID[i]["tokens"]) / BY_ID[i]["tokens"] for i, p in PREDICTED.items()}
    for i, e in signed.items():
        row = f"| {BY_ID[i]['tokens']:,} | {PREDICTED[i]:,}"
        assert row in doc, i
        assert f"{row}{' (refused)' if BY_ID[i].get('refused') else ''} | " \
               f"{'+' if e >= 0 else '−'}{abs(e):.1%} |" in doc, i
    median = statistics.median(abs(e) for e in signed.values())
    over = sum(abs(e) > 0.10 for e in signed.values())
    assert f"Median error {median:.1%} over these {len(signed)}; {over} of {len(signed)} " \
           f"({over / len(signed):.0%}) off by more than 10%" in doc
    assert (round(median, 4), over) == (0.0233, 2)


EXACT = ["vllm-v0-3090-llama31-8b-20k", "vllm-v0-3090-llama31-8b-29k",
         "vllm-v0-a10-llama31-8b-131k", "sglang-h100x4-qwen3-235b-fp8",
         "trtllm-a4000-qwen25-coder-05b-kvmem", "vllm-v1-a5000-qwen3-8b-16k",
         "vllm-v1-5090-qwen36-35b-hybrid-a", "vllm-v1-5090-qwen36-35b-hybrid-b",
         "vllm-v0-a100-40gb-llama3-8b-8k", "vllm-v0-h100-phi4-gptq-2k", "vllm-v1-qwen3-14b-32k-kvmem",
         "trtllm-l20-qwen25-vl-7b-kvmem", "sglang-tp4-qwen3-omni-30b-kvmem",
         "sglang-amd-qwen3-30b-a3b-kvmem"]


@pytest.mark.parametrize("log_id", EXACT)
def test_tokens_from_a_logged_kv_figure_exact_to_its_rounding(cli: Any, log_id: str) -> None:
    """The logged GiB figure is rounded to 0.01 (SGLang's K + V: two such figures): the logged
    token count lies between llmcalc's counts at the rounding's two ends."""
    row = BY_ID[log_id]
    half = 0.01 if row["engine"] == "sglang" else 0.005
    low, high = (json.loads(cli(*_args(row, "--kv-memory",
                                       f"{float(row['kv_gib']) + d:.3f}GiB")).stdout)
                 ["kv_cache_tokens"] for d in (-half, half))
    assert low <= row["tokens"] <= high
    assert high - low <= 0.01 * row["tokens"]


def test_every_log_row_is_held() -> None:
    """Each row of engine_logs.json is predicted, held from its logged figure, or a refusal."""
    held = set(PREDICTED) | set(EXACT) | {"trtllm-a100-llama2-7b-kvmem", "trtllm-a10-llama2-7b-0.5",
                                          "vllm-v0-h100-llama3-8b", "vllm-v0-8gb-qwen25-7b-awq-refused"}
    assert held == set(BY_ID)
    assert len(BY_ID) == 20


def test_vllm_v0_refusal_with_no_cache_left(cli: Any) -> None:
    """vllm#13882: Qwen2.5-7B-AWQ on an 8 GB card at utilization 0.7 leaves no cache (the log:
    weights 5.20 GiB, activation peak 1.42 GiB, KV −1.05 GiB); llmcalc: 5.19 and 1.45 GiB."""
    row = BY_ID["vllm-v0-8gb-qwen25-7b-awq-refused"]
    r = cli(*_args(row))
    assert r.code == 1
    d = json.loads(r.stdout)
    assert (d["kv_cache_tokens"], d["starts"]) == (row["tokens"], False)
    assert (round(d["weights_bytes"] / GiB, 2), round(d["activation_peak_bytes"] / GiB, 2)) == \
        (5.19, 1.45)
    assert d["refusal"] == ("No available memory for the cache blocks. Try increasing "
                            "`gpu_memory_utilization` when initializing the engine.")


def test_engine_cache_dtype_is_wide_for_quantized_weights(cli: Any) -> None:
    """The engines' kv_cache_dtype "auto" is the activation dtype: GPTQ or FP8 weights keep a
    2-byte cache (Phi-4: 40 layers × 10 KV heads × 128 × 2 × 2 = 204,800 bytes a token)."""
    for fmt in ("gptq", "int4", "fp8"):
        r = cli("fit", "phi-4", "--engine", "vllm", "--gpu", "h100", "--dtype", fmt,
                "--max-model-len", "2048", "--json")
        assert json.loads(r.stdout)["kv_bytes_per_token"] == 204800, fmt
    r = cli("fit", "phi-4", "--engine", "vllm", "--gpu", "h100", "--dtype", "fp8", "--kv-dtype",
            "fp8", "--max-model-len", "2048", "--json")
    assert json.loads(r.stdout)["kv_bytes_per_token"] == 102400


def test_vllm_v0_sampler_peak_from_the_logs() -> None:
    """V0 without chunked prefill: ten [256, vocab] float32 tensors, against the logged
    activation peaks (Phi-4 0.94 GiB at 2,048 tokens, Qwen2.5-7B 1.42 GiB at 4,096)."""
    for model, tokens, logged in (("phi-4", 2048, 0.96), ("qwen2.5-7b", 4096, 1.45)):
        b = vllm.plan(spec_for(model, None), accelerator=lookup("h100"), dtype=DType.bf16,
                      kv_dtype=DType.bf16, version="0.6", max_model_len=tokens)
        assert round(b.terms["activation_peak"] / GiB, 2) == logged, model


def test_tokens_from_logged_bytes_exact(cli: Any) -> None:
    row = BY_ID["trtllm-a100-llama2-7b-kvmem"]
    r = cli(*_args(row, "--kv-memory", f"{row['kv_bytes']}B"))
    assert r.code == 0
    assert json.loads(r.stdout)["kv_cache_tokens"] == row["tokens"] == 132608


def test_vllm_v0_refusal_is_the_engines_message(cli: Any) -> None:
    r = cli(*_args(BY_ID["vllm-v0-3090-llama31-8b-29k"])[:-1])
    assert r.code == 1
    assert ("vLLM would refuse to start: The model's max seq len (29000) is larger than the "
            "maximum number of tokens that can be stored in KV cache (25200).") in " ".join(
                r.stdout.split())


def test_vllm_v1_refusal(cli: Any) -> None:
    r = cli("fit", "llama-3.1-8b", "--engine", "vllm", "--gpu", "rtx-3090", "--json")
    assert r.code == 1
    data = json.loads(r.stdout)
    assert data["starts"] is False
    assert data["refusal"].startswith(
        "To serve at least one request with the model's max seq len (131072), (16.00 GiB KV "
        "cache is needed, which is larger than the available KV cache memory (4.82 GiB). Based "
        "on the available memory, the estimated maximum model length is 39472.")


def test_trtllm_before_1_0_takes_the_logged_figure(cli: Any) -> None:
    r = cli(*_args(BY_ID["trtllm-a10-llama2-7b-0.5"]))
    assert r.code == 2
    assert r.stderr.strip() == (
        "error: --engine trtllm==0.5: before 1.0 a built TensorRT engine sizes the runtime's "
        "buffers, which llmcalc does not read; give --kv-memory from its log ('Allocated X GiB "
        "for max tokens in paged KV cache')")


@pytest.mark.parametrize(("args", "message"), [
    (["--headroom", "0.2"],
     "error: --headroom does not go with --engine: the engine's own reserve replaces it"),
    (["--ctx", "8k"], "error: --ctx does not go with --engine: use --max-model-len"),
    (["--mem-fraction-static", "0.9"], "error: --mem-fraction-static: a setting of --engine sglang"),
])
def test_options_refused_with_vllm(cli: Any, args: list[str], message: str) -> None:
    r = cli("fit", "llama-3.1-8b", "--engine", "vllm", "--gpu", "h100", *args)
    assert r.code == 2
    assert r.stderr.strip() == message


def test_engine_setting_without_engine(cli: Any) -> None:
    r = cli("fit", "llama-3.1-8b", "--gpu", "h100", "--gpu-memory-utilization", "0.8")
    assert r.code == 2
    assert r.stderr.strip() == "error: --gpu-memory-utilization: a setting of --engine vllm"


def test_json_keys_and_command(cli: Any) -> None:
    r = cli("fit", "llama-3.1-8b", "--engine", "vllm", "--gpu", "h100", "--max-model-len", "8k",
            "--json")
    assert r.code == 0
    d = json.loads(r.stdout)
    terms = d["weights_bytes"] + d["activation_peak_bytes"] + d["non_torch_bytes"] \
        + d["cuda_graphs_bytes"]
    assert d["usable_bytes"] - terms == d["kv_cache_bytes"]
    assert d["kv_cache_tokens"] == d["kv_cache_bytes"] // (16 * 131072) * 16
    assert d["max_concurrency"] == round(d["kv_cache_tokens"] // 16 / 512, 4)
    assert d["command"] == ("vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 1 "
                            "--gpu-memory-utilization 0.9 --max-model-len 8192 --max-num-seqs "
                            "1024 --max-num-batched-tokens 8192 --block-size 16")


def test_cuda_memory_from_a_cited_log() -> None:
    b = vllm.plan(spec_for("llama-3.1-8b", None), accelerator=lookup("h100"), dtype=DType.bf16,
                  kv_dtype=DType.bf16)
    assert round(b.cuda_memory_bytes / GiB, 2) == 79.22
    assert b.usable_bytes == int(b.cuda_memory_bytes * 9 / 10)


def test_sglang_default_mem_fraction_static() -> None:
    """server_args.py on an H100 at tp 1: reserved 512 + 8192·1.5 + 256·2 + 128 = 13,440 MiB of
    81,121 MiB → 0.834."""
    b = sglang.plan(spec_for("llama-3.1-8b", None), accelerator=lookup("h100"),
                    dtype=DType.bf16, kv_dtype=DType.bf16)
    assert b.settings["mem_fraction_static"] == 0.834
    assert b.settings["chunked_prefill_size"] == 8192
    assert sglang.card_defaults(23 * 1024, 4) == (2048, 80)


@pytest.mark.parametrize("module", [vllm, sglang, trtllm])
def test_budgets_add_up(module: Any) -> None:
    b = module.plan(spec_for("qwen3-30b-a3b", None), accelerator=lookup("h100"),
                    dtype=DType.bf16, kv_dtype=DType.bf16, tp=2)
    assert budget_adds_up(b)
    assert b.kv_cache_tokens % b.block_tokens == 0
    assert b.kv_cache_tokens * b.bytes_per_token <= b.kv_cache_bytes


def test_kv_heads_replicated_past_tp() -> None:
    """Qwen3-30B-A3B has 4 KV heads: at tp 8 each rank still holds one (48 layers × 1 × 256 × 2)."""
    spec = spec_for("qwen3-30b-a3b", None)
    at = {tp: vllm.plan(spec, accelerator=lookup("h100"), dtype=DType.bf16,
                        kv_dtype=DType.bf16, tp=tp).bytes_per_token for tp in (4, 8)}
    assert at == {4: 48 * 256 * 2, 8: 48 * 256 * 2}


def test_hybrid_model_refused(cli: Any) -> None:
    """Mamba-2 hybrids are refused (only gated-delta hybrids follow vLLM's hybrid allocator)."""
    r = cli("fit", "granite-4.0-h-small", "--engine", "vllm", "--gpu", "h100", "--tp", "4")
    assert r.code == 2
    assert "keeps recurrent state beside its KV cache" in r.stderr


def test_vllm_hybrid_layout_from_the_logs(cli: Any) -> None:
    """Qwen3.6-35B-A3B (10 attention layers of 2 fp8 KV heads × 256, 30 gated-delta layers with
    float32 state): the state page is 3 × 8,192 × 2 + 32 × 128 × 128 × 4 = 2,146,304 bytes, the
    attention block 16 × cdiv(2,146,304, 16 × 1,024) = 2,096 tokens; groups of 10 layers, so
    6.01 GiB holds 6.01 GiB // 2,146,304 // 10 = 300 blocks; one 131,072-token request holds
    cdiv(131,072, 2,096) + 3 × 2 = 69 of them: 300 / 69 × 131,072 = 569,878 (club-3090#652)."""
    row = BY_ID["vllm-v1-5090-qwen36-35b-hybrid-a"]
    out = json.loads(cli(*_args(row, "--kv-memory", "6.01GiB")).stdout)
    assert (out["block_tokens"], out["kv_cache_tokens"], out["max_concurrency"]) == \
        (2096, 569878, 4.3478)
    assert "--block-size 16" in out["command"]


def test_vllm_hybrid_table_says_how_tokens_are_counted(cli: Any) -> None:
    row = BY_ID["vllm-v1-5090-qwen36-35b-hybrid-b"]
    r = cli("fit", row["model"], "--engine", row["engine"], "--gpu", row["gpu"], *row["flags"],
            "--kv-memory", "5.98GiB")
    assert r.code == 0
    assert "KV cache tokens (concurrency × max_model_len, blocks of 2096)" in r.stdout
    assert "567,978" in r.stdout
