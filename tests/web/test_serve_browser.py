"""The page in a real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright).

Every number read off the page must equal the CLI's --json for the same model; screenshots at
1280×800 and 390×844 are written to ``build/screenshots/`` for a person to look at.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from helpers import REPO
from helpers.tables import expected_rows

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.slow  # a real Chromium

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run",
        "--disable-dev-shm-usage"]
SHOTS = REPO / "build" / "screenshots"

if not Path(CHROMIUM).exists():
    if os.environ.get("CI"):
        raise RuntimeError(f"{CHROMIUM} missing: .ci/run installs Debian's chromium")
    pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium)", allow_module_level=True)


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """``app`` served as `llmcalc serve` serves it, on a free port of 127.0.0.1."""
    from llmcalc.cli.serve import free_port
    from llmcalc.web.server import Server, config

    port = free_port("127.0.0.1")
    cfg = config(app)
    cfg.host, cfg.port = "127.0.0.1", port
    srv = Server(cfg)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        if time.monotonic() > deadline:
            raise RuntimeError("server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        srv.should_exit = True
        thread.join(10)
        app.close()


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    from llmcalc.web.app import create_app

    with serving(create_app()) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True)
    pg = context.new_page()
    pg.set_default_timeout(15000)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    context.close()
    assert errors == []


def settled(page: Any) -> None:
    """Wait until every edit has been sent and its answer drawn."""
    page.locator("body[data-idle='1']").wait_for(state="attached", timeout=20000)


def unfold(page: Any) -> None:
    """Open the model editor, which folds away once a model is loaded."""
    if page.get_attribute("#edit-model", "aria-expanded") == "false":
        page.click("#edit-model")


def edit(page: Any, selector: str, value: str) -> None:
    if page.locator(f"#editor {selector}").count():
        unfold(page)
    page.fill(selector, value)
    settled(page)


def number(text: str) -> int:
    return int(text.replace(",", ""))


def test_bundled_model_edited_equals_cli_json(server: str, page: Any, cli: Any) -> None:
    page.goto(server)
    settled(page)
    edit(page, "#name", "gpt2-medium")
    edit(page, "#knob-d_model", "1280")
    edit(page, "#knob-layers", "30")
    want = cli("count", "gpt2-medium", "--set", "n_embd=1280", "--set", "n_layer=30", "--json")
    assert want.code == 0
    data = want.json()
    assert number(page.inner_text("#total")) == data["total_params"]
    for key, value in data["breakdown"].items():
        cell = page.locator(f'td[data-model="0"][data-key="{key}"]')
        assert number(cell.inner_text()) == value, key
    flops = cli("flops", "gpt2-medium", "--ctx", "4k", "--set", "n_embd=1280", "--set",
                "n_layer=30", "--json").json()
    assert number(page.inner_text('.flops-token[data-model="0"]')) == flops[
        "forward_flops_per_token"]
    assert number(page.inner_text('.crossover[data-model="0"]')) == flops["attention_crossover_ctx"]
    memory = cli("memory", "gpt2-medium", "--ctx", "4k", "--set", "n_embd=1280", "--set",
                 "n_layer=30", "--json").json()
    assert number(page.inner_text('.memory-total[data-model="0"]')) == memory["total_bytes"]
    commands = page.locator("#panel-params code.cli").all_inner_texts()
    assert commands == ["llmcalc count gpt2-medium --set n_embd=1280 --set n_layer=30 --json"]


def scratch(page: Any, values: dict[str, str], selects: dict[str, str], tied: bool) -> None:
    unfold(page)
    page.check("input[name=mode][value=scratch]")
    settled(page)
    for key, value in selects.items():
        page.select_option(f"#s-{key}", value)
    for key, value in values.items():
        page.fill(f"#s-{key}", value)
    page.set_checked("#s-tied", tied)
    settled(page)


def test_from_scratch_gpt2_small_and_llama_2_7b(server: str, page: Any) -> None:
    page.goto(server)
    settled(page)
    scratch(page, {"d_model": "768", "layers": "12", "heads": "12", "kv_heads": "12",
                   "head_dim": "64", "d_ff": "3072", "vocab": "50257", "max_positions": "1024",
                   "experts": "1", "top_k": "1"},
            {"ffn": "gelu", "norm": "layernorm", "positions": "learned"}, tied=True)
    assert page.inner_text("#total") == "124,439,808"
    assert page.is_hidden("#error")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "scratch-gpt2.png"))
    for key, value in {"d_model": "4096", "layers": "32", "heads": "32", "kv_heads": "32",
                       "head_dim": "128", "d_ff": "11008", "vocab": "32000",
                       "max_positions": "4096"}.items():
        page.fill(f"#s-{key}", value)
    page.select_option("#s-ffn", "swiglu")
    page.select_option("#s-norm", "rmsnorm")
    page.select_option("#s-positions", "rotary")
    page.set_checked("#s-tied", False)
    settled(page)
    assert page.inner_text("#total") == "6,738,415,616"
    cmd = page.locator("#panel-params code.cli").inner_text()
    assert cmd == "llmcalc count llama --set max_position_embeddings=4096 --json"


def test_shared_url_reproduces_the_view(server: str, page: Any, browser: Any) -> None:
    page.goto(server)
    settled(page)
    edit(page, "#name", "llama-3.2-1b")
    edit(page, "#ctx", "32k")
    page.click("#add-model")
    settled(page)
    unfold(page)
    page.fill("#name", "qwen2.5-0.5b")
    settled(page)
    url = page.url
    totals = page.locator("#params-table tr.total td.n").all_inner_texts()
    flops = page.locator(".flops-token").all_inner_texts()
    assert len(totals) == 2
    other = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    other.goto(url)
    settled(other)
    assert other.locator("#params-table tr.total td.n").all_inner_texts() == totals
    assert other.locator(".flops-token").all_inner_texts() == flops
    assert other.input_value("#ctx") == "32k"
    assert other.locator("[role=tab]").count() == 2
    other.context.close()


def test_bad_pasted_config_shows_the_one_line_error(server: str, page: Any, cli: Any,
                                                      write: Any) -> None:
    page.goto(server)
    settled(page)
    unfold(page)
    page.check("input[name=mode][value=text]")
    settled(page)
    bad = ('{"model_type": "llama", "hidden_size": 770, "num_hidden_layers": 2, '
           '"num_attention_heads": 12, "intermediate_size": 100, "vocab_size": 10}')
    page.fill("#text", bad)
    settled(page)
    shown = page.inner_text("#error")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "bad-config.png"))
    assert page.locator("#total").count() == 0  # nothing left over from the model before
    assert page.locator(".export code.cli").count() == 0
    run = cli("count", write("config.json", bad))
    assert run.code == 2
    detail = run.stderr.strip().split(": ", 2)[2]  # error: <path>: <detail>
    assert shown == f"error: pasted config: {detail}"
    assert shown == ("error: pasted config: num_attention_heads (12) must divide hidden_size "
                     "(770) when head_dim is not given")


def test_screenshots(server: str, browser: Any) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, height, name in ((1280, 800, "desktop"), (390, 844, "phone")):
        context = browser.new_context(viewport={"width": width, "height": height},
                                      device_scale_factor=1)
        pg = context.new_page()
        pg.goto(server + "#" + VIEW)
        settled(pg)
        pg.screenshot(path=str(SHOTS / f"{name}-{width}x{height}.png"))
        pg.screenshot(path=str(SHOTS / f"{name}-full.png"), full_page=True)
        assert pg.evaluate("document.documentElement.scrollWidth") <= width
        pg.goto(server + "?view=fits&gpu=rtx-4090&match=llama")  # what fits this machine
        settled(pg)
        pg.screenshot(path=str(SHOTS / f"fits-{name}-{width}x{height}.png"))
        assert pg.evaluate("document.documentElement.scrollWidth") <= width
        context.close()
    assert (SHOTS / "desktop-1280x800.png").stat().st_size > 10_000


VIEW = ("%7B%22models%22%3A%5B%7B%22name%22%3A%22llama-2-7b%22%2C%22set%22%3A%5B%5D%7D%2C%7B%22"
        "name%22%3A%22mistral-7b%22%2C%22set%22%3A%5B%5D%7D%5D%2C%22active%22%3A0%2C%22settings"
        "%22%3A%7B%22ctx%22%3A%224k%22%2C%22batch%22%3A%228%22%2C%22dtype%22%3A%22bf16%22%2C%22"
        "kv_dtype%22%3A%22bf16%22%2C%22gpu%22%3A%22h100%22%2C%22gpus%22%3A1%2C%22tokens%22%3A%22"
        "2T%22%2C%22ctx_max%22%3A%22128k%22%7D%7D")


def test_exports_are_the_cli_json_exactly(server: str, page: Any, cli: Any) -> None:
    page.goto(server)
    settled(page)
    edit(page, "#name", "llama-3.1-405b")
    edit(page, "#tokens", "15T")

    def download(panel: str, kind: str) -> str:
        with page.expect_download() as got:
            page.locator(f"#panel-{panel} .export a", has_text=kind).click()
        assert got.value.suggested_filename == f"llmcalc-{panel}.{kind.lower()}"
        return Path(got.value.path()).read_text(encoding="utf-8")

    train = json.loads(download("train", "JSON"))
    want = cli("train", "llama-3.1-405b", "--gpu", "h100", "--gpus", "1", "--ctx", "4k",
               "--tokens", "15T", "--json").json()
    assert train == [want]  # integers past 2^53 (training FLOPs) survive the page exactly
    assert want["training_flops"] > 2**53
    rows = download("params", "CSV").splitlines()
    assert rows[0] == "model,key,params"
    assert rows[-1] == "meta-llama/Llama-3.1-405B,total,405853388800"


def test_a_dropped_yaml_file_becomes_the_model(server: str, page: Any) -> None:
    page.goto(server)
    settled(page)
    text = ("name: my-model\nmodel_type: llama\nhidden_size: 2048\nnum_hidden_layers: 16\n"
            "num_attention_heads: 32\nnum_key_value_heads: 8\nintermediate_size: 8192\n"
            "vocab_size: 128256\ntie_word_embeddings: true\n")
    dropped = page.evaluate_handle(
        "t => { const d = new DataTransfer(); d.items.add(new File([t], 'config.yaml')); "
        "return d; }", text)
    page.dispatch_event("body", "drop", {"dataTransfer": dropped})
    # the page reads the file asynchronously: wait until it is in the editor, then for its answer
    page.wait_for_function("t => document.querySelector('#text').value === t", arg=text,
                           timeout=20000)
    settled(page)
    assert page.input_value("#format") == "yaml"
    assert page.input_value("#text") == text
    assert page.inner_text("#total") == "1,235,814,400"  # Llama-3.2-1B's shape
    assert page.locator(".tab.active").inner_text().startswith("my-model")


def test_with_a_token_the_page_sends_it(page: Any) -> None:
    """A server bound beyond loopback prints its URL with ?token=…; the page passes it on (and
    without it, says what is missing)."""
    from llmcalc.web.app import create_app

    with serving(create_app(allowed_hosts=None, token="t0k3n-for-the-test")) as url:
        page.goto(url + "?token=t0k3n-for-the-test")
        settled(page)
        assert page.inner_text("#total") == "8,030,261,248"  # the default model, Llama-3.1-8B
        edit(page, "#name", "gpt2-medium")
        assert page.inner_text("#total") == "354,823,168"
        assert "?token=t0k3n-for-the-test&model=gpt2-medium" in page.url
        page.goto(url)
        page.locator("#error").wait_for(state="visible", timeout=20000)
        assert page.inner_text("#error") == (
            "error: this server needs its token: open the URL it printed (…/?token=…), or send "
            "Authorization: Bearer <token>")


AXE = Path(__file__).resolve().parents[1] / "data" / "axe-core" / "axe.min.js"


def test_the_verdict_is_on_the_first_screen_in_the_checkpoints_format(
        server: str, browser: Any, cli: Any) -> None:
    """gpt-oss-120b on an H100: MXFP4 (its quantization_config) as `llmcalc memory` reads it, and
    the verdict card whole inside the first viewport on a laptop and on a phone."""
    memory = cli("memory", "gpt-oss-120b", "--json").json()
    at_ctx = cli("fit", "gpt-oss-120b", "--gpu", "h100", "--ctx", "4k", "--json").json()
    at_batch = cli("fit", "gpt-oss-120b", "--gpu", "h100", "--json").json()
    speed = cli("latency", "gpt-oss-120b", "--gpu", "h100", "--tp", "1", "--batch", "1", "--ctx",
                "4k", "--gen", "256", "--json").json()
    SHOTS.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    for width, height in ((1280, 800), (390, 844)):
        context = browser.new_context(viewport={"width": width, "height": height})
        pg = context.new_page()
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(server + "?model=gpt-oss-120b&gpu=h100")
        settled(pg)
        box = pg.locator("#verdict-card").bounding_box()
        assert box is not None and box["y"] + box["height"] <= height, (width, box)
        assert pg.inner_text("#verdict-head") == "Fits: openai/gpt-oss-120b on NVIDIA H100 SXM"
        assert "in mxfp4 (the checkpoint's own)" in pg.inner_text(".verdict-line")
        assert int(pg.get_attribute("#needed", "data-value")) == memory["total_bytes"]
        assert int(pg.get_attribute("#usable", "data-value")) == at_ctx["usable_bytes"]
        weights = pg.get_attribute('.part[data-part="weights"]', "data-value")
        assert int(weights) == memory["weights_bytes"] == at_ctx["weight_bytes"]
        assert pg.inner_text("#max-batch") == f"{at_ctx['max_batch']:,}" == "77"
        assert pg.inner_text("#max-ctx") == f"{at_batch['max_ctx']:,} (the model's limit)"
        assert pg.inner_text("#min-gpus") == "1"
        # the decode speed at the chosen batch × context (not at the largest context), as
        # `llmcalc latency` bounds it, and the time to first token
        assert float(pg.get_attribute("#decode", "data-value")) == speed[
            "tokens_per_s_per_request"]
        assert float(pg.get_attribute("#ttft", "data-value")) == speed["ttft_s"]
        assert pg.inner_text("#decode") == f"≤ {speed['tokens_per_s_per_request']:,.1f} tokens/s a sequence"
        pg.screenshot(path=str(SHOTS / f"verdict-{width}x{height}.png"))
        context.close()
    assert errors == []


def test_readable_links_compare_models_in_rows(server: str, page: Any, cli: Any) -> None:
    page.goto(server + "?model=llama-2-7b&model=mistral-7b&ctx=8k&batch=2&dtype=q4_k_m"
               "&kv_dtype=fp8&gpu=rtx-4090&gpus=2")
    settled(page)
    assert page.input_value("#ctx") == "8k" and page.input_value("#gpu") == "rtx-4090"
    rows = page.locator("#compare-table tbody tr")
    assert rows.count() == 2
    for i, name in enumerate(("llama-2-7b", "mistral-7b")):
        want = cli("memory", name, "--ctx", "8k", "--batch", "2", "--dtype", "q4_k_m",
                   "--kv-dtype", "fp8", "--json").json()
        total = rows.nth(i).locator("td[data-value]")
        assert int(total.get_attribute("data-value")) == want["total_bytes"]
    assert page.is_hidden("#link-problems")
    # "+ compare" copies the model shown and moves focus to its tab; Delete removes it again
    page.click("#add-model")
    settled(page)
    assert page.evaluate("document.activeElement.id") == "tab-2"
    assert page.input_value("#name") == "mistral-7b" or page.input_value("#name") == "llama-2-7b"
    page.keyboard.press("ArrowLeft")
    assert page.evaluate("document.activeElement.id") == "tab-1"
    assert page.get_attribute("#tab-1", "aria-selected") == "true"
    page.keyboard.press("Delete")
    settled(page)
    assert page.locator("#compare-table tbody tr").count() == 2
    assert page.evaluate("document.activeElement.getAttribute('role')") == "tab"


@pytest.mark.parametrize("link, problem", [
    ('#{"models":[{"scratch":null}]}',
     'model 1: expected {"name": …}, {"text": …} or {"scratch": {…}}, got {"scratch":null}'),
    ("#not json", "the part after # is not JSON"),
    ("?model=gpt2&gpu=no-such-card", 'GPU: "no-such-card" is not one of the choices'),
    ("?model=gpt2&zero=9&view=list", 'view: "list" is not one of model, fits; ZeRO stage: "9" '
     "is not one of the choices"),
])
def test_a_bad_link_says_what_it_could_not_read(server: str, page: Any, link: str,
                                                problem: str) -> None:
    page.goto(server + link)
    settled(page)
    assert problem in page.inner_text("#link-problems")
    # the rest of the page is there: the link's model (else the default) with its figures
    head, total = (("openai-community/gpt2", "124,439,808") if "model=gpt2" in link
                   else ("meta-llama/Llama-3.1-8B", "8,030,261,248"))
    assert page.inner_text("#verdict-head").startswith(f"Fits: {head} on")
    assert page.inner_text("#total") == total


def test_nvfp4_in_the_format_list_and_the_fp4_note_on_the_page(server: str, page: Any,
                                                                 cli: Any) -> None:
    """The format dropdown lists what --dtype takes, nvfp4 included, and weighs it as `memory`
    does; bitsandbytes fp4 on an MoE shows the CLI's note on the fused experts left bf16."""
    memory = cli("memory", "qwen3.6-35b-a3b", "--dtype", "nvfp4", "--json").json()
    page.goto(server + "?model=qwen3.6-35b-a3b&dtype=nvfp4&gpu=h100")
    settled(page)
    options = page.eval_on_selector_all("#dtype option", "os => os.map(o => o.value)")
    assert "nvfp4" in options and options.index("nvfp4") == options.index("fp8-fp4") + 1
    assert page.input_value("#dtype") == "nvfp4"
    weights = page.get_attribute('.part[data-part="weights"]', "data-value")
    assert int(weights) == memory["weights_bytes"] == 21_884_023_952
    page.select_option("#dtype", "fp4")
    settled(page)
    note = cli("memory", "qwen3.6-35b-a3b", "--dtype", "fp4", "--json").json()["notes"][0]
    assert f"note: {note}" in page.locator("#notes li").all_inner_texts()


