"""Work is O(layer groups), never O(layers): every weight format at 10¹² layers answers at once
(a guard against a layer-by-layer loop, not a timing: the timeout is generous)."""

from __future__ import annotations

import json
import subprocess
import sys

from llmcalc.formulas.quant import FORMAT_NAMES, more_bits_layers, use_more_bits
from llmcalc.model.spec import LayerSet, Run
from llmcalc.units import DType

LAYERS = 10**12
SCRIPT = """
import json, sys
LAYERS = 10**12
from typer.testing import CliRunner
from llmcalc.cli import app
out = {}
for fmt in sys.argv[1:]:
    r = CliRunner().invoke(app, ["memory", "llama", "--set", "num_hidden_layers=" + str(LAYERS),
                                 "--dtype", fmt, "--json"], catch_exceptions=False)
    out[fmt] = [r.exit_code, json.loads(r.stdout)["weights_bytes"] if r.exit_code == 0 else
                r.stderr]
print(json.dumps(out))
"""


def test_every_format_at_a_trillion_layers() -> None:
    formats = [*FORMAT_NAMES, *(d.value for d in DType)]
    run = subprocess.run([sys.executable, "-c", SCRIPT, *formats], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert {f: code for f, (code, _) in out.items()} == dict.fromkeys(formats, 0)
    # LlamaConfig(): hidden 4,096, intermediate 11,008, vocab 32,000, untied; bf16 per layer
    # 2 × 4,096 (norms) + 4 × 4,096² + 3 × 4,096 × 11,008 elements
    layer = 2 * 4096 + 4 * 4096**2 + 3 * 4096 * 11008
    assert out["bf16"][1] == 2 * (LAYERS * layer + 2 * 32000 * 4096 + 4096)


def test_more_bits_layers_counted_by_runs() -> None:
    """llama.cpp's use_more_bits picks, counted without a walk, equal the walk wherever it is short."""
    for n in (*range(0, 70), 97, 1000):
        for layers in (LayerSet.span(0, n), LayerSet((Run(0, n, 1, 3, 1),)),
                       LayerSet((Run(2, n, 0, 6, 5),)), LayerSet.of(range(0, n, 7))):
            assert more_bits_layers(layers, n) == sum(use_more_bits(i, n) for i in layers)
    assert more_bits_layers(LayerSet.span(0, 8 * 10**12), 8 * 10**12) == (
        2 * 10**12 + 6 * 10**12 // 3)  # the first and last eighth, every third between


FITS_SCRIPT = """
import json
from typer.testing import CliRunner
from llmcalc.cli import app
from llmcalc.web.api import what_fits
r = CliRunner().invoke(app, ["fit", "--gpu", "rtx-4090", "--all", "--json"],
                       catch_exceptions=False)
print(json.dumps({"cli": [r.exit_code, json.loads(r.stdout) if r.exit_code == 0 else r.stderr],
                  "page": what_fits({"gpu": "rtx-4090"})}))
"""


def test_what_fits_with_a_trillion_layer_model_in_the_hub_cache(tmp_path) -> None:
    """One 10¹²-layer config.json in the Hugging Face cache: "what fits this machine" (`fit --gpu
    rtx-4090 --all`, and the page's view of it) still answers, that model a row that fits in no
    format, the others as before (a guard against a loop, not a timing: the timeout is generous)."""
    import os

    huge = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
            "intermediate_size": 11008, "num_hidden_layers": LAYERS, "num_attention_heads": 32,
            "num_key_value_heads": 32, "vocab_size": 32000, "max_position_embeddings": 4096}
    repo = tmp_path / "models--test--huge"
    (repo / "snapshots" / "abc").mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc")
    (repo / "snapshots" / "abc" / "config.json").write_text(json.dumps(huge))
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([sys.executable, "-c", FITS_SCRIPT], capture_output=True, text=True,
                         timeout=300, env=env)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    code, cli = out["cli"]
    assert code == 0, cli
    # 10¹² layers of 4·4,096² + 3·4,096·11,008 + 2·4,096, the two 32,000 × 4,096 tables, the norm
    params = LAYERS * (4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096) + 2 * 32000 * 4096 + 4096
    row = {"model": "test/huge", "params": params, "format": None, "weights_bytes": None,
           "largest_ctx": None, "context_limit": 4096, "decode_tokens_per_sec": None}
    for answer in (cli, out["page"]):
        assert [m for m in answer["models"] if m["model"] == "test/huge"] == [row]
        gpt2 = next(m for m in answer["models"] if m["model"] == "gpt2")
        assert (gpt2["params"], gpt2["format"]) == (124_439_808, "fp16")
