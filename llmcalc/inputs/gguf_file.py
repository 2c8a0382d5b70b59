"""GGUF files (llama.cpp's format): the header and the tensor table, never the weight data.

A GGUF file is a header — magic ``GGUF``, version, tensor count, metadata count — then the metadata
(typed key/value pairs: ``general.architecture``, ``llama.block_count`` …, the tokenizer's
arrays), then one entry per tensor (name, dimensions in ggml order, ggml type, data offset), then
the aligned tensor data. llama.cpp's own reader on PyPI (the ``gguf`` package, ``GGUFReader``)
parses it; this module drives it with three bounds of its own:

- the counts in the first 24 bytes are checked before anything is read (at most
  ``MAX_GGUF_METADATA`` keys and ``MAX_CHECKPOINT_TENSORS`` tensors);
- a metadata array of numbers is one view (the reader walks it element by element), an array of
  strings is skipped by its lengths without decoding (a 150,000-token vocabulary costs a few
  milliseconds, and only its length is kept), arrays of arrays are refused;
- tensor data is never touched: a tensor's bytes are ``elements / block size × block bytes`` of its
  ggml type (``gguf.GGML_QUANT_SIZES``, ggml's block structs), so the header alone — the first few
  MiB of a file of many GiB, or of a prefix read from the Hub by range requests — is enough.

Everything from the file is data, never a path or a command; names are escaped where shown.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmcalc.errors import ConfigError, MissingExtraError
from llmcalc.limits import MAX_CHECKPOINT_TENSORS, MAX_SHOWN, MiB, escape, shown

MAGIC = b"GGUF"
SUFFIX = ".gguf"
MAX_GGUF_METADATA = 65_536  # metadata keys (real files: 30–60)
MAX_GGUF_HEADER = 128 * MiB  # header + metadata + tensor table (a 256k-token vocabulary: ~12 MiB)
MAX_GGUF_ARRAY = 16_000_000  # elements of one metadata array (vocabularies: ≤ 300,000)
MAX_KEPT_ARRAY = 4096  # numeric arrays up to this long are kept (per-layer head counts …)


@dataclass(frozen=True)
class GgufTensor:
    """One entry of the tensor table: ``shape`` in ggml order (ne0 — the row length — first)."""

    name: str
    type: str  # ggml type name: F32, F16, BF16, Q8_0, Q4_K, IQ4_XS …
    shape: tuple[int, ...]
    elements: int
    nbytes: int
    offset: int = 0  # the data's offset from the start of the tensor data section


@dataclass(frozen=True)
class ArrayInfo:
    """A metadata array not kept whole: its element type and length."""

    type: str
    length: int


@dataclass(frozen=True)
class GgufHeader:
    """What a GGUF file's header says: metadata (scalars, short numeric arrays, or ArrayInfo) and
    the tensor table. ``size``: the file's length in bytes when known."""

    label: str
    version: int
    metadata: Mapping[str, Any]
    tensors: tuple[GgufTensor, ...]
    data_offset: int
    size: int | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def architecture(self) -> str:
        arch = self.metadata.get("general.architecture")
        return arch if isinstance(arch, str) else ""

    @property
    def parameters(self) -> int:
        return sum(t.elements for t in self.tensors)

    @property
    def tensor_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors)

    @property
    def file_type(self) -> str | None:
        """``general.file_type`` as llama.cpp names it (``Q4_K_M``), or None."""
        value = self.metadata.get("general.file_type")
        if not isinstance(value, int):
            return None
        from gguf import LlamaFileType

        try:
            name = LlamaFileType(value).name
        except ValueError:
            return None
        return name.removeprefix("MOSTLY_")

    def bytes_by_type(self) -> dict[str, tuple[int, int, int]]:
        """ggml type → (tensors, elements, bytes), most bytes first."""
        rows: dict[str, list[int]] = {}
        for t in self.tensors:
            row = rows.setdefault(t.type, [0, 0, 0])
            row[0] += 1
            row[1] += t.elements
            row[2] += t.nbytes
        ordered = sorted(rows.items(), key=lambda kv: (-kv[1][2], kv[0]))
        return {k: (c, e, b) for k, (c, e, b) in ordered}


