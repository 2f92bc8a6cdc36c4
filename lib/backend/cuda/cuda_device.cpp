// cuda_device.cpp - the CUDA model-level backend: weights converted to the requested dtype
// (matrices) or f32 (vectors: norms and biases) and copied into one device allocation, each
// checked just before its upload; or, with host weights, the matrices read in place from host
// memory (host_weights.h) and only the vectors in device memory.
#include "backend/backend.h"
#include "backend/cuda/cublas_loader.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_executor.h"
#include "backend/cuda/cuda_plan.h"
#include "backend/cuda/host_weights.h"
#include "backend/cuda/staged_upload.h"
#include "core/error.h"
#include "core/half.h"
#include "core/quant.h"
#include "core/system_memory.h"

#include "moe.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace gpt {

namespace {

// Converts n elements between dtypes on the host (rounding to nearest even).
void convert(const void *src, DType from, void *dst, DType to, uint64_t n) {
    if (from == to) {
        std::memcpy(dst, src, n * dtype_bytes(from));
        return;
    }
    for (uint64_t i = 0; i < n; i++) {
        float v = 0;
        switch (from) {
        case DType::Q8:
        case DType::Q4: break; // quantized rows go through dequantize_row (place_weights)
        case DType::F32: v = static_cast<const float *>(src)[i]; break;
        case DType::F16: v = f16_to_f32(static_cast<const uint16_t *>(src)[i]); break;
        case DType::BF16: v = bf16_to_f32(static_cast<const uint16_t *>(src)[i]); break;
        }
        switch (to) {
        case DType::Q8:
        case DType::Q4: break; // never a target: place_weights holds quantized files in f16
        case DType::F32: static_cast<float *>(dst)[i] = v; break;
        case DType::F16: static_cast<uint16_t *>(dst)[i] = f32_to_f16(v); break;
        case DType::BF16: static_cast<uint16_t *>(dst)[i] = f32_to_bf16(v); break;
        }
    }
}

class CudaDevice final : public Device {
public:
    explicit CudaDevice(int ordinal) : ordinal_(ordinal) {
        GPT_CUDA_CHECK(cudaSetDevice(ordinal_));
        cudaDeviceProp prop;
        GPT_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal_));
        name_ = std::string("cuda:") + std::to_string(ordinal) + " (" + prop.name + ")";
        integrated_ = prop.integrated != 0;
    }
    ~CudaDevice() override {
        cudaSetDevice(ordinal_);
        host_.unmap(); // before the model lets the file or buffer go
        if (weights_) cuda::device_free(weights_);
    }

    const char *name() const override { return name_.c_str(); }
    int32_t ordinal() const override { return ordinal_; }
    bool integrated() const override { return integrated_; }
    bool keeps_host_weights() const override { return in_host_; }
    std::string host_weights_refusal() const override { return why_host_; }
    uint64_t weight_bytes() const override { return bytes_; }

    // Matrices in `want`, vectors in f32, each 256-byte aligned in one allocation. A quantized
    // `want` (the file's q8 or q4) keeps the quantized matrices packed as they are and puts
    // the file's other matrices in f16, the compute dtype of quantized models; a float `want`
    // for a quantized file dequantizes its matrices here. With host weights, the matrices
    // already in their dtype stay where they are and the allocation holds the rest.
    DType place_weights(const std::vector<Weight *> &weights, const Placement &how, WeightSource &src) override {
        GPT_CUDA_CHECK(cudaSetDevice(ordinal_));
        DType want = how.want;
        const DType asked = want;
        quantized_ = is_quantized(want);
        if (quantized_) want = DType::F16;
        auto target = [&](const Weight &w) { return cuda::placed_dtype(w, asked); };
        auto bytes_as = [](const Weight &w, DType to) { return cuda::placed_bytes(w, to); };
        max_quant_numel_ = max_quant_cols_ = 0;
        for (const Weight *w : weights)
            if (is_quantized(target(*w))) {
                max_quant_numel_ = std::max(max_quant_numel_, w->numel());
                max_quant_cols_ = std::max(max_quant_cols_, w->cols);
            }
        const std::vector<bool> in_place = how.host_weights ? map_host_weights(weights, target, src) : std::vector<bool>();
        uint64_t total = 0;
        for (size_t i = 0; i < weights.size(); i++)
            if (!in_host_ || !in_place[i]) total += (bytes_as(*weights[i], target(*weights[i])) + 255) & ~(uint64_t)255;
        if (total) weights_ = static_cast<uint8_t *>(cuda::device_alloc(total, "the model weights"));
        bytes_ = total;
        uint64_t off = 0;
        cuda::StagedUpload staged;
        for (size_t i = 0; i < weights.size(); i++) {
            Weight *w = weights[i];
            if (in_host_ && in_place[i]) { // checked by map_host_weights
                w->data = host_.device_pointer(w->data);
                continue;
            }
            const DType to = target(*w);
            const uint64_t nbytes = bytes_as(*w, to);
            upload_weight(i, *w, to, weights_ + off, src, staged);
            w->data = weights_ + off;
            w->dtype = to;
            if (!is_quantized(to)) w->group = 0;
            off += (nbytes + 255) & ~(uint64_t)255;
        }
        staged.finish();
        weight_dtype_ = want;
        return asked;
    }

    // Computes in the weights' dtype unless asked otherwise; caches K/V in f16 (f32 for f32).
    void choose(ExecParams &p, uint32_t compute, uint32_t kv, uint32_t) const override {
        cuda::choose_params(p, weight_dtype_, quantized_, max_quant_cols_, max_quant_numel_, compute, kv);
    }

    MemoryPlan plan(const ModelShape &s, const ExecParams &p) const override {
        return cuda::memory_plan(s, p);
    }

    MemoryPlan available_memory() const override {
        MemoryPlan m;
        m.host_bytes = host_available_bytes(); // the pinned staging buffers
        size_t free = 0, total = 0;
        if (cudaSetDevice(ordinal_) == cudaSuccess && cudaMemGetInfo(&free, &total) == cudaSuccess) m.device_bytes = free;
        cudaGetLastError();
        return m;
    }

    std::unique_ptr<Executor> create_executor(const ModelShape &s, const ExecParams &p) const override {
        if (quantized_ && p.compute != DType::F16)
            fail(GPT_ERR_UNSUPPORTED, "quantized weights on a GPU compute in f16, not %s", dtype_name(p.compute));
        if (weight_dtype_ != p.compute)
            fail(GPT_ERR_UNSUPPORTED,
                 "compute dtype %s differs from the weights' %s on the GPU: load the model with weight_dtype %s",
                 dtype_name(p.compute), dtype_name(weight_dtype_), dtype_name(p.compute));
        if (s.head_dim > 256) fail(GPT_ERR_UNSUPPORTED, "head_dim %u exceeds the CUDA attention's limit of 256", s.head_dim);
        const uint32_t group = s.n_heads / s.n_kv_heads;
        if (group > 64 || group * s.head_dim > 16384)
            fail(GPT_ERR_UNSUPPORTED, "%u query heads per kv head of dimension %u exceed the CUDA attention's limits (64, and 16384 in all)",
                 group, s.head_dim);
        if (s.n_experts && (s.n_experts_used == 0 || s.n_experts_used > s.n_experts || s.n_experts_used > kMoeMaxTopK))
            fail(GPT_ERR_UNSUPPORTED, "%u of %u experts a token: the CUDA routing takes 1 to %u, at most the expert count",
                 s.n_experts_used, s.n_experts, kMoeMaxTopK);
        for (size_t i = 0; i < s.ropes.size(); i++)
            if (s.ropes[i].rot_dim < 2 || s.ropes[i].rot_dim % 2 || s.ropes[i].rot_dim > s.head_dim)
                fail(GPT_ERR_UNSUPPORTED, "rotary embedding %zu rotates %u dims: the CUDA kernels need an even count from 2 to head_dim %u",
                     i, s.ropes[i].rot_dim, s.head_dim);
        return cuda::make_cuda_executor(ordinal_, s, p);
    }

