#!/usr/bin/env bash
# .ci/reliability.sh - the reliability checks of CI (docs/RELIABILITY.md), meant to be called
# by .ci/run after its build and test phases, on the same fresh Debian 12 machine (root,
# 2 cores, no GPU). Each phase runs even when an earlier one failed; the exit status is
# non-zero when any of them found something:
#   1. installs clang, libclang-rt-14-dev (libFuzzer, ASan, UBSan, TSan runtimes), make and
#      valgrind where missing;
#   2. builds the fuzz targets (tests/fuzz, clang, ASan + UBSan + libFuzzer) into build-fuzz,
#      replays every input that ever crashed one (tests/fuzz/regressions), then runs each
#      target for FUZZ_SECONDS (default 60) from its seed corpus, FUZZ_JOBS (default: cores)
#      at a time; any crash, sanitizer report, leak, timeout or broken invariant fails;
#   3. builds tests/test_threads with ThreadSanitizer (clang, build-tsan, only that test) and
#      runs it: any data race fails;
#   4. runs valgrind memcheck on `gpt generate` of models/kjv-llama.gpt for a few tokens:
#      any error or leak fails (a CPU-only build: build/ when it has no CUDA, else
#      build-valgrind).
# The ASan + UBSan run of the whole CPU suite (test_reliability and test_threads included)
# and test_convert_crash.sh (suite 'reliability') are part of .ci/run's test phases.
# About 10 minutes on 2 cores with the defaults. FUZZ_SECONDS=0 replays and runs the seed
# corpora only.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

t0=$(date +%s)
phase() { printf '\n=== [reliability %4ds] %s\n' "$(($(date +%s) - t0))" "$*"; }
failed=()
logs=$(mktemp -d "${TMPDIR:-/tmp}/reliability-logs-XXXXXX")
export FUZZ_SECONDS=${FUZZ_SECONDS:-60}
jobs=$(nproc)

phase "packages"
packages=(clang libclang-rt-14-dev make valgrind)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q && apt-get install -y -q --no-install-recommends "${missing[@]}" || failed+=(packages)
else
    echo "all present: ${packages[*]}"
fi
echo "$(clang++ --version | head -n1), $(valgrind --version), $jobs cores"

phase "fuzz targets (clang; AddressSanitizer + UndefinedBehaviorSanitizer + libFuzzer) -> build-fuzz"
if make -C tests/fuzz -j"$jobs" OUT="$PWD/build-fuzz" >"$logs/fuzz-build.log" 2>&1; then
    phase "fuzzing: regressions replayed, then ${FUZZ_SECONDS} s per target"
    rm -rf build-fuzz/work
    FUZZ_WORK="$PWD/build-fuzz/work" tests/fuzz/run.sh build-fuzz || failed+=(fuzzing)
else
    tail -n 40 "$logs/fuzz-build.log"
    failed+=(fuzz-build)
fi

phase "ThreadSanitizer: tests/test_threads (build-tsan)"
tsan_ok=1
if [ ! -d build-tsan/meson-private ]; then
    CC=clang CXX=clang++ meson setup build-tsan -Dcuda=disabled -Db_sanitize=thread -Db_lundef=false \
        -Dbuildtype=debugoptimized >"$logs/tsan-build.log" 2>&1 || tsan_ok=0
fi
if [ "$tsan_ok" = 1 ] && ninja -C build-tsan tests/test_threads >>"$logs/tsan-build.log" 2>&1; then
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 exitcode=66" build-tsan/tests/test_threads || failed+=(tsan)
else
    tail -n 40 "$logs/tsan-build.log"
    failed+=(tsan-build)
fi

phase "valgrind memcheck: gpt generate models/kjv-llama.gpt"
# valgrind needs a CPU-only binary (the CUDA runtime's own start-up is not valgrind-clean).
uses_cuda() { ldd "$1" 2>/dev/null | grep -qE 'libcudart|libcublas'; }
gpt=build/tools/gpt
if [ ! -x "$gpt" ] || uses_cuda "$gpt" || uses_cuda build/lib/libgpt.so; then
    gpt=build-valgrind/tools/gpt
    { [ -d build-valgrind/meson-private ] ||
        meson setup build-valgrind -Dcuda=disabled -Dtests=false -Dbuildtype=debugoptimized >"$logs/valgrind-build.log" 2>&1; } &&
        ninja -C build-valgrind tools/gpt >>"$logs/valgrind-build.log" 2>&1 || { tail -n 40 "$logs/valgrind-build.log"; failed+=(valgrind-build); }
fi
if [ -x "$gpt" ]; then
    valgrind --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect,possible \
        --errors-for-leak-kinds=definite,indirect,possible --track-fds=no \
        "$gpt" generate models/kjv-llama.gpt -p "In the beginning" -n 8 --threads 2 --seed 1 || failed+=(valgrind)
fi

phase "reliability summary"
if ((${#failed[@]})); then
    echo "reliability: FAILED: ${failed[*]}"
    exit 1
fi
echo "reliability: fuzzing, ThreadSanitizer and valgrind clean"
