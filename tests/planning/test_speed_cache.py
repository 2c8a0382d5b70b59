"""`latency --engine` keeps its fit (llmcalc.cli.latency.fitted): once per process and between runs
in the spec cache, with every figure the one a fresh fit gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from llmcalc.cli import latency as cli_latency
from llmcalc.planning.speed import fit_model, rows_for, stand_in_rows

ARGS = ("latency", "llama-3-8b", "--gpu", "apple-m2-ultra", "--dtype", "q4_k_m", "--ctx", "512",
        "--gen", "128", "--engine", "llama.cpp", "--json")


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """An empty cache folder and no fit kept in this process."""
    monkeypatch.setenv("LLMCALC_CACHE_DIR", str(tmp_path))
    cli_latency.fitted.cache_clear()
    yield tmp_path
    cli_latency.fitted.cache_clear()


@pytest.mark.parametrize("engine, backend", [("llama.cpp", "metal"), ("trtllm", "cuda"),
                                             ("vllm", "cuda"), ("sglang", "cuda")])
def test_the_kept_fit_is_the_fresh_fit_exactly(fresh: Path, engine: str, backend: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = [(r, cli_latency.row_latency(r)) for r in rows_for(engine, backend)]
    lent = stand_in_rows(engine, backend)  # sglang: vLLM's decode rows join its fit
    want = fit_model(pairs, engine=engine, backend=backend, stand_in=lent.why,
                     stand_ins=[(r, cli_latency.row_latency(r), s) for r, s in lent.rows])
    first = cli_latency.fitted(engine, backend)
    assert first == want  # every coefficient and leave-one-out error, float for float
    kept = [p.name for p in fresh.iterdir() if p.name.startswith(f"speed-{engine}-{backend}-")]
    assert len(kept) == 1
    # a new process reads it back: no refit (fit_model would raise), the same floats
    cli_latency.fitted.cache_clear()

    def refit(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("refitted")

    monkeypatch.setattr(cli_latency, "fit_model", refit)
    assert cli_latency.fitted(engine, backend) == want
    assert cli_latency.fitted(engine, backend) is cli_latency.fitted(engine, backend)


def test_figures_with_and_without_the_cache_are_the_same(fresh: Path, cli: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    kept = cli(*ARGS)  # computed, then kept on disk
    cli_latency.fitted.cache_clear()
    read = cli(*ARGS)  # read back from disk
    cli_latency.fitted.cache_clear()
    monkeypatch.setenv("LLMCALC_CACHE_DIR", "")  # the cache off: a fresh fit
    plain = cli(*ARGS)
    assert kept.code == read.code == plain.code == 0
    assert kept.stdout == read.stdout == plain.stdout
    e = plain.json()["expected"]
    decode_rows = sum(r.test.startswith("tg") for r in rows_for("llama.cpp", "metal"))
    assert (e["engine"], e["backend"], e["basis"]["decode"]["rows"]) == (
        "llama.cpp", "metal", decode_rows)


def test_a_refusal_is_not_kept(fresh: Path, cli: Any) -> None:
    run = cli("latency", "llama-3-8b", "--gpu", "mi300x", "--engine", "trtllm", "--backend", "rocm",
              "--json")
    assert run.code == 2
    assert run.stderr.startswith("error: --engine trtllm: no published measurements of trtllm")
    assert [p.name for p in fresh.iterdir() if p.name.startswith("speed-")] == []


def test_a_kept_fit_is_found_without_reading_the_rows(fresh: Path, cli: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    kept = cli(*ARGS)
    assert sorted(p.name.split("-")[1] for p in fresh.iterdir()
                  if p.name.startswith("speed-")) == ["llama.cpp", "models"]
    cli_latency.fitted.cache_clear()

    def unread(*args: Any) -> Any:
        raise AssertionError("the measured rows were read")

    monkeypatch.setattr(cli_latency, "rows_for", unread)
    monkeypatch.setattr(cli_latency, "stand_in_rows", unread)
    assert cli(*ARGS).stdout == kept.stdout
