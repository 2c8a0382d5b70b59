"""The memory model of a training step and a prefill (llmcalc.formulas.activations): its terms by hand, the
tensors transformers' layers really keep, and a sample of the measured grid
(bench/memory_vs_measured.py runs all of it)."""

from __future__ import annotations

from typing import Any

import pytest

from llmcalc.errors import ParameterError
from llmcalc.formulas import activations as A
from llmcalc.inputs.config import load_spec, spec_from_dict
from llmcalc.planning.hardware import Accelerator
from llmcalc.planning.serving import fit
from llmcalc.units import DType

# the harness's shrunk Llama: h 384, 6 heads of 64, 2 KV heads, SwiGLU 1152
LLAMA = {"model_type": "llama", "hidden_size": 384, "intermediate_size": 1152,
         "num_hidden_layers": 4, "num_attention_heads": 6, "num_key_value_heads": 2,
         "vocab_size": 8192, "max_position_embeddings": 4096, "tie_word_embeddings": False}
FP32, BF16, AMP = A.Precision(4), A.Precision(2), A.Precision(4, amp=True)


def llama_kind() -> A.LayerKind:
    spec = spec_from_dict(LLAMA)
    return A._layer_kind(spec, spec.layer_groups[0])


def test_llama_layer_by_hand() -> None:
    k = llama_kind()
    assert (k.rms_norm, k.attn_readers, k.gated, k.ffn, k.experts) == (True, 3, True, 1152, 0)
    h, f = 384, 1152
    # RMSNorm: fp32 input + rsqrt + normalized + output (read by q, k, v at once)
    assert A.norm_bytes(k, FP32, readers=3, trained=True, read=True) == 4 * h + 4 + 4 * h + 4 * h
    # bf16 weights: the fp32 upcast stays 4 B, the rest 2 B
    assert A.norm_bytes(k, BF16, readers=3, trained=True, read=True) == 4 * h + 4 + 2 * h + 2 * h
    # autocast: q, k and v each cast the fp32 output to bf16 themselves
    assert A.norm_bytes(k, AMP, readers=3, trained=True, read=True) == 4 * h + 4 + 4 * h + 3 * 2 * h
    # sdpa: q 384 + k, v 128 each + output 384, and 6 fp32 log-sum-exps
    assert A.attention_bytes(k, FP32, kernel=A.Kernel.sdpa, keys=512) == 1024 * 4 + 6 * 4
    # eager: q, k and v repeated to 6 heads, fp32 probabilities of 512 keys, the output twice
    assert A.attention_bytes(k, FP32, kernel=A.Kernel.eager, keys=512) == (
        4 * 384 * 4 + 6 * 512 * 4)
    assert A.attention_bytes(k, BF16, kernel=A.Kernel.eager, keys=512) == (
        4 * 384 * 2 + 6 * 512 * (4 + 2))
    # SwiGLU: gate, act(gate), up, product
    assert A.mlp_bytes(k, FP32, trained=True) == 4 * f * 4
    assert A.mlp_bytes(k, FP32, trained=False) == 3 * f * 4
    assert A.layer_bytes_per_token(k, FP32, kernel=A.Kernel.sdpa, keys=512) == (
        2 * (12 * h + 4) + 4120 + 16 * f) == 31_776  # 82.75 B per token per unit of h


def test_loss_is_twelve_bytes_per_token_and_vocabulary_entry() -> None:
    assert A.loss_bytes(tokens=1024, vocab=8192) == 12 * 1024 * 8192
    assert A.loss_bytes(tokens=8192, vocab=128_256, loss=A.Loss.chunked) == 12 * 1024 * 128_256
    assert A.loss_bytes(tokens=100, vocab=10, loss=A.Loss.chunked) == 12 * 100 * 10


