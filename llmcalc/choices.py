"""The named choices of the planning options (``--attention``, ``--optimizer-impl``,
``--method``, ``--optimizer``, ``--loss``): small ``str`` enums in a module of their own, so the
command line can type its options without importing the plans (llmcalc.formulas.activations,
llmcalc.planning.finetune) that use them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from llmcalc.planning.hardware import Accelerator


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
# the names engines give the same backends: llama.cpp builds ROCm as GGML_HIP (its ggml-hip
# backend), PyTorch (transformers) runs Metal as its "mps" device
BACKEND_ALIASES = {"hip": "rocm", "mps": "metal"}


# the makers' GPUs each backend runs on (Accelerator.maker): Metal is Apple's API; llama.cpp's CUDA
# backend (ggml/src/ggml-cuda) and vLLM's, SGLang's and TensorRT-LLM's CUDA builds run on NVIDIA
# GPUs, their ROCm (HIP) builds on AMD's; Vulkan on any maker's discrete or integrated GPU, on
# Apple's only through MoltenVK, of which llmcalc has no measurement (refused too). The CPU
# backend is a CPU, which the table does not hold: it is described by its figures alone (a card
# not in the table: docs/latency.md, "llama.cpp on a CPU").
BACKEND_MAKERS = {"metal": ("apple",), "cuda": ("nvidia",), "rocm": ("amd",),
                  "vulkan": ("nvidia", "amd", "intel"), "cpu": ()}
# a table card's backend when none is named, by maker (NVIDIA's and a card by its figures: cuda)
DEFAULT_BACKEND = {"apple": "metal", "amd": "rocm", "intel": "vulkan"}


def parse_backend(text: str | None, acc: Accelerator) -> str:
    """``--backend`` as named (or as an engine names it: ``BACKEND_ALIASES``), else the card's own
    (``DEFAULT_BACKEND``: metal on Apple silicon, rocm on AMD's, vulkan on Intel's, cuda on
    NVIDIA's and a card given by its figures); a name that is not a backend, or one that does not
    run on the table's card (``BACKEND_MAKERS``), raises UsageError."""
    from llmcalc.errors import UsageError

    if text is None:
        return DEFAULT_BACKEND.get(acc.maker, "cuda")
    named = text.strip().lower()
    key = BACKEND_ALIASES.get(named, named)
    if key not in BACKENDS:
        raise UsageError(f"--backend {text!r}: not a backend llmcalc models ({', '.join(BACKENDS)})")
    if acc.maker and acc.maker not in BACKEND_MAKERS[key]:
        if key == "cpu":
            raise UsageError(f"--backend cpu: runs on a CPU, not on the {acc.name}; describe the "
                             "CPU by its figures (--gpu-flops, --gpu-bandwidth) without a table card")
        runs = ", ".join(b for b, makers in BACKEND_MAKERS.items() if acc.maker in makers)
        if key == "vulkan":  # llama.cpp builds Vulkan on macOS through MoltenVK, never measured
            raise UsageError(f"--backend vulkan: no measurement of it on the {acc.name} (MoltenVK) "
                             f"was found; its backends: {runs}")
        shown = named if named == key else f"{named} ({key})"  # an alias as typed, then its backend
        raise UsageError(f"--backend {shown}: does not run on the {acc.name} "
                         f"(its backends: {runs})")
    return key
