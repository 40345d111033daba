"""Harbor without containers: exported tasks pass Harbor's checks, its oracle and nop agents, every harness as a trial."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from multiharness.harbor.trial import HARBOR, HARBOR_AGENTS, ENVIRONMENT, _harbor_env
from multiharness.harnesses import HARNESSES
from multiharness.paths import PROJECT_ROOT
from multiharness.tasks import load_task
from multiharness.tasks.build import build_task, load_manifest

from evaluations import evaluation_folder

CANARY = "hf_canary_0a1b2c3d4e5f60718293"
"""A fake secret planted in the training process's environment: it must reach no output file."""


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    if not HARBOR.exists():
        pytest.fail(f"Harbor is missing at {HARBOR}: ./install.sh installs it")
    root = tmp_path_factory.mktemp("harbor-tasks")
    rows = [r for r in load_manifest("test") if r["difficulty"] == "easy"][:2]
    for row in rows:
        build_task(row, root / row["id"])
    return [load_task(root / row["id"]) for row in rows]


def _harbor(*args: str, home: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(HARBOR), *args], env=_harbor_env(home), capture_output=True, text=True, timeout=600,
                          cwd=PROJECT_ROOT)


def test_exported_tasks_pass_harbors_static_checks(tasks, tmp_path):
    result = _harbor("lint", *[str(t.path) for t in tasks], home=tmp_path)
    assert (result.returncode, result.stdout.strip()) == (0, ""), result.stdout + result.stderr


@pytest.mark.parametrize("agent, reward", [("oracle", 1.0), ("nop", 0.0)])
def test_harbors_oracle_scores_1_and_nop_0_in_the_bubblewrap_environment(tasks, tmp_path, agent, reward):
    rewards = []
    for task in tasks:
        trials = tmp_path / "trials" / task.id
        result = _harbor("trial", "start", "--path", str(task.path), "--agent", agent, "--env", ENVIRONMENT,
                         "--trials-dir", str(trials), home=tmp_path)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        (outcome,) = [json.loads(p.read_text()) for p in trials.glob("*/result.json")]
        assert outcome["exception_info"] is None, outcome["exception_info"]
        rewards.append(outcome["verifier_result"]["rewards"]["reward"])
    assert rewards == [reward] * len(tasks)


def test_the_environment_refuses_a_task_that_asks_for_the_internet(tasks, tmp_path):
    import shutil

    public = tmp_path / "public-task"
    shutil.copytree(tasks[0].path, public)
    toml = (public / "task.toml").read_text().replace('network_mode = "no-network"', 'network_mode = "public"')
    (public / "task.toml").write_text(toml)
    result = _harbor("trial", "start", "--path", str(public), "--agent", "oracle", "--env", ENVIRONMENT,
                     "--trials-dir", str(tmp_path / "trials"), home=tmp_path)
    assert "has no internet" in result.stdout + result.stderr


@pytest.fixture(scope="module")
def episodes(tasks, tmp_path_factory):
    """Every harness as a Harbor trial with the scripted policy, with a canary secret in the environment."""
    from multiharness.endpoint import open_endpoint
    from multiharness.harbor.trial import run_trial
    from multiharness.harnesses import HarnessSessionFactory

    keep = tmp_path_factory.mktemp("kept-trials")
    planted = {name: CANARY for name in ("HF_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DAYTONA_API_KEY")}
    saved = {name: os.environ.get(name) for name in planted}
    os.environ.update(planted)
    records = {}
    try:
        with open_endpoint(policy="scripted", tasks=tasks[:1]) as endpoint:
            for name in HARBOR_AGENTS:
                factory = HarnessSessionFactory(
                    HARNESSES[name], endpoint.proxy, model=endpoint.model, timeout_s=300,
                    runner=lambda *a, **k: run_trial(*a, keep_dir=keep, **k),
                )
                session = factory.create(tasks[0])
                try:
                    session.wait_for_completion()
                    records[name] = (session.verify([]).metrics, session.fetch_training_trace())
                finally:
                    session.close()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return records, keep


@pytest.mark.slow
@pytest.mark.parametrize("name", list(HARBOR_AGENTS))
def test_each_harness_runs_as_a_harbor_trial_graded_by_harbors_verifier(episodes, name):
    record, trace = episodes[0][name]
    assert record["boundary"] is None, record["error"]
    # The answer came from the input files, which exist only in the sandbox; Harbor's verifier,
    # in an environment of its own, gave 1; its trajectory counted the shell calls.
    assert (record["correctness"], record["tool_calls"] >= 1, record["reward"] > 1.0) == (1, True, True)
    assert len(trace.turns) >= 2 and all(t.per_token_logps for t in trace.turns)


@pytest.mark.slow
def test_no_secret_of_the_host_reaches_a_trial_file_or_a_trace(episodes):
    records, kept = episodes
    files = [p for p in kept.rglob("*") if p.is_file()]
    leaked = [str(p) for p in files if CANARY.encode() in p.read_bytes()]
    traces = [json.dumps(trace.model_dump()) for _, trace in records.values()]
    assert len(files) > 20 and leaked == [] and not any(CANARY in text for text in traces)


@pytest.mark.slow
def test_harbor_smoke_run_trains_one_step_per_harness(tasks, tmp_path):
    # Four easy tasks, four harnesses, four steps of one group: every harness gets a step.
    root = tmp_path / "tasks"
    for row in [r for r in load_manifest("train") if r["difficulty"] == "easy"][:4]:
        build_task(row, root / row["id"])
    out = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "train/harbor.py", "--preset", "smoke", "--steps", "4", "--tasks", str(root),
         "--output", str(out)], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=1500,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "per harness: {'opencode': 1, 'claude-code': 1, 'codex': 1, 'mini-swe-agent': 1}" in result.stdout
    steps = [h for h in json.loads((out / "trainer_state.json").read_text())["log_history"] if "episodes/forks" in h]
    assert len(steps) == 4 and all(h["episodes/ungraded_share"] == 0.0 for h in steps)
    assert (out / "checkpoint-4").is_dir() and (out / "learning_curve.png").exists()


@pytest.mark.slow
def test_a_curriculum_run_trains_only_on_the_tasks_the_warm_start_solves_in_its_harness(tmp_path):
    rows = [r for r in load_manifest("train") if r["difficulty"] == "easy"][:4]
    root = tmp_path / "tasks"
    for row in rows:
        build_task(row, root / row["id"])
    ids = [row["id"] for row in rows]
    # in mini-swe-agent greedy solves the first task and a sample the second; nothing solves the others
    sampled = evaluation_folder(tmp_path / "sampled", {ids[1]: [1, 0], ids[2]: [0, 0], ids[3]: [0, 0]},
                                loop="mini-swe-agent")
    greedy = evaluation_folder(tmp_path / "greedy", dict(zip(ids, [[1], [0], [0], [0]])), loop="mini-swe-agent")
    out = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "train/harbor.py", "--preset", "smoke", "--harnesses", "mini-swe-agent", "--tasks", str(root),
         "--curriculum", str(sampled), "--curriculum-greedy", str(greedy), "--curriculum-tasks", "solved",
         "--output", str(out)], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "curriculum in mini-swe-agent: 2 tasks" in result.stdout
    assert "per harness: {'mini-swe-agent': 2}" in result.stdout
    recorded = json.loads((out / "training_config.json").read_text())
    assert (recorded["curriculum"], recorded["curriculum_greedy"], recorded["curriculum_tasks"]) == \
        (str(sampled), str(greedy), "solved")
