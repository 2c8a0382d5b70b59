"""Hugging Face repo ids → a ``config.json`` on disk: the local cache first, then the Hub.

A name that is neither a path nor a bundled config and reads ``org/name`` is looked up, through the
``huggingface_hub`` library (imported here only, and only then):

1. in the local Hugging Face cache (``HF_HUB_CACHE``, else ``HF_HOME/hub``, else
   ``~/.cache/huggingface/hub``), at ``revision`` read through the cache's ``refs/``;
2. on the Hub (``HF_ENDPOINT``), downloading ``config.json`` only into that cache, so the next call
   is offline; ``HF_TOKEN`` (or a stored login) for gated and private repos; nothing is asked of
   the network under ``HF_HUB_OFFLINE=1``.

Every network call has a timeout (``HF_HUB_ETAG_TIMEOUT``, default 10 s) and is made without the
library's retries, so a dead or slow Hub is an error within that time, never a hang. Every failure
is a :class:`HubError`: one line saying what to do.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from llmcalc.errors import HubError

if TYPE_CHECKING:
    from llmcalc.inputs.safetensors_index import Checkpoint

CONFIG = "config.json"
DEFAULT_REVISION = "main"
DEFAULT_TIMEOUT_S = 10.0  # the library's own default for metadata calls
# org/name as the Hub spells repo ids: letters, digits, '-', '_', '.'; at most 96 characters.
REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9._-]+")  # matched whole (fullmatch)
MAX_REPO_ID = 96
MAX_FILES_NAMED = 6

Kind = Literal["cache", "hub"]


@dataclass(frozen=True)
class HubConfig:
    """Where a repo id's config.json was found: the file, and how the model is named."""

    path: Path
    repo_id: str
    revision: str
    kind: Kind

    @property
    def name(self) -> str:
        """The repo id, with ``@revision`` when it is not ``main`` (never a snapshot hash)."""
        return self.repo_id if self.revision == DEFAULT_REVISION else f"{self.repo_id}@{self.revision}"


def looks_like_repo_id(name: str) -> bool:
    """Whether ``name`` is meant as ``org/name`` rather than a path (one slash, no path prefix)."""
    return "/" in name and not name.startswith((".", "/", "~")) and "\\" not in name


def check_repo_id(name: str) -> None:
    """A malformed id is refused before any import or network call."""
    if (
        len(name) > MAX_REPO_ID
        or not REPO_ID.fullmatch(name)
        or "--" in name
        or ".." in name
        or name.endswith((".", "-"))
    ):
        raise HubError(
            f"{name!r}: not a file or folder, and not a Hugging Face repo id (org/name: letters, "
            "digits, '-', '_' and '.', at most 96 characters)"
        )


def timeout_s() -> float:
    """Seconds to wait for the Hub: ``HF_HUB_ETAG_TIMEOUT`` as the library reads it, else 10."""
    text = os.environ.get("HF_HUB_ETAG_TIMEOUT", "")
    try:
        value = float(text)
    except ValueError:
        return DEFAULT_TIMEOUT_S
    return value if value > 0 else DEFAULT_TIMEOUT_S


def cache_dir() -> str:
    """The cache folder as the environment names it now (the library reads it once, at import):
    ``HF_HUB_CACHE``, else ``HF_HOME/hub``, else the library's default."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return os.path.join(os.environ["HF_HOME"], "hub")
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def _import() -> Any:
    try:
        import huggingface_hub
    except ImportError:  # a core dependency; only a broken install lacks it
        raise HubError(
            "reading a Hugging Face repo id needs huggingface_hub: pip install 'huggingface_hub>=2.4,<3'"
        ) from None
    return huggingface_hub


def find_config(repo_id: str, revision: str | None = None) -> HubConfig:
    """``repo_id``'s config.json at ``revision``: from the local cache, else downloaded from the Hub."""
    check_repo_id(repo_id)
    rev = revision or DEFAULT_REVISION
    hf = _import()
    from huggingface_hub import constants

    cached = hf.try_to_load_from_cache(repo_id, CONFIG, revision=rev, cache_dir=cache_dir())
    if isinstance(cached, str):
        return HubConfig(Path(cached), repo_id, rev, "cache")
    snapshot = _any_snapshot(repo_id) if revision is None else None
    if constants.is_offline_mode():
        if snapshot is not None:
            return snapshot
        raise HubUnreadable(
            f"{_named(repo_id, rev)}: not in the local cache ({constants.HF_HUB_CACHE}) and the Hub "
            "cannot be reached (HF_HUB_OFFLINE is set); pass a path to its config.json, or run "
            "once with network"
        )
    try:
        return _download(hf, repo_id, rev)
    except HubError:
        if snapshot is None:
            raise
        return snapshot  # the Hub failed, but the cache holds the repo: read that


