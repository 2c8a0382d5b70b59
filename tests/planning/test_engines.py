"""fit --engine vllm|sglang|trtllm held to real start-up logs (tests/data/engine_logs.json): the
token count each log shows, the error on each (docs/serving-engines.md states them), the token
count from a logged KV figure exact to its rounding, and the engines' refusals."""

from __future__ import annotations

import json
import statistics
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from llmcalc.cli._common import spec_for
from llmcalc.errors import UsageError
from llmcalc.planning.engines import sglang, trtllm, vllm
from llmcalc.planning.engines.budget import budget_adds_up
from llmcalc.planning.hardware import GiB, lookup
from llmcalc.units import DType

LOGS = json.loads((Path(__file__).parents[1] / "data" / "engine_logs.json").read_text())["logs"]
BY_ID = {row["id"]: row for row in LOGS}

# llmcalc's token count for each log, and its error against the logged count (docs table)
PREDICTED = {
    "vllm-v0-3090-llama31-8b-20k": 32384,
    "vllm-v0-3090-llama31-8b-29k": 24800,
    "vllm-v0-a10-llama31-8b-131k": 36400,
    "vllm-v0-4090x2-qwen14b-131k": 81536,
    "vllm-v1-a5000-qwen3-8b-16k": 45344,
    "vllm-v1-h100x4-qwen3-235b-fp8": 229456,
    "sglang-h100x4-qwen3-235b-fp8": 363469,
    "sglang-l4x4-qwq-32b": 47982,
    "sglang-h100-llama31-8b-docs": 443823,
    "vllm-v0-a100-40gb-llama3-8b-8k": 156624,
    "vllm-v0-h100-phi4-gptq-2k": 11296,
    "vllm-v1-h100-codellama-7b": 126432,
    "vllm-v1-h100-deepseek-v2-lite": 1524528,
    "vllm-v1-h100-llama33-70b-fp8-tp2": 244624,
    "vllm-v1-h100-llama33-70b-fp8-tp4": 711072,
    "vllm-v1-h100-qwen25-7b-fp8": 1208608,
    "vllm-v1-h100-gemma2-2b": 667504,
    "vllm-v1-h100-gemma2-9b": 168080,
    "vllm-v1-h100-gemma3-4b": 471632,
    "vllm-v1-h100-gemma3-12b": 131824,
    "vllm-v1-h100-gemma3-27b": 37216,
    "vllm-v1-h100-gemma-7b": 129120,
    "vllm-v1-h100-granite31-2b": 911088,
    "vllm-v1-h100-granite31-8b": 386576,
    "vllm-v1-h100-llama31-8b-kvfp8": 951344,
    "vllm-v1-h100-llama31-8b-bf16": 475664,
    "vllm-v1-h100-llama31-8b-qfp8": 528880,
    "vllm-v1-h100-llama31-8b-fp16": 475664,
    "vllm-v1-h100-llama31-8b-fp32": 176560,
    "vllm-v1-h100-llama31-8b-2k": 475664,
    "vllm-v1-h100-llama31-8b-4k": 475664,
    "vllm-v1-h100-llama31-8b-8k": 475664,
    "vllm-v1-h100-llama31-8b-tp2": 1043568,
    "vllm-v1-h100-llama31-8b-tp4": 2209680,
    "vllm-v1-h100-llama31-8b-16k": 475664,
    "vllm-v1-h100-llama31-8b-32k": 475664,
    "vllm-v1-h100-llama4-scout-tp4": 425040,
    "vllm-v1-h100-phi2-2k": 226160,
    "vllm-v1-h100-phi4": 241920,
    "vllm-v1-h100-mistral-small31-24b": 193360,
    "vllm-v1-h100-mixtral-8x7b-tp2": 471712,
    "vllm-v1-h100-kimi-dev-72b-tp2": 20288,
    "vllm-v1-h100-kimi-dev-72b-tp4": 484352,
    "vllm-v1-h100-gpt-oss-20b-tp2": 2608080,
    "vllm-v1-h100-qwen15-moe-a27b": 251200,
    "vllm-v1-h100-qwen25-7b-kvfp8": 2189824,
    "vllm-v1-h100-qwen25-72b-tp2": 20288,
    "vllm-v1-h100-qwen25-7b-bf16": 1094912,
    "vllm-v1-h100-qwen25-7b-16k": 1094912,
    "vllm-v1-h100-qwen25-7b-32k": 1094912,
    "vllm-v1-h100-qwen25-7b-2k": 1094912,
    "vllm-v1-h100-qwen25-7b-4k": 1094912,
    "vllm-v1-h100-qwen25-7b-8k": 1094912,
    "vllm-v1-h100-qwen25-7b-tp2": 2386160,
    "vllm-v1-h100-qwen25-7b-tp4": 5037936,
    "vllm-v1-h100-qwen3-30b-a3b": 172480,
    "vllm-v1-h100-qwen3-8b": 418000,
    "vllm-v1-h100-llama33-70b-w8a8-tp2": 244624,
    "vllm-v1-h100-llama31-8b-w4a16": 554464,
    "vllm-v1-h100-mistral-small31-24b-w8a8": 331632,
    "vllm-v1-h100-mistral-small31-24b-w8a8-tp2": 785664,
    "vllm-v1-h100-llama31-8b-w8a8": 528880,
    "vllm-v1-h100-qwen25-7b-w8a8": 1208608,
    "sglang-b200-qwen25-vl-7b": 2246843,
    "trtllm-a100-llama2-7b-kvmem": 131904,
    "trtllm-a4000-qwen25-coder-05b-kvmem": 395264,
    "trtllm-a10-llama2-7b-0.5": 8586,
    "trtllm-5090-llama31-8b-fp8-0.19": 264064,
    "trtllm-h100nvl-llava15-7b-tp2": 313408,
    "trtllm-h100-qwen3-06b-1.2": 633312,
    "trtllm-4070s-smollm2-135m-1.2": 431072,
    "trtllm-4070s-smollm2-135m-1.2-f025": 119744,
    # a held-out set gathered after the rules above (docs/serving-engines.md, "Held out")
    "vllm-v1-a100x4-gpt-oss-120b-ray": 2658960,
    "vllm-v1-a100-40gb-tp2-qwen2-7b-ray": 396640,
    "sglang-4090x4-qwen3-14b-0.80": 299551,
    "sglang-3090-r1-distill-qwen-7b-0.88": 112594,
    "vllm-v1-4080-qwen25-7b-awq-32k": 140912,
    "vllm-v1-dgx-spark-mistral-7b-gptq": 890784,
    "vllm-v1-l40s-tp8-qwen3-235b-fp8": 240000,
    "vllm-v0-t4-qwen25-15b-32k": 86976,
    # vllm37: logs from other sources, versions and cards
    "vllm-v1-h100-gpt-oss-20b-llmd": 1110144,
    "vllm-v1-h100-gpt-oss-120b-llmd": 41728,
    "vllm-v1-h100-llama33-70b-fp8-tp2-llmd": 209920,
    "vllm-v1-h100-llama31-8b-llmd": 420608,
    "vllm-v1-h100-qwen3-06b-16k-llmd": 602240,
    "vllm-v1-h100-qwen3-06b-32k-llmd": 602240,
    "vllm-v1-h100-qwen3-32b-llmd": 18048,
    "vllm-v1-h100-qwen3-32b-tp2-llmd": 282624,
    "vllm-v1-h100-mistral-small32-vlm-llmd": 174848,
    "vllm-v0-t4-llama32-3b": 56384,
    "vllm-v0-4070laptop-llama32-3b-q8": 23152,
    "vllm-v0-l40s-tp2-qwen25-32b": 63184,
    "vllm-v1-l40s-tp4-qwen3-coder-30b": 1056016,
    "vllm-v1-a100-gpt-oss-20b-131k": 822256,
    "vllm-v1-4090-qwen25-05b-vllama": 803920,
    "vllm-v1-4090-qwen25-15b-vllama": 271312,
    "vllm-v1-4090-qwen25-7b-vllama": 87616,
    "vllm-v1-4090-mistral-7b-v03-vllama": 47008,
    "vllm-v0-3090-qwen15-7b-gptq-refused": 26096,
    "vllm-v1-a100-qwen2-7b-util025": 74256,
    "vllm-v1-a100-qwen2-7b-util05": 444960,
    "vllm-v1-a100-tp2-qwen2-7b-util05": 1139824,
    "vllm-v1-l4-gemma4-e2b-8k": 1119080,
    "vllm-v1-t4-gemma4-e2b-w4a16-16k": 657351,
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
    """Median error at most 5%; at most 15% of the logs off by more than 10%. The seven that are,
    each for a term its log shows and llmcalc cannot know: the vLLM run with the LMCache
    connector's buffers, the A100 run whose profile peaked at 9.37 GiB where vLLM's maintainers
    logged 1.26 GiB for the same model and token budget (vllm#10511), Llama 4 Scout at tp 4,
    whose ranks hold 53.12 GiB of weights where an even split of the checkpoint is 50.59;
    TensorRT-LLM 0.5's A10 engine, whose execution context (its activation memory, fixed at build
    and not logged) llmcalc puts at 4.32 GiB where the logged count leaves about 3.2;
    gpt-oss-120b, whose mxfp4 weights vLLM loads at 64.38 GiB where the checkpoint is 60.77 (and
    whose logged terms do not add up to its logged KV figure); and Qwen2-7B at utilization 0.25
    on an A100 with FlashInfer's sampler installed and in use ("Using FlashInfer for top-p & top-k
    sampling"), whose profile peaks at about 8 bytes a [256, vocab] element, not the 38.5 of
    vLLM 0.10's own sampler that llmcalc takes: 1 GiB of a 5 GiB cache; and Gemma 4 E2B W4A16 on a
    T4, whose checkpoint loads 8.02 GiB (logged) where llmcalc's W4A16 text model holds 6.04 (its
    cache layout is exact: test_gemma4_mixed_page_sizes)."""
    errors = {i: abs(p - BY_ID[i]["tokens"]) / BY_ID[i]["tokens"] for i, p in PREDICTED.items()}
    assert statistics.median(errors.values()) <= 0.05
    over = sorted(i for i, e in errors.items() if e > 0.10)
    assert over == ["trtllm-a10-llama2-7b-0.5", "vllm-v0-a100-40gb-llama3-8b-8k",
                    "vllm-v1-a100-qwen2-7b-util025", "vllm-v1-h100-gpt-oss-120b-llmd",
                    "vllm-v1-h100-llama4-scout-tp4", "vllm-v1-h100x4-qwen3-235b-fp8",
                    "vllm-v1-t4-gemma4-e2b-w4a16-16k"]
    assert len(over) / len(errors) <= 0.15
    assert round(errors["sglang-h100x4-qwen3-235b-fp8"], 4) == 0.0107
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
    assert (round(median, 4), over) == (0.0059, 7)


EXACT = [
    "vllm-v0-3090-llama31-8b-20k",
    "vllm-v0-3090-llama31-8b-29k",
    "vllm-v0-a10-llama31-8b-131k",
    "vllm-v1-a5000-qwen3-8b-16k",
    "vllm-v1-5090-qwen36-35b-hybrid-a",
    "vllm-v1-5090-qwen36-35b-hybrid-b",
    "sglang-h100x4-qwen3-235b-fp8",
    "sglang-l4x4-qwq-32b",
    "sglang-h100-llama31-8b-docs",
    "vllm-v0-a100-40gb-llama3-8b-8k",
    "vllm-v0-h100-phi4-gptq-2k",
    "vllm-v1-qwen3-14b-32k-kvmem",
    "trtllm-l20-qwen25-vl-7b-kvmem",
    "sglang-tp4-qwen3-omni-30b-kvmem",
    "sglang-amd-qwen3-30b-a3b-kvmem",
    "trtllm-a4000-qwen25-coder-05b-kvmem",
    "vllm-v1-h100-codellama-7b",
    "vllm-v1-h100-deepseek-v2-lite",
    "vllm-v1-h100-llama33-70b-fp8-tp2",
    "vllm-v1-h100-llama33-70b-fp8-tp4",
    "vllm-v1-h100-qwen25-7b-fp8",
    "vllm-v1-h100-gemma2-2b",
    "vllm-v1-h100-gemma2-9b",
    "vllm-v1-h100-gemma3-4b",
    "vllm-v1-h100-gemma3-12b",
    "vllm-v1-h100-gemma3-27b",
    "vllm-v1-h100-gemma-7b",
    "vllm-v1-h100-granite31-2b",
    "vllm-v1-h100-granite31-8b",
    "vllm-v1-h100-llama31-8b-kvfp8",
    "vllm-v1-h100-llama31-8b-bf16",
    "vllm-v1-h100-llama31-8b-qfp8",
    "vllm-v1-h100-llama31-8b-fp16",
    "vllm-v1-h100-llama31-8b-fp32",
    "vllm-v1-h100-llama31-8b-2k",
    "vllm-v1-h100-llama31-8b-4k",
    "vllm-v1-h100-llama31-8b-8k",
    "vllm-v1-h100-llama31-8b-tp2",
    "vllm-v1-h100-llama31-8b-tp4",
    "vllm-v1-h100-llama31-8b-16k",
    "vllm-v1-h100-llama31-8b-32k",
    "vllm-v1-h100-llama4-scout-tp4",
    "vllm-v1-h100-phi2-2k",
    "vllm-v1-h100-phi4",
    "vllm-v1-h100-mistral-small31-24b",
    "vllm-v1-h100-mixtral-8x7b-tp2",
    "vllm-v1-h100-kimi-dev-72b-tp2",
    "vllm-v1-h100-kimi-dev-72b-tp4",
    "vllm-v1-h100-gpt-oss-20b-tp2",
    "vllm-v1-h100-qwen15-moe-a27b",
    "vllm-v1-h100-qwen25-7b-kvfp8",
    "vllm-v1-h100-qwen25-72b-tp2",
    "vllm-v1-h100-qwen25-7b-bf16",
    "vllm-v1-h100-qwen25-7b-16k",
    "vllm-v1-h100-qwen25-7b-32k",
    "vllm-v1-h100-qwen25-7b-2k",
    "vllm-v1-h100-qwen25-7b-4k",
    "vllm-v1-h100-qwen25-7b-8k",
    "vllm-v1-h100-qwen25-7b-tp2",
    "vllm-v1-h100-qwen25-7b-tp4",
    "vllm-v1-h100-qwen3-30b-a3b",
    "vllm-v1-h100-qwen3-8b",
    "vllm-v1-h100-llama33-70b-w8a8-tp2",
    "vllm-v1-h100-llama31-8b-w4a16",
    "vllm-v1-h100-mistral-small31-24b-w8a8",
    "vllm-v1-h100-mistral-small31-24b-w8a8-tp2",
    "vllm-v1-h100-llama31-8b-w8a8",
    "vllm-v1-h100-qwen25-7b-w8a8",
    "sglang-musa-qwen3-30b-a3b-tp2-kvmem",
    "sglang-b200-qwen25-vl-7b",
    "sglang-h200-dp4-qwen3-30b-a3b-kvmem",
    "sglang-48gb-qwen3-14b-kvmem",
    "trtllm-5090-llama31-8b-fp8-0.19",
    "trtllm-h100nvl-llava15-7b-tp2",
    "trtllm-h100-qwen3-06b-1.2",
    "trtllm-4070s-smollm2-135m-1.2",
    "trtllm-4070s-smollm2-135m-1.2-f025",
    "vllm-v1-a100x4-gpt-oss-120b-ray",
    "vllm-v1-a100-40gb-tp2-qwen2-7b-ray",
    "sglang-4090x4-qwen3-14b-0.80",
    "sglang-3090-r1-distill-qwen-7b-0.88",
    "vllm-v1-4080-qwen25-7b-awq-32k",
    "vllm-v1-dgx-spark-mistral-7b-gptq",
    "vllm-v0-t4-qwen25-15b-32k",
    "vllm-v1-h100-mistral-small32-vlm-llmd",
    "vllm-v0-t4-llama32-3b",
    "vllm-v0-4070laptop-llama32-3b-q8",
    "vllm-v0-l40s-tp2-qwen25-32b",
    "vllm-v1-l40s-tp4-qwen3-coder-30b",
    "vllm-v1-a100-qwen2-7b-util025",
    "vllm-v1-a100-qwen2-7b-util05",
    "vllm-v1-a100-tp2-qwen2-7b-util05",
    "vllm-v1-l4-gemma4-e2b-8k",
    "vllm-v1-t4-gemma4-e2b-w4a16-16k",
]


@pytest.mark.parametrize("log_id", EXACT)
def test_tokens_from_a_logged_kv_figure_exact_to_its_rounding(cli: Any, log_id: str) -> None:
    """The logged GiB figure is rounded to 0.01 (SGLang's K + V: two such figures): the logged
    token count lies between llmcalc's counts at the rounding's two ends."""
    row = BY_ID[log_id]
    half = 0.01 if row["engine"].split("==")[0] == "sglang" else 0.005
    low, high = (json.loads(cli(*_args(row, "--kv-memory",
                                       f"{float(row['kv_gib']) + d:.3f}GiB")).stdout)
                 ["kv_cache_tokens"] for d in (-half, half))
    assert low <= row["tokens"] <= high
    assert high - low <= 0.01 * row["tokens"]


def test_every_log_row_is_held() -> None:
    """Each row of engine_logs.json is predicted, held from its logged figure, or a refusal."""
    held = set(PREDICTED) | set(EXACT) | {"vllm-v0-h100-llama3-8b",
                                          "vllm-v0-8gb-qwen25-7b-awq-refused"}
    # the llama.cpp rows: tests/engines/test_llama_cpp_logs.py
    held |= {i for i, row in BY_ID.items() if row["engine"].startswith("llama.cpp")}
    assert held == set(BY_ID)
    assert len(BY_ID) == 132


def test_gemma4_mixed_page_sizes() -> None:
    """vLLM's unify_kv_cache_spec_page_size on Gemma 4 E2B: 12 sliding layers 256 wide, 3 global
    ones 512 wide (the 20 KV-shared layers hold none) form 4 + 1 groups of 3 layers sharing the
    global layers' 32 KiB page, the sliding blocks 32 tokens. One request at 8,192 tokens holds
    512 global blocks and 4 × (cdiv(511 + 2,048, 32) + 1) sliding ones: 836 (vLLM 0.21), the
    count the L4 log's 9.92 GiB, 1,062,157 tokens and 129.66x fix; at 16,384 tokens on 0.29,
    with two batches in flight, 1,024 + 4 × (cdiv(511 + 4,096, 32) + 1) = 1,604 (the T4 log's
    4.66 GiB, 519,681 tokens and 31.72x)."""
    spec = spec_for("gemma-4-e2b", None)
    assert vllm.window_layout(spec, tp=1, model_len=8192, batched=2048, block=16,
                              ver=(0, 21)) == (3, 836, 15, Fraction(1024, 12 * 512 + 3 * 1024))
    assert vllm.window_layout(spec, tp=1, model_len=16384, batched=2048, block=16,
                              ver=(0, 29))[:3] == (3, 1604, 15)
    # the logs' own figures: 108,394 blocks of 3 × 32 KiB (9.92 GiB) over 836, and 50,877 over
    # 1,604, give the logged counts
    assert (int(108394 / 836 * 8192), int(50877 / 1604 * 16384)) == (1062157, 519681)


def test_gemma4_before_mixed_pages_refused(cli: Any) -> None:
    """Before vLLM 0.11 the hybrid allocator took one page size: Gemma 4's mix is refused."""
    r = cli("fit", "gemma-4-e2b", "--engine", "vllm==0.10", "--gpu", "l4")
    assert (r.code, r.stdout) == (2, "")
    assert r.stderr == ("error: --engine vllm==0.10: google/gemma-4-E2B-it (text model) mixes "
                        "attention layers of different cache widths, whose pages vLLM's hybrid "
                        "allocator before 0.11 does not unify; use --engine vllm==0.11 or later\n")


def test_mixed_page_sizes_that_do_not_divide_refused(cli: Any) -> None:
    """unify_kv_cache_spec_page_size raises NotImplementedError where the largest page is not a
    multiple of a smaller one: global layers 384 wide (768 with K and V) beside sliding ones 512."""
    r = cli("fit", "gemma-4-e2b", "--set", "global_head_dim=384", "--engine", "vllm", "--gpu", "l4")
    assert (r.code, r.stdout) == (2, "")
    assert r.stderr == ("error: --engine vllm: google/gemma-4-E2B-it (text model): The page size "
                        "of the layer is not divisible by the maximum page size. Cannot unify by "
                        "adjusting block_size. (vLLM's unify_kv_cache_spec_page_size refuses its "
                        "mix of cache widths 512, 768)\n")


def test_one_attention_type_of_mixed_widths(cli: Any) -> None:
    """UniformTypeKVCacheSpecs: all 35 layers full attention, layer 0 with 2 KV heads, the other
    14 cached ones 1 (the last 20 share KV): one group whose block costs the sum of the 15
    layers' pages, 16 × 16,384 bytes: 9.92 GiB // 262,144 = 40,632 blocks, 650,112 tokens (the
    average page, 16 × (16,384 // 35), would give 650,272)."""
    r = cli("fit", "gemma-4-e2b", "--set", "layer_types=" + json.dumps(["full_attention"] * 35),
            "--set", 'per_layer_config={"0": {"num_key_value_heads": 2}}', "--engine", "vllm",
            "--gpu", "l4", "--max-model-len", "8192", "--kv-memory", "9.92GiB", "--json")
    d = json.loads(r.stdout)
    assert (d["kv_bytes_per_token"], d["kv_cache_tokens"]) == (16384, 650112)
    assert int(Fraction("9.92") * GiB) // (16 * 16384) * 16 == 650112


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
            "maximum number of tokens that can be stored in KV cache (24800).") in " ".join(
                r.stdout.split())


