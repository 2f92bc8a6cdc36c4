// model.cpp - binds the file's tensors to the architecture's table (names, shapes and
// dtypes checked, nothing unexpected allowed), then hands the weights to the device.
#include "runtime/model.h"

#include "core/error.h"
#include "tokenizer/tokenizer.h"

#include <unordered_set>

namespace gpt {

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

void Model::bind_tensors(const format::WeightFile &f, ModelWeights &host) {
    const char *src = f.source().c_str();
    std::unordered_set<std::string> expected;
    for (const TensorSlot &slot : tensor_slots(config_, host)) {
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
        slot.dst->dtype = static_cast<DType>(t->dtype);
        slot.dst->rows = slot.shape[0];
        slot.dst->cols = slot.shape.size() > 1 ? slot.shape[1] : 1;
    }
    for (const auto &t : f.tensors())
        if (!expected.count(t.name))
            fail(GPT_ERR_FORMAT, "%s: unexpected tensor '%s' for a %s model with this config", src, t.name.c_str(),
                 arch_to_name(config_.arch));
    bind_tied_head(config_, host);
}

std::unique_ptr<Model> Model::load(std::unique_ptr<format::WeightFile> file, const gpt_model_params &params) {
    std::unique_ptr<Model> m(new Model());
    m->source_ = file->source();
    try {
        m->config_ = ModelConfig::from_metadata(file->metadata(), file->source());
        m->tok_data_ = TokenizerData::from_metadata(file->metadata(), m->config_.vocab_size, file->source());
    } catch (const Error &e) {
        // Typed metadata getters ("key 'x' has type u64, expected u32", "... is missing") do
        // not know the file; name it like every other load error.
        const std::string msg = e.what();
        if (msg.compare(0, m->source_.size(), m->source_) != 0) throw Error(e.status(), m->source_ + ": " + msg);
        throw;
    }
    if (m->tok_data_.kind != TokenizerKind::NONE) m->tokenizer_ = Tokenizer::create(m->tok_data_, file->source());

    ModelWeights host;
    m->bind_tensors(*file, host);
    m->file_dtype_ = host.tok_emb.dtype;

    if (params.weight_dtype > GPT_DTYPE_BF16)
        fail(GPT_ERR_INVALID_ARG, "weight_dtype %u is not a gpt_dtype", params.weight_dtype);
    m->device_ = open_device(params.device);
    const bool on_cpu = m->device_->ordinal() == GPT_DEVICE_CPU;
    m->weight_dtype_ = (on_cpu || params.weight_dtype == GPT_DTYPE_AUTO) ? m->file_dtype_ : static_cast<DType>(params.weight_dtype);
    m->device_->place_weights(m->config_, host, m->weight_dtype_, &m->weights_);
    if (!m->device_->keeps_host_weights()) file->release_data();
    m->file_ = std::move(file);
    return m;
}

uint64_t Model::host_bytes() const {
    // On the CPU the weights are the file's pages (mapped or read).
    return device_->keeps_host_weights() ? file_->size() : 0;
}

} // namespace gpt
