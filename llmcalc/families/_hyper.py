"""Hyper-connections: several residual streams in place of one (Zhu et al. 2024, "Hyper-Connections",
arXiv 2409.19606), shared by every family that has them.

The hidden state is hc streams of width d, carried as one vector of hc·d. Before each block a
learned mixer reads the normalised streams and forms the block's input of width d; after it the
block's output is injected back into every stream with a learned weight per stream. The mixers'
matrices are weights a token is multiplied by (weight FLOPs); the mixing itself (products and
means over the streams) is elementwise. The streams widen nothing else: attention, experts and
caches see width d.

Qwen4-Exp (transformers ``Qwen4ExpTextGatedResidual``) has a low-rank gated residual
(:func:`gated_residual`). DeepSeek-V4 (manifold-constrained hyper-connections, mHC) and HY-V4
(independent hyper-connections, iHC) compute each token's mixing weights from its RMS-normed
streams with one matrix (:func:`hyper_connection`) and collapse the streams at the end with
another (:func:`hyper_head`); DeepSeek-V4 also mixes the streams among themselves with a
Sinkhorn-normalised s × s matrix per token, a matmul that is no weight (2·s²·d FLOPs a token,
:func:`stream_mixing_flops`), where HY-V4 adds the streams back unmixed.
"""

from __future__ import annotations

from llmcalc.families._base import linear
from llmcalc.families._base import norm
from llmcalc.model.spec import Tensor


def gated_residual(
    p: str, component: str, d: int, *, streams: int, rank: int, inject: bool = True
) -> list[Tensor]:
    """Qwen4-Exp's gated residual over hc = ``streams`` streams of width d: hc_norm, an RMSNorm
    over each stream [hc·d]; the input mixer, low-rank: input_mix_weight_down [r, hc·d] then
    input_mix_weight_up [hc·d, r] (a sigmoid weight per stream and channel, averaged over the
    streams); with ``inject``, block_inject_weight [hc, hc·d] (the output's weight per stream).
    The model's last mixer (``hyper_connection_mixer``) only mixes: no injection."""
    width = streams * d
    return [
        *norm(f"{p}.hc_norm", f"{component}/hc_norm", width, bias=False),
        *linear(f"{p}.input_mix_weight_down", f"{component}/input_mix", rank, width, bias=False),
        *linear(f"{p}.input_mix_weight_up", f"{component}/input_mix", width, rank, bias=False),
        *(linear(f"{p}.block_inject_weight", f"{component}/inject", streams, width, bias=False)
          if inject else []),
    ]


def hyper_connection(p: str, component: str, d: int, *, streams: int, mix: bool) -> list[Tensor]:
    """One block's hyper-connection over s = ``streams`` streams of width d (transformers
    ``DeepseekV4HyperConnection``, ``HYV4HyperConnection``): fn [w, s·d], the weights from the
    flattened, RMS-normed streams (a matmul); base [w] and scale (one per kind of weight). Its
    weights: pre (s, collapsing the streams into the block's input) and post (s, spreading the
    block's output over them), with ``mix`` (DeepSeek-V4) also comb (s × s, mixing the streams):
    w = (2 + s)·s and 3 scales, else w = 2·s and 2."""
    width = (2 + streams) * streams if mix else 2 * streams
    return [
        Tensor(f"{p}.fn", (width, streams * d), component, matmul=True),
        Tensor(f"{p}.base", (width,), component),
        Tensor(f"{p}.scale", (3 if mix else 2,), component),
    ]


def hyper_head(p: str, component: str, d: int, *, streams: int) -> list[Tensor]:
    """The last collapse of s streams before the final norm (``DeepseekV4HyperHead``,
    ``HYV4HyperHead``): hc_fn [s, s·d] (a matmul), hc_base [s], hc_scale [1]."""
    return [
        Tensor(f"{p}.hc_fn", (streams, streams * d), component, matmul=True),
        Tensor(f"{p}.hc_base", (streams,), component),
        Tensor(f"{p}.hc_scale", (1,), component),
    ]


def stream_mixing_flops(d: int, *, streams: int, blocks: int) -> int:
    """Per token, DeepSeek-V4's comb matrix (s × s) times the s streams (s × d) in each of
    ``blocks`` hyper-connections: 2·s²·d each (``torch.matmul(comb.T, hidden_states)``)."""
    return 2 * streams * streams * d * blocks