def test_vllm_v1_refusal(cli: Any) -> None:
    r = cli("fit", "llama-3.1-8b", "--engine", "vllm", "--gpu", "rtx-3090", "--json")
    assert r.code == 1
    data = json.loads(r.stdout)
    assert data["starts"] is False
    assert data["refusal"].startswith(
        "To serve at least one request with the model's max seq len (131072), (16.00 GiB KV "
        "cache is needed, which is larger than the available KV cache memory (4.77 GiB). Based "
        "on the available memory, the estimated maximum model length is 39072.")


def test_trtllm_before_1_0_the_built_engines_runtime(cli: Any) -> None:
    """TensorRT-LLM#1188 (0.14, Qwen2.5-0.5B int8 on an RTX A4000, trtllm-build's defaults): the
    log's breakdown, engine 875 MiB (0.85 GiB), execution context 773.51 MiB (0.76 GiB), runtime
    buffers 2.66 GB, decoder 5.76 GB, against llmcalc's terms; the cache is 0.9 of what is left, in
    64-token blocks; the command line builds the engine with these settings."""
    d = json.loads(cli(*_args(BY_ID["trtllm-a4000-qwen25-coder-05b-kvmem"])).stdout)
    terms = ("context", "weights", "execution_context", "runtime_buffers", "decoder", "kept_free")
    assert {t: round(d[f"{t}_bytes"] / GiB, 2) for t in terms} == {
        "context": 0.75, "weights": 0.84, "execution_context": 0.84, "runtime_buffers": 2.57,
        "decoder": 5.81, "kept_free": 0.5}
    assert d["cuda_memory_bytes"] - sum(d[f"{t}_bytes"] for t in terms) == d["kv_cache_bytes"]
    assert (d["block_tokens"], d["kv_cache_tokens"]) == (64, 395264)
    assert d["command"] == ("trtllm-build --checkpoint_dir CKPT --output_dir ENGINE "
                            "--max_batch_size 2048 --max_num_tokens 8192 --max_seq_len 32768 "
                            "--tokens_per_block 64 && trtllm-serve ENGINE --tp_size 1 "
                            "--kv_cache_free_gpu_memory_fraction 0.9")


