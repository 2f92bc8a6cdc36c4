//! Safe Rust bindings to libgpt: GPT-2 and Llama-family inference behind a stable C ABI.
//!
//! ```no_run
//! use libgpt::{Model, ModelParams, CtxParams, SamplingParams, Device};
//!
//! fn main() -> Result<(), libgpt::Error> {
//!     let model = Model::load_with("model.gpt", &ModelParams::new().device(Device::Cpu))?;
//!     let mut ctx = model.context(&CtxParams::new().max_seq(512))?;
//!     let mut detok = model.detokenizer()?;
//!     let prompt = model.tokenize("In the beginning")?;
//!     ctx.generate(&prompt, 64, &SamplingParams::new().temperature(0.0), |token| {
//!         print!("{}", detok.push(token).unwrap_or_default());
//!         true // go on
//!     })?;
//!     println!("{}", detok.flush()?);
//!     Ok(())
//! }
//! ```
//!
//! Every handle frees itself on drop. A [`Context`] and a [`Detokenizer`] borrow their
//! [`Model`], so the compiler enforces gpt.h's rule that they go before the model. Threads, as
//! gpt.h says: a `Model` is immutable and `Send + Sync` (share it with `&` or `Arc`); a
//! `Context` is `Send` but not `Sync` (one thread at a time; `&mut self` for every call that
//! changes it). Failed calls return [`Error`], with the status and the library's message.
//!
//! Linking: build.rs finds libgpt through `GPT_LIB_DIR`, pkg-config, or the checkout's
//! `build/lib` (see docs/BINDINGS.md).

pub mod sys;

use std::ffi::{CStr, CString};
use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::os::raw::{c_char, c_int, c_void};
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::ptr::{self, NonNull};

// ---------------------------------------------------------------------------- errors

/// gpt_status values (see gpt.h).
pub mod status {
    pub use crate::sys::{
        GPT_ERR_ABORTED as ABORTED, GPT_ERR_BUFFER_TOO_SMALL as BUFFER_TOO_SMALL, GPT_ERR_CHECKSUM as CHECKSUM,
        GPT_ERR_CONTEXT_FULL as CONTEXT_FULL, GPT_ERR_DEVICE as DEVICE, GPT_ERR_FORMAT as FORMAT,
        GPT_ERR_INTERNAL as INTERNAL, GPT_ERR_INVALID_ARG as INVALID_ARG, GPT_ERR_IO as IO,
        GPT_ERR_OUT_OF_MEMORY as OUT_OF_MEMORY, GPT_ERR_UNSUPPORTED as UNSUPPORTED, GPT_OK as OK,
    };
}

/// A failed libgpt call: the gpt_status and the library's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The gpt_status (negative; see [`status`]).
    pub status: i32,
    /// gpt_last_error() or gpt_ctx_last_error() right after the call.
    pub message: String,
}

impl Error {
    fn new(status: i32, message: String) -> Error {
        Error { status, message }
    }

    /// "GPT_ERR_FORMAT" for status -3 (gpt_status_str without its explanation).
    pub fn status_name(&self) -> String {
        status_name(self.status)
    }
}

