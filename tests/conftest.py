from __future__ import annotations

import importlib.abc
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from llmcalc.cli import app

REPO = Path(__file__).resolve().parent.parent

# The spec cache of CLI runs (llmcalc/inputs/speccache.py) goes to a fresh folder, never ~/.cache.
os.environ.setdefault("LLMCALC_CACHE_DIR", tempfile.mkdtemp(prefix="llmcalc-test-cache-"))
# Ollama's models folder (llmcalc.inputs.ollama) is an empty one, never this machine's ~/.ollama.
os.environ["OLLAMA_MODELS"] = tempfile.mkdtemp(prefix="llmcalc-test-ollama-")
# Piped output follows COLUMNS (llmcalc/render): tests draw at the fixed 120 unless they set it.
os.environ.pop("COLUMNS", None)


# what a test marked `torch` may import; a run that leaves those tests out (`-m "not torch"`) is
# held to that: the others import none of it, as where the verify extra is not installed
HEAVY = {"torch", "transformers", "peft", "bitsandbytes", "accelerate", "torchvision", "timm"}


class _Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.split(".", 1)[0] in HEAVY:
            raise ModuleNotFoundError(f"No module named {name!r} (a test not marked torch)", name=name)
        return None


def pytest_configure(config: pytest.Config) -> None:
    if "not torch" in (config.option.markexpr or ""):
        sys.meta_path.insert(0, _Refuse())


class Run:
    """The outcome of one CLI call: exit code, stdout, stderr."""

    def __init__(self, code: int, stdout: str, stderr: str) -> None:
        self.code, self.stdout, self.stderr = code, stdout, stderr

    def json(self) -> Any:
        return json.loads(self.stdout)


@pytest.fixture
def cli() -> Any:
    runner = CliRunner()

    def invoke(*args: str) -> Run:
        result = runner.invoke(app, list(args), catch_exceptions=False)
        return Run(result.exit_code, result.stdout, result.stderr)

    return invoke


@pytest.fixture
def write(tmp_path: Path) -> Any:
    """Write a config file in a temp folder and return its path as a string."""

    def _write(name: str, content: str | dict[str, Any]) -> str:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        text = content if isinstance(content, str) else json.dumps(content)
        path.write_text(text, encoding="utf-8")
        return str(path)

    return _write


@pytest.fixture
def flopless_5090(monkeypatch: pytest.MonkeyPatch) -> None:
    """The RTX 5090's row as it stood before its FLOP rate was read (no dense bf16 figure): every
    card in hardware.json has one now, so the table-card refusal is tested on this stand-in. The
    other peaks stay, so the fitted engines' figures (which take the FP16 and INT8 peaks) do not
    move."""
    from dataclasses import replace

    from llmcalc.planning import hardware

    row = hardware.ACCELERATORS["rtx-5090"]
    monkeypatch.setitem(hardware.ACCELERATORS, "rtx-5090", replace(row, peak_flops=0))
