// cuda_executor.cpp - the CUDA context: one device arena and one pinned staging area from
// CudaPlan, a stream, a cuBLAS handle bound to a workspace in the arena (so capture never
// allocates), and one CUDA graph per decode batch size, captured on first use and replayed
// for every later token (positions are read from device memory, so the graph stays valid).
//
// Host memory the GPU reads, and who may rewrite it (issue 22's race audit; on an integrated
// GPU the two share one DRAM, so a rewrite racing a read corrupts the step silently):
// - the step inputs (tokens, positions, sequence ids) in the pinned staging area: copied to
//   device memory by begin_step's cudaMemcpyAsync, which reads them when the stream reaches
//   it. begin_step synchronises the stream before writing them, so the previous step's copy
//   and its graph are done. A captured graph never reads staging memory: its kernels read
//   the device copies, which only a later begin_step's copy (stream-ordered after the graph)
//   rewrites.
// - the sampling inputs (uniform numbers, recent tokens, adjustments) in the staging area:
//   sample() waits on staged_, the event recorded after the last copy out of them, before
//   it writes them again (normally complete already: sample synchronises before returning,
//   but not when it threw half way).
// - weights read in place (host weights): read-only for the GPU (registered read-only) and
//   never written by the library; the model outlives its contexts.
#include "backend/cuda/cuda_executor.h"

#include "backend/cuda/cublas_loader.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_plan.h"
#include "backend/cuda/gemm.h"
#include "core/error.h"
#include "core/rope.h"

#include "add_norm.cuh"
#include "attention.cuh"
#include "bias_act.cuh"
#include "dtype.cuh"
#include "embed.cuh"
#include "gemv.cuh"
#include "last_rows.cuh"
#include "moe.cuh"
#include "moe_grouped_gemm.cuh"
#include "norm_add.cuh"
#include "rope_append.cuh"
#include "attention_short.cuh"
#include "sample.cuh"
#include "softcap.cuh"
#include "swiglu.cuh"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace gpt::cuda {

// The kernels' element-type codes are the library's: launchers get (int)DType.
static_assert((int)DType::F32 == gpt_cuda::F32 && (int)DType::F16 == gpt_cuda::F16 && (int)DType::BF16 == gpt_cuda::BF16 &&
                  (int)DType::Q8 == gpt_cuda::Q8 && (int)DType::Q4 == gpt_cuda::Q4,
              "cuda/dtype.cuh and core/dtype.h disagree");
// Likewise the activation codes: matmul and matmul_glu pass (int)Activation.
static_assert((int)Activation::NONE == gpt_cuda::ACT_NONE && (int)Activation::GELU_TANH == gpt_cuda::ACT_GELU_TANH &&
                  (int)Activation::GELU_ERF == gpt_cuda::ACT_GELU_ERF && (int)Activation::RELU == gpt_cuda::ACT_RELU &&
                  (int)Activation::SILU == gpt_cuda::ACT_SILU,
              "cuda/dtype.cuh and backend/backend.h disagree");

