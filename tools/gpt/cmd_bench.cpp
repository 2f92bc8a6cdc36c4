// cmd_bench.cpp - `gpt bench MODEL | --synthetic NAME`: prefill, decode and full-logits
// forward speed through the public API, with warm-up, repetitions, median and p90, achieved
// bandwidth and FLOP rate against the GPU's measured ceilings, and device memory.
// Every timed call ends in a device synchronisation (the API returns when its results are
// ready), so host steady-clock intervals are device completion times.
#include "ceilings.h"
#include "cli.h"
#include "device_plan.h"
#include "synthetic.h"

#include "format/reader.h"
#include "model/arch.h"
#include "model/config.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

namespace cli {

namespace {

struct Stats {
    double median = 0, p90 = 0, min = 0;
    size_t n = 0;
};

Stats stats(std::vector<double> v) {
    Stats s;
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    s.n = v.size();
    s.min = v[0];
    s.median = v[v.size() / 2];
    s.p90 = v[std::min(v.size() - 1, (size_t)std::ceil(0.9 * (v.size() - 1)))];
    return s;
}

struct Options {
    std::string model, synthetic;
    uint32_t dtype = GPT_DTYPE_F16; // synthetic file dtype and GPU weight dtype
    bool dtype_given = false;
    int32_t device = GPT_DEVICE_AUTO;
    uint32_t prefill = 512, decode = 128, batch = 1, pos = 0, reps = 10, warmup = 3, threads = 0;
    bool prefill_given = false, decode_given = false; // defaults shrink to a small model's context
    uint32_t fwd_batch = 0, fwd_tokens = 0; // --forward BxT
    bool json = false, graphs = true, tf32 = false, verify = true;
    FileAccess access = FileAccess::Default;
    uint32_t weights = 0; // --weights: GPT_MODEL_HOST_WEIGHTS or GPT_MODEL_DEVICE_WEIGHTS
};

constexpr uint32_t kMaxBatch = 4096; // gpt_ctx_params.max_batch's limit

// "BxT": two decimal integers, B in 1..kMaxBatch, T >= 1.
void parse_forward(const std::string &flag, const char *value, uint32_t &b, uint32_t &t) {
    const std::string v = value ? value : "";
    const size_t x = v.find('x');
    if (x == std::string::npos) throw UsageError(flag + " takes BxT, e.g. 8x128 (got '" + printable(v) + "')");
    b = parse_u32(flag + " B", v.substr(0, x).c_str(), 1, kMaxBatch);
    t = parse_u32(flag + " T", v.substr(x + 1).c_str(), 1);
}

// Minimal JSON string body: quotes, backslashes and control bytes escaped (the text is
// made printable first, so invalid UTF-8 arrives as \xNN, i.e. "\\xNN" in JSON).
std::string json_string(const std::string &s) {
    std::string out;
    for (char c : printable(s)) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

// A FLOP rate in the unit that shows it (a CPU runs at GFLOP/s).
std::string flop_rate(double tflops) {
    char buf[48];
    if (tflops >= 1) std::snprintf(buf, sizeof buf, "%.1f TFLOP/s", tflops);
    else std::snprintf(buf, sizeof buf, "%.1f GFLOP/s", tflops * 1e3);
    return buf;
}

void usage() {
    std::printf("usage: gpt bench (MODEL | --synthetic NAME) [options]\n"
                "  --synthetic NAME   random weights of a named shape:");
    for (const auto &s : synthetic_shapes()) std::printf(" %s", s.name);
    std::printf("\n"
                "  --dtype T          f32 | f16 | bf16 | q8 | q4 (synthetic weights and GPU compute; default f16;\n"
                "                     q8/q4: matrices quantized with group 32, the rest f16, f16 compute)\n"
                "  --device D         auto | cpu | cuda | cuda:N (default auto)\n"
                "%s"
                "  --prefill N        prompt tokens for the prefill measurement (default 512, at most the\n"
                "                     model's context; 0 skips)\n"
                "  --decode M         tokens for the decode measurement (default 128, at most what fits\n"
                "                     the context after --pos and the warm-up steps; 0 skips)\n"
                "  --batch B          sequences decoded together, 1 to 4096 (default 1)\n"
                "  --pos P            context position where decoding starts (default 0)\n"
                "  --forward BxT      also time a full-logits forward of B sequences x T tokens\n"
                "  --reps R           repetitions of prefill/forward, at least 1 (default 10; median reported)\n"
                "  --warmup W         untimed runs before them, and untimed decode steps (default 3)\n"
                "  --threads N        CPU threads\n"
                "  --tf32             allow TF32 for f32 matrix products (GEMMs, prompt attention)\n"
                "  --no-graphs        decode without CUDA graphs\n"
                "  --no-verify        load MODEL without checking its crc32s (as GPT_MODEL_SKIP_CHECKSUMS)\n"
                "  --mmap             on the CPU, map MODEL instead of reading it into memory (the file\n"
                "                     must then not change while gpt runs)\n"
                "  --no-mmap          on a GPU, read MODEL before copying it (default: mapped while it loads)\n"
                "  --json             one JSON object on stdout\n",
                kWeightsHelp);
}

Options parse(int argc, char **argv) {
    Options o;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        auto next = [&]() -> const char * {
            if (i + 1 >= argc) throw UsageError(a + " needs a value");
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            usage();
            std::exit(0);
        } else if (a == "--synthetic") o.synthetic = next();
        else if (a == "--dtype") {
            o.dtype = parse_dtype(a, next(), true);
            o.dtype_given = true;
        } else if (a == "--device") o.device = parse_device(next());
        else if (a == "--weights") o.weights = parse_weights(next());
        else if (a == "--prefill") {
            o.prefill = parse_u32(a, next());
            o.prefill_given = true;
        } else if (a == "--decode") {
            o.decode = parse_u32(a, next());
            o.decode_given = true;
        } else if (a == "--batch") o.batch = parse_u32(a, next(), 1, kMaxBatch);
        else if (a == "--pos") o.pos = parse_u32(a, next());
        else if (a == "--reps") o.reps = parse_u32(a, next(), 1, 1000000);
        else if (a == "--warmup") o.warmup = parse_u32(a, next(), 0, 1000);
        else if (a == "--threads") o.threads = parse_u32(a, next(), 0, 256);
        else if (a == "--tf32") o.tf32 = true;
        else if (a == "--no-graphs") o.graphs = false;
        else if (a == "--no-verify") o.verify = false;
        else if (a == "--mmap") o.access = FileAccess::Map;
        else if (a == "--no-mmap") o.access = FileAccess::Read;
        else if (a == "--json") o.json = true;
        else if (a == "--forward") parse_forward(a, next(), o.fwd_batch, o.fwd_tokens);
        else if (a[0] == '-') throw UsageError("unknown option " + a + " (see gpt bench --help)");
        else if (o.model.empty()) o.model = a;
        else throw UsageError("more than one MODEL given");
    }
    if (o.model.empty() == o.synthetic.empty()) throw UsageError("give either MODEL or --synthetic NAME");
    return o;
}

void check(gpt_status st, const char *what, gpt_ctx *ctx = nullptr) {
    if (st != GPT_OK)
        throw Failure(std::string(what) + ": " + gpt_status_str(st) + ": " + (ctx ? gpt_ctx_last_error(ctx) : gpt_last_error()));
}

// Device memory for logits, freed on every path out.
struct DeviceBuffer {
    float *p = nullptr;
    explicit DeviceBuffer(bool on_gpu, size_t bytes) : p(on_gpu ? static_cast<float *>(bench_device_alloc(bytes)) : nullptr) {}
    ~DeviceBuffer() {
        if (p) bench_device_free(p);
    }
    DeviceBuffer(const DeviceBuffer &) = delete;
    DeviceBuffer &operator=(const DeviceBuffer &) = delete;
};

// Shrinks the default prefill/decode counts to the model's context and refuses given ones
// that do not fit, with the numbers and the fix. Positions each part needs: prefill N: N;
// decode M from position P (with W warm-up steps): P + M + W (gpt_generate's last token is
// not cached); forward BxT: T; the first-token measurement: 1.
uint32_t fit_to_context(Options &o, uint32_t context, const std::string &name) {
    const std::string ctx = std::to_string(context);
    if (o.prefill > context) {
        if (o.prefill_given)
            throw UsageError("--prefill " + std::to_string(o.prefill) + " needs " + std::to_string(o.prefill) + " positions, " +
                             "the context of " + name + " is " + ctx + ": pass --prefill " + ctx + " or less");
        std::fprintf(stderr, "gpt bench: prefill %u tokens (the model's context length; the default is %u)\n", context, o.prefill);
        o.prefill = context;
    }
    if (o.fwd_tokens > context)
        throw UsageError("--forward " + std::to_string(o.fwd_batch) + "x" + std::to_string(o.fwd_tokens) + " needs " +
                         std::to_string(o.fwd_tokens) + " positions, " + "the context of " + name + " is " + ctx + ": pass a T of " + ctx + " or less");
    if (o.decode) {
        const uint64_t need = (uint64_t)o.pos + o.decode + o.warmup;
        if (need > context && !o.decode_given && (uint64_t)o.pos + o.warmup < context) {
            const uint32_t fit = context - o.pos - o.warmup;
            std::fprintf(stderr, "gpt bench: decode %u steps (what fits the model's context of %u after position %u and %u warm-up "
                                 "steps; the default is %u)\n", fit, context, o.pos, o.warmup, o.decode);
            o.decode = fit;
        } else if (need > context) {
            const std::string fix = (uint64_t)o.pos + o.warmup < context
                                        ? "pass --decode " + std::to_string(context - o.pos - o.warmup) + " or less"
                                        : "pass --pos " + std::to_string(context > o.warmup + 1 ? context - o.warmup - 1 : 0) + " or less";
            throw UsageError("--pos " + std::to_string(o.pos) + " and --decode " + std::to_string(o.decode) + " need " +
                             std::to_string(need) + " positions (pos + decode + " + std::to_string(o.warmup) +
                             " warm-up steps), " + "the context of " + name + " is " + ctx + ": " + fix);
        }
    }
    const uint64_t decode_need = o.decode ? (uint64_t)o.pos + o.decode + o.warmup : 0;
    return (uint32_t)std::max<uint64_t>({o.prefill, decode_need, o.fwd_tokens, 1});
}

struct TokenTimes {
    std::vector<double> t;
};
int on_token(int32_t, void *user) {
    static_cast<TokenTimes *>(user)->t.push_back(now_seconds());
    return 0;
}

// What bench is doing, for a terminal: a large synthetic shape takes tens of seconds before
// the first result (weights generated, loaded, checked, prefill reps on a CPU). One line on
// stderr rewritten in place, only when stderr is a terminal and the output is not --json;
// blanked before anything else is printed. Never written inside a timed interval, except the
// blanking between the load and the first token (terminal only, microseconds).
class Progress {
public:
    explicit Progress(bool on) : on_(on) {}
    ~Progress() { clear(); }
    Progress(const Progress &) = delete;
    Progress &operator=(const Progress &) = delete;