def test_notes_and_errors_sit_where_they_apply(server: str, page: Any) -> None:
    page.goto(server + "?model=gpt2")
    settled(page)
    # GPT-2 at 4k is four times its limit: the note is on the first screen
    assert page.locator("#notes li").first.inner_text() == (
        "note: context 4,096 is above the model's max_position_embeddings (1,024); the figures "
        "assume it runs there anyway")
    edit(page, "#gpus", "0")  # refused, never taken as 1
    assert page.inner_text("#err-gpus") == "GPUs 0: expected a whole number from 1 to 2^53 - 1"
    assert page.get_attribute("#gpus", "aria-invalid") == "true"
    assert page.is_hidden("#error")  # not in the model editor
    edit(page, "#gpus", "2")
    assert page.inner_text("#err-gpus") == "" and page.get_attribute("#gpus", "aria-invalid") is None
    edit(page, "#ctx", "5q")
    assert page.inner_text("#err-ctx").startswith("context '5q': expected a positive whole number")
    edit(page, "#ctx", "4k")
    # with two tabs, an error in one never shows the other's total as its headline
    page.click("#add-model")
    settled(page)
    edit(page, "#name", "no-such-model")
    assert page.locator("#total").count() == 0
    assert page.inner_text("#verdict-card").startswith("No answer for no-such-model: unknown model")
    assert page.get_attribute("#name", "aria-invalid") == "true"


