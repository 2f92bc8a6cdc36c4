// backend.h - the interface every backend implements (CPU reference, CUDA).
// A Device is a backend's model-level half: it places weights in its memory, decides what
// its executors can do (dtypes, threads) and plans and creates Executors. An Executor is the
// context-level half: it owns the KV cache and the activation buffers (one allocation, sized
// at creation) and runs the ops that the architecture files (lib/model) compose into a
// forward pass. A backend sees a model only as a ModelShape (dimensions and features) and a
// flat list of weights: it never knows which architecture it runs.
//
// Data flow of one step (rows = batch x n_tokens, row r = b * n_tokens + t):
//   embed           X[rows, d]      <- tok_emb[token] * scale (+ pos_emb[pos])  X is f32
//   norm            H = norm(X) * w (+ b)
//   norm_add        X += norm(in) * w          (a norm after a sublayer: Gemma's post-norms)
//   matmul          out[rows, w.rows] = in[rows, w.cols] @ w^T (+ b), optional GELU;
//                   with out == X the result is added to the residual stream instead
//   attention       QKV -> q/k norm, RoPE, append K/V to the cache, causal attention -> ATT
//   matmul_glu      FF[rows, d_ff] = act(in @ gate^T) * (in @ up^T), w = [gate rows | up rows]
//   moe             X += sum over the top-k experts of p_e * expert_e(H) (+ a shared expert)
//   logits          LOGITS[selected rows, vocab] = H[selected] @ head^T (+ b) (soft-capped) f32
// Activation dtypes other than X and LOGITS are the executor's compute dtype.
#pragma once

#include "core/dtype.h"
#include "core/rope.h"
#include "core/tensor.h"
#include "sampler/sampler.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace gpt {

enum class Act : uint8_t { X, H, QKV, ATT, FF };
enum class NormKind : uint8_t { LAYER, RMS };
// matmul takes NONE, GELU_TANH, GELU_ERF or RELU; matmul_glu takes SILU (SwiGLU) or
// GELU_TANH (GeGLU) as the gate's activation. Values are the activation codes the CUDA
// kernels take (gemv.cuh, bias_act.cuh): keep them in step.
enum class Activation : uint8_t { NONE = 0, GELU_TANH = 1, GELU_ERF = 2, RELU = 3, SILU = 4 };

// What a backend knows of a model: its dimensions, and the features that decide which
// buffers an executor needs. Per-op features (norm kind, biases, activation) come with the ops.
struct ModelShape {
    uint32_t n_layers = 0;
    uint32_t d_model = 0;
    uint32_t n_heads = 0;
    uint32_t n_kv_heads = 0;
    uint32_t head_dim = 0;
    uint32_t d_ff = 0;
    uint32_t vocab_size = 0;
    bool gated_ffn = false; // the FFN's first projection yields [gate | up] (2 d_ff rows): matmul_glu
    // The rotations the layers use (AttentionSpec::rope indexes it); empty: no rotary
    // positions. Each gets its cos/sin tables per context.
    std::vector<RopeSpec> ropes;
    // Mixture of experts (0 for a dense model): experts per MoE layer, how many each token
    // uses (top-k), each expert's hidden width, the shared expert's hidden width (0: none).
    // d_ff stays the width of the dense FFN layers a MoE model may also have.
    uint32_t n_experts = 0;
    uint32_t n_experts_used = 0;
    uint32_t d_ff_expert = 0;
    uint32_t d_ff_shared = 0;

    uint32_t q_dim() const { return n_heads * head_dim; }
    uint32_t kv_dim() const { return n_kv_heads * head_dim; }
    uint32_t qkv_dim() const { return q_dim() + 2 * kv_dim(); }
    // Width of the FFN's first projection: [gate | up] or up.
    uint32_t ffn_in_dim() const { return gated_ffn ? 2 * d_ff : d_ff; }
};

