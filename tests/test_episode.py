"""The episode outcome: one scoring function for every loop, failure boundaries, the failure budget."""

import json

import pytest

from multiharness import episode
from multiharness.episode import BOUNDARIES, FailureBudget, FailureBudgetExceeded, Outcome, failed, score
from multiharness.grading import GradingError
from multiharness.tasks import load_task, run_reference_solution


@pytest.fixture(scope="module")
def task(easy_test_task):
    return easy_test_task


@pytest.fixture(scope="module")
def right(task) -> str:
    return run_reference_solution(task)


# (answer, tool calls, expected correctness, reward, boundary)
SCORES = [
    pytest.param("right", 2, 1, 1 + 0.1 * 15 / 17, None, id="right-with-tool-bonus"),
    pytest.param("right", 0, 1, 1.0, None, id="right-without-tools"),
    pytest.param("right", None, 1, 1.0, None, id="tool-count-unknown-no-bonus"),
    pytest.param("certainly not it", 3, 0, 0.0, None, id="wrong"),
    pytest.param(None, 3, 0, 0.0, None, id="no-answer-is-wrong-not-broken"),
]


@pytest.mark.parametrize("answer, tool_calls, correctness, reward, boundary", SCORES)
def test_score(task, right, answer, tool_calls, correctness, reward, boundary):
    outcome = score(task, right if answer == "right" else answer, tool_calls)
    assert (outcome.correctness, outcome.reward, outcome.tool_calls, outcome.boundary) == (
        correctness, pytest.approx(reward), tool_calls, boundary)


@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_a_failure_at_any_boundary_is_not_graded(boundary):
    outcome = failed("t", boundary, RuntimeError("it broke"), tool_calls=2)
    assert (outcome.graded, outcome.correctness, outcome.reward, outcome.boundary, outcome.error) == (
        False, None, None, boundary, "RuntimeError: it broke")


def test_an_unknown_boundary_is_a_bug():
    with pytest.raises(ValueError, match=r"'network'.*\['task', 'sandbox', 'harness', 'engine'\]"):
        failed("t", "network", "?")


def test_a_grader_exception_is_not_graded_at_the_task_boundary(task, right, monkeypatch):
    def broken(task, answer):
        raise GradingError("grading rung _same_number failed on '42': KeyError")

    monkeypatch.setattr(episode, "grade_answer", broken)
    outcome = score(task, right, 2)
    assert (outcome.correctness, outcome.reward, outcome.boundary, outcome.tool_calls) == (None, None, "task", 2)
    assert "_same_number" in outcome.error


def test_a_bad_gold_file_is_not_graded_at_the_task_boundary(task, tmp_path):
    import shutil

    broken = tmp_path / task.id
    shutil.copytree(task.path, broken)
    (broken / "tests" / "gold.json").write_text(json.dumps({"answer": 42}))  # a number, not text
    outcome = score(load_task(broken), "42", 1)
    assert (outcome.reward, outcome.boundary) == (None, "task") and "must be a string" in outcome.error


def test_an_outcome_is_one_flat_json_record(task, right):
    record = score(task, right, 1).to_json()
    assert json.loads(json.dumps(record)) == record and set(record) == {
        "task_id", "correctness", "reward", "tool_calls", "boundary", "error"}


# ---- the failure budget --------------------------------------------------------------------


def _graded(reward=1.0) -> Outcome:
    return Outcome("ok", int(reward > 0), reward, 1)


def test_the_budget_stops_a_run_past_its_share_naming_the_boundary_and_the_last_error():
    budget = FailureBudget(0.5, min_episodes=4, progress=False)
    for outcome in (_graded(), failed("a", "sandbox", "bwrap: no namespace"), failed("b", "sandbox", "bwrap: gone")):
        budget.record(outcome)  # 2 of 3 failed: not judged before the fourth
    with pytest.raises(FailureBudgetExceeded, match=r"3 of 4 episodes were not graded \(sandbox 2, engine 1\), "
                                                    r"more than the failure budget of 50%; the last failed at the "
                                                    r"engine boundary on c: connection refused"):
        budget.record(failed("c", "engine", "connection refused"))


def test_the_budget_waits_for_its_first_episodes_and_tolerates_its_share():
    budget = FailureBudget(0.5, min_episodes=4, progress=False)
    crash = failed("a", "harness", "crashed")
    outcomes = [crash, crash, _graded()]  # 2 of 3 failed, but fewer than min_episodes were recorded
    outcomes += [_graded(), _graded(0.0), crash]  # then 2 of 4, 2 of 5, 3 of 6: at the limit, never past it
    for outcome in outcomes:
        budget.record(outcome)
    assert (len(budget.failures), budget.mean_reward) == (3, pytest.approx(2 / 3))


def test_the_mean_reward_is_none_when_nothing_was_graded():
    budget = FailureBudget(1.0, progress=False)
    budget.record(failed("a", "engine", "refused"))
    assert budget.mean_reward is None
