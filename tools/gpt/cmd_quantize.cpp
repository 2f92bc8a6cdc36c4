// cmd_quantize.cpp - `gpt quantize IN OUT --dtype q8|q4 [--group N]`: a weight file's matrices
// quantized (weight-only, round to nearest, format/quantize.h decides which), everything else
// copied as it is. Staged beside OUT, loaded back from there on the CPU (checksums and the
// NaN/Inf scan on) and run for one token, and only then moved onto OUT: a failure leaves no
// OUT (and an existing one untouched).
#include "cli.h"

#include "core/error.h"
#include "core/parallel.h"
#include "core/printable.h"
#include "core/quant.h"
#include "core/staged_file.h"
#include "format/quantize.h"
#include "format/reader.h"
#include "format/writer.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unistd.h>
#include <string>
#include <vector>

namespace cli {

namespace {

void usage(FILE *f) {
    std::fprintf(f, "usage: gpt quantize IN OUT --dtype q8|q4 [--group 32|64|128] [--keep-embeddings] [--force]\n"
                    "  Writes OUT: IN's matrices whose width the group divides as q8 or q4 (symmetric, round\n"
                    "  to nearest, one f16 scale per group of columns; default group 32), every other tensor\n"
                    "  and all metadata unchanged. IN may itself be quantized (its values are dequantized first).\n"
                    "  OUT is loaded back and run for one token on the CPU before the command succeeds.\n"
                    "  --keep-embeddings keeps the token and position tables and the head as they are.\n"
                    "  --force replaces an existing OUT; on any failure OUT is not written.\n");
}

// One forward token on the CPU from the file as written: it loads (checksums, NaN/Inf scan of
// the scales) and gives finite logits.
void check_loads(const std::string &path, const std::string &shown) {
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = GPT_DEVICE_CPU;
    gpt_model *raw = nullptr;
    if (gpt_model_load(path.c_str(), &mp, &raw) != GPT_OK) throw Failure(shown + " as written does not load: " + gpt_last_error());
    ModelPtr m(raw);
    gpt_model_info info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    gpt_model_get_info(m.get(), &info);
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.max_seq = 4;
    gpt_ctx *c = nullptr;
    if (gpt_ctx_create(m.get(), &cp, &c) != GPT_OK) throw Failure(std::string("checking OUT: ") + gpt_last_error());
    CtxPtr ctx(c);
    const int32_t tok = info.bos_token >= 0 ? info.bos_token : 0;
    std::vector<float> logits(info.vocab_size, NAN);
    if (gpt_forward(c, &tok, 1, 1, 0, logits.data()) != GPT_OK) throw Failure(std::string("checking OUT: ") + gpt_ctx_last_error(c));
    for (float v : logits)
        if (!std::isfinite(v)) throw Failure("checking OUT: a non-finite logit after one token");
}

} // namespace

int cmd_quantize(int argc, char **argv) {
    uint32_t dtype = GPT_DTYPE_AUTO, group = gpt::format::kDefaultGroup;
    bool force = false, keep_embeddings = false;
    std::vector<const char *> positional;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        auto value = [&]() -> const char * {
            if (i + 1 >= argc) throw UsageError(a + " needs a value");
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            usage(stdout);
            return 0;
        }
        if (a == "--dtype") dtype = parse_dtype(a, value(), true);
        else if (a == "--group") group = parse_u32(a, value(), 32, 128);
        else if (a == "--force" || a == "-f") force = true;
        else if (a == "--keep-embeddings") keep_embeddings = true;
        else if (a.size() > 1 && a[0] == '-') throw UsageError("unknown option " + a + " (see gpt quantize --help)");
        else positional.push_back(argv[i]);
    }
    if (positional.size() != 2) {
        usage(stderr);
        return 2;
    }
    if (dtype != GPT_DTYPE_Q8 && dtype != GPT_DTYPE_Q4) throw UsageError("--dtype q8 or --dtype q4 is required");
    if (!gpt::is_valid_group(group)) throw UsageError("--group: " + std::to_string(group) + " is not 32, 64 or 128");
    const std::string in = positional[0], out = positional[1];
    const gpt::DType q = static_cast<gpt::DType>(dtype);
    set_mapped_file(in, "Replace a model file by renaming a new one over it, never by rewriting it in place.");
    try {
        gpt::format::ReadOptions ro;
        ro.verify_checksums = true;
        ro.check_finite = true;
        auto f = gpt::format::WeightFile::open(in, ro);
        gpt::format::Writer w;
        w.metadata() = f->metadata();
        size_t n_quantized = 0;
        for (const gpt::format::TensorEntry &t : f->tensors()) {
            const std::vector<uint64_t> shape(t.dims, t.dims + t.ndim);
            const uint8_t *bytes = f->data(t);
            const uint64_t nbytes = t.nbytes;
            auto copy = [bytes, nbytes](uint8_t *dst, uint64_t n) {
                if (n != nbytes) gpt::fail(GPT_ERR_INTERNAL, "copy of %llu bytes into %llu", (unsigned long long)nbytes, (unsigned long long)n);
                std::memcpy(dst, bytes, n);
            };
            const bool embedding = t.name == "tok_emb.weight" || t.name == "pos_emb.weight" || t.name == "lm_head.weight";
            if (!gpt::format::quantizable(t.name, shape, group) || (keep_embeddings && embedding)) { // kept exactly as it is
                if (gpt::is_quantized(t.dtype)) w.add_quantized(t.name, t.dtype, shape, t.group, copy);
                else w.add_tensor(t.name, t.dtype, shape, copy);
                continue;
            }
            gpt::Weight view;
            view.data = bytes;
            view.dtype = t.dtype;
            view.rows = t.dims[0];
            view.cols = t.dims[1];
            view.group = t.group;
            auto values = [view](float *dst) { // rows on threads, as the quantizer's
                gpt::parallel_for((size_t)view.rows, 8, [&](size_t r) { gpt::weight_row_f32(view, r, dst + r * view.cols); });
            };
            gpt::format::add_quantized_or_keep(w, t.name, shape, q, group, values, t.dtype, copy);
            n_quantized++;
        }
        if (!force && ::access(out.c_str(), F_OK) == 0)
            gpt::fail(GPT_ERR_IO, "%s: already exists (not overwritten; pass --force to replace it)", out.c_str());
        gpt::StagedFile stage(out);
        w.write_to(stage.fd(), out, nullptr);
        stage.finish();
        check_loads(stage.path(), out);
        stage.commit(force);
        std::printf("quantized   %zu of %zu tensors to %s, group %u; the rest unchanged\n", n_quantized, f->tensors().size(),
                    gpt::dtype_name(q), group);
        std::printf("file        %s: %llu bytes (from %llu)\n", gpt::printable(out).c_str(), (unsigned long long)w.file_size(),
                    (unsigned long long)f->size());
    } catch (const gpt::Error &e) {
        std::fflush(stdout);
        std::fprintf(stderr, "gpt quantize: %s\n  %s\n", gpt_status_str(e.status()), gpt::printable(e.what()).c_str());
        return 1;
    }
    std::printf("verified    loaded back with checksums, one token on the CPU\n");
    return 0;
}

} // namespace cli
