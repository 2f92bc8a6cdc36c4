// device_plan.cpp - the device facts and the memory plan of `gpt info` (device_plan.h).
#include "device_plan.h"

#include "cli.h"
#include "synthetic.h"

#include "backend/backend.h"
#include "core/error.h"
#include "core/printable.h"
#include "core/quant.h"
#include "core/system_memory.h"
#include "runtime/load_plan.h"
#include "runtime/memory_fit.h"

#include <memory>

namespace cli {

namespace {
double gib(uint64_t b) { return (double)b / (1ull << 30); }
const char *yes_no(uint32_t v) { return v ? "yes" : "no"; }

gpt_device_info device_facts(int32_t device) {
    gpt_device_info info;
    info.struct_size = sizeof info;
    if (gpt_device_get_info(device, &info) != GPT_OK) throw Failure(gpt_last_error());
    return info;
}
} // namespace

void print_device_facts(std::FILE *out, int32_t device, const char *indent) {
    const gpt_device_info i = device_facts(device);
    if (i.device == GPT_DEVICE_CPU) {
        std::fprintf(out, "%sdevice:  cpu, %u hardware threads\n", indent, i.multiprocessors);
        std::fprintf(out, "%smemory:  %.2f GiB total, %.2f GiB available (MemAvailable)\n", indent, gib(i.total_bytes),
                     gib(i.available_bytes));
        return;
    }
    std::fprintf(out, "%sdevice:  cuda:%d %s, compute capability %u.%u, %u SMs, %s\n", indent, i.device,
                 printable(i.name).c_str(), i.cc_major, i.cc_minor, i.multiprocessors,
                 i.integrated ? "integrated (shares the host's memory)" : "discrete");
    std::fprintf(out, "%smemory:  %.2f GiB total, %.2f GiB available%s; reads pageable host memory: %s, maps pinned host memory: %s\n",
                 indent, gib(i.total_bytes), gib(i.available_bytes), i.integrated ? " (MemAvailable: one pool with the host)" : "",
                 yes_no(i.pageable_access), yes_no(i.host_mapped));
}

std::string device_summary(int32_t device) {
    const gpt_device_info i = device_facts(device);
    char line[512];
    if (i.device == GPT_DEVICE_CPU)
        std::snprintf(line, sizeof line, "cpu, %u hardware threads, %.1f GiB, %.1f available", i.multiprocessors,
                      gib(i.total_bytes), gib(i.available_bytes));
    else
        std::snprintf(line, sizeof line, "cuda:%d %s, cc %u.%u, %u SMs, %s, %.1f GiB, %.1f available, pageable access %s, host-mapped %s",
                      i.device, printable(i.name).c_str(), i.cc_major, i.cc_minor, i.multiprocessors,
                      i.integrated ? "integrated" : "discrete", gib(i.total_bytes), gib(i.available_bytes),
                      yes_no(i.pageable_access), yes_no(i.host_mapped));
    return line;
}

int print_plan(const PlanRequest &r) {
    // The device present (if any): its facts decide the default weights mode and the fit.
    const bool cpu = r.device == GPT_DEVICE_CPU || (r.device == GPT_DEVICE_AUTO && gpt_cuda_device_count() == 0);
    const int32_t ordinal = cpu ? GPT_DEVICE_CPU : r.device == GPT_DEVICE_AUTO ? 0 : r.device;
    const bool present = cpu || ordinal < gpt_cuda_device_count();
    gpt_device_info facts{};
    if (present) facts = device_facts(ordinal);
    if (cpu && !r.weights.empty()) throw UsageError("--weights applies to a CUDA device (on the CPU the weights are the file)");
    const bool host_weights = r.weights.empty() ? (present && facts.integrated) : r.weights == "host";

    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.max_seq = r.ctx;
    cp.max_batch = r.batch;
    std::unique_ptr<gpt::Device> device = cpu ? gpt::make_cpu_device() : gpt::make_cuda_planner(host_weights);
    gpt::LoadPlan plan;
    std::string name;
    gpt::ModelConfig config;
    if (!r.synthetic.empty()) {
        const SyntheticShape *s = find_synthetic(r.synthetic);
        if (!s) throw UsageError("unknown synthetic shape '" + r.synthetic + "' (see gpt bench --help)");
        const uint32_t dtype = r.dtype == GPT_DTYPE_AUTO ? (uint32_t)GPT_DTYPE_F16 : r.dtype;
        config = synthetic_config(*s);
        auto describe = [&](const std::string &tensor, const std::vector<uint64_t> &shape, gpt::DType &d, uint32_t &g) {
            synthetic_tensor(dtype, tensor, shape, d, g);
        };
        plan = gpt::plan_load(config, describe, synthetic_file_bytes(*s, dtype), *device, GPT_DTYPE_AUTO, cp);
        name = r.synthetic;
    } else {
        gpt::format::ReadOptions opt;
        opt.verify_checksums = false; // the table and metadata (their crc32s are checked); no tensor is read
        const auto f = gpt::format::WeightFile::open(r.model, opt);
        config = gpt::ModelConfig::from_metadata(f->metadata(), f->source());
        plan = gpt::plan_load(*f, *device, r.dtype, cp);
        name = printable(r.model);
    }
    // Bytes one decode step reads at the last position: every weight but an untied token
    // embedding (of which one row is read), and K and V of every layer for every position.
    const uint64_t weights = plan.weight_host_bytes + plan.weight_device_bytes;
    const uint64_t kv_per_position = 2ull * config.n_layers * config.n_kv_heads * config.head_dim * gpt::dtype_bytes(plan.exec.kv);
    const uint64_t step_bytes = weights - (config.tied_head ? 0 : plan.embedding_bytes) + kv_per_position * plan.exec.max_seq;
    const uint64_t host = plan.weight_host_bytes + plan.context.host_bytes, dev = plan.weight_device_bytes + plan.context.device_bytes;
    // The fit, against the device present: one pool on an integrated GPU.
    const char *fit = "unknown (no such device here)";
    if (present) {
        gpt::MemoryPlan need;
        need.host_bytes = host;
        need.device_bytes = cpu ? 0 : dev;
        gpt::MemoryAvailable have;
        have.host_bytes = gpt::host_available_bytes();
        have.device_bytes = cpu ? 0 : facts.available_bytes;
        have.shared = facts.integrated;
        fit = gpt::check_memory_fit(need, have).short_of == gpt::MemoryFit::NONE ? "yes" : "no";
    }
    const char *where = cpu ? "cpu" : host_weights ? "host" : "device";
    if (r.json) {
        std::printf("{\"model\": \"%s\", \"file_dtype\": \"%s\", \"weight_dtype\": \"%s\", \"device\": \"%s\", "
                    "\"weights\": \"%s\", \"max_seq\": %u, \"max_batch\": %u, \"kv_dtype\": \"%s\", "
                    "\"weight_host_bytes\": %llu, \"weight_device_bytes\": %llu, \"context_host_bytes\": %llu, "
                    "\"context_device_bytes\": %llu, \"total_host_bytes\": %llu, \"total_device_bytes\": %llu, "
                    "\"total_bytes\": %llu, \"decode_bytes_per_token\": %llu, \"kv_bytes_per_position\": %llu, \"fits\": \"%s\"}\n",
                    name.c_str(), gpt::dtype_name(plan.file_dtype), gpt::dtype_name(plan.weight_dtype), cpu ? "cpu" : "cuda",
                    where, plan.exec.max_seq, plan.exec.max_batch, gpt::dtype_name(plan.exec.kv),
                    (unsigned long long)plan.weight_host_bytes, (unsigned long long)plan.weight_device_bytes,
                    (unsigned long long)plan.context.host_bytes, (unsigned long long)plan.context.device_bytes,
                    (unsigned long long)host, (unsigned long long)dev, (unsigned long long)(host + dev),
                    (unsigned long long)step_bytes, (unsigned long long)kv_per_position, fit);
        return 0;
    }
    if (present) print_device_facts(stdout, ordinal, "");
    else std::printf("device:  cuda:%d is not here: planned on paper with the CUDA backend's rules\n", ordinal);
    std::printf("plan:    %s, %s file, weights in %s memory%s, %s KV cache\n", name.c_str(), gpt::dtype_name(plan.file_dtype),
                cpu || host_weights ? "host" : "device", r.weights.empty() && !cpu ? " (the default here)" : "",
                gpt::dtype_name(plan.exec.kv));
    std::printf("  %-34s %12s %12s\n", "", "host GiB", "device GiB");
    std::printf("  %-34s %12.3f %12.3f\n", "weights", gib(plan.weight_host_bytes), gib(plan.weight_device_bytes));
    char ctx[64];
    std::snprintf(ctx, sizeof ctx, "context (max_seq %u x max_batch %u)", plan.exec.max_seq, plan.exec.max_batch);
    std::printf("  %-34s %12.3f %12.3f\n", ctx, gib(plan.context.host_bytes), gib(plan.context.device_bytes));
    std::printf("  %-34s %12.3f %12.3f   together %.3f GiB\n", "total", gib(host), gib(dev), gib(host + dev));
    std::printf("decode:  %.3f GiB read per token at position %u\n", gib(step_bytes), plan.exec.max_seq);
    std::printf("fits:    %s\n", fit);
    return present && std::string(fit) == "no" ? 1 : 0;
}

} // namespace cli
