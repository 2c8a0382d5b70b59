"""A supported model_type as MODEL: the transformers class defaults, stated in the output."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from llmcalc import count, load_spec
from llmcalc.inputs import family_defaults


def test_llama_defaults_are_llama_2_7b() -> None:
    spec = load_spec("llama")
    assert count(spec).total == 6_738_415_616  # LlamaConfig() mirrors Llama-2-7B
    assert spec.name == "llama (transformers defaults)"
    assert spec.source == ("LlamaConfig() defaults of transformers 5.24.0 "
                           "(AutoConfig.for_model('llama')), not a published checkpoint")


def test_bundled_name_wins_over_model_type() -> None:
    # "gpt2" is both a bundled config and a model type: the bundled file is used
    assert load_spec("gpt2").name == "openai-community/gpt2"
    assert count(load_spec("gpt2")).total == 124_439_808


def test_cli_count_model_type_with_set(cli: Any) -> None:
    run = cli("count", "llama", "--set", "hidden_size=2048", "--set", "num_hidden_layers=16",
              "--json")
    assert run.code == 0
    data = run.json()
    assert data["model"] == "llama (transformers defaults)"
    # LlamaConfig(hidden_size=2048, num_hidden_layers=16) derives head_dim 64 (transformers builds
    # 1,481,705,472); the head_dim of the 4096-wide default is not kept
    assert data["total_params"] == 1_481_705_472
    assert data["source"].startswith("LlamaConfig() defaults of transformers")
    assert "changed with --set: hidden_size=2048, num_hidden_layers=16" in data["notes"]
    text = cli("count", "mistral")
    assert text.code == 0 and "mistral (transformers defaults)" in text.stdout


def test_set_re_derives_what_the_class_derives(cli: Any) -> None:
    run = cli("count", "llama", "--set", "hidden_size=2048", "--set", "num_hidden_layers=16",
              "--set", "intermediate_size=5504", "--json")
    assert run.code == 0
    assert run.json()["total_params"] == 940_640_256  # LlamaConfig(…) built by transformers


def test_declared_defaults_fill_what_a_config_leaves_out() -> None:
    # GlmMoeDsaConfig declares q_lora_rank 2048, qk_nope_head_dim 192, v_head_dim 256 (not
    # DeepSeek-V3.2's 1536/128/128); numel of transformers' GlmMoeDsaForCausalLM
    from llmcalc import spec_from_dict

    fields = family_defaults.defaults("glm_moe_dsa")
    assert fields is not None
    for key in ("q_lora_rank", "qk_nope_head_dim", "v_head_dim"):
        del fields[key]
    spec = spec_from_dict(fields)
    assert count(spec).total == 743_911_199_232
    assert ("not in config, GlmMoeDsaConfig default: q_lora_rank=2048, qk_nope_head_dim=192, "
            "v_head_dim=256, index_topk_freq=1, index_skip_topk_offset=2") in spec.notes


def test_a_left_out_size_takes_the_class_default(cli: Any, write: Any) -> None:
    # LlamaConfig declares vocab_size 32000: transformers builds the model, so llmcalc counts it
    path = write("config.json", {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
                                 "num_hidden_layers": 2, "num_attention_heads": 4})
    run = cli("count", path, "--json")
    assert run.code == 0
    assert run.json()["total_params"] == 4_178_240  # LlamaForCausalLM's numel
    assert ("not in config, LlamaConfig default: vocab_size=32000, max_position_embeddings=2048, "
            "tie_word_embeddings=false, attention_bias=false, mlp_bias=false") in run.json()["notes"]


def test_unset_top_k_counts_the_total_not_the_active(cli: Any) -> None:
    # DeepseekV2Config() leaves num_experts_per_tok unset: transformers builds the model
    # (38,612,307,968 parameters), the experts a token uses are undefined
    run = cli("count", "deepseek_v2", "--json")
    assert run.code == 0
    assert (run.json()["total_params"], run.json()["active_params"]) == (38_612_307_968, None)
    flops = cli("flops", "deepseek_v2")
    assert flops.code == 2
    assert flops.stderr == ("error: deepseek_v2 (transformers defaults): num_experts_per_tok is "
                            "null: the experts a token uses, and so its active parameters and "
                            "FLOPs, are undefined\n")


def test_model_type_does_not_import_transformers() -> None:
    code = ("import sys; from llmcalc import load_spec, count; count(load_spec('mixtral'));"
            "print([m for m in ('torch', 'transformers') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_stored_defaults_match_installed_transformers() -> None:
    pytest.importorskip("transformers")
    import json

    fresh = json.loads(json.dumps(family_defaults.generate()))
    stored = json.loads(family_defaults.DATA.read_text(encoding="utf-8"))
    assert fresh == stored, "regenerate with: python -m llmcalc.inputs.family_defaults"


@pytest.mark.torch
@pytest.mark.parametrize("model_type", ["gpt2", "llama", "mixtral", "gpt_neox"])
def test_scratch_knobs_round_trip_through_the_cli(model_type: str, cli: Any) -> None:
    from dataclasses import replace

    from llmcalc.inputs import scratch

    start = scratch.knobs_of(model_type)
    assert scratch.build(start) == (model_type, [])  # the defaults need no --set
    changed = replace(start, layers=start.layers + 1, vocab=1000, tied=not start.tied)
    mt, sets = scratch.build(changed)
    keys = scratch.KEYS[model_type]
    assert sets == [f"{keys['layers']}={start.layers + 1}", f"{keys['vocab']}=1000",
                    f"{keys['tied']}={'false' if start.tied else 'true'}"]
    args = [w for s in sets for w in ("--set", s)]
    want = cli("count", mt, *args, "--json").json()
    got = count(load_spec(mt, overrides=sets))
    assert got.total == want["total_params"]
    assert want["num_layers"] == start.layers + 1 and want["vocab_size"] == 1000


def test_a_null_the_model_cannot_build_from_is_refused(cli: Any) -> None:
    # HunYuanDenseV1Config leaves head_dim null and its attention raises None to a power
    run = cli("count", "hunyuan_v1_dense")
    assert run.code == 2
    assert run.stderr == ("error: hunyuan_v1_dense (transformers defaults): head_dim is not "
                          "given: HunYuanDenseV1Config leaves it null, and transformers cannot "
                          "build the model without it\n")
    assert cli("count", "hunyuan_v1_dense", "--set", "head_dim=128").code == 0


def test_scratch_width_re_derives_head_dim() -> None:
    # the page's from-scratch builder: d_model 2048 with head_dim left blank derives 64, as
    # LlamaConfig(hidden_size=2048, …) does (transformers builds 940,640,256); a head_dim given
    # beside it is kept
    from dataclasses import replace

    from llmcalc.inputs import scratch

    start = scratch.knobs_of("llama")
    assert start.head_dim is None
    mt, sets = scratch.build(replace(start, d_model=2048, layers=16, d_ff=5504))
    assert sets == ["hidden_size=2048", "num_hidden_layers=16", "intermediate_size=5504"]
    assert count(load_spec(mt, overrides=sets)).total == 940_640_256
    assert scratch.build(replace(start, d_model=2048, head_dim=128))[1] == [
        "hidden_size=2048", "head_dim=128"]


def test_no_family_default_differs_from_the_declared_one() -> None:
    """A family class's own default of a field its transformers class declares is never read (the
    declared one fills a left-out field first); it must not disagree with it either."""
    from pydantic_core import PydanticUndefined

    from llmcalc.families import MODEL_TYPES

    differ = []
    for model_type, fam in MODEL_TYPES.items():
        declared = family_defaults.sub_defaults(model_type) or {}
        for name, info in fam.config.model_fields.items():
            alias = info.validation_alias
            names = [alias] if isinstance(alias, str) else [
                c for c in getattr(alias, "choices", ()) if isinstance(c, str)] or [name]
            known = [n for n in names if n in declared]
            if known and info.default not in (PydanticUndefined, None, declared[known[0]]):
                differ.append(f"{model_type}.{name}: {info.default} (declared {declared[known[0]]})")
    assert differ == []


# Classes whose defaults also serve a composite's text_config, which the table does not fill
SUB_CONFIG_CLASSES = {"Qwen2Config", "Qwen3Config"}


def test_no_row_class_restates_the_declared_defaults() -> None:
    """A default a row's class states is one its transformers class declares for none of the rows
    it serves in the same way: the declared one lives in family_defaults.json alone."""
    import importlib
    from pathlib import Path

    import llmcalc.families as families
    from llmcalc.families import MODEL_TYPES
    from llmcalc.families._base import FamilyConfig

    for module in Path(families.__file__).parent.glob("*.py"):
        importlib.import_module(f"llmcalc.families.{module.stem}")
    rows: dict[type, list[str]] = {}
    for model_type, fam in MODEL_TYPES.items():
        rows.setdefault(fam.config, []).append(model_type)

    def below(cls: type) -> set[type]:
        return {s for c in cls.__subclasses__() for s in {c, *below(c)}}

    restated = []
    for cls in below(FamilyConfig):
        users = {cls, *below(cls)}
        if cls.__name__ in SUB_CONFIG_CLASSES or not users <= set(rows):
            continue
        for name in cls.__dict__.get("__annotations__", {}):
            info = cls.model_fields.get(name)
            if info is None or not isinstance(info.default, (bool, int, float, str)):
                continue  # a class variable, a required field, a null or a sub-config
            default, alias = info.default, info.validation_alias
            names = [alias] if isinstance(alias, str) else [
                c for c in getattr(alias, "choices", ()) if isinstance(c, str)] or [name]
            # the rows that take this class's default (no class between redeclares the field)
            takers = [t for u in users for t in rows[u]
                      if not any(name in k.__dict__.get("__annotations__", {})
                                 for k in u.__mro__[:u.__mro__.index(cls)])]
            declared = [next((fields[n] for n in names if n in fields), None)
                        for fields in (family_defaults.sub_defaults(t) or {} for t in takers)]
            if takers and all(type(d) is type(default) and d == default for d in declared):
                restated.append(f"{cls.__name__}.{name} = {default!r}")
    assert restated == []


def test_aliases_are_read_as_transformers_sets_them() -> None:
    """An undeclared key wins over the declared field it names (set after it, through
    ``attribute_map``); sub-configs are walked into; a name the family reads itself is kept."""
    from llmcalc.inputs.family_defaults import dealiased

    assert dealiased({"model_type": "jetmoe", "head_dim": 64, "kv_channels": 128}) == {
        "model_type": "jetmoe", "kv_channels": 64}
    assert dealiased({"model_type": "kolibri1", "num_experts": 384, "num_local_experts": 16}) == {
        "model_type": "kolibri1", "num_experts": 16}
    assert dealiased({"model_type": "x", "text_config": {"model_type": "gpt2", "hidden_size": 8}}) == {
        "model_type": "x", "text_config": {"model_type": "gpt2", "n_embd": 8}}
    assert dealiased({"model_type": "zamba2", "layer_types": ["hybrid"]}, keep={"layer_types"}) == {
        "model_type": "zamba2", "layer_types": ["hybrid"]}
