"""`llmcalc check` as CI runs it: GitHub annotations on the line, JUnit XML, GitLab Code Quality,
`--write-expected`, `--changed`, the walk's skipped files, config.json's llmcalc.yaml, and the
GitHub Action (action.yml) run step by step."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from llmcalc.render.check import check_github
from llmcalc.verify.check import CheckRun, FileCheck, Location, Skipped

REPO = Path(__file__).resolve().parents[2]

# A GPT-2 of 2 layers of width 32: 30,720 parameters, 25,408 of them in the layers
# (tests/test_check.py works them out by hand).
FIELDS = """\
name: tiny-gpt2
model_type: gpt2
n_embd: 32
n_layer: 2
n_head: 4
vocab_size: 100
n_positions: 64
"""
BAD = f"""\
# a tiny GPT-2
{FIELDS}expected:
  layer_params: 25408     # two blocks
  total_params: 30721     # one too many
"""
GOOD = BAD.replace("30721     # one too many", "30720     # as counted")
CONFIG_JSON = {"model_type": "gpt2", "n_embd": 32, "n_layer": 2, "n_head": 4, "vocab_size": 100,
               "n_positions": 64}
SIDECAR = "# the expected figures of config.json\nexpected:\n  total_params: 30000\n"

ANNOTATIONS = [
    "::error file=models/bad.yaml,line=11,title=llmcalc check%3A total_params::"
    "total_params is 30,720, expected 30,721",
    "::error file=models/broken.yaml,line=2,title=llmcalc check::"
    "invalid YAML at line 2, column 1: did not find expected ',' or ']'",
    "::error file=models/ckpt/llmcalc.yaml,line=3,title=llmcalc check%3A total_params::"
    "total_params is 30,720, expected 30,000",
    "::warning file=models/notes.json,title=llmcalc check%3A skipped::"
    "not named config.json: check reads config.json and YAML files",
]


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """models/ with a passing, a failing and an unreadable YAML config, a config.json whose
    llmcalc.yaml expects a wrong total, a JSON file that is no config and a hidden folder; the
    current folder is its parent, so files are named models/…"""
    folder = tmp_path / "models"
    (folder / "ckpt").mkdir(parents=True)
    (folder / ".cache").mkdir()
    (folder / "bad.yaml").write_text(BAD)
    (folder / "good.yaml").write_text(GOOD)
    (folder / "broken.yaml").write_text("model_type: [gpt2\n")
    (folder / "ckpt" / "config.json").write_text(json.dumps(CONFIG_JSON))
    (folder / "ckpt" / "llmcalc.yaml").write_text(SIDECAR)
    (folder / "notes.json").write_text("{}")
    (folder / ".cache" / "x.yaml").write_text("a: 1\n")
    monkeypatch.chdir(tmp_path)
    return folder


def without_timing(text: str) -> str:
    return re.sub(r" \(\d+\.\d+ s\)", "", text)


# ---- formats -------------------------------------------------------------------------------------


def test_github_annotations_name_the_file_and_line(cli: Any, models: Path) -> None:
    r = cli("check", "models", "--format", "github")
    assert r.code == 2  # an unreadable file: as without --format
    assert without_timing(r.stdout).splitlines() == [
        *ANNOTATIONS, "4 files: 1 pass, 2 fail, 1 error"
    ]
    assert (models / "bad.yaml").read_text().splitlines()[10].startswith("  total_params: 30721")
    assert SIDECAR.splitlines()[2] == "  total_params: 30000"


def test_github_exit_code_of_a_failure_alone(cli: Any, models: Path) -> None:
    r = cli("check", "models/bad.yaml", "models/good.yaml", "--format", "github")
    assert r.code == 1
    assert without_timing(r.stdout).splitlines() == [ANNOTATIONS[0], "2 files: 1 pass, 1 fail, 0 error"]


def test_github_escapes_properties_and_messages() -> None:
    run = CheckRun(
        (FileCheck("a,b:c%d.yaml", "error", "50% off: x\ry\nz", at=Location("a,b:c%d.yaml", 3)),),
        0.0,
        (Skipped(Path("odd\n::error::x.json"), "not named config.json"),),
    )
    lines = check_github(run).splitlines()
    # control characters are written out first (\r, \n as two characters): never a line break
    assert lines[0] == (
        "::error file=a%2Cb%3Ac%25d.yaml,line=3,title=llmcalc check::50%25 off: x\\ry\\nz"
    )
    assert lines[1] == (
        "::warning file=odd\\n%3A%3Aerror%3A%3Ax.json,title=llmcalc check%3A skipped::"
        "not named config.json"
    )
    assert len(lines) == 3


def test_junit_validates_and_counts(cli: Any, models: Path) -> None:
    import junitparser
    import xmlschema

    r = cli("check", "models", "--format", "junit")
    assert r.code == 2
    xmlschema.XMLSchema(str(REPO / "tests" / "data" / "junit.xsd")).validate(r.stdout)
    (suite,) = junitparser.JUnitXml.fromstring(r.stdout)
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (5, 2, 1, 1)
    outcome = {
        case.name: [(type(x).__name__, x.message) for x in case.result] for case in suite
    }
    assert outcome == {
        "models/bad.yaml": [("Failure", "total_params is 30,720, expected 30,721")],
        "models/broken.yaml": [
            ("Error", "invalid YAML at line 2, column 1: did not find expected ',' or ']'")
        ],
        "models/ckpt/config.json": [("Failure", "total_params is 30,720, expected 30,000")],
        "models/good.yaml": [],
        "models/notes.json": [
            ("Skipped", "not named config.json: check reads config.json and YAML files")
        ],
    }
    failure = next(c for c in suite if c.name == "models/ckpt/config.json").result[0]
    assert failure.text == "models/ckpt/llmcalc.yaml:3: total_params is 30,720, expected 30,000"


def test_junit_of_a_passing_run(cli: Any, models: Path) -> None:
    import junitparser

    r = cli("check", "models/good.yaml", "--format", "junit")
    assert r.code == 0
    (suite,) = junitparser.JUnitXml.fromstring(r.stdout)
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (1, 0, 0, 0)


def test_gitlab_code_quality(cli: Any, models: Path) -> None:
    r = cli("check", "models", "--format", "gitlab")
    assert r.code == 2
    issues = r.json()
    assert [(i["check_name"], i["severity"], i["location"]) for i in issues] == [
        ("llmcalc-check-total_params", "major", {"path": "models/bad.yaml", "lines": {"begin": 11}}),
        ("llmcalc-check-error", "critical", {"path": "models/broken.yaml", "lines": {"begin": 2}}),
        ("llmcalc-check-total_params", "major",
         {"path": "models/ckpt/llmcalc.yaml", "lines": {"begin": 3}}),
        ("llmcalc-check-skipped", "info", {"path": "models/notes.json", "lines": {"begin": 1}}),
    ]
    assert issues[0]["description"] == "total_params is 30,720, expected 30,721"
    fingerprints = [i["fingerprint"] for i in issues]
    assert len(set(fingerprints)) == 4
    assert cli("check", "models", "--format", "gitlab").json() == issues  # stable across runs


def test_json_and_a_ci_format_cannot_be_combined(cli: Any, models: Path) -> None:
    r = cli("check", "models", "--json", "--format", "junit")
    assert (r.code, r.stdout, r.stderr) == (2, "", "error: --json and --format junit cannot be combined\n")


# ---- what the walk leaves out ----------------------------------------------------------------------


def test_skipped_files_are_named_with_why(cli: Any, models: Path) -> None:
    (models / "lonely").mkdir()
    (models / "lonely" / "llmcalc.yaml").write_text(SIDECAR)
    r = cli("check", "models")
    note = "skipped " + " ".join(r.stdout.split("\nskipped ")[1].split())  # unwrapped
    assert note == (
        "skipped 2 files: models/lonely/llmcalc.yaml (llmcalc.yaml with no config.json beside "
        "it), models/notes.json (not named config.json: check reads config.json and YAML files)"
    )
    data = cli("check", "models", "--json").json()
    assert data["skipped"] == [
        {"file": "models/lonely/llmcalc.yaml", "why": "llmcalc.yaml with no config.json beside it"},
        {"file": "models/notes.json",
         "why": "not named config.json: check reads config.json and YAML files"},
    ]
    assert [f["file"] for f in data["files"]] == [
        "models/bad.yaml", "models/broken.yaml", "models/ckpt/config.json", "models/good.yaml"
    ]


def test_a_json_file_named_on_the_command_line_is_checked(cli: Any, models: Path) -> None:
    (models / "tiny.json").write_text(json.dumps(CONFIG_JSON))
    r = cli("check", "models/tiny.json", "--json")
    assert r.code == 0
    assert (r.json()["files"][0]["why"], r.json()["skipped"]) == ("nothing expected: valid", [])


def test_a_5000_character_name_is_one_line(cli: Any) -> None:
    r = cli("check", "a" * 5000)
    assert (r.code, r.stdout) == (2, "")
    assert r.stderr == (
        f"error: model '{'a' * 40}': 5,000 characters; names and paths are read up to 1,024\n"
    )


def test_a_long_path_component_is_a_missing_file(cli: Any) -> None:
    r = cli("check", "x" * 1000 + ".yaml", "--json")  # longer than a file name may be (ENAMETOOLONG)
    assert r.code == 2
    assert r.json()["files"][0]["why"] == "no such file or folder"


# ---- config.json's llmcalc.yaml --------------------------------------------------------------------


def test_sidecar_holds_config_json_figures(cli: Any, models: Path) -> None:
    (models / "ckpt" / "llmcalc.yaml").write_text("expected:\n  total_params: 30720\n")
    r = cli("check", "models/ckpt", "--json")
    assert r.code == 0
    (f,) = r.json()["files"]
    assert (f["file"], f["why"]) == ("models/ckpt/config.json", "total_params 30,720")
    # naming the sidecar checks its config.json
    assert cli("check", "models/ckpt/llmcalc.yaml", "--json").json()["files"][0]["file"] == (
        "models/ckpt/config.json"
    )


@pytest.mark.parametrize(
    "sidecar,config_extra,message",
    [
        ("expected: {total_params: 1}\nname: x\n", {},
         "models/ckpt/llmcalc.yaml: 'name': a sidecar of config.json holds expected: only"),
        ("expected: [1]\n", {},
         "models/ckpt/llmcalc.yaml: expected must be a mapping of figure names to values"),
        ("expected: {totl_params: 1}\n", {},
         "models/ckpt/llmcalc.yaml: expected.totl_params: unknown figure (did you mean "
         "total_params?)"),
        ("expected: {total_params: 1}\n", {"expected": {"total_params": 1}},
         "expected: given here and in models/ckpt/llmcalc.yaml; keep one"),
    ],
)
def test_bad_sidecar_is_an_error_on_its_line(
    cli: Any, models: Path, sidecar: str, config_extra: dict[str, Any], message: str
) -> None:
    (models / "ckpt" / "llmcalc.yaml").write_text(sidecar)
    (models / "ckpt" / "config.json").write_text(json.dumps({**CONFIG_JSON, **config_extra}))
    r = cli("check", "models/ckpt", "--json")
    assert r.code == 2
    assert r.json()["files"][0]["why"] == message


def test_bad_expected_entry_is_annotated_on_its_line(cli: Any, models: Path) -> None:
    (models / "ckpt" / "llmcalc.yaml").write_text("# c\nexpected:\n  totl_params: 1\n")
    r = cli("check", "models/ckpt", "--format", "github")
    assert r.stdout.splitlines()[0] == (
        "::error file=models/ckpt/llmcalc.yaml,line=3,title=llmcalc check::models/ckpt/llmcalc.yaml"
        ": expected.totl_params: unknown figure (did you mean total_params?)"
    )


# ---- --write-expected ------------------------------------------------------------------------------


def test_write_expected_then_check_passes_and_keeps_comments(cli: Any, models: Path) -> None:
    plain = models / "plain.yaml"
    plain.write_text(f"# no figures yet\n{FIELDS}layer_types:\n  - a  # kept\n  - b\n")
    good_before = (models / "good.yaml").stat().st_mtime_ns
    r = cli("check", "models", "--write-expected", "--json")
    assert r.code == 2  # broken.yaml still cannot be read
    whys = {f["file"]: (f["status"], f["why"]) for f in r.json()["files"]}
    assert whys["models/bad.yaml"] == (
        "pass", "wrote total_params 30,720 (was 30,721); layer_params 25,408, total_params 30,720"
    )
    assert whys["models/ckpt/config.json"] == (
        "pass", "wrote in models/ckpt/llmcalc.yaml total_params 30,720 (was 30,000); "
        "total_params 30,720"
    )
    assert whys["models/good.yaml"][1].startswith("expected: up to date; ")
    assert whys["models/plain.yaml"] == ("pass", "wrote total_params 30,720; total_params 30,720")
    # only the figures' characters changed; comments, order and style as they were
    assert (models / "bad.yaml").read_text() == BAD.replace("30721     #", "30720     #")
    assert (models / "ckpt" / "llmcalc.yaml").read_text() == SIDECAR.replace("30000", "30720")
    assert plain.read_text() == (
        f"# no figures yet\n{FIELDS}layer_types:\n  - a  # kept\n  - b\n"
        "expected:\n  total_params: 30720\n"
    )
    assert (models / "good.yaml").stat().st_mtime_ns == good_before  # nothing to write: untouched
    assert (models / "broken.yaml").read_text() == "model_type: [gpt2\n"
    (models / "broken.yaml").unlink()
    assert cli("check", "models").code == 0


def test_write_expected_keeps_published_tolerances_and_adds_to_the_block(
    cli: Any, models: Path
) -> None:
    path = models / "tol.yaml"
    path.write_text(f"{FIELDS}expected:\n  total_params: {{value: 3.1e+4, rel: 0.01}}  # \"31K\"\n"
                    "  # more below\nsource: a note\n")
    r = cli("check", str(path), "--write-expected", "--json")
    assert r.code == 0
    assert path.read_text() == (
        f"{FIELDS}expected:\n  total_params: {{value: 3.1e+4, rel: 0.01}}  # \"31K\"\n"
        "  # more below\nsource: a note\n"
    )  # a published figure with a tolerance is the publisher's: nothing to write
    path.write_text(f"{FIELDS}expected:\n  embedding_params: 1  # wte and wpe\nsource: a note\n")
    cli("check", str(path), "--write-expected")
    assert path.read_text() == (
        f"{FIELDS}expected:\n  embedding_params: 5248  # wte and wpe\n  total_params: 30720\n"
        "source: a note\n"
    )


def test_write_expected_into_a_flow_block(cli: Any, models: Path) -> None:
    """A flow-style block is written by ruamel.yaml whole: comments and order kept."""
    path = models / "flow.yaml"
    path.write_text(f"# top\n{FIELDS}expected: {{layer_params: 1}}  # figures\nsource: x\n")
    r = cli("check", str(path), "--write-expected", "--json")
    assert r.code == 0
    assert r.json()["files"][0]["why"].startswith("wrote layer_params 25,408 (was 1), total_params")
    assert path.read_text() == (
        f"# top\n{FIELDS}expected: {{layer_params: 25408, total_params: 30720}} # figures\n"
        "source: x\n"
    )  # (ruamel.yaml puts one space before the comment it carries)


def test_write_expected_refuses_config_json_without_sidecar(cli: Any, models: Path) -> None:
    (models / "ckpt" / "llmcalc.yaml").unlink()
    before = (models / "ckpt" / "config.json").read_text()
    r = cli("check", "models/ckpt", "--write-expected", "--json")
    assert r.code == 2
    assert r.json()["files"][0]["why"] == (
        "--write-expected: config.json is not rewritten (transformers reads it); its expected "
        "figures live in models/ckpt/llmcalc.yaml: create it holding expected: {total_params: 30720}"
    )
    assert (models / "ckpt" / "config.json").read_text() == before
    assert not (models / "ckpt" / "llmcalc.yaml").exists()


def test_write_expected_needs_files(cli: Any) -> None:
    r = cli("check", "--write-expected")
    assert (r.code, r.stderr) == (2, "error: --write-expected: name the config files or folders to write\n")
    r = cli("check", "gpt2", "--write-expected", "--json")
    assert r.json()["files"][0]["why"] == (
        "--write-expected: a repo id or bundled name has no file to write"
    )


def test_write_expected_on_every_bundled_config_changes_only_figures(
    cli: Any, tmp_path: Path
) -> None:
    """Every bundled config, its exact totals made wrong, is written back as it was (a
    mixture-of-experts config without active_params gains that one line)."""
    from llmcalc.inputs import bundled

    folder = tmp_path / "configs"
    folder.mkdir()
    originals = {}
    for path in bundled.paths():
        text = path.read_text(encoding="utf-8")
        originals[path.name] = text
        wrong = re.sub(r"(?m)^(  total_params: )(\d+)", lambda m: m[1] + str(int(m[2]) + 1), text)
        (folder / path.name).write_text(wrong, encoding="utf-8")
    tampered = sum(originals[n] != (folder / n).read_text() for n in originals)
    assert tampered > 150
    r = cli("check", str(folder), "--write-expected", "--json")
    assert r.code == 0, r.stdout
    for name, before in originals.items():
        after = (folder / name).read_text(encoding="utf-8").splitlines()
        added = [line for line in after if line not in before.splitlines()]
        assert all(re.fullmatch(r"  active_params: \d+", line) for line in added), (name, added)
        assert [line for line in after if line not in added] == before.splitlines(), name


# ---- --changed -------------------------------------------------------------------------------------


def git(*args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    done = subprocess.run(["git", *args], capture_output=True, text=True, env=env, check=True)
    return done.stdout


@pytest.fixture
def pull_request(models: Path) -> Path:
    """A repository with models/ on main, and a branch that changes bad.yaml's sidecar-less
    neighbour good.yaml, ckpt's llmcalc.yaml and adds notes2.json (left uncommitted: new.yaml)."""
    git("init", "-q", "-b", "main")
    git("add", ".")
    git("commit", "-qm", "models")
    git("checkout", "-qb", "pr")
    (models / "good.yaml").write_text(GOOD + "# touched\n")
    (models / "ckpt" / "llmcalc.yaml").write_text(SIDECAR + "# touched\n")
    (models / "notes2.json").write_text("{}")
    git("add", ".")
    git("commit", "-qm", "change")
    (models / "new.yaml").write_text(GOOD)
    return models