def _any_snapshot(repo_id: str) -> HubConfig | None:
    """A cached snapshot of ``repo_id`` that huggingface_hub's lookup of main misses (no
    refs/main: fetched by another branch, tag or commit), named by the ref that points to it,
    else by its commit."""
    from llmcalc.inputs import hfcache

    folder = hfcache.find(repo_id)
    if folder is None:
        return None
    refs = folder.parent.parent / "refs"
    try:
        named = [r.name for r in refs.iterdir()
                 if r.is_file() and r.read_text(encoding="utf-8").strip() == folder.name]
    except OSError:
        named = []
    return HubConfig(folder / CONFIG, repo_id, min(named, default=folder.name), "cache")


def _download(hf: Any, repo_id: str, rev: str) -> HubConfig:
    """HEAD the config (no retries, a timeout), then download it into the standard cache."""
    from huggingface_hub import constants

    limit = timeout_s()
    url = hf.hf_hub_url(repo_id, CONFIG, revision=rev)
    try:
        hf.get_hf_file_metadata(url, timeout=limit)
        path = hf.hf_hub_download(repo_id, CONFIG, revision=rev, etag_timeout=limit,
                                  cache_dir=cache_dir())
    except Exception as e:  # noqa: BLE001 - every library error becomes one line below
        raise _explain(hf, e, repo_id, rev, limit, constants.ENDPOINT) from None
    return HubConfig(Path(path), repo_id, rev, "hub")


def _explain(hf: Any, e: Exception, repo_id: str, rev: str, limit: float, endpoint: str) -> HubError:
    """The one line a person reads for a failed Hub call."""
    from huggingface_hub import errors

    who = _named(repo_id, rev)
    status = _status(e)
    if isinstance(e, errors.GatedRepoError):
        if status == 403:
            return HubError(
                f"{who}: is gated and the token in use has no access: accept its licence on the "
                f"Hub ({endpoint}/{repo_id}) with that account"
            )
        return HubUnreadable(f"{who}: is gated: accept its licence on the Hub and set HF_TOKEN")
    if isinstance(e, errors.RevisionNotFoundError):
        return HubError(f"{repo_id}: no revision {rev!r} on the Hub (a branch, tag or commit)")
    if isinstance(e, errors.RepositoryNotFoundError):
        return HubError(
            f"{repo_id}: no such model repo on the Hub (a private one needs HF_TOKEN with access)"
        )
    if isinstance(e, errors.RemoteEntryNotFoundError):
        return _no_config(hf, repo_id, rev, limit)
    timeout, unreachable = _network_failure(e)
    if timeout:
        return HubUnreadable(
            f"{who}: the Hub ({endpoint}) did not answer within {limit:g} s; set "
            "HF_HUB_ETAG_TIMEOUT to wait longer, or pass a path to its config.json"
        )
    if unreachable:
        return HubUnreadable(
            f"{who}: not in the local cache and the Hub cannot be reached ({endpoint}); pass a path "
            "to its config.json, or run once with network"
        )
    if status is not None:
        return HubError(f"{who}: the Hub answered HTTP {status} for {CONFIG}; try again later")
    detail = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
    return HubError(f"{who}: cannot get {CONFIG} from the Hub ({type(e).__name__}: {detail})")


