"""`llmcalc serve` under load: requests/s and latency of the page's work beside its static files.

Starts the real server (`python -m llmcalc serve --no-browser`, a free port on 127.0.0.1), warms
each kind of request, then sends each kind from CLIENTS threads on keep-alive connections:

- static:    GET /static/app.js (a file, no worker);
- cheap:     POST /api/calc for a bundled model (gpt2: formulas, in a worker process);
- expensive: POST /api/calc for a pasted config without a formula (XLNet, 12 layers: transformers'
             model built on the meta device in a worker);
- refused:   the trillion-layer XLNet paste (one line, 400, before anything is built).

It prints requests/s, p50 and p99 latency per kind, and the resident memory of the server with its
workers before and after. Usage:
    python bench/serve.py [--requests N] [--clients C]
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers.served import start, stop  # noqa: E402

JSON = {"Content-Type": "application/json"}
XLNET = {"model_type": "xlnet", "n_layer": 12, "d_model": 1024, "n_head": 16, "d_inner": 4096,
         "vocab_size": 32000}
KINDS = {
    "static": ("GET", "/static/app.js", None),
    "cheap": ("POST", "/api/calc", {"model": {"name": "gpt2"}}),
    "expensive": ("POST", "/api/calc", {"model": {"text": json.dumps(XLNET)}}),
    "refused": ("POST", "/api/calc", {"model": {"text": json.dumps({**XLNET, "n_layer": 10**12})}}),
}
EXPECTED = {"static": 200, "cheap": 200, "expensive": 200, "refused": 400}


def load(host: str, port: int, kind: str, requests: int, clients: int) -> list[float]:
    method, path, data = KINDS[kind]
    body = None if data is None else json.dumps(data).encode()
    headers = {} if body is None else JSON
    times: list[float] = []
    failed: list[int] = []
    lock = threading.Lock()
    left = [requests]

    def client() -> None:
        conn = http.client.HTTPConnection(host, port, timeout=120)
        while True:
            with lock:
                if left[0] == 0:
                    break
                left[0] -= 1
            t0 = time.perf_counter()
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            resp.read()
            took = time.perf_counter() - t0
            with lock:
                times.append(took)
                if resp.status != EXPECTED[kind]:
                    failed.append(resp.status)
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise SystemExit(f"{kind}: {len(failed)} of {requests} answered HTTP {sorted(set(failed))}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=200, help="per kind (expensive: ÷10)")
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    served = start()
    host, port = served.host, served.port
    try:
        for kind in KINDS:  # warm: workers started, torch and transformers imported in each
            load(host, port, kind, 2 * args.clients, args.clients)
        before = served.rss()
        print(f"{'request':<10} {'n':>5} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8}")
        for kind in KINDS:
            n = max(args.clients, args.requests // (10 if kind == "expensive" else 1))
            t0 = time.perf_counter()
            times = sorted(load(host, port, kind, n, args.clients))
            wall = time.perf_counter() - t0
            p99 = times[min(len(times) - 1, round(0.99 * (len(times) - 1)))]
            print(f"{kind:<10} {n:>5} {n / wall:>8.1f} {statistics.median(times) * 1000:>8.1f} "
                  f"{p99 * 1000:>8.1f}")
        after = served.rss()
        print(f"RSS of the server and its workers: {before / 2**20:.0f} MiB before, "
              f"{after / 2**20:.0f} MiB after ({args.clients} clients)")
    finally:
        stop(served)

if __name__ == "__main__":
    main()
