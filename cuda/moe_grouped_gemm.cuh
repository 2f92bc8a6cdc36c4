// moe_grouped_gemm.cuh - a mixture-of-experts prefill's expert projections as one grouped
// GEMM on tensor cores: the (row, slot) pairs grouped by expert (launch_moe_group), each
// expert's rows times that expert's weight matrix, every expert in one launch. The group
// offsets are read on the device, so nothing comes back to the host and the step may be
// captured into a CUDA graph.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

struct MoeGroupedGemmArgs {
    const void *x;          // [pairs][k], the grouped rows, in dtype
    const void *w;          // [n_experts * n][k] in dtype: expert e's matrix is rows e * n .. e * n + n - 1
    const int32_t *offsets; // [n_experts + 1] on the device: expert e's rows are offsets[e] .. offsets[e + 1] - 1
    void *y;                // [pairs][n]: dtype, or f32 when y_f32
    uint32_t pairs, n_experts, n, k;
    int dtype;              // F16 or BF16 (dtype.cuh): x and w
    int y_f32;              // 1: y in f32 (the down projection, for launch_moe_combine)
};

// Whether launch_moe_grouped_gemm takes this: the kernels were built for sm_80 or newer (bf16
// fragments, cp.async: judged by the code's arch, see kernel_arch), dtype F16 or BF16, and
// k a positive multiple of 8 (16-byte rows).
bool moe_grouped_gemm_supported(int dtype, uint32_t k);

// y[q] = x[q] . w_e^T (f32 accumulation) for every q in offsets[e] .. offsets[e + 1] - 1 of
// every expert e, in one launch. Rows outside every group are not written. Offsets outside
// [0, pairs], or decreasing, are clamped (never an access out of bounds). x and w must be
// 16-byte aligned; cudaErrorInvalidValue when unsupported or misaligned.
cudaError_t launch_moe_grouped_gemm(const MoeGroupedGemmArgs &a, cudaStream_t stream);
