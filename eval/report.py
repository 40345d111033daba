# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Compare evaluation reports side by side and draw the GRPO learning curve.

    python eval/report.py base=outputs/eval-base.json sft=outputs/eval-sft.json \
        grpo=outputs/eval-grpo.json --run outputs/whitebox --png outputs/learning_curve.png

Prints one row per metric and one column per report, exactly as measured, then where the
curve was saved. The curve is the mean training reward per GRPO step and the share of groups
whose rewards were all equal (no gradient), read from the `trainer_state.json` the trainer writes.
"""

import argparse
import json
from pathlib import Path

ROWS = [
    ("pass@1 greedy", "greedy", "pass_at_1"),
    ("pass@1 sampled", "sampled", "pass_at_1"),
    ("mean reward (sampled)", "sampled", "mean_reward"),
    ("mean tool calls (sampled)", "sampled", "mean_tool_calls"),
    ("well-formed calls (sampled)", "sampled", "well_formed_share"),
    ("groups with zero reward spread", "sampled", "zero_spread_share"),
    ("graded share (sampled)", "sampled", "coverage"),
    ("not graded (sampled)", "sampled", "not_graded"),
]


def group_rows(reports: dict[str, dict]) -> list[tuple[str, str, str]]:
    """pass@1 per tier and seen/unseen templates, for the groups any report has."""
    rows = []
    for section, kind in (("greedy_by_group", "greedy"), ("sampled_by_group", "sampled")):
        groups = sorted({g for r in reports.values() for g in r.get(section, {})})
        rows += [(f"pass@1 {kind}, {g}", section, g) for g in groups]
    return rows


def table(reports: dict[str, dict]) -> str:
    names = list(reports)
    lines = [f"{'':<44}" + "".join(f"{n:>10}" for n in names)]
    for label, section, key in ROWS + group_rows(reports):
        values = [reports[n].get(section, {}).get(key) for n in names]
        lines.append(f"{label:<44}" + "".join(f"{'-' if v is None else format(v, '.2f'):>10}" for v in values))
    return "\n".join(lines)


def learning_curve(run_dir: Path, png: Path) -> Path | None:
    """Plot reward per step from the last trainer_state.json under run_dir; None if there is none."""
    import matplotlib

    matplotlib.use("Agg")  # no display on servers and CI
    import matplotlib.pyplot as plt

    states = sorted(run_dir.glob("**/trainer_state.json"), key=lambda p: p.stat().st_mtime)
    if not states:
        return None
    history = [h for h in json.loads(states[-1].read_text())["log_history"] if "reward" in h]
    steps = [h["step"] for h in history]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6, 5), sharex=True)
    top.plot(steps, [h["reward"] for h in history], marker="o")
    top.set_ylabel("mean reward")
    top.set_title(f"Whitebox GRPO: {run_dir}")
    # Groups whose rollouts all got the same reward give GRPO no gradient.
    bottom.plot(steps, [h["frac_reward_zero_std"] for h in history], marker="o", color="tab:red")
    bottom.set_ylabel("groups without signal")
    bottom.set_ylim(-0.05, 1.05)
    bottom.set_xlabel("GRPO step")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    return png


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="+", help="NAME=PATH of reports written by eval/whitebox.py")
    parser.add_argument("--run", type=Path, help="a GRPO output folder, for the learning curve")
    parser.add_argument("--png", type=Path, help="where to save the learning curve")
    args = parser.parse_args()
    reports = {}
    for item in args.reports:
        name, _, path = item.partition("=")
        reports[name] = json.loads(Path(path).read_text())
    print(table(reports))
    if args.run and args.png:
        saved = learning_curve(args.run, args.png)
        print(f"learning curve: {saved}" if saved else f"no trainer_state.json under {args.run}: no curve")


if __name__ == "__main__":
    main()
