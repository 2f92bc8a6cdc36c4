// cublas_loader.h - cuBLAS, opened on first use. libcublas (with cuBLASLt, hundreds of MB)
// is not a link dependency of libgpt: a process that never runs a model on a GPU never maps
// it. The first call of cublas() dlopens the libcublas.so of the major version the library
// was built against and resolves the few functions the backend uses.
#pragma once

#include <cublas_v2.h>

namespace gpt::cuda {

struct CublasApi {
    decltype(&cublasCreate_v2) create;
    decltype(&cublasDestroy_v2) destroy;
    decltype(&cublasSetStream_v2) set_stream;
    decltype(&cublasSetWorkspace_v2) set_workspace;
    decltype(&cublasSetMathMode) set_math_mode;
    // cublasGemmEx is overloaded in C++; this is the cublasComputeType_t one the backend calls.
    cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *, const void *,
                              cudaDataType, int, const void *, cudaDataType, int, const void *, void *, cudaDataType, int,
                              cublasComputeType_t, cublasGemmAlgo_t);
    decltype(&cublasGetStatusName) status_name;
    decltype(&cublasGetStatusString) status_string;
};

// The loaded functions; throws GPT_ERR_DEVICE naming the library and dlerror() when it cannot
// be opened or lacks a function. Thread-safe; loads once per process.
const CublasApi &cublas();
// The functions if cuBLAS is loaded already, else nullptr (never loads; for error messages).
const CublasApi *cublas_if_loaded();

} // namespace gpt::cuda
