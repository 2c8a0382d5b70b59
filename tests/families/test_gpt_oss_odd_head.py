"""gpt-oss at an odd head_dim: transformers' rotary step (GptOss ``_apply_rotary_emb``) halves a
head with torch.chunk against cos/sin of ceil(hd/2), so head_dim 3 runs with keys 4 wide and 5 or
more fails. The differential sweep found head_dim=3 counted at 3 (cache 6,144 B where
transformers holds 7,168); its FLOPs and cache are refused, its parameters still counted."""

from __future__ import annotations

from typing import Any

LINE = ("error: openai/gpt-oss-20b: FLOPs and cache bytes are not computed: head_dim 3: GptOss's "
        "rotary step halves each head with torch.chunk, and an odd head's halves broadcast "
        "against cos/sin to a wider key or fail; not modelled\n")


def test_an_odd_head_is_not_modelled(cli: Any) -> None:
    for command in ("flops", "memory"):
        r = cli(command, "gpt-oss-20b", "--set", "head_dim=3", "--ctx", "64")
        assert (r.code, r.stdout, r.stderr) == (2, "", LINE)
    counted = cli("count", "gpt-oss-20b", "--set", "head_dim=3", "--json").json()
    assert counted["total_params"] == 20_307_489_984
    even = cli("memory", "gpt-oss-20b", "--set", "head_dim=4", "--ctx", "64", "--json")
    assert even.code == 0
