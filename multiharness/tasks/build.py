"""Build Harbor task directories from the committed split manifests, and verify them.

Manifests in, task directories out. `data/train.json` and `data/test.json` list every task of
a split: id, template, difficulty, answer type, seed, whether the template is held out of
training, and the sha256 of `instruction.md` and of each input file. `build_split` regenerates
each task from its (template, difficulty, seed), writes it under `<out>/<split>/<id>/` and
raises `TaskHashMismatch`, naming the task and the file, when a byte differs from the manifest.
`verify_tasks` checks a built tree: hashes against the manifests, no gold where the agent can
see it, and every reference solution graded 1 by the task's own gold.
Each manifest records its `version`; `load_manifest` refuses any but `MANIFEST_VERSION`, so
a split planned by older rules is rebuilt, not silently used.

Splits: train has 1,000 tasks (300 easy, 400 medium, 300 hard), test 250 (33 easy, 118
medium, 99 hard, the tier mix of SmolDataEnvs-harbor-test). Within a tier, templates take
turns, so each is about equally common. A fifth of each test tier comes from the
`HELD_OUT_TEMPLATES`, which never appear in train; train and test seeds do not overlap.
Test is held out by content too, as SmolDataEnvs keeps its splits apart by instruction hash:
no test task shares its instruction.md or any input file (by sha256) with a train task, and no
two test tasks share an instruction (`plan_test` moves a repeat on to its next seed). Train
may repeat an instruction over other data; that is more practice, not a leak.

After changing a template or a table generator, regenerate the manifests (and commit them):

    python -c "from multiharness.tasks.build import write_manifests; write_manifests()"

Written by hand because Harbor reads task directories but does not generate them.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import io
import json
import logging
import multiprocessing
import os
import random
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import tomli_w

from multiharness.grading import GradingError
from multiharness.layout import ANSWER_PATH, INPUT_DIR, WORKDIR
from multiharness.paths import DATA_DIR, DEFAULT_TASKS_DIR
from multiharness.tasks.tables import write_tables
from multiharness.tasks.task import Task, grade_answer, load_task, load_tasks, run_reference_solution, solution_program
from multiharness.tasks.templates import HELD_OUT_TEMPLATES, TEMPLATES, TIERS, Draft, generate, reference_program

__all__ = [
    "SPLITS",
    "SPLIT_SIZES",
    "HELD_OUT_SHARE",
    "MANIFEST_VERSION",
    "TaskHashMismatch",
    "VerifyFailure",
    "VerifyReport",
    "plan_split",
    "plan_test",
    "load_manifest",
    "build_task",
    "build_split",
    "verify_tasks",
    "gold_leaks",
    "write_manifests",
]

logger = logging.getLogger(__name__)

SPLITS = ("train", "test")
"""The committed splits; `build_split` also accepts "all"."""

SPLIT_SIZES = {
    "train": {"easy": 300, "medium": 400, "hard": 300},
    "test": {"easy": 33, "medium": 118, "hard": 99},
}
"""Tasks per split and tier."""

HELD_OUT_SHARE = 0.2
"""Share of each test tier drawn from templates never seen in training."""

_SEED_BASE = {"train": 1_000, "test": 900_000}  # disjoint seed ranges: train 1000.., test 900000..

_MAX_RESEEDS = 50  # a question with parameters needed at most 7 seeds to become new; one without never does

MANIFEST_VERSION = 2
"""Version 2: test shares no instruction and no input file with train, nor an instruction within itself."""

# Pinned so that the container computes with what the reference solutions were checked with,
# and grades with what the host grades with (math-verify: the grader's symbolic rung).
_DOCKERFILE = f"""\
# The task's container: input files read-only at {INPUT_DIR}, the agent works in {WORKDIR}.
FROM python:3.12-slim
RUN pip install --no-cache-dir numpy==2.4.6 pandas==3.1.1 pyarrow==26.0.1 math-verify==0.9.0
COPY input/ {INPUT_DIR}/
WORKDIR {WORKDIR}
"""

_TEST_SH = """\
#!/bin/bash
# Harbor verifier: grade the agent's answer with tests/grader.py against tests/gold.json and
# write the reward (0 or 1) to /logs/verifier/reward.txt. No answer file scores 0; a grader
# that cannot grade (bad gold) makes this script fail, which Harbor reports as an error.
set -uo pipefail
tests="$(cd "$(dirname "$0")" && pwd)"
answer="${ANSWER_FILE:-{ANSWER_PATH}}"
reward_file="${REWARD_FILE:-/logs/verifier/reward.txt}"
mkdir -p "$(dirname "$reward_file")"
if [ ! -s "$answer" ]; then
  echo 0 > "$reward_file"
  exit 0
