// keys.h - metadata keys of weight file v1 (docs/FORMAT.md lists their types and meaning).
#pragma once

namespace gpt::keys {

inline constexpr const char *kArchitecture = "general.architecture"; // str: "gpt2" | "llama"
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
inline constexpr const char *kRopeTheta = "model.rope_theta";       // f32 (llama)
inline constexpr const char *kTiedHead = "model.tied_head";         // u32 0/1
inline constexpr const char *kQkvBias = "model.qkv_bias";           // u32 0/1 (llama; gpt2 always has biases)
inline constexpr const char *kFfnActivation = "model.ffn_activation"; // str, optional (gpt2): "gelu_tanh" (default) | "gelu_erf" | "relu"
inline constexpr const char *kHeadBias = "model.head_bias";         // u32 0/1, optional (gpt2): the file holds lm_head.bias

inline constexpr const char *kTokModel = "tokenizer.model";         // str: "none" | "bpe" | "spm" | "char"
inline constexpr const char *kTokPre = "tokenizer.pre";             // str: "gpt2" | "llama3" | "none"
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

} // namespace gpt::keys
