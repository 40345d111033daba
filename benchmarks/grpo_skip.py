# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""What the training pass saves when rollouts of zero advantage skip it: the same whitebox GRPO run
twice, with TRL's `GRPOTrainer` and with `multiharness.grpo.SignalOnlyGRPOTrainer`.

Each run is `train/whitebox.py` in a process of its own, with the flags after `--` and its seed,
one after the other (so the machine's load is about the same for both). Prints each run's wall
time and per-step times, the share of groups without reward spread, the share of micro-batches
skipped, and whether the two saved models are the same bit for bit (the update is meant to be).

    python benchmarks/grpo_skip.py --output outputs/bench-skip -- --preset quickstart --model outputs/quickstart/sft
"""

import argparse
import hashlib
import json
import runpy
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "train" / "whitebox.py"


def run(flags: list[str], output: Path, trainer: str) -> dict:
    command = [sys.executable, __file__, "--trainer", trainer, "--", *flags, "--output", str(output)]
    start = time.perf_counter()
    subprocess.run(command, check=True)
    wall = time.perf_counter() - start
    history = json.loads((output / "trainer_state.json").read_text())["log_history"]
    steps = [h for h in history if "reward" in h]
    weights = hashlib.sha256((output / "model.safetensors").read_bytes()).hexdigest()
    return {
        "wall_s": round(wall, 1),
        "step_s": [round(h["step_time"], 1) for h in steps],
        "frac_reward_zero_std": [h["frac_reward_zero_std"] for h in steps],
        "skipped_without_signal": [h.get("skipped_without_signal") for h in steps],
        "weights_sha256": weights[:12],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, default=Path("outputs/bench-skip"), help="one subfolder per run")
    parser.add_argument("--trainer", choices=("trl", "signal-only"), help=argparse.SUPPRESS)  # one run, in-process
    args, flags = parser.parse_known_args()
    flags = [f for f in flags if f != "--"]
    if args.trainer:
        if args.trainer == "trl":  # train/whitebox.py imports its trainer from here when main() runs
            import trl

            import multiharness.grpo

            multiharness.grpo.SignalOnlyGRPOTrainer = trl.GRPOTrainer
        sys.argv = [str(SCRIPT), *flags]
        runpy.run_path(str(SCRIPT), run_name="__main__")
        return
    trl_run = run(flags, args.output / "trl", "trl")
    ours = run(flags, args.output / "signal-only", "signal-only")
    print(json.dumps({"trl": trl_run, "signal_only": ours, "wall_ratio_trl_over_signal_only":
                      round(trl_run["wall_s"] / ours["wall_s"], 2),
                      "same_weights": trl_run["weights_sha256"] == ours["weights_sha256"]}, indent=1))


if __name__ == "__main__":
    main()
