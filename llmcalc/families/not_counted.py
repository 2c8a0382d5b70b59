"""The causal-LM model types of transformers 5.24 that llmcalc does not count, each with the reason.

``tests/test_every_causal_lm.py`` walks transformers' ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`` and
requires every type to be either counted exactly (it is in ``MODEL_TYPES``) or listed here; the
README shows this table (checked by the same test). A type leaves the table when a family counts it.
"""

from __future__ import annotations

MOE = "mixture of experts: in progress (issue 12, MoE part)"
SSM = "state-space, recurrent or linear-attention layers: issue 11"
ENC_DEC = "decoder of an encoder–decoder model (cross-attention): issue 13"
ENCODER = "encoder (masked-LM) model with a causal-LM head: issue 13"
MULTIMODAL = "multimodal or composite model: issue 13"
NO_DEFAULT = "transformers 5.24 cannot build its default config"
DENSE_TODO = "dense decoder with its own structure: not yet counted (issue 12)"

NOT_COUNTED: dict[str, str] = {
    "aria_text": MOE,
    "axk1": MOE,
    "axk2": MOE,
    "bailing_hybrid": SSM,
    "bart": ENC_DEC,
    "beam": MOE,
    "bert": ENCODER,
    "bert-generation": ENCODER,
    "big_bird": ENCODER,
    "bigbird_pegasus": ENC_DEC,
    "blenderbot": ENC_DEC,
    "blenderbot-small": ENC_DEC,
    "blt": MULTIMODAL + " (byte latent transformer: local encoder, global model, local decoder)",
    "camembert": ENCODER,
    "cpmant": ENCODER,
    "data2vec-text": ENCODER,
    "deepseek_v4": MOE,
    "dots3_note": MULTIMODAL,
    "dots3_note_text": MOE,
    "electra": ENCODER,
    "emu3": MULTIMODAL,
    "ernie": ENCODER,
    "flint": MOE,
    "fuyu": MULTIMODAL,
    "gemma3": MULTIMODAL + " (its text model, gemma3_text, is counted)",
    "gemma3n": MULTIMODAL,
    "gemma4": MULTIMODAL,
    "gemma4_assistant": NO_DEFAULT + " (hidden_size_per_layer_input must be 0)",
    "gemma4_unified": MULTIMODAL,
    "gemma4_unified_assistant": MULTIMODAL,
    "git": MULTIMODAL,
    "got_ocr2": MULTIMODAL,
    "hy_v3": MOE,
    "hy_v4": MOE,
    "inkling2_loop_text": SSM,
    "inkling2_text": SSM,
    "inkling_text": SSM,
    "kimi_linear": SSM,
    "kolibri1": MOE,
    "laguna": MOE,
    "lara_mini": SSM,
    "lfm3": SSM,
    "llama4": MULTIMODAL,
    "marian": ENC_DEC,
    "mbart": ENC_DEC,
    "megatron-bert": ENCODER,
    "mellum": MOE,
    "minimax": MOE,
    "minimax_m3_vl_text": MOE,
    "mllama": MULTIMODAL,
    "moshi": MULTIMODAL,
    "moss_transcribe_diarize": MULTIMODAL,
    "musicgen": ENC_DEC,
    "musicgen_melody": ENC_DEC,
    "mvp": ENC_DEC,
    "pegasus": ENC_DEC,
    "phi4_multimodal": MULTIMODAL,
    "plbart": ENC_DEC,
    "prophetnet": ENC_DEC,
    "qwen3_5": MULTIMODAL,
    "qwen3_5_moe": MULTIMODAL,
    "qwen4_exp": MULTIMODAL,
    "qwen4_exp_text": SSM,
    "recurrent_gemma": SSM,
    "reformer": NO_DEFAULT + " (its LM head needs is_decoder) ; LSH and chunked attention",
    "rembert": ENCODER,
    "roberta": ENCODER,
    "roberta-prelayernorm": ENCODER,
    "roc_bert": ENCODER,
    "roformer": ENCODER,
    "rwkv": SSM,
    "solar_open": MOE,
    "trocr": ENC_DEC,
    "whisper": ENC_DEC,
    "xlm": ENCODER,
    "xlm-roberta": ENCODER,
    "xlm-roberta-xl": ENCODER,
    "xlnet": ENCODER + " (permutation LM)",
    "xlstm": SSM,
    "xmod": ENCODER,
    "zamba": SSM,
    "zamba2": SSM,
    "zaya": MOE,
    # dense decoders still to come (issue 12, dense part)
}
