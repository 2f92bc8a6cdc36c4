#!/usr/bin/env bash
# tests/fuzz/run.sh - replays the saved crash inputs, then runs every fuzz target for a bounded
# time from its seed corpus; exits non-zero on any finding (crash, sanitizer report, leak,
# broken invariant, timeout, out-of-memory).
#
#   tests/fuzz/run.sh [BIN_DIR]      BIN_DIR: where `make -C tests/fuzz` put the targets
#                                    (default build-fuzz)
# Environment:
#   FUZZ_SECONDS  run time per target (default 60)
#   FUZZ_JOBS     targets run at once (default: the number of cores)
#   FUZZ_TARGETS  space-separated subset (default: all)
#   FUZZ_WORK     working directory (default BIN_DIR/work): the grown corpus and any crash
#                 inputs go there, never into tests/fuzz/corpus.
# A finding's input is left in FUZZ_WORK/<target>/ (crash-*, leak-*, timeout-*, oom-*);
# reproduce with BIN_DIR/<target> FILE, then add it to tests/fuzz/regressions/<target>/.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=$(cd "${1:-$here/../../build-fuzz}" && pwd)
secs=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-$(nproc)}
work=${FUZZ_WORK:-$bin/work}
targets=${FUZZ_TARGETS:-"fuzz_weight_file fuzz_safetensors fuzz_hf_config fuzz_llama2c fuzz_tokenizer fuzz_tokenizer_import fuzz_api fuzz_chat_template fuzz_pt"}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
mkdir -p "$work"
failed=0

# 1. Every input that ever crashed a target must now run clean.
for t in $targets; do
    dir=$here/regressions/$t
    [ -d "$dir" ] || continue
    for f in "$dir"/*; do
        [ -f "$f" ] || continue
        if ! "$bin/$t" -rss_limit_mb=2048 "$f" >"$work/replay.log" 2>&1; then
            echo "REGRESSION: $t $f"
            tail -n 30 "$work/replay.log"
            failed=1
        fi
    done
done

# 2. Bounded fuzzing, FUZZ_JOBS targets at a time.
dict_for() {
    case $1 in
    fuzz_safetensors | fuzz_hf_config | fuzz_tokenizer_import) echo "-dict=$here/dict/json.dict" ;;
    fuzz_chat_template) echo "-dict=$here/dict/jinja.dict" ;;
    esac
}
run_one() {
    local t=$1 d=$work/$1
    mkdir -p "$d/corpus"
    # -timeout: one input may take at most 10 s; -rss_limit_mb also caps single allocations
    # (malloc_limit_mb defaults to it): sizes must come from real bytes, never from fields.
    # FUZZ_SECONDS=0: run the seed corpus once (-runs=0: no mutations), no fuzzing.
    local budget=-max_total_time="$secs"
    [ "$secs" = 0 ] && budget=-runs=0
    "$bin/$t" "$budget" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$d/" $(dict_for "$t") "$d/corpus" "$here/corpus/$t" >"$d/log" 2>&1
    echo $? >"$d/rc"
}
running=0
for t in $targets; do
    rm -f "$work/$t/rc"
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait

printf '\n%-24s %8s %12s %10s %8s  %s\n' target seconds executions exec/s corpus result
for t in $targets; do
    d=$work/$t
    rc=$(cat "$d/rc" 2>/dev/null || echo 99)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$d/log" | tail -n1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$d/log" | tail -n1)
    corpus=$(ls "$d/corpus" | wc -l)
    if [ "$rc" = 0 ]; then result=ok; else result="FAILED (rc $rc)"; failed=1; fi
    printf '%-24s %8s %12s %10s %8s  %s\n' "$t" "$secs" "${execs:-?}" "${rate:-?}" "$corpus" "$result"
done
for t in $targets; do
    d=$work/$t
    if [ "$(cat "$d/rc" 2>/dev/null || echo 99)" != 0 ]; then
        echo
        echo "=== $t: last lines of $d/log"
        grep -v '^#[0-9]' "$d/log" | tail -n 40
        ls "$d"/crash-* "$d"/leak-* "$d"/timeout-* "$d"/oom-* 2>/dev/null
    fi
done
exit $failed