def test_trtllm_0_5_logged_tokens_unrounded(cli: Any) -> None:
    """TensorRT-LLM#224: 0.5 logged fraction × free / bytes a token ("Using 10718 tokens", not a
    multiple of its 16-token blocks); from the logged count's own memory (10,718 × 524,288 bytes)
    llmcalc gives it back."""
    row = BY_ID["trtllm-a10-llama2-7b-0.5"]
    r = cli(*_args(row, "--kv-memory", f"{10718 * 524288}B"))
    assert json.loads(r.stdout)["kv_cache_tokens"] == 10718
    r = cli(*_args(row)[:-1])
    assert "KV cache tokens (fraction × free / bytes a token, unrounded)" in r.stdout
    assert "8,586" in r.stdout


def test_trtllm_versions_pick_the_runtime() -> None:
    """Before 1.0 the C++ runtime over a built engine (its buffers sized by max_batch_size), from
    1.0 the PyTorch backend (a warm-up peak): Llama-3.1-8B on an H100 at the defaults."""
    spec = spec_for("llama-3.1-8b", None)
    at = {v: trtllm.plan(spec, accelerator=lookup("h100"), dtype=DType.bf16, kv_dtype=DType.bf16,
                         version=v) for v in ("0.14", "0.19", "1.0", "1.2")}
    assert {v: sorted(b.terms) for v, b in at.items()} == {
        "0.14": ["context", "decoder", "execution_context", "kept_free", "runtime_buffers",
                 "weights"],
        "0.19": ["context", "decoder", "execution_context", "kept_free", "runtime_buffers",
                 "weights"],
        "1.0": ["activation_peak", "context", "kept_free", "weights"],
        "1.2": ["activation_peak", "context", "kept_free", "weights"]}
    assert {v: b.block_tokens for v, b in at.items()} == {"0.14": 64, "0.19": 32, "1.0": 32,
                                                          "1.2": 32}
    assert at["1.0"].kv_cache_tokens == at["1.2"].kv_cache_tokens
    assert all(budget_adds_up(b) for b in at.values())


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
    assert round(b.cuda_memory_bytes / GiB, 2) == 79.19
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


