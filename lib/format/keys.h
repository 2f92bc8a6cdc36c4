// keys.h - metadata keys of weight file v1 (docs/FORMAT.md lists their types and meaning).
#pragma once

namespace gpt::keys {

inline constexpr const char *kArchitecture = "general.architecture"; // str: "gpt2" | "llama" | "qwen3" | "phi3" | "gemma2" | "gemma3" | "mixtral" | "qwen2_moe" | "olmoe" | "qwen3_moe"
inline constexpr const char *kName = "general.name";                 // str, optional
inline constexpr const char *kSource = "general.source";             // str, optional: what it was converted from

inline constexpr const char *kNLayers = "model.n_layers";           // u32
inline constexpr const char *kDModel = "model.d_model";             // u32
inline constexpr const char *kNHeads = "model.n_heads";             // u32
inline constexpr const char *kNKvHeads = "model.n_kv_heads";        // u32
inline constexpr const char *kHeadDim = "model.head_dim";           // u32
inline constexpr const char *kDFF = "model.d_ff";                   // u32
inline constexpr const char *kVocabSize = "model.vocab_size";       // u32
inline constexpr const char *kContextLength = "model.context_length"; // u32
inline constexpr const char *kNormEps = "model.norm_eps";           // f32
inline constexpr const char *kRopeTheta = "model.rope_theta";       // f32 (llama, gemma2, gemma3: its global layers)
inline constexpr const char *kTiedHead = "model.tied_head";         // u32 0/1
inline constexpr const char *kQkvBias = "model.qkv_bias";           // u32 0/1 (llama; gpt2 always has biases)
inline constexpr const char *kRopeDim = "model.rope_dim";           // u32, optional: dims of a head that rotate (default head_dim; Phi-4-mini 3/4)
// RoPE scaling (model/rope_scaling.h); absent: unscaled. Gemma-3: its global layers only (linear).
inline constexpr const char *kRopeScalingType = "model.rope_scaling.type";                   // str: "linear" | "llama3" | "longrope"
inline constexpr const char *kRopeScalingFactor = "model.rope_scaling.factor";               // f32 (linear, llama3)
inline constexpr const char *kRopeScalingLowFreq = "model.rope_scaling.low_freq_factor";     // f32 (llama3)
inline constexpr const char *kRopeScalingHighFreq = "model.rope_scaling.high_freq_factor";   // f32 (llama3)
inline constexpr const char *kRopeScalingOrigContext = "model.rope_scaling.original_context"; // u32 (llama3, longrope)
inline constexpr const char *kRopeScalingAttnFactor = "model.rope_scaling.attention_factor"; // f32 (longrope)
inline constexpr const char *kRopeScalingShort = "model.rope_scaling.short_factor";          // f32[rope_dim / 2] (longrope)
inline constexpr const char *kRopeScalingLong = "model.rope_scaling.long_factor";            // f32[rope_dim / 2] (longrope)
// Sliding-window attention (Mistral, Qwen2, Phi-3, Gemma): on the windowed layers the query at
// position p sees only the keys (p - sliding_window, p]. The windowed layers are those
// window_layers flags; without window_layers, every layer.
inline constexpr const char *kSlidingWindow = "model.sliding_window"; // u32, optional (absent or 0: none)
inline constexpr const char *kWindowLayers = "model.window_layers";   // i32[n_layers] 0/1, optional (needs sliding_window)
// Gemma.
inline constexpr const char *kAttnSoftcap = "model.attn_softcap";     // f32, optional: scores = c tanh(scores / c)
inline constexpr const char *kLogitSoftcap = "model.logit_softcap";   // f32, optional: logits = c tanh(logits / c)
inline constexpr const char *kQueryPreAttnScalar = "model.query_pre_attn_scalar"; // f32, optional: scores scale s^-1/2
inline constexpr const char *kRopeThetaLocal = "model.rope_theta_local";     // f32 (gemma3: its windowed layers, unscaled)
inline constexpr const char *kEmbedScale = "model.embed_scale";       // u32 0/1: embeddings times sqrt(d_model)
// Training-script GPTs (nanoGPT, minGPT, the lecture's gpt.py).
inline constexpr const char *kFfnActivation = "model.ffn_activation"; // str, optional (gpt2): "gelu_tanh" (default) | "gelu_erf" | "relu"
inline constexpr const char *kHeadBias = "model.head_bias";         // u32 0/1, optional (gpt2): the file holds lm_head.bias
// Mixture of experts (mixtral, qwen2_moe, olmoe, qwen3_moe).
inline constexpr const char *kNExperts = "model.n_experts";           // u32: experts per MoE layer (<= 256)
inline constexpr const char *kNExpertsUsed = "model.n_experts_used";  // u32: top-k, 1 <= k <= n_experts
inline constexpr const char *kDFFExpert = "model.d_ff_expert";        // u32: each expert's hidden width
inline constexpr const char *kDFFShared = "model.d_ff_shared";        // u32, optional (qwen2_moe): the shared expert's width; absent or 0: none
inline constexpr const char *kNormTopkProb = "model.norm_topk_prob";  // u32 0/1: renormalise the k chosen probabilities (mixtral: always 1)
inline constexpr const char *kMoeLayers = "model.moe_layers";         // i32[n_layers] 0/1, optional: absent, every layer; 0, a dense FFN of width d_ff

inline constexpr const char *kTokModel = "tokenizer.model";         // str: "none" | "bpe" | "spm" | "char"
inline constexpr const char *kTokPre = "tokenizer.pre";             // str: "none" | "gpt2" | "llama3" | "qwen2" | "o200k" | "gpt2_digits"
inline constexpr const char *kTokTokens = "tokenizer.tokens";       // str[] (vocab_size entries)
inline constexpr const char *kTokScores = "tokenizer.scores";       // f32[] (spm)
inline constexpr const char *kTokTypes = "tokenizer.types";         // i32[]: 1 normal, 2 unknown, 3 control, 4 user, 6 byte
inline constexpr const char *kTokMerges = "tokenizer.merges";       // str[] "left right" (bpe)
inline constexpr const char *kTokBos = "tokenizer.bos_id";          // i32, -1 none
inline constexpr const char *kTokEos = "tokenizer.eos_id";          // i32, -1 none
inline constexpr const char *kTokEosIds = "tokenizer.eos_ids";      // i32[], optional: every end-of-sequence id (eos_id first) when there are several
inline constexpr const char *kTokUnk = "tokenizer.unk_id";          // i32, -1 none
inline constexpr const char *kTokPad = "tokenizer.pad_id";          // i32, -1 none
inline constexpr const char *kTokAddBos = "tokenizer.add_bos";      // u32 0/1
inline constexpr const char *kTokAddSpacePrefix = "tokenizer.add_space_prefix"; // u32 0/1 (spm)
inline constexpr const char *kTokSpacePrefixRule = "tokenizer.space_prefix_rule"; // str: "every_segment" | "unless_space" | "first_segment" (spm)
inline constexpr const char *kTokIgnoreMerges = "tokenizer.ignore_merges"; // u32 0/1 (bpe); absent: 1 for llama3
inline constexpr const char *kTokNormalizer = "tokenizer.normalizer"; // str: "none" | "nfc"
inline constexpr const char *kTokLstripIds = "tokenizer.lstrip_ids";  // i32[]: added tokens that take the whitespace before them
inline constexpr const char *kTokRstripIds = "tokenizer.rstrip_ids";  // i32[]: added tokens that take the whitespace after them
inline constexpr const char *kChatTemplate = "tokenizer.chat_template"; // str, optional: the checkpoint's Jinja2 chat template

} // namespace gpt::keys