fi
verdict="$(python3 "$tests/grader.py" --json --gold-file "$tests/gold.json" < "$answer")" || exit 1
python3 -c 'import json, sys; print(json.loads(sys.argv[1])["correctness"])' "$verdict" > "$reward_file"
""".replace("{ANSWER_PATH}", ANSWER_PATH)

_SOLVE_SH = """\
#!/bin/bash
# Reference solution: computes the answer from the input files alone and writes it to the
# answer file. INPUT_DIR and ANSWER_FILE (absolute paths) default to the container's.
set -euo pipefail
answer_file="${ANSWER_FILE:-{ANSWER_PATH}}"
cd "${INPUT_DIR:-{INPUT_DIR}}"
python3 - > "$answer_file" <<'PY'
{program}PY
""".replace("{ANSWER_PATH}", ANSWER_PATH).replace("{INPUT_DIR}", INPUT_DIR)

_TITLES = {
    "sales": "Online shop orders",
    "hr": "Company HR records",
    "flights": "Flight operations",
    "weather": "Weather station readings",
    "support": "Support desk tickets",
}

_HARD_NOTE = (
    "The files are raw exports and need cleaning first: some rows are duplicated (count each "
    "once), labels vary in case and stray spaces, dates and times come in several formats, "
    "numbers may carry thousands separators, and some values are missing (leave them out of "
    "sums, averages and medians)."
)

_ANSWER_NOTE = (
    "Answer with the value itself, not code or a command: call the `submit_solution` tool with it, "
    f"or, if you have no such tool, write it to {ANSWER_PATH}."
)

_FILES_HEADER = f"Files (in {INPUT_DIR}, no subfolders):"


class TaskHashMismatch(Exception):
    """A task's file differs from the hash its split manifest records."""

    def __init__(self, task_id: str, file: str, expected: str | None, actual: str | None):
        self.task_id, self.file, self.expected, self.actual = task_id, file, expected, actual
        super().__init__(
            f"Task {task_id}: {file} has sha256 {actual or '(missing)'}, but the manifest records "
            f"{expected or '(no such file)'}. The files were changed after the build, or the generator no longer "
            f"reproduces the committed split (check the pinned pandas/pyarrow versions; after an intended change, "
            f"regenerate the manifests with multiharness.tasks.build.write_manifests)."
        )

    def __reduce__(self):  # keep the four fields when the error crosses a process pool
        return (type(self), (self.task_id, self.file, self.expected, self.actual))


# ----------------------------------------------------------------------------------------------
# Planning a split
# ----------------------------------------------------------------------------------------------


def plan_split(split: str) -> list[dict]:
    """The rows of a split before hashing: id, template, difficulty, answer_type, seed, held_out_template.

    Test rows carry their first-choice seeds; `plan_test` moves those that repeat a task on.
    """
    if split not in SPLITS:
        raise ValueError(f"Unknown split {split!r}. Expected one of {list(SPLITS)}.")
    drawn = []
    for tier, count in SPLIT_SIZES[split].items():
        n_held = round(count * HELD_OUT_SHARE) if split == "test" else 0
        held_out, seen = _rotation(tier, held_out=True), _rotation(tier, held_out=False)
        drawn += [(held_out[i % len(held_out)], tier) for i in range(n_held)]
        drawn += [(seen[i % len(seen)], tier) for i in range(count - n_held)]
    random.Random(f"plan/{split}").shuffle(drawn)  # mixed order: the first N tasks are a fair sample
    return [_row(split, i, name, tier) for i, (name, tier) in enumerate(drawn)]