def test_inputs_keep_their_state(server: str, page: Any, cli: Any) -> None:
    page.goto(server)
    settled(page)
    edit(page, "#name", "llama-2-7b")
    # switching input mode and back keeps the model
    unfold(page)
    page.check("input[name=mode][value=scratch]")
    settled(page)
    page.check("input[name=mode][value=name]")
    settled(page)
    assert page.input_value("#name") == "llama-2-7b"
    assert page.inner_text("#total") == "6,738,415,616"
    # clearing the layers knob goes back to the model's own value
    edit(page, "#knob-layers", "20")
    assert page.input_value("#sets") == "num_hidden_layers=20"
    edit(page, "#knob-layers", "")
    assert page.input_value("#sets") == ""
    assert page.inner_text("#total") == "6,738,415,616"
    # From scratch: head_dim follows d_model / heads unless it is set
    unfold(page)
    page.check("input[name=mode][value=scratch]")
    settled(page)
    assert page.input_value("#s-head_dim") == ""
    page.fill("#s-d_model", "2048")
    page.fill("#s-heads", "16")
    page.fill("#s-kv_heads", "16")
    settled(page)
    want = cli("count", "llama", "--set", "hidden_size=2048", "--set", "num_attention_heads=16",
               "--set", "num_key_value_heads=16", "--json").json()
    assert want["head_dim"] == 128
    assert page.inner_text("#total") == f"{want['total_params']:,}"


def test_typing_sends_one_request_when_it_pauses(server: str, page: Any) -> None:
    page.goto(server)
    settled(page)
    unfold(page)
    page.fill("#name", "")
    settled(page)
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if r.url.endswith("/api/calc") else None)
    # ten key events back to back (no delay: a loaded CI machine must not stretch a gap past the
    # 400 ms pause); without the debounce each would send its own request
    page.locator("#name").press_sequentially("llama-2-7b")
    settled(page)
    assert len(sent) == 1, sent
    assert page.inner_text("#total") == "6,738,415,616"
    assert page.is_hidden("#error")


def test_axe_finds_no_serious_violation(server: str, browser: Any) -> None:
    # the page's own CSP forbids inline scripts: this context alone lets the test add axe
    context = browser.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True)
    page = context.new_page()
    page.goto(server + "?model=llama-2-7b&model=mistral-7b&gpu=rtx-5090&gpu_flops=209.5T")
    settled(page)
    page.click("#panel-memory summary")
    page.click("#panel-speed summary")
    page.click("#edit-model")  # the editor open too, and panels that say what they need
    page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
    found = page.evaluate("axe.run(document).then(r => r.violations.filter("
                          "v => v.impact === 'serious' || v.impact === 'critical')"
                          ".map(v => v.id + ': ' + v.nodes.map(n => n.target.join(' ')).join(', ')))")
    context.close()
    assert found == []


def cells(page: Any, table: str, model: int = 0) -> dict[str, str]:
    """A figure table's cells of one model: data-key → data-value (or the text)."""
    out = {}
    for cell in page.locator(f'#{table} td[data-model="{model}"]').all():
        inner = cell.locator("[data-value]")
        out[cell.get_attribute("data-key")] = (inner.first.get_attribute("data-value")
                                               if inner.count() else cell.inner_text())
    return out


