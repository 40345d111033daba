"""Harness runners and sessions: each real agent CLI solves a task in its sandbox, offline, token-exact.

The end-to-end cases run in one child process inside a new network namespace whose only
interface is loopback (`unshare --net`, then `ip link set lo up`): the engines, the capture
proxies, the sandboxes and the four CLIs all live there, so an episode that passes used no
network. The child is this file run as a script (`python tests/test_harnesses.py OUT.json`);
the tests read the record it writes. Two stacks run in it:

- the scripted policy (`ScriptedPolicy`: the task's reference solution played through each
  CLI's own shell tool): every CLI must solve the task, and every model call's prompt must
  extend the previous call's prompt and completion token for token;
- the real SmolLM2 engine (two calls at most, 16 tokens each: a 5.5k-token CLI prompt takes
  about a minute on two cores): every CLI must run and leave a token-level trace, whatever
  the grade.

Failures (a crashed CLI, a dead engine, a CLI past its timeout) run in this process: they
need no network either. `pytest tests/test_harnesses.py -s` prints the timings of each episode.
"""

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the child runs this file as a script

from multiharness.harnesses import (  # noqa: E402
    HARNESSES,
    Harness,
    HarnessSession,
    get_harness,
    run_episode,
)
from multiharness.harnesses._common import Launch  # noqa: E402
from multiharness.harnesses.codex import Codex  # noqa: E402
from multiharness.paths import DEFAULT_MODEL_DIR  # noqa: E402

NAMES = list(HARNESSES)
REAL_MAX_TOKENS = 16
"""Sampled tokens per real-model call: the prompt, not the reply, is what the test needs."""
REAL_CALLS = {"opencode": 2}
"""Model calls per real-model episode (default 1); OpenCode asks for a session title first."""
CHILD_TIMEOUT_S = 900


# ----------------------------------------------------------------------------------------------
# The offline child: engines, proxies and CLIs in a loopback-only network namespace
# ----------------------------------------------------------------------------------------------


def _build_task(root: Path) -> Path:
    from multiharness.tasks.build import build_task, load_manifest

    row = next(r for r in load_manifest("train") if r["difficulty"] == "easy")
    path = root / row["id"]
    build_task(row, path)
    return path


def _record(result, trace) -> dict:
    record = {**result.to_json(), "turns": []}
    if trace is not None:
        record["turns"] = [
            {
                "prompt": len(t.prompt_token_ids),
                "completion": len(t.completion_token_ids),
                "logprobs": len(t.per_token_logps),
                "mask": len(t.loss_mask),
            }
            for t in trace.turns
        ]
    return record


def _reach(host: str, port: int) -> str:
    """"connected", or the error a TCP connection to host:port ends with."""
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as error:
        return type(error).__name__ + ": " + str(error)
    return "connected"


def _loopback_works() -> bool:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        return _reach("127.0.0.1", server.getsockname()[1]) == "connected"


def _offline_episodes(out: Path) -> None:
    """Run every harness on one task with the scripted policy, then with SmolLM2; write the records."""
    import tempfile
    from concurrent.futures import ThreadPoolExecutor

    from multiharness.endpoint import open_endpoint
    from multiharness.tasks import load_task

    records = {"scripted": {}, "real": {}, "internet": _reach("1.1.1.1", 443), "loopback": _loopback_works()}
    with tempfile.TemporaryDirectory() as scratch:
        task = load_task(_build_task(Path(scratch)))
        records["task"] = task.id
        with open_endpoint(policy="scripted", tasks=[task]) as endpoint:

            def scripted(name):
                return name, run_episode(name, task, endpoint.proxy, model=endpoint.model, timeout_s=300)

            with ThreadPoolExecutor(len(NAMES)) as pool:  # four sessions through one proxy at once
                for name, episode in pool.map(scripted, NAMES):
                    records["scripted"][name] = _record(*episode)

        with open_endpoint(DEFAULT_MODEL_DIR, max_tokens=REAL_MAX_TOKENS) as endpoint:
            for name in NAMES:
                episode = run_episode(
                    name, task, endpoint.proxy, model=endpoint.model, sampling={"temperature": 1.0},
                    max_model_calls=REAL_CALLS.get(name, 1), timeout_s=600,
                )  # fmt: skip
                records["real"][name] = _record(*episode)
    out.write_text(json.dumps(records, indent=1))


