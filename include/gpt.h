/* gpt.h - libgpt: embeddable GPT-2 and Llama-family inference behind a stable C ABI.
 *
 * This header is the whole public interface; anything not declared here is private.
 *
 * Walkthrough
 * -----------
 *     gpt_model *model = NULL;
 *     if (gpt_model_load("model.gpt", NULL, &model) != GPT_OK) {      // NULL: default params
 *         fprintf(stderr, "%s\n", gpt_last_error());
 *         return 1;
 *     }
 *     gpt_ctx_params cp;
 *     gpt_ctx_params_init(&cp);               // defaults; then change what you need
 *     cp.max_seq = 512;                       // the KV cache is sized here, once
 *     gpt_ctx *ctx = NULL;
 *     if (gpt_ctx_create(model, &cp, &ctx) != GPT_OK) { ... gpt_last_error() ... }
 *
 *     int32_t prompt[] = { 464, 2068, 7586 }; // token ids (gpt_tokenize makes them from text)
 *     gpt_sampling_params sp;
 *     gpt_sampling_params_init(&sp);
 *     sp.temperature = 0.0f;                  // greedy
 *     int32_t out[64];
 *     uint32_t n_out = 0;
 *     gpt_status st = gpt_generate(ctx, prompt, 3, &sp, on_token, user, out, 64, &n_out);
 *     if (st != GPT_OK) fprintf(stderr, "%s\n", gpt_ctx_last_error(ctx));
 *
 *     gpt_ctx_free(ctx);                      // contexts before the model they use
 *     gpt_model_free(model);
 *
 * gpt_forward is the lower-level call: it appends tokens to the KV cache of one or more
 * sequences and returns logits, for callers that run their own sampling or scoring.
 *
 * Rules every function follows
 * ----------------------------
 * - Functions that can fail return a gpt_status. On failure the detail (the file, the
 *   tensor, the argument, the CUDA call) is in gpt_last_error(), a per-thread message,
 *   and for calls on a context also in gpt_ctx_last_error(ctx). No call exits, aborts or
 *   lets a C++ exception escape.
 * - Constructors write the new handle through an OUT pointer and leave it NULL on
 *   failure. Destructors return nothing and accept NULL.
 * - Params structs begin with struct_size. Fill them with the matching *_init function,
 *   then change fields. struct_size must be a size some version of this header gave the
 *   struct (a program built against an older header keeps working with a newer library,
 *   which then uses defaults for the fields it did not know) or a larger one from a newer
 *   header (at most 4096 and a multiple of the struct's alignment; the extra fields are
 *   ignored); anything else is GPT_ERR_INVALID_ARG. gpt_sampling_params has had two sizes
 *   (the older one ends at its field `reserved`: 56 bytes on 64-bit platforms); the other
 *   structs one so far.
 * - Variable-length results go into a caller buffer, and the needed length is reported,
 *   so a caller can size the buffer with a first call.
 * - Memory: weights are allocated when a model is loaded, the KV cache and all scratch
 *   when a context is created. gpt_forward and gpt_generate allocate nothing.
 *
 * Threads
 * -------
 * A gpt_model is immutable after loading: any number of threads may use it at once,
 * including creating contexts on it. A gpt_ctx belongs to one thread at a time: calls on
 * one context must not overlap (distinct contexts may run in parallel, each on its own
 * thread). Free every context of a model before the model. gpt_last_error() is per thread.
 */
#ifndef GPT_H
#define GPT_H

#include <stddef.h>
#include <stdint.h>

/* Version of this header. The soname carries GPT_VERSION_MAJOR: it changes only when the
 * ABI breaks. Minor versions add functions, enum values and trailing struct fields. */
#define GPT_VERSION_MAJOR 0
#define GPT_VERSION_MINOR 6
#define GPT_VERSION_PATCH 0
#define GPT_VERSION_NUMBER (GPT_VERSION_MAJOR * 10000 + GPT_VERSION_MINOR * 100 + GPT_VERSION_PATCH)

#if defined(_WIN32) && defined(GPT_BUILDING_LIBRARY)
#define GPT_API __declspec(dllexport)
#elif defined(_WIN32)
#define GPT_API __declspec(dllimport)
#elif defined(__GNUC__)
#define GPT_API __attribute__((visibility("default")))
#else
#define GPT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- versions and status */

/* GPT_VERSION_NUMBER of the library actually linked (compare with the header's). */
GPT_API uint32_t gpt_version(void);
/* "0.1.0" */
GPT_API const char *gpt_version_string(void);
/* One line on how the library was built, e.g. "cpu; cuda 13.0 (sm_80 sm_90)". */
GPT_API const char *gpt_build_info(void);

