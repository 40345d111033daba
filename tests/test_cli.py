"""The library's command line, `python -m multiharness`, as a user types it."""

import json
import subprocess
import sys

import pytest

from multiharness import __main__ as cli
from multiharness.paths import PROJECT_ROOT


@pytest.fixture(scope="module")
def task_dir(easy_test_task):
    return easy_test_task.path


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "multiharness", *args], cwd=PROJECT_ROOT, capture_output=True,
                          text=True, timeout=120)


# Options before the task, after it, or on both sides: the command after `--` is the same.
ORDERS = [
    pytest.param(["--timeout", "10", "{task}", "--"], id="options-before-the-task"),
    pytest.param(["{task}", "--timeout", "10", "--"], id="options-after-the-task"),
    pytest.param(["--sandbox", "local", "{task}", "--timeout", "10", "--"], id="options-on-both-sides"),
]


@pytest.mark.parametrize("order", ORDERS)
def test_sandbox_run_takes_options_anywhere_before_the_command(task_dir, order):
    args = [a.format(task=task_dir) for a in order]
    result = _cli("sandbox", "run", *args, "ls", "-1", "/home/user/input")
    names = sorted(p.name for p in (task_dir / "environment" / "input").iterdir())
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [*names, "[exit code 0]"]


def test_the_command_keeps_its_own_double_dash_and_options(task_dir):
    # bash -c SCRIPT -- --timeout: the inner -- is $0, --timeout is $1, both the command's own.
    result = _cli("sandbox", "run", str(task_dir), "--", "bash", "-c", 'echo "$0 $1"', "--", "--timeout")
    assert (result.returncode, result.stdout.splitlines()[0]) == (0, "-- --timeout")


def test_sandbox_run_without_a_command_says_how(task_dir):
    result = _cli("sandbox", "run", str(task_dir))
    assert result.returncode == 2 and "give the command after --" in result.stderr


def test_a_command_for_a_subcommand_that_takes_none_is_refused():
    result = _cli("grade", "--gold", "1", "--prediction", "1", "--", "ls")
    assert result.returncode == 2 and "takes no command after --" in result.stderr


def test_grade_prints_correctness():
    result = _cli("grade", "--gold", "1234.5", "--prediction", "$1,234.50", "--type", "numeric")
    assert (result.returncode, json.loads(result.stdout)) == (0, {"correctness": 1})


def test_the_written_out_choices_agree_with_the_library():
    from multiharness.endpoint import POLICIES
    from multiharness.harnesses import HARNESSES, RUNNERS

    assert (cli.HARNESS_NAMES, cli.POLICIES, cli.RUNNERS) == (list(HARNESSES), list(POLICIES), list(RUNNERS))
