"""Import SmolDataEnvs Harbor task folders into the layout of generated tasks.

SmolDataEnvs tasks (see the dataset repos `FineEnvs/SmolDataEnvs-harbor-*`, downloaded
beforehand with `huggingface_hub.snapshot_download(repo_type="dataset")`) are Harbor task
folders whose gold sits in `task.toml` under `[verifier.env]` and whose data files are
downloaded by `environment/pull_bucket.py` when the container starts. The importer rewrites
each folder so that every loop can treat it like a generated task:

- `[verifier.env]` moves out of task.toml into `tests/verifier_env.json`: the gold then lives
  only under `tests/`, and `tests/test.sh` exports it before running the task's own verifier
  script (kept as `tests/original_test.sh`);
- the task's own `tests/grader.py` stays the authority on its gold: `grade_answer` runs it
  with the answer on stdin, as Harbor's verifier does;
- `[metadata]` gains `difficulty` (from `difficulty_tier`), `template = "smoldataenvs"`,
  `answer_type` (read from the grading parameters when they name it) and `source`;
- data files already staged in `environment/input/` are copied; otherwise, only when the
  caller allows network access and `HF_TOKEN` is set, `pull_bucket.py` downloads them with
  the token in that one command's environment. Without data a task is still imported, and a
  warning says how to stage it.

Credentials are never written: `[environment.env]` keeps placeholders such as
`"${HF_TOKEN}"` (Harbor expands them from the host at staging), and a literal value found
there is replaced by its placeholder.

Written by hand because the rewrite is specific to this dataset's folder format.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import tomli_w

from multiharness.tasks.task import Task, load_task

__all__ = ["SOURCE", "TaskImportError", "import_tasks"]

logger = logging.getLogger(__name__)

SOURCE = "smoldataenvs"
"""`source` and `template` of imported tasks."""

DOWNLOAD_TIMEOUT_S = 600.0
"""Time one task's pull_bucket.py gets to download its data."""

# Their answer types (per-task match modes) mapped to the grader's answer types.
_ANSWER_TYPES = {
    "numeric": "numeric", "number": "numeric", "float": "numeric", "int": "numeric",
    "label": "label", "short_label": "label", "short-label": "label", "text": "label",
    "free_form": "label", "free-form": "label", "freeform": "label", "string": "label",
    "list": "list", "csv_list": "list", "csv-list": "list",
    "yesno": "yesno", "yes_no": "yesno", "yes/no": "yesno", "boolean": "yesno", "bool": "yesno",
    "date": "date",
}
_PLACEHOLDER = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FILES_HEADER = "Files (in /home/user/input"

_TEST_SH = """\
#!/bin/bash
# Harbor verifier of an imported task. The grading parameters that task.toml's [verifier.env]
# held live in verifier_env.json next to this script, so the gold stays under tests/: export
# them, then run the task's own verifier script.
set -euo pipefail
tests="$(cd "$(dirname "$0")" && pwd)"
eval "$(python3 - "$tests/verifier_env.json" <<'PY'
import json, shlex, sys
for key, value in json.load(open(sys.argv[1])).items():
    print(f"export {key}={shlex.quote(str(value))}")
PY
)"
exec bash "$tests/original_test.sh"
"""


class TaskImportError(ValueError):
    """A source folder is not a SmolDataEnvs task, or its data could not be staged."""


def import_tasks(src: Path, out: Path, *, allow_network: bool = False) -> list[Task]:
    """Import every task folder under `src` (`<name>/` or `tasks/<name>/`) into `out/<name>/`.

    `allow_network=True` runs each unstaged task's `environment/pull_bucket.py` with the
    `HF_TOKEN` of this process's environment (required then). Returns the tasks, sorted by id.
    """
    src, out = Path(src), Path(out)
    folders = sorted({p.parent for pattern in ("instruction.md", "*/instruction.md", "tasks/*/instruction.md")
                      for p in src.glob(pattern)})
    if not folders:
        raise FileNotFoundError(f"No task folders under {src}: expected <name>/instruction.md (or tasks/<name>/...), "
                                f"as in a snapshot of FineEnvs/SmolDataEnvs-harbor-test.")
    token = os.environ.get("HF_TOKEN") if allow_network else None
    if allow_network and not token:
        raise TaskImportError("Downloading task data needs HF_TOKEN in the environment; export it and run again.")
    tasks, unstaged = [], []
    for folder in folders:
        task = _import_one(folder, out / folder.name, token)
        if not any(task.input_dir.iterdir()):
            unstaged.append(task.id)
        tasks.append(task)
    if unstaged:
        logger.warning(
            "%d of %d imported tasks have no data files yet (e.g. %s). Stage them: copy the files each "
            "instruction.md lists into <task>/environment/input/, or import again with network allowed "
            "and HF_TOKEN set to run their pull_bucket.py.", len(unstaged), len(tasks), unstaged[0])
    logger.info("imported %d tasks into %s", len(tasks), out)
    return sorted(tasks, key=lambda task: task.id)


