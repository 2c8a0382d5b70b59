"""Options shared by the commands are declared once, with help built from the tables."""

from __future__ import annotations

from typing import Any

import pytest
import typer

from llmcalc.cli import app
from llmcalc.planning.hardware import ACCELERATORS
from llmcalc.units import DType


def _options(command: str) -> dict[str, Any]:
    group: Any = typer.main.get_command(app)
    cmd = group.get_command(None, command)
    return {opt: p for p in cmd.params for opt in p.opts}


DTYPES = "fp32, fp16, bf16, fp8, int8, int4"


def test_dtype_list_comes_from_the_enum() -> None:
    assert ", ".join(d.value for d in DType) == DTYPES


@pytest.mark.parametrize("command", ["memory", "fit"])
def test_dtype_options_are_the_shared_ones(command: str) -> None:
    opts = _options(command)
    assert opts["--dtype"].help == (
        f"Weight dtype: {DTYPES} (or bfloat16 …; int4: two a byte, no scales), or a format with "
        "its scales: nf4, fp4, nf4-nodq, mxfp4, q8_0, q4_0, q4_k_m, fp8-channel, w8a8, fp8-block, "
        "fp8-fp4, nvfp4, gptq, awq (group 128; gptq-g64 …), or any llama-quantize type (q6_k, "
        "iq4_xs …). Default: quantization_config or bf16."
    )
    assert opts["--kv-dtype"].help == (
        f"KV-cache dtype: {DTYPES}; default (or auto): --dtype (bf16 or fp16 beside a quantized format)."
    )


@pytest.mark.parametrize("command", ["train", "fit", "mfu"])
def test_gpu_help_lists_the_accelerator_table(command: str) -> None:
    assert _options(command)["--gpu"].help == (
        "Accelerator from the table (122 cards: data-centre, workstation, consumer, Apple "
        "silicon), e.g. h100; an unknown name lists them, or names the card --gpu-mem etc. "
        "describe."
    )
    assert len(ACCELERATORS) == 122


@pytest.mark.parametrize("command,default", [("flops", "4k"), ("memory", "4k"),
                                             ("train", "4096"), ("mfu", "4096")])
def test_ctx_help_states_the_binary_suffixes(command: str, default: str) -> None:
    ctx = _options(command)["--ctx"]
    assert ctx.default == default
    assert ctx.help.endswith(
        "in tokens; binary suffixes, as context windows are quoted: "
        "4k = 4,096, 128k = 131,072, 1M = 1,048,576."
    )


def test_headroom_is_one_option_for_train_and_fit() -> None:
    train, fit = _options("train")["--headroom"], _options("fit")["--headroom"]
    assert (train.help, train.default) == (fit.help, fit.default)
    assert train.default == 0.1


def test_token_help_worked_examples() -> None:
    assert _options("flops")["--tokens"].help == (
        "A training token budget; k and M as for --ctx: 1k = 1,024, 1M = 1,048,576; B and T "
        "decimal, as token budgets are quoted: 70B = 7·10¹⁰, 2T = 2·10¹²."
    )


# every option that takes a suffixed number, by command: its help states what the suffix means
SUFFIXED = {
    "flops": ("--ctx", "--batch", "--tokens", "--source-len"),
    "memory": ("--ctx", "--batch", "--source-len", "--prefill-chunk"),
    "fit": ("--ctx", "--batch", "--prefill-chunk", "--max-model-len"),
    "latency": ("--ctx", "--batch", "--gen"),
    "train": ("--ctx", "--tokens"),
    "mfu": ("--ctx", "--tokens-per-sec"),
    "plot": ("--ctx-max", "--batch"),
}


@pytest.mark.parametrize("command", sorted(SUFFIXED))
def test_every_suffixed_option_says_k_is_1024(command: str) -> None:
    opts = _options(command)
    for flag in SUFFIXED[command]:
        help_text = opts[flag].help
        assert any(s in help_text for s in ("1k = 1,024", "4k = 4,096", "8k = 8,192",
                                            "1M = 1,048,576")), (flag, help_text)
        assert "3,200,000" not in help_text and "= 1,000" not in help_text, (flag, help_text)


def test_a_suffix_means_one_thing_in_every_option(cli: Any) -> None:
    """--batch 1k is 1,024 sequences as --ctx 1k is 1,024 tokens, in every command that takes
    them; --gen and --tokens-per-sec too; B and T stay decimal (a token budget's 2T)."""
    memory = cli("memory", "gpt2", "--batch", "1k", "--ctx", "1k", "--json").json()
    assert (memory["batch"], memory["ctx"]) == (1024, 1024)
    assert memory["kv_cache_bytes"] == 1024 * 1024 * 36_864  # 12 layers × 2 × 768 × 2 B a token
    flops = cli("flops", "gpt2", "--batch", "1k", "--ctx", "1k", "--tokens", "2T", "--json").json()
    assert (flops["batch"], flops["ctx"], flops["tokens"]) == (1024, 1024, 2 * 10**12)
    fit = cli("fit", "gpt2", "--gpu", "h100", "--batch", "1k", "--json").json()
    assert (fit["solved_for"], fit["batch"]) == ("ctx", 1024)
    lat = cli("latency", "gpt2", "--gpu", "h100", "--batch", "1k", "--ctx", "1k", "--gen", "1k",
              "--json").json()["inputs"]
    assert (lat["batch"], lat["ctx"], lat["gen"]) == (1024, 1024, 1024)
    mfu = cli("mfu", "gpt2", "--gpu", "h100", "--tokens-per-sec", "50k", "--json").json()
    assert mfu["tokens_per_sec"] == 51_200
    r = cli("train", "gpt2", "--gpu", "h100", "--tokens", "3.2M")
    assert (r.code, r.stdout) == (2, "")
    assert r.stderr == "error: --tokens '3.2M': must come to a whole number, got 3355443.2\n"
