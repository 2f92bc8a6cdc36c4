#!/usr/bin/env bash
# bench/footprint.sh [--max-lib-bytes N] BUILD_DIR [BUILD_DIR2] - what a build costs an
# embedding program, from a build tree (no install needed):
#   - libgpt.so stripped (strip --strip-all of a copy), its device code (the .nv_fatbin
#     section, `size -A`) and the CUDA archs in it (cuobjdump --list-elf/--list-ptx when the
#     toolkit has it, else read from the fatbin headers with python3),
#   - the `gpt` tool stripped,
#   - max RSS and wall time of
#       gpt generate models/kjv-llama.gpt -p "And God said" -n 16 --device cpu --seed 1
#     (RSS from GNU time, else python3's getrusage; one untimed run first, then the fastest
#     of 3, wall time in ms), and the CUDA libraries that run loads (LD_DEBUG=files; none with
#     the default -Dcuda-runtime=lazy or static, libcudart with shared).
# Given a second build dir (e.g. a CPU-only and a CUDA-enabled one) it prints both side by side.
#
# --max-lib-bytes N: exit 1 when a given build's stripped libgpt.so is larger than N bytes
# (CI: the one-arch CUDA build with its PTX and the runtime opened lazily, N = 1566720 =
# 1.49 MiB, 5% over the 1 492 160 bytes it had when set; 1 492 208 on 2026-11-26 with the
# tensor-core quantized GEMV and last_rows.cu, 1 500 400 with the one-kernel sampler,
# 1 409 080 with the sampler's select by mass in place of CUB's device sort, 1 425 464
# with the top_k found by many blocks, 1 417 248 once the q/k norm kernel went into rope_append,
# 1 421 344 with the folded crc32, 1 433 632 with the CPU's prefill tiles, 1 454 112 with
# the MoE router's folded norm, 1 478 712 with the streamed MoE gate|up, 1 458 232 with
# stream-i8 in place of the one-row f32-staged quantized GEMV, 1 462 328 with its folded RMSNorm,
# 1 470 552 with its cluster staging, 1 499 248 with the short-context attention kernel, 1 540 208
# with the tensor-core prompt attention for every cache type and head_dim 96, 1 556 592 with its
# split-keys mode for an f16 cache;
# -Dcuda-ptx=false took it to 1 103 064 before that). Exit 2
# on a usage error.
# Environment: STRIP (default strip), GPT_FOOTPRINT_RUNS (timed runs, default 3).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() { sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }

max_lib=""
dirs=()
while (($#)); do
    case "$1" in
        --max-lib-bytes)
            [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+$ ]] || { echo "footprint: --max-lib-bytes takes a number of bytes" >&2; exit 2; }
            max_lib=$2; shift 2 ;;
        --max-lib-bytes=*)
            max_lib=${1#*=}; [[ "$max_lib" =~ ^[0-9]+$ ]] || { echo "footprint: --max-lib-bytes takes a number of bytes" >&2; exit 2; }
            shift ;;
        -h | --help) usage 0 ;;
        -*) echo "footprint: unknown option $1" >&2; usage ;;
        *) dirs+=("$1"); shift ;;
    esac