def plan_test(train: list[dict], hashes: Callable[[dict], dict]) -> list[dict]:
    """The test rows with their hashes, disjoint from `train` by instruction and by every input file.

    `hashes(row)` builds a row and returns its hash fields (what `build_task` returns). Rows go
    in order; one whose instruction.md or any input file hashes like a train task's, or like an
    earlier test task's, moves on to its next seed (seed + 250, so seeds stay unique). Repeats
    within test count too, so that a score over the split counts distinct instructions, not
    copies of one. A template whose question takes no parameters (one instruction per file
    format) cannot give a new one: after `_MAX_RESEEDS` seeds the row moves on to the next
    template of its tier's rotation, staying seen or held out.
    """
    instructions = {row["instruction_sha256"] for row in train}
    inputs = {digest for row in train for digest in row["input_sha256"].values()}
    planned = []
    for i, row in enumerate(plan_split("test")):
        for candidate in _candidates(i, row):
            candidate |= hashes(candidate)
            files = set(candidate["input_sha256"].values())
            if candidate["instruction_sha256"] not in instructions and not files & inputs:
                break
        else:
            raise RuntimeError(f"No template of the {row['difficulty']} tier gives {row['id']} a task new to both "
                               f"splits in {_MAX_RESEEDS} seeds; its templates need more parameters.")
        instructions.add(candidate["instruction_sha256"])
        inputs |= files
        planned.append(candidate)
    return planned


def _rotation(tier: str, held_out: bool) -> list[str]:
    """The templates that take turns in a tier: the held-out ones, or those seen in training."""
    return [name for name in TEMPLATES if tier in TEMPLATES[name].tiers and (name in HELD_OUT_TEMPLATES) == held_out]


def _row(split: str, i: int, name: str, tier: str, reseed: int = 0) -> dict:
    return {
        "id": f"{split}-{i:04d}-{name.replace('_', '-')}",
        "template": name,
        "difficulty": tier,
        "answer_type": TEMPLATES[name].answer_type,
        "seed": _SEED_BASE[split] + i + reseed * sum(SPLIT_SIZES[split].values()),
        "held_out_template": name in HELD_OUT_TEMPLATES,
    }


def _candidates(i: int, row: dict) -> Iterator[dict]:
    """Test row `i` at its next seeds, then at the next templates of its rotation."""
    rotation = _rotation(row["difficulty"], row["held_out_template"])
    start = rotation.index(row["template"])
    for name in rotation[start:] + rotation[:start]:
        for reseed in range(_MAX_RESEEDS):
            yield _row("test", i, name, row["difficulty"], reseed)


def load_manifest(split: str, data_dir: Path = DATA_DIR) -> list[dict]:
    """The committed rows of a split (`data/<split>.json`), refusing a manifest of another version."""
    path = Path(data_dir) / f"{split}.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise FileNotFoundError(f"No manifest {path}. Regenerate it with multiharness.tasks.build.write_manifests().") from error
    version = manifest.get("version", 1)  # version 1 had no field
    if version != MANIFEST_VERSION:
        raise ValueError(
            f"{path} is manifest version {version}, but this code reads version {MANIFEST_VERSION}. Regenerate it "
            f"with multiharness.tasks.build.write_manifests() (or take data/*.json from the repository), then "
            f"rebuild the tasks: python -m multiharness tasks build --split all."
        )
    return manifest["tasks"]


