#!/usr/bin/env bash
# The main job on a laptop CPU (18 minutes on 2 cores, RESULTS.md): measure the base model on held-out
# test tasks, SFT warm start on expert trajectories, a few GRPO steps in the whitebox loop,
# measure again, and print a before/after table. Each line is a command you can run alone;
# the `quickstart` presets in train/ are its small sizes. The longer CPU run in
# RESULTS.md is the same job with the `cpu` presets and a larger test sample:
#   PRESET=cpu EVAL_TASKS="--tasks 100 --difficulties easy,medium" OUT=outputs/long ./quickstart.sh
set -euo pipefail
cd "$(dirname "$0")"
PY=.venv/bin/python
PRESET=${PRESET:-quickstart}
OUT=${OUT:-outputs/quickstart}
# Greedy pass@1 in the whitebox loop on held-out test tasks, the same tasks for every model; 16
# episodes at once share each forward pass of the engine (1.44x the pairs per second of 4, RESULTS.md).
EVAL="eval/evaluate.py --loops whitebox ${EVAL_TASKS:---tasks 30 --difficulties easy,medium} --concurrency 16"
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
stage() { echo "== $1 (${SECONDS} s elapsed)"; }
# Exit status 2 is "some pair was not graded" (its summary says which): the job goes on, a crash does not.
evaluate() { $PY $EVAL "$@" || [ $? -eq 2 ]; }

stage "1/6 build the task splits (deterministic, checked against data/*.json)"
$PY -m multiharness tasks build
stage "2/6 measure the base model"
evaluate --output "$OUT/eval-base"
stage "3/6 SFT warm start on expert trajectories"
$PY train/sft.py --preset "$PRESET" --output "$OUT/sft"
stage "4/6 measure the SFT model"
rm -rf "$OUT/eval-sft"  # the model was just retrained: an earlier evaluation of it is another policy's
evaluate --model "$OUT/sft" --output "$OUT/eval-sft"
stage "5/6 GRPO in the whitebox loop, starting from SFT"
$PY train/whitebox.py --preset "$PRESET" --model "$OUT/sft" --output "$OUT/grpo"
stage "6/6 measure the GRPO model"
rm -rf "$OUT/eval-grpo"
evaluate --model "$OUT/grpo" --output "$OUT/eval-grpo"
stage "done"

GRPO_STEPS=$($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["global_step"])' "$OUT/grpo/trainer_state.json")
$PY eval/report.py base="$OUT/eval-base" sft="$OUT/eval-sft" grpo="$OUT/eval-grpo" \
    --run "$OUT/grpo" --png "$OUT/learning_curve.png" --at-step sft=0 --at-step grpo="$GRPO_STEPS"
echo "checkpoint: $OUT/grpo   Trackio logs: $OUT/grpo/trackio (view: TRACKIO_DIR=$OUT/grpo/trackio .venv/bin/trackio show)"
