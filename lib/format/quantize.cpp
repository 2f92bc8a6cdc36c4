// quantize.cpp - the quantized-or-kept rule for writing quantized files (format/quantize.h).
#include "format/quantize.h"

#include "core/error.h"
#include "core/quant.h"

#include <cstring>
#include <memory>

namespace gpt::format {

namespace {

bool ends_with(const std::string &s, const char *suffix) {
    const size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

} // namespace

bool is_expert_gate(const std::string &name) {
    return ends_with(name, ".ffn_router.weight") || ends_with(name, ".ffn_shared_gate.weight");
}

bool quantizable(const std::string &name, const std::vector<uint64_t> &shape, uint32_t group) {
    return shape.size() == 2 && is_valid_group(group) && shape[1] % group == 0 && !is_expert_gate(name);
}

DType add_quantized_or_keep(Writer &w, const std::string &name, const std::vector<uint64_t> &shape, DType q, uint32_t group,
                            FillF32 fill_f32, DType keep, Writer::Fill keep_fill) {
    if (!quantizable(name, shape, group)) {
        w.add_tensor(name, keep, shape, std::move(keep_fill));
        return keep;
    }
    const uint64_t rows = shape[0], cols = shape[1];
    w.add_quantized(name, q, shape, group, [=](uint8_t *dst, uint64_t nbytes) {
        uint64_t need = 0;
        if (!tensor_bytes(q, rows * cols, cols, group, &need) || need != nbytes)
            fail(GPT_ERR_INTERNAL, "tensor '%s': %llu bytes asked, the quantized shape needs %llu", name.c_str(),
                 (unsigned long long)nbytes, (unsigned long long)need);
        std::vector<float> values(rows * cols);
        fill_f32(values.data());
        quantize_matrix(values.data(), rows, cols, q, group, dst, "tensor '" + name + "'");
    });
    return q;
}

} // namespace gpt::format
