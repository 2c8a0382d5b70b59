"""Every `note:` and `warning:` line goes to stderr, so stdout is the table alone; with --json the
notes are only in its `notes`."""

from __future__ import annotations

import json
from typing import Any

import pytest

TINY = """model_type: llama
hidden_size: 64
intermediate_size: 128
num_hidden_layers: 2
num_attention_heads: 4
vocab_size: 256
"""
BEYOND = ("context 4,096 is above the model's max_position_embeddings ({limit}); the figures "
          "assume it runs there anyway")
DEFAULTS = ("not in config, LlamaConfig default: max_position_embeddings=2048, "
            "tie_word_embeddings=false, attention_bias=false, mlp_bias=false")


def _no_notes(text: str) -> None:
    assert not [line for line in text.splitlines() if line.startswith(("note:", "warning:"))]


@pytest.mark.parametrize(("args", "note"), [
    (("flops", "gpt2", "--ctx", "4k"), BEYOND.format(limit="1,024")),
    (("memory", "gpt2", "--ctx", "4k"), BEYOND.format(limit="1,024")),
    (("memory", "{yaml}", "--ctx", "4k"), BEYOND.format(limit="2,048")),
    (("count", "{yaml}"), DEFAULTS),
    (("count", "gpt2", "--set", "n_layer=2"), "changed with --set: n_layer=2"),
    # every command that sizes a sequence says so where it passes the model's window
    (("latency", "gpt2", "--gpu", "h100", "--ctx", "4k"), BEYOND.format(limit="1,024")),
    (("train", "gpt2", "--gpu", "h100", "--ctx", "4k"), BEYOND.format(limit="1,024")),
    (("train", "{yaml}", "--gpu", "h100", "--ctx", "4k", "--method", "lora"),
     BEYOND.format(limit="2,048")),
    (("mfu", "gpt2", "--gpu", "h100", "--tokens-per-sec", "1000", "--ctx", "4k"),
     BEYOND.format(limit="1,024")),
])
def test_notes_go_to_stderr(cli: Any, write: Any, args: tuple[str, ...], note: str) -> None:
    yaml = write("tiny.yaml", TINY)
    args = tuple(a.format(yaml=yaml) for a in args)
    r = cli(*args)
    assert r.code == 0
    assert f"note: {note}" in " ".join(r.stderr.split())  # wrapped at the terminal's width
    _no_notes(r.stdout)
    assert r.stdout.strip()  # the table itself
    j = cli(*args, "--json")
    assert (j.code, j.stderr) == (0, "")
    assert note in j.json()["notes"]


def test_fit_warning_on_stderr_or_in_notes(cli: Any) -> None:
    warning = ("--ctx 4,096 is more than openai-community/gpt2's max_position_embeddings (1,024); "
               "the memory is sized as asked, but the model was not made for that context")
    r = cli("fit", "gpt2", "--gpu", "h100", "--ctx", "4k")
    assert r.stderr == f"warning: {warning}\n"
    _no_notes(r.stdout)
    j = cli("fit", "gpt2", "--gpu", "h100", "--ctx", "4k", "--json")
    assert (j.code, j.stderr) == (0, "")
    assert j.json()["notes"] == [warning]
    assert json.loads(cli("fit", "gpt2", "--gpu", "h100", "--ctx", "1k", "--json").stdout)[
        "notes"] == []


def test_readme_says_where_notes_go() -> None:
    from helpers import REPO

    readme = " ".join((REPO / "README.md").read_text().split())
    assert ("Every `note:` and `warning:` line of every command goes to stderr" in readme
            and "with `--json` they are only in the answer's `notes`" in readme)


@pytest.mark.parametrize("args", [
    ("latency", "gpt2", "--gpu", "h100"), ("train", "gpt2", "--gpu", "h100"),
    ("train", "llama-2-7b", "--gpu", "h100", "--method", "lora"),
])
def test_strict_refuses_a_sequence_past_the_window(cli: Any, args: tuple[str, ...]) -> None:
    """--strict: a figure at a context the model was not made for is refused, exit 2, in the
    table and in --json alike; inside the window it runs, with no note."""
    limit = "1,024" if "gpt2" in args else "4,096"
    ctx = "4k" if "gpt2" in args else "8k"
    note = BEYOND.format(limit=limit).replace("4,096 is", f"{int(ctx[0]) * 1024:,} is")
    for extra in ((), ("--json",)):
        r = cli(*args, "--ctx", ctx, "--strict", *extra)
        assert (r.code, r.stdout, r.stderr) == (2, "", f"error: --strict: the output: {note}\n")
        ok = cli(*args, "--ctx", "1k", "--strict", *extra)
        assert ok.code == 0 and "note:" not in ok.stderr, ok.stderr


@pytest.mark.parametrize("fmt", ["csv", "markdown"])
@pytest.mark.parametrize(("args", "limit"), [
    (("flops", "gpt2", "--ctx", "4k"), "1,024"), (("memory", "gpt2", "--ctx", "4k"), "1,024"),
    (("train", "gpt2", "--gpu", "h100", "--ctx", "4k"), "1,024"),
    (("mfu", "gpt2", "--gpu", "h100", "--tokens-per-sec", "1000", "--ctx", "4k"), "1,024"),
])
def test_csv_and_markdown_keep_stdout_data_and_say_the_notes(cli: Any, fmt: str,
                                                             args: tuple[str, ...],
                                                             limit: str) -> None:
    """CSV and Markdown are data alone on stdout; the notes the table says go to stderr there
    too, never lost."""
    r = cli(*args, "--format", fmt)
    assert r.code == 0
    assert r.stderr == f"note: {BEYOND.format(limit=limit)}\n"
    assert "max_position_embeddings (" not in r.stdout and "note:" not in r.stdout


def test_a_comparison_names_each_models_note_on_stderr(cli: Any) -> None:
    notes = (f"note: gpt2: {BEYOND.format(limit='1,024')}\n"  # named as typed, as the columns
             f"note: llama: {BEYOND.format(limit='2,048')}\n")
    for command in ("flops", "memory"):
        for extra in ((), ("--format", "csv"), ("--format", "markdown")):
            r = cli(command, "gpt2", "llama", "--ctx", "4k", *extra)
            assert (r.code, r.stderr) == (0, notes), (command, extra)
            assert "max_position_embeddings (" not in r.stdout
        j = cli(command, "gpt2", "llama", "--ctx", "4k", "--json")
        assert (j.code, j.stderr) == (0, "")
        assert [d["notes"] for d in j.json()] == [[BEYOND.format(limit="1,024")],
                                                  [BEYOND.format(limit="2,048")]]
    # fit's own warning, said once: not again as a note
    f = cli("fit", "gpt2", "--gpu", "h100", "--ctx", "4k", "--format", "csv")
    assert f.stderr.count("max_position_embeddings") == 1 and f.stderr.startswith("warning: ")
