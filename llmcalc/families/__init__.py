"""The supported architectures: ``model_type`` → the config fields it reads and the tensors it makes.

To add a family: write a module here with a :class:`FamilyConfig` subclass (usually of
``DecoderConfig`` in ``_base``, which holds the standard Hugging Face fields and builds the shape)
and a ``describe`` function returning an :class:`Architecture` made from the blocks in ``_base``,
then list its model types in ``MODEL_TYPES`` below as ``Family(module, config class name[,
describe function name])``. Modules are imported only when a config of theirs is read, so the CLI
starts fast however many families there are.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llmcalc.families._base import Architecture, FamilyConfig, FieldError


@dataclass(frozen=True)
class Family:
    """Where one ``model_type`` is read (``config``) and described (``describe``)."""

    module: str  # llmcalc/families/<module>.py
    config_class: str
    describe_function: str = "describe"

    @property
    def config(self) -> type[FamilyConfig]:
        cls: type[FamilyConfig] = getattr(self._module(), self.config_class)
        return cls

    @property
    def describe(self) -> Callable[[Any], Architecture]:
        fn: Callable[[Any], Architecture] = getattr(self._module(), self.describe_function)
        return fn

    def _module(self) -> Any:
        return importlib.import_module(f"llmcalc.families.{self.module}")


MODEL_TYPES: dict[str, Family] = {
    "gpt2": Family("gpt2", "GPT2Config"),
    "llama": Family("llama", "LlamaConfig"),
    "mistral": Family("llama", "MistralConfig"),
    "gemma": Family("llama", "GemmaConfig"),
    # -- dense families --
    "gpt_neox": Family("gpt_neox", "GPTNeoXConfig"),
    "gptj": Family("gptj", "GPTJConfig"),
    "gpt_neo": Family("gpt_neo", "GPTNeoConfig"),
    "opt": Family("opt", "OPTConfig"),
    "bloom": Family("bloom", "BloomConfig"),
    "falcon": Family("falcon", "FalconConfig"),
    "mpt": Family("mpt", "MptConfig"),
    "gpt_bigcode": Family("gpt_bigcode", "GPTBigCodeConfig"),
    "starcoder2": Family("starcoder2", "Starcoder2Config"),
    "stablelm": Family("stablelm", "StableLmConfig"),
    "phi": Family("phi", "PhiConfig"),
    "phi3": Family("phi3", "Phi3Config"),
    "qwen2": Family("qwen", "Qwen2Config"),
    "qwen3": Family("qwen", "Qwen3Config", "describe_qwen3"),
    "olmo2": Family("olmo2", "Olmo2Config"),
    "cohere": Family("cohere", "CohereConfig"),
    "granite": Family("llama", "GraniteConfig"),
    # -- mixture-of-experts, MLA and layer-typed families --
    "gemma2": Family("gemma2", "Gemma2Config"),
    "gemma3_text": Family("gemma2", "Gemma3TextConfig"),
    "cohere2": Family("cohere2", "Cohere2Config"),
    "olmo": Family("olmo", "OlmoConfig"),
    "mixtral": Family("mixtral", "MixtralConfig"),
    "phimoe": Family("mixtral", "PhimoeConfig"),
    "granitemoe": Family("mixtral", "GraniteMoeConfig"),
    "olmoe": Family("mixtral", "OlmoeConfig"),
    "qwen2_moe": Family("qwen_moe", "Qwen2MoeConfig"),
    "qwen3_moe": Family("qwen_moe", "Qwen3MoeConfig"),
    "deepseek_v2": Family("deepseek", "DeepseekV2Config"),
    "deepseek_v3": Family("deepseek", "DeepseekV3Config"),
    "gpt_oss": Family("gpt_oss", "GptOssConfig"),
    # -- dense decoders (issue 12): Llama-style, described by their switches in decoder.py --
    "arcee": Family("decoder", "ArceeConfig"),
    "apertus": Family("decoder", "ApertusConfig"),
    "apertus1p5_text": Family("decoder", "Apertus1p5TextConfig"),
    "bitnet": Family("decoder", "BitNetConfig"),
    "cohere_compass_text": Family("decoder", "CohereCompassTextConfig"),
    "cwm": Family("decoder", "CwmConfig"),
    "diffllama": Family("decoder", "DiffLlamaConfig"),
    "doge": Family("decoder", "DogeConfig"),
    "ernie4_5": Family("decoder", "Ernie45Config"),
    "exaone": Family("decoder", "ExaoneConfig"),
    "exaone4": Family("decoder", "Exaone4Config"),
    "glm": Family("decoder", "GlmConfig"),
    "glm4": Family("decoder", "Glm4Config"),
    "granite_swa": Family("decoder", "GraniteSWAConfig"),
    "helium": Family("decoder", "HeliumConfig"),
    "hunyuan_v1_dense": Family("decoder", "HunYuanDenseV1Config"),
    "hyperclovax": Family("decoder", "HyperCLOVAXConfig"),
    "internlm3": Family("decoder", "InternLM3Config"),
    "iquestcoder": Family("decoder", "IQuestCoderConfig"),
    "jais2": Family("decoder", "Jais2Config"),
    "ministral": Family("decoder", "MinistralConfig"),
    "ministral3": Family("decoder", "Ministral3Config"),
    "nanochat": Family("decoder", "NanoChatConfig"),
    "nemotron": Family("decoder", "NemotronConfig"),
    "olmo3": Family("decoder", "Olmo3Config"),
    "seed_oss": Family("decoder", "SeedOssConfig"),
    "smollm3": Family("decoder", "SmolLM3Config"),
    "vaultgemma": Family("decoder", "VaultGemmaConfig"),
    "minicpm3": Family("decoder", "MiniCPM3Config", "describe_mla"),
    "youtu": Family("decoder", "YoutuConfig", "describe_mla"),
    # -- older dense decoders (issue 12): LayerNorm, plain MLP, each in its own names --
    "gpt-sw3": Family("gpt2", "GPT2Config"),
    "openai-gpt": Family("classic", "OpenAIGPTConfig", "describe_openai_gpt"),
    "codegen": Family("classic", "CodeGenConfig", "describe_codegen"),
    "ctrl": Family("classic", "CTRLConfig", "describe_ctrl"),
    "xglm": Family("classic", "XGLMConfig", "describe_xglm"),
    "biogpt": Family("classic", "BioGptConfig", "describe_biogpt"),
    "gpt_neox_japanese": Family("classic", "GPTNeoXJapaneseConfig", "describe_gpt_neox_japanese"),
    "persimmon": Family("classic", "PersimmonConfig", "describe_persimmon"),
    "modernbert-decoder": Family(
        "classic", "ModernBertDecoderConfig", "describe_modernbert_decoder"
    ),
    # -- state-space, recurrent and hybrid families --
    "mamba": Family("mamba", "MambaConfig"),
    "falcon_mamba": Family("mamba", "FalconMambaConfig"),
    "mamba2": Family("mamba", "Mamba2Config", "describe_mamba2"),
    "jamba": Family("jamba", "JambaConfig"),
    "bamba": Family("bamba", "BambaConfig"),
    "granitemoehybrid": Family("granitemoehybrid", "GraniteMoeHybridConfig"),
    "nemotron_h": Family("nemotron_h", "NemotronHConfig"),
    "lfm2": Family("lfm2", "Lfm2Config"),
    "lfm2_moe": Family("lfm2", "Lfm2MoeConfig", "describe_moe"),
    "lfm3": Family("lfm2", "Lfm3Config", "describe_lfm3"),
    "falcon_h1": Family("falcon_h1", "FalconH1Config"),
    "qwen3_next": Family("qwen3_next", "Qwen3NextConfig"),
    "qwen3_5_text": Family("qwen3_next", "Qwen3_5TextConfig"),
    "qwen3_5_moe_text": Family("qwen3_next", "Qwen3_5MoeTextConfig"),
    "olmo_hybrid": Family("olmo_hybrid", "OlmoHybridConfig"),
    # -- shared-block and recurrent hybrids (issue 11) --
    "zamba": Family("zamba", "ZambaConfig"),
    "zamba2": Family("zamba", "Zamba2Config", "describe_zamba2"),
    "recurrent_gemma": Family("recurrent_gemma", "RecurrentGemmaConfig"),
    "kimi_linear": Family("kimi_linear", "KimiLinearConfig"),
    "bailing_hybrid": Family("kimi_linear", "BailingHybridConfig"),
    "minimax": Family("minimax", "MiniMaxConfig"),
    "rwkv": Family("rwkv", "RwkvConfig"),
    "xlstm": Family("xlstm", "XLSTMConfig"),
    "lara_mini": Family("qwen3_next", "LaraMiniConfig"),
    "inkling_text": Family("inkling", "InklingTextConfig"),
    "inkling2_text": Family("inkling", "Inkling2TextConfig", "describe_inkling2"),
    "qwen4_exp_text": Family("qwen4_exp", "Qwen4ExpTextConfig"),
    "inkling2_loop_text": Family("inkling", "Inkling2LoopTextConfig", "describe_inkling2_loop"),
    # -- mixture-of-experts decoders (issue 12) --
    "glm4_moe": Family("gqa_moe", "Glm4MoeConfig"),
    "sarvam_moe": Family("gqa_moe", "SarvamMoeConfig"),
    "dots1": Family("gqa_moe", "Dots1Config"),
    "exaone_moe": Family("gqa_moe", "ExaoneMoeConfig"),
    "ernie4_5_moe": Family("gqa_moe", "Ernie45MoeConfig"),
    "hunyuan_v1_moe": Family("gqa_moe", "HunYuanMoeV1Config"),
    "minimax_m2": Family("gqa_moe", "MiniMaxM2Config"),
    "afmoe": Family("gqa_moe", "AfmoeConfig"),
    "flex_olmo": Family("gqa_moe", "FlexOlmoConfig"),
    "granitemoeshared": Family("gqa_moe", "GraniteMoeSharedConfig"),
    "cohere2_moe": Family("gqa_moe", "Cohere2MoeConfig"),
    "granitemoe_swa": Family("gqa_moe", "GraniteMoeSwaConfig"),
    "aria_text": Family("gqa_moe", "AriaTextConfig"),
    "flint": Family("gqa_moe", "FlintConfig"),
    "beam": Family("gqa_moe", "BeamConfig"),
    "llama4_text": Family("llama4", "Llama4TextConfig"),
    "deepseek_v32": Family("deepseek", "DeepseekV32Config"),
    "glm_moe_dsa": Family("deepseek", "GlmMoeDsaConfig"),
    "glm4_moe_lite": Family("deepseek", "Glm4MoeLiteConfig"),
    "sarvam_mla": Family("deepseek", "SarvamMlaConfig"),
    "axk1": Family("deepseek", "AXK1Config"),
    "axk2": Family("deepseek", "AXK2Config"),
    "dots3_note_text": Family("deepseek", "Dots3NoteTextConfig"),
    "deepseek_v4": Family("deepseek_v4", "DeepseekV4Config"),
    "hy_v4": Family("deepseek", "HYV4Config"),
    "dbrx": Family("dbrx", "DbrxConfig"),
    "jetmoe": Family("jetmoe", "JetMoeConfig"),
    "longcat_flash": Family("longcat_flash", "LongcatFlashConfig"),
    "mimo_v2_flash": Family("mimo_v2_flash", "MiMoV2FlashConfig"),
    # -- per-layer-embedding decoders (Gemma 3n, Gemma 4): PLE, AltUp, KV-shared layers --
    "gemma3n_text": Family("gemma3n", "Gemma3nTextConfig"),
    "gemma4_text": Family("gemma4", "Gemma4TextConfig"),
    "gemma4_unified_text": Family("gemma4", "Gemma4UnifiedTextConfig"),
    # -- whole models (issue 13): encoder LMs (…ForMaskedLM), encoder–decoders --
    "bert": Family("encoder", "BertConfig", "describe_bert"),
    "roberta": Family("encoder", "RobertaConfig", "describe_roberta"),
    "deberta-v2": Family("encoder", "DebertaV2Config", "describe_deberta_v2"),
    "modernbert": Family("encoder", "ModernBertConfig", "describe_modernbert"),
    # -- BERT's near-copies: rows of encoder.py --
    "xlm-roberta": Family("encoder", "XLMRobertaConfig", "describe_bert_row"),
    "camembert": Family("encoder", "CamembertConfig", "describe_bert_row"),
    "data2vec-text": Family("encoder", "Data2VecTextConfig", "describe_bert_row"),
    "roberta-prelayernorm": Family("encoder", "RobertaPreLayerNormConfig", "describe_bert_row"),
    "xlm-roberta-xl": Family("encoder", "XLMRobertaXLConfig", "describe_bert_row"),
    "electra": Family("encoder", "ElectraConfig", "describe_bert_row"),
    "ernie": Family("encoder", "ErnieConfig", "describe_bert_row"),
    "megatron-bert": Family("encoder", "MegatronBertConfig", "describe_bert_row"),
    "xmod": Family("encoder", "XmodConfig", "describe_bert_row"),
    "rembert": Family("encoder", "RemBertConfig", "describe_bert_row"),
    "roformer": Family("encoder", "RoFormerConfig", "describe_bert_row"),
    "bert-generation": Family("encoder", "BertGenerationConfig", "describe_bert_row"),
    "roc_bert": Family("encoder", "RoCBertConfig", "describe_bert_row"),
    "xlm": Family("encoder", "XLMConfig", "describe_xlm"),
    "t5": Family("t5", "T5Config"),
    "mt5": Family("t5", "MT5Config"),
    "umt5": Family("t5", "UMT5Config", "describe_umt5"),
    "bart": Family("bart", "BartConfig"),
    "mbart": Family("bart", "MBartConfig", "describe_mbart"),
    "whisper": Family("bart", "WhisperConfig", "describe_whisper"),
    # -- BART's near-copies: rows of bart.py --
    "plbart": Family("bart", "PLBartConfig"),
    "mvp": Family("bart", "MvpConfig"),
    "pegasus": Family("bart", "PegasusConfig"),
    "marian": Family("bart", "MarianConfig"),
    "blenderbot": Family("bart", "BlenderbotConfig"),
    "blenderbot-small": Family("bart", "BlenderbotSmallConfig"),
    "trocr": Family("bart", "TrOCRConfig", "describe_trocr"),  # the decoder alone (TrOCRForCausalLM)
    # -- whole models (issue 13): vision tower + projector + language model --
    "llava": Family("vlm", "LlavaConfig"),
    "gemma3": Family("vlm", "Gemma3Config", "describe_gemma3"),
    "mistral3": Family("vlm", "Mistral3Config", "describe_mistral3"),
    "paligemma": Family("vlm", "PaliGemmaConfig", "describe_paligemma"),
    "llava_next": Family("vlm", "LlavaNextConfig", "describe_llava_next"),
    "llava_onevision": Family("vlm", "LlavaOnevisionConfig", "describe_llava_onevision"),
    "aya_vision": Family("vlm", "AyaVisionConfig", "describe_aya_vision"),
    "internvl": Family("vlm", "InternVLConfig", "describe_internvl"),
    "idefics3": Family("vlm", "Idefics3Config", "describe_idefics3"),
    "smolvlm": Family("vlm", "SmolVLMConfig", "describe_idefics3"),
    "got_ocr2": Family("vlm", "GotOcr2Config", "describe_got_ocr2"),
    "qwen2_vl": Family("vlm", "Qwen2VLConfig", "describe_qwen2_vl"),
    "qwen2_5_vl": Family("vlm", "Qwen2_5_VLConfig", "describe_qwen2_vl"),
    "llama4": Family("vlm", "Llama4Config", "describe_llama4"),
    "mllama": Family("vlm", "MllamaConfig", "describe_mllama"),
    "fuyu": Family("vlm", "FuyuConfig", "describe_fuyu"),
    "qwen3_vl": Family("vlm", "Qwen3VLConfig", "describe_qwen3_vl"),
    "qwen3_vl_moe": Family("vlm", "Qwen3VLMoeConfig", "describe_qwen3_vl"),
    "qwen3_5": Family("vlm", "Qwen3_5Config", "describe_qwen3_vl"),
    "qwen3_5_moe": Family("vlm", "Qwen3_5MoeConfig", "describe_qwen3_vl"),
    "qwen4_exp": Family("vlm", "Qwen4ExpConfig", "describe_qwen3_vl"),
    # -- whole models (issue 13): vision and audio towers + language model --
    "phi4_multimodal": Family("phi4mm", "Phi4MultimodalConfig"),
    "gemma3n": Family("gemma3n", "Gemma3nConfig", "describe_gemma3n"),
    "gemma4": Family("gemma4", "Gemma4Config", "describe_gemma4"),
    "gemma4_unified": Family("gemma4", "Gemma4UnifiedConfig", "describe_gemma4_unified"),
    "dots3_note": Family("dots3_note", "Dots3NoteConfig"),
    "moss_transcribe_diarize": Family(
        "audio_lm", "MossTranscribeDiarizeConfig", "describe_moss_transcribe_diarize"
    ),
    # -- more mixture-of-experts decoders (issue 12) --
    "solar_open": Family("gqa_moe", "SolarOpenConfig"),
    "kolibri1": Family("gqa_moe", "Kolibri1Config"),
    "hy_v3": Family("gqa_moe", "HYV3Config"),
    "mellum": Family("gqa_moe", "MellumConfig"),
    "laguna": Family("gqa_moe", "LagunaConfig"),
    "minimax_m3_vl_text": Family("gqa_moe", "MiniMaxM3VLTextConfig"),
    "zaya": Family("zaya", "ZayaConfig"),
    # -- looped decoders (issue 12): layers that run several times per token --
    "hrm_text": Family("looped", "HrmTextConfig", "describe_hrm_text"),
    "dory": Family("looped", "DoryConfig", "describe_dory"),
}

__all__ = ["MODEL_TYPES", "Architecture", "Family", "FamilyConfig", "FieldError"]