/// "GPT_ERR_FORMAT" for status -3.
pub fn status_name(status: i32) -> String {
    let s = unsafe { cstr(sys::gpt_status_str(status)) };
    match s.find(':') {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status_name(), self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

unsafe fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// Ok, or an Error with this thread's gpt_last_error(). Call right after the C call.
fn check(st: sys::gpt_status) -> Result<()> {
    if st == sys::GPT_OK {
        Ok(())
    } else {
        Err(Error::new(st, unsafe { cstr(sys::gpt_last_error()) }))
    }
}

fn check_ctx(st: sys::gpt_status, ctx: *const sys::gpt_ctx) -> Result<()> {
    if st == sys::GPT_OK {
        Ok(())
    } else {
        Err(Error::new(st, unsafe { cstr(sys::gpt_ctx_last_error(ctx)) }))
    }
}

fn invalid(message: &str) -> Error {
    Error::new(sys::GPT_ERR_INVALID_ARG, message.to_string())
}

// ---------------------------------------------------------------------- library-wide

/// The linked library's version, e.g. "0.1.0".
pub fn version() -> String {
    unsafe { cstr(sys::gpt_version_string()) }
}

/// GPT_VERSION_NUMBER of the linked library.
pub fn version_number() -> u32 {
    unsafe { sys::gpt_version() }
}

/// One line on how the library was built.
pub fn build_info() -> String {
    unsafe { cstr(sys::gpt_build_info()) }
}

/// CUDA devices this build can use.
pub fn cuda_device_count() -> i32 {
    unsafe { sys::gpt_cuda_device_count() }
}

/// gpt_device_info: what a device is and how much memory it can give now.
#[derive(Debug, Clone, Copy)]
pub struct DeviceInfo {
    pub raw: sys::gpt_device_info,
}

impl DeviceInfo {
    /// The device described (Auto resolved).
    pub fn device(&self) -> Device {
        Device::from_raw(self.raw.device)
    }
    /// "cpu", or the GPU's name.
    pub fn name(&self) -> String {
        let bytes: Vec<u8> = self
            .raw
            .name
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
    /// A GPU sharing the host's memory (Jetson).
    pub fn integrated(&self) -> bool {
        self.raw.integrated != 0
    }
    /// The GPU's memory; for the CPU MemTotal.
    pub fn total_bytes(&self) -> u64 {
        self.raw.total_bytes
    }
    /// What a model or context could still get (an integrated GPU and the CPU: MemAvailable).
    pub fn available_bytes(&self) -> u64 {
        self.raw.available_bytes
    }
}

/// Describes a device: the host (Device::Cpu), a CUDA device, or where Auto would load.
pub fn device_info(device: Device) -> Result<DeviceInfo> {
    let mut raw: sys::gpt_device_info = unsafe { MaybeUninit::zeroed().assume_init() };
    raw.struct_size = std::mem::size_of::<sys::gpt_device_info>() as u32;
    check(unsafe { sys::gpt_device_get_info(device.raw(), &mut raw) })?;
    Ok(DeviceInfo { raw })
}

// ---------------------------------------------------------------------- params structs

/// A params struct filled by its *_init function. The buffer has room to spare in case the
/// loaded library is newer (a larger struct); struct_size is then lowered to what this crate
/// mirrors, so the library reads only these fields.
unsafe fn init_struct<T: Copy>(init: unsafe extern "C" fn(*mut T)) -> T {
    #[repr(C)]
    struct Slack<T> {
        value: MaybeUninit<T>,
        spare: [u64; 128],
    }
    let mut buf: Slack<T> = MaybeUninit::zeroed().assume_init();
    init(buf.value.as_mut_ptr());
    let mut value = buf.value.assume_init();
    let size = ptr::addr_of_mut!(value) as *mut u32; // struct_size is every params struct's first field
    let ours = std::mem::size_of::<T>() as u32;
    if *size == 0 || *size > ours {
        *size = ours;
    }
    let _ = buf.spare;
    value
}

/// Where a model's weights live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    /// The first CUDA GPU if this build has CUDA and one is present, else the CPU (default).
    Auto,
    Cpu,
    /// A CUDA device ordinal.
    Cuda(u32),
}

impl Device {
    fn raw(self) -> i32 {
        match self {
            Device::Auto => sys::GPT_DEVICE_AUTO,
            Device::Cpu => sys::GPT_DEVICE_CPU,
            Device::Cuda(n) => n as i32,
        }
    }

    fn from_raw(d: i32) -> Device {
        if d == sys::GPT_DEVICE_CPU {
            Device::Cpu
        } else if d >= 0 {
            Device::Cuda(d as u32)
        } else {
            Device::Auto
        }
    }
}

/// Element types (gpt_dtype).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DType {
    Auto,
    F32,
    F16,
    BF16,
}

impl DType {
    fn raw(self) -> u32 {
        match self {
            DType::Auto => sys::GPT_DTYPE_AUTO,
            DType::F32 => sys::GPT_DTYPE_F32,
            DType::F16 => sys::GPT_DTYPE_F16,
            DType::BF16 => sys::GPT_DTYPE_BF16,
        }
    }
}

/// gpt_model_params, filled by gpt_model_params_init; builder methods change fields.
#[derive(Debug, Clone, Copy)]
pub struct ModelParams {
    pub raw: sys::gpt_model_params,
}

impl Default for ModelParams {
    fn default() -> Self {
        ModelParams {
            raw: unsafe { init_struct(sys::gpt_model_params_init) },
        }
    }
}

impl ModelParams {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn device(mut self, device: Device) -> Self {
        self.raw.device = device.raw();
        self
    }
    /// The dtype weights are held in on a GPU (the CPU keeps the file's).
    pub fn weight_dtype(mut self, dtype: DType) -> Self {
        self.raw.weight_dtype = dtype.raw();
        self
    }
    pub fn skip_checksums(mut self, on: bool) -> Self {
        self.set(sys::GPT_MODEL_SKIP_CHECKSUMS, on);
        self
    }
    pub fn no_mmap(mut self, on: bool) -> Self {
        self.set(sys::GPT_MODEL_NO_MMAP, on);
        self
    }
    /// On a GPU, read the weights in place from host memory (GPT_MODEL_HOST_WEIGHTS: the
    /// default on an integrated GPU); false clears the request.
    pub fn host_weights(mut self, on: bool) -> Self {
        self.set(sys::GPT_MODEL_HOST_WEIGHTS, on);
        if on {
            self.set(sys::GPT_MODEL_DEVICE_WEIGHTS, false);
        }
        self
    }
    /// On a GPU, copy the weights to device memory even on an integrated GPU
    /// (GPT_MODEL_DEVICE_WEIGHTS); false clears the request.
    pub fn device_weights(mut self, on: bool) -> Self {
        self.set(sys::GPT_MODEL_DEVICE_WEIGHTS, on);
        if on {
            self.set(sys::GPT_MODEL_HOST_WEIGHTS, false);
        }
        self
    }
    fn set(&mut self, flag: u32, on: bool) {
        if on {
            self.raw.flags |= flag
        } else {
            self.raw.flags &= !flag
        }
    }
}

/// gpt_ctx_params, filled by gpt_ctx_params_init; builder methods change fields.
#[derive(Debug, Clone, Copy)]
pub struct CtxParams {
    pub raw: sys::gpt_ctx_params,
}

// The raw struct's abort_user pointer is only passed to the C library, never dereferenced here.
unsafe impl Send for CtxParams {}
unsafe impl Sync for CtxParams {}

impl Default for CtxParams {
    fn default() -> Self {
        CtxParams {
            raw: unsafe { init_struct(sys::gpt_ctx_params_init) },
        }
    }
}

impl CtxParams {
    pub fn new() -> Self {
        Self::default()
    }
    /// Tokens per sequence (KV cache length); 0: the model's context_length.
    pub fn max_seq(mut self, n: u32) -> Self {
        self.raw.max_seq = n;
        self
    }
    /// Sequences per forward call.
    pub fn max_batch(mut self, n: u32) -> Self {
        self.raw.max_batch = n;
        self
    }
    pub fn max_step_tokens(mut self, n: u32) -> Self {
        self.raw.max_step_tokens = n;
        self
    }
    /// CPU worker threads; 0: all cores.
    pub fn n_threads(mut self, n: u32) -> Self {
        self.raw.n_threads = n;
        self
    }
    pub fn compute_dtype(mut self, dtype: DType) -> Self {
        self.raw.compute_dtype = dtype.raw();
        self
    }
    pub fn kv_dtype(mut self, dtype: DType) -> Self {
        self.raw.kv_dtype = dtype.raw();
        self
    }
    /// GPT_CTX_* flags.
    pub fn flags(mut self, flags: u32) -> Self {
        self.raw.flags = flags;
        self
    }
}

/// gpt_sampling_params, filled by gpt_sampling_params_init; builder methods change fields.
#[derive(Debug)]
pub struct SamplingParams {
    raw: sys::gpt_sampling_params,
    stop_tokens: Vec<i32>,
    stop_strings: Vec<CString>,
    stop_ptrs: Vec<*const c_char>, // into stop_strings' heap buffers (stable when self moves)
    logit_bias: Vec<sys::gpt_logit_bias>,
}

// raw's pointers stay NULL (as_raw points a copy at the owned vectors); stop_ptrs only point
// into stop_strings, which this value owns.
unsafe impl Send for SamplingParams {}
unsafe impl Sync for SamplingParams {}

impl Default for SamplingParams {
    fn default() -> Self {
        SamplingParams {
            raw: unsafe { init_struct(sys::gpt_sampling_params_init) },
            stop_tokens: Vec::new(),
            stop_strings: Vec::new(),
            stop_ptrs: Vec::new(),
            logit_bias: Vec::new(),
        }
    }
}

impl Clone for SamplingParams {
    fn clone(&self) -> Self {
        let stop_strings = self.stop_strings.clone();
        let stop_ptrs = stop_strings.iter().map(|s| s.as_ptr()).collect();
        SamplingParams {
            raw: self.raw,
            stop_tokens: self.stop_tokens.clone(),
            stop_strings,
            stop_ptrs,
            logit_bias: self.logit_bias.clone(),
        }
    }
}

impl SamplingParams {
    pub fn new() -> Self {
        Self::default()
    }
    /// <= 0: greedy.
    pub fn temperature(mut self, t: f32) -> Self {
        self.raw.temperature = t;
        self
    }
    pub fn top_k(mut self, k: u32) -> Self {
        self.raw.top_k = k;
        self
    }
    pub fn top_p(mut self, p: f32) -> Self {
        self.raw.top_p = p;
        self
    }
    pub fn min_p(mut self, p: f32) -> Self {
        self.raw.min_p = p;
        self
    }
    pub fn repetition_penalty(mut self, r: f32) -> Self {
        self.raw.repetition_penalty = r;
        self
    }
    pub fn repetition_last_n(mut self, n: u32) -> Self {
        self.raw.repetition_last_n = n;
        self
    }
    /// The same seed and logits give the same tokens.
    pub fn seed(mut self, seed: u64) -> Self {
        self.raw.seed = seed;
        self
    }
    pub fn ignore_eos(mut self, on: bool) -> Self {
        if on {
            self.raw.flags |= sys::GPT_SAMPLING_IGNORE_EOS
        } else {
            self.raw.flags &= !sys::GPT_SAMPLING_IGNORE_EOS
        }
        self
    }
    /// Past max_seq, keep generating from the last max_seq tokens (re-encoded for every
    /// token), as nanoGPT's and minGPT's generate() do.
    pub fn context_shift(mut self, on: bool) -> Self {
        if on {
            self.raw.flags |= sys::GPT_SAMPLING_CONTEXT_SHIFT
        } else {
            self.raw.flags &= !sys::GPT_SAMPLING_CONTEXT_SHIFT
        }
        self
    }
    /// Extra token ids that end generation.
    pub fn stop_tokens(mut self, tokens: &[i32]) -> Self {
        self.stop_tokens = tokens.to_vec();
        self
    }
    /// Texts that end generation; the matched text and the tokens that make it are not
    /// delivered (gpt.h, gpt_generate). Fails for a string holding a NUL byte.
    pub fn stop_strings<S: AsRef<str>>(mut self, strings: &[S]) -> Result<Self> {
        self.stop_strings = strings
            .iter()
            .map(|s| CString::new(s.as_ref()).map_err(|_| invalid("a stop string contains a NUL byte")))
            .collect::<Result<_>>()?;
        self.stop_ptrs = self.stop_strings.iter().map(|s| s.as_ptr()).collect();
        Ok(self)
    }
    /// logit -= count x this, count = times the token was generated by the call.
    pub fn frequency_penalty(mut self, f: f32) -> Self {
        self.raw.frequency_penalty = f;
        self
    }
    /// logit -= this for a token generated at least once by the call.
    pub fn presence_penalty(mut self, p: f32) -> Self {
        self.raw.presence_penalty = p;
        self
    }
    /// (token, bias) pairs added to the logits.
    pub fn logit_bias(mut self, bias: &[(i32, f32)]) -> Self {
        self.logit_bias = bias
            .iter()
            .map(|&(token, bias)| sys::gpt_logit_bias { token, bias })
            .collect();
        self
    }
    /// The C struct, its lists pointing into self.
    pub fn as_raw(&self) -> sys::gpt_sampling_params {
        let mut raw = self.raw;
        raw.stop_strings = if self.stop_ptrs.is_empty() {
            ptr::null()
        } else {
            self.stop_ptrs.as_ptr()
        };
        raw.n_stop_strings = self.stop_ptrs.len() as u32;
        raw.logit_bias = if self.logit_bias.is_empty() {
            ptr::null()
        } else {
            self.logit_bias.as_ptr()
        };
        raw.n_logit_bias = self.logit_bias.len() as u32;
        raw.stop_tokens = if self.stop_tokens.is_empty() {
            ptr::null()
        } else {
            self.stop_tokens.as_ptr()
        };
        raw.n_stop_tokens = self.stop_tokens.len() as u32;
        raw
    }
}

// ------------------------------------------------------------------------------ model

/// gpt_model_info.
#[derive(Debug, Clone, Copy)]
pub struct ModelInfo {
    pub raw: sys::gpt_model_info,
}

impl ModelInfo {
    /// "gpt2" or "llama".
    pub fn arch(&self) -> String {
        unsafe { cstr(sys::gpt_arch_name(self.raw.arch as c_int)) }
    }
    /// The file's general.name.
    pub fn name(&self) -> String {
        let bytes: Vec<u8> = self
            .raw
            .name
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
    pub fn vocab_size(&self) -> u32 {
        self.raw.vocab_size
    }
    pub fn context_length(&self) -> u32 {
        self.raw.context_length
    }
    pub fn n_layers(&self) -> u32 {
        self.raw.n_layers
    }
    pub fn d_model(&self) -> u32 {
        self.raw.d_model
    }
    pub fn n_params(&self) -> u64 {
        self.raw.n_params
    }
    /// Parameters one token uses (n_params for a dense model).
    pub fn n_active_params(&self) -> u64 {
        self.raw.n_active_params
    }
    /// Mixture of experts: (experts per layer, experts a token uses); None for a dense model.
    pub fn experts(&self) -> Option<(u32, u32)> {
        if self.raw.n_experts > 0 {
            Some((self.raw.n_experts, self.raw.n_experts_used))
        } else {
            None
        }
    }
    pub fn device(&self) -> Device {
        Device::from_raw(self.raw.device)
    }
    pub fn bos_token(&self) -> Option<i32> {
        if self.raw.bos_token >= 0 {
            Some(self.raw.bos_token)
        } else {
            None
        }
    }
    pub fn eos_token(&self) -> Option<i32> {
        if self.raw.eos_token >= 0 {
            Some(self.raw.eos_token)
        } else {
            None
        }
    }
    pub fn has_tokenizer(&self) -> bool {
        self.raw.flags & sys::GPT_MODEL_INFO_HAS_TOKENIZER != 0
    }
    /// A GPU reads the weights in host memory (GPT_MODEL_HOST_WEIGHTS took effect).
    pub fn host_weights(&self) -> bool {
        self.raw.flags & sys::GPT_MODEL_INFO_HOST_WEIGHTS != 0
    }
    /// "f32", "f16", "bf16": the tensors in the file.
    pub fn file_dtype(&self) -> String {
        unsafe { cstr(sys::gpt_dtype_name(self.raw.file_dtype as c_int)) }
    }
}

/// A loaded weight file: immutable, usable from any number of threads.
pub struct Model {
    raw: NonNull<sys::gpt_model>,
    info: ModelInfo,
}

// gpt.h: a gpt_model is immutable after loading; any number of threads may use it at once.
unsafe impl Send for Model {}
unsafe impl Sync for Model {}

impl Drop for Model {
    fn drop(&mut self) {
        unsafe { sys::gpt_model_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Model")
            .field("name", &self.info.name())
            .field("arch", &self.info.arch())
            .field("n_params", &self.info.n_params())
            .field("device", &self.info.device())
            .finish()
    }
}

fn read_bytes(mut fill: impl FnMut(*mut c_char, usize, &mut usize) -> sys::gpt_status) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; 256];
    let mut n = 0usize;
    let mut st = fill(buf.as_mut_ptr() as *mut c_char, buf.len(), &mut n);
    if st == sys::GPT_ERR_BUFFER_TOO_SMALL && n > buf.len() {
        buf = vec![0u8; n + 1];
        st = fill(buf.as_mut_ptr() as *mut c_char, buf.len(), &mut n);
    }
    check(st)?;
    buf.truncate(n);
    Ok(buf)
}

impl Model {
    /// Loads a weight file with the default params (device: auto).
    pub fn load<P: AsRef<Path>>(path: P) -> Result<Model> {
        Self::load_with(path, &ModelParams::default())
    }

    pub fn load_with<P: AsRef<Path>>(path: P, params: &ModelParams) -> Result<Model> {
        let c_path = path_to_cstring(path.as_ref())?;
        let mut out = ptr::null_mut();
        check(unsafe { sys::gpt_model_load(c_path.as_ptr(), &params.raw, &mut out) })?;
        Self::from_raw_checked(out)
    }

    /// Loads a weight file image from memory; the library copies it (the slice may go away).
    pub fn from_bytes(data: &[u8], params: &ModelParams) -> Result<Model> {
        let mut p = *params;
        p.raw.flags |= sys::GPT_MODEL_COPY_BUFFER;
        let mut out = ptr::null_mut();
        check(unsafe {
            sys::gpt_model_load_from_memory(data.as_ptr() as *const c_void, data.len(), &p.raw, &mut out)
        })?;
        Self::from_raw_checked(out)
    }

    /// Loads a weight file image that lives for the whole program (e.g. `include_bytes!`): on the
    /// CPU the model uses it in place when it is 64-byte aligned, else the library copies it.
    pub fn from_static(data: &'static [u8], params: &ModelParams) -> Result<Model> {
        let mut p = *params;
        p.raw.flags &= !sys::GPT_MODEL_COPY_BUFFER;
        let mut out = ptr::null_mut();
        check(unsafe {
            sys::gpt_model_load_from_memory(data.as_ptr() as *const c_void, data.len(), &p.raw, &mut out)
        })?;
        Self::from_raw_checked(out)
    }

    fn from_raw_checked(raw: *mut sys::gpt_model) -> Result<Model> {
        let raw = NonNull::new(raw).ok_or_else(|| Error::new(sys::GPT_ERR_INTERNAL, "NULL model".into()))?;
        let mut info: sys::gpt_model_info = unsafe { MaybeUninit::zeroed().assume_init() };
        info.struct_size = std::mem::size_of::<sys::gpt_model_info>() as u32;
        let st = unsafe { sys::gpt_model_get_info(raw.as_ptr(), &mut info) };
        let model = Model {
            raw,
            info: ModelInfo { raw: info },
        };
        check(st)?;
        Ok(model)
    }

    /// The handle, for calls into [`sys`].
    pub fn as_ptr(&self) -> *mut sys::gpt_model {
        self.raw.as_ptr()
    }

    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    pub fn vocab_size(&self) -> u32 {
        self.info.raw.vocab_size
    }

    /// Every token id that ends generation (eos first); empty when the model has none.
    pub fn eos_tokens(&self) -> Result<Vec<i32>> {
        let mut n = 0u32;
        check(unsafe { sys::gpt_model_get_eos_tokens(self.as_ptr(), ptr::null_mut(), 0, &mut n) })?;
        let mut ids = vec![0i32; n as usize];
        if n > 0 {
            check(unsafe { sys::gpt_model_get_eos_tokens(self.as_ptr(), ids.as_mut_ptr(), n, &mut n) })?;
        }
        ids.truncate(n as usize);
        Ok(ids)
    }

    /// Text -> token ids, with the tokenizer's BOS default.
    pub fn tokenize<T: AsRef<[u8]>>(&self, text: T) -> Result<Vec<i32>> {
        self.tokenize_with(text, 0)
    }

    /// Text -> token ids with GPT_TOKENIZE_* flags.
    pub fn tokenize_with<T: AsRef<[u8]>>(&self, text: T, flags: u32) -> Result<Vec<i32>> {
        let text = text.as_ref();
        let mut ids = vec![0i32; text.len() + 8];
        let mut n = 0u32;
        let call = |ids: &mut Vec<i32>, n: &mut u32| unsafe {
            sys::gpt_tokenize(
                self.as_ptr(),
                text.as_ptr() as *const c_char,
                text.len(),
                flags,
                ids.as_mut_ptr(),
                ids.len() as u32,
                n,
            )
        };
        let mut st = call(&mut ids, &mut n);
        if st == sys::GPT_ERR_BUFFER_TOO_SMALL && n as usize > ids.len() {
            ids.resize(n as usize, 0);
            st = call(&mut ids, &mut n);
        }
        check(st)?;
        ids.truncate(n as usize);
        Ok(ids)
    }

    /// Token ids -> the bytes they stand for (GPT_DETOKENIZE_* flags).
    pub fn detokenize_bytes(&self, tokens: &[i32], flags: u32) -> Result<Vec<u8>> {
        read_bytes(|buf, cap, n| unsafe {
            sys::gpt_detokenize(self.as_ptr(), tokens.as_ptr(), tokens.len() as u32, flags, buf, cap, n)
        })
    }

    /// Token ids -> text (invalid UTF-8 replaced by U+FFFD).
    pub fn detokenize(&self, tokens: &[i32]) -> Result<String> {
        Ok(String::from_utf8_lossy(&self.detokenize_bytes(tokens, 0)?).into_owned())
    }

    /// The model's chat template rendered over (role, content) messages, as transformers'
    /// apply_chat_template(messages, tokenize=False, add_generation_prompt) does. Tokenize the
    /// result with GPT_TOKENIZE_PARSE_SPECIAL. Error UNSUPPORTED for a model without a template
    /// or one the library cannot render.
    pub fn chat_template<R: AsRef<str>, C: AsRef<str>>(
        &self,
        messages: &[(R, C)],
        add_generation_prompt: bool,
    ) -> Result<String> {
        let owned = messages
            .iter()
            .map(|(r, c)| match (CString::new(r.as_ref()), CString::new(c.as_ref())) {
                (Ok(r), Ok(c)) => Ok((r, c)),
                _ => Err(invalid("a chat message contains a NUL byte")),
            })
            .collect::<Result<Vec<_>>>()?;
        let raw: Vec<sys::gpt_chat_message> = owned
            .iter()
            .map(|(r, c)| sys::gpt_chat_message {
                role: r.as_ptr(),
                content: c.as_ptr(),
            })
            .collect();
        let flags = if add_generation_prompt {
            sys::GPT_CHAT_ADD_GENERATION_PROMPT
        } else {
            0
        };
        let bytes = read_bytes(|buf, cap, n| unsafe {
            sys::gpt_chat_apply_template(self.as_ptr(), raw.as_ptr(), raw.len(), flags, buf, cap, n)
        })?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The bytes one token stands for in running text.
    pub fn token_to_piece(&self, token: i32, flags: u32) -> Result<Vec<u8>> {
        read_bytes(|buf, cap, n| unsafe { sys::gpt_token_to_piece(self.as_ptr(), token, flags, buf, cap, n) })
    }

    /// A streaming detokenizer on this model.
    pub fn detokenizer(&self) -> Result<Detokenizer<'_>> {
        Detokenizer::new(self, 0)
    }

    /// A context (KV cache and scratch) on this model.
    pub fn context(&self, params: &CtxParams) -> Result<Context<'_>> {
        Context::new(self, params)
    }

    /// (host bytes, device bytes) a context with these params would take.
    pub fn estimate_memory(&self, params: &CtxParams) -> Result<(u64, u64)> {
        let (mut host, mut dev) = (0u64, 0u64);
        check(unsafe { sys::gpt_ctx_estimate_memory(self.as_ptr(), &params.raw, &mut host, &mut dev) })?;
        Ok((host, dev))
    }
}

