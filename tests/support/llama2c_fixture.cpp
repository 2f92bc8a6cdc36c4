// llama2c_fixture.cpp - the llama2.c checkpoint writer (see llama2c_fixture.h): the tensor
// order of run.c's version 0 and export.py's version 1 layouts.
#include "llama2c_fixture.h"

#include "dtype_values.h"

#include <cmath>
#include <cstring>
#include <random>

namespace fixture {

using gpt::DType;

L2cModel make_l2c(const L2cSpec &s) {
    L2cModel m;
    m.spec = s;
    std::mt19937_64 rng(s.seed);
    const uint64_t d = s.dim, hs = d / s.heads, kvd = s.kv * hs, ff = s.hidden, v = s.vocab;
    const float wd = 0.8f / std::sqrt((float)d), wf = 0.8f / std::sqrt((float)ff);
    auto gen = [&](const std::string &n, uint64_t count, float mean, float std) { m.w[n] = draw(rng, count, mean, std, DType::F32); };
    gen("emb", v * d, 0, 1.0f);
    for (uint32_t l = 0; l < s.layers; l++) {
        const std::string L = "." + std::to_string(l);
        gen("rms_att" + L, d, 1, 0.1f);
        gen("wq" + L, d * d, 0, wd);
        gen("wk" + L, kvd * d, 0, wd);
        gen("wv" + L, kvd * d, 0, wd);
        gen("wo" + L, d * d, 0, wd);
        gen("rms_ffn" + L, d, 1, 0.1f);
        gen("w1" + L, ff * d, 0, wd);
        gen("w2" + L, d * ff, 0, wf);
        gen("w3" + L, ff * d, 0, wd);
    }
    gen("rms_final", d, 1, 0.1f);
    if (!s.shared) gen("wcls", v * d, 0, wd * 2);

    auto put_i32 = [&](int32_t x) {
        uint8_t b[4];
        std::memcpy(b, &x, 4);
        m.bytes.insert(m.bytes.end(), b, b + 4);
    };
    auto put = [&](const std::vector<float> &x) {
        const auto e = encode(x, DType::F32);
        m.bytes.insert(m.bytes.end(), e.begin(), e.end());
    };
    auto per_layer = [&](const char *n) {
        for (uint32_t l = 0; l < s.layers; l++) put(m.w.at(std::string(n) + "." + std::to_string(l)));
    };
    const int32_t header[7] = {(int32_t)s.dim, (int32_t)s.hidden, (int32_t)s.layers, (int32_t)s.heads, (int32_t)s.kv,
                               (int32_t)(s.version == 0 && !s.shared ? -(int32_t)s.vocab : (int32_t)s.vocab), (int32_t)s.seq};
    if (s.version == 0) {
        for (int32_t x : header) put_i32(x);
        put(m.w.at("emb"));
        for (const char *n : {"rms_att", "wq", "wk", "wv", "wo", "rms_ffn", "w1", "w2", "w3"}) per_layer(n);
        put(m.w.at("rms_final"));
        // freq_cis_real / _imag, as llama2.c wrote them (the converter skips them).
        std::vector<float> fr, fi;
        for (uint32_t p = 0; p < s.seq; p++)
            for (uint32_t i = 0; i < hs / 2; i++) {
                const double f = std::pow(10000.0, -2.0 * i / (double)hs);
                fr.push_back((float)std::cos(p * f));
                fi.push_back((float)std::sin(p * f));
            }
        put(fr);
        put(fi);
    } else {
        put_i32(0x616b3432);
        put_i32(1);
        for (int32_t x : header) put_i32(x);
        m.bytes.push_back(s.shared ? 1 : 0);
        m.bytes.resize(256, 0);
        for (const char *n : {"rms_att", "rms_ffn"}) per_layer(n);
        put(m.w.at("rms_final"));
        put(m.w.at("emb"));
        for (const char *n : {"wq", "wk", "wv", "wo", "w1", "w2", "w3"}) per_layer(n);
    }
    if (!s.shared) put(m.w.at("wcls"));
    return m;
}

} // namespace fixture
