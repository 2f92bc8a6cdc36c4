// convert.cpp - the conversion pipeline: detect the source, plan its tensors, find its
// tokenizer, stream everything into a staging file, verify it through the public API,
// publish it onto OUT (see convert.h for the guarantees).
#include "convert/convert.h"

#include "convert/fs_util.h"
#include "convert/hf_config.h"
#include "convert/hf_model.h"
#include "convert/char_vocab.h"
#include "convert/llama2c.h"
#include "convert/pt_checkpoint.h"
#include "convert/pt_file.h"
#include "convert/quant_import.h"
#include "convert/safetensors.h"
#include "convert/chat_template_import.h"
#include "convert/tokenizer_import.h"
#include "core/error.h"
#include "core/quant.h"
#include "core/open_file.h"
#include "core/staged_file.h"
#include "format/keys.h"
#include "format/writer.h"
#include "model/arch.h"
#include "format/quantize.h"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace gpt::convert {


namespace {

double now_s() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

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

std::string with_commas(uint64_t n) {
    std::string s = std::to_string(n), r;
    for (size_t i = 0; i < s.size(); i++) {
        if (i && (s.size() - i) % 3 == 0) r += ',';
        r += s[i];
    }
    return r;
}

bool ends_with(const std::string &s, const std::string &suf) {
    return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

// ---------------------------------------------------------------- progress bar

class ProgressBar {
public:
    explicit ProgressBar(bool on) : on_(on), tty_(isatty(2) != 0) {}
    void update(size_t done, size_t total, uint64_t bytes, uint64_t total_bytes) {
        if (!on_) return;
        const int pct = total_bytes ? (int)(100.0 * (double)bytes / (double)total_bytes) : 100;
        const double t = now_s();
        // A terminal redraws at most ~20 times a second; a log gets a line every 10%.
        if (tty_ ? (done != total && t - last_ < 0.05) : (pct / 10 == last_pct_ / 10 && done != total)) return;
        last_ = t;
        last_pct_ = pct;
        const int width = 30, fill = pct * width / 100;
        char bar[width + 1];
        for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
        bar[width] = 0;
        std::fprintf(stderr, "%swriting [%s] %3d%%  %zu/%zu tensors  %.1f/%.1f MB%s", tty_ ? "\r" : "", bar, pct, done, total,
                     (double)bytes / 1e6, (double)total_bytes / 1e6, tty_ ? "" : "\n");
        if (tty_ && done == total) std::fputc('\n', stderr);
        std::fflush(stderr);
    }

private:
    bool on_, tty_;
    double last_ = 0;
    int last_pct_ = -100;
};

// ---------------------------------------------------------------- tokenizer

struct FoundTokenizer {
    TokenizerData data;
    std::string file; // empty: none
};

// By file name: tokenizer.json (with tokenizer_config.json beside it), vocab.json/encoder.json
// (+ merges.txt/vocab.bpe), *.model (SentencePiece), *.bin (llama2.c).
FoundTokenizer import_tokenizer_file(const std::string &path, uint32_t vocab_size, ImportNotes *notes) {
    FoundTokenizer f;
    f.file = path;
    const std::string dir = dir_name(path), base = base_name(path);
    auto first_existing = [&](std::initializer_list<const char *> names) -> std::string {
        for (const char *n : names)
            if (is_regular_file(join_path(dir, n))) return join_path(dir, n);
        return "";
    };
    if (base == "vocab.json" || base == "encoder.json" || ends_with(base, "merges.txt") || ends_with(base, ".bpe")) {
        const std::string vocab = ends_with(base, ".json") ? path : first_existing({"vocab.json", "encoder.json"});
        const std::string merges = ends_with(base, ".json") ? first_existing({"merges.txt", "vocab.bpe"}) : path;
        if (vocab.empty() || merges.empty())
            fail(GPT_ERR_IO, "%s: GPT-2 style tokenizers need vocab.json and merges.txt side by side", path.c_str());
        f.data = import_gpt2_vocab(vocab, merges);
        f.file = vocab + " + " + base_name(merges);
    } else if (ends_with(base, ".json")) {
        f.data = import_hf_tokenizer(path, first_existing({"tokenizer_config.json"}), notes);
    } else if (ends_with(base, ".model")) {
        f.data = import_sentencepiece_model(path, notes);
    } else if (ends_with(base, ".bin")) {
        f.data = import_llama2c_tokenizer(path, vocab_size);
    } else {
        fail(GPT_ERR_UNSUPPORTED, "%s: cannot tell the tokenizer format from the name (tokenizer.json, vocab.json, "
                                  "tokenizer.model or tokenizer.bin)", path.c_str());
    }
    return f;
}

// The tokenizer file a directory holds, best first: beside a llama2.c checkpoint only its
// tokenizer.bin; in a model directory tokenizer.json, vocab.json (+ merges.txt),
// tokenizer.model; in a directory given with --tokenizer any of them.
std::string find_tokenizer_in(const std::string &dir, bool llama2c, bool any) {
    const char *hf[] = {"tokenizer.json", "vocab.json", "encoder.json", "tokenizer.model"};
    const std::string bin = join_path(dir, "tokenizer.bin");
    if (llama2c && is_regular_file(bin)) return bin;
    if (llama2c && !any) return "";
    for (const char *n : hf)
        if (is_regular_file(join_path(dir, n))) return join_path(dir, n);
    return any && is_regular_file(bin) ? bin : "";
}

// Pads the token list to the model's vocabulary (embeddings are often rounded up past the
// tokenizer's size) with unused placeholder tokens.
void fit_to_vocab(TokenizerData &t, uint32_t vocab_size, const std::string &file, std::vector<std::string> &warnings) {
    if (t.kind == TokenizerKind::NONE) return;
    const size_t n = t.tokens.size();
    if (n > vocab_size)
        fail(GPT_ERR_FORMAT, "%s: the tokenizer has %zu tokens but the model's vocabulary has %u", file.c_str(), n, vocab_size);
    if (n == vocab_size) return;
    if (t.types.empty()) t.types.assign(n, TOKEN_NORMAL);
    for (size_t i = n; i < vocab_size; i++) {
        t.tokens.push_back("<|unused_" + std::to_string(i) + "|>");
        t.types.push_back(TOKEN_UNUSED);
        if (!t.scores.empty()) t.scores.push_back(-1e9f);
    }
    warnings.push_back(file + ": the tokenizer has " + std::to_string(n) + " tokens, the model's vocabulary " +
                       std::to_string(vocab_size) + "; the rest are marked unused");
}

// ---------------------------------------------------------------- verification

struct ModelGuard {
    gpt_model *m = nullptr;
    gpt_ctx *c = nullptr;
    ~ModelGuard() {
        gpt_ctx_free(c);
        gpt_model_free(m);
    }
};

// `path` is the staging file, `shown` the OUT it becomes (named in messages).
void verify_file(const std::string &path, const std::string &shown, const ModelConfig &c, DType dtype, bool has_tokenizer,
                 uint32_t threads) {
    const char *p = shown.c_str();
    ModelGuard g;
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = GPT_DEVICE_CPU; // checksums are verified (no GPT_MODEL_SKIP_CHECKSUMS)
    gpt_status st = gpt_model_load(path.c_str(), &mp, &g.m);
    if (st != GPT_OK) fail(st, "verification: %s as written does not load: %s", p, gpt_last_error());
    gpt_model_info info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if ((st = gpt_model_get_info(g.m, &info)) != GPT_OK) fail(st, "verification: %s", gpt_last_error());
    const bool same = info.arch == (uint32_t)c.arch && info.n_layers == c.n_layers && info.d_model == c.d_model &&
                      info.n_heads == c.n_heads && info.n_kv_heads == c.n_kv_heads && info.head_dim == c.head_dim &&
                      info.d_ff == c.d_ff && info.vocab_size == c.vocab_size && info.context_length == c.context_length &&
                      info.file_dtype == (uint32_t)dtype && ((info.flags & GPT_MODEL_INFO_TIED_HEAD) != 0) == c.tied_head &&
                      ((info.flags & GPT_MODEL_INFO_HAS_TOKENIZER) != 0) == has_tokenizer && info.bos_token == c.bos_id &&
                      info.eos_token == c.eos_id;
    if (!same) fail(GPT_ERR_INTERNAL, "verification: %s loads with a config other than the one converted", p);
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.max_seq = std::min<uint32_t>(c.context_length, 4);
    cp.n_threads = threads;
    if ((st = gpt_ctx_create(g.m, &cp, &g.c)) != GPT_OK) fail(st, "verification: cannot create a context: %s", gpt_last_error());
    const int32_t tok = c.bos_id >= 0 ? c.bos_id : 0;
    std::vector<float> logits(c.vocab_size, NAN);
    if ((st = gpt_forward(g.c, &tok, 1, 1, 0, logits.data())) != GPT_OK)
        fail(st, "verification: one forward token failed: %s", gpt_ctx_last_error(g.c));
    for (uint32_t i = 0; i < c.vocab_size; i++)
        if (!std::isfinite(logits[i]))
            fail(GPT_ERR_FORMAT, "verification: %s gives a non-finite logit (%g for token %u) after one token; "
                                 "the source weights overflow the chosen dtype or hold NaN/inf", p, (double)logits[i], i);
}

// ---------------------------------------------------------------- publishing

void check_out_path(const ConvertOptions &opt) {
    const char *o = opt.out.c_str();
    if (opt.out.empty()) fail(GPT_ERR_INVALID_ARG, "no output path given");
    if (is_directory(opt.out)) fail(GPT_ERR_IO, "%s: is a directory; give the weight file's path", o);
    if (!is_directory(dir_name(opt.out))) fail(GPT_ERR_IO, "%s: directory '%s' does not exist", o, dir_name(opt.out).c_str());
    struct stat st;
    if (::lstat(o, &st) == 0) {
        if (!opt.force) fail(GPT_ERR_IO, "%s: already exists (not overwritten; pass --force to replace it)", o);
        // --force replaces a regular file only: never a FIFO, a device or a symbolic link.
        if (!S_ISREG(st.st_mode)) fail(GPT_ERR_IO, "%s: is %s; only a regular file is replaced", o, file_type_name(st.st_mode));
        struct stat a, b;
        if (::stat(opt.out.c_str(), &a) == 0 && ::stat(opt.src.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            fail(GPT_ERR_INVALID_ARG, "%s: is the source itself", o);
    }
}

// No input of the conversion may be replaced by its output (a shard, config.json, the
// tokenizer, under any name or link).
void check_not_an_input(const InputLog &inputs, const std::string &out) {
    const std::string in = inputs.input_at(out);
    if (!in.empty()) fail(GPT_ERR_INVALID_ARG, "%s: is an input of this conversion (%s); write the output elsewhere", out.c_str(), in.c_str());
}

// ---------------------------------------------------------------- source detection

TensorPlan plan_source(const ConvertOptions &opt, bool *is_llama2c, bool *is_pt) {
    const std::string &src = opt.src;
    const char *s = src.c_str();
    if (is_directory(src)) {
        *is_llama2c = false;
        const HfConfig cfg = load_hf_config(src);
        std::shared_ptr<SafetensorsSet> st = SafetensorsSet::open_dir(src);
        return plan_hf_model(src, cfg, std::move(st));
    }
    if (!path_exists(src)) fail(GPT_ERR_IO, "%s: no such file or directory", s);
    *is_llama2c = true;
    std::shared_ptr<MappedFile> f = MappedFile::open(src);
    const uint8_t *p = f->data();
    const uint64_t n = f->size();
    if (n >= 8 && !std::memcmp(p, "GPTW", 4)) fail(GPT_ERR_INVALID_ARG, "%s: is already a libgpt weight file", s);
    if (looks_like_pt(p, n)) {
        *is_llama2c = false;
        *is_pt = true;
        f.reset();
        PtOptions po;
        po.meta = opt.meta;
        po.n_head = opt.n_head;
        return plan_pt_checkpoint(src, po);
    }
    if (base_name(src) == "config.json" || (n >= 9 && p[8] == '{'))
        fail(GPT_ERR_INVALID_ARG, "%s: give the Hugging Face model directory (with config.json and the safetensors), not one of its files", s);
    if (!looks_like_llama2c(p, n))
        fail(GPT_ERR_FORMAT, "%s: neither a model directory nor a llama2.c checkpoint (the header is not a plausible llama2.c header)", s);
    f.reset();
    return plan_llama2c(src);
}

} // namespace

ConvertResult convert_model(const ConvertOptions &opt) {
    const double t0 = now_s();
    ConvertResult r;
    r.out = opt.out;
    auto warn = [&](const std::string &w) {
        r.warnings.push_back(w);
        if (opt.on_warning) opt.on_warning(w);
        else std::fprintf(stderr, "gpt convert: warning: %s\n", w.c_str());
    };
    check_out_path(opt);
    InputLog inputs; // every file read from here on

    bool llama2c = false, pt = false;
    if (!opt.char_vocab_from.empty() && !opt.tokenizer.empty())
        fail(GPT_ERR_INVALID_ARG, "give either --tokenizer or --char-vocab-from, not both");
    if (!opt.meta.empty() && !opt.char_vocab_from.empty())
        fail(GPT_ERR_INVALID_ARG, "give either --meta or --char-vocab-from, not both");
    TensorPlan plan = plan_source(opt, &llama2c, &pt);
    if (!pt && (!opt.meta.empty() || opt.n_head))
        fail(GPT_ERR_INVALID_ARG, "%s: --meta and --n-head apply to PyTorch .pt checkpoints only", opt.src.c_str());
    for (const std::string &w : plan.warnings) warn(w);
    ModelConfig &c = plan.config;
    std::string name = opt.name.empty() ? base_name(opt.src) : opt.name;
    if (opt.name.empty() && llama2c && ends_with(name, ".bin")) name.resize(name.size() - 4);
    c.name = name;

    // Tokenizer: --tokenizer, else what the source directory holds; none is a warning.
    FoundTokenizer tok;
    ImportNotes notes;
    if (!opt.char_vocab_from.empty()) {
        tok.data = char_vocab_from_text(opt.char_vocab_from);
        tok.file = opt.char_vocab_from;
    } else if (!opt.tokenizer.empty()) {
        const std::string in = is_directory(opt.tokenizer) ? find_tokenizer_in(opt.tokenizer, llama2c, true) : opt.tokenizer;
        if (in.empty())
            fail(GPT_ERR_IO, "%s: holds no tokenizer.json, vocab.json, tokenizer.model or tokenizer.bin", opt.tokenizer.c_str());
        if (!path_exists(in)) fail(GPT_ERR_IO, "%s: no such tokenizer file", in.c_str());
        tok = import_tokenizer_file(in, c.vocab_size, &notes);
    } else if (plan.tokenizer.kind != TokenizerKind::NONE) {
        tok.data = plan.tokenizer; // nanoGPT's meta.pkl
        tok.file = plan.tokenizer_file;
    } else if (pt) {
        if (plan.source != "pytorch:nanogpt") // nanoGPT's own warning is in the plan
            warn("no vocabulary: a character-level model needs --char-vocab-from TEXTFILE (its training text); the file gets "
                 "no tokenizer and works with token ids only");
    } else {
        const std::string in = find_tokenizer_in(llama2c ? dir_name(opt.src) : opt.src, llama2c, false);
        if (!in.empty()) {
            try {
                tok = import_tokenizer_file(in, c.vocab_size, &notes);
            } catch (const Error &e) {
                if (e.status() != GPT_ERR_UNSUPPORTED) throw;
                warn(std::string(e.what()) + "; the file gets no tokenizer (token ids only)");
                tok = FoundTokenizer{};
            }
        } else {
            warn(std::string("no tokenizer found ") + (llama2c ? "(tokenizer.bin beside the checkpoint, or --tokenizer)" :
                                                                 "(tokenizer.json, vocab.json + merges.txt or tokenizer.model)") +
                 "; the file gets no tokenizer and works with token ids only");
        }
    }
    // The chat template beside the tokenizer (a Hugging Face directory), else in SRC.
    FoundChatTemplate chat;
    if (tok.data.kind != TokenizerKind::NONE && !llama2c) {
        const std::string tok_dir = is_directory(opt.tokenizer) ? opt.tokenizer : dir_name(tok.file);
        chat = import_chat_template(is_directory(tok_dir) ? tok_dir : opt.src, &notes);
        if (chat.text.empty() && is_directory(opt.src) && tok_dir != opt.src) chat = import_chat_template(opt.src, &notes);
    }
    for (const std::string &n : notes) warn(n);
    if (tok.data.kind != TokenizerKind::NONE) {
        std::vector<std::string> w;
        fit_to_vocab(tok.data, c.vocab_size, tok.file, w);
        for (const std::string &x : w) warn(x);
        // config.json's special ids win; the tokenizer fills in what it leaves open.
        if (c.bos_id < 0 && tok.data.bos_id >= 0 && tok.data.bos_id < (int32_t)c.vocab_size) c.bos_id = tok.data.bos_id;
        if (c.eos_id < 0 && tok.data.eos_id >= 0 && tok.data.eos_id < (int32_t)c.vocab_size) {
            c.eos_id = tok.data.eos_id;
            plan.eos_ids.assign(1, c.eos_id);
        }
        tok.data.bos_id = c.bos_id;
        tok.data.eos_id = c.eos_id;
        if (tok.data.add_bos && c.bos_id < 0) tok.data.add_bos = false;
    }
    c.validate(opt.src);
    check_plan(plan);

    // dtype: the source's unless asked. Quantized: matrices in q8/q4, the rest in the source's.
    // A GPTQ/AWQ checkpoint (quant_import.h) defaults to the q4/q8 it repacks into exactly, at its group.
    const QuantImport qi = inspect_quantized(plan);
    DType dtype = qi.n_linears ? qi.natural : plan.source_dtype;
    switch (opt.dtype) {
    case GPT_DTYPE_AUTO: break;
    case GPT_DTYPE_F32: dtype = DType::F32; break;
    case GPT_DTYPE_F16: dtype = DType::F16; break;
    case GPT_DTYPE_BF16: dtype = DType::BF16; break;
    case GPT_DTYPE_Q8: dtype = DType::Q8; break;
    case GPT_DTYPE_Q4: dtype = DType::Q4; break;
    default: fail(GPT_ERR_INVALID_ARG, "dtype %u is not f32, f16, bf16, q8 or q4", opt.dtype);
    }
    if (qi.n_linears && !qi.group && !opt.group && (opt.dtype == GPT_DTYPE_AUTO || is_quantized(dtype)))
        fail(GPT_ERR_UNSUPPORTED, "%s: quantization_config.group_size %lld (%s) has no q4/q8 form here (groups of 32, 64 or 128 "
                                  "input columns); pass --dtype f16, bf16 or f32 to dequantize, or --group N to requantize",
             opt.src.c_str(), (long long)qi.source_group, qi.source.c_str());
    const uint32_t group = opt.group ? opt.group : qi.n_linears ? qi.group : format::kDefaultGroup;
    if (is_quantized(dtype) && !is_valid_group(group))
        fail(GPT_ERR_INVALID_ARG, "group size %u is not 32, 64 or 128", group);
    if (!is_quantized(dtype) && opt.group)
        fail(GPT_ERR_INVALID_ARG, "a group size (%u) is only for --dtype q8 or q4", opt.group);

    c.eos_ids = plan.eos_ids;
    format::Writer w;
    c.to_metadata(w.metadata());
    tok.data.to_metadata(w.metadata());
    w.metadata().set(keys::kSource, format::MetaValue::of_str(plan.source));
    if (!chat.text.empty()) w.metadata().set(keys::kChatTemplate, format::MetaValue::of_str(chat.text));
    DType file_dtype = dtype; // what gpt_model_info will report: the first tensor's
    for (const PlannedTensor &t : plan.tensors) {
        const PlannedTensor *tp = &t; // the plan outlives the writer
        // Written unquantized as: f32 when the plan keeps it so (Gemma's 1 + w norms), else the
        // source's dtype in a quantized file, else the file's dtype.
        const DType keep = t.keep_f32 ? DType::F32 : is_quantized(dtype) ? plan.source_dtype : dtype;
        auto keep_fill = [tp, keep, &opt](uint8_t *dst, uint64_t nbytes) { fill_tensor(*tp, keep, dst, nbytes, opt.stop); };
        DType got = keep;
        // A GPTQ/AWQ tensor is repacked (codes and scales copied), requantized, or dequantized below.
        const bool repack = is_quantized(dtype) && repacks_exactly(t, dtype, group) && format::quantizable(t.name, t.shape, group);
        const bool requantize = !repack && is_quantized(dtype) && has_quantized_parts(t) && format::quantizable(t.name, t.shape, group);
        if (has_quantized_parts(t) && !repack && !requantize) r.n_dequantized++;
        if (repack) {
            w.add_quantized(t.name, dtype, t.shape, group, [tp, dtype, group, &opt](uint8_t *dst, uint64_t nbytes) {
                fill_repacked(*tp, dtype, group, dst, nbytes, opt.stop);
            });
            got = dtype;
            r.n_quantized++;
            r.n_repacked++;
        } else if (requantize) {
            double *diff = &r.requantize_max_diff;
            w.add_quantized(t.name, dtype, t.shape, group, [tp, dtype, group, diff, &opt](uint8_t *dst, uint64_t nbytes) {
                fill_requantized(*tp, dtype, group, dst, nbytes, diff, opt.stop);
            });
            got = dtype;
            r.n_quantized++;
            r.n_requantized++;
        } else if (is_quantized(dtype) && !t.keep_f32) {
            auto f32_fill = [tp, &opt](float *dst) {
                fill_tensor(*tp, DType::F32, reinterpret_cast<uint8_t *>(dst), tp->numel() * 4, opt.stop);
            };
            got = format::add_quantized_or_keep(w, t.name, t.shape, dtype, group, f32_fill, keep, keep_fill);
            if (got == dtype) r.n_quantized++;
        } else {
            w.add_tensor(t.name, keep, t.shape, keep_fill);
        }
        if (&t == &plan.tensors.front()) file_dtype = got;
    }

    // Staged beside OUT (core/staged_file.h), verified there, then moved onto OUT.
    check_not_an_input(inputs, opt.out);
    StagedFile stage(opt.out);
    ProgressBar bar(opt.progress);
    w.write_to(stage.fd(), opt.out, [&](size_t done, size_t total, uint64_t bytes, uint64_t total_bytes) {
        bar.update(done, total, bytes, total_bytes);
    });
    stage.finish();
    if (opt.stop && *opt.stop) fail(GPT_ERR_ABORTED, "interrupted");
    if (r.n_requantized) {
        char line[256];
        std::snprintf(line, sizeof line, "%zu tensors of %s linears requantized to %s group %u (round to nearest); max |difference| "
                      "vs the dequantized weights %.3g", r.n_requantized, qi.source.c_str(), dtype_name(dtype), group,
                      r.requantize_max_diff);
        warn(line);
    }
    if (qi.n_linears) r.quant_source = qi.source;

    if (opt.verify) {
        if (opt.progress) std::fprintf(stderr, "verifying: loading %s back and running one token on the CPU\n", opt.out.c_str());
        verify_file(stage.path(), opt.out, c, file_dtype, tok.data.kind != TokenizerKind::NONE, opt.verify_threads);
        r.verified = true;
    }
    if (opt.stop && *opt.stop) fail(GPT_ERR_ABORTED, "interrupted");
    if (!opt.force && path_exists(opt.out))
        fail(GPT_ERR_IO, "%s: already exists (not overwritten; pass --force to replace it)", opt.out.c_str());
    check_not_an_input(inputs, opt.out); // again: OUT may have become one (a link) meanwhile
    stage.commit(opt.force);

    struct stat st;
    r.file_bytes = ::stat(opt.out.c_str(), &st) == 0 ? (uint64_t)st.st_size : w.file_size();
    r.config = c;
    r.source = plan.source;
    r.inputs = plan.inputs;
    r.dtype = dtype;
    r.source_dtype = plan.source_dtype;
    r.group = is_quantized(dtype) ? group : 0;
    r.n_params = parameter_count(c);
    r.n_tensors = plan.tensors.size();
    r.eos_ids = plan.eos_ids;
    if (tok.data.kind == TokenizerKind::NONE) r.tokenizer = "none";
    else
        r.tokenizer = std::string(tokenizer_kind_name(tok.data.kind)) +
                      (tok.data.kind == TokenizerKind::CHAR ? std::string() : std::string(" (pre ") + pretokenizer_name(tok.data.pre) + ")") + ", " +
                      std::to_string(tok.data.tokens.size()) + " tokens, from " + tok.file;
    r.seconds = now_s() - t0;
    return r;
}

std::string format_summary(const ConvertResult &r) {
    const ModelConfig &c = r.config;
    char buf[512];
    std::string s;
    std::snprintf(buf, sizeof buf, "converted   %s -> %s\n", r.inputs.c_str(), r.out.c_str());
    s += buf;
    std::snprintf(buf, sizeof buf, "model       %s (%s), %u layers, d_model %u, %u heads (%u kv) x %u, d_ff %u, vocab %u, context %u\n",
                  arch_to_name(c.arch), r.source.c_str(), c.n_layers, c.d_model, c.n_heads, c.n_kv_heads, c.head_dim, c.d_ff,
                  c.vocab_size, c.context_length);
    s += buf;
    std::string extra;
    if (c.rotary()) {
        std::snprintf(buf, sizeof buf, ", rope_theta %g", (double)c.rope_theta);
        extra += buf;
    }
    if (c.rope_scaling.type != RopeScalingType::NONE) {
        std::snprintf(buf, sizeof buf, ", %s RoPE scaling", rope_scaling_name(c.rope_scaling.type));
        extra += buf;
    }
    if (c.arch == GPT_ARCH_GEMMA3) {
        std::snprintf(buf, sizeof buf, " (local %g)", (double)c.rope_theta_local);
        extra += buf;
    }
    if (c.sliding_window) {
        uint32_t n = 0;
        for (uint32_t i = 0; i < c.n_layers; i++) n += c.window_of(i) != 0;
        std::snprintf(buf, sizeof buf, ", sliding window %u on %u of %u layers", c.sliding_window, n, c.n_layers);
        extra += buf;
    }
    if (c.attn_softcap > 0 || c.logit_softcap > 0) {
        std::snprintf(buf, sizeof buf, ", soft-caps %g (attention) %g (logits)", (double)c.attn_softcap, (double)c.logit_softcap);
        extra += buf;
    }
    extra += c.tied_head ? ", tied head" : ", separate head";
    if (c.arch == GPT_ARCH_LLAMA && c.qkv_bias) extra += ", qkv bias";
    if (c.ffn_activation != FfnActivation::GELU_TANH) extra += std::string(", ") + ffn_activation_name(c.ffn_activation);
    if (c.head_bias) extra += ", head bias";
    std::snprintf(buf, sizeof buf, "            norm_eps %g%s, bos %d, eos %d", (double)c.norm_eps, extra.c_str(), c.bos_id, c.eos_id);
    s += buf;
    if (r.eos_ids.size() > 1) {
        s += " (stop ids";
        for (int32_t e : r.eos_ids) s += " " + std::to_string(e);
        s += ")";
    }
    s += "\n";
    if (c.n_experts) {
        uint32_t moe = 0;
        for (uint32_t i = 0; i < c.n_layers; i++) moe += c.moe_layer(i);
        std::snprintf(buf, sizeof buf, "experts     %u a layer, top-%u%s, d_ff %u each%s on %u of %u layers", c.n_experts, c.n_experts_used,
                      c.norm_topk_prob ? " renormalised" : "", c.d_ff_expert, c.d_ff_shared ? ", a shared expert" : "", moe, c.n_layers);
        s += buf;
        if (c.d_ff_shared) s += " (shared d_ff " + std::to_string(c.d_ff_shared) + ")";
        s += "\n";
    }
    std::snprintf(buf, sizeof buf, "parameters  %s in %zu tensors, %s (source %s)\n", with_commas(r.n_params).c_str(), r.n_tensors,
                  dtype_name(r.dtype), dtype_name(r.source_dtype));
    s += buf;
    if (r.group) {
        std::snprintf(buf, sizeof buf, "quantized   %zu of %zu tensors, group %u; the rest kept in %s\n", r.n_quantized,
                      r.n_tensors, r.group, dtype_name(r.source_dtype));
        s += buf;
    }
    if (!r.quant_source.empty()) {
        std::snprintf(buf, sizeof buf, "imported    %s: %zu tensors repacked exactly, %zu requantized, %zu dequantized\n",
                      r.quant_source.c_str(), r.n_repacked, r.n_requantized, r.n_dequantized);
        s += buf;
    }
    s += "tokenizer   " + r.tokenizer + "\n";
    std::snprintf(buf, sizeof buf, "file        %s (%s), %.2f s%s\n", r.out.c_str(), human_bytes(r.file_bytes).c_str(), r.seconds,
                  r.verified ? ", verified (loaded back with checksums, one token on the CPU)" : ", not verified");
    s += buf;
    if (!r.warnings.empty()) s += "warnings    " + std::to_string(r.warnings.size()) + " (above)\n";
    return s;
}

} // namespace gpt::convert
