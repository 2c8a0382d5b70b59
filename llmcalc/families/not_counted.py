"""The causal-LM model types of transformers 5.24 that llmcalc does not count, each with the reason.

``tests/test_every_causal_lm.py`` walks transformers' ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`` and
requires every type to be either counted exactly (it is in ``MODEL_TYPES``) or listed here; the
README shows this table (checked by the same test). A type leaves the table when a family counts it.
"""

from __future__ import annotations

MOE = "mixture of experts: in progress (issue 12, MoE part)"
MOE_TODO = "mixture of experts with its own structure: not yet counted (issue 12)"
SSM = "state-space, recurrent or linear-attention layers: issue 11"
ENC_DEC = "decoder of an encoder–decoder model (cross-attention): issue 13"
ENCODER = "encoder (masked-LM) model with a causal-LM head: issue 13"
MULTIMODAL = "multimodal or composite model: issue 13"
NO_DEFAULT = "transformers 5.24 cannot build its default config"
DENSE_TODO = "dense decoder with its own structure: not yet counted (issue 12)"
DEEPSEEK_V4 = (
    "mixture of experts with its own structure: not yet counted (issue 12): hyper-connections "
    "(hc_mult residual streams), compressed-KV attention layers (HCA/CSA compressors and their "
    "caches), hash-routed MoE layers, a grouped low-rank o_proj, attention sinks"
)
GEMMA4 = DENSE_TODO + " (per-layer embeddings and head dims, KV-shared layers, optional MoE block)"

NOT_COUNTED: dict[str, str] = {
    "bailing_hybrid": SSM,
    "bailing_hybrid": SSM + " (Kimi delta attention + MLA with an output gate + DeepSeek-V3 MoE:"
    " to be built on the kimi_linear family's KDA mixer)",
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
    "deepseek_v4": DEEPSEEK_V4,
    "dory": DENSE_TODO + " (normalized transformer with looped layers, per-channel scales)",
    "deepseek_v4": MOE,
    "dots3_note": MULTIMODAL,
    "electra": ENCODER,
    "emu3": MULTIMODAL,
    "ernie": ENCODER,
    "fuyu": MULTIMODAL,
    "gemma3n": MULTIMODAL,
    "gemma4": MULTIMODAL,
    "gemma4_assistant": NO_DEFAULT + " (hidden_size_per_layer_input must be 0)",
    "gemma4_unified": MULTIMODAL,
    "gemma4_unified_assistant": MULTIMODAL,
    "git": MULTIMODAL,
    "hrm_text": DENSE_TODO
    + " (two looped stacks: each layer runs H_cycles·(L_cycles + 1) times, which FLOPs and KV need)",
    "hy_v4": MOE_TODO
    + " (DeepSeek-V4's structure: MLA, a sparse-attention indexer, hyper-connections, attention"
    " sinks; to follow deepseek_v4)",
    "got_ocr2": MULTIMODAL,
    "hy_v3": MOE,
    "hy_v4": MOE,
    "inkling2_loop_text": SSM,
    "inkling2_text": SSM,
    "inkling_text": SSM,
    "kolibri1": MOE,
    "laguna": MOE,
    "kimi_linear": SSM,
    "lara_mini": SSM,
    "lfm3": SSM,
    "inkling2_loop_text": SSM + " (Inkling 2's layers, the looped span run loop_num_passes times"
    " with its own K/V and conv states per pass, message gates and message attention over the"
    " previous pass's blocks: FLOPs and cache need per-pass application counts)",
    "kimi_linear": SSM,
    "kolibri1": MOE,
    "laguna": MOE,
    "llama4": MULTIMODAL,
    "marian": ENC_DEC,
    "megatron-bert": ENCODER,
    "mellum": MOE,
    "minimax_m3_vl_text": MOE,
    "minimax": MOE,
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
    "qwen4_exp_text": SSM + " (gated DeltaNet hybrid with hyper-connections (hc_count residual"
    " streams), per-layer hashed n-gram embeddings with their own conv state, and a QSA token"
    " indexer on the attention layers)",
    "recurrent_gemma": SSM,
    "reformer": NO_DEFAULT + " (its LM head needs is_decoder) ; LSH and chunked attention",
    "rembert": ENCODER,
    "roberta-prelayernorm": ENCODER,
    "roc_bert": ENCODER,
    "roformer": ENCODER,
    "solar_open": MOE,
    "rwkv": SSM,
    "trocr": ENC_DEC,
    "xlm": ENCODER,
    "xlm-roberta": ENCODER,
    "xlm-roberta-xl": ENCODER,
    "xlnet": ENCODER + " (permutation LM)",
    "xmod": ENCODER,
    "zaya": MOE,
    "zamba": SSM,
    "zamba2": SSM,
    # dense decoders still to come (issue 12, dense part)
}
