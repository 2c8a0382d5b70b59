"""`llmcalc serve`: the calculator as a page in the browser, served from this machine."""

from __future__ import annotations

import ipaddress
import os
import secrets
import socket
import sys
from typing import Annotated, Optional

import typer

from llmcalc.cli._common import handles_errors
from llmcalc.errors import MissingExtraError, UsageError

LOCAL = "127.0.0.1"


def bare_host(host: str) -> str:
    """``[::1]`` → ``::1`` (a bracketed IPv6 literal, as in a URL)."""
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is reachable from this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: loopback only when every address it has is
        try:
            infos = socket.getaddrinfo(host, None)
        except OSError:
            return False
        return bool(infos) and all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos)


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (port 0: a free one the OS picks), handed to uvicorn."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # asyncio sets TCP_NODELAY
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
        typer.Option("--host", help="Address to bind (IPv6 as ::1 or [::1]); one beyond loopback "
                     "exposes the page to other machines, and its API needs the printed token."),
    ] = LOCAL,
    no_token: Annotated[
        bool, typer.Option("--no-token", help="With a --host beyond loopback: serve the API "
                           "without a token, to everyone who can reach the address.")
    ] = False,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Print the URL without opening a browser.")
    ] = False,
) -> None:
    """Serve the interactive calculator on this machine and open it in the browser (Ctrl-C stops).

    Every figure on the page comes from the functions the CLI uses, so it equals --json's.
    Only the page itself may use its API (docs/serve-safety.md).
    """
    try:
        import pebble  # noqa: F401 - the worker pools

        from llmcalc.web.app import LOCAL_HOSTS, create_app
        from llmcalc.web.server import Server, config
    except ImportError:
        raise MissingExtraError("llmcalc serve", extra="serve") from None
    if port is not None and not 0 < port < 65536:
        raise UsageError(f"--port {port}: must be from 1 to 65535")
    host = bare_host(host.strip())
    if not host:
        raise UsageError("--host: give an address, e.g. 127.0.0.1")
    sock = listen(host, port or 0)
    chosen = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{chosen}/"
    allowed: list[str] | None = [*LOCAL_HOSTS, shown.lower()]
    token: str | None = None
    if not is_loopback(host):
        wildcard = host in ("0.0.0.0", "::")
        allowed = None if wildcard else allowed
        if no_token:
            typer.echo(f"warning: --host {host} --no-token: every machine that can reach "
                       f"{'this machine' if wildcard else host} on port {chosen} can use the page "
                       "and its API without a token (its CPU and memory within the server's "
                       "limits, Hub lookups with this machine's Hugging Face login)"
                       + ("; so can any web site, through DNS rebinding" if wildcard else ""),
                       err=True)
        else:
            token = secrets.token_urlsafe(24)
            url += f"?token={token}"
            typer.echo(f"warning: --host {host} exposes the page to every machine that can reach "
                       "this address; its API answers only with the token in the URL below", err=True)
    typer.echo(f"llmcalc serving on {url}  (Ctrl-C stops)")
    sys.stdout.flush()
    app = create_app(allowed_hosts=allowed, token=token)
    server = Server(config(app))
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
        app.close()
    typer.echo("stopped")
