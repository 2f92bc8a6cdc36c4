// test_convert.cpp - `gpt convert` end to end on checkpoints the test writes itself: Hugging
// Face directories (tests/support/hf_fixture: safetensors, single file and sharded with an
// index; config.json for gpt2, llama, mistral, qwen2, gemma2, gemma3_text; hf_moe_fixture:
// mixtral, qwen2_moe, olmoe, qwen3_moe, experts per module or fused) and llama2.c checkpoints
// (tests/support/llama2c_fixture: v0 and v1, shared and unshared classifier, GQA),
// converted to every dtype.
//
// Each output tensor must equal the source values transposed / fused / permuted as the
// converter promises (bit-exact for the same dtype, one round-to-nearest-even for a
// conversion), the metadata must carry the config, and the engine's logits on the
// converted file must match an independent naive double-precision forward pass
// (tests/support/reference) on the ORIGINAL tensors (Conv1D GPT-2, rotate-half Hugging Face
// Llama, and llama2.c's interleaved RoPE) within a relative error of 1e-4: for llama2.c
// this proves the RoPE row permutation, also when k has fewer heads than q.
//
// Every rejection (missing tensor, shape mismatch, unknown model_type, F64/I32 tensors,
// truncated shard or checkpoint, malformed JSON, bad safetensors headers, an existing OUT
// without --force, an interrupt) must fail with a message naming the file and the tensor
// and leave no file behind, temporary or not. The `gpt` binary runs once (GPT_TOOL).
#include "gpt.h"

#include "convert/chat_template_import.h"
#include "convert/convert.h"
#include "convert/hf_config.h"
#include "convert/safetensors.h"
#include "core/error.h"
#include "core/quant.h"
#include "format/keys.h"
#include "format/quantize.h"
#include "format/reader.h"
#include "dtype_values.h"
#include "engine.h"
#include "files.h"
#include "hf_fixture.h"
#include "hf_moe_fixture.h"
#include "llama2c_fixture.h"
#include "model/config.h"
#include "reference.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <map>
#include <random>
#include <spawn.h>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

// cmocka last: it defines a fail() macro.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}

extern char **environ;

using gpt::DType;
using nlohmann::json;
namespace cv = gpt::convert;
using fixture::HfModel;
using fixture::HfMoeModel;
using fixture::HfMoeSpec;
using fixture::HfSpec;
using fixture::L2cModel;
using fixture::L2cSpec;
using fixture::StEntry;
using fixture::decode_one;
using fixture::encode;
using fixture::make_hf;
using fixture::make_l2c;
using fixture::rounded;
using fixture::safetensors_bytes;
using fixture::shard_name;
using fixture::write_hf_dir;
using files::exists;
using files::list_dir;
using files::make_temp_dir;
using files::read_bytes;
using files::read_text;
using files::remove_tree;
using files::write_bytes;
using files::write_text;

namespace {

// Engine (f32 arithmetic) against the double reference computed on the same (rounded)
// weights: max |out - ref| / max |ref| over all logits.
constexpr double kLogitTolerance = 1e-4;

const DType kAllDTypes[] = {DType::F32, DType::F16, DType::BF16};

const char *dt_name(DType t) { return t == DType::F32 ? "f32" : t == DType::F16 ? "f16" : "bf16"; }
uint32_t gpt_dtype_of(DType t) { return t == DType::F32 ? GPT_DTYPE_F32 : t == DType::F16 ? GPT_DTYPE_F16 : GPT_DTYPE_BF16; }

// A scratch directory: src/ for the checkpoint, out/ for the converter's output.
struct Scratch {
    std::string root, src, out;
    Scratch() : root(make_temp_dir("gpt-convert-test-")), src(root + "/src"), out(root + "/out") {
        mkdir(src.c_str(), 0755);
        mkdir(out.c_str(), 0755);
    }
    ~Scratch() { remove_tree(root); }
    std::string in_src(const std::string &n) const { return src + "/" + n; }
    std::string in_out(const std::string &n) const { return out + "/" + n; }
};

// ------------------------------------------------------------ expected output tensors

struct Want {
    std::vector<uint64_t> shape;
    std::vector<float> values; // exact source values
    bool f32 = false;          // stored f32 whatever the file's dtype (Gemma's norms)
};
using WantMap = std::map<std::string, Want>;

std::vector<float> transpose(const std::vector<float> &x, uint64_t rows, uint64_t cols) { // [rows][cols] -> [cols][rows]
    std::vector<float> o(x.size());
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t c = 0; c < cols; c++) o[c * rows + r] = x[r * cols + c];
    return o;
}

std::vector<float> concat(std::initializer_list<const std::vector<float> *> parts) {
    std::vector<float> o;
    for (const auto *p : parts) o.insert(o.end(), p->begin(), p->end());
    return o;
}

WantMap expected_hf(const HfModel &m) {
    const HfSpec &s = m.spec;
    const uint64_t d = s.d, v = s.vocab, ff = s.ff;
    WantMap w;
    if (s.type == "gpt2") {
        const std::string p = s.prefix ? "transformer." : "";
        w["tok_emb.weight"] = {{v, d}, m.v(p + "wte.weight")};
        w["pos_emb.weight"] = {{s.ctx, d}, m.v(p + "wpe.weight")};
        for (uint32_t i = 0; i < s.layers; i++) {
            const std::string h = p + "h." + std::to_string(i) + ".", o = "blk." + std::to_string(i) + ".";
            w[o + "attn_norm.weight"] = {{d}, m.v(h + "ln_1.weight")};
            w[o + "attn_norm.bias"] = {{d}, m.v(h + "ln_1.bias")};
            w[o + "attn_qkv.weight"] = {{3 * d, d}, transpose(m.v(h + "attn.c_attn.weight"), d, 3 * d)};
            w[o + "attn_qkv.bias"] = {{3 * d}, m.v(h + "attn.c_attn.bias")};
            w[o + "attn_out.weight"] = {{d, d}, transpose(m.v(h + "attn.c_proj.weight"), d, d)};
            w[o + "attn_out.bias"] = {{d}, m.v(h + "attn.c_proj.bias")};
            w[o + "ffn_norm.weight"] = {{d}, m.v(h + "ln_2.weight")};
            w[o + "ffn_norm.bias"] = {{d}, m.v(h + "ln_2.bias")};
            w[o + "ffn_up.weight"] = {{ff, d}, transpose(m.v(h + "mlp.c_fc.weight"), d, ff)};
            w[o + "ffn_up.bias"] = {{ff}, m.v(h + "mlp.c_fc.bias")};
            w[o + "ffn_down.weight"] = {{d, ff}, transpose(m.v(h + "mlp.c_proj.weight"), ff, d)};
            w[o + "ffn_down.bias"] = {{d}, m.v(h + "mlp.c_proj.bias")};
        }
        w["out_norm.weight"] = {{d}, m.v(p + "ln_f.weight")};
        w["out_norm.bias"] = {{d}, m.v(p + "ln_f.bias")};
        if (!s.tied) w["lm_head.weight"] = {{v, d}, m.v("lm_head.weight")};
        return w;
    }
    const uint64_t hd = m.hd(), qd = s.heads * hd, kvd = s.kv * hd;
    w["tok_emb.weight"] = {{v, d}, m.v("model.embed_tokens.weight")};
    if (m.gemma()) {
        // Norms: 1 + w computed in f32 (transformers' 1.0 + weight.float()), stored f32.
        auto norm = [&](const std::string &hf_name, uint64_t n) {
            std::vector<float> x = m.v(hf_name);
            for (float &e : x) e = 1.0f + e;
            return Want{{n}, x, true};
        };
        for (uint32_t i = 0; i < s.layers; i++) {
            const std::string h = "model.layers." + std::to_string(i) + ".", o = "blk." + std::to_string(i) + ".";
            w[o + "attn_norm.weight"] = norm(h + "input_layernorm.weight", d);
            w[o + "attn_qkv.weight"] = {{qd + 2 * kvd, d},
                                        concat({&m.v(h + "self_attn.q_proj.weight"), &m.v(h + "self_attn.k_proj.weight"),
                                                &m.v(h + "self_attn.v_proj.weight")})};
            if (s.type == "gemma3_text") {
                w[o + "attn_q_norm.weight"] = norm(h + "self_attn.q_norm.weight", hd);
                w[o + "attn_k_norm.weight"] = norm(h + "self_attn.k_norm.weight", hd);
            }
            w[o + "attn_out.weight"] = {{d, qd}, m.v(h + "self_attn.o_proj.weight")};
            w[o + "attn_post_norm.weight"] = norm(h + "post_attention_layernorm.weight", d);
            w[o + "ffn_norm.weight"] = norm(h + "pre_feedforward_layernorm.weight", d);
            w[o + "ffn_gate_up.weight"] = {{2 * ff, d}, concat({&m.v(h + "mlp.gate_proj.weight"), &m.v(h + "mlp.up_proj.weight")})};
            w[o + "ffn_down.weight"] = {{d, ff}, m.v(h + "mlp.down_proj.weight")};
            w[o + "ffn_post_norm.weight"] = norm(h + "post_feedforward_layernorm.weight", d);
        }
        w["out_norm.weight"] = norm("model.norm.weight", d);
        return w;
    }
    for (uint32_t i = 0; i < s.layers; i++) {
        const std::string h = "model.layers." + std::to_string(i) + ".", o = "blk." + std::to_string(i) + ".";
        w[o + "attn_norm.weight"] = {{d}, m.v(h + "input_layernorm.weight")};
        if (s.type == "phi3") // already fused, q | k | v
            w[o + "attn_qkv.weight"] = {{qd + 2 * kvd, d}, m.v(h + "self_attn.qkv_proj.weight")};
        else
            w[o + "attn_qkv.weight"] = {{qd + 2 * kvd, d},
                                        concat({&m.v(h + "self_attn.q_proj.weight"), &m.v(h + "self_attn.k_proj.weight"),
                                                &m.v(h + "self_attn.v_proj.weight")})};
        if (s.type == "qwen3") {
            w[o + "attn_q_norm.weight"] = {{hd}, m.v(h + "self_attn.q_norm.weight")};
            w[o + "attn_k_norm.weight"] = {{hd}, m.v(h + "self_attn.k_norm.weight")};
        }
        if (s.type == "qwen2")
            w[o + "attn_qkv.bias"] = {{qd + 2 * kvd},
                                      concat({&m.v(h + "self_attn.q_proj.bias"), &m.v(h + "self_attn.k_proj.bias"),
                                              &m.v(h + "self_attn.v_proj.bias")})};
        w[o + "attn_out.weight"] = {{d, qd}, m.v(h + "self_attn.o_proj.weight")};
        w[o + "ffn_norm.weight"] = {{d}, m.v(h + "post_attention_layernorm.weight")};
        if (s.type == "phi3") // already fused, gate | up
            w[o + "ffn_gate_up.weight"] = {{2 * ff, d}, m.v(h + "mlp.gate_up_proj.weight")};
        else
            w[o + "ffn_gate_up.weight"] = {{2 * ff, d}, concat({&m.v(h + "mlp.gate_proj.weight"), &m.v(h + "mlp.up_proj.weight")})};
        w[o + "ffn_down.weight"] = {{d, ff}, m.v(h + "mlp.down_proj.weight")};
    }
    w["out_norm.weight"] = {{d}, m.v("model.norm.weight")};
    if (!s.tied) w["lm_head.weight"] = {{v, d}, m.v("lm_head.weight")};
    return w;
}

// ------------------------------------------------------------ llama2.c expectations

// Rotate-half rows from interleaved ones, written from the definition: within each head,
// output row i (i < hd/2) is input row 2i and output row hd/2 + i is input row 2i + 1.
std::vector<float> permute_rope_rows(const std::vector<float> &w, uint32_t n_heads, uint32_t hd, uint32_t cols) {
    std::vector<float> o(w.size());
    for (uint32_t h = 0; h < n_heads; h++)
        for (uint32_t i = 0; i < hd / 2; i++)
            for (uint32_t t = 0; t < 2; t++) {
                const size_t dst = (size_t)h * hd + t * (hd / 2) + i, src = (size_t)h * hd + 2 * i + t;
                std::memcpy(&o[dst * cols], &w[src * cols], cols * sizeof(float));
            }
    return o;
}

WantMap expected_l2c(const L2cModel &m) {
    const L2cSpec &s = m.spec;
    const uint64_t d = s.dim, hs = m.hs(), kvd = s.kv * hs, ff = s.hidden, v = s.vocab;
    WantMap w;
    w["tok_emb.weight"] = {{v, d}, m.at("emb")};
    for (uint32_t l = 0; l < s.layers; l++) {
        const std::string L = "." + std::to_string(l), o = "blk." + std::to_string(l) + ".";
        const auto q = permute_rope_rows(m.at("wq" + L), s.heads, (uint32_t)hs, (uint32_t)d);
        const auto k = permute_rope_rows(m.at("wk" + L), s.kv, (uint32_t)hs, (uint32_t)d);
        w[o + "attn_norm.weight"] = {{d}, m.at("rms_att" + L)};
        w[o + "attn_qkv.weight"] = {{d + 2 * kvd, d}, concat({&q, &k, &m.at("wv" + L)})};
        w[o + "attn_out.weight"] = {{d, d}, m.at("wo" + L)};
        w[o + "ffn_norm.weight"] = {{d}, m.at("rms_ffn" + L)};
        w[o + "ffn_gate_up.weight"] = {{2 * ff, d}, concat({&m.at("w1" + L), &m.at("w3" + L)})};
        w[o + "ffn_down.weight"] = {{d, ff}, m.at("w2" + L)};
    }
    w["out_norm.weight"] = {{d}, m.at("rms_final")};
    if (!s.shared) w["lm_head.weight"] = {{v, d}, m.at("wcls")};
    return w;
}

// ------------------------------------------------- the reference on the ORIGINAL tensors

// What tests/support/reference runs: the source checkpoint's tensors under the weight file's
// names, each rounded to the dtype the engine runs (t), laid out as the SOURCE stores them
// (GPT-2's Conv1D matrices [in][out]; llama2.c's q and k rows in their interleaved order,
// with interleaved RoPE), so the reference checks the converter's transposes and row
// permutations rather than repeating them. Only row concatenations (q|k|v, gate|up) are
// done here, as the weight file fuses them.
struct RefInput {
    gpt::ModelConfig config;
    reference::TensorMap tensors;
    reference::Layout layout;
    std::vector<double> forward(const std::vector<int32_t> &toks) const { return reference::forward(config, tensors, toks, layout); }
};

gpt_arch hf_arch(const std::string &type) {
    if (type == "gpt2") return GPT_ARCH_GPT2;
    if (type == "qwen3") return GPT_ARCH_QWEN3;
    if (type == "phi3") return GPT_ARCH_PHI3;
    if (type == "gemma2") return GPT_ARCH_GEMMA2;
    if (type == "gemma3_text") return GPT_ARCH_GEMMA3;
    return GPT_ARCH_LLAMA;
}

