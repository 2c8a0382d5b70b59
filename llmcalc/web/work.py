"""The page's work: each calculation in a worker process, with a deadline and a memory cap.

Two pools of worker processes (:mod:`pebble`): ``calc`` for what is computed here (bundled
names, pasted configs, from-scratch models, measured models) and ``hub`` for names looked up in
the Hugging Face cache or on the Hub, so slow lookups never hold the workers the rest needs.
A pool takes at most ``MAX_WAITING`` requests beyond its workers (then 503 "busy"); a request
gets ``CALC_SECONDS`` from the moment it is queued; a worker whose resident memory passes
``MEMORY_BYTES`` is stopped; when the time is up or the client goes away, the worker running it is
stopped (and a fresh one started). Answers are at most ``MAX_ANSWER`` bytes, and carry no local
paths or library versions (:func:`public`).
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import re
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

CALC_SECONDS = 60.0  # a measured model's first build in a worker imports torch and transformers
# resident memory of one worker: torch and transformers take about 350 MiB, a 1,024-layer
# measured XLNet-large 420 MiB. (Not an address-space limit: building a model reserves
# tens of GiB it never touches.)
MEMORY_BYTES = 2 * 1024**3
MEMORY_EXIT = 75  # the exit code of a worker stopped for its memory
MAX_WAITING = 16  # requests queued beyond the busy workers
MAX_ANSWER = 2 * 1024**2  # bytes of one answer (gpt2's is about 6 KiB)
Answer = tuple[int, bytes]


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def error(status: int, message: str) -> Answer:
    return status, dumps({"error": message})


# ---- in the worker ----

_budget: int | None = None  # this worker's memory budget (set by _start_worker; none in-process)


def _start_worker(memory_bytes: int) -> None:
    """A worker's set-up: Ctrl-C left to the server, its memory watched, the calculator
    imported."""
    global _budget
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _budget = memory_bytes
    threading.Thread(target=_watch_memory, args=(memory_bytes,), daemon=True).start()
    import llmcalc.web.api  # noqa: F401 - ready before the first request


def _watch_memory(limit: int) -> None:
    """Stop this worker (exit code ``MEMORY_EXIT``) once its resident memory passes ``limit``;
    checked every 50 ms."""
    while (resident := _resident()) is not None and resident <= limit:
        time.sleep(0.05)
    if resident is not None:
        os._exit(MEMORY_EXIT)


def _resident() -> int | None:
    """This process's resident memory now (Linux), else its peak (macOS); None: unknown."""
    try:  # not the peak on Linux: a spawned process starts with its parent's peak
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # Windows: the deadline still holds
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (
        1 if sys.platform == "darwin" else 1024)  # bytes on macOS, else KiB


def answer(request: Mapping[str, Any], view: str = "calc") -> Answer:
    """The status and JSON body for one /api/calc (or, ``view`` "fits", /api/fits) request (run
    in a worker). A worker that holds more than its budget once the calculation is done stops as
    the watch would stop it: the 50 ms watch may not have run since (a short calculation on a
    loaded machine), and the answer must not depend on which came first."""
    result = _answer(request, view)
    if _budget is not None and (resident := _resident()) is not None and resident > _budget:
        os._exit(MEMORY_EXIT)
    return result


def _answer(request: Mapping[str, Any], view: str) -> Answer:
    from llmcalc.errors import LLMCalcError
    from llmcalc.limits import one_line
    from llmcalc.web import api

    work = api.what_fits if view == "fits" else api.calculate
    try:
        body = dumps(public(work(request)))
    except LLMCalcError as e:
        return error(400, public(one_line(str(e))))
    except (MemoryError, RecursionError) as e:
        return error(400, f"this model needs more than the server gives one request "
                          f"({type(e).__name__})")
    except Exception as e:  # noqa: BLE001 - a bug: say so on the page rather than a blank 500
        return error(500, public(one_line(f"internal error ({type(e).__name__}: {e})")))
    if len(body) > MAX_ANSWER:
        return error(400, f"the answer is over {MAX_ANSWER:,} bytes, the most the server sends")
    return 200, body


_VERSION = re.compile(r"\b(transformers|torch|huggingface_hub|starlette|uvicorn|Python) v?\d+(\.\w+)+")