def test_speed_finetuning_and_training_panels_equal_the_cli_json(server: str, page: Any,
                                                                 cli: Any) -> None:
    """The speed panel is `latency --json`, fine-tuning `train|fit --method --json`, training
    `train --json` with its ZeRO/TP/PP/recompute/FlashAttention options — read from a link, then
    changed on the page."""
    page.goto(server + "?model=llama-3.1-8b&ctx=8k&batch=4&gpus=2&gen=128&zero=1"
               "&micro_batch=2&recompute=selective&flash_attention=true&method=qlora"
               "&optimizer=adamw-8bit&lora_r=8")
    settled(page)
    assert page.is_hidden("#link-problems")
    speed = cli("latency", "llama-3.1-8b", "--gpu", "h100", "--tp", "2", "--batch", "4", "--ctx",
                "8k", "--gen", "128", "--json").json()
    got = cells(page, "speed-table")
    for key in ("ttft_s", "tpot_s", "e2e_s", "whole_s", "tokens_per_s_per_request", "tokens_per_s",
                "tokens_per_s_per_gpu", "throughput_per_gpu"):
        assert float(got[key]) == speed[key], key
    assert got["decode_bound"] == speed["decode_step"]["bound"]
    page.click("#panel-speed summary")  # users served together: `latency --batch 16`
    sixteen = cli("latency", "llama-3.1-8b", "--gpu", "h100", "--tp", "2", "--batch", "16",
                  "--ctx", "8k", "--gen", "128", "--json").json()
    row = page.locator('#users-table tr[data-model="0"][data-batch="16"]')
    for key in ("ttft_s", "tokens_per_s_per_request", "tokens_per_s"):
        value = row.locator(f'td[data-key="{key}"] [data-value]').get_attribute("data-value")
        assert float(value) == sixteen[key], key
    # the verdict's decode speed is the same figure, at the chosen batch × context
    assert float(page.get_attribute("#decode", "data-value")) == speed["tokens_per_s_per_request"]
    qlora = ["--gpu", "h100", "--tp", "2", "--ctx", "8k", "--micro-batch", "2", "--method",
             "qlora", "--optimizer", "adamw-8bit", "--lora-r", "8", "--json"]
    plan = cli("train", "llama-3.1-8b", *qlora).json()
    got = cells(page, "finetune-table")
    assert int(got["memory_per_gpu_bytes"]) == plan["memory_per_gpu_bytes"]
    assert int(got["trainable"]) == plan["trainable"]
    for key, value in plan["memory_per_gpu"].items():
        assert int(got["memory/" + key]) == value, key
    largest = cli("fit", "llama-3.1-8b", "--gpu", "h100", "--gpus", "2", "--ctx", "8k",
                  "--method", "qlora", "--optimizer", "adamw-8bit", "--lora-r", "8",
                  "--json").json()
    assert int(got["max_micro_batch"]) == largest["micro_batch"]
    train = ["--gpu", "h100", "--gpus", "2", "--ctx", "8k", "--zero", "1", "--micro-batch", "2",
             "--recompute", "selective", "--flash-attention", "--json"]
    want = cli("train", "llama-3.1-8b", *train).json()
    got = cells(page, "train-table")
    assert int(got["memory_per_gpu_bytes"]) == want["memory_per_gpu_bytes"]
    assert float(got["gpu_hours"]) == want["gpu_hours"]
    commands = page.locator("#panel-train code.cli").all_inner_texts()
    assert commands == ["llmcalc train llama-3.1-8b " + " ".join(train)]
    assert page.locator("#panel-finetune code.cli").all_inner_texts() == [
        "llmcalc train llama-3.1-8b " + " ".join(qlora),
        "llmcalc fit llama-3.1-8b --gpu h100 --gpus 2 --ctx 8k --method qlora --optimizer "
        "adamw-8bit --lora-r 8 --json"]
    # changed on the page: ZeRO 3 and LoRA with AdamW
    page.select_option("#zero", "3")
    page.select_option("#method", "lora")
    page.select_option("#optimizer", "adamw")
    settled(page)
    want = cli("train", "llama-3.1-8b", *[w if w != "1" else "3" for w in train]).json()
    assert int(cells(page, "train-table")["memory_per_gpu_bytes"]) == want["memory_per_gpu_bytes"]
    lora = cli("train", "llama-3.1-8b", "--gpu", "h100", "--tp", "2", "--ctx", "8k",
               "--micro-batch", "2", "--method", "lora", "--lora-r", "8", "--json").json()
    got = cells(page, "finetune-table")
    assert int(got["memory_per_gpu_bytes"]) == lora["memory_per_gpu_bytes"]
    assert int(got["memory/frozen_base"]) == lora["memory_per_gpu"]["frozen_base"]
    assert "zero=3" in page.url and "method=lora" not in page.url  # lora is the default
    # a panel's own bad setting sits beside its field; the other panels stand
    edit(page, "#tp", "4")
    assert page.inner_text("#train-note") == (
        "not worked out: GPUs 2: must be a multiple of tensor parallel × pipeline parallel = "
        "4 × 1 = 4")
    assert page.locator("#speed-table td").count() > 0
    edit(page, "#gen", "0")
    assert page.inner_text("#err-gen") == "tokens generated '0': must be a positive number"
    assert page.get_attribute("#gen", "aria-invalid") == "true"


def test_a_card_without_a_flop_rate(server: str, page: Any, cli: Any) -> None:
    """A custom card given by memory and bandwidth (every card in the table has a FLOP rate): the
    verdict's decode speed is the bandwidth bound at the chosen batch × context; speed and
    training say what they need, and a FLOP/s per GPU brings them."""
    card = ("--gpu-mem", "32GB", "--gpu-bandwidth", "1.792TB/s")
    at_ctx = cli("fit", "llama-3.1-8b", *card, "--ctx", "8k", "--json").json()
    top = at_ctx["max_batch"]
    page.goto(server + "?model=llama-3.1-8b&gpu=&gpu_mem=32GB&gpu_bandwidth=1.792TB%2Fs&ctx=8k"
              f"&batch={top}")
    settled(page)
    assert float(page.get_attribute("#decode", "data-value")) == at_ctx["decode"][
        "tokens_per_sec_per_sequence"]
    assert page.get_attribute("#decode", "data-source") == "bandwidth"
    assert page.locator("#ttft").count() == 0
    need = "not worked out: FLOP/s per GPU is required without GPU (or pick one with GPU h100)"
    assert page.inner_text("#speed-note") == need and page.inner_text("#train-note") == need
    edit(page, "#gpu_flops", "209.5T")
    speed = cli("latency", "llama-3.1-8b", *card[2:], "--gpu-flops", "209.5T", "--tp", "1",
                "--batch", str(top), "--ctx", "8k", "--gen", "256", "--json", "--engine",
                "llama.cpp").json()  # the panel's engine: its bf16 peak is the figure given
    assert float(cells(page, "speed-table")["ttft_s"]) == speed["ttft_s"]
    assert page.inner_text("#speed-note") == ""


def test_the_editor_folds_away_once_a_model_loads(server: str, page: Any) -> None:
    page.goto(server + "?model=llama-2-7b")
    settled(page)
    assert page.is_hidden("#editor")
    assert page.get_attribute("#edit-model", "aria-expanded") == "false"
    page.click("#edit-model")
    assert page.is_visible("#name") and page.input_value("#name") == "llama-2-7b"
    assert page.get_attribute("#edit-model", "aria-expanded") == "true"
    edit(page, "#name", "mistral-7b")  # typing: it stays open
    assert page.is_visible("#editor")
    edit(page, "#ctx", "8k")  # the new model loaded and the person moved on: it folds
    assert page.is_hidden("#editor")
    page.goto(server + "?model=no-such-model")  # an error opens it, beside the name
    settled(page)
    assert page.is_visible("#editor") and page.is_visible("#error")
    assert page.get_attribute("#name", "aria-invalid") == "true"