def _offline(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    """Run `argv` in a new network namespace whose only interface is its own loopback."""
    script = 'ip link set lo up && exec "$@"'
    return subprocess.run(
        ["unshare", "--net", "--", "/bin/sh", "-c", script, "offline", *argv],
        capture_output=True, text=True, cwd=ROOT, **kwargs,
    )  # fmt: skip


def _require_offline_namespace():
    if os.geteuid() != 0:
        pytest.skip("the loopback-only network namespace needs root (unshare --net); CI runs as root")
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("needs unshare (util-linux) and ip (iproute2)")
    if not (DEFAULT_MODEL_DIR / "config.json").exists():
        pytest.skip(f"the default model is not converted at {DEFAULT_MODEL_DIR}; run ./install.sh")
    missing = [message for harness in HARNESSES.values() if (message := harness.missing())]
    if missing:
        pytest.fail(f"harness CLIs are missing: {missing}")


@pytest.fixture(scope="module")
def offline(tmp_path_factory) -> dict:
    """The record of the offline child (see the module docstring)."""
    _require_offline_namespace()
    out = tmp_path_factory.mktemp("offline") / "episodes.json"
    started = time.monotonic()
    child = _offline([sys.executable, __file__, str(out)], timeout=CHILD_TIMEOUT_S)
    assert child.returncode == 0, f"offline child failed:\n{child.stdout[-3000:]}\n{child.stderr[-5000:]}"
    records = json.loads(out.read_text())
    print(f"\noffline child: {time.monotonic() - started:.0f} s")
    for stack in ("scripted", "real"):
        for name, r in records[stack].items():
            print(f"  {stack:8} {name:15} correctness={r['correctness']} calls={r['model_calls']} "
                  f"tools={r['tool_calls']} seconds={r['seconds']:.1f} first_call={r['first_call_s']} "
                  f"model={r['model_s']:.1f} harness={r['harness_s']:.1f} forks={r.get('forks')}/"
                  f"{r.get('transitions')} boundary={r['boundary']}")  # fmt: skip
    return records


# ----------------------------------------------------------------------------------------------
# End to end, offline
# ----------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_episodes_ran_with_loopback_as_the_only_network(offline):
    assert offline["loopback"] is True
    assert "unreachable" in offline["internet"], offline["internet"]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_scripted_policy_solves_the_task_through_each_cli(offline, name):
    r = offline["scripted"][name]
    assert r["boundary"] is None, r["error"]
    # The answer comes from the input files, which exist only inside the sandbox: the CLI's tool
    # call really ran there, and the host grader gave it 1.
    assert (r["correctness"], r["tool_calls"] >= 1, r["reward"] > 1.0) == (1, True, True)
    assert r["model_calls"] >= 2 and len(r["turns"]) >= 2
    # Token-exact chaining: each call's prompt extends the previous call's prompt + completion.
    assert (r["transitions"], r["forks"]) == (len(r["turns"]) - 1, 0), r


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_real_model_episode_leaves_a_token_level_trace(offline, name):
    r = offline["real"][name]
    # Any grade: a 135M model rarely answers. A failure must be recorded with its boundary.
    assert (r["boundary"] is None and r["reward"] is not None) or (r["boundary"] and r["error"] and r["reward"] is None)
    assert r["capture_level"] == "tokens" and r["capture_error"] is None
    assert 1 <= len(r["turns"]) <= r["model_calls"]
    for turn in r["turns"]:
        assert turn["prompt"] > 1000  # the CLI's own system prompt and tools reached the engine
        assert 0 < turn["completion"] <= REAL_MAX_TOKENS
        assert (turn["logprobs"], turn["mask"]) == (turn["completion"], turn["prompt"] + turn["completion"])


@pytest.mark.slow
def test_the_episode_command_prints_one_json_line_offline(tmp_path):
    _require_offline_namespace()
    task = _build_task(tmp_path)
    child = _offline(
        [sys.executable, "-m", "multiharness", "episode", "--harness", "codex", "--task", str(task),
         "--policy", "scripted", "--timeout", "300", "--output", str(tmp_path / "episodes")],
        timeout=600,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr[-3000:]
    line = json.loads(child.stdout.strip().splitlines()[-1])
    assert (line["harness"], line["correctness"], line["boundary"]) == ("codex", 1, None)
    assert line["capture_level"] == "tokens"
    assert line["model_calls"] >= 2 and line["tool_calls"] >= 1 and line["forks"] == 0
    # The scripted stand-in has no prefix cache to report; the local engine's counts are in RESULTS.md.
    assert (line["prompt_tokens_cached"], line["prompt_tokens_computed"]) == (None, None)
    saved = json.loads(Path(line["trace_file"]).read_text())
    assert len(saved["trace"]["turns"]) == line["model_calls"]
    assert saved["episode"]["reward"] == line["reward"]


def test_the_session_factory_feeds_trls_harness_rollout_loop(scripted_proxy, task_dir):
    """The calls `HarnessRolloutWorker` makes on a loop-owning factory, in its order, with its helpers."""
    import functools

    from openenv.core.harness import TrainableSession
    from openenv.core.harness.capture.upstream import training_sampling
    from trl.experimental.async_grpo.async_rollout_worker import _chain_to_sequences
    from trl.experimental.async_grpo.openenv_harness import _turns_from_training_trace

    from multiharness.harnesses import HarnessSessionFactory
    from multiharness.tasks import load_task

    make = functools.partial(
        HarnessSessionFactory, get_harness("codex"), scripted_proxy, model="scripted", tasks=[load_task(task_dir)]
    )
    factory = make(sampling=training_sampling({"temperature": 0.8, "top_p": 1.0, "top_k": -1}))
    prompt = [{"role": "user", "content": load_task(task_dir).instruction}]  # the worker passes the prompt
    session = factory.create(prompt, seed=0, episode_id="r0")
    try:
        assert isinstance(session, TrainableSession)
        assert session.wait_for_completion() == 0
        trace = session.fetch_training_trace()
        turns = _turns_from_training_trace(trace)
        sequences, tally = _chain_to_sequences(turns, "r0", 0)
        verdict = session.verify([])
    finally:
        session.close()
    assert verdict.env_reward > 1.0 and verdict.metrics["correctness"] == 1
    assert (len(turns), len(sequences), tally["fork"]) == (3, 1, 0)  # one conversation, no retokenisation drift
    assert {turn.metadata["sampling_params"]["temperature"] for turn in trace.turns} == {0.8}  # pinned by the session


def test_the_factory_finds_the_task_from_the_prompt_whatever_the_seed(scripted_proxy, task_dir, tmp_path):
    from multiharness.harnesses import HarnessSessionFactory
    from multiharness.tasks import load_task
    from multiharness.tasks.build import build_task, load_manifest

    other_row = next(r for r in load_manifest("train") if r["difficulty"] == "medium")
    build_task(other_row, tmp_path / other_row["id"])
    tasks = [load_task(tmp_path / other_row["id"]), load_task(task_dir)]
    factory = HarnessSessionFactory(_Sleeper("0"), scripted_proxy, model="scripted", tasks=tasks, timeout_s=5)
    prompt = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": tasks[1].instruction}]
    picked = []
    for seed in (None, 0, 1, 7):  # a restarted worker, another group: the same task
        session = factory.create(prompt, seed=seed)
        picked.append(session.task.id)
        session.close()
    assert picked == [tasks[1].id] * 4
    with pytest.raises(ValueError, match="no task's instruction is in the prompt .the dataset's prompt. \\(of 2 tasks\\)"):
        factory.create([{"role": "user", "content": "the dataset's prompt"}], seed=0)


def test_a_bug_in_scoring_is_raised_not_recorded_as_a_harness_failure(scripted_proxy, task_dir, monkeypatch):
    from multiharness.harnesses import session as session_module

    def buggy(task, answer, tool_calls):
        raise KeyError("a bug in our own scoring")

    monkeypatch.setattr(session_module, "score", buggy)
    session = HarnessSession(get_harness("codex"), task_dir, scripted_proxy, model="scripted", timeout_s=120).start()
    try:
        with pytest.raises(KeyError, match="a bug in our own scoring"):
            session.wait_for_completion()
    finally:
        session.close()


# ----------------------------------------------------------------------------------------------
# Reading each CLI's own output
# ----------------------------------------------------------------------------------------------

MINI_TRAJECTORY = "/tmp/harness/trajectory.json"


def _lines(*events) -> str:
    return "\n".join(json.dumps(e) for e in events) + "\nnot json: a log line\n"


def _trajectory(status, *messages) -> dict:
    return {MINI_TRAJECTORY: json.dumps({"info": {"exit_status": status}, "messages": list(messages)})}


BASH_CALL = {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "bash"}}]}
# (harness, its stdout, files read back, native tool calls, agent loop ended on its own)
OUTPUTS = [
    # Claude Code: tool_use blocks of assistant events; a final result event ends the loop ...
    ("claude-code", _lines({"type": "assistant", "message": {"content": [{"type": "text"}, {"type": "tool_use"}]}},
                           {"type": "assistant", "message": {"content": [{"type": "tool_use"}]}},
                           {"type": "result", "api_error": "max_output_tokens", "api_error_status": None}),
     {}, 2, True),
    # ... unless the proxy answered with a server error
    ("claude-code", _lines({"type": "result", "api_error_status": 502}), {}, 0, False),
    # Codex: completed command executions and file changes; a completed turn ends the loop
    ("codex", _lines({"type": "item.started", "item": {"type": "command_execution"}},
                     {"type": "item.completed", "item": {"type": "command_execution"}},
                     {"type": "item.completed", "item": {"type": "file_change"}},
                     {"type": "item.completed", "item": {"type": "agent_message"}},
                     {"type": "turn.completed"}), {}, 2, True),
    ("codex", "", {}, 0, False),  # nothing printed: it died before its first turn
    # OpenCode: tool_use events; a non-zero exit is always a crash (it exits 0 after API errors)
    ("opencode", _lines({"type": "step_start"}, {"type": "tool_use"}, {"type": "tool_use"}, {"type": "text"}),
     {}, 2, False),
    # mini-swe-agent: tool calls of assistant messages in its trajectory, which says how it ended
    ("mini-swe-agent", "", _trajectory("Submitted", {"role": "user"}, BASH_CALL, BASH_CALL), 2, True),
    ("mini-swe-agent", "", _trajectory("ContextWindowExceededError", BASH_CALL), 1, True),
    ("mini-swe-agent", "", _trajectory("APIConnectionError"), 0, False),
    ("mini-swe-agent", "", {}, 0, False),  # no trajectory: it died before writing one
]


