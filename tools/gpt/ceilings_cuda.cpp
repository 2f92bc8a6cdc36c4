// ceilings_cuda.cpp - measures copy bandwidth and GEMM throughput with CUDA events: warm-up,
// then the median of repeated runs, on random (not zero) data.
#include "ceilings.h"

#include "backend/cuda/cublas_loader.h"

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

namespace cli {

namespace {
template <typename F> double median_ms(F f, int reps) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    std::vector<float> t;
    for (int i = 0; i < reps + 2; i++) {
        cudaEventRecord(a);
        f();
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        if (i >= 2) t.push_back(ms);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}
} // namespace

Ceilings measure_ceilings(int device) {
    Ceilings c;
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || device < 0 || device >= n) {
        cudaGetLastError();
        return c;
    }
    cudaSetDevice(device);
    const size_t bytes = 1ull << 30;
    void *src = nullptr, *dst = nullptr;
    if (cudaMalloc(&src, bytes) != cudaSuccess || cudaMalloc(&dst, bytes) != cudaSuccess) {
        cudaFree(src);
        cudaGetLastError();
        return c;
    }
    cudaMemset(src, 0x3c, bytes); // nonzero bytes
    const double copy_ms = median_ms([&] { cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice); }, 10);
    c.copy_gbps = 2.0 * bytes / (copy_ms * 1e-3) / 1e9;
    // GEMM 8192^3 in fp16 on buffers filled with 0x3c3c (1.06 in fp16): not zeros.
    const int N = 8192;
    cublasHandle_t h;
    const gpt::cuda::CublasApi *blas = nullptr;
    try {
        blas = &gpt::cuda::cublas(); // opened on first use (lib/backend/cuda/cublas_loader.h)
    } catch (const std::exception &) {
    }
    if (blas && blas->create(&h) == CUBLAS_STATUS_SUCCESS) {
        void *C = nullptr;
        if (cudaMalloc(&C, (size_t)N * N * 4) == cudaSuccess) {
            const float alpha = 1, beta = 0;
            const double ms = median_ms([&] {
                blas->gemm_ex(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &alpha, src, CUDA_R_16F, N, (char *)src + (size_t)N * N * 2,
                             CUDA_R_16F, N, &beta, C, CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
            }, 10);
            c.gemm_tflops = 2.0 * N * N * (double)N / (ms * 1e-3) / 1e12;
            cudaFree(C);
        }
        blas->destroy(h);
    }
    cudaFree(src);
    cudaFree(dst);
    cudaGetLastError();
    c.measured = true;
    return c;
}

} // namespace cli

namespace cli {
void *bench_device_alloc(unsigned long long bytes) {
    void *p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        cudaGetLastError();
        return nullptr;
    }
    return p;
}
void bench_device_free(void *p) { cudaFree(p); }
} // namespace cli
