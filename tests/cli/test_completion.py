"""Shell completion (typer's --install-completion / --show-completion) and models from the local
Hugging Face cache, both completed and counted by repo id."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO

from llmcalc import load_spec
from llmcalc.cli._complete import complete_model


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A local hub cache holding one small model, tiny-org/tiny-gpt2, at refs/main."""
    spec = load_spec("gpt2")
    repo = tmp_path / "hub" / "models--tiny-org--tiny-gpt2"
    snap = repo / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    config = {**spec.config, "model_type": "gpt2", "n_layer": 2}
    (snap / "config.json").write_text(json.dumps(config))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    (tmp_path / "hub" / "models--no--config" / "snapshots" / "x").mkdir(parents=True)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    return tmp_path / "hub"


def test_complete_bundled_names_and_repo_ids() -> None:
    assert complete_model("llama-2") == ["llama-2-13b", "llama-2-70b", "llama-2-7b"]
    assert "meta-llama/Llama-2-7b-hf" in complete_model("meta-llama/")
    assert complete_model("MISTRAL-") == [  # file-name order: "-" sorts before ".yaml"
        "mistral-7b-v0.3", "mistral-7b", "mistral-nemo-12b-instruct", "mistral-nemo-12b",
        "mistral-small-24b", "mistral-community/pixtral-12b"]


def test_complete_and_count_from_the_local_cache(hub: Path, cli: Any) -> None:
    assert complete_model("tiny-") == ["tiny-org/tiny-gpt2"]
    assert complete_model("no/") == []  # a cached repo without a config.json is left out
    data = cli("count", "tiny-org/tiny-gpt2", "--json").json()
    assert data["num_layers"] == 2
    assert data["total_params"] == 124_439_808 - 10 * 7_087_872


def test_complete_files_and_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my-model.yaml").write_text("{}")
    (tmp_path / "my-ckpt").mkdir()
    (tmp_path / "my-notes.txt").write_text("")
    assert complete_model("my-") == ["my-ckpt/", "my-model.yaml"]


def _shell(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; sys.argv[0] = 'llmcalc'; from llmcalc.cli import run; run()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO), **env})


def test_bash_completion_end_to_end() -> None:
    out = _shell({"_LLMCALC_COMPLETE": "complete_bash", "COMP_WORDS": "llmcalc count qwen3-",
                  "COMP_CWORD": "2"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["qwen3-0.6b", "qwen3-1.7b", "qwen3-14b", "qwen3-235b-a22b",
                                  "qwen3-30b-a3b", "qwen3-32b", "qwen3-4b", "qwen3-8b",
                                  "qwen3-coder-30b-a3b", "qwen3-coder-480b-a35b",
                                  "qwen3-next-80b-a3b", "qwen3-vl-30b-a3b", "qwen3-vl-8b"]
    out = _shell({"_LLMCALC_COMPLETE": "complete_bash", "COMP_WORDS": "llmcalc fl",
                  "COMP_CWORD": "1"})
    assert out.stdout.split() == ["flops"]


def test_show_completion_prints_the_script() -> None:
    # the shell named wins over the one found among the parent processes (none, run detached)
    out = _shell({}, "--show-completion", "bash")
    assert out.returncode == 0, out.stderr
    assert "_LLMCALC_COMPLETE=complete_bash" in out.stdout
    assert "complete -o default -F _llmcalc_completion llmcalc" in out.stdout
    zsh = _shell({"SHELL": "/bin/bash"}, "--show-completion", "zsh")
    assert zsh.returncode == 0, zsh.stderr
    assert zsh.stdout.startswith("#compdef llmcalc\n")


def test_completion_without_a_shell_to_find(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    # no shell among the parent processes (a CI runner, a detached job): $SHELL's, else one line
    import typer._completion_shared as shared

    from llmcalc.cli._complete import shell_completion

    monkeypatch.setattr(shared, "_get_shell_name", lambda: None)
    monkeypatch.setenv("SHELL", "/usr/bin/fish")
    assert shell_completion(["--show-completion"]) == 0
    assert "complete --command llmcalc" in capsys.readouterr().out
    monkeypatch.delenv("SHELL")
    assert shell_completion(["--show-completion"]) == 2
    assert capsys.readouterr().err == (
        "error: --show-completion: no shell found running llmcalc, nor in $SHELL; name one: "
        "--show-completion bash | zsh | fish | powershell | pwsh\n")
