"""A pydantic validation error as the one line a person reads, naming the field
(``num_attention_heads must be an integer, got "12"``), and a config value quoted in a message."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from llmcalc.limits import MAX_SHOWN, shown

# pydantic error type → the message a person reads ({field}, {value} filled in)
VALIDATION_MESSAGES = {
    "missing": "missing required field {field}",
    "int_type": "{field} must be an integer, got {value}",
    "int_from_float": "{field} must be an integer, got {value}",
    "int_parsing": "{field} must be an integer, got {value}",
    "greater_than": "{field} must be a positive integer, got {value}",
    "greater_than_equal": "{field} must be zero or more, got {value}",
    "less_than_equal": "{field} must be at most 2^53 - 1 (9,007,199,254,740,991), got {value}",
    "bool_type": "{field} must be true or false, got {value}",
    "bool_parsing": "{field} must be true or false, got {value}",
    "float_type": "{field} must be a number, got {value}",
    "float_parsing": "{field} must be a number, got {value}",
    "string_type": "{field} must be a string, got {value}",
    "list_type": "{field} must be a list, got {value}",
    "dict_type": "{field} must be a mapping, got {value}",
}


def validation_message(e: ValidationError) -> str:
    errors = e.errors()
    first = errors[0]
    field = ".".join(str(p) for p in first["loc"]) or "config"
    template = VALIDATION_MESSAGES.get(first["type"], "{field}: " + first["msg"])
    msg = template.format(field=field, value=quoted(first.get("input")))
    if len(errors) > 1:
        msg += f" (and {len(errors) - 1} more)"
    return msg


def quoted(value: Any) -> str:
    """A value from a config as a message quotes it: JSON-like, escaped, cut short."""
    if isinstance(value, str):
        text = json.dumps(value[:MAX_SHOWN])  # control characters come out as \u001b
        return text if len(value) <= MAX_SHOWN else text[:-1] + '…"'
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return json.dumps(value)
    return shown(value)
