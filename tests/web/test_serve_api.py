"""`llmcalc serve`'s API and server: the CLI's --json figures, the loaders' errors, the limits."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from helpers import REPO
from helpers.tables import expected_rows

from llmcalc.errors import ConfigError, LLMCalcError, UsageError
from llmcalc.planning.speed import rows_for
from llmcalc.web import api

SETS = ["num_hidden_layers=20", "hidden_size=3072"]


def test_every_panel_equals_the_cli_json(cli: Any) -> None:
    got = api.calculate({"model": {"name": "llama-3.2-1b"}, "set": SETS, "ctx": "32k",
                         "batch": "4", "dtype": "bf16", "kv_dtype": "fp8", "gpu": "h100",
                         "gpus": 2, "tokens": "1T"})
    for panel, command in got["commands"].items():
        if panel == "plot":
            continue
        args = command.split()[1:]
        run = cli(*args)
        assert run.code == 0, (command, run.stderr)
        assert run.json() == got[panel], panel
    assert got["commands"]["count"] == ("llmcalc count llama-3.2-1b --set num_hidden_layers=20 "
                                        "--set hidden_size=3072 --json")
    assert got["knobs"] == {"d_model": {"key": "hidden_size", "value": 3072},
                            "layers": {"key": "num_hidden_layers", "value": 20}}


def test_series_points_equal_the_single_context_figures(cli: Any) -> None:
    got = api.calculate({"model": {"name": "mistral-7b"}, "ctx_max": "64k", "batch": "2"})
    s = got["series"]
    assert s["ctx"] == [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]
    i = s["ctx"].index(32768)
    f = cli("flops", "mistral-7b", "--ctx", "32k", "--json").json()
    m = cli("memory", "mistral-7b", "--ctx", "32k", "--batch", "2", "--json").json()
    assert s["attention_flops_per_token"][i] == f["attention_flops_per_token"]
    assert s["weight_flops_per_token"] == f["weight_flops_per_token"]
    assert s["kv_cache_bytes"][i] == m["kv_cache_bytes"]
    assert s["weights_bytes"] == m["weights_bytes"]
    assert s["crossover_ctx"] == f["attention_crossover_ctx"]


def test_scratch_gpt2_small_and_llama_2_7b() -> None:
    gpt2 = {"d_model": 768, "layers": 12, "heads": 12, "kv_heads": 12, "head_dim": None,
            "d_ff": 3072, "vocab": 50257, "tied": True, "max_positions": 1024, "ffn": "gelu",
            "norm": "layernorm", "positions": "learned", "experts": 1, "top_k": 1}
    got = api.calculate({"model": {"scratch": gpt2}})
    assert got["count"]["total_params"] == 124_439_808
    assert got["commands"]["count"] == "llmcalc count gpt2 --json"
    llama = api.catalog()["scratch"]["llama"]
    assert api.calculate({"model": {"scratch": llama}})["count"]["total_params"] == 6_738_415_616
    moe = {**llama, "experts": 8, "top_k": 2, "kv_heads": 8, "d_ff": 14336,
           "max_positions": 32768}
    got = api.calculate({"model": {"scratch": moe}})
    assert got["count"]["total_params"] == 46_702_792_704  # Mixtral-8x7B
    assert got["commands"]["count"] == ("llmcalc count mixtral --set max_position_embeddings="
                                        "32768 --json")


def test_scratch_errors_are_one_line() -> None:
    knobs = {**api.catalog()["scratch"]["llama"], "positions": "learned"}
    with pytest.raises(UsageError, match=r"^no supported family has learned positions, a swiglu "
                       r"MLP and rmsnorm; supported: learned \+ gelu \+ layernorm \(gpt2\); "):
        api.calculate({"model": {"scratch": knobs}})
    gqa = {**api.catalog()["scratch"]["gpt2"], "kv_heads": 4}
    with pytest.raises(UsageError, match=r"^gpt2 has no grouped-query attention: KV heads \(4\) "
                       r"must equal heads \(12\)$"):
        api.calculate({"model": {"scratch": gqa}})


def test_pasted_json_and_yaml_go_through_the_file_loader() -> None:
    text = "model_type: gpt2\nn_embd: 768\nn_layer: 12\nn_head: 12\nvocab_size: 50257\n"
    got = api.calculate({"model": {"text": text, "format": "yaml"}})
    assert got["count"]["total_params"] == 124_439_808
    assert got["label"] == "pasted config"
    with pytest.raises(ConfigError) as e:
        api.calculate({"model": {"text": '{"model_type": "gpt2", "n_embd": 1, "n_embd": 2}'}})
    assert str(e.value) == "pasted config: duplicate key 'n_embd' in JSON (which value is meant?)"
    with pytest.raises(ConfigError) as e:
        api.calculate({"model": {"text": "a: !!python/object:os.system x", "format": "yaml"}})
    assert str(e.value).startswith("pasted config: invalid YAML at line 1")


def test_odd_names_get_the_loaders_messages() -> None:
    with pytest.raises(UsageError, match=r"^model 'a\\x00b': contains a NUL character$"):
        api.calculate({"model": {"name": "a\x00b"}})
    with pytest.raises(UsageError, match=r"characters; names and paths are read up to 1,024$"):
        api.calculate({"model": {"name": "a" * 5000}})
    with pytest.raises(UsageError, match=r"^name: expected text$"):
        api.calculate({"model": {"name": 5}})


def test_paths_on_the_server_are_refused(tmp_path: Any) -> None:
    (tmp_path / "config.json").write_text('{"model_type": "gpt2"}')
    for name in ("/etc/passwd", str(tmp_path), "../configs/gpt2.yaml", "~/x.json", "config.json"):
        with pytest.raises(UsageError, match="a path on the server; paste the config's text"):
            api.calculate({"model": {"name": name}})


def test_names_are_never_looked_up_in_the_working_folder(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "gpt2").mkdir()  # a folder named like a bundled config, one like a model type …
    (tmp_path / "gpt2" / "config.json").write_text('{"model_type": "gpt2", "n_layer": 1}')
    (tmp_path / "llama").write_text('{"model_type": "gpt2", "n_layer": 1}')
    (tmp_path / "mything").write_text('{"model_type": "gpt2", "n_layer": 1}')
    monkeypatch.chdir(tmp_path)
    assert api.calculate({"model": {"name": "gpt2"}})["count"]["total_params"] == 124_439_808
    assert api.calculate({"model": {"name": "llama"}})["label"] == "llama (transformers defaults)"
    with pytest.raises(LLMCalcError, match=r"^unknown model 'mything': not a file, folder or "):
        api.calculate({"model": {"name": "mything"}})


# ---- the server, as `llmcalc serve` starts it ----

pytest.importorskip("uvicorn")


@pytest.fixture(scope="module")
def served() -> Any:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "llmcalc", "serve", "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("llmcalc serving on http://127.0.0.1:"), line
    url = line.split()[3]
    deadline = time.monotonic() + 20
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    yield proc, url
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def post(url: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    req = urllib.request.Request(url + "api/calc", data=body, method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_api_answers_and_errors(served: Any) -> None:
    _, url = served
    status, data = post(url, json.dumps({"model": {"name": "gpt2"}}).encode())
    assert status == 200 and data["count"]["total_params"] == 124_439_808
    status, data = post(url, json.dumps({"model": {"name": "nope-7b"}}).encode())
    assert status == 400
    assert data["error"].startswith("unknown model 'nope-7b': not a file, folder or bundled")
    status, data = post(url, b"{not json")
    assert status == 400
    assert data["error"].startswith("request body: invalid JSON at line 1, column 2")
    # a body over the cap is refused from its Content-Length, before it is read
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    conn.putrequest("POST", "/api/calc")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(1024 * 1024 + 1))
    conn.endheaders()
    resp = conn.getresponse()
    assert (resp.status, json.loads(resp.read())) == (413, {"error": "request body over 1024 KiB"})
    conn.close()


def test_only_its_own_assets_are_served(served: Any) -> None:
    _, url = served
    page = urllib.request.urlopen(url, timeout=10)
    assert page.headers["Content-Security-Policy"].startswith("default-src 'self'")
    assert b"uplot-1.6.32.min.js" in page.read()
    assert urllib.request.urlopen(url + "static/app.js", timeout=10).status == 200
    for path in ("static/..%2F__init__.py", "static/../app.py", "static/%2E%2E/api.py",
                 "configs/gpt2.yaml", "static/index.html.bak"):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(url + path, timeout=10)
        assert e.value.code == 404, path


def test_other_host_headers_are_refused(served: Any) -> None:
    _, url = served
    req = urllib.request.Request(url, headers={"Host": "attacker.example"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=10)
    assert e.value.code == 400


def test_ctrl_c_stops_cleanly(served: Any) -> None:
    proc, _ = served
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0
    assert out == "stopped\n"
    assert "Traceback" not in err


def children(pid: int) -> set[int]:
    """The processes ``pid`` started (Linux: /proc), its workers among them."""
    out: set[int] = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            out |= {int(c) for c in f.read().split()}
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_stops_the_workers_and_exits_0(sig: int) -> None:
    """Stopped by SIGTERM (a service manager, `kill`) as by Ctrl-C: its worker processes are
    stopped, nothing is left for the resource tracker to warn about, and the exit code is 0."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "llmcalc", "serve", "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[3]
        status, data = post(url, json.dumps({"model": {"name": "gpt2"}}).encode())
        assert status == 200 and data["count"]["total_params"] == 124_439_808
        workers = children(proc.pid)
        assert len(workers) >= 2  # the resource tracker and at least one worker
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=20)
        assert (proc.returncode, out, err) == (0, "stopped\n", "")
        deadline = time.monotonic() + 10
        while (left := {w for w in workers if os.path.exists(f"/proc/{w}")
                        and "Z" not in open(f"/proc/{w}/stat").read().split(")")[-1][:3]}):
            assert time.monotonic() < deadline, f"workers still running: {left}"
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_without_the_extra_serve_names_it() -> None:
    code = ("import sys\nfor m in ('uvicorn', 'starlette'):\n    sys.modules[m] = None\n"
            "sys.argv = ['llmcalc', 'serve', '--no-browser']\n"
            "from llmcalc.cli import main\nmain()\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stderr == ("error: llmcalc serve needs the 'serve' extra: "
                          f"pip install -e '{REPO}[serve]'\n")
    assert run.stdout == ""


