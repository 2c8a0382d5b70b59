"""Hugging Face repo ids end to end through the CLI, against a fake Hub on 127.0.0.1 and a cache
folder filled by hand. Each call is a separate process: huggingface_hub reads HF_* at import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO
from helpers.configs import TINY_LLAMA
from helpers.fake_hub import GOOD_TOKEN, FakeHub, serve, sha_of

from llmcalc.formulas.counting import count
from llmcalc.inputs.config import spec_from_dict

TINY = {**TINY_LLAMA, "rms_norm_eps": 1e-5}
TINY_V2 = {**TINY, "num_hidden_layers": 3}


def total(config: dict[str, Any]) -> int:
    return count(spec_from_dict(config)).total


class Result:
    def __init__(self, p: subprocess.CompletedProcess[str]) -> None:
        self.code, self.stdout, self.stderr = p.returncode, p.stdout, p.stderr

    def json(self) -> Any:
        return json.loads(self.stdout)


@pytest.fixture
def hf_home(tmp_path: Path) -> Path:
    home = tmp_path / "hf"
    home.mkdir()
    return home


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    fake = FakeHub()
    fake.add("org/tiny", {"config.json": TINY, "README.md": b"# tiny\n"})
    fake.repos["org/tiny"].revisions["v2"] = {"config.json": json.dumps(TINY_V2).encode()}
    fake.add("org/gated", {"config.json": TINY}, gated=True)
    fake.add("org/tiny-GGUF", {"tiny-Q4_K_M.gguf": b"GGUF", "tiny-Q8_0.gguf": b"GGUF", "README.md": b""})
    fake.add("org/slow", {"config.json": TINY}, delay=3.0)
    yield from serve(fake)


@pytest.fixture
def llmcalc(hf_home: Path, tmp_path: Path) -> Any:
    """Run ``llmcalc ARGS`` in a fresh process with HF_HOME in a temp folder."""

    def run(*args: str, endpoint: str = "http://127.0.0.1:9", **env: str) -> Result:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
        base.update(
            PYTHONPATH=str(REPO),
            HF_HOME=str(hf_home),
            HF_ENDPOINT=endpoint,
            HF_HUB_DISABLE_PROGRESS_BARS="1",
            HF_HUB_DISABLE_TELEMETRY="1",
            HF_HUB_DISABLE_XET="1",
            HF_HUB_ETAG_TIMEOUT="5",
        )
        base.update(env)
        p = subprocess.run(
            [sys.executable, "-m", "llmcalc", *args],
            capture_output=True, text=True, env=base, cwd=tmp_path, timeout=60,
        )
        return Result(p)

    return run


def test_hub_fetch_downloads_config_only_and_names_the_repo(llmcalc: Any, hub: FakeHub, hf_home: Path) -> None:
    r = llmcalc("count", "org/tiny", "--json", endpoint=hub.url)
    assert r.code == 0, r.stderr
    data = r.json()
    assert data["model"] == "org/tiny"
    assert data["total_params"] == total(TINY) == 106_816
    assert data["origin"]["source"] == "hub"
    assert data["origin"]["repo_id"] == "org/tiny" and data["origin"]["revision"] == "main"
    files = {path.rsplit("/", 1)[-1] for _, path, _ in hub.requested("org/tiny")}
    assert files == {"config.json"}  # never weights, never the README
    snapshot = hf_home / "hub" / "models--org--tiny" / "snapshots" / sha_of("org/tiny", "main")
    assert json.loads((snapshot / "config.json").read_text()) == TINY
    table = llmcalc("count", "org/tiny", endpoint=hub.url)
    assert table.stdout.startswith("org/tiny  (llama, family llama)\n")
    assert "config.json from the local Hugging Face cache" in table.stdout


def test_cache_hit_works_offline_without_asking_the_hub(llmcalc: Any, hub: FakeHub) -> None:
    assert llmcalc("count", "org/tiny", endpoint=hub.url).code == 0
    before = len(hub.log)
    r = llmcalc("count", "org/tiny", "--json", endpoint=hub.url, HF_HUB_OFFLINE="1")
    assert r.code == 0, r.stderr
    assert r.json()["origin"]["source"] == "cache"
    assert r.json()["total_params"] == total(TINY)
    assert len(hub.log) == before


def test_revision_reads_that_revision_and_names_it(llmcalc: Any, hub: FakeHub) -> None:
    r = llmcalc("count", "org/tiny", "--revision", "v2", "--json", endpoint=hub.url)
    assert r.code == 0, r.stderr
    assert r.json()["model"] == "org/tiny@v2"
    assert r.json()["total_params"] == total(TINY_V2)
    offline = llmcalc("count", "org/tiny", "--revision", "v2", "--json", HF_HUB_OFFLINE="1")
    assert offline.code == 0, offline.stderr
    assert offline.json()["origin"]["source"] == "cache"
    missing = llmcalc("count", "org/tiny", "--revision", "nope", endpoint=hub.url)
    assert (missing.code, missing.stderr) == (
        2, "error: org/tiny: no revision 'nope' on the Hub (a branch, tag or commit)\n"
    )


def test_prefilled_cache_offline_by_repo_id_and_revision(llmcalc: Any, tmp_path: Path) -> None:
    """A cache laid out as huggingface_hub lays it out (refs/ → snapshots/<hash>/), found through
    HF_HUB_CACHE with the network off; the model is named by its repo id, never the hash."""
    cache = tmp_path / "elsewhere"
    repo = cache / "models--meta-llama--Llama-3.1-8B-Instruct"
    for ref, config in (("main", TINY), ("v2", TINY_V2)):
        sha = sha_of("llama", ref)
        (repo / "snapshots" / sha).mkdir(parents=True)
        (repo / "snapshots" / sha / "config.json").write_text(json.dumps(config))
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / ref).write_text(sha)
    env = {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    r = llmcalc("count", "meta-llama/Llama-3.1-8B-Instruct", "--json", **env)
    assert r.code == 0, r.stderr
    assert r.json()["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert r.json()["origin"]["source"] == "cache"
    assert r.json()["total_params"] == total(TINY)
    v2 = llmcalc("count", "meta-llama/Llama-3.1-8B-Instruct", "--revision", "v2", "--json", **env)
    assert (v2.json()["model"], v2.json()["total_params"]) == (
        "meta-llama/Llama-3.1-8B-Instruct@v2", total(TINY_V2)
    )
    by_hash = llmcalc("count", "meta-llama/Llama-3.1-8B-Instruct", "--revision", sha_of("llama", "v2"), "--json", **env)
    assert by_hash.json()["total_params"] == total(TINY_V2)


def test_not_cached_and_offline(llmcalc: Any, hf_home: Path) -> None:
    r = llmcalc("count", "org/absent", HF_HUB_OFFLINE="1")
    assert (r.code, r.stdout) == (2, "")
    assert r.stderr == (
        f"error: org/absent: not in the local cache ({hf_home / 'hub'}) and the Hub cannot be "
        "reached (HF_HUB_OFFLINE is set); pass a path to its config.json, or run once with network\n"
    )


def test_unreachable_hub(llmcalc: Any) -> None:
    r = llmcalc("count", "org/absent")  # nothing listens on port 9
    assert (r.code, r.stderr) == (
        2,
        "error: org/absent: not in the local cache and the Hub cannot be reached "
        "(http://127.0.0.1:9); pass a path to its config.json, or run once with network\n",
    )


def test_gated_repo(llmcalc: Any, hub: FakeHub) -> None:
    r = llmcalc("count", "org/gated", endpoint=hub.url)
    assert (r.code, r.stderr) == (
        2, "error: org/gated: is gated: accept its licence on the Hub and set HF_TOKEN\n"
    )
    r = llmcalc("count", "org/gated", endpoint=hub.url, HF_TOKEN="hf_wrong")
    assert (r.code, r.stderr) == (
        2,
        "error: org/gated: is gated and the token in use has no access: accept its licence on "
        f"the Hub ({hub.url}/org/gated) with that account\n",
    )
    r = llmcalc("count", "org/gated", "--json", endpoint=hub.url, HF_TOKEN=GOOD_TOKEN)
    assert r.code == 0, r.stderr
    assert r.json()["total_params"] == total(TINY)


def test_missing_repo(llmcalc: Any, hub: FakeHub) -> None:
    r = llmcalc("count", "org/nothing-here", endpoint=hub.url)
    assert (r.code, r.stderr) == (
        2,
        "error: org/nothing-here: no such model repo on the Hub (a private one needs HF_TOKEN "
        "with access)\n",
    )


def test_check_takes_repo_ids_as_count_does(llmcalc: Any, hub: FakeHub) -> None:
    r = llmcalc("check", "org/tiny", "org/nothing-here", "--json", endpoint=hub.url)
    assert r.code == 2, r.stderr
    tiny, missing = r.json()["files"]
    assert (tiny["file"], tiny["model"], tiny["status"], tiny["why"]) == (
        "org/tiny", "org/tiny", "pass", "nothing expected: valid"
    )
    assert (missing["status"], missing["why"]) == (
        "error", "org/nothing-here: no such model repo on the Hub (a private one needs HF_TOKEN "
        "with access)",
    )


def test_ollamas_hf_co_name_not_pulled_is_the_repos_gguf_selector(llmcalc: Any, hub: FakeHub) -> None:
    """hf.co/org/name:QUANT, as Ollama pulls a Hub GGUF, is org/name:QUANT when Ollama has not
    pulled it here (tests/inputs/test_ollama.py reads one it has)."""
    r = llmcalc("count", "hf.co/org/tiny-GGUF:q9", endpoint=hub.url)
    assert (r.code, r.stderr) == (
        2,
        "error: org/tiny-GGUF: no GGUF file 'q9'; its files: Q4_K_M (0.0 MB), Q8_0 (0.0 MB)\n",
    )


def test_a_gguf_only_repo_reads_its_q4_k_m_file(llmcalc: Any, hub: FakeHub) -> None:
    r = llmcalc("count", "org/tiny-GGUF", endpoint=hub.url)
    assert (r.code, r.stderr) == (
        2,
        "error: org/tiny-GGUF:tiny-Q4_K_M.gguf: not a GGUF file (shorter than its 24-byte "
        "header)\n",
    )
    r = llmcalc("count", "org/tiny-GGUF:q9", endpoint=hub.url)
    assert (r.code, r.stderr) == (
        2,
        "error: org/tiny-GGUF: no GGUF file 'q9'; its files: Q4_K_M (0.0 MB), Q8_0 (0.0 MB)\n",
    )


def test_timeout_is_an_error_not_a_hang(llmcalc: Any, hub: FakeHub) -> None:
    r = llmcalc("count", "org/slow", endpoint=hub.url, HF_HUB_ETAG_TIMEOUT="1")
    assert (r.code, r.stderr) == (
        2,
        f"error: org/slow: the Hub ({hub.url}) did not answer within 1 s; set "
        "HF_HUB_ETAG_TIMEOUT to wait longer, or pass a path to its config.json\n",
    )


@pytest.mark.parametrize("name", ["a/b/c", "org/na me", "org--x/y", "org/" + "x" * 100])
def test_malformed_repo_id(llmcalc: Any, name: str) -> None:
    r = llmcalc("count", name)
    assert (r.code, r.stderr) == (
        2,
        f"error: {name!r}: not a file or folder, and not a Hugging Face repo id (org/name: "
        "letters, digits, '-', '_' and '.', at most 96 characters)\n",
    )


def test_revision_only_for_repo_ids(llmcalc: Any, tmp_path: Path) -> None:
    r = llmcalc("count", "gpt2-medium", "--revision", "v1")
    assert (r.code, r.stderr) == (
        2, "error: --revision v1: only for a Hugging Face repo id (org/name)\n"
    )


def test_bundled_names_do_not_import_huggingface_hub() -> None:
    code = (
        "import sys; from llmcalc.cli import main; sys.argv = ['llmcalc', 'count', 'gpt2-medium'];\n"
        "try: main()\nexcept SystemExit: pass\n"
        "print('HUB' if 'huggingface_hub' in sys.modules else 'OK', file=sys.stderr)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.stderr.strip().splitlines()[-1] == "OK"


# ---- checkpoints on the Hub: safetensors headers only, by range requests ----------------------------


def tiny_shapes() -> dict[str, tuple[int, ...]]:
    return dict(spec_from_dict(TINY).named_shapes())


def fp8_int4_tensors() -> dict[str, tuple[str, tuple[int, ...]]]:
    """attention projections in FP8 with a scale each; MLP packed int4 in I32 (8 per element) with
    BF16 group scales (compressed-tensors layout); the rest BF16."""
    out: dict[str, tuple[str, tuple[int, ...]]] = {}
    for name, shape in tiny_shapes().items():
        if ".self_attn." in name:
            out[name] = ("F8_E4M3", shape)
            out[name.replace(".weight", ".weight_scale_inv")] = ("F32", (1, 1))
        elif ".mlp." in name:
            rows, cols = shape
            out[name.replace(".weight", ".weight_packed")] = ("I32", (rows, cols // 8))
            out[name.replace(".weight", ".weight_scale")] = ("BF16", (rows, cols // 32))
        else:
            out[name] = ("BF16", shape)
    return out


@pytest.fixture
def ckpt_hub(hub: FakeHub) -> FakeHub:
    from helpers.fake_hub import safetensors_bytes

    bf16 = {name: ("BF16", shape) for name, shape in tiny_shapes().items()}
    hub.add("org/tiny-bf16", {"config.json": TINY, "model.safetensors": safetensors_bytes(bf16)})
    hub.add("org/tiny-fp8", {"config.json": TINY, "model.safetensors": safetensors_bytes(fp8_int4_tensors())})
    return hub


def test_verify_repo_id_reads_the_hub_headers_by_range(llmcalc: Any, ckpt_hub: FakeHub) -> None:
    r = llmcalc("verify", "org/tiny-bf16", "--json", endpoint=ckpt_hub.url)
    assert r.code == 0, r.stderr + r.stdout
    data = r.json()
    assert data["against"] == "checkpoint org/tiny-bf16 on the Hub (safetensors headers) (1 safetensors file)"
    assert data["match"] is True
    assert data["matched_tensors"] == len(tiny_shapes()) == 21
    weights = [e for e in ckpt_hub.requested("org/tiny-bf16") if e[1].endswith(".safetensors")]
    gets = [e for e in weights if e[0] == "GET"]
    assert gets and all(rng is not None and rng.startswith("bytes=") for _, _, rng in gets)


def test_verify_names_what_an_fp8_int4_checkpoint_stores_differently(llmcalc: Any, ckpt_hub: FakeHub) -> None:
    r = llmcalc("verify", "org/tiny-fp8", "--json", endpoint=ckpt_hub.url)
    assert r.code == 1, r.stderr
    data = r.json()
    missing = {d["name"] for d in data["differences"] if d["kind"] == "missing"}
    assert "model.layers.0.mlp.down_proj.weight" in missing


def test_memory_shows_stored_bytes_by_dtype(llmcalc: Any, ckpt_hub: FakeHub) -> None:
    import math

    r = llmcalc("memory", "org/tiny-fp8", "--json", endpoint=ckpt_hub.url)
    assert r.code == 0, r.stderr
    stored = r.json()["checkpoint"]
    sizes = {"F8_E4M3": 1, "F32": 4, "I32": 4, "BF16": 2}
    expect: dict[str, list[int]] = {}
    for dtype, shape in fp8_int4_tensors().values():
        row = expect.setdefault(dtype, [0, 0, 0])
        row[0] += 1
        row[1] += math.prod(shape)
        row[2] += math.prod(shape) * sizes[dtype]
    assert stored["by_dtype"] == {
        d: {"tensors": t, "elements": e, "bytes": b} for d, (t, e, b) in expect.items()
    }
    assert stored["by_dtype"]["I32"] == {"tensors": 6, "elements": 6144, "bytes": 24576}
    assert stored["bytes"] == sum(b for _, _, b in expect.values()) == 118_432
    assert stored["other_dtypes"] == ["F8_E4M3", "I32", "F32"]
    assert r.json()["weights_bytes"] == 2 * total(TINY) == 213_632
    assert r.json()["origin"]["source"] == "hub" and r.json()["method"] == "formula"
    assert stored["note"] == (
        "the checkpoint stores F8_E4M3 (fp8), I32 (packed quantized values), F32 (fp32), not only "
        "bf16: 118,432 bytes (115.66 KiB) stored against 213,632 (208.62 KiB) computed at --dtype bf16"
    )
    table = llmcalc("memory", "org/tiny-fp8", endpoint=ckpt_hub.url)
    assert "stored in checkpoint org/tiny-fp8 (Hub, safetensors headers)" in table.stdout
    assert "note: the checkpoint stores F8_E4M3 (fp8)" in table.stderr  # notes: on stderr
    plain = llmcalc("memory", "org/tiny-bf16", "--json", endpoint=ckpt_hub.url).json()["checkpoint"]
    assert (plain["bytes"], plain["other_dtypes"], plain["note"]) == (2 * total(TINY), [], None)


def test_memory_offline_says_why_the_stored_bytes_are_missing(llmcalc: Any, ckpt_hub: FakeHub) -> None:
    assert llmcalc("count", "org/tiny-bf16", endpoint=ckpt_hub.url).code == 0
    r = llmcalc("memory", "org/tiny-bf16", "--json", HF_HUB_OFFLINE="1")
    assert r.code == 0, r.stderr
    assert r.json()["checkpoint"]["note"] == (
        "checkpoint bytes not shown: org/tiny-bf16: reading the checkpoint's safetensors headers "
        "needs the Hub (HF_HUB_OFFLINE is set); compare with --against transformers, or pass a "
        "folder holding the checkpoint"
    )


def test_hostile_hub_header_is_one_line(llmcalc: Any, hub: FakeHub) -> None:
    import struct

    hub.add("org/bad-header", {"config.json": TINY, "model.safetensors": struct.pack("<Q", 10**12) + b"{}"})
    r = llmcalc("verify", "org/bad-header", endpoint=hub.url)
    assert r.code == 2
    assert r.stderr.startswith("error: org/bad-header: a safetensors header cannot be read (")
    assert r.stderr.count("\n") == 1


def test_a_cached_repo_without_refs_main_is_read_from_the_cache(llmcalc: Any,
                                                                 tmp_path: Path) -> None:
    """A snapshot fetched by a tag (refs/v2 only): offline, or with the Hub unreachable, the
    cache's copy is read, named by that tag, never "pass a path to its config.json"."""
    cache = tmp_path / "elsewhere"
    repo = cache / "models--org--tagged"
    sha = sha_of("tagged", "v2")
    (repo / "snapshots" / sha).mkdir(parents=True)
    (repo / "snapshots" / sha / "config.json").write_text(json.dumps(TINY_V2))
    (repo / "refs").mkdir()
    (repo / "refs" / "v2").write_text(sha)
    for env in ({"HF_HUB_OFFLINE": "1"}, {}):  # nothing listens on the endpoint's port 9
        r = llmcalc("count", "org/tagged", "--json", HF_HUB_CACHE=str(cache), **env)
        assert r.code == 0, r.stderr
        assert (r.json()["model"], r.json()["total_params"]) == ("org/tagged@v2", total(TINY_V2))


