"""`llmcalc count gpt2-medium` as a whole process vs the usual way, on the same config.

The usual way: import torch and transformers, build the model on the meta device from the same
config, sum numel. Both run as fresh processes, alternating, and we report medians and the ratio.
Usage: python bench/count_vs_transformers.py [MODEL] [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

USUAL = """
import torch, transformers
from llmcalc import load_spec
spec = load_spec({model!r})
fields = {{k: v for k, v in spec.config.items() if k != "model_type"}}
config = transformers.AutoConfig.for_model(spec.model_type, **fields)
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
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    ours_cmd = [sys.executable, "-m", "llmcalc", "count", args.model, "--json"]
    usual_cmd = [sys.executable, "-c", USUAL.format(model=args.model)]
    timed(ours_cmd), timed(usual_cmd)  # warm the file cache once
    ours, usual = [], []
    for _ in range(args.runs):
        t, out = timed(ours_cmd)
        ours.append(t)
        t, usual_out = timed(usual_cmd)
        usual.append(t)
    ours_total = __import__("json").loads(out)["total_params"]
    assert ours_total == int(usual_out.strip()), (ours_total, usual_out)
    a, b = statistics.median(ours), statistics.median(usual)
    print(f"model {args.model}: {ours_total:,} parameters (both agree)")
    print(f"llmcalc count (process)          median {a * 1000:8.1f} ms over {args.runs} runs")
    print(f"transformers meta build + numel  median {b * 1000:8.1f} ms over {args.runs} runs")
    print(f"ratio: llmcalc is {b / a:.1f}x faster")


if __name__ == "__main__":
    main()