def test_changed_checks_only_the_files_changed(cli: Any, pull_request: Path) -> None:
    r = cli("check", "--changed", "main", "--json")
    assert r.code == 1  # ckpt's sidecar expects 30,000
    data = r.json()
    assert [(f["file"], f["status"]) for f in data["files"]] == [
        ("models/ckpt/config.json", "fail"), ("models/good.yaml", "pass"), ("models/new.yaml", "pass")
    ]
    assert [s["file"] for s in data["skipped"]] == ["models/notes2.json"]
    only = cli("check", "models/ckpt", "--changed", "main", "--json").json()
    assert [f["file"] for f in only["files"]] == ["models/ckpt/config.json"]


def test_changed_with_nothing_changed_passes(cli: Any, pull_request: Path) -> None:
    r = cli("check", "--changed", "pr", "models/bad.yaml")
    assert r.code == 0
    assert "no config file changed against pr" in r.stdout


@pytest.mark.parametrize(
    "base,message",
    [
        ("nope", "--changed 'nope': Not a valid object name nope"),
        ("-x", "--changed '-x': not a git branch, tag or commit"),
    ],
)
def test_changed_bad_base(cli: Any, pull_request: Path, base: str, message: str) -> None:
    r = cli("check", f"--changed={base}")
    assert (r.code, r.stdout, r.stderr) == (2, "", f"error: {message}\n")


