"""RWKV-4 (Peng et al. 2023, "RWKV: Reinventing RNNs for the Transformer Era"): no attention; each
block mixes tokens with a time-mix (the WKV recurrence) and channels with a channel-mix.

Per block: ln1, ln2 (LayerNorm with bias, [d]); block 0 also a ``pre_ln`` on the embeddings.
``attention`` (time mix, a = attention_hidden_size): time_decay, time_first [a]; time_mix_key,
time_mix_value, time_mix_receptance [1, 1, d]; key, value, receptance a × d; output d × a.
``feed_forward`` (channel mix, ff = intermediate_size): time_mix_key, time_mix_receptance [1, 1, d];
key ff × d, receptance d × d, value d × ff. Around them rwkv.embeddings [V, d], rwkv.ln_out [d]
(with bias) and head [V, d], tied to the embeddings or not. Defaults: a = d, ff = 4·d. Tensor names
as in transformers ``RwkvForCausalLM`` (modeling_rwkv.py).

State per sequence and block, as ``RwkvModel`` allocates it (five [batch, d, layers] tensors): the
last input of the time mix and of the channel mix (the token shift, 2·d at the model's dtype) and the
WKV numerator, denominator and running maximum (3·d in float32). The WKV recurrence itself is
elementwise per channel (exponentials, products, a division): no matmul, so 0 FLOPs by torch's
convention, which llmcalc keeps; a token's FLOPs are its matrices' 2 × elements.
"""

from __future__ import annotations

from pydantic import AliasChoices
from pydantic import Field

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import embedding
from llmcalc.families._base import linear
from llmcalc.families._base import lm_head
from llmcalc.families._base import norm
from llmcalc.model.spec import RWKV
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Mixer
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor


class RwkvConfig(FamilyConfig):
    transformers_class = "RwkvConfig"

    vocab_size: Size
    context_length: Size | None = Field(
        validation_alias=AliasChoices("context_length", "max_position_embeddings"))
    hidden_size: Size
    num_hidden_layers: Size
    attention_hidden_size: Size | None = None  # null: hidden_size
    intermediate_size: Size | None = None  # null: 4 · hidden_size
    tie_word_embeddings: bool


def block(p: str, d: int, a: int, ff: int, *, first: bool) -> list[Tensor]:
    """One RWKV-4 block: norms, time mix (key, value, receptance a × d, output d × a, decay and
    bonus [a], three mixing vectors [1, 1, d]), channel mix (key ff × d, receptance d × d, value
    d × ff, two mixing vectors)."""
    t, f = f"{p}.attention", f"{p}.feed_forward"
    return [
        *(norm(f"{p}.pre_ln", "pre_ln", d, bias=True) if first else []),
        *norm(f"{p}.ln1", "time_mix/norm", d, bias=True),
        *norm(f"{p}.ln2", "channel_mix/norm", d, bias=True),
        Tensor(f"{t}.time_decay", (a,), "time_mix/decay"),
        Tensor(f"{t}.time_first", (a,), "time_mix/decay"),
        *(Tensor(f"{t}.time_mix_{x}", (1, 1, d), "time_mix/mix")
          for x in ("key", "value", "receptance")),
        *linear(f"{t}.key", "time_mix/key", a, d, bias=False),
        *linear(f"{t}.value", "time_mix/value", a, d, bias=False),
        *linear(f"{t}.receptance", "time_mix/receptance", a, d, bias=False),
        *linear(f"{t}.output", "time_mix/output", d, a, bias=False),
        *(Tensor(f"{f}.time_mix_{x}", (1, 1, d), "channel_mix/mix")
          for x in ("key", "receptance")),
        *linear(f"{f}.key", "channel_mix/key", ff, d, bias=False),
        *linear(f"{f}.receptance", "channel_mix/receptance", d, d, bias=False),
        *linear(f"{f}.value", "channel_mix/value", d, ff, bias=False),
    ]


def describe(c: RwkvConfig) -> Architecture:
    d, v, L = c.hidden_size, c.vocab_size, c.num_hidden_layers
    a = c.attention_hidden_size or d
    ff = c.intermediate_size or 4 * d
    p = "rwkv.blocks.{i}"
    # token shift: 2·d (time and channel mix) at the model dtype; WKV num, den, max: 3·d in fp32
    mixer = Mixer(RWKV, conv_dim=2 * d, conv_kernel=1, heads=d, head_dim=1, state_size=3)
    groups = tuple(
        LayerGroup(name, layers, tuple(block(p, d, a, ff, first=first)), None, mixer)
        for name, layers, first in (("rwkv, pre_ln", LayerSet.span(0, 1), True),
                                    ("rwkv", LayerSet.span(1, L), False))
        if layers
    )
    embed = "rwkv.embeddings"
    tensors = (
        embedding(embed, "embed/tokens", v, d),
        *norm("rwkv.ln_out", "final_norm", d, bias=True),
        *lm_head("head", v, d, tied_to=f"{embed}.weight" if c.tie_word_embeddings else None),
    )
    return Architecture(
        shape=Shape(L, d, 0, 0, 0, ff, v, c.tie_word_embeddings, c.context_length),
        tensors=tensors,
        layer_groups=groups,
    )
