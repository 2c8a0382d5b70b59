"""`llmcalc count gpt2-medium` as a whole process vs the usual way, on the same config.

The usual way: a fresh process imports torch and transformers, reads the same config.json, builds
the model on the meta device and sums numel. Ours: a fresh `llmcalc count MODEL` process (the table,
as a user runs it). They alternate; we print the medians and their ratio.

llmcalc is byte-compiled first, as `pip install` does for an installed package (the baseline's
packages in site-packages are compiled too); this matters where PYTHONDONTWRITEBYTECODE is set.
Usage: python bench/count_vs_transformers.py [MODEL] [--runs N]
"""

from __future__ import annotations

import argparse
import compileall
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import llmcalc
from llmcalc import count, load_spec

USUAL = """
import sys, torch, transformers
config = transformers.AutoConfig.from_pretrained(sys.argv[1])
with torch.device("meta"):
    model = transformers.AutoModelForCausalLM.from_config(config)
print(sum(p.numel() for p in model.parameters()))
"""


def timed(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model", nargs="?", default="gpt2-medium")
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    compileall.compile_dir(Path(llmcalc.__file__).parent, quiet=1)
    spec = load_spec(args.model)
    folder = Path(tempfile.mkdtemp())
    (folder / "config.json").write_text(json.dumps({**spec.config, "model_type": spec.model_type}))
    llmcalc_bin = str(Path(sys.executable).with_name("llmcalc"))
    ours_cmd = [llmcalc_bin, "count", args.model]
    usual_cmd = [sys.executable, "-c", USUAL, str(folder)]
    timed(ours_cmd), timed(usual_cmd)  # warm the file cache once
    ours, usual = [], []
    for _ in range(args.runs):
        t, _out = timed(ours_cmd)
        ours.append(t)
        t, usual_out = timed(usual_cmd)
        usual.append(t)
    total = count(spec).total
    assert total == int(usual_out.strip()), (total, usual_out)
    a, b = statistics.median(ours), statistics.median(usual)
    print(f"model {args.model}: {total:,} parameters (llmcalc and transformers agree)")
    print(f"llmcalc count {args.model:<18} median {a * 1000:8.1f} ms over {args.runs} runs")
    print(f"transformers meta build + numel   median {b * 1000:8.1f} ms over {args.runs} runs")
    print(f"ratio: llmcalc is {b / a:.1f}x faster")


if __name__ == "__main__":
    main()
