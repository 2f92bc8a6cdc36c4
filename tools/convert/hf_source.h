// hf_source.h - a Hugging Face checkpoint's tensors looked up by name for a tensor plan
// (hf_model.cpp, hf_model_moe.cpp): presence, dtype and shape checked with messages naming
// the file and the tensor, and a record of what was used (an unused tensor is an error).
#pragma once

#include "convert/hf_quantized.h"
#include "convert/safetensors.h"
#include "convert/tensor_plan.h"
#include "core/error.h"

#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace gpt::convert {

inline std::string shape_str(const std::vector<uint64_t> &s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

inline bool ends_with(const std::string &s, const char *suffix) {
    const size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Looks tensors up by Hugging Face name, checks them and records which were used.
class Source {
public:
    // quant: the checkpoint's quantization_config (null: none); then a matrix "X.weight" that is
    // absent is read from the quantized linear X (X.qweight, X.qzeros, X.scales, X.g_idx).
    Source(const std::string &dir, const SafetensorsSet &st, const std::string &prefix, const QuantConfig *quant = nullptr)
        : dir_(dir), st_(st), prefix_(prefix), quant_(quant) {}

    // With the prefix first (gpt2's optional "transformer."), then without.
    const StTensor *find(const std::string &name) const {
        if (!prefix_.empty())
            if (const StTensor *t = st_.find(prefix_ + name)) return t;
        return st_.find(name);
    }
    const StTensor &need(const std::string &name) {
        const StTensor *t = find(name);
        if (!t)
            fail(GPT_ERR_FORMAT, "%s (%s): tensor '%s%s' is missing", dir_.c_str(), st_.description().c_str(), prefix_.c_str(), name.c_str());
        used_.insert(t->name);
        return *t;
    }
    void mark_used(const StTensor &t) { used_.insert(t.name); }

    // A weight [rows, cols] (stored [cols, rows] when transposed, as Conv1D keeps it).
    SrcMatrix matrix(const std::string &name, uint64_t rows, uint64_t cols, bool transposed = false) {
        if (!find(name) && ends_with(name, ".weight")) {
            const std::string base = name.substr(0, name.size() - 7);
            if (const StTensor *qw = find(base + ".qweight")) {
                if (!quant_)
                    fail(GPT_ERR_FORMAT, "%s: tensor '%s' is quantized but config.json has no quantization_config to say how",
                         qw->file.c_str(), qw->name.c_str());
                return quantized(base, rows, cols);
            }
        }
        const StTensor &t = need(name);
        const std::vector<uint64_t> want = transposed ? std::vector<uint64_t>{cols, rows} : std::vector<uint64_t>{rows, cols};
        return make(t, want, rows, cols, transposed);
    }
    SrcMatrix vector(const std::string &name, uint64_t n) { return make(need(name), {n}, n, 1, false); }
    // A stack of n matrices [n, rows, cols] (fused experts), read as one [n * rows, cols] matrix.
    SrcMatrix stacked(const std::string &name, uint64_t n, uint64_t rows, uint64_t cols) {
        return make(need(name), {n, rows, cols}, n * rows, cols, false);
    }

    std::vector<std::string> unused() const {
        std::vector<std::string> out;
        for (const std::string &n : st_.names())
            if (!used_.count(n)) out.push_back(n);
        return out;
    }

private:
    // A quantized linear [rows (outputs), cols (inputs)], whatever layout its float form had.
    SrcMatrix quantized(const std::string &base, uint64_t rows, uint64_t cols) {
        const std::string full = find(base + ".qweight")->name;
        SrcMatrix m;
        m.quant = open_quant_linear(st_, *quant_, full.substr(0, full.size() - 8), rows, cols);
        for (const StTensor *t : m.quant->tensors()) used_.insert(t->name);
        const StDType sd = m.quant->scales->dtype;
        m.dtype = sd == StDType::F32 ? DType::F32 : sd == StDType::BF16 ? DType::BF16 : DType::F16;
        m.what = m.quant->file + ": tensor '" + full + "'";
        m.rows = rows;
        m.cols = cols;
        return m;
    }

    SrcMatrix make(const StTensor &t, const std::vector<uint64_t> &want, uint64_t rows, uint64_t cols, bool transposed) {
        const char *f = t.file.c_str(), *n = t.name.c_str();
        if (t.shape != want)
            fail(GPT_ERR_FORMAT, "%s: tensor '%s' has shape %s, config.json implies %s", f, n, t.shape_str().c_str(), shape_str(want).c_str());
        SrcMatrix m;
        switch (t.dtype) {
        case StDType::F32: m.dtype = DType::F32; break;
        case StDType::F16: m.dtype = DType::F16; break;
        case StDType::BF16: m.dtype = DType::BF16; break;
        default:
            fail(GPT_ERR_UNSUPPORTED, "%s: tensor '%s' has dtype %s; only F32, F16 and BF16 tensors can be converted", f, n,
                 st_dtype_name(t.dtype));
        }
        m.what = t.file + ": tensor '" + t.name + "'";
        m.data = t.data;
        m.avail = t.end - t.begin;
        m.rows = rows;
        m.cols = cols;
        m.transposed = transposed;
        return m;
    }

    const std::string &dir_;
    const SafetensorsSet &st_;
    std::string prefix_;
    const QuantConfig *quant_;
    std::set<std::string> used_;
};

} // namespace gpt::convert
