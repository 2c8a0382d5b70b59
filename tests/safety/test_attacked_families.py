"""Today's families attacked — each break found, as its exact error line (or answer).

The same files run through the forked, memory-capped entry point in tests/helpers/hostile.py; here the
messages are held word for word, and the prime search to what testing every number finds.
"""

from __future__ import annotations

import json
import random
import time
from typing import Any

import pytest

from llmcalc import load_spec
from llmcalc.families import qwen4_exp
from llmcalc.families.qwen4_exp import is_prime, primes_from

XMOD = {"model_type": "xmod", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "intermediate_size": 128, "vocab_size": 100}

ERRORS = [
    ({"model_type": "inkling2_loop_text", "loop_config": [6, 12]},
     "loop_config: must be a mapping of core_start, core_end, num_passes, gate_rank, got [6, 12]"),
    ({"model_type": "gemma3n", "text_config": {"altup_num_inputs": 10**12}},
     "text_config.altup_num_inputs (1,000,000,000,000) makes 999,999,999,999 projections of each "
     "kind; llmcalc describes at most 1,024"),
    ({"model_type": "gemma3n_text", "altup_num_inputs": 2**53 - 1},
     "altup_num_inputs (9,007,199,254,740,991) makes 9,007,199,254,740,990 projections of each "
     "kind; llmcalc describes at most 1,024"),
    # a whole model's text family names its fields with their path
    ({"model_type": "gemma3n", "text_config": {"layer_types": ["sliding_attention"]}},
     "text_config.layer_types: has 1 entries, num_hidden_layers is 35"),
    ({**XMOD, "languages": [f"l{i}" for i in range(1025)]},
     "languages has 1,025 entries, each an adapter in every layer; llmcalc describes at most "
     "1,024"),
    ({**XMOD, "languages": ["en_XX", "{i}"]},
     "languages.1: '{i}' cannot name an adapter module (empty, or with '.', '{' or '}')"),
    ({**XMOD, "languages": [""]},
     "languages.0: '' cannot name an adapter module (empty, or with '.', '{' or '}')"),
    ({**XMOD, "languages": ["\x1b[2J.de"]},
     "languages.0: '\\x1b[2J.de' cannot name an adapter module (empty, or with '.', '{' or '}')"),
]


@pytest.mark.parametrize("fields,message", ERRORS,
                         ids=["loop-config", "altup-whole", "altup-text", "text-path",
                              "languages-many", "language-template", "language-empty",
                              "language-dot"])
def test_refused_with_one_line(cli: Any, write: Any, fields: dict[str, Any], message: str) -> None:
    path = write("bad.json", fields)
    for command in ("count", "flops", "memory"):
        run = cli(command, path)
        assert (run.code, run.stderr) == (2, f"error: {path}: {message}\n")


def test_gemma3n_per_layer_intermediate_size_in_every_table(cli: Any, write: Any) -> None:
    """A per-layer list (as Gemma 3n checkpoints write it) crashed the flops and memory headers."""
    path = write("g.json", {"model_type": "gemma3n_text", "intermediate_size": [8192] * 35})
    for command in ("count", "flops", "memory"):
        run = cli(command, path)
        assert run.code == 0, run.stderr
        assert " · d_ff 8,192 · " in run.stdout
    assert load_spec(path).shape.intermediate_size == 8192


def test_primes_are_those_of_testing_every_number() -> None:
    def naive(start: int, count: int) -> list[int]:
        out, n = [], start
        while len(out) < count:
            if n >= 2 and all(n % p for p in range(2, int(n**0.5) + 1)):
                out.append(n)
            n += 1
        return out

    for start, count in [(0, 200), (1, 5), (2, 5), (3, 5), (1000, 27), (65_521, 40),
                         (20_000_000, 30), (4_294_967_000, 10)]:
        assert primes_from(start, count) == naive(start, count), start
    # every least strong pseudoprime to the first k bases below the last is found composite
    for psi in qwen4_exp._PSEUDOPRIMES[:-1]:
        assert not is_prime(psi)
    rng = random.Random(15)
    for _ in range(2000):  # against all 13 bases
        n = rng.randrange(3, 2**53) | 1
        full = all(n % p for p in qwen4_exp._BASES) and all(
            _strong(n, a) for a in qwen4_exp._BASES)
        assert is_prime(n) == full, n


def _strong(n: int, a: int) -> bool:
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    x = pow(a, d, n)
    if x in (1, n - 1):
        return True
    for _ in range(s - 1):
        x = x * x % n
        if x == n - 1:
            return True
    return False


def test_the_most_ngram_tables_near_the_largest_base_are_quick() -> None:
    start = time.perf_counter()
    primes = primes_from(2**53 - 1, qwen4_exp.MAX_NGRAM_HEADS)
    assert time.perf_counter() - start < 5
    assert len(primes) == 4096 and primes[0] > 2**53 - 1 and primes == sorted(set(primes))


def test_a_pattern_longer_than_the_model_is_its_first_layers(cli: Any) -> None:
    # decoder_sparse_step past the depth: no layer is sparse, nothing to cap (48 layers)
    r = cli("count", "qwen3-next-80b-a3b", "--set", "decoder_sparse_step=1000000000000", "--json")
    assert r.code == 0
    assert [(g["name"], g["num_layers"]) for g in json.loads(r.stdout)["groups"]] == [
        ("linear_attention, mlp", 36), ("attention, mlp", 12)]
    # …and both huge: the pattern is too long to describe, and the message names the step
    r = cli("count", "qwen3-next-80b-a3b", "--set", "decoder_sparse_step=1000000000000",
            "--set", "num_hidden_layers=1000000000000")
    assert r.code == 2
    assert r.stderr == (
        "error: --set decoder_sparse_step=1000000000000: decoder_sparse_step: the layer pattern repeats "
        "every 1,000,000,000,000 layers; llmcalc describes at most 65,536\n")
    # Qwen3.5-MoE's every layer is MoE: its decoder_sparse_step is not read
    r = cli("count", "qwen3.5-35b-a3b", "--set", "decoder_sparse_step=1000000000000",
            "--set", "num_hidden_layers=1000000000000", "--json")
    assert r.code == 0