def test_mamba_hybrid_on_v0_holds_max_num_seqs_states(cli: Any) -> None:
    """Before 0.10.2 vLLM ran Mamba hybrids on V0: MambaCacheManager holds 256 sequences' states
    (Jamba-v0.1 at tp 2: 28 Mamba layers × (3 × 4,096 × 2 + 4,096 × 16 × 2) bytes) before the KV
    cache, whose blocks hold the 4 attention layers only (4 × 4 KV heads × 256 × 2 bytes)."""
    out = json.loads(cli("fit", "jamba-v0.1", "--engine", "vllm==0.8", "--gpu", "h100", "--tp",
                         "2", "--max-model-len", "32768", "--json").stdout)
    assert out["mamba_cache_bytes"] == 256 * 28 * (3 * 4096 * 2 + 4096 * 16 * 2)
    assert out["kv_bytes_per_token"] == 4 * 4 * 256 * 2
    assert out["kv_cache_tokens"] == out["kv_cache_bytes"] // (16 * 8192) * 16


def test_pure_ssm_before_v1_support_refused(cli: Any) -> None:
    r = cli("fit", "falcon-mamba-7b", "--engine", "vllm==0.9", "--gpu", "h100")
    assert r.code == 2
    assert r.stderr.strip() == (
        "error: --engine vllm==0.9: tiiuae/falcon-mamba-7b keeps mamba state with no attention "
        "layers, which vLLM before 0.10.2 runs on V0 with no KV blocks to count, not followed; "
        "use --engine vllm==0.10.2 or later")


