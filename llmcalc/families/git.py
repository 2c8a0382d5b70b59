"""GIT, the Generative Image-to-text Transformer (Wang et al. 2022, arXiv 2205.14100): a CLIP image
encoder whose tokens, projected, go before the text in one BERT-style decoder.

Tensor names and shapes as in transformers' ``GitForCausalLM`` (git/modeling_git.py, transformers
5.24): git.embeddings word_embeddings [V, d], position_embeddings [P, d] and a LayerNorm;
git.encoder.layer.{i} BERT layers (self-attention query, key, value and output.dense d × d with
biases, a LayerNorm after it; intermediate.dense [ff, d], output.dense [d, ff] with biases, a
LayerNorm after it); the image encoder git.image_encoder.vision_model, CLIP's ViT (class token,
pre_layrnorm, post_layernorm, :data:`llmcalc.families._vision.CLIP`); git.visual_projection
visual_projection.0 [d, d_v] + bias and visual_projection.1 a LayerNorm [d]; with
num_image_with_embedding, img_temporal_embedding.{k} [1, 1, d_v] per image; the head ``output``
[V, d] with a bias [V], tied to the word embeddings with tie_word_embeddings.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import Size
from llmcalc.families._base import embedding
from llmcalc.families._base import linear
from llmcalc.families._base import lm_head
from llmcalc.families._base import norm
from llmcalc.families._base import resolve_head_dim
from llmcalc.families._base import uniform_layers
from llmcalc.families.encoder import bert_layer
from llmcalc.model.spec import Attention
from llmcalc.model.spec import Shape
from llmcalc.model.spec import Tensor


class GitConfig(FamilyConfig):
    transformers_class = "GitConfig"

    vocab_size: Size
    hidden_size: Size
    num_hidden_layers: Size
    num_attention_heads: Size
    intermediate_size: Size
    max_position_embeddings: Size
    tie_word_embeddings: bool
    num_image_with_embedding: Size | None = None
    vision_config: dict[str, Any] | None = None


def describe(c: GitConfig) -> Architecture:
    from llmcalc.families._vision import CLIP
    from llmcalc.families._vision import VisionConfig
    from llmcalc.families._vision import projector
    from llmcalc.families._vision import read_sub
    from llmcalc.families._vision import sub_fields
    from llmcalc.families._vision import vit

    d, v, h, L = c.hidden_size, c.vocab_size, c.num_attention_heads, c.num_hidden_layers
    hd = resolve_head_dim(d, h)
    vc = read_sub(VisionConfig, sub_fields(c.vision_config, "vision_config", "git_vision_model", {}),
                  "vision_config")
    tokens = vc.patches + 1  # CLIP's patches and class token, all projected into the text model
    tower = vit("git.image_encoder.vision_model", vc, CLIP, context_tokens=tokens)
    dv = vc.hidden_size
    images = c.num_image_with_embedding or 0
    tower = replace(tower, tensors=(*tower.tensors, *(
        Tensor(f"git.img_temporal_embedding.{k}", (1, 1, dv), "embed/temporal") for k in range(images)
    )))
    proj = projector([
        *linear("git.visual_projection.visual_projection.0", "projector/linear", d, dv, bias=True),
        *norm("git.visual_projection.visual_projection.1", "projector/norm", d, bias=True),
    ], tokens=tokens, d_in=dv, d_out=d)
    embed = "git.embeddings.word_embeddings"
    return Architecture(
        shape=Shape(L, d, h, h, hd, c.intermediate_size, v, c.tie_word_embeddings,
                    c.max_position_embeddings),
        tensors=(
            embedding(embed, "embed/tokens", v, d),
            embedding("git.embeddings.position_embeddings", "embed/positions",
                      c.max_position_embeddings, d),
            *norm("git.embeddings.LayerNorm", "embed/norm", d, bias=True),
            *lm_head("output", v, d, tied_to=f"{embed}.weight" if c.tie_word_embeddings else None,
                     bias=True),
        ),
        layer_groups=uniform_layers(L, bert_layer("git.encoder.layer.{i}", d, c.intermediate_size),
                                    Attention(h, h, hd, hd)),
        parts=(tower, proj),
    )
