"""uvicorn, set up to be left running: every wait has an end.

- a connection gets ``HEADER_SECONDS`` to send a request's headers (from its opening, or from
  the end of its last answer), ``KEEP_ALIVE_SECONDS`` idle between requests, and the app gives
  it ``BODY_SECONDS`` for the body (:mod:`llmcalc.web.app`);
- headers are at most ``MAX_HEADER_BYTES``; at most ``MAX_CONNECTIONS`` connections and requests
  at a time (then 503);
- stopping (Ctrl-C or SIGTERM) answers requests waiting for a body or a worker with 503 at once,
  waits ``SHUTDOWN_SECONDS`` for the rest, then cancels them; ``run`` then returns (the signal is
  not raised again), so that `llmcalc serve` stops its workers and exits 0.
"""

from __future__ import annotations

import asyncio
import socket
from types import FrameType
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_SECONDS = 10.0
KEEP_ALIVE_SECONDS = 5
SHUTDOWN_SECONDS = 2
MAX_HEADER_BYTES = 32 * 1024
MAX_CONNECTIONS = 256


class Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a deadline on each request's headers."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._headers_due()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._headers_due()

    def _headers_due(self) -> None:
        waiting = self.cycle  # the request answered last (None: none yet)

        def expire() -> None:
            if self.cycle is waiting and not self.transport.is_closing():
                self.transport.close()  # no new request's headers in time

        self.loop.call_later(HEADER_SECONDS, expire)


class Server(uvicorn.Server):
    """uvicorn's server that, when it starts to stop, tells the app (``app.stopping``), so that
    requests waiting for a body or a worker answer 503 at once instead of being cancelled; a
    SIGINT or SIGTERM stops it and ``run`` returns (uvicorn would raise the signal again once
    stopped, and SIGTERM's default action ends the process before its workers are stopped)."""

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        self._captured_signals.clear()  # a stop asked for: nothing to raise again after it

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        stopping = getattr(self.config.app, "stopping", None)
        if isinstance(stopping, asyncio.Event):
            stopping.set()
        await super().shutdown(sockets)


def config(app: Any) -> uvicorn.Config:
    """uvicorn's settings for ``app`` (served on a socket given to ``Server.run``)."""
    return uvicorn.Config(
        app,
        http=Protocol,
        log_level="warning",
        lifespan="off",
        server_header=False,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        timeout_graceful_shutdown=SHUTDOWN_SECONDS,
        limit_concurrency=MAX_CONNECTIONS,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
    )