def test_unfollowed_recurrent_state_refused(cli: Any) -> None:
    """Recurrent layers other than Mamba/Mamba-2/short-conv/gated-delta/linear attention."""
    r = cli("fit", "rwkv-4-169m-pile", "--engine", "vllm", "--gpu", "h100")
    assert r.code == 2
    assert r.stderr.strip().endswith(
        "--engine vllm: RWKV/rwkv-4-169m-pile keeps rwkv state, whose pages in vLLM's hybrid allocator "
        "llmcalc does not follow (it follows Mamba, Mamba-2, short-conv, gated-delta and "
        "linear-attention layers)")


@pytest.mark.parametrize(("model", "kv_dtype", "block", "state"), [
    # vllm-gaudi#1453 and a vLLM 0.11.1 ROCm log (granite-4.0-h-small): "Setting attention block
    # size to 528 tokens", "Padding mamba page size by 0.69%": 3 × 8,448 × 2 + 128 × 64 × 128 × 2
    ("granite-4.0-h-small", "bf16", 528, 2_147_840),
    # (the two logs below were found through the code index, which did not name their
    # repositories: id 51961570119, a Nemotron-Cascade-2 Docker log; id 64285867313, MetaX C500
    # notes) Nemotron-Cascade-2-30B-A3B (Nemotron-3-Nano-30B's shape) on vLLM 0.19, fp8 KV: "4176
    # tokens", "0.19%": 3 × 6,144 × 2 + 64 × 64 × 128 × 4 (float32 ssm state, the config's)
    ("nemotron-3-nano-30b-a3b", "fp8", 4176, 2_134_016),
    # LFM2.5-1.2B on vLLM 0.17: "16 tokens", "Padding mamba page size by 300.00%": 2 × 2,048 × 2
    ("lfm2-1.2b", "fp16", 16, 8_192),
])
def test_vllm_state_page_and_block_from_the_logs(model: str, kv_dtype: str, block: int,
                                                 state: int) -> None:
    spec = spec_for(model, None)
    m = next(g.mixer for g in spec.layer_groups if g.mixer is not None)
    assert vllm.state_page(spec, m, tp=1, act_bytes=2) == state
    b = vllm.plan(spec, accelerator=lookup("h100"), dtype=DType.bf16, kv_dtype=DType(kv_dtype),
                  max_model_len=8192, kv_memory=8 * GiB)
    assert b.block_tokens == block


def test_mamba2_groups_replicated_past_tp() -> None:
    """Mamba-2's single B/C group is replicated on each of 4 ranks (extra_groups_for_head_shards):
    granite-4.0-h-small's conv state is 3 × (8,192 + 2 × 4 × 128)/4 × 2 bytes at tp 4."""
    spec = spec_for("granite-4.0-h-small", None)
    m = next(g.mixer for g in spec.layer_groups if g.mixer is not None)
    assert vllm.state_page(spec, m, tp=4, act_bytes=2) == 3 * 2304 * 2 + 32 * 64 * 128 * 2


def test_vllm_lfm2_tokens_and_concurrency_from_one_block_count(cli: Any) -> None:
    """LFM2.5-1.2B on vLLM 0.17 (6 attention + 10 short-conv layers: groups of 6, "Add 2 padding
    layers"; 3 groups): 40,738 blocks give the logged 40,738 // 3 × 16 = 217,264 tokens and
    40,738 / (128 + 2 × 1) = 313.37x at 2,048 tokens — one state page a request (prefix caching
    off), the token count by 0.17's rule."""
    out = json.loads(cli("fit", "lfm2-1.2b", "--engine", "vllm==0.17", "--gpu-mem", "15.625GiB",
                         "--dtype", "fp16", "--max-model-len", "2048", "--json", "--kv-memory",
                         str(40738 * 6 * 32768)).stdout)
    assert (out["block_tokens"], out["kv_cache_tokens"], round(out["max_concurrency"], 2)) == \
        (16, 217264, 313.37)


def test_vllm_granite_4_h_1b_from_its_logged_kv_figure(cli: Any) -> None:
    """granite-4.0-h-1b on vLLM 0.19.0 (a public start-up log found through the code index, id
    62458215816; --max-model-len 4096, prefix caching off): "Setting attention block size to 400
    tokens", "Padding mamba page size by 1.59%", "Available KV cache memory: 4.09 GiB", "GPU KV
    cache size: 53,200 tokens", "Maximum concurrency for 4,096 tokens per request: 66.95x". Its
    shape is granite-4.0-h-small's layer pattern (4 attention, 36 Mamba-2 layers) with d 1536, 4
    KV heads of 128 and 48 Mamba heads of 64, which the logged block and padding pin: state
    3 × 3,328 × 2 + 48 × 64 × 128 × 2 = 806,400 bytes, 16 × cdiv(806,400, 16 × 2,048) = 400.
    Groups of 4 (1 attention, 9 Mamba): one request holds 11 + 9 = 20 blocks; 1,339 blocks give
    66.95x and, by 0.19's rule, 1,339 // 10 × 400 = 53,200 tokens — within the figure's rounding."""
    sizes = ["--set", "hidden_size=1536", "--set", "num_attention_heads=12", "--set",
             "num_key_value_heads=4", "--set", "mamba_n_heads=48"]
    low, high = (json.loads(cli("fit", "granite-4.0-h-small", *sizes, "--engine", "vllm==0.19",
                                "--gpu", "h100", "--max-model-len", "4096", "--kv-memory",
                                f"{kv}GiB", "--json").stdout) for kv in ("4.085", "4.095"))
    assert low["block_tokens"] == 400
    assert low["kv_cache_tokens"] <= 53200 <= high["kv_cache_tokens"]
    assert low["max_concurrency"] <= 66.95 <= high["max_concurrency"]


