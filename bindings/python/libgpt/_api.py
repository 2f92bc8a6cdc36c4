"""The Pythonic layer over the C API: Model, Context, Detokenizer, GptError."""

import ctypes
import enum
import queue
import threading
import weakref
from ctypes import POINTER, byref, c_char_p, c_float, c_int32, c_size_t, c_uint32, c_uint64, c_void_p

from . import _capi as C

try:  # optional: forward() returns numpy arrays when numpy is installed
    import numpy as _np
except ImportError:  # pragma: no cover - depends on the machine
    _np = None


# ------------------------------------------------------------------ errors
class Status(enum.IntEnum):
    """gpt_status values."""
    OK = 0
    ERR_INVALID_ARG = -1
    ERR_IO = -2
    ERR_FORMAT = -3
    ERR_CHECKSUM = -4
    ERR_UNSUPPORTED = -5
    ERR_OUT_OF_MEMORY = -6
    ERR_DEVICE = -7
    ERR_CONTEXT_FULL = -8
    ERR_ABORTED = -9
    ERR_INTERNAL = -10
    ERR_BUFFER_TOO_SMALL = -11


def status_name(status):
    """'GPT_ERR_FORMAT' for -3 (the name gpt_status_str gives, without its explanation)."""
    try:
        return "GPT_" + Status(status).name
    except ValueError:
        text = C.fn("gpt_status_str")(int(status)).decode("utf-8", "replace")
        return text.split(":", 1)[0]


class GptError(Exception):
    """A libgpt call failed. status: the gpt_status (int); status_name: 'GPT_ERR_...';
    message: the library's message (gpt_last_error / gpt_ctx_last_error); tokens: for a
    generation that failed part way, the tokens it produced (else None)."""

    def __init__(self, status, message, tokens=None):
        self.status = int(status)
        self.status_name = status_name(status)
        self.message = message
        self.tokens = tokens
        super().__init__("%s: %s" % (self.status_name, message) if message else self.status_name)


def _decode(b):
    return b.decode("utf-8", "replace") if b else ""


def _check(status, ctx_handle=None):
    """Raises GptError for a failed status. Must run right after the call, on the same thread."""
    if status != C.GPT_OK:
        if ctx_handle is not None:
            msg = C.fn("gpt_ctx_last_error")(ctx_handle)
        else:
            msg = C.fn("gpt_last_error")()
        raise GptError(status, _decode(msg))


# ------------------------------------------------------------------ library-wide
def version():
    """The linked library's version string, e.g. '0.1.0'."""
    return _decode(C.fn("gpt_version_string")())


def version_number():
    """GPT_VERSION_NUMBER of the linked library (major * 10000 + minor * 100 + patch)."""
    return int(C.fn("gpt_version")())


def build_info():
    """How the library was built, e.g. 'cpu; cuda 12.6 (sm_87)'."""
    return _decode(C.fn("gpt_build_info")())


def cuda_device_count():
    """CUDA devices this build can use (0 without CUDA or a GPU)."""
    return int(C.fn("gpt_cuda_device_count")())


class DeviceInfo:
    """gpt_device_info as a Python object (see gpt.h for each field)."""

    _fields = ("device", "integrated", "pageable_access", "host_mapped", "cc_major", "cc_minor", "multiprocessors",
               "total_bytes", "available_bytes", "name")

    def __init__(self, raw):
        for f in self._fields:
            v = getattr(raw, f)
            setattr(self, f, _decode(v) if f == "name" else bool(v) if f in ("integrated", "pageable_access",
                                                                                "host_mapped") else v)
        self.device_name = _device_name(raw.device)

    def as_dict(self):
        d = {f: getattr(self, f) for f in self._fields}
        d.update(device_name=self.device_name)
        return d

    def __repr__(self):
        return "DeviceInfo(device=%s, name=%r, integrated=%s, total_bytes=%d, available_bytes=%d)" % (
            self.device_name, self.name, self.integrated, self.total_bytes, self.available_bytes)


def device_info(device="auto"):
    """What a device is and how much memory it can give now: 'cpu' (the host: MemTotal,
    MemAvailable), 'cuda', 'cuda:N' or 'auto' (where a model would load)."""
    raw = C.gpt_device_info()
    raw.struct_size = ctypes.sizeof(raw)
    _check(C.fn("gpt_device_get_info")(_device(device), byref(raw)))
    return DeviceInfo(raw)


def library_path():
    """Where the shared library was loaded from."""
    return C.library_path()


