#!/usr/bin/env bash
# bench/startup_ab.sh GPT_A GPT_B ROUNDS FILE... - load and first-token times of two builds of
# `gpt` on real weight files (checksums verified, page cache warm after the first round),
# alternated per round: `gpt bench FILE --prefill 16 --decode 16 --json`, then the median of
# load_ms and load_to_first_token_ms per file and build.
set -euo pipefail
a=$1 b=$2 rounds=$3
shift 3
results=$(mktemp)
for ((r = 0; r < rounds; r++)); do
    order=(A B)
    ((r % 2)) && order=(B A)
    for which in "${order[@]}"; do
        bin=$a
        [ "$which" = B ] && bin=$b
        for f in "$@"; do
            echo "$which $f $("$bin" bench "$f" --prefill 16 --decode 16 --json)" >> "$results"
        done
    done
done
python3 - "$results" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    which, f, js = line.split(" ", 2)
    d = json.loads(js)
    rows.setdefault((f, which), []).append((d["load_ms"], d["load_to_first_token_ms"]))
print(f"{'file':40} {'load A ms':>10} {'load B ms':>10} {'1st A ms':>10} {'1st B ms':>10}")
for f in dict.fromkeys(k[0] for k in rows):
    med = lambda w, i: statistics.median(x[i] for x in rows[(f, w)])
    print(f"{f:40} {med('A', 0):10.1f} {med('B', 0):10.1f} {med('A', 1):10.1f} {med('B', 1):10.1f}")
    for w in "AB":
        print(f"  {w}: " + "  ".join(f"{x[0]:.1f}/{x[1]:.1f}" for x in rows[(f, w)]))
PY
rm -f "$results"