namespace {

constexpr size_t kMaxGraphs = 16;  // recorded step shapes kept per context (least recently used go)
constexpr uint32_t kGemvRows = 2;  // the float GEMV for 1-2 rows; cuBLAS (tensor cores) beyond (measured)
constexpr uint64_t kDequantSliceAlign = 64; // rows a dequantized slice is a multiple of (project_rows)
// Quantized weights: the GEMV up to kGemvQuantMaxRows rows (one pass over the packed
// weights), since the alternative dequantizes the whole matrix to f16 every step.

class CudaExecutor final : public Executor {
public:
    CudaExecutor(int device, const ModelShape &s, const ExecParams &p)
        : device_(device), shape_(s), p_(p), plan_(s, p) {
        graphs_.reserve(kMaxGraphs);
        GPT_CUDA_CHECK(cudaSetDevice(device_));
        try {
            const uint64_t before = allocation_count();
            dev_ = static_cast<uint8_t *>(device_alloc(plan_.device_bytes, "the context (KV cache, activations, workspaces)"));
            host_ = static_cast<uint8_t *>(pinned_alloc(plan_.pinned_bytes, "the context's staging buffers"));
            allocations_ = allocation_count() - before;
            std::unique_lock<std::shared_mutex> lock(capture_mutex());
            GPT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
            GPT_CUDA_CHECK(cudaEventCreateWithFlags(&staged_, cudaEventDisableTiming));
            GPT_CUDA_CHECK(cublas().create(&cublas_));
            GPT_CUDA_CHECK(cublas().set_stream(cublas_, stream_));
            GPT_CUDA_CHECK(cublas().set_workspace(cublas_, dev(plan_.cublas_ws), plan_.cublas_ws.bytes));
            GPT_CUDA_CHECK(cublas().set_math_mode(cublas_, p.allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
            upload_rope_tables();
            short_keys_ = short_attention_keys(s, p);
        } catch (...) {
            release();
            throw;
        }
    }
    ~CudaExecutor() override { release(); }

    void begin_step(const StepInput &in) override {
        GPT_CUDA_CHECK(cudaSetDevice(device_));
        // The previous step's copy out of the staging buffers must be done before we refill them.
        GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
        in_ = in;
        rows_ = in.batch * in.n_tokens;
        drop_pending();
        last_rows_only_ = false;
        // A decode step whose rows all attend to short_keys_ keys or fewer takes the short
        // attention kernel (its graph is recorded apart from the split kernel's).
        short_step_ = short_keys_ && in.n_tokens == 1 && rows_ <= p_.max_batch;
        for (uint32_t b = 0; b < in.batch && short_step_; b++) short_step_ = in.start_pos[b] < short_keys_;
        int32_t *tok = host<int32_t>(plan_.h_tokens), *pos = host<int32_t>(plan_.h_positions), *seq = host<int32_t>(plan_.h_seqs);
        for (uint32_t b = 0; b < in.batch; b++)
            for (uint32_t t = 0; t < in.n_tokens; t++) {
                const uint32_t r = b * in.n_tokens + t;
                tok[r] = in.tokens[r];
                pos[r] = (int32_t)(in.start_pos[b] + t);
                seq[r] = (int32_t)b;
            }
        // Each sequence's last row again after the rows: what keep_last_rows' rows read. No
        // kernel rewrites these arrays (kernels read them before their PDL wait).
        for (uint32_t b = 0; b < in.batch; b++) {
            pos[rows_ + b] = (int32_t)(in.start_pos[b] + in.n_tokens - 1);
            seq[rows_ + b] = (int32_t)b;
        }
        const uint64_t ids = rows_ + in.batch;
        // One copy for the three arrays (their regions are contiguous in both areas).
        const uint64_t bytes = plan_.h_seqs.offset + 4ull * ids - plan_.h_tokens.offset;
        if (plan_.h_positions.offset - plan_.h_tokens.offset == plan_.positions.offset - plan_.tokens.offset) {
            GPT_CUDA_CHECK(cudaMemcpyAsync(dev(plan_.tokens), host_ + plan_.h_tokens.offset, bytes, cudaMemcpyHostToDevice, stream_));
        } else {
            copy_in(plan_.tokens, plan_.h_tokens, 4ull * rows_);
            copy_in(plan_.positions, plan_.h_positions, 4ull * ids);
            copy_in(plan_.seqs, plan_.h_seqs, 4ull * ids);
        }
    }

    // Steps run eagerly the first time their shape (batch, tokens, all-logits) is seen. A
    // decode shape is captured into a CUDA graph at once, any other shape the second time it
    // comes (repeated scoring or benchmark batches); later steps of that shape replay it.
    // A full-logits head writes into the caller's buffer, so it runs after the graph.
    void run(const std::function<void()> &ops, bool replayable) override {
        // Mixture-of-experts layers past the expert GEMVs' rows whose experts cannot take the
        // grouped GEMM read their group sizes back to the host (moe_grouped_on_host): such
        // steps run eagerly, never inside a capture.
        const bool host_sync = shape_.n_experts && rows_ > kMoeDecodeMaxRows && !grouped_gemm_fits();
        if (!replayable || !p_.use_graphs || host_sync) {
            ops();
            return;
        }
        Graph &g = graph_for(in_.batch, in_.n_tokens, in_.all_logits, short_step_);
        const bool decode = in_.n_tokens == 1 && !in_.all_logits;
        if (!g.exec && (decode || g.runs >= 1) && !capture(g, ops)) {
            // Invalidated by another thread's device-wide call: nothing ran; run it eagerly.
            drop_pending();
            ops();
            return;
        }
        g.runs++;
        if (!g.exec) {
            ops();
            return;
        }
        GPT_CUDA_CHECK(cudaGraphLaunch(g.exec, stream_));
        if (in_.all_logits && in_.host_all_logits)
            all_logits(g.head, g.softcap, in_.host_all_logits,
                       g.head_bias ? static_cast<const float *>(g.head_bias.data) : nullptr);
        else have_last_ = true;
    }

    void embed(const Weight &tok, const Weight *pos, float scale) override {
        flush_norm();
        if (is_quantized(tok.dtype)) {
            const bool with_pos = pos && *pos;
            if (with_pos && (pos->dtype != tok.dtype || pos->group != tok.group))
                fail(GPT_ERR_UNSUPPORTED, "position table %s differs from the token table's %s", dtype_name(pos->dtype), dtype_name(tok.dtype));
            GPT_CUDA_CHECK(launch_embed_quant(dev<int32_t>(plan_.tokens), dev<int32_t>(plan_.positions), tok.data, tok.rows,
                                              with_pos ? pos->data : nullptr, with_pos ? pos->rows : 0, (int)tok.dtype, tok.group,
                                              rows_, shape_.d_model, scale, dev<float>(plan_.x), stream_));
            return;
        }
        GPT_CUDA_CHECK(launch_embed(dev<int32_t>(plan_.tokens), dev<int32_t>(plan_.positions), tok.data,
                                    pos && *pos ? pos->data : nullptr, (int)tok.dtype, rows_, shape_.d_model, scale,
                                    dev<float>(plan_.x), stream_));
    }

    void norm(NormKind kind, const Weight &w, const Weight *b, float eps) override {
        flush_norm();
        // One row's RMSNorm waits for the op after it, which may fold it in (fold_pending_norm).
        if (kind == NormKind::RMS && !(b && *b) && !pending_delta_ && rows_ == 1 && p_.compute == DType::F16 && fold_norms()) {
            pending_norm_ = {static_cast<const float *>(w.data), eps};
            return;
        }
        run_norm(static_cast<const float *>(w.data), b && *b ? static_cast<const float *>(b->data) : nullptr, eps,
                 kind == NormKind::RMS);
    }

    void norm_add(NormKind kind, Act in, const Weight &w, float eps) override {
        flush_norm();
        flush_delta(); // X must hold every earlier update before this one lands
        GPT_CUDA_CHECK(launch_norm_add(dev<float>(plan_.x), buf(in), static_cast<const float *>(w.data), eps,
                                       kind == NormKind::RMS, rows_, shape_.d_model, (int)p_.compute, stream_));
    }

    void matmul(Act in, const Weight &w, const Weight *b, Act out, Activation act) override {
        const bool residual = out == Act::X; // add the result to the f32 residual stream
        const float *bias = b && *b ? static_cast<const float *>(b->data) : nullptr;
        GemvArgs g{};
        g.bias = bias;
        g.y = residual ? nullptr : buf(out);
        g.residual = residual ? dev<float>(plan_.x) : nullptr;
        g.act = (int)act; // the kernels' activation code (backend.h)
        if (in == Act::QKV) flush_qkv_bias(); // a reader of QKV other than the attention
        if (try_gemv(in, w, g)) return;
        void *y = residual ? dev(plan_.delta) : buf(out);
        project(w, buf(in), p_.compute, w.cols, y, p_.compute, rows_);
        if (residual && !g.act) {
            pending_delta_ = true; // the next norm adds it, and the bias
            pending_delta_bias_ = bias;
            return;
        }
        if (out == Act::QKV && bias && !g.act) {
            pending_qkv_bias_ = bias; // rope_append adds it (only the attention reads QKV)
            return;
        }
        GPT_CUDA_CHECK(launch_bias_act(y, bias, g.act, residual ? dev<float>(plan_.x) : nullptr, rows_, (uint32_t)w.rows,
                                       (int)p_.compute, stream_));
    }

    void matmul_glu(Act in, const Weight &w, Act out, Activation act) override {
        GemvArgs g{};
        g.y = buf(out);
        g.glu = 1;
        g.act = (int)act; // SILU or GELU_TANH: the gate's activation code
        if (try_gemv(in, w, g)) return;
        project(w, buf(in), p_.compute, w.cols, dev(plan_.gu), p_.compute, rows_);
        GPT_CUDA_CHECK(launch_swiglu(dev(plan_.gu), buf(out), rows_, (uint32_t)(w.rows / 2), g.act, (int)p_.compute, stream_));
    }

    // The spec's norm (in the router kernel at decode), router logits and top-k on the
    // device, then the experts: per-(row, slot) GEMVs for up to
    // kMoeDecodeMaxRows rows (graph-safe: the ids stay on the device), else the pairs grouped
    // by expert and one grouped GEMM a projection (graph-safe too) or, where that cannot run,
    // one cuBLAS GEMM per used expert; then the shared expert, if any.
    void moe(const MoeSpec &s) override {
        flush_norm();
        check_moe(s);
        const uint32_t E = shape_.n_experts, k = shape_.n_experts_used, d = shape_.d_model;
        const Weight &router = *s.router;
        const float *norm_w = s.norm ? static_cast<const float *>(s.norm->data) : nullptr;
        // A decode step's norm goes into the router kernel (a residual left in DELTA needs
        // the norm's own pass to land).
        if (s.norm && !pending_delta_ && rows_ <= kMoeDecodeMaxRows && !is_quantized(router.dtype) &&
            moe_norm_router_supported(rows_, d, (int)p_.compute, dev(plan_.x), norm_w, dev(plan_.h), router.data)) {
            GPT_CUDA_CHECK(launch_moe_norm_router(dev<float>(plan_.x), norm_w, s.norm_eps, dev(plan_.h), router.data, rows_, E, d,
                                                  (int)p_.compute, dev<float>(plan_.moe_logits), stream_));
        } else {
            if (s.norm) norm(NormKind::RMS, *s.norm, nullptr, s.norm_eps);
            flush_delta();
            GPT_CUDA_CHECK(launch_moe_router(dev(plan_.h), router.data, quant_code(router), router.group, rows_, E, d,
                                             (int)p_.compute, dev<float>(plan_.moe_logits), stream_));
        }
        GPT_CUDA_CHECK(launch_moe_topk(dev<float>(plan_.moe_logits), rows_, E, k, s.norm_topk ? 1 : 0,
                                       dev<int32_t>(plan_.moe_ids), dev<float>(plan_.moe_weights), stream_));
        if (rows_ <= kMoeDecodeMaxRows) moe_decode(s);
        else moe_grouped(s);
        if (s.shared_gate_up && *s.shared_gate_up) moe_shared(s);
    }

    void attention(const AttentionSpec &s) override {
        flush_norm();
        flush_delta();
        uint8_t *k_layer = dev(plan_.k_cache) + s.layer * plan_.kv_bytes_per_layer;
        uint8_t *v_layer = dev(plan_.v_cache) + s.layer * plan_.kv_bytes_per_layer;
        RopeAppendArgs r{};
        r.qkv = dev(plan_.qkv);
        r.qkv_bias = pending_qkv_bias_;
        r.positions = dev<int32_t>(plan_.positions) + ids_from();
        r.seqs = dev<int32_t>(plan_.seqs) + ids_from();
        const uint64_t rope_at = s.rope >= 0 ? 4 * plan_.rope_offset.at((size_t)s.rope) : 0;
        r.cos = s.rope >= 0 ? dev<float>(plan_.rope_cos, rope_at) : nullptr;
        r.sin = s.rope >= 0 ? dev<float>(plan_.rope_sin, rope_at) : nullptr;
        r.rot_dim = s.rope >= 0 ? shape_.ropes[(size_t)s.rope].rot_dim : 0;
        r.q_norm = s.q_norm && *s.q_norm ? static_cast<const float *>(s.q_norm->data) : nullptr;
        r.k_norm = s.k_norm && *s.k_norm ? static_cast<const float *>(s.k_norm->data) : nullptr;
        r.norm_eps = s.qk_norm_eps;
        if (s.qk_norm_whole) { // OLMoE: over the whole projections
            check_whole_norm(s.q_norm, shape_.q_dim(), "q");
            check_whole_norm(s.k_norm, shape_.kv_dim(), "k");
            r.norm_whole = 1;
        }
        r.k_cache = k_layer;
        r.v_cache = v_layer;
        r.rows = rows_;
        r.n_heads = shape_.n_heads;
        r.n_kv_heads = shape_.n_kv_heads;
        r.head_dim = shape_.head_dim;
        r.max_seq = p_.max_seq;
        r.act_dtype = (int)p_.compute;
        r.kv_dtype = (int)p_.kv;
        // A short step's attention kernel rotates and caches k and v itself where no q/k norm
        // comes first (the norms stay in rope_append).
        const bool fold = short_step_ && !r.q_norm && !r.k_norm;
        if (fold || r.norm_whole) { // the short kernel, or the whole-projection norm, reads QKV as it is
            flush_qkv_bias();
            r.qkv_bias = nullptr;
        }
        pending_qkv_bias_ = nullptr;
        if (!fold) {
            GPT_CUDA_CHECK(launch_rope_append(r, stream_));
            // Every row's k and v are cached now; nothing may read the other rows again.
            if (last_rows_suffice(in_, shape_, s.layer)) keep_last_rows();
        }

        AttentionArgs a{};
        a.qkv = dev(plan_.qkv);
        a.positions = dev<int32_t>(plan_.positions) + ids_from(); // keep_last_rows may have run since
        a.seqs = dev<int32_t>(plan_.seqs) + ids_from();
        a.k_cache = k_layer;
        a.v_cache = v_layer;
        a.out = dev(plan_.att);
        a.partial_o = dev<float>(plan_.attn_o);
        a.partial_ml = dev<float>(plan_.attn_ml);
        a.rows = rows_;
        a.rows_per_seq = last_rows_only_ ? 1 : in_.n_tokens;
        a.n_heads = shape_.n_heads;
        a.n_kv_heads = shape_.n_kv_heads;
        a.head_dim = shape_.head_dim;
        a.max_seq = p_.max_seq;
        // Split the keys when the rows alone cannot fill the GPU (decode steps: the partial
        // buffers are sized for up to max_batch rows).
        a.n_splits = rows_ <= p_.max_batch ? plan_.decode_splits(rows_) : 1;
        a.scale = s.scale > 0 ? s.scale : 1.0f / std::sqrt((float)shape_.head_dim);
        a.window = s.window;
        a.softcap = s.softcap;
        a.act_dtype = (int)p_.compute;
        a.kv_dtype = (int)p_.kv;
        a.allow_tf32 = p_.allow_tf32 ? 1 : 0;
        if (short_step_) {
            const AttentionShortFold f{r.cos, r.sin, r.rot_dim, fold ? 1 : 0};
            GPT_CUDA_CHECK(launch_attention_short(a, f, short_keys_, stream_));
            return;
        }
        GPT_CUDA_CHECK(launch_attention(a, stream_));
    }

    void logits(const Weight &head, float *host_all, float softcap, const Weight *bias_w) override {
        const uint64_t d = shape_.d_model, a = dtype_bytes(p_.compute);
        const float *bias = bias_w && *bias_w ? static_cast<const float *>(bias_w->data) : nullptr;
        uint8_t *h = dev(plan_.h);
        float *lg = dev<float>(plan_.logits);
        if (in_.all_logits && host_all) {
            flush_norm();
            flush_delta();
            if (capturing_) { // the caller's buffer changes between calls: run the head after the graph
                captured_head_ = head;
                captured_softcap_ = softcap;
                captured_head_bias_ = bias ? *bias_w : Weight{};
                return;
            }
            all_logits(head, softcap, host_all, bias);
            return;
        }
        flush_delta();
        // Each sequence's last row: every n_tokens-th row of H, starting at row n_tokens - 1
        // (or rows 0..batch-1 once keep_last_rows moved them there).
        const uint32_t per_seq = last_rows_only_ ? 1 : in_.n_tokens;
        const void *last = h + (uint64_t)(per_seq - 1) * d * a;
        const uint64_t ld = (uint64_t)per_seq * d;
        const int wq = is_quantized(head.dtype) ? (int)head.dtype : 0;
        if ((wq || in_.batch <= kGemvRows) && gemv_supported(in_.batch, (uint32_t)d, ld, (int)p_.compute, wq)) {
            GemvArgs g{};
            g.wq = wq;
            g.group = head.group;
            g.x = last;
            g.ldx = ld;
            g.w = head.data;
            g.y = lg;
            g.y_f32 = 1;
            g.softcap = softcap; // after the bias
            g.bias = bias;
            g.rows = in_.batch;
            g.n = (uint32_t)head.rows;
            g.k = (uint32_t)head.cols;
            g.dtype = (int)p_.compute;
            if (!fold_pending_norm(Act::H, g)) flush_norm();
            GPT_CUDA_CHECK(launch_gemv(g, stream_));
        } else {
            flush_norm();
            project(head, last, p_.compute, ld, lg, DType::F32, in_.batch);
            if (bias)
                GPT_CUDA_CHECK(launch_bias_act(lg, bias, 0, nullptr, in_.batch, (uint32_t)head.rows, (int)DType::F32, stream_));
            GPT_CUDA_CHECK(launch_softcap(lg, (uint64_t)in_.batch * shape_.vocab_size, softcap, stream_));
        }
        have_last_ = true;
    }

    // Every row's logits (+ bias when given, then soft-capped when softcap > 0), to host or
    // device memory.
    void all_logits(const Weight &head, float softcap, float *host_all, const float *bias) {
        const uint64_t d = shape_.d_model, v = shape_.vocab_size, a = dtype_bytes(p_.compute);
        uint8_t *h = dev(plan_.h);
        float *lg = dev<float>(plan_.logits);
        {
            // A caller buffer in this GPU's memory takes the GEMM's output directly.
            cudaPointerAttributes attr{};
            const bool on_device = cudaPointerGetAttributes(&attr, host_all) == cudaSuccess &&
                                   attr.type == cudaMemoryTypeDevice && attr.device == device_;
            cudaGetLastError();
            if (on_device) {
                for (uint32_t b = 0; b < in_.batch; b++) {
                    float *y = host_all + (uint64_t)b * in_.logits_seq_stride * v;
                    project(head, h + (uint64_t)b * in_.n_tokens * d * a, p_.compute, d, y, DType::F32, in_.n_tokens);
                    if (bias) GPT_CUDA_CHECK(launch_bias_act(y, bias, 0, nullptr, in_.n_tokens, (uint32_t)v, (int)DType::F32, stream_));
                    GPT_CUDA_CHECK(launch_softcap(y, (uint64_t)in_.n_tokens * v, softcap, stream_));
                }
                GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
                have_last_ = false;
                return;
            }
            // Otherwise every row, in groups that fit the logits buffer, copied to the caller.
            for (uint32_t b = 0; b < in_.batch; b++)
                for (uint32_t t0 = 0; t0 < in_.n_tokens; t0 += plan_.logits_rows) {
                    const uint32_t n = std::min(plan_.logits_rows, in_.n_tokens - t0);
                    project(head, h + ((uint64_t)b * in_.n_tokens + t0) * d * a, p_.compute, d, lg, DType::F32, n);
                    if (bias) GPT_CUDA_CHECK(launch_bias_act(lg, bias, 0, nullptr, n, (uint32_t)v, (int)DType::F32, stream_));
                    GPT_CUDA_CHECK(launch_softcap(lg, (uint64_t)n * v, softcap, stream_));
                    // cudaMemcpyDefault: the caller's buffer may be host or device memory.
                    GPT_CUDA_CHECK(cudaMemcpyAsync(host_all + ((uint64_t)b * in_.logits_seq_stride + t0) * v, lg, 4 * n * v,
                                                   cudaMemcpyDefault, stream_));
                }
            // Stream order keeps each group's copy ahead of the next GEMM into the buffer; the
            // caller may read its logits once we return.
            GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
            have_last_ = false;
        }
    }

    void read_logits(float *host_out) override {
        if (!have_last_) fail(GPT_ERR_INTERNAL, "read_logits without last-row logits");
        GPT_CUDA_CHECK(cudaMemcpyAsync(host_out, dev(plan_.logits), 4ull * in_.batch * shape_.vocab_size, cudaMemcpyDefault,
                                       stream_));
        GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }

    void sample(const SampleSpec &spec, const SampleRow *rows, int32_t *out) override {
        if (!have_last_) fail(GPT_ERR_INTERNAL, "sample without last-row logits");
        GPT_CUDA_CHECK(cudaSetDevice(device_));
        const uint32_t B = in_.batch;
        // The last copies out of these staging buffers must be done before we rewrite them.
        GPT_CUDA_CHECK(cudaEventSynchronize(staged_));
        float *uni = host<float>(plan_.h_uniform);
        int32_t *rec = host<int32_t>(plan_.h_recent), *nrec = host<int32_t>(plan_.h_n_recent);
        const bool penalty = spec.repetition_penalty != 1.0f;
        for (uint32_t b = 0; b < B; b++) {
            uni[b] = rows[b].uniform;
            const uint32_t n = std::min(rows[b].n_recent, kMaxRecent);
            nrec[b] = (int32_t)n;
            if (penalty && n) std::memcpy(rec + (uint64_t)b * kMaxRecent, rows[b].recent + (rows[b].n_recent - n), 4ull * n);
        }
        // The adjustment lists, packed at a fixed stride; copied only when some row has one.
        int32_t *adj_tok = host<int32_t>(plan_.h_adjust_tokens), *n_adj = host<int32_t>(plan_.h_n_adjust);
        float *adj_delta = host<float>(plan_.h_adjust_deltas);
        uint32_t most_adjust = 0;
        for (uint32_t b = 0; b < B; b++) {
            const uint32_t n = rows[b].n_adjust;
            if (n > plan_.adjust_stride)
                fail(GPT_ERR_INTERNAL, "%u sampling adjustments exceed the planned %u", n, plan_.adjust_stride);
            n_adj[b] = (int32_t)n;
            most_adjust = std::max(most_adjust, n);
            if (n) {
                std::memcpy(adj_tok + (uint64_t)b * plan_.adjust_stride, rows[b].adjust_tokens, 4ull * n);
                std::memcpy(adj_delta + (uint64_t)b * plan_.adjust_stride, rows[b].adjust_deltas, 4ull * n);
            }
        }
        if (most_adjust) {
            // Rows 0 .. B-1 up to the longest list (the stride between rows is kept).
            const uint64_t span = 4ull * ((uint64_t)(B - 1) * plan_.adjust_stride + most_adjust);
            copy_in(plan_.adjust_tokens, plan_.h_adjust_tokens, span);
            copy_in(plan_.adjust_deltas, plan_.h_adjust_deltas, span);
            copy_in(plan_.n_adjust, plan_.h_n_adjust, 4ull * B);
        }
        // Only what the kernels will read: each copy is one more step on the stream.
        if (!(spec.temperature <= 0.0f)) copy_in(plan_.uniform, plan_.h_uniform, 4ull * B);
        if (penalty) {
            copy_in(plan_.n_recent, plan_.h_n_recent, 4ull * B);
            copy_in(plan_.recent, plan_.h_recent, 4ull * B * kMaxRecent);
        }
        GPT_CUDA_CHECK(cudaEventRecord(staged_, stream_));
        SampleArgs a{};
        a.logits = dev<float>(plan_.logits);
        a.batch = B;
        a.vocab = shape_.vocab_size;
        a.temperature = spec.temperature;
        a.penalty = spec.repetition_penalty;
        a.recent = dev<int32_t>(plan_.recent);
        a.n_recent = dev<int32_t>(plan_.n_recent);
        a.recent_stride = kMaxRecent;
        a.adjust_tokens = dev<int32_t>(plan_.adjust_tokens);
        a.adjust_deltas = dev<float>(plan_.adjust_deltas);
        a.n_adjust = most_adjust ? dev<int32_t>(plan_.n_adjust) : nullptr;
        a.adjust_stride = plan_.adjust_stride;
        a.top_k = spec.top_k;
        a.top_p = spec.top_p;
        a.min_p = spec.min_p;
        a.uniform = dev<float>(plan_.uniform);
        a.workspace = dev(plan_.sample_ws);
        a.out = dev<int32_t>(plan_.sampled);
        GPT_CUDA_CHECK(launch_sample(a, stream_));
        GPT_CUDA_CHECK(cudaMemcpyAsync(host_ + plan_.h_sampled.offset, dev(plan_.sampled), 4ull * B, cudaMemcpyDeviceToHost, stream_));
        GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
        std::memcpy(out, host_ + plan_.h_sampled.offset, 4ull * B);
    }

    void set_seq_len(uint32_t, uint32_t) override {}
    uint64_t allocation_count() const override { return allocations_; }

private:
    template <typename T = uint8_t> T *dev(const Region &r, uint64_t byte_offset = 0) {
        return reinterpret_cast<T *>(dev_ + r.offset + byte_offset);
    }
    template <typename T = uint8_t> T *host(const Region &r) { return reinterpret_cast<T *>(host_ + r.offset); }
    void copy_in(const Region &d, const Region &h, uint64_t bytes) {
        GPT_CUDA_CHECK(cudaMemcpyAsync(dev_ + d.offset, host_ + h.offset, bytes, cudaMemcpyHostToDevice, stream_));
    }
    void *buf(Act a) {
        switch (a) {
        case Act::X: return dev(plan_.x);
        case Act::H: return dev(plan_.h);
        case Act::QKV: return dev(plan_.qkv);
        case Act::ATT: return dev(plan_.att);
        case Act::FF: return dev(plan_.ff);
        }
        return nullptr;
    }
    struct Graph {
        uint32_t batch = 0, n_tokens = 0;
        bool all_logits = false;
        bool short_attention = false;
        uint32_t runs = 0;
        uint64_t last_use = 0;
        cudaGraphExec_t exec = nullptr;
        Weight head; // for a full-logits shape: the head the graph leaves to run afterwards
        float softcap = 0; // and its soft-capping
        Weight head_bias;  // and its bias (empty: none)
    };

    Graph &graph_for(uint32_t batch, uint32_t n_tokens, bool all, bool short_attention) {
        Graph *lru = nullptr;
        for (Graph &g : graphs_) {
            if (g.batch == batch && g.n_tokens == n_tokens && g.all_logits == all && g.short_attention == short_attention) {
                g.last_use = ++clock_;
                return g;
            }
            if (!lru || g.last_use < lru->last_use) lru = &g;
        }
        if (graphs_.size() < kMaxGraphs) {
            graphs_.push_back(Graph{});
            lru = &graphs_.back();
        } else if (lru->exec) {
            GPT_CUDA_CHECK(cudaGraphExecDestroy(lru->exec)); // not running: begin_step synchronised
        }
        *lru = Graph{batch, n_tokens, all, short_attention, 0, ++clock_, nullptr, Weight{}, 0.0f, Weight{}};
        return *lru;
    }

    // Records ops into g. Returns false, with nothing run and no error left behind, when the
    // capture was invalidated from outside (the caller then runs ops eagerly; the next step of
    // this shape tries again).
    bool capture(Graph &g, const std::function<void()> &ops) {
        std::shared_lock<std::shared_mutex> lock(capture_mutex());
        // Relaxed: under the other modes, a cudaMalloc or synchronisation on any other thread
        // (the application's own CUDA work) counts as unsafe while this capture is open and
        // invalidates it. This thread makes no such call meanwhile.
        GPT_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed));
        cudaGraph_t graph = nullptr;
        capturing_ = true;
        try {
            ops();
        } catch (...) {
            // A launch fails once the capture is invalidated: then this is no error of the step.
            capturing_ = false;
            const cudaError_t end = cudaStreamEndCapture(stream_, &graph);
            if (graph) cudaGraphDestroy(graph);
            cudaGetLastError();
            if (end == cudaErrorStreamCaptureInvalidated) return false;
            throw;
        }
        capturing_ = false;
        const cudaError_t end = cudaStreamEndCapture(stream_, &graph);
        if (end == cudaErrorStreamCaptureInvalidated) {
            if (graph) cudaGraphDestroy(graph);
            cudaGetLastError();
            return false;
        }
        GPT_CUDA_CHECK(end);
        cudaError_t e = cudaGraphInstantiate(&g.exec, graph, 0);
        cudaGraphDestroy(graph);
        if (e != cudaSuccess) g.exec = nullptr;
        GPT_CUDA_CHECK(e);
        g.head = captured_head_;
        g.softcap = captured_softcap_;
        g.head_bias = captured_head_bias_;
        return true;
    }

