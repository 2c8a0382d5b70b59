"""The Starlette app behind `llmcalc serve`: the page, its own assets, and the JSON API.

Nothing else on disk is ever served: assets are looked up by name in the package's ``static``
folder listing, taken once at start. Every request first passes :mod:`llmcalc.web.guard` (Host,
Origin, Content-Type, token; security headers on every answer). Request bodies are capped at
``MAX_BODY`` bytes and ``BODY_SECONDS`` seconds; model input goes through the loaders the CLI
uses (:mod:`llmcalc.web.api`) in a worker process with a deadline (:mod:`llmcalc.web.work`), and
their one-line errors come back as ``{"error": "…"}`` with status 400.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from llmcalc.errors import LLMCalcError
from llmcalc.limits import one_line
from llmcalc.web import api
from llmcalc.web.guard import Guard
from llmcalc.web.work import Pools

STATIC = Path(__file__).parent / "static"
MAX_BODY = 1024 * 1024  # a config.json is a few KiB; a pasted one past 1 MiB is refused
BODY_SECONDS = 10.0  # to send the body, once the headers are in
LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")
MEDIA = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".css": "text/css; charset=utf-8", ".txt": "text/plain; charset=utf-8",
         ".svg": "image/svg+xml"}


T = TypeVar("T")


class BodyTooLarge(Exception):
    pass


def _json(obj: Any, status: int = 200) -> Response:
    return Response(json.dumps(obj, ensure_ascii=False).encode("utf-8"), status_code=status,
                    media_type="application/json")


async def _body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
        raise BodyTooLarge
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


async def index(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", media_type=MEDIA[".html"])


def asset_route(assets: Sequence[str]) -> Any:
    names = frozenset(assets)

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in names:
            return _json({"error": "not found"}, 404)
        path = STATIC / name
        return FileResponse(path, media_type=MEDIA.get(path.suffix, "application/octet-stream"))

    return asset


async def catalog(request: Request) -> Response:
    return _json(api.catalog())


class Stopping(Exception):
    pass


async def _unless(stopping: asyncio.Event, work: Awaitable[T]) -> T:
    """``work``'s result, or :class:`Stopping` as soon as the server starts to stop."""
    task, stop = asyncio.ensure_future(work), asyncio.ensure_future(stopping.wait())
    try:
        done, _ = await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            return task.result()
        raise Stopping
    finally:
        task.cancel()
        stop.cancel()


def calc_route(pools: Pools, stopping: asyncio.Event, view: str = "calc") -> Any:
    """POST /api/calc (``view`` "calc") or /api/fits ("fits"): a JSON body in, the answer out."""
    async def calc(request: Request) -> Response:
        try:
            return await _unless(stopping, _calc(request))
        except Stopping:
            return _json({"error": "the server is stopping"}, 503)

    async def _calc(request: Request) -> Response:
        try:
            body = await asyncio.wait_for(_body(request), BODY_SECONDS)
        except BodyTooLarge:
            return _json({"error": f"request body over {MAX_BODY // 1024} KiB"}, 413)
        except asyncio.TimeoutError:
            return _json({"error": f"request body not sent within {BODY_SECONDS:g} s"}, 408)
        from llmcalc.inputs.files import parse_json

        try:  # the file loader's caps: nesting, digits, duplicate keys
            data = parse_json(body.decode("utf-8"), "request body")
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeDecodeError:
            return _json({"error": "request body is not UTF-8 JSON"}, 400)
        except UnicodeEncodeError as e:
            return _json({"error": "request body: a string holds a lone surrogate "
                          f"(\\u{ord(e.object[e.start]):04x}), which is not text"}, 400)
        except LLMCalcError as e:
            return _json({"error": one_line(str(e))}, 400)
        if not isinstance(data, dict):
            return _json({"error": "request body must be a JSON object"}, 400)

        async def gone() -> None:  # the client went away (nothing more is sent after the body)
            while (await request.receive())["type"] != "http.disconnect":
                await asyncio.sleep(0.1)

        result = await pools.run("hub" if api.needs_hub(data) else "calc", data, gone, view)
        if result is None:
            return Response(status_code=499)  # nobody reads it
        status, payload = result
        return Response(payload, status_code=status, media_type="application/json")

    return calc


class App(Guard):
    """The page's app behind its guard, with the worker pools it stops on :meth:`close`;
    ``stopping`` is set when the server starts to stop."""

    def __init__(self, app: Starlette, pools: Pools, stopping: asyncio.Event, *,
                 hosts: Iterable[str] | None, token: str | None) -> None:
        super().__init__(app, hosts=hosts, token=token)
        self.pools = pools
        self.stopping = stopping

    def close(self) -> None:
        self.pools.close()


def create_app(*, allowed_hosts: Sequence[str] | None = LOCAL_HOSTS, token: str | None = None,
               pools: Pools | None = None) -> App:
    """The app; ``allowed_hosts`` are the Host headers accepted (against DNS rebinding; None: any,
    for a server bound to every address, which then needs ``token``)."""
    assets = sorted(p.name for p in STATIC.iterdir() if p.is_file() and p.name != "index.html")
    pools = pools or Pools()
    stopping = asyncio.Event()
    routes = [
        Route("/", index),
        Route("/static/{name}", asset_route(assets)),
        Route("/api/catalog", catalog),
        Route("/api/calc", calc_route(pools, stopping), methods=["POST"]),
        Route("/api/fits", calc_route(pools, stopping, "fits"), methods=["POST"]),
    ]
    return App(Starlette(routes=routes), pools, stopping, hosts=allowed_hosts, token=token)
