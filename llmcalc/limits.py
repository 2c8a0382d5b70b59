"""What llmcalc accepts from input, and how input reaches the terminal.

Every cap is checked before the work it bounds, and refused with a :class:`ConfigError` or
:class:`UsageError` naming it, so time and memory follow the size of the answer, not the numbers in
a file. A config's sizes are capped at ``MAX_SIZE`` (2⁵³ − 1) by the family configs
(``families/_base.py``); layer counts cost nothing since layers are kept as runs (``model/spec.py``).

Text from input (names, paths, tensor names, keys, values) is shown with control characters
escaped (``\\x1b``), so a config cannot move the cursor, set a window title or plant a hyperlink.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

MiB = 1024**2

MAX_CONFIG_BYTES = 4 * MiB  # a config.json or YAML file (real ones are a few KiB)
MAX_INDEX_BYTES = 64 * MiB  # model.safetensors.index.json (DeepSeek-V3's is about 9 MiB)
MAX_HEADER_BYTES = 16 * MiB  # one safetensors JSON header (the format allows 100 MB)
MAX_CHECKPOINT_TENSORS = 2_000_000  # tensors in one checkpoint, all shards together
MAX_NESTING = 64  # levels of lists and mappings in a config or header
MAX_LIST_ITEMS = 65_536  # entries of one list in a config (per-layer lists: real models have < 300)
MAX_EXPANDED = 8_000_000  # values + characters a YAML file expands to with its aliases
MAX_MODEL_ARG = 1024  # characters of a model name or path on the command line
MAX_META_CHARS = 1000  # characters of a config's name: or source:
MAX_SET_CHARS = 16 * 1024  # characters of one --set value (a per-layer list of 256 kinds: ~5,000)
MAX_OPTION_CHARS = 64  # characters of a number typed as an option (--ctx 128k, --gpu-mem 80GiB)
MAX_MODULE_COPIES = 1024  # copies of one module a number in a config makes one by one, each named
# (Gemma 3n's altup_num_inputs − 1 projections; real models have a handful)
MAX_MEASURED_LAYERS = 1024  # layers of a model measured on transformers' model (real ones: < 200)
MAX_MEASURED_TENSORS = 50_000  # parameter tensors it builds (as verify; DeepSeek-V3 has about 1,200)
MAX_MEASURED_MODULES = 200_000  # modules it builds (each a Python object: about 12 µs and 400 bytes)
MAX_LISTED_TENSORS = 1_000_000  # named tensors `count --tensors --json` writes out one by one
MAX_SHOWN = 200  # characters of an input value quoted in a message
MAX_MESSAGE = 2000  # characters of one error line

# C0 controls (newline and tab included: every message is one line), DEL, C1 controls, and the
# invisible bidirectional overrides and marks that reorder what a terminal shows (CVE-2021-42574).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROL_BUT_NEWLINE = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape_char(m: re.Match[str]) -> str:
    char = m.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def check_option_length(option: str, text: str) -> None:
    """A number typed as an option is at most ``MAX_OPTION_CHARS`` long (refused unread)."""
    if len(text) > MAX_OPTION_CHARS:
        from llmcalc.errors import UsageError

        raise UsageError(
            f"{option}: {len(text):,} characters; numbers are read up to {MAX_OPTION_CHARS}"
        )


def check_model_arg(model: str) -> None:
    """A model name or path from the command line: at most ``MAX_MODEL_ARG`` characters, no NUL
    (refused before any file system or network call)."""
    from llmcalc.errors import UsageError

    if len(model) > MAX_MODEL_ARG:
        raise UsageError(
            f"model {shown(model[:40])}: {len(model):,} characters; names and paths are read up "
            f"to {MAX_MODEL_ARG:,}"
        )
    if "\x00" in model:
        raise UsageError(f"model {shown(model)}: contains a NUL character")


def escape(text: str) -> str:
    """``text`` with every control character written out (``\\x1b``, ``\\n``): one safe line."""
    return _CONTROL.sub(_escape_char, text)


def escape_output(text: str) -> str:
    """Like :func:`escape`, keeping newlines: for whole tables and JSON documents."""
    return _CONTROL_BUT_NEWLINE.sub(_escape_char, text)


def one_line(message: str) -> str:
    """An error message as one escaped line of at most ``MAX_MESSAGE`` characters."""
    line = escape(message)
    if len(line) > MAX_MESSAGE:
        line = line[: MAX_MESSAGE - 1] + "…"
    return line


def shown(value: Any) -> str:
    """An input value quoted in a message: repr-like, escaped, at most ``MAX_SHOWN`` characters."""
    if isinstance(value, int) and not isinstance(value, bool):
        digits = len(str(abs(value))) if abs(value) < 10**200 else None
        text = str(value) if digits is not None else "an integer of more than 200 digits"
    elif isinstance(value, str):
        text = repr(value[: MAX_SHOWN + 1])
    else:
        text = _short_repr(value)
    text = escape(text)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


def _short_repr(value: Any) -> str:
    """repr of a small prefix of a nested value: never walks more than it shows."""
    if isinstance(value, dict):
        items = []
        for i, (k, v) in enumerate(value.items()):
            if i >= 8:
                items.append("…")
                break
            items.append(f"{_short_repr(k)}: {_short_repr(v)}")
        return "{" + ", ".join(items) + "}"
    if isinstance(value, (list, tuple)):
        parts = [_short_repr(v) for v in value[:8]] + (["…"] if len(value) > 8 else [])
        return "[" + ", ".join(parts) + "]"
    if isinstance(value, str):
        return repr(value[: MAX_SHOWN + 1])
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**200:
        return "<an integer of more than 200 digits>"
    return repr(value)


class EscapingStream:
    """A text stream that writes control characters escaped, newlines kept: the CLI's stdout and
    stderr, so that nothing llmcalc prints can carry a raw one from input."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(escape_output(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding …
        return getattr(self._stream, name)


