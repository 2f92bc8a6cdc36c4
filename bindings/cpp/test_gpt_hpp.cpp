// test_gpt_hpp.cpp - include/gpt.hpp, the header-only C++ wrapper, against the shared library
// on the CPU: loading (file and memory), info, tokenizer round trips, forward, generate with
// callbacks (void, bool, throwing), the streaming detokenizer, errors and move semantics.
// Built strictly as C++17 (-Wall -Wextra -Werror -pedantic-errors); run with a weight file
// that has a tokenizer: test_gpt_hpp MODEL.
#include "gpt.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

static int passed = 0, failed = 0;
#define CHECK(cond)                                                              \
    do {                                                                         \
        if (cond) {                                                              \
            passed++;                                                            \
        } else {                                                                 \
            failed++;                                                            \
            std::fprintf(stderr, "test_gpt_hpp:%d: CHECK(%s) failed\n", __LINE__, #cond); \
        }                                                                        \
    } while (0)

template <typename F> static gpt_status status_of(F &&f) {
    try {
        f();
    } catch (const gpt::Error &e) {
        return e.status();
    }
    return GPT_OK;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: test_gpt_hpp MODEL\n");
        return 2;
    }
    const std::string path = argv[1];
    try {
        CHECK(!gpt::version().empty());
        CHECK(gpt::build_info().find("cpu") != std::string::npos);

        const gpt_device_info cpu_info = gpt::device_info(GPT_DEVICE_CPU);
        CHECK(cpu_info.device == GPT_DEVICE_CPU && std::string(cpu_info.name) == "cpu" && cpu_info.integrated == 0);
        CHECK(cpu_info.total_bytes > 0 && cpu_info.available_bytes <= cpu_info.total_bytes);
        CHECK(gpt::device_info().device == (gpt::cuda_device_count() > 0 ? 0 : GPT_DEVICE_CPU));
        CHECK(status_of([] { gpt::device_info(gpt::cuda_device_count()); }) == GPT_ERR_UNSUPPORTED);
        CHECK(status_of([] { gpt::device_info(-7); }) == GPT_ERR_INVALID_ARG);

        gpt::ModelParams mp;
        CHECK(mp.struct_size == sizeof(gpt_model_params));
        CHECK(mp.device == GPT_DEVICE_AUTO);
        mp.device = GPT_DEVICE_CPU;
        gpt::Model model = gpt::Model::load(path, mp);
        const gpt_model_info info = model.info();
        CHECK(info.vocab_size > 0);
        CHECK(info.device == GPT_DEVICE_CPU);
        CHECK(info.flags & GPT_MODEL_INFO_HAS_TOKENIZER);

        // Tokenizer round trips, including text longer than the first buffer guess. (Empty text
        // is left to the core tests: its tokenize call is exercised by the Python binding.)
        for (const std::string &text : {std::string("the Lord and the"), std::string("h\xc3\xa9llo \xe2\x9c\x93"),
                                       std::string(2000, 'x')}) {
            const std::vector<int32_t> ids = model.tokenize(text);
            CHECK(model.detokenize(ids) == text);
            std::string streamed;
            gpt::Detokenizer d = model.detokenizer();
            for (int32_t t : ids) streamed += d.push(t);
            streamed += d.flush();
            CHECK(streamed == text);
        }
        CHECK(!model.token_to_piece(model.tokenize("a")[0]).empty());

        gpt::CtxParams cp;
        CHECK(cp.struct_size == sizeof(gpt_ctx_params));
        cp.max_seq = 64;
        gpt::Context ctx = model.context(cp);
        auto [host, dev] = model.estimate_memory(cp);
        CHECK(host > 0 && dev == 0);

        // forward: the last token's logits equal those of every-token logits' last row.
        const std::vector<int32_t> prompt = model.tokenize("the Lord");
        const std::vector<float> last = ctx.forward(prompt, info.vocab_size);
        CHECK(ctx.seq_len() == prompt.size());
        ctx.reset();
        const std::vector<float> all = ctx.forward(prompt, info.vocab_size, true);
        CHECK(all.size() == prompt.size() * info.vocab_size);
        bool same = true;
        for (uint32_t v = 0; v < info.vocab_size; v++)
            same = same && std::fabs(all[(prompt.size() - 1) * info.vocab_size + v] - last[v]) < 1e-4f;
        CHECK(same);

        // generate: greedy is the argmax of forward's logits.
        gpt::SamplingParams sp;
        CHECK(sp.struct_size == sizeof(gpt_sampling_params));
        sp.temperature = 0.0f;
        sp.flags |= GPT_SAMPLING_IGNORE_EOS;
        ctx.reset();
        std::vector<int32_t> seen;
        const std::vector<int32_t> toks = ctx.generate(prompt, 8, sp, [&](int32_t t) { seen.push_back(t); });
        CHECK(toks.size() == 8);
        CHECK(seen == toks);
        uint32_t best = 0;
        for (uint32_t v = 1; v < info.vocab_size; v++)
            if (last[v] > last[best]) best = v;
        CHECK(toks[0] == (int32_t)best);
        CHECK(ctx.seq_len() == prompt.size() + 8 - 1);

        // A bool callback returning false stops after that token.
        ctx.reset();
        int calls = 0;
        const std::vector<int32_t> three = ctx.generate(prompt, 8, sp, [&](int32_t) { return ++calls < 3; });
        CHECK(three.size() == 3 && calls == 3);
        CHECK(std::vector<int32_t>(toks.begin(), toks.begin() + 3) == three);

        // stop tokens kept by SamplingParams, also through a copy.
        gpt::SamplingParams stop_sp = sp;
        stop_sp.stop({toks[1]});
        gpt::SamplingParams copied = stop_sp;
        ctx.reset();
        const std::vector<int32_t> stopped = ctx.generate(prompt, 8, copied);
        CHECK(stopped.size() == 2 && stopped[1] == toks[1]);

        // An exception thrown by the callback stops generation and comes out of generate().
        ctx.reset();
        bool caught = false;
        try {
            ctx.generate(prompt, 8, sp, [](int32_t) -> bool { throw std::runtime_error("from the callback"); });
        } catch (const std::runtime_error &e) {
            caught = std::string(e.what()) == "from the callback";
        }
        CHECK(caught);
        CHECK(ctx.seq_len() == prompt.size()); // stopped after the first token

        // Errors carry the status and the library's message.
        try {
            gpt::Model::load(path + ".missing");
            CHECK(false);
        } catch (const gpt::Error &e) {
            CHECK(e.status() == GPT_ERR_IO);
            CHECK(e.message().find(".missing") != std::string::npos);
            CHECK(std::string(e.what()).rfind("GPT_ERR_IO: ", 0) == 0);
        }
        gpt::CtxParams small;
        small.max_seq = 2;
        gpt::Context tiny = model.context(small);
        CHECK(status_of([&] { tiny.forward(std::vector<int32_t>{1, 2, 3}, info.vocab_size); }) == GPT_ERR_CONTEXT_FULL);
        CHECK(status_of([&] { tiny.generate({1}, 5, sp); }) == GPT_ERR_CONTEXT_FULL);
        CHECK(status_of([&] { model.detokenize({(int32_t)info.vocab_size}); }) == GPT_ERR_INVALID_ARG);

        // Move-only handles: a moved-from object is empty and says so.
        gpt::Context moved = std::move(tiny);
        CHECK(!tiny && moved);
        CHECK(status_of([&] { tiny.seq_len(); }) == GPT_ERR_INVALID_ARG);

        // From memory (copied: the buffer goes away first).
        std::vector<char> bytes;
        {
            std::ifstream f(path, std::ios::binary);
            bytes.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
        }
        gpt::ModelParams copy_mp = mp;
        copy_mp.flags |= GPT_MODEL_COPY_BUFFER;
        gpt::Model mem = gpt::Model::from_memory(bytes.data(), bytes.size(), copy_mp);
        bytes.clear();
        bytes.shrink_to_fit();
        gpt::Context mctx = mem.context(cp);
        CHECK(mctx.generate(prompt, 8, sp) == toks);
        CHECK(status_of([&] { gpt::Model::from_memory("xx", 2); }) == GPT_ERR_FORMAT);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "test_gpt_hpp: unexpected exception: %s\n", e.what());
        failed++;
    }
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