    // y[rows][w.rows] = x @ w^T through cuBLAS; quantized weights are dequantized first, in
    // slices of rows that fit the f16 scratch buffer, each GEMM filling its slice of y's columns.
    void project(const Weight &w, const void *x, DType x_dtype, uint64_t ldx, void *y, DType y_dtype, uint32_t rows) {
        project_rows(w, 0, w.rows, x, x_dtype, ldx, y, y_dtype, rows, w.rows);
    }
    // The same with rows [row0, row0 + n_rows) of w (one expert of a stacked matrix), y's rows
    // ldy elements apart.
    void project_rows(const Weight &w, uint64_t row0, uint64_t n_rows, const void *x, DType x_dtype, uint64_t ldx, void *y,
                      DType y_dtype, uint32_t rows, uint64_t ldy) {
        if (!is_quantized(w.dtype)) {
            Weight part = w;
            part.data = static_cast<const uint8_t *>(w.data) + row0 * w.cols * dtype_bytes(w.dtype);
            part.rows = n_rows;
            return gemm(cublas_, part, x, x_dtype, ldx, y, y_dtype, rows, p_.allow_tf32, ldy);
        }
        uint64_t slice = plan_.dequant.bytes / (2 * w.cols);
        if (slice == 0) fail(GPT_ERR_INTERNAL, "dequantization buffer of %llu bytes holds no row of %llu columns",
                             (unsigned long long)plan_.dequant.bytes, (unsigned long long)w.cols);
        // Whole multiples of 64 rows where the buffer holds that many: each slice's GEMM then
        // writes y from a 128-byte aligned column (a slice of 1771 or 9362 rows, as the
        // Qwen2-7B shape's widths give, left cuBLAS misaligned outputs).
        if (slice >= kDequantSliceAlign) slice -= slice % kDequantSliceAlign;
        for (uint64_t r0 = 0; r0 < n_rows; r0 += slice) {
            const uint64_t n = std::min(slice, n_rows - r0);
            GPT_CUDA_CHECK(launch_dequant_f16(w.data, (int)w.dtype, w.group, w.rows, row0 + r0, n, (uint32_t)w.cols,
                                              dev(plan_.dequant), stream_));
            Weight part;
            part.data = dev(plan_.dequant);
            part.dtype = DType::F16;
            part.rows = n;
            part.cols = w.cols;
            gemm(cublas_, part, x, x_dtype, ldx, static_cast<uint8_t *>(y) + r0 * dtype_bytes(y_dtype), y_dtype, rows, p_.allow_tf32,
                 ldy);
        }
    }

