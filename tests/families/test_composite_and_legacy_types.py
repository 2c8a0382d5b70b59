"""Types counted by formula that each have a structure of their own (Emu3, Moshi, CPM-Ant, BLT, GIT,
XLNet, ProphetNet, Reformer, BigBird, BigBird-Pegasus, the Gemma 4 assistants): their bundled class
defaults' totals (each held to transformers' model in tests/docs/test_readme_models.py), the parts
a whole model counts, and the one-line refusals of what they do not model."""

from __future__ import annotations

from typing import Any

import pytest

from llmcalc import count, load_spec

# transformers 5.24's sum(p.numel()) of each class built from the bundled class defaults
TOTALS = {
    "emu3-default": 8_492_011_520,
    "moshi-default": 6_839_083_008,
    "cpmant-default": 9_517_453_312,
    "blt-default": 4_633_127_680,
    "git-default": 176_619_066,
    "xlnet-default": 360_300_800,
    "prophetnet-default": 391_321_600,
    "reformer-default": 5_976_192,
    "big-bird-default": 128_111_286,
    "bigbird-pegasus-default": 576_891_904,
    "gemma4-assistant-default": 2_856_215_552,
    "gemma4-unified-assistant-default": 2_872_140_800,
}


@pytest.mark.parametrize("name", TOTALS)
def test_bundled_totals(name: str) -> None:
    pc = count(load_spec(name))
    assert pc.total == TOTALS[name]
    assert sum(pc.breakdown.values()) == pc.total


def test_blt_parts_are_its_stacks() -> None:
    """BLT's patcher, local encoder (with the 3,000,012-row hash n-gram table) and local decoder
    are parts beside the global transformer: 25 layers of 4d² (q, k, v, o) + 3·d·ff + 2d at
    d 2048, ff 5632, and lm_head 260 × 1024."""
    spec = load_spec("blt-default")
    assert spec.part_names == ("global_transformer", "patcher", "local_encoder", "local_decoder")
    d, ff = 2048, 5632
    main = sum(t.numel for t, _g in spec.main_tensors() if _g is None)
    assert main == 260 * 1024
    assert count(spec).total - sum(
        t.numel * len(g.layers) if g is not None else t.numel
        for p in spec.parts for t, g in p.all_tensors()) == 25 * (4 * d * d + 3 * d * ff + 2 * d) + main
    hash_table = next(t for p in spec.parts for t, _ in p.all_tensors()
                      if t.name == "model.encoder_hash_tok_embedding.weight")
    assert hash_table.shape == (500_002 * 1 * 6, 1024)


@pytest.mark.parametrize(("name", "why"), [
    ("blt-default", "BLT's patches end where its entropy model says, which depends on the text, "
                    "not on the weights"),
    ("prophetnet-default", "ProphetNet's decoder runs 2 n-gram streams beside the main one, with "
                           "relative positions of their own"),
    ("gemma4-unified-assistant-default",
     "a Gemma 4 assistant drafts on its backbone's keys and values (shared_kv_states): it has no "
     "forward pass or cache of its own"),
])
def test_a_forward_not_modelled_is_refused_in_one_line(cli: Any, name: str, why: str) -> None:
    spec_name = load_spec(name).name
    for command in ("flops", "memory"):
        r = cli(command, name)
        assert (r.code, r.stdout, r.stderr) == (
            2, "", f"error: {spec_name}: FLOPs and cache bytes are not computed: {why}\n")


def test_moshi_counts_its_text_model_and_refuses_an_odd_ffn(cli: Any, write: Any) -> None:
    # MoshiForCausalLM: embed [V + 1, d], 32 layers of 4d² + 1.5·d·ffn + 2d, norm, lm_head [V, d]
    d, v, ffn = 4096, 32000, 22528
    assert TOTALS["moshi-default"] == (v + 1) * d + 32 * (4 * d * d + d * ffn + d * ffn // 2
                                                          + 2 * d) + d + v * d
    path = write("m.json", '{"model_type": "moshi", "ffn_dim": 22529}')
    r = cli("count", str(path))
    assert (r.code, r.stderr) == (2, f"error: {path}: ffn_dim (22529) must be even (MoshiConfig)\n")


def test_gemma4_assistant_refuses_what_its_class_refuses(cli: Any) -> None:
    r = cli("count", "gemma4_assistant")
    assert (r.code, r.stderr) == (2, "error: gemma4_assistant (transformers defaults): "
                                     "text_config.hidden_size_per_layer_input must be 0 in a Gemma 4 "
                                     "assistant, got 256 (Gemma4AssistantConfig)\n")


def test_zamba2_groups_that_do_not_divide_the_heads_count_but_do_not_run(cli: Any) -> None:
    base = cli("count", "zamba2", "--json").json()["total_params"]
    r = cli("count", "zamba2", "--set", "mamba_ngroups=3", "--json")
    # each of the 54 layers' Mamba mixer (a hybrid layer's too): in_proj [·, d 2560] and conv1d
    # (4 taps and a bias) grow by 2·(G − 1)·N rows, N = 64
    assert r.code == 0, r.stderr
    grown = 54 * 2 * 2 * 64 * (2560 + 4 + 1)
    assert r.json()["total_params"] - base == grown
    f = cli("flops", "zamba2", "--set", "mamba_ngroups=3")
    assert f.code == 2
    assert f.stderr.endswith("FLOPs and cache bytes are not computed: mamba_ngroups (3) does not "
                             "divide n_mamba_heads (8): transformers builds the model, but its scan "
                             "cannot run\n")


def test_blt_tie_needs_the_head_and_table_to_agree(cli: Any) -> None:
    r = cli("count", "blt", "--set", "tie_word_embeddings=true", "--set", "vocab_size=300")
    assert r.code == 2
    assert r.stderr.endswith("tie_word_embeddings ties lm_head [300, 1024] to the local encoder's "
                             "embed_tokens [260, 1024]: the shapes must agree\n")
