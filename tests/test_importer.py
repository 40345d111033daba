"""The SmolDataEnvs importer, on fixture folders written here in that dataset's task format."""

import json
import logging
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from multiharness.grading import GradingError
from multiharness.tasks import grade_answer, import_tasks, load_task, load_tasks
from multiharness.tasks.importer import TaskImportError

TOKEN = "hf_fixtureSECRET0123456789"  # what a user's HF_TOKEN looks like; must end up in no file

# A grader following their contract: answer on stdin, gold and tolerance from the environment,
# JSON with `correctness` (or `reward`) on stdout, non-zero exit when it cannot grade.
GRADER = '''\
import json, os, sys

if "--json" not in sys.argv:
    sys.exit("usage: grader.py --json < answer")
gold = os.environ.get("GOLD_ANSWER")
if gold is None:
    sys.exit("GOLD_ANSWER is not set")
answer = sys.stdin.read().strip()
if os.environ.get("ANSWER_TYPE") == "numeric":
    try:
        right = abs(float(answer) - float(gold)) <= float(os.environ.get("GOLD_ATOL", "0"))
    except ValueError:
        right = False
else:
    right = answer.lower() == gold.lower()
print(json.dumps({os.environ.get("RESULT_KEY", "correctness"): int(right)}))
'''

TEST_SH = '''\
#!/bin/bash
answer="${ANSWER_FILE:-/workdir/answer.txt}"
reward_file="${REWARD_FILE:-/logs/verifier/reward.txt}"
mkdir -p "$(dirname "$reward_file")"
python3 "$(dirname "$0")/grader.py" --json < "$answer" | python3 -c 'import json,sys; print(json.load(sys.stdin)["correctness"])' > "$reward_file"
'''

# Writes the data into INPUT_DIR (the importer's staging folder); refuses to run without a token.
PULL_BUCKET = '''\
import os, pathlib, sys

if not os.environ.get("HF_TOKEN"):
    sys.exit("HF_TOKEN is required")
target = pathlib.Path(os.environ.get("INPUT_DIR", "/home/user/input"))
target.mkdir(parents=True, exist_ok=True)
(target / "sales.csv").write_text("region,amount\\nNorth,10\\nSouth,32.5\\n")
'''


def make_smol_task(root: Path, name: str, *, gold: str = "42.5", answer_type: str = "numeric",
                   tier: str = "medium", staged: bool = False, result_key: str = "correctness",
                   hf_token_value: str = "${HF_TOKEN}") -> Path:
    """Write one task folder in the SmolDataEnvs Harbor format."""
    folder = root / name
    (folder / "environment").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "instruction.md").write_text(
        "Answer the question from the data.\n\nQuestion: What is the total amount?\n\n"
        "Files (in /home/user/input, no subfolders):\nsales.csv\n\n"
        "Write only the answer (the value, not a command) to /workdir/answer.txt.\n"
    )
    (folder / "task.toml").write_text(
        f'version = "1.0"\n\n[metadata]\ndifficulty_tier = "{tier}"\nnotebook = "324293"\n\n'
        f'[environment]\nmemory_mb = 4096\ncpus = 2\n\n[environment.env]\nHF_TOKEN = "{hf_token_value}"\n\n'
        f'[verifier]\ntimeout_sec = 60.0\n\n[verifier.env]\nGOLD_ANSWER = "{gold}"\nANSWER_TYPE = "{answer_type}"\n'
        f'GOLD_ATOL = "0.01"\nRESULT_KEY = "{result_key}"\n'
    )
    (folder / "environment" / "Dockerfile").write_text(
        "FROM python:3.12-slim\nCOPY pull_bucket.py /opt/pull_bucket.py\nWORKDIR /workdir\n")
    (folder / "environment" / "pull_bucket.py").write_text(PULL_BUCKET)
    (folder / "tests" / "grader.py").write_text(GRADER)
    (folder / "tests" / "test.sh").write_text(TEST_SH)
    if staged:
        (folder / "environment" / "input").mkdir()
        (folder / "environment" / "input" / "sales.csv").write_text("region,amount\nNorth,10\nSouth,32.5\n")
    return folder


@pytest.fixture
def source(tmp_path) -> Path:
    root = tmp_path / "snapshot" / "tasks"
    make_smol_task(root, "0000_324_324293_qa_2", staged=True)
    make_smol_task(root, "0001_118_118020_qa_1", gold="North", answer_type="short_label", tier="hard",
                   result_key="reward")
    return tmp_path / "snapshot"


def _all_text(root: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in root.rglob("*") if p.is_file())


def test_imported_tasks_load_like_generated_ones(source, tmp_path):
    tasks = import_tasks(source, tmp_path / "out")
    got = [(t.id, t.difficulty, t.template, t.answer_type, t.source, "Question:" in t.instruction) for t in tasks]
    assert got == [
        ("0000_324_324293_qa_2", "medium", "smoldataenvs", "numeric", "smoldataenvs", True),
        ("0001_118_118020_qa_1", "hard", "smoldataenvs", "label", "smoldataenvs", True),
    ]