RefInput reference_input(const HfModel &m, DType t) {
    const HfSpec &s = m.spec;
    const bool gpt2 = s.type == "gpt2";
    RefInput r;
    gpt::ModelConfig &c = r.config;
    c.arch = hf_arch(s.type);
    c.n_layers = s.layers, c.d_model = s.d, c.n_heads = s.heads, c.n_kv_heads = gpt2 ? s.heads : s.kv, c.head_dim = m.hd();
    c.d_ff = s.ff, c.vocab_size = s.vocab, c.context_length = s.ctx, c.norm_eps = s.eps, c.rope_theta = gpt2 ? 0.0f : s.theta;
    c.tied_head = s.tied, c.qkv_bias = gpt2 || s.type == "qwen2";
    c.rope_dim = s.rope_dim, c.rope_scaling = s.scaling;
    r.layout.conv1d = gpt2;
    r.layout.embed_dtype = t;
    // Windows as transformers applies them (HfModel::windowed states each type's rule), in the
    // file's form: no window when no layer has one or (but for Gemma-3, whose windowed layers
    // also pick the local RoPE) it is no shorter than the context; no per-layer list when every
    // layer has it.
    bool any = false, all = true;
    for (uint32_t i = 0; i < s.layers && !gpt2; i++) {
        c.window_layers.push_back(m.windowed(i));
        any = any || m.windowed(i);
        all = all && m.windowed(i);
    }
    any = any && (s.sliding_window < s.ctx || s.type == "gemma3_text");
    c.sliding_window = any ? s.sliding_window : 0;
    if (!any || all) c.window_layers.clear();
    auto put = [&](const std::string &name, const std::vector<float> &v) { r.tensors[name] = rounded(v, t); };
    if (gpt2) {
        const std::string p = s.prefix ? "transformer." : "";
        put("tok_emb.weight", m.v(p + "wte.weight"));
        put("pos_emb.weight", m.v(p + "wpe.weight"));
        for (uint32_t i = 0; i < s.layers; i++) {
            const std::string h = p + "h." + std::to_string(i) + ".", o = "blk." + std::to_string(i) + ".";
            put(o + "attn_norm.weight", m.v(h + "ln_1.weight"));
            put(o + "attn_norm.bias", m.v(h + "ln_1.bias"));
            put(o + "attn_qkv.weight", m.v(h + "attn.c_attn.weight")); // [d][3d]
            put(o + "attn_qkv.bias", m.v(h + "attn.c_attn.bias"));
            put(o + "attn_out.weight", m.v(h + "attn.c_proj.weight"));
            put(o + "attn_out.bias", m.v(h + "attn.c_proj.bias"));
            put(o + "ffn_norm.weight", m.v(h + "ln_2.weight"));
            put(o + "ffn_norm.bias", m.v(h + "ln_2.bias"));
            put(o + "ffn_up.weight", m.v(h + "mlp.c_fc.weight"));
            put(o + "ffn_up.bias", m.v(h + "mlp.c_fc.bias"));
            put(o + "ffn_down.weight", m.v(h + "mlp.c_proj.weight"));
            put(o + "ffn_down.bias", m.v(h + "mlp.c_proj.bias"));
        }
        put("out_norm.weight", m.v(p + "ln_f.weight"));
        put("out_norm.bias", m.v(p + "ln_f.bias"));
        if (!s.tied) put("lm_head.weight", m.v("lm_head.weight"));
        return r;
    }
    put("tok_emb.weight", m.v("model.embed_tokens.weight"));
    if (m.gemma()) {
        const bool g3 = s.type == "gemma3_text";
        c.arch = g3 ? GPT_ARCH_GEMMA3 : GPT_ARCH_GEMMA2;
        c.tied_head = true, c.qkv_bias = false, c.embed_scale = true;
        c.attn_softcap = s.attn_softcap, c.logit_softcap = s.logit_softcap, c.query_pre_attn_scalar = s.query_pre_attn_scalar;
        if (g3) c.rope_theta_local = s.theta_local;
        if (g3 && s.linear_factor != 1) c.rope_scaling.type = gpt::RopeScalingType::LINEAR, c.rope_scaling.factor = s.linear_factor;
        // Gemma's RMSNorm scales by (1 + w), computed in f32 from the stored weight.
        auto norm = [&](const std::string &name, const std::string &hf_name) {
            std::vector<float> x = m.v(hf_name);
            for (float &e : x) e = 1.0f + e;
            r.tensors[name] = x;
        };
        for (uint32_t i = 0; i < s.layers; i++) {
            const std::string h = "model.layers." + std::to_string(i) + ".", a = h + "self_attn.", o = "blk." + std::to_string(i) + ".";
            norm(o + "attn_norm.weight", h + "input_layernorm.weight");
            put(o + "attn_qkv.weight", concat({&m.v(a + "q_proj.weight"), &m.v(a + "k_proj.weight"), &m.v(a + "v_proj.weight")}));
            if (g3) {
                norm(o + "attn_q_norm.weight", a + "q_norm.weight");
                norm(o + "attn_k_norm.weight", a + "k_norm.weight");
            }
            put(o + "attn_out.weight", m.v(a + "o_proj.weight"));
            norm(o + "attn_post_norm.weight", h + "post_attention_layernorm.weight");
            norm(o + "ffn_norm.weight", h + "pre_feedforward_layernorm.weight");
            put(o + "ffn_gate_up.weight", concat({&m.v(h + "mlp.gate_proj.weight"), &m.v(h + "mlp.up_proj.weight")}));
            put(o + "ffn_down.weight", m.v(h + "mlp.down_proj.weight"));
            norm(o + "ffn_post_norm.weight", h + "post_feedforward_layernorm.weight");
        }
        norm("out_norm.weight", "model.norm.weight");
        return r;
    }
    for (uint32_t i = 0; i < s.layers; i++) {
        const std::string h = "model.layers." + std::to_string(i) + ".", a = h + "self_attn.", o = "blk." + std::to_string(i) + ".";
        put(o + "attn_norm.weight", m.v(h + "input_layernorm.weight"));
        if (s.type == "phi3") put(o + "attn_qkv.weight", m.v(a + "qkv_proj.weight"));
        else put(o + "attn_qkv.weight", concat({&m.v(a + "q_proj.weight"), &m.v(a + "k_proj.weight"), &m.v(a + "v_proj.weight")}));
        if (s.type == "qwen3") {
            put(o + "attn_q_norm.weight", m.v(a + "q_norm.weight"));
            put(o + "attn_k_norm.weight", m.v(a + "k_norm.weight"));
        }
        if (s.type == "qwen2")
            put(o + "attn_qkv.bias", concat({&m.v(a + "q_proj.bias"), &m.v(a + "k_proj.bias"), &m.v(a + "v_proj.bias")}));
        put(o + "attn_out.weight", m.v(a + "o_proj.weight"));
        put(o + "ffn_norm.weight", m.v(h + "post_attention_layernorm.weight"));
        if (s.type == "phi3") put(o + "ffn_gate_up.weight", m.v(h + "mlp.gate_up_proj.weight"));
        else put(o + "ffn_gate_up.weight", concat({&m.v(h + "mlp.gate_proj.weight"), &m.v(h + "mlp.up_proj.weight")}));
        put(o + "ffn_down.weight", m.v(h + "mlp.down_proj.weight"));
    }
    put("out_norm.weight", m.v("model.norm.weight"));
    if (!s.tied) put("lm_head.weight", m.v("lm_head.weight"));
    return r;
}

// llama2.c's run.c forward: interleaved RoPE on the original wq / wk, w1 gate, w3 up.
RefInput reference_input(const L2cModel &m, DType t) {
    const L2cSpec &s = m.spec;
    RefInput r;
    gpt::ModelConfig &c = r.config;
    c.arch = GPT_ARCH_LLAMA;
    c.n_layers = s.layers, c.d_model = s.dim, c.n_heads = s.heads, c.n_kv_heads = s.kv, c.head_dim = m.hs();
    c.d_ff = s.hidden, c.vocab_size = s.vocab, c.context_length = s.seq, c.norm_eps = 1e-5f, c.rope_theta = 10000.0f;
    c.tied_head = s.shared, c.qkv_bias = false;
    r.layout.interleaved_rope = true;
    auto put = [&](const std::string &name, const std::vector<float> &v) { r.tensors[name] = rounded(v, t); };
    put("tok_emb.weight", m.at("emb"));
    for (uint32_t l = 0; l < s.layers; l++) {
        const std::string L = "." + std::to_string(l), o = "blk." + std::to_string(l) + ".";
        put(o + "attn_norm.weight", m.at("rms_att" + L));
        put(o + "attn_qkv.weight", concat({&m.at("wq" + L), &m.at("wk" + L), &m.at("wv" + L)}));
        put(o + "attn_out.weight", m.at("wo" + L));
        put(o + "ffn_norm.weight", m.at("rms_ffn" + L));
        put(o + "ffn_gate_up.weight", concat({&m.at("w1" + L), &m.at("w3" + L)}));
        put(o + "ffn_down.weight", m.at("w2" + L));
    }
    put("out_norm.weight", m.at("rms_final"));
    if (!s.shared) put("lm_head.weight", m.at("wcls"));
    return r;
}

// ------------------------------------------------------------------ running and checking

struct Run {
    gpt_status status = GPT_OK;
    std::string message;
    std::vector<std::string> warnings;
    cv::ConvertResult result;
};

Run convert(const std::string &src, const std::string &out, uint32_t dtype = GPT_DTYPE_AUTO, bool force = false,
            const std::string &tokenizer = "", const volatile std::sig_atomic_t *stop = nullptr) {
    Run r;
    cv::ConvertOptions o;
    o.src = src;
    o.out = out;
    o.dtype = dtype;
    o.force = force;
    o.tokenizer = tokenizer;
    o.stop = stop;
    o.verify_threads = 2;
    o.on_warning = [&](const std::string &w) { r.warnings.push_back(w); };
    try {
        r.result = cv::convert_model(o);
    } catch (const gpt::Error &e) {
        r.status = e.status();
        r.message = e.what();
    }
    return r;
}

void expect_ok(const Run &r, const char *what) {
    if (r.status != GPT_OK) fail_msg("%s: conversion failed: %s (%s)", what, r.message.c_str(), gpt_status_str(r.status));
}

// Each output tensor: the expected shape, the requested dtype, and exactly the source
// values rounded once to it; nothing else in the file.
void check_tensors(const std::string &path, const WantMap &want, DType out, const char *what) {
    gpt::format::ReadOptions ro;
    auto f = gpt::format::WeightFile::open(path, ro); // verifies every crc32
    if (f->tensors().size() != want.size())
        fail_msg("%s: %zu tensors in the file, expected %zu", what, f->tensors().size(), want.size());
    for (const auto &[name, w] : want) {
        const gpt::format::TensorEntry *t = f->find(name);
        if (!t) fail_msg("%s: tensor '%s' missing", what, name.c_str());
        std::vector<uint64_t> dims(t->dims, t->dims + t->ndim);
        if (dims != w.shape) fail_msg("%s: tensor '%s' has the wrong shape", what, name.c_str());
        const DType want_dt = w.f32 ? DType::F32 : out;
        if (t->dtype != want_dt)
            fail_msg("%s: tensor '%s' is %s, expected %s", what, name.c_str(), gpt::dtype_name(t->dtype), dt_name(want_dt));
        const std::vector<uint8_t> bytes = encode(w.values, want_dt);
        if (t->nbytes != bytes.size()) fail_msg("%s: tensor '%s' has %llu bytes", what, name.c_str(), (unsigned long long)t->nbytes);
        const uint8_t *p = f->data(*t);
        if (std::memcmp(p, bytes.data(), bytes.size()) != 0) {
            const size_t es = want_dt == DType::F32 ? 4 : 2;
            for (size_t i = 0; i < w.values.size(); i++)
                if (std::memcmp(p + i * es, bytes.data() + i * es, es))
                    fail_msg("%s: tensor '%s' element %zu is %.9g, expected %.9g (source %.9g)", what, name.c_str(), i,
                             (double)decode_one(p + i * es, want_dt), (double)decode_one(bytes.data() + i * es, want_dt), (double)w.values[i]);
        }
    }
}

gpt::ModelConfig read_config(const std::string &path) {
    gpt::format::ReadOptions ro;
    ro.verify_checksums = false;
    auto f = gpt::format::WeightFile::open(path, ro);
    return gpt::ModelConfig::from_metadata(f->metadata(), path);
}

void expect_logits_close(const std::vector<float> &out, const std::vector<double> &ref, const char *what) {
    assert_int_equal(out.size(), ref.size());
    double max_diff = 0, max_ref = 0;
    size_t worst = 0;
    for (size_t i = 0; i < out.size(); i++) {
        if (!std::isfinite(out[i])) fail_msg("%s: logit %zu is %g", what, i, (double)out[i]);
        const double diff = std::fabs(out[i] - ref[i]);
        if (diff > max_diff) {
            max_diff = diff;
            worst = i;
        }
        max_ref = std::max(max_ref, std::fabs(ref[i]));
    }
    assert_true(max_ref > 0.1); // the fixture must produce spread logits for this to mean anything
    if (max_diff / max_ref > kLogitTolerance)
        fail_msg("%s: logits differ from the reference: max |diff| %.3g / max |ref| %.3g = %.3g > %g (worst element %zu: %.9g vs %.9g)",
                 what, max_diff, max_ref, max_diff / max_ref, kLogitTolerance, worst, (double)out[worst], ref[worst]);
}

std::vector<int32_t> test_tokens(uint32_t vocab, size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<int32_t> t;
    for (size_t i = 0; i < n; i++) t.push_back((int32_t)(rng() % vocab));
    return t;
}

bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

// A failed conversion: the expected status (0: any failure), every fragment in the message,
// and nothing at all in the output directory.
void expect_rejected(const Run &r, const Scratch &sc, gpt_status status, std::initializer_list<std::string> parts, const char *what) {
    if (r.status == GPT_OK) fail_msg("%s: converted, expected a failure", what);
    if (status != GPT_OK && r.status != status)
        fail_msg("%s: failed with %s (%s), expected %s", what, gpt_status_str(r.status), r.message.c_str(), gpt_status_str(status));
    for (const std::string &p : parts)
        if (!contains(r.message, p)) fail_msg("%s: message \"%s\" does not name \"%s\"", what, r.message.c_str(), p.c_str());
    const auto left = list_dir(sc.out);
    if (!left.empty()) fail_msg("%s: left %s (and %zu more) in the output directory", what, left[0].c_str(), left.size() - 1);
    std::printf("# %s: %s\n", what, r.message.c_str());
}

// Converts an HF fixture in every dtype and checks tensors, metadata and logits.
void check_hf(const HfSpec &spec, const char *label) {
    Scratch sc;
    const HfModel m = make_hf(spec);
    write_hf_dir(sc.src, m.config, m.entries(), spec.shards);
    const WantMap want = expected_hf(m);
    // Longer than the window when there is one, so that it binds.
    const size_t n_toks = spec.sliding_window ? std::min<size_t>(spec.ctx, 2 * spec.sliding_window + 3) : 7;
    const std::vector<int32_t> toks = test_tokens(spec.vocab, n_toks, spec.seed + 100);
    for (uint32_t req : {(uint32_t)GPT_DTYPE_AUTO, (uint32_t)GPT_DTYPE_F32, (uint32_t)GPT_DTYPE_F16, (uint32_t)GPT_DTYPE_BF16}) {
        const DType out = req == GPT_DTYPE_AUTO ? spec.dtype : req == GPT_DTYPE_F32 ? DType::F32 : req == GPT_DTYPE_F16 ? DType::F16 : DType::BF16;
        char what[160];
        std::snprintf(what, sizeof what, "%s (%s source, --dtype %s)", label, dt_name(spec.dtype), req == GPT_DTYPE_AUTO ? "default" : dt_name(out));
        const std::string path = sc.in_out("model.gpt");
        const Run r = convert(sc.src, path, req, /*force=*/true);
        expect_ok(r, what);
        assert_true(r.result.verified);
        assert_int_equal((int)r.result.dtype, (int)out);
        check_tensors(path, want, out, what);

        const gpt::ModelConfig c = read_config(path);
        const bool gpt2 = spec.type == "gpt2";
        assert_int_equal(c.arch, hf_arch(spec.type));
        if (spec.type == "gemma3_text" && spec.linear_factor != 1)
            assert_true(c.rope_scaling.type == gpt::RopeScalingType::LINEAR && c.rope_scaling.factor == spec.linear_factor);
        else
            assert_int_equal((int)c.rope_scaling.type, (int)spec.scaling.type);
        assert_int_equal(c.rot_dim(), gpt2 ? m.hd() : spec.rope_dim ? spec.rope_dim : m.hd());
        if (spec.scaling.type == gpt::RopeScalingType::LONGROPE) {
            // The attention factor transformers derives when the config gives none.
            assert_true(std::fabs(c.rope_scaling.attention_factor - spec.scaling.attention_factor) < 1e-6f);
            assert_true(c.rope_scaling.short_factor == spec.scaling.short_factor);
            assert_true(c.rope_scaling.long_factor == spec.scaling.long_factor);
            assert_int_equal(c.rope_scaling.original_context, spec.scaling.original_context);
        }
        RefInput ref = reference_input(m, out);
        assert_int_equal(c.sliding_window, ref.config.sliding_window);
        assert_true(c.window_layers == ref.config.window_layers);
        assert_int_equal(c.n_layers, spec.layers);
        assert_int_equal(c.d_model, spec.d);
        assert_int_equal(c.n_heads, spec.heads);
        assert_int_equal(c.n_kv_heads, gpt2 ? spec.heads : spec.kv);
        assert_int_equal(c.head_dim, m.hd());
        assert_int_equal(c.d_ff, spec.ff);
        assert_int_equal(c.vocab_size, spec.vocab);
        assert_int_equal(c.context_length, spec.ctx);
        assert_true(c.norm_eps == spec.eps);
        if (!gpt2) assert_true(c.rope_theta == spec.theta);
        assert_int_equal(c.tied_head, spec.tied);
        assert_int_equal(c.qkv_bias, gpt2 || spec.type == "qwen2");
        assert_int_equal(c.bos_id, spec.bos);
        assert_int_equal(c.eos_id, spec.eos[0]);
        {
            gpt::format::ReadOptions ro;
            auto f = gpt::format::WeightFile::open(path, ro);
            std::string source;
            assert_true(f->metadata().get_str(gpt::keys::kSource, &source));
            assert_string_equal(source.c_str(), ("huggingface:" + spec.type).c_str());
            const std::vector<int32_t> *ids = f->metadata().get_i32s(gpt::keys::kTokEosIds);
            if (spec.eos.size() > 1) {
                assert_non_null(ids);
                assert_true(*ids == spec.eos);
            } else {
                assert_null(ids);
            }
        }
        const std::vector<float> got = engine::cpu_logits(path, toks, spec.vocab);
        ref.layout.max_seq = (uint32_t)toks.size(); // engine_logits' context
        expect_logits_close(got, ref.forward(toks), what);
    }
}

void check_l2c(const L2cSpec &spec, const char *label) {
    Scratch sc;
    const L2cModel m = make_l2c(spec);
    const std::string ckpt = sc.in_src("model.bin");
    write_bytes(ckpt, m.bytes);
    const WantMap want = expected_l2c(m);
    const std::vector<int32_t> toks = test_tokens(spec.vocab, 9, spec.seed + 5);
    for (DType out : kAllDTypes) {
        char what[160];
        std::snprintf(what, sizeof what, "%s (--dtype %s)", label, dt_name(out));
        const std::string path = sc.in_out("model.gpt");
        const Run r = convert(ckpt, path, gpt_dtype_of(out), /*force=*/true);
        expect_ok(r, what);
        bool warned = false;
        for (const auto &w : r.warnings) warned |= contains(w, "no tokenizer");
        assert_true(warned);
        check_tensors(path, want, out, what);
        const gpt::ModelConfig c = read_config(path);
        assert_int_equal(c.arch, GPT_ARCH_LLAMA);
        assert_int_equal(c.n_heads, spec.heads);
        assert_int_equal(c.n_kv_heads, spec.kv);
        assert_int_equal(c.head_dim, spec.dim / spec.heads);
        assert_int_equal(c.d_ff, spec.hidden);
        assert_int_equal(c.vocab_size, spec.vocab);
        assert_int_equal(c.context_length, spec.seq);
        assert_int_equal(c.tied_head, spec.shared);
        assert_false(c.qkv_bias);
        assert_true(c.rope_theta == 10000.0f);
        assert_true(c.norm_eps == 1e-5f);
        // llama2.c's runner ends a text at EOS (2) and at BOS (1): both end generation here too.
        assert_int_equal(c.eos_id, 2);
        assert_int_equal(c.eos_ids.size(), 2);
        assert_int_equal(c.eos_ids[0], 2);
        assert_int_equal(c.eos_ids[1], 1);
        // The point of the whole test: the engine (rotate-half RoPE) on the permuted weights
        // reproduces llama2.c (interleaved RoPE) on the original ones.
        expect_logits_close(engine::cpu_logits(path, toks, spec.vocab), reference_input(m, out).forward(toks), what);
    }
}

