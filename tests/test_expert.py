"""Expert trajectories: look at the data, (sometimes) fail and recover, compute, submit."""

import json

import pytest

from multiharness.expert import expert_trajectory
from multiharness.tasks import load_task, look_command
from multiharness.tasks.build import build_task, load_manifest


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    """One training task of each input format the generator writes (csv, json, jsonl, parquet, SQLite)."""
    root, picked, formats = tmp_path_factory.mktemp("expert"), [], set()
    for row in load_manifest("train"):
        suffixes = {name.rsplit(".", 1)[1] for name in row["input_sha256"]}
        if row["difficulty"] != "hard" and suffixes - formats:
            build_task(row, root / row["id"])
            picked.append(load_task(root / row["id"]))
            formats |= suffixes
        if formats >= {"csv", "json", "jsonl", "parquet", "db"}:
            return picked
    raise AssertionError(f"no training tasks cover every format; found {formats}")


def _bash_calls(row: dict) -> list[tuple[str, str]]:
    """(command, its output) of every bash call of a trajectory."""
    messages = row["messages"]
    return [(m["tool_calls"][0]["function"]["arguments"]["command"], messages[i + 1]["content"])
            for i, m in enumerate(messages) if m.get("tool_calls") and m["tool_calls"][0]["function"]["name"] == "bash"]


def test_the_first_call_looks_at_every_input_file(tasks):
    for task in tasks:
        row = expert_trajectory(task)
        command, output = _bash_calls(row)[0]
        assert command == look_command(task) and output.endswith("[exit code 0]"), output
        assert all(f"== {path.name}" in output for path in task.input_dir.iterdir())
        if any(path.suffix == ".db" for path in task.input_dir.iterdir()):
            assert "CREATE TABLE" in output


def test_a_recovery_trajectory_fails_for_real_then_computes_the_answer(tasks):
    recovered = 0
    for task in tasks:
        row = expert_trajectory(task, recover=True)
        calls = _bash_calls(row)
        submitted = row["messages"][-3]["tool_calls"][0]["function"]["arguments"]["answer"]
        assert calls[-1][1].startswith(submitted) and calls[-1][1].endswith("[exit code 0]")
        if len(calls) == 3:  # look, the failing program, the right one
            recovered += 1
            assert "[exit code 0]" not in calls[1][1] and "Error" in calls[1][1]
            assert calls[1][0] != calls[2][0]
    assert recovered >= len(tasks) - 1  # a program whose columns the look shows can be made to fail


def test_trajectories_render_with_the_tools_the_policy_is_trained_with(tasks):
    row = expert_trajectory(tasks[0])
    assert [t["function"]["name"] for t in row["tools"]] == ["bash", "submit_solution"]
    json.dumps(row)  # the Json columns of the dataset hold it as is
