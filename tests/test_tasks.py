"""Generated tasks: split manifests, bit-for-bit builds, reference solutions, gold leaks, Harbor scripts."""

import collections
import datetime
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from multiharness.grading import GradingError
from multiharness.tasks import (
    TaskHashMismatch,
    build_split,
    grade_answer,
    load_task,
    load_tasks,
    run_reference_solution,
    solution_command,
    verify_tasks,
)
from multiharness.tasks import build
from multiharness.tasks.build import (
    MANIFEST_VERSION,
    SPLIT_SIZES,
    build_task,
    gold_leaks,
    load_manifest,
    plan_split,
    plan_test,
)
from multiharness.tasks.tables import DOMAINS, FORMATS, write_tables
from multiharness.grading import ANSWER_TYPES
from multiharness.tasks.templates import HELD_OUT_TEMPLATES, TEMPLATES

TRAIN, TEST = load_manifest("train"), load_manifest("test")
VENV_PATH = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"


def _sample_rows() -> list[dict]:
    """The first manifest row of every (template, tier): every variant of every template."""
    first = {}
    for row in TRAIN + TEST:
        first.setdefault((row["template"], row["difficulty"]), row)
    return list(first.values())


SAMPLE = _sample_rows()


def _split_of(row: dict) -> str:
    return row["id"].split("-", 1)[0]


