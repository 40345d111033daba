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

from multiharness.learning_curve import learning_curve

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