_DTYPES = {None: C.GPT_DTYPE_AUTO, "auto": C.GPT_DTYPE_AUTO, "f32": C.GPT_DTYPE_F32, "float32": C.GPT_DTYPE_F32,
           "f16": C.GPT_DTYPE_F16, "float16": C.GPT_DTYPE_F16, "bf16": C.GPT_DTYPE_BF16, "bfloat16": C.GPT_DTYPE_BF16,
           "q8": C.GPT_DTYPE_Q8, "q4": C.GPT_DTYPE_Q4}  # q8/q4: weight_dtype of a file already quantized


def _dtype(value, what):
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    try:
        return _DTYPES[value]
    except (KeyError, TypeError):
        raise ValueError("%s must be one of auto, f32, f16, bf16 (got %r)" % (what, value)) from None


def _device(value):
    """None/'auto' -> GPT_DEVICE_AUTO, 'cpu' -> GPT_DEVICE_CPU, 'cuda' / 'cuda:N' / N -> ordinal."""
    if value is None or value == "auto":
        return C.GPT_DEVICE_AUTO
    if value == "cpu":
        return C.GPT_DEVICE_CPU
    if value == "cuda":
        return 0
    if isinstance(value, str) and value.startswith("cuda:"):
        return int(value[5:])
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ValueError("device must be 'auto', 'cpu', 'cuda', 'cuda:N' or an int (got %r)" % (value,))


def _device_name(d):
    return "cpu" if d == C.GPT_DEVICE_CPU else "cuda:%d" % d


def _as_bytes(text):
    if isinstance(text, str):
        return text.encode("utf-8")
    return bytes(text)


def _int_array(values):
    values = list(values)
    return (c_int32 * max(1, len(values)))(*values), len(values)


def _read_bytes(call):
    """Two-call sizing for byte outputs: call(buf, cap, n_ptr) -> status."""
    n = c_size_t(0)
    cap = 256
    while True:
        buf = ctypes.create_string_buffer(cap)
        st = call(buf, cap, byref(n))
        if st == C.GPT_ERR_BUFFER_TOO_SMALL and n.value > cap:
            cap = n.value + 1
            continue
        _check(st)
        return buf.raw[:n.value]


# ------------------------------------------------------------------ model
class ModelInfo:
    """gpt_model_info as a Python object (see gpt.h for each field)."""

    _fields = ("arch", "n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff", "vocab_size",
               "context_length", "file_dtype", "weight_dtype", "device", "bos_token", "eos_token", "flags",
               "norm_eps", "rope_theta", "n_params", "host_bytes", "device_bytes", "name",
               "n_experts", "n_experts_used", "d_ff_expert", "d_ff_shared", "n_active_params")

    def __init__(self, raw):
        for f in self._fields:
            v = getattr(raw, f)
            setattr(self, f, _decode(v) if f == "name" else v)
        self.arch_name = _decode(C.fn("gpt_arch_name")(raw.arch))
        self.file_dtype_name = _decode(C.fn("gpt_dtype_name")(raw.file_dtype))
        self.weight_dtype_name = _decode(C.fn("gpt_dtype_name")(raw.weight_dtype))
        self.device_name = _device_name(raw.device)
        self.has_tokenizer = bool(raw.flags & C.GPT_MODEL_INFO_HAS_TOKENIZER)
        self.tied_head = bool(raw.flags & C.GPT_MODEL_INFO_TIED_HEAD)
        self.host_weights = bool(raw.flags & C.GPT_MODEL_INFO_HOST_WEIGHTS)  # a GPU reads them in host memory

    def as_dict(self):
        d = {f: getattr(self, f) for f in self._fields}
        d.update(arch_name=self.arch_name, device_name=self.device_name, has_tokenizer=self.has_tokenizer)
        return d

    def __repr__(self):
        return "ModelInfo(name=%r, arch=%s, n_layers=%d, d_model=%d, vocab_size=%d, device=%s, n_params=%d)" % (
            self.name, self.arch_name, self.n_layers, self.d_model, self.vocab_size, self.device_name, self.n_params)


