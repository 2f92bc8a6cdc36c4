"""The C ABI of libgpt (include/gpt.h) in ctypes: finding the shared library, the params
structs mirrored field by field, and argtypes/restype for every function.

Nothing here is public API; libgpt/__init__.py wraps it. Keep this file in step with gpt.h:
tests/test_libgpt.py checks that every function the header declares is declared here and
that every struct's layout matches the C compiler's.
"""

import ctypes
import ctypes.util
import os
import sys
import threading
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_float, c_int, c_int32, c_size_t, c_uint32,
                    c_uint64, c_void_p)
from pathlib import Path

# The soname's major version this package speaks (GPT_VERSION_MAJOR of the header it mirrors).
ABI_MAJOR = 0

# ------------------------------------------------------------------ constants (gpt.h)
GPT_DEVICE_CPU = -1
GPT_DEVICE_AUTO = -2

GPT_MODEL_SKIP_CHECKSUMS = 0x1
GPT_MODEL_NO_MMAP = 0x2
GPT_MODEL_COPY_BUFFER = 0x4
GPT_MODEL_HOST_WEIGHTS = 0x8
GPT_MODEL_DEVICE_WEIGHTS = 0x10

GPT_MODEL_INFO_TIED_HEAD = 0x1
GPT_MODEL_INFO_QKV_BIAS = 0x2
GPT_MODEL_INFO_HAS_TOKENIZER = 0x4
GPT_MODEL_INFO_HOST_WEIGHTS = 0x8

GPT_CTX_ALLOW_TF32 = 0x1
GPT_CTX_NO_GRAPHS = 0x2
GPT_CTX_NO_WARMUP = 0x4

GPT_FORWARD_ALL_LOGITS = 0x1

GPT_SAMPLING_IGNORE_EOS = 0x1
GPT_SAMPLING_CONTEXT_SHIFT = 0x2
GPT_MAX_STOP_STRINGS = 16
GPT_MAX_STOP_STRING_BYTES = 256
GPT_MAX_LOGIT_BIAS = 1024

GPT_CHAT_ADD_GENERATION_PROMPT = 0x1

GPT_TOKENIZE_ADD_BOS = 0x1
GPT_TOKENIZE_NO_BOS = 0x2
GPT_TOKENIZE_PARSE_SPECIAL = 0x4

GPT_DETOKENIZE_RENDER_SPECIAL = 0x1
GPT_DETOKENIZE_CONTINUE = 0x2

GPT_DTYPE_AUTO, GPT_DTYPE_F32, GPT_DTYPE_F16, GPT_DTYPE_BF16 = 0, 1, 2, 3
GPT_DTYPE_Q8, GPT_DTYPE_Q4 = 4, 5  # weight-only quantized files (gpt_model_info)
GPT_ARCH_GPT2, GPT_ARCH_LLAMA, GPT_ARCH_QWEN3, GPT_ARCH_PHI3 = 1, 2, 3, 4
GPT_ARCH_GEMMA2, GPT_ARCH_GEMMA3 = 5, 6
GPT_ARCH_MIXTRAL, GPT_ARCH_QWEN2_MOE, GPT_ARCH_OLMOE, GPT_ARCH_QWEN3_MOE = 7, 8, 9, 10

GPT_OK = 0
GPT_ERR_BUFFER_TOO_SMALL = -11


# ------------------------------------------------------------------ structs
class gpt_model_params(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("device", c_int32),
        ("weight_dtype", c_uint32),
        ("flags", c_uint32),
    ]


class gpt_model_info(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("arch", c_uint32),
        ("n_layers", c_uint32),
        ("d_model", c_uint32),
        ("n_heads", c_uint32),
        ("n_kv_heads", c_uint32),
        ("head_dim", c_uint32),
        ("d_ff", c_uint32),
        ("vocab_size", c_uint32),
        ("context_length", c_uint32),
        ("file_dtype", c_uint32),
        ("weight_dtype", c_uint32),
        ("device", c_int32),
        ("bos_token", c_int32),
        ("eos_token", c_int32),
        ("flags", c_uint32),
        ("norm_eps", c_float),
        ("rope_theta", c_float),
        ("n_params", c_uint64),
        ("host_bytes", c_uint64),
        ("device_bytes", c_uint64),
        ("name", c_char * 64),
        ("n_experts", c_uint32),
        ("n_experts_used", c_uint32),
        ("d_ff_expert", c_uint32),
        ("d_ff_shared", c_uint32),
        ("n_active_params", c_uint64),
    ]


class gpt_device_info(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("device", c_int32),
        ("integrated", c_uint32),
        ("pageable_access", c_uint32),
        ("host_mapped", c_uint32),
        ("cc_major", c_uint32),
        ("cc_minor", c_uint32),
        ("multiprocessors", c_uint32),
        ("total_bytes", c_uint64),
        ("available_bytes", c_uint64),
        ("name", c_char * 128),
    ]