def test_step_peak_moments() -> None:
    spec = spec_from_dict(LLAMA)
    base = A.step_memory(spec, batch=2, seq=512, precision=FP32)
    params = 13_176_192  # 2 × 8192·384 + 4 × (384·(384 + 2·128 + 384) + 3·384·1152 + 2·384) + 384
    assert base.weights == base.gradients == 4 * params
    assert base.optimizer == 2 * 4 * params + 4 * 39  # m, v and 39 step counters
    assert base.temporaries == 4 * params  # foreach: one more copy of the parameters
    assert base.start_of_backward > base.optimizer_step and base.peak == base.start_of_backward
    fused = A.step_memory(spec, batch=2, seq=512, precision=FP32,
                          optimizer=A.OptimizerImpl.fused)
    assert fused.temporaries == 0 and fused.peak == base.peak
    # a tiny step peaks at the optimizer step: weights, states, gradients and the foreach copy
    tiny = A.step_memory(spec, batch=1, seq=8, precision=FP32)
    assert tiny.peak == tiny.optimizer_step == 5 * 4 * params + 4 * 39
    assert tiny.at_peak["optimizer/temporaries"] == 4 * params
    ckpt = A.step_memory(spec, batch=2, seq=512, precision=FP32, recompute_full=True)
    assert ckpt.peak < base.peak


def test_prefill_by_hand() -> None:
    spec = spec_from_dict(LLAMA)
    # sdpa: 4 hidden-wide and 3 MLP-wide fp32 tensors per prompt token
    assert A.prefill_bytes(spec, batch=2, tokens=512, act_bytes=4) == 1024 * (4 * 384 + 3 * 1152) * 4
    # eager: q, k, v, the output and two fp32 a × s score tensors plus the mask, per query
    eager = A.prefill_bytes(spec, batch=1, tokens=1024, act_bytes=4, kernel=A.Kernel.eager)
    assert eager == 1024 * (4 * 384 + 4 * 384) * 4 + 1024 * 1024 * (2 * 4 * 6 + 4)
    chunked = A.prefill_bytes(spec, batch=4, tokens=1024, act_bytes=4, chunk=256)
    assert chunked == 256 * (4 * 384 + 3 * 1152) * 4


def test_unmodelled_layer_kinds_are_refused() -> None:
    with pytest.raises(ParameterError, match="mamba layers are not attention layers"):
        A.require_supported(load_spec("falcon-mamba-7b"))
    # a dropout DROPOUT_SITES does not place (Mistral's attention_dropout) is refused
    mistral = spec_from_dict({**LLAMA, "model_type": "mistral", "attention_dropout": 0.1,
                              "sliding_window": None}, name="mistral")
    with pytest.raises(ParameterError) as e:
        A.require_supported(mistral)
    assert str(e.value) == ("attention: mistral: dropout 0.1 (attention_dropout) in the config is "
                            "not modelled; set it to 0 (--set) or use the default estimate")
    A.require_supported(mistral, training=False)  # eval: dropout does nothing
    A.require_supported(load_spec("gpt2"))  # GPT-2's three dropouts are modelled


