"""Ollama's pulled models: a name as ``ollama pull`` takes it → the GGUF file its manifest names.

Ollama keeps a pulled model as a manifest and content-addressed blobs under its models folder,
``$OLLAMA_MODELS`` or else ``~/.ollama/models`` (ollama/ollama ``envconfig/config.go``, ``Models``):
the manifest at ``manifests/{host}/{namespace}/{model}/{tag}`` (``server/modelpath.go`` at
commit f4d852d, ``GetManifestPath``), each blob at ``blobs/sha256-{hex}`` (``GetBlobsPath``, which takes only a
sha256 digest). A name is read as ``types/model/name.go`` (commit 5c0caaf, ``ParseName``) reads it:
``[host/][namespace/]model[:tag]``, host ``registry.ollama.ai``, namespace ``library`` and tag
``latest`` where it leaves them out; host letters, digits, ``_ - . :``; namespace ``_ -``; model and
tag ``_ - .``; each part starting with a letter, digit or ``_``, at most 80 characters (a host 350).

The manifest's layer of media type ``application/vnd.ollama.image.model`` is the model's GGUF file,
read like any other GGUF; a vision projector is a layer of its own (``…image.projector``), not read.
Nothing but the manifest and that one blob is opened, and only inside the models folder.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from llmcalc.errors import ConfigError
from llmcalc.inputs.files import parse_json, read_text
from llmcalc.limits import MiB, shown

HOST, NAMESPACE, TAG = "registry.ollama.ai", "library", "latest"
MODEL_LAYER = "application/vnd.ollama.image.model"
PROJECTOR_LAYER = "application/vnd.ollama.image.projector"
MAX_MANIFEST_BYTES = 1 * MiB  # a manifest lists a handful of layers in a few hundred bytes
MAX_PULLED = 1_000  # models listed from one models folder (fit --gpu with no model)
MAX_SCANNED = 100_000  # folder entries looked at to find them
_PART = {  # name.go's isValidPart: first character, then the rest, and the longest part
    "host": (r"[A-Za-z0-9_][A-Za-z0-9_.:-]*", 350),
    "namespace": (r"[A-Za-z0-9_][A-Za-z0-9_-]*", 80),
    "model": (r"[A-Za-z0-9_][A-Za-z0-9_.-]*", 80),
    "tag": (r"[A-Za-z0-9_][A-Za-z0-9_.-]*", 80),
}
_DIGEST = re.compile(r"sha256[:-]([0-9a-f]{64})")


@dataclass(frozen=True)
class Name:
    """A model's name with every part filled in (``registry.ollama.ai/library/llama3.1:8b``)."""

    host: str
    namespace: str
    model: str
    tag: str
    tagged: bool  # the name as given carried its tag (``llama3.1:8b``, not ``llama3.1``)

    @property
    def parts(self) -> tuple[str, str, str, str]:
        return self.host, self.namespace, self.model, self.tag


@dataclass(frozen=True)
class Pulled:
    """A pulled model: its GGUF blob, and its projector layer's size if it has one."""

    name: str  # as the user wrote it
    blob: Path
    projector_bytes: int | None


def parse(name: str) -> Name | None:
    """``name`` as Ollama reads it, or None where it is not a valid Ollama name."""
    rest, tagged, tag = name, False, TAG
    if name.rfind(":") > name.rfind("/"):  # "/" is no tag character: a later ":" starts the tag
        rest, _, tag = name.rpartition(":")
        tagged = True
    given = rest.split("/")
    if len(given) > 3:
        return None
    host, namespace, model = [HOST, NAMESPACE][: 3 - len(given)] + given
    parts = {"host": host, "namespace": namespace, "model": model, "tag": tag}
    for kind, value in parts.items():
        pattern, longest = _PART[kind]
        if len(value) > longest or not re.fullmatch(pattern, value):
            return None
    return Name(host, namespace, model, tag, tagged)


def models_dir() -> Path:
    """Ollama's models folder: ``$OLLAMA_MODELS`` (spaces and quotes trimmed, as envconfig's ``Var``
    trims them), else ``~/.ollama/models``."""
    given = os.environ.get("OLLAMA_MODELS", "").strip().strip("\"'")
    return Path(given).expanduser() if given else Path.home() / ".ollama" / "models"


def manifest_path(name: Name) -> Path:
    return models_dir().joinpath("manifests", *name.parts)


