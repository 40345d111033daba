# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Compare evaluations side by side, test each step's difference, and draw the GRPO learning curve.

    python eval/report.py base=outputs/quickstart/eval-base sft=outputs/quickstart/eval-sft \\
        grpo=outputs/quickstart/eval-grpo --run outputs/quickstart/grpo --png outputs/quickstart/learning_curve.png

Each NAME=DIR is a folder written by eval/evaluate.py. Prints one column per evaluation: pass@1
with its Wilson 95% interval per loop, tier and seen/unseen template, then mean reward, tool
calls and coverage, exactly as measured; then, for each evaluation against the one before it,
the difference in pass@1 over the pairs both graded and McNemar's exact p-value (the paired
test: the same tasks, so only the tasks whose outcome changed carry evidence), and whether the
two were of the same weights. `--markdown` prints the same as a Markdown table.

An evaluation with several samples per task (`evaluate.py --samples 4 --temperature 0.7`) adds
its pass@k rows; next to a greedy evaluation of the same policy and tasks it is compared by what
sampling reaches that greedy decoding does not (`sampling_headroom`), the room GRPO's
sharpening has to raise greedy pass@1:

    python eval/report.py greedy=outputs/heldout/sft sampled=outputs/heldout-sampled/sft
"""

import argparse
import json
from pathlib import Path

from multiharness.evaluation import paired_comparison, records_in, sampling_headroom
from multiharness.learning_curve import learning_curve


def load(folder: Path) -> tuple[dict, list[dict]]:
    """An evaluation's summary and its pair records."""
    summary = json.loads((folder / "summary.json").read_text())
    return summary, records_in(folder)


def _rate(group: dict | None) -> str:
    if not group or group["pass_at_1"] is None:
        return "-"
    low, high = group["pass_at_1_interval"]
    return f"{group['pass_at_1']:.2f} [{low:.2f}, {high:.2f}]"