def test_dropout_masks_by_hand(cli: Any) -> None:
    """GPT-2's dropouts on a GPU (1-byte masks): per layer the attention probabilities' mask and
    both residual branches' masks; once, the embeddings' mask. On the CPU the masks are noise of
    the dropped tensor's dtype."""
    spec = spec_from_dict({"model_type": "gpt2", "n_embd": 256, "n_layer": 4, "n_head": 4,
                           "vocab_size": 8192, "n_positions": 4608}, name="gpt2")
    k = A._layer_kind(spec, spec.layer_groups[0])
    assert (k.attn_dropout, k.resid_dropout, k.rotary) == (True, True, False)
    plain = A.LayerKind(**{**k.__dict__, "attn_dropout": False, "resid_dropout": False})
    for p, mask in ((FP32, 1), (AMP, 1), (A.Precision(4, cuda=False), 4),
                    (A.Precision(4, amp=True, cuda=False), 2)):
        c = p.act
        extra = (A.layer_bytes_per_token(k, p, kernel=A.Kernel.eager, keys=64)
                 - A.layer_bytes_per_token(plain, p, kernel=A.Kernel.eager, keys=64))
        # 4 heads × 64 keys × (mask + the dropped probabilities the ·V matmul keeps, less the
        # 16-bit cast it kept without dropout) + 2 residual masks of 256 × c
        cast = c if c < 4 else 0
        assert extra == 4 * 64 * (mask + c - cast) + 2 * 256 * (1 if p.cuda else c)
    no_drop = spec_from_dict({"model_type": "gpt2", "n_embd": 256, "n_layer": 4, "n_head": 4,
                              "vocab_size": 8192, "n_positions": 4608, "attn_pdrop": 0.0,
                              "resid_pdrop": 0.0, "embd_pdrop": 0.0})
    step = A.step_memory(spec, batch=1, seq=64, precision=FP32, kernel=A.Kernel.eager)
    base = A.step_memory(no_drop, batch=1, seq=64, precision=FP32, kernel=A.Kernel.eager)
    # per token: 4 layers × (4 × 64 × (1 + 4) + 2 × 256 × 1) + the embeddings' 256 × 1
    assert step.activations - base.activations == 64 * (4 * (4 * 64 * 5 + 2 * 256) + 256)
    with pytest.raises(ParameterError) as e:
        A.step_memory(spec, batch=1, seq=64, precision=FP32, kernel=A.Kernel.sdpa)
    assert str(e.value) == ("attention sdpa: gpt2: the attention dropout (attn_pdrop) runs inside "
                            "the sdpa kernel, whose saved state is not measured; use --attention "
                            "eager or set attn_pdrop to 0 (--set)")
    with pytest.raises(ParameterError) as e:
        A.step_memory(spec, batch=1, seq=64, precision=FP32, kernel=A.Kernel.eager,
                      lora_params=1000, lora_adapters=4, lora_r=8)
    assert str(e.value) == ("method: gpt2: dropout 0.1 (attn_pdrop) with a frozen base is not "
                            "measured; set it to 0 (--set)")
    run = cli("train", "gpt2", "--gpu", "h100", "--attention", "eager", "--ctx", "1k", "--json")
    assert run.code == 0, run.stderr
    sdpa = cli("train", "gpt2", "--gpu", "h100", "--attention", "sdpa")
    assert (sdpa.code, sdpa.stderr) == (
        2, "error: --attention sdpa: openai-community/gpt2: the attention dropout (attn_pdrop) runs "
           "inside the sdpa kernel, whose saved state is not measured; use --attention eager or "
           "set attn_pdrop to 0 (--set)\n")


def test_train_cli_layer_kind_plan(cli: Any) -> None:
    run = cli("train", "llama-3.2-1b", "--gpu", "a100-40gb", "--ctx", "2k", "--micro-batch", "4",
              "--attention", "sdpa", "--json")
    assert run.code == 0, run.stderr
    d = run.json()
    mem = d["memory_per_gpu"]
    assert d["attention"] == "sdpa" and d["peak_moment"] == "start of backward"
    assert mem["logits/loss"] == 12 * 4 * 2048 * 128_256
    # held at the start of backward: weights, AdamW's states, activations, logits and loss
    assert d["memory_per_gpu_bytes"] == (mem["weights"] + mem["optimizer/momentum"]
                                         + mem["optimizer/variance"] + mem["activations"]
                                         + mem["logits/loss"])
    assert d["bytes_per_param"]["weights"] == 4  # fp32 weights under bf16 autocast
    bad = cli("train", "llama-3.2-1b", "--gpu", "h100", "--amp")
    assert bad.code == 2
    assert "--dtype and --amp: they apply with --attention" in bad.stderr


def test_fit_counts_the_eager_scores(cli: Any) -> None:
    sdpa = cli("fit", "llama-3-8b", "--gpu", "h100", "--ctx", "8k", "--json").json()
    eager = cli("fit", "llama-3-8b", "--gpu", "h100", "--ctx", "8k", "--attention", "eager",
                "--json").json()
    assert sdpa["attention"] == "sdpa" and eager["max_batch"] < sdpa["max_batch"]
    assert eager["peak_bytes"] <= eager["usable_bytes"]
    mamba = cli("fit", "falcon-mamba-7b", "--gpu", "h100", "--json").json()
    assert mamba["attention"] is None and mamba["prefill_bytes"] is None


