// sampling_options.h - the sampling options `gpt generate` and `gpt chat` share: parsing
// them into a gpt_sampling_params (with the storage its stop strings and bias list point
// into) and their help text.
#pragma once

#include "gpt.h"

#include <string>
#include <vector>

namespace cli {

struct SamplingOptions {
    gpt_sampling_params params;
    bool seed_given = false;
    std::vector<std::string> stops; // --stop, in order
    std::vector<gpt_logit_bias> bias;

    SamplingOptions() { gpt_sampling_params_init(&params); }
    // When argv[i] is a sampling option, consumes it (and its value, advancing i) and returns
    // true; throws UsageError on a bad value.
    bool parse(int argc, char **argv, int &i);
    // Adds a stop string of the command's own (after the user's).
    void add_stop(const std::string &s) { stops.push_back(s); }
    // The params with the lists pointed at this object's storage (valid while it lives and
    // its lists are unchanged).
    const gpt_sampling_params &finish();
    // Throws UsageError for a --logit-bias id outside the model's vocabulary.
    void check_vocabulary(uint32_t vocab_size) const;
    static const char *help();

private:
    std::vector<const char *> stop_ptrs_;
};

} // namespace cli