def test_changed_outside_a_repository(cli: Any, models: Path) -> None:
    r = cli("check", "--changed", "main")
    assert r.code == 2
    assert r.stderr.startswith("error: --changed 'main': not a git repository")


# ---- the GitHub Action -------------------------------------------------------------------------------


def action_steps() -> list[dict[str, Any]]:
    action = yaml.safe_load((REPO / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    steps: list[dict[str, Any]] = action["runs"]["steps"]
    return steps


def substitute(text: str, inputs: dict[str, str]) -> str:
    return re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: inputs[m[1]], text)


def test_action_installs_the_package_and_annotates(models: Path, tmp_path: Path) -> None:
    """action.yml's run: steps, run as GitHub runs them (bash -eo pipefail) with its inputs put
    in: the package installed from the action's own folder into a fresh environment (offline:
    its dependencies are this environment's), then `check` printing annotations."""
    steps = action_steps()
    assert [s["uses"] for s in steps if "uses" in s] == ["actions/setup-python@v5"]
    action = yaml.safe_load((REPO / "action.yml").read_text())
    inputs = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    inputs["paths"] = "models/bad.yaml models/good.yaml"
    # the action's files, where GitHub checks them out
    action_path = tmp_path / "action"
    action_path.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, action_path)
    shutil.copytree(REPO / "llmcalc", action_path / "llmcalc",
                    ignore=shutil.ignore_patterns("__pycache__"))
    # setup-python's part: a Python whose packages are this environment's, llmcalc not among them
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python*/site-packages"))
    (site / "outer.pth").write_text(
        "\n".join(p for p in sys.path if p.endswith("site-packages")) + "\n"
    )
    env = {
        **os.environ,
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_ACTION_PATH": str(action_path),
        # offline: nothing from an index; the build uses this environment's setuptools
        "PIP_NO_INDEX": "1", "PIP_NO_DEPS": "1", "PIP_NO_BUILD_ISOLATION": "0",
    }
    env.pop("PYTHONPATH", None)
    outputs = []
    for step in steps:
        if "run" not in step:
            continue
        assert step["shell"] == "bash"
        step_env = {k: substitute(str(v), inputs) for k, v in step.get("env", {}).items()}
        script = tmp_path / "step.sh"
        script.write_text(substitute(step["run"], inputs))
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            capture_output=True, text=True, env={**env, **step_env}, cwd=models.parent, timeout=300,
        )
        outputs.append(done)
    install, check = outputs
    assert install.returncode == 0, install.stderr
    assert (venv / "bin" / "llmcalc").exists()
    assert check.returncode == 1, check.stderr
    assert without_timing(check.stdout).splitlines() == [
        ANNOTATIONS[0], "2 files: 1 pass, 1 fail, 0 error"
    ]


def test_the_docs_show_what_the_action_and_annotations_are() -> None:
    """docs/check-ci.md quotes this page's annotations as printed, and lists every input."""
    docs = (REPO / "docs" / "check-ci.md").read_text(encoding="utf-8")
    (quoted,) = re.findall(r"```text\n(.*?)```", docs, flags=re.S)
    assert without_timing(quoted).splitlines() == [*ANNOTATIONS, "4 files: 1 pass, 2 fail, 1 error"]
    action = yaml.safe_load((REPO / "action.yml").read_text())
    listed = re.findall(r"^\| `([\w-]+)` \|", docs, flags=re.M)
    assert listed == list(action["inputs"])