struct ExecParams {
    uint32_t max_batch = 1;
    uint32_t max_seq = 0;
    uint32_t max_step_tokens = 512; // >= max_batch
    DType compute = DType::F32;
    DType kv = DType::F32;
    uint32_t n_threads = 1;         // CPU
    bool allow_tf32 = false;
    bool use_graphs = true;
    // CUDA, quantized weights: bytes of the f16 buffer they are dequantized into (in slices of
    // rows) for cuBLAS when a step has more rows than the quantized GEMV takes; 0 otherwise.
    uint64_t dequant_scratch = 0;
};

struct MemoryPlan {
    uint64_t host_bytes = 0;
    uint64_t device_bytes = 0;
};

// The inputs of one step; pointers are host memory owned by the caller for the call.
struct StepInput {
    uint32_t batch = 0;
    uint32_t n_tokens = 0;
    const int32_t *tokens = nullptr;    // [batch * n_tokens]
    const uint32_t *start_pos = nullptr; // [batch]: cache position of each sequence's first new token
    bool all_logits = false;            // logits for every row, else each sequence's last row
    uint32_t logits_seq_stride = 0;     // all_logits: rows between sequences in the host buffer
    float *host_all_logits = nullptr;   // all_logits: this step's first row in the caller's buffer
};

// Whether, once layer `layer`'s attention has cached every row's k and v, the rest of the step
// may run on each sequence's last row alone: it is the last layer and the step returns only
// those rows' logits. Both executors then move those rows to the front (keep_last_rows).
inline bool last_rows_suffice(const StepInput &in, const ModelShape &s, uint32_t layer) {
    return layer + 1 == s.n_layers && !in.all_logits && in.n_tokens > 1;
}

// One layer's attention. The defaults are plain causal attention over every cached key.
struct AttentionSpec {
    uint32_t layer = 0;
    int32_t rope = -1;               // index into ModelShape::ropes; -1: no rotary positions
    // RMSNorm of each q (and k) head over head_dim, weights [head_dim], before RoPE (Qwen3,
    // Gemma-3); nullptr: none.
    const Weight *q_norm = nullptr;
    const Weight *k_norm = nullptr;
    float qk_norm_eps = 0;
    float scale = 0;                 // scores = q . k * scale; 0: 1 / sqrt(head_dim)
    uint32_t window = 0;             // 0: every earlier key; else the query at p sees keys (p - window, p]
    float softcap = 0;               // 0: none; else scores = softcap * tanh(scores / softcap) (Gemma-2)
    // q_norm / k_norm over the whole q (q_dim, weights [q_dim]) and k (kv_dim, weights
    // [kv_dim]) projection of a row instead of each head (OLMoE).
    bool qk_norm_whole = false;
};

// One mixture-of-experts FFN (applied to H, added to X). Router probabilities p =
// softmax(H @ router^T) in f32; each row uses the k = n_experts_used experts of highest p
// (ties: the lower expert index first), weighted by p_e, divided by the k chosen p's sum when
// norm_topk. Expert e: down_e(act(H @ gate_e^T) * (H @ up_e^T)). The experts of a layer are
// stacked in one matrix each, so quantization, placement and checksums treat them as any
// other weight.
struct MoeSpec {
    // The RMSNorm of X into H that comes first (its weights [d_model]): a backend may fold it
    // into the router (one kernel less a decode layer on CUDA). nullptr: H is already set.
    const Weight *norm = nullptr;
    float norm_eps = 0.0f;
    const Weight *router = nullptr;  // [n_experts, d_model]
    const Weight *gate_up = nullptr; // [n_experts * 2 d_ff_expert, d_model]: expert e's gate rows,
                                     // then its up rows, from row e * 2 d_ff_expert
    const Weight *down = nullptr;    // [n_experts * d_model, d_ff_expert]: expert e's rows from e * d_model
    Activation act = Activation::SILU;
    bool norm_topk = true;
    // Shared expert (Qwen2-MoE), run on every row: X += g * down_s(act(H @ gate_s^T) * (H @ up_s^T)),
    // g = sigmoid(H . shared_gate) or 1 without shared_gate. nullptr: none.
    const Weight *shared_gate_up = nullptr; // [2 d_ff_shared, d_model]
    const Weight *shared_down = nullptr;    // [d_model, d_ff_shared]
    const Weight *shared_gate = nullptr;    // [1, d_model]
};