# ---- against torch --------------------------------------------------------------------------------


def _saved_bytes(case: Any, layer: int | None) -> int:
    """Bytes of the storages autograd saves first inside layer ``layer`` (parameters aside;
    None: anywhere in the model)."""
    import torch
    from helpers import memory_harness as h

    model = h.build(case)
    ids = h._tokens(case, case.seq)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}
    inside = [False]
    if layer is not None:
        [block] = [m for name, m in model.named_modules()
                   if name.endswith((f"layers.{layer}", f"h.{layer}"))]
        block.register_forward_pre_hook(lambda m, a: inside.__setitem__(0, True))
        block.register_forward_hook(lambda m, a, o: inside.__setitem__(0, False))

    def pack(t: Any) -> Any:
        st = t.untyped_storage()
        ptr = st.data_ptr()
        if ptr not in params and ptr not in seen:
            seen[ptr] = st.nbytes() if inside[0] or layer is None else 0
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), h._autocast(case):
        model(input_ids=ids, labels=ids).loss.backward()
    return sum(seen.values())


LAYER_CASES = [
    ("llama", "fp32", False, "sdpa"), ("llama", "bf16", False, "sdpa"),
    ("llama", "fp32", True, "sdpa"), ("llama", "fp32", False, "eager"),
    ("gpt2", "fp32", False, "sdpa"), ("gpt2", "fp32", True, "eager"),
    ("mixtral", "fp32", False, "sdpa"), ("mixtral", "fp32", True, "sdpa"),
]


@pytest.mark.torch
@pytest.mark.parametrize(("model", "dtype", "amp", "attention"), LAYER_CASES)
def test_layer_keeps_what_the_formula_says(model: str, dtype: str, amp: bool, attention: str) -> None:
    """A layer's saved tensors grow by exactly layer_bytes_per_token per added sequence token
    (batch 3 minus batch 2: the autocast weight casts and shared tensors cancel)."""
    pytest.importorskip("torch")
    from helpers import memory_harness as h

    seq = 64
    one, two = (h.Case(model, "train", b, seq, dtype=dtype, amp=amp, attention=attention)
                for b in (2, 3))
    measured = _saved_bytes(two, 1) - _saved_bytes(one, 1)
    spec = spec_from_dict(h.MODELS[model])
    k = A._layer_kind(spec, spec.layer_groups[0])
    p = A.Precision(4 if dtype == "fp32" else 2, amp)
    expected = seq * A.layer_bytes_per_token(k, p, kernel=A.Kernel(attention), keys=seq)
    # MoE: the router's int64 bookkeeping varies with the routing by a few bytes per token
    assert expected == pytest.approx(measured, rel=0.03 if model == "mixtral" else 0)


DROPOUT = {"gpt2": {"attn_pdrop": 0.1, "resid_pdrop": 0.1, "embd_pdrop": 0.1},
           "llama": {"attention_dropout": 0.1}}


@pytest.mark.torch
@pytest.mark.parametrize("fused", [False, True], ids=["cpu-noise", "fused-mask"])
@pytest.mark.parametrize(("model", "amp"), [("gpt2", False), ("gpt2", True), ("llama", False),
                                            ("llama", True)])
