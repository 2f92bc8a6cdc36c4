// synthetic.cpp - the shapes of the benchmark table and their random weight files.
#include "synthetic.h"

#include "core/half.h"
#include "format/quantize.h"
#include "format/writer.h"
#include "model/arch.h"
#include "model/config.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

namespace cli {

const std::vector<SyntheticShape> &synthetic_shapes() {
    // name, arch, layers, d_model, heads, kv heads, d_ff, vocab, context, tied, qkv bias, rope theta
    static const std::vector<SyntheticShape> shapes = {
        {"gpt2-124m", "gpt2", 12, 768, 12, 12, 3072, 50257, 1024, true, true, 0},
        {"gpt2-medium", "gpt2", 24, 1024, 16, 16, 4096, 50257, 1024, true, true, 0},
        {"tinyllama-1.1b", "llama", 22, 2048, 32, 4, 5632, 32000, 16384, false, false, 10000.0f},
        {"qwen2-7b", "llama", 28, 3584, 28, 4, 18944, 152064, 32768, false, true, 1000000.0f},
        // The models of docs/JETSON.md's memory table (their config.json dimensions; Llama-3.2's
        // rope scaling and Mistral's sliding window change no size). qwen3-1.7b-shape: Qwen3-1.7B's
        // dimensions as a Llama (its q/k norms add 2 x 128 floats a layer), the model NVIDIA
        // quotes TensorRT Edge-LLM's Jetson speeds for.
        {"llama-3.2-1b", "llama", 16, 2048, 32, 8, 8192, 128256, 131072, true, false, 500000.0f},
        {"llama-3.2-3b", "llama", 28, 3072, 24, 8, 8192, 128256, 131072, true, false, 500000.0f},
        {"llama-2-7b", "llama", 32, 4096, 32, 32, 11008, 32000, 4096, false, false, 10000.0f},
        {"mistral-7b", "llama", 32, 4096, 32, 8, 14336, 32000, 32768, false, false, 10000.0f},
        {"qwen3-1.7b-shape", "llama", 28, 2048, 16, 8, 6144, 151936, 40960, true, false, 1000000.0f},
        // llama2.c's stories15M (the CPU baseline of ../shared/reference/baselines.md).
        {"stories15m", "llama", 6, 288, 6, 6, 768, 32000, 256, true, false, 10000.0f},
        // minGPT-style small GPTs of the seed documents (vocab of GPT-2).
        {"nano", "gpt2", 3, 48, 3, 3, 192, 50257, 1024, true, true, 0},
        {"micro", "gpt2", 4, 128, 4, 4, 512, 50257, 1024, true, true, 0},
        {"mini", "gpt2", 6, 192, 6, 6, 768, 50257, 1024, true, true, 0},
        {"tile-small", "gpt2", 4, 64, 4, 4, 256, 50257, 1024, true, true, 0},
        {"tile-medium", "gpt2", 6, 128, 4, 4, 512, 50257, 1024, true, true, 0},
        {"tile-large", "gpt2", 8, 256, 8, 8, 1024, 50257, 1024, true, true, 0},
        // Character-level models (issue 21), the shapes of bench/compare_nanogpt.py. nanoGPT's
        // config/train_shakespeare_char.py: 6 layers, 6 heads, 384 wide, block_size 256, the 65
        // characters of its Shakespeare; train.py's bias=False (a converted file holds zero
        // biases, so the work is the same), tied head. nanoGPT's exact GELU is a metadata key
        // of the .pt converter; here the tanh form (the same cost).
        {"nanogpt-shakespeare-char", "gpt2", 6, 384, 6, 6, 1536, 65, 256, true, true, 0},
        // The founding document's dense character-level transformer: 12 layers, 8 heads, 768
        // wide, 95 characters; its context is not given there: 256, as shakespeare_char's.
        {"char-dense-768", "gpt2", 12, 768, 8, 8, 3072, 95, 256, true, true, 0},
        // Mixtures of experts (issue 19), with the arch, layers, ..., then experts, top-k and
        // expert width. The founding document's MoE transformer: the dense one's 768 x 12
        // layers, 12 heads, 8 experts of 3072, top-2, 95 characters (Mixtral's routing).
        {"moe-768", "mixtral", 12, 768, 12, 12, 3072, 95, 256, false, false, 10000.0f, 8, 2, 3072},
        // allenai/OLMoE-1B-7B-0924's config.json: 16 layers, 2048 wide, 16 heads, 64 experts of
        // 1024, top-8, vocabulary 50304, context 4096.
        {"olmoe-1b-7b", "olmoe", 16, 2048, 16, 16, 1024, 50304, 4096, false, false, 10000.0f, 64, 8, 1024},
        // mistralai/Mixtral-8x7B-v0.1's config.json: 32 layers, 4096 wide, 32 heads / 8 kv, 8
        // experts of 14336, top-2, vocabulary 32000, rope_theta 1e6 (context here 32768).
        {"mixtral-8x7b", "mixtral", 32, 4096, 32, 8, 14336, 32000, 32768, false, false, 1000000.0f, 8, 2, 14336},
        // Tiny ones the CPU tests run (tests/test_cli.py).
        {"moe-tiny", "mixtral", 2, 64, 4, 2, 96, 95, 128, false, false, 10000.0f, 4, 2, 96},
        {"olmoe-tiny", "olmoe", 2, 64, 4, 4, 32, 95, 128, false, false, 10000.0f, 16, 4, 32},
    };
    return shapes;
}

const SyntheticShape *find_synthetic(const std::string &name) {
    for (const auto &s : synthetic_shapes())
        if (name == s.name) return &s;
    return nullptr;
}

namespace {

// xorshift-based approximate normal: sum of four uniforms, centred and scaled (cheap, and
// the exact distribution does not matter for speed).
struct FastRng {
    uint64_t s;
    uint64_t next() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
    float normal() {
        uint64_t r = next();
        float sum = 0;
        for (int i = 0; i < 4; i++) sum += (float)((r >> (16 * i)) & 0xffff) * (1.0f / 65536.0f);
        return (sum - 2.0f) * 1.7320508f;
    }
};

void fill(uint8_t *dst, uint64_t n, uint32_t dtype, float mean, float scale, uint64_t seed) {
    const unsigned threads = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
    const uint64_t per = (n + threads - 1) / threads;
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; t++) {
        pool.emplace_back([=] {
            FastRng rng{seed * 0x9e3779b97f4a7c15ull + t + 1};
            const uint64_t b = t * per, e = std::min(n, b + per);
            for (uint64_t i = b; i < e; i++) {
                const float v = mean + scale * rng.normal();
                if (dtype == 1) std::memcpy(dst + 4 * i, &v, 4);
                else {
                    const uint16_t h = dtype == 2 ? gpt::f32_to_f16(v) : gpt::f32_to_bf16(v);
                    std::memcpy(dst + 2 * i, &h, 2);
                }
            }
        });
    }
    for (auto &t : pool) t.join();
}

} // namespace

