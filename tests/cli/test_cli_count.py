"""`llmcalc count` and `llmcalc list` as a user calls them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from llmcalc.inputs import bundled

REQUIRED_KEYS = {
    "model",
    "model_type",
    "total_params",
    "active_params",
    "embedding_params",
    "lm_head_params",
    "tied_embeddings",
    "num_layers",
    "breakdown",
}


def test_count_json_gpt2_medium(cli: Any) -> None:
    run = cli("count", "gpt2-medium", "--json")
    assert run.code == 0
    data = run.json()
    assert REQUIRED_KEYS <= set(data)
    assert data["model"] == "openai-community/gpt2-medium"
    assert data["model_type"] == "gpt2"
    assert data["total_params"] == data["active_params"] == 354_823_168
    assert data["embedding_params"] == 50257 * 1024 + 1024 * 1024
    assert data["lm_head_params"] == 0
    assert data["tied_embeddings"] is True
    assert data["num_layers"] == 24
    assert sum(data["breakdown"].values()) == data["total_params"]
    assert data["breakdown"]["layers/attn/qkv"] == 24 * (1024 * 3072 + 3072)
    assert data["rule_of_thumb"]["params"] == 353_453_056


def test_count_table_shows_the_parts(cli: Any) -> None:
    run = cli("count", "gpt2-medium")
    assert run.code == 0
    out = run.stdout
    for text in (
        "layers 24 · d_model 1,024 · heads 16 · kv heads 16 · head_dim 64 · d_ff 4,096",
        "vocab 50,257 · tied yes",
        "one layer (all 24 alike)",
        "attn/qkv",
        "mlp/fc_in",
        "12,596,224",  # one layer
        "302,309,376",  # 24 layers
        "lm_head (tied: shares the embedding)",
        "354,823,168",
        "rule of thumb 12·L·d² + V·d",
        "-0.39%",
    ):
        assert text in out, text


def test_untied_table_shows_lm_head(cli: Any) -> None:
    out = cli("count", "llama-2-7b").stdout
    assert "lm_head" in out and "131,072,000" in out and "tied: shares" not in out


def test_names_resolve_case_insensitively(cli: Any) -> None:
    totals = {
        cli("count", name, "--json").json()["total_params"]
        for name in ("llama-2-7b", "meta-llama/Llama-2-7b-hf", "LLAMA-2-7B-HF", "Meta-Llama/llama-2-7b-hf")
    }
    assert totals == {6_738_415_616}


def test_set_explores_a_variant(cli: Any) -> None:
    data = cli("count", "gpt2-medium", "--set", "n_layer=48", "--json").json()
    assert data["num_layers"] == 48
    assert data["total_params"] == 354_823_168 + 24 * 12_596_224
    assert "changed with --set: n_layer=48" in data["notes"]
    assert data["source"].endswith("(before --set)")


def test_set_is_repeatable(cli: Any) -> None:
    data = cli(
        "count", "llama-2-7b", "--set", "num_hidden_layers=1", "--set", "tie_word_embeddings=true",
        "--json",
    ).json()
    assert data["total_params"] == 32000 * 4096 + 202_383_360 + 4096


def test_config_json_folder_and_yaml(cli: Any, tmp_path: Path) -> None:
    fields = yaml.safe_load(bundled.find("tinyllama-1.1b").read_text())  # type: ignore[union-attr]
    fields.pop("expected")
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(fields))
    (tmp_path / "model.yaml").write_text(yaml.safe_dump(fields))
    for arg in (str(tmp_path / "ckpt" / "config.json"), str(tmp_path / "ckpt"), str(tmp_path / "model.yaml")):
        data = cli("count", arg, "--json").json()
        assert data["total_params"] == 1_100_048_384, arg


def test_old_style_config_without_head_dim(cli: Any, write: Any) -> None:
    # A Llama-2 config.json as first published: rope_theta absent, no head_dim, no kv heads.
    path = write("config.json", {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 11008, "num_attention_heads": 32, "num_hidden_layers": 32,
        "vocab_size": 32000, "max_position_embeddings": 4096, "rms_norm_eps": 1e-05,
        "torch_dtype": "float16", "transformers_version": "4.31.0.dev0",
    })
    data = cli("count", path, "--json").json()
    assert data["total_params"] == 6_738_415_616
    assert data["head_dim"] == 128 and data["num_kv_heads"] == 32
    assert any("tie_word_embeddings=false" in note for note in data["notes"])


def test_head_dim_is_read_when_given(cli: Any) -> None:
    data = cli("count", "llama-3.2-3b", "--json").json()
    assert (data["hidden_size"], data["num_heads"], data["head_dim"]) == (3072, 24, 128)
    data = cli("count", "gemma-7b", "--json").json()
    assert (data["hidden_size"], data["num_heads"], data["head_dim"]) == (3072, 16, 256)
    assert data["breakdown"]["layers/attn/q_proj"] == 28 * 4096 * 3072


def test_tensors_lists_names_and_shapes(cli: Any) -> None:
    out = cli("count", "llama-2-7b", "--tensors").stdout
    assert "model.layers.{i}.self_attn.q_proj.weight" in out and "[4096, 4096]" in out
    assert "{i} in 0..31" in out
    data = cli("count", "llama-3.2-1b", "--tensors", "--json").json()
    names = {t["name"]: t["shape"] for t in data["tensors"]}
    assert names["model.layers.15.mlp.down_proj.weight"] == [2048, 8192]
    assert "lm_head.weight" not in names  # tied: counted once, at the embedding
    assert len(names) == 2 + 16 * 9


def test_explain_puts_the_numbers_in(cli: Any) -> None:
    out = cli("count", "tinyllama-1.1b", "--explain").stdout
    assert "model.layers.{i}.self_attn.k_proj.weight = 256 × 2,048 = 524,288" in out
    assert "22 decoder layers = 22 × 44,044,288 = 968,974,336" in out
    assert "= 1,100,048,384" in out
    assert "rule of thumb = 12 × 22 × 2,048² + 32,000 × 2,048 = 1,172,832,256 (+6.62%)" in out


def test_list_shows_every_bundled_model(cli: Any) -> None:
    rows = cli("list", "--json").json()
    assert [r["name"] for r in rows] == [p.stem for p in bundled.paths()]
    by_name = {r["name"]: r for r in rows}
    assert by_name["llama-2-70b"]["total_params"] == 68_976_648_192
    assert (by_name["llama-2-70b"]["num_heads"], by_name["llama-2-70b"]["num_kv_heads"]) == (64, 8)
    assert "llama-2-70b" in cli("list").stdout


def test_every_bundled_config_states_its_source() -> None:
    for path in bundled.paths():
        data = yaml.safe_load(path.read_text())
        assert data.get("source"), path.name
        assert data.get("name"), path.name
        assert isinstance(data.get("expected", {}).get("total_params"), (int, dict)), path.name


def test_python_dash_m() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "llmcalc", "count", "gpt2", "--json"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert json.loads(out)["total_params"] == 124_439_808