def test_a_busy_port_is_one_line() -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        run = subprocess.run([sys.executable, "-m", "llmcalc", "serve", "--no-browser", "--port",
                              str(port)], capture_output=True, text=True, timeout=30)
    assert run.returncode == 2
    assert run.stderr == (f"error: --port {port}: cannot listen on 127.0.0.1:{port} "
                          "(Address already in use)\n")


def test_core_commands_do_not_import_the_server_or_pillow() -> None:
    code = ("import sys\nsys.argv = ['llmcalc', 'count', 'gpt2']\nfrom llmcalc.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print([m for m in ('starlette', 'uvicorn', 'PIL', 'llmcalc.web') if m in sys.modules],"
            " file=sys.stderr)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.stderr.splitlines()[-1] == "[]"  # after the notes (stderr)


def test_the_checkpoints_own_format_is_the_default(cli: Any) -> None:
    """gpt-oss-120b stores MXFP4 (its quantization_config): the page's figures are the CLI's."""
    got = api.calculate({"model": {"name": "gpt-oss-120b"}, "gpu": "h100"})
    assert got["commands"]["memory"] == "llmcalc memory gpt-oss-120b --ctx 4k --batch 1 --json"
    memory = cli("memory", "gpt-oss-120b", "--json").json()
    assert got["memory"] == memory
    assert memory["dtype"] == "mxfp4" and memory["weights_bytes"] == 65_248_815_744
    at_ctx = cli("fit", "gpt-oss-120b", "--gpu", "h100", "--gpus", "1", "--ctx", "4k",
                 "--json").json()
    assert got["fit_at_ctx"] == at_ctx
    v = got["verdict"]
    assert v["fits"] is True and v["dtype"] == "mxfp4"
    assert v["needed_bytes"] == memory["total_bytes"] == 65_404_529_280
    assert v["usable_bytes"] == at_ctx["usable_bytes"] == 77_309_411_328
    assert v["max_batch"] == at_ctx["max_batch"] == 77
    assert v["max_ctx"] == got["fit"]["max_ctx"] == 131_072
    assert sum(v["parts"].values()) == v["memory_bytes"] == 80 * 2**30
    assert v["min_gpus"] == 1


@pytest.mark.parametrize("fmt", ["q4_k_m", "awq", "nf4", "mxfp4", "gptq-g64", "fp8"])
def test_quantized_formats_equal_the_cli(cli: Any, fmt: str) -> None:
    got = api.calculate({"model": {"name": "llama-2-7b"}, "dtype": fmt, "gpu": "rtx-4090"})
    want = cli("memory", "llama-2-7b", "--ctx", "4k", "--batch", "1", "--dtype", fmt,
               "--json").json()
    assert got["memory"] == want
    assert got["verdict"]["dtype"] == want["dtype"]


def test_verdict_counts_gpus_and_recurrent_state(cli: Any) -> None:
    got = api.calculate({"model": {"name": "llama-3.1-405b"}, "ctx": "128k", "batch": "2",
                         "gpu": "h100", "gpus": 2})
    v = got["verdict"]
    assert v["fits"] is False
    need = v["needed_bytes"]
    # the fewest H100s whose memory less 10% holds weights + cache; one fewer does not
    for n, fits in ((v["min_gpus"], True), (v["min_gpus"] - 1, False)):
        run = cli("fit", "llama-3.1-405b", "--gpu", "h100", "--gpus", str(n), "--ctx", "128k",
                  "--json").json()
        assert (run["max_batch"] is not None and run["max_batch"] >= 2) is fits, n
    assert v["min_gpus"] == 13 and need == 946_998_247_424
    mamba = api.calculate({"model": {"name": "jamba-v0.1"}, "batch": "3", "gpu": "h200"})
    m = mamba["memory"]
    assert mamba["verdict"]["parts"]["recurrent_state"] == 3 * m["state_bytes_per_sequence"] > 0
    assert mamba["verdict"]["needed_bytes"] == m["total_bytes"]


def test_custom_memory_and_gpu_counts() -> None:
    got = api.calculate({"model": {"name": "llama-2-7b"}, "gpu": None, "gpu_mem": "24GiB"})
    assert got["fit"]["accelerator"]["memory_bytes"] == 24 * 2**30
    assert got["commands"]["fit"] == ("llmcalc fit llama-2-7b --gpu-mem 24GiB --gpus 1 "
                                      "--batch 1 --json")
    with pytest.raises(UsageError, match=r"^--gpus 0: expected a whole number from 1"):
        api.calculate({"model": {"name": "gpt2"}, "gpus": 0})
    with pytest.raises(UsageError, match=r"^--gpu is required"):
        api.calculate({"model": {"name": "gpt2"}, "gpu": None})
    cards = {g["key"]: g for g in api.catalog()["gpus"]}
    assert cards["rtx-4090"]["kind"] == "consumer"
    assert cards["apple-m2-max"]["unified_bytes"] > cards["apple-m2-max"]["memory_bytes"]
    # every card of the table, those added for #38 among them
    assert len(cards) == 122
    assert (cards["v100-sxm2-32gb"]["kind"], cards["arc-b580"]["kind"]) == ("datacenter", "consumer")
    assert cards["apple-m1-pro-14c"]["unified_bytes"] == 32 * 2**30
    assert "q4_k_m" in api.catalog()["weight_formats"]


def test_charts_reach_the_chosen_context() -> None:
    got = api.calculate({"model": {"name": "llama-3.1-405b"}, "ctx": "100000", "ctx_max": "64k"})
    s = got["series"]
    assert s["ctx"][-3:] == [32768, 65536, 100000]
    assert s["chosen_ctx"] == 100_000 and 100_000 in s["ctx"]
    assert s["usable_bytes"] == got["fit"]["usable_bytes"]
    assert s["context_limit"] == 131_072


@pytest.mark.torch  # XLNet is measured on transformers' model
def test_cards_without_a_flop_rate_and_models_without_a_cache(flopless_5090: None) -> None:
    """Training time needs a FLOP rate the table lacks for some cards: no train panel, never a
    division by zero; a model that caches nothing leaves the batch unbounded by memory."""
    got = api.calculate({"model": {"name": "llama-2-7b"}, "gpu": "rtx-5090"})
    assert got["train"] is None and "train" not in got["commands"]
    assert got["verdict"]["accelerator"] == "NVIDIA GeForce RTX 5090"
    # an encoder caches nothing
    encoder = api.calculate({"model": {"text": json.dumps(
        {"model_type": "bert", "num_hidden_layers": 2, "hidden_size": 32, "num_attention_heads": 2,
         "intermediate_size": 64, "vocab_size": 128})}})
    v = encoder["verdict"]
    assert encoder["fit_at_ctx"] is None and "fit_at_ctx" not in encoder["commands"]
    assert v["fits"] is True and v["max_batch"] is None and v["batch_unbounded"] is True


def _panels_equal_the_cli(got: dict[str, Any], cli: Any) -> None:
    """Each panel of an answer equals `--json` of the command it names (commands with a space in
    an argument are not used here)."""
    for panel, command in got["commands"].items():
        if panel == "plot":
            continue
        run = cli(*command.split()[1:])
        assert run.code == 0, (command, run.stderr)
        assert run.json() == got[panel], panel


def test_speed_finetune_and_training_options_equal_the_cli(cli: Any) -> None:
    got = api.calculate({"model": {"name": "llama-3.1-8b"}, "ctx": "8k", "batch": "4",
                         "gpus": 2, "gen": "128", "zero": "1", "micro_batch": "2",
                         "recompute": "selective", "flash_attention": True, "method": "qlora",
                         "optimizer": "adamw-8bit", "lora_r": "8"})
    assert got["unavailable"] == {}
    assert got["commands"]["latency"] == ("llmcalc latency llama-3.1-8b --gpu h100 --tp 2 "
                                          "--batch 4 --ctx 8k --gen 128 --json --engine llama.cpp")
    assert got["commands"]["train"] == (
        "llmcalc train llama-3.1-8b --gpu h100 --gpus 2 --ctx 8k --zero 1 --micro-batch 2 "
        "--recompute selective --flash-attention --json")
    assert got["commands"]["finetune"] == (
        "llmcalc train llama-3.1-8b --gpu h100 --tp 2 --ctx 8k --micro-batch 2 --method qlora "
        "--optimizer adamw-8bit --lora-r 8 --json")
    assert got["commands"]["finetune_fit"] == (
        "llmcalc fit llama-3.1-8b --gpu h100 --gpus 2 --ctx 8k --method qlora --optimizer "
        "adamw-8bit --lora-r 8 --json")
    _panels_equal_the_cli(got, cli)
    # the users table: `latency --batch N` at 1, 2, 4 … up to the largest batch that fits
    users = got["latency_by_batch"]
    top = got["fit_at_ctx"]["max_batch"]
    assert [u["batch"] for u in users] == [1 << i for i in range(top.bit_length())] + [top]
    row = users[3]
    want = cli("latency", "llama-3.1-8b", "--gpu", "h100", "--tp", "2", "--batch", str(row["batch"]),
               "--ctx", "8k", "--gen", "128", "--json").json()
    assert row == {"batch": 8, **{k: want[k] for k in ("ttft_s", "tpot_s",
                                                       "tokens_per_s_per_request",
                                                       "tokens_per_s")}}
    # the verdict's decode speed is the latency panel's, at the chosen batch × context
    d = got["verdict"]["decode"]
    assert d == {"source": "latency", "batch": 4, "ctx": 8192 + 127 // 2,
                 "tokens_per_sec_per_sequence": got["latency"]["tokens_per_s_per_request"],
                 "tokens_per_sec": got["latency"]["tokens_per_s"],
                 "ttft_s": got["latency"]["ttft_s"]}


def test_a_card_without_a_flop_rate_gets_the_bandwidth_bound(cli: Any, flopless_5090: None) -> None:
    """An RTX 5090 without its FLOP rate (the fixture's stand-in row): the verdict's decode speed is the bandwidth
    bound at the chosen batch × context (fit's, which at the largest batch is `fit --ctx`'s);
    latency and training say what they need, and a FLOP/s figure brings them back."""
    first = api.calculate({"model": {"name": "llama-3.1-8b"}, "ctx": "8k", "gpu": "rtx-5090",
                          "method": "full"})
    need = ("--gpu-flops is required: the table has no published figure for NVIDIA GeForce "
            "RTX 5090 (rtx-5090)")
    assert first["unavailable"] == {"latency": need, "train": need}
    assert first["latency"] is None and first["finetune"] is None
    assert first["finetune_fit"] is not None  # fit --method needs memory only
    top = first["fit_at_ctx"]["max_batch"]
    got = api.calculate({"model": {"name": "llama-3.1-8b"}, "ctx": "8k", "gpu": "rtx-5090",
                         "batch": str(top)})
    d, want = got["verdict"]["decode"], got["fit_at_ctx"]["decode"]
    assert d["source"] == "bandwidth" and d["ttft_s"] is None
    assert (d["tokens_per_sec_per_sequence"], d["tokens_per_sec"]) == (
        want["tokens_per_sec_per_sequence"], want["tokens_per_sec"])
    with_flops = api.calculate({"model": {"name": "llama-3.1-8b"}, "ctx": "8k",
                                "gpu": "rtx-5090", "gpu_flops": "209.5T", "method": "full"})
    assert with_flops["unavailable"] == {}
    assert with_flops["commands"]["latency"] == (
        "llmcalc latency llama-3.1-8b --gpu rtx-5090 --gpu-flops 209.5T --tp 1 --batch 1 "
        "--ctx 8k --gen 256 --json --engine llama.cpp")
    _panels_equal_the_cli(with_flops, cli)
    _panels_equal_the_cli(first, cli)


@pytest.mark.parametrize("settings, panel, message", [
    ({"tp": 4, "gpus": 2}, "train", "--gpus 2: must be a multiple of --tp × --pp = 4 × 1 = 4"),
    ({"zero": "7"}, "train", "--zero 7: must be a ZeRO stage 0, 1, 2 or 3"),
    ({"recompute": "some"}, "train", "--recompute 'some': one of none, selective, full"),
    ({"flash_attention": "yes"}, "train", "--flash-attention 'yes': expected true or false"),
    ({"lora_r": "0"}, "finetune", "--lora-r '0': expected a whole number from 1 to 2^53 - 1"),
    ({"method": "dora"}, "finetune", "--method 'dora': one of full, lora, qlora"),
    ({"lora_targets": "nothing_here"}, "finetune",
     "--lora-targets nothing_here: no module of this model matches (names as in the "
     "transformers module tree, e.g. q_proj; or all-linear)"),
    ({"gen": "0"}, "latency", "--gen '0': must be a positive number"),  # as the CLI says
])
def test_a_panels_bad_setting_is_that_panels_error(settings: dict[str, Any], panel: str,
                                                   message: str) -> None:
    got = api.calculate({"model": {"name": "llama-3.2-1b"}, **settings})
    assert got["unavailable"] == {panel: message}
    assert got["count"]["total_params"] == 1_235_814_400  # the rest stands


def test_what_fits_equals_the_cli(cli: Any) -> None:
    got = api.what_fits({"gpu": "rtx-4090", "ctx": "8k"})
    assert got.pop("command") == "llmcalc fit --gpu rtx-4090 --gpus 1 --ctx 8k --all --json"
    want = cli("fit", "--gpu", "rtx-4090", "--gpus", "1", "--ctx", "8k", "--all", "--json")
    assert want.code == 0
    assert got == want.json()
    assert {m["model"] for m in got["models"] if m["format"] is None} >= {"llama-3.1-405b"}
    custom = api.what_fits({"gpu": None, "gpu_mem": "12GiB", "gpus": 2})
    assert custom["command"] == "llmcalc fit --gpu-mem 12GiB --gpus 2 --ctx 4k --all --json"
    assert custom["accelerator"]["memory_bytes"] == 12 * 2**30
    with pytest.raises(UsageError, match=r"^--ctx 'soon': expected a positive whole number"):
        api.what_fits({"gpu": "rtx-4090", "ctx": "soon"})


def test_apple_speed_panel_carries_the_expected_figure_of_the_cli(cli: Any) -> None:
    """On Apple silicon the speed panel is `latency --engine llama.cpp`: the expected figure (fitted
    on llama.cpp's Metal measurements) beside the bound, equal to the CLI's JSON."""
    got = api.calculate({"model": {"name": "llama-2-7b"}, "ctx": "1k", "batch": "1",
                         "gpu": "apple-m2-ultra", "gen": "128", "dtype": "q4_0"})
    assert got["commands"]["latency"] == (
        "llmcalc latency llama-2-7b --gpu apple-m2-ultra --tp 1 --batch 1 --ctx 1k --gen 128 "
        "--dtype q4_0 --json --engine llama.cpp")
    run = cli(*got["commands"]["latency"].split()[1:])
    assert run.code == 0 and run.json() == got["latency"]
    e = got["latency"]["expected"]
    assert (e["engine"], e["backend"]) == ("llama.cpp", "metal")
    assert e["decode_tokens_per_s"] <= got["latency"]["tokens_per_s"]


# an engine × backend with published measurements, each on a card it runs on
EXPECTED_CASES = [
    ({"gpu": "apple-m2-ultra", "dtype": "q4_0"}, "llama.cpp", None, "metal"),
    ({"gpu": "rtx-4090", "dtype": "q4_k_m"}, "llama.cpp", None, "cuda"),
    ({"gpu": "rtx-4090", "dtype": "q4_k_m"}, "llama.cpp", "vulkan", "vulkan"),
    ({"gpu": "rx-7900-xtx", "dtype": "q4_k_m"}, "llama.cpp", "rocm", "rocm"),
    ({"gpu": "strix-halo", "dtype": "q4_k_m"}, "llama.cpp", None, "rocm"),  # an AMD card's own
    ({"gpu": "h100", "gpus": 2, "dtype": "fp8"}, "trtllm", None, "cuda"),
    ({"gpu": "h100"}, "vllm", "cuda", "cuda"),
    ({"gpu": "h100"}, "sglang", None, "cuda"),  # vLLM's decode rows join: the CLI's last row
    ({"gpu": "mi300x", "dtype": "fp8"}, "sglang", "rocm", "rocm"),  # its own rows only
    ({"gpu": "mi300x", "dtype": "fp8"}, "vllm", "rocm", "rocm"),
    # a CPU as its FP32 FMA peak and memory (a Raspberry Pi 5's four cores): its int8 bound
    ({"gpu": None, "gpu_mem": "16GB", "gpu_flops": "153.6G", "gpu_bandwidth": "17.1G",
      "dtype": "q4_k_m"}, "llama.cpp", "cpu", "cpu"),
    # a card not in the table: the bound at its backend's ratios, the fit's "card assumed" row
    ({"gpu": None, "gpu_mem": "24GiB", "gpu_flops": "165.2T", "gpu_bandwidth": "1008G",
      "dtype": "q4_0"}, "llama.cpp", None, "cuda"),
    ({"gpu": None, "gpu_mem": "80GiB", "gpu_flops": "989T", "gpu_bandwidth": "3.35T",
      "dtype": "fp8"}, "trtllm", "cuda", "cuda"),
    # bitsandbytes' 4-bit weights, which transformers' 16-bit rows have not run: "these weights"
    ({"gpu": "a100-80gb", "dtype": "nf4"}, "transformers", None, "cuda"),
]


@pytest.mark.parametrize("settings, engine, backend, used", EXPECTED_CASES)
def test_the_expected_speed_of_every_engine_and_backend_is_the_clis(
        cli: Any, settings: dict[str, Any], engine: str, backend: str | None, used: str) -> None:
    """The speed panel's engine and backend are `latency --engine --backend`: the same JSON
    (bound and expected), and the expected table in the words and figures the CLI prints."""
    got = api.calculate({"model": {"name": "llama-3.1-8b"}, "ctx": "1k", "gen": "128",
                         "engine": engine, "backend": backend, **settings})
    # every panel but TensorRT-LLM's budget row beside a GGUF or bitsandbytes type, which it does
    # not run
    other = settings.get("dtype", "").startswith(("q", "nf4"))
    assert set(got["unavailable"]) == ({"engine_trtllm"} if other else set())
    words = got["commands"]["latency"].split()
    assert words[words.index("--engine"):] == ["--engine", engine, *(
        [] if backend is None else ["--backend", backend])]
    run = cli(*words[1:])
    assert run.code == 0 and run.json() == got["latency"]
    e = got["latency"]["expected"]
    assert (e["engine"], e["backend"]) == (engine, used)
    view = got["latency_expected"]
    assert view["title"] == (f"expected on {engine} ({used}): a step-time model fitted on "
                             "published measurements, beside the bound")
    lat = got["latency"]
    bound = {"prefill_tokens_per_s": lat["inputs"]["batch"] * lat["inputs"]["ctx"]
             / lat["prefill"]["seconds"],
             "decode_tokens_per_s": lat["inputs"]["batch"] / lat["decode_step"]["seconds"],
             "throughput_tokens_per_s": lat["throughput_per_gpu"]}
    for row in view["rows"]:
        assert row["expected"] == e[row["key"]] <= row["bound"] == bound[row["key"]]
    table = cli(*[w for w in words[1:] if w != "--json"])
    assert table.code == 0
    lent = [] if view["stand_in"] is None else [view["stand_in"]]
    assert bool(lent) == ("stand_in" in e["basis"])
    card = [] if view["assumed_card"] is None else [view["assumed_card"]]
    assert bool(card) == ("card" in e["basis"]) == (settings["gpu"] is None)
    far = [] if view["caution"] is None else [view["caution"]]
    assert bool(far) == ("caution" in e["basis"])
    weights = [] if view["weights"] is None else [view["weights"]]
    assert bool(weights) == ("weights" in e["basis"]) == (engine == "transformers")
    clock = [] if view["clock"] is None else [view["clock"]]
    assert bool(clock) == ("clock" in e["basis"])
    past = [] if view["beyond"] is None else [view["beyond"]]
    assert bool(past) == ("beyond" in e["basis"])
    assert expected_rows(table.stdout)[1] == [[r["label"], r["expected_text"], r["bound_text"], r["error"]]
                                       for r in view["rows"] + lent + card + far + weights + clock
                                       + past]
    assert [len(view["terms"][s]) for s in ("prefill", "decode")] == [
        len(e["basis"][s]["coefficients"]) for s in ("prefill", "decode")]
    assert view["throughput_rows"] == sum(r.test == "throughput" for r in rows_for(engine, used))


def test_an_engine_without_measurements_leaves_the_bound() -> None:
    """TensorRT-LLM on ROCm (no published measurement): the CLI refuses `latency --engine trtllm
    --backend rocm`; the page keeps the bound, its command without --engine, and says why beside
    the engine; "none" is the bound alone, as `latency` without --engine."""
    got = api.calculate({"model": {"name": "llama-3.1-8b"}, "gpu": "mi300x", "engine": "trtllm",
                         "backend": "rocm"})
    assert got["unavailable"] == {"expected": (
        "--engine trtllm: no published measurements of trtllm on the rocm backend were found, so "
        "there is no expected speed to give (without --engine: the bound)")}
    assert got["commands"]["latency"] == ("llmcalc latency llama-3.1-8b --gpu mi300x --tp 1 "
                                          "--batch 1 --ctx 4k --gen 256 --json")
    assert "expected" not in got["latency"] and got["latency_expected"] is None
    none = api.calculate({"model": {"name": "llama-3.1-8b"}, "gpu": "mi300x", "engine": "none"})
    assert none["unavailable"] == {} and none["latency_expected"] is None
    assert none["commands"]["latency"] == got["commands"]["latency"]
    assert none["latency"] == got["latency"]
    bad = api.calculate({"model": {"name": "llama-3.1-8b"}, "backend": "opencl"})
    assert bad["unavailable"] == {"expected": (
        "--backend 'opencl': not a backend llmcalc models (cuda, metal, rocm, vulkan, cpu)")}
    elsewhere = api.calculate({"model": {"name": "llama-3.1-8b"}, "backend": "rocm"})  # an H100
    assert elsewhere["unavailable"] == {"expected": (
        "--backend rocm: does not run on the NVIDIA H100 SXM (its backends: cuda, vulkan)")}
    assert elsewhere["latency"] == api.calculate({"model": {"name": "llama-3.1-8b"},
                                                  "engine": "none"})["latency"]
    assert api.catalog()["engines"] == ["llama.cpp", "vllm", "sglang", "trtllm", "transformers"]
    assert api.catalog()["backends"] == ["cuda", "metal", "rocm", "vulkan", "cpu"]


def test_no_expected_speed_on_an_engine_that_does_not_run_the_model() -> None:
    """The page's speed panel refuses as `latency --engine trtllm` does (TensorRT-LLM 1.0 has no
    DeepSeek sparse attention); the bound stands, its command without --engine."""
    got = api.calculate({"model": {"name": "deepseek-v3.2-exp"}, "ctx": "1k", "gen": "128",
                         "gpu": "h200", "gpus": 8, "dtype": "fp8", "engine": "trtllm"})
    line = ("--engine trtllm==1.0: deepseek-ai/DeepSeek-V3.2-Exp has DeepSeek sparse attention, "
            "which TensorRT-LLM 1.0 does not run (it came after 1.0: NVIDIA/TensorRT-LLM#9141); "
            "use --engine vllm or --engine sglang")
    assert got["unavailable"]["expected"] == line
    assert got["commands"]["latency"] == (
        "llmcalc latency deepseek-v3.2-exp --gpu h200 --tp 8 --batch 1 --ctx 1k --gen 128 "
        "--dtype fp8 --json")
    assert "expected" not in got["latency"] and got["latency"]["tokens_per_s"] > 0