fn path_to_cstring(path: &Path) -> Result<CString> {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path.to_string_lossy().into_owned().into_bytes();
    CString::new(bytes).map_err(|_| invalid("the path contains a NUL byte"))
}

// ---------------------------------------------------------------------------- context

/// A KV cache and scratch for one thread of work; borrows its model.
pub struct Context<'m> {
    raw: NonNull<sys::gpt_ctx>,
    vocab_size: usize,
    max_batch: u32,
    _model: PhantomData<&'m Model>,
}

// gpt.h: a context belongs to one thread at a time; it may move between threads. Not Sync:
// calls on one context must not overlap.
unsafe impl<'m> Send for Context<'m> {}

impl<'m> Drop for Context<'m> {
    fn drop(&mut self) {
        unsafe { sys::gpt_ctx_free(self.raw.as_ptr()) }
    }
}

struct TokenCallback<'a> {
    f: &'a mut dyn FnMut(i32) -> bool,
    panic: Option<Box<dyn std::any::Any + Send + 'static>>,
}

unsafe extern "C" fn on_token_trampoline(token: i32, user: *mut c_void) -> c_int {
    let state = &mut *(user as *mut TokenCallback<'_>);
    if state.panic.is_some() {
        return 1;
    }
    match panic::catch_unwind(AssertUnwindSafe(|| (state.f)(token))) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(payload) => {
            state.panic = Some(payload); // resumed once gpt_generate has returned
            1
        }
    }
}

