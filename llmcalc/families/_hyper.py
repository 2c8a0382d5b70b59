"""Hyper-connections: several residual streams in place of one (Zhu et al. 2024, "Hyper-Connections",
arXiv 2409.19606), shared by every family that has them.

The hidden state is hc streams of width d, carried as one vector of hc·d. Before each block a
learned mixer reads the normalised streams and forms the block's input of width d; after it the
block's output is injected back into every stream with a learned weight per stream. The mixers'
matrices are weights a token is multiplied by (weight FLOPs); the mixing itself (products and
means over the streams) is elementwise. The streams widen nothing else: attention, experts and
caches see width d.

Qwen4-Exp (transformers ``Qwen4ExpTextGatedResidual``) is the first family here; DeepSeek-V4's and
HY-V4's (``hc_mult`` streams, a Sinkhorn-normalised mixer) are to come here too.
"""

from __future__ import annotations

from llmcalc.families._base import linear, norm
from llmcalc.spec import Tensor


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
