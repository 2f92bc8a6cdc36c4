// gemv.cuh - projections for a few rows (decode): y[r][n] = x[r][:] . w[n][:] (+ bias[n]),
// with the neighbouring elementwise work fused in: GELU, SwiGLU or GeGLU over paired gate/up
// rows, soft-capping, or accumulation into the residual stream. Weights are streamed once with 16-byte loads,
// several in flight per thread, one or two weight rows per warp, one to eight warps per row(s),
// for one or two rows of x; quantized weights (gemv_quant.cu) for one to four rows of x.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

inline constexpr uint32_t kGemvMaxRows = 2; // more rows: cuBLAS (the executor measured the crossover)
// Quantized weights: 1-4 rows share one pass over the packed weights (gemv_quant.cu); more go
// to the dequantize-then-cuBLAS path. Measured on an H200 (TinyLlama shape, decode step, q4 /
// q8 against dequantize + cuBLAS): 4 rows 0.75x / 0.80x the time, 8 rows 1.17x / 1.08x, so the
// 8-row kernel was dropped.
inline constexpr uint32_t kGemvQuantMaxRows = 4;

struct GemvArgs {
    const void *x;        // [rows][ldx] in dtype
    uint64_t ldx;         // elements between rows of x
    const void *w;        // [n][k] in dtype; with glu: [2 n][k], gate rows then up rows
    const float *bias;    // [n] or null
    void *y;              // [rows][n] in dtype (f32 with y_f32; unused when residual is set)
    float *residual;      // [rows][n] f32: residual += result, or null
    uint32_t rows, n, k;
    int act;              // activation code (dtype.cuh's ActCode) after the bias; with glu: the gate's
    int glu;              // y = act(x . gate_row) * (x . up_row) (SiLU: SwiGLU, GELU tanh: GeGLU)
    int y_f32;            // y is f32 (logits) instead of dtype
    float softcap;        // > 0: y = softcap * tanh(y / softcap) last (Gemma-2's logits); 0: none
    int dtype;            // of x and y (and w unless wq)
    int wq;               // 0, or Q8 / Q4: w is quantized (dtype.cuh), x and y are f16
    uint32_t group;       // wq: columns per scale
    // An RMSNorm folded in (gemv_folds_norm): x is the f32 residual row instead, and the GEMV
    // reads x * rsqrt(mean(x^2) + norm_eps) * norm_w, writing that row (f16) to norm_out too.
    const float *norm_w;  // [k], or null: no norm
    float norm_eps;
    void *norm_out;       // [k] f16, or null
};

// Warps that share one unit of output (one or two columns, or one GLU column over its gate
// and up rows): 1, 2, 4 or 8, more for few, long weight rows.
uint32_t gemv_row_splits(uint32_t units, uint32_t k, int dtype);
// Whether launch_gemv handles these sizes (rows <= kGemvMaxRows, 16-byte aligned rows); with
// wq (quantized weights): f16 activations, k a multiple of 32, rows <= kGemvQuantMaxRows.
bool gemv_supported(uint32_t rows, uint32_t k, uint64_t ldx, int dtype, int wq = 0);
cudaError_t launch_gemv(const GemvArgs &a, cudaStream_t stream);
// Whether launch_gemv takes a.norm_w for these arguments: one row of quantized weights whose
// plan is stream-i8 (which stages x once a block anyway), not added to a residual (x is that
// residual). Elsewhere the caller runs the norm first; launch_gemv refuses norm_w.
bool gemv_folds_norm(const GemvArgs &a);

// The quantized kernels (gemv_quant.cu); launch_gemv checks the arguments before calling it.
// It runs the variant GPT_QGEMV names (read once; default "auto"), a switch for A/B runs.
cudaError_t launch_gemv_quant_tiled(const GemvArgs &a, cudaStream_t stream);

