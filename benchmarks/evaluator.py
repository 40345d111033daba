# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""The evaluator's own cost, and what concurrency buys: one evaluation at concurrency 1, then at 4.

Runs `eval/evaluate.py` twice on the same pairs, in two fresh folders, one after the other in
this run (so the machine's load is about the same for both), and prints:

- overhead at concurrency 1: wall time of the run ÷ the sum of its episodes' own times (what the
  evaluator adds: task selection, pair files, engine counters, the summary);
- throughput at concurrency 4 ÷ concurrency 1: pairs per second of each run.

Both runs serve the model with the local engine (its start is outside the timed run).

    python benchmarks/evaluator.py --model outputs/sft --loops whitebox,opencode --tasks 8
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
    parser.add_argument("--concurrency", type=int, default=4, help="the concurrency compared with 1")
    args, flags = parser.parse_known_args()
    with tempfile.TemporaryDirectory(prefix="evaluator-bench-") as scratch:
        one = run(flags, 1, Path(scratch) / "c1")
        many = run(flags, args.concurrency, Path(scratch) / f"c{args.concurrency}")
    first, second = one["last_run"], many["last_run"]
    result = {
        "pairs": first["pairs_run"],
        "graded": [one["graded"], many["graded"]],
        "c1_wall_s": first["wall_s"],
        "c1_episode_s": first["episode_s"],
        "overhead_c1": first["wall_s"] / first["episode_s"],
        f"c{args.concurrency}_wall_s": second["wall_s"],
        f"throughput_c{args.concurrency}_over_c1": (second["pairs_run"] / second["wall_s"]) / (first["pairs_run"] / first["wall_s"]),
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
