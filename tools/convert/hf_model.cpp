// hf_model.cpp - Hugging Face tensor names -> our tensor table (see hf_model.h).
#include "convert/hf_model.h"
#include "convert/hf_model_moe.h"
#include "convert/hf_source.h"

#include "convert/fs_util.h"
#include "core/error.h"
#include "core/half.h"

#include <cstring>
#include <set>

namespace gpt::convert {


namespace {

bool same_bytes(const StTensor &a, const StTensor &b) {
    return a.dtype == b.dtype && a.shape == b.shape && a.end - a.begin == b.end - b.begin &&
           std::memcmp(a.data, b.data, (size_t)(a.end - a.begin)) == 0;
}

bool all_zero(const SrcMatrix &m) {
    const size_t es = m.dtype == DType::F32 ? 4 : 2;
    for (uint64_t i = 0; i < m.rows * m.cols; i++) {
        float v;
        if (es == 4) std::memcpy(&v, m.data + 4 * i, 4);
        else {
            uint16_t h;
            std::memcpy(&h, m.data + 2 * i, 2);
            v = m.dtype == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
        }
        if (v != 0.0f) return false;
    }
    return true;
}

void add(TensorPlan &p, const std::string &name, std::vector<uint64_t> shape, std::vector<SrcMatrix> parts) {
    p.tensors.push_back(PlannedTensor{name, std::move(shape), std::move(parts)});
}

void plan_gpt2(TensorPlan &p, Source &s, const HfConfig &h) {
    ModelConfig &c = p.config;
    const uint64_t d = c.d_model, v = c.vocab_size, ff = c.d_ff, qkv = c.qkv_dim();
    add(p, "tok_emb.weight", {v, d}, {s.matrix("wte.weight", v, d)});
    add(p, "pos_emb.weight", {c.context_length, d}, {s.matrix("wpe.weight", c.context_length, d)});
    for (uint32_t i = 0; i < c.n_layers; i++) {
        const std::string hf = "h." + std::to_string(i) + ".", o = "blk." + std::to_string(i) + ".";
        add(p, o + "attn_norm.weight", {d}, {s.vector(hf + "ln_1.weight", d)});
        add(p, o + "attn_norm.bias", {d}, {s.vector(hf + "ln_1.bias", d)});
        add(p, o + "attn_qkv.weight", {qkv, d}, {s.matrix(hf + "attn.c_attn.weight", qkv, d, true)});
        add(p, o + "attn_qkv.bias", {qkv}, {s.vector(hf + "attn.c_attn.bias", qkv)});
        add(p, o + "attn_out.weight", {d, d}, {s.matrix(hf + "attn.c_proj.weight", d, d, true)});
        add(p, o + "attn_out.bias", {d}, {s.vector(hf + "attn.c_proj.bias", d)});
        add(p, o + "ffn_norm.weight", {d}, {s.vector(hf + "ln_2.weight", d)});
        add(p, o + "ffn_norm.bias", {d}, {s.vector(hf + "ln_2.bias", d)});
        add(p, o + "ffn_up.weight", {ff, d}, {s.matrix(hf + "mlp.c_fc.weight", ff, d, true)});
        add(p, o + "ffn_up.bias", {ff}, {s.vector(hf + "mlp.c_fc.bias", ff)});
        add(p, o + "ffn_down.weight", {d, ff}, {s.matrix(hf + "mlp.c_proj.weight", d, ff, true)});
        add(p, o + "ffn_down.bias", {d}, {s.vector(hf + "mlp.c_proj.bias", d)});
    }
    add(p, "out_norm.weight", {d}, {s.vector("ln_f.weight", d)});
    add(p, "out_norm.bias", {d}, {s.vector("ln_f.bias", d)});

    // The head: tied when absent or equal to wte; transformers ties it whenever
    // tie_word_embeddings is true, whatever the file holds.
    const StTensor *head = s.find("lm_head.weight");
    const StTensor &wte = s.need("wte.weight");
    if (!head) {
        if (!h.config.tied_head)
            fail(GPT_ERR_FORMAT, "%s: tie_word_embeddings is false but tensor 'lm_head.weight' is missing", wte.file.c_str());
        c.tied_head = true;
    } else if (same_bytes(*head, wte)) {
        s.mark_used(*head);
        c.tied_head = true;
    } else if (h.config.tied_head) {
        s.mark_used(*head);
        c.tied_head = true;
        p.warnings.push_back(head->file + ": tensor 'lm_head.weight' differs from wte.weight but tie_word_embeddings is true; "
                                          "transformers ignores it, so does this conversion");
    } else {
        c.tied_head = false;
        add(p, "lm_head.weight", {v, d}, {s.matrix(head->name, v, d)});
    }
}

void plan_llama(TensorPlan &p, Source &s, const HfConfig &h) {
    ModelConfig &c = p.config;
    const uint64_t d = c.d_model, v = c.vocab_size, ff = c.d_ff, qd = c.q_dim(), kvd = c.kv_dim(), hd = c.head_dim;
    const bool phi3 = c.arch == GPT_ARCH_PHI3, qwen3 = c.arch == GPT_ARCH_QWEN3 || c.arch == GPT_ARCH_QWEN3_MOE;
    add(p, "tok_emb.weight", {v, d}, {s.matrix("model.embed_tokens.weight", v, d)});
    for (uint32_t i = 0; i < c.n_layers; i++) {
        const std::string hf = "model.layers." + std::to_string(i) + ".", o = "blk." + std::to_string(i) + ".";
        const std::string at = hf + "self_attn.", mlp = hf + "mlp.";
        add(p, o + "attn_norm.weight", {d}, {s.vector(hf + "input_layernorm.weight", d)});
        // Phi-3 stores q, k, v rows already fused in our order (Phi3Attention slices qkv_proj so).
        if (phi3)
            add(p, o + "attn_qkv.weight", {qd + 2 * kvd, d}, {s.matrix(at + "qkv_proj.weight", qd + 2 * kvd, d)});
        else
            add(p, o + "attn_qkv.weight", {qd + 2 * kvd, d},
                {s.matrix(at + "q_proj.weight", qd, d), s.matrix(at + "k_proj.weight", kvd, d), s.matrix(at + "v_proj.weight", kvd, d)});
        if (c.qkv_bias)
            add(p, o + "attn_qkv.bias", {qd + 2 * kvd},
                {s.vector(at + "q_proj.bias", qd), s.vector(at + "k_proj.bias", kvd), s.vector(at + "v_proj.bias", kvd)});
        if (qwen3) {
            add(p, o + "attn_q_norm.weight", {hd}, {s.vector(at + "q_norm.weight", hd)});
            add(p, o + "attn_k_norm.weight", {hd}, {s.vector(at + "k_norm.weight", hd)});
        }
        if (c.arch == GPT_ARCH_OLMOE) { // RMSNorms over the whole q and k projections
            add(p, o + "attn_q_norm.weight", {qd}, {s.vector(at + "q_norm.weight", qd)});
            add(p, o + "attn_k_norm.weight", {kvd}, {s.vector(at + "k_norm.weight", kvd)});
        }
        add(p, o + "attn_out.weight", {d, qd}, {s.matrix(at + "o_proj.weight", d, qd)});
        if (h.o_proj_bias && s.find(at + "o_proj.bias")) {
            const SrcMatrix ob = s.vector(at + "o_proj.bias", d);
            if (!all_zero(ob))
                fail(GPT_ERR_UNSUPPORTED, "%s: tensor '%so_proj.bias' is not zero; an o_proj bias (attention_bias) is not supported",
                     ob.what.substr(0, ob.what.find(": tensor")).c_str(), at.c_str());
        }
        add(p, o + "ffn_norm.weight", {d}, {s.vector(hf + "post_attention_layernorm.weight", d)});
        if (c.moe_layer(i)) {
            plan_moe_ffn(p, s, i);
            continue;
        }
        // Phi-3's gate_up_proj: gate rows first (Phi3MLP chunks its output into gate, up).
        if (phi3)
            add(p, o + "ffn_gate_up.weight", {2 * ff, d}, {s.matrix(mlp + "gate_up_proj.weight", 2 * ff, d)});
        else
            add(p, o + "ffn_gate_up.weight", {2 * ff, d},
                {s.matrix(mlp + "gate_proj.weight", ff, d), s.matrix(mlp + "up_proj.weight", ff, d)});
        add(p, o + "ffn_down.weight", {d, ff}, {s.matrix(mlp + "down_proj.weight", d, ff)});
    }
    add(p, "out_norm.weight", {d}, {s.vector("model.norm.weight", d)});
    const StTensor *head = s.find("lm_head.weight");
    if (c.tied_head) {
        if (head) {
            s.mark_used(*head);
            if (!same_bytes(*head, s.need("model.embed_tokens.weight")))
                p.warnings.push_back(head->file + ": tensor 'lm_head.weight' differs from model.embed_tokens.weight but "
                                                  "tie_word_embeddings is true; transformers ignores it, so does this conversion");
        }
    } else {
        add(p, "lm_head.weight", {v, d}, {s.matrix("lm_head.weight", v, d)});
    }
}

// Gemma's RMSNorm scales by (1 + w): the file stores 1 + w, in f32 so that the sum is
// exactly transformers' (1.0 + weight.float()) whatever the checkpoint's dtype.
void add_gemma_norm(TensorPlan &p, Source &s, const std::string &name, const std::string &hf_name, uint64_t n) {
    SrcMatrix m = s.vector(hf_name, n);
    m.add = 1.0f;
    add(p, name, {n}, {m});
    p.tensors.back().keep_f32 = true;
}

void plan_gemma(TensorPlan &p, Source &s) {
    ModelConfig &c = p.config;
    const uint64_t d = c.d_model, v = c.vocab_size, ff = c.d_ff, qd = c.q_dim(), kvd = c.kv_dim(), hd = c.head_dim;
    add(p, "tok_emb.weight", {v, d}, {s.matrix("model.embed_tokens.weight", v, d)});
    for (uint32_t i = 0; i < c.n_layers; i++) {
        const std::string hf = "model.layers." + std::to_string(i) + ".", o = "blk." + std::to_string(i) + ".";
        const std::string at = hf + "self_attn.", mlp = hf + "mlp.";
        add_gemma_norm(p, s, o + "attn_norm.weight", hf + "input_layernorm.weight", d);
        add(p, o + "attn_qkv.weight", {qd + 2 * kvd, d},
            {s.matrix(at + "q_proj.weight", qd, d), s.matrix(at + "k_proj.weight", kvd, d), s.matrix(at + "v_proj.weight", kvd, d)});
        if (c.arch == GPT_ARCH_GEMMA3) {
            add_gemma_norm(p, s, o + "attn_q_norm.weight", at + "q_norm.weight", hd);
            add_gemma_norm(p, s, o + "attn_k_norm.weight", at + "k_norm.weight", hd);
        }
        add(p, o + "attn_out.weight", {d, qd}, {s.matrix(at + "o_proj.weight", d, qd)});
        // Unlike Llama's, Gemma's post_attention_layernorm normalizes the attention output.
        add_gemma_norm(p, s, o + "attn_post_norm.weight", hf + "post_attention_layernorm.weight", d);
        add_gemma_norm(p, s, o + "ffn_norm.weight", hf + "pre_feedforward_layernorm.weight", d);
        add(p, o + "ffn_gate_up.weight", {2 * ff, d}, {s.matrix(mlp + "gate_proj.weight", ff, d), s.matrix(mlp + "up_proj.weight", ff, d)});
        add(p, o + "ffn_down.weight", {d, ff}, {s.matrix(mlp + "down_proj.weight", d, ff)});
        add_gemma_norm(p, s, o + "ffn_post_norm.weight", hf + "post_feedforward_layernorm.weight", d);
    }
    add_gemma_norm(p, s, "out_norm.weight", "model.norm.weight", d);
    // The head is the embedding; a copy in the file is dropped only when it is one.
    if (const StTensor *head = s.find("lm_head.weight")) {
        if (!same_bytes(*head, s.need("model.embed_tokens.weight")))
            fail(GPT_ERR_UNSUPPORTED, "%s: tensor 'lm_head.weight' differs from model.embed_tokens.weight; Gemma ties them",
                 head->file.c_str());
        s.mark_used(*head);
    }
}

// Buffers that checkpoints carry but that are not weights.
bool skippable(const std::string &name) {
    return ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias") || ends_with(name, ".rotary_emb.inv_freq");
}

} // namespace

TensorPlan plan_hf_model(const std::string &dir, const HfConfig &h, std::shared_ptr<SafetensorsSet> st) {
    TensorPlan p;
    p.config = h.config;
    p.source = "huggingface:" + h.model_type;
    p.inputs = join_path(dir, st->description());
    for (const std::string &w : h.warnings) p.warnings.push_back(w);

    std::string prefix;
    if (h.config.arch == GPT_ARCH_GPT2 && st->find("transformer.wte.weight")) prefix = "transformer.";
    const bool quantized = h.quant.method != QuantMethod::NONE;
    Source s(dir, *st, prefix, quantized ? &h.quant : nullptr);
    if (h.config.arch == GPT_ARCH_GPT2) plan_gpt2(p, s, h);
    else if (h.config.is_gemma()) plan_gemma(p, s);
    else plan_llama(p, s, h);

    std::vector<std::string> extra;
    for (const std::string &n : s.unused())
        if (!skippable(n) && !(quantized && is_zero_bias_of_quantized(*st, n))) extra.push_back(n);
    if (!extra.empty()) {
        const StTensor *t = st->find(extra[0]);
        std::string list;
        for (size_t i = 0; i < extra.size() && i < 3; i++) list += (i ? ", '" : "'") + extra[i] + "'";
        if (extra.size() > 3) list += " and " + std::to_string(extra.size() - 3) + " more";
        fail(GPT_ERR_FORMAT, "%s: tensor %s is not part of a %s model with this config.json (%u layers); refusing to drop weights",
             t ? t->file.c_str() : dir.c_str(), list.c_str(), h.model_type.c_str(), h.config.n_layers);
    }
    if (quantized) {
        size_t n_linears = 0, act_order = 0;
        for (const PlannedTensor &t : p.tensors)
            for (const SrcMatrix &m : t.parts)
                if (m.quant) n_linears++, act_order += !m.quant->trivial_order;
        if (!n_linears)
            fail(GPT_ERR_FORMAT, "%s: config.json has a quantization_config (%s) but no tensor is quantized (no *.qweight)",
                 p.inputs.c_str(), h.quant.describe().c_str());
        if (act_order)
            p.warnings.push_back(std::to_string(act_order) + " of " + std::to_string(n_linears) + " quantized linears use act-order "
                                 "(desc_act) groups that are not contiguous along the input; they have no exact q4/q8 form and are "
                                 "dequantized (then written as --dtype asks; f16 by default)");
    }
    p.source_dtype = dominant_dtype(p.tensors);
    p.eos_ids = h.eos_ids;
    p.keep_alive.push_back(std::move(st));
    return p;
}

} // namespace gpt::convert
