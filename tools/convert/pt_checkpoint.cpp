// pt_checkpoint.cpp - nanoGPT, minGPT and lecture checkpoints -> gpt2 tensors (see pt_checkpoint.h).
#include "convert/pt_checkpoint.h"

#include "convert/char_vocab.h"
#include "convert/fs_util.h"
#include "convert/pt_file.h"
#include "core/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

namespace gpt::convert {

namespace {

using pickle::Kind;
using pickle::TensorData;
using pickle::Value;

const std::string kCompiledPrefix = "_orig_mod.";

bool starts_with(const std::string &s, const std::string &p) { return s.compare(0, p.size(), p) == 0; }
bool ends_with(const std::string &s, const std::string &p) { return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0; }

std::string shape_str(const std::vector<uint64_t> &s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

// "a, b, c (and 12 more)"
std::string list_names(const std::vector<std::string> &names, size_t max = 8) {
    std::string r;
    for (size_t i = 0; i < names.size() && i < max; i++) r += (i ? ", " : "") + names[i];
    if (names.size() > max) r += " (and " + std::to_string(names.size() - max) + " more)";
    return r;
}

// A state dict's tensors by name (compile prefix removed), with their uses recorded.
class StateDict {
public:
    StateDict(const Value &dict, const std::string &src, TensorPlan &plan) : src_(src), plan_(plan) {
        for (const auto &[k, v] : dict.dict->entries) {
            if (!k->is(Kind::STR) || !v->is(Kind::TENSOR))
                fail(GPT_ERR_FORMAT, "%s: the state dict holds a %s under a %s key (tensors by name expected)", src_.c_str(),
                     pickle::kind_name(v->kind), pickle::kind_name(k->kind));
            std::string name = starts_with(k->s, kCompiledPrefix) ? k->s.substr(kCompiledPrefix.size()) : k->s;
            if (!tensors_.emplace(name, v->tensor.get()).second)
                fail(GPT_ERR_FORMAT, "%s: tensor '%s' appears twice (with and without '%s')", src_.c_str(), name.c_str(), kCompiledPrefix.c_str());
        }
    }
    const TensorData *find(const std::string &name) const {
        auto it = tensors_.find(name);
        return it == tensors_.end() ? nullptr : it->second;
    }
    bool has(const std::string &name) const { return find(name) != nullptr; }
    const TensorData &need(const std::string &name, const std::vector<uint64_t> &shape) {
        const TensorData *t = find(name);
        if (!t) fail(GPT_ERR_FORMAT, "%s: tensor '%s' is missing", src_.c_str(), name.c_str());
        if (t->shape != shape)
            fail(GPT_ERR_FORMAT, "%s: tensor '%s' has shape %s, expected %s", src_.c_str(), name.c_str(), shape_str(t->shape).c_str(),
                 shape_str(shape).c_str());
        used_.insert(name);
        return *t;
    }
    // Shape of a tensor that must exist (for deriving dimensions).
    const std::vector<uint64_t> &shape_of(const std::string &name, size_t dims) const {
        const TensorData *t = find(name);
        if (!t) fail(GPT_ERR_FORMAT, "%s: tensor '%s' is missing", src_.c_str(), name.c_str());
        if (t->shape.size() != dims)
            fail(GPT_ERR_FORMAT, "%s: tensor '%s' has shape %s, expected %zu dimensions", src_.c_str(), name.c_str(),
                 shape_str(t->shape).c_str(), dims);
        return t->shape;
    }
    SrcMatrix matrix(const std::string &name, uint64_t rows, uint64_t cols) { return view(name, need(name, {rows, cols}), rows, cols); }
    SrcMatrix vector(const std::string &name, uint64_t n) { return view(name, need(name, {n}), n, 1); }
    // The bias `name` if present, else zeros (exact: the script adds nothing).
    SrcMatrix vector_or_zero(const std::string &name, uint64_t n) { return has(name) ? vector(name, n) : zeros(name, n); }
    SrcMatrix zeros(const std::string &what, uint64_t n) {
        auto z = std::make_shared<std::vector<uint8_t>>(n * 4, 0);
        plan_.keep_alive.push_back(z);
        SrcMatrix m;
        m.what = src_ + ": zeros for absent '" + what + "'";
        m.dtype = DType::F32;
        m.rows = n;
        m.cols = 1;
        m.data = z->data();
        m.avail = z->size();
        return m;
    }
    // Whether two tensors are the same elements of the same storage (tied weights).
    bool same(const std::string &a, const std::string &b) const {
        const TensorData *x = find(a), *y = find(b);
        return x && y && x->storage == y->storage && x->offset == y->offset && x->shape == y->shape && x->stride == y->stride;
    }
    void mark_used(const std::string &name) { used_.insert(name); }
    // Names neither used nor skippable (attention mask buffers).
    std::vector<std::string> unused(const std::vector<std::string> &skip_suffixes) const {
        std::vector<std::string> out;
        for (const auto &[name, t] : tensors_) {
            if (used_.count(name)) continue;
            bool skip = false;
            for (const std::string &s : skip_suffixes) skip = skip || ends_with(name, s);
            if (!skip) out.push_back(name);
        }
        return out;
    }
    std::vector<std::string> names() const {
        std::vector<std::string> out;
        for (const auto &[name, t] : tensors_) out.push_back(name);
        return out;
    }

private:
    SrcMatrix view(const std::string &name, const TensorData &t, uint64_t rows, uint64_t cols) {
        const pickle::StorageData &s = *t.storage->storage;
        SrcMatrix m;
        m.what = src_ + ": tensor '" + name + "'";
        switch (s.type) {
        case pickle::StorageType::F32: m.dtype = DType::F32; break;
        case pickle::StorageType::F16: m.dtype = DType::F16; break;
        case pickle::StorageType::BF16: m.dtype = DType::BF16; break;
        default:
            fail(GPT_ERR_UNSUPPORTED, "%s: tensor '%s' is stored as %s; only float32, float16 and bfloat16 weights are converted",
                 src_.c_str(), name.c_str(), pickle::storage_type_name(s.type));
        }
        const uint64_t es = dtype_bytes(m.dtype);
        m.rows = rows;
        m.cols = cols;
        const uint64_t s0 = t.stride[0], s1 = t.shape.size() > 1 ? t.stride[1] : 1;
        const bool contiguous = (rows <= 1 || s0 == cols) && (cols <= 1 || s1 == 1);
        const bool transposed = t.shape.size() == 2 && rows > 1 && cols > 1 && s0 == 1 && s1 == rows;
        if (contiguous || transposed) {
            m.data = s.data + t.offset * es;
            m.avail = (s.numel - t.offset) * es; // check_tensor_extent: offset < numel
            m.transposed = transposed;
            return m;
        }
        // Any other view (a slice with gaps): gathered into a row-major copy, never larger than
        // the storage (a broadcast view, stride 0, could otherwise ask for any size).
        if (rows * cols > s.numel)
            fail(GPT_ERR_UNSUPPORTED, "%s: tensor '%s' has more elements (%llu) than its storage (%llu): a broadcast view",
                 src_.c_str(), name.c_str(), (unsigned long long)(rows * cols), (unsigned long long)s.numel);
        auto buf = std::make_shared<std::vector<uint8_t>>(rows * cols * es);
        plan_.keep_alive.push_back(buf);
        for (uint64_t r = 0; r < rows; r++)
            for (uint64_t c = 0; c < cols; c++)
                std::memcpy(buf->data() + (r * cols + c) * es, s.data + (t.offset + r * s0 + c * s1) * es, es);
        m.data = buf->data();
        m.avail = buf->size();
        return m;
    }

    std::string src_;
    TensorPlan &plan_;
    std::map<std::string, const TensorData *> tensors_;
    std::set<std::string> used_;
};

uint32_t dim_u32(uint64_t v, const char *what, const std::string &src) {
    if (v == 0 || v > (1u << 22)) fail(GPT_ERR_FORMAT, "%s: %s is %llu", src.c_str(), what, (unsigned long long)v);
    return (uint32_t)v;
}

int64_t int_arg(const Value &args, const char *key, const std::string &src) {
    const Value *v = args.get(key);
    if (!v || !v->is(Kind::INT)) fail(GPT_ERR_FORMAT, "%s: model_args['%s'] is missing or not an integer", src.c_str(), key);
    return v->i;
}

// Layers counted from "<prefix>N.<suffix>" names: 0..L-1 all present.
uint32_t count_layers(const StateDict &sd, const std::string &prefix, const std::string &suffix, const std::string &src) {
    uint32_t n = 0;
    while (n <= 1024 && sd.has(prefix + std::to_string(n) + suffix)) n++;
    if (n == 0) fail(GPT_ERR_FORMAT, "%s: no layer tensors ('%s0%s')", src.c_str(), prefix.c_str(), suffix.c_str());
    return n;
}

// Shared by nanoGPT and minGPT (the same names).
void plan_nanogpt_layout(StateDict &sd, TensorPlan &p, const std::string &src) {
    ModelConfig &c = p.config;
    const uint64_t d = c.d_model, v = c.vocab_size, ff = c.d_ff;
    auto add = [&](const std::string &name, std::vector<uint64_t> shape, std::vector<SrcMatrix> parts) {
        p.tensors.push_back(PlannedTensor{name, std::move(shape), std::move(parts)});
    };
    add("tok_emb.weight", {v, d}, {sd.matrix("transformer.wte.weight", v, d)});
    add("pos_emb.weight", {c.context_length, d}, {sd.matrix("transformer.wpe.weight", c.context_length, d)});
    for (uint32_t i = 0; i < c.n_layers; i++) {
        const std::string h = "transformer.h." + std::to_string(i) + ".", o = "blk." + std::to_string(i) + ".";
        add(o + "attn_norm.weight", {d}, {sd.vector(h + "ln_1.weight", d)});
        add(o + "attn_norm.bias", {d}, {sd.vector_or_zero(h + "ln_1.bias", d)});
        add(o + "attn_qkv.weight", {3 * d, d}, {sd.matrix(h + "attn.c_attn.weight", 3 * d, d)});
        add(o + "attn_qkv.bias", {3 * d}, {sd.vector_or_zero(h + "attn.c_attn.bias", 3 * d)});
        add(o + "attn_out.weight", {d, d}, {sd.matrix(h + "attn.c_proj.weight", d, d)});
        add(o + "attn_out.bias", {d}, {sd.vector_or_zero(h + "attn.c_proj.bias", d)});
        add(o + "ffn_norm.weight", {d}, {sd.vector(h + "ln_2.weight", d)});
        add(o + "ffn_norm.bias", {d}, {sd.vector_or_zero(h + "ln_2.bias", d)});
        add(o + "ffn_up.weight", {ff, d}, {sd.matrix(h + "mlp.c_fc.weight", ff, d)});
        add(o + "ffn_up.bias", {ff}, {sd.vector_or_zero(h + "mlp.c_fc.bias", ff)});
        add(o + "ffn_down.weight", {d, ff}, {sd.matrix(h + "mlp.c_proj.weight", d, ff)});
        add(o + "ffn_down.bias", {d}, {sd.vector_or_zero(h + "mlp.c_proj.bias", d)});
    }
    add("out_norm.weight", {d}, {sd.vector("transformer.ln_f.weight", d)});
    add("out_norm.bias", {d}, {sd.vector_or_zero("transformer.ln_f.bias", d)});
    // Tied when lm_head is wte's storage (nanoGPT) or absent; otherwise its own matrix.
    c.tied_head = !sd.has("lm_head.weight") || sd.same("lm_head.weight", "transformer.wte.weight");
    if (c.tied_head) {
        if (sd.has("lm_head.weight")) sd.need("lm_head.weight", {v, d});
    } else {
        add("lm_head.weight", {v, d}, {sd.matrix("lm_head.weight", v, d)});
    }
    const std::vector<std::string> extra = sd.unused({".attn.bias", ".attn.masked_bias"});
    if (!extra.empty()) fail(GPT_ERR_FORMAT, "%s: tensors this layout does not use: %s", src.c_str(), list_names(extra).c_str());
}

// GPT-2 shape shared by the three sources; n_layers, d_model, ... filled by the caller.
void gpt2_defaults(ModelConfig &c) {
    c.arch = GPT_ARCH_GPT2;
    c.norm_eps = 1e-5f; // nn.LayerNorm's default and nanoGPT's F.layer_norm
    c.qkv_bias = true;
    c.bos_id = -1;
    c.eos_id = -1;
}

// The vocabulary nanoGPT's sample.py would use: meta.pkl of the training set, else GPT-2's.
void nanogpt_vocab(const Value &root, const PtOptions &opt, TensorPlan &p) {
    std::string meta = opt.meta;
    if (meta.empty()) {
        const Value *config = root.get("config");
        const Value *dataset = config ? config->get("dataset") : nullptr;
        if (dataset && dataset->is(Kind::STR) && !dataset->s.empty() && dataset->s.find('/') == std::string::npos &&
            dataset->s != "." && dataset->s != "..") {
            const std::string guess = join_path(join_path("data", dataset->s), "meta.pkl");
            if (is_regular_file(guess)) meta = guess;
        }
    }
    if (meta.empty()) {
        p.warnings.push_back("no meta.pkl (data/<dataset>/meta.pkl from the current directory, or --meta PATH): the checkpoint "
                             "uses GPT-2's encoding, so name a GPT-2 tokenizer with --tokenizer (vocab.json + merges.txt or tokenizer.json)");
        return;
    }
    p.tokenizer = import_meta_pkl(meta);
    p.tokenizer_file = meta;
}

void plan_nanogpt(const Value &root, const PtOptions &opt, TensorPlan &p, const std::string &src) {
    const Value *model = root.get("model"), *args = root.get("model_args");
    if (!model->is(Kind::DICT) || !args->is(Kind::DICT)) fail(GPT_ERR_FORMAT, "%s: 'model' and 'model_args' are not dicts", src.c_str());
    StateDict sd(*model, src, p);
    ModelConfig &c = p.config;
    gpt2_defaults(c);
    c.n_layers = dim_u32((uint64_t)int_arg(*args, "n_layer", src), "model_args['n_layer']", src);
    c.n_heads = dim_u32((uint64_t)int_arg(*args, "n_head", src), "model_args['n_head']", src);
    c.d_model = dim_u32((uint64_t)int_arg(*args, "n_embd", src), "model_args['n_embd']", src);
    c.context_length = dim_u32((uint64_t)int_arg(*args, "block_size", src), "model_args['block_size']", src);
    c.vocab_size = dim_u32((uint64_t)int_arg(*args, "vocab_size", src), "model_args['vocab_size']", src);
    if (c.d_model % c.n_heads) fail(GPT_ERR_FORMAT, "%s: n_embd %u is not a multiple of n_head %u", src.c_str(), c.d_model, c.n_heads);
    c.n_kv_heads = c.n_heads;
    c.head_dim = c.d_model / c.n_heads;
    c.d_ff = 4 * c.d_model;
    c.ffn_activation = FfnActivation::GELU_ERF; // nn.GELU()
    c.validate(src);
    if (sd.has("transformer.h." + std::to_string(c.n_layers) + ".ln_1.weight"))
        fail(GPT_ERR_FORMAT, "%s: holds more layers than model_args['n_layer'] = %u", src.c_str(), c.n_layers);
    plan_nanogpt_layout(sd, p, src);
    nanogpt_vocab(root, opt, p);
    p.source = "pytorch:nanogpt";
}

// minGPT's model types (mingpt/model.py) -> n_head.
uint32_t mingpt_heads(const std::string &path, const PtOptions &opt, uint32_t n_layers, uint32_t d) {
    if (opt.n_head) return opt.n_head;
    const std::string cfg = join_path(dir_name(path), "config.json");
    if (!is_regular_file(cfg))
        fail(GPT_ERR_FORMAT, "%s: a minGPT state dict does not say its number of heads: put minGPT's config.json beside it or "
                             "give --n-head N", path.c_str());
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(read_text_file(cfg));
    } catch (const nlohmann::json::exception &e) {
        fail(GPT_ERR_FORMAT, "%s: not valid JSON (%s)", cfg.c_str(), e.what());
    }
    const nlohmann::json *m = j.is_object() && j.contains("model") && j["model"].is_object() ? &j["model"] : nullptr;
    if (m && m->contains("n_head") && (*m)["n_head"].is_number_unsigned()) return (*m)["n_head"].get<uint32_t>();
    if (m && m->contains("model_type") && (*m)["model_type"].is_string()) {
        static const struct { const char *type; uint32_t layers, heads, d; } kTypes[] = {
            {"openai-gpt", 12, 12, 768}, {"gpt2", 12, 12, 768}, {"gpt2-medium", 24, 16, 1024}, {"gpt2-large", 36, 20, 1280},
            {"gpt2-xl", 48, 25, 1600}, {"gopher-44m", 8, 16, 512}, {"gpt-mini", 6, 6, 192}, {"gpt-micro", 4, 4, 128},
            {"gpt-nano", 3, 3, 48}};
        const std::string t = (*m)["model_type"].get<std::string>();
        for (const auto &k : kTypes)
            if (t == k.type) {
                if (k.layers != n_layers || k.d != d)
                    fail(GPT_ERR_FORMAT, "%s: model_type '%s' has %u layers of width %u, the weights %u of width %u", cfg.c_str(),
                         t.c_str(), k.layers, k.d, n_layers, d);
                return k.heads;
            }
        fail(GPT_ERR_FORMAT, "%s: unknown minGPT model_type '%s'; give --n-head N", cfg.c_str(), t.c_str());
    }
    fail(GPT_ERR_FORMAT, "%s: has neither model.model_type nor model.n_head; give --n-head N", cfg.c_str());
}

void plan_mingpt(const Value &dict, const std::string &path, const PtOptions &opt, TensorPlan &p) {
    StateDict sd(dict, path, p);
    ModelConfig &c = p.config;
    gpt2_defaults(c);
    const std::vector<uint64_t> &wte = sd.shape_of("transformer.wte.weight", 2), &wpe = sd.shape_of("transformer.wpe.weight", 2);
    c.vocab_size = dim_u32(wte[0], "the vocabulary (wte rows)", path);
    c.d_model = dim_u32(wte[1], "n_embd (wte columns)", path);
    c.context_length = dim_u32(wpe[0], "block_size (wpe rows)", path);
    c.n_layers = count_layers(sd, "transformer.h.", ".ln_1.weight", path);
    c.n_heads = mingpt_heads(path, opt, c.n_layers, c.d_model);
    if (c.n_heads == 0 || c.d_model % c.n_heads)
        fail(GPT_ERR_FORMAT, "%s: n_embd %u is not a multiple of %u heads", path.c_str(), c.d_model, c.n_heads);
    c.n_kv_heads = c.n_heads;
    c.head_dim = c.d_model / c.n_heads;
    c.d_ff = 4 * c.d_model;
    c.ffn_activation = FfnActivation::GELU_TANH; // minGPT's NewGELU
    c.validate(path);
    plan_nanogpt_layout(sd, p, path);
    p.source = "pytorch:mingpt";
}

void plan_lecture(const Value &dict, const std::string &path, TensorPlan &p) {
    StateDict sd(dict, path, p);
    ModelConfig &c = p.config;
    gpt2_defaults(c);
    const std::vector<uint64_t> &tok = sd.shape_of("token_embedding_table.weight", 2), &pos = sd.shape_of("position_embedding_table.weight", 2);
    c.vocab_size = dim_u32(tok[0], "the vocabulary", path);
    c.d_model = dim_u32(tok[1], "n_embd", path);
    c.context_length = dim_u32(pos[0], "block_size", path);
    c.n_layers = count_layers(sd, "blocks.", ".ln1.weight", path);
    c.n_heads = count_layers(sd, "blocks.0.sa.heads.", ".key.weight", path);
    const uint64_t hs = sd.shape_of("blocks.0.sa.heads.0.key.weight", 2)[0];
    if (hs * c.n_heads != c.d_model)
        fail(GPT_ERR_FORMAT, "%s: %u heads of size %llu do not make n_embd %u", path.c_str(), c.n_heads, (unsigned long long)hs, c.d_model);
    c.n_kv_heads = c.n_heads;
    c.head_dim = (uint32_t)hs;
    c.d_ff = dim_u32(sd.shape_of("blocks.0.ffwd.net.0.weight", 2)[0], "the feed-forward width", path);
    c.ffn_activation = FfnActivation::RELU;
    c.head_bias = true;
    c.tied_head = false;
    c.validate(path);
    const uint64_t d = c.d_model, v = c.vocab_size, ff = c.d_ff;
    auto add = [&](const std::string &name, std::vector<uint64_t> shape, std::vector<SrcMatrix> parts) {
        p.tensors.push_back(PlannedTensor{name, std::move(shape), std::move(parts)});
    };
    add("tok_emb.weight", {v, d}, {sd.matrix("token_embedding_table.weight", v, d)});
    add("pos_emb.weight", {c.context_length, d}, {sd.matrix("position_embedding_table.weight", c.context_length, d)});
    for (uint32_t i = 0; i < c.n_layers; i++) {
        const std::string b = "blocks." + std::to_string(i) + ".", o = "blk." + std::to_string(i) + ".";
        add(o + "attn_norm.weight", {d}, {sd.vector(b + "ln1.weight", d)});
        add(o + "attn_norm.bias", {d}, {sd.vector_or_zero(b + "ln1.bias", d)});
        std::vector<SrcMatrix> qkv;
        for (const char *part : {"query", "key", "value"})
            for (uint32_t h = 0; h < c.n_heads; h++)
                qkv.push_back(sd.matrix(b + "sa.heads." + std::to_string(h) + "." + part + ".weight", hs, d));
        if (sd.has(b + "sa.heads." + std::to_string(c.n_heads) + ".key.weight"))
            fail(GPT_ERR_FORMAT, "%s: block %u has more heads than block 0 (%u)", path.c_str(), i, c.n_heads);
        add(o + "attn_qkv.weight", {3 * d, d}, std::move(qkv));
        add(o + "attn_qkv.bias", {3 * d}, {sd.zeros(b + "sa.heads.*.bias", 3 * d)});
        add(o + "attn_out.weight", {d, d}, {sd.matrix(b + "sa.proj.weight", d, d)});
        add(o + "attn_out.bias", {d}, {sd.vector_or_zero(b + "sa.proj.bias", d)});
        add(o + "ffn_norm.weight", {d}, {sd.vector(b + "ln2.weight", d)});
        add(o + "ffn_norm.bias", {d}, {sd.vector_or_zero(b + "ln2.bias", d)});
        add(o + "ffn_up.weight", {ff, d}, {sd.matrix(b + "ffwd.net.0.weight", ff, d)});
        add(o + "ffn_up.bias", {ff}, {sd.vector_or_zero(b + "ffwd.net.0.bias", ff)});
        add(o + "ffn_down.weight", {d, ff}, {sd.matrix(b + "ffwd.net.2.weight", d, ff)});
        add(o + "ffn_down.bias", {d}, {sd.vector_or_zero(b + "ffwd.net.2.bias", d)});
    }
    add("out_norm.weight", {d}, {sd.vector("ln_f.weight", d)});
    add("out_norm.bias", {d}, {sd.vector_or_zero("ln_f.bias", d)});
    add("lm_head.weight", {v, d}, {sd.matrix("lm_head.weight", v, d)});
    add("lm_head.bias", {v}, {sd.vector_or_zero("lm_head.bias", v)});
    const std::vector<std::string> extra = sd.unused({".tril"});
    if (!extra.empty()) fail(GPT_ERR_FORMAT, "%s: tensors this layout does not use: %s", path.c_str(), list_names(extra).c_str());
    p.source = "pytorch:gpt.py";
}

bool all_tensors(const Value &d) {
    for (const auto &[k, v] : d.dict->entries)
        if (!k->is(Kind::STR) || !v->is(Kind::TENSOR)) return false;
    return !d.dict->entries.empty();
}

bool has_tensor(const Value &d, const std::string &name) {
    const Value *v = d.get(name);
    if (!v) v = d.get(kCompiledPrefix + name);
    return v && v->is(Kind::TENSOR);
}

} // namespace

TensorPlan plan_pt_checkpoint(const std::string &path, const PtOptions &opt) {
    auto f = std::make_shared<PtFile>(open_pt(path));
    TensorPlan p;
    p.keep_alive.push_back(f);
    const Value &root = *f->root();
    const char *src = path.c_str();
    if (!root.is(Kind::DICT)) fail(GPT_ERR_FORMAT, "%s: holds a %s, not a checkpoint dict or a state dict", src, pickle::kind_name(root.kind));
    const Value *model = root.get("model");
    if (model && model->is(Kind::DICT) && root.get("model_args")) {
        plan_nanogpt(root, opt, p, path);
    } else if (all_tensors(root) && has_tensor(root, "transformer.wte.weight")) {
        plan_mingpt(root, path, opt, p);
    } else if (all_tensors(root) && has_tensor(root, "token_embedding_table.weight")) {
        plan_lecture(root, path, p);
    } else {
        std::vector<std::string> names;
        for (const auto &[k, v] : root.dict->entries)
            names.push_back(k->is(Kind::STR) ? k->s + (v->is(Kind::TENSOR) ? "" : " (" + std::string(pickle::kind_name(v->kind)) + ")") : "?");
        fail(GPT_ERR_FORMAT, "%s: not a nanoGPT checkpoint, a minGPT state dict or the lecture's gpt.py model; names not "
                             "recognised: %s", src, list_names(names).c_str());
    }
    p.source_dtype = dominant_dtype(p.tensors);
    p.inputs = path + " (PyTorch, " + p.source.substr(8) + ")";
    return p;
}

} // namespace gpt::convert