gpt_abort_fn = CFUNCTYPE(c_int, c_void_p)
gpt_token_fn = CFUNCTYPE(c_int, c_int32, c_void_p)


class gpt_ctx_params(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("max_batch", c_uint32),
        ("max_seq", c_uint32),
        ("max_step_tokens", c_uint32),
        ("compute_dtype", c_uint32),
        ("kv_dtype", c_uint32),
        ("n_threads", c_uint32),
        ("flags", c_uint32),
        ("abort_fn", gpt_abort_fn),
        ("abort_user", c_void_p),
    ]


class gpt_logit_bias(Structure):
    _fields_ = [("token", c_int32), ("bias", c_float)]


class gpt_chat_message(Structure):
    _fields_ = [("role", c_char_p), ("content", c_char_p)]


class gpt_sampling_params(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("temperature", c_float),
        ("top_k", c_uint32),
        ("top_p", c_float),
        ("min_p", c_float),
        ("repetition_penalty", c_float),
        ("repetition_last_n", c_uint32),
        ("flags", c_uint32),
        ("seed", c_uint64),
        ("stop_tokens", POINTER(c_int32)),
        ("n_stop_tokens", c_uint32),
        ("reserved", c_uint32),
        ("stop_strings", POINTER(c_char_p)),
        ("n_stop_strings", c_uint32),
        ("frequency_penalty", c_float),
        ("presence_penalty", c_float),
        ("n_logit_bias", c_uint32),
        ("logit_bias", POINTER(gpt_logit_bias)),
    ]


STRUCTS = {
    "gpt_model_params": gpt_model_params,
    "gpt_model_info": gpt_model_info,
    "gpt_device_info": gpt_device_info,
    "gpt_ctx_params": gpt_ctx_params,
    "gpt_sampling_params": gpt_sampling_params,
    "gpt_logit_bias": gpt_logit_bias,
    "gpt_chat_message": gpt_chat_message,
}

# ------------------------------------------------------------------ functions
_handle = c_void_p  # gpt_model *, gpt_ctx *, gpt_detokenizer *: opaque
_status = c_int
_i32p = POINTER(c_int32)
_u32p = POINTER(c_uint32)
_u64p = POINTER(c_uint64)
_sizep = POINTER(c_size_t)
_charp = POINTER(c_char)  # output byte buffers (not NUL-terminated strings)

# name -> (restype, argtypes); every function gpt.h declares.
FUNCTIONS = {
    "gpt_version": (c_uint32, []),
    "gpt_version_string": (c_char_p, []),
    "gpt_build_info": (c_char_p, []),
    "gpt_status_str": (c_char_p, [c_int]),
    "gpt_last_error": (c_char_p, []),
    "gpt_dtype_name": (c_char_p, [c_int]),
    "gpt_arch_name": (c_char_p, [c_int]),
    "gpt_cuda_device_count": (c_int, []),
    "gpt_device_get_info": (_status, [c_int32, POINTER(gpt_device_info)]),
    "gpt_model_params_init": (None, [POINTER(gpt_model_params)]),
    "gpt_model_load": (_status, [c_char_p, POINTER(gpt_model_params), POINTER(_handle)]),
    "gpt_model_load_from_memory": (_status, [c_void_p, c_size_t, POINTER(gpt_model_params), POINTER(_handle)]),
    "gpt_model_free": (None, [_handle]),
    "gpt_model_get_info": (_status, [_handle, POINTER(gpt_model_info)]),
    "gpt_model_get_eos_tokens": (_status, [_handle, _i32p, c_uint32, _u32p]),
    "gpt_ctx_params_init": (None, [POINTER(gpt_ctx_params)]),
    "gpt_ctx_estimate_memory": (_status, [_handle, POINTER(gpt_ctx_params), _u64p, _u64p]),
    "gpt_ctx_create": (_status, [_handle, POINTER(gpt_ctx_params), POINTER(_handle)]),
    "gpt_ctx_free": (None, [_handle]),
    "gpt_ctx_reset": (None, [_handle]),
    "gpt_ctx_seq_len": (c_uint32, [_handle, c_uint32]),
    "gpt_ctx_truncate": (_status, [_handle, c_uint32, c_uint32]),
    "gpt_ctx_last_error": (c_char_p, [_handle]),
    "gpt_forward": (_status, [_handle, _i32p, c_uint32, c_uint32, c_uint32, POINTER(c_float)]),
    "gpt_sampling_params_init": (None, [POINTER(gpt_sampling_params)]),
    "gpt_generate": (_status, [_handle, _i32p, c_uint32, POINTER(gpt_sampling_params), gpt_token_fn, c_void_p,
                               _i32p, c_uint32, _u32p]),
    "gpt_tokenize": (_status, [_handle, c_char_p, c_size_t, c_uint32, _i32p, c_uint32, _u32p]),
    "gpt_detokenize": (_status, [_handle, _i32p, c_uint32, c_uint32, _charp, c_size_t, _sizep]),
    "gpt_token_to_piece": (_status, [_handle, c_int32, c_uint32, _charp, c_size_t, _sizep]),
    "gpt_detokenizer_create": (_status, [_handle, c_uint32, POINTER(_handle)]),
    "gpt_detokenizer_free": (None, [_handle]),
    "gpt_detokenizer_push": (_status, [_handle, c_int32, _charp, c_size_t, _sizep]),
    "gpt_detokenizer_flush": (_status, [_handle, _charp, c_size_t, _sizep]),
    "gpt_chat_apply_template": (_status, [_handle, POINTER(gpt_chat_message), c_size_t, c_uint32, _charp, c_size_t,
                                          _sizep]),
}