    static int quant_code(const Weight &w) { return is_quantized(w.dtype) ? (int)w.dtype : 0; }

    // The architecture built the spec from a checked file; a mismatch here is a bug of ours.
    void check_moe(const MoeSpec &s) const {
        const uint64_t E = shape_.n_experts, k = shape_.n_experts_used, d = shape_.d_model, fe = shape_.d_ff_expert;
        auto need = [&](const Weight *w, uint64_t rows, uint64_t cols, const char *what) {
            if (!w || !*w || w->rows != rows || w->cols != cols)
                fail(GPT_ERR_INTERNAL, "moe: %s is not [%llu, %llu]", what, (unsigned long long)rows, (unsigned long long)cols);
            if (!is_quantized(w->dtype) && w->dtype != p_.compute)
                fail(GPT_ERR_INTERNAL, "moe: %s is %s, the activations %s", what, dtype_name(w->dtype), dtype_name(p_.compute));
        };
        if (s.norm && (!*s.norm || s.norm->dtype != DType::F32 || s.norm->rows != d))
            fail(GPT_ERR_INTERNAL, "moe: the norm's weights are not %llu f32 values", (unsigned long long)d);
        if (!E || !k || k > E || k > kMoeMaxTopK || !fe)
            fail(GPT_ERR_UNSUPPORTED, "moe: %llu of %llu experts a token (at most %u on CUDA) of width %llu", (unsigned long long)k,
                 (unsigned long long)E, kMoeMaxTopK, (unsigned long long)fe);
        need(s.router, E, d, "the router");
        need(s.gate_up, E * 2 * fe, d, "the experts' gate|up");
        need(s.down, E * d, fe, "the experts' down");
        if (s.act != Activation::SILU && s.act != Activation::GELU_TANH)
            fail(GPT_ERR_INTERNAL, "moe: activation %d is no GLU gate's", (int)s.act);
        for (const Weight *w : {s.router, s.gate_up, s.down})
            if (is_quantized(w->dtype) && (d % 32 || fe % 32))
                fail(GPT_ERR_UNSUPPORTED, "moe: quantized experts need d_model (%llu) and d_ff_expert (%llu) in multiples of 32",
                     (unsigned long long)d, (unsigned long long)fe);
        if (s.shared_gate_up && *s.shared_gate_up) {
            const uint64_t fs = shape_.d_ff_shared;
            if (!fs) fail(GPT_ERR_INTERNAL, "moe: a shared expert in a shape without d_ff_shared");
            need(s.shared_gate_up, 2 * fs, d, "the shared expert's gate|up");
            need(s.shared_down, d, fs, "the shared expert's down");
            if (s.shared_gate && *s.shared_gate) need(s.shared_gate, 1, d, "the shared expert's gate");
            if (is_quantized(s.shared_gate_up->dtype) && fs % 32)
                fail(GPT_ERR_UNSUPPORTED, "moe: a quantized shared expert needs d_ff_shared (%llu) in multiples of 32",
                     (unsigned long long)fs);
        }
    }

