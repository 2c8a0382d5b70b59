"""Tensor names, shapes and dtypes of a safetensors checkpoint, read from the file headers alone.

A ``.safetensors`` file starts with 8 bytes (little-endian u64: the header length N) and N bytes of
JSON: ``{name: {"dtype": "BF16", "shape": [4096, 4096], "data_offsets": [start, end]}, ...}`` plus an
optional ``__metadata__`` entry (format: huggingface/safetensors, README "Format"). A sharded
checkpoint lists which file holds each tensor in ``model.safetensors.index.json`` (``weight_map``).
Only those bytes are read: no weights, no torch, no safetensors package.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from llmcalc.errors import ConfigError
from llmcalc.limits import (
    MAX_CHECKPOINT_TENSORS,
    MAX_HEADER_BYTES,
    MAX_INDEX_BYTES,
    MAX_NESTING,
    MiB,
    nesting_and_size,
    shown,
)

INDEX_FILE = "model.safetensors.index.json"
_LENGTH = struct.Struct("<Q")
# A dimension or offset past this is not a real one (and would overflow the byte counts torch keeps).
MAX_DIM = 2**53 - 1


@dataclass(frozen=True)
class TensorInfo:
    """One stored tensor: its shape, dtype and the file it is in."""

    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    file: str

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class Checkpoint:
    """Every tensor of a checkpoint folder, by name, and the files they came from."""

    folder: Path
    files: tuple[str, ...]
    tensors: Mapping[str, TensorInfo]

    @property
    def numel(self) -> int:
        return sum(t.numel for t in self.tensors.values())

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self.tensors.values())

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {name: t.shape for name, t in self.tensors.items()}


def has_safetensors(folder: Path) -> bool:
    """Whether ``folder`` holds a safetensors checkpoint (shards or an index)."""
    return folder.is_dir() and (
        (folder / INDEX_FILE).is_file() or any(folder.glob("*.safetensors"))
    )


def read_header(path: Path) -> dict[str, TensorInfo]:
    """The tensors one ``.safetensors`` file holds (its JSON header only)."""
    label = str(path)
    try:
        with path.open("rb") as f:
            head = f.read(_LENGTH.size)
            if len(head) < _LENGTH.size:
                raise ConfigError(label, "not a safetensors file (shorter than its 8-byte header length)")
            (length,) = _LENGTH.unpack(head)
            size = path.stat().st_size
            # the length is not echoed: in a file that is not safetensors it is 8 bytes of its text
            if _LENGTH.size + length > size:
                raise ConfigError(label, "not a safetensors file (its header length is past the end)")
            if length > MAX_HEADER_BYTES:
                raise ConfigError(
                    label,
                    f"safetensors header larger than {MAX_HEADER_BYTES // MiB} MiB, the most "
                    "llmcalc reads",
                )
            raw = f.read(length)
    except OSError as e:
        raise ConfigError(label, f"cannot read file ({e.strerror})") from None
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # JSONDecodeError is a ValueError
        raise ConfigError(label, "not a safetensors file (its header is not JSON)") from None
    if not isinstance(header, dict):
        raise ConfigError(label, "not a safetensors file (its header is not a JSON mapping)")
    if nesting_and_size(header)[0] > MAX_NESTING:
        raise ConfigError(label, f"safetensors header nests more than {MAX_NESTING} levels deep")
    return tensors_of_header(header, label=label, file=path.name)


def tensors_of_header(header: Mapping[str, object], *, label: str, file: str) -> dict[str, TensorInfo]:
    """The entries of one parsed header (a local file's, or one read from the Hub), checked alike."""
    out: dict[str, TensorInfo] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        out[name] = _tensor_info(entry, name=name, label=label, file=file)
    return out


def _tensor_info(entry: object, *, name: str, label: str, file: str) -> TensorInfo:
    if isinstance(entry, dict):
        shape, offsets, dtype = entry.get("shape"), entry.get("data_offsets"), entry.get("dtype")
        if (
            isinstance(shape, list)
            and len(shape) <= MAX_NESTING
            and all(_whole(d) for d in shape)
            and isinstance(offsets, list)
            and len(offsets) == 2
            and all(_whole(o) for o in offsets)
            and offsets[0] <= offsets[1]
            and isinstance(dtype, str)
            and len(dtype) <= 16
        ):
            return TensorInfo(tuple(shape), dtype, offsets[1] - offsets[0], file)
    raise ConfigError(
        label, f"tensor {shown(name)}: header entry lacks a valid dtype, shape or data_offsets"
    )


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_DIM


def read_checkpoint(folder: Path) -> Checkpoint:
    """All tensors of the checkpoint in ``folder``: the shards the index names, else its files.

    Without an index, ``model*.safetensors`` are read if present, otherwise every
    ``*.safetensors`` file (a tensor stored twice is an error either way).
    """
    index = folder / INDEX_FILE
    if index.is_file():
        if not within(index, folder):
            raise ConfigError(str(index), "links to a file outside the checkpoint folder")
        weight_map = _weight_map(index)
        files = sorted(set(weight_map.values()))
    else:
        weight_map = None
        found = sorted(p.name for p in folder.glob("model*.safetensors")) or sorted(
            p.name for p in folder.glob("*.safetensors")
        )
        if not found:
            raise ConfigError(str(folder), "folder has no *.safetensors files")
        files = found
    tensors: dict[str, TensorInfo] = {}
    for file in files:
        path = _inside(folder, file, index if weight_map is not None else folder)
        for name, info in read_header(path).items():
            if name in tensors:
                raise ConfigError(
                    str(path), f"tensor {shown(name)} is also stored in {tensors[name].file}"
                )
            tensors[name] = info
        if len(tensors) > MAX_CHECKPOINT_TENSORS:
            raise ConfigError(
                str(folder), f"more than {MAX_CHECKPOINT_TENSORS:,} tensors, the most llmcalc reads"
            )
    if weight_map is not None:
        for name, file in weight_map.items():
            if name not in tensors or tensors[name].file != file:
                raise ConfigError(
                    str(index), f"weight_map puts {shown(name)} in {shown(file)}, which lacks it"
                )
    return Checkpoint(folder, tuple(files), tensors)


def _inside(folder: Path, file: str, index: Path) -> Path:
    """``folder/file`` for a shard name from the index: a plain file name in that folder, never a
    path that leads elsewhere (``../x``, ``/etc/passwd``, a link out of the folder)."""
    label = str(index)
    if (not file.endswith(".safetensors") or "/" in file or "\\" in file or "\x00" in file
            or file in ("", ".", "..")):
        raise ConfigError(
            label, f"weight_map names {shown(file)}, which is not a .safetensors file in the folder"
        )
    path = folder / file
    try:
        target = path.resolve()
        inside = path.is_file() and any(target.is_relative_to(root) for root in _roots(folder))
    except (OSError, RuntimeError):  # RuntimeError: a loop of links (Python 3.11)
        inside = False
    if not inside:
        if index.is_dir():  # found by listing the folder: a link that leads out of it
            raise ConfigError(str(path), "links to a file outside the checkpoint folder")
        raise ConfigError(label, f"weight_map names {shown(file)}, which is not in the folder")
    return path


def within(path: Path, folder: Path) -> bool:
    """Whether ``path`` (a file of ``folder``) really lies in it: a link may lead only to the
    folder itself or, in a Hugging Face cache snapshot, to that repo's blobs."""
    try:
        target = path.resolve()
        return any(target.is_relative_to(root) for root in _roots(folder))
    except (OSError, RuntimeError):  # RuntimeError: a loop of links (Python 3.11)
        return False


def _roots(folder: Path) -> list[Path]:
    """Where a checkpoint's files may lie: the folder itself, and for a snapshot in the Hugging Face
    cache (``models--org--name/snapshots/<commit>/``, whose files are links) that repo's ``blobs/``."""
    real = folder.resolve()
    roots = [real]
    if real.parent.name == "snapshots":
        roots.append(real.parent.parent / "blobs")
    return roots


# safetensors dtype → the --dtype it is stored as; the others (I32, U8 …) hold packed quantized
# values (GPTQ/AWQ qweight, compressed-tensors weight_packed, MXFP4 blocks) or integer metadata.
STORED_AS = {
    "F64": None, "F32": "fp32", "F16": "fp16", "BF16": "bf16",
    "F8_E4M3": "fp8", "F8_E5M2": "fp8", "I8": "int8",
}


@dataclass(frozen=True)
class DTypeBytes:
    """What a checkpoint stores in one dtype."""

    dtype: str
    tensors: int
    numel: int
    nbytes: int

    @property
    def packed(self) -> bool:
        """Integer containers of packed low-bit values (I32 holds eight int4, U8 two fp4)."""
        return self.dtype in ("I32", "U8", "I16", "U16", "U32", "I64", "U64")


def bytes_by_dtype(ckpt: Checkpoint) -> tuple[DTypeBytes, ...]:
    """Stored tensors, elements and bytes per safetensors dtype, most bytes first."""
    acc: dict[str, list[int]] = {}
    for t in ckpt.tensors.values():
        row = acc.setdefault(t.dtype, [0, 0, 0])
        row[0] += 1
        row[1] += t.numel
        row[2] += t.nbytes
    rows = [DTypeBytes(d, *v) for d, v in acc.items()]
    return tuple(sorted(rows, key=lambda r: (-r.nbytes, r.dtype)))


@dataclass(frozen=True)
class StoredWeights:
    """A checkpoint's bytes by dtype, or why they could not be read (``rows`` empty, ``error`` set)."""

    where: str
    rows: tuple[DTypeBytes, ...] = ()
    error: str | None = None
    as_computed: bool = False  # the figures use these very bytes (a GGUF file's tensor table)

    @property
    def nbytes(self) -> int:
        return sum(r.nbytes for r in self.rows)


def other_dtypes(rows: tuple[DTypeBytes, ...], dtype: str) -> tuple[str, ...]:
    """Stored dtypes that are not ``dtype`` (a --dtype value such as bf16)."""
    return tuple(r.dtype for r in rows if STORED_AS.get(r.dtype) != dtype)


def _weight_map(index: Path) -> dict[str, str]:
    from llmcalc.inputs.files import (  # (with YAML's parser) only to read an index
        parse_json,
        read_text,
    )

    label = str(index)
    data = parse_json(read_text(index, label, limit=MAX_INDEX_BYTES), label)
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
    ):
        raise ConfigError(label, "missing weight_map (tensor name → file name)")
    return weight_map
