"""A corpus of malformed and hostile inputs, written by the tests (and the benchmark) into a folder.

Each case is a command line run through the ``llmcalc`` entry point in a child process with a
memory cap; :func:`check_promises` holds the result to what docs/limits-and-safety.md
promises: the expected exit code, exactly one line on stderr for an error, no traceback, no raw
control character in anything printed, valid JSON for ``--json``.
"""

from __future__ import annotations

import json
import os
import re
import resource
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

MEMORY_CAP = 3 * 1024**3  # address space of a child that does not import torch
VERIFY_MEMORY_CAP = 12 * 1024**3  # torch and transformers map large regions at import
TIMEOUT = 120  # generous: a hang, not a slow run, is what this catches (benchmarks time it)

# raw control characters (newline allowed between lines), DEL, C1, bidi controls
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

SMALL_LLAMA = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "vocab_size": 100,
}
ESC_NAME = "\x1b]0;pwned\x07\x1b[2J\x9b31m\u202e"
OSC8 = "\x1b]8;;file:///etc/passwd\x1b\\click\x1b]8;;\x1b\\"


@dataclass(frozen=True)
class Case:
    """One command line (``{dir}`` stands for the corpus folder) and the exit code it must give."""

    name: str
    args: tuple[str, ...]
    code: int = 2
    stderr: str | None = None  # a fragment the error line must contain
    verify: bool = False  # imports torch: a larger memory cap


@dataclass
class Result:
    case: Case
    code: int
    stdout: str
    stderr: str
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0  # wall time of the child
    peak_bytes: int = 0  # its peak resident memory (the forked runner's own pages included)


def _json_file(folder: Path, name: str, data: object) -> str:
    (folder / name).write_text(json.dumps(data))
    return name


def _alias_bomb(field_name: str) -> str:
    lines = ["a0: &a0 ['xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', 'yyyyyyyyyyyyyyyyyyyyyyyyy']"]
    for i in range(1, 24):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    base = "\n".join(f"{k}: {json.dumps(v)}" for k, v in SMALL_LLAMA.items() if k != field_name)
    if field_name == "expected":
        return "\n".join([*lines, base, f"{field_name}: {{total_params: *a23}}"]) + "\n"
    return "\n".join([*lines, base, f"{field_name}: *a23"]) + "\n"


def _safetensors(path: Path, header: dict[str, object] | bytes, *, length: int | None = None) -> None:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw) if length is None else length) + raw + b"\0" * 8)


def _checkpoint(folder: Path, name: str, files: dict[str, object], *, links: dict[str, str] = {}) -> str:  # noqa: B006
    ck = folder / name
    ck.mkdir()
    (ck / "config.json").write_text(json.dumps(SMALL_LLAMA))
    for file, content in files.items():
        if isinstance(content, bytes):
            (ck / file).write_bytes(content)
        elif file.endswith(".safetensors"):
            _safetensors(ck / file, content)  # type: ignore[arg-type]
        else:
            (ck / file).write_text(json.dumps(content))
    for file, target in links.items():
        os.symlink(target, ck / file)
    return name