    void check_whole_norm(const Weight *w, uint32_t n, const char *which) const {
        if (w && *w && (w->rows != n || w->dtype != DType::F32))
            fail(GPT_ERR_INTERNAL, "attention: the whole-projection %s norm has %llu weights, not %u", which,
                 (unsigned long long)w->rows, n);
    }

    MoeExpertArgs expert_args(const Weight &w) const {
        MoeExpertArgs a{};
        a.w = w.data;
        a.wq = quant_code(w);
        a.group = w.group;
        a.rows = rows_;
        a.n_experts = shape_.n_experts;
        a.top_k = shape_.n_experts_used;
        a.d = shape_.d_model;
        a.ff = shape_.d_ff_expert;
        a.act_dtype = (int)p_.compute;
        return a;
    }

    // Few rows: each (row, slot) pair's GLU over its expert's rows, then each row's down
    // projections weighted and summed into X, reading the chosen ids on the device.
    void moe_decode(const MoeSpec &s) {
        MoeExpertArgs g = expert_args(*s.gate_up);
        g.x = dev(plan_.h);
        g.ids = dev<int32_t>(plan_.moe_ids);
        g.glu_out = dev(plan_.moe_ff);
        g.act = (int)s.act;
        GPT_CUDA_CHECK(launch_moe_gate_up(g, stream_));
        MoeExpertArgs dn = expert_args(*s.down);
        dn.x = dev(plan_.moe_ff);
        dn.ids = g.ids;
        dn.weights = dev<float>(plan_.moe_weights);
        dn.residual = dev<float>(plan_.x);
        GPT_CUDA_CHECK(launch_moe_down(dn, stream_));
    }

