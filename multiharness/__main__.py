"""Command line of the library: `python -m multiharness COMMAND --help` for each command.

  tasks build|verify|import   make, check or import Harbor task directories
  grade                       grade one answer (against a gold string or a task)
  sandbox run                 run one command in a fresh sandbox of a task
  engine                      serve a local model with token ids and behaviour logprobs
  episode                     run one task in a real harness CLI through the capture proxy
"""

import argparse
import json
import logging
import sys
from pathlib import Path

from .grading import ANSWER_TYPES
from .model import DTYPES
from .paths import DEFAULT_MODEL_DIR, DEFAULT_TASKS_DIR
from .sandbox import BACKENDS

# `multiharness.harnesses.HARNESSES` and RUNNERS, `multiharness.endpoint.POLICIES`, written out so that --help
# does not import OpenEnv (seconds); tests/test_cli.py checks that they agree.
HARNESS_NAMES = ["opencode", "claude-code", "codex", "mini-swe-agent"]
POLICIES = ["model", "scripted"]
RUNNERS = ["project", "harbor"]


# ---- tasks ------------------------------------------------------------------------------------


def _tasks_build(args) -> int:
    from .tasks import build_split

    tasks = build_split(args.split, args.out)
    print(f"built {len(tasks)} tasks under {args.out}")
    return 0


def _tasks_verify(args) -> int:
    from .tasks import verify_tasks

    report = verify_tasks(args.out, shell=args.shell)
    print(report.summary())
    for failure in report.failures:
        print(f"  ✗ {failure}")
    return 0 if report.ok else 1


def _tasks_import(args) -> int:
    from .tasks import import_tasks

    tasks = import_tasks(args.src, args.out, allow_network=args.allow_network)
    print(f"imported {len(tasks)} tasks into {args.out}")
    return 0


# ---- grading ----------------------------------------------------------------------------------


def _grade(args) -> int:
    from .grading import grade

    if args.task is not None:
        from .tasks import grade_answer, load_task

        correctness = grade_answer(load_task(args.task), args.answer)
    else:
        correctness = grade(
            args.prediction, args.gold, args.type, atol=args.atol, rtol=args.rtol, ordered=args.ordered
        )
    print(json.dumps({"correctness": correctness}))
    return 0 if correctness is not None else 1


# ---- sandbox ----------------------------------------------------------------------------------


def _sandbox_run(args) -> int:
    import shlex

    from .sandbox import open_sandbox

    command = args.command
    if not command:
        print("error: give the command after --, e.g. sandbox run TASK_DIR -- ls /home/user/input", file=sys.stderr)
        return 2
    with open_sandbox(args.task_dir, args.sandbox) as sandbox:
        result = sandbox.exec(shlex.join(command) if len(command) > 1 else command[0], timeout=args.timeout)
    print(result.output, end="" if result.output.endswith("\n") else "\n")
    print(f"[exit code {result.exit_code}{' (timed out)' if result.timed_out else ''}]")
    return result.exit_code


# ---- engine -----------------------------------------------------------------------------------


def _engine(args) -> int:
    from .engine import serve

    serve(args.model, host=args.host, port=args.port, cache_mb=args.cache_mb,  # None: the engine's default
          dtype=args.dtype)
    return 0


# ---- episode ----------------------------------------------------------------------------------


def _episode(args) -> int:
    import time

    from .capture import CaptureError
    from .endpoint import open_endpoint
    from .harnesses import get_runner, run_episode
    from .tasks import load_task

    task = load_task(args.task)
    source = args.engine or args.model
    try:
        with open_endpoint(source, policy=args.policy, tasks=[task], max_tokens=args.max_tokens,
                           max_model_calls=args.max_model_calls) as endpoint:
            before = endpoint.prompt_tokens()
            result, trace = run_episode(
                args.harness, task, endpoint.proxy, model=endpoint.model, sampling={"temperature": args.temperature},
                max_tokens=args.max_tokens, max_model_calls=args.max_model_calls, timeout_s=args.timeout,
                runner=get_runner(args.runner),
            )
            after = endpoint.prompt_tokens()
    except CaptureError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    args.output.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    trace_file = args.output / f"{args.harness}-{task.id}-{stamp}-{result.session_key[:8]}.json"
    # The engine's prompt tokens during this episode: served from its prefix cache, and computed.
    cached = computed = None
    if before is not None and after is not None:
        cached = after[1] - before[1]
        computed = after[0] - before[0] - cached
    record = {**result.to_json(), "prompt_tokens_cached": cached, "prompt_tokens_computed": computed,
              "trace_file": str(trace_file)}
    trace_file.write_text(json.dumps({"episode": record, "trace": trace.model_dump() if trace else None}))
    print(json.dumps(record))
    return 0 if result.outcome.graded else 1