private:
    // Host weights: registers the span of the matrices that need no conversion (host_weights.h)
    // and checks every tensor (their pages stay: they are the weights). Returns which weights
    // stay in place; in_host_ false when the driver refused (why_host_ says why): everything
    // is then copied as without host weights.
    template <typename Target>
    std::vector<bool> map_host_weights(const std::vector<Weight *> &weights, Target target, WeightSource &src) {
        std::vector<bool> in_place(weights.size(), false);
        const uint8_t *lo = nullptr, *hi = nullptr;
        for (size_t i = 0; i < weights.size(); i++) {
            const Weight &w = *weights[i];
            if (w.is_vector() || target(w) != w.dtype) continue;
            const uint8_t *p = static_cast<const uint8_t *>(w.data);
            lo = lo ? std::min(lo, p) : p;
            hi = std::max(hi, p + gpt::weight_bytes(w));
            in_place[i] = true;
        }
        in_host_ = lo && host_.map(ordinal_, lo, hi, src.read_only_mapping());
        why_host_ = host_.why();
        if (in_host_) src.check_all();
        return in_place;
    }

    // Copies weight i to dst as `to`, in bounded pieces, each checked (src.check, on threads
    // that also fault its pages in) just before it is copied and its pages dropped
    // (src.release) once copied, so the load never holds more of the file than a piece or two
    // (a conversion reads a whole quantized tensor first). Same-dtype pieces go through the
    // pinned double buffer (staged), whose transfers overlap the next piece's check and copy.
    void upload_weight(size_t i, const Weight &w, DType to, uint8_t *dst, WeightSource &src, cuda::StagedUpload &staged) {
        // Synchronous copies: locked against other threads' captures, see capture_mutex.
        auto upload = [](void *d, const void *s, uint64_t n) {
            std::unique_lock<std::shared_mutex> lock(cuda::capture_mutex());
            GPT_CUDA_CHECK(cudaMemcpy(d, s, n, cudaMemcpyHostToDevice));
        };
        // Pages inside a registered span stay (the GPU's mapping of them must not change).
        auto release = [&](uint64_t o, uint64_t n) {
            if (!in_host_) src.release(i, o, n);
        };
        const uint8_t *from = static_cast<const uint8_t *>(w.data);
        const uint64_t stored = gpt::weight_bytes(w);
        constexpr uint64_t kPiece = cuda::StagedUpload::kPiece; // bytes checked and copied at a time
        if (w.dtype == to) {
            for (uint64_t o = 0; o < stored; o += kPiece) {
                const uint64_t n = std::min(kPiece, stored - o);
                src.check(i, n);
                staged.copy(dst + o, from + o, n);
                release(o, n);
            }
            return;
        }
        std::vector<uint8_t> staging;
        if (is_quantized(w.dtype)) {
            // A row needs its integers and its scales (at the tensor's end): check it all first.
            for (uint64_t o = 0; o < stored; o += kPiece) src.check(i, std::min(kPiece, stored - o));
            // Row by row: dequantized (exactly) to f32, then rounded to `to`.
            std::vector<float> row(w.cols);
            staging.resize(w.cols * dtype_bytes(to));
            for (uint64_t r = 0; r < w.rows; r++) {
                dequantize_row(w, r, row.data());
                convert(row.data(), DType::F32, staging.data(), to, w.cols);
                upload(dst + r * w.cols * dtype_bytes(to), staging.data(), w.cols * dtype_bytes(to));
            }
            release(0, stored);
            return;
        }
        // Through a bounded host buffer, a piece of elements at a time.
        const uint64_t chunk = 1ull << 22, in_bytes = dtype_bytes(w.dtype), out_bytes = dtype_bytes(to);
        staging.resize(std::min(w.numel(), chunk) * out_bytes);
        for (uint64_t e = 0; e < w.numel(); e += chunk) {
            const uint64_t n = std::min(chunk, w.numel() - e);
            src.check(i, n * in_bytes);
            convert(from + e * in_bytes, w.dtype, staging.data(), to, n);
            upload(dst + e * out_bytes, staging.data(), n * out_bytes);
            release(e * in_bytes, n * in_bytes);
        }
    }

    int ordinal_;
    std::string name_;
    bool integrated_ = false;
    cuda::HostWeights host_;
    bool in_host_ = false;  // matrices read in place from host memory
    std::string why_host_;  // why host weights were refused, if they were
    uint8_t *weights_ = nullptr;
    uint64_t bytes_ = 0;
    DType weight_dtype_ = DType::F32; // of the matrices, once placed (f16 for a quantized file)
    bool quantized_ = false;          // quantized matrices kept packed
    uint64_t max_quant_numel_ = 0, max_quant_cols_ = 0;
};

} // namespace

