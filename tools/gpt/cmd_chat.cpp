// cmd_chat.cpp - `gpt chat MODEL`: an interactive conversation. Each turn renders the whole
// conversation (the model's chat template, or with --plain a "User:/Assistant:" transcript),
// tokenizes it, keeps the tokens the KV cache already holds (the longest common prefix) and
// runs only the rest, so a turn costs its own tokens, not the history's. The answer streams
// as it is sampled and ends at the model's end-of-sequence ids or a stop string.
//
// Input: one line per user turn; "/reset" starts over, "/exit" or end of input ends. With
// stdin not a terminal (piped), nothing but the answers goes to stdout, one per line.
#include "cli.h"
#include "sampling_options.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

namespace cli {

namespace {

constexpr size_t kMaxLine = 1u << 20; // bytes of one input line
constexpr uint32_t kDefaultMaxSeq = 4096;
const char *const kPlainStop = "\nUser:";

struct Message {
    std::string role, content;
};

void usage() {
    std::printf("usage: gpt chat MODEL [options]\n"
                "  --system TEXT        a system message opening the conversation\n"
                "  --plain              no chat template: a plain transcript (\"User: ...\\nAssistant: ...\"),\n"
                "                       for models without one (base models); stops at \"\\nUser:\"\n"
                "  -n, --max-tokens N   most tokens per answer (default 1024)\n"
                "%s"
                "  --device D           auto | cpu | cuda | cuda:N (default auto)\n"
                "  --dtype T            GPU weights and compute: auto | f32 | f16 | bf16 (default auto)\n"
                "%s"
                "%s"
                "  --threads N          CPU threads, 0 to 256 (default 0: all cores)\n"
                "  --max-seq N          context size in tokens: the whole conversation (default: the\n"
                "                       model's context length, at most 4096)\n"
                "  --verbose            per-turn timing and cache reuse on stderr\n"
                "In the chat: one line per message; /reset clears the conversation, /exit or end of\n"
                "input ends. Each turn's seed is --seed plus the turn's number.\n"
                "Exit status: 0 on success, 1 when the run fails, 2 on a usage error.\n",
                SamplingOptions::help(), kTf32Help, kWeightsHelp);
}

// Length of the valid UTF-8 sequence at s[i], 0 when there is none (overlong forms,
// surrogates and values past U+10FFFF are not UTF-8).
size_t utf8_sequence_at(const std::string &s, size_t i) {
    const unsigned char c = (unsigned char)s[i];
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return 0;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1Fu) : n == 3 ? (c & 0x0Fu) : (c & 0x07u);
    for (size_t k = 1; k < n; k++) {
        const unsigned char cc = (unsigned char)s[i + k];
        if ((cc & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (cc & 0x3Fu);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

// The chat template takes UTF-8 only, but a typed line or an answer cut at the token cap can
// hold invalid bytes: each becomes U+FFFD (the conversation goes on; the cache keeps what
// still matches).
std::string valid_utf8(const std::string &s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        const size_t n = utf8_sequence_at(s, i);
        if (n) out.append(s, i, n), i += n;
        else out += "\xEF\xBF\xBD", i++;
    }
    return out;
}

uint64_t random_seed() {
    try {
        std::random_device rd;
        return (uint64_t)rd() << 32 ^ rd();
    } catch (const std::exception &) {
        return (uint64_t)(now_seconds() * 1e9);
    }
}

// One line of stdin without its newline (and a trailing CR); false at end of input. A line
// longer than kMaxLine is consumed and reported as too long.
enum class Line { Ok, TooLong, End };
Line read_line(std::string &line) {
    line.clear();
    bool any = false, too_long = false;
    int c;
    while ((c = std::getc(stdin)) != EOF) {
        any = true;
        if (c == '\n') break;
        if (line.size() < kMaxLine) line.push_back((char)c);
        else too_long = true;
    }
    if (!any) return Line::End;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return too_long ? Line::TooLong : Line::Ok;
}

class Chat {
public:
    Chat(gpt_model *model, gpt_ctx *ctx, uint32_t max_seq, bool plain, bool verbose)
        : model_(model), ctx_(ctx), max_seq_(max_seq), plain_(plain), verbose_(verbose) {
        gpt_model_info info;
        info.struct_size = sizeof info;
        gpt_model_get_info(model, &info);
        bos_ = info.bos_token;
        gpt_detokenizer *d = nullptr;
        const gpt_status st = gpt_detokenizer_create(model, GPT_DETOKENIZE_CONTINUE, &d);
        if (st != GPT_OK) throw Failure(std::string(gpt_status_str(st)) + ": " + gpt_last_error());
        detok_.reset(d);
    }

    // The whole conversation as the model sees it, ending with the assistant's opening.
    std::string render(const std::vector<Message> &messages) const {
        if (plain_) {
            std::string text;
            for (const Message &m : messages) {
                if (m.role == "system") text += m.content + "\n\n";
                else if (m.role == "user") text += "User: " + m.content + "\nAssistant:";
                else text += m.content + "\n";
            }
            return text;
        }
        std::vector<gpt_chat_message> msgs;
        for (const Message &m : messages) msgs.push_back(gpt_chat_message{m.role.c_str(), m.content.c_str()});
        size_t n = 0;
        gpt_status st = gpt_chat_apply_template(model_, msgs.data(), msgs.size(), GPT_CHAT_ADD_GENERATION_PROMPT, nullptr, 0, &n);
        std::string text;
        if (st == GPT_OK) {
            text.resize(n + 1);
            st = gpt_chat_apply_template(model_, msgs.data(), msgs.size(), GPT_CHAT_ADD_GENERATION_PROMPT, text.data(), text.size(), &n);
            text.resize(n);
        }
        if (st != GPT_OK)
            throw Failure(std::string("the chat template: ") + gpt_status_str(st) + ": " + gpt_last_error() +
                          (st == GPT_ERR_UNSUPPORTED ? " (give --plain to chat with a plain User:/Assistant: transcript)" : ""));
        return text;
    }

    std::vector<int32_t> tokenize(const std::string &text) const {
        // A template writes the special tokens (and the BOS) itself; a plain transcript is text.
        const uint32_t flags = plain_ ? 0 : GPT_TOKENIZE_PARSE_SPECIAL;
        uint32_t n = 0;
        gpt_status st = gpt_tokenize(model_, text.data(), text.size(), flags, nullptr, 0, &n);
        std::vector<int32_t> toks(n);
        if (st == GPT_OK) st = gpt_tokenize(model_, text.data(), text.size(), flags, toks.data(), n, &n);
        if (st != GPT_OK) throw Failure(std::string("tokenizing the conversation: ") + gpt_status_str(st) + ": " + gpt_last_error());
        if (toks.size() >= 2 && toks[0] == bos_ && toks[1] == bos_) toks.erase(toks.begin()); // the template's and ours
        return toks;
    }

    // Runs one turn: the conversation ends with the user's message. Returns false (nothing
    // generated, the message dropped) when it cannot fit the context.
    bool turn(std::vector<Message> &messages, gpt_sampling_params sp, uint32_t max_tokens, uint32_t number) {
        const std::vector<int32_t> toks = tokenize(render(messages));
        if (toks.size() >= max_seq_) {
            std::fprintf(stderr, "gpt chat: the conversation is %zu tokens with this message; the context holds %u: "
                         "/reset to start over (or a larger --max-seq)\n", toks.size(), max_seq_);
            messages.pop_back();
            return false;
        }
        // Keep what the cache holds of this text; at least one token must run to sample from.
        size_t keep = 0;
        while (keep < cached_.size() && keep < toks.size() && cached_[keep] == toks[keep]) keep++;
        keep = std::min(keep, toks.size() - 1);
        if (gpt_ctx_truncate(ctx_, 0, (uint32_t)keep) != GPT_OK) throw Failure(gpt_ctx_last_error(ctx_));
        cached_.resize(keep);

        const uint32_t cap = (uint32_t)std::min<uint64_t>(max_tokens, max_seq_ - toks.size() + 1);
        std::vector<int32_t> out(cap);
        uint32_t n_out = 0;
        answer_.clear();
        first_token_time_ = 0;
        sp.seed += number;
        const double t0 = now_seconds();
        const gpt_status st = gpt_generate(ctx_, toks.data() + keep, (uint32_t)(toks.size() - keep), &sp, on_token, this,
                                           out.data(), cap, &n_out);
        const double t1 = now_seconds();
        emit(flush_text());
        std::printf("\n");
        std::fflush(stdout);
        if (st != GPT_OK && st != GPT_ERR_CONTEXT_FULL)
            throw Failure(std::string(gpt_status_str(st)) + ": " + gpt_ctx_last_error(ctx_));
        // The cache holds the prompt and the delivered tokens but the last (gpt.h).
        cached_ = toks;
        if (n_out > 1) cached_.insert(cached_.end(), out.begin(), out.begin() + (n_out - 1));
        if (gpt_ctx_seq_len(ctx_, 0) != cached_.size()) { // never expected: start the next turn afresh
            gpt_ctx_reset(ctx_);
            cached_.clear();
        }
        messages.push_back(Message{"assistant", valid_utf8(answer_)});
        if (st == GPT_ERR_CONTEXT_FULL || (n_out == cap && cap < max_tokens))
            std::fprintf(stderr, "gpt chat: the context is full (%u tokens): the answer was cut; /reset to start over\n", max_seq_);
        if (verbose_) {
            const double first = first_token_time_ ? first_token_time_ - t0 : t1 - t0;
            std::fprintf(stderr, "gpt: turn %u: conversation %zu tokens, %zu reused from the cache, %zu run; "
                         "first token in %.1f ms; %u tokens in %.1f ms\n", number, toks.size(), keep, toks.size() - keep,
                         first * 1e3, n_out, (t1 - t0) * 1e3);
        }
        return true;
    }

    void reset() {
        gpt_ctx_reset(ctx_);
        cached_.clear();
    }

private:
    static int on_token(int32_t token, void *user) {
        Chat *c = static_cast<Chat *>(user);
        if (!c->first_token_time_) c->first_token_time_ = now_seconds();
        size_t n = 0;
        gpt_status st = gpt_detokenizer_push(c->detok_.get(), token, c->buf_.data(), c->buf_.size(), &n);
        if (st == GPT_ERR_BUFFER_TOO_SMALL) {
            c->buf_.resize(n);
            st = gpt_detokenizer_push(c->detok_.get(), token, c->buf_.data(), c->buf_.size(), &n);
        }
        if (st == GPT_OK) c->emit(std::string(c->buf_.data(), n));
        return 0;
    }
    std::string flush_text() {
        size_t n = 0;
        gpt_status st = gpt_detokenizer_flush(detok_.get(), buf_.data(), buf_.size(), &n);
        if (st == GPT_ERR_BUFFER_TOO_SMALL) {
            buf_.resize(n);
            st = gpt_detokenizer_flush(detok_.get(), buf_.data(), buf_.size(), &n);
        }
        return st == GPT_OK ? std::string(buf_.data(), n) : std::string();
    }
    void emit(const std::string &bytes) {
        answer_ += bytes;
        std::fwrite(bytes.data(), 1, bytes.size(), stdout);
        std::fflush(stdout);
    }

    gpt_model *model_;
    gpt_ctx *ctx_;
    uint32_t max_seq_;
    bool plain_, verbose_;
    int32_t bos_ = -1;
    DetokPtr detok_;
    std::vector<char> buf_ = std::vector<char>(256);
    std::vector<int32_t> cached_; // the tokens sequence 0's cache holds
    std::string answer_;
    double first_token_time_ = 0;
};

} // namespace

int cmd_chat(int argc, char **argv) {
    const char *path = nullptr;
    std::string system;
    bool have_system = false, plain = false, verbose = false;
    uint32_t max_tokens = 1024, max_seq_opt = 0;
    SamplingOptions opts;
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    FileAccess access = FileAccess::Default;
    uint32_t weights = 0; // --weights: GPT_MODEL_HOST_WEIGHTS or GPT_MODEL_DEVICE_WEIGHTS
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        auto next = [&]() -> const char * {
            if (i + 1 >= argc) throw UsageError(a + " needs a value");
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            usage();
            return 0;
        } else if (a == "--system") {
            system = next();
            have_system = true;
        } else if (a == "--plain") plain = true;
        else if (a == "--verbose") verbose = true;
        else if (a == "-n" || a == "--max-tokens") max_tokens = parse_u32(a, next(), 1);
        else if (opts.parse(argc, argv, i)) continue;
        else if (a == "--device") mp.device = parse_device(next());
        else if (a == "--dtype") mp.weight_dtype = parse_dtype(a, next());
        else if (a == "--tf32") cp.flags |= GPT_CTX_ALLOW_TF32;
        else if (a == "--weights") weights = parse_weights(next());
        else if (a == "--threads") cp.n_threads = parse_u32(a, next(), 0, 256);
        else if (a == "--max-seq") max_seq_opt = parse_u32(a, next(), 2);
        else if (a[0] == '-') throw UsageError("unknown option " + a + " (see gpt chat --help)");
        else if (!path) path = argv[i];
        else throw UsageError("more than one MODEL given");
    }
    if (!path) throw UsageError("no MODEL given (see gpt chat --help)");
    if (plain) opts.add_stop(kPlainStop);
    gpt_sampling_params sp = opts.finish();
    mp.flags |= weights;
    choose_file_access(access, path, mp);

    ModelPtr model = load_model(path, mp);
    report_weights_placement(model.get(), mp);
    gpt_model_info info;
    info.struct_size = sizeof info;
    gpt_model_get_info(model.get(), &info);
    if (!(info.flags & GPT_MODEL_INFO_HAS_TOKENIZER)) throw Failure(std::string(path) + ": the model file carries no tokenizer: gpt chat needs one");
    opts.check_vocabulary(info.vocab_size);
    if (max_seq_opt > info.context_length)
        throw UsageError("--max-seq: " + std::to_string(max_seq_opt) + " exceeds the model's context length (" +
                         std::to_string(info.context_length) + ")");
    cp.max_seq = max_seq_opt ? max_seq_opt : std::min(info.context_length, kDefaultMaxSeq);
    CtxPtr ctx;
    {
        gpt_ctx *c = nullptr;
        const gpt_status st = gpt_ctx_create(model.get(), &cp, &c);
        if (st != GPT_OK) throw Failure(std::string(gpt_status_str(st)) + ": " + gpt_last_error());
        ctx.reset(c);
    }
    Chat chat(model.get(), ctx.get(), cp.max_seq, plain, verbose);
    std::vector<Message> base;
    if (have_system) base.push_back(Message{"system", valid_utf8(system)});
    {
        // Refused up front when the model has no template this library can render.
        std::vector<Message> probe = base;
        probe.push_back(Message{"user", "Hello"});
        chat.render(probe);
    }
    if (!opts.seed_given && sp.temperature > 0) sp.seed = random_seed();
    const bool interactive = isatty(0);
    if (interactive || verbose)
        std::fprintf(stderr, "gpt chat: %s, context %u tokens%s, seed %llu. /reset clears the conversation, /exit or Ctrl-D ends.\n",
                     info.name[0] ? printable(info.name).c_str() : "model", cp.max_seq, plain ? ", plain transcript" : "",
                     (unsigned long long)sp.seed);

    std::vector<Message> messages = base;
    std::string line;
    for (uint32_t number = 1;;) {
        if (interactive) {
            std::printf("> ");
            std::fflush(stdout);
        }
        const Line got = read_line(line);
        if (got == Line::End) break;
        if (got == Line::TooLong) {
            std::fprintf(stderr, "gpt chat: a line longer than %zu bytes was ignored\n", kMaxLine);
            continue;
        }
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        if (line == "/exit") break;
        if (line == "/reset") {
            messages = base;
            chat.reset();
            if (interactive) std::fprintf(stderr, "gpt chat: the conversation was cleared\n");
            continue;
        }
        messages.push_back(Message{"user", valid_utf8(line)});
        if (chat.turn(messages, sp, max_tokens, number)) number++;
    }
    if (interactive) std::printf("\n");
    return 0;
}

} // namespace cli
