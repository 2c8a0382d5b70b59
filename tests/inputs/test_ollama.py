"""A model Ollama pulled, named as `ollama pull` names it: its manifest found under $OLLAMA_MODELS,
its model layer's GGUF blob read like a .gguf file (llmcalc.inputs.ollama). The folders here are
written the way Ollama writes them (manifests/{host}/{namespace}/{model}/{tag}, blobs/sha256-…)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import tiny_gguf

from llmcalc.inputs import ollama

MODEL = "application/vnd.ollama.image.model"
# tiny_gguf's llama: 2 layers of d 256 (590,336 each), embeddings and lm_head 512 × 256, final norm
TOTAL = 2 * 590_336 + 2 * 512 * 256 + 256


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ollama-models"
    (root / "blobs").mkdir(parents=True)
    monkeypatch.setenv("OLLAMA_MODELS", str(root))
    return root


def pull(root: Path, name: tuple[str, str, str, str], *, layers: list[dict[str, Any]] | None = None,
         gguf: Path | None = None) -> Path:
    """Write a pulled model as Ollama does: the GGUF as a blob named by its digest, the manifest."""
    blob = gguf or tiny_gguf.write(root.parent / "model.gguf", "llama")
    data = blob.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    (root / "blobs" / f"sha256-{digest}").write_bytes(data)
    manifest = root.joinpath("manifests", *name)
    manifest.parent.mkdir(parents=True, exist_ok=True)
    given = layers if layers is not None else [
        {"mediaType": MODEL, "digest": f"sha256:{digest}", "size": len(data)}]
    manifest.write_text(json.dumps({"schemaVersion": 2, "layers": given}))
    return root / "blobs" / f"sha256-{digest}"


LIBRARY = ("registry.ollama.ai", "library", "tiny", "1b")


def test_a_pulled_model_is_read_from_its_blob(cli: Any, models: Path) -> None:
    blob = pull(models, LIBRARY)
    r = cli("count", "tiny:1b", "--json")
    out = r.json()
    assert (r.code, out["model"], out["total_params"]) == (0, "tiny:1b", TOTAL)
    assert out["origin"] == {"source": "ollama", "path": str(blob), "repo_id": None, "revision": None}
    assert out["source"] == f"Ollama model tiny:1b: GGUF blob {blob.name} (F32; architecture llama)"
    by_path = cli("count", str(blob.parent.parent.parent / "model.gguf"), "--json").json()
    assert by_path["total_params"] == TOTAL


def test_the_table_says_where_it_was_read(cli: Any, models: Path) -> None:
    blob = pull(models, LIBRARY)
    r = cli("count", "tiny:1b")
    assert r.code == 0
    assert "the GGUF file of a model Ollama pulled" in r.stdout
    assert f"source: Ollama model tiny:1b: GGUF blob {blob.name}" in r.stdout


def test_memory_takes_the_blobs_stored_bytes(cli: Any, models: Path) -> None:
    """The weights as the file stores them (F32 here: 4 bytes a parameter), as for a .gguf path."""
    pull(models, LIBRARY)
    out = cli("memory", "tiny:1b", "--json").json()
    assert (out["dtype"], out["weights_bytes"], out["checkpoint"]["bytes"]) == (
        "gguf F32", 4 * TOTAL, 4 * TOTAL)


def test_a_name_without_its_tag_is_latest(cli: Any, models: Path) -> None:
    pull(models, ("registry.ollama.ai", "library", "tiny", "latest"))
    assert cli("count", "tiny", "--json").json()["total_params"] == TOTAL


def test_a_namespace_and_a_host_are_folders_of_their_own(cli: Any, models: Path) -> None:
    pull(models, ("registry.ollama.ai", "someone", "tiny", "v2"))
    pull(models, ("hf.co", "bartowski", "Tiny-GGUF", "Q4_K_M"))
    assert cli("count", "someone/tiny:v2", "--json").json()["total_params"] == TOTAL
    out = cli("count", "hf.co/bartowski/Tiny-GGUF:Q4_K_M", "--json").json()
    assert (out["model"], out["origin"]["source"]) == ("hf.co/bartowski/Tiny-GGUF:Q4_K_M", "ollama")


def test_a_bundled_name_comes_first(cli: Any, models: Path) -> None:
    pull(models, ("registry.ollama.ai", "library", "gpt2", "latest"))
    out = cli("count", "gpt2", "--json").json()
    assert (out["origin"]["source"], out["total_params"]) == ("bundled", 124_439_808)


def test_a_tagged_name_not_pulled_says_so(cli: Any, models: Path) -> None:
    r = cli("count", "llama3.1:8b")
    manifest = models / "manifests/registry.ollama.ai/library/llama3.1/8b"
    assert (r.code, r.stdout) == (2, "")
    assert r.stderr == (
        f"error: llama3.1:8b: an Ollama model name, not pulled here (no manifest {manifest}; "
        "$OLLAMA_MODELS names another models folder): `ollama pull llama3.1:8b` first, or name a "
        "bundled model or a Hugging Face repo id; did you mean llama-3.1-8b, llama-3-8b, "
        "llama-3.1-70b?\n")


def test_an_untagged_name_not_pulled_is_unknown_as_before(cli: Any, models: Path) -> None:
    r = cli("count", "tiny")
    assert (r.code, r.stderr) == (
        2, "error: unknown model 'tiny': not a file, folder or bundled config; did you mean "
        "whisper-tiny?\n")


def test_a_projector_layer_is_named_and_left_out(cli: Any, models: Path) -> None:
    gguf = tiny_gguf.write(models.parent / "model.gguf", "llama")
    digest = hashlib.sha256(gguf.read_bytes()).hexdigest()
    pull(models, LIBRARY, gguf=gguf, layers=[
        {"mediaType": MODEL, "digest": f"sha256:{digest}", "size": 1},
        {"mediaType": "application/vnd.ollama.image.projector", "digest": "sha256:" + "a" * 64,
         "size": 851_251_104}])
    out = cli("count", "tiny:1b", "--json").json()
    assert out["total_params"] == TOTAL
    assert ("tiny:1b also holds a vision projector (a GGUF layer of its own, 851,251,104 bytes), "
            "not read: the figures are its language model's") in out["notes"]


@pytest.mark.parametrize(("layers", "message"), [
    ([], "0 layers of mediaType application/vnd.ollama.image.model; a model has one"),
    ([{"mediaType": MODEL, "digest": "sha256:" + "b" * 64}] * 2,
     "2 layers of mediaType application/vnd.ollama.image.model; a model has one"),
    ([{"mediaType": MODEL, "digest": "sha256:../../../etc/passwd"}],
     "layers: digest 'sha256:../../../etc/passwd' is not a sha256 digest (sha256: and 64 hex "
     "digits)"),
    ([{"mediaType": MODEL, "digest": "sha256:" + "c" * 64}],
     "its model layer's blob {blobs}/sha256-" + "c" * 64 + " is missing (a pull cut short?)"),
    ("not a list", "layers: expected a list of layers (an Ollama manifest)"),
])
def test_a_broken_manifest_is_one_line(cli: Any, models: Path, layers: Any, message: str) -> None:
    pull(models, LIBRARY, layers=layers)
    manifest = models / "manifests/registry.ollama.ai/library/tiny/1b"
    r = cli("count", "tiny:1b")
    expected = message.format(blobs=models / "blobs")
    assert (r.code, r.stdout, r.stderr) == (2, "", f"error: {manifest}: {expected}\n")


def test_a_blob_linked_outside_the_folder_is_not_read(cli: Any, models: Path) -> None:
    outside = tiny_gguf.write(models.parent / "elsewhere.gguf", "llama")
    digest = "d" * 64
    (models / "blobs" / f"sha256-{digest}").symlink_to(outside)
    pull(models, LIBRARY, layers=[{"mediaType": MODEL, "digest": f"sha256:{digest}"}])
    r = cli("count", "tiny:1b")
    assert (r.code, r.stderr) == (
        2, f"error: {models}/blobs/sha256-{digest}: links to a file outside Ollama's blobs folder\n")


@pytest.mark.parametrize(("name", "parts", "tagged"), [
    ("llama3.1:8b", ("registry.ollama.ai", "library", "llama3.1", "8b"), True),
    ("llama3.1", ("registry.ollama.ai", "library", "llama3.1", "latest"), False),
    ("someone/m:v1", ("registry.ollama.ai", "someone", "m", "v1"), True),
    ("hf.co/org/Repo-GGUF:Q4_K_M", ("hf.co", "org", "Repo-GGUF", "Q4_K_M"), True),
    ("localhost:11434/ns/m:t", ("localhost:11434", "ns", "m", "t"), True),
])
def test_names_are_read_as_ollama_reads_them(name: str, parts: tuple[str, ...], tagged: bool) -> None:
    parsed = ollama.parse(name)
    assert parsed is not None and (parsed.parts, parsed.tagged) == (parts, tagged)


@pytest.mark.parametrize("name", [
    "a/b/c/d", "../x:1", ".hidden:1", "m:", "m:.t", "ns.dot/m:t", "m:t/x", "m" * 81, "m:" + "t" * 81,
    "model name:1",
])
def test_what_ollama_refuses_is_no_ollama_name(name: str) -> None:
    assert ollama.parse(name) is None


def test_the_models_folder_follows_ollama_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_MODELS", ' "/srv/ollama" ')
    assert ollama.models_dir() == Path("/srv/ollama")
    monkeypatch.delenv("OLLAMA_MODELS")
    assert ollama.models_dir() == Path.home() / ".ollama" / "models"


@pytest.mark.parametrize(("name", "selector"), [
    ("hf.co/org/repo:Q4_K_M", "org/repo:Q4_K_M"),
    ("https://huggingface.co/org/repo:Q8_0", "org/repo:Q8_0"),
    ("hf.co/org/repo", "org/repo"),
    ("llama3.1:8b", None), ("org/repo:Q4_K_M", None), ("hf.co/a/b/c:Q4", None),
])
def test_hf_co_names_map_to_the_hubs_selector(name: str, selector: str | None) -> None:
    assert ollama.hub_selector(name) == selector


def test_llama_cpp_loads_the_blob_as_it_loads_the_file(cli: Any, models: Path) -> None:
    """memory/fit --engine llama.cpp read the blob's own header (no --dtype: its tensor types), the
    figures those of the same file by its path; llama-server's command line names the blob."""
    blob = pull(models, LIBRARY)
    by_name = cli("memory", "tiny:1b", "--engine", "llama.cpp", "--json").json()
    by_path = cli("memory", str(models.parent / "model.gguf"), "--engine", "llama.cpp",
                  "--json").json()
    assert by_name == by_path
    assert (by_name["model_buffer_bytes"], by_name["total_bytes"]) == (4 * TOTAL, 18_369_536)
    fit = cli("fit", "tiny:1b", "--gpu", "rtx-4090", "--engine", "llama.cpp", "--json").json()
    assert fit["command"].startswith(f"llama-server --model {blob} --ctx-size 8192 ")
    r = cli("memory", "tiny:1b", "--engine", "llama.cpp", "--dtype", "q8_0")
    assert (r.code, r.stderr) == (
        2, "error: --dtype q8_0: a GGUF file is loaded with its own tensor types\n")


