// fuzz_pt - the converter's PyTorch readers (tools/convert/pt_zip, pickle_vm, pt_file,
// pt_checkpoint, char_vocab): each input is tried as a whole .pt file (zip, then the
// allowlist pickle machine, then source recognition and the tensor plan, then filling every
// planned tensor when small), as a bare pickle (the meta.pkl reader) and, when it is one, as
// the character vocabulary built into a tokenizer and used. Accepted plans must pass
// check_plan and read only inside the file (AddressSanitizer); values are freed even when the
// memo makes them cyclic (LeakSanitizer).
#include "common.h"

#include "convert/char_vocab.h"
#include "convert/pt_checkpoint.h"
#include "convert/pt_file.h"
#include "convert/tensor_plan.h"
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
    (void)gpt::convert::looks_like_pt(data, size);
    try {
        (void)gpt::convert::parse_pt(data, size, "ckpt.pt");
    } catch (const gpt::Error &e) {
        expect_clean(e);
    }
    fuzz::MemFile f(data, size, "ckpt.pt");
    try {
        gpt::convert::PtOptions opt;
        opt.n_head = size ? 1 + data[size - 1] % 4 : 1; // minGPT files need it (no config.json here)
        const gpt::convert::TensorPlan p = gpt::convert::plan_pt_checkpoint(f.path(), opt);
        gpt::convert::check_plan(p);
        uint64_t total = 0;
        for (const auto &t : p.tensors) total += t.numel();
        if (total <= (1u << 18))
            for (const auto &t : p.tensors) {
                std::vector<uint8_t> dst(t.numel() * 4);
                gpt::convert::fill_tensor(t, gpt::DType::F32, dst.data(), dst.size(), nullptr);
            }
    } catch (const gpt::Error &e) {
        expect_clean(e);
    }
    try {
        const gpt::TokenizerData t = gpt::convert::import_meta_pkl_bytes(data, size, "meta.pkl");
        auto tok = gpt::Tokenizer::create(t, "meta.pkl");
        std::vector<int32_t> ids;
        try {
            tok->encode(t.tokens[0] + t.tokens.back(), false, false, ids);
        } catch (const gpt::Error &e) {
            FUZZ_CHECK(e.status() == GPT_ERR_INVALID_ARG, "encode: %s", e.what());
        }
        for (int32_t id : ids) FUZZ_CHECK(id >= 0 && (uint32_t)id < tok->vocab_size(), "id %d", id);
        FUZZ_CHECK(tok->decode(ids.data(), ids.size(), false) == t.tokens[0] + t.tokens.back() || ids.empty(), "round trip");
    } catch (const gpt::Error &e) {
        expect_clean(e);
    }
    return 0;
}
