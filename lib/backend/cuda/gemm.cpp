// gemm.cpp - row-major y = x w^T expressed in cuBLAS's column-major terms:
// y^T (n x rows) = w (as k x n, transposed) * x^T (k x rows).
#include "backend/cuda/gemm.h"

#include "backend/cuda/cublas_loader.h"
#include "backend/cuda/cuda_check.h"
#include "core/error.h"

namespace gpt::cuda {

static cudaDataType_t cuda_type(DType t) {
    switch (t) {
    case DType::F32: return CUDA_R_32F;
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    case DType::Q8:
    case DType::Q4: break; // never here: quantized weights are dequantized to f16 first (cuda_executor.cpp)
    }
    return CUDA_R_32F;
}

void gemm(cublasHandle_t h, const Weight &w, const void *x, DType x_dtype, uint64_t ldx, void *y, DType y_dtype,
          uint32_t rows, bool allow_tf32, uint64_t ldy) {
    if (rows == 0) return;
    if (w.dtype != x_dtype)
        fail(GPT_ERR_INTERNAL, "gemm: weight dtype %s differs from activation dtype %s", dtype_name(w.dtype), dtype_name(x_dtype));
    const float alpha = 1.0f, beta = 0.0f;
    const cublasComputeType_t compute =
        (w.dtype == DType::F32 && allow_tf32) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    GPT_CUDA_CHECK(cublas().gemm_ex(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)w.rows, (int)rows, (int)w.cols, &alpha, w.data,
                                cuda_type(w.dtype), (int)w.cols, x, cuda_type(x_dtype), (int)ldx, &beta, y,
                                cuda_type(y_dtype), (int)(ldy ? ldy : w.rows), compute, CUBLAS_GEMM_DEFAULT));
}

} // namespace gpt::cuda
