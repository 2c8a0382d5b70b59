"""CLI review fixes: count and memory tables that add up, one base for the rule of thumb, parts
without layers, --images / --image-size on what takes no images, sliding-window caps that count
caching layers once, --set into a sub-config the config leaves out."""

from __future__ import annotations

import csv
import io
import math
from typing import Any

import pytest

from llmcalc.formulas.counting import count
from llmcalc.inputs.config import load_spec

COUNT_PARTS = ("embeddings", "layers (all)", "lm_head", "final norm and other tensors")


def table(text: str) -> dict[str, list[str]]:
    """A compare grid's CSV as figure → one cell per model."""
    rows = list(csv.reader(io.StringIO(text)))
    return {r[0]: r[1:] for r in rows[1:]}


def cell(value: str) -> int:
    return 0 if value in ("-", "") else int(value)


# ---- 1. count tables add up; the rule of thumb against the language model -------------------------

WHOLE = ["gemma-3-4b", "llama-3.2-11b-vision", "phi-4-multimodal-instruct", "llama-2-7b", "gpt2",
         "moss-transcribe-diarize-default", "qwen3.5-default"]


def test_count_csv_breakdown_adds_up_to_the_total(cli: Any) -> None:
    run = cli("count", *WHOLE, "--format", "csv")
    assert run.code == 0, run.stderr
    t = table(run.stdout)
    parts = [k for k in t if k.endswith("(whole part)")]
    assert parts == ["vision (whole part)", "projector (whole part)", "audio (whole part)",
                     "audio_projector (whole part)"]
    for i in range(len(WHOLE)):
        assert sum(cell(t[k][i]) for k in (*COUNT_PARTS, *parts)) == int(t["total"][i]), WHOLE[i]


def test_phi4mm_csv_exact(cli: Any) -> None:
    out = cli("count", "phi-4-multimodal-instruct", "--format", "csv").stdout
    tail = out.splitlines()[11:]
    assert tail == [
        "embeddings,614596608",
        "layers (all),3221422080",
        "lm_head,0",
        "final norm and other tensors,3072",
        "vision (whole part),428565440",
        "projector (whole part),12984576",
        "audio (whole part),441238144",
        "audio_projector (whole part),25178112",
        "total,4743988032",
        "total (short),4.74B",
        "active per token,4743988032",
        "rule of thumb 12·L·d² + V·d,4238475264",
        "rule of thumb off by (vs the language model),10.4914",
    ]
    pc = count(load_spec("phi-4-multimodal-instruct"))
    assert round((4238475264 - pc.parts["language"]) / pc.parts["language"] * 100, 4) == 10.4914


def test_markdown_compare_of_whole_models(cli: Any) -> None:
    out = cli("count", "gemma-3-4b", "llama-3.2-11b-vision", "--format", "markdown").stdout
    lines = out.splitlines()
    for row in (
        "| embeddings | 671,252,480 | 525,369,344 |",
        "| layers (all) | 3,209,008,128 | 8,724,482,064 |",
        "| lm_head | 0 | 525,336,576 |",
        "| final norm and other tensors | 2,560 | 4,096 |",
        "| vision (whole part) | 416,866,032 | 863,567,379 |",
        "| projector (whole part) | 2,950,272 | 31,461,376 |",
        "| **total** | **4,300,079,472** | **10,670,220,835** |",
        "| rule of thumb off by (vs the language model) | -13.79% | -12.24% |",
    ):
        assert row in lines, row


def test_rule_of_thumb_one_base_in_every_view(cli: Any) -> None:
    """The single-model table, --explain, --json and the grid hold the rule against one base."""
    single = cli("count", "gemma-3-4b").stdout
    assert "rule of thumb 12·L·d² + V·d (vs the language model, 3.88B)" in single
    assert "-13.79%" in single
    explain = cli("count", "gemma-3-4b", "--explain").stdout
    assert ("rule of thumb = 12 × 34 × 2,560² + 262,208 × 2,560 = 3,345,121,280 "
            "(-13.79% vs the language model, 3,880,263,168)") in explain
    assert cli("count", "gemma-3-4b", "--json").json()["rule_of_thumb"]["percent_off"] == -13.7914
    t = table(cli("count", "gemma-3-4b", "--format", "csv").stdout)
    assert t["rule of thumb off by (vs the language model)"] == ["-13.7914"]