def test_check_takes_a_pulled_models_name(cli: Any, models: Path) -> None:
    pull(models, LIBRARY)
    r = cli("check", "tiny:1b", "--json")
    row = r.json()["files"][0]
    assert (r.code, row["file"], row["status"], row["why"]) == (
        0, "tiny:1b", "pass", "nothing expected: valid")


def test_the_pulled_models_are_listed_as_ollama_lists_them(models: Path) -> None:
    for name in (LIBRARY, ("registry.ollama.ai", "someone", "tiny", "v2"),
                 ("hf.co", "bartowski", "Tiny-GGUF", "Q4_K_M"),
                 ("registry.ollama.ai", "library", "bad name", "1b")):
        pull(models, name)
    (models / "manifests/registry.ollama.ai/library/tiny/.partial").mkdir()  # no manifest
    assert ollama.pulled_names() == [
        "hf.co/bartowski/Tiny-GGUF:Q4_K_M", "tiny:1b", "someone/tiny:v2"]
    assert ollama.pulled_names(most=1) == ["hf.co/bartowski/Tiny-GGUF:Q4_K_M"]


def test_fit_with_no_model_plans_the_pulled_ones_too(cli: Any, models: Path) -> None:
    pull(models, LIBRARY)
    out = cli("fit", "--gpu", "rtx-4090", "--match", "tiny:*", "--json").json()
    assert [(r["model"], r["params"], r["format"]) for r in out["models"]] == [
        ("tiny:1b", TOTAL, "gguf F32")]