def test_what_fits_this_machine_equals_the_cli_json(server: str, browser: Any,
                                                    cli: Any) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server + "?view=fits&gpu=rtx-4090")
    settled(page)
    want = cli("fit", "--gpu", "rtx-4090", "--gpus", "1", "--ctx", "4k", "--json").json()
    rows = page.locator("#fits-table tbody tr")
    assert rows.all_inner_texts() and rows.count() == len(want["models"])
    assert [r.get_attribute("data-model") for r in rows.all()] == [
        m["model"] for m in want["models"]]
    shown = page.evaluate("[...document.querySelectorAll('#fits-table tbody tr')].map(tr => "
                          "Object.fromEntries([...tr.querySelectorAll('td')].map(td => "
                          "[td.dataset.key, td.dataset.value ?? td.innerText])))")
    for row, m in zip(shown, want["models"], strict=True):
        assert int(row["params"]) == m["params"]
        assert row["format"] == m["format"]
        assert int(row["weights_bytes"]) == m["weights_bytes"]
        assert int(row["largest_ctx"]) == m["largest_ctx"]
        assert float(row["decode_tokens_per_sec"]) == m["decode_tokens_per_sec"]
    assert page.inner_text("#fits-command") == "llmcalc fit --gpu rtx-4090 --gpus 1 --ctx 4k --json"
    # sorted by a column and filtered, as --sort and --match do it
    page.click('button.sort[data-sort="ctx"]')
    page.fill("#fits-match", "llama")
    want = cli("fit", "--gpu", "rtx-4090", "--gpus", "1", "--ctx", "4k", "--sort", "ctx",
               "--match", "*llama*", "--json").json()
    assert [r.get_attribute("data-model") for r in rows.all()] == [
        m["model"] for m in want["models"]]
    assert page.get_attribute('th:has(button[data-sort="ctx"])', "aria-sort") == "descending"
    assert page.inner_text("#fits-command") == (
        "llmcalc fit --gpu rtx-4090 --gpus 1 --ctx 4k --sort ctx --match '*llama*' --json")
    page.check("#fits-all")
    every = cli("fit", "--gpu", "rtx-4090", "--gpus", "1", "--ctx", "4k", "--sort", "ctx",
                "--match", "*llama*", "--all", "--json").json()
    assert rows.count() == len(every["models"]) > len(want["models"])
    assert "sort=ctx" in page.url and "match=llama" in page.url and "all=1" in page.url
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "fits-1280x800.png"))
    page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
    found = page.evaluate("axe.run(document).then(r => r.violations.filter("
                          "v => v.impact === 'serious' || v.impact === 'critical')"
                          ".map(v => v.id + ': ' + v.nodes.map(n => n.target.join(' ')).join(', ')))")
    assert found == []
    # a row opens as the one model shown, in the format the list chose
    page.click('button.open[data-model="llama-2-13b"]')
    settled(page)
    assert page.is_visible("#verdict-card") and page.is_hidden("#fits")
    assert page.inner_text("#verdict-head").startswith("Fits: meta-llama/Llama-2-13b-hf on")
    assert page.input_value("#dtype") == "q8_0"
    context.close()
    assert errors == []


# ---- rough edges: each checked at a laptop's and a phone's size ----

SIZES = ((1280, 800), (390, 844))


@contextmanager
def sized(browser: Any, width: int, height: int) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": width, "height": height})
    pg = context.new_page()
    pg.set_default_timeout(15000)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    try:
        yield pg
    finally:
        context.close()
    assert errors == []


def test_the_default_page_agrees_with_itself(server: str, browser: Any, cli: Any) -> None:
    """A bare page shows a model its defaults agree with: a 4k context within its limit, and
    every panel (LoRA included) worked out — no note, no error before anyone touched it."""
    lora = cli("train", "llama-3.1-8b", "--gpu", "h100", "--tp", "1", "--ctx", "4k",
               "--micro-batch", "1", "--method", "lora", "--lora-r", "16", "--json").json()
    speed = cli("latency", "llama-3.1-8b", "--gpu", "h100", "--tp", "1", "--batch", "1", "--ctx",
                "4k", "--gen", "256", "--json").json()
    for width, height in SIZES:
        with sized(browser, width, height) as pg:
            pg.goto(server)
            settled(pg)
            assert pg.inner_text("#verdict-head") == "Fits: meta-llama/Llama-3.1-8B on NVIDIA H100 SXM"
            assert pg.input_value("#ctx") == "4k"
            assert pg.locator("#notes").count() == 0
            assert "max_position_embeddings" not in pg.inner_text("body")
            assert pg.evaluate("[...document.querySelectorAll('.field-error')]"
                               ".map(e => e.textContent).join('')") == ""
            assert pg.locator("[aria-invalid=true]").count() == 0
            assert pg.is_hidden("#error") and pg.is_hidden("#link-problems")
            for panel in ("speed", "train", "finetune"):
                assert pg.inner_text(f"#{panel}-note") == "", panel
            assert int(cells(pg, "finetune-table")["trainable"]) == lora["trainable"]
            assert float(pg.get_attribute("#decode", "data-value")) == speed[
                "tokens_per_s_per_request"]
            pg.screenshot(path=str(SHOTS / f"default-{width}x{height}.png"))


def test_a_setup_that_does_not_fit_shows_no_speed(server: str, browser: Any, cli: Any) -> None:
    """Llama-2-70B in bf16 on one H100 does not fit: no tokens/s and no first-token time in the
    verdict or the speed panel, which says why; on two it fits and both come back."""
    memory = cli("memory", "llama-2-70b", "--ctx", "4k", "--json").json()
    for width, height in SIZES:
        with sized(browser, width, height) as pg:
            pg.goto(server + "?model=llama-2-70b")
            settled(pg)
            assert pg.inner_text("#verdict-head") == (
                "Does not fit: meta-llama/Llama-2-70b-hf on NVIDIA H100 SXM")
            assert int(pg.get_attribute("#needed", "data-value")) == memory["total_bytes"]
            assert pg.locator("#decode").count() == 0 and pg.locator("#ttft").count() == 0
            assert "tokens/s" not in pg.inner_text("#verdict-card")
            assert "first token" not in pg.inner_text("#verdict-card")
            assert pg.inner_text("#speed-note") == (
                "not worked out: does not fit NVIDIA H100 SXM at batch 1 × context 4,096 "
                "(129.73 GiB needed, 72.00 GiB usable): no speed for a setup that does not run")
            assert pg.locator("#speed-table td").count() == 0
            assert pg.locator("#users-table tr").count() == 0
            assert pg.locator("#panel-speed code.cli").count() == 0
            pg.screenshot(path=str(SHOTS / f"nofit-{width}x{height}.png"))
    with sized(browser, 1280, 800) as pg:  # a card without a FLOP rate: no bandwidth bound either
        pg.goto(server + "?model=llama-2-70b&gpu=&gpu_mem=32GB&gpu_bandwidth=1.792TB%2Fs")
        settled(pg)
        assert pg.inner_text("#verdict-head").startswith("Does not fit:")
        assert pg.locator("#decode").count() == 0
        pg.goto(server + "?model=llama-2-70b&gpus=2")
        settled(pg)
        speed = cli("latency", "llama-2-70b", "--gpu", "h100", "--tp", "2", "--batch", "1",
                    "--ctx", "4k", "--gen", "256", "--json").json()
        assert pg.inner_text("#verdict-head").startswith("Fits:")
        assert float(pg.get_attribute("#decode", "data-value")) == speed["tokens_per_s_per_request"]
        assert float(pg.get_attribute("#ttft", "data-value")) == speed["ttft_s"]
        assert pg.inner_text("#speed-note") == ""


# the width a select needs to show one option's text whole (a bare select holding only it)
CUT = """() => [...document.querySelectorAll('select')].filter(s => s.offsetParent !== null)
  .flatMap(s => [...s.options].filter(o => o.selected || innerWidth > 800).map(o => {
    const c = document.createElement('select'); c.add(new Option(o.text));
    document.body.append(c); const need = c.getBoundingClientRect().width; c.remove();
    return need > s.getBoundingClientRect().width + 0.5 ? s.id + ': ' + o.text : null;
  })).filter(Boolean)"""


def test_dropdowns_show_whole_names(server: str, browser: Any) -> None:
    """Every dropdown is as wide as the names it offers (at 1280 px every option, on a phone the
    chosen one): "NVIDIA H100 SXM (80 GiB)" and "the checkpoint's own" whole."""
    for width, height in SIZES:
        with sized(browser, width, height) as pg:
            pg.goto(server)
            settled(pg)
            pg.click("#edit-model")
            assert pg.evaluate(CUT) == []
            assert pg.evaluate("document.documentElement.scrollWidth") <= width
            texts = pg.evaluate("['gpu', 'dtype'].map(k => $(k).selectedOptions[0].text)")
            assert texts == ["NVIDIA H100 SXM (80 GiB)", "the checkpoint's own"]
            pg.check("input[name=mode][value=scratch]")  # the editor's own dropdowns
            settled(pg)
            assert pg.evaluate(CUT) == []
            pg.screenshot(path=str(SHOTS / f"dropdowns-{width}x{height}.png"))


