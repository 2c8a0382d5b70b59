"""The supported architectures: ``model_type`` → the config fields it reads and the tensors it makes.

To add a family: write a module here with a :class:`FamilyConfig` subclass (usually of
``DecoderConfig`` in ``_base``, which holds the standard Hugging Face fields and builds the shape)
and a ``describe`` function returning an :class:`Architecture` made from the blocks in ``_base``,
then list its model types in ``MODEL_TYPES`` below as ``Family(module, config class name[,
describe function name])``. A model type that is a row of an existing structure and differs from
its config class only in class attributes (its transformers class name, the structure's switches)
is one line here: ``Family(module, base class, describe, row={"transformers_class": …, switch:
value})`` makes the subclass. Modules are imported only when a config of theirs is read, so the
CLI starts fast however many families there are.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from llmcalc.families._base import Architecture
from llmcalc.families._base import FamilyConfig
from llmcalc.families._base import FieldError


@dataclass(frozen=True)
class Family:
    """Where one ``model_type`` is read (``config``) and described (``describe``)."""

    module: str  # llmcalc/families/<module>.py
    config_class: str
    describe_function: str = "describe"
    # a row's class attributes over config_class's (transformers_class and switches), or none
    row: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def config(self) -> type[FamilyConfig]:
        cls: type[FamilyConfig] = getattr(self._module(), self.config_class)
        return _row_class(cls, tuple(self.row.items())) if self.row else cls

    @property
    def describe(self) -> Callable[[Any], Architecture]:
        fn: Callable[[Any], Architecture] = getattr(self._module(), self.describe_function)
        return fn

    def _module(self) -> Any:
        return importlib.import_module(f"llmcalc.families.{self.module}")


@functools.cache
def _row_class(base: type[FamilyConfig], row: tuple[tuple[str, Any], ...]) -> type[FamilyConfig]:
    """``base`` with a row's class attributes: a subclass named after its transformers class."""
    attributes = dict(row)
    name = str(attributes["transformers_class"])
    return type(name, (base,), {"__module__": base.__module__, **attributes})


