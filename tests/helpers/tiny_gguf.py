"""Tiny GGUFs llama.cpp loads (tokenizer metadata included), written with the `gguf` package: the
tensor names and shapes each architecture's load_arch_tensors asks for (vendor/llama.cpp/src/models)."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np


def write(path: Path, arch: str, *, n_layer: int = 2, d: int = 256, n_head: int = 4, n_kv: int = 2,
          head: int | None = None, ff: int = 512, vocab: int = 512, swa: int = 0,
          tied: bool = False, dtype: str = "f32", n_expert: int = 0) -> Path:
    """A GGUF of ``arch`` with zero weights; ``dtype``: f32, f16 or q8_0 for the 2-D matrices."""
    w = gguf.GGUFWriter(str(path), arch)
    hd = head or d // n_head
    w.add_block_count(n_layer)
    w.add_context_length(8192)
    w.add_embedding_length(d)
    w.add_feed_forward_length(ff)
    if arch != "mamba":
        w.add_head_count(n_head)
        if arch == "lfm2":  # a short-conv layer is one without KV heads
            w.add_head_count_kv([n_kv if il % 2 else 0 for il in range(n_layer)])
        else:
            w.add_head_count_kv(n_kv)
        if head:
            w.add_key_length(hd)
            w.add_value_length(hd)
        w.add_rope_dimension_count(hd)
    w.add_layer_norm_rms_eps(1e-5)
    if swa:
        w.add_sliding_window(swa)
    if n_expert:
        w.add_expert_count(n_expert)
        w.add_expert_used_count(2)
        if arch in ("qwen3moe", "qwen2moe", "gpt-oss"):
            w.add_expert_feed_forward_length(ff)
    if arch == "mamba":
        w.add_ssm_conv_kernel(4)
        w.add_ssm_inner_size(2 * d)
        w.add_ssm_state_size(16)
        w.add_ssm_time_step_rank(d // 16)
    if arch == "lfm2":
        w.add_shortconv_l_cache(3)
    w.add_tokenizer_model("llama")
    toks = [b"<unk>", b"<s>", b"</s>"] + [f"<0x{i:02X}>".encode() for i in range(256)]
    toks += [f"t{i}".encode() for i in range(vocab - len(toks))]
    w.add_token_list(toks)
    w.add_token_scores([0.0] * vocab)
    w.add_token_types([2, 3, 3] + [6] * 256 + [1] * (vocab - 259))
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)

    def vec(*shape: int) -> None:
        return np.zeros(shape, dtype=np.float32)

    def mat(name: str, rows: int, cols: int) -> None:
        a = np.zeros((rows, cols), dtype=np.float32)
        if dtype == "f16":
            w.add_tensor(name, a.astype(np.float16))
        elif dtype == "q8_0":
            q = gguf.quants.quantize(a, gguf.GGMLQuantizationType.Q8_0)
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(name, a)

    add = w.add_tensor
    mat("token_embd.weight", vocab, d)
    if arch == "lfm2":
        add("token_embd_norm.weight", vec(d))
    else:
        add("output_norm.weight", vec(d))
    if not tied and arch != "gemma2":
        mat("output.weight", vocab, d)
    q, kv = n_head * hd, n_kv * hd
    for i in range(n_layer):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", vec(d))
        if arch == "mamba":
            di = 2 * d
            mat(p + "ssm_in.weight", 2 * di, d)
            add(p + "ssm_conv1d.weight", vec(di, 4))
            add(p + "ssm_conv1d.bias", vec(di))
            mat(p + "ssm_x.weight", d // 16 + 32, di) if dtype == "f32" else add(p + "ssm_x.weight", vec(d // 16 + 32, di))
            add(p + "ssm_dt.weight", vec(di, d // 16))
            add(p + "ssm_dt.bias", vec(di))
            add(p + "ssm_a", vec(di, 16))
            add(p + "ssm_d", vec(di))
            mat(p + "ssm_out.weight", d, di)
            continue
        if arch == "lfm2" and i % 2 == 0:
            add(p + "shortconv.conv.weight", vec(d, 3))
            mat(p + "shortconv.in_proj.weight", 3 * d, d)
            mat(p + "shortconv.out_proj.weight", d, d)
        elif arch == "phi3":
            mat(p + "attn_qkv.weight", q + 2 * kv, d)
        else:
            mat(p + "attn_q.weight", q, d)
            mat(p + "attn_k.weight", kv, d)
            mat(p + "attn_v.weight", kv, d)
        if arch in ("qwen2", "gpt-oss"):
            add(p + "attn_q.bias", vec(q))
            add(p + "attn_k.bias", vec(kv))
            add(p + "attn_v.bias", vec(kv))
        if arch == "gpt-oss":  # the output projection's bias and a sink per head
            add(p + "attn_output.bias", vec(d))
            add(p + "attn_sinks.weight", vec(n_head))
        if arch in ("qwen3", "qwen3moe", "gemma3") or (arch == "lfm2" and i % 2):
            add(p + "attn_q_norm.weight", vec(hd))
            add(p + "attn_k_norm.weight", vec(hd))
        if not (arch == "lfm2" and i % 2 == 0):
            mat(p + "attn_output.weight", d, q)
        if arch in ("gemma2", "gemma3"):
            add(p + "post_attention_norm.weight", vec(d))
            add(p + "post_ffw_norm.weight", vec(d))
        if arch == "gpt-oss":  # its FFN norm is the attention's post-norm
            add(p + "post_attention_norm.weight", vec(d))
        else:
            add(p + "ffn_norm.weight", vec(d))
        if n_expert:
            add(p + "ffn_gate_inp.weight", vec(n_expert, d))
            for part, shape in (("gate", (ff, d)), ("up", (ff, d)), ("down", (d, ff))):
                add(p + f"ffn_{part}_exps.weight", vec(n_expert, *shape))
                if arch == "gpt-oss":
                    add(p + f"ffn_{part}_exps.bias", vec(n_expert, shape[0]))
            if arch == "gpt-oss":
                add(p + "ffn_gate_inp.bias", vec(n_expert))
            if arch == "qwen2moe":  # the shared expert and its gate
                add(p + "ffn_gate_inp_shexp.weight", vec(d))
                mat(p + "ffn_gate_shexp.weight", ff, d)
                mat(p + "ffn_up_shexp.weight", ff, d)
                mat(p + "ffn_down_shexp.weight", d, ff)
        elif arch == "phi3":
            mat(p + "ffn_up.weight", 2 * ff, d)
            mat(p + "ffn_down.weight", d, ff)
        else:
            mat(p + "ffn_gate.weight", ff, d)
            mat(p + "ffn_up.weight", ff, d)
            mat(p + "ffn_down.weight", d, ff)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
