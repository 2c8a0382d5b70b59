"""`llmcalc serve` as a process, for the tests and bench/serve.py: started with its arguments on a
free port of 127.0.0.1 (or the --host given), talked to over HTTP, stopped with Ctrl-C."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any
from urllib.parse import urlsplit


class Served:
    """A `llmcalc serve` process and how to talk to it."""

    def __init__(self, proc: subprocess.Popen[str], url: str, warning: str) -> None:
        self.proc, self.url, self.warning = proc, url, warning
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "", parts.port or 0
        self.origin = f"http://{parts.netloc}"

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None, timeout: float = 60
                ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
        finally:
            conn.close()

    def calc(self, data: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        status, _, body = self.request(
            "POST", "/api/calc", json.dumps(data).encode(),
            {"Content-Type": "application/json", "Origin": self.origin, **(headers or {})})
        return status, json.loads(body)

    def rss(self) -> int:
        """Resident memory of the server and its workers, in bytes."""
        import psutil

        proc = psutil.Process(self.proc.pid)
        total = proc.memory_info().rss
        for child in proc.children(recursive=True):
            try:
                total += child.memory_info().rss
            except psutil.NoSuchProcess:
                pass
        return int(total)


def start(*args: str, env: dict[str, str] | None = None) -> Served:
    proc = subprocess.Popen([sys.executable, "-m", "llmcalc", "serve", "--no-browser", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    assert proc.stdout is not None and proc.stderr is not None
    line = proc.stdout.readline()
    warning = ""
    if not line.startswith("llmcalc serving on "):
        proc.kill()
        raise AssertionError(line + proc.stderr.read())
    if "token=" in line or "--no-token" in args:
        warning = proc.stderr.readline()
    served = Served(proc, line.split()[3], warning)
    deadline = time.monotonic() + 20
    while True:
        try:
            served.request("GET", "/", timeout=2)
            return served
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def stop(served: Served) -> None:
    if served.proc.poll() is None:
        served.proc.send_signal(signal.SIGINT)
        try:
            served.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            served.proc.kill()
            served.proc.communicate()