# ------------------------------------------------------------------ finding the library
class LibraryNotFoundError(OSError):
    """libgpt's shared library could not be found or loaded."""


def _lib_names():
    if sys.platform == "darwin":
        return ["libgpt.%d.dylib" % ABI_MAJOR, "libgpt.dylib"]
    if sys.platform == "win32":
        return ["gpt-%d.dll" % ABI_MAJOR, "gpt.dll", "libgpt.dll"]
    return ["libgpt.so.%d" % ABI_MAJOR, "libgpt.so"]


def _source_tree_build_dirs():
    """build/lib of the source checkout this package sits in (bindings/python/libgpt/)."""
    root = Path(__file__).resolve().parents[3]
    if not (root / "include" / "gpt.h").is_file():
        return []
    return [root / "build" / "lib"]


def candidates():
    """Where the library is looked for, in order: (description, path or name)."""
    out = []
    env = os.environ.get("GPT_LIBRARY")
    if env:
        out.append(("GPT_LIBRARY", env))
        return out  # an explicit choice: no silent fallback to another build
    try:
        from . import _build_config  # written by `meson install`
        for name in _lib_names():
            out.append(("installed (meson install)", os.path.join(_build_config.LIBDIR, name)))
    except ImportError:
        pass
    for name in _lib_names():
        out.append(("system search path", name))
    found = ctypes.util.find_library("gpt")
    if found:
        out.append(("ctypes.util.find_library", found))
    for d in _source_tree_build_dirs():
        for name in _lib_names():
            out.append(("source tree build", str(d / name)))
    return out


_lock = threading.Lock()
_lib = None
_lib_path = None
_missing = set()


def _declare(lib):
    for name, (restype, argtypes) in FUNCTIONS.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            _missing.add(name)  # an older library: calling it raises a clear error
            continue
        fn.restype = restype
        fn.argtypes = argtypes


def load(path=None):
    """Loads the shared library (once) and returns the ctypes.CDLL. path overrides the search."""
    global _lib, _lib_path
    with _lock:
        if _lib is not None and path is None:
            return _lib
        tried = []
        choices = [("argument", path)] if path else candidates()
        for how, where in choices:
            if os.sep in str(where) and not os.path.exists(where):
                tried.append("%s: %s (no such file)" % (how, where))
                continue
            try:
                lib = ctypes.CDLL(str(where))
            except OSError as e:
                tried.append("%s: %s (%s)" % (how, where, e))
                continue
            if not hasattr(lib, "gpt_version"):
                tried.append("%s: %s (not libgpt)" % (how, where))
                continue
            _declare(lib)
            major = lib.gpt_version() // 10000
            if major != ABI_MAJOR:
                tried.append("%s: %s (ABI version %d, this package needs %d)" % (how, where, major, ABI_MAJOR))
                continue
            _lib, _lib_path = lib, str(where)
            return lib
        raise LibraryNotFoundError(
            "libgpt's shared library was not found; set GPT_LIBRARY to the path of libgpt.so, install the "
            "library (meson install), or build it in the source tree (meson setup build && ninja -C build). "
            "Tried:\n  " + "\n  ".join(tried))


def lib():
    return _lib if _lib is not None else load()


def library_path():
    """The path or name the library was loaded from."""
    lib()
    return _lib_path


def fn(name):
    """The declared function, or an error naming what is missing (an older library)."""
    l = lib()
    if name in _missing:
        raise AttributeError("%s is not exported by %s: the library is older than this package" % (name, _lib_path))
    return getattr(l, name)


def init_struct(cls, init_name):
    """A params struct filled by the library's *_init function. The library may be newer (a larger
    struct): it writes into a buffer with room to spare, and struct_size is then set to what this
    package knows, so the library reads only the fields mirrored here."""
    size = ctypes.sizeof(cls)
    buf = ctypes.create_string_buffer(size + 1024)
    fn(init_name)(ctypes.cast(buf, POINTER(cls)))
    s = cls.from_buffer_copy(buf.raw[:size])
    s.struct_size = min(s.struct_size, size) if s.struct_size else size
    return s
