// make_corpus - writes the seed corpora of the fuzz targets into DIR (tests/fuzz/corpus):
//   make -C tests/fuzz && build-fuzz/make_corpus tests/fuzz/corpus
// Small valid inputs of every kind each target reads, so fuzzing starts from the formats'
// structure instead of from nothing. Deterministic: the same files every run.
#include "common.h"

#include "fixture.h"
#include "format/quantize.h"
#include "format/reader.h"
#include "format/writer.h"
#include "model/arch.h"
#include "tokenizer/byte_unicode.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace {

std::string g_dir;

void write(const std::string &target, const std::string &name, const std::vector<uint8_t> &bytes) {
    const std::string d = g_dir + "/" + target;
    ::mkdir(g_dir.c_str(), 0755);
    ::mkdir(d.c_str(), 0755);
    FILE *f = std::fopen((d + "/" + name).c_str(), "wb");
    FUZZ_CHECK(f, "cannot write %s/%s", d.c_str(), name.c_str());
    if (!bytes.empty()) std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
}
void write(const std::string &target, const std::string &name, const std::string &s) {
    write(target, name, std::vector<uint8_t>(s.begin(), s.end()));
}

// A small byte-level BPE vocabulary: the 256 mapped bytes, a few merges, a control token.
gpt::TokenizerData small_bpe() {
    gpt::TokenizerData d;
    d.kind = gpt::TokenizerKind::BPE;
    d.pre = gpt::PreTokenizer::GPT2;
    d.tokens.push_back("<|endoftext|>");
    d.types.push_back(gpt::TOKEN_CONTROL);
    for (int b = 0; b < 256; b++) {
        d.tokens.push_back(gpt::byte_to_utf8((uint8_t)b));
        d.types.push_back(gpt::TOKEN_NORMAL);
    }
    const std::string G = gpt::byte_to_utf8(' ');
    const std::pair<std::string, std::string> merges[] = {{"t", "h"}, {G, "th"}, {"th", "e"}, {G + "th", "e"}, {"i", "n"},
                                                          {G, "a"},   {"a", "n"},  {"an", "d"}, {G + "a", "nd"}};
    for (const auto &m : merges) {
        d.merges.push_back(m.first + " " + m.second);
        d.tokens.push_back(m.first + m.second);
        d.types.push_back(gpt::TOKEN_NORMAL);
    }
    d.tokens.push_back("<tag>");
    d.types.push_back(gpt::TOKEN_USER_DEFINED);
    d.bos_id = d.eos_id = 0;
    return d;
}

std::vector<uint8_t> model_file(gpt_arch arch, gpt::DType dt, const gpt::TokenizerData *tok, uint32_t vocab, bool tied,
                                bool bias, uint64_t seed) {
    fixture::Spec s;
    s.arch = arch;
    s.n_layers = 1, s.d_model = 4, s.n_heads = 2, s.n_kv_heads = arch == GPT_ARCH_LLAMA ? 1 : 2, s.head_dim = 2, s.d_ff = 6;
    s.vocab_size = tok ? (uint32_t)tok->tokens.size() : vocab;
    s.context_length = 8;
    s.dtype = dt;
    s.tied_head = tied;
    s.qkv_bias = bias;
    s.seed = seed;
    if (tok) s.bos_id = tok->bos_id, s.eos_id = tok->eos_id;
    return fixture::make(s, tok).file;
}

// A tiny mixture of experts: 3 experts of width 3, top-2; qwen2_moe adds a shared expert of
// width 2 and a dense second layer.
std::vector<uint8_t> moe_model_file(gpt_arch arch, uint64_t seed) {
    fixture::Spec s;
    s.arch = arch;
    s.n_layers = arch == GPT_ARCH_QWEN2_MOE ? 2 : 1, s.d_model = 4, s.n_heads = 2, s.n_kv_heads = 1, s.head_dim = 2, s.d_ff = 6;
    s.vocab_size = 13, s.context_length = 8, s.seed = seed;
    s.n_experts = 3, s.n_experts_used = 2, s.d_ff_expert = 3;
    if (arch == GPT_ARCH_QWEN2_MOE) s.d_ff_shared = 2, s.moe_layers = {1, 0}, s.qkv_bias = true;
    return fixture::make(s).file;
}

