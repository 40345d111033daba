"""Harness sessions: one episode of a real agent CLI as an OpenEnv `TrainableSession`.

`HarnessSessionFactory(harness, proxy, sampling=...)` makes one `HarnessSession` per rollout
(`create(task)`): it opens a capture session with the training policy pinned (the CLIs send no
temperature), starts the harness in its sandbox on a background thread, and then answers the
loop-owning protocol that TRL's `HarnessRolloutWorker` (GPU) and a `rollout_func` (CPU) use:

    session = factory.create(task)
    session.wait_for_completion()       # the CLI's exit code; TimeoutError if it was killed
    trace = session.fetch_training_trace()   # OpenEnv TrainingTrace: token ids, logprobs, masks
    result = session.verify([])         # VerifyResult: env_reward = the shared reward, or None
    session.close()

Rules:

- The answer is read from /workdir/answer.txt and graded on the host; the gold never enters the
  sandbox. A missing answer is a wrong answer (0).
- Only an episode that ran to its end is graded. A failure is recorded once, as data: reward
  None (never 0), `failure` naming the boundary it crossed and `error` saying what happened:
  "harness" (not installed, crashed, exited non-zero, ran past its timeout), "sandbox" (would
  not start or died), "engine" (the engine stopped answering: checked on its /v1/models when the
  CLI failed), "task" (the task could not be loaded or its grader could not grade).
- The proxy's own budgets (model calls, wall time) end an agent's loop gracefully; the harness
  timeout is the backstop behind them (the session's wall time is the timeout less a grace),
  so a harness that has to be killed is a harness failure.
- The capture is exact: token ids are never rewritten. `prefix_forks(trace)` counts the model
  calls whose prompt does not extend the previous call's prompt and completion (a harness
  that re-renders a tool call differently from how the model wrote it forks the capture graph).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
from openenv.core.harness import ResourceSession, ResourceSessionFactory, ToolResult, TrainingTrace, VerifyResult

from ..capture import CaptureError, CaptureProxy
from ..reward import reward as shared_reward
from ..tasks import Task, grade_answer, load_task
from ._common import SANDBOX_PROXY_PORT, Harness, HarnessRun, LaunchContext, run_harness

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "EpisodeResult",
    "HarnessSession",
    "HarnessSessionFactory",
    "prefix_forks",
]

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 900.0
"""Wall-clock seconds per episode: a CPU episode of 17 short model calls fits well within it."""
WALL_TIME_GRACE_S = 60.0
"""The proxy ends the agent's loop this long before the timeout, so the CLI can exit on its own."""
ENGINE_CHECK_TIMEOUT_S = 10.0


@dataclass
class EpisodeResult:
    """What one harness episode did: the grade and reward, where a failure happened, the timings."""

    harness: str
    """The harness's registry name."""
    task_id: str
    """The task directory's name."""
    correctness: int | None = None
    """1 or 0 from the task's grader; None when the episode was not graded."""
    reward: float | None = None
    """The shared reward (`multiharness.reward`); None when not graded, never 0 for a failure."""
    tool_calls: int | None = None
    """The harness's native tool actions, counted from its own output."""
    model_calls: int = 0
    """Model calls the proxy forwarded to the engine."""
    seconds: float = 0.0
    """Wall time of the episode, sandbox included."""
    first_call_s: float | None = None
    """From the CLI's launch to its first model call reaching the proxy."""
    model_s: float = 0.0
    """Time with a model call in flight (request to the answer's last byte, at the sandbox's edge)."""
    exit_code: int | None = None
    """The CLI's exit status; None when it never ran."""
    timed_out: bool = False
    """True when the harness ran past its timeout and was killed with all its processes."""
    failure: str | None = None
    """The boundary that failed ("harness", "sandbox", "engine", "task"); None when graded."""
    error: str | None = None
    """What went wrong, for a person."""
    answer: str | None = None
    """The text of /workdir/answer.txt; None when the agent wrote none."""
    capture_level: str = ""
    """The proxy's capture level ("tokens" is trainable)."""
    session_key: str = ""
    """The capture session's id."""

    @property
    def harness_s(self) -> float:
        """Time not spent waiting on the model: harness start-up, its own work, the tools."""
        return self.seconds - self.model_s

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "harness_s": self.harness_s}


def prefix_forks(trace: TrainingTrace) -> dict[str, int]:
    """How many model calls fork the conversation: their prompt does not extend the previous call's.

    Returns `{"transitions": n - 1, "forks": k, "first_divergence": i}`, where a transition is a
    pair of consecutive calls and `first_divergence` is the token offset of the first fork (-1
    when none). A fork is not an error: the capture keeps both branches exactly.
    """
    transitions, forks, first = 0, 0, -1
    for previous, current in itertools.pairwise(trace.turns):
        transitions += 1
        expected = list(previous.prompt_token_ids) + list(previous.completion_token_ids)
        prompt = list(current.prompt_token_ids)
        if prompt[: len(expected)] != expected:
            forks += 1
            if first < 0:
                same = (i for i, (a, b) in enumerate(zip(expected, prompt)) if a != b)
                first = next(same, min(len(expected), len(prompt)))
    return {"transitions": transitions, "forks": forks, "first_divergence": first}


