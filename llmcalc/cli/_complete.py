"""Shell completion of model names (``llmcalc --install-completion``): the bundled configs by file
name and repo id, models in the local Hugging Face cache, and config files and folders."""

from __future__ import annotations

import glob
import os


def complete_model(incomplete: str) -> list[str]:
    """Names and paths that start with what has been typed (case-insensitively for names)."""
    from llmcalc.inputs import bundled, hfcache

    names = [p.stem for p in bundled.paths()]
    names += [r for r in bundled.repo_ids() if r not in names]
    names += [r for r in hfcache.repo_ids() if r not in names]
    typed = incomplete.lower()
    found = [n for n in names if n.lower().startswith(typed)]
    for path in sorted(glob.glob(glob.escape(os.path.expanduser(incomplete)) + "*")):
        if os.path.isdir(path):
            found.append(path + "/")
        elif path.endswith((".json", ".yaml", ".yml")):
            found.append(path)
    return found
