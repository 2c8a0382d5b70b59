"""The named choices of the planning options (``--attention``, ``--optimizer-impl``,
``--method``, ``--optimizer``, ``--loss``): small ``str`` enums in a module of their own, so the
command line can type its options without importing the plans (llmcalc.formulas.activations,
llmcalc.planning.finetune) that use them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Kernel(str, Enum):
    """How attention runs: transformers' ``attn_implementation``."""

    sdpa = "sdpa"  # torch's scaled_dot_product_attention (flash / memory-efficient kernels)
    eager = "eager"  # matmul + softmax: the a × s scores of every query are materialised
    flash = "flash"  # FlashAttention-2: like sdpa, never the scores


class OptimizerImpl(str, Enum):
    """torch.optim.AdamW's implementation (``foreach=``/``fused=``): what its step allocates."""

    loop = "loop"  # one parameter at a time
    foreach = "foreach"  # multi-tensor kernels; the default on CUDA
    fused = "fused"  # one fused kernel per dtype group


class Method(str, Enum):
    """A fine-tune's method (``fit``/``train --method``): llmcalc.planning.finetune plans each."""

    full = "full"
    lora = "lora"
    qlora = "qlora"


class Optimizer(str, Enum):
    """A fine-tune's optimizer (``--optimizer``): its states per trainable parameter are
    llmcalc.planning.finetune.OPTIMIZER_BYTES."""

    adamw = "adamw"
    adamw_8bit = "adamw-8bit"
    paged_adamw = "paged-adamw"
    paged_adamw_8bit = "paged-adamw-8bit"


class Loss(str, Enum):
    """How the cross-entropy over the vocabulary is computed."""

    full = "full"  # transformers' ForCausalLMLoss: fp32 log-probabilities of every token
    chunked = "chunked"  # fused / chunked (Liger-style): one chunk of tokens at a time


class EngineName(str, Enum):
    """An inference engine whose own rules a plan follows (``--engine NAME[==VERSION]``)."""

    llama_cpp = "llama.cpp"
    vllm = "vllm"
    sglang = "sglang"
    trtllm = "trtllm"
    transformers = "transformers"


@dataclass(frozen=True)
class Engine:
    """``--engine vllm==0.6``: the engine and, where one was named, the version whose rules apply
    (None: the version llmcalc follows for that engine, named in its module)."""

    name: EngineName
    version: str | None = None

    def __str__(self) -> str:
        return self.name.value + (f"=={self.version}" if self.version else "")


ENGINE_ALIASES = {"llamacpp": "llama.cpp", "llama-cpp": "llama.cpp", "tensorrt-llm": "trtllm",
                  "tensorrt_llm": "trtllm", "trt-llm": "trtllm", "hf": "transformers"}


def parse_engine(text: str) -> Engine:
    """'vllm', 'vllm==0.6.3', 'llama.cpp' → :class:`Engine`; anything else raises UsageError."""
    from llmcalc.errors import UsageError

    name, sep, version = text.strip().partition("==")
    key = ENGINE_ALIASES.get(name.strip().lower(), name.strip().lower())
    names = ", ".join(e.value for e in EngineName)
    try:
        engine = EngineName(key)
    except ValueError:
        raise UsageError(f"--engine {text!r}: not an engine llmcalc models ({names}; "
                         "a version as vllm==0.6)") from None
    version = version.strip()
    # llama.cpp's releases are build numbers (b6490); the others' digits and dots
    build = engine is EngineName.llama_cpp and version[:1] == "b" and version[1:].isdigit()
    if sep and not build and not (version and all(part.isdigit() for part in version.split("."))):
        raise UsageError(f"--engine {text!r}: a version is digits and dots, as vllm==0.6.3")
    return Engine(engine, version or None)


# the backends an engine runs on (`latency --backend`): llmcalc.planning.speed fits each engine ×
# backend on its own measured rows
BACKENDS = ("cuda", "metal", "rocm", "vulkan", "cpu")


def parse_backend(text: str | None, kind: str) -> str:
    """``--backend`` as named, else the card's own: metal on Apple silicon (``kind`` apple), cuda
    on the rest; anything else raises UsageError."""
    from llmcalc.errors import UsageError

    if text is None:
        return "metal" if kind == "apple" else "cuda"
    key = text.strip().lower()
    if key not in BACKENDS:
        raise UsageError(f"--backend {text!r}: not a backend llmcalc models ({', '.join(BACKENDS)})")
    return key
