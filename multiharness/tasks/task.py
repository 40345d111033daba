"""The Task record: load a Harbor task directory, grade an answer on the host, run its reference solution.

A task directory looks the same whether it was generated here or imported from SmolDataEnvs:
`instruction.md`, `task.toml` (`[metadata]` difficulty, template, answer_type, source),
`environment/` (Dockerfile, `input/` with the data files), `tests/` (grader and gold, read only
on the host or by Harbor's verifier) and, for generated tasks, `solution/solve.sh`.

Grading rules: a generated task keeps its gold in `tests/gold.json` and is graded in-process
with `multiharness.grading.grade_with_gold`; an imported task keeps its own `tests/grader.py`
and the grading parameters of its `[verifier.env]` in `tests/verifier_env.json`, and its grader
is the authority (run as a subprocess, answer on stdin). `grade_answer` returns 1 or 0, and
raises `GradingError` when the answer could not be graded (unreadable gold, a grader that
crashed): `multiharness.episode.score` records that as "not graded", never as wrong.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from multiharness import grading
from multiharness.layout import INPUT_DIR

__all__ = [
    "Task",
    "load_task",
    "load_tasks",
    "find_task",
    "grade_answer",
    "solution_program",
    "solution_command",
    "run_reference_solution",
]

logger = logging.getLogger(__name__)

GRADER_TIMEOUT_S = 60.0
"""An imported task's grader gets this long per answer (it is a short script; a hang is a bug)."""

SOLUTION_TIMEOUT_S = 120.0
"""A reference solution gets this long (they read a few small files with pandas)."""

_PROGRAM_START, _PROGRAM_END = "<<'PY'\n", "\nPY\n"


@dataclass(frozen=True)
class Task:
    """One data-analysis task: a Harbor task directory on the host."""

    id: str
    """The directory name, unique within a split (e.g. `train-0007-top-category`)."""
    path: Path
    """The task directory (instruction.md, task.toml, environment/, tests/, solution/)."""
    instruction: str
    """The prompt the agent sees: the question and the input files it may read."""
    difficulty: str
    """easy | medium | hard."""
    template: str
    """The question template it was generated from; "smoldataenvs" for imported tasks."""
    answer_type: str
    """numeric | label | yesno | list | date: how the grader compares the answer."""
    source: str
    """"generated" (by `multiharness.tasks.build`) or "smoldataenvs" (imported)."""

    @property
    def input_dir(self) -> Path:
        """The input files on the host (mounted read-only at /home/user/input in a sandbox)."""
        return self.path / "environment" / "input"