// A small model (d_model 32) with every matrix the quantized-file rule takes stored as q (group
// 32), the rest f32 (format/quantize.h).
std::vector<uint8_t> quantized_model_file(gpt_arch arch, gpt::DType q, uint64_t seed) {
    fixture::Spec s;
    s.arch = arch;
    s.n_layers = 1, s.d_model = 32, s.n_heads = 2, s.n_kv_heads = arch == GPT_ARCH_LLAMA ? 1 : 2, s.head_dim = 16, s.d_ff = 64;
    s.vocab_size = 19, s.context_length = 8, s.seed = seed;
    const fixture::Model m = fixture::make(s);
    gpt::format::Writer w;
    m.config.to_metadata(w.metadata());
    for (const gpt::TensorSlot &slot : gpt::tensor_table(m.config)) {
        const std::vector<float> &v = m.tensors.at(slot.name);
        gpt::format::add_quantized_or_keep(
            w, slot.name, slot.shape, q, 32, [&v](float *dst) { std::memcpy(dst, v.data(), v.size() * 4); }, gpt::DType::F32,
            [&v](uint8_t *dst, uint64_t n) { std::memcpy(dst, v.data(), n); });
    }
    return w.write_memory();
}

void put_u64(std::vector<uint8_t> &b, uint64_t v) {
    for (int i = 0; i < 8; i++) b.push_back((uint8_t)(v >> (8 * i)));
}
void put_i32(std::vector<uint8_t> &b, int32_t v) {
    uint8_t x[4];
    std::memcpy(x, &v, 4);
    b.insert(b.end(), x, x + 4);
}
void put_f32(std::vector<uint8_t> &b, float v) {
    uint8_t x[4];
    std::memcpy(x, &v, 4);
    b.insert(b.end(), x, x + 4);
}

std::vector<uint8_t> safetensors(const std::string &json, const std::vector<uint8_t> &data) {
    std::vector<uint8_t> b;
    put_u64(b, json.size());
    b.insert(b.end(), json.begin(), json.end());
    b.insert(b.end(), data.begin(), data.end());
    return b;
}

// llama2.c checkpoint: v0 (7 ints) or v1 ("ak42", version 1, 7 ints, shared byte, pad to 256).
std::vector<uint8_t> llama2c(int version, int dim, int hidden, int layers, int heads, int kv, int vocab, int seq, bool shared) {
    std::vector<uint8_t> b;
    if (version == 1) {
        put_i32(b, 0x616b3432);
        put_i32(b, 1);
    }
    for (int v : {dim, hidden, layers, heads, kv, shared || version == 1 ? vocab : -vocab, seq}) put_i32(b, v);
    if (version == 1) {
        b.push_back(shared ? 1 : 0);
        b.resize(256, 0);
    }
    const uint64_t hs = dim / heads, kvd = (uint64_t)kv * hs;
    uint64_t n = (uint64_t)vocab * dim + layers * (2ull * dim + 2ull * dim * dim + 2 * kvd * dim + 3ull * hidden * dim) + dim;
    if (version == 0) n += 2ull * seq * (hs / 2);
    if (!shared) n += (uint64_t)vocab * dim;
    std::mt19937 rng(dim * 31 + layers);
    std::normal_distribution<float> nd(0.0f, 0.3f);
    for (uint64_t i = 0; i < n; i++) put_f32(b, nd(rng));
    return b;
}