// ----------------------------------------------------------------- safetensors headers

// A valid header, parsed from memory: dtypes, shapes, offsets, metadata.
std::vector<uint8_t> valid_safetensors() {
    const std::vector<StEntry> e = {{"a", "F32", {2, 3}, std::vector<uint8_t>(24, 1)},
                                    {"b", "BF16", {5}, std::vector<uint8_t>(10, 2)},
                                    {"c", "I64", {}, std::vector<uint8_t>(8, 3)},
                                    {"d", "F16", {0, 4}, {}}};
    return safetensors_bytes(e);
}

void test_convert_safetensors_header(void **) {
    const auto bytes = valid_safetensors();
    const cv::StHeader h = cv::parse_safetensors(bytes.data(), bytes.size(), "mem.safetensors");
    assert_int_equal(h.tensors.size(), 4);
    assert_string_equal(h.metadata.at("format").c_str(), "pt");
    std::map<std::string, const cv::StTensor *> by;
    for (const auto &t : h.tensors) by[t.name] = &t;
    assert_int_equal((int)by["a"]->dtype, (int)cv::StDType::F32);
    assert_true(by["a"]->shape == std::vector<uint64_t>({2, 3}));
    assert_int_equal(by["b"]->begin, 24);
    assert_int_equal(by["b"]->end, 34);
    assert_int_equal(by["c"]->numel(), 1);
    assert_int_equal(by["d"]->numel(), 0);
    assert_int_equal(by["a"]->data[0], 1);
    assert_int_equal(by["c"]->data[0], 3);
}

// Every malformed header is GPT_ERR_FORMAT (unknown dtype: UNSUPPORTED) naming the source
// and, where there is one, the tensor.
void test_convert_safetensors_header_malformed(void **) {
    struct Case {
        const char *json;
        uint64_t data_size;
        gpt_status status;
        const char *names;
    };
    const Case cases[] = {
        {"{\"x\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}", 8, GPT_ERR_FORMAT, "malformed JSON"},
        {"[1, 2]", 0, GPT_ERR_FORMAT, "not an object"},
        {"{\"x\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 16]}}", 8, GPT_ERR_FORMAT, "'x'"},   // past the end
        {"{\"x\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}", 8, GPT_ERR_FORMAT, "'x'"},    // size mismatch
        {"{\"x\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 0]}}", 8, GPT_ERR_FORMAT, "'x'"},    // reversed
        {"{\"x\": {\"dtype\": \"F32\", \"shape\": [-2], \"data_offsets\": [0, 8]}}", 8, GPT_ERR_FORMAT, "'x'"},   // negative
        {"{\"x\": {\"dtype\": \"Q4\", \"shape\": [2], \"data_offsets\": [0, 8]}}", 8, GPT_ERR_UNSUPPORTED, "'x'"},
        {"{\"x\": {\"shape\": [2], \"data_offsets\": [0, 8]}}", 8, GPT_ERR_FORMAT, "'x'"},
        {"{\"x\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0]}}", 8, GPT_ERR_FORMAT, "'x'"},
        {"{\"x\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, "
         "\"y\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}", 12, GPT_ERR_FORMAT, "overlap"},
        {"{\"x\": {\"dtype\": \"F32\", \"shape\": [4611686018427387904, 4], \"data_offsets\": [0, 8]}}", 8, GPT_ERR_FORMAT, "overflows"},
    };
    for (const Case &c : cases) {
        try {
            cv::parse_safetensors_header((const uint8_t *)c.json, std::strlen(c.json), c.data_size, "hdr.safetensors");
            fail_msg("accepted: %s", c.json);
        } catch (const gpt::Error &e) {
            if (e.status() != c.status || !contains(e.what(), "hdr.safetensors") || !contains(e.what(), c.names))
                fail_msg("%s -> %s (%d)", c.json, e.what(), (int)e.status());
        }
    }
}

// Header length fields: past the end, shorter than 8 bytes.
void test_convert_safetensors_header_length(void **) {
    const auto bytes = valid_safetensors();
    std::vector<uint8_t> bad = bytes;
    bad[0] = 0xff;
    bad[3] = 0x7f;
    try {
        cv::parse_safetensors(bad.data(), bad.size(), "len.safetensors");
        fail_msg("accepted a header length past the end");
    } catch (const gpt::Error &e) {
        assert_true(contains(e.what(), "len.safetensors") && contains(e.what(), "header length"));
    }
    try {
        cv::parse_safetensors(bytes.data(), 5, "short.safetensors");
        fail_msg("accepted 5 bytes");
    } catch (const gpt::Error &e) {
        assert_true(contains(e.what(), "short.safetensors"));
    }
}

// ------------------------------------------------------------------------- config.json

cv::HfConfig parse_config(const std::string &s) { return cv::parse_hf_config(s, "config.json"); }
const std::string kConfigBase =
    R"("hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 100)";

// rope_theta at the top level; an eos list (first id, duplicates dropped); head_dim null.
void test_convert_hf_config_llama(void **) {
    const cv::HfConfig h =
        parse_config("{\"model_type\": \"llama\", " + kConfigBase + ", \"rope_theta\": 500000.0, \"eos_token_id\": [7, 9, 7], \"head_dim\": null}");
    assert_true(h.config.rope_theta == 500000.0f);
    assert_int_equal(h.config.eos_id, 7);
    assert_int_equal(h.eos_ids.size(), 2);
    assert_int_equal(h.config.head_dim, 16);
    assert_int_equal(h.config.n_kv_heads, 4);
}

// rope_theta in rope_parameters (transformers 5); qwen2 has q/k/v biases.
void test_convert_hf_config_qwen2_rope_parameters(void **) {
    const cv::HfConfig h =
        parse_config("{\"model_type\": \"qwen2\", " + kConfigBase + ", \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 1000000}}");
    assert_true(h.config.rope_theta == 1e6f);
    assert_true(h.config.qkv_bias);
}

// A default rope_scaling is accepted; Mistral's sliding_window windows every layer.
void test_convert_hf_config_mistral_sliding_window(void **) {
    const cv::HfConfig h = parse_config("{\"model_type\": \"mistral\", " + kConfigBase +
                                        ", \"rope_scaling\": {\"type\": \"default\"}, \"sliding_window\": 8, \"max_position_embeddings\": 64}");
    assert_int_equal(h.warnings.size(), 0);
    assert_int_equal(h.config.sliding_window, 8);
    assert_true(h.config.window_layers.empty()); // every layer: no per-layer list
    const cv::HfConfig none = parse_config("{\"model_type\": \"mistral\", " + kConfigBase + ", \"sliding_window\": null}");
    assert_int_equal(none.config.sliding_window, 0);
    assert_true(none.config.window_layers.empty());
    // A window as long as the context never binds: not stored.
    const cv::HfConfig longer = parse_config("{\"model_type\": \"mistral\", " + kConfigBase +
                                             ", \"sliding_window\": 4096, \"max_position_embeddings\": 4096}");
    assert_int_equal(longer.config.sliding_window, 0);
}

// Qwen2 windows only with use_sliding_window, and only layers >= max_window_layers (as
// transformers' Qwen2Config builds layer_types); layer_types, when present, decides.
void test_convert_hf_config_qwen2_sliding_window(void **) {
    const std::string q = "{\"model_type\": \"qwen2\", " + kConfigBase + ", \"num_hidden_layers\": 4, \"sliding_window\": 16";
    assert_int_equal(parse_config(q + ", \"use_sliding_window\": false, \"max_window_layers\": 1}").config.sliding_window, 0);
    assert_int_equal(parse_config(q + "}").config.sliding_window, 0); // use_sliding_window defaults to false
    const cv::HfConfig h = parse_config(q + ", \"use_sliding_window\": true, \"max_window_layers\": 1}");
    assert_int_equal(h.config.sliding_window, 16);
    assert_true(h.config.window_layers == std::vector<uint8_t>({0, 1, 1, 1}));
    const cv::HfConfig all = parse_config(q + ", \"use_sliding_window\": true, \"max_window_layers\": 0}");
    assert_int_equal(all.config.sliding_window, 16);
    assert_true(all.config.window_layers.empty()); // every layer: no per-layer list
    // Every layer below max_window_layers: no layer is windowed, so no window is stored.
    assert_int_equal(parse_config(q + ", \"use_sliding_window\": true, \"max_window_layers\": 4}").config.sliding_window, 0);
    const cv::HfConfig lt = parse_config(q + ", \"use_sliding_window\": true, \"layer_types\": [\"full_attention\", "
                                             "\"sliding_attention\", \"full_attention\", \"sliding_attention\"]}");
    assert_true(lt.config.window_layers == std::vector<uint8_t>({0, 1, 0, 1}));
}

const std::string kGemmaBase =
    R"("hidden_size": 64, "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 1, "intermediate_size": 96, "vocab_size": 100)";

// Gemma-2: missing keys take Gemma2Config's defaults (head_dim 256, query_pre_attn_scalar
// 256, soft-caps 50 and 30, window 4096 on the even layers); null soft-caps are none.
void test_convert_hf_config_gemma2(void **) {
    const cv::HfConfig h = parse_config("{\"model_type\": \"gemma2\", " + kGemmaBase + "}");
    const gpt::ModelConfig &c = h.config;
    assert_int_equal(c.arch, GPT_ARCH_GEMMA2);
    assert_int_equal(c.head_dim, 256);
    assert_true(c.query_pre_attn_scalar == 256.0f && c.attn_softcap == 50.0f && c.logit_softcap == 30.0f);
    assert_true(c.tied_head && c.embed_scale && c.rope_theta == 10000.0f && c.norm_eps == 1e-6f);
    assert_int_equal(c.sliding_window, 4096);
    assert_true(c.window_layers == std::vector<uint8_t>({1, 0, 1, 0, 1, 0}));
    const cv::HfConfig n = parse_config("{\"model_type\": \"gemma2\", " + kGemmaBase +
                                        R"(, "attn_logit_softcapping": null, "final_logit_softcapping": null, "head_dim": 16, "sliding_window": 7})");
    assert_true(n.config.attn_softcap == 0.0f && n.config.logit_softcap == 0.0f);
    assert_int_equal(n.config.head_dim, 16);
    assert_int_equal(n.config.sliding_window, 7);
}

// Gemma-3: every sliding_window_pattern-th layer global (default 6), rope_local_base_freq for
// the others, linear rope_scaling for the global ones, no soft-caps unless set; the same from
// transformers 5's layer_types and per-layer-type rope_parameters.
void test_convert_hf_config_gemma3(void **) {
    const std::string g = "{\"model_type\": \"gemma3_text\", " + kGemmaBase;
    const cv::HfConfig h = parse_config(g + R"(, "rope_scaling": {"rope_type": "linear", "factor": 8.0}, "rope_local_base_freq": 10000})");
    const gpt::ModelConfig &c = h.config;
    assert_int_equal(c.arch, GPT_ARCH_GEMMA3);
    assert_true(c.attn_softcap == 0.0f && c.logit_softcap == 0.0f);
    assert_true(c.rope_theta == 1e6f && c.rope_theta_local == 10000.0f);
    assert_true(c.rope_scaling.type == gpt::RopeScalingType::LINEAR && c.rope_scaling.factor == 8.0f);
    assert_true(c.window_layers == std::vector<uint8_t>({1, 1, 1, 1, 1, 0}));
    const cv::HfConfig p = parse_config(g + R"(, "sliding_window_pattern": 2, "final_logit_softcapping": 15.0})");
    assert_true(p.config.window_layers == std::vector<uint8_t>({1, 0, 1, 0, 1, 0}));
    assert_true(p.config.logit_softcap == 15.0f && p.config.rope_scaling.type == gpt::RopeScalingType::NONE);
    const cv::HfConfig t5 = parse_config(
        g + R"(, "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "sliding_attention", "full_attention", "full_attention"],)"
            R"( "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 500000},)"
            R"( "sliding_attention": {"rope_type": "default", "rope_theta": 20000}}})");
    assert_true(t5.config.window_layers == std::vector<uint8_t>({1, 0, 1, 1, 0, 0}));
    assert_true(t5.config.rope_theta == 500000.0f && t5.config.rope_theta_local == 20000.0f);
    assert_true(t5.config.rope_scaling.type == gpt::RopeScalingType::LINEAR && t5.config.rope_scaling.factor == 4.0f);
    // A window no shorter than the context never binds, but Gemma-3's windowed layers still
    // rotate with the local base: the window and its flags are kept (Gemma-2 drops them).
    const cv::HfConfig wide = parse_config(g + R"(, "max_position_embeddings": 64, "sliding_window": 512})");
    assert_int_equal(wide.config.sliding_window, 512);
    assert_true(wide.config.window_layers == std::vector<uint8_t>({1, 1, 1, 1, 1, 0}));
    const cv::HfConfig wide2 = parse_config("{\"model_type\": \"gemma2\", " + kGemmaBase + R"(, "max_position_embeddings": 64, "sliding_window": 512})");
    assert_int_equal(wide2.config.sliding_window, 0);
    assert_true(wide2.config.window_layers.empty());
}

// Llama 3.2 as published: llama3 scaling (factor 32, original 8192), tied head, head_dim 64.
void test_convert_hf_config_llama32(void **) {
    const cv::HfConfig h = parse_config(R"({"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 8192,
        "vocab_size": 128256, "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
        "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "tie_word_embeddings": true, "attention_bias": false, "mlp_bias": false, "hidden_act": "silu",
        "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]})");
    const gpt::RopeScaling &r = h.config.rope_scaling;
    assert_int_equal(h.config.arch, GPT_ARCH_LLAMA);
    assert_int_equal((int)r.type, (int)gpt::RopeScalingType::LLAMA3);
    assert_true(r.factor == 32.0f && r.low_freq_factor == 1.0f && r.high_freq_factor == 4.0f);
    assert_int_equal(r.original_context, 8192);
    assert_true(h.config.tied_head);
    assert_int_equal(h.config.rot_dim(), 64);
}

// Phi-4-mini as published (48 factors each, 3/4 of head_dim 128 rotating) and Phi-3-mini-4k's
// sliding window; the attention factor transformers derives: sqrt(1 + ln(131072 / 4096) / ln 4096).
void test_convert_hf_config_phi(void **) {
    std::string shorts, longs;
    for (int i = 0; i < 48; i++) {
        shorts += (i ? ", " : "") + std::to_string(1.0 + 0.01 * i);
        longs += (i ? ", " : "") + std::to_string(1.0 + 0.5 * i);
    }
    const cv::HfConfig h = parse_config(R"({"model_type": "phi3", "hidden_size": 3072, "num_hidden_layers": 32,
        "num_attention_heads": 24, "num_key_value_heads": 8, "intermediate_size": 8192, "vocab_size": 200064,
        "max_position_embeddings": 131072, "original_max_position_embeddings": 4096, "partial_rotary_factor": 0.75,
        "rope_theta": 10000.0, "rms_norm_eps": 1e-05, "sliding_window": 262144, "tie_word_embeddings": true,
        "attention_bias": false, "full_attn_mod": 1, "interpolate_factor": 1, "lm_head_bias": false, "mlp_bias": false,
        "resid_pdrop": 0.0, "embd_pdrop": 0.0, "hidden_act": "silu", "bos_token_id": 199999, "eos_token_id": 199999,
        "rope_scaling": {"type": "longrope", "short_factor": [)" + shorts + R"(], "long_factor": [)" + longs + "]}}");
    const gpt::RopeScaling &r = h.config.rope_scaling;
    assert_int_equal(h.config.arch, GPT_ARCH_PHI3);
    assert_int_equal(h.config.head_dim, 128);
    assert_int_equal(h.config.rot_dim(), 96);
    assert_int_equal((int)r.type, (int)gpt::RopeScalingType::LONGROPE);
    assert_int_equal(r.original_context, 4096);
    assert_int_equal(r.short_factor.size(), 48);
    assert_true(r.long_factor[47] == (float)(1.0 + 0.5 * 47));
    assert_true(std::fabs(r.attention_factor - std::sqrt(1 + std::log(32.0) / std::log(4096.0))) < 1e-6);
    assert_int_equal(h.config.sliding_window, 0); // longer than the context: no window
    assert_true(h.config.tied_head);

    const cv::HfConfig mini = parse_config(R"({"model_type": "phi3", "hidden_size": 3072, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 8192, "vocab_size": 32064,
        "max_position_embeddings": 4096, "original_max_position_embeddings": 4096, "rope_scaling": null,
        "rope_theta": 10000.0, "rms_norm_eps": 1e-05, "sliding_window": 2047, "tie_word_embeddings": false})");
    assert_int_equal(mini.config.sliding_window, 2047);
    assert_int_equal((int)mini.config.rope_scaling.type, (int)gpt::RopeScalingType::NONE);
    assert_int_equal(mini.config.rot_dim(), 96);
}

