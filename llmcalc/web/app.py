"""The Starlette app behind `llmcalc serve`: the page, its own assets, and the JSON API.

Nothing else on disk is ever served: assets are looked up by name in the package's ``static``
folder listing, taken once at start. Request bodies are capped at ``MAX_BODY`` bytes; model input
goes through the loaders the CLI uses (:mod:`llmcalc.web.api`), and their one-line errors come back
as ``{"error": "…"}`` with status 400.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from llmcalc.errors import LLMCalcError
from llmcalc.limits import one_line
from llmcalc.web import api

STATIC = Path(__file__).parent / "static"
MAX_BODY = 1024 * 1024  # a config.json is a few KiB; a pasted one past 1 MiB is refused
MEDIA = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".css": "text/css; charset=utf-8", ".txt": "text/plain; charset=utf-8",
         ".svg": "image/svg+xml"}
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self' "
                               "'unsafe-inline'; object-src 'none'; base-uri 'none'; "
                               "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class BodyTooLarge(Exception):
    pass


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def _json(obj: Any, status: int = 200) -> Response:
    return Response(_dumps(obj), status_code=status, media_type="application/json",
                    headers=HEADERS)


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
    return FileResponse(STATIC / "index.html", media_type=MEDIA[".html"], headers=HEADERS)


def asset_route(assets: Sequence[str]) -> Any:
    names = frozenset(assets)

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in names:
            return _json({"error": "not found"}, 404)
        path = STATIC / name
        return FileResponse(path, media_type=MEDIA.get(path.suffix, "application/octet-stream"),
                            headers=HEADERS)

    return asset


async def catalog(request: Request) -> Response:
    return _json(api.catalog())


async def calc(request: Request) -> Response:
    try:
        body = await _body(request)
    except BodyTooLarge:
        return _json({"error": f"request body over {MAX_BODY // 1024} KiB"}, 413)
    from llmcalc.files import parse_json

    try:  # the file loader's caps: nesting, digits, duplicate keys
        data = parse_json(body.decode("utf-8"), "request body")
    except UnicodeDecodeError:
        return _json({"error": "request body is not JSON"}, 400)
    except LLMCalcError as e:
        return _json({"error": one_line(str(e))}, 400)
    if not isinstance(data, dict):
        return _json({"error": "request body must be a JSON object"}, 400)
    try:
        return _json(await run_in_threadpool(api.calculate, data))
    except LLMCalcError as e:
        return _json({"error": one_line(str(e))}, 400)
    except Exception as e:  # a bug: say so on the page rather than answer with a blank 500
        return _json({"error": one_line(f"internal error ({type(e).__name__}: {e})")}, 500)


def create_app(*, allowed_hosts: Sequence[str] = ("127.0.0.1", "localhost", "[::1]")) -> Starlette:
    """The app; ``allowed_hosts`` are the Host headers accepted (against DNS rebinding)."""
    assets = sorted(p.name for p in STATIC.iterdir() if p.is_file() and p.name != "index.html")
    routes = [
        Route("/", index),
        Route("/static/{name}", asset_route(assets)),
        Route("/api/catalog", catalog),
        Route("/api/calc", calc, methods=["POST"]),
    ]
    hosts = [h.strip("[]") if h.startswith("[") else h for h in allowed_hosts]
    hosts += list(allowed_hosts)
    return Starlette(routes=routes,
                     middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=hosts)])
