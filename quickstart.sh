#!/usr/bin/env bash
# The main job on a laptop CPU (about 15 minutes on 2 cores): measure the base model on held-out
# test tasks, SFT warm start on expert trajectories, a few GRPO steps in the whitebox loop,
# measure again, and print a before/after table. Each line is a command you can run alone;
# the `quickstart` presets in train/ are sized for the time budget. The longer CPU run in
# RESULTS.md is the same job with the `cpu` presets and a larger test sample:
#   PRESET=cpu EVAL_TASKS="--per-group 6" OUT=outputs/long ./quickstart.sh
set -euo pipefail
cd "$(dirname "$0")"
PY=.venv/bin/python
PRESET=${PRESET:-quickstart}
OUT=${OUT:-outputs/quickstart}
EVAL="eval/whitebox.py ${EVAL_TASKS:---limit 6} --samples 2 --temperature 1.0"
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
stage() { echo "== $1 (${SECONDS} s elapsed)"; }

stage "1/6 build the task splits (deterministic, checked against data/*.json)"
$PY -m multiharness tasks build
stage "2/6 measure the base model"
$PY $EVAL --output "$OUT/eval-base.json"
stage "3/6 SFT warm start on expert trajectories"
$PY train/sft.py --preset "$PRESET" --output "$OUT/sft"
stage "4/6 measure the SFT model"
$PY $EVAL --model "$OUT/sft" --output "$OUT/eval-sft.json"
stage "5/6 GRPO in the whitebox loop, starting from SFT"
$PY train/whitebox.py --preset "$PRESET" --model "$OUT/sft" --output "$OUT/grpo"
stage "6/6 measure the GRPO model"
$PY $EVAL --model "$OUT/grpo" --output "$OUT/eval-grpo.json"
stage "done"

$PY eval/report.py base="$OUT/eval-base.json" sft="$OUT/eval-sft.json" grpo="$OUT/eval-grpo.json" \
    --run "$OUT/grpo" --png "$OUT/learning_curve.png"
echo "checkpoint: $OUT/grpo   Trackio logs: $OUT/grpo/trackio (view: TRACKIO_DIR=$OUT/grpo/trackio .venv/bin/trackio show)"
