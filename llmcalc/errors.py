"""Errors meant to be shown to a person, one line each.

    LLMCalcError            base; ``exit_code`` is what the CLI exits with
    ├── ConfigError         a config file or a field in it is wrong (exit 2)
    ├── UnknownModelError   a name matches no bundled config (exit 2)
    ├── UsageError          an option value makes no sense (exit 2)
    └── MissingExtraError   an optional dependency is not installed (exit 2)

Only the CLI prints them; the core raises them with the file and field named.
"""

from __future__ import annotations


class LLMCalcError(Exception):
    """Base class: a message for a person and the exit code the CLI uses."""

    exit_code = 2


class ConfigError(LLMCalcError):
    """A config file is missing, unreadable, or one of its fields is wrong."""

    def __init__(self, source: str, message: str) -> None:
        self.source = source
        self.detail = message
        super().__init__(f"{source}: {message}")


class UnknownModelError(LLMCalcError):
    """A model name that is neither a path nor a bundled config."""


class UsageError(LLMCalcError):
    """An option value that cannot be used (``--set``, ``--ctx``, ``--dtype`` …)."""


class MissingExtraError(LLMCalcError):
    """An optional dependency is missing; the message says how to install it."""

    def __init__(self, what: str, extra: str = "verify") -> None:
        super().__init__(f"{what} needs the '{extra}' extra: pip install 'llmcalc[{extra}]'")