@pytest.mark.parametrize("name, events, files, tool_calls, ended", OUTPUTS)
def test_each_cli_output_gives_tool_calls_and_how_the_loop_ended(name, events, files, tool_calls, ended):
    harness = get_harness(name)
    assert (harness.count_tool_calls(events, files), harness.agent_ended(events, files)) == (tool_calls, ended)


# ----------------------------------------------------------------------------------------------
# Failures: reward None with the boundary, never 0
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory) -> Path:
    return _build_task(tmp_path_factory.mktemp("tasks"))


@pytest.fixture(scope="module")
def scripted_proxy(task_dir):
    from transformers import AutoTokenizer

    from multiharness.capture import start_capture
    from multiharness.engine import EngineServer, ScriptedPolicy
    from multiharness.tasks import load_task, look_command, solution_command

    if not (DEFAULT_MODEL_DIR / "tokenizer.json").exists():
        pytest.skip(f"the default model is not converted at {DEFAULT_MODEL_DIR}; run ./install.sh")
    tokenizer = AutoTokenizer.from_pretrained(DEFAULT_MODEL_DIR, local_files_only=True)
    task = load_task(task_dir)
    policy = ScriptedPolicy(tokenizer, solution_command(task), look_command=look_command(task))
    with EngineServer(policy, model_name="scripted") as engine:
        with start_capture(engine.url, "scripted", capture_level="tokens") as proxy:
            yield proxy