class _Handle:
    """A C handle freed exactly once: by close(), the context manager or garbage collection."""

    _free_name = None
    _handle = None

    def _set_handle(self, handle):
        self._handle = handle

    @property
    def closed(self):
        return self._handle is None

    def _h(self):
        if self._handle is None:
            raise ValueError("%s is closed" % type(self).__name__)
        return self._handle

    def close(self):
        h, self._handle = self._handle, None
        if h is not None:
            C.fn(self._free_name)(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the module may be half torn down
            pass


class Model(_Handle):
    """A loaded weight file (immutable; any number of threads may use it).

    Model(path, device=None, weight_dtype=None, skip_checksums=False, no_mmap=False)
    device: None or 'auto' (the first GPU if any, else the CPU), 'cpu', 'cuda', 'cuda:N', or N.
    Free it with close(), a `with` block, or by dropping the last reference; its contexts and
    detokenizers are closed first.
    """

    _free_name = "gpt_model_free"

    def __init__(self, path, *, device=None, weight_dtype=None, skip_checksums=False, no_mmap=False, weights=None):
        p = self._params(device, weight_dtype, skip_checksums, no_mmap, weights)
        self._load(lambda out: C.fn("gpt_model_load")(_as_path(path), byref(p), byref(out)), None)

    @staticmethod
    def _params(device, weight_dtype, skip_checksums, no_mmap, weights=None):
        """weights: None (the device's default), "host" (GPT_MODEL_HOST_WEIGHTS: a GPU reads them
        in place from host memory) or "device" (GPT_MODEL_DEVICE_WEIGHTS)."""
        p = C.init_struct(C.gpt_model_params, "gpt_model_params_init")
        if weights not in (None, "host", "device"):
            raise ValueError("weights must be None, 'host' or 'device', not %r" % (weights,))
        p.flags |= {None: 0, "host": C.GPT_MODEL_HOST_WEIGHTS, "device": C.GPT_MODEL_DEVICE_WEIGHTS}[weights]
        p.device = _device(device)
        p.weight_dtype = _dtype(weight_dtype, "weight_dtype")
        p.flags |= (C.GPT_MODEL_SKIP_CHECKSUMS if skip_checksums else 0) | (C.GPT_MODEL_NO_MMAP if no_mmap else 0)
        return p

    def _load(self, call, buffer):
        self._children = weakref.WeakSet()
        self._buffer = None
        out = c_void_p()
        _check(call(out))
        self._set_handle(out.value)
        self._buffer = buffer  # a borrowed buffer lives as long as the model
        self.info = self._get_info()

    @classmethod
    def from_bytes(cls, data, *, copy=False, device=None, weight_dtype=None, skip_checksums=False, no_mmap=False,
                   weights=None):
        """Loads a weight file image from memory (bytes, bytearray, memoryview, mmap, ...). Unless
        copy=True the model may use the buffer in place on the CPU (gpt_model_load_from_memory
        borrows a 64-byte aligned buffer): this object then keeps a reference to it, and a
        writable buffer must not be changed while the model lives."""
        if isinstance(data, bytes):
            keep, addr, n = data, ctypes.cast(ctypes.c_char_p(data), c_void_p).value, len(data)
        else:
            mv = memoryview(data)
            if mv.readonly or not mv.c_contiguous:
                return cls.from_bytes(mv.tobytes(), copy=copy, device=device, weight_dtype=weight_dtype,
                                      skip_checksums=skip_checksums, no_mmap=no_mmap, weights=weights)
            mv = mv.cast("B")
            n = mv.nbytes
            keep = (ctypes.c_char * max(1, n)).from_buffer(mv) if n else ctypes.create_string_buffer(1)
            addr = ctypes.addressof(keep)
        p = cls._params(device, weight_dtype, skip_checksums, no_mmap, weights)
        if copy:
            p.flags |= C.GPT_MODEL_COPY_BUFFER
        self = cls.__new__(cls)
        self._load(lambda out: C.fn("gpt_model_load_from_memory")(addr, n, byref(p), byref(out)),
                   None if copy else keep)
        return self

    def _get_info(self):
        raw = C.gpt_model_info()
        raw.struct_size = ctypes.sizeof(raw)
        _check(C.fn("gpt_model_get_info")(self._h(), byref(raw)))
        return ModelInfo(raw)

    def close(self):
        for child in list(getattr(self, "_children", ())):
            child.close()
        super().close()
        self._buffer = None

    # -- convenience properties
    @property
    def vocab_size(self):
        return self.info.vocab_size

    @property
    def bos_token(self):
        """The BOS token id, or None."""
        return self.info.bos_token if self.info.bos_token >= 0 else None

    @property
    def eos_token(self):
        """The EOS token id, or None."""
        return self.info.eos_token if self.info.eos_token >= 0 else None

    @property
    def eos_tokens(self):
        """Every token id that ends generation (gpt_model_get_eos_tokens), eos_token first."""
        n = c_uint32(0)
        _check(C.fn("gpt_model_get_eos_tokens")(self._h(), None, 0, byref(n)))
        arr = (c_int32 * max(1, n.value))()
        _check(C.fn("gpt_model_get_eos_tokens")(self._h(), arr, n.value, byref(n)))
        return list(arr[:n.value])

    @property
    def has_tokenizer(self):
        return self.info.has_tokenizer

    def __repr__(self):
        return "<libgpt.Model %s>" % ("closed" if self.closed else repr(self.info))

    # -- tokenizer
    def tokenize(self, text, *, add_bos=None, parse_special=False):
        """Text (str or bytes) -> token ids. add_bos: None for the tokenizer's default, True or
        False to force it; parse_special: special-token strings become their ids."""
        data = _as_bytes(text)
        flags = 0
        if add_bos is True:
            flags |= C.GPT_TOKENIZE_ADD_BOS
        elif add_bos is False:
            flags |= C.GPT_TOKENIZE_NO_BOS
        if parse_special:
            flags |= C.GPT_TOKENIZE_PARSE_SPECIAL
        n = c_uint32(0)
        cap = len(data) + 8
        while True:
            arr = (c_int32 * cap)()
            st = C.fn("gpt_tokenize")(self._h(), data, len(data), flags, arr, cap, byref(n))
            if st == C.GPT_ERR_BUFFER_TOO_SMALL and n.value > cap:
                cap = n.value
                continue
            _check(st)
            return list(arr[:n.value])

    def detokenize_bytes(self, tokens, *, render_special=False, continues=False):
        """Token ids -> the bytes they stand for. continues=True: the tokens continue earlier
        text (a prompt), so a SentencePiece tokenizer keeps their leading space."""
        arr, n = _int_array(tokens)
        flags = (C.GPT_DETOKENIZE_RENDER_SPECIAL if render_special else 0) | (C.GPT_DETOKENIZE_CONTINUE if continues else 0)
        h = self._h()
        return _read_bytes(lambda buf, cap, np: C.fn("gpt_detokenize")(h, arr, n, flags, buf, cap, np))

    def detokenize(self, tokens, *, render_special=False, continues=False, errors="replace"):
        """Token ids -> text (invalid UTF-8 handled by `errors`, as in bytes.decode)."""
        return self.detokenize_bytes(tokens, render_special=render_special, continues=continues).decode("utf-8", errors)

    def token_to_piece(self, token, *, render_special=False):
        """The bytes one token stands for in running text (may be part of a UTF-8 character)."""
        flags = C.GPT_DETOKENIZE_RENDER_SPECIAL if render_special else 0
        h = self._h()
        return _read_bytes(lambda buf, cap, np: C.fn("gpt_token_to_piece")(h, int(token), flags, buf, cap, np))

    def detokenizer(self, *, render_special=False, continues=False):
        """A streaming Detokenizer on this model (continues=True: the tokens continue text
        already shown, such as the prompt)."""
        return Detokenizer(self, render_special=render_special, continues=continues)

    # -- contexts
    # -- chat
    def chat_template_bytes(self, messages, add_generation_prompt=True):
        """The model's chat template rendered over messages, as bytes (see chat_template)."""
        arr, n, keep = _chat_messages(messages)
        flags = C.GPT_CHAT_ADD_GENERATION_PROMPT if add_generation_prompt else 0
        return _read_bytes(lambda buf, cap, n_ptr: C.fn("gpt_chat_apply_template")(self._h(), arr, n, flags, buf, cap,
                                                                                    n_ptr))

    def chat_template(self, messages, add_generation_prompt=True, errors="replace"):
        """Renders a conversation with the model's chat template, as transformers'
        apply_chat_template(messages, tokenize=False, add_generation_prompt=...) does.
        messages: [{"role": "user", "content": "Hi"}, ...] or [("user", "Hi"), ...]. Tokenize the
        result with parse_special=True. GptError (Status.ERR_UNSUPPORTED) for a model without a
        template or one the library cannot render."""
        return self.chat_template_bytes(messages, add_generation_prompt).decode("utf-8", errors)

    def context(self, **params):
        """Context(self, **params): see Context."""
        return Context(self, **params)

    def estimate_memory(self, **params):
        """(host_bytes, device_bytes) a context with these params would take (see Context)."""
        p, _ = _ctx_params(**params)
        host, dev = c_uint64(0), c_uint64(0)
        _check(C.fn("gpt_ctx_estimate_memory")(self._h(), byref(p), byref(host), byref(dev)))
        return host.value, dev.value


def _as_path(path):
    import os
    return os.fsencode(path)


# ------------------------------------------------------------------ detokenizer
class Detokenizer(_Handle):
    """Streaming detokenizer: push(token) returns the text completed by each token (never half a
    UTF-8 character), flush() what is held back at the end of a stream."""

    _free_name = "gpt_detokenizer_free"

    def __init__(self, model, *, render_special=False, continues=False):
        self.model = model
        out = c_void_p()
        flags = (C.GPT_DETOKENIZE_RENDER_SPECIAL if render_special else 0) | (C.GPT_DETOKENIZE_CONTINUE if continues else 0)
        _check(C.fn("gpt_detokenizer_create")(model._h(), flags, byref(out)))
        self._set_handle(out.value)
        model._children.add(self)
        self._buf = ctypes.create_string_buffer(256)

    def _call(self, call):
        n = c_size_t(0)
        while True:
            st = call(self._buf, len(self._buf), byref(n))
            if st == C.GPT_ERR_BUFFER_TOO_SMALL and n.value > len(self._buf):
                self._buf = ctypes.create_string_buffer(n.value)
                continue  # the token was not consumed: push it again
            _check(st)
            return self._buf.raw[:n.value]

    def push_bytes(self, token):
        h = self._h()
        return self._call(lambda b, cap, np: C.fn("gpt_detokenizer_push")(h, int(token), b, cap, np))

    def flush_bytes(self):
        h = self._h()
        return self._call(lambda b, cap, np: C.fn("gpt_detokenizer_flush")(h, b, cap, np))

    def push(self, token):
        """Text completed by this token ('' when it waits for more bytes)."""
        return self.push_bytes(token).decode("utf-8", "replace")

    def flush(self):
        """Whatever is held back (an incomplete character, replaced), then a new stream starts."""
        return self.flush_bytes().decode("utf-8", "replace")


# ------------------------------------------------------------------ context
def _ctx_params(*, max_seq=None, max_batch=None, max_step_tokens=None, n_threads=None, compute_dtype=None,
                kv_dtype=None, allow_tf32=False, cuda_graphs=True, warmup=True, abort=None):
    p = C.init_struct(C.gpt_ctx_params, "gpt_ctx_params_init")
    if max_seq is not None:
        p.max_seq = max_seq
    if max_batch is not None:
        p.max_batch = max_batch
    if max_step_tokens is not None:
        p.max_step_tokens = max_step_tokens
    if n_threads is not None:
        p.n_threads = n_threads
    if compute_dtype is not None:
        p.compute_dtype = _dtype(compute_dtype, "compute_dtype")
    if kv_dtype is not None:
        p.kv_dtype = _dtype(kv_dtype, "kv_dtype")
    if allow_tf32:
        p.flags |= C.GPT_CTX_ALLOW_TF32
    if not cuda_graphs:
        p.flags |= C.GPT_CTX_NO_GRAPHS
    if not warmup:
        p.flags |= C.GPT_CTX_NO_WARMUP
    keep = None
    if abort is not None:
        def on_abort(_user, _abort=abort):
            try:
                return 1 if _abort() else 0
            except BaseException:
                return 1  # an exception in the callback stops the call
        keep = C.gpt_abort_fn(on_abort)
        p.abort_fn = keep
    return p, keep


def _sampling_params(temperature=None, top_k=None, top_p=None, min_p=None, repetition_penalty=None,
                     repetition_last_n=None, seed=None, ignore_eos=False, stop_tokens=None, stop=None,
                     frequency_penalty=None, presence_penalty=None, logit_bias=None, context_shift=False):
    """The C struct and the objects its pointers point into (keep them alive with it)."""
    s = C.init_struct(C.gpt_sampling_params, "gpt_sampling_params_init")
    if temperature is not None:
        s.temperature = temperature
    if top_k is not None:
        s.top_k = top_k
    if top_p is not None:
        s.top_p = top_p
    if min_p is not None:
        s.min_p = min_p
    if repetition_penalty is not None:
        s.repetition_penalty = repetition_penalty
    if repetition_last_n is not None:
        s.repetition_last_n = repetition_last_n
    if seed is not None:
        s.seed = seed
    if frequency_penalty is not None:
        s.frequency_penalty = frequency_penalty
    if presence_penalty is not None:
        s.presence_penalty = presence_penalty
    if ignore_eos:
        s.flags |= C.GPT_SAMPLING_IGNORE_EOS
    if context_shift:  # past max_seq, condition on the last max_seq tokens (gpt.h)
        s.flags |= C.GPT_SAMPLING_CONTEXT_SHIFT
    keep = []
    if stop_tokens:
        arr, n = _int_array(stop_tokens)
        keep.append(arr)
        s.stop_tokens = arr
        s.n_stop_tokens = n
    if stop:
        if isinstance(stop, (str, bytes)):
            stop = [stop]
        texts = [_as_bytes(t) for t in stop]
        if any(b"\0" in t for t in texts):
            raise ValueError("a stop string must not contain NUL")
        arr = (c_char_p * len(texts))(*texts)
        keep += [texts, arr]
        s.stop_strings = arr
        s.n_stop_strings = len(texts)
    if logit_bias:
        items = list(logit_bias.items()) if isinstance(logit_bias, dict) else list(logit_bias)
        arr = (C.gpt_logit_bias * len(items))(*[C.gpt_logit_bias(int(t), float(b)) for t, b in items])
        keep.append(arr)
        s.logit_bias = arr
        s.n_logit_bias = len(items)
    return s, keep


def _chat_messages(messages):
    """[{"role": ..., "content": ...}] or [(role, content)] -> a C array and the bytes it points to."""
    pairs = []
    for m in messages:
        role, content = (m["role"], m["content"]) if isinstance(m, dict) else m
        pairs.append((_as_bytes(role), _as_bytes(content)))
    for role, content in pairs:
        if b"\0" in role or b"\0" in content:
            raise ValueError("a chat message must not contain NUL")
    arr = (C.gpt_chat_message * max(1, len(pairs)))(*[C.gpt_chat_message(r, c) for r, c in pairs])
    return arr, len(pairs), pairs


_TOKEN, _DONE = object(), object()


class TokenStream:
    """An iterator over the tokens of one gpt_generate call (Context.generate_tokens).

    The call runs on a worker thread in lockstep with the iteration: the library's token
    callback hands each token over and waits until the next one is asked for. Stopping the
    iteration early (break, close(), an exception, garbage collection) makes that callback
    return nonzero, so the call ends right after the last token taken, exactly as a C caller's
    callback would end it; the KV cache then holds the prompt and every token taken but the last
    (gpt.h). The tokens are those of a single gpt_generate call with the same prompt and
    sampling params: the same seed gives the same tokens as from C.
    tokens: the tokens taken so far. status: the call's gpt_status once it has ended.
    """

    def __init__(self, ctx, prompt, sampling, keep, cap):
        self._ctx = ctx
        self._prompt = prompt
        self._sampling = sampling
        self._keep = keep
        self._cap = cap
        self.tokens = []
        self.status = None
        self._state = "new"  # new -> running -> done
        self._awaiting_reply = False
        self._to_consumer = queue.SimpleQueue()
        self._to_producer = queue.SimpleQueue()
        self._thread = None

    def __iter__(self):
        return self

    def _start(self):
        ctx = self._ctx
        ctx._acquire(self)
        to_consumer, to_producer = self._to_consumer, self._to_producer
        prompt_arr, n_prompt = _int_array(self._prompt)
        out = (c_int32 * max(1, self._cap))()
        n_out = c_uint32(0)
        handle = ctx._h()
        sampling, cap = self._sampling, self._cap

        def on_token(token, _user):
            try:
                to_consumer.put((_TOKEN, token))
                return 1 if to_producer.get() else 0
            except BaseException:
                return 1

        callback = C.gpt_token_fn(on_token)

        def run():
            # Runs gpt_generate; the error message is read here: gpt_last_error is per thread.
            try:
                st = C.fn("gpt_generate")(handle, prompt_arr, n_prompt, byref(sampling), callback, None, out, cap,
                                          byref(n_out))
                msg = _decode(C.fn("gpt_ctx_last_error")(handle)) if st != C.GPT_OK else ""
                to_consumer.put((_DONE, st, msg, list(out[:n_out.value])))
            except BaseException as e:  # pragma: no cover - a bug in this module
                to_consumer.put((_DONE, int(Status.ERR_INTERNAL), "libgpt (Python): %r" % (e,), []))

        self._thread = threading.Thread(target=run, name="libgpt-generate", daemon=True)
        self._state = "running"
        self._thread.start()

    def _finish(self, item):
        _, st, msg, produced = item
        self._state = "done"
        self.status = st
        self._thread.join()
        self._ctx._release(self)
        if st != C.GPT_OK:
            raise GptError(st, msg, tokens=produced)

    def __next__(self):
        if self._state == "done":
            raise StopIteration
        if self._state == "new":
            self._start()
        elif self._awaiting_reply:
            self._awaiting_reply = False
            self._to_producer.put(False)  # go on after the token handed out last
        item = self._to_consumer.get()
        if item[0] is _DONE:
            self._finish(item)
            raise StopIteration
        self._awaiting_reply = True
        self.tokens.append(item[1])
        return item[1]

    def close(self):
        """Ends the generation after the last token taken (no effect once it has ended)."""
        if self._state == "new":
            self._state = "done"
            return
        if self._state != "running":
            return
        if self._awaiting_reply:
            self._awaiting_reply = False
            self._to_producer.put(True)
        while True:
            item = self._to_consumer.get()
            if item[0] is _DONE:
                break
            self._to_producer.put(True)  # a token handed out after an interrupt: stop there
        try:
            self._finish(item)
        except GptError:
            pass  # closing: a failure after the tokens taken is not reported

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Generation:
    """An iterator over the text pieces of one generation (Context.generate): each piece is the
    text completed by one or more tokens, never half a UTF-8 character. tokens: the token ids so
    far. close() (or `with`, or breaking out and dropping it) ends the generation there."""

    def __init__(self, stream, detok):
        self._stream = stream
        self._detok = detok
        self._done = False

    @property
    def tokens(self):
        return self._stream.tokens

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        while True:
            try:
                token = next(self._stream)
            except StopIteration:
                self._done = True
                tail = self._detok.flush()
                self._detok.close()
                if tail:
                    return tail
                raise
            except BaseException:
                self._done = True
                self._detok.close()
                raise
            piece = self._detok.push(token)
            if piece:
                return piece

    def text(self):
        """The remaining pieces joined."""
        return "".join(self)

    def close(self):
        self._done = True
        self._stream.close()
        self._detok.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Context(_Handle):
    """A KV cache and scratch for one thread of work on a model.

    Context(model, max_seq=None, max_batch=None, max_step_tokens=None, n_threads=None,
            compute_dtype=None, kv_dtype=None, allow_tf32=False, cuda_graphs=True, warmup=True, abort=None)
    Unset params keep the library's defaults (gpt_ctx_params_init). abort: a callable checked
    between layers and tokens; returning True stops the running call with GPT_ERR_ABORTED.
    warmup=False skips the GPU warm-up step of gpt_ctx_create (GPT_CTX_NO_WARMUP).
    One thread at a time may use a context (distinct contexts may run in parallel).
    """

    _free_name = "gpt_ctx_free"

    def __init__(self, model, **params):
        if not isinstance(model, Model):
            raise TypeError("Context needs a libgpt.Model")
        self.model = model  # keeps the model alive while the context is
        self._active = None
        p, self._abort_keep = _ctx_params(**params)
        out = c_void_p()
        _check(C.fn("gpt_ctx_create")(model._h(), byref(p), byref(out)))
        self._set_handle(out.value)
        self.max_batch = p.max_batch
        self.max_seq = p.max_seq or min(model.info.context_length, 4096)  # gpt.h: the default max_seq
        model._children.add(self)

    # -- a generation in flight owns the context
    def _acquire(self, stream):
        active = self._active() if self._active is not None else None
        if active is not None and active is not stream:
            raise RuntimeError("a generation is still running on this context: finish or close() it first")
        self._active = weakref.ref(stream)

    def _release(self, stream):
        if self._active is not None and self._active() is stream:
            self._active = None

    def _idle(self):
        active = self._active() if self._active is not None else None
        if active is not None and active._state == "running":
            raise RuntimeError("a generation is still running on this context: finish or close() it first")
        return self._h()

    def close(self):
        active = self._active() if self._active is not None else None
        if active is not None:
            active.close()
        super().close()

    def __repr__(self):
        return "<libgpt.Context %s>" % ("closed" if self.closed else "max_seq=%d, %d tokens" % (
            self.max_seq, self.seq_len()))

    # -- cache
    def seq_len(self, seq=0):
        """Tokens held in sequence seq's KV cache."""
        return int(C.fn("gpt_ctx_seq_len")(self._h(), seq))

    def reset(self):
        """Empties every sequence's cache."""
        C.fn("gpt_ctx_reset")(self._idle())

    def truncate(self, n_tokens, seq=0):
        """Shortens sequence seq's cache to n_tokens."""
        h = self._idle()
        _check(C.fn("gpt_ctx_truncate")(h, seq, n_tokens), h)

    # -- forward
    def forward(self, tokens, *, all_logits=False, logits=True, as_numpy=None):
        """Appends tokens to the cache and returns float32 logits.

        tokens: a sequence of ids (sequence 0), or a list of equally long rows (sequences 0..B-1,
        B <= max_batch). Returns the logits of each sequence's last token, [vocab] for one sequence
        or [B][vocab] for rows; with all_logits=True those of every new token, [n][vocab] or
        [B][n][vocab]. logits=False only fills the cache (returns None). A numpy.ndarray when numpy
        is installed (as_numpy=None) or as_numpy=True, else nested lists of floats."""
        h = self._idle()
        if _np is not None and isinstance(tokens, _np.ndarray):
            tokens = tokens.tolist()
        tokens = list(tokens)
        if not tokens:
            raise ValueError("forward needs at least one token")
        single = not isinstance(tokens[0], (list, tuple)) and not (
            _np is not None and isinstance(tokens[0], _np.ndarray))
        rows = [tokens] if single else [list(r) for r in tokens]
        n = len(rows[0])
        if any(len(r) != n for r in rows):
            raise ValueError("every row of tokens must have the same length")
        batch = len(rows)
        arr, _ = _int_array([t for r in rows for t in r])
        vocab = self.model.info.vocab_size
        shape = (batch, n, vocab) if all_logits else (batch, vocab)
        flags = C.GPT_FORWARD_ALL_LOGITS if all_logits else 0
        if not logits:
            _check(C.fn("gpt_forward")(h, arr, batch, n, flags, None), h)
            return None
        use_np = (_np is not None) if as_numpy is None else bool(as_numpy)
        if use_np and _np is None:
            raise RuntimeError("as_numpy=True but numpy is not installed")
        total = 1
        for d in shape:
            total *= d
        if use_np:
            out = _np.empty(shape, dtype=_np.float32)
            _check(C.fn("gpt_forward")(h, arr, batch, n, flags, out.ctypes.data_as(POINTER(c_float))), h)
            return out[0] if single else out
        buf = (c_float * total)()
        _check(C.fn("gpt_forward")(h, arr, batch, n, flags, buf), h)
        flat = list(buf)
        if all_logits:
            result = [[flat[(b * n + t) * vocab:(b * n + t + 1) * vocab] for t in range(n)] for b in range(batch)]
        else:
            result = [flat[b * vocab:(b + 1) * vocab] for b in range(batch)]
        return result[0] if single else result

    # -- generate
    def _prompt_ids(self, prompt, add_bos, parse_special):
        if isinstance(prompt, (str, bytes, bytearray)):
            ids = self.model.tokenize(prompt, add_bos=add_bos, parse_special=parse_special)
        else:
            ids = [int(t) for t in prompt]
        if not ids:
            raise ValueError("the prompt gives no tokens (generation needs at least one)")
        return ids

    def generate_tokens(self, prompt, max_tokens=128, *, add_bos=None, parse_special=False, **sampling):
        """Generates from prompt (text, or token ids) and returns a TokenStream: an iterator of
        token ids. max_tokens=None: until the context is full. Sampling keywords (unset ones keep
        gpt_sampling_params_init's defaults): temperature (<= 0: greedy), top_k, top_p, min_p,
        repetition_penalty, repetition_last_n, seed, ignore_eos, stop_tokens, stop (stop strings: a
        str or a list; the matched text and the tokens that make it are not yielded),
        frequency_penalty, presence_penalty, logit_bias ({token: bias} or [(token, bias)]),
        context_shift (past max_seq, go on from the last max_seq tokens)."""
        self._idle()
        ids = self._prompt_ids(prompt, add_bos, parse_special)
        sp, keep = _sampling_params(**sampling)
        if max_tokens is None:
            max_tokens = max(1, self.max_seq - self.seq_len() - len(ids) + 1)
        if max_tokens < 0:
            raise ValueError("max_tokens must be >= 0")
        return TokenStream(self, ids, sp, keep, int(max_tokens))

    def generate(self, prompt, max_tokens=128, *, render_special=False, add_bos=None, parse_special=False,
                 **sampling):
        """Like generate_tokens, but returns a Generation: an iterator of text pieces.

            for piece in ctx.generate("Once upon a time", max_tokens=50, temperature=0):
                print(piece, end="", flush=True)
        """
        stream = self.generate_tokens(prompt, max_tokens, add_bos=add_bos, parse_special=parse_special, **sampling)
        # The text continues the prompt: its first piece keeps its leading space.
        return Generation(stream, Detokenizer(self.model, render_special=render_special, continues=True))