# ---- 2. memory tables add up --------------------------------------------------------------------


def test_memory_csv_state_row_adds_up(cli: Any) -> None:
    out = cli("memory", "qwen3.8-flash-next", "--ctx", "4k", "--format", "csv").stdout
    assert out.splitlines()[5:9] == [
        "KV cache per token (bytes),27672",
        '"recurrent state per sequence (bytes, any context)",116379664',
        "KV cache (bytes),229724176",
        "KV cache,0.214",
    ]
    assert 27672 * 4096 + 116379664 == 229724176


def test_memory_compare_adds_up(cli: Any) -> None:
    """batch × (per token × ctx + state per sequence) + cross-attention K, V = the KV cache."""
    models = ["qwen3.8-flash-next", "t5-small", "whisper-tiny", "llama-3-8b"]
    out = cli("memory", *models, "--ctx", "4k", "--batch", "2", "--format", "markdown").stdout
    lines = out.splitlines()
    for row in (
        "| KV cache per token (bytes) | 27,672 | 12,288 | 6,144 | 131,072 |",
        "| recurrent state per sequence (bytes, any context) | 116,379,664 | - | - | - |",
        "| cross-attention source tokens | - | 4,096 | 1,500 | - |",
        "| cross-attention K, V (bytes, all sequences) | - | 100,663,296 | 18,432,000 | - |",
        "| KV cache (bytes) | 459,448,352 | 201,326,592 | 68,763,648 | 1,073,741,824 |",
    ):
        assert row in lines, row
    t = table(cli("memory", *models, "--ctx", "4k", "--batch", "2", "--format", "csv").stdout)
    for i in range(len(models)):
        per_token, state = int(t["KV cache per token (bytes)"][i]), cell(
            t["recurrent state per sequence (bytes, any context)"][i])
        cross = cell(t["cross-attention K, V (bytes, all sequences)"][i])
        assert 2 * (per_token * 4096 + state) + cross == int(t["KV cache (bytes)"][i]), models[i]


def test_memory_csv_mllama_cross_attention_row(cli: Any) -> None:
    t = table(cli("memory", "llama-3.2-11b-vision", "--ctx", "4k", "--images", "2", "--format",
                  "csv").stdout)
    assert t["cross-attention source tokens"] == ["12808"]
    assert t["cross-attention K, V (bytes, all sequences)"] == ["419692544"]
    assert 131072 * 4098 + 419692544 == int(t["KV cache (bytes)"][0]) == 956825600


def test_plain_memory_csv_has_no_extra_rows(cli: Any) -> None:
    t = table(cli("memory", "llama-3-8b", "--format", "csv").stdout)
    assert not any("state" in k or "cross" in k for k in t)


# ---- 3, 4. --images on a part, --image-size on a model without images -----------------------------