SIBLING = ("read as the bundled config of its base model configs/llama-3.1-8b.yaml: "
           "meta-llama/Llama-3.1-8B-Instruct's own config.json is not in the local cache and the Hub "
           "is offline, unreachable or gated, and an instruction-tuned sibling has its base's "
           "architecture")
INSTRUCT = "meta-llama/Llama-3.1-8B-Instruct"


def test_an_instruct_sibling_offline_is_read_as_its_bundled_base_and_says_so(llmcalc: Any) -> None:
    r = llmcalc("count", INSTRUCT, "--json", HF_HUB_OFFLINE="1")
    assert r.code == 0, r.stderr
    assert r.stderr == f"warning: {SIBLING}\n"
    out = r.json()
    assert (out["model"], out["total_params"], out["notes"]) == (INSTRUCT, 8_030_261_248, [SIBLING])
    assert out["origin"] == {"source": "sibling", "path": "configs/llama-3.1-8b.yaml",
                             "repo_id": INSTRUCT, "revision": None}
    table = llmcalc("count", INSTRUCT, HF_HUB_OFFLINE="1")
    assert table.stdout.splitlines()[1] == (
        "its base model's bundled config configs/llama-3.1-8b.yaml (its own config.json unread)")
    strict = llmcalc("count", INSTRUCT, "--strict", HF_HUB_OFFLINE="1")
    assert (strict.code, strict.stderr) == (2, f"error: --strict: {INSTRUCT}: {SIBLING}\n")
    # verify and check would hold the base's config to itself: refused, an error
    verify = llmcalc("verify", INSTRUCT, HF_HUB_OFFLINE="1")
    assert verify.code == 2 and verify.stderr.endswith(
        f"error: {INSTRUCT}: its own config.json could not be read, and verifying its base model's "
        "bundled config configs/llama-3.1-8b.yaml in its place proves nothing about it; pass its "
        "config.json or checkpoint folder, or run with network\n")
    check = llmcalc("check", INSTRUCT, "--json", HF_HUB_OFFLINE="1")
    assert check.code == 2
    assert [(f["status"], f["why"]) for f in check.json()["files"]] == [("error", SIBLING)]


