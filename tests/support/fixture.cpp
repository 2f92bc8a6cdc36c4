// fixture.cpp - random fixture models through the library's own writer.
#include "fixture.h"

#include "dtype_values.h"
#include "format/keys.h"
#include "format/writer.h"
#include "model/arch.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <unistd.h>

namespace fixture {

void add_token(gpt::TokenizerData &d, const std::string &text, int32_t type, float score) {
    d.tokens.push_back(text);
    d.types.push_back(type);
    d.scores.push_back(score);
}

gpt::TokenizerData spm_base() {
    gpt::TokenizerData d;
    d.kind = gpt::TokenizerKind::SPM;
    d.add_space_prefix = true;
    d.unk_id = 0, d.bos_id = 1, d.eos_id = 2;
    add_token(d, "<unk>", gpt::TOKEN_UNKNOWN, 0);
    add_token(d, "<s>", gpt::TOKEN_CONTROL, 0);
    add_token(d, "</s>", gpt::TOKEN_CONTROL, 0);
    for (int b = 0; b < 256; b++) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        add_token(d, name, gpt::TOKEN_BYTE, 0);
    }
    return d;
}

gpt::ModelConfig config_of(const Spec &s) {
    gpt::ModelConfig c;
    c.arch = s.arch;
    c.name = "fixture";
    c.n_layers = s.n_layers;
    c.d_model = s.d_model;
    c.n_heads = s.n_heads;
    c.n_kv_heads = s.arch == GPT_ARCH_GPT2 ? s.n_heads : s.n_kv_heads;
    c.head_dim = s.arch == GPT_ARCH_GPT2 ? s.d_model / s.n_heads : s.head_dim;
    c.d_ff = s.d_ff;
    c.vocab_size = s.vocab_size;
    c.context_length = s.context_length;
    c.norm_eps = s.norm_eps;
    c.rope_theta = s.arch != GPT_ARCH_GPT2 ? s.rope_theta : 0.0f;
    c.rope_dim = s.rope_dim;
    c.rope_scaling = s.rope_scaling;
    c.tied_head = s.tied_head;
    c.sliding_window = s.sliding_window;
    c.window_layers = s.window_layers;
    if (s.arch == GPT_ARCH_GEMMA2 || s.arch == GPT_ARCH_GEMMA3) {
        c.tied_head = true; // Gemma's head is its embedding
        c.embed_scale = true;
        c.attn_softcap = s.attn_softcap;
        c.logit_softcap = s.logit_softcap;
        c.query_pre_attn_scalar = s.query_pre_attn_scalar;
    }
    if (s.arch == GPT_ARCH_GEMMA3) c.rope_theta_local = s.rope_theta_local;
    c.qkv_bias = s.arch == GPT_ARCH_GPT2 || s.qkv_bias;
    c.ffn_activation = s.ffn_activation;
    c.head_bias = s.head_bias;
    if (c.is_moe()) {
        c.n_experts = s.n_experts;
        c.n_experts_used = s.n_experts_used;
        c.d_ff_expert = s.d_ff_expert;
        c.d_ff_shared = s.d_ff_shared;
        c.norm_topk_prob = s.arch == GPT_ARCH_MIXTRAL || s.norm_topk_prob;
        c.moe_layers = s.moe_layers;
    }
    c.bos_id = s.bos_id;
    c.eos_id = s.eos_id;
    if (s.eos_id >= 0) c.eos_ids.push_back(s.eos_id);
    for (int32_t id : s.eos_ids)
        if (id != s.eos_id) c.eos_ids.push_back(id);
    return c;
}

Model make(const Spec &s, const gpt::TokenizerData *tok) {
    Model m;
    m.config = config_of(s);
    m.dtype = s.dtype;
    m.config.validate("fixture");
    std::mt19937_64 rng(s.seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);

    gpt::format::Writer w;
    m.config.to_metadata(w.metadata());
    if (tok) tok->to_metadata(w.metadata());
    if (!s.chat_template.empty()) w.metadata().set(gpt::keys::kChatTemplate, gpt::format::MetaValue::of_str(s.chat_template));

    for (const gpt::TensorSlot &slot : gpt::tensor_table(m.config)) {
        uint64_t n = 1;
        for (uint64_t d : slot.shape) n *= d;
        std::vector<float> v(n);
        const bool is_norm = slot.name.find("norm.weight") != std::string::npos;
        const bool is_vector = slot.shape.size() == 1;
        const float scale = is_norm ? 0.1f : is_vector ? 0.1f : s.scale / std::sqrt((float)slot.shape.back()) * 4.0f;
        for (auto &x : v) x = (is_norm ? 1.0f : 0.0f) + scale * normal(rng);
        // Round to the file dtype so the reference sees exactly the stored values.
        const std::vector<uint8_t> bytes = encode(v, s.dtype);
        v = rounded(v, s.dtype);
        w.add_tensor(slot.name, s.dtype, slot.shape, bytes.data(), bytes.size());
        m.tensors[slot.name] = std::move(v);
    }
    m.file = w.write_memory();
    return m;
}

std::string write_temp(const std::vector<uint8_t> &bytes, const char *suffix) {
    const char *dir = std::getenv("TMPDIR");
    std::string path = std::string(dir && *dir ? dir : "/tmp") + "/gpt-test-XXXXXX" + suffix;
    int fd = mkstemps(path.data(), (int)std::strlen(suffix));
    if (fd < 0) throw std::runtime_error("mkstemps failed");
    size_t off = 0;
    while (off < bytes.size()) {
        ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
        if (n <= 0) {
            ::close(fd);
            throw std::runtime_error("write failed");
        }
        off += (size_t)n;
    }
    ::close(fd);
    return path;
}

} // namespace fixture