def _write_manifest(path: Path, split: str, rows: list[dict]) -> None:
    header = {
        "version": MANIFEST_VERSION,
        "split": split,
        "description": f"multiharness generated data-analysis tasks, {split} split; build with "
                       f"`python -m multiharness tasks build --split {split}`",
        "sizes": SPLIT_SIZES[split],
        "held_out_templates": list(HELD_OUT_TEMPLATES) if split == "test" else [],
    }
    lines = [json.dumps(row, sort_keys=True) for row in rows]
    head = json.dumps(header, indent=1)[:-2]  # reopen the object to append the task rows, one per line
    path.write_text(f'{head},\n "tasks": [\n  ' + ",\n  ".join(lines) + "\n ]\n}\n", encoding="utf-8")


# ----------------------------------------------------------------------------------------------
# Writing one task directory
# ----------------------------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _instruction(draft: Draft, files: list[str]) -> str:
    parts = [
        f"# {_TITLES[draft.domain.name]}",
        f"The files below are exports from {draft.domain.description}. Use them to answer the question.",
        f"Question: {draft.question.text}",
        "\n".join([_FILES_HEADER, *files]),
    ]
    if draft.tier == "hard":
        parts.append(_HARD_NOTE)
    parts.append(_ANSWER_NOTE)
    return "\n\n".join(parts) + "\n"


def _task_toml(draft: Draft) -> str:
    formats = sorted(set(draft.formats.values()))
    skills = [s for s in draft.template.skills if not (s == "join" and draft.tier == "easy")]  # easy: one table
    tags = ["data-analysis", draft.domain.name, *skills, *formats]
    if draft.tier == "hard":
        tags.append("messy data")
    sections = {
        "metadata": {
            "difficulty": draft.tier,
            "template": draft.template.name,
            "answer_type": draft.template.answer_type,
            "source": "generated",
            "seed": draft.seed,
            "category": "data-analysis",
            "tags": list(dict.fromkeys(tags)),
        },
        # The verifier runs in an environment of its own (the gold never enters the agent's), with
        # the agent's answer file carried over as an artifact.
        "verifier": {"timeout_sec": 60.0, "environment_mode": "separate"},
        # The agent reaches its model and nothing else (the model endpoint is on the sandbox's
        # loopback); tools and the verifier have no network at all.
        "agent": {"timeout_sec": 600.0, "network_mode": "allowlist", "allowed_hosts": ["127.0.0.1"]},
        "environment": {"build_timeout_sec": 600.0, "cpus": 1, "memory_mb": 2048, "storage_mb": 1024,
                        "network_mode": "no-network"},
    }
    return tomli_w.dumps({"schema_version": "1.4", "artifacts": [ANSWER_PATH], **sections})


def build_task(row: dict, task_dir: Path) -> dict:
    """Write one task directory from a manifest row; returns its hashes (the row's hash fields)."""
    draft = generate(row["template"], row["difficulty"], row["seed"])
    if task_dir.exists():
        shutil.rmtree(task_dir)
    inputs = task_dir / "environment" / "input"
    files = write_tables(inputs, draft.domain, list(draft.tables), draft.formats, draft.tier == "hard",
                         random.Random(draft.files_seed))
    names = sorted(set(files.values()))
    (task_dir / "instruction.md").write_text(_instruction(draft, names), encoding="utf-8")
    (task_dir / "task.toml").write_text(_task_toml(draft), encoding="utf-8")
    (task_dir / "environment" / "Dockerfile").write_text(_DOCKERFILE, encoding="utf-8")
    tests = task_dir / "tests"
    tests.mkdir()
    shutil.copyfile(_grader_source(), tests / "grader.py")  # verbatim: the same grader as on the host
    gold = {
        "answer": draft.question.answer,
        "answer_type": draft.template.answer_type,
        "atol": draft.question.atol,
        "rtol": None,
        "ordered": draft.question.ordered,
    }
    (tests / "gold.json").write_text(json.dumps(gold, indent=2) + "\n", encoding="utf-8")
    (tests / "test.sh").write_text(_TEST_SH, encoding="utf-8")
    (task_dir / "solution").mkdir()
    solve = _SOLVE_SH.replace("{program}", reference_program(draft, files))
    (task_dir / "solution" / "solve.sh").write_text(solve, encoding="utf-8")
    for script in (tests / "test.sh", task_dir / "solution" / "solve.sh"):
        script.chmod(0o755)
    return {
        "instruction_sha256": _sha256(task_dir / "instruction.md"),
        "input_sha256": {name: _sha256(inputs / name) for name in names},
    }