def test_vllm_mamba_prefix_caching_modes(cli: Any) -> None:
    """With --enable-prefix-caching granite-4.0-h-small (Mamba-2, chunk 256) takes
    mamba_cache_mode "all": its block becomes 256 × cdiv(cdiv(2,147,840, 4,096), 256) = 768
    tokens, not 528 (vllm-gaudi#1453: "528 ... without prefix caching, 768 with prefix caching
    (chunk-aligned)"), and a 32,768-token request holds cdiv(32,768, 768) = 43 pages in each of
    its 1 attention and 9 Mamba groups; "align" keeps 528 and 2 state pages a Mamba group."""
    def run(*flags: str) -> Any:
        return json.loads(cli("fit", "granite-4.0-h-small", "--engine", "vllm", "--gpu", "h100",
                              "--max-model-len", "32768", "--kv-memory", "20GiB", *flags,
                              "--json").stdout)
    blocks = 20 * GiB // (768 * 4096) // 4
    on = run("--enable-prefix-caching")
    assert (on["block_tokens"], on["max_concurrency"]) == (768, round(blocks / 430, 4))
    assert "--enable-prefix-caching" in on["command"]
    align = run("--enable-prefix-caching", "--mamba-cache-mode", "align")
    assert (align["block_tokens"], align["max_concurrency"]) == \
        (528, round(20 * GiB // (528 * 4096) // 4 / (63 + 9 * 2), 4))
    off = run("--mamba-cache-mode", "all")  # without prefix caching vLLM sets "none"
    assert (off["block_tokens"], off["max_concurrency"]) == \
        (528, round(20 * GiB // (528 * 4096) // 4 / (63 + 9), 4))


def test_vllm_mamba_ssm_cache_dtype(cli: Any) -> None:
    """--mamba-ssm-cache-dtype float32 doubles granite-4.0-h-small's temporal state: 3 × 8,448 × 2
    + 128 × 64 × 128 × 4 = 4,244,992 bytes, a block of 16 × cdiv(4,244,992, 16 × 4,096) = 1,040."""
    out = json.loads(cli("fit", "granite-4.0-h-small", "--engine", "vllm", "--gpu", "h100",
                         "--mamba-ssm-cache-dtype", "float32", "--json").stdout)
    assert out["block_tokens"] == 1040
    assert out["command"].endswith("--mamba-ssm-cache-dtype float32")


def test_vllm_mamba_settings_refused_in_one_line(cli: Any) -> None:
    r = cli("fit", "granite-4.0-h-small", "--engine", "vllm", "--gpu", "h100",
            "--mamba-ssm-cache-dtype", "fp32")
    assert (r.code, r.stderr.strip()) == (2, "error: --mamba-ssm-cache-dtype fp32: expected "
                                             "auto, float32, float16 or bfloat16")
    r = cli("fit", "granite-4.0-h-small", "--gpu", "h100", "--enable-prefix-caching")
    assert (r.code, r.stderr.strip()) == (2, "error: --enable-prefix-caching: a setting of "
                                             "--engine vllm")


def test_pure_ssm_state_per_request(cli: Any) -> None:
    """falcon-mamba-7b (64 Mamba layers, no attention): one group of all 64 layers, a state page
    of 3 × 8,192 × 2 + 8,192 × 16 × 2 = 311,296 bytes, one page a request: 10 GiB hold
    10 GiB // 311,296 // 64 = 538 requests, logged as 538 × max_model_len tokens."""
    out = json.loads(cli("fit", "falcon-mamba-7b", "--engine", "vllm", "--gpu", "h100",
                         "--max-model-len", "8192", "--kv-memory", "10GiB", "--json").stdout)
    assert (out["block_tokens"], out["kv_cache_tokens"], out["max_concurrency"]) == \
        (8192, 538 * 8192, 538.0)


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


def test_vllm_window_groups_from_the_logs() -> None:
    """Gemma 3 27B (52 sliding-window + 10 full layers of 16 KV heads × 128): groups of 10 — six
    sliding groups (8 padding slots) and one full —, so 19.53 GiB holds 19.53 GiB // (16 × 8,192
    bytes) // 10 = 15,998 blocks; a 8,192-token request holds 512 blocks in the full group and
    513 in each of the 6 sliding ones (the window's 1,023 + 8,192 batched tokens cover the whole
    length, and SlidingWindowSpec.max_memory_usage_bytes adds one block as the window may start
    mid-block): 15,998 / 3,590 = 4.46x; before 0.20 the log counts 15,998 // 7 groups × 16 =
    36,560 tokens, as vLLM logged (llm-d-planner's vLLM 0.19 sweep). The extra block shows in
    Gemma 3 4B's log of the same sweep: 57.05x, 204,815–204,848 blocks over 6 × 513 + 512 =
    3,590 (over 7 × 512 it would be 57.15x)."""
    spec = spec_for("gemma-3-27b", None)
    assert vllm.window_layout(spec, tp=1, model_len=8192, batched=8192, block=16) == \
        (10, 3590, 70, Fraction(1, 62))
    assert [round(b / 3590, 2) for b in (204815, 204848)] == [57.05, 57.06]
    b = vllm.plan(spec, accelerator=lookup("h100"), dtype=DType.bf16, kv_dtype=DType.bf16,
                  version="0.19", max_model_len=8192, gpu_memory_utilization=0.95,
                  kv_memory=int(Fraction("19.53") * GiB))
    assert (b.kv_cache_tokens, b.tokens_rule) == (36560, "blocks // 7 groups × 16")
    assert round(b.max_concurrency, 2) == 4.46
    new = vllm.plan(spec, accelerator=lookup("h100"), dtype=DType.bf16, kv_dtype=DType.bf16,
                    version="0.20", max_model_len=8192, gpu_memory_utilization=0.95,
                    kv_memory=int(Fraction("19.53") * GiB))
    assert (new.kv_cache_tokens, new.tokens_rule) == (36505,
                                                      "concurrency × max_model_len, blocks of 16")
    # before 0.10 every layer is a full-attention layer of one group
    old = vllm.plan(spec, accelerator=lookup("h100"), dtype=DType.bf16, kv_dtype=DType.bf16,
                    version="0.9", max_model_len=8192, kv_memory=int(Fraction("19.53") * GiB))
    assert old.kv_cache_tokens == int(Fraction("19.53") * GiB) // (16 * 8192 * 62) * 16


def test_gemma3_4b_within_the_rounding() -> None:
    """Gemma 3 4B on vLLM 0.19 logged 62.51 GiB and 468,144 tokens: 62.505–62.515 GiB give
    204,815–204,848 blocks, counted before 0.20 as blocks // 7 groups × 16 (468,144–468,224
    tokens), where concurrency × max_model_len (468,150–468,226) fell 2 blocks short of the log."""
    row = BY_ID["vllm-v1-h100-gemma3-4b"]
    spec = spec_for("gemma-3-4b", None)
    counts = [vllm.plan(spec, accelerator=lookup("h100"), dtype=DType.bf16, kv_dtype=DType.bf16,
                        version="0.19", max_model_len=8192,
                        kv_memory=int(Fraction(f) * GiB)).kv_cache_tokens
              for f in ("62.505", "62.515")]
    assert counts == [468144, 468224]
    assert row["tokens"] == 468144


def test_vllm_v1_sampler_peak_by_version() -> None:
    """V1's dummy sampling: 16 bytes a [1,024, vocab] element in 0.19 (PyTorch's sort), 8 from
    0.20 (FlashInfer's sampler); Llama-3.1-8B's logged 0.19 peak is 1.89 GiB."""
    spec = spec_for("llama-3.1-8b", None)
    peaks = [vllm.plan(spec, accelerator=lookup("h100"), dtype=DType.bf16, kv_dtype=DType.bf16,
                       version=v, max_model_len=8192).terms["activation_peak"] for v in ("0.19",
                                                                                          "0.21")]
    assert peaks == [16 * 1024 * 128256, 8 * 1024 * 128256]
    assert round(peaks[0] / GiB, 2) == 1.96


def test_channel_scaled_8bit_weights() -> None:
    """fp8-channel / w8a8: 8-bit linears with an fp32 scale per output row, embeddings and lm_head
    bf16 — Llama-3.1-8B 8.46 GiB (vLLM logged 8.49 GiB for RedHatAI's FP8-dynamic and W8A8)."""
    from llmcalc.formulas.memory import weight_bytes
    from llmcalc.formulas.quant import FORMATS

    spec = spec_for("llama-3.1-8b", None)
    # per layer [rows, inputs]: q, o 4096 × 4096; k, v 1024 × 4096; gate, up 14336 × 4096;
    # down 4096 × 14336 — a byte an element and 4 bytes a row
    mats = [(4096, 4096), (1024, 4096), (1024, 4096), (4096, 4096), (14336, 4096),
            (14336, 4096), (4096, 14336)]
    linear = 32 * sum(n * k + 4 * n for n, k in mats)
    wide = 2 * (2 * 128256 * 4096 + (2 * 32 + 1) * 4096)  # embed, lm_head, norms in bf16
    fp8 = weight_bytes(spec, dtype=FORMATS["fp8-channel"])
    assert fp8 == linear + wide
    assert fp8 == weight_bytes(spec, dtype=FORMATS["w8a8"])
    assert round(fp8 / GiB, 2) == 8.46


def test_vllm_v1_sampler_peak_before_0_12() -> None:
    """Up to 0.11 the dummy sampler run (vllm#13594) goes through PyTorch's sort-based top-k/top-p:
    38.5 bytes a [1,024, vocab] element on an H100 — Llama-3.1-8B 4.71 GiB where
    llm-d-benchmark's vLLM logged 4.76, gpt-oss-20b 7.38 where it logged 7.38."""
    peaks = {m: vllm.plan(spec_for(m, None), accelerator=lookup("h100"), dtype=DType.bf16,
                          kv_dtype=DType.bf16, version="0.10",
                          max_model_len=16000).terms["activation_peak"]
             for m in ("llama-3.1-8b", "gpt-oss-20b")}
    assert peaks["llama-3.1-8b"] == 77 * 1024 * 128256 // 2
    assert (round(peaks["llama-3.1-8b"] / GiB, 2), round(peaks["gpt-oss-20b"] / GiB, 2)) == \
        (4.71, 7.38)


def test_vllm_v0_fallback_before_0_10() -> None:
    """0.8 and 0.9 run V0 on a card before Ampere (the T4 log: "Compute Capability < 8.0 is not
    supported by the V1 Engine. Falling back to V0") and for a GGUF checkpoint; 0.10 runs V1.
    V0's 0.90 GiB peak of the T4 log is ten [192, vocab] float32 tensors (0.92 GiB)."""
    spec = spec_for("llama-3.2-3b", None)
    def plan(version: str, gpu: str, dtype: Any = DType.fp16) -> Any:
        return vllm.plan(spec, accelerator=lookup(gpu), dtype=dtype, kv_dtype=DType.fp16,
                         version=version, max_model_len=2048, max_num_seqs=192,
                         max_num_batched_tokens=2048)
    t4 = plan("0.8", "t4")
    assert (t4.block_tokens, "cuda_graphs" in t4.terms) == (16, False)
    assert t4.terms["activation_peak"] == 10 * 4 * 192 * 128256
    assert round(t4.cuda_memory_bytes / GiB, 2) == 14.74
    assert plan("0.10", "t4").terms["activation_peak"] == 77 * 192 * 128256 // 2
    assert plan("0.8", "h100").terms["activation_peak"] == 77 * 192 * 128256 // 2
    from llmcalc.formulas.quant import FORMATS
    gguf = plan("0.8", "h100", FORMATS["q8_0"])
    assert gguf.terms["activation_peak"] == 10 * 4 * 192 * 128256


def test_vllm_non_torch_with_tp_by_link_and_version() -> None:
    """tp > 1 adds 1.85 GiB on NVLink from 0.12 (the 0.19 sweep), 0.42 GiB before (llm-d-benchmark's
    0.11 runs: 0.55 at tp 2 against 0.13 at tp 1), 0.05 on PCIe datacenter cards (vllm#15815's
    two L40S: 0.30 GiB on both ranks) and 1.45 on GeForce cards (vllm#13061)."""
    spec = spec_for("qwen2.5-7b", None)
    got = {(gpu, v): vllm.plan(spec, accelerator=lookup(gpu), dtype=DType.bf16,
                               kv_dtype=DType.bf16, tp=2, version=v).terms["non_torch"]
           for gpu, v in (("h100", "0.19"), ("h100", "0.10"), ("h100", "0.7"), ("l40s", "0.19"),
                          ("rtx-4090", "0.19"))}
    assert {k: round(x / GiB, 2) for k, x in got.items()} == {
        ("h100", "0.19"): 2.10, ("h100", "0.10"): 0.67, ("h100", "0.7"): 2.10,
        ("l40s", "0.19"): 0.30, ("rtx-4090", "0.19"): 1.70}


def test_vllm_default_utilization_by_version() -> None:
    """gpu_memory_utilization defaults to 0.9, and to 0.92 from 0.25 (v0.25.0's CacheConfig)."""
    spec = spec_for("qwen2.5-7b", None)
    utils = [vllm.plan(spec, accelerator=lookup("h100"), dtype=DType.bf16, kv_dtype=DType.bf16,
                       version=v).settings["gpu_memory_utilization"] for v in ("0.21", "0.25")]
    assert utils == [0.9, 0.92]


def test_cuda_memory_of_the_l40s_and_t4_from_their_logs() -> None:
    assert [round(vllm.plan(spec_for("qwen2.5-7b", None), accelerator=lookup(g),
                            dtype=DType.bf16, kv_dtype=DType.bf16).cuda_memory_bytes / GiB, 2)
            for g in ("l40s", "t4")] == [44.42, 14.74]


def test_vllm_v0_samples_fewer_sequences_for_a_model_that_takes_images() -> None:
    """V0's profile run samples min(max_num_seqs, max_num_batched_tokens // image tokens) sequences
    of a vision-language model (model_runner.profile_run): LLaVA-1.5 at 4,096 tokens 4096 // 576 =
    7, Qwen2.5-VL at 8,192 tokens 8192 // 1024 = 8; its peak is then the forward's (1.03 GiB)."""
    assert vllm.v0_profile_seqs(spec_for("llava-1.5-7b", None), 256, 4096) == 7
    assert vllm.v0_profile_seqs(spec_for("llama-3.1-8b", None), 256, 4096) == 256
    b = vllm.plan(spec_for("qwen2.5-vl-7b", None), accelerator=lookup("rtx-4090"),
                  dtype=DType.bf16, kv_dtype=DType.bf16, version="0.6", max_model_len=8192)
    assert round(b.terms["activation_peak"] / GiB, 2) == 1.03


def test_vllm_deepseek_sparse_attention_indexer() -> None:
    """DeepSeek-V3.2 on vLLM: each of the 61 layers caches the MLA latent (576 × 2 bytes, or
    fp8_ds_mla's 656) and the indexer's key (128 fp8 + one float32 scale = 132 bytes), all in one
    UniformTypeKVCacheSpecs group of 64-token blocks (--block-size 16 is overridden). 40 GiB on
    an H200 at tp 8 hold 40 GiB // (64 × 78,324) × 64 = 548,352 tokens in bf16, 893,504 in fp8
    (without the indexer, 70,272 bytes, it said 611,184); with the estimated budget, 599,744 and
    977,280 (it said 668,496 in blocks of 16)."""
    spec = spec_for("deepseek-v3.2-exp", None)
    h200 = lookup("h200")
    bf16 = vllm.plan(spec, accelerator=h200, dtype=DType.fp8, kv_dtype=DType.bf16, tp=8,
                     kv_memory=40 * GiB, block_size=16)
    fp8 = vllm.plan(spec, accelerator=h200, dtype=DType.fp8, kv_dtype=DType.fp8, tp=8,
                    kv_memory=40 * GiB)
    assert (bf16.bytes_per_token, bf16.block_tokens, bf16.kv_cache_tokens) == (
        61 * (576 * 2 + 132), 64, 548352)
    assert (fp8.bytes_per_token, fp8.block_tokens, fp8.kv_cache_tokens) == (
        61 * (656 + 132), 64, 893504)
    est = [vllm.plan(spec, accelerator=h200, dtype=DType.fp8, kv_dtype=kv, tp=8)
           for kv in (DType.bf16, DType.fp8)]
    assert [b.kv_cache_tokens for b in est] == [599744, 977280]
    assert all(budget_adds_up(b) for b in est)
    assert est[0].command.endswith("--block-size 64 --kv-cache-dtype bfloat16")
    assert est[1].command.endswith("--block-size 64 --kv-cache-dtype fp8")
    v3 = vllm.plan(spec_for("deepseek-v3", None), accelerator=h200, dtype=DType.fp8,
                   kv_dtype=DType.bf16, tp=8)
    assert (v3.bytes_per_token, v3.block_tokens, v3.kv_cache_tokens) == (70272, 16, 670016)
    assert "--kv-cache-dtype" not in v3.command


def test_deepseek_sparse_attention_refusals() -> None:
    spec = spec_for("deepseek-v3.2-exp", None)
    h200 = lookup("h200")
    with pytest.raises(UsageError) as e:
        vllm.plan(spec, accelerator=h200, dtype=DType.fp8, kv_dtype=DType.bf16, tp=8,
                  version="0.10.2")
    assert str(e.value) == ("--engine vllm==0.10.2: deepseek-ai/DeepSeek-V3.2-Exp has DeepSeek "
                            "sparse attention, which vLLM runs (with its indexer cache) from "
                            "0.11; use --engine vllm==0.11 or later")
    with pytest.raises(UsageError) as e:
        vllm.plan(spec, accelerator=h200, dtype=DType.fp8, kv_dtype=DType.fp16, tp=8)
    assert str(e.value) == ("--kv-dtype fp16: vLLM caches deepseek-ai/DeepSeek-V3.2-Exp's sparse "
                            "attention in bfloat16 or fp8 (fp8_ds_mla) only; use --kv-dtype bf16 "
                            "or fp8")
    with pytest.raises(UsageError) as e:
        vllm.plan(spec, accelerator=lookup("b200"), dtype=DType.fp8, kv_dtype=DType.fp8, tp=8)
    assert str(e.value) == ("--kv-dtype fp8: on NVIDIA B200 (HGX) vLLM's fp8 cache for "
                            "deepseek-ai/DeepSeek-V3.2-Exp's sparse attention is fp8_ds_mla (656 "
                            "bytes a token a layer) or plain fp8 (576) by the attention backend it "
                            "picks, which llmcalc does not follow off Hopper; use --kv-dtype bf16")
    refusals = {  # 1.0 does not run it; later releases keep a cache llmcalc has not read
        "1.0": "--engine trtllm==1.0: deepseek-ai/DeepSeek-V3.2-Exp has DeepSeek sparse "
               "attention, which TensorRT-LLM 1.0 does not run (it came after 1.0: "
               "NVIDIA/TensorRT-LLM#9141); use --engine vllm or --engine sglang",
        "1.2": "--engine trtllm: deepseek-ai/DeepSeek-V3.2-Exp has DeepSeek sparse attention, "
               "whose indexer-key cache TensorRT-LLM keeps beside the MLA cache in a layout "
               "llmcalc does not follow; use --engine vllm or --engine sglang"}
    for version, line in refusals.items():
        with pytest.raises(UsageError) as e:
            trtllm.plan(spec, accelerator=h200, dtype=DType.fp8, kv_dtype=DType.fp8, tp=8,
                        version=version)
        assert str(e.value) == line


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_an_indexer_beside_plain_heads_is_refused(cli: Any, engine: str) -> None:
    """Qwen3.8-Flash-Next's QSA layers keep an indexer's keys beside 2 plain KV heads: the
    engines' counts followed here (DeepSeek's latent beside its indexer) would leave them out."""
    r = cli("fit", "qwen3.8-flash-next", "--engine", engine, "--gpu", "b200", "--tp", "8",
            "--dtype", "fp8")
    assert (r.code, r.stdout) == (2, "")
    assert r.stderr == (f"error: --engine {engine}: Qwen/Qwen3.8-Flash-Next caches a "
                        "sparse-attention indexer's keys beside plain K/V heads, a layout llmcalc "
                        "does not follow in that engine\n")


@pytest.mark.parametrize(("model", "name"), [
    ("hy4-preview", "tencent/Hy4-preview"),  # 57 layers read another layer's indexer
    ("dots3-note-text-default", "dots3_note_text-transformers-default"),  # sliding-window latents
])
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_sparse_layers_beside_others_are_refused(cli: Any, engine: str, model: str,
                                                 name: str) -> None:
    r = cli("fit", model, "--engine", engine, "--gpu", "h200", "--tp", "8", "--dtype", "fp8")
    assert (r.code, r.stdout) == (2, "")
    assert r.stderr == (f"error: --engine {engine}: {name} mixes DeepSeek sparse-attention layers "
                        "(an MLA latent with its own indexer) with layers of another kind, a "
                        "layout llmcalc does not follow in that engine\n")
