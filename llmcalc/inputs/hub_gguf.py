"""GGUF files in a Hugging Face repo: listed, one picked, its header read by range requests.

``org/name:Q4_K_M`` (the selector llama.cpp's ``-hf`` and Ollama's ``hf.co/…`` use) or
``org/name:file.gguf`` names one file of a repo; a repo with no config.json but GGUF files answers
for its ``Q4_K_M`` file when it has one (llama.cpp's default), else lists its files. Only the
header is fetched — the first MiB, then twice as much until the tensor table is whole, at most
``MAX_GGUF_HEADER`` — never the weights. A split file (``-00001-of-00003.gguf``) is read part by
part, each part's header alone.

Headers read are kept in llmcalc's cache folder (``$LLMCALC_CACHE_DIR``, else
``~/.cache/llmcalc``) under the repo, revision and file, beside the listing, so the next call
needs no network; a file already downloaded into the Hugging Face cache is read from there.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmcalc.errors import HubError, LLMCalcError
from llmcalc.inputs import hub
from llmcalc.inputs.gguf_file import MAX_GGUF_HEADER, GgufHeader, GgufTensor, Truncated, parse
from llmcalc.limits import MiB, shown

FIRST_READ = 1 * MiB
SPLIT = re.compile(r"^(?P<stem>.+)-(?P<part>\d{5})-of-(?P<parts>\d{5})\.gguf$", re.IGNORECASE)
DEFAULT_QUANT = "Q4_K_M"  # llama.cpp's -hf default
MAX_LISTED = 12


@dataclass(frozen=True)
class GgufFile:
    """One GGUF model in a repo: its file names (several for a split file) and total size."""

    name: str  # the first part's name
    parts: tuple[str, ...]
    size: int | None

    @property
    def quant(self) -> str:
        """The quantization named in the file name (``…-Q4_K_M.gguf`` → Q4_K_M), or ''."""
        stem = SPLIT.sub(r"\g<stem>", self.name) if SPLIT.match(self.name) else self.name[:-5]
        m = re.search(r"(?:^|[-_.])((?:I?Q\d[A-Z0-9_]*|F16|F32|BF16|MXFP4[A-Z0-9_]*))$", stem,
                      re.IGNORECASE)
        return m.group(1).upper() if m else ""


def split_selector(model: str) -> tuple[str, str] | None:
    """``org/name:SELECTOR`` → (org/name, SELECTOR); None when ``model`` has no selector."""
    repo, sep, selector = model.partition(":")
    if not sep or not hub.looks_like_repo_id(repo):
        return None
    if not selector or len(selector) > 200 or "/" in selector or "\\" in selector:
        raise HubError(f"{shown(model)}: after ':' name a quantization (Q4_K_M) or a .gguf file "
                       "of the repo")
    return repo, selector


def group(files: dict[str, int | None]) -> list[GgufFile]:
    """The repo's GGUF models: split files joined under their first part."""
    singles: list[GgufFile] = []
    splits: dict[str, list[str]] = {}
    for name in sorted(files):
        if not name.lower().endswith(".gguf") or "/" in name and name.split("/")[-1].startswith("."):
            continue
        m = SPLIT.match(name)
        if m:
            splits.setdefault(m.group("stem"), []).append(name)
        else:
            singles.append(GgufFile(name, (name,), files[name]))
    for parts in splits.values():
        sizes = [files[p] for p in parts]
        size = sum(s for s in sizes if s is not None) if all(s is not None for s in sizes) else None
        singles.append(GgufFile(parts[0], tuple(parts), size))
    # mmproj files are vision projectors of llama.cpp, not the language model
    return sorted((f for f in singles if "mmproj" not in f.name.lower()), key=lambda f: f.name)


