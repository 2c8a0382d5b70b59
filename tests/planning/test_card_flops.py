"""Every card in hardware.json has a dense bf16 FLOP rate, so `latency --engine llama.cpp` answers
on each of the cards that lacked one (issue 38) without --gpu-flops: Llama-2 7B Q4_0, pp512 and
tg128, the llama.cpp scoreboards' setting (llama.cpp discussion #15013). The bound's TTFT is the
prefill at the card's Q4_0 compute peak (the largest of its bf16, FP16 and INT8 peaks); the
expected figures are the llama.cpp (cuda) fit's."""
from __future__ import annotations

from typing import Any

import pytest

from llmcalc.planning.hardware import ACCELERATORS

# key: (bound TTFT ms, bound decode tokens/s, expected pp512 tokens/s, expected tg128 tokens/s)
CARDS = {
    "a10g": (95.722, 148.0, 2264.5, 106.9),
    "rtx-3060": (70.532, 88.8, 2013.1, 67.7),
    "rtx-3090-ti": (20.939, 248.7, 6489.7, 158.9),
    "rtx-4060-ti-16gb": (37.856, 71.1, 3516.1, 57.0),  # the 8 GB card measured 3,395 / 63.9
    "rtx-4070": (28.733, 124.4, 4704.8, 94.7),
    "rtx-5080": (14.883, 236.9, 8804.5, 165.1),  # measured 9,488 / 184.7 (#15013)
    "rtx-5090": (7.996, 442.2, 15549.9, 257.8),  # measured 14,970 / 300.4 (#15013)
    "rtx-4070-ti": (20.939, 124.4, 6246.8, 95.2),
    "rtx-4070-ti-super": (19.036, 165.8, 6931.4, 122.5),  # measured 6,925 / 132.3
    "rtx-4080-super": (16.03, 181.6, 8113.2, 131.9),
    "rtx-pro-6000": (6.701, 442.2, 14301.8, 264.6),  # measured 14,855 / 274.2
    "dgx-spark": (26.802, 67.4, 3133.0, 53.3),  # measured 3,062 / 57.2
}


def test_no_card_lacks_a_flop_rate() -> None:
    assert [k for k, a in ACCELERATORS.items() if a.peak_flops <= 0] == []


@pytest.mark.parametrize("key", CARDS)
def test_llama_cpp_answers_without_gpu_flops(cli: Any, key: str) -> None:
    run = cli("latency", "llama-2-7b", "--gpu", key, "--engine", "llama.cpp", "--dtype", "q4_0",
              "--ctx", "512", "--gen", "128", "--json")
    assert run.code == 0, run.stderr
    got = run.json()
    e = got["expected"]
    assert (e["engine"], e["backend"]) == ("llama.cpp", "cuda")
    assert (round(got["ttft_s"] * 1e3, 3), round(got["tokens_per_s_per_request"], 1),
            round(e["prefill_tokens_per_s"], 1), round(e["decode_tokens_per_s"], 1)) == CARDS[key]
