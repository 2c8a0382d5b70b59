"""`fit MODEL --engine llama.cpp`: llama-server's --fit on one GPU (vendor/llama.cpp
common/fit.cpp: common_params_fit_impl), held to the source's rule by a second path (a plain scan
over every -ngl / context, where the engine searches by false position and interpolation), and the
llama-server command line held to the pinned common/arg.cpp's flag names.

Lines of llama-cpp-python 0.3.36's vendor/llama.cpp (ggml-org/llama.cpp@0c1e57098): fit.cpp:261
step 1 (defaults kept when they leave the margin), :373-433 step 2 (context by interpolation,
rounded down to 256 × streams at :429), :488 step 3 (layers back to front), :548-586
set_ngl_tensor_split_tbo (full layers first, then partial ones' -ot patterns), :735 and :810 step
4 (MoE: partial → full, part of one more layer); common.h:480-483 (--fit-ctx 4096, --fit-target
1024 MiB); src/llama-model.cpp:1589-1590 (i_gpu_start, act_gpu_layers)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
from helpers import tiny_gguf

from llmcalc.inputs.gguf_file import read_header
from llmcalc.planning.engines import llama_cpp as L
from llmcalc.planning.engines import llama_cpp_fit as F

MiB = 2**20
FLAGS = Path(__file__).parents[1] / "data" / "llama_cpp_arg_flags.txt"
SERVER = L.Params(n_ctx=0, n_parallel=4, kv_unified=True)  # llama-server's defaults


@pytest.fixture(scope="module")
def dense(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return read_header(tiny_gguf.write(tmp_path_factory.mktemp("g") / "d.gguf", "llama",
                                       n_layer=8, d=512, ff=2048, vocab=4096))


@pytest.fixture(scope="module")
def moe(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return read_header(tiny_gguf.write(tmp_path_factory.mktemp("g") / "m.gguf", "qwen3moe",
                                       n_layer=6, d=256, ff=512, vocab=4096, n_expert=8))


def _gpu(h: Any, **kw: Any) -> int:
    p = L.Params(**{**SERVER.__dict__, **kw})
    return F.gpu_bytes(L.plan(h, p))


def test_defaults_that_leave_the_margin_are_kept(dense: Any) -> None:
    need = _gpu(dense, n_ctx=8192, n_gpu_layers=9)  # the model's 8,192 tokens, every layer
    f = F.fit(dense, SERVER, free=need + 1024 * MiB, margin_mib=1024)
    assert (f.status, f.n_ctx, f.n_gpu_layers, f.gpu_bytes, f.left) == (
        "unchanged", 8192, 9, need, 1024 * MiB)


def test_the_context_is_reduced_by_linear_interpolation(dense: Any) -> None:
    lo, hi = _gpu(dense, n_ctx=4096, n_gpu_layers=9), _gpu(dense, n_ctx=8192, n_gpu_layers=9)
    free = (lo + hi) // 2 + 1024 * MiB
    f = F.fit(dense, SERVER, free=free, margin_mib=1024)
    # common/fit.cpp step 2: n_ctx = min + (max − min)(target − used(min)) / (used(max) − used(min)),
    # rounded down to 256 × streams; the KV cache is linear in the context here, so it lands
    # on the largest context whose plan leaves the margin
    assert (f.status, f.n_gpu_layers) == ("context", 9)
    best = max(c for c in range(4096, 8193, 256) if _gpu(dense, n_ctx=c, n_gpu_layers=9)
               <= free - 1024 * MiB)
    assert f.n_ctx == best == 6144
    assert f.left >= 1024 * MiB


@pytest.mark.parametrize("spare_mib", [1, 5, 20, 40, 70, 150])
def test_dense_layers_are_the_most_that_leave_the_margin(dense: Any, spare_mib: int) -> None:
    f = F.fit(dense, SERVER, free=(1024 + spare_mib) * MiB, margin_mib=1024)
    # the context cannot go below --fit-ctx's 4,096, so layers move to the CPU; -ngl counts the
    # output layer first (load_tensors: i_gpu_start = max(n_layer + 1 − ngl, 0))
    fits = [n for n in range(10) if _gpu(dense, n_ctx=4096, n_gpu_layers=n) <= spare_mib * MiB]
    assert (f.status, f.n_ctx, f.overrides) == ("layers", 4096, ())
    assert f.n_gpu_layers == max(fits)
    assert f.left >= f.margin


def test_moe_experts_go_to_the_cpu_before_layers(moe: Any) -> None:
    f = F.fit(moe, SERVER, free=1100 * MiB, margin_mib=1024)
    assert (f.status, f.n_gpu_layers) == ("layers", 7)
    # set_ngl_tensor_split_tbo: full layers first, then the partial ones — the first partial
    # layer's overflow (here gate and down to the CPU: LAYER_FRACTION_UP), the rest's experts
    assert f.overrides == (r"blk\.4\.ffn_(gate|gate_up|down).*=CPU",
                           r"blk\.5\.ffn_(up|down|gate_up|gate)_(ch|)exps=CPU",
                           r"blk\.6\.ffn_(up|down|gate_up|gate)_(ch|)exps=CPU")
    place = L.placement(moe, 6, 7, L.overrides(0, f.overrides))
    assert place["blk.4.ffn_up_exps.weight"] == "GPU"
    assert place["blk.4.ffn_gate_exps.weight"] == place["blk.5.ffn_up_exps.weight"] == "CPU"
    assert place["blk.5.attn_q.weight"] == place["blk.3.ffn_down_exps.weight"] == "GPU"
    assert f.margin <= f.left < f.margin + 10 * MiB


def test_a_set_ngl_that_does_not_fit_is_left_as_the_engine_leaves_it(dense: Any) -> None:
    f = F.fit(dense, L.Params(n_ctx=0, n_parallel=4, kv_unified=True, n_gpu_layers=9),
              free=1100 * MiB, ngl_given=True)
    assert (f.status, f.reason, f.n_gpu_layers, f.n_ctx) == (
        "failed", "n_gpu_layers already set by user to 9, abort", 9, 4096)


def _arg_cpp() -> tuple[set[str], dict[str, set[str]]]:
    flags, values = set(), {}
    for line in FLAGS.read_text().splitlines():
        if line.startswith("= "):
            flag, *choices = line[2:].split()
            values[flag] = set(choices)
        elif line and not line.startswith("#"):
            flags.add(line)
    return flags, values


def test_the_command_line_uses_the_pinned_sources_flags(dense: Any, moe: Any) -> None:
    flags, values = _arg_cpp()
    assert set(F.SERVER_FLAGS) <= flags
    f = F.fit(moe, L.Params(n_ctx=0, n_parallel=2, kv_unified=False, swa_full=True, mmap=False,
                            flash_attn="off"), free=1100 * MiB)
    words = shlex.split(F.server_command("m.gguf", f))
    used = [w for w in words if w.startswith("--")]
    assert set(used) <= set(F.SERVER_FLAGS)
    for flag, choices in values.items():
        if flag in words:
            assert words[words.index(flag) + 1] in choices
    assert words[:3] == ["llama-server", "--model", "m.gguf"]
    assert words[words.index("--n-gpu-layers") + 1] == str(f.n_gpu_layers)
    assert words[words.index("--override-tensor") + 1] == ",".join(f.overrides)
    assert {"--no-kv-unified", "--swa-full"} <= set(words)
    assert words[-4:] == ["--load-mode", "none", "--fit", "off"]


def test_fit_cli(cli: Any, tmp_path: Path) -> None:
    path = tiny_gguf.write(tmp_path / "d.gguf", "llama", n_layer=8, d=512, ff=2048, vocab=4096)
    run = cli("fit", str(path), "--engine", "llama.cpp", "--gpu-mem", "1044MiB", "--json")
    assert run.code == 0, run.stderr
    d = run.json()
    h = read_header(path)
    assert (d["status"], d["ctx_size"], d["n_gpu_layers"]) == ("layers", 4096, 
        max(n for n in range(10) if _gpu(h, n_ctx=4096, n_gpu_layers=n) <= 20 * MiB))
    assert d["command"] == F.server_command(str(path), F.fit(h, SERVER, free=1044 * MiB))
    assert d["gpu_bytes"] == d["plan"]["devices"]["GPU"]["total_bytes"]
    assert d["free_bytes"] - d["gpu_bytes"] == d["left_bytes"] >= d["fit_target_bytes"]
    # a margin larger than the card: every layer on the CPU, which loads (exit 0)
    table = cli("fit", str(path), "--engine", "llama.cpp", "--gpu-mem", "1044MiB",
                "--fit-target", "2000")
    assert table.code == 0, table.stderr
    assert "0 of 9 (the output layer counted)" in table.stdout
    # -ngl given: --fit gives up, the flags load as given and do not fit 100 MiB: exit 1
    over = cli("fit", str(path), "--engine", "llama.cpp", "--gpu-mem", "100MiB",
               "--n-gpu-layers", "9", "--ctx-size", "8192")
    assert over.code == 1
    assert "(n_gpu_layers already set by user to 9, abort)" in over.stdout
    assert "does not load: 92.03 MiB more than the GPU has" in over.stdout
    assert over.stderr.startswith("note: the compute buffer is not modelled")


@pytest.mark.parametrize(("args", "message"), [
    (["--batch", "2"], "error: --batch: not with --engine llama.cpp: sequences are --parallel N"),
    (["--dtype", "q4_0"], "error: --dtype q4_0: a GGUF file is loaded with its own tensor types"),
    (["--headroom", "0.2"], "error: --headroom: not with --engine llama.cpp: llama.cpp's margin "
     "is --fit-target MiB"),
    (["--ctx", "4k", "--ctx-size", "8k"], "error: --ctx and --ctx-size are the same flag: give one"),
    # --gpus N: the layers split over N cards (tests/engines/test_llama_cpp_logs.py)
    (["--tp", "2", "--gpus", "4"], "error: --tp 2 and --gpus 4: with --engine llama.cpp both are "
     "the GPUs the layers are split over; give one"),
])
def test_fit_refusals(cli: Any, tmp_path: Path, args: list[str], message: str) -> None:
    path = tiny_gguf.write(tmp_path / "d.gguf", "llama")
    run = cli("fit", str(path), "--engine", "llama.cpp", "--gpu", "rtx-4090", *args)
    assert (run.code, run.stderr.strip()) == (2, message)
    other = cli("fit", str(path), "--gpu", "rtx-4090", "--fit-target", "512")
    assert (other.code, other.stderr.strip()) == (
        2, "error: --fit-target: llama.cpp's flags go with --engine llama.cpp")


def test_separate_sequences_multiply_the_context(dense: Any) -> None:
    # two sequences without a unified cache: --fit works between 2 × 4,096 and 2 × 8,192 and
    # rounds down to 256 × 2 (common/fit.cpp: n_streams)
    p = L.Params(n_ctx=0, n_parallel=2, kv_unified=False)

    def gpu(c: int) -> int:
        return F.gpu_bytes(L.plan(dense, L.Params(n_ctx=c, n_parallel=2, kv_unified=False,
                                                  n_gpu_layers=9)))

    free = (gpu(8192) + gpu(16384)) // 2 + 1024 * MiB
    f = F.fit(dense, p, free=free)
    assert f.status == "context" and f.n_ctx % 512 == 0
    assert f.n_ctx == max(c for c in range(8192, 16385, 512) if gpu(c) <= free - 1024 * MiB)
    assert (f.plan.context.n_seq, f.plan.context.n_ctx_seq) == (2, f.n_ctx // 2)