@pytest.mark.parametrize(
    "task_id, answer, expected",
    [
        ("0000_324_324293_qa_2", "42.5", 1),      # numeric gold
        ("0000_324_324293_qa_2", "42.509", 1),    # within their tolerance
        ("0000_324_324293_qa_2", "41", 0),        # wrong number
        ("0001_118_118020_qa_1", "north", 1),     # their grader prints `reward`, not `correctness`
        ("0001_118_118020_qa_1", "South", 0),     # wrong label
    ],
)
def test_grade_answer_uses_the_task_s_own_grader(source, tmp_path, task_id, answer, expected):
    import_tasks(source, tmp_path / "out")
    assert grade_answer(load_task(tmp_path / "out" / task_id), answer) == expected


def test_a_grader_that_cannot_grade_raises(source, tmp_path):
    import_tasks(source, tmp_path / "out")
    task = load_task(tmp_path / "out" / "0000_324_324293_qa_2")
    (task.path / "tests" / "verifier_env.json").write_text("{}")  # no GOLD_ANSWER: their grader exits 1
    with pytest.raises(GradingError, match="its grader exited 1"):
        grade_answer(task, "42.5")


def test_gold_moves_from_task_toml_to_tests(source, tmp_path):
    import_tasks(source, tmp_path / "out")
    task_dir = tmp_path / "out" / "0000_324_324293_qa_2"
    config = tomllib.loads((task_dir / "task.toml").read_text())
    outside_tests = "".join(p.read_text() for p in task_dir.rglob("*") if p.is_file() and "tests" not in p.parts)
    verifier_env = json.loads((task_dir / "tests" / "verifier_env.json").read_text())
    assert ("env" in config["verifier"], "42.5" in outside_tests, verifier_env["GOLD_ANSWER"]) == (False, False, "42.5")


def test_task_toml_keeps_harbor_settings_and_the_credential_placeholder(source, tmp_path):
    import_tasks(source, tmp_path / "out")
    config = tomllib.loads((tmp_path / "out" / "0000_324_324293_qa_2" / "task.toml").read_text())
    got = (config["environment"]["memory_mb"], config["environment"]["env"], config["verifier"]["timeout_sec"],
           config["metadata"]["notebook"])
    assert got == (4096, {"HF_TOKEN": "${HF_TOKEN}"}, 60.0, "324293")


def test_harbor_test_sh_still_grades_with_the_moved_gold(source, tmp_path):
    import_tasks(source, tmp_path / "out")
    tests = tmp_path / "out" / "0000_324_324293_qa_2" / "tests"
    (tmp_path / "answer.txt").write_text("42.5")
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "PATH": path, "ANSWER_FILE": str(tmp_path / "answer.txt"),
           "REWARD_FILE": str(tmp_path / "reward.txt")}
    subprocess.run(["bash", str(tests / "test.sh")], env=env, check=True, capture_output=True)
    assert (tmp_path / "reward.txt").read_text().strip() == "1"


def test_staged_data_is_kept_and_unstaged_data_gives_a_clear_warning(source, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="multiharness.tasks.importer"):
        tasks = import_tasks(source, tmp_path / "out")
    staged = {t.id: sorted(p.name for p in t.input_dir.iterdir()) for t in tasks}
    assert (staged, "Stage them" in caplog.text) == (
        {"0000_324_324293_qa_2": ["sales.csv"], "0001_118_118020_qa_1": []}, True)


def test_download_with_network_allowed_writes_no_credential(source, tmp_path, monkeypatch):
    make_smol_task(source / "tasks", "0002_900_900001_qa_1", hf_token_value=TOKEN)  # a literal token in the source
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    tasks = import_tasks(source, tmp_path / "out", allow_network=True)
    downloaded = [sorted(p.name for p in t.input_dir.iterdir()) for t in tasks]
    assert (downloaded, TOKEN in _all_text(tmp_path / "out")) == ([["sales.csv"]] * 3, False)


def test_network_without_a_token_is_refused(source, tmp_path, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(TaskImportError, match="HF_TOKEN"):
        import_tasks(source, tmp_path / "out", allow_network=True)


@pytest.mark.parametrize(
    "break_it, message",
    [
        (lambda f: (f / "instruction.md").write_text("no question here\n"), "Question:"),
        (lambda f: (f / "tests" / "grader.py").unlink(), "grader.py"),
        (lambda f: (f / "task.toml").write_text('[metadata]\ndifficulty_tier = "extreme"\n'), "difficulty_tier"),
    ],
)
def test_a_folder_that_is_not_a_task_is_rejected(tmp_path, break_it, message):
    folder = make_smol_task(tmp_path / "src", "bad")
    break_it(folder)
    with pytest.raises(TaskImportError, match=message):
        import_tasks(tmp_path / "src", tmp_path / "out")


def test_load_tasks_lists_imported_tasks_sorted(source, tmp_path):
    import_tasks(source, tmp_path / "out")
    assert [t.id for t in load_tasks(tmp_path / "out")] == ["0000_324_324293_qa_2", "0001_118_118020_qa_1"]
