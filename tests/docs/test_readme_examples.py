"""Every `llmcalc …` command the README and the docs/ pages show runs, exits as documented and prints
sane figures.

Commands are read from each page's ```sh blocks (a trailing backslash continues a line, `#` starts
a comment) and from `$ llmcalc …` lines in other blocks, whose output the page quotes. The files
the examples name (path/to/config.json, bad.json, my-model.yaml, models/) are written into a
temporary folder first; only `verify path/to/checkpoint/` (needs safetensors files, tested in
test_verify.py) and `--verify` over every bundled config (what `make test` runs after the suite)
are left out.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers import docs

from llmcalc import load_spec
from llmcalc.inputs import bundled

REPO = docs.REPO
README = docs.text(docs.README)
DOCS = docs.all_text()  # README.md and docs/*.md

SKIP = {
    "llmcalc verify path/to/checkpoint/": "needs safetensors files: tests/verify/test_verify.py",
    "llmcalc check configs/ my-model.yaml --verify": "make test runs check configs/ --verify",
    "llmcalc count Qwen/Qwen2.5-72B": "needs the Hub: tests/inputs/test_hub.py, against a fake one",
    "llmcalc count org/name --revision v1.0 --json": "needs the Hub: tests/inputs/test_hub.py",
}


def readme_commands() -> list[str]:
    commands = []
    for lang, body in re.findall(r"```(\w*)\n(.*?)```", DOCS, flags=re.S):
        joined = body.replace("\\\n", " ")
        for line in joined.splitlines():
            line = line.strip()
            if lang == "sh":
                line = line.split(" #", 1)[0].strip()
            elif line.startswith("$ "):
                line = line[2:]
            else:
                continue
            if line.startswith("llmcalc "):
                line = line.split(" > ", 1)[0]  # a redirection to a file: the command's output
                commands.append(" ".join(line.split()))
    return commands


def readme_quoted_outputs() -> dict[str, str]:
    """`$ llmcalc …` followed by the lines it prints, up to the end of the block."""
    quoted = {}
    for body in re.findall(r"```\w*\n(\$ llmcalc .*?)```", DOCS, flags=re.S):
        first, _, rest = body.partition("\n")
        quoted[first[2:].strip()] = rest
    return quoted


COMMANDS = readme_commands()
PERCENT = re.compile(r"([+-]?\d[\d,]*(?:\.\d+)?)%")


def test_the_readme_has_examples() -> None:
    assert len(COMMANDS) >= 20
    assert "llmcalc count gpt2-medium" in COMMANDS
    front = [c for c in COMMANDS if c in README]
    assert len(front) >= 10  # the front page's own examples


def test_every_docs_page_is_linked_from_the_readme() -> None:
    for path in docs.PAGES[1:]:
        assert f"](docs/{path.name})" in README, f"README.md does not link docs/{path.name}"


@pytest.fixture(scope="module")
def ggufs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The GGUFs of memory --engine llama.cpp's examples (68 MB), written once for the module."""
    from helpers import tiny_gguf

    folder = tmp_path_factory.mktemp("ggufs")
    tiny_gguf.write(folder / "model.gguf", "llama")
    tiny_gguf.write(folder / "mixtral.gguf", "llama", n_expert=4, n_layer=9)
    return folder


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ggufs: Path) -> Path:
    """The files the README's examples name, in a temporary working folder (the GGUFs hard links
    to the module's one copy: a hundred examples, not a hundred copies of them in the temp folder)."""
    gpt2 = load_spec("gpt2")
    config = {**gpt2.config, "model_type": gpt2.model_type}
    (tmp_path / "path/to").mkdir(parents=True)
    (tmp_path / "path/to/config.json").write_text(json.dumps(config))
    llama = load_spec("tinyllama-1.1b")
    bad = {**llama.config, "model_type": "llama", "hidden_size": 770, "num_attention_heads": 12}
    bad.pop("head_dim", None)
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    (tmp_path / "models").mkdir()
    shutil.copy(bundled.paths()[0], tmp_path / "models")
    shutil.copy(bundled.paths()[0], tmp_path / "my-model.yaml")
    (tmp_path / "configs").symlink_to(REPO / "configs")
    for name in ("model.gguf", "mixtral.gguf"):
        os.link(ggufs / name, tmp_path / name)
    # llama3.1:8b as Ollama keeps a pulled model: its manifest naming the GGUF blob (the tiny llama)
    ollama = tmp_path / "ollama-models"
    digest = hashlib.sha256((ggufs / "model.gguf").read_bytes()).hexdigest()
    (ollama / "blobs").mkdir(parents=True)
    os.link(ggufs / "model.gguf", ollama / "blobs" / f"sha256-{digest}")
    manifest = ollama / "manifests/registry.ollama.ai/library/llama3.1/8b"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"layers": [
        {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}"}]}))
    monkeypatch.setenv("OLLAMA_MODELS", str(ollama))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _sane(command: str, text: str) -> None:
    """No figure a reader would stop at: no percentage beyond ±100 %, no 1e+03M, nothing cut."""
    for m in PERCENT.finditer(text):
        value = float(m.group(1).replace(",", ""))
        assert -100 <= value <= 100, f"{command}: {m.group(0)} in\n{text}"
    assert not re.search(r"\de\+\d+[KMBTPEZYRQ]\b", text), f"{command}:\n{text}"
    assert "…" not in text, f"{command}: cut text\n{text}"


def _param(command: str) -> Any:
    args = shlex.split(command)[1:]
    verify = args[0] == "verify" or "--verify" in args  # builds with transformers
    return pytest.param(command, marks=pytest.mark.torch) if verify else command


@pytest.mark.parametrize("command", [_param(c) for c in COMMANDS])
def test_readme_example_runs(cli: Any, workdir: Path, command: str) -> None:
    if command in SKIP:
        pytest.skip(SKIP[command])
    args = shlex.split(command)[1:]
    if args[0] == "serve":
        pytest.skip("starts a server until Ctrl-C: tests/web/test_serve_api.py and test_serve_browser.py")
    if args[0] == "verify" or "--verify" in args:
        pytest.importorskip("transformers")
    run = cli(*args)
    quoted = readme_quoted_outputs()
    if command in quoted:  # the README shows what it prints
        assert (run.stdout + run.stderr).strip() == quoted[command].strip()
        return
    assert run.code == 0, f"{command}: exit {run.code}\n{run.stderr}"
    # stderr holds the notes alone (note:/warning: lines, wrapped at the width), never an error
    assert run.stderr == "" or run.stderr.startswith(("note: ", "warning: ")), run.stderr
    assert "error:" not in run.stderr and "Traceback" not in run.stderr
    if "--json" in args or "--format" in args and "json" in args:
        json.loads(run.stdout)
    _sane(command, run.stdout)


def test_install_hints_name_the_distribution() -> None:
    """`llmcalc` on PyPI is another project and `llmcalc-exact` is on no index: every hint installs
    from the clone (this copy's folder, read from its installed metadata)."""
    from llmcalc.errors import MissingExtraError

    pyproject = (REPO / "pyproject.toml").read_text()
    assert re.search(r'^name = "llmcalc-exact"$', pyproject, flags=re.M)
    assert re.search(r'^llmcalc = "llmcalc.cli:run"$', pyproject, flags=re.M)
    assert str(MissingExtraError("building the transformers model")) == (
        f"building the transformers model needs the 'verify' extra: pip install -e '{REPO}[verify]'")
    assert not re.search(r"pip install '?llmcalc[\[' ]", DOCS)
    assert not re.search(r"pip install '?llmcalc-exact", DOCS)
    assert '["llmcalc"]' not in DOCS and '"llmcalc-exact"]' not in DOCS
    assert "pip install -e '/path/to/this/clone[verify]'" in DOCS


def _yaml_blocks(text: str) -> list[Any]:
    import yaml

    return [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", text, flags=re.S)]


def test_snippets_run_from_a_clone() -> None:
    """No tag to pin (none is published), no package from an index: the Action is `uses: ./`, the
    pre-commit hook is a local one running the clone's own install (`make run`'s .venv)."""
    assert not re.search(r"llmcalc@v\d|rev: v\d|OWNER/llmcalc", DOCS)
    blocks = [b for b in _yaml_blocks(DOCS) if isinstance(b, dict)]
    hooks = [h for b in blocks for r in b.get("repos", ()) for h in r["hooks"]]
    assert [r["repo"] for b in blocks for r in b.get("repos", ())] == ["local"]
    (hook,) = hooks
    assert (hook["entry"], hook["language"]) == (".venv/bin/llmcalc check", "system")
    assert "additional_dependencies" not in hook
    assert re.search(hook["files"], "configs/llama-2-7b.yaml")
    steps = [s for b in blocks for j in b.get("jobs", {}).values() for s in j["steps"]]
    assert [s["uses"] for s in steps if "uses" in s] == ["actions/checkout@v4", "./"]
    assert (REPO / "action.yml").is_file()
    assert '"${GITHUB_ACTION_PATH}${extras:+[$extras]}"' in (REPO / "action.yml").read_text()
    assert "pip install .  " in DOCS  # GitLab: from the checkout


def test_pre_commit_hook_is_shipped() -> None:
    import yaml

    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    (hook,) = hooks
    assert {"id", "name", "entry", "language"} <= set(hook)
    assert (hook["id"], hook["entry"], hook["language"]) == ("llmcalc-check", "llmcalc check",
                                                             "python")
    assert re.search(hook["files"], "configs/llama-2-7b.yaml")
    assert re.search(hook["files"], "models/mine/config.json")
    assert not re.search(hook["files"], ".pre-commit-config.yaml")
    assert "id: llmcalc-check" in DOCS
