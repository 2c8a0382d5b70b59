"""Properties of the counts on generated configs (hypothesis)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from llmcalc import count, spec_from_dict


@st.composite
def llama_configs(draw: Any) -> dict[str, Any]:
    kv = draw(st.integers(1, 8))
    heads = kv * draw(st.integers(1, 8))
    head_dim = draw(st.integers(1, 64))
    cfg: dict[str, Any] = {
        "model_type": draw(st.sampled_from(["llama", "mistral", "gemma"])),
        "hidden_size": heads * head_dim,
        "num_hidden_layers": draw(st.integers(1, 40)),
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "intermediate_size": draw(st.integers(1, 5000)),
        "vocab_size": draw(st.integers(1, 200_000)),
        "tie_word_embeddings": draw(st.booleans()),
        "attention_bias": draw(st.booleans()),
        "mlp_bias": draw(st.booleans()),
    }
    if draw(st.booleans()):  # an explicit head_dim that differs from hidden / heads
        cfg["head_dim"] = draw(st.integers(1, 128))
    return cfg


@st.composite
def gpt2_configs(draw: Any) -> dict[str, Any]:
    heads = draw(st.integers(1, 16))
    return {
        "model_type": "gpt2",
        "n_embd": heads * draw(st.integers(1, 64)),
        "n_layer": draw(st.integers(1, 48)),
        "n_head": heads,
        "n_positions": draw(st.integers(1, 4096)),
        "n_inner": draw(st.one_of(st.none(), st.integers(1, 8192))),
        "vocab_size": draw(st.integers(1, 100_000)),
        "tie_word_embeddings": draw(st.booleans()),
    }


configs = st.one_of(llama_configs(), gpt2_configs())


def layers_key(cfg: dict[str, Any]) -> str:
    return "n_layer" if cfg["model_type"] == "gpt2" else "num_hidden_layers"


@settings(max_examples=150, deadline=None)
@given(configs)
def test_breakdown_adds_up(cfg: dict[str, Any]) -> None:
    spec = spec_from_dict(cfg)
    pc = count(spec)
    assert sum(g.total for g in pc.groups) == pc.layers
    assert sum(v for k, v in pc.breakdown.items() if k.startswith("layers/")) == pc.layers
    assert sum(n for _, shape in spec.named_shapes() for n in [_prod(shape)]) == pc.total
    assert pc.active == pc.total  # dense


@settings(max_examples=150, deadline=None)
@given(configs)
def test_one_more_layer_adds_one_layer(cfg: dict[str, Any]) -> None:
    key = layers_key(cfg)
    base = count(spec_from_dict(cfg))
    more = count(spec_from_dict({**cfg, key: cfg[key] + 1}))
    assert more.total - base.total == base.groups[0].per_layer > 0


@settings(max_examples=150, deadline=None)
@given(configs)
def test_tying_removes_exactly_v_times_d(cfg: dict[str, Any]) -> None:
    untied = spec_from_dict({**cfg, "tie_word_embeddings": False})
    tied = spec_from_dict({**cfg, "tie_word_embeddings": True})
    v, d = untied.shape.vocab_size, untied.shape.hidden_size
    assert count(untied).total - count(tied).total == v * d
    assert count(tied).lm_head == 0 and count(untied).lm_head == v * d


@settings(max_examples=150, deadline=None)
@given(llama_configs())
def test_gqa_with_all_heads_is_multi_head_attention(cfg: dict[str, Any]) -> None:
    # LlamaConfig derives left-out KV heads as the heads (MistralConfig and GemmaConfig declare
    # their own counts, which a left-out field takes)
    llama = {**cfg, "model_type": "llama"}
    mha = {k: v for k, v in llama.items() if k != "num_key_value_heads"}
    gqa = {**llama, "num_key_value_heads": cfg["num_attention_heads"]}
    assert count(spec_from_dict(mha)).breakdown == count(spec_from_dict(gqa)).breakdown


def _prod(shape: tuple[int, ...]) -> int:
    out = 1
    for d in shape:
        out *= d
    return out