// The quantized GEMV's kernels and the rule between them (tests/bench_quant_gemv times them,
// PERFORMANCE entries 29, 32 and 58):
//   tiled      entry 21's kernel: one pass of 1-2 steps per thread, a block per 1-8 sets; every
//              arch, every row count (the fallback);
//   stream-xs  persistent blocks (whole waves from the occupancy API) walking set after set,
//              the next step's weights loaded while the current one is computed, x staged once
//              per block in shared memory as f32 - for 2 rows where that fits (2 x k x 4 <=
//              48 KB); elsewhere it runs tiled;
//   mma        tensor cores (gemv_quant_mma.cu): tiles of 16 weight rows as mma.sync's A, the
//              weights unpacked to exact integers in f16, f32 sums scaled per group; sm_80 and
//              newer (elsewhere it runs tiled);
//   stream-i8  stream-xs's kernel for one row of x, with x staged as two int8 values an element
//              (a scale per 32 values) and the dot products in DP4A: x kept to ~2^-16 of its
//              block's largest value, so not bit for bit; 3-4x fewer instructions a weight;
//              elsewhere (2 rows; x over 48 KB at 2.25 bytes an element) stream-xs's plan;
//              the only kernel that folds an RMSNorm in (gemv_folds_norm); on sm_90 a long x
//              (k > 14,336) is staged by two blocks of a cluster, each half of it;
//   auto       the default: one row stream-i8 where x fits, except a q8 matrix under 8 MiB
//              without a norm to fold in (latency-bound: tiled starts faster), else tiled;
//              3-4 rows mma; 2 rows mma for q4 with groups of 64 or more or where x does not
//              fit, else stream-xs where x fits, else tiled.
enum QuantGemvVariant : int { QGEMV_TILED, QGEMV_STREAM_XS, QGEMV_MMA, QGEMV_STREAM_I8, QGEMV_AUTO, QGEMV_VARIANTS };
const char *quant_gemv_variant_name(int variant);
// A launch: which kernel (0 tiled, 1 stream-xs, 2 mma, 3 stream-i8), threads per set (1 <<
// log_tk, 32-256; mma: per tile of 16 weight rows), blocks (stream kernels: any count, each
// walks every blocks-th group of sets; tiled and mma: one per group of sets or tiles), xs: 1
// with the stream kernels, cluster: stream-i8 on sm_90 only, 2, 4 or 8 blocks a cluster that
// stage x together (the block count rounded up to a multiple), else 0 or 1.
struct QuantGemvPlan {
    int kernel;
    uint32_t log_tk;
    uint32_t blocks;
    int xs;
    uint32_t cluster;
};
// Whether stream-i8 plans may have clusters on the current device (the code it runs is sm_90's).
bool quant_gemv_clusters_supported();
// The plan `variant` makes for these arguments on the current device.
cudaError_t quant_gemv_plan(const GemvArgs &a, int variant, QuantGemvPlan *plan);
// Runs a plan (checked: arguments as launch_gemv's, log_tk 5-8, xs only where it fits); tests
// force plans no heuristic picks (many rounds per block, every thread count).
cudaError_t launch_gemv_quant_plan(const GemvArgs &a, const QuantGemvPlan &plan, cudaStream_t stream);

// The mma kernel (gemv_quant_mma.cu): whether the code this device runs has it (sm_80+), its
// tiles (16 weight rows: 16 columns, or 8 GLU columns), its plan (valid arguments), and a
// launch of 1 << log_tk threads a tile in ceil(tiles / (256 >> log_tk)) blocks
// (launch_gemv_quant_plan checks the rest first).
bool quant_gemv_mma_supported();
uint32_t quant_gemv_mma_tiles(const GemvArgs &a);
QuantGemvPlan quant_gemv_mma_plan(const GemvArgs &a);
cudaError_t launch_gemv_quant_mma(const GemvArgs &a, uint32_t log_tk, uint32_t blocks, cudaStream_t stream);

// Quantized weights (Q8 / Q4, dtype.cuh) to f16: rows [row0, row0 + n_rows) of a [total_rows][k]
// matrix with `group` columns per scale into out[n_rows][k]. k a multiple of 32.
cudaError_t launch_dequant_f16(const void *w, int wq, uint32_t group, uint64_t total_rows, uint64_t row0, uint64_t n_rows,
                               uint32_t k, void *out, cudaStream_t stream);