def _tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The sample built once, laid out as `tasks build` does (<out>/<split>/<id>)."""
    out = tmp_path_factory.mktemp("tasks")
    for row in SAMPLE:
        build_task(row, out / _split_of(row) / row["id"])
    return out


def _task(built: Path, row: dict):
    return load_task(built / _split_of(row) / row["id"])


def _one_per_template(built: Path) -> list:
    """One hard task per template (hard variants need the cleaning steps)."""
    return [_task(built, row) for row in SAMPLE if row["difficulty"] == "hard"]


# ---- templates ---------------------------------------------------------------------------------


def test_template_catalogue_covers_every_answer_type_and_tier():
    cases = [
        # (what, value, expected)
        ("at least 20 templates", len(TEMPLATES) >= 20, True),
        ("answer types used", {t.answer_type for t in TEMPLATES.values()}, set(ANSWER_TYPES)),
        ("every template has a hard variant", all("hard" in t.tiers for t in TEMPLATES.values()), True),
        ("easy templates seen in training", sum("easy" in t.tiers for n, t in TEMPLATES.items() if n not in HELD_OUT_TEMPLATES) >= 10, True),
        ("held-out answer types", {TEMPLATES[n].answer_type for n in HELD_OUT_TEMPLATES}, {"numeric", "list", "yesno", "label"}),
    ]
    assert [(what, value) for what, value, _ in cases] == [(what, expected) for what, _, expected in cases]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("messy", [False, True])
def test_each_file_format_is_written_byte_for_byte_the_same_twice(tmp_path, fmt, messy):
    domain = DOMAINS["sales"]
    written = []
    for attempt in ("first", "second"):
        tables = list(domain.make(random.Random("same seed"), "hard").values())
        write_tables(tmp_path / attempt, domain, tables, {t.name: fmt for t in tables}, messy, random.Random("files"))
        written.append(_tree_bytes(tmp_path / attempt))
    assert written[0] == written[1]


# ---- manifests ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "split, tier, expected",
    [
        ("train", "easy", 300),
        ("train", "medium", 400),
        ("train", "hard", 300),
        ("test", "easy", 33),
        ("test", "medium", 118),
        ("test", "hard", 99),
    ],
)
def test_manifest_counts_per_split_and_tier(split, tier, expected):
    rows = TRAIN if split == "train" else TEST
    assert sum(row["difficulty"] == tier for row in rows) == expected == SPLIT_SIZES[split][tier]


def test_manifests_are_what_the_planner_plans(tmp_path):
    keys = ("id", "template", "difficulty", "answer_type", "seed", "held_out_template")
    committed = {(row["template"], row["seed"]): row for row in TEST}

    def hashes(row):  # committed rows give their committed hashes; only the skipped candidates are built
        known = committed.get((row["template"], row["seed"]))
        if known is None:
            return build_task(row, tmp_path / row["id"])
        return {k: known[k] for k in ("instruction_sha256", "input_sha256")}

    assert ([{k: row[k] for k in keys} for row in TRAIN], plan_test(TRAIN, hashes)) == (plan_split("train"), TEST)


def _fake_hashes(fixed: tuple[str, str] | None):
    """Hashes unique to each (template, seed), except a `fixed` (template, tier) that asks one question only."""
    def hashes(row):
        key = (row["template"], row["difficulty"])
        instruction = "/".join(key) if key == fixed else f"{row['template']}/{row['seed']}"
        files = {"data.csv": f"file/{row['template']}/{row['seed']}"}
        return {"instruction_sha256": instruction, "input_sha256": files}
    return hashes


@pytest.mark.parametrize(
    "repeat, expected",
    [
        # (what a train task repeats of test row 0, where row 0 lands)
        (None, "its first seed"),
        ("instruction", "its next seed"),
        ("input file", "its next seed"),
        ("instruction of a question without parameters", "the next template"),  # as do the rows like it
    ],
)
def test_plan_test_moves_a_task_that_repeats_train_on_deterministically(repeat, expected):
    first = plan_split("test")
    row = first[0]
    fixed = (row["template"], row["difficulty"]) if repeat and "without parameters" in repeat else None
    hashes = _fake_hashes(fixed)
    train = [] if repeat is None else [
        {"instruction_sha256": "other", "input_sha256": hashes(row)["input_sha256"]} if repeat == "input file"
        else {"instruction_sha256": hashes(row)["instruction_sha256"], "input_sha256": {}}]
    rotation = [name for name in TEMPLATES if row["difficulty"] in TEMPLATES[name].tiers
                and (name in HELD_OUT_TEMPLATES) == row["held_out_template"]]
    lands = {
        "its first seed": (row["template"], row["seed"]),
        "its next seed": (row["template"], row["seed"] + len(first)),
        "the next template": (rotation[(rotation.index(row["template"]) + 1) % len(rotation)], row["seed"]),
    }[expected]
    plans = [plan_test(train, hashes) for _ in range(2)]
    spots = [[(r["id"], r["seed"]) for r in rows] for rows in (plans[0], first)]
    moved = {i for i, (got, was) in enumerate(zip(*spots)) if got != was}
    like_row = {i for i, r in enumerate(first) if (r["template"], r["difficulty"]) == fixed}
    assert ((plans[0][0]["template"], plans[0][0]["seed"]), moved, plans[0] == plans[1]) == (
        lands, ({0} if repeat else set()) | like_row, True)


@pytest.mark.parametrize(
    "what, values",
    [
        ("ids", lambda row: {row["id"]}),
        ("seeds", lambda row: {row["seed"]}),
        ("instructions", lambda row: {row["instruction_sha256"]}),
        ("input files", lambda row: set(row["input_sha256"].values())),
    ],
)
def test_splits_are_disjoint(what, values):
    train, test = (set().union(*map(values, rows)) for rows in (TRAIN, TEST))
    assert (len(TRAIN), len(TEST), bool(train), bool(test), train & test) == (1000, 250, True, True, set())


def test_each_test_task_asks_its_own_question():
    instructions = [row["instruction_sha256"] for row in TEST]
    assert (len(instructions), len(set(instructions))) == (250, 250)


@pytest.mark.parametrize(
    "version, refused",
    [
        (None, True),               # version 1 had no version field
        (1, True),
        (MANIFEST_VERSION, False),
    ],
)
def test_a_manifest_of_another_version_is_refused(tmp_path, version, refused):
    manifest = {"split": "test", "tasks": TEST[:1]} | ({} if version is None else {"version": version})
    (tmp_path / "test.json").write_text(json.dumps(manifest))
    if refused:
        with pytest.raises(ValueError, match="Regenerate it with multiharness.tasks.build.write_manifests"):
            load_manifest("test", tmp_path)
    else:
        assert load_manifest("test", tmp_path) == TEST[:1]


def test_held_out_templates_only_in_test_about_a_fifth():
    held_train = [row["id"] for row in TRAIN if row["held_out_template"] or row["template"] in HELD_OUT_TEMPLATES]
    held_test = [row for row in TEST if row["held_out_template"]]
    marked_right = all(row["held_out_template"] == (row["template"] in HELD_OUT_TEMPLATES) for row in TEST)
    assert (held_train, 45 <= len(held_test) <= 55, marked_right) == ([], True, True)


def test_every_seen_template_is_in_both_splits():
    seen = set(TEMPLATES) - set(HELD_OUT_TEMPLATES)
    assert ({row["template"] for row in TRAIN}, {row["template"] for row in TEST} & seen) == (seen, seen)


# ---- building --------------------------------------------------------------------------------


def test_building_twice_gives_identical_bytes(built, tmp_path):
    for row in SAMPLE:
        build_task(row, tmp_path / _split_of(row) / row["id"])
    assert _tree_bytes(tmp_path) == _tree_bytes(built)


def test_built_sample_reproduces_the_committed_hashes(built):
    mismatches = []
    for row in SAMPLE:
        task_dir = built / _split_of(row) / row["id"]
        got = {
            "instruction_sha256": hashlib.sha256((task_dir / "instruction.md").read_bytes()).hexdigest(),
            "input_sha256": {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                             for p in sorted((task_dir / "environment" / "input").iterdir())},
        }
        if got != {k: row[k] for k in got}:
            mismatches.append(row["id"])
    assert mismatches == []


def test_a_task_directory_has_the_harbor_layout(built):
    task = _task(built, SAMPLE[0])
    expected = ["environment/Dockerfile", "instruction.md", "solution/solve.sh", "task.toml",
                "tests/gold.json", "tests/grader.py", "tests/test.sh"]
    files = sorted(str(p.relative_to(task.path)) for p in task.path.rglob("*")
                   if p.is_file() and "input" not in p.parts)
    assert files == expected


def test_grader_is_a_verbatim_copy_of_the_library_grader(built):
    from multiharness import grading

    assert (_task(built, SAMPLE[0]).path / "tests" / "grader.py").read_bytes() == Path(grading.__file__).read_bytes()


def test_medium_and_hard_tasks_read_several_files_in_several_formats(built):
    counts = collections.defaultdict(set)
    for row in SAMPLE:
        counts[row["difficulty"]].add(len(row["input_sha256"]) >= 2)
    suffixes = {Path(name).suffix for row in TRAIN for name in row["input_sha256"]}
    assert (counts["easy"], counts["medium"], counts["hard"], suffixes) == (
        {False}, {True}, {True}, {".csv", ".json", ".jsonl", ".parquet", ".db"})


def test_load_task_reads_the_manifest_fields(built):
    row = SAMPLE[0]
    task = _task(built, row)
    got = (task.id, task.difficulty, task.template, task.answer_type, task.source, task.input_dir.is_dir())
    assert got == (row["id"], row["difficulty"], row["template"], row["answer_type"], "generated", True)


def test_load_tasks_finds_every_task_sorted(built):
    ids = [task.id for task in load_tasks(built)]
    assert ids == sorted(row["id"] for row in SAMPLE)


def test_load_tasks_says_how_to_build_when_there_are_none(tmp_path):
    with pytest.raises(FileNotFoundError, match="multiharness tasks build"):
        load_tasks(tmp_path)


# ---- reference solutions and grading ----------------------------------------------------------


def _wrong(answer: str, answer_type: str) -> str:
    if answer_type == "numeric":
        return str(float(answer) + 1000)
    if answer_type == "yesno":
        return "no" if answer == "yes" else "yes"
    if answer_type == "date":
        return (datetime.date.fromisoformat(answer) + datetime.timedelta(days=1)).isoformat()
    if answer_type == "list":
        return ", ".join(answer.split(", ")[:-1])
    return "Nonexistent Label"


@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_reference_solution_run_with_bash_grades_one_and_a_wrong_answer_zero(built, template):
    row = next(r for r in SAMPLE if r["template"] == template and r["difficulty"] == "hard")
    task = _task(built, row)
    answer = run_reference_solution(task)
    gold = json.loads((task.path / "tests" / "gold.json").read_text())
    assert (grade_answer(task, answer), grade_answer(task, _wrong(gold["answer"], gold["answer_type"]))) == (1, 0)


def test_solution_command_prints_the_answer(built):
    task = _task(built, SAMPLE[1])
    command = solution_command(task, input_dir=str(task.input_dir))
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env={**os.environ, "PATH": VENV_PATH})
    assert grade_answer(task, result.stdout.strip().splitlines()[-1]) == 1


def test_unreadable_gold_is_not_graded(built, tmp_path):
    task_dir = tmp_path / "task"
    shutil.copytree(_task(built, SAMPLE[0]).path, task_dir)
    (task_dir / "tests" / "gold.json").write_text("{not json")
    with pytest.raises(GradingError, match="unreadable"):
        grade_answer(load_task(task_dir), "42")


@pytest.mark.parametrize(
    "answer, expected_reward",
    [
        ("gold", "1"),        # the gold answer itself
        ("wrong", "0"),       # a wrong value
        (None, "0"),          # no answer file: the agent never answered
    ],
)
def test_harbor_test_sh_writes_the_reward(built, tmp_path, answer, expected_reward):
    task = _task(built, SAMPLE[0])
    gold = json.loads((task.path / "tests" / "gold.json").read_text())
    answer_file, reward_file = tmp_path / "answer.txt", tmp_path / "logs" / "reward.txt"
    if answer is not None:
        answer_file.write_text(gold["answer"] if answer == "gold" else _wrong(gold["answer"], gold["answer_type"]))
    env = {**os.environ, "PATH": VENV_PATH, "ANSWER_FILE": str(answer_file), "REWARD_FILE": str(reward_file)}
    subprocess.run(["bash", str(task.path / "tests" / "test.sh")], env=env, check=True, capture_output=True)
    assert reward_file.read_text().strip() == expected_reward


# ---- the gold stays hidden --------------------------------------------------------------------


def test_gold_does_not_leak_into_what_the_agent_sees(built):
    leaks = {}
    for row in SAMPLE:
        task = _task(built, row)
        found = gold_leaks(task, json.loads((task.path / "tests" / "gold.json").read_text()))
        if found:
            leaks[row["id"]] = found
    assert leaks == {}


def _plant_in_instruction(task, gold):
    with open(task.path / "instruction.md", "a") as f:
        f.write(f"Hint: {gold['answer']}\n")


def _plant_gold_file(task, gold):
    shutil.copy(task.path / "tests" / "gold.json", task.path / "environment" / "gold.json")


def _plant_answer_line(task, gold):
    with open(next(task.input_dir.glob("*.csv")), "a") as f:
        f.write(f"{gold['answer']}\n")


def _plant_extra_input(task, gold):
    (task.input_dir / "answer.txt").write_text(gold["answer"])


@pytest.mark.parametrize(
    "plant, expected",
    [
        (_plant_in_instruction, "instruction.md contains the gold"),
        (_plant_gold_file, "environment/ holds files besides"),
        (_plant_answer_line, "has a line that is the gold answer"),
        (_plant_extra_input, "differ from the files the instruction lists"),
    ],
)
def test_leak_check_catches_a_planted_gold(built, tmp_path, plant, expected):
    row = next(r for r in SAMPLE if r["answer_type"] == "label" and any(n.endswith(".csv") for n in r["input_sha256"]))
    task_dir = tmp_path / row["id"]
    shutil.copytree(built / _split_of(row) / row["id"], task_dir)
    task = load_task(task_dir)
    gold = json.loads((task_dir / "tests" / "gold.json").read_text())
    plant(task, gold)
    assert any(expected in leak for leak in gold_leaks(load_task(task_dir), gold))


# ---- hash mismatches ---------------------------------------------------------------------------


def test_verify_reports_a_tampered_input_file_naming_the_task(built, tmp_path):
    row = SAMPLE[0]
    out = tmp_path / "tasks"
    shutil.copytree(built / _split_of(row) / row["id"], out / _split_of(row) / row["id"])
    data_file = next((out / _split_of(row) / row["id"] / "environment" / "input").iterdir())
    data_file.write_bytes(data_file.read_bytes() + b"\n")
    report = verify_tasks(out, workers=1)
    hash_failures = [(f.task_id, data_file.name in f.message) for f in report.failures if f.check == "hash"]
    assert hash_failures == [(row["id"], True)]


def test_build_raises_on_a_manifest_it_cannot_reproduce(tmp_path, monkeypatch):
    row = dict(TEST[0], input_sha256={**TEST[0]["input_sha256"]})
    name = sorted(row["input_sha256"])[0]
    row["input_sha256"][name] = "0" * 64
    monkeypatch.setattr(build, "load_manifest", lambda split: [row] if split == "test" else [])
    with pytest.raises(TaskHashMismatch) as error:
        build_split("test", tmp_path, workers=1)
    assert (error.value.task_id, error.value.file, row["id"] in str(error.value)) == (
        row["id"], f"environment/input/{name}", True)


def test_verify_passes_on_a_clean_sample_and_reports_missing_tasks(built):
    report = verify_tasks(built)
    expected_missing = len(TRAIN) + len(TEST) - len(SAMPLE)
    assert (report.failures, report.checked, len(report.missing)) == ((), len(SAMPLE), expected_missing)


@pytest.mark.slow
def test_full_build_reproduces_every_hash_and_every_solution_grades_one(tmp_path):
    tasks = build_split("all", tmp_path)  # raises TaskHashMismatch on any differing byte
    report = verify_tasks(tmp_path)
    assert (len(tasks), report.ok, report.failures) == (1250, True, ())