    // Whether the grouped GEMM takes this context's experts: f16/bf16 compute with float
    // experts (check_moe: then in the compute dtype; a model with quantized matrices has a
    // dequantization scratch, so none here is quantized), d_model and d_ff_expert multiples
    // of 8, kernels built for sm_80 or newer. Decided from the context alone, so run() knows
    // before a step whether it may be captured.
    bool grouped_gemm_fits() const {
        return p_.dequant_scratch == 0 && moe_grouped_gemm_supported((int)p_.compute, shape_.d_model) &&
               moe_grouped_gemm_supported((int)p_.compute, shape_.d_ff_expert);
    }

    // Many rows: the pairs grouped by expert on the device and their inputs gathered in that
    // order, then gate|up, the GLU and down, then the weighted sum of each row's slots added to X.
    void moe_grouped(const MoeSpec &s) {
        const uint32_t E = shape_.n_experts, k = shape_.n_experts_used, d = shape_.d_model;
        const uint32_t pairs = rows_ * k;
        const bool on_device = grouped_gemm_fits() && !is_quantized(s.gate_up->dtype) && !is_quantized(s.down->dtype);
        if (!on_device && capturing_) fail(GPT_ERR_INTERNAL, "moe: a %u-row step of per-expert GEMMs inside a graph capture", rows_);
        GPT_CUDA_CHECK(launch_moe_group(dev<int32_t>(plan_.moe_ids), pairs, E, dev<int32_t>(plan_.moe_offsets),
                                        dev<int32_t>(plan_.moe_perm), dev<int32_t>(plan_.moe_inv), stream_));
        GPT_CUDA_CHECK(launch_moe_gather(dev(plan_.h), dev<int32_t>(plan_.moe_perm), pairs, k, d, (int)p_.compute, dev(plan_.moe_x),
                                         stream_));
        if (on_device) moe_grouped_on_device(s);
        else moe_grouped_on_host(s);
        GPT_CUDA_CHECK(launch_moe_combine(dev<float>(plan_.moe_down), dev<float>(plan_.moe_weights), dev<int32_t>(plan_.moe_inv),
                                          rows_, k, d, dev<float>(plan_.x), stream_));
    }

    // One grouped GEMM for gate|up (in the compute dtype), the GLU, one for down (f32): the
    // kernels read the group offsets on the device, so nothing syncs and the step may be captured.
    void moe_grouped_on_device(const MoeSpec &s) {
        const uint32_t E = shape_.n_experts, d = shape_.d_model, fe = shape_.d_ff_expert, pairs = rows_ * shape_.n_experts_used;
        MoeGroupedGemmArgs g{};
        g.x = dev(plan_.moe_x);
        g.w = s.gate_up->data;
        g.offsets = dev<int32_t>(plan_.moe_offsets);
        g.y = dev(plan_.moe_gu);
        g.pairs = pairs;
        g.n_experts = E;
        g.n = 2 * fe;
        g.k = d;
        g.dtype = (int)p_.compute;
        GPT_CUDA_CHECK(launch_moe_grouped_gemm(g, stream_));
        GPT_CUDA_CHECK(launch_swiglu(dev(plan_.moe_gu), dev(plan_.moe_ff), pairs, fe, (int)s.act, (int)p_.compute, stream_));
        MoeGroupedGemmArgs dn = g;
        dn.x = dev(plan_.moe_ff);
        dn.w = s.down->data;
        dn.y = dev(plan_.moe_down);
        dn.n = d;
        dn.k = fe;
        dn.y_f32 = 1;
        GPT_CUDA_CHECK(launch_moe_grouped_gemm(dn, stream_));
    }