class Truncated(Exception):
    """The bytes given end inside the header: read more (Hub prefixes)."""


def _gguf() -> Any:
    try:
        import gguf
    except ImportError:  # a core dependency; only a broken install lacks it
        raise MissingExtraError("reading a GGUF file", "gguf") from None
    return gguf


def is_gguf_path(path: Path) -> bool:
    return path.suffix.lower() == SUFFIX


def check_counts(prefix: bytes, label: str) -> None:
    """Magic, version and the two counts, refused before the reader loops over them."""
    if len(prefix) < 24:
        raise ConfigError(label, "not a GGUF file (shorter than its 24-byte header)")
    if prefix[:4] != MAGIC:
        raise ConfigError(label, "not a GGUF file (it does not start with GGUF)")
    version, tensors, keys = struct.unpack_from("<IQQ", prefix, 4)
    if version not in (2, 3):
        raise ConfigError(label, f"GGUF version {version} is not supported (2 and 3 are)")
    if tensors > MAX_CHECKPOINT_TENSORS:
        raise ConfigError(label, f"{tensors:,} tensors; at most {MAX_CHECKPOINT_TENSORS:,} are read")
    if keys > MAX_GGUF_METADATA:
        raise ConfigError(label, f"{keys:,} metadata keys; at most {MAX_GGUF_METADATA:,} are read")


def _reader_class() -> Any:
    gguf = _gguf()
    import numpy as np

    base = gguf.GGUFReader
    value_type = gguf.GGUFValueType
    scalars = base.gguf_scalar_to_np

    class BoundedReader(base):  # type: ignore[misc, valid-type]
        """GGUFReader with arrays read in one step and tensor data never viewed."""

        def _get(self, offset: int, dtype: Any, count: int = 1, override_order: Any = None) -> Any:
            count = int(count)
            itemsize = int(np.empty([], dtype=dtype).itemsize)
            if offset + itemsize * count > len(self.data):
                raise Truncated
            return super()._get(offset, dtype, count, override_order)

        def _get_field_parts(self, orig_offs: int, raw_type: int) -> Any:
            gtype = value_type(int(raw_type))
            if gtype != value_type.ARRAY:
                return super()._get_field_parts(orig_offs, raw_type)
            offs = orig_offs
            raw_itype = self._get(offs, np.uint32)
            alen = self._get(offs + 4, np.uint64)
            offs += 12
            n = int(alen[0])
            if n > MAX_GGUF_ARRAY:
                raise ValueError(f"a metadata array of {n:,} elements (at most {MAX_GGUF_ARRAY:,})")
            itype = value_type(int(raw_itype[0]))
            if itype == value_type.ARRAY:
                raise ValueError("a metadata array of arrays")
            if itype == value_type.STRING:
                view = memoryview(self.data)
                for _ in range(n):  # skip each string by its length, undecoded
                    if offs + 8 > len(self.data):
                        raise Truncated
                    (length,) = struct.unpack_from("<Q", view, offs)
                    offs += 8 + int(length)
                if offs > len(self.data):
                    raise Truncated
                return offs - orig_offs, [raw_itype, alen], [], [gtype, itype]
            values = self._get(offs, scalars[itype], n)
            offs += int(values.nbytes)
            return offs - orig_offs, [raw_itype, alen, values], [2], [gtype, itype]

        def _build_tensors(self, start_offs: int, fields: list[Any]) -> None:
            self.tensor_infos = fields  # read by _tensors(), the data is never viewed

    return BoundedReader


def _scalar(value: Any) -> Any:
    item = value.item() if hasattr(value, "item") else value
    return item


