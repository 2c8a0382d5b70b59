"""Yes/no answers for people and CI: `fit --batch B --ctx C` exits 0 when it fits and 1 when it
does not, `--tp`/`--pp` for serving, a context beyond the model's window warned about, and
`train`/`fit` naming the options that would make a plan fit (`--fail-if-not-fit` for CI)."""

from __future__ import annotations

from typing import Any

import pytest

GiB = 1024**3
# Llama 2 70B, bf16: weights 2 × 68,976,648,192 B; a 4,096-token sequence's cache is
# 80 layers × 2 (K, V) × 8 KV heads × 128 × 2 B × 4,096 = 1,342,177,280 B.
WEIGHTS = 2 * 68_976_648_192
PER_SEQUENCE = 80 * 2 * 8 * 128 * 2 * 4096


def largest_batch(gpus: int) -> int:
    return (gpus * 80 * GiB * 9 // 10 - WEIGHTS) // PER_SEQUENCE


def test_fit_yes_or_no(cli: Any) -> None:
    # the steady state alone (weights and caches) would hold 12 sequences; the prefill's transients
    # (fit counts them by default) leave room for 9
    assert largest_batch(2) == 12 and largest_batch(3) >= 16 > largest_batch(2)
    most = cli("fit", "llama-2-70b", "--gpu", "h100", "--gpus", "2", "--ctx", "4k", "--json")
    assert most.json()["max_batch"] == 9
    no = cli("fit", "llama-2-70b", "--gpu", "h100", "--gpus", "2", "--batch", "16", "--ctx", "4k")
    assert no.code == 1, no.stderr
    assert no.stdout.splitlines()[-2:] == [
        "batch 16 at context 4,096: does not fit (the largest batch is 9)", "to fit: --gpus 3"]
    yes = cli("fit", "llama-2-70b", "--gpu", "h100", "--gpus", "2", "--batch", "9", "--ctx", "4k")
    assert yes.code == 0, yes.stderr
    assert yes.stdout.splitlines()[-1] == "batch 9 at context 4,096: fits (the largest batch is 9)"
    data = cli("fit", "llama-2-70b", "--gpu", "h100", "--gpus", "2", "--batch", "16", "--ctx", "4k",
               "--json")
    assert data.code == 1 and data.json()["max_batch"] == 9


def test_fit_tp_pp_use_tp_times_pp_gpus(cli: Any) -> None:
    by_gpus = cli("fit", "llama-2-70b", "--gpu", "h100", "--gpus", "4", "--ctx", "4k", "--json")
    by_tp_pp = cli("fit", "llama-2-70b", "--gpu", "h100", "--tp", "2", "--pp", "2", "--ctx", "4k",
                   "--json")
    assert by_tp_pp.code == by_gpus.code == 0
    assert by_tp_pp.json() == by_gpus.json()
    assert 0 < by_tp_pp.json()["max_batch"] < largest_batch(4)  # the prefill takes its share


@pytest.mark.parametrize(("args", "message"), [
    (("llama-2-70b", "--tp", "16"), "--tp 16: meta-llama/Llama-2-70b-hf's 8 KV heads do not split "
     "evenly over 16 GPUs (engines then repeat them); use a --tp that divides them"),
    (("llama-2-70b", "--pp", "3"), "--pp 3: meta-llama/Llama-2-70b-hf's 80 layers do not split "
     "into 3 equal stages; use a --pp that divides them"),
    (("llama-2-70b", "--gpus", "8", "--tp", "2"), "--gpus 8 with --tp 2 --pp 1: those use "
     "tp × pp = 2 GPUs; give --gpus or --tp/--pp"),
    (("deepseek-v3", "--tp", "8"), "--tp 8: deepseek-ai/DeepSeek-V3 caches one latent per token "
     "(MLA), which tensor parallelism keeps whole on every GPU; fit sizes even splits only (use "
     "--pp, or --gpus for the even-split estimate)"),
])
def test_fit_refuses_a_split_it_does_not_size(cli: Any, args: tuple[str, ...], message: str) -> None:
    out = cli("fit", *args, "--gpu", "h100")
    assert (out.code, out.stdout, out.stderr) == (2, "", f"error: {message}\n")


def test_fit_warns_beyond_the_models_window(cli: Any) -> None:
    out = cli("fit", "llama-2-7b", "--gpu", "h100", "--ctx", "32k")
    assert out.code == 0
    assert out.stderr == ("warning: --ctx 32,768 is more than meta-llama/Llama-2-7b-hf's "
                          "max_position_embeddings (4,096); the memory is sized as asked, but the "
                          "model was not made for that context\n")
    assert cli("fit", "llama-2-7b", "--gpu", "h100", "--ctx", "4k").stderr == ""


def test_fit_fail_if_not_fit(cli: Any) -> None:
    plain = cli("fit", "llama-2-70b", "--gpu", "rtx4090")
    assert plain.code == 0  # "the largest context": an answer, not a failure
    # 24 GiB cards less 10%: five hold less than the weights, six the weights and a cache
    assert 5 * 24 * GiB * 9 // 10 < WEIGHTS < 6 * 24 * GiB * 9 // 10 - 2 * 80 * 8 * 128 * 2
    assert plain.stdout.splitlines()[-1] == "to fit: --gpus 6"
    assert cli("fit", "llama-2-70b", "--gpu", "rtx4090", "--fail-if-not-fit").code == 1
    assert cli("fit", "llama-2-7b", "--gpu", "h100", "--fail-if-not-fit").code == 0


TRAIN = ("train", "llama-3.1-405b", "--gpus", "512", "--gpu", "h100", "--tokens", "1T")


def test_train_names_the_options_that_fit(cli: Any) -> None:
    out = cli(*TRAIN)
    assert out.code == 0
    assert out.stdout.splitlines()[-1] == "to fit: --recompute full --zero 3"
    assert cli(*TRAIN, "--fail-if-not-fit").code == 1
    fixed = cli(*TRAIN, "--recompute", "full", "--zero", "3", "--fail-if-not-fit", "--json")
    assert fixed.code == 0 and fixed.json()["fits"] is True
    nothing = cli("train", "llama-3.1-405b", "--gpus", "8", "--gpu", "h100", "--tokens", "1T")
    assert nothing.stdout.splitlines()[-1].startswith(
        "to fit: no change of --flash-attention, --recompute, --zero or --tp (up to 8) fits")
