// model.cpp - opens the weight file (creating the CUDA context meanwhile), binds its tensors
// to the architecture's table (names, shapes and dtypes checked, nothing unexpected allowed),
// then hands the weights to the device.
#include "runtime/model.h"

#include "core/error.h"
#include "format/keys.h"
#include "runtime/weight_source.h"
#include "tokenizer/tokenizer.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>
#include <unordered_set>

namespace gpt {

namespace {

void check_model_params(const gpt_model_params &p) {
    const uint32_t known = GPT_MODEL_SKIP_CHECKSUMS | GPT_MODEL_NO_MMAP | GPT_MODEL_COPY_BUFFER | GPT_MODEL_HOST_WEIGHTS |
                           GPT_MODEL_DEVICE_WEIGHTS;
    if (p.flags & ~known) fail(GPT_ERR_INVALID_ARG, "unknown gpt_model_params.flags 0x%x", p.flags & ~known);
    if ((p.flags & GPT_MODEL_HOST_WEIGHTS) && (p.flags & GPT_MODEL_DEVICE_WEIGHTS))
        fail(GPT_ERR_INVALID_ARG, "gpt_model_params.flags: GPT_MODEL_HOST_WEIGHTS and GPT_MODEL_DEVICE_WEIGHTS both set; choose one");
}

// Whether a load with these params will (try to) leave the weights in host memory for a GPU:
// asked for, or the default of an integrated GPU. Such a load reads the file into memory
// instead of mapping it: the GPU must read pinned pages, and pinning a file mapping's pages
// (cudaHostRegister) ran for minutes in the kernel on the H200 machine (112 MiB, Linux page
// cache); an anonymous buffer registers in milliseconds and costs the same resident memory.
bool host_weights_expected(const gpt_model_params &p) {
    if (p.device == GPT_DEVICE_CPU || (p.flags & GPT_MODEL_DEVICE_WEIGHTS)) return false;
    if (p.flags & GPT_MODEL_HOST_WEIGHTS) return true;
    const int ordinal = p.device == GPT_DEVICE_AUTO ? (cuda_device_count() > 0 ? 0 : -1) : p.device;
    return cuda_is_integrated(ordinal);
}

format::ReadOptions read_options(const gpt_model_params &p) {
    format::ReadOptions o;
    o.verify_checksums = !(p.flags & GPT_MODEL_SKIP_CHECKSUMS);
    o.check_finite = o.verify_checksums; // NaN/Inf weights: GPT_ERR_FORMAT, in the crc pass
    o.use_mmap = !(p.flags & GPT_MODEL_NO_MMAP) && !host_weights_expected(p);
    // Each tensor is checked when the device reaches it (Model::load): a device copying the
    // weights then checks a piece just before uploading it and drops its pages after, so the
    // whole file is never resident at once.
    o.defer_tensor_checks = true;
    return o;
}

// Opens the file with `open` while the CUDA context is created on another thread (it takes a
// good part of a second), then loads the model.
template <typename Open> std::unique_ptr<Model> open_and_load(const gpt_model_params &p, Open open) {
    check_model_params(p);
    std::thread warm;
    std::atomic<bool> warm_done{true};
    if (p.device != GPT_DEVICE_CPU) {
        try {
            warm_done = false;
            warm = std::thread([device = p.device, &warm_done] {
                cuda_warm_up(device);
                warm_done = true;
            });
        } catch (...) { // no thread: the context is simply created later
            warm_done = true;
        }
    }
    struct Join {
        std::thread &t;
        ~Join() {
            if (t.joinable()) t.join();
        }
    } join{warm};
    std::unique_ptr<format::WeightFile> file = open();
    // While the context is created the load checks whole tensors (Model::load); the thread
    // flips this when it is done.
    return Model::load(std::move(file), p, [&warm_done] { return warm_done.load(); });
}

} // namespace

Model::~Model() = default;

std::unique_ptr<Device> open_device(int32_t requested) {
    if (requested == GPT_DEVICE_CPU) return make_cpu_device();
    if (requested == GPT_DEVICE_AUTO) return cuda_device_count() > 0 ? make_cuda_device(0) : make_cpu_device();
    if (requested < 0) fail(GPT_ERR_INVALID_ARG, "device %d is not a CUDA ordinal, GPT_DEVICE_CPU or GPT_DEVICE_AUTO", requested);
    const int n = cuda_device_count();
    if (requested >= n)
        fail(GPT_ERR_UNSUPPORTED, "CUDA device %d requested but %d available (%s)", requested, n, cuda_build_info());
    return make_cuda_device(requested);
}

std::unique_ptr<Model> Model::load_file(const char *path, const gpt_model_params &p) {
    if (!path) fail(GPT_ERR_INVALID_ARG, "path is NULL");
    return open_and_load(p, [&] { return format::WeightFile::open(path, read_options(p)); });
}

std::unique_ptr<Model> Model::load_memory(const void *data, size_t size, const gpt_model_params &p) {
    return open_and_load(p, [&] {
        return format::WeightFile::from_memory(data, size, (p.flags & GPT_MODEL_COPY_BUFFER) != 0, read_options(p));
    });
}

std::vector<Weight *> Model::bind_tensors(const format::WeightFile &f, std::vector<const format::TensorEntry *> *entries) {
    const char *src = f.source().c_str();
    std::unordered_set<std::string> expected;
    std::vector<Weight *> bound;
    for (const TensorSlot &slot : arch_->tensors()) {
        expected.insert(slot.name);
        const format::TensorEntry *t = f.find(slot.name);
        if (!t) fail(GPT_ERR_FORMAT, "%s: tensor '%s' is missing", src, slot.name.c_str());
        bool same = t->ndim == slot.shape.size();
        for (uint32_t d = 0; same && d < t->ndim; d++) same = t->dims[d] == slot.shape[d];
        if (!same) {
            std::string want, got;
            for (uint64_t d : slot.shape) want += (want.empty() ? "" : ", ") + std::to_string(d);
            for (uint32_t d = 0; d < t->ndim; d++) got += (got.empty() ? "" : ", ") + std::to_string(t->dims[d]);
            fail(GPT_ERR_FORMAT, "%s: tensor '%s' has shape [%s], the config needs [%s]", src, slot.name.c_str(),
                 got.c_str(), want.c_str());
        }
        slot.dst->data = f.data(*t);
        slot.dst->dtype = t->dtype;
        slot.dst->group = t->group;
        slot.dst->rows = slot.shape[0];
        slot.dst->cols = slot.shape.size() > 1 ? slot.shape[1] : 1;
        bound.push_back(slot.dst);
        entries->push_back(t);
    }
    for (const auto &t : f.tensors())
        if (!expected.count(t.name))
            fail(GPT_ERR_FORMAT, "%s: unexpected tensor '%s' for a %s model with this config", src, t.name.c_str(),
                 arch_to_name(config_.arch));
    return bound;
}

std::unique_ptr<Model> Model::load(std::unique_ptr<format::WeightFile> file, const gpt_model_params &params,
                                   const std::function<bool()> &device_ready) {
    std::unique_ptr<Model> m(new Model());
    m->source_ = file->source();
    try {
        m->config_ = ModelConfig::from_metadata(file->metadata(), file->source());
        m->tok_data_ = TokenizerData::from_metadata(file->metadata(), m->config_.vocab_size, file->source());
        file->metadata().get_str(keys::kChatTemplate, &m->chat_template_); // rendered (and checked) only when used
    } catch (const Error &e) {
        // Typed metadata getters ("key 'x' has type u64, expected u32", "... is missing") do
        // not know the file; name it like every other load error.
        const std::string msg = e.what();
        if (msg.compare(0, m->source_.size(), m->source_) != 0) throw Error(e.status(), m->source_ + ": " + msg);
        throw;
    }
    if (m->tok_data_.kind != TokenizerKind::NONE) m->tokenizer_ = Tokenizer::create(m->tok_data_, file->source());

    m->arch_ = make_architecture(m->config_);
    m->shape_ = m->arch_->shape();
    std::vector<const format::TensorEntry *> entries;
    const std::vector<Weight *> weights = m->bind_tensors(*file, &entries);
    // The embedding's dtype names the file's (the converter writes one dtype throughout).
    m->file_dtype_ = weights.front()->dtype;

    if (params.weight_dtype != GPT_DTYPE_AUTO && !is_dtype(params.weight_dtype))
        fail(GPT_ERR_INVALID_ARG, "weight_dtype %u is not a gpt_dtype", params.weight_dtype);
    // Quantizing happens offline (gpt quantize), never at load: a quantized weight_dtype must
    // be the file's own.
    if (is_dtype(params.weight_dtype) && is_quantized(static_cast<DType>(params.weight_dtype)) &&
        static_cast<DType>(params.weight_dtype) != m->file_dtype_)
        fail(GPT_ERR_UNSUPPORTED, "weight_dtype %s asked for a %s file: quantize the file with `gpt quantize` instead",
             dtype_name(static_cast<DType>(params.weight_dtype)), dtype_name(m->file_dtype_));
    // The model owns the file before the device may register it, so the device (declared
    // after it) is destroyed, and unregisters it, first.
    m->file_ = std::move(file);
    const format::ReadOptions ro = read_options(params);
    FileWeightSource src(*m->file_, std::move(entries), ro.verify_checksums, ro.check_finite);
    // While another thread still creates the GPU's context (a few hundred ms), check whole
    // tensors in the order the device will upload them and let their pages go: the device
    // then skips them. (The CPU checks the whole file its own way.)
    if (params.device != GPT_DEVICE_CPU && ro.verify_checksums && device_ready)
        for (size_t i = 0; i < weights.size() && !device_ready(); i++) {
            const uint64_t n = src.stored_bytes(i);
            src.check(i, n);
            src.release(i, 0, n);
        }
    m->device_ = open_device(params.device);
    const DType want = params.weight_dtype == GPT_DTYPE_AUTO ? m->file_dtype_ : static_cast<DType>(params.weight_dtype);
    // Host weights: asked for, or an integrated GPU's default (its memory is the host's: a
    // device copy would hold the weights twice during the load, and no faster after).
    Placement how;
    how.want = want;
    how.host_weights = m->device_->ordinal() != GPT_DEVICE_CPU &&
                       ((params.flags & GPT_MODEL_HOST_WEIGHTS) ||
                        (!(params.flags & GPT_MODEL_DEVICE_WEIGHTS) && m->device_->integrated()));
    if (how.host_weights && want != m->file_dtype_)
        fail(GPT_ERR_UNSUPPORTED,
             "%s: weight_dtype %s asks to convert the %s weights, but with host weights%s the GPU reads them as the file "
             "stores them: load with GPT_MODEL_DEVICE_WEIGHTS (--weights device), or convert the file",
             m->source_.c_str(), dtype_name(want), dtype_name(m->file_dtype_),
             (params.flags & GPT_MODEL_HOST_WEIGHTS) ? "" : " (the default on an integrated GPU)");
    m->weight_dtype_ = m->device_->place_weights(weights, how, src);
    if (!src.all_checked()) fail(GPT_ERR_INTERNAL, "%s: the device %s left tensors unchecked", m->source_.c_str(), m->device_->name());
    if (!m->device_->keeps_host_weights()) m->file_->release_data();
    return m;
}

uint64_t Model::host_bytes() const {
    // On the CPU, and on a GPU reading them in place, the weights are the file's pages
    // (mapped or read; a borrowed buffer counted too).
    return device_->keeps_host_weights() ? file_->size() : 0;
}

gpt_model_info Model::info() const {
    const ModelConfig &c = config_;
    gpt_model_info i;
    std::memset(&i, 0, sizeof i);
    i.struct_size = sizeof i;
    i.arch = c.arch;
    i.n_layers = c.n_layers;
    i.d_model = c.d_model;
    i.n_heads = c.n_heads;
    i.n_kv_heads = c.n_kv_heads;
    i.head_dim = c.head_dim;
    i.d_ff = c.d_ff;
    i.vocab_size = c.vocab_size;
    i.context_length = c.context_length;
    i.file_dtype = (uint32_t)file_dtype_;
    i.weight_dtype = (uint32_t)weight_dtype_;
    i.device = device_->ordinal();
    i.bos_token = c.bos_id;
    i.eos_token = c.eos_id;
    i.flags = (c.tied_head ? GPT_MODEL_INFO_TIED_HEAD : 0) | (c.qkv_bias ? GPT_MODEL_INFO_QKV_BIAS : 0) |
              (tokenizer_ ? GPT_MODEL_INFO_HAS_TOKENIZER : 0) |
              (device_->ordinal() != GPT_DEVICE_CPU && device_->keeps_host_weights() ? GPT_MODEL_INFO_HOST_WEIGHTS : 0);
    i.norm_eps = c.norm_eps;
    i.rope_theta = c.rope_theta;
    i.n_params = parameter_count(c);
    i.host_bytes = host_bytes();
    i.device_bytes = device_bytes();
    std::snprintf(i.name, sizeof i.name, "%s", c.name.c_str());
    if (c.is_moe()) {
        i.n_experts = c.n_experts;
        i.n_experts_used = c.n_experts_used;
        i.d_ff_expert = c.d_ff_expert;
        i.d_ff_shared = c.d_ff_shared;
    }
    i.n_active_params = i.n_params - unused_expert_parameters(c);
    return i;
}

} // namespace gpt
