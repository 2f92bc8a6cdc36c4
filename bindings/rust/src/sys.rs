//! Raw declarations of libgpt's C ABI (include/gpt.h), one for one. Everything here is
//! `unsafe` to call; the safe API is in the crate root. Keep in step with gpt.h: the crate's
//! tests check the struct sizes against the library's `*_init` functions and, given
//! GPT_TEST_LAYOUT, every field offset against the C compiler's.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_void};

pub const GPT_VERSION_MAJOR: u32 = 0;

pub type gpt_status = c_int;
pub const GPT_OK: gpt_status = 0;
pub const GPT_ERR_INVALID_ARG: gpt_status = -1;
pub const GPT_ERR_IO: gpt_status = -2;
pub const GPT_ERR_FORMAT: gpt_status = -3;
pub const GPT_ERR_CHECKSUM: gpt_status = -4;
pub const GPT_ERR_UNSUPPORTED: gpt_status = -5;
pub const GPT_ERR_OUT_OF_MEMORY: gpt_status = -6;
pub const GPT_ERR_DEVICE: gpt_status = -7;
pub const GPT_ERR_CONTEXT_FULL: gpt_status = -8;
pub const GPT_ERR_ABORTED: gpt_status = -9;
pub const GPT_ERR_INTERNAL: gpt_status = -10;
pub const GPT_ERR_BUFFER_TOO_SMALL: gpt_status = -11;

pub const GPT_DTYPE_AUTO: u32 = 0;
pub const GPT_DTYPE_F32: u32 = 1;
pub const GPT_DTYPE_F16: u32 = 2;
pub const GPT_DTYPE_BF16: u32 = 3;
/// Weight-only quantized files (reported by gpt_model_info; a weight_dtype only for a file of that dtype).
pub const GPT_DTYPE_Q8: u32 = 4;
pub const GPT_DTYPE_Q4: u32 = 5;

pub const GPT_ARCH_GPT2: u32 = 1;
pub const GPT_ARCH_LLAMA: u32 = 2;
pub const GPT_ARCH_QWEN3: u32 = 3;
pub const GPT_ARCH_PHI3: u32 = 4;
pub const GPT_ARCH_GEMMA2: u32 = 5;
pub const GPT_ARCH_GEMMA3: u32 = 6;
pub const GPT_ARCH_MIXTRAL: u32 = 7;
pub const GPT_ARCH_QWEN2_MOE: u32 = 8;
pub const GPT_ARCH_OLMOE: u32 = 9;
pub const GPT_ARCH_QWEN3_MOE: u32 = 10;

pub const GPT_DEVICE_CPU: i32 = -1;
pub const GPT_DEVICE_AUTO: i32 = -2;

pub const GPT_MODEL_SKIP_CHECKSUMS: u32 = 0x1;
pub const GPT_MODEL_NO_MMAP: u32 = 0x2;
pub const GPT_MODEL_COPY_BUFFER: u32 = 0x4;
pub const GPT_MODEL_HOST_WEIGHTS: u32 = 0x8;
pub const GPT_MODEL_DEVICE_WEIGHTS: u32 = 0x10;

pub const GPT_MODEL_INFO_TIED_HEAD: u32 = 0x1;
pub const GPT_MODEL_INFO_QKV_BIAS: u32 = 0x2;
pub const GPT_MODEL_INFO_HAS_TOKENIZER: u32 = 0x4;
pub const GPT_MODEL_INFO_HOST_WEIGHTS: u32 = 0x8;

pub const GPT_CTX_ALLOW_TF32: u32 = 0x1;
pub const GPT_CTX_NO_GRAPHS: u32 = 0x2;
pub const GPT_CTX_NO_WARMUP: u32 = 0x4;

pub const GPT_FORWARD_ALL_LOGITS: u32 = 0x1;

pub const GPT_SAMPLING_IGNORE_EOS: u32 = 0x1;
pub const GPT_SAMPLING_CONTEXT_SHIFT: u32 = 0x2;
pub const GPT_MAX_STOP_STRINGS: u32 = 16;
pub const GPT_MAX_STOP_STRING_BYTES: u32 = 256;
pub const GPT_MAX_LOGIT_BIAS: u32 = 1024;
pub const GPT_CHAT_ADD_GENERATION_PROMPT: u32 = 0x1;

