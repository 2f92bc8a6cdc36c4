// gemm.h - the projections through cuBLAS: y[rows][n] = x[rows][k] @ w[n][k]^T with fp32
// accumulation (TF32 tensor cores for fp32 data only when allowed).
#pragma once

#include "core/tensor.h"

#include <cublas_v2.h>

namespace gpt::cuda {

// x rows are ldx elements apart (ldx >= k), so every-T-th-row selections need no copy; y rows
// ldy apart (0: w.rows), so a slice of w's rows fills a slice of y's columns.
void gemm(cublasHandle_t h, const Weight &w, const void *x, DType x_dtype, uint64_t ldx, void *y, DType y_dtype,
          uint32_t rows, bool allow_tf32, uint64_t ldy = 0);

} // namespace gpt::cuda
