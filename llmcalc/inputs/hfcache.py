"""Models in the local Hugging Face cache, by repo id: ``org/name`` → its snapshot's folder.

The hub cache (``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``) keeps
each repository as ``models--org--name/snapshots/<revision>/``, with ``refs/main`` naming the
revision last downloaded from the main branch. Nothing here reaches the network.
"""

from __future__ import annotations

import os
from pathlib import Path

PREFIX = "models--"


def hub() -> Path:
    given = os.environ.get("HF_HUB_CACHE")
    if given:
        return Path(given)
    home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache",
                                                      "huggingface")
    return Path(home) / "hub"


def repo_ids() -> list[str]:
    """Every cached model repository with a config.json in a snapshot, sorted."""
    try:
        entries = sorted(p for p in hub().iterdir() if p.name.startswith(PREFIX))
    except OSError:
        return []
    return [p.name[len(PREFIX):].replace("--", "/") for p in entries if _snapshot(p) is not None]


def find(repo_id: str) -> Path | None:
    """The cached snapshot folder (holding config.json) of ``org/name``, or None."""
    if repo_id.count("/") != 1 or ".." in repo_id or repo_id.startswith("/"):
        return None
    try:
        return _snapshot(hub() / (PREFIX + repo_id.replace("/", "--")))
    except (OSError, ValueError):  # a name the file system cannot hold
        return None


def _snapshot(repo: Path) -> Path | None:
    """refs/main's snapshot, else the most recently changed one, if it holds a config.json."""
    snapshots = repo / "snapshots"
    try:
        main = (repo / "refs" / "main").read_text(encoding="utf-8").strip()
    except OSError:
        main = ""
    candidates = [snapshots / main] if main and "/" not in main else []
    try:
        candidates += sorted(snapshots.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        pass
    return next((c for c in candidates if (c / "config.json").is_file()), None)
