# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Evaluate a model in the whitebox loop and in every harness, on held-out test tasks.

One episode per (task × loop × sample), each written to its own file as it ends, so a run that
stops is resumed by the same command (only pairs not graded run again). The local engine serves
a model folder on this machine, in float32 unless `--dtype bfloat16` (faster on a CPU with bf16
units, but its greedy episodes vary with batching: `multiharness.model.DTYPES`); `--endpoint`
evaluates whatever an OpenAI-compatible server serves (vLLM with token ids is trainable-grade; a
hosted API is evaluation only, and the summary says so). `--policy scripted` plays each task's
reference solution: a check of the plumbing.

    python eval/evaluate.py --model outputs/sft --tasks 20 --output outputs/eval/sft
    python eval/evaluate.py --model outputs/sft --loops whitebox --per-group 6 --difficulties easy,medium \\
        --output outputs/eval/sft-whitebox
    python eval/evaluate.py --model smol --endpoint http://gpu-box:8000 --runner harbor --concurrency 8 \\
        --output outputs/eval/remote
    python eval/evaluate.py --policy scripted --tasks 2 --output outputs/eval/plumbing

Writes OUTPUT/summary.json (pass@1 with Wilson 95% intervals, by loop, tier and seen/unseen
template; tool-call savings over `--baseline DIR`), OUTPUT/summary.png and .svg, and one
OUTPUT/pairs/<task>--<loop>[--<sample>].json per pair; logs to Trackio under eval/ at `--step`.
Exits with 2 when some pair is not graded.
"""

import argparse
import hashlib
import logging
import os
import sys
from pathlib import Path

from multiharness.endpoint import POLICIES, open_endpoint
from multiharness.episode import FailureBudgetExceeded
from multiharness.evaluation import (
    EVALUATOR_VERSION,
    LOOP_DEFAULTS,
    LOOPS,
    Evaluation,
    IdentityMismatch,
    Pair,
    select_by_group,
)
from multiharness.figures import summary_figure
from multiharness.harnesses import DEFAULT_TIMEOUT_S, RUNNERS
from multiharness.model import DTYPES
from multiharness.paths import DEFAULT_MODEL_DIR, DEFAULT_TASKS_DIR
from multiharness.sandbox import BACKENDS
from multiharness.tasks import HELD_OUT_TEMPLATES, load_tasks_or_exit

HOSTED_NOTE = ("the endpoint does not return token ids with processed logprobs (capture level {level!r}): "
               "these numbers are an evaluation only, the endpoint cannot train")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_argument_group("what is evaluated")
    source.add_argument("--model", default=str(DEFAULT_MODEL_DIR),
                        help="a model folder or Hub id served here, or the served name with --endpoint")
    source.add_argument("--endpoint", help="URL of a running OpenAI-compatible server (vLLM, the project's engine)")
    source.add_argument("--checkpoint", help="the identity recorded for this policy (default: --model)")
    source.add_argument("--dtype", choices=DTYPES, default="float32",
                        help="what a model folder is served in (bfloat16: faster on bf16 hardware, but greedy "
                             "episodes vary with batching; multiharness.model.DTYPES)")
    source.add_argument("--policy", choices=POLICIES, default="model",
                        help="scripted: the reference solutions answer (plumbing checks; --model gives the tokenizer)")
    where = parser.add_argument_group("where")
    where.add_argument("--loops", default=",".join(LOOPS), help=f"comma-separated, from {', '.join(LOOPS)}")
    where.add_argument("--runner", choices=RUNNERS, default="project", help="who runs the harness episodes")
    where.add_argument("--sandbox", choices=BACKENDS, default="local", help="where tools run")
    which = parser.add_argument_group("on which tasks")
    which.add_argument("--task-dir", type=Path, default=DEFAULT_TASKS_DIR / "test", help="built test tasks")
    picked = which.add_mutually_exclusive_group()
    picked.add_argument("--tasks", type=int, default=20, help="the first N tasks of the sorted test split")
    picked.add_argument("--per-group", type=int, help="N tasks per tier × seen/unseen template instead")
    which.add_argument("--difficulties", default="easy,medium,hard", help="the tiers tasks are drawn from")
    how = parser.add_argument_group("how")
    how.add_argument("--samples", type=int, default=1, help="episodes per (task, loop)")
    how.add_argument("--temperature", type=float, default=0.0, help="0 is greedy")
    how.add_argument("--max-model-calls", type=int, help="per episode (default: whitebox 4, as trained; harness 17)")
    how.add_argument("--max-tokens", type=int, help="per model call (default: whitebox 256; harness 1024)")
    how.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per episode")
    how.add_argument("--concurrency", type=int, default=1, help="episodes at once")
    out = parser.add_argument_group("output")
    out.add_argument("--output", type=Path, required=True, help="the evaluation's folder")
    out.add_argument("--baseline", type=Path, help="an earlier evaluation's folder: tool-call savings over it")
    out.add_argument("--step", type=int, default=0, help="the training step this checkpoint is (Trackio's x axis)")
    out.add_argument("--trackio-project", default="multiharness-eval", help="Trackio project ('' for none)")
    args = parser.parse_args(argv)
    args.loops = [loop.strip() for loop in args.loops.split(",") if loop.strip()]
    unknown = sorted(set(args.loops) - set(LOOPS))
    if unknown or not args.loops:
        parser.error(f"unknown loops {unknown}; choose from {', '.join(LOOPS)}")
    return args


def select(args) -> list:
    tiers = tuple(args.difficulties.split(","))
    tasks = sorted(load_tasks_or_exit(args.task_dir), key=lambda t: t.id)
    if args.per_group:
        return select_by_group(tasks, tiers, args.per_group, HELD_OUT_TEMPLATES)
    return [t for t in tasks if t.difficulty in tiers][: args.tasks]


def budgets(args, kind: str) -> dict:
    defaults = LOOP_DEFAULTS[kind]
    return {"max_model_calls": args.max_model_calls or defaults["max_model_calls"],
            "max_tokens": args.max_tokens or defaults["max_tokens"]}


def weights_sha(model: str) -> str | None:
    """The sha256 of a local model folder's weights and config (None for a Hub id or a served name), so a
    folder retrained in place is another policy, not a resumable one."""
    folder = Path(model)
    if not folder.is_dir():
        return None
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.safetensors")) + sorted(folder.glob("config.json")):
        digest.update(path.name.encode())
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 24):
                digest.update(chunk)
    return digest.hexdigest()


def identity(args, tasks) -> dict:
    """What makes two evaluations the same one: resuming may only add pairs of this identity."""
    served_here = args.policy == "model" and not args.endpoint
    return {
        "evaluator_version": EVALUATOR_VERSION,
        "model": args.model,
        "weights_sha256": weights_sha(args.model) if served_here else None,
        "dtype": args.dtype if served_here else None,  # greedy episodes differ between dtypes
        "endpoint": args.endpoint,
        "checkpoint": args.checkpoint or args.model,
        "policy": args.policy,
        "loops": args.loops,
        "runner": args.runner,
        "tasks": [t.id for t in tasks],
        "samples": args.samples,
        "temperature": args.temperature,
        "budgets": {kind: budgets(args, kind) for kind in LOOP_DEFAULTS},
    }


def log_to_trackio(args, summary: dict) -> None:
    os.environ.setdefault("TRACKIO_DIR", str(args.output.resolve() / "trackio"))  # read when trackio is imported
    import trackio

    metrics = {"eval/pass_at_1": summary["pass_at_1"], "eval/coverage": summary["coverage"],
               "eval/mean_reward": summary["mean_reward"], "eval/mean_tool_calls": summary["mean_tool_calls"]}
    for loop, group in summary["by_loop"].items():
        metrics |= {f"eval/{loop}/pass_at_1": group["pass_at_1"], f"eval/{loop}/coverage": group["coverage"]}
    trackio.init(project=args.trackio_project, name=args.checkpoint or Path(args.model).name,
                 config=summary["identity"], auto_log_cpu=False, auto_log_gpu=False)
    trackio.log({k: v for k, v in metrics.items() if v is not None}, step=args.step)
    trackio.finish()


def _rate(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    tasks = select(args)
    pairs = [Pair(task, loop, sample) for task in tasks for loop in args.loops for sample in range(args.samples)]
    try:
        evaluation = Evaluation(args.output, identity(args, tasks), pairs, held_out=HELD_OUT_TEMPLATES)
    except IdentityMismatch as error:
        sys.exit(f"error: {error}")
    pending = evaluation.pending()
    print(f"evaluating {args.checkpoint or args.model} ({args.policy}) in {', '.join(args.loops)} on {len(tasks)} "
          f"tasks: {len(pairs)} pairs, {len(pending)} to run")
    run, notes = None, []
    if pending:
        source = args.endpoint or args.model
        with open_endpoint(source, policy=args.policy, tasks=tasks if args.policy == "scripted" else (),
                           dtype=args.dtype) as endpoint:
            if endpoint.capture_level != "tokens":
                notes.append(HOSTED_NOTE.format(level=endpoint.capture_level))
            settings = {"runner": args.runner, "sandbox": args.sandbox, "sampling": {"temperature": args.temperature},
                        "timeout_s": args.timeout, **{kind: budgets(args, kind) for kind in LOOP_DEFAULTS}}
            try:
                run = evaluation.run(endpoint, settings, concurrency=args.concurrency)
            except FailureBudgetExceeded as error:  # what ran is kept: fix the cause and run again
                notes.append(f"stopped: {error}")
    summary = evaluation.summary(run=run, baseline=args.baseline, notes=notes)
    summary_figure(summary, args.output / "summary", title=args.checkpoint or args.model)
    if args.trackio_project:
        log_to_trackio(args, summary)
    for loop, group in summary["by_loop"].items():
        low, high = group["pass_at_1_interval"] or (None, None)
        print(f"  {loop:<16} pass@1 {_rate(group['pass_at_1'])} [{_rate(low)}, {_rate(high)}] "
              f"graded {group['graded']}/{group['expected']}")
    print(f"pass@1 {_rate(summary['pass_at_1'])}, coverage {_rate(summary['coverage'])}; {args.output}/summary.json")
    for note in notes:
        print(f"note: {note}")
    return 0 if summary["coverage"] == 1 else 2


if __name__ == "__main__":
    sys.exit(main())