def test_a_custom_card_takes_its_bandwidth(server: str, page: Any, cli: Any) -> None:
    """A card not in the table: memory, FLOP/s and memory bandwidth per GPU, each as the CLI's
    --gpu-mem, --gpu-flops and --gpu-bandwidth take them."""
    fit = cli("fit", "llama-3.1-8b", "--gpu-mem", "24GiB", "--gpu-bandwidth", "1TB/s", "--ctx",
              "4k", "--json").json()
    top = fit["max_batch"]
    page.goto(server + f"?gpu=&gpu_mem=24GiB&gpu_bandwidth=1TB/s&batch={top}")
    settled(page)
    assert page.input_value("#gpu") == "" and page.input_value("#gpu_bandwidth") == "1TB/s"
    assert page.get_attribute("#decode", "data-source") == "bandwidth"
    assert float(page.get_attribute("#decode", "data-value")) == fit["decode"][
        "tokens_per_sec_per_sequence"]
    assert (f"llmcalc fit llama-3.1-8b --gpu-mem 24GiB --gpus 1 --gpu-bandwidth 1TB/s --batch "
            f"{top} --json") in page.locator("#panel-memory code.cli").all_inner_texts()
    edit(page, "#gpu_flops", "100T")  # with a FLOP rate too: the roofline, at this bandwidth
    speed = cli("latency", "llama-3.1-8b", "--gpu-flops", "100T", "--gpu-bandwidth", "1TB/s",
                "--tp", "1", "--batch", str(top), "--ctx", "4k", "--gen", "256", "--json",
                "--engine", "llama.cpp").json()  # the command the panel shows (below)
    got = cells(page, "speed-table")
    for key in ("ttft_s", "tpot_s", "tokens_per_s_per_request"):
        assert float(got[key]) == speed[key], key
    assert page.locator("#panel-speed code.cli").all_inner_texts() == [
        f"llmcalc latency llama-3.1-8b --gpu-flops 100T --gpu-bandwidth 1TB/s --tp 1 --batch "
        f"{top} --ctx 4k --gen 256 --json --engine llama.cpp"]
    edit(page, "#gpu_bandwidth", "fast")
    assert page.inner_text("#err-gpu_bandwidth") == (
        "memory bandwidth per GPU fast: expected a bandwidth such as 3.35TB/s or 900GB/s")
    assert page.get_attribute("#gpu_bandwidth", "aria-invalid") == "true"
    # what fits this machine reads it too, as `fit --gpu-bandwidth` does
    page.goto(server + "?view=fits&gpu=rtx-4090&gpu_bandwidth=500GB/s")
    settled(page)
    assert page.is_visible("#gpu_bandwidth")
    assert page.inner_text("#fits-command") == (
        "llmcalc fit --gpu rtx-4090 --gpu-bandwidth 500GB/s --gpus 1 --ctx 4k --json")
    want = cli("fit", "--gpu", "rtx-4090", "--gpu-bandwidth", "500GB/s", "--json").json()
    first = want["models"][0]
    cell = page.locator(f'#fits-table tr[data-model="{first["model"]}"] '
                        'td[data-key="decode_tokens_per_sec"]')
    assert float(cell.get_attribute("data-value")) == first["decode_tokens_per_sec"]


FOUR = "?model=llama-2-7b&model=mistral-7b&model=qwen2.5-0.5b&model=llama-3.1-70b"
CLIPPED = """() => [...document.querySelectorAll('main .scroll')].filter(s => s.offsetParent !== null
  && s.scrollWidth > s.clientWidth + 1).map(s => s.getAttribute('aria-label'))"""


def test_compare_fits_1280_and_a_phone_shows_the_verdict(server: str, browser: Any) -> None:
    """Four models at 1280 px: every column of every panel's table shows whole (no sideways
    scroll); on a phone the comparison's verdict is on the first screen."""
    with sized(browser, 1280, 800) as pg:
        pg.goto(server + FOUR)
        settled(pg)
        for box in pg.locator("main details").all():
            box.locator("summary").click()
        assert pg.evaluate(CLIPPED) == []
        for table in ("params-table", "finetune-table", "train-table"):
            heads = pg.locator(f"#{table} thead th").all()
            last = heads[-1].bounding_box()
            panel = pg.locator(f"#{table}").evaluate("t => t.closest('.panel')"
                                                     ".getBoundingClientRect().right")
            assert last is not None and last["x"] + last["width"] <= panel, table
        verdicts = pg.locator("#compare-table td.verdict").all_inner_texts()
        assert verdicts == ["fits", "fits", "fits", "does not fit"]
        pg.screenshot(path=str(SHOTS / "compare-four-1280x800.png"), full_page=True)
    with sized(browser, 390, 844) as pg:
        pg.goto(server + "?model=llama-2-7b&model=mistral-7b")
        settled(pg)
        for i in range(2):
            box = pg.locator(f'#compare-table tr[data-model="{i}"] td.verdict').bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
            assert box["y"] + box["height"] <= 844, box
        assert pg.locator("#compare-table td.verdict").all_inner_texts() == ["fits", "fits"]
        assert pg.evaluate("document.documentElement.scrollWidth") <= 390
        pg.screenshot(path=str(SHOTS / "compare-390x844.png"))


def overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return (a["l"] < b["l"] + b["w"] and b["l"] < a["l"] + a["w"]
            and a["t"] < b["t"] + b["h"] and b["t"] < a["t"] + a["h"])


def test_chart_labels_never_overlap_at_long_contexts(server: str, browser: Any) -> None:
    """Two models at a 1M context, charts up to 16M: each marker's label is drawn once, inside
    the plot, over no other label."""
    for width, height in SIZES:
        with sized(browser, width, height) as pg:
            pg.goto(server + "?model=llama-3.1-8b&model=mistral-7b&ctx=1M&ctx_max=16M")
            settled(pg)
            for chart, want in (("memory-chart", {"fits up to 128k", "fits up to 32k",
                                                  "model's limit 128k", "model's limit 32k",
                                                  "chosen 1M"}),
                                ("flops-chart", {"attention > weights at 28,629"})):
                labels = json.loads(pg.get_attribute(f"#{chart}", "data-labels"))
                plot = json.loads(pg.get_attribute(f"#{chart}", "data-plot"))
                assert {b["label"] for b in labels} == want and len(labels) == len(want), chart
                for i, a in enumerate(labels):
                    assert plot["l"] <= a["l"] and a["l"] + a["w"] <= plot["l"] + plot["w"] + 0.5
                    assert plot["t"] <= a["t"] and a["t"] + a["h"] <= plot["t"] + plot["h"]
                    for b in labels[i + 1:]:
                        assert not overlaps(a, b), (chart, a, b)
            pg.locator("#memory-chart").screenshot(path=str(SHOTS / f"chart-{width}.png"))