// Qwen3: head_dim its own field (128 with hidden 1024 / 16 heads = 64), no biases.
void test_convert_hf_config_qwen3(void **) {
    const cv::HfConfig h = parse_config(R"({"model_type": "qwen3", "hidden_size": 1024, "num_hidden_layers": 28,
        "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 3072,
        "vocab_size": 151936, "max_position_embeddings": 40960, "rms_norm_eps": 1e-06, "rope_theta": 1000000,
        "rope_scaling": null, "attention_bias": false, "use_sliding_window": false, "sliding_window": null,
        "max_window_layers": 28, "tie_word_embeddings": true, "hidden_act": "silu"})");
    assert_int_equal(h.config.arch, GPT_ARCH_QWEN3);
    assert_int_equal(h.config.head_dim, 128);
    assert_false(h.config.qkv_bias);
    assert_int_equal(h.config.sliding_window, 0);
}

// n_inner null means 4 * n_embd; n_ctx is the context; an eos outside the vocabulary is
// dropped with a warning.
void test_convert_hf_config_gpt2_defaults(void **) {
    const cv::HfConfig h = parse_config(
        "{\"model_type\": \"gpt2\", \"n_embd\": 32, \"n_layer\": 1, \"n_head\": 4, \"n_ctx\": 16, \"vocab_size\": 50, \"n_inner\": null, \"eos_token_id\": 50256}");
    assert_int_equal(h.config.d_ff, 128);
    assert_int_equal(h.config.context_length, 16);
    assert_int_equal(h.config.eos_id, -1); // outside the vocabulary: dropped, with a warning
    assert_int_equal(h.warnings.size(), 1);
}

// Every refused config.json names the file and the key (the message shows the JSON).
void test_convert_hf_config_rejects(void **) {
    const std::string &base = kConfigBase;
    struct Case {
        std::string json;
        gpt_status status;
        const char *names;
    };
    const Case cases[] = {
        {"{\"model_type\": \"falcon\"}", GPT_ERR_UNSUPPORTED, "falcon"},
        {"{\"hidden_size\": 4}", GPT_ERR_FORMAT, "model_type"},
        {"{\"model_type\": \"llama\", " + base + ", \"rope_scaling\": {\"rope_type\": \"dynamic\", \"factor\": 2.0}}", GPT_ERR_UNSUPPORTED, "dynamic"},
        {"{\"model_type\": \"llama\", " + base + ", \"rope_parameters\": {\"rope_type\": \"yarn\", \"rope_theta\": 500000}}", GPT_ERR_UNSUPPORTED, "yarn"},
        {"{\"model_type\": \"llama\", " + base + ", \"rope_parameters\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0}}",
         GPT_ERR_FORMAT, "original_max_position_embeddings"},
        {"{\"model_type\": \"llama\", " + base + ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 4.0, \"high_freq_factor\": 1.0, \"original_max_position_embeddings\": 64}}",
         GPT_ERR_FORMAT, "high_freq_factor"},
        {"{\"model_type\": \"llama\", " + base + ", \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": \"2\"}}", GPT_ERR_FORMAT, "factor"},
        {"{\"model_type\": \"llama\", " + base + ", \"partial_rotary_factor\": 0.5}", GPT_ERR_UNSUPPORTED, "partial_rotary_factor"},
        {"{\"model_type\": \"phi3\", " + base + ", \"partial_rotary_factor\": 0.1}", GPT_ERR_UNSUPPORTED, "partial_rotary_factor"},
        {"{\"model_type\": \"phi3\", " + base + ", \"rope_scaling\": {\"type\": \"longrope\", \"short_factor\": [1, 1], \"long_factor\": [1, 1]}}",
         GPT_ERR_FORMAT, "short_factor"},
        {"{\"model_type\": \"phi3\", " + base + ", \"rope_scaling\": {\"type\": \"longrope\", \"short_factor\": [1, 1, 1, 1, 1, 1, 1, 1], \"long_factor\": [1, 1, 1, 1, 1, 1, 1, -2]}}",
         GPT_ERR_FORMAT, "long_factor"},
        {"{\"model_type\": \"phi3\", " + base + ", \"rope_scaling\": {\"type\": \"longrope\", \"long_factor\": [1, 1, 1, 1, 1, 1, 1, 1]}}",
         GPT_ERR_FORMAT, "short_factor"},
        {"{\"model_type\": \"phi3\", " + base + ", \"lm_head_bias\": true}", GPT_ERR_UNSUPPORTED, "lm_head_bias"},
        {"{\"model_type\": \"qwen3\", " + base + ", \"use_sliding_window\": true, \"sliding_window\": 8}", GPT_ERR_UNSUPPORTED, "use_sliding_window"},
        {"{\"model_type\": \"llama\", " + base + ", \"hidden_act\": \"gelu\"}", GPT_ERR_UNSUPPORTED, "hidden_act"},
        {"{\"model_type\": \"llama\", " + base + ", \"num_key_value_heads\": 3}", GPT_ERR_FORMAT, "num_key_value_heads"},
        {"{\"model_type\": \"llama\", \"hidden_size\": \"64\"}", GPT_ERR_FORMAT, "hidden_size"},
        {"{\"model_type\": \"gpt2\", \"n_embd\": 32, \"n_layer\": 1, \"n_head\": 4, \"n_ctx\": 16, \"vocab_size\": 50, \"activation_function\": \"relu\"}",
         GPT_ERR_UNSUPPORTED, "activation_function"},
        {"{\"model_type\": \"llama\", " + base, GPT_ERR_FORMAT, "malformed JSON"},
        {"{\"model_type\": \"gemma3\", " + base + "}", GPT_ERR_UNSUPPORTED, "gemma3_text"},
        {"{\"model_type\": \"gemma2\", " + base + ", \"hidden_activation\": \"gelu\"}", GPT_ERR_UNSUPPORTED, "hidden_activation"},
        {"{\"model_type\": \"gemma2\", " + base + ", \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 2.0}}", GPT_ERR_UNSUPPORTED, "rope_scaling"},
        {"{\"model_type\": \"gemma3_text\", " + base + ", \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 2.0}}", GPT_ERR_UNSUPPORTED, "yarn"},
        {"{\"model_type\": \"gemma2\", " + base + ", \"tie_word_embeddings\": false}", GPT_ERR_UNSUPPORTED, "tie_word_embeddings"},
        {"{\"model_type\": \"gemma2\", " + base + ", \"attn_logit_softcapping\": -1}", GPT_ERR_FORMAT, "attn_logit_softcapping"},
        {"{\"model_type\": \"gemma2\", " + base + ", \"layer_types\": [\"full_attention\"]}", GPT_ERR_FORMAT, "layer_types"},
        {"{\"model_type\": \"gemma2\", " + base + ", \"layer_types\": [\"full_attention\", \"chunked_attention\"]}", GPT_ERR_UNSUPPORTED, "layer_types[1]"},
        {"{\"model_type\": \"mistral\", " + base + ", \"sliding_window\": 0}", GPT_ERR_FORMAT, "sliding_window"},
        {"{\"model_type\": \"qwen2\", " + base + ", \"sliding_window\": 8, \"use_sliding_window\": true, \"max_window_layers\": -1}",
         GPT_ERR_FORMAT, "max_window_layers"},
    };
    for (const Case &c : cases) {
        try {
            parse_config(c.json);
            fail_msg("accepted: %s", c.json.c_str());
        } catch (const gpt::Error &e) {
            if (e.status() != c.status || !contains(e.what(), "config.json") || !contains(e.what(), c.names))
                fail_msg("%s -> %s (%d)", c.json.c_str(), e.what(), (int)e.status());
        }
    }
}

// ---------------------------------------------------------- Hugging Face conversions

HfSpec gpt2_tied_spec() {
    HfSpec s;
    s.type = "gpt2";
    s.d = 24, s.heads = 3, s.ff = 96, s.vocab = 61, s.ctx = 16, s.tied = true, s.bos = 60, s.eos = {60};
    return s;
}
HfSpec gpt2_untied_spec() {
    HfSpec s = gpt2_tied_spec();
    s.d = 20, s.heads = 4, s.ff = 36, s.vocab = 53, s.tied = false, s.prefix = false, s.buffers = false;
    s.dtype = DType::F16, s.shards = 3, s.seed = 2, s.bos = 0, s.eos = {1};
    return s;
}

void test_convert_gpt2_tied(void **) { check_hf(gpt2_tied_spec(), "gpt2 tied (no lm_head), transformer. prefix, mask buffers"); }

void test_convert_gpt2_untied_sharded(void **) { check_hf(gpt2_untied_spec(), "gpt2 untied, no prefix, 3 shards"); }

void test_convert_gpt2_tied_head_copy(void **) {
    HfSpec s = gpt2_untied_spec();
    s.tied = true, s.head_copy = true, s.dtype = DType::BF16, s.shards = 1, s.seed = 3;
    check_hf(s, "gpt2 tied with lm_head == wte");
}

HfSpec llama_tied_spec() {
    HfSpec s;
    s.d = 40, s.heads = 5, s.kv = 1, s.head_dim = 8, s.ff = 56, s.vocab = 71, s.tied = true, s.dtype = DType::BF16;
    s.rope = "parameters", s.theta = 500000.0f, s.seed = 4, s.eps = 1e-6f;
    return s;
}

void test_convert_llama_gqa(void **) {
    HfSpec s; // GQA 4 q / 2 kv heads, untied
    check_hf(s, "llama 4q/2kv untied");
}

void test_convert_llama_head_dim_tied(void **) { check_hf(llama_tied_spec(), "llama 5q/1kv head_dim 8 tied, rope_parameters"); }

void test_convert_llama_wide_q_sharded(void **) {
    HfSpec s = llama_tied_spec();
    s.d = 36, s.heads = 4, s.kv = 1, s.head_dim = 10, s.ff = 44, s.vocab = 59, s.tied = false, s.dtype = DType::F16;
    s.rope = "scaling", s.theta = 10000.0f, s.shards = 2, s.seed = 5;
    check_hf(s, "llama 4q/1kv head_dim 10 (q width 40 != hidden 36), 2 shards");
}

HfSpec mistral_spec() {
    HfSpec s;
    s.type = "mistral", s.d = 32, s.heads = 4, s.kv = 2, s.ff = 64, s.vocab = 50, s.sliding_window = 8;
    s.dtype = DType::F16, s.seed = 6;
    return s;
}

void test_convert_mistral(void **) { check_hf(mistral_spec(), "mistral 4q/2kv, sliding window"); }

// Gemma-2 from a bf16 checkpoint: norms stored as 1 + w in f32, post-norms, soft-caps,
// query_pre_attn_scalar, the window on layers 0 and 2, a prompt longer than the window.
HfSpec gemma2_spec() {
    HfSpec s;
    s.type = "gemma2", s.layers = 3, s.d = 40, s.heads = 4, s.kv = 2, s.head_dim = 16, s.ff = 56, s.vocab = 67, s.tied = true;
    s.dtype = DType::BF16, s.sliding_window = 6, s.attn_softcap = 2.0f, s.logit_softcap = 5.0f, s.query_pre_attn_scalar = 24;
    s.eps = 1e-6f, s.bos = 2, s.eos = {1}, s.seed = 10;
    return s;
}

void test_convert_gemma2(void **) { check_hf(gemma2_spec(), "gemma2 4q/2kv head_dim 16, soft-caps, window 6 on even layers"); }

// Gemma-3 text: q/k norms, local RoPE base on the windowed layers, linear scaling on the
// global one (sliding_window_pattern 3: layer 2), then the same from layer_types in f16.
HfSpec gemma3_spec() {
    HfSpec s;
    s.type = "gemma3_text", s.layers = 4, s.d = 48, s.heads = 3, s.kv = 1, s.head_dim = 12, s.ff = 72, s.vocab = 71, s.tied = true;
    s.sliding_window = 5, s.window_pattern = 3, s.query_pre_attn_scalar = 12, s.theta = 1000000.0f, s.theta_local = 10000.0f;
    s.linear_factor = 8.0f, s.eps = 1e-6f, s.bos = 2, s.eos = {1, 7}, s.seed = 11;
    return s;
}

void test_convert_gemma3(void **) { check_hf(gemma3_spec(), "gemma3 3q/1kv q/k norms, local/global RoPE, linear factor 8"); }

void test_convert_gemma3_layer_types(void **) {
    HfSpec s = gemma3_spec();
    s.layer_types = true, s.dtype = DType::F16, s.window_pattern = 2, s.logit_softcap = 4.0f, s.seed = 12;
    check_hf(s, "gemma3 layer_types, final soft-cap");
}

// Qwen2 with use_sliding_window: layers from max_window_layers on are windowed.
void test_convert_qwen2_sliding_window(void **) {
    HfSpec q;
    q.type = "qwen2", q.layers = 3, q.d = 32, q.heads = 4, q.kv = 2, q.ff = 48, q.vocab = 53, q.sliding_window = 4;
    q.max_window_layers = 1, q.seed = 13;
    check_hf(q, "qwen2 use_sliding_window, max_window_layers 1");
}

HfSpec qwen2_tied_spec() {
    HfSpec q;
    q.type = "qwen2", q.d = 48, q.heads = 4, q.kv = 2, q.ff = 80, q.vocab = 77, q.tied = true, q.dtype = DType::BF16;
    q.rope = "parameters", q.theta = 1000000.0f, q.eos = {5, 6}, q.bos = 4, q.seed = 8, q.eps = 1e-6f;
    return q;
}

void test_convert_qwen2_tied(void **) { check_hf(qwen2_tied_spec(), "qwen2 4q/2kv q/k/v biases tied, eos list"); }

void test_convert_qwen2_untied(void **) {
    HfSpec q = qwen2_tied_spec();
    q.heads = 4, q.kv = 1, q.tied = false, q.dtype = DType::F32, q.seed = 9, q.eos = {3};
    check_hf(q, "qwen2 4q/1kv untied");
}

// Llama 3.x: llama3 scaling whose bands (original context 64) each hold some of the 8
// frequencies of head_dim 16 at theta 500000; tied head.
void test_convert_llama3_scaled_tied(void **) {
    HfSpec s;
    s.d = 40, s.heads = 4, s.kv = 2, s.head_dim = 16, s.ff = 56, s.vocab = 83, s.tied = true, s.theta = 500000.0f;
    s.scaling.type = gpt::RopeScalingType::LLAMA3;
    s.scaling.factor = 8, s.scaling.low_freq_factor = 1, s.scaling.high_freq_factor = 4, s.scaling.original_context = 64;
    s.dtype = DType::BF16, s.seed = 21, s.bos = 80, s.eos = {81, 82};
    check_hf(s, "llama 3.x llama3 scaling, tied");
}

void test_convert_mistral_linear_scaling(void **) {
    HfSpec s = mistral_spec();
    s.scaling.type = gpt::RopeScalingType::LINEAR, s.scaling.factor = 3, s.seed = 22;
    check_hf(s, "mistral with linear RoPE scaling");
}

// Qwen3: q/k norms, head_dim 16 with hidden 40 (q width 64), GQA, tied.
void test_convert_qwen3(void **) {
    HfSpec s;
    s.type = "qwen3", s.d = 40, s.heads = 4, s.kv = 2, s.head_dim = 16, s.ff = 48, s.vocab = 79, s.tied = true;
    s.theta = 1000000.0f, s.eps = 1e-6f, s.dtype = DType::BF16, s.seed = 23;
    check_hf(s, "qwen3 4q/2kv head_dim 16, q/k norms, tied");
}

// Longrope with a attention factor for max_position_embeddings (ctx) over the original context.
void phi3_longrope(HfSpec &s, uint32_t original, uint32_t half) {
    gpt::RopeScaling &r = s.scaling;
    r.type = gpt::RopeScalingType::LONGROPE;
    r.original_context = original;
    const double f = (double)s.ctx / original;
    r.attention_factor = f > 1 ? (float)std::sqrt(1 + std::log(f) / std::log((double)original)) : 1.0f;
    for (uint32_t i = 0; i < half; i++) {
        r.short_factor.push_back(1.0f + 0.1f * (float)i);
        r.long_factor.push_back(2.0f + 1.5f * (float)i);
    }
}

// Phi-3-mini-like: fused qkv_proj / gate_up_proj, full rotation, longrope in its short regime
// (7 tokens, original context 32), a sliding window of 3 keys.
void test_convert_phi3_window(void **) {
    HfSpec s;
    s.type = "phi3", s.d = 48, s.heads = 4, s.kv = 4, s.ff = 40, s.vocab = 67, s.ctx = 128, s.sliding_window = 3;
    s.dtype = DType::F16, s.seed = 24;
    phi3_longrope(s, 32, 6);
    check_hf(s, "phi3 fused tensors, longrope short, sliding window 3");
}

// Phi-4-mini-like: partial rotation (12 of 16 dimensions), GQA, tied, long factors (7 tokens
// past an original context of 4), 2 shards.
void test_convert_phi3_partial_long(void **) {
    HfSpec s;
    s.type = "phi3", s.d = 48, s.heads = 6, s.kv = 2, s.head_dim = 16, s.rope_dim = 12, s.ff = 36, s.vocab = 61;
    s.tied = true, s.dtype = DType::BF16, s.seed = 25, s.shards = 2;
    phi3_longrope(s, 4, 6);
    check_hf(s, "phi3 partial rotary 0.75, longrope long, tied");
}

// --------------------------------------------------------------- llama2.c conversions

void test_convert_llama2c_v0_unshared(void **) {
    L2cSpec s; // 4 q / 2 kv heads, unshared classifier
    check_l2c(s, "llama2.c v0 4q/2kv unshared");
}

void test_convert_llama2c_v0_shared(void **) {
    L2cSpec s;
    s.dim = 48, s.hidden = 40, s.heads = 4, s.kv = 1, s.vocab = 37, s.shared = true, s.seed = 11;
    check_l2c(s, "llama2.c v0 4q/1kv shared");
}

L2cSpec l2c_head_size_6_spec() {
    L2cSpec s;
    s.dim = 36, s.heads = 6, s.kv = 3, s.hidden = 52, s.vocab = 45, s.shared = false, s.seq = 12, s.seed = 12; // head size 6
    return s;
}