def load_task(path: Path) -> Task:
    """Read a task directory; raises ValueError naming the file when it is not a task."""
    path = Path(path)
    try:
        instruction = (path / "instruction.md").read_text(encoding="utf-8")
        config = tomllib.loads((path / "task.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ValueError(f"{path} is not a task directory: {error}. A task has instruction.md and task.toml.") from error
    metadata = config.get("metadata", {})
    difficulty = metadata.get("difficulty", metadata.get("difficulty_tier"))
    if difficulty not in ("easy", "medium", "hard"):
        raise ValueError(f"{path / 'task.toml'}: [metadata] difficulty is {difficulty!r}; expected easy, medium or hard.")
    return Task(
        id=path.name,
        path=path,
        instruction=instruction,
        difficulty=difficulty,
        template=metadata.get("template", "smoldataenvs"),
        answer_type=metadata.get("answer_type", "label"),
        source=metadata.get("source", "generated" if (path / "tests" / "gold.json").exists() else "smoldataenvs"),
    )


def load_tasks(root: Path) -> list[Task]:
    """All tasks under `root` (a task dir, a split dir, or a dir of split dirs), sorted by id.

    Raises FileNotFoundError when there are none: on a fresh checkout the splits are not built yet,
    and an empty list would surface later as an unrelated error (an empty dataset, a zero division).
    """
    root = Path(root)
    if (root / "task.toml").exists():
        return [load_task(root)]
    found = sorted({p.parent for p in root.glob("task.toml")} | {p.parent for p in root.glob("*/task.toml")}
                   | {p.parent for p in root.glob("*/*/task.toml")})
    if not found:
        raise FileNotFoundError(f"no tasks under {root}: build the splits with `python -m multiharness tasks build`")
    return sorted((load_task(p) for p in found), key=lambda task: (task.id, str(task.path)))


def load_tasks_or_exit(root: Path) -> list[Task]:
    """`load_tasks` for a command line: no tasks under `root` stops it with the reason, not a traceback."""
    try:
        return load_tasks(root)
    except FileNotFoundError as error:
        raise SystemExit(f"error: {error}") from error


def find_task(tasks: list[Task], prompt: str | list[dict]) -> Task:
    """The task whose instruction `prompt` holds: a text, or chat messages (their user messages).

    A harness wraps the instruction in its own prompt, so a message that contains the whole
    instruction counts. Raises ValueError when no task matches, or several do (tasks that share an
    instruction differ in their data): the caller then cannot know which task to grade against.
    """
    if isinstance(prompt, str):
        texts = [prompt]
    else:
        texts = [_text(m.get("content")) for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
    matches = [task for task in tasks if any(task.instruction.strip() in text for text in texts)]
    if len(matches) == 1:
        return matches[0]
    shown = repr(texts[-1][:120]) if texts else "with no user message"
    if not matches:
        raise ValueError(
            f"no task's instruction is in the prompt {shown} (of {len(tasks)} tasks): build the prompt from "
            "task.instruction, or pass a Task, a task directory or a row with 'task_path'"
        )
    raise ValueError(
        f"{len(matches)} tasks have the instruction in the prompt {shown} ({', '.join(t.id for t in matches[:5])}): "
        "pass a Task, a task directory or a row with 'task_path' to say which"
    )


def _text(content) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


# ----------------------------------------------------------------------------------------------
# Grading on the host
# ----------------------------------------------------------------------------------------------


def grade_answer(task: Task, answer: str) -> int:
    """1 if `answer` is right, 0 if wrong; GradingError if it could not be graded (see module docstring)."""
    gold_file = task.path / "tests" / "gold.json"
    if gold_file.exists():
        try:
            gold = json.loads(gold_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:  # bad JSON is a ValueError too
            raise grading.GradingError(f"task {task.id}: gold {gold_file} is unreadable: {error}") from error
        try:
            return grading.grade_with_gold(answer, gold)
        except grading.GradingError as error:
            raise grading.GradingError(f"task {task.id}: {error}") from error
    if (task.path / "tests" / "grader.py").exists():
        return _grade_with_task_grader(task, answer)
    raise grading.GradingError(f"task {task.id} has no tests/gold.json and no tests/grader.py: nothing can grade it")


def _grade_with_task_grader(task: Task, answer: str) -> int:
    """Run an imported task's own grader: answer on stdin, gold in its environment."""
    env_file = task.path / "tests" / "verifier_env.json"
    try:
        verifier_env = json.loads(env_file.read_text(encoding="utf-8")) if env_file.exists() else {}
        result = subprocess.run(
            [sys.executable, str(task.path / "tests" / "grader.py"), "--json"],
            input=answer, capture_output=True, text=True, timeout=GRADER_TIMEOUT_S,
            env={"PATH": os.environ.get("PATH", ""), **{k: str(v) for k, v in verifier_env.items()}},
        )
    except (OSError, ValueError, subprocess.TimeoutExpired) as error:
        raise grading.GradingError(f"task {task.id}: its grader did not run: {error}") from error
    if result.returncode != 0:
        raise grading.GradingError(
            f"task {task.id}: its grader exited {result.returncode}: {result.stderr.strip()[-300:]}")
    try:
        verdict = json.loads(result.stdout.strip().splitlines()[-1])
        value = verdict.get("correctness", verdict.get("reward"))
    except (ValueError, IndexError, AttributeError):
        value = None
    if value not in (0, 1):  # 0.0/1.0 and true/false compare equal to 0/1 and are accepted
        raise grading.GradingError(
            f"task {task.id}: its grader printed {result.stdout[-300:]!r}, not correctness 0 or 1")
    return int(value)


# ----------------------------------------------------------------------------------------------
# Reference solutions
# ----------------------------------------------------------------------------------------------


def solution_program(task: Task) -> str:
    """The Python program inside `solution/solve.sh` (it reads the input files from the cwd)."""
    script_file = task.path / "solution" / "solve.sh"
    if not script_file.exists():
        raise ValueError(f"Task {task.id} has no reference solution ({script_file} is missing); "
                         f"only generated tasks have one.")
    script = script_file.read_text(encoding="utf-8")
    start, end = script.find(_PROGRAM_START), script.rfind(_PROGRAM_END)
    if start < 0 or end < start:
        raise ValueError(f"{script_file} has no python3 heredoc (<<'PY' ... PY) to take the program from.")
    return script[start + len(_PROGRAM_START) : end + 1]


def solution_command(task: Task, input_dir: str = INPUT_DIR) -> str:
    """The reference solution as one bash command that prints the answer (an expert's tool call)."""
    return f"cd {input_dir} && python3 - <<'PY'\n{solution_program(task)}PY"


_PANDAS_READERS = {".parquet": "read_parquet", ".json": "read_json"}


def look_command(task: Task, input_dir: str = INPUT_DIR) -> str:
    """One command showing every input file (an expert's first tool call): the first lines of text
    files, two rows of the others, the CREATE TABLE statements of SQLite files."""
    parts = []
    for path in sorted(task.input_dir.iterdir()):
        name, suffix = path.name, path.suffix
        if suffix in (".csv", ".jsonl"):
            look = f"head -n 3 {name}"
        elif suffix in _PANDAS_READERS:
            program = f'import pandas as pd; print(pd.{_PANDAS_READERS[suffix]}("{name}").head(2).to_string())'
            look = f"python3 -c {shlex.quote(program)}"
        elif suffix == ".db":
            program = f'import sqlite3; [print(s) for (s,) in sqlite3.connect("{name}").execute("select sql from sqlite_master")]'
            look = f"python3 -c {shlex.quote(program)}"
        else:
            look = f"head -c 300 {name}"
        parts.append(f"echo '== {name}'; {look}")
    return f"cd {input_dir}; " + "; ".join(parts)


def run_reference_solution(task: Task, timeout: float = SOLUTION_TIMEOUT_S) -> str:
    """Run `bash solution/solve.sh` on the host against the task's input files; return its answer.

    `python3` resolves to this interpreter's environment first (it has pandas and pyarrow).
    Raises RuntimeError with the script's stderr when it fails.
    """
    with tempfile.TemporaryDirectory(prefix="multiharness-solve-") as scratch:
        answer_file = Path(scratch) / "answer.txt"
        env = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "INPUT_DIR": str(task.input_dir.resolve()),
            "ANSWER_FILE": str(answer_file),
        }
        try:
            result = subprocess.run(["bash", str(task.path / "solution" / "solve.sh")], env=env,
                                    capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as error:
            raise RuntimeError(f"Task {task.id}: solution/solve.sh ran past {timeout:.0f} s.") from error
        if result.returncode != 0 or not answer_file.exists():
            raise RuntimeError(f"Task {task.id}: solution/solve.sh exited {result.returncode}: "
                               f"{result.stderr.strip()[-500:]}")
        return answer_file.read_text(encoding="utf-8").strip()
