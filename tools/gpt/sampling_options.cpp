// sampling_options.cpp - see sampling_options.h.
#include "sampling_options.h"

#include "cli.h"

#include <cfloat>
#include <cstring>

namespace cli {

namespace {

// "ID=BIAS", e.g. "50256=-100"; the vocabulary is checked by the library.
gpt_logit_bias parse_bias(const std::string &flag, const char *value) {
    const char *eq = value ? std::strchr(value, '=') : nullptr;
    if (!eq) throw UsageError(flag + " takes ID=BIAS, e.g. 50256=-100");
    const std::string id(value, eq);
    gpt_logit_bias b;
    b.token = (int32_t)parse_u32(flag + " (token id)", id.c_str(), 0, INT32_MAX);
    b.bias = parse_float(flag + " (bias)", eq + 1, -GPT_MAX_PENALTY, GPT_MAX_PENALTY);
    return b;
}

} // namespace

bool SamplingOptions::parse(int argc, char **argv, int &i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char * {
        if (i + 1 >= argc) throw UsageError(a + " needs a value");
        return argv[++i];
    };
    gpt_sampling_params &sp = params;
    if (a == "--temp") sp.temperature = parse_float(a, next(), -FLT_MAX, FLT_MAX);
    else if (a == "--top-k") sp.top_k = parse_u32(a, next());
    else if (a == "--top-p") sp.top_p = parse_float(a, next(), 0, 1, true);
    else if (a == "--min-p") sp.min_p = parse_float(a, next(), 0, 1);
    else if (a == "--repeat-penalty") sp.repetition_penalty = parse_float(a, next(), 0, FLT_MAX, true);
    else if (a == "--frequency-penalty") sp.frequency_penalty = parse_float(a, next(), -GPT_MAX_PENALTY, GPT_MAX_PENALTY);
    else if (a == "--presence-penalty") sp.presence_penalty = parse_float(a, next(), -GPT_MAX_PENALTY, GPT_MAX_PENALTY);
    else if (a == "--logit-bias") {
        if (bias.size() >= GPT_MAX_LOGIT_BIAS) throw UsageError("more than " + std::to_string(GPT_MAX_LOGIT_BIAS) + " --logit-bias");
        bias.push_back(parse_bias(a, next()));
    } else if (a == "--stop") {
        const char *s = next();
        if (!*s) throw UsageError("--stop needs a non-empty text");
        if (std::strlen(s) > GPT_MAX_STOP_STRING_BYTES)
            throw UsageError("--stop: longer than " + std::to_string(GPT_MAX_STOP_STRING_BYTES) + " bytes");
        stops.push_back(s);
    } else if (a == "--seed") {
        sp.seed = parse_uint(a, next());
        seed_given = true;
    } else if (a == "--ignore-eos") sp.flags |= GPT_SAMPLING_IGNORE_EOS;
    else return false;
    return true;
}

const gpt_sampling_params &SamplingOptions::finish() {
    if (stops.size() > GPT_MAX_STOP_STRINGS)
        throw UsageError("more than " + std::to_string(GPT_MAX_STOP_STRINGS) + " stop strings (--stop)");
    stop_ptrs_.clear();
    for (const auto &s : stops) stop_ptrs_.push_back(s.c_str());
    params.stop_strings = stop_ptrs_.empty() ? nullptr : stop_ptrs_.data();
    params.n_stop_strings = (uint32_t)stop_ptrs_.size();
    params.logit_bias = bias.empty() ? nullptr : bias.data();
    params.n_logit_bias = (uint32_t)bias.size();
    return params;
}

void SamplingOptions::check_vocabulary(uint32_t vocab_size) const {
    for (const gpt_logit_bias &b : bias)
        if ((uint32_t)b.token >= vocab_size)
            throw UsageError("--logit-bias: id " + std::to_string(b.token) + " is outside the model's vocabulary (0 to " +
                             std::to_string(vocab_size - 1) + ")");
}

const char *SamplingOptions::help() {
    return "  --temp T             temperature; 0 (or less) = greedy (default 0.8)\n"
           "  --top-k K            (default 40; 0 = off)\n"
           "  --top-p P            in (0, 1] (default 0.95; 1 = off)\n"
           "  --min-p P            in [0, 1] (default 0.05; 0 = off)\n"
           "  --repeat-penalty R   > 0 (default 1.0 = off)\n"
           "  --frequency-penalty F  logit -= F x times the token was generated (default 0)\n"
           "  --presence-penalty P   logit -= P for a token generated at all (default 0)\n"
           "  --logit-bias ID=B    add B to token ID's logit (repeatable; -100 all but bans it)\n"
           "  --stop TEXT          end at this text, which is not printed (repeatable, up to 16)\n"
           "  --seed S             0 to 2^64-1 (default: a random seed, printed on stderr)\n"
           "  --ignore-eos         keep going past the end-of-sequence tokens\n";
}

} // namespace cli
