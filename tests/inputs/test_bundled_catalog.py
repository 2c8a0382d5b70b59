"""The bundled catalog: today's common checkpoints offline with their published config.json (and
its quantization_config), transformers class defaults marked apart, and `list PATTERN`."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from llmcalc import count, load_spec, spec_from_dict
from llmcalc.inputs import bundled

# name → (exact total, exact active): each the numel sum of the transformers model built from the
# bundled config (`llmcalc check configs/ --verify` rebuilds them); the dense ones are their
# checkpoints' published safetensors totals too
NEW_CHECKPOINTS = {
    "llama-3-70b": (70_553_706_496, 70_553_706_496),
    "llama-3.1-8b": (8_030_261_248, 8_030_261_248),
    "llama-3.1-70b": (70_553_706_496, 70_553_706_496),
    "llama-3.3-70b": (70_553_706_496, 70_553_706_496),
    # from here to phi-4: transformers' count only (no exact published figure was found)
    "qwen2.5-14b": (14_770_033_664, 14_770_033_664),
    "qwen2.5-32b": (32_763_876_352, 32_763_876_352),
    "qwen2.5-72b-instruct": (72_706_203_648, 72_706_203_648),
    "gemma-3-12b": (12_187_325_040, 12_187_325_040),
    "mistral-small-24b": (23_572_403_200, 23_572_403_200),
    "phi-4": (14_659_507_200, 14_659_507_200),
    "qwen3-32b": (32_762_123_264, 32_762_123_264),
    "qwen3-235b-a22b": (235_093_634_560, 22_190_763_520),
    "qwen3-coder-480b-a35b": (480_154_875_392, 35_474_765_312),
    "deepseek-r1": (671_026_404_352, 37_552_282_624),
    "mixtral-8x22b": (140_620_634_112, 39_152_031_744),
    "gemma-3-27b": (27_432_406_640, 27_432_406_640),
    "nemotron-3-nano-30b-a3b": (31_577_937_344, 3_580_073_408),
    "qwen3.5-35b-a3b-whole": (35_107_181_936, 3_901_560_176),
    "glm-5": (743_911_199_232, 41_784_709_632),
    "gemma-4-26b-a4b-whole": (25_805_933_872, 4_395_322_672),
    "qwen3-vl-8b": (8_767_123_696, 8_767_123_696),
    "qwen3-vl-30b-a3b": (31_070_754_032, 3_891_664_112),
    # transformers' count only (`llmcalc verify`), no exact published figure read
    "granite-3.3-8b-instruct": (8_170_864_640, 8_170_864_640),
    "smollm2-1.7b": (1_711_376_384, 1_711_376_384),
    "phi-4-mini-instruct": (3_836_021_760, 3_836_021_760),
}
# DeepSeek-V3/R1's published quantization_config: e4m3 weights with 128 × 128 block scales
DEEPSEEK_FP8 = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                "weight_block_size": [128, 128]}


def _yaml(name: str) -> dict[str, Any]:
    path = bundled.find(name)
    assert path is not None, name
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("name", NEW_CHECKPOINTS)
def test_new_checkpoints_count_offline(name: str) -> None:
    total, active = NEW_CHECKPOINTS[name]
    pc = count(load_spec(name))
    assert (pc.total, pc.active) == (total, active)
    data = _yaml(name)
    assert "config.json" in data["source"] and "/" in data["name"]
    assert "class_defaults" not in data


def test_published_qwen3_5_language_model_is_the_class_defaults() -> None:
    """Qwen3.5-35B-A3B's published config holds a language model the size of transformers'
    Qwen3_5MoeTextConfig defaults, which the class-default file qwen3.5-35b-a3b stands for."""
    whole = count(load_spec("qwen3.5-35b-a3b-whole"))
    assert whole.parts["language"] == count(load_spec("qwen3.5-35b-a3b")).total == 34_660_610_688
    assert whole.parts["vision"] + whole.parts["projector"] == 415_891_440 + 30_679_808


def test_written_qwen3_vl_moe_experts_count_as_transformers_reads_them() -> None:
    """transformers 5 writes a Qwen3-VL-MoE text_config's expert count as num_local_experts; laid
    on the class defaults (num_experts 60) it still means 128 experts, as transformers reads it."""
    fields = dict(load_spec("qwen3-vl-30b-a3b").config)
    text = dict(fields["text_config"])
    text["num_local_experts"] = text.pop("num_experts")
    written = spec_from_dict({**fields, "text_config": text}, name="written")
    assert count(written).total == 31_070_754_032
    assert count(written).breakdown == count(load_spec("qwen3-vl-30b-a3b")).breakdown


def test_count_llama_3_70b_as_typed(cli: Any) -> None:
    r = cli("count", "llama-3-70b")
    assert r.code == 0, r.stderr
    assert "meta-llama/Meta-Llama-3-70B" in r.stdout
    assert "70,553,706,496" in r.stdout
    # and by its repo id, still offline (a bundled name never reaches the Hub)
    data = cli("count", "meta-llama/Meta-Llama-3-70B", "--json").json()
    assert data["total_params"] == 70_553_706_496


@pytest.mark.parametrize("name", ["deepseek-v3", "deepseek-r1"])
def test_deepseek_keeps_its_published_quantization_config(name: str) -> None:
    assert load_spec(name).config["quantization_config"] == DEEPSEEK_FP8


@pytest.mark.parametrize("name", ["deepseek-v3", "deepseek-r1"])
def test_deepseek_memory_defaults_to_its_fp8_storage(cli: Any, name: str) -> None:
    stored = cli("memory", name, "--json").json()
    assert stored["dtype"] == "fp8-block"
    assert stored["weights_bytes"] == 673_150_552_416  # 626.92 GiB
    explicit = cli("memory", name, "--dtype", "fp8-block", "--json").json()
    assert explicit["weights_bytes"] == stored["weights_bytes"]
    bf16 = cli("memory", name, "--dtype", "bf16", "--json").json()
    assert bf16["weights_bytes"] == 2 * 671_026_404_352  # --dtype still overrides the config
    assert "626.92 GiB" in cli("memory", name).stdout


# DeepSeek-V4's published quantization_config (ue8m0 scales) beside expert_dtype fp4
DEEPSEEK_V4_FP8 = {**DEEPSEEK_FP8, "scale_fmt": "ue8m0"}


@pytest.mark.parametrize(("name", "stored", "total"), [
    ("deepseek-v4-flash", 155_581_568_240, 284_332_230_231),
    ("deepseek-v4-pro", 849_678_994_014, 1_572_997_179_491),
])
def test_deepseek_v4_memory_defaults_to_its_fp8_and_fp4_storage(
        cli: Any, name: str, stored: int, total: int) -> None:
    config = load_spec(name).config
    assert (config["quantization_config"], config["expert_dtype"]) == (DEEPSEEK_V4_FP8, "fp4")
    data = cli("memory", name, "--json").json()
    assert (data["dtype"], data["weights_bytes"]) == ("fp8-fp4", stored)
    assert cli("memory", name, "--dtype", "fp8-fp4", "--json").json()["weights_bytes"] == stored
    bf16 = cli("memory", name, "--dtype", "bf16", "--json").json()
    assert bf16["weights_bytes"] == 2 * total


def test_list_pattern_is_a_substring(cli: Any) -> None:
    rows = cli("list", "llama", "--json").json()
    names = [r["name"] for r in rows]
    expected = [p.stem for p in bundled.paths()
                if "llama" in (p.stem + " " + load_spec(p.stem).name + " "
                               + load_spec(p.stem).model_type).lower()]
    assert names == expected
    assert {"llama-3-70b", "llama-3.1-8b", "tinyllama-1.1b", "llama-3.2-11b-vision"} <= set(names)
    assert "gpt2" not in names and "qwen3-32b" not in names
    # case-insensitive, and the repo id counts: Meta-Llama-3-70B's org is meta-llama
    assert [r["name"] for r in cli("list", "META-LLAMA/Meta-Llama-3", "--json").json()] == [
        "llama-3-70b", "llama-3-8b"]


def test_list_pattern_is_a_glob_when_it_has_glob_characters(cli: Any) -> None:
    rows = cli("list", "*-70b", "--json").json()
    assert [r["name"] for r in rows] == ["deepseek-r1-distill-llama-70b", "llama-2-70b",
                                         "llama-3-70b", "llama-3.1-70b", "llama-3.3-70b"]
    # a glob matches a whole name: "llama-3*" is neither "tinyllama-1.1b" nor "llama-2-7b"
    names = [r["name"] for r in cli("list", "llama-3*", "--json").json()]
    assert names == ["llama-3-70b", "llama-3-8b", "llama-3.1-405b", "llama-3.1-70b",
                     "llama-3.1-8b", "llama-3.2-11b-vision", "llama-3.2-1b", "llama-3.2-3b",
                     "llama-3.3-70b"]
    # and a model_type: qwen3_moe's bundled configs, by type
    assert [r["name"] for r in cli("list", "qwen3_mo[e]", "--json").json()] == [
        "qwen3-235b-a22b", "qwen3-30b-a3b", "qwen3-coder-30b-a3b", "qwen3-coder-480b-a35b"]


def test_list_pattern_without_a_match(cli: Any) -> None:
    r = cli("list", "no-such-model")
    assert r.code == 2
    assert r.stdout == ""
    assert r.stderr.strip() == (
        "error: list 'no-such-model': no bundled model's name, repo id or model_type matches it "
        "(as a substring); `llmcalc list` shows them all")
    r = cli("list", "zz*")
    assert r.code == 2
    assert "(as a glob)" in r.stderr


def test_list_marks_class_defaults_apart(cli: Any) -> None:
    rows = {r["name"]: r for r in cli("list", "--json").json()}
    assert rows["olmo3-default"]["config"] == "class defaults"
    assert rows["olmo-hybrid-7b"]["config"] == "class defaults"  # named after a checkpoint
    assert rows["llama-3-8b"]["config"] == "published"
    assert rows["deepseek-r1"]["config"] == "published"
    marked = {p.stem for p in bundled.paths() if bundled.is_class_defaults(p)}
    assert {n for n, r in rows.items() if r["config"] == "class defaults"} == marked
    out = cli("list", "olmo").stdout
    assert re.search(r"│ olmo3-default +│ class defaults +│", out), out
    assert re.search(r"│ olmo-2-7b +│ published +│", out), out
    # the table lists the published first, the class defaults below a rule, and says so
    assert out.index("olmo-2-7b") < out.index("olmo3-default")
    assert ("5 published checkpoint configs; below the rule, 3 transformers class defaults "
            "(model types with no published checkpoint bundled)") in " ".join(out.split())


def test_class_defaults_marks_agree_with_the_sources() -> None:
    """A file named *-default(s) is marked; a marked file's source says whose defaults it holds;
    an unmarked file names a published config.json or says how its values were assembled."""
    for path in bundled.paths():
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        source = " ".join(str(data["source"]).split())
        if data.get("class_defaults"):
            assert re.search(r"Config(\(\))? (class )?defaults", source), path.name
        else:
            assert not re.search(r"-defaults?$", path.stem), path.name
            assert "config.json" in source or "assembled" in source, path.name
        assert data.get("class_defaults", False) is bundled.is_class_defaults(path), path.name


def test_class_defaults_mark_must_be_a_boolean(cli: Any, tmp_path: Any) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("model_type: gpt2\nclass_defaults: yes please\n")
    r = cli("count", str(path))
    assert (r.code, r.stderr) == (
        2, f"error: {path}: class_defaults must be true or false, got \"yes please\"\n")
    path.write_text("model_type: gpt2\nn_layer: 2\nn_embd: 64\nn_head: 4\nvocab_size: 100\n"
                    "n_positions: 32\nclass_defaults: true\n")
    # the mark is metadata, not a config field: GPT-2 of d 64, 2 layers (12d² + 13d each), vocab
    # 100, 32 positions, final LayerNorm
    d = 64
    assert cli("count", str(path), "--json").json()["total_params"] == (
        100 * d + 32 * d + 2 * (12 * d * d + 13 * d) + 2 * d) == 108_544
    assert "class_defaults" not in load_spec(str(path)).config


# models that published speed benchmarks run (llama.cpp's scoreboards and PR tables, vendors' and
# engines' benchmark pages) and that did not resolve offline before: name → (the file's repo id,
# exact total). Each total is the numel sum of the transformers model built from the bundled config
# (`llmcalc check configs/ --verify`); in round figures they are the model cards' sizes (Qwen2.5-3B
# 3.09B, Phi-3.5-mini 3.8B, Gemma-2-27B 27.2B, CodeLlama-34B 33.7B, OLMo-2-13B 13.7B …)
BENCHMARKED = {
    "qwen2.5-3b": ("Qwen/Qwen2.5-3B", 3_085_938_688),
    "qwen3-1.7b": ("Qwen/Qwen3-1.7B", 1_720_574_976),
    "qwen3-4b": ("Qwen/Qwen3-4B", 4_022_468_096),
    "qwen3-14b": ("Qwen/Qwen3-14B", 14_768_307_200),
    "qwen3-coder-30b-a3b": ("Qwen/Qwen3-Coder-30B-A3B-Instruct", 30_532_122_624),
    "mistral-nemo-12b": ("mistralai/Mistral-Nemo-Base-2407", 12_247_782_400),
    "codellama-7b": ("codellama/CodeLlama-7b-hf", 6_738_546_688),
    "codellama-13b": ("codellama/CodeLlama-13b-hf", 13_016_028_160),
    "codellama-34b": ("codellama/CodeLlama-34b-hf", 33_744_232_448),
    "phi-3.5-mini": ("microsoft/Phi-3.5-mini-instruct", 3_821_079_552),
    "gemma-2-27b": ("google/gemma-2-27b", 27_227_128_320),
    "qwen2-1.5b": ("Qwen/Qwen2-1.5B-Instruct", 1_543_714_304),
    "qwen2-7b": ("Qwen/Qwen2-7B-Instruct", 7_615_616_512),
    "smollm2-135m": ("HuggingFaceTB/SmolLM2-135M-Instruct", 134_515_008),
    "smollm2-360m": ("HuggingFaceTB/SmolLM2-360M-Instruct", 361_821_120),
    "olmo-2-13b": ("allenai/OLMo-2-1124-13B", 13_716_198_400),
    "olmo-2-32b": ("allenai/OLMo-2-0325-32B", 32_234_279_936),
    "deepseek-r1-distill-qwen-1.5b": ("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", 1_777_088_000),
    "mistral-7b-v0.3": ("mistralai/Mistral-7B-v0.3", 7_248_023_552),
    "aya-23-8b": ("CohereForAI/aya-23-8B", 8_028_033_024),
    # the whole models (vision tower, merger, language model), as the checkpoints hold them
    "qwen3.5-27b": ("Qwen/Qwen3.5-27B", 27_356_728_560),
    "qwen3.5-122b-a10b": ("Qwen/Qwen3.5-122B-A10B", 122_562_817_776),
    "qwen3.5-397b-a17b": ("Qwen/Qwen3.5-397B-A17B", 396_802_360_816),
    "minimax-m2.5": ("MiniMaxAI/MiniMax-M2.5", 228_689_748_992),
    "glm-5.1": ("zai-org/GLM-5.1", 743_911_199_232),
    # Qwen2.5's 7B and 32B Instruct releases (their context capped at 32,768, unlike their bases),
    # the R1 distills, QwQ and GLM-4.7-Flash (MoE, 3,896,763,136 active); Qwen3.5-9B whole
    "qwen2.5-7b-instruct": ("Qwen/Qwen2.5-7B-Instruct", 7_615_616_512),
    "qwen2.5-32b-instruct": ("Qwen/Qwen2.5-32B-Instruct", 32_763_876_352),
    "deepseek-r1-distill-qwen-7b": ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", 7_615_616_512),
    "deepseek-r1-distill-llama-70b": ("deepseek-ai/DeepSeek-R1-Distill-Llama-70B", 70_553_706_496),
    "qwq-32b": ("Qwen/QwQ-32B", 32_763_876_352),
    "glm-4.7-flash": ("zai-org/GLM-4.7-Flash", 29_943_390_976),
    "qwen3.5-9b": ("Qwen/Qwen3.5-9B", 9_409_813_744),
    # Qwen2.5-14B-Instruct (context 32,768, unlike its base); Llama 4 Scout Instruct whole
    "qwen2.5-14b-instruct": ("Qwen/Qwen2.5-14B-Instruct", 14_770_033_664),
    "llama-4-scout-instruct": ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 108_641_793_536),
    # Instruct and chat releases whose bases are bundled under other repo ids (TinyLlama's
    # intermediate checkpoint, Gemma 3 1B pt, Mistral-Nemo-Base: same tensors), Qwen2.5-1.5B-Instruct
    # (context 32,768) and Yi-34B
    "tinyllama-1.1b-chat": ("TinyLlama/TinyLlama-1.1B-Chat-v1.0", 1_100_048_384),
    "mistral-nemo-12b-instruct": ("mistralai/Mistral-Nemo-Instruct-2407", 12_247_782_400),
    "gemma-3-1b-it": ("google/gemma-3-1b-it", 999_885_952),
    "qwen2.5-1.5b-instruct": ("Qwen/Qwen2.5-1.5B-Instruct", 1_543_714_304),
    "yi-34b": ("01-ai/Yi-34B", 34_388_917_248),
}


@pytest.mark.parametrize("name", BENCHMARKED)
def test_benchmarked_models_resolve_offline_by_name_and_repo_id(name: str) -> None:
    repo, total = BENCHMARKED[name]
    path = bundled.find(name)
    assert path is not None and path.stem == name
    # the repo id and its last part, any case, are the same file: never the Hub
    assert bundled.find(repo) == bundled.find(repo.upper()) == bundled.find(repo.split("/")[1]) == path
    spec = load_spec(name)
    assert (spec.name, count(spec).total, spec.expected["total_params"]) == (repo, total, total)
    data = _yaml(name)
    source = " ".join(data["source"].split())
    assert "config.json" in source, name
    # a mirror named with its commit, or (one file) the search index's file ids, said as such
    assert re.search(r"commit [0-9a-f]{40}|does not name its repository", source), name
    assert "class_defaults" not in data


@pytest.mark.parametrize("name", ["qwen3-4b", "gemma-2-27b", "codellama-34b", "phi-3.5-mini"])
def test_benchmarked_models_get_an_expected_speed(cli: Any, name: str) -> None:
    """The call the published measurements are checked with: a bundled name, no refusal."""
    r = cli("latency", name, "--gpu", "rtx-4090", "--dtype", "q4_0", "--ctx", "512", "--gen",
            "128", "--batch", "1", "--engine", "llama.cpp", "--backend", "cuda", "--json")
    assert r.code == 0, r.stderr
    expected = r.json()["expected"]
    assert (expected["engine"], expected["backend"]) == ("llama.cpp", "cuda")
    assert expected["decode_tokens_per_s"] > 0 and expected["prefill_tokens_per_s"] > 0


@pytest.mark.parametrize(("repo_id", "base"), [
    ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b"),  # its name before Meta's rename
    ("meta-llama/Meta-Llama-3.1-70B-Instruct", "llama-3.1-70b"),
    ("meta-llama/Llama-2-7b-chat-hf", "llama-2-7b"),
    ("mistralai/Mistral-7B-Instruct-v0.1", "mistral-7b"),
    ("google/gemma-2-9b-it", "gemma-2-9b"),
    ("Qwen/Qwen2.5-0.5B-Instruct", "qwen2.5-0.5b"),
    ("Qwen/Qwen2.5-14B-Instruct", None),  # its context capped at 32,768: SIBLINGS_THAT_DIFFER
    ("mistralai/Mixtral-8x22B-Instruct-v0.1", None),  # its vocab 32,768
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", None),  # the bundled base is a text_config
    ("meta-llama/Llama-3.1-8B-Instructor", None),  # not a sibling's suffix
    ("Qwen/Qwen2.5-7B-Instruct-AWQ", None),  # a quantised repo: other tensors
    ("Qwen/Qwen3-30B-A3B-Instruct-2507", None),  # a later release, its own config
    ("someone/Llama-3.1-8B-Instruct", None),  # another organisation
    ("Llama-3.1-8B-Instruct", None),  # no organisation
])
def test_an_instruct_siblings_base(repo_id: str, base: str | None) -> None:
    path = bundled.base_of(repo_id)
    assert (path.stem if path else None) == base


@pytest.mark.parametrize(("name", "base", "sibling"), [
    ("Llama-3.1-8B-Instruct", "llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct"),
    ("Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct"),
    ("llama-3-8b-instruct", "llama-3-8b", "meta-llama/Meta-Llama-3-8B-Instruct"),  # the file's name
    ("META-LLAMA-3-8B-INSTRUCT", "llama-3-8b", "meta-llama/Meta-Llama-3-8B-Instruct"),
    ("llama-2-7b-chat", "llama-2-7b", "meta-llama/Llama-2-7b-chat-hf"),
    (" Llama-2-7b-chat-hf ", "llama-2-7b", "meta-llama/Llama-2-7b-chat-hf"),
    ("gemma-2-9b-it", "gemma-2-9b", "google/gemma-2-9b-it"),
    ("mixtral-8x7b-instruct-v0.1", "mixtral-8x7b", "mistralai/Mixtral-8x7B-Instruct-v0.1"),
    ("qwen2.5-3b-instruct", "qwen2.5-3b", "Qwen/Qwen2.5-3B-Instruct"),
    ("mistral-7b-instruct", None, None),  # which version? v0.2 and v0.3 are other configs
    ("mixtral-8x7b-instruct", None, None),  # the same
    ("mixtral-8x22b-instruct-v0.1", None, None),  # its vocab 32,768: SIBLINGS_THAT_DIFFER
    ("Qwen3-30B-A3B-Instruct", None, None),  # Qwen3's Instruct is the dated 2507, another config
    ("llama-4-scout-17b-16e-instruct", None, None),  # the bundled base is a text_config
    ("llama-3.1-8b-instructor", None, None),  # not a sibling's suffix
    ("llama-3.1-8b-it", None, None),  # not Meta's suffix
    ("llama-2-7b-instruct", None, None),  # Llama 2's is -chat
    ("gpt2-chat", None, None),  # no convention known for its organisation
    ("qwen2-7b-instruct-instruct", None, None),  # its base is itself a tuned repo
    ("mistral-small-24b-instruct", None, None),  # its base is a -Base repo
    ("qwen3-30b-a3b-instruct-2507", None, None),  # a later release, its own config
    ("meta-llama/Llama-3.1-8B-Instruct", None, None),  # a repo id: base_of, once the Hub is asked
])
def test_an_instruct_sibling_named_without_its_organisation(name: str, base: str | None,
                                                            sibling: str | None) -> None:
    found = bundled.bare_base(name)
    assert ((found[0].stem, found[1]) if found else (None, None)) == (base, sibling)


@pytest.mark.parametrize(("name", "stem"), [
    ("meta-llama/Meta-Llama-3.1-8B", "llama-3.1-8b"), ("META-LLAMA/meta-llama-3.1-405b", "llama-3.1-405b"),
    ("Meta-Llama-3.1-70B", "llama-3.1-70b"), ("someone/Meta-Llama-3.1-8B", None),
    ("meta-llama/Meta-Llama-3.2-1B", None),  # never published under that name
])
def test_a_renamed_repo_answers_to_its_new_names_file(name: str, stem: str | None) -> None:
    """Meta's Llama 3.1 repos, renamed meta-llama/Llama-3.1-… on the Hub (bundled.RENAMED)."""
    path = bundled.find(name)
    assert (path.stem if path else None) == stem