def _grader_source() -> Path:
    from multiharness import grading

    return Path(grading.__file__)


def _check_hashes(row: dict, task_dir: Path) -> None:
    """Raise TaskHashMismatch for the first file that differs from the manifest row."""
    expected = {"instruction.md": row["instruction_sha256"]}
    expected |= {f"environment/input/{name}": digest for name, digest in row["input_sha256"].items()}
    inputs = task_dir / "environment" / "input"
    present = {f"environment/input/{p.name}" for p in inputs.iterdir()} if inputs.is_dir() else set()
    for file in sorted(set(expected) | present):
        path = task_dir / file
        actual = _sha256(path) if path.is_file() else None
        if actual != expected.get(file):
            raise TaskHashMismatch(row["id"], file, expected.get(file), actual)


# ----------------------------------------------------------------------------------------------
# Splits: build and manifests
# ----------------------------------------------------------------------------------------------


def _pool(workers: int | None) -> concurrent.futures.Executor:
    workers = workers or os.cpu_count() or 1
    if workers == 1 or "fork" not in multiprocessing.get_all_start_methods():
        return concurrent.futures.ThreadPoolExecutor(max_workers=1)
    # fork: workers inherit the imported pandas/pyarrow instead of importing them again.
    return concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"))


def _build_checked(job: tuple[dict, Path]) -> None:
    row, task_dir = job
    build_task(row, task_dir)
    _check_hashes(row, task_dir)


def _splits(split: str) -> tuple[str, ...]:
    if split == "all":
        return SPLITS
    if split not in SPLITS:
        raise ValueError(f"Unknown split {split!r}. Expected one of {[*SPLITS, 'all']}.")
    return (split,)


def build_split(split: str = "all", out: Path = DEFAULT_TASKS_DIR, *, workers: int | None = None) -> list[Task]:
    """Build every task of `split` ("train", "test" or "all") under `out/<split>/<id>/`.

    Rebuilds each task directory from scratch and raises TaskHashMismatch if any file differs
    from the committed manifest. Returns the tasks, sorted by id.
    """
    started, out = time.monotonic(), Path(out)
    jobs = [(row, out / name / row["id"]) for name in _splits(split) for row in load_manifest(name)]
    with _pool(workers) as pool:
        list(pool.map(_build_checked, jobs, chunksize=16))
    wanted = {task_dir for _, task_dir in jobs}
    stale = sorted(p.name for name in _splits(split) if (out / name).is_dir() for p in (out / name).iterdir()
                   if p not in wanted)
    if stale:
        logger.warning("%s holds %d directories that no manifest lists (e.g. %s); delete them if they are old builds",
                       out, len(stale), stale[0])
    logger.info("built %d tasks under %s in %.1f s", len(jobs), out, time.monotonic() - started)
    return sorted((load_task(task_dir) for _, task_dir in jobs), key=lambda task: task.id)


def _hash_job(job: tuple[dict, Path]) -> dict:
    row, task_dir = job
    return row | build_task(row, task_dir)