def _number(value, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _pass_at(summary: dict, k: int) -> str:
    values = summary.get("pass_at_k", [])  # summaries written before pass@k have none
    return _number(values[k - 1]) if len(values) >= k else "-"


def rows(summaries: dict[str, dict]) -> list[tuple[str, list[str]]]:
    """(label, one cell per evaluation) for every metric and every group any evaluation has."""
    def groups(section: str) -> list[str]:
        return list(dict.fromkeys(g for s in summaries.values() for g in s[section]))

    table = [("pass@1", [_rate(s) for s in summaries.values()])]
    for section, label in (("by_loop", "loop"), ("by_tier", "tier"), ("by_template", "")):
        for group in groups(section):
            name = f"pass@1, {label} {group}" if label else f"pass@1, {group}"
            table.append((name, [_rate(s[section].get(group)) for s in summaries.values()]))
    table += [
        ("graded / expected", [f"{s['graded']}/{s['expected']}" for s in summaries.values()]),
        ("mean reward", [_number(s["mean_reward"], 3) for s in summaries.values()]),
        ("mean tool calls", [_number(s["mean_tool_calls"]) for s in summaries.values()]),
        ("mean prompt tokens", [_number(s["mean_prompt_tokens"], 0) for s in summaries.values()]),
    ]
    most = max(len(s.get("pass_at_k", [])) for s in summaries.values())
    table += [(f"pass@{k}", [_pass_at(s, k) for s in summaries.values()]) for k in range(2, most + 1)]
    return table


def comparisons(evaluations: dict[str, tuple[dict, list[dict]]]) -> list[str]:
    """Each evaluation against the one before it: paired difference in pass@1 and McNemar's p, or, when
    the two took a different number of samples per task, what the sampled one reaches past the other."""
    lines, names = [], list(evaluations)
    for before, after in zip(names, names[1:]):
        samples = [evaluations[name][0]["identity"].get("samples", 1) for name in (before, after)]
        if samples[0] != samples[1]:
            lines.append(headroom_line(evaluations, *((before, after) if samples[0] < samples[1] else (after, before))))
            continue
        test = paired_comparison(evaluations[before][1], evaluations[after][1])
        if not test["pairs"]:
            lines.append(f"{after} vs {before}: no pair graded in both")
            continue
        line = (
            f"{after} vs {before}: pass@1 {test['after']:.2f} vs {test['before']:.2f} over the {test['pairs']} pairs "
            f"both graded ({test['difference']:+.2f}, {test['difference'] * test['pairs']:+.0f} tasks); "
            f"{test['only_after']} solved only by {after}, {test['only_before']} only by {before}; "
            f"McNemar exact p = {test['p_value']:.3g}"
        )
        weights = [evaluations[name][0]["identity"].get("weights_sha256") for name in (before, after)]
        if weights[0] and weights[0] == weights[1]:
            # GRPO with no reward spread in any group has no gradient: its checkpoint is its start, bit for bit.
            line += f"; the same weights (sha256 {weights[0][:12]}): training between them changed nothing"
        lines.append(line)
    return lines


def headroom_line(evaluations: dict[str, tuple[dict, list[dict]]], greedy: str, sampled: str) -> str:
    """How a sampled evaluation reaches past a greedy one (fewer samples per task) on the same tasks."""
    room = sampling_headroom(evaluations[greedy][1], evaluations[sampled][1])
    temperature = evaluations[sampled][0]["identity"].get("temperature")
    return (
        f"{sampled} vs {greedy}: of the {room['units']} tasks graded in both, {greedy} solves {room['greedy_solved']} "
        f"and at least one of {room['samples_per_unit']} samples at T {temperature} solves "
        f"{room['solved_by_a_sample']}; "
        f"{room['reachable']} solved by a sample but not by {greedy} (what sharpening can add), "
        f"{room['fragile']} solved by {greedy} but failed by a sample"
    )


def render(table: list[tuple[str, list[str]]], names: list[str], markdown: bool) -> str:
    if markdown:
        lines = ["| | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        return "\n".join(lines + [f"| {label} | " + " | ".join(cells) + " |" for label, cells in table])
    width = max(len(c) for _, cells in table for c in cells) + 2
    lines = [f"{'':<44}" + "".join(f"{n:>{width}}" for n in names)]
    return "\n".join(lines + [f"{label:<44}" + "".join(f"{c:>{width}}" for c in cells) for label, cells in table])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("evaluations", nargs="+", help="NAME=DIR of folders written by eval/evaluate.py")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--run", type=Path, help="a GRPO output folder, for the learning curve")
    parser.add_argument("--png", type=Path, help="where to save the learning curve")
    parser.add_argument("--at-step", action="append", default=[], metavar="NAME=STEP",
                        help="the evaluation NAME is of the run's checkpoint at GRPO step STEP (0: its start): "
                             "drawn on the learning curve; repeat for each checkpoint")
    args = parser.parse_args()
    evaluations = {}
    for item in args.evaluations:
        name, _, folder = item.partition("=")
        evaluations[name] = load(Path(folder))
    at_step = dict(item.partition("=")[::2] for item in args.at_step)
    for name, step in at_step.items():
        if name not in evaluations or not step.isdigit():
            parser.error(f"--at-step {name}={step}: expected NAME=STEP with NAME one of {', '.join(evaluations)}")
    summaries = {name: summary for name, (summary, _) in evaluations.items()}
    print(render(rows(summaries), list(summaries), args.markdown))
    for line in comparisons(evaluations):
        print(f"\n{line}" if args.markdown else line)
    if args.run and args.png:
        held_out = {int(step): summaries[name] for name, step in at_step.items()}
        saved = learning_curve(args.run, args.png, held_out=held_out)
        print(f"learning curve: {saved}" if saved else f"no trainer_state.json under {args.run}: no curve")


if __name__ == "__main__":
    main()
