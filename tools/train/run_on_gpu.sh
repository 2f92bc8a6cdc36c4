#!/bin/bash
# Trains the demo model on a GPU machine. Run it from the repository root:
#
#     OUT=/some/folder bash tools/train/run_on_gpu.sh [extra train.py options]
#
# It runs tools/train/train.py with its defaults (a few minutes on one H100/H200) and leaves
# in $OUT/model/ at most 7 files, none over 15 MiB:
#   train.log           everything train.py printed
#   train_log.json      steps, time, losses, parameter count, GPU, versions
#   reference.json      PyTorch's logits and greedy continuation for the fixed prompt
#   hf.tar.partNN       the Hugging Face directory hf/ as a tar cut into 15 MiB pieces,
#   hf.tar.sha256       and the tar's checksum. To put it together:
#                         cat hf.tar.part* > hf.tar && sha256sum -c hf.tar.sha256 && tar -xf hf.tar
# The exit status is train.py's (1: a self-check failed; the files are there all the same).
set -u
cd "$(dirname "$0")/../.." || exit 1
: "${OUT:?set OUT to the folder for the results}"
dest="$OUT/model"
work="${TMPDIR:-/tmp}/kjv-train"
rm -rf "$work"
mkdir -p "$dest" "$work" || exit 1
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1  # no network there
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true

python3 tools/train/train.py --data tools/train/data/kjv.txt.gz --out "$work" "$@" 2>&1 | tee "$dest/train.log"
rc=${PIPESTATUS[0]}

for f in reference.json train_log.json; do
    [ -f "$work/$f" ] && cp "$work/$f" "$dest/"
done
if [ -d "$work/hf" ]; then
    tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner -cf "$work/hf.tar" hf &&
        split -b 15M -d -a 2 "$work/hf.tar" "$dest/hf.tar.part" &&
        (cd "$work" && sha256sum hf.tar) > "$dest/hf.tar.sha256"
fi

echo "=== summary (train.py exit status $rc)"
ls -l "$dest"
[ -d "$work/hf" ] && ls -l "$work/hf"
python3 - "$work" <<'EOF' || true
import json, os, sys
w = sys.argv[1]
log = json.load(open(os.path.join(w, "train_log.json")))
print(f"{log['parameters']} parameters, {log['steps']} steps in {log['train_seconds']} s "
      f"({log['tokens_seen']} tokens, {log['epochs']:.1f} epochs), total {log['total_seconds']} s on {log['gpu']}")
print(f"final train loss {log['final_train_loss']:.4f}; kept step {log['kept_step']}: validation loss "
      f"{log['val_loss']:.4f} (fp32 {log['val_loss_fp32']:.4f})")
print("validation curve: " + ", ".join(f"{v['step']}: {v['val_loss']:.3f}" for v in log["val_curve"]))
print("versions:", log["versions"])
ref = json.load(open(os.path.join(w, "reference.json")))
print("prompt ids:", ref["prompt_ids"])
print("greedy continuation:", repr(ref["greedy_text"]))
print("cache agrees:", ref["cache_agrees"], "max logit diff:", ref["cache_max_abs_logit_diff"],
      "| generate agrees:", ref["hf_generate_agrees"], "| fp16 greedy same:", ref["fp16_weights"]["greedy_ids"] == ref["greedy_ids"])
print("failed checks:", log["failed_checks"] or "none")
EOF
exit "$rc"
