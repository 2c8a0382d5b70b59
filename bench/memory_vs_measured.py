"""llmcalc's training and inference peaks against what PyTorch allocates, case by case.

    .venv/bin/python bench/memory_vs_measured.py [--profiler] [--only SUBSTRING]

Builds each case of tests/helpers/memory_harness.grid() (small GPT-2, Llama-GQA and Mixtral models),
measures the peak with MemTracker (and the profiler with --profiler; the CUDA allocator on a GPU),
and prints estimate / measured / ratio per case, the ratio of its two components at the peak (held:
weights and optimizer states; transient: activations, logits/loss, gradients, temporaries), then
llmcalc's parts and MemTracker's. Exits 1 when a peak's ratio leaves [0.9, 1.1].
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers import memory_harness as h  # noqa: E402

MB = 1e6
TOLERANCE = 0.10


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profiler", action="store_true", help="cross-check with torch.profiler")
    ap.add_argument("--only", default="", help="cases whose name contains this")
    args = ap.parse_args()
    bad = 0
    print(f"{'case':<52} {'estimate':>9} {'measured':>9} {'ratio':>6}  ratio of the held and "
          "transient parts at the peak | llmcalc's parts | MemTracker's at the peak (MB)")
    for case in h.grid():
        if args.only not in case.name:
            continue
        m = h.measure(case, profiler=args.profiler)
        e = h.estimate(case)
        ratio = e["peak"] / m.peak
        bad += not (1 - TOLERANCE <= ratio <= 1 + TOLERANCE)
        split = h.measured_split(m)
        ratios = " ".join(f"{k} {e[k] / split[k]:.3f}" if split[k] else f"{k} -"
                          for k in ("held", "transient"))
        parts = " ".join(f"{k} {v / MB:.1f}" for k, v in e.items()
                         if k not in ("peak", "held", "transient"))
        measured = " ".join(f"{k} {v / MB:.1f}" for k, v in m.parts.items() if v and k != "Total")
        extra = f" profiler {m.profiler / MB:.2f}" if m.profiler is not None else ""
        extra += f" cuda {m.cuda / MB:.2f}" if m.cuda is not None else ""
        print(f"{case.name:<52} {e['peak'] / MB:9.2f} {m.peak / MB:9.2f} {ratio:6.3f}  "
              f"{ratios} | est: {parts} | at peak: {measured}{extra}", flush=True)
    print(f"{bad} case(s) outside ±{TOLERANCE:.0%}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