/* Values never change meaning; new ones are appended. */
typedef enum gpt_status {
    GPT_OK = 0,
    GPT_ERR_INVALID_ARG = -1,   /* a NULL pointer, a value out of range, a misused handle */
    GPT_ERR_IO = -2,            /* a file could not be opened, read or written */
    GPT_ERR_FORMAT = -3,        /* the weight file is malformed or inconsistent */
    GPT_ERR_CHECKSUM = -4,      /* a crc32 in the weight file does not match its bytes */
    GPT_ERR_UNSUPPORTED = -5,   /* valid, but not supported by this build or device */
    GPT_ERR_OUT_OF_MEMORY = -6, /* host or device memory could not be allocated */
    GPT_ERR_DEVICE = -7,        /* a CUDA or cuBLAS call failed */
    GPT_ERR_CONTEXT_FULL = -8,  /* the tokens would not fit in the context's max_seq */
    GPT_ERR_ABORTED = -9,       /* the abort callback asked to stop */
    GPT_ERR_INTERNAL = -10,     /* a bug in the library; please report it */
    GPT_ERR_BUFFER_TOO_SMALL = -11 /* an output buffer is too small; the needed size was reported */
} gpt_status;

/* A static, never-NULL English name for a status ("GPT_ERR_FORMAT: ..."). */
GPT_API const char *gpt_status_str(int status);

/* The message of the last failed call made by this thread: never NULL, "" if none.
 * Valid until this thread's next call into the library. */
GPT_API const char *gpt_last_error(void);

/* ---------------------------------------------------------------------- enumerations */

/* Element types. GPT_DTYPE_AUTO lets the library choose (see each field). */
typedef enum gpt_dtype {
    GPT_DTYPE_AUTO = 0,
    GPT_DTYPE_F32 = 1,
    GPT_DTYPE_F16 = 2,
    GPT_DTYPE_BF16 = 3,
    /* Weight-only quantized matrices (weight files and gpt_model_info only, never a compute or
     * KV dtype): symmetric integers in groups along each row, one f16 scale per group
     * (docs/FORMAT.md, section 5.1). */
    GPT_DTYPE_Q8 = 4,
    GPT_DTYPE_Q4 = 5
} gpt_dtype;

/* "f32", "f16", "bf16", "q8", "q4", "auto"; "?" for anything else. */
GPT_API const char *gpt_dtype_name(int dtype);

typedef enum gpt_arch {
    GPT_ARCH_GPT2 = 1,  /* LayerNorm, GELU (tanh), learned positions, fused QKV with biases */
    GPT_ARCH_LLAMA = 2, /* RMSNorm, RoPE (optionally scaled: linear, llama3), SwiGLU, grouped-query
                           attention, optional sliding window (Llama 1-3.x, Mistral, Qwen2) */
    GPT_ARCH_QWEN3 = 3, /* Llama with an RMSNorm on each q and k head before RoPE (Qwen3) */
    GPT_ARCH_PHI3 = 4,  /* Llama with partial rotation, longrope scaling and an optional sliding
                           window (Phi-3, Phi-3.5, Phi-4-mini) */
    GPT_ARCH_GEMMA2 = 5, /* Gemma-2: GeGLU, pre- and post-norms, soft-capping, alternating sliding window */
    GPT_ARCH_GEMMA3 = 6, /* Gemma-3 (text): Gemma-2 plus q/k norms, local/global layers with their own RoPE */
    GPT_ARCH_MIXTRAL = 7,   /* Llama attention, a mixture of SwiGLU experts (softmax router, top-k, renormalised) */
    GPT_ARCH_QWEN2_MOE = 8, /* Qwen2 attention, many small experts plus a sigmoid-gated shared expert */
    GPT_ARCH_OLMOE = 9,     /* OLMoE: q/k RMSNorm over the whole projection, many experts, top-8 */
    GPT_ARCH_QWEN3_MOE = 10 /* Qwen3 attention (q/k norm per head), a mixture of experts */
} gpt_arch;

/* "gpt2", "llama", "qwen3", "phi3", "gemma2", "gemma3", "mixtral", "qwen2_moe", "olmoe",
 * "qwen3_moe"; "?" for anything else. */
GPT_API const char *gpt_arch_name(int arch);

/* Devices: a CUDA ordinal (0, 1, ...) or one of these. */
#define GPT_DEVICE_CPU (-1)
#define GPT_DEVICE_AUTO (-2) /* the first CUDA GPU if this build has CUDA and one is present, else the CPU */

/* Number of CUDA devices this build can use (0 without CUDA or without a GPU). */
GPT_API int gpt_cuda_device_count(void);