def test_an_instruct_sibling_named_without_its_organisation_is_read_as_its_base(
        llmcalc: Any) -> None:
    """``Llama-3.1-8B-Instruct``, as benchmark tables write it: no repo id, so the Hub is never
    asked; the base's bundled config answers, with the same note and --strict refusal."""
    note = ("read as the bundled config of its base model configs/llama-3.1-8b.yaml: "
            "Llama-3.1-8B-Instruct (as meta-llama/Llama-3.1-8B-Instruct) is not bundled, and an "
            "instruction-tuned sibling has its base's architecture")
    r = llmcalc("count", "Llama-3.1-8B-Instruct", "--json")  # the endpoint is port 9: not asked
    assert (r.code, r.stderr) == (0, f"warning: {note}\n")
    out = r.json()
    assert (out["model"], out["total_params"], out["notes"]) == (
        "Llama-3.1-8B-Instruct", 8_030_261_248, [note])
    assert out["origin"] == {"source": "sibling", "path": "configs/llama-3.1-8b.yaml",
                             "repo_id": "meta-llama/Llama-3.1-8B-Instruct", "revision": None}
    strict = llmcalc("count", "Llama-3.1-8B-Instruct", "--strict")
    assert (strict.code, strict.stderr) == (2, f"error: --strict: Llama-3.1-8B-Instruct: {note}\n")
    check = llmcalc("check", "Llama-3.1-8B-Instruct", "--json")  # its base held to itself: an error
    assert check.code == 2
    assert [(f["status"], f["why"]) for f in check.json()["files"]] == [("error", note)]
    unknown = llmcalc("count", "mistral-7b-instruct")
    assert (unknown.code, unknown.stderr) == (
        2, "error: unknown model 'mistral-7b-instruct': not a file, folder or bundled config; did "
           "you mean mistral-nemo-12b-instruct, mistral-7b, mistral-7b-v0.3?\n")


