// test_shipped_model.cpp - models/kjv-llama.gpt against what PyTorch computed for it
// (models/kjv-llama.reference.json, written by tools/train/train.py): last-position logits for
// the fixed prompt and the 64-token greedy continuation, through the public API only.
// The file holds fp16 weights, so the reference is PyTorch's fp32 forward on fp16-rounded
// weights ("fp16_weights"). Tolerances: CPU (f32 arithmetic) relative L2 error <= 1e-4;
// CUDA fp16 compute <= 1e-2 (skipped without a GPU). Greedy continuations must be identical.
#include "gpt.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

namespace {

struct Reference {
    std::vector<int32_t> prompt;
    std::vector<float> last_logits;
    std::vector<int32_t> greedy;
    std::string greedy_text, prompt_text;
};

std::string models_dir() {
    const char *d = std::getenv("GPT_MODELS_DIR");
    return d ? d : "models";
}

Reference load_reference() {
    std::ifstream f(models_dir() + "/kjv-llama.reference.json");
    if (!f) fail_msg("cannot open %s/kjv-llama.reference.json", models_dir().c_str());
    nlohmann::json j = nlohmann::json::parse(f);
    Reference r;
    r.prompt = j.at("prompt_ids").get<std::vector<int32_t>>();
    r.prompt_text = j.at("prompt").get<std::string>();
    const auto &w = j.at("fp16_weights");
    r.last_logits = w.at("last_logits").get<std::vector<float>>();
    r.greedy = w.at("greedy_ids").get<std::vector<int32_t>>();
    r.greedy_text = w.at("greedy_text").get<std::string>();
    return r;
}

double rel_err(const std::vector<float> &a, const std::vector<float> &b) {
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); i++) {
        if (std::isnan(a[i])) return INFINITY;
        num += (double)(a[i] - b[i]) * (a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return std::sqrt(num / den);
}

void check_device(int device, uint32_t weight_dtype, double tol) {
    const Reference ref = load_reference();
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = device;
    mp.weight_dtype = weight_dtype;
    gpt_model *m = nullptr;
    const std::string path = models_dir() + "/kjv-llama.gpt";
    if (gpt_model_load(path.c_str(), &mp, &m) != GPT_OK) fail_msg("load %s: %s", path.c_str(), gpt_last_error());
    gpt_model_info info;
    info.struct_size = sizeof info;
    assert_int_equal(gpt_model_get_info(m, &info), GPT_OK);
    assert_int_equal(info.vocab_size, ref.last_logits.size());
    assert_true(info.flags & GPT_MODEL_INFO_HAS_TOKENIZER);

    // Our tokenizer gives PyTorch's prompt ids for the prompt text.
    uint32_t n = 0;
    std::vector<int32_t> ids(64);
    assert_int_equal(gpt_tokenize(m, ref.prompt_text.data(), ref.prompt_text.size(), 0, ids.data(), 64, &n), GPT_OK);
    ids.resize(n);
    assert_true(ids == ref.prompt);

    gpt_ctx *c = nullptr;
    assert_int_equal(gpt_ctx_create(m, nullptr, &c), GPT_OK);
    std::vector<float> logits(info.vocab_size, NAN);
    assert_int_equal(gpt_forward(c, ref.prompt.data(), 1, (uint32_t)ref.prompt.size(), 0, logits.data()), GPT_OK);
    const double e = rel_err(logits, ref.last_logits);
    std::printf("  device %d: last-position logits relative error %.3g (tolerance %.0e)\n", device, e, tol);
    assert_true(e <= tol);

    gpt_ctx_reset(c);
    gpt_sampling_params sp;
    gpt_sampling_params_init(&sp);
    sp.temperature = 0;
    sp.flags = GPT_SAMPLING_IGNORE_EOS;
    std::vector<int32_t> out(ref.greedy.size());
    uint32_t n_out = 0;
    assert_int_equal(gpt_generate(c, ref.prompt.data(), (uint32_t)ref.prompt.size(), &sp, nullptr, nullptr, out.data(),
                                  (uint32_t)out.size(), &n_out),
                     GPT_OK);
    assert_int_equal(n_out, ref.greedy.size());
    for (size_t i = 0; i < out.size(); i++)
        if (out[i] != ref.greedy[i]) fail_msg("greedy token %zu: %d, PyTorch %d", i, out[i], ref.greedy[i]);
    // And the text.
    size_t bytes = 0;
    gpt_detokenize(m, out.data(), n_out, 0, nullptr, 0, &bytes);
    std::string text(bytes + 1, '\0');
    assert_int_equal(gpt_detokenize(m, out.data(), n_out, 0, text.data(), text.size(), &bytes), GPT_OK);
    text.resize(bytes);
    assert_string_equal(text.c_str(), ref.greedy_text.c_str());
    gpt_ctx_free(c);
    gpt_model_free(m);
}

void test_shipped_model_cpu(void **) { check_device(GPT_DEVICE_CPU, GPT_DTYPE_AUTO, 1e-4); }

void test_shipped_model_cuda_fp16(void **) {
    if (gpt_cuda_device_count() == 0) {
        std::printf("  no CUDA device: skipped\n");
        skip();
    }
    check_device(0, GPT_DTYPE_F16, 1e-2);
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_model_cpu),
        cmocka_unit_test(test_shipped_model_cuda_fp16),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
