#!/usr/bin/env bash
# tests/test_convert_crash.sh GPT_TOOL - `gpt convert` never leaves a partial output:
#   1. SIGINT and SIGKILL at random moments of a conversion that takes a while (a llama2.c
#      checkpoint of CONVERT_CRASH_MB MiB, default 64), writing a new file and replacing an
#      old one with --force: the output path then holds nothing (new) or the old file
#      (replace), or the complete file, byte-identical to an uninterrupted conversion. After
#      SIGINT no temporary file is left; after SIGKILL a temporary file (OUT.partial-XXXXXX,
#      OUT.partial-XXXXXX.tmp-XXXXXX) may remain, never under the output's name.
#   2. A read-only output directory: exit status 1, an error naming the output, nothing
#      written.
#   3. A full disk (a 4 MiB tmpfs when we may mount one) and a file size limit (ulimit -f,
#      SIGXFSZ ignored): exit status 1, "No space left on device" / "File too large", no
#      file left behind, an old output (--force) untouched.
# Environment: CONVERT_CRASH_ROUNDS (default 12 kills of each kind), CONVERT_CRASH_MB.
# Exit status 0 when every case holds, 1 otherwise (77, meson's skip, without a tool).
set -uo pipefail

tool=${1:?usage: test_convert_crash.sh GPT_TOOL}
[ -x "$tool" ] || { echo "no gpt tool at $tool: skipped"; exit 77; }
rounds=${CONVERT_CRASH_ROUNDS:-12}
mb=${CONVERT_CRASH_MB:-64}
work=$(mktemp -d "${TMPDIR:-/tmp}/gpt-convert-crash-XXXXXX")
mounts=()
cleanup() {
    for m in "${mounts[@]}"; do umount "$m" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
failures=0
bad() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# ---------------------------------------------------------------- the checkpoint
# llama2.c v0: 7 little-endian int32 (dim, hidden, layers, heads, kv heads, vocab, seq_len;
# vocab > 0: shared classifier), then float32 arrays. Every weight is 0x3c3c3c3c (0.0115),
# which converts and runs to finite logits.
le32() {
    local v=$1
    printf "\\$(printf %03o $((v & 255)))\\$(printf %03o $(((v >> 8) & 255)))\\$(printf %03o $(((v >> 16) & 255)))\\$(printf %03o $(((v >> 24) & 255)))"
}
dim=512 hidden=1024 heads=8 kv=8 vocab=2048 seq=64
per_layer=$((2 * dim + 4 * dim * dim + 3 * dim * hidden)) # floats
layers=$(((mb * 262144 - vocab * dim) / per_layer))
[ "$layers" -ge 1 ] || layers=1
floats=$((vocab * dim + layers * per_layer + dim + 2 * seq * (dim / heads / 2)))
ckpt=$work/src/model.bin
mkdir -p "$work/src" "$work/out"
{
    for v in $dim $hidden $layers $heads $kv $vocab $seq; do le32 "$v"; done
    head -c $((4 * floats)) /dev/zero | tr '\0' '\074'
} >"$ckpt"

run_convert() { # OUT [options...]: runs in the background, sets $pid
    "$tool" convert "$ckpt" "$@" --quiet --no-progress --threads 1 >"$work/log" 2>&1 &
    pid=$!
}

# The uninterrupted result, and how long it takes.
ref=$work/ref.gpt
t0=$(date +%s%N)
"$tool" convert "$ckpt" "$ref" --quiet --no-progress --threads 1 >"$work/log" 2>&1 || {
    cat "$work/log"
    echo "FAIL: the uninterrupted conversion failed"
    exit 1
}
ms=$((($(date +%s%N) - t0) / 1000000))
"$tool" info "$ref" >"$work/info" 2>&1 || { cat "$work/info"; echo "FAIL: gpt info on the reference"; exit 1; }
grep -q "checksums:  all" "$work/info" || { echo "FAIL: reference checksums"; exit 1; }
echo "# checkpoint: $layers layers, $(($(stat -c %s "$ckpt") >> 20)) MiB; an uninterrupted conversion takes $ms ms"

temps() { find "$1" -maxdepth 1 -name '*.partial-*' | wc -l; }

# ---------------------------------------------------------------- 1. signals
old=$work/old.gpt
printf 'the old file\n' >"$old"
declare -A seen
leftover_after_kill=0
for sig in INT KILL; do
    for mode in new replace; do
        for ((i = 0; i < rounds; i++)); do
            out=$work/out/model.gpt
            rm -f "$work"/out/*
            force=()
            if [ "$mode" = replace ]; then
                cp "$old" "$out"
                force=(--force)
            fi
            # A moment anywhere from start-up to a little past the end.
            delay=$((RANDOM % (ms + ms / 5 + 1)))
            run_convert "$out" "${force[@]}"
            sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
            kill -s "$sig" "$pid" 2>/dev/null
            { wait "$pid"; } 2>/dev/null
            rc=$?
            what="SIG$sig at ${delay} ms ($mode, exit $rc)"
            if [ -e "$out" ]; then
                if cmp -s "$out" "$ref"; then state=complete
                elif [ "$mode" = replace ] && cmp -s "$out" "$old"; then state=old
                else
                    bad "$what: $out is neither the old file nor the complete new one"
                    state=broken
                fi
            else
                state=absent
                [ "$mode" = replace ] && bad "$what: the old file is gone"
            fi
            n_temps=$(temps "$work/out")
            if [ "$sig" = INT ] && [ "$n_temps" -ne 0 ]; then
                bad "$what: $n_temps temporary files left after SIGINT: $(ls "$work/out")"
            fi
            [ "$sig" = KILL ] && leftover_after_kill=$((leftover_after_kill + n_temps))
            case $rc in
            0) [ "$state" = complete ] || bad "$what: exit 0 but the output is $state" ;;
            1) grep -q "interrupted" "$work/log" || bad "$what: exit 1 without 'interrupted': $(cat "$work/log")" ;;
            130 | 137) ;; # killed (SIGINT before the handler is installed, or SIGKILL)
            *) bad "$what: exit status $rc: $(cat "$work/log")" ;;
            esac
            seen["SIG$sig $mode $state"]=$((${seen["SIG$sig $mode $state"]:-0} + 1))
        done
    done
done
for k in "${!seen[@]}"; do echo "# $k: ${seen[$k]}"; done | sort
echo "# temporary files left by SIGKILL (never under the output's name): $leftover_after_kill"
rm -f "$work"/out/*

# ---------------------------------------------------------------- 2. read-only directory
ro=$work/ro
mkdir -p "$ro"
if [ "$(id -u)" = 0 ]; then
    if mount -t tmpfs -o size=1m,ro none "$ro" 2>/dev/null; then mounts+=("$ro"); else ro=; fi
else
    chmod 555 "$ro"
fi
if [ -n "$ro" ]; then
    "$tool" convert "$ckpt" "$ro/model.gpt" --quiet --no-progress >"$work/log" 2>&1
    rc=$?
    [ "$rc" = 1 ] || bad "read-only directory: exit status $rc"
    grep -q "$ro/model.gpt" "$work/log" && grep -qE "Read-only file system|Permission denied" "$work/log" ||
        bad "read-only directory: message: $(cat "$work/log")"
    [ -z "$(ls -A "$ro")" ] || bad "read-only directory: files appeared: $(ls -A "$ro")"
    echo "# read-only directory: $(grep -v warning "$work/log" | head -n1)"
else
    echo "# read-only directory: skipped (root without permission to mount a read-only tmpfs)"
fi

# ---------------------------------------------------------------- 3. full disk
check_full() { # DIR LABEL PATTERN [runner...]
    local dir=$1 label=$2 pattern=$3
    shift 3
    printf 'the old file\n' >"$dir/old.gpt"
    for target in new.gpt old.gpt; do
        local force=()
        [ "$target" = old.gpt ] && force=(--force)
        "$@" "$tool" convert "$ckpt" "$dir/$target" "${force[@]}" --quiet --no-progress --threads 1 >"$work/log" 2>&1
        local rc=$?
        [ "$rc" = 1 ] || bad "$label ($target): exit status $rc: $(cat "$work/log")"
        grep -qE "$pattern" "$work/log" || bad "$label ($target): message: $(cat "$work/log")"
        [ "$(ls -A "$dir")" = old.gpt ] || bad "$label ($target): left behind: $(ls -A "$dir")"
        cmp -s "$dir/old.gpt" "$old" || bad "$label ($target): the old file changed"
    done
    echo "# $label: $(grep -v warning "$work/log" | head -n1)"
}
full=$work/full
mkdir -p "$full"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=4m none "$full" 2>/dev/null; then
    mounts+=("$full")
    check_full "$full" "full disk (4 MiB tmpfs)" "No space left on device"
else
    echo "# full disk (tmpfs): skipped (cannot mount one)"
fi
limit=$work/limit
mkdir -p "$limit"
# The size limit: a write past it fails with EFBIG once SIGXFSZ is ignored (dispositions
# set to ignore survive exec).
with_limit() { (trap '' XFSZ; ulimit -f 4096; exec "$@"); }
check_full "$limit" "file size limit (ulimit -f 4 MiB)" "File too large" with_limit

if [ "$failures" -ne 0 ]; then
    echo "$failures failures"
    exit 1
fi
echo "all cases hold"
