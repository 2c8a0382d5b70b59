"""The configs shipped with llmcalc (``llmcalc/configs/*.yaml``) and how names find them.

A bundled model answers to its file name (``llama-2-7b``), its Hugging Face repo id
(``meta-llama/Llama-2-7b-hf``, the file's ``name:``) and that id's last part, case-insensitively.

Most bundled files are a checkpoint's published config.json (``source:`` says which and where from).
The others, marked ``class_defaults: true``, hold a transformers config class's defaults: they stand
for a model type whose published checkpoint config is not bundled.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from pathlib import Path
from typing import NoReturn

from llmcalc.errors import UnknownModelError

CONFIG_DIR = Path(__file__).parent.parent / "configs"
_NAME_LINE = re.compile(r"^name:\s*['\"]?([^'\"#\n]+?)['\"]?\s*$", re.MULTILINE)
_CLASS_DEFAULTS_LINE = re.compile(r"^class_defaults:\s*true\s*$", re.MULTILINE)
GLOB_CHARS = frozenset("*?[")


def paths() -> list[Path]:
    """Every bundled config file, sorted by name."""
    return [CONFIG_DIR / name for name in sorted(os.listdir(CONFIG_DIR)) if name.endswith(".yaml")]


@functools.cache
def _stems() -> dict[str, Path]:
    """lower-cased file name (without .yaml) → file: no file is read."""
    return {path.stem.lower(): path for path in paths()}


# Repo ids renamed on the Hub, the old one redirecting to the new (lower-cased): Meta published
# Llama 3.1 as meta-llama/Meta-Llama-3.1-{8B,70B,405B}[-Instruct] and renamed them
# meta-llama/Llama-3.1-… in late 2024 ("Meta renamed some of their recent repos recently",
# huggingface/candle#2576; "The page for the former now redirects to the latter",
# oumi-ai/oumi#1357). An old id answers to the bundled file of the new one, and so does its
# Instruct sibling's base (base_of).
RENAMED = {f"meta-llama/meta-llama-3.1-{size}": f"meta-llama/llama-3.1-{size}"
           for size in ("8b", "70b", "405b")}


@functools.cache
def _index() -> dict[str, Path]:
    """lower-cased name → file; the ``name:`` line is read with a regex, not a YAML parse."""
    index: dict[str, Path] = {}
    for path in paths():
        index[path.stem.lower()] = path
        m = _NAME_LINE.search(path.read_text(encoding="utf-8"))
        if m:
            repo_id = m.group(1).strip().lower()
            index.setdefault(repo_id, path)
            index.setdefault(repo_id.rsplit("/", 1)[-1], path)
    for old, new in RENAMED.items():
        if new in index:
            index.setdefault(old, index[new])
            index.setdefault(old.rsplit("/", 1)[-1], index[new])
    return index


def repo_ids() -> list[str]:
    """The repo ids of the bundled configs (their ``name:``), as written, in file order."""
    ids = []
    for path in paths():
        m = _NAME_LINE.search(path.read_text(encoding="utf-8"))
        if m:
            ids.append(m.group(1).strip())
    return ids


@functools.cache
def _class_defaults() -> frozenset[str]:
    """The stems of the files marked ``class_defaults: true`` (read with a regex, not a YAML parse)."""
    return frozenset(
        p.stem for p in paths() if _CLASS_DEFAULTS_LINE.search(p.read_text(encoding="utf-8"))
    )


def is_class_defaults(path: Path) -> bool:
    """Whether a bundled file holds a transformers config class's defaults rather than a
    checkpoint's published config.json."""
    return path.parent == CONFIG_DIR and path.stem in _class_defaults()


def with_cached() -> list[str]:
    """The published bundled configs' names, then the local Hugging Face cache's repo ids not
    among them, then the models Ollama pulled here: the models ``fit --gpu NAME`` (no model) plans."""
    from llmcalc.inputs import hfcache, ollama

    names = [p.stem for p in paths() if not is_class_defaults(p)]
    return names + [repo for repo in hfcache.repo_ids() if repo not in names] + \
        ollama.pulled_names()


def matches(pattern: str, *names: str) -> bool:
    """``pattern`` as ``llmcalc list`` reads it: a shell glob matched against a whole name when it
    has ``*``, ``?`` or ``[``, else a substring of one; both case-insensitive."""
    p = pattern.strip().lower()
    if GLOB_CHARS & set(p):
        return any(fnmatch.fnmatchcase(n.lower(), p) for n in names)
    return any(p in n.lower() for n in names)


def find(name: str) -> Path | None:
    """The bundled file a name refers to, or None. A name is looked up in the index of the
    bundled files, never joined onto the folder: ``../../etc/x`` is no bundled name."""
    key = name.strip().lower()
    # a file name wins over every repo id (as in the index), so it needs no file read
    return _stems().get(key) or _index().get(key)


