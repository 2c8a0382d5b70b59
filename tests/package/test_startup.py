"""Start-up: the spec cache of bundled configs, and the plain `llmcalc count MODEL` path that
loads neither pydantic's validators nor typer's parsing (bench/startup.py measures the time)."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO

from llmcalc import load_spec
from llmcalc.inputs import speccache


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LLMCALC_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_a_bundled_spec_is_validated_once_then_read(cache: Path) -> None:
    calls = []

    def validate() -> Any:
        calls.append(1)
        return load_spec("gpt2")

    first = speccache.load("gpt2", validate)
    second = speccache.load("openai-community/gpt2", validate)  # the same file, by repo id
    assert calls == [1]
    assert first == second == load_spec("gpt2")
    assert [p.name.split("-")[0] for p in cache.glob("*.pickle")] == ["gpt2"]


def test_a_changed_llmcalc_or_a_broken_entry_validates_again(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    speccache.load("gpt2", lambda: load_spec("gpt2"))
    (entry,) = cache.glob("*.pickle")
    entry.write_bytes(b"not a pickle")
    assert speccache.load("gpt2", lambda: load_spec("gpt2")) == load_spec("gpt2")
    assert isinstance(pickle.loads(entry.read_bytes()), type(load_spec("gpt2")))
    monkeypatch.setattr(speccache, "_fingerprint", lambda: b"another version")
    speccache.load("gpt2", lambda: load_spec("gpt2"))
    assert len(list(cache.glob("*.pickle"))) == 2


def test_off_local_files_and_unknown_names_bypass_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLMCALC_CACHE_DIR", "")
    assert speccache.folder() is None
    assert speccache.load("gpt2", lambda: load_spec("gpt2")) == load_spec("gpt2")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gpt2").mkdir()  # a local folder of that name wins over the bundled config
    assert speccache.bundled_file("gpt2") is None
    assert speccache.bundled_file("no-such-model") is None
    assert speccache.bundled_file("x" * 5000) is None  # too long for a file name: no OSError


WATCHED = ("pydantic.main", "llmcalc.inputs.config", "llmcalc.families", "typer._adapters")


def run_plain(*args: str, cache_dir: Path,
              watched: tuple[str, ...] = WATCHED) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys, atexit\n"
        "atexit.register(lambda: print('LOADED', ','.join(sorted(m for m in sys.modules if m in "
        f"{watched!r})), file=sys.stderr))\n"
        "from llmcalc.cli import run\n"
        "sys.argv = ['llmcalc', *sys.argv[1:]]\n"
        "run()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "LLMCALC_CACHE_DIR": str(cache_dir)}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=env)


def test_plain_count_loads_no_validator_once_cached(tmp_path: Path) -> None:
    cold = run_plain("count", "gpt2-medium", cache_dir=tmp_path)
    warm = run_plain("count", "gpt2-medium", cache_dir=tmp_path)
    assert cold.returncode == warm.returncode == 0
    assert cold.stdout == warm.stdout
    assert "llmcalc.inputs.config" in cold.stderr  # validated the first time
    assert warm.stderr.strip().splitlines()[-1] == "LOADED"  # then neither pydantic, the families nor typer parsing
    assert "354,823,168" in warm.stdout


@pytest.mark.parametrize("args", [
    ("count", "gpt2", "llama-2-7b"), ("flops", "gemma-2-2b"), ("memory", "mistral-7b"),
    ("count", "nope"), ("flops", "llama-3-8b", "--ctx", "128k"),
    ("memory", "llama-2-7b", "--ctx=32k", "--dtype", "fp8", "--json"),
    ("count", "gpt2", "--set", "n_layer=2", "--set=n_head=4", "--json"),
    ("flops", "--ctx", "4k", "--batch", "2"), ("memory", "gpt2", "--batch", "x"),
    ("count", "gpt2", "--lora-targets", "q_proj"),
    ("fit", "llama-2-70b", "--gpu", "h100", "--gpus", "2", "--batch", "16", "--ctx", "4k"),
    ("train", "llama-3-8b", "--gpu", "h100", "--zero", "3", "--mfu", "0.5", "--format", "json"),
    ("latency", "llama-3-8b", "--gpu", "h100", "--batch", "8"), ("list", "--format", "csv"),
])
def test_plain_path_prints_what_typer_path_prints(tmp_path: Path, cli: Any,
                                                  args: tuple[str, ...]) -> None:
    plain = run_plain(*args, cache_dir=tmp_path)
    parsed = cli(*args)
    assert (plain.returncode, plain.stdout) == (parsed.code, parsed.stdout)
    assert plain.stderr.startswith(parsed.stderr)


def test_plainly_written_options_skip_typer_anything_else_does_not(tmp_path: Path) -> None:
    for plain in (("count", "gpt2", "--json"), ("count", "gpt2", "--format", "json"),
                  ("count", "gpt2", "--lora-r", "8", "--lora-targets", "c_attn", "--json")):
        out = run_plain(*plain, cache_dir=tmp_path)
        assert out.returncode == 0 and "typer._adapters" not in out.stderr, plain
        assert "124439808" in out.stdout
    for typed in (("count", "gpt2", "--format", "JSON"), ("count", "gpt2", "--lora-r", "08"),
                  ("flops", "gpt2", "--images", "+0"), ("count", "gpt2", "--", "x"),
                  ("count", "gpt2", "--no-such-option"), ("fit", "gpt2", "--gpus", "1e3"),
                  ("train", "gpt2", "--gpus", "9" * 17)):
        assert "typer._adapters" in run_plain(*typed, cache_dir=tmp_path).stderr, typed


def test_help_is_kept_and_read_back(tmp_path: Path) -> None:
    first = run_plain("count", "--help", cache_dir=tmp_path)
    again = run_plain("count", "--help", cache_dir=tmp_path)
    assert first.returncode == again.returncode == 0
    assert first.stdout == again.stdout and first.stdout.startswith("Usage: llmcalc count")
    assert "typer._adapters" in first.stderr and again.stderr.strip().splitlines()[-1] == "LOADED"
    assert len(list(tmp_path.glob("help-*.txt"))) == 1


def test_list_rows_are_kept_and_help_needs_no_command_module(tmp_path: Path) -> None:
    watched = (*WATCHED, "llmcalc.formulas.counting", "llmcalc.cli.fit")
    cold = run_plain("list", "llama", cache_dir=tmp_path, watched=watched)
    warm = run_plain("list", "--json", cache_dir=tmp_path, watched=watched)
    assert cold.returncode == warm.returncode == 0
    assert "llmcalc.formulas.counting" in cold.stderr and warm.stderr.strip().splitlines()[-1] == "LOADED"
    assert len(list(tmp_path.glob("list-*.pickle"))) == 1
    assert {"name": "llama-2-7b", "repo_id": "meta-llama/Llama-2-7b-hf", "config": "published",
            "model_type": "llama", "family": "llama", "num_layers": 32, "hidden_size": 4096,
            "num_heads": 32, "num_kv_heads": 32, "total_params": 6_738_415_616,
            "active_params": 6_738_415_616} in json.loads(warm.stdout)
    run_plain("fit", "--help", cache_dir=tmp_path)
    kept = run_plain("fit", "--help", cache_dir=tmp_path, watched=watched)
    assert kept.returncode == 0 and kept.stdout.startswith("Usage: llmcalc fit")
    assert kept.stderr.strip().splitlines()[-1] == "LOADED"  # not even fit's module


def test_a_changed_data_table_is_a_new_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The declared-defaults and hardware tables shape a spec as much as the code does."""
    (tmp_path / "module.py").write_text("x = 1\n")
    table = tmp_path / "inputs" / "family_defaults.json"
    table.parent.mkdir()
    table.write_text("{}")
    monkeypatch.setattr(speccache, "PACKAGE", tmp_path)
    speccache._fingerprint.cache_clear()
    before = speccache._fingerprint()
    table.write_text('{"llama": {}}')
    speccache._fingerprint.cache_clear()
    changed = speccache._fingerprint()
    (tmp_path / "notes.txt").write_text("not read")
    speccache._fingerprint.cache_clear()
    unchanged = speccache._fingerprint()
    speccache._fingerprint.cache_clear()
    assert changed != before
    assert unchanged == changed  # other files are not part of the key