std::vector<uint8_t> llama2c_tokenizer(const gpt::TokenizerData &t) {
    std::vector<uint8_t> b;
    put_i32(b, 16);
    for (size_t i = 0; i < t.tokens.size(); i++) {
        std::string s = t.tokens[i];
        if (i == 1) s = "\n<s>\n";
        if (i == 2) s = "\n</s>\n";
        std::string raw;
        for (size_t k = 0; k < s.size(); k++) {
            if (s.compare(k, 3, "\xE2\x96\x81") == 0) {
                raw += ' ';
                k += 2;
            } else raw += s[k];
        }
        put_f32(b, t.scores.empty() ? 0.0f : t.scores[i]);
        put_i32(b, (int32_t)raw.size());
        b.insert(b.end(), raw.begin(), raw.end());
    }
    return b;
}

} // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_corpus DIR\n");
        return 2;
    }
    g_dir = argv[1];
    using gpt::DType;
    const gpt::TokenizerData bpe = small_bpe();
    const gpt::TokenizerData &spm = fuzz::spm_tokenizer();

    // fuzz_weight_file: small models of both architectures, every dtype, with and without
    // tokenizers; a file with odd metadata types; a header-only file.
    write("fuzz_weight_file", "llama_f32_spm.gpt", model_file(GPT_ARCH_LLAMA, DType::F32, &spm, 0, true, false, 1));
    write("fuzz_weight_file", "llama_f16_bpe.gpt", model_file(GPT_ARCH_LLAMA, DType::F16, &bpe, 0, true, true, 2));
    write("fuzz_weight_file", "llama_bf16_untied.gpt", model_file(GPT_ARCH_LLAMA, DType::BF16, nullptr, 19, false, false, 3));
    write("fuzz_weight_file", "gpt2_f32.gpt", model_file(GPT_ARCH_GPT2, DType::F32, nullptr, 23, true, false, 4));
    write("fuzz_weight_file", "gpt2_f16_untied.gpt", model_file(GPT_ARCH_GPT2, DType::F16, nullptr, 11, false, false, 5));
    write("fuzz_weight_file", "llama_q4.gpt", quantized_model_file(GPT_ARCH_LLAMA, DType::Q4, 6));
    write("fuzz_weight_file", "gpt2_q8.gpt", quantized_model_file(GPT_ARCH_GPT2, DType::Q8, 7));
    write("fuzz_weight_file", "qwen2_moe_f32.gpt", moe_model_file(GPT_ARCH_QWEN2_MOE, 8));
    write("fuzz_weight_file", "olmoe_f32.gpt", moe_model_file(GPT_ARCH_OLMOE, 9));
    {
        gpt::format::Writer w;
        using gpt::format::MetaValue;
        w.metadata().set("general.architecture", MetaValue::of_str("llama"));
        w.metadata().set("x.u64", MetaValue::of_u64(1ull << 40));
        w.metadata().set("x.i32s", MetaValue::of_i32s({-1, 0, 1}));
        w.metadata().set("x.f32s", MetaValue::of_f32s({0.5f, NAN}));
        w.metadata().set("x.strs", MetaValue::of_strs({"", "a"}));
        const float v[3] = {1, 2, 3};
        w.add_tensor("t", DType::F32, {3}, v, sizeof v);
        write("fuzz_weight_file", "odd_metadata.gpt", w.write_memory());
        gpt::format::Writer empty;
        write("fuzz_weight_file", "empty.gpt", empty.write_memory());
    }
    {
        // A model with 300 extra metadata keys (the key lookups at load were quadratic).
        const std::vector<uint8_t> base = model_file(GPT_ARCH_LLAMA, DType::F32, nullptr, 13, true, false, 6);
        auto f = gpt::format::WeightFile::from_memory(base.data(), base.size(), true, gpt::format::ReadOptions());
        gpt::format::Writer w;
        for (const auto &[key, v] : f->metadata().entries()) w.metadata().set(key, v);
        for (int i = 0; i < 300; i++)
            w.metadata().set("user.k" + std::to_string(i), gpt::format::MetaValue::of_u32((uint32_t)i));
        for (const auto &t : f->tensors())
            w.add_tensor(t.name, t.dtype, std::vector<uint64_t>(t.dims, t.dims + t.ndim), f->data(t), t.nbytes);
        write("fuzz_weight_file", "many_keys.gpt", w.write_memory());
    }

    // fuzz_safetensors.
    {
        std::vector<uint8_t> data(4 * 6 + 2 * 4 + 2 * 2);
        for (size_t i = 0; i < data.size(); i++) data[i] = (uint8_t)(i * 37 + 11);
        const std::string json =
            R"({"__metadata__":{"format":"pt"},"a.weight":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
            R"("b.bias":{"dtype":"F16","shape":[4],"data_offsets":[24,32]},"c":{"dtype":"BF16","shape":[1,2],"data_offsets":[32,36]}})";
        write("fuzz_safetensors", "three.safetensors", safetensors(json, data));
        write("fuzz_safetensors", "empty.safetensors", safetensors("{}", {}));
        write("fuzz_safetensors", "scalar_i64.safetensors",
              safetensors(R"({"s":{"dtype":"I64","shape":[],"data_offsets":[0,8]},"z":{"dtype":"F32","shape":[0,4],"data_offsets":[8,8]}})",
                          std::vector<uint8_t>(8, 1)));
        write("fuzz_safetensors", "bare_header.json", json);
    }

    // fuzz_hf_config.
    write("fuzz_hf_config", "gpt2.json",
          R"({"model_type":"gpt2","n_embd":64,"n_layer":2,"n_head":4,"n_positions":128,"vocab_size":100,"n_inner":null,)"
          R"("layer_norm_epsilon":1e-05,"activation_function":"gelu_new","tie_word_embeddings":true,"bos_token_id":0,"eos_token_id":0})");
    write("fuzz_hf_config", "llama.json",
          R"({"model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,)"
          R"("intermediate_size":96,"vocab_size":100,"max_position_embeddings":256,"rms_norm_eps":1e-06,"rope_theta":500000.0,)"
          R"("rope_scaling":null,"hidden_act":"silu","tie_word_embeddings":false,"attention_bias":false,"mlp_bias":false,)"
          R"("bos_token_id":1,"eos_token_id":[2,3],"torch_dtype":"bfloat16"})");
    write("fuzz_hf_config", "mistral.json",
          R"({"model_type":"mistral","hidden_size":64,"num_hidden_layers":1,"num_attention_heads":8,"num_key_value_heads":2,)"
          R"("head_dim":16,"intermediate_size":96,"vocab_size":50,"max_position_embeddings":4096,"sliding_window":1024,)"
          R"("rope_parameters":{"rope_type":"default","rope_theta":10000.0},"bos_token_id":1,"eos_token_id":2})");
    write("fuzz_hf_config", "qwen2.json",
          R"({"model_type":"qwen2","hidden_size":32,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":1,)"
          R"("intermediate_size":40,"vocab_size":45,"use_sliding_window":true,"sliding_window":32,"tie_word_embeddings":true,)"
          R"("rope_scaling":{"type":"linear","factor":2.0},"dtype":"float16","eos_token_id":[44,-1,99]})");

    write("fuzz_hf_config", "gemma2.json",
          R"({"model_type":"gemma2","hidden_size":64,"num_hidden_layers":4,"num_attention_heads":4,"num_key_value_heads":2,)"
          R"("head_dim":16,"intermediate_size":96,"vocab_size":60,"query_pre_attn_scalar":24,"sliding_window":8,)"
          R"("attn_logit_softcapping":50.0,"final_logit_softcapping":null,"hidden_activation":"gelu_pytorch_tanh",)"
          R"("layer_types":["sliding_attention","full_attention","sliding_attention","full_attention"],"eos_token_id":1})");
    write("fuzz_hf_config", "gemma3_text.json",
          R"({"model_type":"gemma3_text","hidden_size":48,"num_hidden_layers":6,"num_attention_heads":3,"num_key_value_heads":1,)"
          R"("head_dim":16,"intermediate_size":64,"vocab_size":70,"sliding_window":4,"sliding_window_pattern":3,)"
          R"("rope_parameters":{"full_attention":{"rope_type":"linear","factor":8.0,"rope_theta":1000000.0},)"
          R"("sliding_attention":{"rope_type":"default","rope_theta":10000.0}},"eos_token_id":[1,69]})");

    // Mixtures of experts: Qwen2-MoE's dense layers (decoder_sparse_step, mlp_only_layers) and
    // shared expert, Mixtral's expert keys.
    write("fuzz_hf_config", "qwen2_moe.json",
          R"({"model_type":"qwen2_moe","hidden_size":32,"num_hidden_layers":4,"num_attention_heads":4,"num_key_value_heads":2,)"
          R"("intermediate_size":48,"moe_intermediate_size":16,"shared_expert_intermediate_size":24,"num_experts":8,)"
          R"("num_experts_per_tok":2,"norm_topk_prob":true,"decoder_sparse_step":2,"mlp_only_layers":[3],"vocab_size":50})");
    write("fuzz_hf_config", "mixtral.json",
          R"({"model_type":"mixtral","hidden_size":32,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":1,)"
          R"("intermediate_size":40,"num_local_experts":4,"num_experts_per_tok":2,"sliding_window":null,"vocab_size":50})");

    {
        // A long eos_token_id list: repeats, ids outside the vocabulary, one past 32 bits.
        std::string eos;
        for (int i = 0; i < 600; i++) eos += std::to_string(i % 150) + ",";
        write("fuzz_hf_config", "many_eos.json",
              R"({"model_type":"llama","hidden_size":32,"num_hidden_layers":1,"num_attention_heads":4,"intermediate_size":40,)"
              R"("vocab_size":100,"bos_token_id":1,"eos_token_id":[)" + eos + "4294967301]}");
    }

    // fuzz_llama2c: v0 shared and unshared, v1, and a tokenizer.bin.
    write("fuzz_llama2c", "v0_shared.bin", llama2c(0, 8, 12, 1, 2, 1, 5, 4, true));
    write("fuzz_llama2c", "v0_unshared.bin", llama2c(0, 8, 12, 1, 2, 2, 5, 4, false));
    write("fuzz_llama2c", "v1.bin", llama2c(1, 4, 6, 2, 2, 1, 3, 64, true));
    {
        gpt::TokenizerData small = spm;
        small.tokens.resize(40), small.scores.resize(40), small.types.resize(40);
        write("fuzz_llama2c", "tokenizer.bin", llama2c_tokenizer(small));
    }

    // fuzz_tokenizer: text for each tokenizer and flag mix, id lists, hostile vocabularies.
    const std::string texts[] = {"Hello world, the and in 123 456789!",
                                 "<|endoftext|> <s>a</s> <tag> \xE2\x96\x81\xE2\x96\x81 caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80",
                                 std::string("\xFF\xFE\x80 \r\n\t  x\0y'S'll'VE", 20)};
    int k = 0;
    for (uint8_t sel : {0x00, 0x05, 0x0A, 0x2F, 0x03, 0x0D}) {
        for (const std::string &t : texts) {
            std::string in(1, (char)sel);
            in += (char)(t.size() & 0xff);
            in += (char)(t.size() >> 8);
            in += t;
            write("fuzz_tokenizer", "text_" + std::to_string(k++), in);
        }
    }
    {
        // Runs of \p{N} (ASCII, Arabic-Indic, superscript, fractions, Roman numerals) for each
        // byte-level pre-tokenizer (their splits of a run were quadratic), and one long word.
        // 200 bytes: every piece boundary, while keeping the executions of the corpus fast.
        std::string digits, word;
        while (digits.size() < 200) digits += "0123456789\xD9\xA1\xD9\xA2\xC2\xB2\xC2\xBD\xE2\x85\xA7";
        while (word.size() < 200) word += "theandin";
        const std::pair<const char *, uint8_t> seeds[] = {{"digits_0", 0x00}, {"digits_1", 0x01}, {"digits_2", 0x02}, {"word_0", 0x00}};
        for (const auto &[name, sel] : seeds) {
            const std::string &t = name[0] == 'w' ? word : digits;
            std::string in(1, (char)sel);
            in += (char)(t.size() & 0xff);
            in += (char)(t.size() >> 8);
            in += t;
            write("fuzz_tokenizer", name, in);
        }
    }
    for (uint8_t sel : {0x10, 0x33}) {
        std::string in(1, (char)sel);
        in += (char)20;
        for (int i = 0; i < 20; i++) {
            in += (char)(i == 7 ? 251 : i == 13 ? 255 : 0);
            in += (char)(i * 53), in += (char)(i == 3 ? 0xff : 0);
            if (i == 13) in += std::string("\x00\x00\x00\x80", 4);
        }
        write("fuzz_tokenizer", "ids_" + std::to_string(sel), in);
    }
    {
        std::mt19937 rng(5);
        for (uint8_t sel : {0xC0, 0xC1, 0xC3, 0xC6}) {
            std::string in(1, (char)sel);
            for (int i = 0; i < 400; i++) in += (char)(rng() & 0xff);
            write("fuzz_tokenizer", "vocab_" + std::to_string(sel), in);
        }
    }

    // fuzz_tokenizer_import: tokenizer.json (byte-level and SentencePiece-style, with a
    // tokenizer_config.json), vocab.json + merges.txt, a SentencePiece .model.
    write("fuzz_tokenizer_import", "byte_level.json",
          std::string(1, (char)0) +
              R"({"version":"1.0","added_tokens":[{"id":6,"content":"<|endoftext|>","special":true}],"normalizer":null,)"
              R"("pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"},"behavior":"Isolated","invert":false},)"
              R"({"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":false}]},)"
              R"("post_processor":{"type":"ByteLevel"},"decoder":{"type":"ByteLevel"},)"
              R"("model":{"type":"BPE","dropout":null,"unk_token":null,"ignore_merges":false,"byte_fallback":false,)"
              R"("vocab":{"a":0,"b":1,"c":2,"ab":3,"Ġ":4,"Ġa":5},"merges":["a b",["Ġ","a"]]}})"
              "\n#CONFIG#\n"
              R"({"add_bos_token":false,"bos_token":"<|endoftext|>","eos_token":{"content":"<|endoftext|>"}})");
    write("fuzz_tokenizer_import", "spm_style.json",
          std::string("\x03") +
              R"({"version":"1.0","added_tokens":[{"id":0,"content":"<unk>","special":true},{"id":1,"content":"<s>","special":true}],)"
              R"("normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},{"type":"Replace","pattern":{"String":" "},"content":"▁"}]},)"
              R"("pre_tokenizer":null,"decoder":null,"model":{"type":"BPE","unk_token":"<unk>","fuse_unk":true,"byte_fallback":true,)"
              R"("vocab":{"<unk>":0,"<s>":1,"<0x41>":2,"a":3,"▁":4,"▁a":5},"merges":["▁ a"]}})");
    // The issue-18 families: SmolLM2 (Digits + ByteLevel), Qwen2.5 (NFC), Gemma (Replace +
    // Split(" "), no prefix), Mistral v0.3 (Metaspace first), Phi-3 (rstrip chat tokens).
    const std::string bl_model = R"("model":{"type":"BPE","vocab":{"a":0,"b":1,"1":2,"ab":3,"Ġ":4,"Ġa":5},"merges":["a b","Ġ a"]}})";
    write("fuzz_tokenizer_import", "smollm2.json",
          std::string(1, (char)0) + R"({"added_tokens":[{"id":6,"content":"<|im_start|>","special":true,"rstrip":true}],)"
              R"("pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Digits","individual_digits":true},)"
              R"({"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}]},"decoder":{"type":"ByteLevel"},)" + bl_model);
    write("fuzz_tokenizer_import", "qwen25_nfc.json",
          std::string(1, (char)0) + R"({"normalizer":{"type":"NFC"},"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":true},)" + bl_model);
    const std::string spm_model = R"("model":{"type":"BPE","unk_token":"<unk>","fuse_unk":true,"byte_fallback":true,)"
                                  R"("vocab":{"<unk>":0,"<s>":1,"<0x41>":2,"a":3,"▁":4,"▁a":5,"<|end|>":6},"merges":["▁ a"]}})";
    const std::string spm_added = R"({"added_tokens":[{"id":0,"content":"<unk>","special":true},{"id":1,"content":"<s>","special":true},)"
                                  R"({"id":6,"content":"<|end|>","special":true,"lstrip":true,"rstrip":true,"normalized":false}],)";
    const std::string strip_decoder = R"("decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},)"
                                      R"({"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]},)";
    write("fuzz_tokenizer_import", "gemma.json",
          std::string("") + spm_added + R"("normalizer":{"type":"Replace","pattern":{"String":" "},"content":"▁"},)"
              R"("pre_tokenizer":{"type":"Split","pattern":{"String":" "},"behavior":"MergedWithPrevious","invert":false},)"
              R"("decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"}]},)" +
              spm_model);
    write("fuzz_tokenizer_import", "mistral_v03.json",
          std::string("") + spm_added + R"("normalizer":null,"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":false},)" +
              strip_decoder + spm_model);
    {
        // Many post-processors naming tokens (a vocabulary scan each was quadratic), and a
        // special_tokens id past 32 bits (2^32 + 3 became 3, the id of <s>).
        std::string procs;
        for (int i = 0; i < 30; i++) // 30: the file stays under libFuzzer's default max_len
            procs += std::string(i ? "," : "") + R"({"type":"TemplateProcessing","single":[{"SpecialToken":{"id":")" +
                     (i % 2 ? "<s>" : "b") + R"(","type_id":0}},{"Sequence":{"id":"A","type_id":0}}]})";
        const std::string head = R"({"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"<s>":3},"merges":["a b"]},)"
                                 R"("pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":true},)";
        write("fuzz_tokenizer_import", "many_post_processors.json",
              std::string(1, (char)0) + head + R"("post_processor":{"type":"Sequence","processors":[)" + procs + "]}}");
        write("fuzz_tokenizer_import", "big_ids.json",
              std::string(1, (char)0) + head + R"("added_tokens":[{"id":4,"content":"<x>","special":true}],)" +
                  R"("post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}}],)" +
                  R"("special_tokens":{"<s>":{"id":"<s>","ids":[4294967299],"tokens":["<s>"]}}}})");
    }
    write("fuzz_tokenizer_import", "gpt2_vocab",
          std::string("\x01") + R"({"a":0,"b":1,"ab":2,"<|endoftext|>":3})" + "\n#MERGES#\n" + "#version: 0.2\na b\n");
    {
        // SentencePiece ModelProto: pieces (1), trainer_spec (2: model_type 3 = BPE, ids 40-43),
        // normalizer_spec (3: name, add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces).
        struct Proto {
            std::string b;
            void varint(uint64_t v) {
                while (v >= 0x80) b += (char)(v | 0x80), v >>= 7;
                b += (char)v;
            }
            void key(uint32_t f, uint32_t w) { varint((uint64_t)f << 3 | w); }
            void str(uint32_t f, const std::string &s) { key(f, 2), varint(s.size()), b += s; }
            void f32(uint32_t f, float x) { key(f, 5), b.append((const char *)&x, 4); }
            void u(uint32_t f, uint64_t v) { key(f, 0), varint(v); }
        } m, trainer, norm;
        const char *pieces[] = {"<unk>", "<s>", "</s>", "<0x41>", "a", "b", "\xE2\x96\x81", "\xE2\x96\x81" "a", "ab"};
        int k2 = 0;
        for (const char *p : pieces) {
            Proto piece;
            piece.str(1, p);
            piece.f32(2, -(float)k2);
            if (k2 == 0) piece.u(3, 2);
            else if (k2 < 3) piece.u(3, 3);
            else if (k2 == 3) piece.u(3, 6);
            m.str(1, piece.b);
            k2++;
        }
        trainer.u(3, 2), trainer.u(40, 0), trainer.u(41, 1), trainer.u(42, 2), trainer.u(43, (uint64_t)-1);
        m.str(2, trainer.b);
        norm.str(1, "identity"), norm.u(3, 1), norm.u(4, 0), norm.u(5, 1);
        m.str(3, norm.b);
        write("fuzz_tokenizer_import", "sentencepiece.model", std::string("\x02") + m.b);
    }

    // fuzz_api: short programs (random bytes are programs too).
    {
        std::mt19937 rng(9);
        for (int i = 0; i < 8; i++) {
            std::vector<uint8_t> p(64 + 64 * i);
            for (auto &x : p) x = (uint8_t)rng();
            p[0] = 0; // start by creating a context
            write("fuzz_api", "program_" + std::to_string(i), p);
        }
    }
    std::printf("corpus written to %s\n", g_dir.c_str());
    return 0;
}
