"""`llmcalc check`: config files held to their ``expected:`` figures; exit codes 0 / 1 / 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO

from llmcalc import count, load_spec
from llmcalc.errors import ConfigError
from llmcalc.inputs import bundled
from llmcalc.verify.check import Expectation, FigureCheck, find_configs, parse_expected

# gpt2 at 2 layers of width 32: wte 100·32, wpe 64·32; per layer 2 LayerNorms 4·32, c_attn
# 32·96+96, c_proj 32·32+32, c_fc 32·128+128, c_proj 128·32+32 = 12,704; ln_f 2·32.
TINY_GPT2 = {
    "model_type": "gpt2",
    "n_embd": 32,
    "n_layer": 2,
    "n_head": 4,
    "vocab_size": 100,
    "n_positions": 64,
}
TINY_GPT2_TOTAL = 100 * 32 + 64 * 32 + 2 * 12_704 + 64


def _yaml(expected: str) -> str:
    fields = "\n".join(f"{k}: {v}" for k, v in TINY_GPT2.items())
    return f"name: tiny-gpt2\n{fields}\nexpected:\n{expected}\n"


def test_tiny_total_by_hand(write: Any) -> None:
    assert TINY_GPT2_TOTAL == 30_720
    assert count(load_spec(write("t.json", TINY_GPT2))).total == TINY_GPT2_TOTAL


@pytest.mark.parametrize("path", bundled.paths(), ids=lambda p: p.stem)
def test_every_bundled_config_states_its_total(path: Path) -> None:
    spec = load_spec(str(path))
    total = spec.expected.get("total_params")
    assert isinstance(total, (int, dict)), f"{path.name} has no expected total_params"


def test_bundled_configs_pass(cli: Any) -> None:
    r = cli("check", "--json")
    assert r.code == 0, r.stdout
    data = r.json()
    assert data["ok"] is True
    files = {f["file"]: f for f in data["files"]}
    assert set(files) == {bundled.label(p) for p in bundled.paths()}
    gpt2 = files["configs/gpt2.yaml"]
    assert gpt2["status"] == "pass"
    assert gpt2["figures"] == [
        {"figure": "total_params", "expected": 124_439_808, "rel": None, "actual": 124_439_808,
         "ok": True}
    ]
    assert data["summary"] == {"pass": len(files), "fail": 0, "error": 0}


def test_configs_folder_is_the_bundled_one(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    data = cli("check", "configs/", "--json").json()
    assert len(data["files"]) == len(bundled.paths())
    assert data["exit_code"] == 0


def test_exact_mismatch_fails(cli: Any, write: Any) -> None:
    path = write("repo/tiny.yaml", _yaml("  total_params: 30721"))
    r = cli("check", path, "--json")
    assert r.code == 1
    (f,) = r.json()["files"]
    assert f["status"] == "fail"
    assert f["why"] == "total_params is 30,720, expected 30,721"


def test_table_and_summary(cli: Any, write: Any) -> None:
    write("repo/good.yaml", _yaml("  total_params: 30720"))
    write("repo/bad.yaml", _yaml("  total_params: 30721"))
    folder = str(Path(write("repo/x.txt", "not a config")).parent)
    r = cli("check", folder)
    assert r.code == 1
    assert "│ fail   │" in r.stdout and "│ pass   │" in r.stdout
    assert "\n2 files: 1 pass, 1 fail, 0 error (" in r.stdout


@pytest.mark.parametrize(
    "expected,status",
    [
        ("  total_params: {value: 3.07e+4, rel: 0.001}", "pass"),  # 30,720 is 0.065% off
        ("  total_params: {value: 3.07e+4, rel: 0.0005}", "fail"),
        ("  total_params: {value: 307e2, rel: 0.001}", "pass"),  # YAML 1.1 reads 307e2 as a string
        ("  total_params: {value: 30720}", "pass"),
        ("  layer_params: 25408\n  embedding_params: 5248\n  lm_head_params: 0", "pass"),
        ("  active_params: 30720", "pass"),
    ],
)
def test_tolerances(cli: Any, write: Any, expected: str, status: str) -> None:
    r = cli("check", write("tiny.yaml", _yaml(expected)), "--json")
    assert r.json()["files"][0]["status"] == status
    assert r.code == {"pass": 0, "fail": 1}[status]


def test_tolerance_message(cli: Any, write: Any) -> None:
    path = write("tiny.yaml", _yaml("  total_params: {value: 3.07e+4, rel: 0.0005}"))
    (f,) = cli("check", path, "--json").json()["files"]
    assert f["why"] == "total_params is 30,720, expected 30,700.0 ± 0.05%"
    assert f["figures"] == [
        {"figure": "total_params", "expected": 30_700.0, "rel": 0.0005, "actual": 30_720,
         "ok": False}
    ]


@pytest.mark.parametrize(
    "expected,message",
    [
        ("  totl_params: 30720", "expected.totl_params: unknown figure (did you mean total_params?)"),
        ("  total_params: 2.0e+4", "expected.total_params: give an exact integer or {value: …, "
                                  "rel: …} for a published figure, got 20000.0"),
        ("  total_params: {value: 2.0e+4}", "expected.total_params: 20000.0 is not an integer; "
                                           "add a tolerance rel"),
        ("  total_params: {value: x, rel: 0.1}", "expected.total_params.value: must be a finite number, "
                                                 "got 'x'"),
        ("  total_params: {value: 30720, rel: 2}", "expected.total_params.rel: must be a number "
                                                   "from 0 to 1, got 2"),
        ("  total_params: {value: 30720, tol: 2}", "expected.total_params: unknown key 'tol' "
                                                   "(use value and rel)"),
    ],
)
def test_bad_expected_block_is_an_error(cli: Any, write: Any, expected: str, message: str) -> None:
    path = write("tiny.yaml", _yaml(expected))
    r = cli("check", path, "--json")
    assert r.code == 2
    (f,) = r.json()["files"]
    assert (f["status"], f["why"]) == ("error", message)


def test_unreadable_and_missing_files(cli: Any, write: Any, tmp_path: Path) -> None:
    bad = write("repo/bad.yaml", "model_type: [gpt2\n")
    good = write("repo/good.yaml", _yaml("  total_params: 30720"))
    r = cli("check", bad, good, str(tmp_path / "nowhere.yaml"), "--json")
    assert r.code == 2
    whys = [(f["status"], f["why"]) for f in r.json()["files"]]
    assert whys[0][0] == "error" and whys[0][1].startswith("invalid YAML at line")
    assert whys[1][0] == "pass"
    assert whys[2] == ("error", "no such file or folder")


def test_invalid_field_is_an_error(cli: Any, write: Any) -> None:
    path = write("odd.json", {**TINY_GPT2, "n_head": 5})
    r = cli("check", path, "--json")
    assert r.code == 2
    assert r.json()["files"][0]["why"] == (
        "n_head (5) must divide n_embd (32) when head_dim is not given"
    )


def test_empty_folder(cli: Any, tmp_path: Path) -> None:
    r = cli("check", str(tmp_path))
    assert r.code == 2
    assert "no config files found" in r.stdout


def test_without_expected_only_validates(cli: Any, write: Any) -> None:
    r = cli("check", write("plain.json", TINY_GPT2), "--json")
    assert r.code == 0
    assert r.json()["files"][0]["why"] == "nothing expected: valid"


def test_folder_walk(tmp_path: Path) -> None:
    for rel in ("a.yaml", "b/config.json", "b/other.json", "c/d.yml", ".hidden/e.yaml", "x.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    found = [p.relative_to(tmp_path).as_posix() for p in find_configs([tmp_path])]
    assert found == ["a.yaml", "b/config.json", "c/d.yml"]


def test_parse_expected_and_holds() -> None:
    exact, approx = parse_expected("f", {"total_params": 10, "active_params": {"value": "1e3",
                                                                              "rel": 0.01}})
    assert exact == Expectation("total_params", 10)
    assert approx == Expectation("active_params", 1000, 0.01)
    assert FigureCheck(approx, 1010).ok and not FigureCheck(approx, 1011).ok
    assert FigureCheck(exact, 10).ok and not FigureCheck(exact, 11).ok
    assert FigureCheck(approx, 1010).off == pytest.approx(0.01)
    with pytest.raises(ConfigError) as e:
        parse_expected("f.yaml", {"total_params": True})
    assert str(e.value) == (
        "f.yaml: expected.total_params: give an exact integer or {value: …, rel: …} for a "
        "published figure, got True"
    )


# ---- --verify ------------------------------------------------------------------------------------


@pytest.mark.torch
def test_verify_passes(cli: Any, write: Any) -> None:
    r = cli("check", write("tiny.yaml", _yaml("  total_params: 30720")), "--verify", "--json")
    assert r.code == 0, r.stdout
    (f,) = r.json()["files"]
    assert f["why"] == "total_params 30,720, transformers matches (28 tensors)"
    assert f["verify"][0]["parts"][-1]["model"] == TINY_GPT2_TOTAL


@pytest.mark.torch
def test_verify_checks_a_checkpoint_beside_config_json(cli: Any, tmp_path: Path) -> None:
    import transformers

    from llmcalc.verify.reference import hf_config

    folder = tmp_path / "ckpt"
    model = transformers.AutoModelForCausalLM.from_config(hf_config(_spec_of(tmp_path)))
    model.save_pretrained(folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "n_layer": 3}))
    r = cli("check", str(tmp_path), "--verify", "--json")
    assert r.code == 1
    files = {f["file"]: f for f in r.json()["files"]}
    f = files[str(folder / "config.json")]
    assert [c["kind"] for c in f["verify"]] == ["transformers", "checkpoint"]
    assert f["verify"][0]["match"] is True  # the model built from the config: as llmcalc says
    assert f["why"] == "checkpoint differs: missing transformer.h.2.ln_1.weight (+11 more)"


def _spec_of(tmp_path: Path) -> Any:
    """The tiny GPT-2 spec, from a file that the folder walk does not pick up (not config.json)."""
    path = tmp_path / "src" / "tiny.json"
    path.parent.mkdir()
    path.write_text(json.dumps(TINY_GPT2))
    return load_spec(str(path))


@pytest.mark.torch
def test_transformers_refusing_a_config_is_an_error(cli: Any, write: Any) -> None:
    # a valid gpt2 for llmcalc (it does not read the activation); transformers rejects the name
    path = write("odd.yaml", _yaml("  total_params: 30720") + "activation_function: nope\n")
    r = cli("check", path, "--verify", "--json")
    assert r.code == 2
    (f,) = r.json()["files"]
    assert f["status"] == "error"
    assert f["why"].startswith("tiny-gpt2: transformers cannot build this model: KeyError: ")


def test_without_torch(tmp_path: Path, write: Any) -> None:
    import os
    import subprocess
    import sys

    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(
        "import sys\nfor _name in ('torch', 'transformers'):\n    sys.modules[_name] = None\n"
    )
    env = {**os.environ, "PYTHONPATH": str(shim)}
    path = write("tiny.yaml", _yaml("  total_params: 30720"))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "llmcalc", "check", path, *args]
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)

    plain = run("--json")
    assert plain.returncode == 0, plain.stderr
    assert json.loads(plain.stdout)["summary"] == {"pass": 1, "fail": 0, "error": 0}
    verify = run("--verify")
    assert (verify.returncode, verify.stdout) == (2, "")
    assert verify.stderr == (
        "error: building the transformers model needs the 'verify' extra: "
        f"pip install -e '{REPO}[verify]'\n"
    )