def test_dropout_keeps_what_the_formula_says(model: str, amp: bool, fused: bool,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """What dropout adds to a training step's saved tensors, per added sequence token (batch 3
    minus batch 2, the same model without dropout taken off), eager attention: the CPU's noise
    tensors at the dropped tensor's dtype, and (``fused``) the 1-byte masks of native_dropout,
    the kernel at::dropout runs on a GPU, here run on the CPU in its place."""
    torch = pytest.importorskip("torch")
    from helpers import memory_harness as h

    if fused:
        def native(x: Any, p: float = 0.5, training: bool = True, inplace: bool = False) -> Any:
            return torch.native_dropout(x, p, training)[0] if training and p > 0 else x

        monkeypatch.setattr(torch.nn.functional, "dropout", native)
    monkeypatch.setitem(h.MODELS, "dropped", {**h.MODELS[model], **DROPOUT[model]})
    seq = 64

    def per_token(name: str) -> int:
        one, two = (h.Case(name, "train", b, seq, amp=amp, attention="eager") for b in (2, 3))
        return _saved_bytes(two, None) - _saved_bytes(one, None)

    measured = per_token("dropped") - per_token(model)
    p = A.Precision(4, amp=amp, cuda=fused)
    ours = [A.step_memory(spec_from_dict(h.MODELS[m]), batch=1, seq=seq, precision=p,
                          kernel=A.Kernel.eager).activations for m in ("dropped", model)]
    assert measured == ours[0] - ours[1] > 0


MEASURED_SAMPLE = [
    ("llama", "train", 1, 256, {}),
    ("mixtral", "train", 1, 256, {"amp": True}),
    ("gpt2", "train", 1, 256, {"attention": "eager", "recompute": "full"}),
    ("llama", "train", 1, 256, {"lora_r": 8}),
    ("llama", "infer", 2, 512, {"attention": "eager"}),
]


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.parametrize(("model", "mode", "batch", "seq", "extra"), MEASURED_SAMPLE)
def test_peak_within_ten_percent_of_memtracker(model: str, mode: str, batch: int, seq: int,
                                                extra: dict[str, Any]) -> None:
    pytest.importorskip("torch")
    from helpers import memory_harness as h

    case = h.Case(model, mode, batch, seq, **extra)
    measured = h.measure(case)
    assert h.estimate(case)["peak"] == pytest.approx(measured.peak, rel=0.10)


@pytest.mark.slow
@pytest.mark.torch
def test_fit_never_promises_more_than_fits() -> None:
    """On a card exactly the size of the measured peak at batch 4, context 1,024 (no headroom),
    fit's largest batch at that context is at most 4."""
    pytest.importorskip("torch")
    from helpers import memory_harness as h

    case = h.Case("llama", "infer", 4, 1024)
    peak = h.measure(case).peak
    card = Accelerator("measured", "measured card", peak, 0, 0, "the measured peak")
    spec = spec_from_dict(h.MODELS["llama"])
    f = fit(spec, accelerator=card, dtype=DType.fp32, kv_dtype=DType.fp32, ctx=1024 + 4,
            headroom=0, attention=A.Kernel.sdpa)
    assert f.batch is not None and f.batch <= 4
    # weights + cache alone promise more than the card holds
    steady = fit(spec, accelerator=card, dtype=DType.fp32, kv_dtype=DType.fp32, ctx=1024 + 4,
                 headroom=0)
    assert steady.batch is not None and steady.batch > 4


# Per token of layer 1 at sequence 64 with bf16 weights, measured on the CPU (autograd's saved
# tensors): GPT-2 keeps its eager softmax at bf16 (no fp32 upcast) and, on the CPU, LayerNorm's
# mean and rstd at bf16; Llama upcasts its softmax and RMSNorm to fp32 itself.
BF16_LAYERS = [("gpt2", "eager", 14856), ("gpt2", "sdpa", 15384), ("llama", "eager", 20744),
               ("llama", "sdpa", 17440)]


@pytest.mark.torch
@pytest.mark.parametrize(("model", "attention", "per_token"), BF16_LAYERS)
def test_bf16_layer_keeps_what_the_formula_says(model: str, attention: str,
                                                per_token: int) -> None:
    pytest.importorskip("torch")
    from helpers import memory_harness as h

    seq = 64
    two, three = (h.Case(model, "train", b, seq, dtype="bf16", attention=attention)
                  for b in (2, 3))
    measured = _saved_bytes(three, 1) - _saved_bytes(two, 1)
    spec = spec_from_dict(h.MODELS[model])
    k = A._layer_kind(spec, spec.layer_groups[0])
    cpu = A.layer_bytes_per_token(k, A.Precision(2, cuda=False), kernel=A.Kernel(attention),
                                  keys=seq)
    assert measured == seq * cpu == seq * per_token


def test_gpt2_bf16_layer_by_hand() -> None:
    """GPT-2 (h 256, 4 heads of 64, f 1024) at bf16, 64 keys: two LayerNorms (input, output: 2 B
    each, mean + rstd 8 B on a GPU, 4 B on the CPU), eager attention's q, k, v and the output
    (4·h·2 B) and the bf16 probabilities (4 heads · 64 · 2 B), gelu_new's four tensors and its
    output (5·f·2 B)."""
    spec = spec_from_dict({"model_type": "gpt2", "n_embd": 256, "n_layer": 4, "n_head": 4,
                           "vocab_size": 8192, "n_positions": 4608, "attn_pdrop": 0.0,
                           "embd_pdrop": 0.0, "resid_pdrop": 0.0})
    k = A._layer_kind(spec, spec.layer_groups[0])
    gpu, cpu = A.Precision(2), A.Precision(2, cuda=False)
    norms = 2 * (2 * 256 * 2)
    mlp = 5 * 1024 * 2
    attention = 4 * 256 * 2 + 4 * 64 * 2
    assert A.layer_bytes_per_token(k, gpu, kernel=A.Kernel.eager, keys=64) == \
        norms + 2 * 8 + attention + mlp == 14864
    assert A.layer_bytes_per_token(k, cpu, kernel=A.Kernel.eager, keys=64) == 14856
    # under autocast the softmax runs in fp32 (autocast's fp32 list) and matmul keeps its bf16 cast
    assert A.attention_bytes(k, AMP, kernel=A.Kernel.eager, keys=64) == \
        4 * 256 * 2 + 4 * 64 * (4 + 2)


# Tiny configs of the types whose 16-bit eager layers keep what Llama's and GPT-2's do not
# (transformers' modeling files): the softmax in the scores' dtype (gpt-sw3 is GPT-2's code,
# BioGPT, GPT-NeoX-Japanese), the RMSNorm weight multiplied in fp32 (Gemma, Helium), relu's
# output shared with fc2 (OPT).
NO_DROP = {"attention_dropout": 0.0, "hidden_dropout": 0.0, "activation_dropout": 0.0,
           "dropout": 0.0, "layerdrop": 0.0}
SMALL = {"num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1024,
         "max_position_embeddings": 1024}
HALF_TYPES: dict[str, dict[str, Any]] = {
    "gpt-sw3": {"model_type": "gpt-sw3", "n_embd": 256, "n_layer": 2, "n_head": 4,
                "vocab_size": 1024, "n_positions": 1024, "attn_pdrop": 0.0, "embd_pdrop": 0.0,
                "resid_pdrop": 0.0},
    "biogpt": {"model_type": "biogpt", "hidden_size": 256, "intermediate_size": 512, **SMALL,
               "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0, **NO_DROP},
    "gpt_neox_japanese": {"model_type": "gpt_neox_japanese", "hidden_size": 256,
                          "intermediate_multiple_size": 2, "bos_token_id": 1,
                          "eos_token_id": 2, **SMALL, **NO_DROP},
    "gemma": {"model_type": "gemma", "hidden_size": 256, "intermediate_size": 512,
              "num_key_value_heads": 2, "head_dim": 64, **SMALL, **NO_DROP},
    "helium": {"model_type": "helium", "hidden_size": 256, "intermediate_size": 512,
               "num_key_value_heads": 2, "head_dim": 64, **SMALL, **NO_DROP},
    "opt": {"model_type": "opt", "hidden_size": 256, "ffn_dim": 512, "word_embed_proj_dim": 256,
            **SMALL, **NO_DROP},
}
# Per token of layer 1 at sequence 64, measured on the CPU (autograd's saved tensors): with
# 16-bit weights (bf16 and fp16 alike), with fp32 weights, and with fp32 weights under bf16 autocast
HALF_LAYERS = [("gpt-sw3", 14856, 29712, 16912), ("biogpt", 6664, 13328, 9744),
               ("gpt_neox_japanese", 6664, 13328, 8720), ("gemma", 12808, 19464, 14344),
               ("helium", 12808, 19464, 14344), ("opt", 6664, 11280, 8720)]


@pytest.mark.torch
@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32", "amp"])
@pytest.mark.parametrize(("model", "half", "full", "amp"), HALF_LAYERS)
def test_eager_layer_of_each_type_keeps_what_the_formula_says(
        model: str, half: int, full: int, amp: int, dtype: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    from helpers import memory_harness as h

    monkeypatch.setitem(h.MODELS, model, HALF_TYPES[model])
    seq = 64
    weights = "fp32" if dtype == "amp" else dtype
    two, three = (h.Case(model, "train", b, seq, dtype=weights, amp=dtype == "amp",
                         attention="eager") for b in (2, 3))
    measured = _saved_bytes(three, 1) - _saved_bytes(two, 1)
    spec = spec_from_dict(HALF_TYPES[model], name=model)
    A.require_supported(spec)
    k = A._layer_kind(spec, spec.layer_groups[0])
    p = A.Precision(4 if weights == "fp32" else 2, amp=dtype == "amp", cuda=False)
    cpu = A.layer_bytes_per_token(k, p, kernel=A.Kernel.eager, keys=seq)
    assert measured == seq * cpu == seq * {"fp32": full, "amp": amp}.get(dtype, half)


def test_half_layers_by_hand() -> None:
    """At 16-bit weights, 64 keys, h 256, 4 heads of 64, on a GPU (LayerNorm's mean and rstd in
    fp32): BioGPT (f 512, gelu) keeps two LayerNorms (input, output: 2 B each, 8 B of stats), q,
    k, v and the output (4·h·2 B), bf16 probabilities (4 · 64 · 2 B: no fp32 softmax and cast),
    fc1's output and gelu's (2·f·2 B); OPT (relu) upcasts its softmax (fp32 probabilities and
    their bf16 cast, 4 · 64 · (4 + 2) B) and keeps one f-wide tensor: relu keeps its output, which
    fc2 reads. Gemma (RMSNorm, GQA 4:2, f 512 gated) keeps per RMSNorm the fp32
    input, the fp32 normalized tensor (Llama: at 2 B) and its 2-byte output."""
    gpu = A.Precision(2)
    norms = 2 * (2 * 256 * 2 + 8)
    qkvo = 4 * 256 * 2
    for model, probs, ffn_kept in (("biogpt", 2, 2), ("opt", 4 + 2, 1)):
        spec = spec_from_dict(HALF_TYPES[model], name=model)
        k = A._layer_kind(spec, spec.layer_groups[0])
        assert A.layer_bytes_per_token(k, gpu, kernel=A.Kernel.eager, keys=64) == \
            norms + qkvo + 4 * 64 * probs + ffn_kept * 512 * 2 == 6672
    spec = spec_from_dict(HALF_TYPES["gemma"], name="gemma")
    k = A._layer_kind(spec, spec.layer_groups[0])
    rms = (4 + 4 + 2) * 256 + 4
    gemma_attention = 4 * 256 * 2 + 4 * 64 * (4 + 2)  # fp32 probabilities and their bf16 cast
    assert A.layer_bytes_per_token(k, gpu, kernel=A.Kernel.eager, keys=64) == \
        2 * rms + gemma_attention + 4 * 512 * 2 == 12808


def test_layers_the_kinds_do_not_describe_are_refused_for_training(cli: Any) -> None:
    spec = load_spec("qwen3-0.6b")
    with pytest.raises(ParameterError) as e:
        A.require_supported(spec)
    assert str(e.value) == (
        "attention: Qwen/Qwen3-0.6B: its attention normalizes q and k per head (q_norm, k_norm); "
        "the layer-kind training plan does not describe it, only the default estimate applies")
    A.require_supported(spec, training=False)  # the prefill's transients are another formula
    run = cli("train", "phi-2", "--gpu", "h100", "--attention", "eager", "--dtype", "bf16")
    assert run.code == 2
    assert run.stderr.strip().splitlines()[-1] == (
        "error: --attention: microsoft/phi-2: attention and the MLP run in parallel (one shared "
        "norm or norm input); the layer-kind training plan does not describe it, only the default "
        "estimate applies")


# What dropout adds at sequence 64 (bytes, measured): the CPU's bf16 noise, the fused 1-byte masks
BF16_DROPOUT = [
    ("gpt2", "eager", {"attn_pdrop": 0.1, "resid_pdrop": 0.1, "embd_pdrop": 0.1}, 557056, 344064),
    ("gpt2", "sdpa", {"resid_pdrop": 0.1, "embd_pdrop": 0.1}, 294912, 147456),
    ("llama", "eager", {"attention_dropout": 0.1}, 196608, 98304),
]


@pytest.mark.torch
@pytest.mark.parametrize("fused", [False, True], ids=["cpu-noise", "fused-mask"])
@pytest.mark.parametrize(("model", "attention", "drop", "noise", "mask"), BF16_DROPOUT)
def test_bf16_dropout_keeps_what_the_formula_says(model: str, attention: str,
                                                  drop: dict[str, float], noise: int, mask: int,
                                                  fused: bool,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """As test_dropout_keeps_what_the_formula_says, with bf16 weights: the whole model's saved
    tensors per added sequence token with dropout, and the same model's without."""
    torch = pytest.importorskip("torch")
    from helpers import memory_harness as h

    if fused:
        def native(x: Any, p: float = 0.5, training: bool = True, inplace: bool = False) -> Any:
            return torch.native_dropout(x, p, training)[0] if training and p > 0 else x

        monkeypatch.setattr(torch.nn.functional, "dropout", native)
    monkeypatch.setitem(h.MODELS, "dropped", {**h.MODELS[model], **drop})
    seq = 64

    def per_token(name: str) -> int:
        one, two = (h.Case(name, "train", b, seq, dtype="bf16", attention=attention)
                    for b in (2, 3))
        return _saved_bytes(two, None) - _saved_bytes(one, None)

    without, with_drop = per_token(model), per_token("dropped")
    p = A.Precision(2, cuda=fused)
    ours = [A.step_memory(spec_from_dict(h.MODELS[m]), batch=1, seq=seq, precision=p,
                          kernel=A.Kernel(attention)).activations for m in ("dropped", model)]
    assert with_drop - without == ours[0] - ours[1] == (mask if fused else noise)


def test_train_cli_gpt2_bf16_eager(cli: Any) -> None:
    """`llmcalc train gpt2 --attention eager --dtype bf16` with its dropouts set to 0 (--set
    reaches the class defaults the config.json leaves out): per token, 12 layers of two
    LayerNorms (2·(768·2 + 8 + 768·2)), q, k, v and the output (4·768·2), the bf16 probabilities
    (12 heads · 1,024 keys · 2) and gelu_new's 5·3,072·2, and the final norm (768·2 + 8 + 768·2)."""
    drops = ("--set", "attn_pdrop=0", "--set", "resid_pdrop=0", "--set", "embd_pdrop=0")
    layer = 2 * (768 * 2 + 8 + 768 * 2) + 4 * 768 * 2 + 12 * 1024 * 2 + 5 * 3072 * 2
    assert layer == 67_600
    for attention, per_layer in (("eager", layer), ("sdpa", layer - 12 * 1024 * 2 + 12 * 4
                                                     + 2 * 768 * 2)):
        run = cli("train", "gpt2", "--gpu", "h100", "--attention", attention, "--dtype", "bf16",
                  "--ctx", "1k", *drops, "--json")
        assert run.code == 0, run.stderr
        assert run.json()["memory_per_gpu"]["activations"] == \
            1024 * (12 * per_layer + 768 * 2 + 8 + 768 * 2)
    eager = cli("train", "gpt2", "--gpu", "h100", "--attention", "eager", "--dtype", "bf16",
                "--ctx", "1k", *drops, "--json")
    assert eager.json()["memory_per_gpu"]["activations"] == 833_822_720