/* What a device is and how much memory it can give now (gpt_device_get_info). */
typedef struct gpt_device_info {
    uint32_t struct_size;      /* set by the caller: sizeof(gpt_device_info) */
    int32_t device;            /* the device described: GPT_DEVICE_CPU or a CUDA ordinal */
    uint32_t integrated;       /* 1: a GPU sharing the host's memory (Jetson; cudaDevAttrIntegrated) */
    uint32_t pageable_access;  /* 1: the GPU can read ordinary (pageable) host memory in place */
    uint32_t host_mapped;      /* 1: the GPU can map page-locked host memory (cudaHostRegister) */
    uint32_t cc_major, cc_minor; /* compute capability; 0 for the CPU */
    uint32_t multiprocessors;  /* SMs; for the CPU its hardware threads */
    uint64_t total_bytes;      /* the GPU's memory; for the CPU MemTotal */
    uint64_t available_bytes;  /* what a model or context could still get: free GPU memory
                                  (cudaMemGetInfo); for the CPU and an integrated GPU the
                                  host's MemAvailable (on an integrated GPU cudaMemGetInfo
                                  counts page cache the kernel would drop as used) */
    char name[128];            /* "NVIDIA H100 80GB HBM3", "Orin", "cpu"; NUL-terminated */
} gpt_device_info;

/* Fills *info for device (a CUDA ordinal, GPT_DEVICE_CPU, or GPT_DEVICE_AUTO: the device a
 * model would load on). Set info->struct_size first; the rule of gpt_model_get_info applies.
 * A CUDA ordinal this build or machine lacks is GPT_ERR_UNSUPPORTED. */
GPT_API gpt_status gpt_device_get_info(int32_t device, gpt_device_info *info);

/* ------------------------------------------------------------------------------ model */

typedef struct gpt_model gpt_model; /* weights, hyperparameters and tokenizer; immutable */
typedef struct gpt_ctx gpt_ctx;     /* KV cache and scratch for one thread of work */

/* gpt_model_params.flags */
#define GPT_MODEL_SKIP_CHECKSUMS 0x1u /* trust the data: skip the tensors' crc32 and NaN/Inf
                                         checks (faster load; header, metadata and table
                                         crc32s are always checked) */
