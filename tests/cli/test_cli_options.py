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
        f"Weight dtype: {DTYPES} (or bfloat16, float8_e4m3fn …; int4 packs two per byte, no "
        "scales), or a quantized format stored with its scales: nf4, fp4, nf4-nodq, mxfp4, q8_0, "
        "q4_0, q4_k_m, fp8-block, fp8-fp4, nvfp4, gptq, awq (gptq/awq group 128, or gptq-g64 …). "
        "Default: "
        "the config's quantization_config, else bf16."
    )
    assert opts["--kv-dtype"].help == (
        f"KV-cache dtype: {DTYPES}; default: --dtype (bf16 or fp16 beside a quantized format)."
    )


@pytest.mark.parametrize("command", ["train", "fit", "mfu"])
def test_gpu_help_lists_the_accelerator_table(command: str) -> None:
    assert _options(command)["--gpu"].help == (
        "Accelerator from the built-in table (45 cards: data-centre, workstation, consumer, Apple "
        "silicon), e.g. h100, rtx-4090, apple-m3-max; an unknown name lists them."
    )
    assert len(ACCELERATORS) == 45


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
        "A training token budget; decimal suffixes, as token counts are quoted: "
        "3.2M = 3,200,000, 70B = 7·10¹⁰, 2T = 2·10¹²."
    )
