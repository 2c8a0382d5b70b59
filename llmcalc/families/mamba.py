"""Attention-free state-space models: every layer is an RMSNorm and one SSM mixer, no MLP.

Covers ``mamba`` (Gu & Dao 2023; state-spaces/mamba-*-hf), ``falcon_mamba`` (TII 2024: Mamba with
RMSNorm on B, C and Δ, which are not parameters) and ``mamba2`` (Dao & Gu 2024; Mamba-Codestral).
Tensor names as in transformers ``MambaForCausalLM`` / ``Mamba2ForCausalLM``: ``backbone.embeddings``,
``backbone.layers.{i}.norm`` and ``.mixer``, ``backbone.norm_f``, ``lm_head``. The mixers are built in
``_ssm``; Mamba's inner width is the config's intermediate_size, else expand · hidden_size
(MambaConfig's rule), Mamba-2's always expand · hidden_size.
"""

from __future__ import annotations

import math

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import embedding
from llmcalc.families._base import lm_head
from llmcalc.families._base import norm
from llmcalc.families._base import require
from llmcalc.families._ssm import check_mamba2
from llmcalc.families._ssm import mamba2_mixer
from llmcalc.families._ssm import mamba_mixer
from llmcalc.model.spec import LayerGroup
from llmcalc.model.spec import LayerSet
from llmcalc.model.spec import Shape


class SSMConfig(FamilyConfig):
    """The fields every attention-free SSM config names alike."""

    hidden_size: Size
    num_hidden_layers: Size
    vocab_size: Size


class MambaConfig(SSMConfig):
    transformers_class = "MambaConfig"

    state_size: Size
    expand: Size
    conv_kernel: Size
    time_step_rank: Size | str  # "auto": ceil(hidden_size / 16)
    use_bias: bool
    use_conv_bias: bool
    tie_word_embeddings: bool
    intermediate_size: Size | None = None  # absent: expand · hidden_size

    @property
    def d_inner(self) -> int:
        """MambaConfig's rule: ``__post_init__`` sets intermediate_size = expand · hidden_size,
        and a config's own intermediate_size (a keyword it does not declare) is set after it."""
        return self.intermediate_size or self.expand * self.hidden_size

    @property
    def dt_rank(self) -> int:
        r = self.time_step_rank
        if isinstance(r, int):
            return r
        require(r == "auto", "time_step_rank", f"expected a positive integer or 'auto', got {r!r}")
        return math.ceil(self.hidden_size / 16)


class FalconMambaConfig(MambaConfig):
    transformers_class = "FalconMambaConfig"


class Mamba2Config(SSMConfig):
    transformers_class = "Mamba2Config"

    num_heads: Size
    head_dim: Size
    state_size: Size
    expand: Size
    conv_kernel: Size
    n_groups: Size
    chunk_size: Size
    use_bias: bool
    use_conv_bias: bool
    tie_word_embeddings: bool


def _ssm_model(
    c: MambaConfig | Mamba2Config, group: tuple[LayerGroup, ...], d_inner: int
) -> Architecture:
    d, v = c.hidden_size, c.vocab_size
    embed = "backbone.embeddings"
    tensors = (
        embedding(embed, "embed/tokens", v, d),
        *norm("backbone.norm_f", "final_norm", d, bias=False),
        *lm_head("lm_head", v, d, tied_to=f"{embed}.weight" if c.tie_word_embeddings else None),
    )
    shape = Shape(
        num_layers=c.num_hidden_layers, hidden_size=d, num_heads=0, num_kv_heads=0, head_dim=0,
        intermediate_size=d_inner, vocab_size=v, tied_embeddings=c.tie_word_embeddings,
    )
    return Architecture(shape=shape, tensors=tensors, layer_groups=group)


def describe(c: MambaConfig) -> Architecture:
    p = "backbone.layers.{i}"
    mixer_tensors, mixer = mamba_mixer(
        f"{p}.mixer", c.hidden_size, d_inner=c.d_inner, state=c.state_size,
        conv_kernel=c.conv_kernel, dt_rank=c.dt_rank, bias=c.use_bias, conv_bias=c.use_conv_bias,
    )
    layer = [*norm(f"{p}.norm", "mamba/norm", c.hidden_size, bias=False), *mixer_tensors]
    groups = (LayerGroup("mamba", LayerSet.span(0, c.num_hidden_layers), tuple(layer), None, mixer),)
    return _ssm_model(c, groups, c.d_inner)


def describe_mamba2(c: Mamba2Config) -> Architecture:
    p = "backbone.layers.{i}"
    d_inner = c.expand * c.hidden_size
    check_mamba2(d_inner=d_inner, heads=c.num_heads, head_dim=c.head_dim, groups=c.n_groups,
                 inner_field="expand × hidden_size", heads_field="num_heads",
                 groups_field="n_groups")
    mixer_tensors, mixer = mamba2_mixer(
        f"{p}.mixer", c.hidden_size, d_inner=d_inner, heads=c.num_heads, head_dim=c.head_dim,
        groups=c.n_groups, state=c.state_size, conv_kernel=c.conv_kernel, chunk=c.chunk_size,
        bias=c.use_bias, conv_bias=c.use_conv_bias,
    )
    layer = [*norm(f"{p}.norm", "mamba/norm", c.hidden_size, bias=False), *mixer_tensors]
    groups = (LayerGroup("mamba2", LayerSet.span(0, c.num_hidden_layers), tuple(layer), None, mixer),)
    return _ssm_model(c, groups, d_inner)


__all__ = ["FalconMambaConfig", "Mamba2Config", "MambaConfig", "describe", "describe_mamba2"]
