# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""The evaluator's own cost, and what concurrency or the serving dtype buys: one evaluation at
concurrency 1 (or `--baseline N`, in `--baseline-dtype`), then at 4 (or `--concurrency N`, in `--dtype`).

Runs `eval/evaluate.py` twice on the same pairs, in two fresh folders, one after the other in
this run (so the machine's load is about the same for both), and prints:

- with a baseline of 1, its overhead: wall time of the run ÷ the sum of its episodes' own times
  (what the evaluator adds: task selection, pair files, engine counters, the summary);
- throughput at the concurrency ÷ the baseline's: pairs per second of each run;
- the episodes that went otherwise in the second run: greedy episodes repeat at any concurrency in
  float32, not in bfloat16, where the rounding depends on which rows share a batch.

Both runs serve the model with the local engine (its start is outside the timed run).

    python benchmarks/evaluator.py --model outputs/sft --loops whitebox,opencode --tasks 8
    python benchmarks/evaluator.py --baseline 4 --concurrency 16 --model outputs/sft --loops whitebox --tasks 16
    python benchmarks/evaluator.py --baseline 16 --baseline-dtype float32 --concurrency 16 --dtype bfloat16 \
        --model outputs/sft --loops whitebox --tasks 30
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from multiharness.evaluation import paired_comparison, records_in
from multiharness.model import DTYPES

EVALUATE = Path(__file__).resolve().parents[1] / "eval" / "evaluate.py"


def run(flags: list[str], concurrency: int, dtype: str, folder: Path) -> tuple[dict, list[dict]]:
    command = [sys.executable, str(EVALUATE), *flags, "--concurrency", str(concurrency), "--dtype", dtype,
               "--output", str(folder), "--trackio-project", ""]
    subprocess.run(command, check=False)
    return json.loads((folder / "summary.json").read_text()), records_in(folder)


def episodes_that_differ(first: list[dict], second: list[dict]) -> int:
    """Pairs whose episode went otherwise in the second run: other tokens, tool calls or outcome."""
    def shape(r: dict) -> tuple:
        return r["generated_tokens"], r["prompt_tokens"], r["tool_calls"], r["correctness"]

    before = {(r["task_id"], r["loop"], r["sample"]): shape(r) for r in first}
    return sum(1 for r in second if before.get((r["task_id"], r["loop"], r["sample"])) != shape(r))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, default=4, help="the concurrency compared with the baseline's")
    parser.add_argument("--baseline", type=int, default=1, help="the baseline run's concurrency")
    parser.add_argument("--dtype", choices=DTYPES, default="float32", help="what the compared run serves the model in")
    parser.add_argument("--baseline-dtype", choices=DTYPES, default="float32",
                        help="what the baseline run serves it in")
    args, flags = parser.parse_known_args()
    base, many = f"baseline_c{args.baseline}_{args.baseline_dtype}", f"c{args.concurrency}_{args.dtype}"
    with tempfile.TemporaryDirectory(prefix="evaluator-bench-") as scratch:
        one, one_pairs = run(flags, args.baseline, args.baseline_dtype, Path(scratch) / "baseline")
        other, other_pairs = run(flags, args.concurrency, args.dtype, Path(scratch) / "compared")
    paired = paired_comparison(one_pairs, other_pairs)
    first, second = one["last_run"], other["last_run"]
    result = {
        "pairs": first["pairs_run"],
        "graded": [one["graded"], other["graded"]],
        # Greedy episodes are the same at any concurrency up to float rounding, not across dtypes: the
        # pass@1, tokens and outcomes that changed say whether the work compared is the same.
        "pass_at_1": [one["pass_at_1"], other["pass_at_1"]],
        "solved_by_one_only": {"baseline": paired["only_before"], "compared": paired["only_after"],
                               "mcnemar_p": paired["p_value"]},
        "episodes_that_differ": episodes_that_differ(one_pairs, other_pairs),
        "generated_tokens_per_pair": [one["mean_generated_tokens"], other["mean_generated_tokens"]],
        f"{base}_wall_s": first["wall_s"],
        f"{base}_episode_s": first["episode_s"],
        f"{many}_wall_s": second["wall_s"],
        f"{many}_episode_s": second["episode_s"],
        f"throughput_{many}_over_{base}": (second["pairs_run"] / second["wall_s"]) / (first["pairs_run"] / first["wall_s"]),
    }
    if args.baseline == 1 and args.baseline_dtype == args.dtype:
        # one episode at a time: wall time beyond the episodes' own is the evaluator's
        result["overhead_c1"] = first["wall_s"] / first["episode_s"]
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