def test_times_past_a_second_are_in_seconds_and_bytes_in_a_unit_that_fits(
        server: str, page: Any, cli: Any, write: Any) -> None:
    speed = cli("latency", "llama-3.1-8b", "--gpu", "h100", "--tp", "1", "--batch", "1", "--ctx",
                "4k", "--gen", "256", "--json").json()
    page.goto(server)
    settled(page)
    cell = page.locator('#speed-table td[data-key="e2e_s"]')
    assert speed["e2e_s"] > 1 > speed["ttft_s"]
    # 1.25 s since the bound reads the embedding table by the rows looked up (1.33 s: the whole)
    assert cell.inner_text() == f"{speed['e2e_s']:,.2f} s" == "1.25 s"
    ttft = page.locator('#speed-table td[data-key="ttft_s"]')
    # 62.26 ms since the prefill runs the LM head for the last prompt token only (66.61 ms for all
    # 4,096: 4,095 × 2 × 128,256 × 4,096 FLOPs more, 4.35 ms at the H100's 989.4 TFLOP/s)
    assert ttft.inner_text() == f"{speed['ttft_s'] * 1e3:,.2f} ms" == "62.26 ms"
    # the page's two formats, held to Python's rounding (an exact tie goes to even)
    times = [0.0666, 0.999996, 3.57962, 4000.0]
    assert page.evaluate(f"{times}.map(secs)") == ["66.60 ms", "1.00 s", "3.58 s", "4,000.00 s"]
    sizes = [0, 512, 1023, 1024, 230_528, 80 * 2**30, 5 * 2**38, 2**50]
    want_sizes = ["0 B", "512 B", "1,023 B", "1.00 KiB", "225.12 KiB", "80.00 GiB", "1.25 TiB",
                  "1,024.00 TiB"]
    assert page.evaluate(f"{sizes}.map(size)") == want_sizes
    assert f"{230_528 / 1024:,.2f}" == "225.12"  # as Python's format rounds the same tie
    # a 115k-parameter model: its weights in KiB, the card's memory in GiB
    text = ("model_type: llama\nhidden_size: 64\nnum_hidden_layers: 2\nnum_attention_heads: 4\n"
            "num_key_value_heads: 4\nintermediate_size: 128\nvocab_size: 256\n"
            "max_position_embeddings: 4096\n")
    page.goto(server + "#" + quote(json.dumps({"models": [{"text": text, "format": "yaml"}]})))
    settled(page)
    want = cli("memory", write("tiny.yaml", text), "--ctx", "4k", "--json").json()
    assert cli("count", write("tiny.yaml", text), "--json").json()["total_params"] == 115_008
    weights = page.locator('.part[data-part="weights"]')
    assert int(weights.get_attribute("data-value")) == want["weights_bytes"]
    assert weights.inner_text() == f"{want['weights_bytes'] / 1024:,.2f} KiB" == "224.62 KiB"
    assert page.inner_text('.part[data-part="headroom"]') == "8.00 GiB"
    assert page.inner_text('.part[data-part="kv_cache"]') == (
        f"{want['kv_cache_bytes'] / 2**20:,.2f} MiB")


def test_lora_targets_left_blank_fit_a_model_without_q_k_v_o(server: str, page: Any,
                                                             cli: Any) -> None:
    """GPT-2 has c_attn, not q/k/v/o projections: the untouched LoRA field adapts every linear
    layer and says so (the command line names it), never an error; targets typed in are checked."""
    page.goto(server + "?model=gpt2")
    settled(page)
    assert page.inner_text("#err-lora_targets") == ""
    assert page.inner_text("#finetune-note") == (
        "note: LoRA targets: q_proj,k_proj,v_proj,o_proj (the default) match no module of this "
        "model, so every linear layer but lm_head is adapted (LoRA targets all-linear)")
    words = ["--gpu", "h100", "--tp", "1", "--ctx", "4k", "--micro-batch", "1", "--method", "lora",
             "--lora-r", "16", "--lora-targets", "all-linear", "--json"]
    want = cli("train", "gpt2", *words).json()
    assert int(cells(page, "finetune-table")["trainable"]) == want["trainable"] == 2_359_296
    assert page.locator("#panel-finetune code.cli").first.inner_text() == (
        "llmcalc train gpt2 " + " ".join(words))
    edit(page, "#lora_targets", "q_proj")
    assert page.inner_text("#err-lora_targets") == (
        "LoRA targets q_proj: no module of this model matches (names as in the transformers "
        "module tree, e.g. q_proj; or all-linear)")
    assert page.get_attribute("#lora_targets", "aria-invalid") == "true"


def _expected(page: Any) -> dict[str, list[str]]:
    """The first model's expected table: each row's label, expected, bound and error as shown."""
    out = {}
    rows = page.locator('#expected-table tr[data-model="0"]')
    for j in range(rows.count()):
        row = rows.nth(j)
        out[row.get_attribute("data-key")] = [
            row.locator("th").inner_text(),
            *(row.locator(f'td[data-key="{k}"]').inner_text() for k in ("expected", "bound", "error"))]
    return out


def _values(page: Any, column: str) -> dict[str, float]:
    rows = page.locator('#expected-table tr[data-model="0"]')
    return {rows.nth(j).get_attribute("data-key"): float(rows.nth(j).locator(
        f'td[data-key="{column}"] [data-value]').get_attribute("data-value"))
        for j in range(rows.count())}


def _printed(cli: Any, words: list[str]) -> tuple[str, list[list[str]]]:
    """The CLI's expected table at the tests' fixed width: its title and rows."""
    text = cli(*[w for w in words if w != "--json"]).stdout
    return expected_rows(text)