def _roots() -> list[tuple[str, str]]:
    """Local folders an answer may mention → what it says instead, longest first."""
    roots = {
        os.environ.get("HF_HUB_CACHE", ""): "<hf-cache>",
        os.environ.get("HF_HOME", ""): "<hf-home>",
        str(Path(__file__).resolve().parent.parent): "<llmcalc>",
        tempfile.gettempdir(): "<tmp>",
        os.path.realpath(tempfile.gettempdir()): "<tmp>",
        sys.prefix: "<python>",
        sys.base_prefix: "<python>",
        str(Path.home()): "~",
        os.getcwd(): "<cwd>",
    }
    return sorted(((k, v) for k, v in roots.items() if len(k) > 1), key=lambda kv: -len(kv[0]))


def public(obj: Any) -> Any:
    """``obj`` with local folders written as ``<tmp>``, ``~`` … and library versions left out."""
    roots = _roots()

    def text(s: str) -> str:
        for root, name in roots:
            s = s.replace(root, name)
        return _VERSION.sub(r"\1", s)

    def walk(o: Any) -> Any:
        if isinstance(o, str):
            return text(o)
        if isinstance(o, dict):
            return {k: walk(v) for k, v in o.items()}
        if isinstance(o, list):
            return [walk(v) for v in o]
        return o

    return walk(obj)


# ---- in the server ----

class Pools:
    """The worker pools, started on first use (``workers`` each; 0: one per CPU, at most 4)."""

    def __init__(self, *, workers: int = 0, hub_workers: int = 2,
                 memory_bytes: int = MEMORY_BYTES, seconds: float = CALC_SECONDS) -> None:
        self.sizes = {"calc": workers or min(4, os.cpu_count() or 1), "hub": hub_workers}
        self.memory_bytes = memory_bytes
        self.seconds = seconds
        self.pools: dict[str, Any] = {}
        self.queued = {"calc": 0, "hub": 0}

    def _pool(self, kind: str) -> Any:
        if kind not in self.pools:
            from pebble import ProcessPool

            self.pools[kind] = ProcessPool(
                max_workers=self.sizes[kind], initializer=_start_worker,
                initargs=(self.memory_bytes,), context=multiprocessing.get_context("spawn"))
        return self.pools[kind]

    async def run(self, kind: str, request: Mapping[str, Any],
                  gone: Callable[[], Awaitable[None]], view: str = "calc") -> Answer | None:
        """The answer to ``request``, or None when the client went away first."""
        if self.queued[kind] >= self.sizes[kind] + MAX_WAITING:
            return error(503, f"busy: {self.queued[kind]} requests are being worked on; try again")
        from concurrent.futures.process import BrokenProcessPool

        from pebble import ProcessExpired

        try:
            future = self._pool(kind).submit(answer, self.seconds, dict(request), view)
        except (BrokenProcessPool, RuntimeError) as e:  # its workers could not start
            self._drop(kind)
            return error(500, f"the server's workers cannot start ({type(e).__name__})")
        self.queued[kind] += 1
        work = asyncio.wrap_future(future)
        left = asyncio.ensure_future(gone())
        try:
            done, _ = await asyncio.wait({work, left}, timeout=self.seconds,
                                         return_when=asyncio.FIRST_COMPLETED)
            if work in done:
                result: Answer = work.result()
                return result
            if left in done:
                return None
            raise FutureTimeout
        except FutureTimeout:
            return error(503, f"took more than {self.seconds:g} s, the most one request gets")
        except ProcessExpired as e:
            if e.exitcode == MEMORY_EXIT:
                return error(400, f"this model needs more than the "
                                  f"{self.memory_bytes // 2**20:,} MiB of memory the server "
                                  "gives one request")
            return error(500, f"the worker stopped (exit code {e.exitcode})")
        except BrokenProcessPool:
            self._drop(kind)
            return error(500, "the server's workers cannot start (BrokenProcessPool)")
        finally:
            future.cancel()  # a running one: its worker is stopped
            left.cancel()
            self.queued[kind] -= 1

    def _drop(self, kind: str) -> None:
        """Stop a broken pool: the next request starts a new one."""
        pool = self.pools.pop(kind, None)
        if pool is not None:
            pool.stop()

    def close(self) -> None:
        """Stop every worker now."""
        for pool in self.pools.values():
            pool.stop()
        for pool in self.pools.values():
            pool.join(timeout=2)
        self.pools.clear()
