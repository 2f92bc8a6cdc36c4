// qk_norm.cuh - RMSNorm over the whole q and the whole k projection of each row (OLMoE's
// q_norm / k_norm), in place in the fused QKV rows, before the heads are split and rotated.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

// qkv: [rows][q_dim + 2 kv_dim] in act_dtype; q_w: f32 [q_dim], k_w: f32 [kv_dim] (either may be
// null: that part is left as it is). Sums of squares in f32, results rounded once to act_dtype.
cudaError_t launch_qk_norm_whole(void *qkv, uint32_t rows, uint32_t q_dim, uint32_t kv_dim, const float *q_w,
                                 const float *k_w, float eps, int act_dtype, cudaStream_t stream);