@pytest.mark.parametrize(("args", "message"), [
    (("flops", "llama-3.2-11b-vision", "--part", "language", "--images", "1"),
     "error: --images 1: --part language takes no images (--source-len N: the vision tokens its "
     "cross-attention layers read)"),
    (("memory", "llama-3.2-11b-vision", "--part", "language", "--images", "1"),
     "error: --images 1: --part language takes no images (--source-len N: the vision tokens its "
     "cross-attention layers read)"),
    (("memory", "llama-3.2-11b-vision", "--part", "vision", "--images", "2"),
     "error: --images 2: --part vision takes no images (--images counts images for the whole "
     "model)"),
    (("flops", "gemma-3-4b", "--part", "language", "--images", "1"),
     "error: --images 1: --part language takes no images (--images counts images for the whole "
     "model)"),
    (("memory", "moss-transcribe-diarize-default", "--image-size", "448"),
     "error: --image-size: moss_transcribe_diarize (transformers defaults) takes no images"),
    (("flops", "moss-transcribe-diarize-default", "--image-size", "448"),
     "error: --image-size: moss_transcribe_diarize (transformers defaults) takes no images"),
    (("flops", "gpt2", "--image-size", "448"),
     "error: --image-size: openai-community/gpt2 takes no images"),
    (("memory", "gpt2", "--images", "1"), "error: --images 1: openai-community/gpt2 takes no images"),
])
def test_images_on_what_takes_none(cli: Any, args: tuple[str, ...], message: str) -> None:
    run = cli(*args)
    assert (run.code, run.stderr, run.stdout) == (2, message + "\n", "")


def test_images_and_image_size_still_work(cli: Any) -> None:
    assert cli("memory", "llama-3.2-11b-vision", "--part", "language", "--source-len", "1601",
               "--json").json()["source_len"] == 1601
    sized = cli("flops", "gemma-3-4b", "--image-size", "448", "--images", "1", "--json")
    assert sized.code == 0, sized.stderr
    assert cli("flops", "gemma-3-4b", "--part", "vision", "--image-size", "448").code == 0


# ---- 5. the sliding-window cap line ----------------------------------------------------------------


@pytest.mark.parametrize(("model", "line"), [
    ("gemma-4-e2b", "sliding window caps the KV cache: 12 of 35 layers hold at most 512 tokens"),
    ("inkling2-loop-text-default",
     "sliding window caps the KV cache: 20 of 24 layers hold at most 1,024 tokens"),
    ("gemma-2-2b", "sliding window caps the KV cache: 13 of 26 layers hold at most 4,096 tokens"),
])
def test_window_cap_counts_caching_layers_once(cli: Any, model: str, line: str) -> None:
    from llmcalc.render.memory import window_cap

    assert window_cap(load_spec(model), 32768) == line
    assert cli("memory", model, "--ctx", "32k", "--format", "markdown").stdout.splitlines()[-1] == (
        f"- {model}: {line}")


def test_window_caps_json_leaves_out_shared_layers(cli: Any) -> None:
    data = cli("memory", "gemma-4-e2b", "--ctx", "32k", "--json").json()
    assert data["kv_cache_window_caps"] == [
        {"group": "sliding_attention/own_kv", "num_layers": 12, "window": 512}]


# ---- 6. a part without layers ----------------------------------------------------------------------