# one row per model_type, in alphabetical order (tests/families/test_families_registry.py)
MODEL_TYPES: dict[str, Family] = {
    "afmoe": Family("gqa_moe", "AfmoeConfig"),
    "apertus": Family("decoder", "ApertusConfig"),
    "apertus1p5_text": Family("decoder", "Apertus1p5TextConfig"),
    "arcee": Family("decoder", "ArceeConfig"),
    "aria_text": Family("gqa_moe", "AriaTextConfig"),
    "axk1": Family("deepseek", "AXK1Config"),
    "axk2": Family("deepseek", "AXK2Config"),
    "aya_vision": Family("vlm", "AyaVisionConfig", "describe_aya_vision"),
    "bailing_hybrid": Family("kimi_linear", "BailingHybridConfig"),
    "bamba": Family("bamba", "BambaConfig"),
    "bart": Family("bart", "BartConfig"),
    "beam": Family("gqa_moe", "BeamConfig"),
    "bert": Family("encoder", "BertConfig", "describe_bert"),
    "bert-generation": Family("encoder", "BertGenerationConfig", "describe_bert_row"),
    "big_bird": Family("encoder", "BigBirdConfig", "describe_big_bird"),
    "bigbird_pegasus": Family("bart", "BigBirdPegasusConfig", "describe_bigbird_pegasus"),
    "biogpt": Family("classic", "BioGptConfig", "describe_biogpt"),
    "bitnet": Family("decoder", "BitNetConfig"),
    "blenderbot": Family("bart", "BlenderbotConfig"),
    "blenderbot-small": Family("bart", "BlenderbotSmallConfig"),
    "bloom": Family("bloom", "BloomConfig"),
    "blt": Family("blt", "BltConfig"),
    "camembert": Family("encoder", "CamembertConfig", "describe_bert_row"),
    "codegen": Family("classic", "CodeGenConfig", "describe_codegen"),
    "cohere": Family("cohere", "CohereConfig"),
    "cohere2": Family("cohere2", "Cohere2Config"),
    "cohere2_moe": Family("gqa_moe", "Cohere2MoeConfig"),
    "cohere_compass_text": Family("decoder", "CohereCompassTextConfig"),
    "cpmant": Family("classic", "CpmAntConfig", "describe_cpmant"),
    "ctrl": Family("classic", "CTRLConfig", "describe_ctrl"),
    "cwm": Family("decoder", "CwmConfig"),
    "data2vec-text": Family("encoder", "Data2VecTextConfig", "describe_bert_row"),
    "dbrx": Family("dbrx", "DbrxConfig"),
    "deberta-v2": Family("encoder", "DebertaV2Config", "describe_deberta_v2"),
    "deepseek_v2": Family("deepseek", "DeepseekV2Config"),
    "deepseek_v3": Family("deepseek", "DeepseekV3Config"),
    "deepseek_v32": Family("deepseek", "DeepseekV32Config"),
    "deepseek_v4": Family("deepseek_v4", "DeepseekV4Config"),
    "diffllama": Family("decoder", "DiffLlamaConfig"),
    "doge": Family("decoder", "DogeConfig"),
    "dory": Family("looped", "DoryConfig", "describe_dory"),
    "dots1": Family("gqa_moe", "Dots1Config"),
    "dots3_note": Family("dots3_note", "Dots3NoteConfig"),
    "dots3_note_text": Family("deepseek", "Dots3NoteTextConfig"),
    "electra": Family("encoder", "ElectraConfig", "describe_bert_row"),
    "emu3": Family("decoder", "Emu3Config", "describe_emu3"),
    "ernie": Family("encoder", "ErnieConfig", "describe_bert_row"),
    "ernie4_5": Family("decoder", "Ernie45Config"),
    "ernie4_5_moe": Family("gqa_moe", "Ernie45MoeConfig"),
    "exaone": Family("decoder", "ExaoneConfig"),
    "exaone4": Family("decoder", "Exaone4Config"),
    "exaone_moe": Family("gqa_moe", "ExaoneMoeConfig"),
    "falcon": Family("falcon", "FalconConfig"),
    "falcon_h1": Family("falcon_h1", "FalconH1Config"),
    "falcon_mamba": Family("mamba", "FalconMambaConfig"),
    "flex_olmo": Family("gqa_moe", "FlexOlmoConfig"),
    "flint": Family("gqa_moe", "FlintConfig"),
    "fuyu": Family("vlm", "FuyuConfig", "describe_fuyu"),
    "gemma": Family("llama", "GemmaConfig"),
    "gemma2": Family("gemma2", "Gemma2Config"),
    "gemma3": Family("vlm", "Gemma3Config", "describe_gemma3"),
    "gemma3_text": Family("gemma2", "Gemma3TextConfig"),
    "gemma3n": Family("gemma3n", "Gemma3nConfig", "describe_gemma3n"),
    "gemma3n_text": Family("gemma3n", "Gemma3nTextConfig"),
    "gemma4": Family("gemma4", "Gemma4Config", "describe_gemma4"),
    "gemma4_assistant": Family("gemma4", "Gemma4AssistantConfig", "describe_gemma4_assistant"),
    "gemma4_text": Family("gemma4", "Gemma4TextConfig"),
    "gemma4_unified": Family("gemma4", "Gemma4UnifiedConfig", "describe_gemma4_unified"),
    "gemma4_unified_assistant": Family(
        "gemma4", "Gemma4UnifiedAssistantConfig", "describe_gemma4_assistant"
    ),
    "gemma4_unified_text": Family("gemma4", "Gemma4UnifiedTextConfig"),
    "git": Family("git", "GitConfig"),
    "glm": Family("decoder", "GlmConfig"),
    "glm4": Family("decoder", "Glm4Config"),
    "glm4_moe": Family("gqa_moe", "Glm4MoeConfig"),
    "glm4_moe_lite": Family("deepseek", "Glm4MoeLiteConfig"),
    "glm_moe_dsa": Family("deepseek", "GlmMoeDsaConfig"),
    "got_ocr2": Family("vlm", "GotOcr2Config", "describe_got_ocr2"),
    "gpt-sw3": Family("gpt2", "GPT2Config"),
    "gpt2": Family("gpt2", "GPT2Config"),
    "gpt_bigcode": Family("gpt_bigcode", "GPTBigCodeConfig"),
    "gpt_neo": Family("gpt_neo", "GPTNeoConfig"),
    "gpt_neox": Family("gpt_neox", "GPTNeoXConfig"),
    "gpt_neox_japanese": Family("classic", "GPTNeoXJapaneseConfig", "describe_gpt_neox_japanese"),
    "gpt_oss": Family("gpt_oss", "GptOssConfig"),
    "gptj": Family("gptj", "GPTJConfig"),
    "granite": Family("llama", "GraniteConfig"),
    "granite_swa": Family("decoder", "GraniteSWAConfig"),
    "granitemoe": Family("mixtral", "GraniteMoeConfig"),
    "granitemoe_swa": Family("gqa_moe", "GraniteMoeSwaConfig"),
    "granitemoehybrid": Family("granitemoehybrid", "GraniteMoeHybridConfig"),
    "granitemoeshared": Family("gqa_moe", "GraniteMoeSharedConfig"),
    "helium": Family("decoder", "HeliumConfig"),
    "hrm_text": Family("looped", "HrmTextConfig", "describe_hrm_text"),
    "hunyuan_v1_dense": Family("decoder", "HunYuanDenseV1Config"),
    "hunyuan_v1_moe": Family("gqa_moe", "HunYuanMoeV1Config"),
    "hy_v3": Family("gqa_moe", "HYV3Config"),
    "hy_v4": Family("deepseek", "HYV4Config"),
    "hyperclovax": Family("decoder", "HyperCLOVAXConfig"),
    "ibert": Family("encoder", "BertRowConfig", "describe_bert_row",
                    row={"transformers_class": "IBertConfig", "prefix": "ibert", "head": "roberta"}),
    "idefics3": Family("vlm", "Idefics3Config", "describe_idefics3"),
    "inkling2_loop_text": Family("inkling", "Inkling2LoopTextConfig", "describe_inkling2_loop"),
    "inkling2_text": Family("inkling", "Inkling2TextConfig", "describe_inkling2"),
    "inkling_text": Family("inkling", "InklingTextConfig"),
    "internlm3": Family("decoder", "InternLM3Config"),
    "internvl": Family("vlm", "InternVLConfig", "describe_internvl"),
    "iquestcoder": Family("decoder", "IQuestCoderConfig"),
    "jais2": Family("decoder", "Jais2Config"),
    "jamba": Family("jamba", "JambaConfig"),
    "jetmoe": Family("jetmoe", "JetMoeConfig"),
    "kimi_linear": Family("kimi_linear", "KimiLinearConfig"),
    "kolibri1": Family("gqa_moe", "Kolibri1Config"),
    "laguna": Family("gqa_moe", "LagunaConfig"),
    "lara_mini": Family("qwen3_next", "LaraMiniConfig"),
    "lfm2": Family("lfm2", "Lfm2Config"),
    "lfm2_moe": Family("lfm2", "Lfm2MoeConfig", "describe_moe"),
    "lfm3": Family("lfm2", "Lfm3Config", "describe_lfm3"),
    "llama": Family("llama", "LlamaConfig"),
    "llama4": Family("vlm", "Llama4Config", "describe_llama4"),
    "llama4_text": Family("llama4", "Llama4TextConfig"),
    "llava": Family("vlm", "LlavaConfig"),
    "llava_next": Family("vlm", "LlavaNextConfig", "describe_llava_next"),
    "llava_onevision": Family("vlm", "LlavaOnevisionConfig", "describe_llava_onevision"),
    "longcat_flash": Family("longcat_flash", "LongcatFlashConfig"),
    "mamba": Family("mamba", "MambaConfig"),
    "mamba2": Family("mamba", "Mamba2Config", "describe_mamba2"),
    "marian": Family("bart", "MarianConfig"),
    "mbart": Family("bart", "MBartConfig", "describe_mbart"),
    "megatron-bert": Family("encoder", "MegatronBertConfig", "describe_bert_row"),
    "mellum": Family("gqa_moe", "MellumConfig"),
    "mimo_v2_flash": Family("mimo_v2_flash", "MiMoV2FlashConfig"),
    "minicpm3": Family("decoder", "MiniCPM3Config", "describe_mla"),
    "minimax": Family("minimax", "MiniMaxConfig"),
    "minimax_m2": Family("gqa_moe", "MiniMaxM2Config"),
    "minimax_m3_vl_text": Family("gqa_moe", "MiniMaxM3VLTextConfig"),
    "ministral": Family("decoder", "MinistralConfig"),
    "ministral3": Family("decoder", "Ministral3Config"),
    "mistral": Family("llama", "MistralConfig"),
    "mistral3": Family("vlm", "Mistral3Config", "describe_mistral3"),
    "mixtral": Family("mixtral", "MixtralConfig"),
    "mllama": Family("vlm", "MllamaConfig", "describe_mllama"),
    "modernbert": Family("encoder", "ModernBertConfig", "describe_modernbert"),
    "modernbert-decoder": Family(
        "classic", "ModernBertDecoderConfig", "describe_modernbert_decoder"
    ),
    "moshi": Family("decoder", "MoshiConfig", "describe_moshi"),
    "moss_transcribe_diarize": Family(
        "audio_lm", "MossTranscribeDiarizeConfig", "describe_moss_transcribe_diarize"
    ),
    "mpt": Family("mpt", "MptConfig"),
    "mt5": Family("t5", "MT5Config"),
    "mvp": Family("bart", "MvpConfig"),
    "nanochat": Family("decoder", "NanoChatConfig"),
    "nemotron": Family("decoder", "NemotronConfig"),
    "nemotron_h": Family("nemotron_h", "NemotronHConfig"),
    "olmo": Family("olmo", "OlmoConfig"),
    "olmo2": Family("olmo2", "Olmo2Config"),
    "olmo3": Family("decoder", "Olmo3Config"),
    "olmo_hybrid": Family("olmo_hybrid", "OlmoHybridConfig"),
    "olmoe": Family("mixtral", "OlmoeConfig"),
    "openai-gpt": Family("classic", "OpenAIGPTConfig", "describe_openai_gpt"),
    "opt": Family("opt", "OPTConfig"),
    "paligemma": Family("vlm", "PaliGemmaConfig", "describe_paligemma"),
    "pegasus": Family("bart", "PegasusConfig"),
    "persimmon": Family("classic", "PersimmonConfig", "describe_persimmon"),
    "phi": Family("phi", "PhiConfig"),
    "phi3": Family("phi3", "Phi3Config"),
    "phi4_multimodal": Family("phi4mm", "Phi4MultimodalConfig"),
    "phimoe": Family("mixtral", "PhimoeConfig"),
    "plbart": Family("bart", "PLBartConfig"),
    "prophetnet": Family("prophetnet", "ProphetNetConfig"),
    "qwen2": Family("qwen", "Qwen2Config"),
    "qwen2_5_vl": Family("vlm", "Qwen2_5_VLConfig", "describe_qwen2_vl"),
    "qwen2_moe": Family("qwen_moe", "Qwen2MoeConfig"),
    "qwen2_vl": Family("vlm", "Qwen2VLConfig", "describe_qwen2_vl"),
    "qwen3": Family("qwen", "Qwen3Config", "describe_qwen3"),
    "qwen3_5": Family("vlm", "Qwen3_5Config", "describe_qwen3_vl"),
    "qwen3_5_moe": Family("vlm", "Qwen3_5MoeConfig", "describe_qwen3_vl"),
    "qwen3_5_moe_text": Family("qwen3_next", "Qwen3_5MoeTextConfig"),
    "qwen3_5_text": Family("qwen3_next", "Qwen3_5TextConfig"),
    "qwen3_moe": Family("qwen_moe", "Qwen3MoeConfig"),
    "qwen3_next": Family("qwen3_next", "Qwen3NextConfig"),
    "qwen3_vl": Family("vlm", "Qwen3VLConfig", "describe_qwen3_vl"),
    "qwen3_vl_moe": Family("vlm", "Qwen3VLMoeConfig", "describe_qwen3_vl"),
    "qwen4_exp": Family("vlm", "Qwen4ExpConfig", "describe_qwen3_vl"),
    "qwen4_exp_text": Family("qwen4_exp", "Qwen4ExpTextConfig"),
    "recurrent_gemma": Family("recurrent_gemma", "RecurrentGemmaConfig"),
    "reformer": Family("encoder", "ReformerConfig", "describe_reformer"),
    "rembert": Family("encoder", "RemBertConfig", "describe_bert_row"),
    "roberta": Family("encoder", "RobertaConfig", "describe_roberta"),
    "roberta-prelayernorm": Family("encoder", "RobertaPreLayerNormConfig", "describe_bert_row"),
    "roc_bert": Family("encoder", "RoCBertConfig", "describe_bert_row"),
    "roformer": Family("encoder", "RoFormerConfig", "describe_bert_row"),
    "rwkv": Family("rwkv", "RwkvConfig"),
    "sarvam_mla": Family("deepseek", "SarvamMlaConfig"),
    "sarvam_moe": Family("gqa_moe", "SarvamMoeConfig"),
    "seed_oss": Family("decoder", "SeedOssConfig"),
    "smollm3": Family("decoder", "SmolLM3Config"),
    "smolvlm": Family("vlm", "SmolVLMConfig", "describe_idefics3"),
    "solar_open": Family("gqa_moe", "SolarOpenConfig"),
    "stablelm": Family("stablelm", "StableLmConfig"),
    "starcoder2": Family("starcoder2", "Starcoder2Config"),
    "t5": Family("t5", "T5Config"),
    "trocr": Family("bart", "TrOCRConfig", "describe_trocr"),  # the decoder alone (TrOCRForCausalLM)
    "umt5": Family("t5", "UMT5Config", "describe_umt5"),
    "vaultgemma": Family("decoder", "VaultGemmaConfig"),
    "whisper": Family("bart", "WhisperConfig", "describe_whisper"),
    "xglm": Family("classic", "XGLMConfig", "describe_xglm"),
    "xlm": Family("encoder", "XLMConfig", "describe_xlm"),
    "xlm-roberta": Family("encoder", "XLMRobertaConfig", "describe_bert_row"),
    "xlm-roberta-xl": Family("encoder", "XLMRobertaXLConfig", "describe_bert_row"),
    "xlnet": Family("encoder", "XLNetConfig", "describe_xlnet"),
    "xlstm": Family("xlstm", "XLSTMConfig"),
    "xmod": Family("encoder", "XmodConfig", "describe_bert_row"),
    "youtu": Family("decoder", "YoutuConfig", "describe_mla"),
    "zamba": Family("zamba", "ZambaConfig"),
    "zamba2": Family("zamba", "Zamba2Config", "describe_zamba2"),
    "zaya": Family("zaya", "ZayaConfig"),
}

__all__ = ["MODEL_TYPES", "Architecture", "Family", "FamilyConfig", "FieldError"]
