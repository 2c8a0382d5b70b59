"""llama.cpp's ``--fit`` on one GPU: the context and the layers llama-server settles on so that
the GPU keeps ``--fit-target`` MiB free, and the ``llama-server`` command line that loads exactly
that plan. Ported from llama-cpp-python 0.3.36's ``vendor/llama.cpp/common/fit.cpp:
common_params_fit_impl`` (cited by step below); each memory figure it measures is
:func:`llmcalc.planning.engines.llama_cpp.plan`'s GPU device total. Pure: nothing here prints.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace

from llmcalc.errors import UsageError
from llmcalc.inputs.gguf_file import GgufHeader
from llmcalc.planning.engines.llama_cpp import Params, Plan, hparams, plan

MiB = 1024 * 1024
# common/common.h: common_params — fit_params_target (1024 MiB per device) and fit_params_min_ctx
FIT_TARGET_MIB = 1024
FIT_MIN_CTX = 4096
# common/fit.cpp: get_overflow_pattern — what of a partly offloaded MoE layer goes to the CPU
OVERFLOW = {
    "attn": r"blk\.{il}\.ffn_(gate|up|gate_up|down).*",  # attention on the GPU
    "up": r"blk\.{il}\.ffn_(gate|gate_up|down).*",  # attention + up
    "gate": r"blk\.{il}\.ffn_down.*",  # attention + up + gate
    "moe": r"blk\.{il}\.ffn_(up|down|gate_up|gate)_(ch|)exps",  # everything but the experts
}
MOE_ALL = r"blk\.\d+\.ffn_(up|down|gate_up|gate)_(ch|)exps"


@dataclass(frozen=True)
class Fit:
    """What --fit settles on and the plan it loads. ``status``: "unchanged" (the defaults leave the
    margin), "context" (a smaller context does), "layers" (layers moved to the CPU), or "failed"
    (``reason`` says why, as the engine's warning does; llama-server then loads the flags as given)."""

    plan: Plan
    n_ctx: int  # the context asked of llama_context (0: the model's)
    n_gpu_layers: int
    overrides: tuple[str, ...]  # -ot PATTERN=BUFT, in order
    n_cpu_moe: int
    free: int
    margin: int
    status: str
    reason: str = ""

    @property
    def gpu_bytes(self) -> int:
        return gpu_bytes(self.plan)

    @property
    def left(self) -> int:
        return self.free - self.gpu_bytes


def gpu_bytes(p: Plan) -> int:
    """The GPU's projected use: its buffers (and its compute buffer where the plan models one)."""
    d = p.device("GPU")
    if d is None:
        return 0
    return d.model + d.kv_k + d.kv_v + d.recurrent + (getattr(d, "compute", None) or 0)


def _c_div(a: int, b: int) -> int:
    """C++ integer division (towards zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _u32(x: int) -> int:
    return x % (1 << 32)  # a negative int64 assigned to uint32_t


@dataclass
class _Ngl:
    n_layer: int = 0
    n_part: int = 0
    overflow: str = "moe"


def fit(header: GgufHeader, p: Params, *, free: int, margin_mib: int = FIT_TARGET_MIB,
        n_ctx_min: int = FIT_MIN_CTX, ngl_given: bool = False, n_cpu_moe: int = 0,
        override_tensor: Sequence[str] = ()) -> Fit:
    """common/fit.cpp: common_params_fit_impl with one device. ``p.n_ctx`` 0 is llama-server's
    default (the training context, which --fit may reduce); ``ngl_given``: -ngl was set, which
    --fit then leaves alone (and gives up where layers would have to move)."""
    hp = hparams(header)
    if margin_mib < 0:
        raise UsageError(f"--fit-target {margin_mib}: MiB, at least 0")
    margin = margin_mib * MiB
    n_ctx_train = int(header.metadata.get(f"{hp.arch}.context_length", 0) or 0)
    hp_ngl = hp.n_layer
    hp_nex = int(header.metadata.get(f"{hp.arch}.expert_count", 0) or 0)
    user_ot = list(override_tensor)
    ngl0 = p.n_gpu_layers if ngl_given else hp_ngl + 1  # llama_model::n_gpu_layers: -1 is all

    def measure(n_ctx: int, ngl: int, ot: Sequence[str], moe: int = n_cpu_moe) -> int:
        return gpu_bytes(plan(header, replace(p, n_ctx=n_ctx, n_gpu_layers=ngl), n_cpu_moe=moe,
                              override_tensor=ot))

    def done(status: str, n_ctx: int, ngl: int, ot: Sequence[str], reason: str = "",
             moe: int = n_cpu_moe) -> Fit:
        final = plan(header, replace(p, n_ctx=n_ctx, n_gpu_layers=ngl), n_cpu_moe=moe,
                     override_tensor=ot)
        return Fit(final, n_ctx, ngl, tuple(ot), moe, free, margin, status, reason)

    # step 1: the defaults — all layers on the GPU, the model's context (× streams if not unified)
    n_streams = 1 if p.kv_unified else max(1, p.n_parallel)
    n_ctx_auto = p.n_ctx == 0
    if n_ctx_auto and n_ctx_train <= 0:
        raise UsageError(f"{header.label}: GGUF metadata {hp.arch}.context_length is missing: "
                         "give --ctx-size")
    n_ctx_max = n_ctx_train * n_streams
    n_ctx_min_total = n_ctx_min * n_streams
    n_ctx = n_ctx_max if n_ctx_auto else p.n_ctx
    used = measure(n_ctx, ngl0, user_ot)
    if free - used >= margin:
        return done("unchanged", n_ctx, ngl0, user_ot)

    # step 2: reduce the context (only when not set), interpolating linearly between the
    # smallest context and the largest, rounded down to 256 × streams
    if n_ctx_auto and n_ctx_max > n_ctx_min_total:
        target_used = free - margin
        used_min = measure(n_ctx_min_total, ngl0, user_ot)
        n_ctx = n_ctx_min_total
        if target_used > used_min:
            n_ctx += _c_div((n_ctx_max - n_ctx_min_total) * (target_used - used_min),
                            used - used_min)
            align = 256 * n_streams
            n_ctx = max(n_ctx - n_ctx % align, n_ctx_min_total)
            return done("context", n_ctx, ngl0, user_ot)
    if ngl_given:
        return done("failed", n_ctx, ngl0, user_ot,
                    f"n_gpu_layers already set by user to {p.n_gpu_layers}, abort")
    if user_ot or n_cpu_moe:
        return done("failed", n_ctx, ngl0, user_ot,
                    "model_params::tensor_buft_overrides already set by user, abort")

    # step 3: fill the GPU back to front with whole layers (a MoE model's experts kept on the CPU),
    # the method of false position between a count that fits and one that does not
    def patterns(ngl: _Ngl) -> list[str]:
        # common/fit.cpp: set_ngl_tensor_split_tbo — full layers first, then the partial ones
        il0 = hp_ngl + 1 - ngl.n_layer + ngl.n_layer - ngl.n_part
        return [OVERFLOW[ngl.overflow if il == il0 else "moe"].format(il=il) + "=CPU"
                for il in range(il0, il0 + ngl.n_part)]

    def mem(ngl: _Ngl) -> int:
        return measure(n_ctx, ngl.n_layer, patterns(ngl), moe=0)

    target = free - margin
    global_surplus_cpu_moe = 0
    if hp_nex > 0:
        global_surplus_cpu_moe = free - measure(n_ctx, ngl0, [MOE_ALL + "=CPU"], moe=0) - margin

    low = _Ngl()
    mem_low = mem(low)
    high = _Ngl(hp_ngl + 1, hp_ngl if hp_nex > 0 else 0)
    if high.n_layer > 0:
        mem_high = mem(high)
        if mem_high > target:
            delta = high.n_layer - low.n_layer
            while delta > 1:
                step = _u32(_c_div(delta * (target - mem_low), mem_high - mem_low))
                step = min(max(step, 1), delta - 1)
                test = _Ngl(low.n_layer + step, low.n_part, low.overflow)
                if hp_nex:  # the first layer is the output layer, which is never partial
                    test.n_part += step - 1 if low.n_part == 0 else step
                mem_test = mem(test)
                if mem_test <= target:
                    low, mem_low = test, mem_test
                else:
                    high, mem_high = test, mem_test
                delta = high.n_layer - low.n_layer
        else:
            low, mem_low = high, mem_high
    if hp_nex == 0 or global_surplus_cpu_moe <= 0:
        return done("layers", n_ctx, low.n_layer, patterns(low), moe=0)

    # step 4: a MoE model whose dense weights all fit: turn partial layers into full ones front
    # to back, then try to keep part of one more layer (up, gate; else attention only)
    full = _Ngl(low.n_layer, 0, low.overflow)
    mem_full = mem(full)
    if mem_full > target:
        high, mem_high = full, mem_full
        delta = (high.n_layer - high.n_part) - (low.n_layer - low.n_part)
        while delta > 1:
            step = _u32(_c_div(delta * (target - mem_low), mem_high - mem_low))
            step = min(max(step, 1), delta - 1)
            test = _Ngl(low.n_layer, low.n_part - min(step, low.n_part), low.overflow)
            mem_test = mem(test)
            if mem_test <= target:
                low, mem_low = test, mem_test
            else:
                high, mem_high = test, mem_test
            delta = (high.n_layer - high.n_part) - (low.n_layer - low.n_part)
    else:
        low, mem_low = full, mem_full
    if low.n_layer > 1:
        for first, then in (("up", "gate"), ("attn", None)):
            test = _Ngl(low.n_layer, low.n_part, first)
            mem_test = mem(test)
            if mem_test < target:
                low, mem_low = test, mem_test
                if then is not None:
                    test = _Ngl(low.n_layer, low.n_part, then)
                    mem_test = mem(test)
                    if mem_test < target:
                        low, mem_low = test, mem_test
                break
    return done("layers", n_ctx, low.n_layer, patterns(low), moe=0)


# The llama-server flags the command line uses, by their long names in common/arg.cpp.
SERVER_FLAGS = ("--model", "--ctx-size", "--batch-size", "--ubatch-size", "--cache-type-k",
                "--cache-type-v", "--flash-attn", "--n-gpu-layers", "--override-tensor", "--n-cpu-moe",
                "--parallel", "--kv-unified", "--no-kv-unified", "--swa-full", "--load-mode",
                "--fit")


def server_command(model: str, f: Fit) -> str:
    """``llama-server`` with every setting of the plan explicit and --fit off, so that the server
    loads this plan rather than fitting again."""
    p = f.plan.params
    words = ["llama-server", "--model", model, "--ctx-size", str(f.n_ctx),
             "--batch-size", str(p.n_batch), "--ubatch-size", str(p.n_ubatch),
             "--cache-type-k", p.type_k, "--cache-type-v", p.type_v,
             "--flash-attn", p.flash_attn, "--n-gpu-layers", str(f.n_gpu_layers)]
    if f.overrides:
        words += ["--override-tensor", ",".join(f.overrides)]
    if f.n_cpu_moe:
        words += ["--n-cpu-moe", str(f.n_cpu_moe)]
    words += ["--parallel", str(p.n_parallel),
              "--kv-unified" if p.kv_unified else "--no-kv-unified"]
    if p.swa_full:
        words.append("--swa-full")
    words += ["--load-mode", "mmap" if p.mmap else "none", "--fit", "off"]
    return shlex.join(words)

