#!/usr/bin/env bash
# bench/ab_compare.sh GPT_A GPT_B [ROUNDS] [SHAPES...] - A/B of two builds of `gpt` on the
# same GPU, alternated round by round (A then B, then B then A, ...) so drift hits both alike:
# `gpt bench --synthetic SHAPE --prefill 512 --decode 128 --pos 100 --json` per shape and build,
# then a table of the medians over rounds of decode ms/token and prefill tokens/s, and B/A,
# and of load to first token (synthetic weights, in memory).
# Default shapes: gpt2-124m tinyllama-1.1b qwen2-7b; ROUNDS default 3. Logs: $AB_LOG (optional).
set -euo pipefail
a=$1 b=$2
rounds=${3:-3}
shift $(( $# < 3 ? $# : 3 ))
shapes=("$@")
((${#shapes[@]})) || shapes=(gpt2-124m tinyllama-1.1b qwen2-7b)
log=${AB_LOG:-/dev/null}
results=$(mktemp)
for ((r = 0; r < rounds; r++)); do
    order=(A B)
    ((r % 2)) && order=(B A)
    for which in "${order[@]}"; do
        bin=$a
        [ "$which" = B ] && bin=$b
        for s in "${shapes[@]}"; do
            line=$("$bin" bench --synthetic "$s" --prefill 512 --decode 128 --pos 100 --json)
            echo "$which $s $line" >> "$log"
            echo "$which $s $line" >> "$results"
        done
    done
done
python3 - "$results" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    which, shape, js = line.split(" ", 2)
    d = json.loads(js)
    rows.setdefault((shape, which), []).append((d["decode"]["median_ms"], d["prefill"]["tokens_per_s"],
                                                d["load_to_first_token_ms"]))
shapes = sorted({s for s, _ in rows}, key=lambda s: list(dict.fromkeys(k[0] for k in rows)).index(s))
print(f"{'shape':16} {'decode A ms':>12} {'decode B ms':>12} {'B/A':>7} {'prefill A tok/s':>16} {'prefill B tok/s':>16} {'B/A':>7}"
      f" {'1st token A ms':>15} {'B ms':>8}")
for s in shapes:
    da = statistics.median(x[0] for x in rows[(s, "A")]); db = statistics.median(x[0] for x in rows[(s, "B")])
    pa = statistics.median(x[1] for x in rows[(s, "A")]); pb = statistics.median(x[1] for x in rows[(s, "B")])
    fa = statistics.median(x[2] for x in rows[(s, "A")]); fb = statistics.median(x[2] for x in rows[(s, "B")])
    print(f"{s:16} {da:12.4f} {db:12.4f} {db/da:7.3f} {pa:16.0f} {pb:16.0f} {pb/pa:7.3f} {fa:15.1f} {fb:8.1f}")
    for w in "AB":
        print(f"  {w}: decode " + " ".join(f"{x[0]:.4f}" for x in rows[(s, w)]) + "  prefill " + " ".join(f"{x[1]:.0f}" for x in rows[(s, w)]))
PY
rm -f "$results"