def write_manifests(data_dir: Path = DATA_DIR, *, workers: int | None = None) -> dict[str, list[dict]]:
    """Plan both splits, build every task in a scratch folder, and write `data/<split>.json`.

    Test is planned after train, task by task (`plan_test` needs each candidate's hashes).
    """
    with tempfile.TemporaryDirectory(prefix="multiharness-manifest-") as scratch, _pool(workers) as pool:
        jobs = [(row, Path(scratch) / "train" / row["id"]) for row in plan_split("train")]
        train = list(pool.map(_hash_job, jobs, chunksize=16))
        test = plan_test(train, lambda row: build_task(row, Path(scratch) / "test" / row["id"]))
    manifests = {"train": train, "test": test}
    for split, rows in manifests.items():
        _write_manifest(Path(data_dir) / f"{split}.json", split, rows)
    return manifests


# ----------------------------------------------------------------------------------------------
# Verification
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VerifyFailure:
    """One problem with one task."""

    task_id: str
    """The task directory name."""
    check: str
    """manifest | hash | leak | solution."""
    message: str
    """What is wrong, with the offending value."""

    def __str__(self) -> str:
        return f"{self.task_id}: {self.check}: {self.message}"


@dataclass(frozen=True)
class VerifyReport:
    """What `verify_tasks` found."""

    checked: int
    """Task directories checked."""
    failures: tuple[VerifyFailure, ...]
    """Every problem found, in task order."""
    missing: tuple[str, ...]
    """Manifest ids of a built split that have no directory."""
    seconds: float
    """Wall-clock time of the verification."""

    @property
    def ok(self) -> bool:
        """True when every task passed and none is missing."""
        return not self.failures and not self.missing

    def summary(self) -> str:
        """One line for a terminal."""
        failed = len({f.task_id for f in self.failures})
        text = f"verified {self.checked} tasks in {self.seconds:.1f} s: {self.checked - failed} ok, {failed} failed"
        return text + (f", {len(self.missing)} missing from the build" if self.missing else "")


def _listed_files(instruction: str) -> list[str]:
    lines = instruction.split(_FILES_HEADER, 1)[-1].strip("\n").splitlines()
    return [line.strip() for line in lines[: next((i for i, l in enumerate(lines) if not l.strip()), len(lines))]]


def gold_leaks(task: Task, gold: dict) -> list[str]:
    """Where the gold shows in what the agent sees; [] when nowhere. The checks:

    - `environment/` holds only the Dockerfile and `input/`, and `input/` exactly the files
      the instruction lists (a stray gold or solution file would be visible);
    - the gold answer (and each item of a list answer) does not occur as a token in
      instruction.md, task.toml or the Dockerfile; yes/no answers are exempt (the question
      names both), and so are numbers of one or two characters, which the question's own
      parameters ("top 3", "15 minutes") produce by chance;
    - no line of a text input file (CSV, JSON, JSONL) is the gold answer itself. Data values
      legitimately contain label golds, so only a line that is exactly the answer counts.
    """
    leaks, environment = [], task.path / "environment"
    extra = sorted(p.name for p in environment.iterdir() if p.name not in ("Dockerfile", "input"))
    if extra:
        leaks.append(f"environment/ holds files besides Dockerfile and input/: {extra}")
    listed, present = _listed_files(task.instruction), sorted(p.name for p in task.input_dir.iterdir())
    if sorted(listed) != present:
        leaks.append(f"input files {present} differ from the files the instruction lists {listed}")
    answer = gold["answer"]
    tokens = [answer] + ([item.strip() for item in answer.split(",")] if gold["answer_type"] == "list" else [])
    tokens = [t for t in tokens if gold["answer_type"] != "yesno" and len(t) >= 3]
    for name in ("instruction.md", "task.toml", "environment/Dockerfile"):
        text = (task.path / name).read_text(encoding="utf-8")
        for token in tokens:
            if re.search(rf"(?<![\w.]){re.escape(token)}(?![\w]|\.\d)", text, flags=re.IGNORECASE):
                leaks.append(f"{name} contains the gold {token!r}")
    for path in sorted(task.input_dir.iterdir()):
        if path.suffix in (".csv", ".json", ".jsonl"):
            if any(line.strip() == answer for line in path.read_text(encoding="utf-8").splitlines()):
                leaks.append(f"input/{path.name} has a line that is the gold answer {answer!r}")
    return leaks


