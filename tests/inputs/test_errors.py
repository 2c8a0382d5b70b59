"""Bad input: one line on stderr naming the file and the field, exit code 2, no traceback."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from llmcalc.families import MODEL_TYPES

LLAMA: dict[str, Any] = {
    "model_type": "llama",
    "hidden_size": 768,
    "num_hidden_layers": 2,
    "num_attention_heads": 12,
    "intermediate_size": 2048,
    "vocab_size": 1000,
}


def with_(**changes: Any) -> dict[str, Any]:
    out = {**LLAMA, **changes}
    return {k: v for k, v in out.items() if v is not ...}


CASES = [
    ("empty.json", "", "file is empty"),
    ("blank.yaml", "\n  \n", "file is empty"),
    (
        "broken.json",
        '{"model_type": "llama",\n  "hidden_size": 768,,\n}',
        "invalid JSON at line 2, column 22: Expecting property name enclosed in double quotes",
    ),
    (
        "broken.yaml",
        "model_type: llama\nhidden_size: [768\n",
        "invalid YAML at line 3, column 1: did not find expected ',' or ']'",
    ),
    (
        "evil.yaml",
        "model_type: llama\nhidden_size: !!python/object/apply:os.system ['echo hi']\n",
        "invalid YAML at line 2, column 14: tags that construct Python objects are not allowed",
    ),
    ("list.json", "[1, 2]", "expected a JSON mapping of config fields, got a list"),
    (
        "twice.json",
        '{"model_type": "llama", "hidden_size": 768, "hidden_size": 1024}',
        "duplicate key 'hidden_size' in JSON (which value is meant?)",
    ),
    (
        "twice.yaml",
        "model_type: llama\nhidden_size: 768\nhidden_size: 1024\n",
        "invalid YAML at line 3, column 1: duplicate key 'hidden_size'",
    ),
    ("scalar.yaml", "just text", "expected a YAML mapping of config fields, got a string"),
    ("float.json", with_(hidden_size=768.0), "hidden_size must be an integer, got 768.0"),
    ("string.json", with_(vocab_size="1000"), 'vocab_size must be an integer, got "1000"'),
    ("bool.json", with_(num_hidden_layers=True), "num_hidden_layers must be an integer, got true"),
    ("flag.json", with_(tie_word_embeddings="yes"), 'tie_word_embeddings must be true or false, got "yes"'),
    ("zero.json", with_(num_hidden_layers=0), "num_hidden_layers must be a positive integer, got 0"),
    ("negative.json", with_(intermediate_size=-5), "intermediate_size must be a positive integer, got -5"),
    (
        "heads.json",
        with_(hidden_size=770),
        "num_attention_heads (12) must divide hidden_size (770) when head_dim is not given",
    ),
    (
        "notype.json",
        with_(model_type=...),
        f"missing required field model_type ({len(MODEL_TYPES)} model types, e.g. llama, "
        "mistral, qwen2, gpt2, t5; the README's \"Supported model types\" lists them all)",
    ),
    pytest.param(  # transformers is asked whether it knows the type
        "unknown.json",
        with_(model_type="foo"),
        "unknown model_type 'foo': llmcalc has no formula for it and transformers 5.24.0 does "
        "not know it; to count it as a known family, pass --family",
        marks=pytest.mark.torch, id="unknown.json",
    ),
]


@pytest.mark.parametrize("filename,content,message", CASES,
                         ids=[c[0] if isinstance(c, tuple) else c.id for c in CASES])
def test_bad_config(cli: Any, write: Any, filename: str, content: Any, message: str) -> None:
    path = write(filename, content)
    run = cli("count", path)
    assert run.code == 2
    assert run.stdout == ""
    assert run.stderr.startswith(f"error: {path}: {message}")
    assert run.stderr.count("\n") == 1
    assert "Traceback" not in run.stderr


def test_missing_file(cli: Any) -> None:
    run = cli("count", "no/such/config.json")
    assert (run.code, run.stderr) == (2, "error: no/such/config.json: no such file\n")


def test_folder_without_config(cli: Any, tmp_path: Any) -> None:
    run = cli("count", str(tmp_path))
    assert (run.code, run.stderr) == (2, f"error: {tmp_path}: folder has no config.json\n")


def test_unknown_bundled_name_suggests_closest(cli: Any) -> None:
    run = cli("count", "llama-2-7bb")
    assert run.code == 2
    assert run.stderr == (
        "error: unknown model 'llama-2-7bb': not a file, folder or bundled config; "
        "did you mean llama-2-7b, llama-2-70b, llama-3-70b?\n"
    )


def test_set_unknown_field(cli: Any) -> None:
    run = cli("count", "gpt2", "--set", "n_layers=48")
    assert (run.code, run.stderr) == (
        2,
        "error: --set n_layers: not a field of this gpt2 config (did you mean n_layer?)\n",
    )


def test_set_without_value(cli: Any) -> None:
    run = cli("count", "gpt2", "--set", "n_layer")
    assert run.code == 2
    assert run.stderr == "error: --set n_layer: expected key=value, e.g. --set num_hidden_layers=48\n"


def test_set_bad_value_names_the_field(cli: Any) -> None:
    run = cli("count", "gpt2", "--set", "n_layer=1.5")
    assert (run.code, run.stderr) == (2, "error: --set n_layer=1.5: n_layer must be an integer, got 1.5\n")


def test_expected_must_be_mapping(cli: Any, write: Any) -> None:
    path = write("m.yaml", "model_type: gpt2\nexpected: 5\n")
    run = cli("count", path)
    assert run.stderr == f"error: {path}: expected must be a mapping of figure names to values\n"


def test_error_with_json_flag_prints_no_json(cli: Any, write: Any) -> None:
    path = write("z.json", with_(num_hidden_layers=0))
    run = cli("count", path, "--json")
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr == f"error: {path}: num_hidden_layers must be a positive integer, got 0\n"


USAGE_ERRORS = [
    (["count"], "error: Missing argument 'MODEL'."),
    (["count", "gpt2", "--bogus"], "error: No such option: --bogus"),
    (["cnt", "gpt2"], "error: No such command 'cnt'. Did you mean 'count'?"),
]


@pytest.mark.parametrize("args,line", USAGE_ERRORS, ids=[" ".join(a) for a, _ in USAGE_ERRORS])
def test_usage_errors_are_one_line(args: list[str], line: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "llmcalc", *args], capture_output=True, text=True
    )
    assert (out.returncode, out.stdout, out.stderr) == (2, "", line + "\n")