def test_a_sibling_is_read_when_the_hub_is_unreachable_but_only_in_its_base_organisation(
        llmcalc: Any) -> None:
    r = llmcalc("count", "mistralai/Mistral-7B-Instruct-v0.1", "--json")  # nothing on port 9
    assert (r.code, r.json()["total_params"]) == (0, 7_241_732_096)
    assert r.json()["origin"]["path"] == "configs/mistral-7b.yaml"
    other = llmcalc("count", "someone/Llama-3.1-8B-Instruct", HF_HUB_OFFLINE="1")
    assert (other.code, other.stdout) == (2, "")
    assert other.stderr.startswith("error: someone/Llama-3.1-8B-Instruct: not in the local cache")


def test_a_hub_that_answers_is_never_second_guessed(llmcalc: Any, hub: FakeHub) -> None:
    """Only a repo whose config.json the Hub could not be asked for falls back: one the Hub has is
    its own, one it does not have or refuses to a wrong token is the Hub's answer, and a name
    that is no repo id is refused before anything is looked up."""
    hub.add(INSTRUCT, {"config.json": TINY})
    r = llmcalc("count", INSTRUCT, "--json", endpoint=hub.url)
    assert r.code == 0, r.stderr
    assert (r.json()["origin"]["source"], r.json()["total_params"]) == ("hub", total(TINY))
    missing = llmcalc("count", "meta-llama/Llama-3.2-1B-Instruct", endpoint=hub.url)
    assert (missing.code, missing.stderr) == (
        2, "error: meta-llama/Llama-3.2-1B-Instruct: no such model repo on the Hub (a private one "
           "needs HF_TOKEN with access)\n")
    hub.add("google/gemma-2-9b-it", {"config.json": TINY}, gated=True)
    gated = llmcalc("count", "google/gemma-2-9b-it", "--json", endpoint=hub.url)  # no token
    assert (gated.code, gated.json()["origin"]["source"]) == (0, "sibling")
    wrong = llmcalc("count", "google/gemma-2-9b-it", endpoint=hub.url, HF_TOKEN="hf_wrong")
    assert (wrong.code, wrong.stderr) == (
        2, "error: google/gemma-2-9b-it: is gated and the token in use has no access: accept its "
           f"licence on the Hub ({hub.url}/google/gemma-2-9b-it) with that account\n")
    padded = llmcalc("count", f" {INSTRUCT}", HF_HUB_OFFLINE="1")
    assert padded.code == 2 and "not a Hugging Face repo id" in padded.stderr


def test_a_trailing_newline_is_no_repo_id(llmcalc: Any) -> None:
    r = llmcalc("count", "org/tiny\n", HF_HUB_OFFLINE="1")
    assert (r.code, r.stderr) == (
        2, "error: 'org/tiny\\n': not a file or folder, and not a Hugging Face repo id (org/name: "
           "letters, digits, '-', '_' and '.', at most 96 characters)\n")
