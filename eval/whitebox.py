# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Measure a model in the whitebox environment: pass@1 greedy and at the training temperature.

Runs the same tools, prompt, sandbox and reward as `train/whitebox.py` on a fixed, balanced
sample of test tasks (round-robin over templates), once greedy and `--samples` times at
`--temperature`, and writes a JSON report. pass@1 is also reported per tier and per seen /
unseen templates (templates never used in training); `--per-group N` samples N tasks from each
of those groups so that each gets the same weight.

    python eval/whitebox.py --model outputs/sft --limit 16 --output outputs/eval-sft.json
    python eval/whitebox.py --model outputs/sft --per-group 6 --output outputs/eval-sft.json
"""

import argparse
import json
import logging
from dataclasses import asdict
from pathlib import Path

import torch

from multiharness.evaluation import evaluate, select_by_group, select_tasks, task_group
from multiharness.model import cpu_supports_bf16, load_model_and_tokenizer
from multiharness.paths import DEFAULT_MODEL_DIR, DEFAULT_TASKS_DIR
from multiharness.sandbox import BACKENDS
from multiharness.tasks import HELD_OUT_TEMPLATES, load_tasks

METRICS = ["pass_at_1", "mean_reward", "mean_tool_calls", "well_formed_share", "zero_spread_share", "coverage",
           "not_graded"]


def summary(report) -> dict:
    return {name: getattr(report, name) for name in METRICS}


def pass_by_group(report, groups: dict[str, str]) -> dict[str, float]:
    """pass@1 of the graded episodes of each group (task path → group name); None when none was graded."""
    result = {}
    for name in sorted(set(groups.values())):
        graded = [e.outcome for e in report.episodes if groups[e.task_path] == name and e.outcome.graded]
        result[name] = sum(o.correctness for o in graded) / len(graded) if graded else None
    return result


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR, help="local model folder")
    parser.add_argument("--tasks", type=Path, default=DEFAULT_TASKS_DIR / "test", help="built test tasks")
    parser.add_argument("--difficulties", default="easy,medium", help="comma-separated tiers to sample from")
    parser.add_argument("--limit", type=int, default=16, help="number of tasks")
    parser.add_argument("--per-group", type=int, default=None, help="instead of --limit: N tasks per tier × seen/unseen")
    parser.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (the training one)")
    parser.add_argument("--samples", type=int, default=4, help="samples per task at --temperature (a GRPO group)")
    parser.add_argument("--max-turns", type=int, default=4, help="model calls per episode")
    parser.add_argument("--max-new-tokens", type=int, default=256, help="tokens per model call")
    parser.add_argument("--sandbox", choices=BACKENDS, default="local", help="where tools run")
    parser.add_argument("--output", type=Path, required=True, help="JSON report to write")
    return parser.parse_args()


def main():
    args = parse_args()
    logging.basicConfig(level=logging.WARNING)
    # bf16 halves the cost of the long tool-schema prompts on CPUs with bf16 units (AMX/AVX512-BF16).
    model, tokenizer = load_model_and_tokenizer(args.model, dtype=torch.bfloat16 if cpu_supports_bf16() else None)
    difficulties = tuple(args.difficulties.split(","))
    if args.per_group:
        tasks = select_by_group(load_tasks(args.tasks), difficulties, args.per_group, HELD_OUT_TEMPLATES)
    else:
        tasks = select_tasks(load_tasks(args.tasks), difficulties, args.limit)
    paths = [str(t.path) for t in tasks]
    groups = {str(t.path): task_group(t, HELD_OUT_TEMPLATES) for t in tasks}
    settings = dict(max_turns=args.max_turns, max_new_tokens=args.max_new_tokens, sandbox=args.sandbox)
    print(f"evaluating {args.model} on {len(tasks)} tasks from {args.tasks}")

    greedy = evaluate(model, tokenizer, paths, temperature=0.0, **settings)
    sampled = evaluate(model, tokenizer, paths, temperature=args.temperature, samples_per_task=args.samples, **settings)
    result = {
        "model": str(args.model),
        "tasks": paths,
        "greedy": summary(greedy),
        "sampled": {"temperature": args.temperature, "samples": args.samples, **summary(sampled)},
        "greedy_by_group": pass_by_group(greedy, groups),
        "sampled_by_group": pass_by_group(sampled, groups),
        "episodes": [asdict(e) for e in greedy.episodes],
        "sampled_episodes": [asdict(e) for e in sampled.episodes],
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=1, default=str))
    print(f"pass@1 greedy {_rate(greedy.pass_at_1)} (coverage {_rate(greedy.coverage)}), "
          f"sampled {_rate(sampled.pass_at_1)} (coverage {_rate(sampled.coverage)}); report: {args.output}")


if __name__ == "__main__":
    main()
