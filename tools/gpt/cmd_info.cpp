// cmd_info.cpp - `gpt info MODEL`: header, metadata, tensor table, sizes and checksum status.
#include "cli.h"
#include "device_plan.h"

#include "core/error.h"
#include "core/printable.h"
#include "format/keys.h"
#include "format/reader.h"

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace cli {

namespace {

std::string human_bytes(uint64_t n) {
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", v, units[u]);
    return buf;
}

std::string describe(const gpt::format::MetaValue &v) {
    using gpt::format::MetaType;
    char buf[64];
    switch (v.type) {
    case MetaType::U32:
    case MetaType::U64: return std::to_string(v.u);
    case MetaType::I32: return std::to_string(v.i);
    case MetaType::F32: std::snprintf(buf, sizeof buf, "%g", (double)v.f); return buf;
    case MetaType::STR: return "\"" + gpt::printable(v.str) + "\"";
    case MetaType::I32_ARRAY: return "i32[" + std::to_string(v.i32s.size()) + "]";
    case MetaType::F32_ARRAY: return "f32[" + std::to_string(v.f32s.size()) + "]";
    case MetaType::STR_ARRAY: {
        std::string s = "str[" + std::to_string(v.strs.size()) + "]";
        for (size_t i = 0; i < v.strs.size() && i < 4; i++) s += (i ? ", " : " ") + ("\"" + gpt::printable(v.strs[i]) + "\"");
        if (v.strs.size() > 4) s += ", ...";
        return s;
    }
    }
    return "?";
}

} // namespace

int cmd_info(int argc, char **argv) {
    const char *path = nullptr;
    bool verify = true, show_tensors = true, plan = false, device_given = false;
    PlanRequest req;
    for (int i = 1; i < argc; i++) {
        auto next = [&]() -> const char * {
            if (i + 1 >= argc) throw UsageError(std::string(argv[i]) + " needs a value");
            return argv[++i];
        };
        if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
            std::printf("usage: gpt info MODEL [--no-verify] [--no-tensors]\n"
                        "       gpt info --device D\n"
                        "       gpt info (MODEL | --synthetic NAME) --plan [--device D] [--ctx N] [--batch B]\n"
                        "                [--weights host|device] [--dtype T] [--json]\n"
                        "  Prints the weight file's metadata, tensor table and sizes, and checks every crc32\n"
                        "  (--no-verify skips that).\n"
                        "  --device D     cpu | cuda | cuda:N: what the device is (integrated or not, how it reaches\n"
                        "                 host memory) and the memory it can give\n"
                        "  --plan         what loading the model and one context would take on the device (weights\n"
                        "                 and context, host and device memory), from the tensor table, without\n"
                        "                 loading; exit status 1 when it does not fit the device present. A CUDA\n"
                        "                 plan needs a CUDA build, not a GPU\n"
                        "  --synthetic N  a shape of gpt bench --synthetic instead of a file (--dtype: its file dtype)\n"
                        "  --ctx N        the context's max_seq (default: the model's, at most 4096)\n"
                        "  --batch B      the context's max_batch (default 1)\n"
                        "  --weights W    host: weights read in place from host memory; device: copied to the GPU\n"
                        "                 (default: host on an integrated GPU, device otherwise)\n"
                        "  --dtype T      a file's weight_dtype on a GPU, or the synthetic file's dtype\n"
                        "  --json         the plan as one JSON object\n");
            return 0;
        }
        if (!std::strcmp(argv[i], "--no-verify")) verify = false;
        else if (!std::strcmp(argv[i], "--no-tensors")) show_tensors = false;
        else if (!std::strcmp(argv[i], "--plan")) plan = true;
        else if (!std::strcmp(argv[i], "--json")) req.json = true;
        else if (!std::strcmp(argv[i], "--device")) {
            req.device = parse_device(next());
            device_given = true;
        } else if (!std::strcmp(argv[i], "--synthetic")) req.synthetic = next();
        else if (!std::strcmp(argv[i], "--ctx")) req.ctx = parse_u32("--ctx", next(), 1, 1u << 24);
        else if (!std::strcmp(argv[i], "--batch")) req.batch = parse_u32("--batch", next(), 1, 4096);
        else if (!std::strcmp(argv[i], "--dtype")) req.dtype = parse_dtype("--dtype", next(), true);
        else if (!std::strcmp(argv[i], "--weights")) {
            req.weights = next();
            if (req.weights != "host" && req.weights != "device")
                throw UsageError("--weights: '" + printable(req.weights) + "' is not host or device");
        } else if (argv[i][0] == '-') throw UsageError(std::string("unknown option ") + argv[i] + " (see gpt info --help)");
        else if (!path) path = argv[i];
        else throw UsageError("more than one MODEL given");
    }
    const bool plan_only_options = !req.synthetic.empty() || req.ctx || req.batch != 1 || !req.weights.empty() ||
                                   req.dtype != GPT_DTYPE_AUTO || req.json;
    if (!plan && plan_only_options) throw UsageError("--synthetic, --ctx, --batch, --weights, --dtype and --json go with --plan");
    if (plan) {
        if ((path != nullptr) == !req.synthetic.empty()) throw UsageError("--plan needs either MODEL or --synthetic NAME");
        if (path) req.model = path;
        if (path) set_mapped_file(path, "Replace a model file by renaming a new one over it, never by rewriting it in place.");
        try {
            return print_plan(req);
        } catch (const gpt::Error &e) {
            std::fflush(stdout);
            std::fprintf(stderr, "gpt info: %s\n  %s\n", gpt_status_str(e.status()), gpt::printable(e.what()).c_str());
            return 1;
        }
    }
    if (!path && device_given) {
        print_device_facts(stdout, req.device, "");
        return 0;
    }
    if (device_given) throw UsageError("--device goes with --plan, or alone (gpt info --device D)");
    if (!path) throw UsageError("usage: gpt info MODEL | gpt info --device D (see gpt info --help)");
    // The file is mapped: if it is truncated while the checksums are read, SIGBUS ends the
    // run with this line (main.cpp) instead of a crash.
    set_mapped_file(path, "Replace a model file by renaming a new one over it, never by rewriting it in place.");
    try {
        gpt::format::ReadOptions opt;
        opt.verify_checksums = false; // checked below, to report rather than fail
        auto f = gpt::format::WeightFile::open(path, opt);
        std::printf("file:      %s\n", gpt::printable(path).c_str());
        std::printf("size:      %s (%llu bytes)\n", human_bytes(f->size()).c_str(), (unsigned long long)f->size());
        std::printf("format:    libgpt weight file v1, %zu tensors\n\nmetadata:\n", f->tensors().size());
        for (const auto &[key, value] : f->metadata().entries()) std::printf("  %-28s %s\n", gpt::printable(key).c_str(), describe(value).c_str());
        // Mixture of experts: a token runs k of the E experts of each stacked expert tensor.
        // (A key of another type reads as absent: info describes broken files too.)
        auto u32_key = [&](const char *key) -> uint32_t {
            const gpt::format::MetaValue *v = f->metadata().find(key);
            return v && v->type == gpt::format::MetaType::U32 ? (uint32_t)v->u : 0;
        };
        const uint32_t n_experts = u32_key(gpt::keys::kNExperts), n_used = u32_key(gpt::keys::kNExpertsUsed);
        const bool moe = n_experts && n_used <= n_experts;
        uint64_t params = 0, active = 0;
        if (show_tensors) std::printf("\ntensors:\n  %-32s %-6s %-20s %12s %10s  %s\n", "name", "dtype", "shape", "offset", "size", "crc32");
        for (const auto &t : f->tensors()) {
            params += t.numel();
            active += moe && t.name.find(".ffn_experts_") != std::string::npos ? t.numel() / n_experts * n_used : t.numel();
            if (!show_tensors) continue;
            std::string shape;
            for (uint32_t d = 0; d < t.ndim; d++) shape += (d ? " x " : "") + std::to_string(t.dims[d]);
            // Quantized tensors show their group size: "q4/32".
            const std::string dt = std::string(gpt::dtype_name(t.dtype)) + (t.group ? "/" + std::to_string(t.group) : "");
            std::printf("  %-32s %-6s %-20s %12llu %10s  %08x\n", gpt::printable(t.name).c_str(), dt.c_str(), shape.c_str(),
                        (unsigned long long)t.offset, human_bytes(t.nbytes).c_str(), t.crc32);
        }
        std::printf("\nparameters: %llu (%.2f M)\n", (unsigned long long)params, params / 1e6);
        if (moe) {
            const uint32_t d_ff_expert = u32_key(gpt::keys::kDFFExpert), d_ff_shared = u32_key(gpt::keys::kDFFShared);
            std::printf("experts:    %u per MoE layer, %u used per token, width %u", n_experts, n_used, d_ff_expert);
            if (d_ff_shared) std::printf(", a shared expert of width %u", d_ff_shared);
            std::printf("; %llu parameters (%.2f M) active per token\n", (unsigned long long)active, active / 1e6);
        }
        if (verify) {
            std::fflush(stdout); // the listing first: verifying a large file takes a while
            try {
                f->verify_checksums();
                std::printf("checksums:  all %zu tensors OK\n", f->tensors().size());
            } catch (const gpt::Error &e) {
                std::printf("checksums:  FAILED: %s\n", gpt::printable(e.what()).c_str());
                return 1;
            }
        } else {
            std::printf("checksums:  not verified (--no-verify)\n");
        }
    } catch (const gpt::Error &e) {
        std::fflush(stdout);
        std::fprintf(stderr, "gpt info: %s\n  %s\n", gpt_status_str(e.status()), gpt::printable(e.what()).c_str());
        return 1;
    }
    return 0;
}

} // namespace cli