gpt::ModelConfig synthetic_config(const SyntheticShape &s) {
    gpt::ModelConfig c;
    c.arch = (gpt_arch)gpt::arch_from_name(s.arch);
    c.name = std::string("synthetic ") + s.name;
    c.n_layers = s.n_layers;
    c.d_model = s.d_model;
    c.n_heads = s.n_heads;
    c.n_kv_heads = s.n_kv_heads;
    c.head_dim = s.d_model / s.n_heads;
    c.d_ff = s.d_ff;
    c.vocab_size = s.vocab;
    c.context_length = s.context;
    c.norm_eps = 1e-5f;
    c.rope_theta = s.rope_theta;
    c.tied_head = s.tied;
    c.qkv_bias = s.qkv_bias;
    c.n_experts = s.n_experts;
    c.n_experts_used = s.n_experts_used;
    c.d_ff_expert = s.d_ff_expert;
    c.norm_topk_prob = c.arch == GPT_ARCH_MIXTRAL; // OLMoE-1B-7B: false
    c.validate(s.name);
    return c;
}

void synthetic_tensor(uint32_t dtype, const std::string &name, const std::vector<uint64_t> &shape, gpt::DType &held, uint32_t &group) {
    const bool quantized = dtype == GPT_DTYPE_Q8 || dtype == GPT_DTYPE_Q4;
    const bool packed = quantized && gpt::format::quantizable(name, shape, gpt::format::kDefaultGroup);
    held = packed ? (gpt::DType)dtype : quantized ? gpt::DType::F16 : (gpt::DType)dtype;
    group = packed ? gpt::format::kDefaultGroup : 0;
}

