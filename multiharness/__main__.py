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

from .paths import DEFAULT_MODEL_DIR, DEFAULT_TASKS_DIR

ANSWER_TYPES = ["numeric", "label", "yesno", "list", "date"]
SANDBOXES = ["local", "docker", "daytona"]


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

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
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

    serve(args.model, host=args.host, port=args.port)
    return 0


# ---- episode ----------------------------------------------------------------------------------


def _episode(args) -> int:
    import time

    import httpx

    from .capture import start_capture
    from .engine import EngineServer, LocalEngine, ScriptedPolicy
    from .harnesses import get_harness, prefix_forks, run_episode
    from .model import load_model_and_tokenizer
    from .tasks import load_task, solution_command

    harness, task = get_harness(args.harness), load_task(args.task)
    engine, level = None, None
    if args.engine:  # someone else's engine (vLLM): ask its name, let the proxy measure its capture level
        engine_url = args.engine.rstrip("/").removesuffix("/v1")
        try:
            model_name = httpx.get(f"{engine_url}/v1/models", timeout=30).json()["data"][0]["id"]
        except (httpx.HTTPError, ValueError, KeyError, IndexError) as error:
            print(f"error: no model list at {engine_url}/v1/models ({error}); start the engine first "
                  "(python -m multiharness engine, or vllm serve) or leave out --engine", file=sys.stderr)
            return 2
    else:  # the local engine on --model, or the scripted stand-in that plays the task's reference solution
        if args.policy == "scripted":
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(args.model, local_files_only=True)
            policy = ScriptedPolicy(tokenizer, solution_command(task))
        else:
            policy = LocalEngine(*load_model_and_tokenizer(args.model))
        model_name = "scripted" if args.policy == "scripted" else Path(args.model).name
        engine = EngineServer(policy, model_name=model_name)
        engine_url, level = engine.start(), "tokens"  # the local engine returns token ids and processed logprobs
    try:
        with start_capture(engine_url, model_name, capture_level=level, max_tokens=args.max_tokens) as proxy:
            result, trace, capture_error = run_episode(
                harness, task, proxy, model=model_name, sampling={"temperature": args.temperature},
                max_tokens=args.max_tokens, timeout_s=args.timeout,
            )
    finally:
        if engine is not None:
            engine.stop()
    args.output.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    trace_file = args.output / f"{harness.name}-{task.id}-{stamp}-{result.session_key[:8]}.json"
    record = {**result.to_dict(), "capture_error": capture_error,
              **(prefix_forks(trace) if trace is not None else {}), "trace_file": str(trace_file)}
    trace_file.write_text(json.dumps({"episode": record, "trace": trace.model_dump() if trace else None}))
    print(json.dumps({key: record[key] for key in (
        "harness", "task_id", "correctness", "reward", "tool_calls", "model_calls", "seconds", "first_call_s",
        "model_s", "harness_s", "capture_level", "failure", "error", "capture_error", "trace_file",
    ) + (("transitions", "forks") if trace is not None else ())}))
    return 0 if result.failure is None else 1


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
    run = sandbox_commands.add_parser("run", help="run one command in a fresh sandbox and print its output")
    run.add_argument("task_dir", type=Path, help="a task directory")
    run.add_argument("--sandbox", choices=SANDBOXES, default="local", help="sandbox backend")
    run.add_argument("--timeout", type=float, default=60.0, help="seconds before the command is killed")
    run.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command and its arguments")
    run.set_defaults(run=_sandbox_run)

    engine = commands.add_parser("engine", help="serve a model over OpenAI chat completions with token ids")
    engine.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR, help="local model folder")
    engine.add_argument("--host", default="127.0.0.1", help="address to listen on")
    engine.add_argument("--port", type=int, default=8001, help="port to listen on")
    engine.set_defaults(run=_engine)

    episode = commands.add_parser("episode", help="run one harness episode on a task; prints one JSON line")
    episode.add_argument("--harness", required=True, choices=["opencode", "claude-code", "codex", "mini-swe-agent"],
                         help="the agent CLI to run in the task's sandbox")
    episode.add_argument("--task", type=Path, required=True, help="a task directory")
    episode.add_argument("--engine", help="URL of a running engine with token ids (vLLM); default: start one here")
    episode.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR, help="model folder for the local engine")
    episode.add_argument("--policy", choices=["model", "scripted"], default="model",
                         help="scripted: play the task's reference solution instead of sampling (a harness check)")
    episode.add_argument("--timeout", type=float, default=900.0, help="seconds before the harness is killed")
    episode.add_argument("--max-tokens", type=int, default=1024, help="sampled tokens per model call")
    episode.add_argument("--temperature", type=float, default=1.0, help="sampling temperature the session pins")
    episode.add_argument("--output", type=Path, default=DEFAULT_TASKS_DIR.parent / "episodes",
                         help="folder for the episode's record and token-level trace (JSON)")
    episode.set_defaults(run=_episode)

    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "grade" and (args.task is None) == (args.gold is None):
        _parser().error("grade needs either --gold with --prediction, or --task with --answer")
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