def write_corpus(folder: Path) -> list[Case]:
    """Write every hostile file into ``folder`` and return the command lines that use them."""
    f = folder
    files: dict[str, tuple[str, int, str | None]] = {}  # file → (text or None, code, fragment)

    def text(name: str, content: str, code: int = 2, fragment: str | None = None) -> None:
        (f / name).write_text(content, encoding="utf-8")
        files[name] = (content, code, fragment)

    def raw(name: str, content: bytes, code: int = 2, fragment: str | None = None) -> None:
        (f / name).write_bytes(content)
        files[name] = ("", code, fragment)

    # -- parsing: nesting, digits, size, encoding --
    text("deep.json", '{"a":' * 100_000 + "1" + "}" * 100_000, fragment="nests more than 64 levels")
    text("deep.yaml", "a: " + "[" * 10_000 + "]" * 10_000 + "\n", fragment="nest")
    text("bigint.json", '{"model_type": "llama", "x": ' + "9" * 5000 + "}",
         fragment="more than 4,300 digits")
    text("bigint.yaml", "model_type: llama\nx: " + "9" * 5000 + "\n", fragment="more than 4,300 digits")
    text("huge-size.json", json.dumps({**SMALL_LLAMA, "hidden_size": 10**3999}),
         fragment="hidden_size must be at most 2^53 - 1")
    text("layers-1e30.json", json.dumps({**SMALL_LLAMA, "num_hidden_layers": 10**30}),
         fragment="num_hidden_layers must be at most 2^53 - 1")
    text("hidden-1e200.json", json.dumps({**SMALL_LLAMA, "hidden_size": 10**200}),
         fragment="hidden_size must be at most")
    text("measured-1e12-layers.json", json.dumps({"model_type": "musicgen", "n_layer": 10**12}),
         fragment="measured by building it, up to 1,024 layers")
    raw("big.json", b'{"model_type": "llama", "pad": "' + b"x" * (5 * 1024**2) + b'"}',
        fragment="file is larger than 4 MiB")
    raw("latin1.json", b'{"model_type": "llama\xff"}', fragment="not UTF-8")
    raw("binary.json", bytes(range(256)) * 4, fragment="not UTF-8")
    text("empty.json", "", fragment="file is empty")
    text("list.json", "[1, 2]", fragment="expected a JSON mapping")
    text("dupe.json", '{"model_type": "llama", "model_type": "gpt2"}', fragment="duplicate key")
    text("nan.json", json.dumps({**SMALL_LLAMA, "hidden_size": float("nan")}),
         fragment="hidden_size must be an integer")
    text("float.json", json.dumps({**SMALL_LLAMA, "num_hidden_layers": 2.5}),
         fragment="num_hidden_layers must be an integer")
    text("neg.json", json.dumps({**SMALL_LLAMA, "num_attention_heads": -4}),
         fragment="num_attention_heads must be a positive integer")
    text("string.json", json.dumps({**SMALL_LLAMA, "vocab_size": "\x1b[2J100"}),
         fragment="vocab_size must be an integer")
    # -- YAML: aliases, tags, keys, merge keys, controls --
    for field_name in ("name", "source", "model_type", "layer_types", "expected"):
        text(f"bomb-{field_name}.yaml", _alias_bomb(field_name), fragment="expands to more than")
    text("recursive.yaml", "model_type: llama\nx: &a [*a]\n", fragment="nests more than 64")
    text("unhashable.yaml", "model_type: llama\n? [1, 2]\n: 3\n",
         fragment="a mapping key must be a string or number")
    text("python-tag.yaml", "model_type: !!python/object/apply:os.system ['echo pwned']\n",
         fragment="tags that construct Python objects are not allowed")
    text("raw-control.yaml", "model_type: llama\nname: a\x01b\n", fragment="control characters")
    small_yaml = "".join(f"{k}: {json.dumps(v)}\n" for k, v in SMALL_LLAMA.items())
    text("merge.yaml", f"base: &b\n  hidden_size: 64\n  vocab_size: 100\n<<: *b\n{small_yaml}", code=0)
    text("escapes.yaml", small_yaml + f"name: {json.dumps(ESC_NAME)}\nsource: {json.dumps(OSC8)}\n",
         code=0)
    text("long-name.yaml", small_yaml + "name: " + "n" * 5000 + "\n", fragment="at most 1,000")
    text("layer-types-ctrl.json",
         json.dumps({**SMALL_LLAMA, "model_type": "gemma2", "head_dim": 16,
                     "layer_types": ["sliding_attention", "\x1b[2Jfull"]}),
         fragment="unknown layer type")
    # -- sizes that must be answered at once (layers as runs) --
    text("layers-1e12.json", json.dumps({**SMALL_LLAMA, "num_hidden_layers": 10**12}), code=0)
    text("gemma-1e12.json",
         json.dumps({**SMALL_LLAMA, "model_type": "gemma3_text", "head_dim": 16,
                     "num_hidden_layers": 10**12, "sliding_window": 512}), code=0)
    text("qwen-moe-1e12.json",
         json.dumps({**SMALL_LLAMA, "model_type": "qwen2_moe", "num_hidden_layers": 10**12,
                     "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "num_key_value_heads": 4,
                     "shared_expert_intermediate_size": 64, "decoder_sparse_step": 3,
                     "mlp_only_layers": [0, 5, 10**11]}), code=0)
    text("gpt-neo-1e12.json",
         json.dumps({"model_type": "gpt_neo", "hidden_size": 64, "num_layers": 2 * 10**12,
                     "num_heads": 4, "vocab_size": 100, "max_position_embeddings": 128,
                     "attention_types": [[["global", "local"], 10**12]]}), code=0)
    # -- per-layer lists: within the caps they are runs; past 65,536 entries they are refused --
    text("gemma-alt-65536.json",
         json.dumps({**SMALL_LLAMA, "model_type": "gemma2", "head_dim": 16, "sliding_window": 8,
                     "num_hidden_layers": 65_536,
                     "layer_types": ["sliding_attention", "full_attention"] * 32_768}), code=0)
    text("qwen-holes-65536.json",
         json.dumps({**SMALL_LLAMA, "model_type": "qwen2_moe", "num_hidden_layers": 10**12,
                     "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                     "num_key_value_heads": 4, "mlp_only_layers": list(range(0, 131_072, 2))}),
         code=0)
    text("long-list.json", json.dumps({**SMALL_LLAMA, "x": [0] * 70_000}),
         fragment="a list of more than 65,536 entries")
    text("alias-list.yaml", small_yaml + "s: &s sliding_attention\nlayer_types: ["
         + ", ".join(["*s"] * 70_000) + "]\n", fragment="a list of more than 65,536 entries")
    # -- today's families: searches, module lists and names bounded before the work --
    qwen4 = {"model_type": "qwen4_exp_text", "hidden_size": 64, "num_hidden_layers": 4,
             "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100,
             "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8,
             "linear_value_head_dim": 8, "num_experts": 4, "num_experts_per_tok": 2,
             "moe_intermediate_size": 32, "shared_expert_intermediate_size": 32, "hc_lowrank": 8,
             "indexer_n_heads": 2, "indexer_kv_heads": 1, "indexer_head_dim": 8,
             "indexer_budget": 4, "indexer_compress_ratio": 2, "ple_layer_ids": [1, 2, 3],
             "ngram_size": 3, "ngram_vocab_size_base": 2**53 - 1}
    text("qwen4-primes-4096.json", json.dumps({**qwen4, "heads_per_ngram": 682,
                                                "ple_embed_dim": 1364}), code=0)
    text("qwen4-primes-65536.json", json.dumps({**qwen4, "heads_per_ngram": 32_768,
                                                 "ple_embed_dim": 65_536}),
         fragment="heads_per_ngram: 3 PLE layers × 65,536 n-gram heads is more than the 4,096")
    text("inkling-loop-config.json",
         json.dumps({"model_type": "inkling2_loop_text", "loop_config": "\x1b[2J"}),
         fragment="loop_config: must be a mapping")
    text("gemma3n-altup.json",
         json.dumps({"model_type": "gemma3n", "text_config": {"altup_num_inputs": 10**12}}),
         fragment="text_config.altup_num_inputs (1,000,000,000,000) makes")
    text("gemma3n-ff-list.json",
         json.dumps({"model_type": "gemma3n_text", "num_hidden_layers": 3,
                     "layer_types": ["sliding_attention"] * 3, "num_kv_shared_layers": 0,
                     "intermediate_size": [64] * 3}), code=0)
    xmod = {"model_type": "xmod", "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100}
    text("xmod-languages-65536.json", json.dumps({**xmod, "languages": [f"l{i}" for i in range(65_536)]}),
         fragment="languages has 65,536 entries")
    text("xmod-language-template.json", json.dumps({**xmod, "languages": ["en", "{i}"]}),
         fragment="languages.1: '{i}' cannot name an adapter module")
    text("xmod-language-dot.json", json.dumps({**xmod, "languages": ["\x1b]0;x\x07.a"]}),
         fragment="languages.0: '\\x1b]0;x\\x07.a' cannot name")
    # -- check: expected values --
    for tag, value in (("inf", "{value: .inf, rel: 0.1}"), ("nan", "{value: .nan, rel: 0.1}"),
                       ("nan-exact", ".nan"), ("1e999", "{value: '1e999', rel: 0.1}"),
                       ("digits", "1" + "0" * 100), ("ctrl-key", '{"\\e[2J": 1}')):
        text(f"expected-{tag}.yaml", small_yaml + f"expected:\n  total_params: {value}\n", code=0)
    text("expected-key.yaml", small_yaml + 'expected:\n  "\\e]0;x\\a": 1\n', code=0)

    cases: list[Case] = []
    for name, (_, code, fragment) in files.items():
        path = str(f / name)
        for command in ("count", "flops", "memory"):
            cases.append(Case(f"{command} {name}", (command, path), code, fragment))
        cases.append(Case(f"count --json {name}", ("count", path, "--json"), code, fragment))
        if name.startswith(("layers-", "escapes", "bomb-name", "deep.json", "huge-size")):
            for command in ("train", "fit", "mfu"):
                extra = {"train": ("--gpu", "h100", "--tokens", "1T"),
                         "fit": ("--gpu", "h100"),
                         "mfu": ("--gpu", "h100", "--tokens-per-sec", "1M")}[command]
                cases.append(Case(f"{command} {name}", (command, path, *extra), code, fragment))
        check_code = 2 if code == 2 or name.startswith("expected-") else 0
        cases.append(Case(f"check {name}", ("check", path), check_code))

    # -- names and paths given on the command line --
    cases += [
        Case("name 5000 chars", ("count", "x" * 5000), 2, "names and paths are read up to 1,024"),
        Case("name with escapes", ("count", "bad\x1b[2J\nname"), 2, "unknown model"),
        Case("a path to a file that is no config", ("count", "../../../../etc/passwd"), 2),
        Case("bundled name is no path", ("count", "../configs/gpt2"), 2, "no such file"),
        Case("folder without config", ("count", str(f)), 2, "folder has no config.json"),
        Case("family with escapes", ("count", "gpt2", "--family", "x\n\x1b[2J"), 2, "unknown family"),
        Case("set key newline", ("count", "gpt2", "--set", "x\ny=1"), 2, "not a field"),
        Case("set bomb", ("count", "gpt2", "--set",
                          "n_layer=[&a [1,1,1,1,1,1,1,1,1,1], [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]]"), 2),
        Case("set recursive", ("count", "gpt2", "--set", "n_layer=&a [*a]"), 2),
        Case("set value 20,000 chars", ("count", "gpt2", "--set", "n_layer=" + "1" * 20_000), 2,
             "at most 16,384"),
        Case("set 1e30 layers", ("count", "gpt2", "--set", "n_layer=" + "1" + "0" * 30), 2,
             "at most 2^53 - 1"),
        Case("tensors of 1e12 layers", ("count", "gpt2", "--set", "n_layer=1000000000000",
                                        "--tensors", "--json"), 2, "lists at most 1,000,000"),
        Case("set 1e12 layers", ("flops", "gpt2", "--set", "n_layer=1000000000000", "--ctx", "1M"), 0),
        Case("ctx 400 digits", ("flops", "gpt2", "--ctx", "9" * 400), 2, "numbers are read up to 64"),
        Case("ctx exponent", ("flops", "gpt2", "--ctx", "1e400"), 2),
        Case("ctx too large", ("flops", "gpt2", "--ctx", "9" * 30), 2, "at most 2^53 - 1"),
        Case("tokens 400 digits", ("train", "gpt2", "--gpu", "h100", "--tokens", "9" * 400), 2),
        Case("gpu-mem exponent", ("fit", "gpt2", "--gpu", "h100", "--gpu-mem", "1e999999999GiB"), 2,
             "out of range"),
        Case("gpu-flops digits", ("train", "gpt2", "--gpu-mem", "80GiB", "--gpu-flops",
                                  "9" * 5000 + "T"), 2, "numbers are read up to 64"),
        Case("gpu escapes", ("fit", "gpt2", "--gpu", "h100\n\x1b[2J"), 2, "unknown accelerator"),
        Case("dtype escapes", ("memory", "gpt2", "--dtype", "\x1b[31mbf16"), 2, "unknown dtype"),
        Case("batch zero", ("memory", "gpt2", "--batch", "0"), 2),
        Case("gpus digits", ("fit", "gpt2", "--gpu", "h100", "--gpus", "9" * 5000), 2),
        Case("headroom nan", ("fit", "gpt2", "--gpu", "h100", "--headroom", "nan"), 2),
        Case("check missing", ("check", str(f / "nope\x1b.yaml")), 2),
        # later commands: serving, fine-tuning, charts
        Case("latency 1e12 layers", ("latency", str(f / "layers-1e12.json"), "--gpu", "h100"), 0),
        Case("latency tp digits", ("latency", "gpt2", "--gpu", "h100", "--tp", "9" * 5000), 2),
        Case("latency tp huge", ("latency", "gpt2", "--gpu", "h100", "--tp", "9" * 18), 2,
             "less than or equal to 9007199254740991"),
        Case("gpus 400 digits", ("fit", "gpt2", "--gpu", "h100", "--gpus", "9" * 400), 2,
             "less than or equal to 9007199254740991"),
        Case("micro-batch huge", ("train", "gpt2", "--gpu", "h100", "--tokens", "1B",
                                  "--micro-batch", "9" * 18), 2),
        Case("line separator in an option", ("count", "gpt2", "--family", "gpt2\u2028x"), 2,
             "\\u2028"),
        Case("latency gen digits", ("latency", "gpt2", "--gpu", "h100", "--gen", "9" * 400), 2),
        Case("latency draft escapes", ("latency", "gpt2", "--gpu", "h100", "--draft",
                                       "x\x1b[2J"), 2),
        Case("lora r huge", ("count", "gpt2", "--lora-r", "9" * 18), 2),
        Case("lora targets escapes", ("count", "gpt2", "--lora-r", "8", "--lora-targets",
                                      "\x1b[2J,q"), 2),
        Case("qlora huge layers", ("train", str(f / "layers-1e12.json"), "--method", "qlora",
                                   "--gpu", "h100", "--lora-r", "8"), 0),
        Case("plot escapes", ("plot", "params", str(f / "escapes.yaml")), 0),
        Case("plot ctx digits", ("plot", "flops", "gpt2", "--ctx-max", "9" * 400), 2),
        Case("plot huge ctx", ("plot", "flops", "gpt2", "--ctx-max", "9" * 15), 2, "must be from 128"),
        Case("serve bad port", ("serve", "--port", "99999999", "--no-browser"), 2),
    ]

    # -- checkpoints: nothing read outside the folder, nothing echoed, headers capped --
    ck = {
        "ck-abs": _checkpoint(f, "ck-abs", {"model.safetensors.index.json":
                                            {"weight_map": {"x": "/etc/passwd"}}}),
        "ck-up": _checkpoint(f, "ck-up", {"model.safetensors.index.json":
                                          {"weight_map": {"x": "../ck-abs/config.safetensors"}}}),
        "ck-link": _checkpoint(f, "ck-link", {}, links={"model.safetensors": "/etc/passwd"}),
        "ck-index-link": _checkpoint(f, "ck-index-link", {},
                                     links={"model.safetensors.index.json": "/etc/hostname"}),
        "ck-text": _checkpoint(f, "ck-text", {"model.safetensors": b"SECRETPWxxxxxxxxxxxxxxxxxx"}),
        "ck-long-header": _checkpoint(f, "ck-long-header", {}),
        "ck-ctrl-names": _checkpoint(f, "ck-ctrl-names", {"model.safetensors": {
            "\x1b[2J\x1b]0;x\x07": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}}),
        "ck-huge-dims": _checkpoint(f, "ck-huge-dims", {"model.safetensors": {
            "w": {"dtype": "F32", "shape": [10**30], "data_offsets": [0, 4]}}}),
        "ck-bigint": _checkpoint(f, "ck-bigint", {"model.safetensors": (
            b'{"w": {"dtype": "F32", "shape": [' + b"9" * 5000 + b'], "data_offsets": [0, 4]}}')}),
        "ck-deep": _checkpoint(f, "ck-deep", {"model.safetensors": b"[" * 50_000 + b"]" * 50_000}),
        "ck-nul": _checkpoint(f, "ck-nul", {"model.safetensors.index.json":
                                            {"weight_map": {"w": "a\u0000.safetensors"}}}),
        "ck-loop": _checkpoint(f, "ck-loop", {}, links={"model.safetensors": "model.safetensors"}),
    }
    # a config.json that links out of its folder is not read
    (f / "cfg-link").mkdir()
    (f / "secret.json").write_text(json.dumps({**SMALL_LLAMA, "model_type": "SECRET-abc"}))
    os.symlink(f / "secret.json", f / "cfg-link" / "config.json")
    cases.append(Case("config.json links out", ("count", str(f / "cfg-link")), 2,
                      "links to a file outside the folder"))
    (f / "ck-long-header" / "model.safetensors").write_bytes(
        struct.pack("<Q", 17 * 1024**2) + b" " * (17 * 1024**2 + 8))
    for name in ("ck-bigint", "ck-deep"):  # raw bytes: give them a length prefix
        path = f / name / "model.safetensors"
        body = path.read_bytes()
        path.write_bytes(struct.pack("<Q", len(body)) + body)
    for name in ck:
        code = 1 if name == "ck-ctrl-names" else 2  # a valid header that differs: exit 1
        cases.append(Case(f"verify {name}", ("verify", str(f / name)), code))
        cases.append(Case(f"verify --json {name}", ("verify", str(f / name), "--json"), code))

    # -- verify: builds refused before they start, transformers' own exceptions in one line --
    (f / "pad.json").write_text(json.dumps({**SMALL_LLAMA, "pad_token_id": 1000}))
    cases += [
        Case("verify 1e6 layers", ("verify", "gpt2", "--set", "n_layer=1000000"), 2,
             "at most 50,000 parameter tensors", verify=True),
        Case("verify huge tensor", ("verify", "gpt2", "--set", "n_embd=1000000000000",
                                    "--set", "n_head=1"), 2, "more than torch can hold", verify=True),
        Case("verify flops huge", ("verify", "gpt2", "--set", "n_embd=100000", "--set", "n_head=1",
                                   "--flops"), 2, "verify runs copies of at most", verify=True),
        Case("verify padding index", ("verify", str(f / "pad.json")), 2,
             "transformers cannot build this model", verify=True),
        Case("verify escapes", ("verify", str(f / "escapes.yaml")), 0, verify=True),
    ]
    return cases


def run_cases(cases: list[Case], folder: Path) -> list[Result]:
    """Run every case through the entry point, each in a child process with a memory cap.

    One runner process imports llmcalc once and forks a child per case (a fresh interpreter per
    case would spend most of the time starting Python): the child sets its cap, points its stdout
    and stderr at files and calls ``llmcalc.cli.main`` with the case's arguments.
    """
    lines = "".join(json.dumps([list(c.args), _cap(c)]) + "\n" for c in cases)
    env = {**os.environ, "COLUMNS": "100", "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
         "import hostile; hostile.serve()"],
        input=lines.encode(), capture_output=True, cwd=folder, env=env, check=False,
        timeout=TIMEOUT * 10,
    )
    answers = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert len(answers) == len(cases), proc.stderr.decode()[-2000:]
    results = []
    for case, (code, out, err, seconds, peak) in zip(cases, answers, strict=True):
        problems = check_promises(case, code, out, err)
        results.append(Result(case, code, out, err, problems, seconds, peak))
    return results


def run_case(case: Case, folder: Path) -> Result:
    return run_cases([case], folder)[0]


def _cap(case: Case) -> int:
    return VERIFY_MEMORY_CAP if case.verify or case.args[0] == "verify" else MEMORY_CAP


def serve() -> None:
    """The runner: one case per line of stdin ([args, memory cap]), one JSON answer per line."""
    import tempfile
    import time

    import llmcalc.cli  # noqa: F401 - imported once, before the forks
    import llmcalc.cli.count  # noqa: F401
    import llmcalc.inputs.config  # noqa: F401

    answer = sys.stdout
    for line in sys.stdin:
        args, cap = json.loads(line)
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            answer.flush()
            pid = os.fork()
            if pid == 0:  # the child: capped, its output in the files, the entry point
                code = 70
                try:
                    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
                    os.dup2(out.fileno(), 1)
                    os.dup2(err.fileno(), 2)
                    sys.argv = ["llmcalc", *args]
                    from llmcalc.cli import main

                    main()
                    code = 0
                except SystemExit as e:
                    code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                finally:
                    try:
                        sys.stdout.flush()
                        sys.stderr.flush()
                    finally:
                        os._exit(code)
            start = time.monotonic()
            deadline = start + TIMEOUT
            peak = 0
            while True:
                done, status, usage = os.wait4(pid, os.WNOHANG)
                if done:
                    code = os.waitstatus_to_exitcode(status)
                    peak = usage.ru_maxrss * 1024  # kilobytes on Linux
                    break
                if time.monotonic() > deadline:
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
                    code = -9
                    break
                time.sleep(0.002)
            out.seek(0)
            err.seek(0)
            texts = [f.read().decode("utf-8", "replace") for f in (out, err)]
        seconds = time.monotonic() - start
        answer.write(json.dumps([code, *texts, seconds, peak]) + "\n")
    answer.flush()


def check_promises(case: Case, code: int, out: str, err: str) -> list[str]:
    problems = []
    if code != case.code:
        problems.append(f"exit {code}, expected {case.code}")
    if "Traceback" in out + err:
        problems.append("traceback")
    if "internal error" in err or "too large to hold in memory" in err or "nested too deeply" in err:
        problems.append("a cap was hit inside the child, not checked before the work")
    if CONTROL.search(out) or CONTROL.search(err):
        problems.append("raw control character in output")
    if code == 2 and case.args[0] != "check":  # check reports bad files in its table
        lines = err.splitlines()
        if len(lines) != 1 or not lines[0].startswith("error: "):
            problems.append(f"stderr is not one error line: {err[:300]!r}")
        if case.stderr is not None and case.stderr not in err:
            problems.append(f"error line lacks {case.stderr!r}: {err[:300]!r}")
        if "SECRETPW" in err or "root:" in err:
            problems.append("echoed bytes of a file")
    if code == 0 and "--json" in case.args:
        try:
            json.loads(out)
        except ValueError:
            problems.append("--json output is not JSON")
    return problems
