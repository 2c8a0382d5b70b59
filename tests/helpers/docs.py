"""The documentation: README.md (the front page) and the reference pages in docs/."""

from __future__ import annotations

from pathlib import Path

from helpers import REPO

README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]


def page(name: str) -> Path:
    """A page by its path in the repository (``README.md``, ``docs/models.md``)."""
    path = REPO / name
    assert path in PAGES, f"{name} is not a documentation page"
    return path


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def all_text() -> str:
    """Every page, one after the other."""
    return "\n".join(text(p) for p in PAGES)
