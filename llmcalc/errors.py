"""Errors meant to be shown to a person, one line each.

    LLMCalcError            base; ``exit_code`` is what the CLI exits with
    ├── ConfigError         a config file or a field in it is wrong (exit 2)
    ├── UnknownModelError   a name matches no bundled config (exit 2)
    ├── HubError            a Hugging Face repo id cannot be read from the cache or the Hub (exit 2)
    ├── UsageError          an option value makes no sense (exit 2)
    │   └── ParameterError  an argument to a core function; names the parameter, the CLI the flag
    └── MissingExtraError   an optional dependency is not installed (exit 2)

Only the CLI prints them; the core raises them with the file and field named.
"""

from __future__ import annotations

import string
from collections.abc import Callable


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


class HubError(LLMCalcError):
    """A repo id that is malformed, gated, missing, has no config.json, or cannot be reached."""


class UsageError(LLMCalcError):
    """An option value that cannot be used (``--set``, ``--ctx``, ``--dtype`` …)."""


class ParameterError(UsageError):
    """A bad argument to a core function, worded with its parameter names.

    ``template`` holds a ``{name}`` field for each parameter it names and a field for each value
    given as a keyword: ``ParameterError("{gpus} {value}: must be 1 or more", value=0)`` reads
    "gpus 0: must be 1 or more" to a caller of the function; the CLI, through :meth:`spelled`,
    says "--gpus 0: must be 1 or more".
    """

    def __init__(self, template: str, **values: object) -> None:
        self.template = template
        self.values = values
        super().__init__(self.spelled(lambda name: name))

    @property
    def parameters(self) -> tuple[str, ...]:
        """The parameter names the message mentions, in order."""
        fields = (f for _, f, _, _ in string.Formatter().parse(self.template) if f)
        return tuple(dict.fromkeys(f for f in fields if f not in self.values))

    def spelled(self, spell: Callable[[str], str]) -> str:
        """The message with each parameter name passed through ``spell`` (e.g. to a flag)."""
        return self.template.format_map(
            {**{name: spell(name) for name in self.parameters}, **self.values}
        )


DISTRIBUTION = "llmcalc-exact"


def install_command(extra: str) -> str:
    """A pip command that adds ``extra`` to this copy, as it was installed (PEP 610's
    direct_url.json in the distribution's metadata): an editable or local install names its
    folder (``pip install -e '/src/llmcalc[verify]'``), a wheel file its path, a VCS install its
    URL; otherwise the extra's own requirements, which any index has. ``llmcalc-exact`` itself is
    on no index."""
    import json
    import shlex
    from importlib import metadata
    from urllib.parse import unquote, urlparse

    dists = list(metadata.distributions(name=DISTRIBUTION))
    direct: dict[str, object] = {}
    for d in dists:  # a clone's own *.egg-info may come first on sys.path, without direct_url
        try:
            direct = json.loads(d.read_text("direct_url.json") or "{}")
        except ValueError:
            continue
        if direct:
            break
    url = str(direct.get("url") or "")
    info = direct.get("dir_info")
    if url.startswith("file://"):
        path = unquote(urlparse(url).path)
        editable = isinstance(info, dict) and info.get("editable") is True
        return f"pip install {'-e ' if editable else ''}{shlex.quote(f'{path}[{extra}]')}"
    vcs = direct.get("vcs_info")
    if url:  # a VCS checkout or an archive by URL
        ref = f"{vcs.get('vcs', 'git')}+{url}" if isinstance(vcs, dict) else url
        return f"pip install {shlex.quote(f'{DISTRIBUTION}[{extra}] @ {ref}')}"
    from pathlib import Path

    source = Path(__file__).resolve().parent.parent  # a clone run without installing it
    if (source / "pyproject.toml").is_file():
        return f"pip install -e {shlex.quote(f'{source}[{extra}]')}"
    marker = f'extra == "{extra}"'
    wanted = [r.split(";")[0].replace(" ", "") for d in dists[:1] for r in d.requires or ()
              if marker in r]
    return "pip install " + " ".join(shlex.quote(r) for r in wanted)


class MissingExtraError(LLMCalcError):
    """An optional dependency is missing; the message says how to install it for this copy."""

    def __init__(self, what: str, extra: str = "verify") -> None:
        super().__init__(f"{what} needs the '{extra}' extra: {install_command(extra)}")