impl<'m> Context<'m> {
    pub fn new(model: &'m Model, params: &CtxParams) -> Result<Context<'m>> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::gpt_ctx_create(model.as_ptr(), &params.raw, &mut out) })?;
        let raw = NonNull::new(out).ok_or_else(|| Error::new(sys::GPT_ERR_INTERNAL, "NULL context".into()))?;
        Ok(Context {
            raw,
            vocab_size: model.vocab_size() as usize,
            max_batch: params.raw.max_batch.max(1),
            _model: PhantomData,
        })
    }

    pub fn as_ptr(&self) -> *mut sys::gpt_ctx {
        self.raw.as_ptr()
    }

    /// Tokens in sequence seq's KV cache.
    pub fn seq_len(&self, seq: u32) -> u32 {
        unsafe { sys::gpt_ctx_seq_len(self.as_ptr(), seq) }
    }

    /// Empties every sequence's cache.
    pub fn reset(&mut self) {
        unsafe { sys::gpt_ctx_reset(self.as_ptr()) }
    }

    /// Shortens sequence seq's cache to n_tokens.
    pub fn truncate(&mut self, seq: u32, n_tokens: u32) -> Result<()> {
        check_ctx(
            unsafe { sys::gpt_ctx_truncate(self.as_ptr(), seq, n_tokens) },
            self.as_ptr(),
        )
    }

    /// Appends tokens to sequence 0; returns the last token's logits, [vocab_size].
    pub fn forward(&mut self, tokens: &[i32]) -> Result<Vec<f32>> {
        let mut logits = vec![0f32; self.vocab_size];
        self.forward_batch(tokens, 1, 0, Some(&mut logits))?;
        Ok(logits)
    }

    /// Appends tokens to sequence 0; returns every new token's logits, [n][vocab_size] flattened.
    pub fn forward_all(&mut self, tokens: &[i32]) -> Result<Vec<f32>> {
        let mut logits = vec![0f32; self.vocab_size * tokens.len()];
        self.forward_batch(tokens, 1, sys::GPT_FORWARD_ALL_LOGITS, Some(&mut logits))?;
        Ok(logits)
    }

    /// gpt_forward: tokens is [batch][n_tokens] (row b for sequence b); logits None fills the
    /// cache only, else it must hold [batch][vocab] (or [batch][n_tokens][vocab] with
    /// GPT_FORWARD_ALL_LOGITS) floats.
    pub fn forward_batch(&mut self, tokens: &[i32], batch: u32, flags: u32, logits: Option<&mut [f32]>) -> Result<()> {
        if batch == 0 || tokens.is_empty() || tokens.len() % batch as usize != 0 {
            return Err(invalid("tokens must hold batch rows of at least one token each"));
        }
        let n_tokens = tokens.len() / batch as usize;
        let rows = if flags & sys::GPT_FORWARD_ALL_LOGITS != 0 {
            tokens.len()
        } else {
            batch as usize
        };
        let out = match logits {
            None => ptr::null_mut(),
            Some(l) => {
                if l.len() < rows * self.vocab_size {
                    return Err(invalid(&format!(
                        "logits holds {} floats, {} needed",
                        l.len(),
                        rows * self.vocab_size
                    )));
                }
                l.as_mut_ptr()
            }
        };
        let st = unsafe { sys::gpt_forward(self.as_ptr(), tokens.as_ptr(), batch, n_tokens as u32, flags, out) };
        check_ctx(st, self.as_ptr())
    }

    /// The max_batch this context was created with.
    pub fn max_batch(&self) -> u32 {
        self.max_batch
    }

    /// Appends prompt to sequence 0 and samples up to max_tokens new tokens, calling on_token for
    /// each (return false to stop after it). Returns the tokens generated. A panic in on_token
    /// stops generation and is resumed here. After the call the cache holds the prompt and every
    /// generated token but the last (gpt.h).
    pub fn generate<F: FnMut(i32) -> bool>(
        &mut self,
        prompt: &[i32],
        max_tokens: u32,
        sampling: &SamplingParams,
        mut on_token: F,
    ) -> Result<Vec<i32>> {
        let raw = sampling.as_raw();
        let mut out = vec![0i32; max_tokens.max(1) as usize];
        let mut n_out = 0u32;
        let mut state = TokenCallback {
            f: &mut on_token,
            panic: None,
        };
        let st = unsafe {
            sys::gpt_generate(
                self.as_ptr(),
                prompt.as_ptr(),
                prompt.len() as u32,
                &raw,
                Some(on_token_trampoline),
                &mut state as *mut TokenCallback<'_> as *mut c_void,
                out.as_mut_ptr(),
                max_tokens,
                &mut n_out,
            )
        };
        let result = check_ctx(st, self.as_ptr());
        if let Some(payload) = state.panic.take() {
            panic::resume_unwind(payload);
        }
        result?;
        out.truncate(n_out as usize);
        Ok(out)
    }
}

