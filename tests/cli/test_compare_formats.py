"""Several models side by side, and every command's --format (json, csv, markdown)."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import pytest

from llmcalc.render import sci, short

TWO = ("llama-2-7b", "mistral-7b")
TOTALS = {"llama-2-7b": 6_738_415_616, "mistral-7b": 7_241_732_096}


def rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_count_compares_models(cli: Any) -> None:
    run = cli("count", *TWO)
    assert run.code == 0, run.stderr
    header = next(ln for ln in run.stdout.splitlines() if "figure" in ln)
    assert re.search(r"figure .* llama-2-7b .* mistral-7b", header)
    assert "6,738,415,616" in run.stdout and "7,241,732,096" in run.stdout
    data = cli("count", *TWO, "--json").json()
    assert [d["total_params"] for d in data] == [6_738_415_616, 7_241_732_096]
    assert cli("count", "gpt2", "--json").json()["total_params"] == 124_439_808  # one: an object


@pytest.mark.parametrize("command", ["count", "flops", "memory"])
def test_json_is_an_array_in_order(cli: Any, command: str) -> None:
    data = cli(command, "gpt2", "llama-3-8b", "--json").json()
    assert [d["model"] for d in data] == ["openai-community/gpt2", "meta-llama/Meta-Llama-3-8B"]


def test_fit_compares_on_the_same_gpus(cli: Any) -> None:
    data = cli("fit", "gemma-2-2b", "llama-3-8b", "--gpu", "h100", "--json").json()
    assert [d["max_ctx"] for d in data] == [8192, 8192]
    out = cli("fit", "gemma-2-2b", "llama-3-8b", "--gpu", "h100").stdout
    assert "largest context" in out and "gemma-2-2b" in out and "llama-3-8b" in out


def test_csv_has_one_header_row_and_exact_numbers(cli: Any) -> None:
    table = rows(cli("count", *TWO, "--format", "csv").stdout)
    assert table[0] == ["figure", *TWO]
    assert all(len(r) == 3 for r in table)
    total = next(r for r in table if r[0] == "total")
    assert total[1:] == [str(TOTALS[m]) for m in TWO]
    assert sum(1 for r in table if r[0] == "figure") == 1


def test_markdown_pastes_into_an_issue(cli: Any) -> None:
    out = cli("count", *TWO, "--format", "markdown").stdout
    lines = out.splitlines()
    assert lines[0] == "**parameters**"
    assert lines[2] == "| figure | llama-2-7b | mistral-7b |"
    assert lines[3] == "|---|---:|---:|"
    assert "| **total** | **6,738,415,616** | **7,241,732,096** |" in lines
    assert all(ln.startswith("|") and ln.endswith("|") for ln in lines[2:] if ln)


FORMAT_COMMANDS = [
    ("list",),
    ("check",),
    ("count", "gpt2"),
    ("count", "gpt2", "--tensors"),
    ("flops", "gpt2"),
    ("flops", "--ctx", "8k"),
    ("memory", "gpt2"),
    ("fit", "gpt2", "--gpu", "l4"),
    ("train", "gpt2", "--gpu", "h100", "--tokens", "2B"),
    ("mfu", "gpt2", "--gpu", "h100", "--tokens-per-sec", "1M"),
]


@pytest.mark.parametrize("args", FORMAT_COMMANDS, ids=" ".join)
def test_every_command_takes_every_format(cli: Any, args: tuple[str, ...]) -> None:
    table = rows(cli(*args, "--format", "csv").stdout)
    assert len(table) >= 2 and len({len(r) for r in table}) == 1, table
    md = cli(*args, "--format", "markdown").stdout
    assert re.search(r"^\|(---:?\|)+$", md, flags=re.M), md
    as_json = cli(*args, "--json").json()
    as_json.pop("seconds", None) if isinstance(as_json, dict) else None
    by_format = cli(*args, "--format", "json").json()
    by_format.pop("seconds", None) if isinstance(by_format, dict) else None
    assert by_format == as_json
    assert cli(*args, "--format", "table").code == 0


@pytest.mark.parametrize(
    "args,message",
    [
        (("count", "gpt2", "--json", "--format", "csv"),
         "--json and --format csv cannot be combined"),
        (("count", "gpt2", "--format", "csv", "--explain"),
         "--explain and --format csv cannot be combined"),
        (("count", *TWO, "--explain"), "--explain shows one model; give one MODEL, not 2"),
        (("count", *TWO, "--tensors"), "--tensors shows one model; give one MODEL, not 2"),
        (("memory", *TWO, "--explain"), "--explain shows one model; give one MODEL, not 2"),
        (("count", "gpt2", "--format", "html"), "Invalid value for '--format'"),
    ],
)
def test_format_errors(cli: Any, args: tuple[str, ...], message: str) -> None:
    run = cli(*args)
    assert run.code == 2
    assert message in run.stderr


# ---- small wrongs in the tables -----------------------------------------------------------------


def test_short_rounds_into_the_next_unit() -> None:
    assert short(999_885_952) == "1.00B"
    assert short(999_999) == "1.00M"
    assert short(124_439_808) == "124M"
    assert short(999) == "999"
    assert sci(3.7963e25) == "3.80e25"


def test_list_and_count_say_1_00B_for_gemma_3_1b(cli: Any) -> None:
    assert "1.00B" in cli("list").stdout
    assert "1.00B" in cli("count", "gemma-3-1b").stdout
    assert "e+" not in cli("list").stdout


def test_training_flops_in_scientific_notation(cli: Any) -> None:
    out = cli("train", "llama-3.1-405b", "--tokens", "15.6T", "--gpus", "16384", "--gpu", "h100",
              "--ctx", "8k").stdout
    assert "3.80e25 FLOPs" in out  # 6·N·D, the paper's 3.8·10²⁵
    assert not re.search(r"\d[YZ]\b", out)


def test_memory_and_fit_say_when_a_window_caps_the_cache(cli: Any) -> None:
    cap = "sliding window caps the KV cache: 13 of 26 layers hold at most 4,096 tokens"
    assert cap in cli("memory", "gemma-2-2b", "--ctx", "32k").stdout
    assert cap in cli("fit", "gemma-2-2b", "--gpu", "h100").stdout
    assert cli("fit", "gemma-2-2b", "--gpu", "h100", "--json").json()["kv_cache_window_cap"] == cap
    assert cli("fit", "llama-3-8b", "--gpu", "h100", "--json").json()["kv_cache_window_cap"] is None
    assert "sliding window" not in cli("memory", "gemma-2-2b", "--ctx", "4k").stdout
    assert "sliding window" not in cli("memory", "llama-3-8b", "--ctx", "32k").stdout
    table = rows(cli("memory", "gemma-2-2b", "llama-3-8b", "--ctx", "32k", "--format",
                     "csv").stdout)
    assert ["KV cache capped by a sliding window", "true", "false"] in table
    data = cli("memory", "gemma-2-2b", "llama-3-8b", "--ctx", "32k", "--json").json()
    assert [d["kv_cache_window_caps"] for d in data] == [
        [{"group": "sliding_attention", "num_layers": 13, "window": 4096}], []]


def test_catalog_marks_models_past_their_context(cli: Any) -> None:
    out = cli("flops", "--ctx", "128k").stdout
    assert "llama-2-7b *" in out and "llama-3.1-405b *" not in out
    assert re.search(r"\* \d+ of \d+ models computed past their max_position_embeddings", out)
    table = rows(cli("flops", "--ctx", "128k", "--format", "csv").stdout)
    row = next(r for r in table if r[0] == "llama-2-7b")  # CSV: the plain name and its max ctx
    assert row[-1] == "4096" and table[0][-1] == "max ctx"


@pytest.mark.torch
def test_verify_takes_every_format(cli: Any) -> None:
    pytest.importorskip("transformers")
    table = rows(cli("verify", "gpt2", "--format", "csv").stdout)
    assert table[0] == ["part", "llmcalc", "model", "difference (model − llmcalc)"]
    assert table[-1] == ["total", "124439808", "124439808", "0"]
    md = cli("verify", "gpt2", "--format", "markdown").stdout
    assert "| **total** | **124,439,808** | **124,439,808** | **0** |" in md


@pytest.mark.parametrize("fmt", ["csv", "markdown", "table"])
def test_control_characters_from_input_are_escaped(cli: Any, write: Any, fmt: str) -> None:
    from llmcalc import load_spec

    spec = load_spec("gpt2")
    path = write("evil.json", {**spec.config, "model_type": "gpt2",
                               "_name_or_path": "evil\x1b[2Jname"})
    out = cli("count", path, "gpt2", "--format", fmt).stdout
    assert "\x1b" not in out
    assert "\\x1b" in out and ("evil\\x1b[2Jname" in out or fmt == "table")  # a table may wrap it