std::unique_ptr<Device> make_cuda_device(int ordinal) { return std::make_unique<CudaDevice>(ordinal); }

int cuda_device_count() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); // no driver or no GPU: not an error, just none
        return 0;
    }
    return n;
}

void cuda_warm_up(int device) noexcept {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        cudaGetLastError();
        return;
    }
    const int d = device == GPT_DEVICE_AUTO ? 0 : device;
    if (d < 0 || d >= n || cudaSetDevice(d) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) cudaGetLastError();
    // Open cuBLAS here too, and run one tiny fp16 GEMM, while the caller reads the weight file:
    // loading the library and its first GEMM's setup (~110 ms on an H100) would otherwise land
    // in gpt_ctx_create and the first prompt. One dtype only: each costs ~100-150 ms more, more
    // than a small file takes to read (PERFORMANCE.md entry 19). Device-synchronising calls,
    // so under the lock that keeps them out of other threads' graph captures.
    try {
        const cuda::CublasApi &blas = cuda::cublas();
        std::unique_lock<std::shared_mutex> lock(cuda::capture_mutex());
        cublasHandle_t h = nullptr;
        void *buf = nullptr;
        constexpr int n = 64;
        if (blas.create(&h) == CUBLAS_STATUS_SUCCESS && cudaMalloc(&buf, 3 * n * n * 4) == cudaSuccess &&
            cudaMemset(buf, 0, 3 * n * n * 4) == cudaSuccess) {
            const float one = 1.0f, zero = 0.0f;
            char *a = static_cast<char *>(buf), *b = a + n * n * 4, *c = b + n * n * 4;
            blas.gemm_ex(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_16F, n, b, CUDA_R_16F, n, &zero, c, CUDA_R_16F, n,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
            cudaDeviceSynchronize();
        }
        if (buf) cudaFree(buf);
        if (h) blas.destroy(h);
        cudaGetLastError();
    } catch (...) {
    }
}

const char *cuda_build_info() {
    static std::string s;
    if (s.empty()) {
        int rt = 0, drv = 0;
        const cudaError_t e = cudaRuntimeGetVersion(&rt);
        cudaDriverGetVersion(&drv);
        // A runtime opened lazily (cudart_lazy.h) may be missing: say why.
        s = e != cudaSuccess ? std::string("cuda runtime unavailable: ") + cudaGetErrorString(e)
                             : "cuda runtime " + std::to_string(rt / 1000) + "." + std::to_string(rt % 1000 / 10) + ", driver " +
                                   (drv ? std::to_string(drv / 1000) + "." + std::to_string(drv % 1000 / 10) : std::string("none"));
        cudaGetLastError();
    }
    return s.c_str();
}

} // namespace gpt