# An instruction-tuned sibling's repo name: its base's with one of these added, at the end or before
# "-hf" or a version ("-v0.1"), in the same organisation: meta-llama/Llama-3.1-8B-Instruct,
# meta-llama/Llama-2-7b-chat-hf, mistralai/Mistral-7B-Instruct-v0.1, google/gemma-2-9b-it,
# Qwen/Qwen2.5-0.5B-Instruct. Their config.json is the base's architecture (the tuning changes
# weights, not shapes); an end-of-sequence id may differ. Not a base: a bundled file that holds a
# multimodal checkpoint's text_config (its siblings are whole multimodal models), and the bases of
# the siblings known to differ (SIBLINGS_THAT_DIFFER).
_TUNED = re.compile(r"-(?:instruct|chat|it)(?=$|-hf$|-v\d+(?:\.\d+)*$)", re.IGNORECASE)
# Siblings whose config.json differs from their base's in a field a figure reads:
# Mixtral-8x22B-Instruct-v0.1's vocab_size is 32,768, its base's 32,000 (its config.json as litgpt
# PR #1845 quotes it); Qwen2.5's Instruct releases from 7B up cap max_position_embeddings at 32,768
# where their bases take 131,072 (the bundled Qwen/Qwen2.5-72B-Instruct config.json against
# Qwen/Qwen2.5-7B's). The 7B and 32B Instruct releases are bundled with their own config.json and
# resolve to it (find, before any sibling is looked for); they stay listed so that base_of never
# answers for them with their base.
SIBLINGS_THAT_DIFFER = frozenset({
    "mistralai/mixtral-8x22b-instruct-v0.1", "qwen/qwen2.5-7b-instruct", "qwen/qwen2.5-14b-instruct",
    "qwen/qwen2.5-32b-instruct"})


def base_of(repo_id: str) -> Path | None:
    """The bundled config of the base model whose instruction-tuned sibling ``repo_id`` is
    (``_TUNED``), or None: the base's full repo id, in the same organisation, must be bundled, hold
    a checkpoint's whole config.json and not be known to differ from the sibling's."""
    org, slash, name = repo_id.partition("/")
    if not slash or "/" in name or repo_id.lower() in SIBLINGS_THAT_DIFFER:
        return None
    for m in _TUNED.finditer(name):
        path = _index().get(f"{org}/{name[:m.start()]}{name[m.end():]}".lower())
        if (path is not None and not is_class_defaults(path)
                and "text_config" not in path.read_text(encoding="utf-8")):
            return path
    return None


# How an organisation names the instruction-tuned sibling of a base repo (its prefix,
# case-insensitive), for a name given without the organisation: the suffix, put before a trailing
# "-hf" or version, as in meta-llama/Llama-2-7b-chat-hf, meta-llama/Meta-Llama-3-8B-Instruct,
# meta-llama/Llama-3.2-1B-Instruct, google/gemma-2-9b-it, mistralai/Mixtral-8x7B-Instruct-v0.1,
# Qwen/Qwen2.5-3B-Instruct. Not here, so refused: Qwen3, whose repos without a suffix are the
# tuned models and whose Instruct releases are dated ones of another config (Qwen3-30B-A3B-Instruct-
# 2507: max_position_embeddings 262,144 where Qwen3-30B-A3B has 40,960), and every organisation
# whose convention is not written down here.
SIBLING_SUFFIX = {"meta-llama/llama-2-": "-chat", "meta-llama/meta-llama-3-": "-Instruct",
                  "meta-llama/llama-3.": "-Instruct", "google/gemma-": "-it",
                  "mistralai/": "-Instruct", "qwen/qwen2-": "-Instruct", "qwen/qwen2.5-": "-Instruct"}
_TAIL = re.compile(r"(?:-hf|-v\d+(?:\.\d+)*)$", re.IGNORECASE)


def bare_base(name: str) -> tuple[Path, str] | None:
    """The base model's bundled config of an instruction-tuned sibling named without its
    organisation (``Llama-3.1-8B-Instruct``, ``llama-3-8b-instruct``, ``llama-2-7b-chat``,
    ``gemma-2-9b-it``, ``mixtral-8x7b-instruct-v0.1``), and that sibling's repo id, or None.
    The base is the name with the ``_TUNED`` suffix taken out, a bundled file's name or repo name,
    itself no tuned or ``-base`` repo; the suffix must be its organisation's (``SIBLING_SUFFIX``);
    the sibling's id is the base's with that suffix (``Llama-2-7b-hf`` → ``Llama-2-7b-chat-hf``),
    and must pass :func:`base_of`. A versioned base needs the version named (``mistral-7b-instruct``
    names none: v0.2 and v0.3 are other configs)."""
    name = name.strip()
    if "/" in name:
        return None
    for m in _TUNED.finditer(name):
        stripped = f"{name[:m.start()]}{name[m.end():]}".lower()
        path = _stems().get(stripped) or _index().get(stripped)
        repo = _NAME_LINE.search(path.read_text(encoding="utf-8")) if path else None
        if path is None or repo is None:
            continue
        base_id = repo.group(1).strip()
        org, _, base_name = base_id.partition("/")
        suffix = next((v for k, v in SIBLING_SUFFIX.items() if base_id.lower().startswith(k)), None)
        tail = _TAIL.search(base_name)
        if (suffix is None or m.group(0).lower() != suffix.lower() or _TUNED.search(base_name)
                or "-base" in base_name.lower()
                or (tail and not tail.group(0).lower().startswith("-hf")
                    and not name.lower().endswith(tail.group(0).lower()))):
            continue
        cut = tail.start() if tail else len(base_name)
        sibling = f"{org}/{base_name[:cut]}{suffix}{base_name[cut:]}"
        if base_of(sibling) == path:
            return path, sibling
    return None


def label(path: Path) -> str:
    """How messages name a bundled file."""
    return f"configs/{path.name}"


def raise_unknown(name: str, why: str | None = None) -> NoReturn:
    """Say that ``name`` is not bundled (or ``why`` there is no answer) and suggest the closest
    names (an Ollama name's tag read as the rest of the name: llama3.1:8b as llama3.1-8b)."""
    stems = [p.stem for p in paths()]
    import difflib  # only to suggest a name: not on the path of a good call
    close = difflib.get_close_matches(name.lower().replace(":", "-"), [s.lower() for s in stems],
                                      n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else "; see `llmcalc list`"
    why = why or f"unknown model {name!r}: not a file, folder or bundled config"
    raise UnknownModelError(f"{why}{hint}")
