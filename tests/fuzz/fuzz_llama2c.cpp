// fuzz_llama2c - the converter's llama2.c readers (tools/convert/llama2c.cpp and the
// tokenizer.bin importer): each input is tried as a checkpoint (header, then the tensor plan
// over the mapped bytes, then filling every planned tensor as f32 and f16 when small) and as
// a tokenizer.bin (then built into a tokenizer and used). Accepted plans must pass
// check_plan and read only inside the file (AddressSanitizer).
#include "common.h"

#include "convert/llama2c.h"
#include "convert/tensor_plan.h"
#include "convert/tokenizer_import.h"
#include "core/error.h"
#include "tokenizer/tokenizer.h"

#include <vector>

namespace {

void expect_clean(const gpt::Error &e) {
    FUZZ_CHECK(e.status() == GPT_ERR_FORMAT || e.status() == GPT_ERR_UNSUPPORTED || e.status() == GPT_ERR_IO, "status %d: %s",
               (int)e.status(), e.what());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    (void)gpt::convert::looks_like_llama2c(data, size);
    try {
        (void)gpt::convert::parse_llama2c_header(data, size, "model.bin");
    } catch (const gpt::Error &e) {
        expect_clean(e);
    }
    fuzz::MemFile f(data, size, "model.bin");
    try {
        const gpt::convert::TensorPlan p = gpt::convert::plan_llama2c(f.path());
        gpt::convert::check_plan(p);
        uint64_t total = 0;
        for (const auto &t : p.tensors) total += t.numel();
        if (total <= (1u << 20))
            for (const auto &t : p.tensors)
                for (auto out : {gpt::DType::F32, gpt::DType::F16}) {
                    std::vector<uint8_t> dst(t.numel() * (out == gpt::DType::F32 ? 4 : 2));
                    try {
                        gpt::convert::fill_tensor(t, out, dst.data(), dst.size(), nullptr);
                    } catch (const gpt::Error &e) {
                        FUZZ_CHECK(e.status() == GPT_ERR_UNSUPPORTED, "fill: %s", e.what()); // f16 overflow
                    }
                }
    } catch (const gpt::Error &e) {
        expect_clean(e);
    }
    // As tokenizer.bin: read to the end (vocab 0), or exactly a small vocabulary.
    for (uint32_t vocab : {0u, size ? 3u + data[0] % 64 : 3u}) {
        try {
            const gpt::TokenizerData t = gpt::import_llama2c_tokenizer(f.path(), vocab);
            auto tok = gpt::Tokenizer::create(t, "tokenizer.bin");
            std::vector<int32_t> ids;
            tok->encode("Hello, world! \xC3\xA9\xFF <s>", true, true, ids);
            for (int32_t id : ids) FUZZ_CHECK(id >= 0 && (uint32_t)id < tok->vocab_size(), "id %d", id);
            (void)tok->decode(ids.data(), ids.size(), true);
        } catch (const gpt::Error &e) {
            expect_clean(e);
        }
    }
    return 0;
}