def _busy_seconds(intervals: list[tuple[float, float]]) -> float:
    """Seconds covered by at least one interval: calls that overlap (a title call) count once."""
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


def _load(task: Task | str | Path | Mapping) -> Task:
    if isinstance(task, Task):
        return task
    if isinstance(task, Mapping):
        path = task.get("task_path") or task.get("path")
        if path is None:
            raise ValueError(f"a task row needs 'task_path'; got keys {sorted(task)}")
        return load_task(Path(path))
    return load_task(Path(task))


def _engine_alive(url: str) -> bool:
    try:
        return httpx.get(f"{url.rstrip('/')}/v1/models", timeout=ENGINE_CHECK_TIMEOUT_S).status_code == 200
    except httpx.HTTPError:
        return False


class HarnessSession(ResourceSession):
    """One episode of a harness CLI on one task; the CLI starts as soon as the session is made."""

    def __init__(
        self,
        harness: Harness,
        task: Task | str | Path | Mapping,
        proxy: CaptureProxy,
        *,
        model: str,
        sampling: Mapping | None = None,
        max_tokens: int | None = None,
        max_model_calls: int | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        sandbox: str = "local",
        episode_id: str | None = None,
    ):
        self.harness = harness
        self.proxy = proxy
        self.max_model_calls = proxy.max_model_calls if max_model_calls is None else max_model_calls
        self.timeout_s = timeout_s
        self.episode_id = episode_id
        self._run: HarnessRun | None = None
        self._sandbox = None
        self._closed = False
        try:
            self.task: Task | None = _load(task)
            task_id = self.task.id
        except (ValueError, OSError) as error:
            self.task, task_id = None, str(task)
            self.result = EpisodeResult(harness.name, task_id, failure="task", error=str(error))
        else:
            self.result = EpisodeResult(harness.name, task_id)
        self.result.capture_level = proxy.capture_level
        wall = max(timeout_s - WALL_TIME_GRACE_S, timeout_s / 2)
        self.key = proxy.open_session(
            sampling,
            max_tokens=max_tokens,
            max_model_calls=self.max_model_calls,
            wall_time_s=wall,
            harness=harness.name,
            task=task_id,
        )
        self.result.session_key = self.key
        self._thread = threading.Thread(
            target=self._episode, args=(model, sandbox), daemon=True, name=f"harness-{harness.name}"
        )
        if self.task is not None:
            self._thread.start()

    # ---- the episode, on its own thread ------------------------------------------------------

    def _episode(self, model: str, sandbox: str) -> None:
        try:
            self._run_and_grade(model, sandbox)
        except Exception as error:  # noqa: BLE001 - recorded once, as data, never a crash of the caller
            logger.exception("%s on %s: the episode failed", self.harness.name, self.result.task_id)
            self.result.failure, self.result.error = "harness", f"{type(error).__name__}: {error}"
            self.result.correctness = self.result.reward = None

    def _run_and_grade(self, model: str, sandbox: str) -> None:
        context = LaunchContext(
            base_url=f"http://127.0.0.1:{SANDBOX_PROXY_PORT}",
            api_key=self.key,
            model=model,
            instruction=self.task.instruction,
            max_model_calls=self.max_model_calls,
        )
        run = run_harness(
            self.harness,
            self.task.path,
            proxy_host="127.0.0.1",
            proxy_port=self.proxy.port,
            context=context,
            timeout_s=self.timeout_s,
            sandbox=sandbox,
            on_open=self._opened,
        )
        self._run = run
        result = self.result
        result.exit_code, result.timed_out, result.answer = run.exit_code, run.timed_out, run.answer
        result.tool_calls, result.seconds = run.tool_calls, run.seconds
        result.model_calls = self.proxy.model_calls(self.key)
        result.model_s = _busy_seconds([(start, end) for start, end in run.calls if end is not None])
        if run.calls and run.launch_s is not None:
            result.first_call_s = run.calls[0][0] - run.launch_s
        result.failure, result.error = run.failure, run.error
        # CLIs that get errors from the proxy often give up and exit 0, so the engine is checked
        # whenever the run failed, made no call, or saw the proxy fail to reach the engine.
        upstream_errors = self.proxy.upstream_errors(self.key)
        suspect = result.failure == "harness" or result.model_calls == 0 or upstream_errors > 0
        if result.failure in (None, "harness") and suspect and not _engine_alive(self.proxy.engine_url):
            result.failure = "engine"
            result.error = (
                f"the engine at {self.proxy.engine_url} stopped answering (GET /v1/models failed; the proxy "
                f"saw {upstream_errors} failed call(s)); the harness said: {run.error or 'nothing'}"
            )
        if result.failure is None:
            self._grade()
        if result.failure is not None:
            logger.warning("%s on %s not graded (%s): %s", result.harness, result.task_id, result.failure, result.error)

    def _opened(self, box) -> None:
        self._sandbox = box
        if self._closed:  # closed while the sandbox was starting
            box.close()

    def _grade(self) -> None:
        result = self.result
        if result.answer is None:
            result.correctness = 0  # the agent wrote no answer: wrong, not a failure
        else:
            result.correctness = grade_answer(self.task, result.answer)
            if result.correctness is None:
                result.failure = "task"
                result.error = f"the grader of task {self.task.id} could not grade the answer {result.answer[:200]!r}"
                return
        result.reward = shared_reward(result.correctness, result.tool_calls)

    # ---- OpenEnv's loop-owning protocol ------------------------------------------------------

    def wait_for_completion(self, timeout_s: float | None = None) -> int:
        """Wait for the CLI to end; its exit code (-1 when it never ran).

        Raises TimeoutError when `timeout_s` passes first, or when the harness itself ran past
        its timeout and was killed (its captured calls and its result stay readable).
        """
        if self._thread.is_alive():
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                raise TimeoutError(f"{self.harness.name} on {self.result.task_id} still running after {timeout_s} s")
        if self.result.timed_out:
            raise TimeoutError(self.result.error)
        return self.result.exit_code if self.result.exit_code is not None else -1

    def fetch_training_trace(self) -> TrainingTrace:
        """The episode's validated model calls (OpenEnv's `TrainingTrace`); CaptureError if none."""
        return self.proxy.training_trace(self.key)

    def fetch_proxy_trace(self) -> list[dict]:
        """The same calls as OpenEnv `TraceEntry` dicts (`LoopOwningSession`)."""
        return self.fetch_training_trace().to_trace_entries()

    def verify(self, transcript: list[dict], final_state: Any | None = None) -> VerifyResult:
        """The shared reward as `env_reward` (None when not graded) and the episode's record as metrics."""
        if self._thread.is_alive():
            self._thread.join()
        return VerifyResult(env_reward=self.result.reward, done=True, metrics=self.result.to_dict())

    # ---- ResourceSession: the harness runs its own tools ----------------------------------

    def initial_messages(self) -> list[dict]:
        return [{"role": "user", "content": self.task.instruction if self.task else ""}]

    def list_tools(self) -> list:
        return []  # the harness brings its own tools

    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult(error=f"{self.harness.name} runs its own tools; {name!r} cannot be called from outside")

    def close(self) -> None:
        """Stop the harness if it still runs and forget the capture session; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self._thread.is_alive() and self._sandbox is not None:
            self._sandbox.close()  # kills the CLI and everything it started; the run ends as a failure
        if self._thread.is_alive():
            self._thread.join(self.timeout_s + 30)
        try:
            self.proxy.close_session(self.key)
        except (KeyError, CaptureError):  # cleanup: already gone
            pass


class HarnessSessionFactory(ResourceSessionFactory[HarnessSession]):
    """Makes one `HarnessSession` per rollout, all through the same capture proxy.

    `task` given to `create` is a `Task`, a task directory, or a dataset row with `task_path`;
    anything else (TRL passes the prompt's messages) picks from `tasks` by `seed`, so that every
    generation of a GRPO group gets the same task.
    """

    def __init__(
        self,
        harness: Harness,
        proxy: CaptureProxy,
        *,
        model: str,
        sampling: Mapping | None = None,
        max_tokens: int | None = None,
        max_model_calls: int | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        sandbox: str = "local",
        tasks: list[Task] | None = None,
    ):
        self.harness = harness
        self.proxy = proxy
        self.tasks = list(tasks or [])
        self.session_settings = dict(
            model=model,
            sampling=dict(sampling) if sampling is not None else None,
            max_tokens=max_tokens,
            max_model_calls=max_model_calls,
            timeout_s=timeout_s,
            sandbox=sandbox,
        )
        """The keywords every `HarnessSession` of this factory gets."""

    def create(self, task: Any, seed: int | None = None, episode_id: str | None = None) -> HarnessSession:
        if not isinstance(task, (Task, str, Path, Mapping)) or (isinstance(task, Mapping) and "task_path" not in task):
            if not self.tasks:
                raise ValueError(
                    f"cannot tell which task {task!r:.80} is: pass a Task, a task directory or a row with "
                    "'task_path', or give the factory `tasks` to pick from by seed"
                )
            task = self.tasks[(seed or 0) % len(self.tasks)]
        return HarnessSession(self.harness, task, self.proxy, episode_id=episode_id, **self.session_settings)
