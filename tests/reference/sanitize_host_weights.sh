#!/bin/sh
# sanitize_host_weights.sh - issue 22: compute-sanitizer's memcheck, racecheck and synccheck
# over `gpt generate --weights host` (the GPU reading the weights in host memory: a read
# buffer, and with --mmap the read-only file mapping), then a long greedy run compared token
# for token between host and device weights. Prints PASS/FAIL per case; exit status 1 when
# any case fails.
#
#   tests/reference/sanitize_host_weights.sh [BUILD_DIR] [MODEL]
#
# BUILD_DIR: a CUDA build (default build-cuda; `ninja -C BUILD_DIR tools/gpt`); MODEL: a small
# weight file with a tokenizer (default models/kjv-llama.gpt). About a minute on an H100.
set -u
BUILD=${1:-build-cuda}
MODEL=${2:-models/kjv-llama.gpt}
GPT=$BUILD/tools/gpt
SAN=${COMPUTE_SANITIZER:-compute-sanitizer}
command -v "$SAN" >/dev/null 2>&1 || SAN=/usr/local/cuda/bin/compute-sanitizer
[ -x "$GPT" ] || { echo "FAIL: no $GPT (build it: ninja -C $BUILD tools/gpt)"; exit 1; }
[ -x "$SAN" ] || command -v "$SAN" >/dev/null 2>&1 || { echo "FAIL: no compute-sanitizer"; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failed=0
run_gen() { # weights access tokens -> generated text on stdout
    "$GPT" generate "$MODEL" -p "In the beginning" -n "$3" --temp 0 --device cuda --weights "$1" $2
}

for tool in memcheck racecheck synccheck; do
    for access in --no-mmap --mmap; do
        log=$TMP/$tool$access.log
        extra=""
        [ "$tool" = memcheck ] && extra="--leak-check full"
        if "$SAN" --tool "$tool" $extra --error-exitcode 99 "$GPT" generate "$MODEL" -p "In the beginning" -n 32 \
            --temp 0 --device cuda --weights host $access >"$TMP/out" 2>"$log"; then
            if grep -q "notice: the CUDA driver refused" "$log"; then
                echo "FAIL $tool $access: the weights were not read in host memory: $(grep notice "$log")"
                failed=1
            else
                echo "PASS $tool $access: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY' "$log" | tr '\n' ' ')"
            fi
        else
            echo "FAIL $tool $access (exit $?):"
            grep -E "ERROR SUMMARY|RACECHECK SUMMARY|=========" "$log" | head -20
            failed=1
        fi
    done
done

# A long greedy run, token for token: the same text with host and device weights.
n=512
run_gen device --no-mmap $n >"$TMP/device.txt" 2>"$TMP/device.err" || { echo "FAIL greedy: device run: $(cat "$TMP/device.err")"; failed=1; }
for access in --no-mmap --mmap; do
    if run_gen host $access $n >"$TMP/host.txt" 2>"$TMP/host.err" && cmp -s "$TMP/device.txt" "$TMP/host.txt"; then
        echo "PASS greedy $n tokens $access: host weights = device weights ($(wc -c <"$TMP/host.txt") bytes of text)"
    else
        echo "FAIL greedy $n tokens $access: host and device weights differ (or the run failed: $(tail -1 "$TMP/host.err"))"
        failed=1
    fi
done
exit $failed
