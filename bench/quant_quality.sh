#!/usr/bin/env bash
# Quantization quality on a model larger than the shipped one (issue 17: >= 50M parameters):
# trains a Llama on the KJV text with tools/train/train.py (about 57M parameters by default, a few
# minutes on one H100/H200), converts it to f16, quantizes it to q8/q4 at groups 32/64/128, and
# prints perplexity, mean KL, top-1 agreement and max |logit diff| of each against the f16 file on
# the held-out chapters (the last 2%, cut as train.py cuts them). Run from the repository root:
#
#     bash bench/quant_quality.sh GPT_TOOL WORKDIR [DEVICE] [train.py options]
#
# DEVICE is cuda (default) or cpu; the f16 file is also scored on the CPU once, so the two
# backends' perplexities can be compared. Results: WORKDIR/quality.md (a Markdown table).
set -eu
gpt=${1:?usage: quant_quality.sh GPT_TOOL WORKDIR [DEVICE] [train.py options]}
work=${2:?usage: quant_quality.sh GPT_TOOL WORKDIR [DEVICE] [train.py options]}
device=${3:-cuda}
shift $(( $# < 3 ? $# : 3 ))
mkdir -p "$work"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

if [ ! -f "$work/hf/config.json" ]; then
    python3 tools/train/train.py --data tools/train/data/kjv.txt.gz --out "$work" \
        --width 768 --ffn 2048 --layers 8 --heads 12 --kv-heads 4 --minutes 2.5 --steps 3000 --lr 6e-4 "$@" \
        > "$work/train.log" 2>&1 || { tail -20 "$work/train.log"; exit 1; }
fi
grep -E "^model:|^trained|validation loss in fp32" "$work/train.log"
python3 - "$work/val.txt" <<'PY'
import sys
sys.path.insert(0, "tools/train")
import train
chapters, _ = train.read_chapters("tools/train/data/kjv.txt.gz")
_, val = train.split_val(chapters, 0.02)
open(sys.argv[1], "w").write("".join(val))
PY

"$gpt" convert "$work/hf" "$work/f16.gpt" --dtype f16 > /dev/null
variants="q8:32 q8:64 q8:128 q4:32 q4:64 q4:128 q4:32:keep"
for v in $variants; do
    IFS=: read -r dt g keep <<< "$v"
    "$gpt" quantize "$work/f16.gpt" "$work/$dt-g$g$keep.gpt" --dtype "$dt" --group "$g" ${keep:+--keep-embeddings} > /dev/null
done

ppl() { "$gpt" perplexity "$@" 2> /dev/null; }
field() { sed -n "s/^$1 *//p" | head -1; }
{
    echo "| file | bytes | perplexity | vs f16 | mean KL (nats) | top-1 agreement | max abs logit diff |"
    echo "|---|---|---|---|---|---|---|"
    base=$(ppl "$work/f16.gpt" "$work/val.txt" --device "$device")
    echo "$base" | sed -n 's/^text */text: /p' >&2
    fp=$(echo "$base" | field perplexity)
    echo "| f16 ($device) | $(stat -c %s "$work/f16.gpt") | $fp | | | | |"
    cpu=$(ppl "$work/f16.gpt" "$work/val.txt" --device cpu | field perplexity)
    echo "| f16 (cpu) | $(stat -c %s "$work/f16.gpt") | $cpu | | | | |"
    for v in $variants; do
        IFS=: read -r dt g keep <<< "$v"
        f="$work/$dt-g$g$keep.gpt"
        out=$(ppl "$f" "$work/val.txt" --compare "$work/f16.gpt" --device "$device")
        p=$(echo "$out" | field perplexity)
        rel=$(python3 -c "print(f'{($p / $fp - 1) * 100:+.2f}%')")
        echo "| $dt g$g${keep:+, embeddings and head f16} | $(stat -c %s "$f") | $p | $rel | $(echo "$out" | field 'mean KL' | cut -d' ' -f1) | $(echo "$out" | field top-1 | cut -d' ' -f1) | $(echo "$out" | field 'max |dlogit|') |"
    done
} | tee "$work/quality.md"