class Executor {
public:
    virtual ~Executor() = default;

    // Stages a step's inputs. Every op until the next begin_step works on these rows.
    virtual void begin_step(const StepInput &in) = 0;
    // Runs `ops` (the architecture's op sequence for the staged step). A backend may record
    // them once per step shape and replay the record (CUDA graphs): ops must then depend on
    // nothing but the step shape (a replay skips the host side of ops, the abort hook too).
    // `replayable` says whether that is allowed for this call.
    virtual void run(const std::function<void()> &ops, bool replayable) = 0;

    // scale: every embedding row is multiplied by it (Gemma: sqrt(d_model)); 1 for none.
    virtual void embed(const Weight &tok, const Weight *pos, float scale) = 0;
    virtual void norm(NormKind kind, const Weight &w, const Weight *b, float eps) = 0;
    // X += norm(in) * w, in: [rows, d_model] (H, after a projection into it).
    virtual void norm_add(NormKind kind, Act in, const Weight &w, float eps) = 0;
    virtual void matmul(Act in, const Weight &w, const Weight *b, Act out, Activation act) = 0;
    virtual void attention(const AttentionSpec &spec) = 0;
    // act: SILU (SwiGLU) or GELU_TANH (GeGLU).
    virtual void matmul_glu(Act in, const Weight &w, Act out, Activation act) = 0;
    // A mixture-of-experts FFN over H (see MoeSpec), added to X.
    virtual void moe(const MoeSpec &spec) = 0;
    // Projects the selected rows of H onto the vocabulary, adds bias ([vocab] f32, or null;
    // nanoGPT-style heads), then softcap * tanh(logit / softcap) when softcap > 0 (Gemma-2).
    // all_logits with a host buffer writes every row's logits there ([rows][vocab]);
    // otherwise the last-row logits stay in the executor for read_logits / sample.
    virtual void logits(const Weight &head, float *host_all_logits, float softcap,
                        const Weight *bias) = 0;

    // After run(): copy each sequence's last-row logits to host [batch][vocab].
    virtual void read_logits(float *host) = 0;
    // After run(): sample one token per sequence from the last-row logits.
    virtual void sample(const SampleSpec &spec, const SampleRow *rows, int32_t *out_tokens) = 0;

    // Sets how many positions sequence `seq` holds (after reset or truncate); the executor
    // keeps whatever per-sequence state its kernels need.
    virtual void set_seq_len(uint32_t seq, uint32_t len) = 0;

    // Allocations made by this executor since creation (tests prove forward adds none).
    virtual uint64_t allocation_count() const = 0;
};

// Where a device's weights come from: the host memory they lie in (a file mapping or a
// buffer) and their checks. Weight i is the i-th of the list given to place_weights.
class WeightSource {
public:
    virtual ~WeightSource() = default;
    // Checks bytes [checked, checked + len) of weight i's stored bytes (crc32 and NaN/Inf,
    // unless the caller skipped them): pieces come in order from 0, and the piece reaching
    // the end also compares the whole weight's crc32. Throws GPT_ERR_CHECKSUM / GPT_ERR_FORMAT
    // naming the tensor. A weight's bytes must be checked before anything that reads them
    // is used (an upload of unchecked bytes is fine: on a failure the load frees it).
    virtual void check(size_t i, uint64_t len) = 0;
    // Checks every weight at once (for a device that reads them where they lie).
    virtual void check_all() = 0;
    // Bytes [offset, offset + len) of weight i will not be read again: their pages may go.
    virtual void release(size_t i, uint64_t offset, uint64_t len) = 0;
    // Whether the weights' host memory is a read-only file mapping (else memory the process
    // owns or borrows, readable and writable): how a device may register it.
    virtual bool read_only_mapping() const = 0;
};

// How a model asks for its weights to be placed.
struct Placement {
    DType want = DType::F32; // the dtype asked for the matrices
    // A CUDA device leaves the matrices where the source holds them, registered for the GPU to
    // read in place (weights_in_host_memory() then says whether that worked).
    bool host_weights = false;
};

