"""Who may use the page's API: the checks every request passes before the app sees it.

- the ``Host`` header is one of the names the server was started for (against DNS rebinding);
  a server bound to every address (``0.0.0.0``, ``::``) takes any name and relies on its token;
- the API (``/api/…``) and anything but GET/HEAD come from the page itself: an ``Origin`` other
  than ``http://<Host>`` and a ``Sec-Fetch-Site`` other than ``same-origin``/``none`` are refused,
  so another site (another localhost port, a ``file://`` page) can neither read nor start work;
- a POST is ``application/json``, so a browser must ask first (a preflight), and the preflight
  gets no CORS headers: a cross-site form or no-cors fetch never reaches the calculator;
- with a token (a server bound beyond loopback), the API wants it: ``Authorization: Bearer …``
  or ``?token=…``, compared in constant time;
- every response, the framework's own 400/404/405 and these refusals included, carries the
  security headers (a strict CSP, no framing, no sniffing, no referrer, no caching).

Refusals are ``{"error": "…"}`` with 400, 403 or 415.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

HEADERS = {
    "content-security-policy": "default-src 'self'; img-src 'self' data:; style-src 'self' "
                               "'unsafe-inline'; object-src 'none'; base-uri 'none'; "
                               "form-action 'none'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "cache-control": "no-store",
}
SAFE_METHODS = ("GET", "HEAD")
SAME_SITE = ("same-origin", "none")  # Sec-Fetch-Site of the page's own fetch, of a typed URL


class Guard:
    """The ASGI app ``app`` behind the checks above (``hosts`` None: any Host header)."""

    def __init__(self, app: ASGIApp, *, hosts: Iterable[str] | None, token: str | None) -> None:
        self.app = app
        self.hosts = None if hosts is None else frozenset(h.lower() for h in hosts)
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                given = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []),
                                      *((k.encode(), v.encode()) for k, v in HEADERS.items()
                                        if k.encode() not in given)]
            await send(message)

        refusal = self.refusal(scope)
        if refusal is None:
            await self.app(scope, receive, with_headers)
            return
        status, error = refusal
        body = json.dumps({"error": error}).encode()
        await with_headers({"type": "http.response.start", "status": status,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """(status, message) when the request is refused, else None."""
        headers = _headers(scope)
        host = headers.get("host", "")
        if self.hosts is not None and _hostname(host) not in self.hosts:
            return 400, "invalid Host header"
        method, path = scope["method"], scope["path"]
        if not (path.startswith("/api/") or method not in SAFE_METHODS):
            return None
        origin = headers.get("origin")
        if origin is not None and origin != f"http://{host}":
            return 403, f"cross-origin request refused: only this page (http://{host}) may use it"
        if headers.get("sec-fetch-site", "same-origin") not in SAME_SITE:
            return 403, "cross-site request refused: only this page may use it"
        if method == "POST":
            media = headers.get("content-type", "").split(";")[0].strip().lower()
            if media != "application/json":
                return 415, "a POST must be Content-Type: application/json"
        if self.token is not None and not self._has_token(scope, headers):
            return 403, ("this server needs its token: open the URL it printed "
                         "(…/?token=…), or send Authorization: Bearer <token>")
        return None

    def _has_token(self, scope: Scope, headers: dict[str, str]) -> bool:
        assert self.token is not None
        given = ""
        auth = headers.get("authorization", "")
        if auth[:7].lower() == "bearer ":
            given = auth[7:].strip()
        else:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = (query.get("token") or [""])[0]
        return hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode())


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers (the last of a repeated one), names lower-cased."""
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def _hostname(host: str) -> str:
    """``127.0.0.1:8000`` → ``127.0.0.1``; ``[::1]:8000`` → ``[::1]``; lower-cased."""
    host = host.lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rpartition(":")[0] if ":" in host else host
