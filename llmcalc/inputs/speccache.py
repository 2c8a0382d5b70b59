"""Validated specs of the bundled configs, kept between runs so that a plain
``llmcalc count llama-2-7b`` needs neither a YAML parse nor pydantic's validators at start.

A bundled config is validated the first time a command uses it (as always), and the resulting
:class:`ModelSpec` is pickled into the cache folder under a key made of the file's bytes and a
fingerprint of llmcalc's own modules (their names, sizes and modification times): a changed config
or a changed llmcalc never reads a stale entry. Only bundled configs without ``--set`` or
``--family`` use it. The folder is ``$LLMCALC_CACHE_DIR``, else ``$XDG_CACHE_HOME/llmcalc``,
else ``~/.cache/llmcalc``; ``LLMCALC_CACHE_DIR=`` (empty) turns it off. A cache that cannot be
read or written is ignored: the spec is then validated as usual.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

from llmcalc.inputs import bundled

if TYPE_CHECKING:
    from llmcalc.model.spec import ModelSpec

T = TypeVar("T")
PACKAGE = Path(__file__).resolve().parent.parent
FORMAT = b"llmcalc-spec-1"


def folder() -> Path | None:
    """Where entries live, or None when the cache is off."""
    given = os.environ.get("LLMCALC_CACHE_DIR")
    if given is not None:
        return Path(given) if given else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "llmcalc"


@cache
def _fingerprint() -> bytes:
    """Names, sizes and modification times of llmcalc's modules and the data tables they read
    (transformers' declared defaults, the hardware table): a new version, a new key."""
    h = hashlib.sha256(FORMAT)
    for root, dirs, files in os.walk(PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".json")):
                st = os.stat(os.path.join(root, name))
                h.update(f"{root}/{name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.digest()


def fingerprint() -> bytes:
    """The key part that changes with llmcalc's code (the kept --help texts use it too)."""
    return _fingerprint()


def bundled_file(model: str) -> Path | None:
    """The bundled config ``model`` names, unless a local file or folder of that name wins."""
    try:
        if Path(model).expanduser().exists():
            return None
        return bundled.find(model)
    except (OSError, ValueError):  # a name the file system cannot hold: validation will say so
        return None


def load(model: str, validate: Callable[[], ModelSpec]) -> ModelSpec:
    """The spec of a bundled ``model`` from the cache, else ``validate()`` (then kept)."""
    path = bundled_file(model) if folder() is not None else None
    return validate() if path is None else load_file(path, validate)


def load_file(path: Path, validate: Callable[[], ModelSpec]) -> ModelSpec:
    """The spec of the bundled config at ``path`` from the cache, else ``validate()``."""
    from llmcalc.model.spec import ModelSpec

    return _kept(path.stem, [path], validate, ModelSpec, named=False)


def load_derived(tag: str, paths: list[Path], compute: Callable[[], T], kind: type) -> T:
    """A value of type ``kind`` that depends only on the bundled configs at ``paths`` and on
    llmcalc's code (``llmcalc list``'s rows), from the cache, else ``compute()`` (then kept)."""
    return _kept(tag, paths, compute, kind, named=True)


def _kept(tag: str, paths: list[Path], compute: Callable[[], T], kind: type, *,
          named: bool) -> T:
    """The entry keyed by llmcalc's fingerprint and the files' bytes (and ``named``: their
    names), else ``compute()``."""
    where = folder()
    if where is None:
        return compute()
    try:
        h = hashlib.sha256(_fingerprint())
        for path in paths:
            if named:
                h.update(path.name.encode() + b"\0")
            h.update(path.read_bytes())
    except OSError:
        return compute()
    entry = where / f"{tag}-{h.hexdigest()[:32]}.pickle"
    try:
        value = pickle.loads(entry.read_bytes())
        if isinstance(value, kind):
            return cast(T, value)
    except Exception:  # noqa: BLE001 - missing, partial or from another version: compute again
        pass
    value = compute()
    try:
        where.mkdir(parents=True, exist_ok=True)
        partial = entry.with_suffix(f".{os.getpid()}.tmp")
        partial.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(partial, entry)
    except OSError:
        pass
    return value
