# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""The evaluator's own cost, and what concurrency buys: one evaluation at concurrency 1 (or
`--baseline N`), then at 4 (or `--concurrency N`).

Runs `eval/evaluate.py` twice on the same pairs, in two fresh folders, one after the other in
this run (so the machine's load is about the same for both), and prints:

- with a baseline of 1, its overhead: wall time of the run ÷ the sum of its episodes' own times
  (what the evaluator adds: task selection, pair files, engine counters, the summary);
- throughput at the concurrency ÷ the baseline's: pairs per second of each run.

Both runs serve the model with the local engine (its start is outside the timed run).

    python benchmarks/evaluator.py --model outputs/sft --loops whitebox,opencode --tasks 8
    python benchmarks/evaluator.py --baseline 4 --concurrency 16 --model outputs/sft --loops whitebox --tasks 16
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

EVALUATE = Path(__file__).resolve().parents[1] / "eval" / "evaluate.py"


def run(flags: list[str], concurrency: int, folder: Path) -> dict:
    command = [sys.executable, str(EVALUATE), *flags, "--concurrency", str(concurrency), "--output", str(folder),
               "--trackio-project", ""]
    subprocess.run(command, check=False)
    return json.loads((folder / "summary.json").read_text())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, default=4, help="the concurrency compared with the baseline's")
    parser.add_argument("--baseline", type=int, default=1, help="the baseline run's concurrency")
    args, flags = parser.parse_known_args()
    base, many = f"c{args.baseline}", f"c{args.concurrency}"
    with tempfile.TemporaryDirectory(prefix="evaluator-bench-") as scratch:
        one = run(flags, args.baseline, Path(scratch) / base)
        other = run(flags, args.concurrency, Path(scratch) / many)
    first, second = one["last_run"], other["last_run"]
    result = {
        "pairs": first["pairs_run"],
        "graded": [one["graded"], other["graded"]],
        # Greedy episodes are the same at any concurrency up to float rounding: the work compared is the same.
        "pass_at_1": [one["pass_at_1"], other["pass_at_1"]],
        "generated_tokens_per_pair": [one["mean_generated_tokens"], other["mean_generated_tokens"]],
        f"{base}_wall_s": first["wall_s"],
        f"{base}_episode_s": first["episode_s"],
        f"{many}_wall_s": second["wall_s"],
        f"{many}_episode_s": second["episode_s"],
        f"throughput_{many}_over_{base}": (second["pairs_run"] / second["wall_s"]) / (first["pairs_run"] / first["wall_s"]),
    }
    if args.baseline == 1:  # one episode at a time: wall time beyond the episodes' own is the evaluator's
        result["overhead_c1"] = first["wall_s"] / first["episode_s"]
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