// ------------------------------------------------------------------------ detokenizer

/// Streaming detokenizer: push(token) gives the text completed by each token (never half a
/// UTF-8 character), flush() what is held back at the end of a stream.
pub struct Detokenizer<'m> {
    raw: NonNull<sys::gpt_detokenizer>,
    buf: Vec<u8>,
    _model: PhantomData<&'m Model>,
}

unsafe impl<'m> Send for Detokenizer<'m> {}

impl<'m> Drop for Detokenizer<'m> {
    fn drop(&mut self) {
        unsafe { sys::gpt_detokenizer_free(self.raw.as_ptr()) }
    }
}

impl<'m> Detokenizer<'m> {
    /// flags: GPT_DETOKENIZE_RENDER_SPECIAL to write control tokens' text, GPT_DETOKENIZE_CONTINUE
    /// when the tokens continue text already shown (a prompt).
    pub fn new(model: &'m Model, flags: u32) -> Result<Detokenizer<'m>> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::gpt_detokenizer_create(model.as_ptr(), flags, &mut out) })?;
        let raw = NonNull::new(out).ok_or_else(|| Error::new(sys::GPT_ERR_INTERNAL, "NULL detokenizer".into()))?;
        Ok(Detokenizer {
            raw,
            buf: vec![0u8; 256],
            _model: PhantomData,
        })
    }

    fn call(
        &mut self,
        mut f: impl FnMut(*mut sys::gpt_detokenizer, *mut c_char, usize, &mut usize) -> sys::gpt_status,
    ) -> Result<Vec<u8>> {
        let mut n = 0usize;
        let mut st = f(
            self.raw.as_ptr(),
            self.buf.as_mut_ptr() as *mut c_char,
            self.buf.len(),
            &mut n,
        );
        if st == sys::GPT_ERR_BUFFER_TOO_SMALL && n > self.buf.len() {
            self.buf.resize(n, 0); // the token was not consumed: push it again
            st = f(
                self.raw.as_ptr(),
                self.buf.as_mut_ptr() as *mut c_char,
                self.buf.len(),
                &mut n,
            );
        }
        check(st)?;
        Ok(self.buf[..n].to_vec())
    }

    pub fn push_bytes(&mut self, token: i32) -> Result<Vec<u8>> {
        self.call(|d, buf, cap, n| unsafe { sys::gpt_detokenizer_push(d, token, buf, cap, n) })
    }

    pub fn flush_bytes(&mut self) -> Result<Vec<u8>> {
        self.call(|d, buf, cap, n| unsafe { sys::gpt_detokenizer_flush(d, buf, cap, n) })
    }

    /// The text completed by this token ("" while a character waits for more bytes).
    pub fn push(&mut self, token: i32) -> Result<String> {
        Ok(String::from_utf8_lossy(&self.push_bytes(token)?).into_owned())
    }

    /// Whatever is held back (an incomplete character, replaced); then a new stream starts.
    pub fn flush(&mut self) -> Result<String> {
        Ok(String::from_utf8_lossy(&self.flush_bytes()?).into_owned())
    }
}