def test_part_without_layers_shows_its_tensors_and_total(
    cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.console import Console

    import llmcalc.cli._common as common

    monkeypatch.setattr(common, "console", lambda **_: Console(
        width=100, markup=False, highlight=False, emoji=False, soft_wrap=False))
    run = cli("count", "phi-4-multimodal-instruct", "--part", "audio_projector")
    out = run.stdout + run.stderr  # the table on stdout, its notes on stderr
    assert [ln.rstrip() for ln in out.splitlines()[:13]] == [
        "microsoft/Phi-4-multimodal-instruct  (phi4_multimodal, family phi4mm)",
        "bundled config configs/phi-4-multimodal-instruct.yaml",
        "model",
        "┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━┳━━━━━━━┓",
        "┃ part                        ┃ parameters ┃ share ┃",
        "┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━┩",
        "│ up_proj_for_speech          │  3,148,800 │ 12.5% │",
        "│ down_proj_for_speech        │  9,440,256 │ 37.5% │",
        "│ up_proj_for_vision_speech   │  3,148,800 │ 12.5% │",
        "│ down_proj_for_vision_speech │  9,440,256 │ 37.5% │",
        "├─────────────────────────────┼────────────┼───────┤",
        "│ total                       │ 25,178,112 │ 25.2M │",
        "└─────────────────────────────┴────────────┴───────┘",
    ]
    assert ("note: per-image figures for a 448×448 image: 1 crop(s) of 448 px and the whole image "
            "resized, each") in [ln.rstrip() for ln in out.splitlines()[13:]]
    mlm = cli("count", "bert-base-uncased", "--part", "mlm_head", "--explain").stdout
    for absent in ("layers 0", "vocab 0", "lm_head (tied", "rule of thumb", "all 0 layers"):
        assert absent not in mlm, absent
    assert "total = bias 30,522 + dense 590,592 + norm 1,536 + lm_head 0 = 622,650" in mlm


def test_part_without_layers_in_csv(cli: Any) -> None:
    t = table(cli("count", "bert-base-uncased", "--part", "mlm_head", "--format", "csv").stdout)
    for figure in ("layers", "d_model", "vocab", "tied embeddings", "embeddings", "layers (all)",
                   "lm_head", "rule of thumb 12·L·d² + V·d",
                   "rule of thumb off by (vs the language model)"):
        assert t[figure] == [""], figure
    assert t["final norm and other tensors"] == t["total"] == ["622650"]


# ---- 7. --set into a sub-config left out ----------------------------------------------------------


@pytest.mark.parametrize(("model", "key"), [
    ("moss-transcribe-diarize-default", "audio_config.encoder_layers=4"),
    ("fuyu-default", "text_config.num_hidden_layers=4"),
    ("qwen3.5-default", "text_config.num_hidden_layers=4"),
    ("gemma-3n-defaults", "text_config.num_hidden_layers=4"),
    ("llava-onevision-default", "vision_config.num_hidden_layers=4"),
])
def test_set_starts_a_missing_sub_config(cli: Any, model: str, key: str) -> None:
    run = cli("count", model, "--set", key, "--json")
    assert run.code == 0, run.stderr
    assert f"changed with --set: {key}" in run.json()["notes"]


def test_set_into_a_scalar_is_still_an_error(cli: Any) -> None:
    run = cli("count", "gpt2", "--set", "n_layer.x=3")
    assert (run.code, run.stderr) == (2, "error: --set n_layer.x: n_layer is not a mapping in this "
                                         "config\n")


@pytest.mark.torch
def test_set_text_config_equals_transformers_meta_model(cli: Any) -> None:
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    from llmcalc.verify.reference import build_meta_model

    transformers.logging.set_verbosity_error()
    spec = load_spec("qwen3.5-default", overrides=["text_config.num_hidden_layers=4"])
    model = build_meta_model(spec)
    real = {name: tuple(p.shape) for name, p in model.named_parameters()}
    assert sorted(spec.named_shapes()) == sorted(real.items())
    total = sum(math.prod(s) for s in real.values())
    assert count(spec).total == total == 3_352_837_424
    data = cli("count", "qwen3.5-default", "--set", "text_config.num_hidden_layers=4",
               "--json").json()
    assert (data["total_params"], data["num_layers"]) == (total, 4)


@pytest.mark.parametrize("args", [
    ("train", "llama-3.2-11b-vision", "--tokens", "1T", "--gpu", "h100"),
    ("fit", "llama-3.2-11b-vision", "--gpu", "h100"),
    ("mfu", "llama-3.2-11b-vision", "--gpu", "h100", "--tokens-per-sec", "1000"),
    ("latency", "llama-3.2-11b-vision", "--gpu", "h100"),
])
def test_text_only_commands_refuse_cross_attention_to_images(cli: Any, args: tuple[str, ...]) -> None:
    # Llama 3.2 Vision's cross-attention layers run (weights, attention, cache) only with an
    # image: a text-token command would mix the two, so it says where the figures are
    r = cli(*args)
    assert (r.code, r.stdout) == (2, "")
    assert r.stderr == (
        f"error: {args[0]}: meta-llama/Llama-3.2-11B-Vision reads images through cross-attention, "
        f"which {args[0]} does not size yet; use `llmcalc flops|memory MODEL --images N`\n")