def find(name: str) -> Pulled | None:
    """The pulled model ``name`` names, or None where it is no Ollama name or has no manifest here;
    ``org/name`` without a tag is a Hugging Face repo id, never looked for here."""
    parsed = parse(name) if ":" in name or "/" not in name else None
    if parsed is None:
        return None
    manifest = manifest_path(parsed)
    try:
        if not manifest.is_file():
            return None
    except OSError:
        return None
    label = str(manifest)
    from llmcalc.inputs.safetensors_index import within

    if not within(manifest, models_dir() / "manifests"):
        raise ConfigError(label, "links to a file outside Ollama's manifests folder")
    data = parse_json(read_text(manifest, label, limit=MAX_MANIFEST_BYTES), label)
    layers = data.get("layers") if isinstance(data, dict) else None
    if not isinstance(layers, list) or not all(isinstance(x, dict) for x in layers):
        raise ConfigError(label, "layers: expected a list of layers (an Ollama manifest)")
    models = [x for x in layers if x.get("mediaType") == MODEL_LAYER]
    if len(models) != 1:
        raise ConfigError(label, f"{len(models)} layers of mediaType {MODEL_LAYER}; a model has one")
    digest = models[0].get("digest")
    m = _DIGEST.fullmatch(digest) if isinstance(digest, str) else None
    if m is None:
        raise ConfigError(label, f"layers: digest {shown(digest)} is not a sha256 digest "
                          "(sha256: and 64 hex digits)")
    blobs = models_dir() / "blobs"
    blob = blobs / f"sha256-{m.group(1)}"
    try:
        present = blob.is_file()
    except OSError:
        present = False
    if not present:
        raise ConfigError(label, f"its model layer's blob {blob} is missing (a pull cut short?)")
    if not within(blob, blobs):
        raise ConfigError(str(blob), "links to a file outside Ollama's blobs folder")
    sizes = [x.get("size") for x in layers if x.get("mediaType") == PROJECTOR_LAYER]
    projector = sum(s for s in sizes if isinstance(s, int) and not isinstance(s, bool)) if sizes else None
    return Pulled(name, blob, projector)


def pulled_names(most: int = MAX_PULLED) -> list[str]:
    """The models pulled here, named as ``ollama list`` names them (``llama3.1:8b``; a namespace
    or host other than the defaults kept): one a manifest under ``manifests/``, at most ``most``
    of them, a folder or file whose name is no name part left out."""
    names: list[str] = []
    seen = 0

    def entries(folder: Path, files: bool) -> list[Path]:
        nonlocal seen
        try:
            with os.scandir(folder) as it:
                found = []
                for e in it:
                    seen += 1
                    if seen > MAX_SCANNED:
                        break
                    if e.is_file(follow_symlinks=False) if files else e.is_dir(follow_symlinks=False):
                        found.append(Path(e.path))
                return sorted(found)
        except OSError:
            return []

    for host in entries(models_dir() / "manifests", False):
        for namespace in entries(host, False):
            for model in entries(namespace, False):
                for tag in entries(model, True):
                    parts = (host.name, namespace.name, model.name, tag.name)
                    name = f"{model.name}:{tag.name}"
                    if parts[:2] != (HOST, NAMESPACE):
                        name = f"{namespace.name}/{name}"
                    if parts[0] != HOST:
                        name = f"{host.name}/{name}"
                    parsed = parse(name)
                    if parsed is not None and parsed.parts == parts:
                        names.append(name)
                    if len(names) >= most:
                        return names
    return names


def hub_selector(name: str) -> str | None:
    """``hf.co/org/repo:Q4_K_M`` (Ollama's name for a Hugging Face GGUF) → ``org/repo:Q4_K_M``, the
    Hub's own selector; None for any other name."""
    for prefix in ("https://", "http://"):
        name = name.removeprefix(prefix)
    host, sep, rest = name.partition("/")
    if sep and host.lower() in ("hf.co", "huggingface.co") and rest.count("/") == 1:
        return rest
    return None


def not_pulled(name: str) -> str | None:
    """Why a tagged Ollama name that is not pulled here has no answer; None for any other name."""
    parsed = parse(name)
    if parsed is None or not parsed.tagged:
        return None
    return (f"{name}: an Ollama model name, not pulled here (no manifest {manifest_path(parsed)}; "
            f"$OLLAMA_MODELS names another models folder): `ollama pull {name}` first, or name a "
            "bundled model or a Hugging Face repo id")
