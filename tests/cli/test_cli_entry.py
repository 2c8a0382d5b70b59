"""The entry point as a user types it: bare `llmcalc`, `--version`, usage errors on one line,
names longer than a file system takes, adapter options without a rank."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.shell import llmcalc


@pytest.mark.parametrize("module", [False, True])
def test_bare_llmcalc_prints_the_help_and_exits_0(module: bool) -> None:
    out = llmcalc(module=module)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    lines = out.stdout.splitlines()
    assert lines[0] == "Usage: llmcalc [OPTIONS] COMMAND [ARGS]..."
    assert "  count    Count parameters exactly: per tensor group, per layer,..." in lines
    assert "--version" in out.stdout
    assert "\\n" not in out.stdout


def test_plot_without_a_kind_is_one_plain_line() -> None:
    out = llmcalc("plot")
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == "error: Missing argument 'kind'. Choose from: flops, memory, params\n"


def test_version() -> None:
    from importlib.metadata import version

    for args in (("--version",), ("--version", "count")):
        out = llmcalc(*args)
        assert (out.returncode, out.stdout, out.stderr) == (
            0, f"llmcalc {version('llmcalc-exact')}\n", "")


LONG = "a" * 5000


@pytest.mark.parametrize("command", ["count", "flops", "memory", "verify", "train", "fit"])
def test_a_5000_character_name_is_one_line_exit_2(command: str) -> None:
    out = llmcalc(command, LONG)
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == (f"error: model '{'a' * 40}': 5,000 characters; names and paths are "
                          "read up to 1,024\n")


@pytest.mark.parametrize("path", [LONG, f"models/{LONG}"])
def test_check_of_a_path_too_long_for_the_file_system_is_one_line_exit_2(path: str) -> None:
    out = llmcalc("check", path)
    assert (out.returncode, out.stdout) == (2, "")
    # check refuses it before the walk, as count does a model argument that long
    assert out.stderr == (f"error: model '{path[:40]}': {len(path):,} characters; names and paths "
                          "are read up to 1,024\n")


@pytest.mark.parametrize("extra", [["--lora-targets", "q_proj"], ["--dora"],
                                   ["--lora-alpha", "64", "--rslora"]])
def test_adapter_options_without_a_rank_are_refused(cli: Any, extra: list[str]) -> None:
    out = cli("count", "llama-2-7b", *extra)
    given = ", ".join(a for a in extra if a.startswith("--"))
    assert (out.code, out.stdout) == (2, "")
    assert out.stderr == (f"error: {given}: give the adapters' rank too, e.g. --lora-r 16 "
                          "(without --lora-r, count shows the model without adapters)\n")


def test_lora_targets_with_a_rank_counts_those_adapters(cli: Any) -> None:
    # q_proj of Llama-2-7B: A [8, 4096] + B [4096, 8] in each of 32 layers
    out = cli("count", "llama-2-7b", "--lora-targets", "q_proj", "--lora-r", "8", "--json")
    assert out.code == 0, out.stderr
    assert out.json()["trainable"] == 32 * (8 * 4096 + 4096 * 8)


@pytest.mark.parametrize("args", [
    ("count", "gpt2"), ("count", "gpt2", "--json"), ("list",), ("list", "--json"),
    ("memory", "gpt2", "--format", "csv"), ("fit", "--gpu", "h100", "--json"),
    ("count", "--help"),
], ids=" ".join)
def test_a_reader_that_stops_reading_ends_it_quietly(args: tuple[str, ...]) -> None:
    """`llmcalc … | head -c 0`: stdout's reader is gone before the first byte; the command stops
    with exit 1 and nothing on stderr (as rich and click stop), never an internal error."""
    import os
    import subprocess
    import sys

    from helpers import REPO

    read, write = os.pipe()
    os.close(read)  # the reader has already gone: every write to the pipe fails with EPIPE
    try:
        out = subprocess.run(
            [sys.executable, "-c", "import sys; from llmcalc.cli import run; "
             "sys.argv[0] = 'llmcalc'; run()", *args],
            stdout=write, stderr=subprocess.PIPE, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": str(REPO)})
    finally:
        os.close(write)
    notes = [line for line in out.stderr.splitlines() if not line.startswith("note: ")]
    assert (out.returncode, notes) == (1, [])
