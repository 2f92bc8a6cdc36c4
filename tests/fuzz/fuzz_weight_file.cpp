// fuzz_weight_file - the weight-file reader from memory, then everything a load does after
// it (config, tokenizer, tensor binding, the CPU device), then a short run of what loaded.
//
// Each input is tried three ways:
//   1. as given, through the reader (checksums and the NaN/Inf scan on): most mutations stop
//      at a crc, which must be the only outcome of damage there;
//   2. with every crc repaired (common.cpp), through gpt_model_load_from_memory with
//      checksums on: the parsers and validators behind the checksums see the mutation;
//   3. the repaired image with GPT_MODEL_SKIP_CHECKSUMS: NaN/Inf weights load, and a model
//      that loads is run (a context, forward, generate, tokenizer calls) to check that
//      nothing a file can say makes the engine misbehave.
// Anything but a clean status is a finding; so is an allocation larger than libFuzzer's
// -malloc_limit_mb (sizes must come from the file's real size, never from its fields).
#include "common.h"

#include "core/error.h"
#include "format/reader.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace {

void run_model(gpt_model *m, const uint8_t *data, size_t size) {
    gpt_model_info info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    FUZZ_CHECK(gpt_model_get_info(m, &info) == GPT_OK, "%s", gpt_last_error());
    FUZZ_CHECK(info.vocab_size >= 1 && info.n_layers >= 1, "info");

    if (info.flags & GPT_MODEL_INFO_HAS_TOKENIZER) {
        const char *texts[] = {"Hello world", "<|endoftext|><s></s> \xE2\x96\x81 caf\xC3\xA9 \xFF\xFE 123"};
        for (const char *text : texts)
            for (uint32_t flags : {0u, (uint32_t)GPT_TOKENIZE_PARSE_SPECIAL | GPT_TOKENIZE_ADD_BOS}) {
                int32_t ids[128];
                uint32_t n = 0;
                const gpt_status st = gpt_tokenize(m, text, std::strlen(text), flags, ids, 128, &n);
                FUZZ_CHECK(st == GPT_OK, "tokenize: %s", gpt_last_error());
                for (uint32_t i = 0; i < n; i++) FUZZ_CHECK(ids[i] >= 0 && (uint32_t)ids[i] < info.vocab_size, "token id");
                char buf[1024];
                size_t nb = 0;
                const gpt_status ds = gpt_detokenize(m, ids, n, GPT_DETOKENIZE_RENDER_SPECIAL, buf, sizeof buf, &nb);
                FUZZ_CHECK(ds == GPT_OK || ds == GPT_ERR_BUFFER_TOO_SMALL, "detokenize: %s", gpt_last_error());
            }
        // Part of the input as text too.
        uint32_t n = 0;
        const gpt_status st = gpt_tokenize(m, (const char *)data, size < 256 ? size : 256, 0, nullptr, 0, &n);
        FUZZ_CHECK(st == GPT_OK, "tokenize (size query): %s", gpt_last_error());
        for (int32_t id : {0, (int32_t)info.vocab_size - 1}) {
            char buf[64];
            size_t nb = 0;
            const gpt_status ps = gpt_token_to_piece(m, id, GPT_DETOKENIZE_RENDER_SPECIAL, buf, sizeof buf, &nb);
            FUZZ_CHECK(ps == GPT_OK || ps == GPT_ERR_BUFFER_TOO_SMALL, "piece: %s", gpt_last_error());
        }
    }

    // Run it when that is cheap (a file can describe a model far larger than itself only in
    // its KV cache and activations, which the context params bound here).
    if (info.n_params > (4u << 20)) return;
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.max_seq = info.context_length < 6 ? info.context_length : 6;
    cp.n_threads = 1;
    uint64_t host = 0;
    const gpt_status es = gpt_ctx_estimate_memory(m, &cp, &host, nullptr);
    FUZZ_CHECK(es == GPT_OK || es == GPT_ERR_OUT_OF_MEMORY, "estimate: %s", gpt_last_error());
    if (es != GPT_OK || host > (64u << 20)) return;
    gpt_ctx *ctx = nullptr;
    const gpt_status cs = gpt_ctx_create(m, &cp, &ctx);
    FUZZ_CHECK(cs == GPT_OK, "ctx_create: %s", gpt_last_error());
    std::vector<float> logits(2 * (size_t)info.vocab_size);
    const int32_t toks[2] = {0, (int32_t)info.vocab_size - 1};
    const uint32_t nt = cp.max_seq >= 2 ? 2 : 1;
    FUZZ_CHECK(gpt_forward(ctx, toks, 1, nt, GPT_FORWARD_ALL_LOGITS, logits.data()) == GPT_OK, "forward: %s",
               gpt_ctx_last_error(ctx));
    gpt_ctx_reset(ctx);
    gpt_sampling_params sp;
    gpt_sampling_params_init(&sp);
    sp.seed = size;
    int32_t out[4];
    uint32_t n_out = 0;
    const gpt_status gs = gpt_generate(ctx, toks, 1, &sp, nullptr, nullptr, out, 4, &n_out);
    FUZZ_CHECK(gs == GPT_OK || gs == GPT_ERR_CONTEXT_FULL, "generate: %s", gpt_ctx_last_error(ctx));
    for (uint32_t i = 0; i < n_out; i++) FUZZ_CHECK(out[i] >= 0 && (uint32_t)out[i] < info.vocab_size, "sampled id %d", out[i]);
    gpt_ctx_free(ctx);
}

gpt_status load(const std::vector<uint8_t> &b, uint32_t flags, gpt_model **m) {
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = GPT_DEVICE_CPU;
    mp.flags = flags | GPT_MODEL_COPY_BUFFER;
    const gpt_status st = gpt_model_load_from_memory(b.data(), b.size(), &mp, m);
    FUZZ_CHECK(fuzz::valid_status(st), "load status %d", (int)st);
    FUZZ_CHECK(st != GPT_ERR_INTERNAL, "internal error: %s", gpt_last_error());
    FUZZ_CHECK((st == GPT_OK) == (*m != nullptr), "OUT pointer");
    return st;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    // 1. As given, through the reader.
    try {
        gpt::format::ReadOptions o;
        o.check_finite = true;
        auto f = gpt::format::WeightFile::from_memory(data, size, true, o);
        FUZZ_CHECK(f->checksums_verified(), "verified");
    } catch (const gpt::Error &e) {
        FUZZ_CHECK(e.status() != GPT_ERR_INTERNAL, "%s", e.what());
    }

    // 2. and 3. Crcs repaired, the public load path.
    std::vector<uint8_t> b(data, data + size);
    fuzz::fix_weight_file_crcs(b);
    gpt_model *m = nullptr;
    if (load(b, 0, &m) == GPT_OK) gpt_model_free(m);
    m = nullptr;
    if (load(b, GPT_MODEL_SKIP_CHECKSUMS, &m) == GPT_OK) {
        run_model(m, data, size);
        gpt_model_free(m);
    }
    return 0;
}