def _import_one(folder: Path, dest: Path, token: str | None) -> Task:
    instruction = _read(folder / "instruction.md")
    if "Question:" not in instruction or _FILES_HEADER not in instruction:
        raise TaskImportError(f"{folder / 'instruction.md'} lacks a 'Question:' line or a "
                              f"'{_FILES_HEADER}, ...):' list: not a SmolDataEnvs task.")
    try:
        config = tomllib.loads(_read(folder / "task.toml"))
    except tomllib.TOMLDecodeError as error:
        raise TaskImportError(f"{folder / 'task.toml'} is not valid TOML: {error}") from error
    if not (folder / "tests" / "grader.py").is_file():
        raise TaskImportError(f"{folder} has no tests/grader.py; the importer keeps the task's own grader.")
    verifier_env = {k: str(v) for k, v in config.get("verifier", {}).pop("env", {}).items()}
    bad_names = [k for k in verifier_env if not _ENV_NAME.fullmatch(k)]
    if bad_names:
        raise TaskImportError(f"{folder / 'task.toml'}: [verifier.env] names {bad_names} are not environment variable names.")
    _keep_placeholders(config, folder)
    metadata = config.setdefault("metadata", {})
    difficulty = metadata.get("difficulty_tier", metadata.get("difficulty"))
    if difficulty not in ("easy", "medium", "hard"):
        raise TaskImportError(f"{folder / 'task.toml'}: [metadata] difficulty_tier is {difficulty!r}; "
                              f"expected easy, medium or hard.")
    metadata.update(difficulty=difficulty, template=SOURCE, answer_type=_answer_type(verifier_env), source=SOURCE)

    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(folder, dest, ignore=shutil.ignore_patterns("task.toml", ".git*", ".cache"))
    (dest / "task.toml").write_text(tomli_w.dumps(config), encoding="utf-8")
    tests = dest / "tests"
    if (tests / "test.sh").exists():
        (tests / "test.sh").rename(tests / "original_test.sh")
    (tests / "verifier_env.json").write_text(json.dumps(verifier_env, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (tests / "test.sh").write_text(_TEST_SH, encoding="utf-8")
    (tests / "test.sh").chmod(0o755)
    inputs = dest / "environment" / "input"
    inputs.mkdir(parents=True, exist_ok=True)
    if not any(inputs.iterdir()) and token:
        _download(dest, inputs, token)
    return load_task(dest)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise TaskImportError(f"Cannot read {path}: {error}") from error


def _keep_placeholders(config: dict, folder: Path) -> None:
    """Make every [environment.env] value a ${NAME} placeholder, never a literal credential."""
    env = config.get("environment", {}).get("env", {})
    for key, value in env.items():
        if not _PLACEHOLDER.fullmatch(str(value)):
            logger.warning("%s: [environment.env] %s held a literal value; replaced by the placeholder ${%s}",
                           folder / "task.toml", key, key)
            env[key] = "${" + key + "}"


def _answer_type(verifier_env: dict[str, str]) -> str:
    """The grader's answer type named by the grading parameters (a *TYPE* or *MODE* key), else label."""
    for key, value in sorted(verifier_env.items()):
        if ("type" in key.lower() or "mode" in key.lower()) and value.strip().lower() in _ANSWER_TYPES:
            return _ANSWER_TYPES[value.strip().lower()]
    return "label"


def _download(dest: Path, inputs: Path, token: str) -> None:
    """Run the task's pull_bucket.py with the token in its environment only."""
    script = dest / "environment" / "pull_bucket.py"
    if not script.exists():
        raise TaskImportError(f"{dest.name}: no environment/pull_bucket.py to download its data with.")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", ""), "HF_TOKEN": token,
           "INPUT_DIR": str(inputs.resolve())}
    try:
        result = subprocess.run([sys.executable, str(script)], cwd=inputs, env=env, capture_output=True,
                                text=True, timeout=DOWNLOAD_TIMEOUT_S)
    except subprocess.TimeoutExpired as error:
        raise TaskImportError(f"{dest.name}: pull_bucket.py ran past {DOWNLOAD_TIMEOUT_S:.0f} s.") from error
    if result.returncode != 0:
        tail = result.stderr.strip()[-500:].replace(token, "***")
        raise TaskImportError(f"{dest.name}: pull_bucket.py exited {result.returncode}: {tail}")
    if not any(inputs.iterdir()):
        raise TaskImportError(f"{dest.name}: pull_bucket.py wrote nothing into {inputs} (it was given INPUT_DIR and "
                              f"that folder as its cwd); it may write only to /home/user/input: stage by hand.")