def listing_text(files: list[GgufFile]) -> str:
    def size(f: GgufFile) -> str:
        if f.size is None:
            return "size unknown"
        return f"{f.size / 10**9:.2f} GB" if f.size >= 10**8 else f"{f.size / 10**6:.1f} MB"

    items = [f"{f.quant or f.name} ({size(f)})" for f in files[:MAX_LISTED]]
    more = f" and {len(files) - MAX_LISTED} more" if len(files) > MAX_LISTED else ""
    return ", ".join(items) + more


def pick(repo: str, files: list[GgufFile], selector: str | None) -> GgufFile:
    if not files:
        raise HubError(f"{repo}: the repo has no config.json and no GGUF file")
    if selector is None:
        wanted = [f for f in files if f.quant == DEFAULT_QUANT]
        if len(files) == 1:
            return files[0]
        if len(wanted) == 1:
            return wanted[0]
        raise HubError(f"{repo}: a GGUF repo with {len(files)} files: {listing_text(files)}; "
                       f"pick one as {repo}:QUANT (e.g. {repo}:{files[0].quant or files[0].name})")
    by_name = [f for f in files if selector in f.parts or selector == f.name]
    by_quant = [f for f in files if f.quant and f.quant == selector.upper()]
    found = by_name or by_quant
    if len(found) == 1:
        return found[0]
    if not found:
        raise HubError(f"{repo}: no GGUF file {shown(selector)}; its files: {listing_text(files)}")
    names = ", ".join(f.name for f in found[:MAX_LISTED])
    raise HubError(f"{repo}: {shown(selector)} names {len(found)} files ({names}); pick one by "
                   "its file name")


def _cache_folder(repo: str, rev: str) -> Path | None:
    from llmcalc.inputs import speccache

    base = speccache.folder()
    if base is None:
        return None
    key = hashlib.sha256(f"{repo}@{rev}".encode()).hexdigest()[:32]
    return base / "gguf-headers" / key


def _load_cached(folder: Path | None, name: str) -> Any:
    if folder is None:
        return None
    try:
        return json.loads((folder / name).read_text())
    except (OSError, ValueError):
        return None


def _store(folder: Path | None, name: str, data: Any) -> None:
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{name}.{os.getpid()}"
        tmp.write_text(json.dumps(data))
        tmp.replace(folder / name)
    except OSError:
        pass  # a cache that cannot be written is no cache


def _list_files(hf: Any, repo: str, rev: str, limit: float) -> dict[str, int | None]:
    info = hf.HfApi().model_info(repo, revision=rev, timeout=limit, files_metadata=True)
    return {s.rfilename: getattr(s, "size", None) for s in (info.siblings or ())}


def _read_prefix(hf: Any, repo: str, rev: str, name: str, limit: float) -> GgufHeader:
    """The header of one file, by range requests of 1, 2, 4 … MiB."""
    from huggingface_hub import get_session
    from huggingface_hub.utils import build_hf_headers  # type: ignore[attr-defined]

    url = hf.hf_hub_url(repo, name, revision=rev)
    label = f"{repo}:{name}"
    want = FIRST_READ
    with tempfile.TemporaryDirectory(prefix="llmcalc-gguf-") as tmp:
        path = Path(tmp) / "header.gguf"
        while True:
            headers = {**build_hf_headers(), "Range": f"bytes=0-{want - 1}"}
            response = get_session().get(url, headers=headers, timeout=limit,
                                         follow_redirects=True)
            if response.status_code not in (200, 206):
                raise HubError(f"{label}: the Hub answered HTTP {response.status_code} for a range "
                               "of the file")
            body = response.content[:want]
            path.write_bytes(body)
            total = _total_size(response.headers.get("Content-Range"), len(body))
            try:
                header = parse(path, label, size=total)
            except Truncated:
                if len(body) < want or want >= MAX_GGUF_HEADER:
                    raise HubError(f"{label}: the GGUF header does not end within "
                                   f"{min(want, len(body)):,} bytes") from None
                want *= 2
                continue
            return header