def _run_program(job: tuple[str, str]) -> tuple[str | None, str | None]:
    """Run a reference program in this (warm, forked) worker: (answer, None) or (None, error)."""
    program, input_dir = job
    stdout, cwd = io.StringIO(), os.getcwd()
    try:
        os.chdir(input_dir)
        with contextlib.redirect_stdout(stdout):
            exec(compile(program, "solution/solve.sh", "exec"), {"__name__": "__main__"})
        return stdout.getvalue().strip(), None
    except BaseException as error:  # noqa: BLE001 - a program's SystemExit is a failure too
        return None, f"{type(error).__name__}: {error}"
    finally:
        os.chdir(cwd)


def _run_shell(task: Task) -> tuple[str | None, str | None]:
    try:
        return run_reference_solution(task), None
    except RuntimeError as error:
        return None, str(error)


def verify_tasks(out: Path = DEFAULT_TASKS_DIR, *, shell: bool = False, workers: int | None = None) -> VerifyReport:
    """Check every generated task under `out` (as `build_split` wrote it); returns a report.

    Per task: its id is in a manifest and its files hash as recorded (`hash`), the gold does
    not leak (`gold_leaks`), and its reference solution's answer grades 1 (`solution`).
    Solutions run in warm worker processes that execute the Python program of
    `solution/solve.sh` (fast: no interpreter start per task); `shell=True` runs each
    `bash solution/solve.sh` as a subprocess instead, as the container would.
    """
    started, out = time.monotonic(), Path(out)
    rows = {row["id"]: row for split in SPLITS for row in load_manifest(split)}
    tasks = load_tasks(out)
    failures: list[VerifyFailure] = []
    built_splits = {split for split in SPLITS if (out / split).is_dir()}
    missing = sorted({row_id for row_id in rows if row_id.split("-", 1)[0] in built_splits} - {t.id for t in tasks})
    runnable = []
    for task in tasks:
        row = rows.get(task.id)
        if row is None:
            failures.append(VerifyFailure(task.id, "manifest", "not in data/train.json or data/test.json"))
            continue
        try:
            _check_hashes(row, task.path)
        except TaskHashMismatch as error:
            failures.append(VerifyFailure(task.id, "hash", str(error)))
        try:
            gold = json.loads((task.path / "tests" / "gold.json").read_text(encoding="utf-8"))
            failures += [VerifyFailure(task.id, "leak", leak) for leak in gold_leaks(task, gold)]
            runnable.append(task)
        except (OSError, ValueError, KeyError) as error:
            failures.append(VerifyFailure(task.id, "solution", f"tests/gold.json unreadable: {error}"))
    if shell:
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
            results = list(pool.map(_run_shell, runnable))
    else:
        import pandas  # noqa: F401 - imported once here, inherited by the forked workers
        import pyarrow.parquet  # noqa: F401

        jobs = [(solution_program(task), str(task.input_dir.resolve())) for task in runnable]
        with _pool(workers) as pool:
            results = list(pool.map(_run_program, jobs, chunksize=8))
    for task, (answer, error) in zip(runnable, results):
        if error is not None:
            failures.append(VerifyFailure(task.id, "solution", f"reference solution failed: {error[-500:]}"))
            continue
        try:
            grade = grade_answer(task, answer)
        except GradingError as grading_error:
            failures.append(VerifyFailure(task.id, "solution", f"reference answer {answer!r} not graded: {grading_error}"))
            continue
        if grade != 1:
            failures.append(VerifyFailure(task.id, "solution", f"reference answer {answer!r} grades {grade}"))
    failures.sort(key=lambda f: f.task_id)
    report = VerifyReport(len(tasks), tuple(failures), tuple(missing), time.monotonic() - started)
    logger.info("%s", report.summary())
    return report


assert set(SPLIT_SIZES["train"]) == set(TIERS)