def nesting_and_size(data: Any) -> tuple[int, int]:
    """How deep ``data`` nests and how many values and characters it expands to.

    Shared objects (YAML aliases) count each time they are reached, as anything that walks or
    prints the data would, but are walked once; the walk stops as soon as a cap is passed (a
    self-referencing YAML list passes the nesting cap), so it is cheap on an alias bomb.
    """
    if not isinstance(data, (dict, list)):
        return 1, 1 + (len(data) if isinstance(data, str) else 0)
    cost: dict[int, tuple[int, int]] = {}  # id of a finished container → (height, size)
    # each frame: [container, its depth, iterator over its children, height so far, size before]
    frames: list[list[Any]] = [[data, 1, _children(data), 1, 0]]
    size = 1
    while frames:
        frame = frames[-1]
        child = next(frame[2], _END)
        if child is _END:
            frames.pop()
            cost[id(frame[0])] = (frame[3], size - frame[4])
            if frames:
                frames[-1][3] = max(frames[-1][3], 1 + frame[3])
            continue
        if not isinstance(child, (dict, list)):
            size += 1 + (len(child) if isinstance(child, str) else 0)
            frame[3] = max(frame[3], 2)
        elif id(child) in cost:
            height, extra = cost[id(child)]
            size += extra
            frame[3] = max(frame[3], 1 + height)
            if frame[1] + height > MAX_NESTING:
                return frame[1] + height, size
        else:
            if frame[1] + 1 > MAX_NESTING:
                return frame[1] + 1, size
            frames.append([child, frame[1] + 1, _children(child), 1, size])
            size += 1
        if size > MAX_EXPANDED:
            return max(f[1] for f in frames) if frames else 1, size
    height, _ = cost[id(data)]
    return height, size


def longest_list(data: Any) -> int:
    """The most entries any list in ``data`` has (walked once per object; call after the caps of
    :func:`nesting_and_size` hold, so the walk is bounded)."""
    longest, seen, stack = 0, set(), [data]
    while stack:
        obj = stack.pop()
        if not isinstance(obj, (dict, list)) or id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, list):
            longest = max(longest, len(obj))
            stack.extend(obj)
        else:
            stack.extend(obj.values())
    return longest


def _children(obj: dict[Any, Any] | list[Any]) -> Iterator[Any]:
    return (x for kv in obj.items() for x in kv) if isinstance(obj, dict) else iter(obj)


_END = object()
