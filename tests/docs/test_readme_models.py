"""The table of supported model types (docs/models.md) is true: every type it claims has a bundled
config that matches the transformers model built from it, and every supported type is in the table.

``PYTHONPATH=tests python tests/docs/test_readme_models.py`` prints the table as it should read,
from ``MODEL_TYPES`` and the bundled configs, to paste into docs/models.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from helpers import docs

from llmcalc import count, load_spec
from llmcalc.families import MODEL_TYPES
from llmcalc.inputs import bundled

README = docs.page("docs/models.md")
HEADING = "# Supported model types"
COLUMNS = ["model_type", "family module", "example config", "verified against transformers"]
VERIFIED = "✓"
# whole classes transformers builds only with timm, which the test environment cannot import beside
# the CPU torch (see the test named)
NEEDS_TIMM = {"gemma3n": "tests/multimodal/test_gemma3n.py"}
# what the last column says for them: transformers builds the tower with timm, which cannot be
# imported beside the pinned CPU torch; the tower is held to timm's recorded tensors instead
VERIFIED_BY_RECORD = "✓ (tower: timm's recorded tensors)"


def verified(model_type: str) -> str:
    return VERIFIED_BY_RECORD if model_type in NEEDS_TIMM else VERIFIED


@dataclass(frozen=True)
class Row:
    model_type: str
    module: str
    config: str  # a bundled config's file name (stem)
    verified: str


def _cell(text: str) -> str:
    """The text of a table cell without Markdown code ticks or a trailing repo id."""
    text = text.strip().split(" (")[0]
    return text.strip("`").strip()


def readme_rows(text: str) -> list[Row]:
    """The rows of the table that follows the "Supported model types" heading."""
    assert HEADING in text, f"docs/models.md has no '{HEADING}' section"
    section = re.split(r"\n#+ ", text.split(HEADING, 1)[1], maxsplit=1)[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("|")]
    assert lines, "the section has no table"
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header == COLUMNS
    assert re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[1]), "second table line is not a separator"
    rows = []
    for line in lines[2:]:
        cells = [_cell(c) for c in line.strip().strip("|").split("|")]
        assert len(cells) == len(COLUMNS), line
        rows.append(Row(*cells))
    return rows


def _rows_or_none() -> list[Row] | None:
    try:
        return readme_rows(README.read_text(encoding="utf-8"))
    except AssertionError:
        return None  # test_the_readme_has_the_table says why


ROWS = _rows_or_none() or []


def test_the_readme_has_the_table() -> None:
    readme_rows(README.read_text(encoding="utf-8"))


def test_the_table_lists_each_type_once() -> None:
    types = [r.model_type for r in ROWS]
    assert len(types) == len(set(types))
    assert len(types) >= 30


def test_every_supported_type_is_in_the_table() -> None:
    missing = sorted(set(MODEL_TYPES) - {r.model_type for r in ROWS})
    assert missing == [], f"MODEL_TYPES has types the README table lacks: {missing}"


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.parametrize("row", ROWS, ids=[r.model_type for r in ROWS])
def test_each_claimed_type_has_a_bundled_config_that_verifies(row: Row) -> None:
    from llmcalc.verify.reference import build_meta_model, figures

    assert row.model_type in MODEL_TYPES, f"{row.model_type} is not a supported model_type"
    assert row.module == f"llmcalc/families/{MODEL_TYPES[row.model_type].module}.py"
    assert row.verified == VERIFIED  # (the cell less its parenthesis: the table test reads it all)
    assert bundled.find(row.config) is not None, f"{row.config} is not a bundled config"
    spec = load_spec(row.config)
    assert spec.model_type == row.model_type
    pc = count(spec)
    assert pc.total == spec.expected["total_params"]
    if row.model_type in NEEDS_TIMM:
        return  # its parts and timm's recorded tower are held to transformers in NEEDS_TIMM's test
    real = figures(build_meta_model(spec), spec.num_layers)
    assert dict(spec.named_shapes()) == real.named_shapes
    assert pc.total == real.total


def expected_rows() -> list[str]:
    """The table as it should read: one row per model_type, its smallest bundled config."""
    by_type: dict[str, list[tuple[int, str]]] = {}
    for path in bundled.paths():
        text = path.read_text(encoding="utf-8")
        m = re.search(r"^model_type:\s*(\S+)", text, re.MULTILINE)
        if m and m.group(1) in MODEL_TYPES:
            by_type.setdefault(m.group(1), []).append(
                (count(load_spec(path.stem)).total, path.stem)
            )
    configs = {t: min(sizes)[1] for t, sizes in by_type.items()}
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for model_type, family in MODEL_TYPES.items():
        config = configs.get(model_type, "?")
        repo = load_spec(config).name if config != "?" else "?"
        lines.append(
            f"| `{model_type}` | `llmcalc/families/{family.module}.py` | `{config}` ({repo}) "
            f"| {verified(model_type)} |"
        )
    return lines


if __name__ == "__main__":
    print("\n".join(expected_rows()))