#define GPT_MODEL_NO_MMAP 0x2u        /* read the file into memory instead of mapping it */
#define GPT_MODEL_COPY_BUFFER 0x4u    /* load_from_memory: copy the buffer instead of borrowing it */
#define GPT_MODEL_HOST_WEIGHTS 0x8u   /* on a CUDA device, keep the weights in host memory (the
                                         file mapping, the read buffer, or the caller's buffer
                                         for gpt_model_load_from_memory) and let the GPU read them
                                         in place: the default on an integrated GPU (Jetson), on
                                         request on a discrete one (slow, over the bus, but a
                                         model larger than the GPU's memory runs). Norms and
                                         biases still go to device memory. A weight_dtype other
                                         than the file's is GPT_ERR_UNSUPPORTED in this mode.
                                         Where the driver refuses to register the memory, the
                                         weights are copied to device memory as without the
                                         flag: GPT_MODEL_INFO_HOST_WEIGHTS says which happened.
                                         No effect on the CPU. */
#define GPT_MODEL_DEVICE_WEIGHTS 0x10u /* copy the weights to device memory even on an
                                          integrated GPU. Both flags: GPT_ERR_INVALID_ARG. */

typedef struct gpt_model_params {
    uint32_t struct_size;  /* sizeof(gpt_model_params), set by gpt_model_params_init */
    int32_t device;        /* default GPT_DEVICE_AUTO; GPT_DEVICE_CPU or a CUDA ordinal */
    uint32_t weight_dtype; /* gpt_dtype the weights are held in on a GPU; default AUTO: the
                              file's dtype. On the CPU weights stay as stored in the file.
                              Q8/Q4 only for a file of that dtype (GPT_ERR_UNSUPPORTED
                              otherwise: quantize offline); a quantized file computes in f16
                              on a GPU, and a float weight_dtype dequantizes it at load. */
    uint32_t flags;        /* GPT_MODEL_*; default 0 */
} gpt_model_params;

GPT_API void gpt_model_params_init(gpt_model_params *params);

/* Loads a weight file (see docs/FORMAT.md). params may be NULL for the defaults. The file
 * is mapped read-only; on a GPU the weights are copied to device memory in one allocation,
 * each tensor checked just before its upload and its pages dropped after, and the mapping
 * is released. A model on the CPU, or with GPT_MODEL_HOST_WEIGHTS, reads its weights from the mapping until
 * gpt_model_free, so the file must not be truncated or rewritten in place meanwhile (a
 * truncation raises SIGBUS in the process, a rewrite changes the weights after their
 * checksums were checked): replace a model file by renaming a new one over it, as `gpt
 * convert` does, or load with GPT_MODEL_NO_MMAP, which reads the file into memory. A path
 * that is not a regular file (a FIFO, a device) is refused with GPT_ERR_IO, never waited on. Unless GPT_MODEL_SKIP_CHECKSUMS is set, a tensor holding NaN
 * or infinity is refused with GPT_ERR_FORMAT naming it (checked in the crc32 pass); with
 * the flag such weights load and give non-finite logits. */
GPT_API gpt_status gpt_model_load(const char *path, const gpt_model_params *params, gpt_model **out);

/* Loads from a weight file image in memory. Unless GPT_MODEL_COPY_BUFFER is set the model
 * borrows the buffer on the CPU and with GPT_MODEL_HOST_WEIGHTS (it must stay valid and
 * unchanged until gpt_model_free; with host weights it is registered with the CUDA driver);
 * a buffer that is not 64-byte aligned is always copied. */
GPT_API gpt_status gpt_model_load_from_memory(const void *data, size_t size, const gpt_model_params *params,
                                              gpt_model **out);

GPT_API void gpt_model_free(gpt_model *model);

/* gpt_model_info.flags */
#define GPT_MODEL_INFO_TIED_HEAD 0x1u     /* the LM head reuses the token embedding */
#define GPT_MODEL_INFO_QKV_BIAS 0x2u      /* q/k/v projections have biases */
#define GPT_MODEL_INFO_HAS_TOKENIZER 0x4u /* the file carries a tokenizer */
#define GPT_MODEL_INFO_HOST_WEIGHTS 0x8u  /* a GPU reads the weights in host memory (GPT_MODEL_HOST_WEIGHTS) */

typedef struct gpt_model_info {
    uint32_t struct_size;    /* set by the caller: sizeof(gpt_model_info) */
    uint32_t arch;           /* gpt_arch */
    uint32_t n_layers;
    uint32_t d_model;        /* width of the residual stream */
    uint32_t n_heads;        /* query heads */
    uint32_t n_kv_heads;     /* key/value heads (== n_heads without GQA) */
    uint32_t head_dim;
    uint32_t d_ff;           /* feed-forward inner width */
    uint32_t vocab_size;
    uint32_t context_length; /* longest sequence the model was made for */
    uint32_t file_dtype;     /* gpt_dtype of the tensors in the file (of the token embedding
                                when they differ, as in quantized files) */
    uint32_t weight_dtype;   /* gpt_dtype of the weights as held in memory */
    int32_t device;          /* GPT_DEVICE_CPU or the CUDA ordinal holding the weights */
    int32_t bos_token;       /* -1 when the model has none */
    int32_t eos_token;       /* -1 when the model has none */
    uint32_t flags;          /* GPT_MODEL_INFO_* */
    float norm_eps;
    float rope_theta;        /* 0 for architectures without RoPE */
    uint64_t n_params;       /* parameter count (a tied head counted once) */
    uint64_t host_bytes;     /* host memory the model holds (mapped file pages counted) */
    uint64_t device_bytes;   /* GPU memory the model holds */
    char name[64];           /* the file's general.name, NUL-terminated, may be empty */
    /* Added in 0.6.0 (an older caller's struct_size ends at name; see the rule above).
     * Mixture of experts; all 0 for a dense model: */
    uint32_t n_experts;       /* experts per MoE layer */
    uint32_t n_experts_used;  /* experts each token is routed to (top-k) */
    uint32_t d_ff_expert;     /* each expert's inner width */
    uint32_t d_ff_shared;     /* the shared expert's inner width (Qwen2-MoE); 0: none */
    uint64_t n_active_params; /* parameters one token uses (n_params for a dense model) */
} gpt_model_info;

/* Every token id that ends generation (the file's tokenizer.eos_ids, e.g. an instruct model's
 * end-of-turn and end-of-text tokens; else the eos_token alone; none when the model has
 * none), eos_token first. gpt_generate stops at any of them unless GPT_SAMPLING_IGNORE_EOS.
 * Sizing as gpt_tokenize: *n_tokens always receives the count; NULL with cap 0 is a size
 * query; GPT_ERR_BUFFER_TOO_SMALL when cap is short. */
GPT_API gpt_status gpt_model_get_eos_tokens(const gpt_model *model, int32_t *tokens, uint32_t cap, uint32_t *n_tokens);

/* Fills *info (set info->struct_size first; the rule above applies). On return struct_size
 * holds the bytes filled: an older header's smaller struct is filled up to its size, a larger
 * struct from a newer header keeps its extra fields untouched, and learns the library's size. */
GPT_API gpt_status gpt_model_get_info(const gpt_model *model, gpt_model_info *info);

/* ---------------------------------------------------------------------------- context */

/* gpt_ctx_params.flags */
#define GPT_CTX_ALLOW_TF32 0x1u /* fp32 GEMMs and prompt attention on a GPU may use TF32 tensor cores */
#define GPT_CTX_NO_GRAPHS 0x2u  /* do not capture the decode step in a CUDA graph */
/* gpt_ctx_create on a GPU runs a short generation and forgets it, so that loading the kernels
 * (CUDA loads each on its first launch) and capturing the decode step's graph happen there
 * and not in the first prompt's latency (about 12 ms of a GPT-2 first token on an H200). This
 * flag skips it; it is always skipped on the CPU and with host weights on a discrete GPU. */
#define GPT_CTX_NO_WARMUP 0x4u

/* Called between layers and between tokens; return nonzero to stop the running call with
 * GPT_ERR_ABORTED. It runs on the thread that called into the library. */
typedef int (*gpt_abort_fn)(void *user);

typedef struct gpt_ctx_params {
    uint32_t struct_size;     /* sizeof(gpt_ctx_params), set by gpt_ctx_params_init */
    uint32_t max_batch;       /* sequences per gpt_forward call; default 1 */
    uint32_t max_seq;         /* tokens per sequence (KV cache length); default 0: the model's
                                 context_length, at most 4096 (ask for more explicitly) */
    uint32_t max_step_tokens; /* tokens processed per internal step (scratch size); default 0: 512,
                                 raised to max_batch; longer calls are split into steps */
    uint32_t compute_dtype;   /* gpt_dtype of GPU arithmetic; default AUTO: the weights' dtype.
                                 The CPU always computes in f32. */
    uint32_t kv_dtype;        /* gpt_dtype of the GPU KV cache; default AUTO: f16 with f16/bf16
                                 compute, f32 with f32. The CPU cache is always f32. */
    uint32_t n_threads;       /* CPU worker threads; default 0: all cores */
    uint32_t flags;           /* GPT_CTX_*; default 0 */
    gpt_abort_fn abort_fn;    /* default NULL: never abort */
    void *abort_user;         /* passed to abort_fn */
} gpt_ctx_params;

GPT_API void gpt_ctx_params_init(gpt_ctx_params *params);

/* Memory a context with these params would take, computed without allocating: exactly what
 * gpt_ctx_create allocates. Either OUT pointer may be NULL. params may be NULL. */
GPT_API gpt_status gpt_ctx_estimate_memory(const gpt_model *model, const gpt_ctx_params *params,
                                           uint64_t *host_bytes, uint64_t *device_bytes);

/* Creates a context on the model's device. params may be NULL for the defaults. A context
 * whose memory (gpt_ctx_estimate_memory) exceeds what the host can give (MemAvailable) or
 * what is free on the GPU is refused with GPT_ERR_OUT_OF_MEMORY, the message giving both. On
 * an integrated GPU (gpt_device_info.integrated) host and device needs are added and checked
 * against MemAvailable: both come from the one DRAM. */
GPT_API gpt_status gpt_ctx_create(gpt_model *model, const gpt_ctx_params *params, gpt_ctx **out);
GPT_API void gpt_ctx_free(gpt_ctx *ctx);

/* Empties every sequence's KV cache. */
GPT_API void gpt_ctx_reset(gpt_ctx *ctx);

/* Tokens held in the KV cache of sequence seq (0 for an unknown sequence or NULL ctx). */
GPT_API uint32_t gpt_ctx_seq_len(const gpt_ctx *ctx, uint32_t seq);

/* Shortens sequence seq's cache to n_tokens (n_tokens <= its current length), e.g. to
 * rewind a conversation. */
GPT_API gpt_status gpt_ctx_truncate(gpt_ctx *ctx, uint32_t seq, uint32_t n_tokens);

/* Message of the last failed call on this context: never NULL, "" if none. */
GPT_API const char *gpt_ctx_last_error(const gpt_ctx *ctx);

/* ---------------------------------------------------------------------------- forward */

/* gpt_forward flags */
#define GPT_FORWARD_ALL_LOGITS 0x1u /* logits for every new token, not only each sequence's last */

/* Appends n_tokens tokens to each of sequences 0 .. batch-1 and runs the model on them.
 *   tokens: [batch][n_tokens] token ids, row b for sequence b.
 *   logits: NULL (fill the cache only), or float32 output of
 *           [batch][vocab_size]            without GPT_FORWARD_ALL_LOGITS (each sequence's last token),
 *           [batch][n_tokens][vocab_size]  with it.
 *           On a model held on a GPU, logits may also point to that GPU's memory (the
 *           copy then stays on the device).
 * batch <= max_batch. If any sequence would exceed max_seq the call fails with
 * GPT_ERR_CONTEXT_FULL and changes nothing. On any failure the cache keeps the tokens it
 * held before the call. */
GPT_API gpt_status gpt_forward(gpt_ctx *ctx, const int32_t *tokens, uint32_t batch, uint32_t n_tokens,
                               uint32_t flags, float *logits);

/* --------------------------------------------------------------------------- generate */

/* gpt_sampling_params.flags */
#define GPT_SAMPLING_IGNORE_EOS 0x1u /* do not stop at the model's end-of-sequence tokens */
/* Keep generating when sequence 0 fills max_seq, as the generate() of nanoGPT, minGPT and
 * the "Let's build GPT" lecture do: each new token is conditioned on the last max_seq
 * tokens only. The cache is cleared and those tokens are encoded again for every token past
 * the context (a prefill of max_seq tokens per generated token: with learned positions
 * nothing cached can be reused), so generation past the context is much slower than inside
 * it. A prompt longer than the room left likewise keeps only its last max_seq tokens (with
 * earlier cache contents before them when they fit). A failure or abort during such a
 * re-encoding leaves sequence 0 empty. Without the flag a full context ends generation with
 * GPT_ERR_CONTEXT_FULL. */
#define GPT_SAMPLING_CONTEXT_SHIFT 0x2u

/* Limits of gpt_sampling_params' lists (beyond them: GPT_ERR_INVALID_ARG). */
#define GPT_MAX_STOP_STRINGS 16u
#define GPT_MAX_STOP_STRING_BYTES 256u /* per stop string; an empty one is refused */
#define GPT_MAX_LOGIT_BIAS 1024u
#define GPT_MAX_PENALTY 1.0e4f /* |frequency_penalty|, |presence_penalty|, |bias| at most this */

/* One entry of gpt_sampling_params.logit_bias. A token listed twice gets both biases. */
typedef struct gpt_logit_bias {
    int32_t token; /* in [0, vocab_size) */
    float bias;    /* finite; e.g. -100 all but bans a token, +5 favours it */
} gpt_logit_bias;

/* The sampler's steps, on both backends alike: (1) repetition penalty over the last
 * repetition_last_n tokens of the sequence; (2) for each token t generated by this call or
 * listed in logit_bias, logit += B(t) - P(t), where B(t) is the float sum of t's biases in
 * list order and P(t) = fmaf(count(t), frequency_penalty, presence_penalty) when t was
 * generated count(t) > 0 times by this call, else 0 (the prompt does not count); (3) greedy
 * argmax, or temperature, top-k, softmax, top-p, min-p and a seeded draw. */
typedef struct gpt_sampling_params {
    uint32_t struct_size;          /* sizeof(gpt_sampling_params), set by gpt_sampling_params_init */
    float temperature;             /* default 0.8; <= 0 means greedy (argmax) */
    uint32_t top_k;                /* keep the k most likely tokens; default 40; 0 = off */
    float top_p;                   /* nucleus: smallest set with this much probability; default 0.95; 1 = off */
    float min_p;                   /* drop tokens below min_p * p(best); default 0.05; 0 = off */
    float repetition_penalty;      /* CTRL-style penalty on recent tokens; default 1.0 = off */
    uint32_t repetition_last_n;    /* how many recent tokens it looks at; default 64 */
    uint32_t flags;                /* GPT_SAMPLING_*; default 0 */
    uint64_t seed;                 /* default 0; the same seed and logits give the same tokens */
    const int32_t *stop_tokens;    /* extra token ids that end generation; default NULL */
    uint32_t n_stop_tokens;        /* entries in stop_tokens; default 0 */
    uint32_t reserved;             /* 0 */
    /* ---- added in 0.3 (struct_size 56 in 0.2: such callers get the defaults below) ---- */
    const char *const *stop_strings; /* texts that end generation (see gpt_generate); default NULL */
    uint32_t n_stop_strings;       /* at most GPT_MAX_STOP_STRINGS; default 0 */
    float frequency_penalty;       /* logit -= count * this, count = times the token was generated
                                      by this call (the prompt does not count); default 0 */
    float presence_penalty;        /* logit -= this for a token generated at least once by this
                                      call; default 0 */
    uint32_t n_logit_bias;         /* entries in logit_bias, at most GPT_MAX_LOGIT_BIAS; default 0 */
    const gpt_logit_bias *logit_bias; /* added to the tokens' logits; default NULL */
} gpt_sampling_params;

GPT_API void gpt_sampling_params_init(gpt_sampling_params *params);

/* Called for each new token; return nonzero to stop after it. */
typedef int (*gpt_token_fn)(int32_t token, void *user);

/* Appends the prompt (n_prompt >= 1 tokens) to sequence 0, then samples up to cap new
 * tokens into out, calling on_token (may be NULL) for each. Generation ends at any of the
 * model's end-of-sequence tokens (gpt_model_get_eos_tokens; unless GPT_SAMPLING_IGNORE_EOS),
 * at a stop token (both are written to out and counted), when on_token returns nonzero, or
 * after cap tokens.
 * *n_out receives the number of tokens written, also when the call fails part way
 * (GPT_ERR_CONTEXT_FULL when the cache fills up, GPT_ERR_ABORTED).
 * The cache then holds the prompt and every generated token but the last, so a following
 * call continues the text when given that last token as its prompt (with
 * GPT_SAMPLING_CONTEXT_SHIFT, once the context has shifted: the last max_seq of those tokens).
 * sampling may be NULL for the defaults.
 *
 * Stop strings (models with a tokenizer; else GPT_ERR_UNSUPPORTED): the generated tokens are
 * decoded as they come (control tokens as no text, the text continuing the prompt). A token
 * is held back - not passed to on_token, not written to out, not counted - while its text
 * reaches into a tail of the decoded text that could still begin a stop string (or while it
 * ends in an incomplete UTF-8 character). As soon as the decoded text holds a stop string
 * (the occurrence starting earliest, among those complete at that token), generation ends:
 * the held tokens whose text lies wholly before the match are delivered, the rest (those
 * whose text contains any byte of the match, and anything after) are not, so the match is
 * never delivered; the cache then holds the prompt and the delivered tokens but the last
 * (the prompt alone when none was delivered). When generation ends any other way
 * (end-of-sequence or stop token, cap, a full context) the held tokens are delivered first;
 * on_token returning nonzero ends it after that token, and a call that fails otherwise
 * (GPT_ERR_ABORTED) drops the held tokens, the cache keeping the prompt and the delivered
 * tokens but the last in both cases. An end-of-sequence or stop token
 * is not matched against the strings. Held tokens are still sampled and counted by the
 * penalties. With stop strings the call keeps the held text and tokens in memory it
 * allocates; without them gpt_generate allocates nothing.
 *
 * With GPT_SAMPLING_CONTEXT_SHIFT, held tokens are generated tokens like any other: a shift
 * re-encodes the last max_seq tokens of the cache's contents, prompt and generated tokens
 * (held ones included), and the penalties keep counting every token generated by the call,
 * also those no longer in the window (the repetition penalty sees the window only). The
 * cache is not re-encoded when the call ends: the tokens not kept (undelivered ones, the last
 * delivered) leave the end of the window, so after a shift it holds the last max_seq - d
 * tokens of the prompt and delivered tokens but the last, d being the number removed
 * (all of them when d >= max_seq: the cache is then empty). */
GPT_API gpt_status gpt_generate(gpt_ctx *ctx, const int32_t *prompt, uint32_t n_prompt,
                                const gpt_sampling_params *sampling, gpt_token_fn on_token, void *user,
                                int32_t *out, uint32_t cap, uint32_t *n_out);

/* -------------------------------------------------------------------------- tokenizer */

/* The model's tokenizer, when its file carries one (GPT_MODEL_INFO_HAS_TOKENIZER); the calls
 * below return GPT_ERR_UNSUPPORTED otherwise. Sizing, for tokenize, detokenize and
 * token_to_piece alike: the needed count is always written to the OUT count; a NULL buffer
 * with capacity 0 is a size query (GPT_OK); a buffer too small gives
 * GPT_ERR_BUFFER_TOO_SMALL (its contents are then unspecified). Text is UTF-8; any bytes are
 * accepted, except by a character-level vocabulary (tokenizer "char"), where gpt_tokenize
 * fails with GPT_ERR_INVALID_ARG naming a character outside the vocabulary (or a byte that
 * is not UTF-8) and its byte offset. */

/* gpt_tokenize flags */
#define GPT_TOKENIZE_ADD_BOS 0x1u       /* prepend the BOS token */
#define GPT_TOKENIZE_NO_BOS 0x2u        /* never prepend it (default: as the model's tokenizer does) */
#define GPT_TOKENIZE_PARSE_SPECIAL 0x4u /* special-token strings in the text ("<|endoftext|>")
                                           become their ids instead of plain text */

GPT_API gpt_status gpt_tokenize(const gpt_model *model, const char *text, size_t text_len, uint32_t flags,
                                int32_t *tokens, uint32_t cap, uint32_t *n_tokens);

/* gpt_detokenize / gpt_token_to_piece / gpt_detokenizer_create flags */
#define GPT_DETOKENIZE_RENDER_SPECIAL 0x1u /* write control tokens' text ("</s>") instead of nothing */
#define GPT_DETOKENIZE_CONTINUE 0x2u       /* the tokens continue text shown before them (a prompt):
                                              keep the space a SentencePiece-style tokenizer drops
                                              at the start of a text ("the" + " park", not "thepark").
                                              gpt_detokenize and gpt_detokenizer_create; every stream
                                              of a detokenizer (after a flush too) continues. */

/* Token ids -> UTF-8 bytes, with the tokenizer's decoding rules. A NUL is written after the
 * bytes when there is room; *n_bytes never counts it. */
GPT_API gpt_status gpt_detokenize(const gpt_model *model, const int32_t *tokens, uint32_t n_tokens, uint32_t flags,
                                  char *buf, size_t cap, size_t *n_bytes);

/* The bytes one token stands for in running text (may be part of a UTF-8 character). */
GPT_API gpt_status gpt_token_to_piece(const gpt_model *model, int32_t token, uint32_t flags, char *buf, size_t cap,
                                      size_t *n_bytes);

/* Streaming detokenizer: feed generated tokens one by one and print what comes back; it never
 * splits a UTF-8 character (incomplete bytes wait for the next token), and the bytes of every
 * push and the final flush equal gpt_detokenize of the same tokens. One per stream; it uses
 * its model, which must outlive it. */
typedef struct gpt_detokenizer gpt_detokenizer;

GPT_API gpt_status gpt_detokenizer_create(const gpt_model *model, uint32_t flags, gpt_detokenizer **out);
GPT_API void gpt_detokenizer_free(gpt_detokenizer *d);
/* Writes the bytes completed by token (possibly none). On GPT_ERR_BUFFER_TOO_SMALL, on a
 * size query (NULL, 0) and on any failure the token is not consumed: call again with a
 * buffer of *n_bytes. No NUL is written. */
GPT_API gpt_status gpt_detokenizer_push(gpt_detokenizer *d, int32_t token, char *buf, size_t cap, size_t *n_bytes);
/* Writes whatever is held back (an incomplete sequence at the end of a stream, as-is) and
 * starts a new stream. Same sizing rule as push (a size query keeps the bytes held). */
GPT_API gpt_status gpt_detokenizer_flush(gpt_detokenizer *d, char *buf, size_t cap, size_t *n_bytes);

/* ----------------------------------------------------------------------------- chat */

/* One message of a conversation: role ("system", "user", "assistant", ...) and its text
 * (UTF-8, NUL-terminated). */
typedef struct gpt_chat_message {
    const char *role;
    const char *content;
} gpt_chat_message;

/* gpt_chat_apply_template flags */
#define GPT_CHAT_ADD_GENERATION_PROMPT 0x1u /* end with the text that opens the assistant's turn */

/* Renders messages with the model's chat template (the one its checkpoint shipped, kept in
 * the weight file), byte for byte as Hugging Face transformers'
 * apply_chat_template(messages, tokenize=False, add_generation_prompt=...) does. Tokenize
 * the result with GPT_TOKENIZE_PARSE_SPECIAL (and without an added BOS when the text starts
 * with it). Sizing as gpt_tokenize: the needed count is always written to *n_bytes, a NULL
 * buffer with cap 0 is a size query, GPT_ERR_BUFFER_TOO_SMALL when short, a NUL after the
 * bytes when there is room. GPT_ERR_UNSUPPORTED (the message names the construct) for a
 * model without a template or a template the library cannot render; rendering is bounded in
 * time, memory and depth. Roles and contents must be valid UTF-8 (GPT_ERR_INVALID_ARG names
 * the message otherwise); a template that refuses the conversation (its raise_exception, e.g.
 * "roles must alternate") gives GPT_ERR_INVALID_ARG with the template's message, and an
 * error jinja2 would raise while rendering gives GPT_ERR_FORMAT naming the template line.
 * The template sees messages, add_generation_prompt, bos_token/eos_token (the text of the
 * model's special tokens), tools and documents (None), and strftime_now (the local clock). */
GPT_API gpt_status gpt_chat_apply_template(const gpt_model *model, const gpt_chat_message *messages,
                                           size_t n_messages, uint32_t flags, char *buf, size_t cap,
                                           size_t *n_bytes);

#ifdef __cplusplus
}
#endif

#endif /* GPT_H */
