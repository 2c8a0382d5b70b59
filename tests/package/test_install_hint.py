"""The pip command a missing extra prints: how this copy was installed, from its metadata."""

from __future__ import annotations

import json
from importlib import metadata
from typing import Any

import pytest
from helpers import REPO

from llmcalc import errors


class _Dist:
    def __init__(self, direct: dict[str, Any] | None, requires: list[str] | None = None) -> None:
        self.direct, self.requires = direct, requires

    def read_text(self, name: str) -> str | None:
        return json.dumps(self.direct) if name == "direct_url.json" and self.direct else None


@pytest.mark.parametrize(("direct", "hint"), [
    ({"url": "file:///src/my%20llmcalc", "dir_info": {"editable": True}},
     "pip install -e '/src/my llmcalc[verify]'"),
    ({"url": "file:///src/llmcalc", "dir_info": {}}, "pip install '/src/llmcalc[verify]'"),
    ({"url": "file:///w/llmcalc_exact-0.1.0-py3-none-any.whl", "archive_info": {}},
     "pip install '/w/llmcalc_exact-0.1.0-py3-none-any.whl[verify]'"),
    ({"url": "https://example.org/llmcalc.git", "vcs_info": {"vcs": "git", "commit_id": "ab"}},
     "pip install 'llmcalc-exact[verify] @ git+https://example.org/llmcalc.git'"),
])
def test_hint_follows_the_install(monkeypatch: pytest.MonkeyPatch, direct: dict[str, Any],
                                  hint: str) -> None:
    # a clone's own egg-info (no direct_url.json) first on sys.path, the installed one after it
    monkeypatch.setattr(metadata, "distributions", lambda name: [_Dist(None), _Dist(direct)])
    assert errors.install_command("verify") == hint
    assert str(errors.MissingExtraError("verify")) == f"verify needs the 'verify' extra: {hint}"


def test_hint_without_metadata_names_the_clone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metadata, "distributions", lambda name: [])
    assert errors.install_command("serve") == f"pip install -e '{REPO}[serve]'"


def test_this_install_is_editable() -> None:
    assert errors.install_command("verify") == f"pip install -e '{REPO}[verify]'"
