"""`llmcalc serve`: the calculator as a page in the browser, served from this machine."""

from __future__ import annotations

import os
import socket
import sys
from typing import Annotated, Optional

import typer

from llmcalc.cli._common import handles_errors
from llmcalc.errors import MissingExtraError, UsageError

LOCAL = "127.0.0.1"


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (port 0: a free one the OS picks), handed to uvicorn."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        where = f"--port {port}" if port else f"--host {host}"
        raise UsageError(f"{where}: cannot listen on {host}:{port or 'a free port'} "
                         f"({e.strerror})") from None
    sock.listen(128)
    return sock


def free_port(host: str) -> int:
    """A port nothing listens on now (the OS picks it)."""
    with listen(host, 0) as sock:
        port: int = sock.getsockname()[1]
        return port


def has_display() -> bool:
    """Whether a graphical browser can open (without one, Python's webbrowser would start a text
    browser such as lynx in this terminal)."""
    return sys.platform in ("darwin", "win32") or bool(
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


@handles_errors
def serve(
    port: Annotated[
        Optional[int],  # noqa: UP045 - typer reads this annotation at run time
        typer.Option("--port", help="Port to listen on (default: a free one).",
                     show_default=False),
    ] = None,
    host: Annotated[
        str,
        typer.Option("--host", help="Address to bind; anything but 127.0.0.1 exposes the page "
                     "to other machines."),
    ] = LOCAL,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Print the URL without opening a browser.")
    ] = False,
) -> None:
    """Serve the interactive calculator on this machine and open it in the browser (Ctrl-C stops).

    Every figure on the page comes from the functions the CLI uses, so it equals --json's.
    """
    try:
        import uvicorn

        from llmcalc.web.app import create_app
    except ImportError:
        raise MissingExtraError("llmcalc serve", extra="serve") from None
    if port is not None and not 0 < port < 65536:
        raise UsageError(f"--port {port}: must be from 1 to 65535")
    sock = listen(host, port or 0)
    chosen = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{chosen}/"
    allowed = ["127.0.0.1", "localhost", "[::1]"]
    if host not in (LOCAL, "localhost", "::1"):
        typer.echo(f"warning: --host {host} exposes the page (and its API) to every machine that "
                   "can reach this address", err=True)
        allowed = ["*"] if host in ("0.0.0.0", "::") else [*allowed, shown]
    typer.echo(f"llmcalc serving on {url}  (Ctrl-C stops)")
    sys.stdout.flush()
    config = uvicorn.Config(create_app(allowed_hosts=allowed), log_level="warning",
                            lifespan="off")
    server = uvicorn.Server(config)
    if not no_browser and has_display():
        import threading
        import webbrowser

        threading.Timer(0.5, webbrowser.open, args=(url,)).start()
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    typer.echo("stopped")
