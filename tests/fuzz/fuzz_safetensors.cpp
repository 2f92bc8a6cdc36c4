// fuzz_safetensors - the converter's safetensors reader (tools/convert/safetensors.cpp).
// An input starting with '{' is a bare JSON header (parse_safetensors_header, with a data
// region of 1 MiB that is never touched); anything else is a whole file image (8-byte length,
// header, data). Every tensor a parse accepts must lie inside the image: its bytes are read
// (AddressSanitizer catches a stray pointer), and the float ones are converted to f16 and
// f32 the way `gpt convert` fills its output (fill_tensor).
#include "common.h"

#include "convert/safetensors.h"
#include "convert/tensor_plan.h"
#include "core/error.h"

#include <vector>

namespace {

void use(const gpt::convert::StHeader &h, bool have_data) {
    using gpt::convert::StDType;
    uint64_t prev_end = 0;
    (void)prev_end;
    for (const auto &t : h.tensors) {
        FUZZ_CHECK(t.begin <= t.end, "offsets");
        FUZZ_CHECK(t.end - t.begin == t.numel() * gpt::convert::st_dtype_size(t.dtype), "extent of %s", t.name.c_str());
        if (!have_data) continue;
        volatile uint8_t sink = 0;
        for (uint64_t i = 0; i < t.end - t.begin; i++) sink = sink ^ t.data[i];
        gpt::DType dt;
        if (t.dtype == StDType::F32) dt = gpt::DType::F32;
        else if (t.dtype == StDType::F16) dt = gpt::DType::F16;
        else if (t.dtype == StDType::BF16) dt = gpt::DType::BF16;
        else continue;
        const uint64_t n = t.numel();
        if (n == 0 || n > (1u << 16)) continue;
        gpt::convert::SrcMatrix m;
        m.what = t.name;
        m.data = t.data;
        m.avail = t.end - t.begin;
        m.dtype = dt;
        m.rows = t.shape.empty() ? 1 : t.shape[0];
        m.cols = n / m.rows;
        gpt::convert::PlannedTensor p{t.name, {n}, {m}};
        for (auto out : {gpt::DType::F16, gpt::DType::F32}) {
            std::vector<uint8_t> dst(n * (out == gpt::DType::F32 ? 4 : 2));
            gpt::convert::fill_tensor(p, out, dst.data(), dst.size(), nullptr);
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    try {
        if (size > 0 && data[0] == '{') use(gpt::convert::parse_safetensors_header(data, size, 1u << 20, "fuzz.json"), false);
        else use(gpt::convert::parse_safetensors(data, size, "fuzz.safetensors"), true);
    } catch (const gpt::Error &e) {
        FUZZ_CHECK(e.status() == GPT_ERR_FORMAT || e.status() == GPT_ERR_UNSUPPORTED, "status %d: %s", (int)e.status(), e.what());
    }
    return 0;
}