void test_convert_llama2c_v0_head_size_6(void **) { check_l2c(l2c_head_size_6_spec(), "llama2.c v0 6q/3kv head size 6"); }

void test_convert_llama2c_v1(void **) {
    L2cSpec s = l2c_head_size_6_spec();
    s.version = 1, s.heads = 6, s.kv = 2, s.seed = 13;
    check_l2c(s, "llama2.c v1 6q/2kv");
}

// ----------------------------------------------------------------------- tokenizers

// A llama2.c model with vocab_size 300 (a shared classifier) and its tokenizer.bin in
// llama2.c's own format: <unk>, <s>, </s>, the 256 byte tokens, then " w<i>" pieces.
L2cSpec l2c_tokenizer_spec() {
    L2cSpec s;
    s.vocab = 300;
    s.shared = true;
    return s;
}
std::vector<uint8_t> l2c_tokenizer_bin(uint32_t vocab) {
    std::vector<uint8_t> tok;
    auto put = [&](const void *p, size_t n) { tok.insert(tok.end(), (const uint8_t *)p, (const uint8_t *)p + n); };
    const int32_t max_len = 16;
    put(&max_len, 4);
    for (uint32_t i = 0; i < vocab; i++) {
        char buf[16];
        std::string t;
        if (i == 0) t = "<unk>";
        else if (i == 1) t = "\n<s>\n";
        else if (i == 2) t = "\n</s>\n";
        else if (i < 3 + 256) {
            std::snprintf(buf, sizeof buf, "<0x%02X>", i - 3);
            t = buf;
        } else {
            std::snprintf(buf, sizeof buf, " w%u", i);
            t = buf;
        }
        const float score = -(float)i;
        const int32_t len = (int32_t)t.size();
        put(&score, 4);
        put(&len, 4);
        put(t.data(), t.size());
    }
    return tok;
}

// tokenizer.bin beside the checkpoint ends up in the file.
void test_convert_llama2c_tokenizer(void **) {
    Scratch sc;
    const L2cSpec s = l2c_tokenizer_spec();
    write_bytes(sc.in_src("model.bin"), make_l2c(s).bytes);
    write_bytes(sc.in_src("tokenizer.bin"), l2c_tokenizer_bin(s.vocab));
    const Run r = convert(sc.in_src("model.bin"), sc.in_out("m.gpt"));
    expect_ok(r, "llama2.c with tokenizer.bin");
    assert_true(contains(r.result.tokenizer, "spm"));
    gpt::format::ReadOptions ro;
    auto f = gpt::format::WeightFile::open(sc.in_out("m.gpt"), ro);
    const std::vector<std::string> *tokens = f->metadata().get_strs(gpt::keys::kTokTokens);
    assert_non_null(tokens);
    assert_int_equal(tokens->size(), s.vocab);
    gpt_model *model = nullptr;
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = GPT_DEVICE_CPU;
    assert_int_equal(gpt_model_load(sc.in_out("m.gpt").c_str(), &mp, &model), GPT_OK);
    gpt_model_info info;
    info.struct_size = sizeof info;
    assert_int_equal(gpt_model_get_info(model, &info), GPT_OK);
    assert_true(info.flags & GPT_MODEL_INFO_HAS_TOKENIZER);
    assert_int_equal(info.bos_token, 1);
    assert_int_equal(info.eos_token, 2);
    gpt_model_free(model);
}

// Elsewhere and under another name, given with --tokenizer (llama2.c's tok512.bin style).
void test_convert_llama2c_tokenizer_option(void **) {
    Scratch sc;
    const L2cSpec s = l2c_tokenizer_spec();
    write_bytes(sc.in_src("model.bin"), make_l2c(s).bytes);
    write_bytes(sc.root + "/tok300.bin", l2c_tokenizer_bin(s.vocab));
    Run r2 = convert(sc.in_src("model.bin"), sc.in_out("m2.gpt"), GPT_DTYPE_BF16, false, sc.root + "/tok300.bin");
    expect_ok(r2, "--tokenizer tok300.bin");
    assert_true(contains(r2.result.tokenizer, "tok300.bin"));
}

// A wrong-size tokenizer given explicitly is an error naming it.
void test_convert_llama2c_tokenizer_wrong_size(void **) {
    Scratch sc;
    const L2cSpec s = l2c_tokenizer_spec();
    write_bytes(sc.in_src("model.bin"), make_l2c(s).bytes);
    const std::vector<uint8_t> tok = l2c_tokenizer_bin(s.vocab);
    std::vector<uint8_t> shorter(tok.begin(), tok.end() - 8);
    write_bytes(sc.root + "/short.bin", shorter);
    Run r3 = convert(sc.in_src("model.bin"), sc.in_out("m3.gpt"), GPT_DTYPE_AUTO, false, sc.root + "/short.bin");
    assert_int_not_equal(r3.status, GPT_OK);
    assert_true(contains(r3.message, "short.bin"));
    assert_false(exists(sc.in_out("m3.gpt")));
}

// GPT-2's vocab.json + merges.txt, fewer tokens than the embedding rows: padded.
void test_convert_hf_tokenizer_padding(void **) {
    Scratch sc;
    HfSpec s;
    s.type = "gpt2", s.d = 16, s.heads = 2, s.ff = 32, s.vocab = 264, s.ctx = 8, s.tied = true, s.bos = 256, s.eos = {256};
    const HfModel m = make_hf(s);
    write_hf_dir(sc.src, m.config, m.entries(), 1);
    // GPT-2's byte -> unicode table.
    std::vector<std::string> byte_tok(256);
    int n = 0;
    for (int b = 0; b < 256; b++) {
        const bool keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        const uint32_t cp = keep ? (uint32_t)b : 256u + (uint32_t)n++;
        std::string u;
        if (cp < 0x80) u += (char)cp;
        else {
            u += (char)(0xC0 | (cp >> 6));
            u += (char)(0x80 | (cp & 0x3F));
        }
        byte_tok[b] = u;
    }
    json vocab = json::object();
    for (int b = 0; b < 256; b++) vocab[byte_tok[b]] = b;
    vocab["<|endoftext|>"] = 256;
    vocab["he"] = 257;
    write_text(sc.in_src("vocab.json"), vocab.dump());
    write_text(sc.in_src("merges.txt"), "#version: 0.2\nh e\n");
    const Run r = convert(sc.src, sc.in_out("m.gpt"));
    expect_ok(r, "gpt2 with vocab.json + merges.txt");
    bool warned = false;
    for (const auto &w : r.warnings) warned |= contains(w, "258 tokens");
    assert_true(warned);
    gpt::format::ReadOptions ro;
    auto f = gpt::format::WeightFile::open(sc.in_out("m.gpt"), ro);
    const std::vector<std::string> *tokens = f->metadata().get_strs(gpt::keys::kTokTokens);
    assert_non_null(tokens);
    assert_int_equal(tokens->size(), 264);
    assert_string_equal((*tokens)[257].c_str(), "he");
}

// The chat template beside the tokenizer is kept (tokenizer_config.json's, unless a
// chat_template.jinja overrides it, as transformers reads them) and gpt_chat_apply_template
// renders it with the file's bos token.
void test_convert_keeps_chat_template(void **) {
    Scratch sc;
    HfSpec s;
    s.type = "gpt2", s.d = 16, s.heads = 2, s.ff = 32, s.vocab = 257, s.ctx = 8, s.tied = true, s.bos = 256, s.eos = {256};
    const HfModel m = make_hf(s);
    write_hf_dir(sc.src, m.config, m.entries(), 1);
    json vocab = json::object();
    for (int b = 0; b < 256; b++) vocab[std::string(1, (char)('!' + b % 90)) + std::to_string(b)] = b;
    vocab["<|endoftext|>"] = 256;
    write_text(sc.in_src("vocab.json"), vocab.dump());
    write_text(sc.in_src("merges.txt"), "#version: 0.2\n");
    const std::string from_config = "{{ bos_token }}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}";
    write_text(sc.in_src("tokenizer_config.json"), json{{"chat_template", from_config}}.dump());
    for (int pass = 0; pass < 2; pass++) {
        const std::string want_template = pass == 0 ? from_config : "[{{ messages | length }}]";
        if (pass == 1) write_text(sc.in_src("chat_template.jinja"), want_template);
        const Run r = convert(sc.src, sc.in_out("m.gpt"), GPT_DTYPE_AUTO, true);
        expect_ok(r, "gpt2 with a chat template");
        gpt::format::ReadOptions ro;
        auto f = gpt::format::WeightFile::open(sc.in_out("m.gpt"), ro);
        std::string kept;
        assert_true(f->metadata().get_str(gpt::keys::kChatTemplate, &kept));
        assert_true(kept == want_template);
        gpt_model_params mp;
        gpt_model_params_init(&mp);
        mp.device = GPT_DEVICE_CPU;
        gpt_model *model = nullptr;
        assert_int_equal(gpt_model_load(sc.in_out("m.gpt").c_str(), &mp, &model), GPT_OK);
        const gpt_chat_message msgs[] = {{"user", "hi"}};
        char buf[128];
        size_t n = 0;
        assert_int_equal(gpt_chat_apply_template(model, msgs, 1, 0, buf, sizeof buf, &n), GPT_OK);
        assert_string_equal(buf, pass == 0 ? "<|endoftext|>user: hi\n" : "[1]");
        gpt_model_free(model);
    }
}