def _total_size(content_range: str | None, got: int) -> int | None:
    if content_range and "/" in content_range:
        total = content_range.rsplit("/", 1)[1]
        if total.isdigit():
            return int(total)
    return None


def _as_json(h: GgufHeader) -> dict[str, Any]:
    from llmcalc.inputs.gguf_file import ArrayInfo

    meta = {k: ({"array": v.type, "length": v.length} if isinstance(v, ArrayInfo) else v)
            for k, v in h.metadata.items()}
    return {"version": h.version, "metadata": meta, "data_offset": h.data_offset, "size": h.size,
            "tensors": [[t.name, t.type, list(t.shape), t.elements, t.nbytes] for t in h.tensors]}


def _from_json(data: Any, label: str) -> GgufHeader:
    from llmcalc.inputs.gguf_file import ArrayInfo

    meta = {k: (ArrayInfo(v["array"], v["length"]) if isinstance(v, dict) else v)
            for k, v in data["metadata"].items()}
    tensors = tuple(GgufTensor(n, t, tuple(s), e, b) for n, t, s, e, b in data["tensors"])
    return GgufHeader(label, data["version"], meta, tensors, data["data_offset"], data["size"])


def _merge(parts: list[GgufHeader], label: str) -> GgufHeader:
    """A split file's parts as one header: the first part's metadata, every part's tensors."""
    first = parts[0]
    tensors = tuple(t for p in parts for t in p.tensors)
    sizes = [p.size for p in parts]
    size = sum(s for s in sizes if s is not None) if all(s is not None for s in sizes) else None
    return GgufHeader(label, first.version, first.metadata, tensors, first.data_offset, size)


def find_gguf(repo: str, selector: str | None, revision: str | None) -> tuple[GgufHeader, str]:
    """The header of the GGUF file ``selector`` picks in ``repo`` (see the module's doc), and the
    name to show for it (``repo:file``)."""
    hub.check_repo_id(repo)
    rev = revision or hub.DEFAULT_REVISION
    hf = hub._import()
    from huggingface_hub import constants

    folder = _cache_folder(repo, rev)
    limit = hub.timeout_s()
    files = _load_cached(folder, "files.json")
    if not isinstance(files, dict):
        if constants.is_offline_mode():
            raise HubError(f"{repo}: its GGUF files are not in the local cache and the Hub cannot "
                           "be reached (HF_HUB_OFFLINE is set)")
        try:
            files = _list_files(hf, repo, rev, limit)
        except Exception as e:  # noqa: BLE001 - every library error becomes one line
            raise hub._explain(hf, e, repo, rev, limit, constants.ENDPOINT) from None
        _store(folder, "files.json", files)
    chosen = pick(repo, group(files), selector)
    label = f"{repo}:{chosen.name}"
    headers = []
    for part in chosen.parts:
        key = hashlib.sha256(part.encode()).hexdigest()[:32] + ".json"
        cached = _load_cached(folder, key)
        if cached is not None:
            try:
                headers.append(_from_json(cached, label))
                continue
            except (KeyError, TypeError, ValueError):
                pass
        local = hf.try_to_load_from_cache(repo, part, revision=rev, cache_dir=hub.cache_dir())
        if isinstance(local, str):
            from llmcalc.inputs.gguf_file import read_header

            header = read_header(Path(local), label)
        elif constants.is_offline_mode():
            raise HubError(f"{label}: the header is not in the local cache and the Hub cannot be "
                           "reached (HF_HUB_OFFLINE is set)")
        else:
            try:
                header = _read_prefix(hf, repo, rev, part, limit)
            except LLMCalcError:
                raise
            except Exception as e:  # noqa: BLE001 - every library error becomes one line
                raise hub._explain(hf, e, repo, rev, limit, constants.ENDPOINT) from None
        _store(folder, key, _as_json(header))
        headers.append(header)
    merged = headers[0] if len(headers) == 1 else _merge(headers, label)
    return merged, label
