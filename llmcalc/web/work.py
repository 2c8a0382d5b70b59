"""The page's work: each calculation in a worker process, with a deadline and a memory cap.

Two pools of worker processes (:mod:`pebble`): ``calc`` for what is computed here (bundled
names, pasted configs, from-scratch models, measured models) and ``hub`` for names looked up in
the Hugging Face cache or on the Hub, so slow lookups never hold the workers the rest needs.
A pool takes at most ``MAX_WAITING`` requests beyond its workers (then 503 "busy"); a request
gets ``CALC_SECONDS`` from the moment it is queued; a worker's address space is capped at
``MEMORY_BYTES``; when the time is up or the client goes away, the worker running it is
stopped (and a fresh one started). Answers are at most ``MAX_ANSWER`` bytes, and carry no local
paths or library versions (:func:`public`).
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import re
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

CALC_SECONDS = 60.0  # a measured model's first build in a worker imports torch and transformers
MEMORY_BYTES = 6 * 1024**3  # address space of one worker (torch alone maps about 1.5 GiB)
MAX_WAITING = 16  # requests queued beyond the busy workers
MAX_ANSWER = 2 * 1024**2  # bytes of one answer (a usual one is about 20 KiB)
Answer = tuple[int, bytes]


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def error(status: int, message: str) -> Answer:
    return status, dumps({"error": message})


# ---- in the worker ----

def _start_worker(memory_bytes: int) -> None:
    """A worker's set-up: its memory cap, an empty working folder, the calculator imported."""
    try:
        import resource
    except ImportError:  # not on Windows: the deadline still holds
        pass
    else:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    os.chdir(tempfile.mkdtemp(prefix="llmcalc-serve-"))
    import llmcalc.web.api  # noqa: F401 - ready before the first request


def answer(request: Mapping[str, Any]) -> Answer:
    """The status and JSON body for one /api/calc request (run in a worker)."""
    from llmcalc.errors import LLMCalcError
    from llmcalc.limits import one_line
    from llmcalc.web import api

    try:
        body = dumps(public(api.calculate(request)))
    except LLMCalcError as e:
        return error(400, public(one_line(str(e))))
    except (MemoryError, RecursionError) as e:
        return error(400, f"this model needs more than the server gives one request "
                          f"({type(e).__name__})")
    except Exception as e:  # noqa: BLE001 - a bug: say so on the page rather than a blank 500
        return error(500, public(one_line(f"internal error ({type(e).__name__}: {e})")))
    if len(body) > MAX_ANSWER:
        return error(500, f"the answer is over {MAX_ANSWER // 1024**2} MiB")
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
                  gone: Callable[[], Awaitable[None]]) -> Answer | None:
        """The answer to ``request``, or None when the client went away first."""
        if self.queued[kind] >= self.sizes[kind] + MAX_WAITING:
            return error(503, f"busy: {self.queued[kind]} requests are being worked on; try again")
        from pebble import ProcessExpired

        self.queued[kind] += 1
        future = self._pool(kind).submit(answer, self.seconds, dict(request))
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
            return error(500, f"the worker stopped (exit code {e.exitcode}): too much memory?")
        finally:
            future.cancel()  # a running one: its worker is stopped
            left.cancel()
            self.queued[kind] -= 1

    def close(self) -> None:
        """Stop every worker now."""
        for pool in self.pools.values():
            pool.stop()
        for pool in self.pools.values():
            pool.join(timeout=2)
        self.pools.clear()