def test_a_manifest_is_read_up_to_a_mebibyte(cli: Any, models: Path) -> None:
    pull(models, LIBRARY, layers=[{"mediaType": "x" * (1 << 20)}])
    manifest = models / "manifests/registry.ollama.ai/library/tiny/1b"
    r = cli("count", "tiny:1b")
    assert (r.code, r.stderr) == (
        2, f"error: {manifest}: file is larger than 1 MiB, the most llmcalc reads\n")


def test_a_manifest_linked_outside_the_folder_is_not_read(cli: Any, models: Path) -> None:
    outside = models.parent / "elsewhere.json"
    outside.write_text(json.dumps({"layers": []}))
    manifest = models / "manifests/registry.ollama.ai/library/tiny/1b"
    manifest.parent.mkdir(parents=True)
    manifest.symlink_to(outside)
    r = cli("count", "tiny:1b")
    assert (r.code, r.stderr) == (
        2, f"error: {manifest}: links to a file outside Ollama's manifests folder\n")


def test_the_page_offers_and_answers_for_a_pulled_model(cli: Any, models: Path) -> None:
    """The page's model list ends with the pulled models; its figures for one are the CLI's."""
    from llmcalc.web import api

    pull(models, LIBRARY)
    assert api.catalog()["models"][-1] == "tiny:1b"
    page = api.calculate({"model": {"name": "tiny:1b"}})
    assert page["count"]["total_params"] == TOTAL
    assert page["count"] == cli("count", "tiny:1b", "--json").json()
