// library.cpp - library-wide facts, from the backends and the table of architectures.
#include "runtime/library.h"

#include "backend/backend.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/system_memory.h"
#include "model/arch.h"
#include "runtime/memory_fit.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>

namespace gpt {

const char *backends_info() { return cuda_build_info(); }
int gpu_count() { return cuda_device_count(); }
gpt_device_info device_info(int32_t device) {
    if (device == GPT_DEVICE_AUTO) device = cuda_device_count() > 0 ? 0 : GPT_DEVICE_CPU;
    if (device < 0 && device != GPT_DEVICE_CPU)
        fail(GPT_ERR_INVALID_ARG, "device %d is not a CUDA ordinal, GPT_DEVICE_CPU or GPT_DEVICE_AUTO", device);
    gpt_device_info info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    info.device = device;
    std::string name = "cpu";
    if (device == GPT_DEVICE_CPU) {
        info.multiprocessors = std::thread::hardware_concurrency();
        info.total_bytes = host_total_bytes();
        info.available_bytes = host_available_bytes();
    } else {
        const DeviceFacts f = cuda_device_facts(device);
        name = f.name;
        info.integrated = f.integrated;
        info.pageable_access = f.pageable_access;
        info.host_mapped = f.host_mapped;
        info.cc_major = f.cc_major;
        info.cc_minor = f.cc_minor;
        info.multiprocessors = f.multiprocessors;
        info.total_bytes = f.total_bytes;
        MemoryAvailable have;
        have.host_bytes = host_available_bytes();
        have.device_bytes = f.free_bytes;
        have.shared = f.integrated;
        info.available_bytes = available_bytes(have);
    }
    std::memcpy(info.name, name.data(), std::min(name.size(), sizeof info.name - 1));
    return info;
}

const char *architecture_name(int arch) { return arch_to_name(arch); }

const char *dtype_code_name(uint32_t code) {
    if (code == GPT_DTYPE_AUTO) return "auto";
    return is_dtype(code) ? dtype_name(static_cast<DType>(code)) : "?";
}

} // namespace gpt