# ---- parser -----------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m multiharness", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress of the library")
    commands = parser.add_subparsers(dest="command", required=True)

    tasks = commands.add_parser("tasks", help="build, verify or import task directories")
    tasks_commands = tasks.add_subparsers(dest="tasks_command", required=True)
    build = tasks_commands.add_parser("build", help="build task directories from the committed split manifests")
    build.add_argument("--split", choices=["train", "test", "all"], default="all", help="which split to build")
    build.add_argument("--out", type=Path, default=DEFAULT_TASKS_DIR, help="output folder (one subfolder per split)")
    build.set_defaults(run=_tasks_build)
    verify = tasks_commands.add_parser("verify", help="check hashes, grade every reference solution, look for leaks")
    verify.add_argument("--out", type=Path, default=DEFAULT_TASKS_DIR, help="the folder `tasks build` wrote")
    verify.add_argument("--shell", action="store_true",
                        help="run every solution/solve.sh with bash (slower) instead of its Python in a warm worker")
    verify.set_defaults(run=_tasks_verify)
    importer = tasks_commands.add_parser("import", help="import SmolDataEnvs Harbor task folders")
    importer.add_argument("src", type=Path, help="folder of downloaded task folders (each with instruction.md)")
    importer.add_argument("--out", type=Path, required=True, help="where to write the imported tasks")
    importer.add_argument("--allow-network", action="store_true",
                          help="run each task's data download script (needs HF_TOKEN in the environment)")
    importer.set_defaults(run=_tasks_import)

    grade = commands.add_parser("grade", help="grade one answer; prints {\"correctness\": 0|1}")
    grade.add_argument("--gold", help="the gold answer")
    grade.add_argument("--prediction", help="the answer to grade")
    grade.add_argument("--type", choices=ANSWER_TYPES, default="label", help="answer type of the gold")
    grade.add_argument("--atol", type=float, help="absolute tolerance for numbers")
    grade.add_argument("--rtol", type=float, help="relative tolerance for numbers")
    grade.add_argument("--ordered", action="store_true", help="lists must match in order")
    grade.add_argument("--task", type=Path, help="grade against this task directory's gold instead of --gold")
    grade.add_argument("--answer", help="the answer to grade against --task")
    grade.set_defaults(run=_grade)

    sandbox = commands.add_parser("sandbox", help="run commands in a task's sandbox")
    sandbox_commands = sandbox.add_subparsers(dest="sandbox_command", required=True)
    run = sandbox_commands.add_parser(
        "run", help="run one command in a fresh sandbox and print its output",
        usage="python -m multiharness sandbox run TASK_DIR [--sandbox B] [--timeout S] -- COMMAND [ARG ...]",
    )
    run.add_argument("task_dir", type=Path, help="a task directory")
    run.add_argument("--sandbox", choices=BACKENDS, default="local", help="sandbox backend")
    run.add_argument("--timeout", type=float, default=60.0, help="seconds before the command is killed")
    run.set_defaults(run=_sandbox_run, takes_command=True)

    engine = commands.add_parser("engine", help="serve a model over OpenAI chat completions with token ids")
    engine.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR, help="local model folder")
    engine.add_argument("--host", default="127.0.0.1", help="address to listen on")
    engine.add_argument("--port", type=int, default=8001, help="port to listen on")
    engine.add_argument("--cache-mb", type=float, default=None,
                        help="MB for the prefix cache (keys and values of prompts already seen, least recently "
                             "used evicted first; 0 turns it off; default: multiharness.engine.DEFAULT_CACHE_MB)")  # fmt: skip
    engine.add_argument("--dtype", choices=DTYPES, default="float32",
                        help="what the weights are served in (bfloat16: faster on bf16 hardware, but greedy "
                             "output varies with batching; multiharness.model.DTYPES)")
    engine.set_defaults(run=_engine)

    episode = commands.add_parser("episode", help="run one harness episode on a task; prints one JSON line")
    episode.add_argument("--harness", required=True, choices=HARNESS_NAMES,
                         help="the agent CLI to run in the task's sandbox")
    episode.add_argument("--task", type=Path, required=True, help="a task directory")
    episode.add_argument("--engine", help="URL of a running engine with token ids (vLLM); default: start one here")
    episode.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR, help="model folder for the local engine")
    episode.add_argument("--policy", choices=POLICIES, default="model",
                         help="scripted: play the task's reference solution instead of sampling (a harness check)")
    episode.add_argument("--runner", choices=RUNNERS, default="project",
                         help="project: the project's harness runner; harbor: a Harbor trial of Harbor's own agent")
    episode.add_argument("--timeout", type=float, default=900.0, help="seconds before the harness is killed")
    episode.add_argument("--max-tokens", type=int, default=1024, help="sampled tokens per model call")
    episode.add_argument("--max-model-calls", type=int, default=17,
                         help="model calls before the proxy ends the agent's loop (the capture default)")
    episode.add_argument("--temperature", type=float, default=1.0, help="sampling temperature the session pins")
    episode.add_argument("--output", type=Path, default=DEFAULT_TASKS_DIR.parent / "episodes",
                         help="folder for the episode's record and token-level trace (JSON)")
    episode.set_defaults(run=_episode)

    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # What follows the first `--` is a command to run, whatever options stand before it or after
    # the positional arguments (argparse's REMAINDER would swallow options placed after TASK).
    command = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = _parser().parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    if getattr(args, "takes_command", False):
        args.command = command
    elif command:
        _parser().error(f"'{args.command}' takes no command after --")
    if args.command == "grade" and (args.task is None) == (args.gold is None):
        _parser().error("grade needs either --gold with --prediction, or --task with --answer")
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