def _metadata(reader: Any, gguf: Any) -> dict[str, Any]:
    value_type = gguf.GGUFValueType
    out: dict[str, Any] = {}
    for name, f in reader.fields.items():
        if name.startswith("GGUF."):
            continue
        types = f.types
        if not types:
            continue
        if types[0] == value_type.STRING:
            out[name] = bytes(f.parts[-1]).decode("utf-8", errors="replace")
        elif types[0] == value_type.ARRAY:
            itype = types[1] if len(types) > 1 else value_type.UINT8
            # parts: key length, key, value type, then the array's item type, length, values
            length = int(f.parts[4][0])
            if itype != value_type.STRING and length <= MAX_KEPT_ARRAY:
                out[name] = [_scalar(v) for v in f.parts[5]]
            else:
                out[name] = ArrayInfo(itype.name.lower(), length)
        else:
            out[name] = _scalar(f.parts[-1][0])
    return out


def _tensors(reader: Any, gguf: Any) -> tuple[GgufTensor, ...]:
    sizes = gguf.GGML_QUANT_SIZES
    qtype = gguf.GGMLQuantizationType
    seen: set[str] = set()
    out = []
    for f in reader.tensor_infos:
        _len, name_data, _n_dims, dims, raw_dtype, offset = f.parts
        name = bytes(name_data).decode("utf-8", errors="replace")
        if name in seen:
            raise ValueError(f"tensor {shown(name)} is listed twice")
        seen.add(name)
        try:
            kind = qtype(int(raw_dtype[0]))
        except ValueError:
            raise ValueError(f"tensor {shown(name)}: unknown ggml type {int(raw_dtype[0])}") from None
        shape = tuple(int(d) for d in dims)
        elements = 1
        for d in shape:
            elements *= d
        block, block_bytes = sizes[kind]
        if shape and shape[0] % block:
            raise ValueError(f"tensor {shown(name)}: rows of {shape[0]} are not whole "
                             f"{kind.name} blocks of {block}")
        out.append(GgufTensor(name, kind.name, shape, elements, elements // block * block_bytes,
                              int(offset[0])))
    return tuple(out)


def parse(path: Path, label: str, *, size: int | None = None) -> GgufHeader:
    """The header of the GGUF file (or file prefix) at ``path``. Raises :class:`Truncated` when the
    bytes end inside the header, a :class:`ConfigError` for anything malformed."""
    gguf = _gguf()
    with open(path, "rb") as fh:
        prefix = fh.read(24)
    check_counts(prefix, label)
    try:
        reader = _reader_class()(str(path))
        tensors = _tensors(reader, gguf)
        metadata = _metadata(reader, gguf)
        version = int(reader.fields["GGUF.version"].parts[0][0])
        offset = int(reader.data_offset)
    except Truncated:
        raise
    except (ValueError, KeyError, IndexError, OverflowError, TypeError, UnicodeError) as e:
        detail = escape(str(e))[:MAX_SHOWN] or type(e).__name__
        raise ConfigError(label, f"not a readable GGUF file ({detail})") from None
    if offset > MAX_GGUF_HEADER:
        raise ConfigError(label, f"a GGUF header of {offset:,} bytes; at most {MAX_GGUF_HEADER:,}")
    return GgufHeader(label, version, metadata, tensors, offset, size)


def read_header(path: Path, label: str | None = None) -> GgufHeader:
    """A local GGUF file's header (the file is mapped, only its header pages are read)."""
    label = label or str(path)
    try:
        size = path.stat().st_size
    except OSError as e:
        raise ConfigError(label, f"cannot read ({e.strerror or type(e).__name__})") from None
    try:
        return parse(path, label, size=size)
    except Truncated:
        raise ConfigError(label, "the GGUF header runs past the end of the file") from None
    except OSError as e:
        raise ConfigError(label, f"cannot read ({e.strerror or type(e).__name__})") from None
