"""At 80 and 120 columns no table cuts a name or a number, and `--help` reads well at 80."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys

import pytest
from rich.console import Console
from typer.testing import CliRunner

import llmcalc.cli._common as common
from llmcalc import count, load_spec
from llmcalc.cli import COMMANDS, app
from llmcalc.inputs import bundled
from llmcalc.render.grid import Grid

WIDTHS = (80, 120)
COMMAND_LINES = [
    "list",
    "flops --ctx 128k",
    "check",
    "count deepseek-v3 --tensors",
    "count deepseek-v3",
    "count gpt-oss-20b",
    "count llama-2-7b mistral-7b qwen2.5-7b gemma-7b tinyllama-1.1b",
    "flops llama-2-7b --tokens 2T",
    "flops llama-2-7b llama-3-8b gemma-2-9b --ctx 128k",
    "memory deepseek-v3 --ctx 32k",
    "memory gemma-2-9b llama-3-8b mistral-7b --ctx 32k",
    "fit gemma-2-2b mistral-7b --gpu h100",
    "fit llama-2-70b --gpu h100 --gpus 2 --ctx 4k",
    "train llama-3.1-405b --tokens 15.6T --gpus 16384 --gpu h100 --ctx 8k --tp 8 --pp 16",
    "mfu llama-3.1-405b --tokens-per-sec 1340000 --gpus 8192 --gpu h100 --ctx 8k",
]


def run_at(width: int, monkeypatch: pytest.MonkeyPatch, *args: str) -> str:
    monkeypatch.setattr(common, "console", lambda **_: Console(
        width=width, markup=False, highlight=False, emoji=False, soft_wrap=False))
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("line", COMMAND_LINES)
def test_nothing_is_cut(monkeypatch: pytest.MonkeyPatch, width: int, line: str) -> None:
    out = run_at(width, monkeypatch, *line.split())
    too_long = [ln for ln in out.splitlines() if len(ln) > width]
    assert too_long == [], "\n".join(too_long)
    assert "…" not in out, out
    cropped = [ln for ln in out.splitlines() if ln[:1] in "│┃┏┡├└" and ln[-1:] not in "│┃┓┩┤┘"]
    assert cropped == [], out


@pytest.mark.parametrize("width", WIDTHS)
def test_list_shows_every_name_and_total(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    out = run_at(width, monkeypatch, "list")
    cells = set(re.findall(r"[^\s│┃]+", out))
    for path in bundled.paths():
        assert path.stem in cells
        assert f"{count(load_spec(str(path))).total:,}" in cells
    if width == 80:
        assert re.search(r"\(repo id[^)]* left out at this width", out), out


@pytest.mark.parametrize("width", WIDTHS)
def test_catalog_and_tensors_whole(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    cells = set(re.findall(r"[^\s│┃]+", run_at(width, monkeypatch, "flops", "--ctx", "128k")))
    assert {"deepseek-v2-lite", "deepseek-v3", "qwen1.5-moe-a2.7b", "llama-3.1-405b"} <= cells
    spec = load_spec("deepseek-v3")
    cells = set(re.findall(r"[^\s│┃]+", run_at(width, monkeypatch, "count", "deepseek-v3",
                                                  "--tensors")))
    assert {x.name for x, _ in spec.all_tensors()} <= cells


def test_compare_splits_rather_than_cuts(monkeypatch: pytest.MonkeyPatch) -> None:
    models = ["llama-2-7b", "mistral-7b", "qwen2.5-7b", "gemma-7b", "tinyllama-1.1b"]
    out = run_at(80, monkeypatch, "count", *models)
    assert out.count("parameters") >= 2  # more than one part
    for m in models:
        assert m in out
    for total in (6_738_415_616, 7_241_732_096, 7_615_616_512, 8_537_680_896, 1_100_048_384):
        assert f"{total:,}" in out


@pytest.mark.parametrize("command", COMMANDS)
def test_help_reads_at_80_columns(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--help"], terminal_width=80,
                                env={"COLUMNS": "80"})
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert max(len(ln) for ln in lines) <= 80
    assert not re.search(r"<(bool|str|int|float|list\[str\]|path)>", result.stdout), result.stdout
    # train and fit carry the fine-tuning options too, train the allocator-measured plan's and fit
    # the local-inference ones; the point is a readable description column
    assert len(lines) <= 120, f"{command} --help is {len(lines)} lines"


def test_metavars_say_what_to_type() -> None:
    out = CliRunner().invoke(app, ["memory", "--help"], env={"COLUMNS": "80"}).stdout
    for shown in ("--ctx CTX", "--dtype DTYPE", "--kv-dtype DTYPE", "--set KEY=VALUE",
                  "--batch N", "--format FORMAT", "[OPTIONS] [MODEL]..."):
        assert shown in out
    out = CliRunner().invoke(app, ["train", "--help"], env={"COLUMNS": "80"}).stdout
    for shown in ("--tokens TOKENS", "--gpu GPU", "--gpu-mem SIZE", "--mfu FRACTION",
                  "--recompute none|selective|full", "--zero STAGE"):
        assert shown in out


@pytest.mark.parametrize("width", (80, 100))
def test_names_are_whole_words_at_any_width(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    out = run_at(width, monkeypatch, "count", "llama-2-7b", "mistral-7b", "qwen2.5-7b")
    for name in ("meta-llama/Llama-2-7b-hf", "mistralai/Mistral-7B-v0.1", "Qwen/Qwen2.5-7B"):
        assert name in out
    out = run_at(width, monkeypatch, "count", "deepseek-v3")
    for group in ("moe/shared_experts/gate_proj", "moe/experts/gate_up_proj", "attn/kv_a_proj"):
        assert group in out, out
    if width == 80:
        assert "(weights, biases left out at this width" in out


def test_tensors_at_80_columns_stack_rather_than_drop(monkeypatch: pytest.MonkeyPatch) -> None:
    out = run_at(80, monkeypatch, "count", "deepseek-v3", "--tensors")
    assert "name / repeats" in out and "shape / numel" in out
    assert "left out" not in out
    lines = out.splitlines()
    at = next(i for i, ln in enumerate(lines) if "model.embed_tokens.weight" in ln)
    assert "[129280, 7168]" in lines[at] and "926,679,040" in lines[at + 1]  # 129,280 × 7,168


def test_latency_labels_read_at_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    out = run_at(80, monkeypatch, "latency", "llama-3-8b", "--gpu", "h100")
    assert "│ time to first token (prefill)    │" in out
    assert "│ decode tokens/s per request      │" in out
    assert max(len(ln) for ln in out.splitlines()) <= 80


def test_piped_output_follows_columns() -> None:
    from helpers.shell import llmcalc

    env_80 = {"COLUMNS": "80"}
    out = subprocess.run([sys.executable, "-c", "import sys; from llmcalc.cli import run; "
                          "sys.argv[0] = 'llmcalc'; run()", "list"], capture_output=True,
                         text=True, env={**os.environ, **env_80}, timeout=120)
    assert out.returncode == 0
    assert max(len(ln) for ln in out.stdout.splitlines()) <= 80
    assert "(repo id" in out.stdout
    wide = llmcalc("list")  # no COLUMNS and no terminal: 120 columns
    assert max(len(ln) for ln in wide.stdout.splitlines()) > 80


def _rich_table(grid: Grid, keep: list[int], width: int) -> str:
    """The same table laid out by rich itself, at the column widths llmcalc chose."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from llmcalc.render.grid import _widths, shown

    widths = _widths(grid, keep, width)
    t = Table(title=grid.title or None, title_justify="left", box=box.HEAVY_HEAD)
    for i in keep:
        c = grid.columns[i]
        t.add_column(c.header, justify="right" if c.right else "left", width=widths[i],
                     no_wrap=not c.wrap, overflow="fold")
    for r, row in enumerate(grid.rows):
        if r in grid.sections:
            t.add_section()
        t.add_row(*(Text(shown(row[i])) for i in keep))
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(t)
    return console.export_text()


@pytest.mark.parametrize("width", (80, 97, 120))
def test_tables_are_drawn_as_rich_draws_them(width: int) -> None:
    from llmcalc.render.grid import Col, _table

    grid = Grid("a title long enough to wrap when the table is narrower than the words it has "
                "in it, which this one is", [
                    Col("name"), Col("note", wrap=True), Col("total", right=True),
                    Col("why", right=True, wrap=True)])
    grid.add("meta-llama/Llama-2-7b-hf", "a note  with  spaces and a long-word-stays",
             6_738_415_616, "never (reading a sequence's cache outlasts its FLOPs)")
    grid.add("x", "two\nlines", 7, "", section=True)
    grid.add("ünïcödé ·×²", "", None, "short", bold=True)
    for keep in ([0, 1, 2, 3], [0, 2], [1, 3]):
        console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
        console.print(_table(grid, keep, width))
        assert console.export_text() == _rich_table(grid, keep, width)