    __attribute__((format(printf, 2, 3))) void show(const char *fmt, ...) {
        if (!on_) return;
        char buf[160];
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        std::string line = std::string("gpt bench: ") + buf;
        if (line.size() > 79) line = line.substr(0, 75) + " ..."; // one terminal row, or \r cannot rewrite it
        // Spaces over the rest of a longer previous line (no terminal escapes needed).
        std::fprintf(stderr, "\r%s%*s", line.c_str(), (int)(width_ > line.size() ? width_ - line.size() : 0), "");
        std::fflush(stderr);
        width_ = std::max(width_, line.size());
    }
    void clear() {
        if (!on_ || !width_) return;
        std::fprintf(stderr, "\r%*s\r", (int)width_, "");
        std::fflush(stderr);
        width_ = 0;
    }

private:
    bool on_;
    size_t width_ = 0;
};

// The parameters a token does not use: on a mixture of experts, the experts it is not routed
// to (bytes and FLOPs below count one token's experts); 0 for a dense model.
double unused_expert_params(const std::string &path, const SyntheticImage &image) {
    gpt::format::ReadOptions ro;
    ro.verify_checksums = false; // the model is loaded (and checked) already: only the metadata is read
    auto f = image.empty() ? gpt::format::WeightFile::open(path, ro) : gpt::format::WeightFile::from_memory(image.data(), image.size(), false, ro);
    return (double)gpt::unused_expert_parameters(gpt::ModelConfig::from_metadata(f->metadata(), path));
}

std::vector<int32_t> random_tokens(size_t n, uint32_t vocab, uint64_t seed) {
    std::vector<int32_t> v(n);
    for (auto &x : v) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        x = (int32_t)((seed >> 33) % vocab);
    }
    return v;
}

} // namespace