class _Broken(Codex):
    """Codex's configuration with a command line that fails the way a broken install does."""

    def __init__(self, command: list[str]):
        self.command = command

    def launch(self, context):
        launch = super().launch(context)
        return Launch(argv=self.command, env=launch.env, files=launch.files)


class _Sleeper(Harness):
    """A "CLI" that starts a background child and then waits on another one, forever."""

    name = "sleeper"
    dialect = "chat"

    def __init__(self, marker: str):
        self.marker = marker

    def mounts(self):
        return {}

    def launch(self, context):
        return Launch(argv=["bash", "-c", f"sleep {self.marker} & sleep {self.marker}; wait"])

    def count_tool_calls(self, events, files):
        return 0


def _host_processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                found.append(int(entry))
        except OSError:  # ended while we looked
            continue
    return found


# (what breaks, the command line, what the record says)
CRASHES = [
    ("a CLI path that does not exist", ["/opt/harness/npm/node_modules/.bin/no-such-cli"], "code 127"),
    ("a CLI killed by a signal", ["bash", "-c", "kill -9 $$"], "code 137"),
]


@pytest.mark.parametrize("what, command, message", CRASHES, ids=[c[0] for c in CRASHES])
def test_a_crashed_harness_is_not_graded(scripted_proxy, task_dir, what, command, message):
    harness = _Broken(command)
    result, trace = run_episode(harness, task_dir, scripted_proxy, model="scripted", timeout_s=60)
    outcome = result.outcome
    assert (outcome.boundary, outcome.correctness, outcome.reward) == ("harness", None, None)
    assert message in outcome.error
    assert trace is None and "not trainable" in result.capture_error  # it never called the model