// Shared by every context of a model: methods other than place_weights must be safe to call
// from several threads at once.
class Device {
public:
    virtual ~Device() = default;
    virtual const char *name() const = 0;
    virtual int32_t ordinal() const = 0; // GPT_DEVICE_CPU or the CUDA ordinal
    // A GPU sharing the host's memory (Jetson): weights are best read in place there.
    virtual bool integrated() const = 0;

    // Makes every weight of the list usable by this device's executors, rewriting each in
    // place (its data pointer and dtype), and checks each through `src` before its bytes are
    // used. `how.want` is the dtype asked for the matrices; the device returns the one it holds
    // them in. Vectors (norms, biases) may be widened to f32. Host pointers in the list stay
    // valid during the call only, unless keeps_host_weights().
    virtual DType place_weights(const std::vector<Weight *> &weights, const Placement &how, WeightSource &src) = 0;
    // Whether the weights (some of them) are still read from the source's host memory.
    virtual bool keeps_host_weights() const = 0;
    // Why asked-for host weights were copied to device memory instead ("" when they were not).
    virtual std::string host_weights_refusal() const { return {}; }
    // Device memory the weights take.
    virtual uint64_t weight_bytes() const = 0;

    // Fills what the device decides in p: the compute and KV dtypes (compute, kv: a gpt_dtype
    // asked for, GPT_DTYPE_AUTO for the device's choice) and the CPU threads (0: all cores).
    // Throws GPT_ERR_UNSUPPORTED for a request it cannot serve.
    virtual void choose(ExecParams &p, uint32_t compute, uint32_t kv, uint32_t n_threads) const = 0;
    virtual MemoryPlan plan(const ModelShape &s, const ExecParams &p) const = 0;
    // Memory an executor could still get now: host (what the system can give) and device
    // (free on the GPU); 0 where the device has none or it cannot be told.
    virtual MemoryPlan available_memory() const = 0;
    virtual std::unique_ptr<Executor> create_executor(const ModelShape &s, const ExecParams &p) const = 0;
};

std::unique_ptr<Device> make_cpu_device();
// nullptr-free: throws GPT_ERR_UNSUPPORTED in a build without CUDA.
std::unique_ptr<Device> make_cuda_device(int ordinal);
int cuda_device_count();
// Creates the CUDA context of `device` (GPT_DEVICE_AUTO: the first GPU) and opens cuBLAS if
// there is one; does nothing otherwise. Never throws.
void cuda_warm_up(int device) noexcept;
const char *cuda_build_info();

// A CUDA device on paper: place_weights reads only the weights' descriptors (dtype, shape,
// group) and lays them out as make_cuda_device's would (host_weights: matrices left in the
// file, read in place; vectors in f32 on the device); choose and plan answer as a GPU's would; it holds and runs nothing
// (create_executor is GPT_ERR_UNSUPPORTED). Needs no GPU; a build without CUDA throws
// GPT_ERR_UNSUPPORTED.
std::unique_ptr<Device> make_cuda_planner(bool host_weights);

// What a CUDA device reports of itself (gpt_device_get_info, gpt info --device cuda).
struct DeviceFacts {
    std::string name;
    bool integrated = false;      // shares the host's DRAM (cudaDevAttrIntegrated)
    bool pageable_access = false; // reads pageable host memory in place (cudaDevAttrPageableMemoryAccess)
    bool host_mapped = false;     // maps page-locked host memory (cudaDevAttrCanMapHostMemory)
    uint32_t cc_major = 0, cc_minor = 0, multiprocessors = 0;
    uint64_t total_bytes = 0, free_bytes = 0; // cudaMemGetInfo
};
// Throws GPT_ERR_UNSUPPORTED for an ordinal that is no CUDA device here (or a build without
// CUDA), GPT_ERR_DEVICE when the driver fails.
DeviceFacts cuda_device_facts(int ordinal);
// Whether CUDA device `ordinal` is integrated; false when it cannot be told. Cheap (one
// attribute query), never throws.
bool cuda_is_integrated(int ordinal) noexcept;

} // namespace gpt
