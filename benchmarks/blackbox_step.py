# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Where a blackbox GRPO step's time goes, read from a finished `train/opencode.py` run.

A step is the rollouts (the harness episodes, several at once, sharing the colocated engine)
and then the optimiser's forward, backward and update on their rows. The work it cannot avoid
is the engine's (seconds with at least one model call in flight, `episodes/engine_s`) and the
optimiser's (the step's time after its rollouts: `step_time - episodes/rollout_s`). The ratio

    wall time / (engine time + optimiser time)

is 1 when the harnesses' own time (start-up, their tools, the sandbox) hides entirely behind
other sessions' model calls, and grows with every second nobody is computing. Measured in the
same run, so the machine's load cancels out of the ratio.

    python benchmarks/blackbox_step.py --run outputs/opencode-cpu
"""

import argparse
import json
import statistics
from pathlib import Path


def step_figures(run: Path) -> list[dict]:
    """Per step: wall, rollout, engine and optimiser seconds, and the ratio."""
    history = json.loads((run / "trainer_state.json").read_text())["log_history"]
    rows = []
    for h in history:
        if "episodes/engine_s" not in h:
            continue
        wall, rollout, engine = h["step_time"], h["episodes/rollout_s"], h["episodes/engine_s"]
        optimiser = wall - rollout
        rows.append({"step": h["step"], "wall_s": wall, "rollout_s": rollout, "engine_s": engine,
                     "optimiser_s": optimiser, "harness_only_s": rollout - engine,
                     "ratio": wall / (engine + optimiser)})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="output folder of a train/opencode.py run")
    args = parser.parse_args()
    rows = step_figures(args.run)
    if not rows:
        raise SystemExit(f"{args.run}/trainer_state.json has no step with episodes/engine_s: run train/opencode.py")
    columns = ["step", "wall_s", "rollout_s", "engine_s", "optimiser_s", "harness_only_s", "ratio"]
    print(" | ".join(columns))
    for row in rows:
        print(" | ".join(f"{row[c]:.2f}" if isinstance(row[c], float) else str(row[c]) for c in columns))
    print(f"median ratio {statistics.median(r['ratio'] for r in rows):.2f} over {len(rows)} steps")


if __name__ == "__main__":
    main()
