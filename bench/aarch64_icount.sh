#!/usr/bin/env bash
# bench/aarch64_icount.sh - guest instructions executed by the CPU backend's kernels on aarch64,
# counted under qemu (not a speed measurement: qemu's time says nothing about a real core).
#
#   bench/aarch64_icount.sh OLD_REV      # e.g. the commit before the NEON paths
#
# Compiles lib/backend/cpu/cpu_ops.cpp of OLD_REV and of the working tree with the aarch64 cross
# compiler (-O3, as the release build), each into a static driver that runs one kernel call,
# and runs it under `qemu-aarch64-static -d in_asm,exec,nochain`: every executed translation
# block is logged, and the sum of their guest instruction counts, minus a run that stops just
# before the call, is what the call executed. Needs what .ci/aarch64.sh installs.
# Shapes: matmul_block with 64 outputs of k = 2048 (1 row: decode; 8 rows: prefill) in f32, f16
# and bf16; attend with head_dim 64 over 512 keys.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
old=${1:?usage: bench/aarch64_icount.sh OLD_REV}
dir=$(mktemp -d "${TMPDIR:-/tmp}/icount-XXXXXX")
trap 'rm -rf "$dir"' EXIT

git show "$old:lib/backend/cpu/cpu_ops.cpp" >"$dir/ops_old.cpp"
cp lib/backend/cpu/cpu_ops.cpp "$dir/ops_new.cpp"
cat >"$dir/driver.cpp" <<'CPP'
#include "backend/cpu/cpu_ops.h"
#include "core/half.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
using namespace gpt;
int main(int argc, char **argv) { // driver OP ROWS [skip]
    const char *op = argv[1];
    const uint32_t rows = (uint32_t)atoi(argv[2]);
    const bool is_f32 = !strcmp(op, "f32"), is_bf16 = !strcmp(op, "bf16");
    const uint64_t k = 2048, n_out = 64, hd = 64, n_keys = 512;
    std::vector<float> x(8 * k), wf(n_out * k), y(8 * n_out), scratch(k);
    std::vector<uint16_t> wh(n_out * k);
    for (uint64_t i = 0; i < x.size(); i++) x[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (uint64_t i = 0; i < wf.size(); i++) {
        wf[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
        wh[i] = is_bf16 ? f32_to_bf16(wf[i]) : f32_to_f16(wf[i]);
    }
    std::vector<float> q(x.begin(), x.begin() + hd), kc(n_keys * hd), vc(n_keys * hd), sc(n_keys), out(hd);
    for (uint64_t i = 0; i < kc.size(); i++) kc[i] = wf[i % wf.size()], vc[i] = x[i % x.size()];
    if (argc > 3) return 0;
    if (!strcmp(op, "attend")) {
        cpu::attend(q.data(), kc.data(), vc.data(), n_keys, hd, 0.125f, sc.data(), out.data());
        return out[0] == 12345.0f;
    }
    const Weight w{is_f32 ? (const void *)wf.data() : wh.data(), is_f32 ? DType::F32 : is_bf16 ? DType::BF16 : DType::F16,
                   n_out, k};
    cpu::matmul_block(x.data(), rows, w, nullptr, 0, n_out, y.data(), n_out, scratch.data());
    return y[0] == 12345.0f;
}
CPP
cat >"$dir/count.py" <<'PY'
import re, sys
size, total, cur, n = {}, 0, None, 0
trace = re.compile(r'^Trace \d+: \S+ \[[0-9a-f]+/([0-9a-f]+)/')
for line in open(sys.argv[1], errors='replace'):
    if line.startswith('IN:'):
        cur, n = None, 0
    elif line.startswith('0x') and cur is not False:
        cur = int(line.split(':')[0], 16) if cur is None else cur
        n += 1
    elif not line.strip() and cur:
        size[cur], cur = n, False
    elif (m := trace.match(line)):
        total += size.get(int(m.group(1), 16), 0)
print(total)
PY
for v in old new; do
    aarch64-linux-gnu-g++ -std=c++17 -O3 -DNDEBUG -static -Ilib -Iinclude "$dir/driver.cpp" "$dir/ops_$v.cpp" -o "$dir/$v"
done
count() { qemu-aarch64-static -d in_asm,exec,nochain -D "$dir/log" "$@" && python3 "$dir/count.py" "$dir/log"; }
printf '%-22s %14s %14s %8s\n' "kernel" "$old" "working tree" "old/new"
for c in "f32 1" "f16 1" "bf16 1" "f32 8" "f16 8" "bf16 8" "attend 1"; do
    set -- $c
    r=()
    for v in old new; do r+=($(($(count "$dir/$v" "$1" "$2") - $(count "$dir/$v" "$1" "$2" skip)))); done
    label=$([ "$1" = attend ] && echo "attend 64 x 512 keys" || echo "matmul $1, $2 row(s)")
    printf '%-22s %14d %14d %8.2f\n' "$label" "${r[0]}" "${r[1]}" "$(python3 -c "print(${r[0]} / ${r[1]})")"
done
