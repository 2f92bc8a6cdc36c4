// cmd_synth.cpp - `gpt synth SHAPE OUT`: a synthetic shape's random weights written as a weight
// file (with its checksums, so it loads like any converted file), for load and memory
// measurements on real files (bench/load_memory.py).
#include "cli.h"
#include "synthetic.h"

#include "core/error.h"
#include "core/printable.h"

#include <cstdio>
#include <cstring>
#include <string>

namespace cli {

int cmd_synth(int argc, char **argv) {
    const char *shape = nullptr, *out = nullptr;
    uint32_t dtype = GPT_DTYPE_F16;
    uint64_t seed = 1234;
    bool force = false;
    for (int i = 1; i < argc; i++) {
        auto next = [&]() -> const char * {
            if (i + 1 >= argc) throw UsageError(std::string(argv[i]) + " needs a value");
            return argv[++i];
        };
        if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
            std::printf("usage: gpt synth SHAPE OUT [--dtype f32|f16|bf16|q8|q4] [--seed N] [--force]\n"
                        "  Writes a synthetic shape's random weights (those of gpt bench --synthetic) as a weight\n"
                        "  file with its checksums. --force replaces an existing OUT. Shapes:");
            for (const auto &s : synthetic_shapes()) std::printf(" %s", s.name);
            std::printf("\n");
            return 0;
        }
        if (!std::strcmp(argv[i], "--dtype")) {
            dtype = parse_dtype("--dtype", next(), true);
            if (dtype == GPT_DTYPE_AUTO) throw UsageError("--dtype: give the file's dtype (f32, f16, bf16, q8 or q4)");
        } else if (!std::strcmp(argv[i], "--seed")) seed = parse_uint("--seed", next());
        else if (!std::strcmp(argv[i], "--force")) force = true;
        else if (argv[i][0] == '-') throw UsageError(std::string("unknown option ") + argv[i] + " (see gpt synth --help)");
        else if (!shape) shape = argv[i];
        else if (!out) out = argv[i];
        else throw UsageError("more than SHAPE and OUT given");
    }
    if (!shape || !out) throw UsageError("usage: gpt synth SHAPE OUT (see gpt synth --help)");
    const SyntheticShape *s = find_synthetic(shape);
    if (!s) throw UsageError("unknown synthetic shape '" + printable(shape) + "' (see gpt synth --help)");
    try {
        write_synthetic(*s, dtype, seed, out, force);
    } catch (const gpt::Error &e) {
        throw Failure(e.what());
    }
    std::printf("wrote %s: %s, %s, %llu bytes\n", printable(out).c_str(), s->name, gpt_dtype_name((int)dtype),
                (unsigned long long)synthetic_file_bytes(*s, dtype));
    return 0;
}

} // namespace cli
