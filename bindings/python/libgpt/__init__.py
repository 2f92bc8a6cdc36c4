"""libgpt: GPT-2 and Llama-family inference through libgpt's C ABI (ctypes, no compiler needed).

    import libgpt

    with libgpt.Model("model.gpt", device="cpu") as model:
        ctx = model.context(max_seq=512)
        for piece in ctx.generate("In the beginning", max_tokens=40, temperature=0):
            print(piece, end="", flush=True)

The shared library is found through, in order: the GPT_LIBRARY environment variable (a path to
libgpt.so), the library installed next to this package by `meson install`, the system's
library search path (libgpt.so.0), and, when the package is used from a source checkout, the
checkout's build/lib. See docs/BINDINGS.md.
"""

from ._api import (Context, DeviceInfo, Detokenizer, Generation, GptError, Model, ModelInfo, Status, TokenStream,
                   build_info, cuda_device_count, device_info, library_path, status_name, version, version_number)
from ._capi import LibraryNotFoundError, load as load_library

__version__ = "0.6.0"

__all__ = ["Model", "Context", "Detokenizer", "Generation", "TokenStream", "ModelInfo", "GptError", "Status",
           "LibraryNotFoundError", "load_library", "library_path", "version", "version_number", "build_info",
           "cuda_device_count", "device_info", "DeviceInfo", "status_name", "__version__"]