// Where the template comes from, as transformers reads it: chat_template.json; a list of
// named templates (the "default" one, or none with a note); malformed files refused; a
// template the renderer cannot render kept with a note.
void test_import_chat_template_sources(void **) {
    Scratch sc;
    gpt::ImportNotes notes;
    assert_true(gpt::import_chat_template(sc.src, &notes).text.empty()); // nothing there
    write_text(sc.in_src("tokenizer_config.json"),
               R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
    assert_true(gpt::import_chat_template(sc.src, &notes).text == "D");
    write_text(sc.in_src("tokenizer_config.json"), R"({"chat_template": [{"name": "rag", "template": "R"}]})");
    notes.clear();
    assert_true(gpt::import_chat_template(sc.src, &notes).text.empty());
    assert_true(notes.size() == 1 && contains(notes[0], "no \"default\""));
    write_text(sc.in_src("tokenizer_config.json"), R"({"chat_template": 5})");
    try {
        gpt::import_chat_template(sc.src, &notes);
        fail_msg("a numeric chat_template was accepted");
    } catch (const gpt::Error &e) {
        assert_int_equal(e.status(), GPT_ERR_FORMAT);
    }
    write_text(sc.in_src("chat_template.json"), R"({"chat_template": "{% include 'x' %}"})");
    notes.clear();
    const gpt::FoundChatTemplate t = gpt::import_chat_template(sc.src, &notes);
    assert_true(t.text == "{% include 'x' %}" && contains(t.file, "chat_template.json"));
    assert_true(notes.size() == 1 && contains(notes[0], "cannot render"));
    write_text(sc.in_src("chat_template.json"), "{");
    try {
        gpt::import_chat_template(sc.src, &notes);
        fail_msg("malformed chat_template.json was accepted");
    } catch (const gpt::Error &e) {
        assert_int_equal(e.status(), GPT_ERR_FORMAT);
        assert_true(contains(e.what(), "chat_template.json"));
    }
}

// ----------------------------------------------------------------------- rejections

// The Hugging Face checkpoint the rejection tests damage: llama 4q/2kv, d 32, vocab 40.
HfModel reject_base() {
    HfSpec s;
    s.d = 32, s.heads = 4, s.kv = 2, s.ff = 48, s.vocab = 40;
    return make_hf(s);
}

void test_convert_rejects_missing_tensor(void **) {
    const HfModel m = reject_base();
    Scratch sc;
    auto e = m.entries();
    e.erase(std::remove_if(e.begin(), e.end(), [](const StEntry &x) { return x.name == "model.layers.1.mlp.up_proj.weight"; }), e.end());
    write_hf_dir(sc.src, m.config, e, 1);
    expect_rejected(convert(sc.src, sc.in_out("m.gpt")), sc, GPT_ERR_FORMAT, {"model.layers.1.mlp.up_proj.weight", "missing", "model.safetensors"},
                    "missing tensor");
}

// A shape that disagrees with config.json.
void test_convert_rejects_shape_mismatch(void **) {
    const HfModel m = reject_base();
    Scratch sc;
    auto e = m.entries();
    for (auto &x : e)
        if (x.name == "model.layers.0.self_attn.k_proj.weight") {
            x.shape = {8, 32}; // 1 kv head's worth; config says 2
            x.bytes.resize(8 * 32 * 4);
        }
    write_hf_dir(sc.src, m.config, e, 1);
    expect_rejected(convert(sc.src, sc.in_out("m.gpt")), sc, GPT_ERR_FORMAT,
                    {"model.layers.0.self_attn.k_proj.weight", "[8, 32]", "[16, 32]", sc.in_src("model.safetensors")}, "shape mismatch");
}

// A tensor the config has no place for.
void test_convert_rejects_unexpected_tensor(void **) {
    const HfModel m = reject_base();
    Scratch sc;
    auto e = m.entries();
    e.push_back({"model.layers.2.input_layernorm.weight", "F32", {32}, std::vector<uint8_t>(128)});
    write_hf_dir(sc.src, m.config, e, 1);
    expect_rejected(convert(sc.src, sc.in_out("m.gpt")), sc, GPT_ERR_FORMAT, {"model.layers.2.input_layernorm.weight", "model.safetensors"},
                    "unexpected tensor");
}

void test_convert_rejects_unknown_model_type(void **) {
    const HfModel m = reject_base();
    Scratch sc;
    json c = json::parse(m.config);
    c["model_type"] = "falcon";
    write_hf_dir(sc.src, c.dump(), m.entries(), 1);
    expect_rejected(convert(sc.src, sc.in_out("m.gpt")), sc, GPT_ERR_UNSUPPORTED, {"falcon", "config.json"}, "unknown model_type");
}

void test_convert_rejects_malformed_config(void **) {
    const HfModel m = reject_base();
    Scratch sc;
    write_hf_dir(sc.src, m.config.substr(0, m.config.size() / 2), m.entries(), 1);
    expect_rejected(convert(sc.src, sc.in_out("m.gpt")), sc, GPT_ERR_FORMAT, {"config.json", "malformed JSON"}, "malformed config.json");
}

// F64 and I32 tensors (the message names the dtype).
void test_convert_rejects_f64_i32_tensors(void **) {
    const HfModel m = reject_base();
    for (const char *dt : {"F64", "I32"}) {
        Scratch sc;
        auto e = m.entries();
        for (auto &x : e)
            if (x.name == "model.layers.0.self_attn.q_proj.weight") {
                x.dtype = dt;
                x.bytes.resize(x.bytes.size() * (std::strcmp(dt, "F64") ? 1 : 2));
            }
        write_hf_dir(sc.src, m.config, e, 1);
        expect_rejected(convert(sc.src, sc.in_out("m.gpt")), sc, GPT_ERR_UNSUPPORTED,
                        {"model.layers.0.self_attn.q_proj.weight", dt, "model.safetensors"}, dt);
    }
}

void test_convert_rejects_truncated_shard(void **) {
    const HfModel m = reject_base();
    Scratch sc;
    write_hf_dir(sc.src, m.config, m.entries(), 2);
    const std::string shard = sc.in_src(shard_name(1, 2));
    std::vector<uint8_t> b = read_bytes(shard);
    b.resize(b.size() - 100);
    write_bytes(shard, b);
    expect_rejected(convert(sc.src, sc.in_out("m.gpt")), sc, GPT_ERR_FORMAT, {shard_name(1, 2), "past the end", "truncated"}, "truncated shard");
}

// The index names a tensor its shard lacks.
void test_convert_rejects_index_shard_mismatch(void **) {
    const HfModel m = reject_base();
    Scratch sc;
    write_hf_dir(sc.src, m.config, m.entries(), 2);
    json idx = json::parse(read_bytes(sc.in_src("model.safetensors.index.json")));
    json &where = idx["weight_map"]["model.layers.0.mlp.gate_proj.weight"];
    where = where.get<std::string>() == shard_name(0, 2) ? shard_name(1, 2) : shard_name(0, 2);
    write_text(sc.in_src("model.safetensors.index.json"), idx.dump());
    expect_rejected(convert(sc.src, sc.in_out("m.gpt")), sc, GPT_ERR_FORMAT, {"model.layers.0.mlp.gate_proj.weight", "shard"}, "index vs shard");
}

// safetensors headers in a checkpoint: malformed JSON, length past the end, overlapping and
// out-of-range offsets (each case named in its message).
void test_convert_rejects_bad_safetensors_headers(void **) {
    const HfModel m = reject_base();
    const std::string path_part = "model.safetensors";
    auto with_header = [&](const std::string &hdr, size_t data) {
        std::vector<uint8_t> b;
        for (int i = 0; i < 8; i++) b.push_back((uint8_t)((uint64_t)hdr.size() >> (8 * i)));
        for (char ch : hdr) b.push_back((uint8_t)ch);
        b.resize(b.size() + data, 0);
        return b;
    };
    struct Case {
        std::vector<uint8_t> file;
        std::vector<std::string> parts;
        const char *what;
    };
    std::vector<uint8_t> past = with_header("{}", 0);
    past[0] = 200;
    const std::string w = "\"model.embed_tokens.weight\"";
    const Case cases[] = {
        {with_header("{" + w + ": {\"dtype\": \"F32\", ", 64), {"malformed JSON"}, "malformed header JSON"},
        {past, {"header length"}, "header length past the end"},
        {with_header("{" + w + ": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, \"model.norm.weight\": "
                     "{\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}", 16),
         {"model.embed_tokens.weight", "model.norm.weight", "overlap"}, "overlapping data_offsets"},
        {with_header("{" + w + ": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}", 8),
         {"model.embed_tokens.weight", "past the end"}, "out-of-range data_offsets"},
    };
    for (const Case &c : cases) {
        Scratch sc;
        write_text(sc.in_src("config.json"), m.config);
        write_bytes(sc.in_src("model.safetensors"), c.file);
        Run r = convert(sc.src, sc.in_out("m.gpt"));
        std::vector<std::string> parts = c.parts;
        parts.push_back(sc.in_src(path_part));
        expect_rejected(r, sc, GPT_ERR_FORMAT, {}, c.what);
        for (const auto &p : parts)
            if (!contains(r.message, p)) fail_msg("%s: message \"%s\" lacks \"%s\"", c.what, r.message.c_str(), p.c_str());
    }
}

// A truncated llama2.c checkpoint names the tensor it cuts.
void test_convert_rejects_truncated_llama2c(void **) {
    Scratch sc;
    L2cSpec ls;
    L2cModel lm = make_l2c(ls);
    // Cut 10 floats into wk: after the header, token_embedding, rms_att and wq.
    lm.bytes.resize(28 + 4 * (ls.vocab * ls.dim + ls.layers * ls.dim + ls.layers * ls.dim * ls.dim + 10));
    write_bytes(sc.in_src("model.bin"), lm.bytes);
    expect_rejected(convert(sc.in_src("model.bin"), sc.in_out("m.gpt")), sc, GPT_ERR_FORMAT, {"model.bin", "truncated", "'wk'"},
                    "truncated llama2.c checkpoint");
}

// A llama2.c checkpoint with bytes the header does not account for.
void test_convert_rejects_oversized_llama2c(void **) {
    Scratch sc;
    L2cModel lm = make_l2c(L2cSpec{});
    lm.bytes.resize(lm.bytes.size() + 12, 0);
    write_bytes(sc.in_src("model.bin"), lm.bytes);
    expect_rejected(convert(sc.in_src("model.bin"), sc.in_out("m.gpt")), sc, GPT_ERR_FORMAT, {"model.bin", "12 bytes"}, "oversized llama2.c");
}

// A weight f16 cannot hold, converted to f16: named, not turned into infinity (bf16 holds it).
void test_convert_rejects_f16_overflow(void **) {
    const HfModel m = reject_base();
    Scratch sc;
    HfModel big = m;
    big.values["model.layers.1.mlp.down_proj.weight"][5] = 1e6f;
    write_hf_dir(sc.src, big.config, big.entries(), 1);
    expect_rejected(convert(sc.src, sc.in_out("m.gpt"), GPT_DTYPE_F16), sc, GPT_ERR_UNSUPPORTED,
                    {"model.layers.1.mlp.down_proj.weight", "blk.1.ffn_down.weight", "f16", "model.safetensors"}, "f16 overflow");
    expect_ok(convert(sc.src, sc.in_out("m.gpt"), GPT_DTYPE_BF16), "the same to bf16");
}

// NaN weights: the written file fails verification and is removed (staging file too).
void test_convert_rejects_nan_weights(void **) {
    const HfModel m = reject_base();
    Scratch sc;
    HfModel nan = m;
    nan.values["model.norm.weight"][3] = NAN;
    write_hf_dir(sc.src, nan.config, nan.entries(), 1);
    expect_rejected(convert(sc.src, sc.in_out("m.gpt")), sc, GPT_ERR_FORMAT, {"verification", "non-finite"}, "NaN weights");
}

// An unsupported --dtype value.
void test_convert_rejects_bad_dtype(void **) {
    const HfModel m = reject_base();
    Scratch sc;
    write_hf_dir(sc.src, m.config, m.entries(), 1);
    expect_rejected(convert(sc.src, sc.in_out("m.gpt"), 7), sc, GPT_ERR_INVALID_ARG, {"dtype"}, "dtype 7");
}


// ------------------------------------------------------------------- quantized output

// --dtype q8|q4 with groups 32/64/128 from a Hugging Face directory (GPT-2: transposed Conv1D
// matrices, tied) and a llama2.c checkpoint (permuted q/k rows): each tensor of the quantized
// file is exactly the library's quantizer applied to the same tensor of the f32 conversion
// when format::quantizable says so (the transposes and permutations come first), else the f32
// bytes unchanged; the group is in the table and the summary counts the quantized tensors.
void check_quantized(const std::string &src, Scratch &sc, const char *label) {
    const std::string ref_path = sc.in_out("ref.gpt");
    expect_ok(convert(src, ref_path, GPT_DTYPE_F32, true), label);
    gpt::format::ReadOptions ro;
    auto ref = gpt::format::WeightFile::open(ref_path, ro);
    for (uint32_t q : {(uint32_t)GPT_DTYPE_Q8, (uint32_t)GPT_DTYPE_Q4})
        for (uint32_t g : {32u, 64u, 128u}) {
            char what[160];
            std::snprintf(what, sizeof what, "%s --dtype %s --group %u", label, gpt_dtype_name((int)q), g);
            const std::string path = sc.in_out("q.gpt");
            Run r;
            cv::ConvertOptions o;
            o.src = src, o.out = path, o.dtype = q, o.group = g, o.force = true, o.verify_threads = 2;
            o.on_warning = [](const std::string &) {};
            try {
                r.result = cv::convert_model(o);
            } catch (const gpt::Error &e) {
                fail_msg("%s: %s", what, e.what());
            }
            assert_true(r.result.verified);
            auto f = gpt::format::WeightFile::open(path, ro);
            size_t n_quantized = 0;
            for (const auto &t : ref->tensors()) {
                const gpt::format::TensorEntry *e = f->find(t.name);
                if (!e) fail_msg("%s: '%s' missing", what, t.name.c_str());
                const std::vector<uint64_t> shape(t.dims, t.dims + t.ndim);
                if (!gpt::format::quantizable(t.name, shape, g)) {
                    if (e->dtype != DType::F32 || e->nbytes != t.nbytes || std::memcmp(f->data(*e), ref->data(t), t.nbytes) != 0)
                        fail_msg("%s: '%s' is not the f32 tensor unchanged", what, t.name.c_str());
                    continue;
                }
                n_quantized++;
                uint64_t n = 0;
                assert_true(gpt::tensor_bytes((DType)q, t.numel(), t.dims[1], g, &n));
                std::vector<uint8_t> want(n);
                gpt::quantize_matrix(reinterpret_cast<const float *>(ref->data(t)), t.dims[0], t.dims[1], (DType)q, g, want.data(), t.name);
                if ((uint32_t)e->dtype != q || e->group != g || e->nbytes != n || std::memcmp(f->data(*e), want.data(), n) != 0)
                    fail_msg("%s: '%s' is not the quantizer's output for the f32 values", what, t.name.c_str());
            }
            assert_int_equal(r.result.n_quantized, n_quantized);
            if (n_quantized == 0) fail_msg("%s: nothing quantized", what);
        }
}

void test_convert_quantized(void **) {
    {
        Scratch sc;
        HfSpec s;
        s.type = "gpt2";
        s.d = 128, s.heads = 4, s.ff = 96, s.vocab = 61, s.ctx = 16, s.tied = true, s.seed = 31; // ff 96: down only for g32
        const HfModel m = make_hf(s);
        write_hf_dir(sc.src, m.config, m.entries(), 1);
        check_quantized(sc.src, sc, "gpt2 (Conv1D transposed)");
    }
    {
        Scratch sc;
        L2cSpec s;
        s.dim = 128, s.hidden = 96, s.heads = 4, s.kv = 2, s.vocab = 37, s.shared = false, s.seed = 32;
        write_bytes(sc.in_src("model.bin"), make_l2c(s).bytes);
        check_quantized(sc.in_src("model.bin"), sc, "llama2.c (rope rows permuted)");
    }
    {
        // Gemma-2 from bf16 with every matrix's K a multiple of 128: all matrices quantized,
        // and the norms (1 + w) must stay f32 as in every Gemma file, not the source's bf16.
        Scratch sc;
        HfSpec s = gemma2_spec();
        s.d = 128, s.heads = 4, s.kv = 2, s.head_dim = 32, s.ff = 128, s.vocab = 61, s.seed = 33;
        const HfModel m = make_hf(s);
        write_hf_dir(sc.src, m.config, m.entries(), 1);
        check_quantized(sc.src, sc, "gemma2 (bf16 source, f32 norms)");
    }
}

// ---------------------------------------------------------------- mixture of experts

// Every output tensor of a MoE checkpoint, stated from the fixture's per-expert modules:
// attention as the dense families; a MoE layer's router as is, expert e's gate rows then up
// rows from row e * 2 ff, its down rows from row e * d; Qwen2-MoE's shared expert fused
// gate | up; a dense layer (qwen's mlp_only_layers / decoder_sparse_step) as llama's FFN.
WantMap expected_moe(const HfMoeModel &m) {
    const HfMoeSpec &s = m.spec;
    const HfModel &f = m.hf;
    const uint64_t d = s.d, v = s.vocab, hd = m.hd(), qd = s.heads * hd, kvd = s.kv * hd, ff = s.ff_expert, E = s.experts;
    WantMap w;
    w["tok_emb.weight"] = {{v, d}, f.v("model.embed_tokens.weight")};
    for (uint32_t i = 0; i < s.layers; i++) {
        const std::string h = "model.layers." + std::to_string(i) + ".", at = h + "self_attn.", o = "blk." + std::to_string(i) + ".";
        w[o + "attn_norm.weight"] = {{d}, f.v(h + "input_layernorm.weight")};
        w[o + "attn_qkv.weight"] = {{qd + 2 * kvd, d}, concat({&f.v(at + "q_proj.weight"), &f.v(at + "k_proj.weight"), &f.v(at + "v_proj.weight")})};
        if (s.type == "qwen2_moe")
            w[o + "attn_qkv.bias"] = {{qd + 2 * kvd}, concat({&f.v(at + "q_proj.bias"), &f.v(at + "k_proj.bias"), &f.v(at + "v_proj.bias")})};
        if (s.type == "qwen3_moe" || s.type == "olmoe") {
            const bool whole = s.type == "olmoe";
            w[o + "attn_q_norm.weight"] = {{whole ? qd : hd}, f.v(at + "q_norm.weight")};
            w[o + "attn_k_norm.weight"] = {{whole ? kvd : hd}, f.v(at + "k_norm.weight")};
        }
        w[o + "attn_out.weight"] = {{d, qd}, f.v(at + "o_proj.weight")};
        w[o + "ffn_norm.weight"] = {{d}, f.v(h + "post_attention_layernorm.weight")};
        if (!m.moe_layer(i)) {
            w[o + "ffn_gate_up.weight"] = {{2 * (uint64_t)s.ff_dense, d}, concat({&f.v(h + "mlp.gate_proj.weight"), &f.v(h + "mlp.up_proj.weight")})};
            w[o + "ffn_down.weight"] = {{d, s.ff_dense}, f.v(h + "mlp.down_proj.weight")};
            continue;
        }
        w[o + "ffn_router.weight"] = {{E, d}, f.v(m.router(i))};
        std::vector<float> gate_up, down;
        for (uint32_t e = 0; e < E; e++) {
            for (const char *which : {"gate", "up"}) {
                const std::vector<float> &x = f.v(m.expert(i, e, which));
                gate_up.insert(gate_up.end(), x.begin(), x.end());
            }
            const std::vector<float> &x = f.v(m.expert(i, e, "down"));
            down.insert(down.end(), x.begin(), x.end());
        }
        w[o + "ffn_experts_gate_up.weight"] = {{E * 2 * ff, d}, gate_up};
        w[o + "ffn_experts_down.weight"] = {{E * d, ff}, down};
        if (s.type == "qwen2_moe") {
            const std::string se = h + "mlp.shared_expert.";
            w[o + "ffn_shared_gate_up.weight"] = {{2 * (uint64_t)s.ff_shared, d}, concat({&f.v(se + "gate_proj.weight"), &f.v(se + "up_proj.weight")})};
            w[o + "ffn_shared_down.weight"] = {{d, s.ff_shared}, f.v(se + "down_proj.weight")};
            w[o + "ffn_shared_gate.weight"] = {{1, d}, f.v(h + "mlp.shared_expert_gate.weight")};
        }
    }
    w["out_norm.weight"] = {{d}, f.v("model.norm.weight")};
    if (!s.tied) w["lm_head.weight"] = {{v, d}, f.v("lm_head.weight")};
    return w;
}

gpt_arch moe_arch(const std::string &type) {
    if (type == "mixtral") return GPT_ARCH_MIXTRAL;
    if (type == "qwen2_moe") return GPT_ARCH_QWEN2_MOE;
    if (type == "olmoe") return GPT_ARCH_OLMOE;
    return GPT_ARCH_QWEN3_MOE;
}

// The converted file's expert keys, from the spec (not from the converter's reading of it).
void expect_moe_config(const gpt::ModelConfig &c, const HfMoeModel &m, const char *what) {
    const HfMoeSpec &s = m.spec;
    const bool qwen = m.qwen();
    if (c.arch != moe_arch(s.type)) fail_msg("%s: architecture %d", what, (int)c.arch);
    assert_int_equal(c.n_experts, s.experts);
    assert_int_equal(c.n_experts_used, s.top_k);
    assert_int_equal(c.d_ff_expert, s.ff_expert);
    assert_int_equal(c.d_ff, qwen ? s.ff_dense : s.ff_expert);
    assert_int_equal(c.d_ff_shared, s.type == "qwen2_moe" ? s.ff_shared : 0);
    assert_int_equal(c.norm_topk_prob, s.type == "mixtral" ? true : s.norm_topk);
    std::vector<uint8_t> layers;
    bool all = true;
    for (uint32_t i = 0; i < s.layers; i++) {
        layers.push_back(m.moe_layer(i));
        all = all && m.moe_layer(i);
    }
    if (all) layers.clear();
    if (c.moe_layers != layers) fail_msg("%s: model.moe_layers differs from the spec's dense layers", what);
    assert_int_equal(c.qkv_bias, s.type == "qwen2_moe");
    assert_int_equal(c.head_dim, m.hd());
    assert_int_equal(c.sliding_window, s.sliding_window);
    assert_true(c.window_layers.empty()); // Mixtral: every layer
}

// The naive double reference's model from the spec (not from the converted file) and the
// expected tensors (from the per-expert modules).
RefInput moe_reference_input(const HfMoeModel &m, const WantMap &want) {
    const HfMoeSpec &s = m.spec;
    RefInput r;
    gpt::ModelConfig &c = r.config;
    c.arch = moe_arch(s.type);
    c.n_layers = s.layers, c.d_model = s.d, c.n_heads = s.heads, c.n_kv_heads = s.kv, c.head_dim = m.hd();
    c.d_ff = m.qwen() ? s.ff_dense : s.ff_expert, c.vocab_size = s.vocab, c.context_length = s.ctx, c.norm_eps = 1e-5f;
    c.rope_theta = 10000.0f, c.tied_head = s.tied, c.qkv_bias = s.type == "qwen2_moe";
    c.n_experts = s.experts, c.n_experts_used = s.top_k, c.d_ff_expert = s.ff_expert;
    c.d_ff_shared = s.type == "qwen2_moe" ? s.ff_shared : 0;
    c.norm_topk_prob = s.type == "mixtral" || s.norm_topk;
    for (uint32_t i = 0; i < s.layers; i++) c.moe_layers.push_back(m.moe_layer(i));
    c.sliding_window = s.sliding_window;
    for (const auto &[name, w] : want) r.tensors[name] = w.values;
    return r;
}

// Routing closer than this (probability gap at the top-k boundary) may go either way in f32.
constexpr double kAmbiguousRouting = 1e-6;

// Converts a MoE fixture in its own dtype, f32 and bf16: every tensor exactly the stacked
// modules, the expert keys as the spec says, the engine runs it (the converter's own
// verification); the f32 file's logits match the naive double reference's on the spec's
// config and the modules' values (1e-4); then q8: the quantization rule holds, the router
// and the shared expert's gate kept in the source's float dtype.
void check_moe(const HfMoeSpec &spec, const char *label) {
    Scratch sc;
    const HfMoeModel m = fixture::make_hf_moe(spec);
    write_hf_dir(sc.src, m.hf.config, m.hf.entries(), spec.shards);
    const WantMap want = expected_moe(m);
    const std::vector<int32_t> toks = test_tokens(spec.vocab, 9, spec.seed + 100);
    for (uint32_t req : {(uint32_t)GPT_DTYPE_AUTO, (uint32_t)GPT_DTYPE_F32, (uint32_t)GPT_DTYPE_BF16}) {
        const DType out = req == GPT_DTYPE_AUTO ? spec.dtype : req == GPT_DTYPE_F32 ? DType::F32 : DType::BF16;
        char what[200];
        std::snprintf(what, sizeof what, "%s (%s source, --dtype %s)", label, dt_name(spec.dtype), req == GPT_DTYPE_AUTO ? "default" : dt_name(out));
        const std::string path = sc.in_out("model.gpt");
        const Run r = convert(sc.src, path, req, /*force=*/true);
        expect_ok(r, what);
        assert_true(r.result.verified);
        check_tensors(path, want, out, what);
        expect_moe_config(read_config(path), m, what);
        char experts[96];
        std::snprintf(experts, sizeof experts, "experts     %u a layer, top-%u", spec.experts, spec.top_k);
        if (!contains(cv::format_summary(r.result), experts)) fail_msg("%s: the summary has no \"%s\"", what, experts);
        const std::vector<float> got = engine::cpu_logits(path, toks, spec.vocab);
        if (out != DType::F32) continue;
        RefInput ref = moe_reference_input(m, want);
        ref.layout.max_seq = (uint32_t)toks.size();
        double gap = INFINITY;
        const std::vector<double> want_logits = reference::forward(ref.config, ref.tensors, toks, ref.layout, &gap);
        if (gap < kAmbiguousRouting) fail_msg("%s: routing gap %.2g: draw the fixture with another seed", what, gap);
        expect_logits_close(got, want_logits, what);
    }
    const std::string qpath = sc.in_out("q8.gpt");
    expect_ok(convert(sc.src, qpath, GPT_DTYPE_Q8, true), label);
    gpt::format::ReadOptions ro;
    auto f = gpt::format::WeightFile::open(qpath, ro);
    size_t routers = 0, experts_quantized = 0;
    for (const auto &t : f->tensors()) {
        const std::vector<uint64_t> shape(t.dims, t.dims + t.ndim);
        const bool gate = contains(t.name, "ffn_router") || contains(t.name, "ffn_shared_gate.");
        if (gate && t.dtype != spec.dtype) fail_msg("%s q8: '%s' is %s, not the source's float dtype", label, t.name.c_str(), gpt::dtype_name(t.dtype));
        if ((t.dtype == DType::Q8) != gpt::format::quantizable(t.name, shape, gpt::format::kDefaultGroup))
            fail_msg("%s q8: '%s' is %s against the quantization rule", label, t.name.c_str(), gpt::dtype_name(t.dtype));
        routers += contains(t.name, "ffn_router");
        experts_quantized += contains(t.name, "ffn_experts_") && t.dtype == DType::Q8;
    }
    if (!experts_quantized) fail_msg("%s q8: no expert tensor quantized", label);
    size_t moe_layers = 0;
    for (uint32_t i = 0; i < spec.layers; i++) moe_layers += m.moe_layer(i);
    assert_int_equal(routers, moe_layers);
}

void test_convert_mixtral(void **) {
    HfMoeSpec s;
    s.type = "mixtral", s.experts = 4, s.top_k = 2, s.seed = 71;
    check_moe(s, "mixtral 4 experts top-2, block_sparse_moe modules");
    s.fused = true, s.experts = 5, s.top_k = 1, s.dtype = DType::BF16, s.shards = 3, s.seed = 72;
    check_moe(s, "mixtral 5 experts top-1, transformers 5 fused experts, bf16, 3 shards");
    s.fused = false, s.experts = 4, s.top_k = 2, s.dtype = DType::F32, s.shards = 1, s.sliding_window = 4, s.seed = 79;
    check_moe(s, "mixtral with a sliding window of 4 (under a 9-token prompt)");
}

void test_convert_qwen2_moe(void **) {
    HfMoeSpec s;
    s.type = "qwen2_moe", s.experts = 8, s.top_k = 4, s.ff_expert = 16, s.ff_shared = 24, s.norm_topk = false, s.seed = 73;
    s.layers = 4, s.sparse_step = 2, s.mlp_only_layers = {3}; // layer 1 alone is MoE
    check_moe(s, "qwen2_moe 8 experts top-4, shared expert, decoder_sparse_step 2 and mlp_only_layers");
    s.fused = true, s.norm_topk = true, s.sparse_step = 1, s.mlp_only_layers = {0}, s.dtype = DType::F16, s.seed = 74;
    check_moe(s, "qwen2_moe fused, norm_topk_prob, layer 0 dense, f16");
}

void test_convert_olmoe(void **) {
    HfMoeSpec s;
    s.type = "olmoe", s.experts = 16, s.top_k = 4, s.ff_expert = 8, s.heads = 4, s.kv = 4, s.seed = 75;
    check_moe(s, "olmoe 16 experts top-4, whole-projection q/k norms");
    s.fused = true, s.kv = 2, s.norm_topk = true, s.tied = true, s.seed = 76;
    check_moe(s, "olmoe fused, GQA, norm_topk_prob, tied");
}

void test_convert_qwen3_moe(void **) {
    HfMoeSpec s;
    s.type = "qwen3_moe", s.experts = 6, s.top_k = 2, s.head_dim = 12, s.norm_topk = true, s.seed = 77;
    check_moe(s, "qwen3_moe 6 experts top-2, head_dim 12");
    s.fused = true, s.experts = 4, s.top_k = 4, s.norm_topk = false, s.layers = 2, s.mlp_only_layers = {1}, s.seed = 78;
    check_moe(s, "qwen3_moe fused, top-4 of 4, layer 1 dense");
}

// Every expert identical and the chosen weights renormalised: the MoE FFN is that expert,
// so the engine's logits must match the naive reference's dense model (Llama for Mixtral,
// Qwen3 for Qwen3-MoE) on expert 0's weights - whatever the router picks. This checks
// gate/up order and the down layout end to end through the engine.
void check_moe_as_dense(HfMoeSpec s, const char *label) {
    Scratch sc;
    s.norm_topk = true;
    HfMoeModel m = fixture::make_hf_moe(s);
    for (uint32_t i = 0; i < s.layers; i++)
        for (uint32_t e = 1; e < s.experts; e++)
            for (const char *which : {"gate", "up", "down"}) m.hf.values[m.expert(i, e, which)] = m.hf.v(m.expert(i, 0, which));
    if (s.fused) m.restack();
    write_hf_dir(sc.src, m.hf.config, m.hf.entries(), 1);
    const std::string path = sc.in_out("m.gpt");
    expect_ok(convert(sc.src, path, GPT_DTYPE_F32), label);

    const HfModel &f = m.hf;
    RefInput ref;
    gpt::ModelConfig &c = ref.config;
    c.arch = s.type == "qwen3_moe" ? GPT_ARCH_QWEN3 : GPT_ARCH_LLAMA;
    c.n_layers = s.layers, c.d_model = s.d, c.n_heads = s.heads, c.n_kv_heads = s.kv, c.head_dim = m.hd();
    c.d_ff = s.ff_expert, c.vocab_size = s.vocab, c.context_length = s.ctx, c.norm_eps = 1e-5f, c.rope_theta = 10000.0f;
    c.tied_head = s.tied;
    reference::TensorMap &t = ref.tensors;
    t["tok_emb.weight"] = f.v("model.embed_tokens.weight");
    for (uint32_t i = 0; i < s.layers; i++) {
        const std::string h = "model.layers." + std::to_string(i) + ".", at = h + "self_attn.", o = "blk." + std::to_string(i) + ".";
        t[o + "attn_norm.weight"] = f.v(h + "input_layernorm.weight");
        t[o + "attn_qkv.weight"] = concat({&f.v(at + "q_proj.weight"), &f.v(at + "k_proj.weight"), &f.v(at + "v_proj.weight")});
        if (c.arch == GPT_ARCH_QWEN3) {
            t[o + "attn_q_norm.weight"] = f.v(at + "q_norm.weight");
            t[o + "attn_k_norm.weight"] = f.v(at + "k_norm.weight");
        }
        t[o + "attn_out.weight"] = f.v(at + "o_proj.weight");
        t[o + "ffn_norm.weight"] = f.v(h + "post_attention_layernorm.weight");
        t[o + "ffn_gate_up.weight"] = concat({&f.v(m.expert(i, 0, "gate")), &f.v(m.expert(i, 0, "up"))});
        t[o + "ffn_down.weight"] = f.v(m.expert(i, 0, "down"));
    }
    t["out_norm.weight"] = f.v("model.norm.weight");
    if (!s.tied) t["lm_head.weight"] = f.v("lm_head.weight");
    const std::vector<int32_t> toks = test_tokens(s.vocab, 8, s.seed + 7);
    ref.layout.max_seq = (uint32_t)toks.size();
    expect_logits_close(engine::cpu_logits(path, toks, s.vocab), ref.forward(toks), label);
}

void test_convert_moe_identical_experts(void **) {
    HfMoeSpec s;
    s.type = "mixtral", s.experts = 4, s.top_k = 2, s.seed = 81;
    check_moe_as_dense(s, "mixtral, 4 identical experts top-2 = llama");
    s.type = "qwen3_moe", s.experts = 8, s.top_k = 3, s.head_dim = 16, s.fused = true, s.seed = 82;
    check_moe_as_dense(s, "qwen3_moe fused, 8 identical experts top-3 = qwen3");
}

// Damaged MoE checkpoints: each refused naming the tensor or the key, nothing written.
void test_convert_moe_rejects(void **) {
    struct Case {
        const char *what;
        HfMoeSpec spec;
        std::function<void(HfMoeModel &, std::vector<StEntry> &, json &)> damage;
        gpt_status status;
        std::vector<std::string> names;
    };
    HfMoeSpec mixtral;
    mixtral.type = "mixtral";
    HfMoeSpec qwen2 = mixtral;
    qwen2.type = "qwen2_moe";
    HfMoeSpec fused = mixtral;
    fused.fused = true;
    auto drop = [](std::vector<StEntry> &e, const std::string &name) {
        const size_t n = e.size();
        e.erase(std::remove_if(e.begin(), e.end(), [&](const StEntry &x) { return x.name == name; }), e.end());
        assert_int_equal(e.size(), n - 1);
    };
    auto reshape = [](std::vector<StEntry> &e, const std::string &name, std::vector<uint64_t> shape) {
        for (auto &x : e)
            if (x.name == name) {
                uint64_t n = 4;
                for (uint64_t s : shape) n *= s;
                x.shape = shape;
                x.bytes.assign(n, 0);
                return;
            }
        fail_msg("no tensor %s", name.c_str());
    };
    const std::vector<Case> cases = {
        {"an expert's w2 missing", mixtral, [&](HfMoeModel &, std::vector<StEntry> &e, json &) { drop(e, "model.layers.1.block_sparse_moe.experts.2.w2.weight"); },
         GPT_ERR_FORMAT, {"model.layers.1.block_sparse_moe.experts.2.w2.weight", "missing"}},
        {"an expert's up_proj of another width", qwen2,
         [&](HfMoeModel &, std::vector<StEntry> &e, json &) { reshape(e, "model.layers.0.mlp.experts.1.up_proj.weight", {25, 32}); },
         GPT_ERR_FORMAT, {"model.layers.0.mlp.experts.1.up_proj.weight", "[25, 32]", "[24, 32]"}},
        {"the router's rows", mixtral, [&](HfMoeModel &, std::vector<StEntry> &e, json &) { reshape(e, "model.layers.2.block_sparse_moe.gate.weight", {5, 32}); },
         GPT_ERR_FORMAT, {"model.layers.2.block_sparse_moe.gate.weight", "[5, 32]", "[4, 32]"}},
        {"an expert more than num_local_experts", mixtral,
         [&](HfMoeModel &, std::vector<StEntry> &e, json &) {
             StEntry x = e[1];
             x.name = "model.layers.0.block_sparse_moe.experts.4.w1.weight";
             e.push_back(x);
         },
         GPT_ERR_FORMAT, {"model.layers.0.block_sparse_moe.experts.4.w1.weight", "not part of"}},
        {"top-k above the experts", mixtral, [&](HfMoeModel &, std::vector<StEntry> &, json &c) { c["num_experts_per_tok"] = 5; },
         GPT_ERR_FORMAT, {"config.json", "num_experts_per_tok", "num_local_experts"}},
        {"fused gate_up stored [E, d, 2ff]", fused,
         [&](HfMoeModel &, std::vector<StEntry> &e, json &) { reshape(e, "model.layers.0.mlp.experts.gate_up_proj", {4, 32, 48}); },
         GPT_ERR_FORMAT, {"model.layers.0.mlp.experts.gate_up_proj", "[4, 32, 48]", "[4, 48, 32]"}},
        {"fused down_proj missing", fused, [&](HfMoeModel &, std::vector<StEntry> &e, json &) { drop(e, "model.layers.1.mlp.experts.down_proj"); },
         GPT_ERR_FORMAT, {"model.layers.1.mlp.experts.down_proj", "missing"}},
        {"a shared expert gate missing", qwen2, [&](HfMoeModel &, std::vector<StEntry> &e, json &) { drop(e, "model.layers.2.mlp.shared_expert_gate.weight"); },
         GPT_ERR_FORMAT, {"model.layers.2.mlp.shared_expert_gate.weight", "missing"}},
        {"mlp_only_layers past the layers", qwen2, [&](HfMoeModel &, std::vector<StEntry> &, json &c) { c["mlp_only_layers"] = {0, 3}; },
         GPT_ERR_FORMAT, {"config.json", "mlp_only_layers", "3"}},
        {"a billion layers", qwen2, [&](HfMoeModel &, std::vector<StEntry> &, json &c) { c["num_hidden_layers"] = 1000000000; },
         GPT_ERR_FORMAT, {"config.json", "num_hidden_layers"}},
        {"decoder_sparse_step 0", qwen2, [&](HfMoeModel &, std::vector<StEntry> &, json &c) { c["decoder_sparse_step"] = 0; },
         GPT_ERR_FORMAT, {"config.json", "decoder_sparse_step"}},
        {"olmoe clip_qkv", [] { HfMoeSpec s; s.type = "olmoe"; return s; }(),
         [&](HfMoeModel &, std::vector<StEntry> &, json &c) { c["clip_qkv"] = 8.0; }, GPT_ERR_UNSUPPORTED, {"config.json", "clip_qkv"}},
        {"use_sliding_window", qwen2, [&](HfMoeModel &, std::vector<StEntry> &, json &c) { c["use_sliding_window"] = true; c["sliding_window"] = 8; },
         GPT_ERR_UNSUPPORTED, {"config.json", "sliding_window"}},
        {"too many experts", mixtral, [&](HfMoeModel &, std::vector<StEntry> &, json &c) { c["num_local_experts"] = 100000; },
         GPT_ERR_UNSUPPORTED, {"config.json", "num_local_experts"}},
    };
    for (const Case &k : cases) {
        Scratch sc;
        HfMoeModel m = fixture::make_hf_moe(k.spec);
        std::vector<StEntry> e = m.hf.entries();
        json c = json::parse(m.hf.config);
        k.damage(m, e, c);
        write_hf_dir(sc.src, c.dump(), e, 1);
        const Run r = convert(sc.src, sc.in_out("m.gpt"));
        if (r.status == GPT_OK) fail_msg("%s: converted, expected a failure", k.what);
        if (r.status != k.status) fail_msg("%s: failed with %s (%s)", k.what, gpt_status_str(r.status), r.message.c_str());
        for (const std::string &p : k.names)
            if (!contains(r.message, p)) fail_msg("%s: message \"%s\" does not name \"%s\"", k.what, r.message.c_str(), p.c_str());
        if (!list_dir(sc.out).empty()) fail_msg("%s: left a file in the output directory", k.what);
        std::printf("# %s: %s\n", k.what, r.message.c_str());
    }
}

// config.json of published MoE models (their keys as released): each family's expert keys.
void test_convert_hf_config_moe(void **) {
    const cv::HfConfig mixtral = parse_config(R"({"architectures": ["MixtralForCausalLM"], "model_type": "mixtral",
        "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "max_position_embeddings": 32768, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0,
        "sliding_window": null, "num_local_experts": 8, "num_experts_per_tok": 2, "output_router_logits": false,
        "router_aux_loss_coef": 0.02, "vocab_size": 32000, "tie_word_embeddings": false, "hidden_act": "silu",
        "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "bfloat16"})");
    assert_int_equal(mixtral.config.arch, GPT_ARCH_MIXTRAL);
    assert_int_equal(mixtral.config.n_experts, 8);
    assert_int_equal(mixtral.config.n_experts_used, 2);
    assert_int_equal(mixtral.config.d_ff_expert, 14336);
    assert_true(mixtral.config.norm_topk_prob);
    assert_true(mixtral.config.moe_layers.empty());
    assert_int_equal(mixtral.config.d_ff_shared, 0);

    const cv::HfConfig qwen15 = parse_config(R"({"architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe",
        "hidden_size": 2048, "intermediate_size": 5632, "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
        "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16, "num_experts": 60,
        "num_experts_per_tok": 4, "norm_topk_prob": false, "decoder_sparse_step": 1, "max_position_embeddings": 8192,
        "rope_theta": 1000000.0, "rms_norm_eps": 1e-06, "use_sliding_window": false, "sliding_window": 32768,
        "max_window_layers": 21, "vocab_size": 151936, "tie_word_embeddings": false, "hidden_act": "silu",
        "output_router_logits": false, "router_aux_loss_coef": 0.001, "bos_token_id": 151643, "eos_token_id": 151643})");
    assert_int_equal(qwen15.config.arch, GPT_ARCH_QWEN2_MOE);
    assert_int_equal(qwen15.config.n_experts, 60);
    assert_int_equal(qwen15.config.n_experts_used, 4);
    assert_int_equal(qwen15.config.d_ff_expert, 1408);
    assert_int_equal(qwen15.config.d_ff_shared, 5632);
    assert_int_equal(qwen15.config.d_ff, 5632);
    assert_false(qwen15.config.norm_topk_prob);
    assert_true(qwen15.config.qkv_bias);
    assert_int_equal(qwen15.config.sliding_window, 0);

    const cv::HfConfig olmoe = parse_config(R"({"architectures": ["OlmoeForCausalLM"], "model_type": "olmoe",
        "hidden_size": 2048, "intermediate_size": 1024, "num_hidden_layers": 16, "num_attention_heads": 16,
        "num_key_value_heads": 16, "num_experts": 64, "num_experts_per_tok": 8, "norm_topk_prob": false, "clip_qkv": null,
        "max_position_embeddings": 4096, "rope_theta": 10000.0, "rope_scaling": null, "rms_norm_eps": 1e-05,
        "attention_bias": false, "vocab_size": 50304, "tie_word_embeddings": false, "hidden_act": "silu",
        "output_router_logits": false, "router_aux_loss_coef": 0.01, "bos_token_id": null, "eos_token_id": 50279})");
    assert_int_equal(olmoe.config.arch, GPT_ARCH_OLMOE);
    assert_int_equal(olmoe.config.n_experts, 64);
    assert_int_equal(olmoe.config.n_experts_used, 8);
    assert_int_equal(olmoe.config.d_ff_expert, 1024);
    assert_false(olmoe.config.norm_topk_prob);
    assert_false(olmoe.config.qkv_bias);

    const cv::HfConfig qwen3 = parse_config(R"({"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
        "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768, "num_hidden_layers": 48,
        "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "num_experts": 128, "num_experts_per_tok": 8,
        "norm_topk_prob": true, "decoder_sparse_step": 1, "mlp_only_layers": [], "max_position_embeddings": 40960,
        "rope_theta": 1000000.0, "rope_scaling": null, "rms_norm_eps": 1e-06, "attention_bias": false,
        "use_sliding_window": false, "sliding_window": null, "max_window_layers": 48, "vocab_size": 151936,
        "tie_word_embeddings": false, "hidden_act": "silu", "bos_token_id": 151643, "eos_token_id": 151645})");
    assert_int_equal(qwen3.config.arch, GPT_ARCH_QWEN3_MOE);
    assert_int_equal(qwen3.config.n_experts, 128);
    assert_int_equal(qwen3.config.n_experts_used, 8);
    assert_int_equal(qwen3.config.d_ff_expert, 768);
    assert_int_equal(qwen3.config.head_dim, 128);
    assert_true(qwen3.config.norm_topk_prob);
    assert_true(qwen3.config.moe_layers.empty());
    assert_int_equal(qwen3.config.d_ff_shared, 0);

    // decoder_sparse_step 2 and mlp_only_layers [3]: layers 1 and 5 are MoE, the rest dense.
    const cv::HfConfig mixed = parse_config(R"({"model_type": "qwen3_moe", "hidden_size": 64, "intermediate_size": 96,
        "moe_intermediate_size": 32, "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 2,
        "num_experts": 8, "num_experts_per_tok": 2, "decoder_sparse_step": 2, "mlp_only_layers": [3],
        "vocab_size": 100, "max_position_embeddings": 64})");
    assert_true(mixed.config.moe_layers == std::vector<uint8_t>({0, 1, 0, 0, 0, 1}));
    assert_false(mixed.config.norm_topk_prob); // Qwen3MoeConfig's default
}