    // The group offsets read back (host-syncing: the step runs eagerly, see run), one cuBLAS
    // GEMM per used expert over its grouped rows for gate|up and again for down. For f32
    // compute and quantized experts, which the grouped GEMM does not take.
    void moe_grouped_on_host(const MoeSpec &s) {
        const uint32_t E = shape_.n_experts, k = shape_.n_experts_used, d = shape_.d_model, fe = shape_.d_ff_expert;
        const uint32_t pairs = rows_ * k;
        const uint64_t a = dtype_bytes(p_.compute);
        int32_t *offsets = dev<int32_t>(plan_.moe_offsets);
        GPT_CUDA_CHECK(cudaMemcpyAsync(host_ + plan_.h_moe_offsets.offset, offsets, 4ull * (E + 1), cudaMemcpyDeviceToHost, stream_));
        GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
        std::vector<int32_t> off(host<int32_t>(plan_.h_moe_offsets), host<int32_t>(plan_.h_moe_offsets) + E + 1);
        for (uint32_t e = 0; e < E; e++)
            if (off[e] < 0 || off[e] > off[e + 1] || (uint32_t)off[e + 1] > pairs)
                fail(GPT_ERR_INTERNAL, "moe: expert %u's group [%d, %d) of %u pairs", e, off[e], off[e + 1], pairs);
        uint8_t *xg = dev(plan_.moe_x), *gu = dev(plan_.moe_gu), *ff = dev(plan_.moe_ff), *down = dev(plan_.moe_down);
        for (uint32_t e = 0; e < E; e++) {
            const uint32_t n = (uint32_t)(off[e + 1] - off[e]);
            if (!n) continue;
            project_rows(*s.gate_up, (uint64_t)e * 2 * fe, 2ull * fe, xg + (uint64_t)off[e] * d * a, p_.compute, d,
                         gu + (uint64_t)off[e] * 2 * fe * a, p_.compute, n, 2ull * fe);
        }
        GPT_CUDA_CHECK(launch_swiglu(gu, ff, pairs, fe, (int)s.act, (int)p_.compute, stream_));
        for (uint32_t e = 0; e < E; e++) {
            const uint32_t n = (uint32_t)(off[e + 1] - off[e]);
            if (!n) continue;
            project_rows(*s.down, (uint64_t)e * d, d, ff + (uint64_t)off[e] * fe * a, p_.compute, fe, down + (uint64_t)off[e] * d * 4,
                         DType::F32, n, d);
        }
    }

    // The shared expert on every row (the dense paths: the GEMV with its GLU for one or two
    // rows, cuBLAS beyond), scaled by sigmoid(H . shared_gate) when there is a gate.
    void moe_shared(const MoeSpec &s) {
        const Weight &gu = *s.shared_gate_up, &down = *s.shared_down;
        const uint32_t d = shape_.d_model, fs = shape_.d_ff_shared;
        const bool gated = s.shared_gate && *s.shared_gate;
        if (gated)
            GPT_CUDA_CHECK(launch_moe_router(dev(plan_.h), s.shared_gate->data, quant_code(*s.shared_gate), s.shared_gate->group, rows_,
                                             1, d, (int)p_.compute, dev<float>(plan_.shared_gate), stream_));
        const bool gemv = rows_ <= kGemvRows && gemv_supported(rows_, d, d, (int)p_.compute, quant_code(gu)) &&
                          gemv_supported(rows_, fs, fs, (int)p_.compute, quant_code(down));
        if (gemv) {
            GemvArgs g{};
            g.wq = quant_code(gu);
            g.group = gu.group;
            g.x = dev(plan_.h);
            g.ldx = d;
            g.w = gu.data;
            g.y = dev(plan_.shared_ff);
            g.rows = rows_;
            g.n = fs;
            g.k = d;
            g.glu = 1;
            g.act = (int)s.act;
            g.dtype = (int)p_.compute;
            GPT_CUDA_CHECK(launch_gemv(g, stream_));
            GemvArgs o{};
            o.wq = quant_code(down);
            o.group = down.group;
            o.x = dev(plan_.shared_ff);
            o.ldx = fs;
            o.w = down.data;
            o.y = dev(plan_.shared_down);
            o.y_f32 = 1;
            o.rows = rows_;
            o.n = d;
            o.k = fs;
            o.dtype = (int)p_.compute;
            GPT_CUDA_CHECK(launch_gemv(o, stream_));
        } else {
            project(gu, dev(plan_.h), p_.compute, d, dev(plan_.shared_gu), p_.compute, rows_);
            GPT_CUDA_CHECK(launch_swiglu(dev(plan_.shared_gu), dev(plan_.shared_ff), rows_, fs, (int)s.act, (int)p_.compute, stream_));
            project(down, dev(plan_.shared_ff), p_.compute, fs, dev(plan_.shared_down), DType::F32, rows_);
        }
        GPT_CUDA_CHECK(launch_moe_shared_add(dev<float>(plan_.shared_down), gated ? dev<float>(plan_.shared_gate) : nullptr, rows_, d,
                                             dev<float>(plan_.x), stream_));
    }

    // Moves each sequence's last row of X, H and QKV to rows 0..batch-1 (after flush_delta: X
    // is whole); the step's later ops run on those rows only, with the positions and sequence
    // ids begin_step put after the rows. Those are not moved by a kernel: the attention kernels
    // read them before their PDL wait, so a kernel writing them raced with those reads
    // (RELIABILITY, 2026-11-27: wrong logits on some prompt steps).
    void keep_last_rows() {
        LastRowsArgs l{};
        const uint64_t a = dtype_bytes(p_.compute);
        void *bufs[] = {dev(plan_.x), dev(plan_.h), dev(plan_.qkv)};
        const uint64_t bytes[] = {4ull * shape_.d_model, a * shape_.d_model, a * shape_.qkv_dim()};
        static_assert(sizeof bufs / sizeof bufs[0] == kLastRowsMaxBuffers, "one entry a buffer");
        for (uint32_t i = 0; i < kLastRowsMaxBuffers; i++) {
            l.buf[i] = bufs[i];
            l.row_bytes[i] = (uint32_t)bytes[i];
        }
        l.n_buffers = kLastRowsMaxBuffers;
        l.n_seqs = in_.batch;
        l.n_tokens = in_.n_tokens;
        GPT_CUDA_CHECK(launch_last_rows(l, stream_));
        rows_ = in_.batch;
        last_rows_only_ = true;
    }

    // The current rows' first entry in the positions and sequence ids: after keep_last_rows,
    // the per-sequence entries begin_step put after the step's rows.
    uint32_t ids_from() const { return last_rows_only_ ? in_.batch * in_.n_tokens : 0; }