def test_speed_panel_shows_the_expected_figure_beside_the_bound(server: str, page: Any,
                                                              cli: Any) -> None:
    """The speed panel's engine and backend are `latency --engine E --backend B`: the expected
    table below the bound says what the CLI prints (title, rows, error) with its figures, the fit's
    basis beside it; the choice travels in the link; another engine's rows lent to the fit are
    named in its last row; an engine without measurements on the backend keeps the bound and says
    why beside the engine; "none" is the bound alone."""
    page.goto(server + "?model=llama-2-7b&gpu=apple-m2-ultra&ctx=1k&batch=1&gen=128&dtype=q4_0")
    settled(page)
    assert (page.input_value("#engine"), page.input_value("#backend")) == ("llama.cpp", "")
    words = ["latency", "llama-2-7b", "--gpu", "apple-m2-ultra", "--tp", "1", "--batch", "1",
             "--ctx", "1k", "--gen", "128", "--dtype", "q4_0", "--json", "--engine", "llama.cpp"]
    assert page.locator("#panel-speed code.cli").all_inner_texts() == [
        "llmcalc " + " ".join(words)]
    want = cli(*words).json()
    title, rows = _printed(cli, words)
    assert page.inner_text("#expected-table caption") == title == (
        "expected on llama.cpp (metal): a step-time model fitted on published measurements, "
        "beside the bound")
    got = _expected(page)
    assert list(got.values()) == rows
    assert list(got) == ["prefill_tokens_per_s", "decode_tokens_per_s", "throughput_tokens_per_s"]
    assert rows[1][3].startswith("±") and rows[1][3].endswith("rows)")  # the decode LOO error
    for key, value in _values(page, "expected").items():
        assert value == want["expected"][key], key
    bound = _values(page, "bound")
    assert bound["decode_tokens_per_s"] == 1 / want["decode_step"]["seconds"]
    assert bound["throughput_tokens_per_s"] == want["throughput_per_gpu"]
    page.click("#expected-basis-box summary")
    for stage in ("prefill", "decode"):
        li = page.locator(f'#expected-basis li[data-model="0"][data-stage="{stage}"]')
        assert [float(v) for v in li.locator("[data-value]").evaluate_all(
            "els => els.map(e => e.dataset.value)")] == want["expected"]["basis"][stage][
            "coefficients"]
        assert want["expected"]["basis"][stage]["model"] in li.inner_text()
        assert (f'fitted on {want["expected"]["basis"][stage]["rows"]} {stage} rows and 0 '
                "whole-request rows") in li.inner_text()  # llama.cpp's Metal rows: llama-bench
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#panel-speed").screenshot(path=str(SHOTS / "speed-expected-metal.png"))
    # TensorRT-LLM on two H100s at FP8, chosen on the page: in the link, and the CLI's figures
    page.select_option("#gpu", "h100")
    page.select_option("#dtype", "fp8")
    edit(page, "#gpus", "2")
    page.select_option("#engine", "trtllm")
    settled(page)
    assert "engine=trtllm" in page.url
    words = ["latency", "llama-2-7b", "--gpu", "h100", "--tp", "2", "--batch", "1", "--ctx", "1k",
             "--gen", "128", "--dtype", "fp8", "--json", "--engine", "trtllm"]
    assert page.locator("#panel-speed code.cli").all_inner_texts() == [
        "llmcalc " + " ".join(words)]
    want = cli(*words).json()
    assert _values(page, "expected") == {k: want["expected"][k] for k in (
        "prefill_tokens_per_s", "decode_tokens_per_s", "throughput_tokens_per_s")}
    assert list(_expected(page).values()) == _printed(cli, words)[1]
    # llama.cpp on Vulkan: the backend named, and a shared link brings the same panel back
    page.select_option("#dtype", "q4_k_m")
    edit(page, "#gpus", "1")
    page.select_option("#engine", "llama.cpp")
    page.select_option("#backend", "vulkan")
    settled(page)
    assert "backend=vulkan" in page.url and "engine=" not in page.url  # llama.cpp: the default
    words = ["latency", "llama-2-7b", "--gpu", "h100", "--tp", "1", "--batch", "1", "--ctx", "1k",
             "--gen", "128", "--dtype", "q4_k_m", "--json", "--engine", "llama.cpp", "--backend",
             "vulkan"]
    assert page.locator("#panel-speed code.cli").all_inner_texts() == [
        "llmcalc " + " ".join(words)]
    title, rows = _printed(cli, words)
    assert title.startswith("expected on llama.cpp (vulkan)")
    assert list(_expected(page).values()) == rows
    shown = _expected(page)
    page.goto(page.url)
    settled(page)
    assert (page.input_value("#engine"), page.input_value("#backend")) == ("llama.cpp", "vulkan")
    assert _expected(page) == shown
    # vLLM: TensorRT-LLM's first-token rows join its prefill fit, said in the table's last row as
    # the CLI says it (SGLang, fitted on its own 64 rows, borrows none)
    page.select_option("#backend", "")
    page.select_option("#engine", "vllm")
    settled(page)
    words = ["latency", "llama-2-7b", "--gpu", "h100", "--tp", "1", "--batch", "1", "--ctx", "1k",
             "--gen", "128", "--dtype", "q4_k_m", "--json", "--engine", "vllm"]
    title, rows = _printed(cli, words)
    assert list(_expected(page).values()) == rows and rows[-1][0].startswith("fitted with ")
    assert page.locator('#expected-table tr[data-key="stand_in"]').count() == 1
    # vLLM on Vulkan: no published measurements; the bound stands, the reason sits beside the
    # engine
    page.select_option("#backend", "vulkan")
    settled(page)
    assert page.inner_text("#err-engine") == (
        "engine vllm: no published measurements of vllm on the vulkan backend were found, so "
        "there is no expected speed to give (without engine: the bound)")
    assert page.inner_text("#speed-note") == ""
    assert page.locator("#speed-table td").count() > 0
    assert page.locator("#expected-table tr").count() == 0
    assert page.locator("#panel-speed code.cli").all_inner_texts() == [
        "llmcalc latency llama-2-7b --gpu h100 --tp 1 --batch 1 --ctx 1k --gen 128 --dtype q4_k_m "
        "--json"]
    # ROCm on an H100: not a backend the card runs, said beside the backend (as the CLI refuses)
    page.select_option("#backend", "rocm")
    settled(page)
    assert (page.inner_text("#err-backend"), page.inner_text("#err-engine")) == (
        "backend rocm: does not run on the NVIDIA H100 SXM (its backends: cuda, vulkan)", "")
    assert page.locator("#expected-table tr").count() == 0
    # TensorRT-LLM takes no GGUF type: the CLI's refusal, said beside the weights' format
    page.select_option("#backend", "")
    page.select_option("#engine", "trtllm")
    settled(page)
    assert page.inner_text("#err-engine") == ""
    assert page.locator("#expected-table tr").count() == 0
    assert cli(*words[:words.index("--engine")], "--engine", "trtllm").stderr == (
        "error: --dtype q4_k_m: not a TensorRT-LLM quantization (its QuantAlgo: FP8, INT8, INT4 "
        "AWQ/GPTQ, NVFP4, MXFP4)\n")
    assert "not a TensorRT-LLM quantization" in page.inner_text("#panel-speed")
    page.select_option("#backend", "")
    page.select_option("#engine", "none")
    settled(page)
    assert "engine=none" in page.url and page.inner_text("#err-engine") == ""
    assert page.locator("#expected-table tr").count() == 0
    assert page.locator("#speed-table td").count() > 0
    page.screenshot(path=str(SHOTS / "speed-none.png"))


def _last_expected_row(page: Any, cli: Any, query: str, key: str) -> tuple[list[str], list[str]]:
    """The page at ``query``: its speed command's words and the expected table's last row, which
    is the CLI's, with the page's row of data-key ``key``."""
    page.goto(query)
    settled(page)
    words = page.locator("#panel-speed code.cli").all_inner_texts()[0].split()[1:]
    title, rows = _printed(cli, words)
    assert list(_expected(page).values()) == rows
    assert page.locator(f'#expected-table tr[data-key="{key}"]').count() == 1
    return words, rows[-1]


def test_a_card_not_in_the_table_shows_what_the_fit_took_it_for(server: str, page: Any,
                                                                cli: Any) -> None:
    """An RTX 4090 given by its figures alone: the expected table is the CLI's, with the card the
    fit assumed (GeForce-like), then, last, the boost clock it read the decode's per-layer cost
    at (speed.clock_note), the bound at CUDA's ratios as `latency --engine` prints."""
    words, last = _last_expected_row(
        page, cli, server + "?model=llama-2-7b&gpu=&gpu_mem=24GiB&gpu_flops=165.2T"
        "&gpu_bandwidth=1008G&ctx=512&batch=1&gen=1&dtype=q4_0", "clock")
    assert words[words.index("--gpu-flops"):words.index("--gpu-flops") + 4] == [
        "--gpu-flops", "165.2T", "--gpu-bandwidth", "1008G"] and "--engine" in words
    card = page.locator('#expected-table tr[data-key="assumed_card"]')
    assert card.locator("th").inner_text() == "card assumed"
    assert card.locator("td.why").inner_text().startswith(
        "a card not in the table: the fit assumes it GeForce-like")
    assert last == ["clock assumed", "", "", "a card given by its figures alone has no boost "
                    "clock: a decode step's per-layer cost (c_clk, counted in GPU cycles) is read "
                    "at 2,000 MHz"]


def test_a_batch_past_the_fitted_rows_says_so_on_the_page(server: str, page: Any,
                                                          cli: Any) -> None:
    """vLLM on CUDA at batch 128 (its fitted rows reach batch 64): the expected table's last row
    is the CLI's "past the rows" (speed.beyond_rows)."""
    words, last = _last_expected_row(
        page, cli, server + "?model=llama-3.1-8b&gpu=h100&ctx=1k&batch=128&gen=128&dtype=bf16"
        "&engine=vllm&backend=cuda", "beyond")
    assert words[words.index("--batch") + 1] == "128" and last[0] == "past the rows"
    assert last[3].startswith("batch 128 is past the largest batch of the prefill and decode rows "
                              "fitted")


def test_bitsandbytes_weights_under_transformers_say_so_on_the_page(server: str, page: Any,
                                                                     cli: Any) -> None:
    """transformers with NF4 weights: the expected table's last row is the CLI's "these weights",
    its fitted rows being 16-bit (speed.weights_caution)."""
    words, last = _last_expected_row(
        page, cli, server + "?model=llama-2-7b&gpu=a100-80gb&ctx=512&batch=1&gen=128"
        "&dtype=nf4&engine=transformers", "weights")
    assert words[words.index("--engine") + 1] == "transformers" and last[0] == "these weights"
    assert last[3].startswith("transformers' fitted rows are 16-bit, these weights bitsandbytes' "
                              "4-bit (load_in_4bit)")


def test_a_card_whose_rows_the_fit_misses_says_so_on_the_page(server: str, page: Any,
                                                              cli: Any) -> None:
    """An Arc A770 on llama.cpp Vulkan: the expected table's last row is the CLI's "this card's
    rows", the card's own measured rows far from the fit (speed.card_caution)."""
    words, last = _last_expected_row(
        page, cli, server + "?model=llama-2-7b&gpu=arc-a770-16gb&ctx=512&batch=1&gen=128"
        "&dtype=q4_0&backend=vulkan", "caution")
    assert words[words.index("--backend") + 1] == "vulkan" and last[0] == "this card's rows"
    assert last[3].startswith("this card's own measured rows sit far from the fit")