pub const GPT_TOKENIZE_ADD_BOS: u32 = 0x1;
pub const GPT_TOKENIZE_NO_BOS: u32 = 0x2;
pub const GPT_TOKENIZE_PARSE_SPECIAL: u32 = 0x4;

pub const GPT_DETOKENIZE_RENDER_SPECIAL: u32 = 0x1;
pub const GPT_DETOKENIZE_CONTINUE: u32 = 0x2;

/// Opaque handles.
#[repr(C)]
pub struct gpt_model {
    _private: [u8; 0],
}
#[repr(C)]
pub struct gpt_ctx {
    _private: [u8; 0],
}
#[repr(C)]
pub struct gpt_detokenizer {
    _private: [u8; 0],
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gpt_model_params {
    pub struct_size: u32,
    pub device: i32,
    pub weight_dtype: u32,
    pub flags: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gpt_model_info {
    pub struct_size: u32,
    pub arch: u32,
    pub n_layers: u32,
    pub d_model: u32,
    pub n_heads: u32,
    pub n_kv_heads: u32,
    pub head_dim: u32,
    pub d_ff: u32,
    pub vocab_size: u32,
    pub context_length: u32,
    pub file_dtype: u32,
    pub weight_dtype: u32,
    pub device: i32,
    pub bos_token: i32,
    pub eos_token: i32,
    pub flags: u32,
    pub norm_eps: f32,
    pub rope_theta: f32,
    pub n_params: u64,
    pub host_bytes: u64,
    pub device_bytes: u64,
    pub name: [c_char; 64],
    pub n_experts: u32,
    pub n_experts_used: u32,
    pub d_ff_expert: u32,
    pub d_ff_shared: u32,
    pub n_active_params: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gpt_device_info {
    pub struct_size: u32,
    pub device: i32,
    pub integrated: u32,
    pub pageable_access: u32,
    pub host_mapped: u32,
    pub cc_major: u32,
    pub cc_minor: u32,
    pub multiprocessors: u32,
    pub total_bytes: u64,
    pub available_bytes: u64,
    pub name: [c_char; 128],
}

pub type gpt_abort_fn = Option<unsafe extern "C" fn(user: *mut c_void) -> c_int>;
pub type gpt_token_fn = Option<unsafe extern "C" fn(token: i32, user: *mut c_void) -> c_int>;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gpt_ctx_params {
    pub struct_size: u32,
    pub max_batch: u32,
    pub max_seq: u32,
    pub max_step_tokens: u32,
    pub compute_dtype: u32,
    pub kv_dtype: u32,
    pub n_threads: u32,
    pub flags: u32,
    pub abort_fn: gpt_abort_fn,
    pub abort_user: *mut c_void,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gpt_sampling_params {
    pub struct_size: u32,
    pub temperature: f32,
    pub top_k: u32,
    pub top_p: f32,
    pub min_p: f32,
    pub repetition_penalty: f32,
    pub repetition_last_n: u32,
    pub flags: u32,
    pub seed: u64,
    pub stop_tokens: *const i32,
    pub n_stop_tokens: u32,
    pub reserved: u32,
    pub stop_strings: *const *const c_char,
    pub n_stop_strings: u32,
    pub frequency_penalty: f32,
    pub presence_penalty: f32,
    pub n_logit_bias: u32,
    pub logit_bias: *const gpt_logit_bias,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct gpt_logit_bias {
    pub token: i32,
    pub bias: f32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gpt_chat_message {
    pub role: *const c_char,
    pub content: *const c_char,
}

extern "C" {
    pub fn gpt_version() -> u32;
    pub fn gpt_version_string() -> *const c_char;
    pub fn gpt_build_info() -> *const c_char;
    pub fn gpt_status_str(status: c_int) -> *const c_char;
    pub fn gpt_last_error() -> *const c_char;
    pub fn gpt_dtype_name(dtype: c_int) -> *const c_char;
    pub fn gpt_arch_name(arch: c_int) -> *const c_char;
    pub fn gpt_cuda_device_count() -> c_int;
    pub fn gpt_device_get_info(device: i32, info: *mut gpt_device_info) -> gpt_status;

    pub fn gpt_model_params_init(params: *mut gpt_model_params);
    pub fn gpt_model_load(path: *const c_char, params: *const gpt_model_params, out: *mut *mut gpt_model)
        -> gpt_status;
    pub fn gpt_model_load_from_memory(
        data: *const c_void,
        size: usize,
        params: *const gpt_model_params,
        out: *mut *mut gpt_model,
    ) -> gpt_status;
    pub fn gpt_model_free(model: *mut gpt_model);
    pub fn gpt_model_get_info(model: *const gpt_model, info: *mut gpt_model_info) -> gpt_status;
    pub fn gpt_model_get_eos_tokens(model: *const gpt_model, tokens: *mut i32, cap: u32, n_tokens: *mut u32) -> gpt_status;

    pub fn gpt_ctx_params_init(params: *mut gpt_ctx_params);
    pub fn gpt_ctx_estimate_memory(
        model: *const gpt_model,
        params: *const gpt_ctx_params,
        host_bytes: *mut u64,
        device_bytes: *mut u64,
    ) -> gpt_status;
    pub fn gpt_ctx_create(model: *mut gpt_model, params: *const gpt_ctx_params, out: *mut *mut gpt_ctx) -> gpt_status;
    pub fn gpt_ctx_free(ctx: *mut gpt_ctx);
    pub fn gpt_ctx_reset(ctx: *mut gpt_ctx);
    pub fn gpt_ctx_seq_len(ctx: *const gpt_ctx, seq: u32) -> u32;
    pub fn gpt_ctx_truncate(ctx: *mut gpt_ctx, seq: u32, n_tokens: u32) -> gpt_status;
    pub fn gpt_ctx_last_error(ctx: *const gpt_ctx) -> *const c_char;

    pub fn gpt_forward(
        ctx: *mut gpt_ctx,
        tokens: *const i32,
        batch: u32,
        n_tokens: u32,
        flags: u32,
        logits: *mut f32,
    ) -> gpt_status;

    pub fn gpt_sampling_params_init(params: *mut gpt_sampling_params);
    pub fn gpt_generate(
        ctx: *mut gpt_ctx,
        prompt: *const i32,
        n_prompt: u32,
        sampling: *const gpt_sampling_params,
        on_token: gpt_token_fn,
        user: *mut c_void,
        out: *mut i32,
        cap: u32,
        n_out: *mut u32,
    ) -> gpt_status;

    pub fn gpt_tokenize(
        model: *const gpt_model,
        text: *const c_char,
        text_len: usize,
        flags: u32,
        tokens: *mut i32,
        cap: u32,
        n_tokens: *mut u32,
    ) -> gpt_status;
    pub fn gpt_detokenize(
        model: *const gpt_model,
        tokens: *const i32,
        n_tokens: u32,
        flags: u32,
        buf: *mut c_char,
        cap: usize,
        n_bytes: *mut usize,
    ) -> gpt_status;
    pub fn gpt_token_to_piece(
        model: *const gpt_model,
        token: i32,
        flags: u32,
        buf: *mut c_char,
        cap: usize,
        n_bytes: *mut usize,
    ) -> gpt_status;

    pub fn gpt_detokenizer_create(model: *const gpt_model, flags: u32, out: *mut *mut gpt_detokenizer) -> gpt_status;
    pub fn gpt_detokenizer_free(d: *mut gpt_detokenizer);
    pub fn gpt_detokenizer_push(
        d: *mut gpt_detokenizer,
        token: i32,
        buf: *mut c_char,
        cap: usize,
        n_bytes: *mut usize,
    ) -> gpt_status;
    pub fn gpt_chat_apply_template(
        model: *const gpt_model,
        messages: *const gpt_chat_message,
        n_messages: usize,
        flags: u32,
        buf: *mut c_char,
        cap: usize,
        n_bytes: *mut usize,
    ) -> gpt_status;
    pub fn gpt_detokenizer_flush(
        d: *mut gpt_detokenizer,
        buf: *mut c_char,
        cap: usize,
        n_bytes: *mut usize,
    ) -> gpt_status;
}
