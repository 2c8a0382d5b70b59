"""Small things a user reads: a card given by --gpu-mem alone, rates and counts spaced and
separated as people write them, typer's bad-choice message without its "Value error, ", what
`check --verify` compared when nothing was expected, and the note on Falcon's KV cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llmcalc import load_spec


def test_gpu_mem_alone_shows_no_zero_rate_and_says_how_to_get_the_decode_bound(cli: Any) -> None:
    out = cli("fit", "llama-3-8b", "--gpu-mem", "80GB")
    assert out.code == 0, out.stderr
    first = out.stdout.splitlines()[0]
    assert first.endswith("· 1 × custom accelerator: 74.51 GiB")  # 8·10¹⁰ B in GiB
    assert "FLOP/s" not in out.stdout
    assert ("decode speed bound: give --gpu-bandwidth (e.g. 3.35TB/s) or --gpu for the card's "
            "bandwidth") in out.stdout
    with_rate = cli("fit", "llama-3-8b", "--gpu-mem", "80GB", "--gpu-bandwidth", "3.35TB/s")
    assert "decode speed bound (memory-bandwidth roofline)" in with_rate.stdout


def test_rates_and_counts_are_spaced_and_separated(cli: Any) -> None:
    train = cli("train", "llama-3.1-405b", "--tokens", "15.6T", "--gpus", "16384", "--gpu", "h100",
                "--ctx", "8k", "--tp", "8", "--pp", "16").stdout
    assert "16,384 × NVIDIA H100 SXM: 80.00 GiB, 989 TFLOP/s dense bf16" in " ".join(train.split())
    mfu = cli("mfu", "llama-3.1-405b", "--tokens-per-sec", "1340000", "--gpus", "8192", "--gpu",
              "h100", "--ctx", "8k").stdout
    assert "989 TFLOP/s" in mfu and "8,192 × NVIDIA" in mfu
    memory = cli("memory", "llama-3-8b", "--batch", "1000", "--ctx", "1k").stdout
    assert "memory for 1,000 sequences of 1,024 (1k) tokens" in memory
    assert "KV cache (1,000 × 1,024 tokens)" in memory
    flops = cli("flops", "llama-3-8b", "--batch", "1000", "--ctx", "1k").stdout
    assert "over 1,000 sequences of 1,024 tokens" in flops


def test_a_bad_choice_reads_without_value_error(cli: Any) -> None:
    from helpers.shell import llmcalc

    out = llmcalc("count", "gpt2", "--format", "xml")
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == ("error: Invalid value for '--format': 'xml' is not one of 'table', "
                          "'json', 'csv', 'markdown'.\n")


@pytest.mark.torch
def test_check_verify_with_nothing_expected_says_what_it_compared(cli: Any,
                                                                  tmp_path: Path) -> None:
    gpt2 = load_spec("gpt2")
    (tmp_path / "config.json").write_text(json.dumps({**gpt2.config, "model_type": "gpt2",
                                                      "n_layer": 2}))
    plain = cli("check", str(tmp_path / "config.json"), "--json").json()["files"][0]
    assert plain["why"] == "nothing expected: valid"
    verified = cli("check", str(tmp_path / "config.json"), "--verify", "--json")
    assert verified.code == 0, verified.stdout
    # GPT-2 small at 2 layers: 4 embedding/final-norm tensors + 12 per layer (tied lm_head)
    assert verified.json()["files"][0]["why"] == (
        "nothing expected; transformers matches (28 tensors)")


def test_memory_says_which_falcon_cache_it_counts(cli: Any) -> None:
    # Falcon-40B: 60 layers, 8 KV heads of 64 (of 128 query heads): 60 × 2 × 8 × 64 × 2 B
    # at 2k: FalconConfig's declared max_position_embeddings (2,048), so no context note
    data = cli("memory", "falcon-40b", "--ctx", "2k", "--json").json()
    assert data["kv_cache_bytes_per_token"] == 60 * 2 * 8 * 64 * 2 == 122_880
    note = ("KV cache: the 8 KV heads serving engines (vLLM, TGI, llama.cpp) keep; transformers' "
            "Falcon cache holds K and V repeated to all 128 heads, 16× these bytes")
    assert data["notes"] == [note]
    assert note in " ".join(cli("memory", "falcon-40b", "--ctx", "2k").stderr.split())
    # multi-query: one head, nothing to say
    assert cli("memory", "falcon-7b", "--ctx", "2k", "--json").json()["notes"] == []