namespace {
// The file's tensors, each filled only when written.
gpt::format::Writer synthetic_writer(const SyntheticShape &s, uint32_t dtype, uint64_t seed) {
    const gpt::ModelConfig c = synthetic_config(s);
    gpt::format::Writer w;
    c.to_metadata(w.metadata());
    uint64_t k = 0;
    for (const gpt::TensorSlot &slot : gpt::tensor_table(c)) {
        const bool norm = slot.name.find("norm") != std::string::npos;
        const float scale = slot.shape.size() > 1 ? 1.0f / std::sqrt((float)slot.shape.back()) : 0.02f;
        const uint64_t sd = seed + (k++);
        if (dtype == GPT_DTYPE_Q8 || dtype == GPT_DTYPE_Q4) { // quantized from f32 draws; the rest f16
            uint64_t numel = 1;
            for (uint64_t d : slot.shape) numel *= d;
            gpt::format::add_quantized_or_keep(
                w, slot.name, slot.shape, (gpt::DType)dtype, gpt::format::kDefaultGroup,
                [=](float *dst) { fill(reinterpret_cast<uint8_t *>(dst), numel, 1, norm ? 1.0f : 0.0f, scale, sd); },
                gpt::DType::F16, [=](uint8_t *dst, uint64_t nbytes) { fill(dst, nbytes / 2, 2, norm ? 1.0f : 0.0f, scale, sd); });
            continue;
        }
        w.add_tensor(slot.name, (gpt::DType)dtype, slot.shape,
                     [=](uint8_t *dst, uint64_t nbytes) { fill(dst, nbytes / (dtype == 1 ? 4 : 2), dtype, norm ? 1.0f : 0.0f, scale, sd); });
    }
    return w;
}
} // namespace

SyntheticImage::SyntheticImage(uint64_t size) : size_(size) {
    bytes_.reset(static_cast<uint8_t *>(std::aligned_alloc(64, (size + 63) / 64 * 64)));
    if (!bytes_) throw std::runtime_error("cannot allocate " + std::to_string(size) + " bytes for a synthetic model");
}

void SyntheticImage::Free::operator()(uint8_t *p) const { std::free(p); }

SyntheticImage build_synthetic(const SyntheticShape &s, uint32_t dtype, uint64_t seed) {
    const gpt::format::Writer w = synthetic_writer(s, dtype, seed);
    SyntheticImage image(w.file_size());
    w.write_memory_into(image.data(), image.size(), false);
    return image;
}

void write_synthetic(const SyntheticShape &s, uint32_t dtype, uint64_t seed, const std::string &path, bool overwrite) {
    gpt::format::Writer::FileOptions opt;
    opt.overwrite = overwrite;
    synthetic_writer(s, dtype, seed).write_file(path, opt);
}

uint64_t synthetic_file_bytes(const SyntheticShape &s, uint32_t dtype) { return synthetic_writer(s, dtype, 0).file_size(); }

} // namespace cli
