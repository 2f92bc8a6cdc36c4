#!/usr/bin/env bash
# .ci/aarch64.sh - the aarch64 check of CI: a cross build of the CPU backend for plain aarch64
# Linux (cross/aarch64-linux.ini: GNU cross compilers, -Dcuda=disabled) whose tests run under
# user-mode qemu, so the NEON paths of lib/backend/cpu/cpu_ops.cpp and cpu_quant.cpp are held to the same
# double-precision reference as the x86 paths (tests/test_model.cpp). Run as root from any
# directory on a fresh Debian 12 x86_64 machine (2 cores, no GPU; an nvcc there is ignored);
# called by .ci/run after its sanitizer tests. On the 2-core development machine: 144 s from
# no packages (their 128 MB already downloaded) to the end, 124 s with them installed:
#   1. installs what is missing: g++-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user-static
#      (qemu-aarch64-static) and, after `dpkg --add-architecture arm64`, zlib1g-dev:arm64 and
#      libcmocka-dev:arm64 from Debian's own repositories;
#   2. configures build-aarch64 with the cross file (once) and builds everything in it;
#   3. runs the CPU tests with `meson test`: the cross file's exe_wrapper runs each test binary
#      under `qemu-aarch64-static -L /usr/aarch64-linux-gnu` (-L is QEMU_LD_PREFIX);
#   4. runs the tests that start the `gpt` command themselves (test_cli.py, test_convert's
#      command test, test_convert_crash.sh) with a script that runs it under qemu.
# Threads: the tests pick their own counts (test_model runs 1, 2 and 3 worker threads,
# test_threads 1-2 per context with contexts in parallel); they pass under qemu 7.2. What hung
# before (JETSON.md's old recipe: `gpt generate` with 2 threads never finished, 1 thread did;
# here also header_c99, spinning in a thrown exception) was a mixed C library: QEMU_LD_PREFIX
# gives the cross toolchain's loader, while zlib1g:arm64 installs Debian's libc6:arm64, a
# different glibc build that the loader then found first. The exe_wrapper's -E LD_LIBRARY_PATH
# makes libc come from the toolchain too.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

t0=$(date +%s)
phase() { printf '\n=== [aarch64 %4ds] %s\n' "$(($(date +%s) - t0))" "$*"; }
build=build-aarch64

phase "packages"
# Host tools (the build tools are .ci/run's; listed so the script also runs alone) and the
# target's libraries (arch-qualified: `dpkg -s zlib1g-dev` is ambiguous once both are there).
packages=(g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static meson ninja-build pkg-config python3
          nlohmann-json3-dev unicode-data zlib1g-dev:arm64 libcmocka-dev:arm64)
missing=()
for p in "${packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "installing: ${missing[*]}"
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        dpkg --add-architecture arm64
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
else
    echo "all present: ${packages[*]}"
fi
echo "$(aarch64-linux-gnu-g++ --version | head -n1); $(qemu-aarch64-static --version | head -n1)"

phase "configure ($build: cross/aarch64-linux.ini, CPU only)"
if [ ! -d "$build/meson-private" ]; then
    meson setup "$build" --cross-file cross/aarch64-linux.ini
fi

phase "build"
ninja -C "$build" -j "$(nproc)"

phase "tests under qemu-aarch64-static (meson test; exe_wrapper from the cross file)"
# The cmocka tests, the public header's C/C++ tests and the export check. Not the bindings
# suite (a native python3 or cargo cannot load an aarch64 libgpt), and not the tests that run
# the aarch64 `gpt` binary themselves: without binfmt_misc (absent in containers) the kernel
# cannot exec it, so they run below through a wrapper instead.
meson test -C "$build" --no-rebuild --print-errorlogs \
    model api sampler format tokenizer shipped_model threads reliability scaling cpu_quant quant \
    header_c99 header_cpp11 header_cpp17 exports

phase "tests that run the gpt command (cli, convert, convert_crash), through a qemu wrapper"
# A script standing in for the aarch64 `gpt` binary: the cross file's exe_wrapper, then gpt.
qemu=(qemu-aarch64-static -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib)
gpt_qemu="$PWD/$build/gpt-qemu"
printf '#!/bin/sh\nexec %s %q "$@"\n' "${qemu[*]}" "$PWD/$build/tools/gpt" >"$gpt_qemu"
chmod +x "$gpt_qemu"
python3 tests/test_cli.py "$gpt_qemu"
GPT_TOOL="$gpt_qemu" GPT_TEST_DATA_DIR="$PWD/tests/data" "${qemu[@]}" "$build/tests/test_convert"
bash tests/test_convert_crash.sh "$gpt_qemu"

phase "done"
