// ceilings_none.cpp - builds without CUDA measure nothing.
#include "ceilings.h"

namespace cli {
Ceilings measure_ceilings(int) { return Ceilings{}; }
} // namespace cli

namespace cli {
void *bench_device_alloc(unsigned long long) { return nullptr; }
void bench_device_free(void *) {}
} // namespace cli
