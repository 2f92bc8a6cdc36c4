// llama2c.cpp - llama2.c checkpoint header, layout and tensor plan (see llama2c.h).
#include "convert/llama2c.h"

#include "convert/fs_util.h"
#include "core/error.h"
#include "format/bytes.h"

#include <cstdlib>
#include <cstring>

namespace gpt::convert {


namespace {

constexpr uint32_t kMagicV1 = 0x616b3432; // "ak42"
constexpr uint64_t kV1HeaderBytes = 256;

int32_t i32_at(const uint8_t *p, size_t i) { return (int32_t)format::load_u32(p + 4 * i); }

// One float32 array of the checkpoint, in file order.
struct Section {
    const char *name;
    uint64_t count; // floats
    uint64_t offset = 0;
};

} // namespace

bool looks_like_llama2c(const uint8_t *p, uint64_t size) {
    if (size >= 8 && format::load_u32(p) == kMagicV1) return true;
    if (size < 28) return false;
    const int32_t dim = i32_at(p, 0), hidden = i32_at(p, 1), layers = i32_at(p, 2), heads = i32_at(p, 3), kv = i32_at(p, 4),
                  vocab = i32_at(p, 5), seq = i32_at(p, 6);
    return dim > 0 && hidden > 0 && layers > 0 && layers <= 1024 && heads > 0 && heads <= 1024 && kv > 0 && kv <= heads &&
           vocab != 0 && vocab > -(1 << 24) && vocab < (1 << 24) && seq > 0 && dim % heads == 0;
}

Llama2cHeader parse_llama2c_header(const uint8_t *p, uint64_t size, const std::string &source) {
    const char *src = source.c_str();
    Llama2cHeader h;
    const uint8_t *params = p;
    if (size >= 8 && format::load_u32(p) == kMagicV1) {
        const int32_t version = i32_at(p, 1);
        if (version != 1)
            fail(GPT_ERR_UNSUPPORTED, "%s: llama2.c export version %d is not supported (only float32 versions 0 and 1; "
                                      "version 2 is Q8_0 quantized)", src, version);
        if (size < kV1HeaderBytes) fail(GPT_ERR_FORMAT, "%s: truncated: the llama2.c v1 header needs 256 bytes, the file has %llu", src, (unsigned long long)size);
        h.version = 1;
        params = p + 8;
        h.shared_classifier = p[8 + 28] != 0;
        h.data_offset = kV1HeaderBytes;
    } else {
        if (size < 28) fail(GPT_ERR_FORMAT, "%s: truncated: %llu bytes, a llama2.c header needs 28", src, (unsigned long long)size);
        h.data_offset = 28;
    }
    const char *names[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
    int32_t v[7];
    for (int i = 0; i < 7; i++) v[i] = i32_at(params, i);
    for (int i = 0; i < 7; i++)
        if (i != 5 && v[i] <= 0) fail(GPT_ERR_FORMAT, "%s: llama2.c header field %s is %d (not a llama2.c checkpoint?)", src, names[i], v[i]);
    if (v[5] == 0 || v[5] == INT32_MIN) fail(GPT_ERR_FORMAT, "%s: llama2.c header field vocab_size is %d", src, v[5]);
    if (h.version == 0) h.shared_classifier = v[5] > 0;
    else if (v[5] < 0) fail(GPT_ERR_FORMAT, "%s: llama2.c v1 header has a negative vocab_size %d", src, v[5]);
    h.dim = (uint32_t)v[0];
    h.hidden_dim = (uint32_t)v[1];
    h.n_layers = (uint32_t)v[2];
    h.n_heads = (uint32_t)v[3];
    h.n_kv_heads = (uint32_t)v[4];
    h.vocab_size = (uint32_t)std::abs(v[5]);
    h.seq_len = (uint32_t)v[6];
    if (h.dim % h.n_heads != 0) fail(GPT_ERR_FORMAT, "%s: dim %u is not a multiple of n_heads %u", src, h.dim, h.n_heads);
    if (h.n_kv_heads > h.n_heads || h.n_heads % h.n_kv_heads != 0)
        fail(GPT_ERR_FORMAT, "%s: n_heads %u is not a multiple of n_kv_heads %u", src, h.n_heads, h.n_kv_heads);
    if ((h.dim / h.n_heads) % 2 != 0) fail(GPT_ERR_FORMAT, "%s: head size %u is odd; RoPE needs it even", src, h.dim / h.n_heads);
    return h;
}

TensorPlan plan_llama2c(const std::string &path) {
    const char *src = path.c_str();
    std::shared_ptr<MappedFile> file = MappedFile::open(path);
    const Llama2cHeader h = parse_llama2c_header(file->data(), file->size(), path);

    TensorPlan p;
    ModelConfig &c = p.config;
    c.arch = GPT_ARCH_LLAMA;
    c.n_layers = h.n_layers;
    c.d_model = h.dim;
    c.n_heads = h.n_heads;
    c.n_kv_heads = h.n_kv_heads;
    c.head_dim = h.dim / h.n_heads;
    c.d_ff = h.hidden_dim;
    c.vocab_size = h.vocab_size;
    c.context_length = h.seq_len;
    c.norm_eps = 1e-5f;      // run.c's rmsnorm
    c.rope_theta = 10000.0f; // run.c's RoPE base
    c.tied_head = h.shared_classifier;
    c.qkv_bias = false;
    c.bos_id = h.vocab_size > 1 ? 1 : -1; // run.c: BOS = 1, EOS = 2 (the SentencePiece ids of Llama 2)
    c.eos_id = h.vocab_size > 2 ? 2 : -1;
    // run.c ends a text at BOS too (its stories are separated by BOS): both end generation.
    if (c.eos_id >= 0) p.eos_ids = {c.eos_id, c.bos_id};
    c.validate(path); // bounds every product below far from overflow

    const uint64_t L = h.n_layers, d = h.dim, kvd = (uint64_t)h.n_kv_heads * c.head_dim, ff = h.hidden_dim, v = h.vocab_size;
    const uint64_t freq = (uint64_t)h.seq_len * (c.head_dim / 2);
    std::vector<Section> s;
    auto section = [&](const char *name, uint64_t count) { s.push_back(Section{name, count, 0}); };
    if (h.version == 0) {
        section("token_embedding_table", v * d);
        section("rms_att_weight", L * d);
        section("wq", L * d * d);
        section("wk", L * kvd * d);
        section("wv", L * kvd * d);
        section("wo", L * d * d);
        section("rms_ffn_weight", L * d);
        section("w1", L * ff * d);
        section("w2", L * d * ff);
        section("w3", L * ff * d);
        section("rms_final_weight", d);
        section("freq_cis_real", freq);
        section("freq_cis_imag", freq);
    } else {
        section("rms_att_weight", L * d);
        section("rms_ffn_weight", L * d);
        section("rms_final_weight", d);
        section("token_embedding_table", v * d);
        section("wq", L * d * d);
        section("wk", L * kvd * d);
        section("wv", L * kvd * d);
        section("wo", L * d * d);
        section("w1", L * ff * d);
        section("w2", L * d * ff);
        section("w3", L * ff * d);
    }
    if (!h.shared_classifier) section("wcls", v * d);
    uint64_t off = h.data_offset;
    for (Section &x : s) {
        x.offset = off;
        off += x.count * 4;
        if (off > file->size())
            fail(GPT_ERR_FORMAT, "%s: truncated: tensor '%s' ends at byte %llu but the file has %llu bytes (header: dim %u, hidden_dim %u, "
                                 "%u layers, %u heads, %u kv heads, vocab %u%s, seq_len %u)",
                 src, x.name, (unsigned long long)off, (unsigned long long)file->size(), h.dim, h.hidden_dim, h.n_layers, h.n_heads,
                 h.n_kv_heads, h.vocab_size, h.shared_classifier ? "" : " unshared", h.seq_len);
    }
    if (off != file->size())
        fail(GPT_ERR_FORMAT, "%s: %llu bytes after the last tensor '%s' (ends at %llu): the header's shapes do not describe this file",
             src, (unsigned long long)(file->size() - off), s.back().name, (unsigned long long)off);
    auto sec = [&](const char *name) -> const Section & {
        for (const Section &x : s)
            if (!std::strcmp(x.name, name)) return x;
        fail(GPT_ERR_INTERNAL, "no section %s", name);
    };
    // Layer i's [rows, cols] slice of a per-layer section (or the whole section when layer < 0).
    auto part = [&](const char *name, int64_t layer, uint64_t rows, uint64_t cols) {
        const Section &x = sec(name);
        SrcMatrix m;
        m.what = path + ": " + name + (layer >= 0 ? "[" + std::to_string(layer) + "]" : "");
        m.dtype = DType::F32;
        m.rows = rows;
        m.cols = cols;
        const uint64_t begin = x.offset + (layer >= 0 ? (uint64_t)layer * rows * cols * 4 : 0);
        m.data = file->data() + begin;
        m.avail = file->size() - begin;
        return m;
    };
    const std::vector<uint32_t> perm_q = rope_interleaved_to_half_perm(h.n_heads, c.head_dim);
    const std::vector<uint32_t> perm_k = rope_interleaved_to_half_perm(h.n_kv_heads, c.head_dim);

    auto add = [&](const std::string &name, std::vector<uint64_t> shape, std::vector<SrcMatrix> parts) {
        p.tensors.push_back(PlannedTensor{name, std::move(shape), std::move(parts)});
    };
    add("tok_emb.weight", {v, d}, {part("token_embedding_table", -1, v, d)});
    for (uint32_t i = 0; i < h.n_layers; i++) {
        const std::string o = "blk." + std::to_string(i) + ".";
        add(o + "attn_norm.weight", {d}, {part("rms_att_weight", i, d, 1)});
        SrcMatrix q = part("wq", i, d, d), k = part("wk", i, kvd, d);
        q.row_perm = perm_q;
        k.row_perm = perm_k;
        add(o + "attn_qkv.weight", {d + 2 * kvd, d}, {q, k, part("wv", i, kvd, d)});
        add(o + "attn_out.weight", {d, d}, {part("wo", i, d, d)});
        add(o + "ffn_norm.weight", {d}, {part("rms_ffn_weight", i, d, 1)});
        add(o + "ffn_gate_up.weight", {2 * ff, d}, {part("w1", i, ff, d), part("w3", i, ff, d)});
        add(o + "ffn_down.weight", {d, ff}, {part("w2", i, d, ff)});
    }
    add("out_norm.weight", {d}, {part("rms_final_weight", -1, d, 1)});
    if (!h.shared_classifier) add("lm_head.weight", {v, d}, {part("wcls", -1, v, d)});

    p.source = "llama2.c";
    p.inputs = path + " (llama2.c v" + std::to_string(h.version) + ")";
    p.source_dtype = DType::F32;
    p.keep_alive.push_back(file);
    return p;
}

} // namespace gpt::convert