// -------------------------------------------------------------------- output safety

// OUT is never overwritten without --force; with --force a failed conversion leaves it as
// it was; an interrupt leaves nothing. Each starts from a llama2.c checkpoint in src/ and an
// OUT holding "old".
struct ExistingOut {
    Scratch sc;
    L2cModel lm = make_l2c(L2cSpec{});
    std::string out = sc.in_out("m.gpt");
    std::vector<uint8_t> old = {'o', 'l', 'd'};
    ExistingOut() {
        write_bytes(sc.in_src("model.bin"), lm.bytes);
        write_bytes(out, old);
    }
};

void test_convert_keeps_existing_output(void **) {
    ExistingOut e;
    Run r = convert(e.sc.in_src("model.bin"), e.out);
    assert_int_equal(r.status, GPT_ERR_IO);
    assert_true(contains(r.message, e.out) && contains(r.message, "already exists") && contains(r.message, "--force"));
    assert_true(read_bytes(e.out) == e.old);
    assert_true(list_dir(e.sc.out) == std::vector<std::string>{"m.gpt"});
}

// --force with a bad source: the old file survives, nothing else appears.
void test_convert_force_failure_keeps_output(void **) {
    ExistingOut e;
    std::vector<uint8_t> bad = e.lm.bytes;
    bad.resize(bad.size() - 8);
    write_bytes(e.sc.in_src("bad.bin"), bad);
    Run r = convert(e.sc.in_src("bad.bin"), e.out, GPT_DTYPE_AUTO, true);
    assert_int_equal(r.status, GPT_ERR_FORMAT);
    assert_true(read_bytes(e.out) == e.old);
    assert_true(list_dir(e.sc.out) == std::vector<std::string>{"m.gpt"});
}

