// moe_stream.cuh - the gate|up expert GEMV of a one-row decode step (batch 1) with its
// weights streamed through shared memory (moe_stream.cu). moe.cu's launch_moe_gate_up takes
// it where it applies and its own kernel otherwise; the results are the same sums in the same
// order, bit for bit.
//
// Why (PERFORMANCE entry 57): moe.cu's kernel holds its loads in flight in registers and runs
// in two waves of short blocks, reading the experts well under the copy ceiling. Here one wave
// of resident blocks walks the step's rows, each warp keeping a ring of rows in flight with
// bulk copies (TMA, sm_90). The same ring for the down projection measured slower than
// moe.cu's down kernel, which starts its loads before gate_up ends, so down stays there.
#pragma once
#include "moe.cuh"

// Whether the kernel exists for this device (code built for sm_90 or newer) and is on
// (GPT_MOE_STREAM=0 turns it off: a switch for A/B runs).
bool moe_stream_available();
// Whether it takes this step: available, one row, F16 or BF16 weights (not quantized), d_model
// a multiple of 8 with 16-byte aligned weights and x, and rows of 97-256 16-byte vectors
// (d_model 776-2048).
bool moe_stream_gate_up_supported(const MoeExpertArgs &a);

// As launch_moe_gate_up, for steps the check above accepts; cudaErrorNotSupported (nothing
// launched) where the device's shared memory holds no ring of two rows, so the caller takes
// its own kernel.
cudaError_t launch_moe_gate_up_stream(const MoeExpertArgs &a, cudaStream_t stream);
