// llama2c_fixture.h - llama2.c checkpoints written by the tests (run.c's format): v0 (the
// 28-byte header, the freq_cis tables) and v1 (the 256-byte header), shared or separate
// classifier, GQA, random f32 weights under llama2.c's names.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fixture {

// What make_l2c draws: the header's fields (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
// vocab_size, seq_len), whether the classifier is the embedding, the file version.
struct L2cSpec {
    uint32_t dim = 32, hidden = 48, layers = 2, heads = 4, kv = 2, vocab = 41, seq = 16;
    bool shared = false;
    int version = 0;
    uint64_t seed = 7;
};

// A drawn checkpoint: its bytes and the weights by name.
struct L2cModel {
    L2cSpec spec;
    std::vector<uint8_t> bytes;
    std::map<std::string, std::vector<float>> w; // "emb", "rms_att.L", "wq.L", ..., "rms_final", "wcls"
    uint32_t hs() const { return spec.dim / spec.heads; }
    const std::vector<float> &at(const std::string &n) const { return w.at(n); }
    const std::vector<float> &head() const { return spec.shared ? w.at("emb") : w.at("wcls"); }
};

// Draws the weights (seeded by spec.seed) and writes the checkpoint bytes.
L2cModel make_l2c(const L2cSpec &s);

} // namespace fixture