    // Adds a residual delta left by a GEMM when no norm follows to absorb it.
    void flush_delta() {
        if (!pending_delta_) return;
        GPT_CUDA_CHECK(launch_bias_act(dev(plan_.delta), pending_delta_bias_, 0, dev<float>(plan_.x), rows_, shape_.d_model,
                                       (int)p_.compute, stream_));
        pending_delta_ = false;
        pending_delta_bias_ = nullptr;
    }
    // Forgets what the ops of a step left for the next op (a new step, or ops run again).
    void drop_pending() {
        pending_delta_ = false;
        pending_delta_bias_ = nullptr;
        pending_qkv_bias_ = nullptr;
        pending_norm_ = {};
    }
    // Adds the QKV projection's bias left for rope_append when something else reads QKV first.
    void flush_qkv_bias() {
        if (!pending_qkv_bias_) return;
        GPT_CUDA_CHECK(launch_bias_act(dev(plan_.qkv), pending_qkv_bias_, 0, nullptr, rows_, shape_.qkv_dim(), (int)p_.compute,
                                       stream_));
        pending_qkv_bias_ = nullptr;
    }
    // Runs a few-row projection as one GEMV with its epilogue fused; false when the shape
    // needs the cuBLAS path.
    bool try_gemv(Act in, const Weight &w, GemvArgs &g) {
        flush_delta();
        const int wq = is_quantized(w.dtype) ? (int)w.dtype : 0;
        if ((!wq && rows_ > kGemvRows) || !gemv_supported(rows_, (uint32_t)w.cols, w.cols, (int)p_.compute, wq)) {
            flush_norm(); // the caller's GEMM reads H
            return false;
        }
        g.wq = wq;
        g.group = w.group;
        g.x = buf(in);
        g.ldx = w.cols;
        g.w = w.data;
        g.rows = rows_;
        g.n = (uint32_t)(g.glu ? w.rows / 2 : w.rows);
        g.k = (uint32_t)w.cols;
        g.dtype = (int)p_.compute;
        if (!fold_pending_norm(in, g)) flush_norm();
        GPT_CUDA_CHECK(launch_gemv(g, stream_));
        return true;
    }
    // A pending norm (norm() of one row) folded into GEMV g, which reads its input `in` (as
    // one row of H): g then reads X and normalizes it while staging it, writing H as the norm
    // op would. False, g unchanged, where the GEMV cannot (gemv_folds_norm).
    bool fold_pending_norm(Act in, GemvArgs &g) {
        if (!pending_norm_.w || in != Act::H || rows_ != 1) return false;
        GemvArgs f = g;
        f.x = dev(plan_.x);
        f.ldx = shape_.d_model;
        f.norm_w = pending_norm_.w;
        f.norm_eps = pending_norm_.eps;
        f.norm_out = dev(plan_.h);
        if (f.k != shape_.d_model || !gemv_folds_norm(f)) return false;
        g = f;
        pending_norm_ = {};
        return true;
    }
    // Runs a pending norm on its own (the op about to run reads H or X otherwise).
    void flush_norm() {
        if (!pending_norm_.w) return;
        const PendingNorm n = pending_norm_;
        pending_norm_ = {};
        run_norm(n.w, nullptr, n.eps, true);
    }
    // The norm kernel: H = norm(X) (a residual projection left in DELTA by the GEMM path, and
    // its bias, added to X in the same pass; a held norm never has one: norm() holds none then).
    void run_norm(const float *w, const float *b, float eps, bool rms) {
        GPT_CUDA_CHECK(launch_add_norm(dev<float>(plan_.x), pending_delta_ ? dev(plan_.delta) : nullptr,
                                       pending_delta_ ? pending_delta_bias_ : nullptr, w, b, eps, rms, rows_, shape_.d_model,
                                       dev(plan_.h), (int)p_.compute, stream_));
        pending_delta_ = false;
        pending_delta_bias_ = nullptr;
    }
    // The short attention kernel's key limit for this shape and cache type; 0 (never) with
    // GPT_ATTN_SHORT=0 (A/B runs).
    static uint32_t short_attention_keys(const ModelShape &s, const ExecParams &p) {
        const char *v = std::getenv("GPT_ATTN_SHORT");
        if (v && std::strcmp(v, "0") == 0) return 0;
        return attention_short_max_keys(s.n_heads, s.n_kv_heads, s.head_dim, (int)p.kv);
    }
    // GPT_FOLD_NORM=0 keeps every norm its own kernel (A/B runs).
    static bool fold_norms() {
        static const bool on = [] {
            const char *v = std::getenv("GPT_FOLD_NORM");
            return !(v && std::strcmp(v, "0") == 0);
        }();
        return on;
    }
    void upload_rope_tables() {
        const uint64_t n = plan_.rope_entries;
        if (!n) return;
        std::vector<float> cs(n), sn(n);
        for (size_t i = 0; i < shape_.ropes.size(); i++)
            rope_tables(shape_.ropes[i], p_.max_seq, cs.data() + plan_.rope_offset[i], sn.data() + plan_.rope_offset[i]);
        GPT_CUDA_CHECK(cudaMemcpy(dev(plan_.rope_cos), cs.data(), 4 * n, cudaMemcpyHostToDevice));
        GPT_CUDA_CHECK(cudaMemcpy(dev(plan_.rope_sin), sn.data(), 4 * n, cudaMemcpyHostToDevice));
    }
    void release() {
        cudaSetDevice(device_);
        {
            std::unique_lock<std::shared_mutex> lock(capture_mutex());
            for (auto &g : graphs_)
                if (g.exec) cudaGraphExecDestroy(g.exec);
            if (cublas_) cublas().destroy(cublas_); // loaded: the handle was made through it
            if (staged_) cudaEventDestroy(staged_);
            if (stream_) cudaStreamDestroy(stream_);
        }
        device_free(dev_);
        pinned_free(host_);
        cublas_ = nullptr;
        stream_ = nullptr;
        staged_ = nullptr;
        dev_ = host_ = nullptr;
    }

    const int device_;
    const ModelShape shape_;
    const ExecParams p_;
    const CudaPlan plan_;
    uint8_t *dev_ = nullptr, *host_ = nullptr;
    cudaStream_t stream_ = nullptr;
    cudaEvent_t staged_ = nullptr; // recorded after sample()'s copies out of the staging area
    cublasHandle_t cublas_ = nullptr;
    std::vector<Graph> graphs_; // recorded step shapes, at most kMaxGraphs
    uint64_t clock_ = 0;
    bool capturing_ = false;
    Weight captured_head_;
    float captured_softcap_ = 0;
    Weight captured_head_bias_;
    uint64_t allocations_ = 0;
    StepInput in_{};
    uint32_t rows_ = 0;
    bool have_last_ = false;
    bool pending_delta_ = false; // DELTA holds a residual update not yet added to X
    const float *pending_delta_bias_ = nullptr; // ... and this bias (f32 [d_model]) with it
    const float *pending_qkv_bias_ = nullptr;   // QKV lacks this bias (f32 [qkv_dim]): rope_append adds it
    // A one-row RMSNorm of X into H not run yet: the next op folds it in or runs it first
    // (every op that reads H or X, or writes X, calls flush_norm unless it folds it in).
    struct PendingNorm {
        const float *w = nullptr; // null: none
        float eps = 0;
    } pending_norm_;
    bool last_rows_only_ = false; // keep_last_rows ran: rows_ is the batch, one row a sequence
    uint32_t short_keys_ = 0;     // the most keys the short attention kernel takes (0: never)
    bool short_step_ = false;     // this step's attention takes it (begin_step)

};

} // namespace

std::unique_ptr<Executor> make_cuda_executor(int device, const ModelShape &s, const ExecParams &p) {
    return std::make_unique<CudaExecutor>(device, s, p);
}

} // namespace gpt::cuda
