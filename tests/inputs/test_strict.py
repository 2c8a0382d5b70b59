"""Never silently wrong: size-like fields no class declares are named in one line (stderr and the
JSON notes), and ``--strict`` turns that line and every "assumed" / "not modelled" / size default
taken note into a one-line refusal, exit 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.configs import TINY_LLAMA

CONFIGS = Path(__file__).parents[2] / "llmcalc" / "configs"
NO_HIDDEN = {k: v for k, v in TINY_LLAMA.items() if k != "hidden_size"}
DEFAULTED = ("not in config, LlamaConfig default: hidden_size=4096")


def _kimi_k3() -> dict[str, Any]:
    """Kimi-K3's layout (moonshotai/Kimi-K3): custom code, a kimi_linear text_config carrying the
    keys KimiLinearConfig does not declare; sizes from the bundled Kimi-Linear."""
    text = yaml.safe_load((CONFIGS / "kimi-linear-48b-a3b.yaml").read_text())
    for key in ("name", "source", "expected", "auto_map", "architectures"):
        text.pop(key, None)
    text.update(routed_expert_hidden_size=3584, latent_moe_use_norm=True,
                mla_use_output_gate=True, attn_res_block_size=12)
    return {"model_type": "kimi_k3", "architectures": ["KimiK3ForConditionalGeneration"],
            "auto_map": {"AutoConfig": "configuration_kimi_k3.KimiK3Config"}, "text_config": text}


K3_LINE = ("fields this count does not model: routed_expert_hidden_size, latent_moe_use_norm, "
           "mla_use_output_gate, attn_res_block_size")


def test_kimi_k3s_undeclared_fields_are_named(cli: Any, write: Any) -> None:
    path = write("config.json", _kimi_k3())
    r = cli("count", path, "--json")
    assert r.code == 0
    assert r.stderr == f"warning: {K3_LINE}\n"
    assert K3_LINE in r.json()["notes"]


@pytest.mark.parametrize("command", ["count", "flops", "memory"])
def test_strict_refuses_kimi_k3(cli: Any, write: Any, command: str) -> None:
    path = write("config.json", _kimi_k3())
    r = cli(command, path, "--strict")
    assert (r.code, r.stdout) == (2, "")
    assert r.stderr.endswith(f"error: --strict: {path}: {K3_LINE}\n")


def test_declared_and_read_fields_are_not_named(cli: Any) -> None:
    # bundled real checkpoints with custom code (auto_map): nothing named, nothing refused
    for model in ("kimi-linear-48b-a3b", "deepseek-v3", "deepseek-r1", "gpt2", "qwen3-8b"):
        r = cli("count", model, "--json")
        assert (r.code, r.stderr) == (0, ""), model
        assert not any(n.startswith("fields this count") for n in r.json()["notes"]), model
    assert cli("count", "deepseek-v3", "--strict").code == 0


@pytest.mark.parametrize("command", [
    ["count"], ["flops"], ["memory"], ["fit", "--gpu", "h100"], ["latency", "--gpu", "h100"],
    ["train", "--gpu", "h100"],
])
def test_strict_refuses_a_size_taken_by_default(cli: Any, write: Any, command: list[str]) -> None:
    path = write("c.yaml", yaml.safe_dump(NO_HIDDEN))
    r = cli(command[0], path, *command[1:], "--strict")
    assert (r.code, r.stdout) == (2, "")
    assert r.stderr.startswith(f"error: --strict: {path}: {DEFAULTED}, ")
    assert r.stderr.count("\n") == 1
    plain = cli(command[0], path, *command[1:])
    assert plain.code == 0


def test_check_strict_makes_the_file_an_error(cli: Any, write: Any) -> None:
    path = write("c.yaml", yaml.safe_dump(NO_HIDDEN))
    r = cli("check", path, "--strict", "--json")
    assert r.code == 2
    [f] = r.json()["files"]
    assert (f["status"], f["why"].startswith(f"--strict: {DEFAULTED}, ")) == ("error", True)
    assert cli("check", path).code == 0


def test_strict_refuses_an_assumed_note_of_the_output(cli: Any) -> None:
    r = cli("flops", "gpt2", "--ctx", "4k", "--strict")
    assert (r.code, r.stdout) == (2, "")
    assert r.stderr == (
        "error: --strict: the output: context 4,096 is above the model's max_position_embeddings "
        "(1,024); the figures assume it runs there anyway\n"
    )
    assert cli("flops", "gpt2", "--ctx", "1k", "--strict").code == 0


def test_a_switch_default_is_not_an_assumption(cli: Any) -> None:
    # gpt2's config.json leaves out tie_word_embeddings: transformers takes the same default
    r = cli("count", "gpt2", "--strict", "--json")
    assert r.code == 0
    assert r.json()["total_params"] == 124_439_808


MPT_LINE = ("fields this count does not model: expansion_ratio (3; transformers' MptMLP builds "
            "4 · d_model whatever it says)")


def test_mpt_counts_what_transformers_builds_and_names_expansion_ratio(cli: Any, write: Any) -> None:
    path = write("mpt.json", {"model_type": "mpt", "vocab_size": 100, "d_model": 64, "n_layers": 2,
                              "n_heads": 4, "expansion_ratio": 3})
    r = cli("count", path, "--json")
    # MptForCausalLM(MptConfig(…, expansion_ratio=3)) on the meta device: 105,024 (up_proj 256 × 64)
    assert (r.code, r.json()["total_params"]) == (0, 105_024)
    assert MPT_LINE in r.json()["notes"]
    assert r.stderr == f"warning: {MPT_LINE}\n"
    refused = cli("count", path, "--strict")
    assert (refused.code, refused.stderr) == (2, f"error: --strict: {path}: {MPT_LINE}\n")


def test_kimi_k25_reads_kimi_k2_as_deepseek_v3(cli: Any, write: Any) -> None:
    # Kimi_K25Config.__post_init__ rewrites text_config.model_type "kimi_k2" to deepseek_v3
    text = yaml.safe_load((CONFIGS / "deepseek-v3.yaml").read_text())
    for key in ("name", "source", "expected", "auto_map", "architectures"):
        text.pop(key, None)
    path = write("config.json", {"model_type": "kimi_k25", "text_config": {**text, "model_type": "kimi_k2"},
                                 "auto_map": {"AutoConfig": "configuration_kimi_k25.KimiK25Config"}})
    r = cli("count", path, "--json")
    assert (r.code, r.stderr) == (0, "")
    assert r.json()["total_params"] == cli("count", "deepseek-v3", "--json").json()["total_params"]
    assert r.json()["total_params"] == 671_026_404_352
    assert r.json()["notes"][0] == (
        "multimodal kimi_k25: counted its text model (deepseek_v3: its model_type 'kimi_k2' read "
        "so, as transformers reads it) only"
    )