done
((${#dirs[@]} >= 1 && ${#dirs[@]} <= 2)) || usage
runs=${GPT_FOOTPRINT_RUNS:-3}
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "footprint: GPT_FOOTPRINT_RUNS must be a number >= 1" >&2; exit 2; }
strip_cmd=${STRIP:-strip}
model="$root/models/kjv-llama.gpt"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mib() { awk -v b="$1" 'BEGIN { printf "%d (%.2f MiB)", b, b / 1048576 }'; }
stripped_size() { # FILE -> bytes of a stripped copy, or empty
    "$strip_cmd" --strip-all -o "$tmp/stripped" "$1" 2>/dev/null && stat -c %s "$tmp/stripped" && rm -f "$tmp/stripped"
}
fatbin_archs() { # LIB -> "sm_90 ptx:compute_90", from cuobjdump or from the fatbin headers
    local lib=$1 elf ptx cuobjdump
    cuobjdump=$(command -v cuobjdump || true)
    [ -z "$cuobjdump" ] && [ -x /usr/local/cuda/bin/cuobjdump ] && cuobjdump=/usr/local/cuda/bin/cuobjdump
    if [ -n "$cuobjdump" ]; then
        elf=$("$cuobjdump" --list-elf "$lib" 2>/dev/null | grep -o 'sm_[0-9]*[a-z]\{0,1\}' | sort -u | paste -sd ' ' - || true)
        ptx=$("$cuobjdump" --list-ptx "$lib" 2>/dev/null | grep -o 'sm_[0-9]*[a-z]\{0,1\}' | sort -u | sed 's/^sm_/ptx:compute_/' |
              paste -sd ' ' - || true)
        echo "$elf $ptx (cuobjdump)"
        return
    fi
    command -v python3 >/dev/null 2>&1 && command -v objcopy >/dev/null 2>&1 || { echo "unknown (no cuobjdump, python3 or objcopy)"; return; }
    objcopy -O binary --only-section=.nv_fatbin "$lib" "$tmp/fatbin" 2>/dev/null || { echo "unknown"; return; }
    # Fatbin container: header {u32 magic 0xBA55ED50, u16 version, u16 header size, u64 size},
    # then entries {u16 kind (1 PTX, 2 ELF), u16, u32 header size, u64 size, ..., u32 arch at 28}.
    python3 - "$tmp/fatbin" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
elf, ptx, off = set(), set(), 0
while off + 16 <= len(d):
    magic, _, hsz, size = struct.unpack_from("<IHHQ", d, off)
    if magic != 0xBA55ED50:
        off += 8
        continue
    p, end = off + hsz, off + hsz + size
    while p + 32 <= end:
        kind, _, ehs, esize = struct.unpack_from("<HHIQ", d, p)
        arch = struct.unpack_from("<I", d, p + 28)[0]
        (ptx if kind == 1 else elf).add(arch)
        if ehs == 0:
            break
        p += ehs + esize
    off = max(end, off + 8)
print(" ".join(["sm_%d" % a for a in sorted(elf)] + ["ptx:compute_%d" % a for a in sorted(ptx)]) + " (fatbin headers)")
PY
}
measure_run() { # GPT -> "max_rss_kib wall_ms" of the fastest of $runs runs (after one untimed run)
    local gpt=$1 best="" i line t0 t1
    local cmd=("$gpt" generate "$model" -p "And God said" -n 16 --device cpu --seed 1)
    "${cmd[@]}" >/dev/null 2>&1 || { echo "failed"; return; }
    for ((i = 0; i < runs; i++)); do
        if [ -x /usr/bin/time ] && /usr/bin/time -f '%M' -o "$tmp/time" true 2>/dev/null; then
            t0=$(date +%s%N)
            /usr/bin/time -f '%M' -o "$tmp/time" "${cmd[@]}" >/dev/null 2>&1 || { echo "failed"; return; }
            t1=$(date +%s%N)
            line="$(tail -n1 "$tmp/time") $(((t1 - t0) / 1000000))"
        elif command -v python3 >/dev/null 2>&1; then
            line=$(python3 -c '
import resource, subprocess, sys, time
t = time.monotonic()
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
w = time.monotonic() - t
if r.returncode: sys.exit(1)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, int(w * 1000))' "${cmd[@]}") || { echo "failed"; return; }
        else
            echo "unmeasured (no GNU time or python3)"; return
        fi
        # The fastest run (RSS barely moves between runs).
        if [ -z "$best" ] || ((${line#* } < ${best#* })); then best=$line; fi
    done
    echo "$best"
}

cuda_libs_loaded() { # GPT -> the CUDA libraries (libcudart, libcuda, libcublas...) the CPU run loads, or "none"
    local libs
    libs=$(LD_DEBUG=files "$1" generate "$model" -p "And God said" -n 16 --device cpu --seed 1 2>&1 >/dev/null |
           grep -o 'file=lib\(cudart\|cuda\|cublas\|nv\)[^ ]*' | sed 's/^file=//' | sort -u | paste -sd ' ' - || true)
    echo "${libs:-none}"
}

declare -A val
status=0
for d in "${dirs[@]}"; do
    lib=$(find "$d/lib" -maxdepth 1 -name 'libgpt.so.*' -type f 2>/dev/null | sort | tail -n1)
    config=$(awk '/^libgpt [0-9]/ { on = 1 } on && /CUDA backend/ { sub(/.*: */, ""); print; exit }' "$d/meson-logs/meson-log.txt" 2>/dev/null || true)
    val[$d,config]="CUDA backend: ${config:-?}"
    if [ -z "$lib" ]; then
        echo "footprint: no $d/lib/libgpt.so.* (build it: ninja -C $d)" >&2
        status=1
        val[$d,lib]="missing"
    fi
    size=""
    [ -n "$lib" ] && val[$d,lib]=$(basename "$lib") && size=$(stripped_size "$lib" || true)
    if [ -z "$lib" ]; then
        :
    elif [ -z "$size" ]; then
        val[$d,libsize]="? ($strip_cmd failed: set STRIP for a cross build)"
    else
        val[$d,libsize]=$(mib "$size")
        if [ -n "$max_lib" ] && ((size > max_lib)); then
            echo "footprint: FAIL: $lib stripped is $size bytes, over --max-lib-bytes $max_lib" >&2
            status=1
        fi
    fi
    fat=""
    [ -n "$lib" ] && fat=$(size -A "$lib" 2>/dev/null | awk '$1 == ".nv_fatbin" { print $2 }')
    if [ -z "$lib" ]; then
        :
    elif [ -n "$fat" ]; then
        val[$d,fatbin]=$(mib "$fat")
        val[$d,archs]=$(fatbin_archs "$lib")
    else
        val[$d,fatbin]="none"
        val[$d,archs]="none (no device code)"
    fi
    tool="$d/tools/gpt"
    if [ -x "$tool" ]; then
        tsize=$(stripped_size "$tool" || true)
        val[$d,tool]=$(mib "${tsize:-0}")
        r=$(measure_run "$tool")
        if [[ "$r" =~ ^[0-9]+\ [0-9]+$ ]]; then
            val[$d,rss]=$(awk -v k="${r% *}" 'BEGIN { printf "%.1f MiB", k / 1024 }')
            val[$d,wall]="${r#* } ms"
        else
            val[$d,rss]=$r val[$d,wall]=$r
        fi
        val[$d,cudalibs]=$(cuda_libs_loaded "$tool")
    else
        val[$d,tool]="not built" val[$d,rss]="-" val[$d,wall]="-" val[$d,cudalibs]="-"
    fi
done

rows=(config "configuration" lib "library" libsize "libgpt.so stripped, bytes" fatbin "  device code (.nv_fatbin)"
      archs "  CUDA archs" tool "gpt tool stripped, bytes" rss "gpt generate -n 16 --device cpu: max RSS"
      wall "  wall time (best of $runs)" cudalibs "  CUDA libraries it loads")
printf '%-42s' ""
for d in "${dirs[@]}"; do printf '  %-34s' "$d"; done
echo
for ((i = 0; i < ${#rows[@]}; i += 2)); do
    printf '%-42s' "${rows[i + 1]}"
    for d in "${dirs[@]}"; do printf '  %-34s' "${val[$d,${rows[i]}]:--}"; done
    echo
done
echo "(machine: $(nproc) cores, $(uname -m); $(date -u +%Y-%m-%d); generate: $model -p \"And God said\" -n 16 --seed 1)"
exit $status
