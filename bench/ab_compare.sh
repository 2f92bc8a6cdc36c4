#!/usr/bin/env bash
# bench/ab_compare.sh GPT_A GPT_B [ROUNDS] [TARGET...] - A/B of two builds of `gpt` on the
# same GPU, alternated round by round (A then B, then B then A, ...) so drift hits both alike.
# A TARGET is a synthetic shape name (`gpt bench --synthetic NAME --prefill 512 --decode 128
# --pos 100`) or a weight file path (`gpt bench FILE --prefill 16 --decode 16`: load and first
# token on a real file, checksums verified). Default targets: gpt2-124m tinyllama-1.1b
# qwen2-7b; ROUNDS default 3. Prints per target the medians over rounds of decode ms/token,
# prefill tokens/s, load ms and load-to-first-token ms for A and B, then each round's numbers.
# Full JSON lines: $AB_LOG (optional).
set -euo pipefail
a=$1 b=$2
rounds=${3:-3}
shift $(( $# < 3 ? $# : 3 ))
targets=("$@")
((${#targets[@]})) || targets=(gpt2-124m tinyllama-1.1b qwen2-7b)
log=${AB_LOG:-/dev/null}
results=$(mktemp)
for ((r = 0; r < rounds; r++)); do
    order=(A B)
    ((r % 2)) && order=(B A)
    for which in "${order[@]}"; do
        bin=$a
        [ "$which" = B ] && bin=$b
        for t in "${targets[@]}"; do
            if [ -f "$t" ]; then
                line=$("$bin" bench "$t" --prefill 16 --decode 16 --json)
            else
                line=$("$bin" bench --synthetic "$t" --prefill 512 --decode 128 --pos 100 --json)
            fi
            echo "$which $t $line" >> "$log"
            echo "$which $t $line" >> "$results"
        done
    done
done
python3 - "$results" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    which, target, js = line.split(" ", 2)
    d = json.loads(js)
    rows.setdefault((target, which), []).append((d["decode"]["median_ms"], d["prefill"]["tokens_per_s"], d["load_ms"],
                                                 d["load_to_first_token_ms"]))
cols = ["decode ms", "prefill tok/s", "load ms", "1st token ms"]
print(f"{'target':32}" + "".join(f" {c + ' ' + w:>16}" for c in cols for w in "AB") + f" {'decode B/A':>11}")
for t in dict.fromkeys(k[0] for k in rows):
    med = [[statistics.median(x[i] for x in rows[(t, w)]) for w in "AB"] for i in range(4)]
    print(f"{t:32}" + "".join(f" {v:16.4f}" if i == 0 else f" {v:16.1f}" for i in range(4) for v in med[i])
          + f" {med[0][1] / med[0][0]:11.3f}")
    for w in "AB":
        print(f"  {w}: " + "  ".join("decode %.4f prefill %.0f load %.1f first %.1f" % x for x in rows[(t, w)]))
PY
rm -f "$results"
