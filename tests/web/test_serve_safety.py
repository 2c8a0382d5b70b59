"""`llmcalc serve` left running: only its own page may use it, every request's work is bounded,
and Ctrl-C stops it. Each test starts the real server (uvicorn) on a free loopback port; every
loop here is bounded in count and time, and every request goes to 127.0.0.1 or ::1."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.served import Served, start, stop

pytest.importorskip("uvicorn")
pytest.importorskip("pebble")
pytest.importorskip("psutil")

# MusicGen has no formula: the measured path (torch imported, transformers' model built);
# ProphetNet is counted by formula, its FLOPs and cache refused
MEASURED_HUGE = json.dumps({"model_type": "musicgen", "n_layer": 10**12})
MEASURED_SMALL = json.dumps({"model_type": "musicgen", "decoder": {"num_hidden_layers": 2}})
PROPHETNET_SMALL = json.dumps({"model_type": "prophetnet", "num_encoder_layers": 1,
                               "num_decoder_layers": 1, "hidden_size": 32, "encoder_ffn_dim": 64,
                               "decoder_ffn_dim": 64, "num_encoder_attention_heads": 2,
                               "num_decoder_attention_heads": 2, "vocab_size": 128})
GPT2 = {"model": {"name": "gpt2"}}
SECURITY = {"content-security-policy", "x-content-type-options", "x-frame-options",
            "referrer-policy", "cache-control", "cross-origin-resource-policy"}


@pytest.fixture(scope="module")
def hf_cache() -> Iterator[Path]:
    """A local Hugging Face cache holding one repo, org/tiny-llama (read offline)."""
    with tempfile.TemporaryDirectory(prefix="llmcalc-hf-") as folder:
        repo = Path(folder) / "models--org--tiny-llama"
        sha = "0123456789abcdef0123456789abcdef01234567"
        (repo / "refs").mkdir(parents=True)
        (repo / "refs" / "main").write_text(sha)
        snapshot = repo / "snapshots" / sha
        snapshot.mkdir(parents=True)
        (snapshot / "config.json").write_text(json.dumps({
            "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
            "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 256}))
        yield Path(folder)


@pytest.fixture(scope="module")
def served(hf_cache: Path) -> Iterator[Served]:
    s = start(env={"HF_HUB_CACHE": str(hf_cache), "HF_HUB_OFFLINE": "1"})
    yield s
    stop(s)


def test_only_the_page_itself_may_post(served: Served) -> None:
    body = json.dumps(GPT2).encode()
    json_type = {"Content-Type": "application/json"}
    refused = [
        ({**json_type, "Origin": "http://127.0.0.1:1"}, 403,
         f"cross-origin request refused: only this page ({served.origin}) may use it"),
        ({**json_type, "Origin": "null"}, 403,  # a file:// page
         f"cross-origin request refused: only this page ({served.origin}) may use it"),
        ({**json_type, "Sec-Fetch-Site": "cross-site"}, 403,
         "cross-site request refused: only this page may use it"),
        ({"Content-Type": "text/plain", "Origin": served.origin}, 415,
         "a POST must be Content-Type: application/json"),
        ({"Content-Type": "application/x-www-form-urlencoded"}, 415,
         "a POST must be Content-Type: application/json"),
    ]
    for headers, status, error in refused:
        got, answer_headers, answer = served.request("POST", "/api/calc", body, headers)
        assert (got, json.loads(answer)) == (status, {"error": error}), headers
        assert SECURITY <= set(answer_headers)
    # the preflight a cross-origin JSON POST needs gets no CORS
    got, answer_headers, _ = served.request(
        "OPTIONS", "/api/calc", None, {"Origin": "http://evil.example",
                                       "Access-Control-Request-Method": "POST"})
    assert got == 403 and not any(k.startswith("access-control-") for k in answer_headers)
    # the page's own request, as Chromium sends it, and a command-line client's
    status, data = served.calc(GPT2, {"Sec-Fetch-Site": "same-origin"})
    assert status == 200 and data["count"]["total_params"] == 124_439_808
    got, _, answer = served.request("POST", "/api/calc", body, json_type)
    assert got == 200 and json.loads(answer)["count"]["total_params"] == 124_439_808


def test_every_answer_has_the_security_headers(served: Served) -> None:
    for method, path, headers, status in [
        ("GET", "/", {}, 200), ("GET", "/static/app.js", {}, 200),
        ("GET", "/nope", {}, 404), ("GET", "/api/calc", {}, 405),
        ("GET", "/", {"Host": "attacker.example"}, 400),
    ]:
        got, answer_headers, _ = served.request(method, path, None, headers)
        assert got == status, path
        assert SECURITY <= set(answer_headers), (path, answer_headers)
        assert answer_headers["x-frame-options"] == "DENY"
        assert "server" not in answer_headers


def test_a_trillion_layer_paste_is_refused_in_seconds(served: Served) -> None:
    before = served.rss()
    t0 = time.monotonic()
    status, data = served.calc({"model": {"text": MEASURED_HUGE}})
    assert time.monotonic() - t0 < 10
    assert (status, data) == (400, {"error": (
        "pasted config: n_layer is 1,000,000,000,000; a model without a formula is measured by "
        "building it, up to 1,024 layers")})
    time.sleep(1)
    assert served.rss() < before + 200 * 2**20


def test_set_values_and_odd_text_get_a_4xx(served: Served) -> None:
    status, data = served.calc({**GPT2, "set": ["n_layer=" + "1" * 20_000]})
    assert (status, data) == (400, {"error": "--set n_layer: the value is 20,000 characters; "
                                             "at most 16,384"})
    bomb = ["&a [1,1,1,1,1,1,1,1,1,1]"] + [  # 10^8 values in 200 characters
        f"&{c} [{','.join(['*' + p] * 10)}]" for p, c in zip("abcdefg", "bcdefgh", strict=True)]
    status, data = served.calc({**GPT2, "set": ["n_layer=[" + ", ".join(bomb) + "]"]})
    assert (status, data) == (400, {"error": "--set n_layer: the value expands to more than "
                                             "8,000,000 values and characters (aliases repeating "
                                             "aliases?)"})
    status, _, body = served.request("POST", "/api/calc", b'{"model": {"text": "\\ud800"}}',
                                     {"Content-Type": "application/json"})
    assert (status, json.loads(body)) == (400, {"error": "request body: a string holds a lone "
                                                         "surrogate (\\ud800), which is not text"})


@pytest.mark.torch  # MusicGen goes to the measured path (transformers' model)
def test_answers_name_no_local_folder_or_library_version(served: Served, hf_cache: Path) -> None:
    import transformers

    answers = [
        served.calc({"model": {"name": "org/tiny-llama"}}),  # read from the local HF cache
        served.calc({"model": {"name": "org/absent"}}),  # not in the cache, offline
        served.calc({"model": {"text": "a: [", "format": "yaml"}}),
        served.calc({"model": {"text": MEASURED_SMALL}}),  # the measured path: transformers
        served.calc({"model": {"text": PROPHETNET_SMALL}}),  # its forward refused by llmcalc
    ]
    assert answers[0][0] == 200 and answers[0][1]["count"]["total_params"] == 2 * (
        4 * 64 * 64 + 3 * 64 * 128 + 2 * 64) + 64 + 2 * 256 * 64
    assert answers[1][0] == 400 and answers[2][0] == 400
    # MusicGen's composite config is no causal LM transformers builds: refused in one line
    assert answers[3][0] == 400 and answers[3][1]["error"].startswith(
        "pasted config: transformers cannot build a causal-LM model of this config")
    assert answers[4] == (400, {"error": "pasted config: FLOPs and cache bytes are not computed: "
                                         "ProphetNet's decoder runs 2 n-gram streams beside the "
                                         "main one, with relative positions of their own"})
    text = json.dumps(answers, ensure_ascii=False)
    for local in (str(hf_cache), tempfile.gettempdir(), os.getcwd(), str(Path.home()),
                  sys.prefix, transformers.__version__):
        assert local not in text
    assert not re.search(r"(^|[\s\"'(=])/(tmp|home|root|usr|var|work|opt|Users)\b", text)
    assert "<hf-cache>/models--org--tiny-llama/snapshots/" in text


def test_slow_clients_do_not_stop_others(served: Served) -> None:
    slow = []
    try:
        for i in range(50):  # 25 stuck in their headers, 25 in their body
            sock = socket.create_connection((served.host, served.port), timeout=5)
            if i % 2:
                sock.sendall(b"POST /api/calc HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            else:
                sock.sendall(f"POST /api/calc HTTP/1.1\r\nHost: {served.host}\r\nContent-Type: "
                             "application/json\r\nContent-Length: 1000\r\n\r\n{".encode())
            slow.append(sock)
        t0 = time.monotonic()
        for _ in range(5):
            status, data = served.calc(GPT2)
            assert status == 200 and data["count"]["total_params"] == 124_439_808
            assert served.request("GET", "/static/app.js")[0] == 200
        assert time.monotonic() - t0 < 20
    finally:
        for sock in slow:
            sock.close()


def test_slow_hub_lookups_do_not_hold_the_other_workers(tmp_path: Path) -> None:
    from helpers.fake_hub import FakeHub, serve

    fake = FakeHub()
    tiny = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
            "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 256}
    for i in range(3):
        fake.add(f"org/slow{i}", {"config.json": tiny}, delay=2.0)
    hub = serve(fake)
    url = next(hub).url
    env = {"HF_HOME": str(tmp_path), "HF_ENDPOINT": url, "HF_HUB_ETAG_TIMEOUT": "20",
           "HF_HUB_DISABLE_XET": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "0"}
    s = start(env={k: v for k, v in env.items()})
    try:
        assert s.calc(GPT2)[0] == 200  # the calculation workers are up
        answers: list[tuple[int, float]] = []

        def lookup(i: int) -> None:
            t0 = time.monotonic()
            status, _ = s.calc({"model": {"name": f"org/slow{i}"}})
            answers.append((status, time.monotonic() - t0))

        threads = [threading.Thread(target=lookup, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        t0 = time.monotonic()
        status, data = s.calc(GPT2)
        cheap = time.monotonic() - t0
        for t in threads:
            t.join(60)
        assert status == 200 and data["count"]["total_params"] == 124_439_808
        assert [a[0] for a in answers] == [200, 200, 200]
        assert cheap < 1.5 < min(a[1] for a in answers)
    finally:
        stop(s)
        hub.close()


def test_ctrl_c_with_a_slow_client_open_stops_within_5_s() -> None:
    s = start()
    sock = socket.create_connection((s.host, s.port), timeout=5)
    try:
        sock.sendall(f"POST /api/calc HTTP/1.1\r\nHost: {s.host}\r\nContent-Type: "
                     "application/json\r\nContent-Length: 1000\r\n\r\n{".encode())
        time.sleep(0.5)
        t0 = time.monotonic()
        s.proc.send_signal(signal.SIGINT)
        out, err = s.proc.communicate(timeout=10)
        assert time.monotonic() - t0 < 5
        assert (s.proc.returncode, out) == (0, "stopped\n")
        assert "Traceback" not in err
    finally:
        sock.close()
        stop(s)


def test_beyond_loopback_the_api_needs_the_token() -> None:
    s = start("--host", "0.0.0.0")
    try:
        assert s.warning == ("warning: --host 0.0.0.0 exposes the page to every machine that can "
                             "reach this address; its API answers only with the token in the "
                             "URL below\n")
        token = s.url.split("?token=")[1]
        assert len(token) >= 32
        local = f"127.0.0.1:{s.port}"
        plain = {"Host": local}
        refused = s.request("GET", "/api/catalog", None, plain)
        assert refused[0] == 403
        assert json.loads(refused[2]) == {"error": "this server needs its token: open the URL it "
                                                   "printed (…/?token=…), or send Authorization: "
                                                   "Bearer <token>"}
        wrong = token[:-1] + ("y" if token.endswith("x") else "x")
        assert s.request("GET", f"/api/catalog?token={wrong}", None, plain)[0] == 403
        assert s.request("GET", "/", None, plain)[0] == 200  # the page itself is no secret
        assert s.request("GET", f"/api/catalog?token={token}", None, plain)[0] == 200
        status, _, body = s.request("POST", "/api/calc", json.dumps(GPT2).encode(), {
            **plain, "Content-Type": "application/json", "Authorization": f"Bearer {token}"})
        assert status == 200 and json.loads(body)["count"]["total_params"] == 124_439_808
    finally:
        stop(s)


def test_no_token_says_what_it_exposes() -> None:
    s = start("--host", "0.0.0.0", "--no-token")
    try:
        assert "token=" not in s.url
        assert s.warning == (
            f"warning: --host 0.0.0.0 --no-token: every machine that can reach this machine on "
            f"port {s.port} can use the page and its API without a token (its CPU and memory "
            "within the server's limits, Hub lookups with this machine's Hugging Face login); so "
            "can any web site, through DNS rebinding\n")
    finally:
        stop(s)


def test_loopback_addresses_need_no_token_and_keep_the_host_check() -> None:
    for host, shown in [("127.0.0.2", "127.0.0.2"), ("[::1]", "[::1]"), ("::1", "[::1]")]:
        if ":" in host and not socket.has_ipv6:
            continue
        s = start("--host", host)
        try:
            assert s.url == f"http://{shown}:{s.port}/" and s.warning == ""
            assert s.request("GET", "/api/catalog")[0] == 200
            assert s.request("GET", "/", None, {"Host": f"evil.example:{s.port}"})[0] == 400
        finally:
            stop(s)
        assert s.proc.stderr is not None and s.proc.returncode == 0


def test_a_connection_without_headers_is_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    from llmcalc.cli.serve import free_port
    from llmcalc.web import server
    from llmcalc.web.app import create_app

    monkeypatch.setattr(server, "HEADER_SECONDS", 0.5)
    port = free_port("127.0.0.1")
    cfg = server.config(create_app())
    cfg.host, cfg.port = "127.0.0.1", port
    srv = uvicorn.Server(cfg)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not srv.started and time.monotonic() < deadline:
            time.sleep(0.05)
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and nothing more
        t0 = time.monotonic()
        assert sock.recv(100) == b""  # closed by the server
        assert time.monotonic() - t0 < 3
        sock.close()
    finally:
        srv.should_exit = True
        thread.join(10)


def test_cli_count_refuses_a_trillion_layer_measured_model(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(MEASURED_HUGE)
    run = subprocess.run([sys.executable, "-m", "llmcalc", "count", str(path)],
                         capture_output=True, text=True, timeout=60)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == (f"error: {path}: n_layer is 1,000,000,000,000; a model without a "
                          "formula is measured by building it, up to 1,024 layers\n")


def test_a_calculation_past_its_deadline_or_left_by_its_client_stops_its_worker() -> None:
    import asyncio

    import psutil

    from llmcalc.web.work import Pools

    measured = {"model": {"text": MEASURED_SMALL}}

    def workers() -> set[int]:
        return {p.pid for p in psutil.Process().children(recursive=True)}

    async def stopped(before: set[int]) -> bool:
        """Whether a worker of ``before`` is gone within 5 s."""
        for _ in range(50):
            if before - workers():
                return True
            await asyncio.sleep(0.1)
        return False

    async def never() -> None:
        await asyncio.sleep(3600)

    async def soon() -> None:  # the client leaves while its worker imports torch
        await asyncio.sleep(1)

    async def scenario() -> list[Any]:
        pools = Pools(workers=1, seconds=60)
        try:
            status, _ = await pools.run("calc", GPT2, never) or (0, b"")  # the worker started
            assert status == 200
            pools.seconds = 0.5  # importing torch for the measured path takes longer
            before = workers()
            slow = await pools.run("calc", measured, never)
            first = await stopped(before)
            pools.seconds = 60
            status, _ = await pools.run("calc", GPT2, never) or (0, b"")  # a fresh worker
            before = workers()
            left = await pools.run("calc", measured, soon)
            return [slow, first, status, left, await stopped(before)]
        finally:
            pools.close()

    assert asyncio.run(scenario()) == [
        (503, b'{"error": "took more than 0.5 s, the most one request gets"}'), True, 200, None,
        True]


def test_a_calculation_past_its_memory_stops_its_worker() -> None:
    import asyncio

    from llmcalc.web.work import Pools

    async def never() -> None:
        await asyncio.sleep(3600)

    async def scenario() -> Any:
        # torch alone takes more than 200 MiB; the deadline is no part of this (a loaded machine
        # may take a minute to import torch), so it is far off
        pools = Pools(workers=1, memory_bytes=200 * 2**20, seconds=600)
        try:
            return await pools.run("calc", {"model": {"text": MEASURED_SMALL}}, never)
        finally:
            pools.close()

    assert asyncio.run(scenario()) == (400, json.dumps({"error": (
        "this model needs more than the 200 MiB of memory the server gives one request")
    }).encode())


def test_a_worker_over_its_memory_when_done_stops_though_the_watch_never_ran(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A calculation that ends holding more than the budget stops its worker as the watch does,
    whichever comes first: the answer does not depend on when the 50 ms watch last ran."""
    from llmcalc.web import work

    def exit_(code: int) -> None:
        raise SystemExit(code)

    monkeypatch.setattr(work.os, "_exit", exit_)
    monkeypatch.setattr(work, "_resident", lambda: 300 * 2**20)
    monkeypatch.setattr(work, "_budget", 200 * 2**20)
    with pytest.raises(SystemExit) as stopped:
        work.answer(GPT2)
    assert stopped.value.code == work.MEMORY_EXIT
    monkeypatch.setattr(work, "_budget", 400 * 2**20)
    status, body = work.answer(GPT2)
    assert status == 200 and json.loads(body)["count"]["total_params"] == 124_439_808


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="Linux: /proc")
def test_a_worker_is_held_to_its_own_memory_not_the_servers_peak() -> None:
    """A spawned process starts with its parent's peak resident memory (ru_maxrss): the budget
    is on what the worker holds now."""
    import asyncio

    from llmcalc.web.work import Pools

    async def never() -> None:
        await asyncio.sleep(3600)

    async def scenario() -> Any:
        pools = Pools(workers=1, memory_bytes=300 * 2**20)
        try:
            return await pools.run("calc", GPT2, never)
        finally:
            pools.close()

    peak = b"x" * (400 * 2**20)  # the server's peak passes the workers' budget
    del peak
    status, body = asyncio.run(scenario()) or (0, b"")
    assert status == 200 and json.loads(body)["count"]["total_params"] == 124_439_808


def test_an_answer_over_its_cap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from llmcalc.web import work

    monkeypatch.setattr(work, "MAX_ANSWER", 1000)
    assert work.answer(GPT2) == (400, b'{"error": "the answer is over 1,000 bytes, the most the '
                                      b'server sends"}')


def test_the_listening_socket_is_tcp_so_answers_are_not_delayed() -> None:
    """asyncio sets TCP_NODELAY only on sockets made with IPPROTO_TCP; without it a keep-alive
    client waited ~40 ms (delayed ACK) for each answer's second write."""
    from llmcalc.cli.serve import listen

    with listen("127.0.0.1", 0) as sock:
        assert sock.proto == socket.IPPROTO_TCP
