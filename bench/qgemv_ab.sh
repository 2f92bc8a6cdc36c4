#!/usr/bin/env bash
# bench/qgemv_ab.sh [GPT] [ROUNDS] - A/B of the quantized decode GEMVs in one binary (issue 17):
# GPT_QGEMV=old (gemv.cu's first kernel; 3-8 row steps dequantize for cuBLAS) against the tiled
# kernel (gemv_quant.cu), alternated round by round on the same GPU, with f16 as the yardstick.
# `gpt bench --synthetic SHAPE --dtype D --prefill 0 --decode 128 --pos 100 --reps 5 --batch B`
# for the shapes in $SHAPES (default tinyllama-1.1b; e.g. "tinyllama-1.1b qwen2-7b"), q4, q8 and
# f16, batch 1 and 8. Prints the median decode step time of each. GPT defaults to
# build-cuda/tools/gpt, ROUNDS to 2.
set -euo pipefail
gpt=${1:-build-cuda/tools/gpt}
rounds=${2:-2}
results=$(mktemp)
for ((r = 0; r < rounds; r++)); do
    kernels=(old tiled)
    ((r % 2)) && kernels=(tiled old)
    for shape in ${SHAPES:-tinyllama-1.1b}; do
        for batch in ${BATCHES:-1 8}; do
            for dtype in q4 q8 f16; do
                for k in "${kernels[@]}"; do
                    [ "$dtype" = f16 ] && [ "$k" = old ] && continue # no quantized GEMV
                    line=$(GPT_QGEMV=$k "$gpt" bench --synthetic "$shape" --dtype "$dtype" --prefill 0 --decode 128 --pos 100 \
                        --reps 5 --batch "$batch" --json)
                    echo "$shape $batch $dtype $k $line" >> "$results"
                done
            done
        done
    done
done
python3 - "$results" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    shape, batch, dtype, k, js = line.split(" ", 4)
    rows.setdefault((shape, int(batch), dtype, k), []).append(json.loads(js)["decode"]["median_ms"])
print(f"{'shape':16} {'batch':>5} {'dtype':>5} {'old ms':>9} {'tiled ms':>9} {'tiled/old':>9}")
for shape, batch, dtype in dict.fromkeys(key[:3] for key in rows):
    med = {k: statistics.median(rows[(shape, batch, dtype, k)]) for k in ("old", "tiled") if (shape, batch, dtype, k) in rows}
    old, tiled = med.get("old"), med["tiled"]
    print(f"{shape:16} {batch:5} {dtype:>5} {old if old else float('nan'):9.4f} {tiled:9.4f} "
          f"{tiled / old if old else float('nan'):9.3f}")
PY
rm -f "$results"
