"""The package surface: public API, help texts, and no heavy imports on the CLI path."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import llmcalc
from llmcalc.cli import app


def test_public_api_is_pinned() -> None:
    assert llmcalc.__all__ == [
        "Attention", "ConfigError", "DType", "GroupCount", "LLMCalcError", "LayerGroup",
        "MissingExtraError", "ModelSpec", "MoE", "ParamCount", "Shape", "Tensor",
        "UnknownModelError", "UsageError", "attention_flops_per_token", "count",
        "forward_flops_per_sequence", "forward_flops_per_token", "kv_cache_bytes",
        "kv_cache_bytes_per_token", "load_spec", "parse_context", "parse_count", "parse_dtype",
        "spec_from_dict", "training_flops_per_token", "weight_bytes", "weight_flops_per_token",
    ]
    for name in llmcalc.__all__:
        assert hasattr(llmcalc, name), name


def test_every_command_has_help(cli: Any) -> None:
    names = [c.name for c in app.registered_commands]
    assert {"count", "list"} <= set(names)
    for name in names:
        run = cli(name, "--help")
        assert run.code == 0, name
        summary = app.registered_commands[names.index(name)].callback.__doc__  # type: ignore[union-attr]
        assert summary and summary.split("\n")[0].strip(), name


def test_cli_import_does_not_load_torch_or_transformers() -> None:
    code = (
        "import sys, llmcalc, llmcalc.cli; "
        "from llmcalc.cli import app; "
        "print(','.join(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


BLOCK_TORCH = (
    "import sys\n"
    "for m in ('torch', 'transformers', 'safetensors'):\n"
    "    sys.modules[m] = None\n"
)


def test_count_works_without_the_verify_extra(tmp_path: Any) -> None:
    (tmp_path / "sitecustomize.py").write_text(BLOCK_TORCH)
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-m", "llmcalc", "count", "llama-3-8b", "--json"],
        capture_output=True, text=True, env=env,
    )
    assert out.returncode == 0, out.stderr
    assert '"total_params": 8030261248' in out.stdout


def test_docstring_example_runs() -> None:
    import doctest

    assert doctest.testmod(llmcalc).failed == 0


def test_readme_mentions_every_command_and_option() -> None:
    """The README and docs/ document what the CLI offers; a new command or option without a word there
    fails."""
    import typer.main
    from helpers import docs

    readme = docs.all_text()
    group = typer.main.get_command(app)
    missing = []
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        if f"llmcalc {name}" not in readme:
            missing.append(f"llmcalc {name}")
        for param in command.params:
            for opt in param.opts:
                if opt.startswith("--") and opt != "--help" and opt not in readme:
                    missing.append(f"llmcalc {name} {opt}")
    assert missing == []


def test_no_tracked_file_holds_a_merge_conflict_marker() -> None:
    """A conflict left in a merged file (a doc, a table) reads as content: none may remain."""
    root = __import__("pathlib").Path(__file__).parents[2]
    tracked = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True,
                             check=True).stdout.split()
    markers = ("<<<<<<< ", ">>>>>>> ")
    found = []
    for name in tracked:
        path = root / name
        if path.suffix not in {".md", ".py", ".json", ".js", ".html", ".css", ".yaml", ".toml",
                               ".txt", ".cfg"} or not path.is_file():
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if line.startswith(markers):
                found.append(f"{name}:{n}")
    assert found == []


def test_readme_counts_the_rows_and_logs_it_names() -> None:
    """The README's docs table names how many measured rows and engine logs back latency --engine
    and fit --engine: the counts of the files themselves."""
    import json
    import re
    from pathlib import Path

    root = Path(__file__).parents[2]
    readme = (root / "README.md").read_text()
    rows = json.loads((root / "llmcalc/planning/measured_speed.json").read_text())
    rows = rows["rows"] if isinstance(rows, dict) else rows
    logs = json.loads((root / "tests/data/engine_logs.json").read_text())["logs"]
    assert re.findall(r"fitted on ([\d,]+) published measurements", readme) == [f"{len(rows):,}"]
    assert re.findall(r"held to ([\d,]+) real start-up logs", readme) == [f"{len(logs):,}"]
