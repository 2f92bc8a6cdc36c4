// cuda_ck.h - CK(call): a CUDA runtime call in a benchmark or test program that must succeed;
// on failure it prints the file, line, call and the runtime's message and exits with 1.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cuda_runtime_api.h>

#define CK(call)                                                                                      \
    do {                                                                                              \
        const cudaError_t e_ = (call);                                                                \
        if (e_ != cudaSuccess) {                                                                      \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            std::exit(1);                                                                             \
        }                                                                                             \
    } while (0)