def test_a_harness_that_exits_cleanly_without_calling_the_model_is_not_graded(scripted_proxy, task_dir):
    # Exit 0 and even an answer file, but no model call: the policy did not take part (a first prompt
    # past the context, say), so this is no wrong answer of the policy's.
    harness = _Broken(["bash", "-c", "echo 42 > /workdir/answer.txt"])
    result, _ = run_episode(harness, task_dir, scripted_proxy, model="scripted", timeout_s=60)
    outcome = result.outcome
    assert (result.exit_code, result.model_calls) == (0, 0)
    assert (outcome.boundary, outcome.correctness, outcome.reward) == ("harness", None, None)
    assert "without a model call reaching the engine" in outcome.error


def test_a_dead_engine_is_not_graded(task_dir):
    from multiharness.capture import start_capture

    # A bound port that nobody listens on: connections are refused, and no one else can take it.
    with socket.socket() as dead:
        dead.bind(("127.0.0.1", 0))
        engine_url = f"http://127.0.0.1:{dead.getsockname()[1]}"
        with start_capture(engine_url, "gone", capture_level="tokens") as proxy:
            result, trace = run_episode("codex", task_dir, proxy, model="gone", timeout_s=120)
    outcome = result.outcome
    assert (outcome.boundary, outcome.correctness, outcome.reward) == ("engine", None, None)
    assert engine_url in outcome.error and trace is None


def test_the_timeout_kills_the_harness_and_all_its_children(scripted_proxy, task_dir):
    from openenv.core.harness import LoopOwningSession, TrainableSession

    marker = f"1000.{secrets.randbelow(10**9):09d}"  # a sleep only this test starts
    session = HarnessSession(_Sleeper(marker), task_dir, scripted_proxy, model="scripted", timeout_s=3).start()
    assert isinstance(session, TrainableSession) and isinstance(session, LoopOwningSession)
    try:
        with pytest.raises(TimeoutError, match="timeout"):
            session.wait_for_completion()
        result = session.verify([])
    finally:
        session.close()
    assert (result.env_reward, result.metrics["boundary"], result.metrics["timed_out"]) == (None, "harness", True)
    assert 3 <= result.metrics["seconds"] < 20
    assert _host_processes_with(marker) == []  # the CLI and both of its children are gone


# (mount target, why it is refused)
BAD_MOUNTS = [
    ("/workdir/tools", "the agent's writable working directory"),
    ("/home/user/input", "the task's input files"),
    ("/usr/local", "a system folder"),
    ("opt/harness", "a relative path"),
]


@pytest.mark.parametrize("target, why", BAD_MOUNTS, ids=[m[1] for m in BAD_MOUNTS])
def test_harness_mounts_stay_out_of_the_agents_places(task_dir, tmp_path, target, why):
    from multiharness.sandbox import open_sandbox

    with pytest.raises(ValueError, match="Cannot mount at"):
        open_sandbox(task_dir, mounts={target: tmp_path})


def test_a_harness_install_is_mounted_read_only(task_dir, tmp_path):
    from multiharness.sandbox import open_sandbox

    tmp_path.chmod(0o755)  # readable by the sandbox user, as .tools is
    (tmp_path / "cli").write_text("#!/bin/sh\necho harness-ok\n")
    (tmp_path / "cli").chmod(0o755)
    with open_sandbox(task_dir, mounts={"/opt/harness/tool": tmp_path}) as sandbox:
        ran = sandbox.exec("/opt/harness/tool/cli && touch /opt/harness/tool/new")
    assert "harness-ok" in ran.output and "Read-only file system" in ran.output
    assert not (tmp_path / "new").exists()


def test_an_unknown_harness_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"'aider'.*\['opencode', 'claude-code', 'codex', 'mini-swe-agent'\]"):
        get_harness("aider")


if __name__ == "__main__":  # the offline child: python tests/test_harnesses.py OUT.json
    _offline_episodes(Path(sys.argv[1]))