def _no_config(hf: Any, repo_id: str, rev: str, limit: float) -> HubError:
    """A repo without config.json: name the files it has (a GGUF-only repo, most often)."""
    try:
        info = hf.HfApi().model_info(repo_id, revision=rev, timeout=limit)
        files = sorted(s.rfilename for s in (info.siblings or ()))
    except Exception:  # noqa: BLE001 - the listing only adds detail to the message
        files = []
    head = f"{_named(repo_id, rev)}: the repo has no {CONFIG}"
    if not files:
        return HubError(f"{head}; pass a path to the model's config.json")
    shown = ", ".join(files[:MAX_FILES_NAMED]) + (
        f" and {len(files) - MAX_FILES_NAMED} more" if len(files) > MAX_FILES_NAMED else ""
    )
    weights = [f for f in files if f.lower().endswith(".gguf")]
    if weights:
        return GgufRepo(f"{head}; its GGUF files are read instead")
    kind = "its files"
    return HubError(
        f"{head} ({kind}: {shown}); name the original model's repo or pass a path to its config.json"
    )


class HubUnreadable(HubError):
    """The repo's config.json could not be had, though the repo may well exist: offline and not
    cached, the Hub unreachable or too slow, or gated with no token given (``llmcalc.inputs.config``
    may then read an instruction-tuned sibling's base: ``bundled.base_of``)."""


class GgufRepo(HubError):
    """A repo with GGUF files and no config.json: read one of its GGUF headers instead."""


def _network_failure(e: BaseException) -> tuple[bool, bool]:
    """(timed out, could not connect) anywhere in the exception's chain."""
    import httpx2  # huggingface_hub's HTTP client

    seen: set[int] = set()
    current: BaseException | None = e
    timeout = unreachable = False
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        timeout |= isinstance(current, (httpx2.TimeoutException, TimeoutError))
        unreachable |= isinstance(current, (httpx2.ConnectError, ConnectionError))
        current = current.__cause__ or current.__context__
    return timeout, unreachable


def _status(e: Exception) -> int | None:
    response = getattr(e, "response", None)
    code = getattr(response, "status_code", None)
    return code if isinstance(code, int) else None


def _named(repo_id: str, rev: str) -> str:
    return repo_id if rev == DEFAULT_REVISION else f"{repo_id}@{rev}"


def read_checkpoint(repo_id: str, revision: str | None = None) -> Checkpoint:
    """The safetensors tensors of a Hub checkpoint, from its file headers alone (range requests:
    ``get_safetensors_metadata``), checked as a local folder's headers are."""
    from llmcalc.inputs.safetensors_index import Checkpoint, TensorInfo, tensors_of_header

    check_repo_id(repo_id)
    rev = revision or DEFAULT_REVISION
    who = _named(repo_id, rev)
    hf = _import()
    from huggingface_hub import constants, errors

    if constants.is_offline_mode():
        raise HubError(
            f"{who}: reading the checkpoint's safetensors headers needs the Hub (HF_HUB_OFFLINE is "
            "set); compare with --against transformers, or pass a folder holding the checkpoint"
        )
    limit = timeout_s()
    try:
        meta = hf.HfApi().get_safetensors_metadata(repo_id, revision=rev, timeout=limit)
    except errors.NotASafetensorsRepoError:
        raise HubError(
            f"{who}: the repo has neither model.safetensors nor model.safetensors.index.json; "
            "compare with --against transformers"
        ) from None
    except errors.SafetensorsParsingError as e:
        detail = (str(e).strip().splitlines() or [""])[0][:200]
        raise HubError(f"{who}: a safetensors header cannot be read ({detail})") from None
    except Exception as e:  # noqa: BLE001 - every library error becomes one line
        raise _explain(hf, e, repo_id, rev, limit, constants.ENDPOINT) from None
    tensors: dict[str, TensorInfo] = {}
    for file, fm in sorted(meta.files_metadata.items()):
        label = f"{who}: {file}"
        header = {
            name: {"dtype": t.dtype, "shape": list(t.shape), "data_offsets": list(t.data_offsets)}
            for name, t in fm.tensors.items()
        }
        for name, info in tensors_of_header(header, label=label, file=file).items():
            if name in tensors:
                raise HubError(f"{label}: tensor {name!r} is also stored in {tensors[name].file}")
            tensors[name] = info
    for name, file in meta.weight_map.items():
        if name not in tensors or tensors[name].file != file:
            raise HubError(f"{who}: the weight_map puts {name!r} in {file}, which lacks it")
    return Checkpoint(Path(repo_id), tuple(sorted(meta.files_metadata)), tensors)
