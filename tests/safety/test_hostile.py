"""Hostile and malformed input through the CLI entry point: exit code, one line, no traceback, no
raw control characters, a memory cap never hit, nothing outside a checkpoint folder read.

The corpus is in tests/helpers/hostile.py (bench/hostile_input.py times the same cases).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from helpers.hostile import Case, Result, run_case, run_cases, write_corpus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# the corpus is written once, when the tests are collected, so that each case is a test of its own
FOLDER = Path(tempfile.mkdtemp(prefix="llmcalc-hostile-"))
CASES = write_corpus(FOLDER)


def _param(case: Case) -> object:
    marks = [pytest.mark.slow]
    if case.verify or case.args[0] == "verify":  # builds with transformers
        marks.append(pytest.mark.torch)
    return pytest.param(case, id=case.name, marks=marks)


@pytest.fixture(scope="module")
def results(request: pytest.FixtureRequest) -> dict[str, Result]:
    """The selected cases, run together through one forked runner (a fresh interpreter per case
    would spend most of the time starting Python)."""
    params = [getattr(getattr(item, "callspec", None), "params", {}) for item in request.session.items
              if getattr(item, "module", None) is request.module]
    selected = [p["case"] for p in params if "case" in p]
    return {r.case.name: r for r in run_cases(selected, FOLDER)}


def test_the_corpus_is_large_and_each_case_named_once() -> None:
    assert len(CASES) > 200
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_hostile_case_keeps_the_promises(results: dict[str, Result], case: Case) -> None:
    assert results[case.name].problems == []


@pytest.fixture(scope="module")
def corpus() -> tuple[Path, list[Case]]:
    return FOLDER, CASES


def test_escaped_name_is_shown_escaped(corpus: tuple[Path, list[Case]]) -> None:
    folder, _ = corpus
    r = run_case(Case("escapes", ("count", str(folder / "escapes.yaml")), 0), folder)
    assert r.problems == []
    assert r.stdout.splitlines()[0].startswith("\\x1b]0;pwned\\x1b[2J\\x9b31m\\u202e  (llama")


def test_a_trillion_layers_are_counted_exactly(corpus: tuple[Path, list[Case]]) -> None:
    folder, _ = corpus
    r = run_case(Case("1e12", ("count", str(folder / "layers-1e12.json"), "--json"), 0), folder)
    import json

    data = json.loads(r.stdout)
    # one llama layer of d=64, ff=128: attention 4·64² + MLP 3·64·128 + 2 norms of 64
    per_layer = 4 * 64 * 64 + 3 * 64 * 128 + 2 * 64
    assert data["layer_params"] == per_layer * 10**12
    assert data["total_params"] == per_layer * 10**12 + 2 * 100 * 64 + 64


# Random text as a config file, through the command in-process: exit 0 or one error line (exit 2).
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.one_of(
        st.text(max_size=300),
        st.recursive(
            st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20)),
            lambda children: st.lists(children, max_size=4)
            | st.dictionaries(st.text(max_size=10), children, max_size=4),
            max_leaves=20,
        ).map(lambda v: __import__("json").dumps({"model_type": "llama", "x": v})),
    ),
    suffix=st.sampled_from([".json", ".yaml"]),
)
def test_random_config_text_is_an_answer_or_one_error_line(
    cli: object, tmp_path: Path, body: str, suffix: str
) -> None:
    path = tmp_path / f"random{suffix}"
    path.write_text(body, encoding="utf-8", errors="surrogatepass")
    r = cli("count", str(path))  # type: ignore[operator]
    assert r.code in (0, 2), r.stderr
    if r.code == 2:
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
