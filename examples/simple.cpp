// simple.cpp - the C++ wrapper (gpt.hpp, header-only) streaming a completion.
//   c++ -std=c++17 simple.cpp -o simple-cpp $(pkg-config --cflags --libs gpt)
//   ./simple-cpp MODEL.gpt "In the beginning" 64
#include <gpt.hpp>

#include <algorithm>
#include <cstdlib>
#include <iostream>

int main(int argc, char **argv) {
    if (argc < 3) {
        std::cerr << "usage: " << argv[0] << " MODEL PROMPT [N]\n";
        return 2;
    }
    try {
        gpt::Model model = gpt::Model::load(argv[1]); // default params: a GPU if any, else the CPU
        gpt::CtxParams cp;
        cp.max_seq = std::min<uint32_t>(512, model.info().context_length);
        gpt::Context ctx = model.context(cp);
        gpt::Detokenizer detok = model.detokenizer(GPT_DETOKENIZE_CONTINUE); // the text continues the prompt
        gpt::SamplingParams sp; // temperature 0.8, top-k 40, top-p 0.95, seed 0
        std::cout << argv[2];
        const auto tokens = ctx.generate(model.tokenize(argv[2]), argc > 3 ? (uint32_t)std::atoi(argv[3]) : 64, sp,
                                         [&](int32_t token) { std::cout << detok.push(token) << std::flush; });
        std::cout << detok.flush() << "\n";
        std::cerr << tokens.size() << " tokens\n";
    } catch (const gpt::Error &e) { // status and the library's message
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