// An interrupt (the flag a signal handler sets) during writing.
void test_convert_interrupt_keeps_output(void **) {
    ExistingOut e;
    volatile std::sig_atomic_t stop = 1;
    Run r = convert(e.sc.in_src("model.bin"), e.out, GPT_DTYPE_AUTO, true, "", &stop);
    assert_int_equal(r.status, GPT_ERR_ABORTED);
    assert_true(read_bytes(e.out) == e.old);
    assert_true(list_dir(e.sc.out) == std::vector<std::string>{"m.gpt"});
}

// --force replaces it.
void test_convert_force_replaces_output(void **) {
    ExistingOut e;
    Run r = convert(e.sc.in_src("model.bin"), e.out, GPT_DTYPE_AUTO, true);
    expect_ok(r, "--force");
    assert_true(read_bytes(e.out) != e.old);
    assert_true(list_dir(e.sc.out) == std::vector<std::string>{"m.gpt"});
    (void)read_config(e.out);
}

// --force replaces a regular file only: a FIFO or a symbolic link at OUT is refused with
// nothing changed (regression: `gpt convert SRC /dev/null --force` replaced /dev/null).
void test_convert_force_refuses_non_regular_output(void **) {
    ExistingOut e;
    const std::string fifo = e.sc.in_out("fifo.gpt"), link = e.sc.in_out("link.gpt");
    assert_int_equal(mkfifo(fifo.c_str(), 0600), 0);
    assert_int_equal(symlink(e.out.c_str(), link.c_str()), 0);
    for (const std::string &out : {fifo, link}) {
        Run r = convert(e.sc.in_src("model.bin"), out, GPT_DTYPE_AUTO, true);
        if (r.status != GPT_ERR_IO || !contains(r.message, "only a regular file is replaced"))
            fail_msg("%s: %s (%s)", out.c_str(), gpt_status_str(r.status), r.message.c_str());
    }
    struct stat st;
    assert_int_equal(lstat(fifo.c_str(), &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(lstat(link.c_str(), &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_true(read_bytes(e.out) == e.old);
    assert_true((list_dir(e.sc.out) == std::vector<std::string>{"fifo.gpt", "link.gpt", "m.gpt"}));
}

// No input of the conversion is ever overwritten, under any name (regression: only SRC itself
// was guarded, so --force could replace a shard, config.json or the tokenizer): OUT as a
// safetensors shard, config.json, a hard link to a shard, and llama2.c's tokenizer.bin.
void test_convert_force_refuses_inputs(void **) {
    Scratch sc;
    fixture::HfSpec spec;
    spec.shards = 2;
    const HfModel m = make_hf(spec);
    write_hf_dir(sc.src, m.config, m.entries(), spec.shards);
    std::vector<std::string> inputs;
    for (const std::string &n : list_dir(sc.src)) inputs.push_back(sc.in_src(n));
    const std::string linked = sc.in_out("linked.gpt");
    assert_int_equal(link(sc.in_src(fixture::shard_name(0, 2)).c_str(), linked.c_str()), 0);
    std::vector<std::string> outs = inputs;
    outs.push_back(linked);
    for (const std::string &out : outs) {
        const std::vector<uint8_t> before = read_bytes(out);
        Run r = convert(sc.src, out, GPT_DTYPE_AUTO, true);
        if (r.status != GPT_ERR_INVALID_ARG || !contains(r.message, "is an input of this conversion"))
            fail_msg("OUT %s: %s (%s)", out.c_str(), gpt_status_str(r.status), r.message.c_str());
        if (read_bytes(out) != before) fail_msg("OUT %s: the input changed", out.c_str());
    }
    // llama2.c: the checkpoint's tokenizer.bin.
    const L2cSpec ls = l2c_tokenizer_spec();
    write_bytes(sc.in_src("model.bin"), make_l2c(ls).bytes);
    write_bytes(sc.in_src("tokenizer.bin"), l2c_tokenizer_bin(ls.vocab));
    Run r = convert(sc.in_src("model.bin"), sc.in_src("tokenizer.bin"), GPT_DTYPE_AUTO, true);
    assert_int_equal(r.status, GPT_ERR_INVALID_ARG);
    assert_true(contains(r.message, "tokenizer.bin") && contains(r.message, "is an input"));
    assert_true(read_bytes(sc.in_src("tokenizer.bin")) == l2c_tokenizer_bin(ls.vocab));
}

// The output's permissions: a new file gets 0666 less the umask, a replaced file keeps its
// mode (regression: always 0644).
void test_convert_output_mode(void **) {
    ExistingOut e;
    const mode_t old_umask = umask(027);
    const std::string fresh = e.sc.in_out("fresh.gpt");
    Run r = convert(e.sc.in_src("model.bin"), fresh);
    umask(old_umask);
    expect_ok(r, "new file under umask 027");
    struct stat st;
    assert_int_equal(stat(fresh.c_str(), &st), 0);
    if ((st.st_mode & 07777) != 0640) fail_msg("new file mode %o, expected 640 (umask 027)", st.st_mode & 07777);
    assert_int_equal(chmod(e.out.c_str(), 0600), 0);
    r = convert(e.sc.in_src("model.bin"), e.out, GPT_DTYPE_AUTO, true);
    expect_ok(r, "--force over a 0600 file");
    assert_int_equal(stat(e.out.c_str(), &st), 0);
    if ((st.st_mode & 07777) != 0600) fail_msg("replaced file mode %o, expected 600", st.st_mode & 07777);
}

// Output names up to the file-name limit (255 bytes): the staging name beside it stays within
// the limit too (regression: names of 230-255 bytes could never be written).
void test_convert_long_output_name(void **) {
    ExistingOut e;
    for (size_t len : {230u, 250u, 255u}) {
        const std::string name = std::string(len - 4, 'n') + ".gpt";
        Run r = convert(e.sc.in_src("model.bin"), e.sc.in_out(name));
        char what[64];
        std::snprintf(what, sizeof what, "a %zu-byte output name", len);
        expect_ok(r, what);
        (void)read_config(e.sc.in_out(name));
    }
    assert_int_equal(list_dir(e.sc.out).size(), 4);
}

// A FIFO as the source, or as a file the source directory names (config.json): refused at
// once naming what it is (regression: "no such file or directory" for a FIFO SRC, and a
// FIFO config.json blocked the converter in open()).
void test_convert_refuses_fifo_inputs(void **) {
    Scratch sc;
    const std::string fifo = sc.in_src("model.bin");
    assert_int_equal(mkfifo(fifo.c_str(), 0600), 0);
    Run r = convert(fifo, sc.in_out("a.gpt"));
    if (r.status != GPT_ERR_IO || !contains(r.message, "is a FIFO")) fail_msg("FIFO SRC: %s", r.message.c_str());
    const std::string dir = sc.root + "/hf";
    mkdir(dir.c_str(), 0755);
    assert_int_equal(mkfifo((dir + "/config.json").c_str(), 0600), 0);
    r = convert(dir, sc.in_out("b.gpt"));
    if (r.status != GPT_ERR_IO || !contains(r.message, "config.json: is a FIFO")) fail_msg("FIFO config.json: %s", r.message.c_str());
    assert_true(list_dir(sc.out).empty());
}

// ----------------------------------------------------------------------- the command

// Runs argv, stdout and stderr to files; returns the exit status.
int run_tool(const std::vector<std::string> &args, const std::string &log) {
    std::vector<char *> argv;
    for (const auto &a : args) argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) fail_msg("cannot run %s: %s", argv[0], strerror(rc));
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// The `gpt convert` command itself, once: success (summary), and a refusal.
void test_convert_command(void **) {
    const char *tool = std::getenv("GPT_TOOL");
    if (!tool || !*tool) {
        std::printf("# GPT_TOOL not set (meson sets it): skipping the command test\n");
        skip();
    }
    Scratch sc;
    HfSpec s;
    s.type = "qwen2", s.d = 32, s.heads = 4, s.kv = 1, s.ff = 40, s.vocab = 45, s.shards = 2;
    const HfModel m = make_hf(s);
    write_hf_dir(sc.src, m.config, m.entries(), s.shards);
    const std::string out = sc.in_out("q.gpt"), log = sc.root + "/log.txt";
    int rc = run_tool({tool, "convert", sc.src, out, "--dtype", "f16", "--progress"}, log);
    const std::string text = read_text(log);
    if (rc != 0) fail_msg("gpt convert exited %d:\n%s", rc, text.c_str());
    assert_true(contains(text, "writing [") && contains(text, "verified") && contains(text, "qwen2"));
    check_tensors(out, expected_hf(m), DType::F16, "gpt convert --dtype f16");
    rc = run_tool({tool, "convert", sc.src, out}, log);
    assert_int_equal(rc, 1);
    assert_true(contains(read_text(log), "already exists"));
    rc = run_tool({tool, "convert", sc.src, out, "--dtype", "f64"}, log);
    assert_int_equal(rc, 2);
    assert_true(list_dir(sc.out) == std::vector<std::string>{"q.gpt"});
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_convert_safetensors_header),
        cmocka_unit_test(test_convert_safetensors_header_malformed),
        cmocka_unit_test(test_convert_safetensors_header_length),
        cmocka_unit_test(test_convert_hf_config_llama),
        cmocka_unit_test(test_convert_hf_config_qwen2_rope_parameters),
        cmocka_unit_test(test_convert_hf_config_mistral_sliding_window),
        cmocka_unit_test(test_convert_hf_config_qwen2_sliding_window),
        cmocka_unit_test(test_convert_hf_config_gemma2),
        cmocka_unit_test(test_convert_hf_config_gemma3),
        cmocka_unit_test(test_convert_hf_config_gpt2_defaults),
        cmocka_unit_test(test_convert_hf_config_rejects),
        cmocka_unit_test(test_convert_hf_config_moe),
        cmocka_unit_test(test_convert_mixtral),
        cmocka_unit_test(test_convert_qwen2_moe),
        cmocka_unit_test(test_convert_olmoe),
        cmocka_unit_test(test_convert_qwen3_moe),
        cmocka_unit_test(test_convert_moe_identical_experts),
        cmocka_unit_test(test_convert_moe_rejects),
        cmocka_unit_test(test_convert_gpt2_tied),
        cmocka_unit_test(test_convert_gpt2_untied_sharded),
        cmocka_unit_test(test_convert_gpt2_tied_head_copy),
        cmocka_unit_test(test_convert_llama_gqa),
        cmocka_unit_test(test_convert_llama_head_dim_tied),
        cmocka_unit_test(test_convert_llama_wide_q_sharded),
        cmocka_unit_test(test_convert_mistral),
        cmocka_unit_test(test_convert_gemma2),
        cmocka_unit_test(test_convert_gemma3),
        cmocka_unit_test(test_convert_gemma3_layer_types),
        cmocka_unit_test(test_convert_qwen2_sliding_window),
        cmocka_unit_test(test_convert_qwen2_tied),
        cmocka_unit_test(test_convert_qwen2_untied),
        cmocka_unit_test(test_convert_hf_config_llama32),
        cmocka_unit_test(test_convert_hf_config_phi),
        cmocka_unit_test(test_convert_hf_config_qwen3),
        cmocka_unit_test(test_convert_llama3_scaled_tied),
        cmocka_unit_test(test_convert_mistral_linear_scaling),
        cmocka_unit_test(test_convert_qwen3),
        cmocka_unit_test(test_convert_phi3_window),
        cmocka_unit_test(test_convert_phi3_partial_long),
        cmocka_unit_test(test_convert_llama2c_v0_unshared),
        cmocka_unit_test(test_convert_llama2c_v0_shared),
        cmocka_unit_test(test_convert_llama2c_v0_head_size_6),
        cmocka_unit_test(test_convert_llama2c_v1),
        cmocka_unit_test(test_convert_llama2c_tokenizer),
        cmocka_unit_test(test_convert_llama2c_tokenizer_option),
        cmocka_unit_test(test_convert_llama2c_tokenizer_wrong_size),
        cmocka_unit_test(test_convert_hf_tokenizer_padding),
        cmocka_unit_test(test_convert_keeps_chat_template),
        cmocka_unit_test(test_import_chat_template_sources),
        cmocka_unit_test(test_convert_rejects_missing_tensor),
        cmocka_unit_test(test_convert_rejects_shape_mismatch),
        cmocka_unit_test(test_convert_rejects_unexpected_tensor),
        cmocka_unit_test(test_convert_rejects_unknown_model_type),
        cmocka_unit_test(test_convert_rejects_malformed_config),
        cmocka_unit_test(test_convert_rejects_f64_i32_tensors),
        cmocka_unit_test(test_convert_rejects_truncated_shard),
        cmocka_unit_test(test_convert_rejects_index_shard_mismatch),
        cmocka_unit_test(test_convert_rejects_bad_safetensors_headers),
        cmocka_unit_test(test_convert_rejects_truncated_llama2c),
        cmocka_unit_test(test_convert_rejects_oversized_llama2c),
        cmocka_unit_test(test_convert_rejects_f16_overflow),
        cmocka_unit_test(test_convert_rejects_nan_weights),
        cmocka_unit_test(test_convert_rejects_bad_dtype),
        cmocka_unit_test(test_convert_quantized),
        cmocka_unit_test(test_convert_keeps_existing_output),
        cmocka_unit_test(test_convert_force_failure_keeps_output),
        cmocka_unit_test(test_convert_interrupt_keeps_output),
        cmocka_unit_test(test_convert_force_replaces_output),
        cmocka_unit_test(test_convert_force_refuses_non_regular_output),
        cmocka_unit_test(test_convert_force_refuses_inputs),
        cmocka_unit_test(test_convert_output_mode),
        cmocka_unit_test(test_convert_long_output_name),
        cmocka_unit_test(test_convert_refuses_fifo_inputs),
        cmocka_unit_test(test_convert_command),
    };
    return cmocka_run_group_tests_name("convert", tests, nullptr, nullptr);
}
