// ceilings.h - the GPU's measured limits, for putting benchmark numbers in proportion:
// device-to-device copy bandwidth (bytes read + written) and an fp16 GEMM's TFLOP/s.
#pragma once

namespace cli {

struct Ceilings {
    double copy_gbps = 0;   // GB/s, read + write counted
    double gemm_tflops = 0; // fp16 in, fp32 accumulate, 8192^3
    bool measured = false;
};

// Zeros (measured = false) without CUDA or without a device.
Ceilings measure_ceilings(int device);

} // namespace cli

namespace cli {
// Device memory for benchmark buffers (logits kept on the GPU); nullptr without CUDA.
void *bench_device_alloc(unsigned long long bytes);
void bench_device_free(void *p);
} // namespace cli