int cmd_bench(int argc, char **argv) {
    Options o = parse(argc, argv);
    Progress progress(!o.json && isatty(STDERR_FILENO));
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = o.device;
    mp.flags |= o.weights;
    SyntheticImage image;
    double gen_s = 0;
    if (!o.synthetic.empty()) {
        const SyntheticShape *s = find_synthetic(o.synthetic);
        if (!s) throw std::runtime_error("unknown synthetic shape '" + o.synthetic + "' (see gpt bench --help)");
        progress.show("generating random weights for %s ...", s->name);
        const double t = now_seconds();
        image = build_synthetic(*s, o.dtype == GPT_DTYPE_AUTO ? (uint32_t)GPT_DTYPE_F16 : o.dtype, 1234);
        gen_s = now_seconds() - t;
        mp.flags |= GPT_MODEL_SKIP_CHECKSUMS;
    } else {
        if (o.dtype_given) mp.weight_dtype = o.dtype;
        if (!o.verify) mp.flags |= GPT_MODEL_SKIP_CHECKSUMS;
        choose_file_access(o.access, o.model, mp); // read into memory when the weights stay on the CPU
    }

    // Load -> context -> first token: what a user waits for before text appears.
    progress.show("loading %s, first token ...", printable(o.synthetic.empty() ? o.model : o.synthetic).c_str());
    const double t_load = now_seconds();
    ModelPtr model_owner;
    {
        gpt_model *m = nullptr;
        if (image.empty()) check(gpt_model_load(o.model.c_str(), &mp, &m), "load");
        else check(gpt_model_load_from_memory(image.data(), image.size(), &mp, &m), "load");
        model_owner.reset(m);
    }
    gpt_model *model = model_owner.get();
    const double t_loaded = now_seconds();
    report_weights_placement(model, mp);
    gpt_model_info info;
    info.struct_size = sizeof info;
    check(gpt_model_get_info(model, &info), "info");
    const uint32_t V = info.vocab_size;
    const std::string name = o.synthetic.empty() ? o.model : o.synthetic;
    progress.clear(); // fit_to_context may print (a few bytes to the terminal, inside the first-token time)
    const uint32_t need_seq = fit_to_context(o, info.context_length, printable(name));
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.max_batch = std::max(o.batch, o.fwd_batch);
    cp.max_seq = need_seq;
    cp.n_threads = o.threads;
    cp.flags = (o.graphs ? 0 : GPT_CTX_NO_GRAPHS) | (o.tf32 ? GPT_CTX_ALLOW_TF32 : 0);
    CtxPtr ctx_owner;
    {
        gpt_ctx *c = nullptr;
        check(gpt_ctx_create(model, &cp, &c), "context");
        ctx_owner.reset(c);
    }
    gpt_ctx *ctx = ctx_owner.get();
    uint64_t ctx_host = 0, ctx_dev = 0;
    gpt_ctx_estimate_memory(model, &cp, &ctx_host, &ctx_dev);
    // The device and what it can still give with the model and context in place (asked only
    // now: before the load the question would create the CUDA context outside the load's time).
    gpt_device_info after;
    after.struct_size = sizeof after;
    const bool facts = gpt_device_get_info(info.device, &after) == GPT_OK;
    gpt_sampling_params greedy;
    gpt_sampling_params_init(&greedy);
    greedy.temperature = 0;
    greedy.flags = GPT_SAMPLING_IGNORE_EOS;
    int32_t first_prompt = 1 % V, first_out = 0;
    uint32_t n_out = 0;
    check(gpt_generate(ctx, &first_prompt, 1, &greedy, nullptr, nullptr, &first_out, 1, &n_out), "first token", ctx);
    const double first_token_ms = (now_seconds() - t_load) * 1e3;
    const double load_ms = (t_loaded - t_load) * 1e3;
    const bool on_gpu = info.device >= 0;
    if (on_gpu) progress.show("measuring the GPU's copy bandwidth and GEMM rate ...");
    const Ceilings ceil = on_gpu ? measure_ceilings(info.device) : Ceilings{};

    // Bytes per weight; quantized: the integers plus a 2-byte scale per group of 32 (the default).
    const double dtype_bytes = info.weight_dtype == GPT_DTYPE_F32 ? 4.0
                               : info.weight_dtype == GPT_DTYPE_Q8 ? 1.0 + 2.0 / 32
                               : info.weight_dtype == GPT_DTYPE_Q4 ? 0.5 + 2.0 / 32
                                                                   : 2.0;
    const double emb_bytes = (double)info.vocab_size * info.d_model * dtype_bytes;
    // Bytes one decode step must read: the weights (an untied embedding contributes one row
    // per token, learned positions one row) plus the KV cache up to the position.
    const bool tied = info.flags & GPT_MODEL_INFO_TIED_HEAD;
    const double pos_bytes = info.arch == GPT_ARCH_GPT2 ? (double)info.context_length * info.d_model * dtype_bytes : 0;
    // On the CPU the weights are in host memory (device_bytes is 0): count the parameters. A
    // mixture of experts counts the experts one token uses (batch 1: what decode must read).
    const double unused = unused_expert_params(o.model, image);
    const double held_per_param = on_gpu ? (double)info.device_bytes / (double)info.n_params : dtype_bytes;
    const double model_bytes = ((double)info.n_params - unused) * held_per_param;
    // What the weights take where they are held: device memory, or host memory (the file read
    // in or its mapped pages) on the CPU.
    const uint64_t weight_bytes = on_gpu ? info.device_bytes : info.host_bytes;
    const double weight_read = model_bytes - (tied ? 0 : emb_bytes) - pos_bytes;
    const double kv_elt = on_gpu ? (info.weight_dtype == GPT_DTYPE_F32 ? 4.0 : 2.0) : 4.0;
    const double flops_per_token = 2.0 * ((double)info.n_params - unused - (tied ? 0 : emb_bytes / dtype_bytes) -
                                          pos_bytes / dtype_bytes);

    // ---- prefill
    Stats prefill;
    if (o.prefill) {
        std::vector<int32_t> toks = random_tokens(o.prefill, V, 7);
        std::vector<float> last(V);
        std::vector<double> t;
        for (uint32_t r = 0; r < o.reps + o.warmup; r++) {
            if (r < o.warmup) progress.show("prefill %u tokens: warm-up %u/%u ...", o.prefill, r + 1, o.warmup);
            else progress.show("prefill %u tokens: %u/%u ...", o.prefill, r - o.warmup + 1, o.reps);
            gpt_ctx_reset(ctx);
            const double a = now_seconds();
            check(gpt_forward(ctx, toks.data(), 1, o.prefill, 0, last.data()), "prefill", ctx);
            if (r >= o.warmup) t.push_back((now_seconds() - a) * 1e3);
        }
        prefill = stats(t);
    }

    // ---- decode at position pos, batch B
    Stats decode;
    if (o.decode) {
        gpt_ctx_reset(ctx);
        if (o.pos) {
            progress.show("decode: filling the context to position %u ...", o.pos);
            std::vector<int32_t> ctx_toks = random_tokens((size_t)o.batch * o.pos, V, 11);
            check(gpt_forward(ctx, ctx_toks.data(), o.batch, o.pos, 0, nullptr), "context fill", ctx);
        }
        std::vector<double> t;
        progress.show("decode: %u steps of batch %u ...", o.decode + o.warmup, o.batch);
        if (o.batch == 1) {
            // Device sampling: one token id comes back per step.
            TokenTimes tt;
            std::vector<int32_t> out(o.decode + o.warmup);
            int32_t p = 3 % V;
            tt.t.push_back(now_seconds());
            check(gpt_generate(ctx, &p, 1, &greedy, on_token, &tt, out.data(), (uint32_t)out.size(), &n_out), "decode", ctx);
            for (size_t i = o.warmup + 1; i < tt.t.size(); i++) t.push_back((tt.t[i] - tt.t[i - 1]) * 1e3);
        } else {
            // Batched steps through gpt_forward; logits stay on the GPU when there is one.
            const size_t n = (size_t)o.batch * V;
            DeviceBuffer dev_logits(on_gpu, 4ull * n);
            std::vector<float> host_logits(dev_logits.p ? 0 : n);
            float *lg = dev_logits.p ? dev_logits.p : host_logits.data();
            std::vector<int32_t> next = random_tokens(o.batch, V, 13);
            for (uint32_t s = 0; s < o.decode + o.warmup; s++) {
                const double a = now_seconds();
                check(gpt_forward(ctx, next.data(), o.batch, 1, 0, lg), "decode", ctx);
                if (s >= o.warmup) t.push_back((now_seconds() - a) * 1e3);
                next = random_tokens(o.batch, V, 100 + s);
            }
        }
        decode = stats(t);
    }

    // ---- full-logits forward of B x T
    Stats forward;
    if (o.fwd_batch) {
        const size_t n = (size_t)o.fwd_batch * o.fwd_tokens * V;
        DeviceBuffer dev_logits(on_gpu, 4ull * n);
        std::vector<float> host_logits(dev_logits.p ? 0 : n);
        float *lg = dev_logits.p ? dev_logits.p : host_logits.data();
        std::vector<int32_t> toks = random_tokens((size_t)o.fwd_batch * o.fwd_tokens, V, 17);
        std::vector<double> t;
        for (uint32_t r = 0; r < o.reps + o.warmup; r++) {
            progress.show("forward %u x %u tokens: %u/%u ...", o.fwd_batch, o.fwd_tokens, r + 1, o.reps + o.warmup);
            gpt_ctx_reset(ctx);
            const double a = now_seconds();
            check(gpt_forward(ctx, toks.data(), o.fwd_batch, o.fwd_tokens, GPT_FORWARD_ALL_LOGITS, lg), "forward", ctx);
            if (r >= o.warmup) t.push_back((now_seconds() - a) * 1e3);
        }
        forward = stats(t);
    }

    // ---- report
    progress.clear();
    const double avg_pos = o.pos + (o.decode + o.warmup) / 2.0;
    const double kv_read = 2.0 * info.n_layers * info.n_kv_heads * info.head_dim * kv_elt * avg_pos * o.batch;
    const double decode_gbps = decode.median > 0 ? (weight_read + kv_read) / (decode.median * 1e-3) / 1e9 : 0;
    const double attn_flops = 4.0 * info.n_layers * info.n_heads * info.head_dim * (double)o.prefill * o.prefill / 2.0;
    const double prefill_tflops =
        prefill.median > 0 ? (flops_per_token * o.prefill + attn_flops) / (prefill.median * 1e-3) / 1e12 : 0;
    const char *dev = on_gpu ? "cuda" : "cpu";
    if (o.json) {
        std::printf("{\"model\": \"%s\", \"device\": \"%s\", \"dtype\": \"%s\", \"build\": \"%s\", \"params\": %llu, "
                    "\"weight_bytes\": %llu, \"context_bytes\": %llu, \"load_ms\": %.3f, \"load_to_first_token_ms\": %.3f, "
                    "\"synthetic_generate_s\": %.3f, "
                    "\"prefill\": {\"tokens\": %u, \"median_ms\": %.4f, \"p90_ms\": %.4f, \"tokens_per_s\": %.1f, \"tflops\": %.6f}, "
                    "\"decode\": {\"tokens\": %u, \"batch\": %u, \"pos\": %u, \"median_ms\": %.4f, \"p90_ms\": %.4f, "
                    "\"tokens_per_s\": %.1f, \"gbps\": %.1f}, "
                    "\"forward\": {\"batch\": %u, \"tokens\": %u, \"median_ms\": %.4f, \"p90_ms\": %.4f}, "
                    "\"ceilings\": {\"copy_gbps\": %.1f, \"gemm_tflops\": %.1f}, "
                    "\"device_info\": {\"name\": \"%s\", \"integrated\": %u, \"total_bytes\": %llu, "
                    "\"available_after_context_bytes\": %llu}, "
                    "\"model_host_bytes\": %llu, \"model_device_bytes\": %llu}\n",
                    json_string(name).c_str(), dev, gpt_dtype_name((int)info.weight_dtype), json_string(gpt_build_info()).c_str(),
                    (unsigned long long)info.n_params, (unsigned long long)weight_bytes, (unsigned long long)(on_gpu ? ctx_dev : ctx_host), load_ms,
                    first_token_ms, gen_s, o.prefill, prefill.median, prefill.p90,
                    prefill.median > 0 ? o.prefill / (prefill.median * 1e-3) : 0.0, prefill_tflops, o.decode, o.batch, o.pos,
                    decode.median, decode.p90, decode.median > 0 ? o.batch / (decode.median * 1e-3) : 0.0, decode_gbps,
                    o.fwd_batch, o.fwd_tokens, forward.median, forward.p90, ceil.copy_gbps, ceil.gemm_tflops,
                    json_string(facts ? after.name : "").c_str(), facts ? after.integrated : 0,
                    (unsigned long long)(facts ? after.total_bytes : 0),
                    (unsigned long long)(facts ? after.available_bytes : 0), (unsigned long long)info.host_bytes,
                    (unsigned long long)info.device_bytes);
    } else {
        std::printf("model      %s (%s, %u layers, d_model %u, %.1f M params) on %s, weights %s\n", printable(name).c_str(),
                    gpt_arch_name((int)info.arch), info.n_layers, info.d_model, info.n_params / 1e6, dev,
                    gpt_dtype_name((int)info.weight_dtype));
        if (facts) std::printf("device     %s\n", device_summary(info.device).c_str());
        std::printf("memory     weights %.1f MiB, context %.1f MiB (%s)\n", weight_bytes / 1048576.0,
                    (on_gpu ? ctx_dev : ctx_host) / 1048576.0, on_gpu ? "device" : "host");
        std::printf("startup    load %.1f ms, load to first token %.1f ms\n", load_ms, first_token_ms);
        if (ceil.measured)
            std::printf("ceilings   copy %.0f GB/s (read+write), fp16 GEMM %.0f TFLOP/s\n", ceil.copy_gbps, ceil.gemm_tflops);
        if (o.prefill)
            std::printf("prefill    %u tokens: median %.3f ms, p90 %.3f ms, %.0f tokens/s, %s%s\n", o.prefill,
                        prefill.median, prefill.p90, o.prefill / (prefill.median * 1e-3), flop_rate(prefill_tflops).c_str(),
                        ceil.measured ? (" (" + std::to_string((int)(100 * prefill_tflops / ceil.gemm_tflops)) + "% of GEMM)").c_str() : "");
        if (o.decode)
            std::printf("decode     batch %u from position %u, %u steps: median %.4f ms/step, p90 %.4f, %.1f tokens/s, %.0f GB/s%s\n",
                        o.batch, o.pos, o.decode, decode.median, decode.p90, o.batch / (decode.median * 1e-3), decode_gbps,
                        ceil.measured ? (" (" + std::to_string((int)(100 * decode_gbps / ceil.copy_gbps)) + "% of copy bandwidth)").c_str() : "");
        if (o.fwd_batch)
            std::printf("forward    %u x %u tokens, all logits: median %.4f ms, p90 %.4f ms\n", o.fwd_batch, o.fwd_tokens,
                        forward.median, forward.p90);
    }
    return 0;
}

} // namespace cli
