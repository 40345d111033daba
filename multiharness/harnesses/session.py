"""Harness sessions: one episode of a real agent CLI as an OpenEnv `TrainableSession`.

`HarnessSessionFactory(harness, proxy, sampling=...)` makes one `HarnessSession` per rollout
(`create(task)`): it opens a capture session with the training policy pinned (the CLIs send no
temperature), starts the harness in its sandbox on a background thread, and the session then
answers the loop-owning protocol that TRL's `HarnessRolloutWorker` (GPU) and a `rollout_func`
(CPU) use:

    session = factory.create(task)
    session.wait_for_completion()       # the CLI's exit code; TimeoutError if it was killed
    trace = session.fetch_training_trace()   # OpenEnv TrainingTrace: token ids, logprobs, masks
    result = session.verify([])         # VerifyResult: env_reward = the shared reward, or None
    session.close()

Rules:

- The task is a `Task`, a task directory, a dataset row with `task_path`, or the prompt's
  messages, found among the factory's `tasks` by the instruction they hold (never by a seed, so
  a restarted worker picks the same task); a prompt that names no task, or several, raises.
- The answer is read from /workdir/answer.txt and scored on the host by
  `multiharness.episode.score`; the gold never enters the sandbox. No answer is a wrong answer.
- Only an episode that ran to its end is graded. A failure is recorded once, as data, in the
  episode's `Outcome`: reward None (never 0), `boundary` naming the stage that failed and
  `error` saying what happened: "harness" (not installed, crashed, exited non-zero, ran past its
  timeout, ended without a model call reaching the engine), "sandbox" (would not start or
  died), "engine" (the engine stopped answering, checked on its /v1/models when the CLI failed,
  or answered a call with an error), "task" (the task could not be loaded or its grader could
  not grade). Any other exception is a bug: it is raised
  again by `wait_for_completion` and `verify`.
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
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
from openenv.core.harness import ResourceSession, ResourceSessionFactory, ToolResult, TrainingTrace, VerifyResult

from ..capture import CaptureError, CaptureProxy
from ..episode import FailureBudget, Outcome, failed, from_correctness, score
from ..sandbox.proxy_route import URL as SANDBOX_PROXY_URL
from ..tasks import Task, find_task, load_task
from ._common import Harness, HarnessRun, LaunchContext, run_harness

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "EpisodeResult",
    "HarnessSession",
    "HarnessSessionFactory",
    "busy_seconds",
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
    """What one harness episode did: its outcome, the model calls, the timings, the capture."""

    harness: str
    """The harness's registry name."""
    task_id: str
    """The task directory's name."""
    outcome: Outcome | None = None
    """Correctness, reward, tool calls, or the boundary that failed; None while the episode runs."""
    model_calls: int = 0
    """Model calls the proxy forwarded to the engine."""
    seconds: float = 0.0
    """Wall time of the episode, sandbox included."""
    first_call_s: float | None = None
    """From the CLI's launch to its first model call reaching the proxy."""
    model_s: float = 0.0
    """Time with a model call in flight (request to the answer's last byte, at the sandbox's edge)."""
    call_intervals: list[tuple[float, float]] = field(default_factory=list, repr=False)
    """(start, end) monotonic times of the model calls, for timing several episodes together."""
    exit_code: int | None = None
    """The CLI's exit status; None when it never ran."""
    timed_out: bool = False
    """True when the harness ran past its timeout and was killed with all its processes."""
    answer: str | None = None
    """The text of /workdir/answer.txt; None when the agent wrote none."""
    capture_level: str = ""
    """The proxy's capture level ("tokens" is trainable)."""
    session_key: str = ""
    """The capture session's id."""
    capture_error: str | None = None
    """Why the episode gave no training trace (`CaptureError`); None when it gave one or was not asked."""
    forks: dict[str, int] | None = None
    """`prefix_forks` of the training trace, when there is one."""
    prompt_tokens: int | None = None
    """Prompt tokens over the episode's model calls; None when the engine returned no token ids."""
    generated_tokens: int | None = None
    """Sampled tokens over the episode's model calls; None when the engine returned no token ids."""

    @property
    def harness_s(self) -> float:
        """Time not spent waiting on the model: harness start-up, its own work, the tools."""
        return self.seconds - self.model_s

    def to_json(self) -> dict[str, Any]:
        """One flat record: the outcome's fields beside the episode's own."""
        record = {k: v for k, v in asdict(self).items() if k not in ("outcome", "forks", "call_intervals")}
        outcome = self.outcome or failed(self.task_id, "harness", "the episode has not ended")
        return {**outcome.to_json(), **record, **(self.forks or {}), "harness_s": self.harness_s}


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


def busy_seconds(intervals: list[tuple[float, float]]) -> float:
    """Seconds covered by at least one interval: calls that overlap (a title call) count once."""
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


def _engine_alive(url: str) -> bool:
    try:
        return httpx.get(f"{url.rstrip('/')}/v1/models", timeout=ENGINE_CHECK_TIMEOUT_S).status_code == 200
    except httpx.HTTPError:
        return False


class HarnessSession(ResourceSession):
    """One episode of a harness CLI on one task; `start()` (the factory calls it) launches the CLI."""

    def __init__(
        self,
        harness: Harness,
        task: Task | str | Path,
        proxy: CaptureProxy,
        *,
        model: str,
        sampling: Mapping | None = None,
        max_tokens: int | None = None,
        max_model_calls: int | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        sandbox: str = "local",
        episode_id: str | None = None,
        budget: FailureBudget | None = None,
        runner: Callable[..., HarnessRun] = run_harness,
        purpose: str = "train",
    ):
        self.harness = harness
        self.runner = runner
        self.proxy = proxy
        self.model = model
        self.sandbox = sandbox
        self.max_model_calls = proxy.max_model_calls if max_model_calls is None else max_model_calls
        self.timeout_s = timeout_s
        self.episode_id = episode_id
        self.budget = budget
        self._sandbox = None
        self._closed = False
        self._bug: BaseException | None = None
        self.task: Task | None = None
        task_id = task.id if isinstance(task, Task) else Path(task).name
        self.result = EpisodeResult(harness.name, task_id, capture_level=proxy.capture_level)
        try:
            self.task = task if isinstance(task, Task) else load_task(Path(task))
        except (ValueError, OSError) as error:  # a bad task ends its episode, not the run
            self._finish(failed(task_id, "task", error))
        wall = max(timeout_s - WALL_TIME_GRACE_S, timeout_s / 2)
        self.key = proxy.open_session(
            sampling,
            max_tokens=max_tokens,
            max_model_calls=self.max_model_calls,
            wall_time_s=wall,
            purpose=purpose,
            harness=harness.name,
            task=task_id,
        )
        self.result.session_key = self.key
        self._thread = threading.Thread(target=self._episode, daemon=True, name=f"harness-{harness.name}")

    def start(self) -> HarnessSession:
        """Launch the CLI on its own thread (nothing to run when the task did not load)."""
        if self.task is not None:
            self._thread.start()
        return self

    # ---- the episode, on its own thread ------------------------------------------------------

    def _episode(self) -> None:
        try:
            self._finish(self._run_and_score())
        except BaseException as error:  # a bug, not a boundary: raised again to whoever waits
            logger.exception("%s on %s: the episode crashed", self.harness.name, self.result.task_id)
            self._bug = error

    def _finish(self, outcome: Outcome) -> None:
        self.result.outcome = outcome
        if self.budget is not None:
            self.budget.record(outcome)

    def _run_and_score(self) -> Outcome:
        context = LaunchContext(
            base_url=SANDBOX_PROXY_URL,
            api_key=self.key,
            model=self.model,
            instruction=self.task.instruction,
            max_model_calls=self.max_model_calls,
        )
        run = self.runner(
            self.harness,
            self.task.path,
            proxy_host="127.0.0.1",
            proxy_port=self.proxy.port,
            context=context,
            timeout_s=self.timeout_s,
            sandbox=self.sandbox,
            on_open=self._opened,
        )
        result = self.result
        result.exit_code, result.timed_out, result.answer = run.exit_code, run.timed_out, run.answer
        result.seconds = run.seconds
        result.model_calls = self.proxy.model_calls(self.key)
        result.prompt_tokens, result.generated_tokens = self.proxy.token_counts(self.key) or (None, None)
        result.call_intervals = [(start, end) for start, end in run.calls if end is not None]
        result.model_s = busy_seconds(result.call_intervals)
        if run.calls and run.launch_s is not None:
            result.first_call_s = run.calls[0][0] - run.launch_s
        boundary, error = run.boundary, run.error
        # CLIs that get errors from the proxy often give up and exit 0, so the engine is checked
        # whenever the run failed, made no call, or saw the proxy fail to reach the engine; an
        # engine that answered a call with an error is an engine failure even if it is alive
        # (the episode the harness went on with is not the policy's).
        upstream_errors = self.proxy.upstream_errors(self.key)
        suspect = boundary == "harness" or result.model_calls == 0 or upstream_errors > 0
        if boundary in (None, "harness") and suspect:
            if not _engine_alive(self.proxy.engine_url):
                boundary, what = "engine", "stopped answering (GET /v1/models failed)"
            elif upstream_errors:
                boundary, what = "engine", "answered with an error"
            if boundary == "engine":
                error = (f"the engine at {self.proxy.engine_url} {what}; the proxy saw {upstream_errors} failed "
                         f"call(s); the harness said: {run.error or 'nothing'}")
        if boundary is None and result.model_calls == 0:
            # An agent that never reached the model did not attempt the task (its first prompt
            # outgrew the context, its configuration was refused): not the policy's wrong answer.
            boundary = "harness"
            error = (f"{self.harness.name} ended without a model call reaching the engine; the harness said: "
                     f"{run.error or run.output_tail[-500:] or 'nothing'}")
        if boundary is not None:
            return failed(self.task.id, boundary, error, tool_calls=run.tool_calls)
        if run.correctness is not None:  # the runner's verifier graded it (Harbor)
            return from_correctness(self.task.id, run.correctness, run.tool_calls)
        return score(self.task, run.answer, run.tool_calls)

    def _opened(self, box) -> None:
        self._sandbox = box
        if self._closed:  # closed while the sandbox was starting
            box.close()

    def _join(self, timeout_s: float | None = None) -> None:
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        if self._bug is not None:
            raise self._bug

    # ---- OpenEnv's loop-owning protocol ------------------------------------------------------

    def wait_for_completion(self, timeout_s: float | None = None) -> int:
        """Wait for the CLI to end; its exit code (-1 when it never ran).

        Raises TimeoutError when `timeout_s` passes first, or when the harness itself ran past
        its timeout and was killed (its captured calls and its result stay readable).
        """
        self._join(timeout_s)
        if self._thread.is_alive():
            raise TimeoutError(f"{self.harness.name} on {self.result.task_id} still running after {timeout_s} s")
        if self.result.timed_out:
            raise TimeoutError(self.result.outcome.error)
        return self.result.exit_code if self.result.exit_code is not None else -1

    def fetch_training_trace(self) -> TrainingTrace:
        """The episode's validated model calls (OpenEnv's `TrainingTrace`); CaptureError if none."""
        return self.proxy.training_trace(self.key)

    def fetch_proxy_trace(self) -> list[dict]:
        """The same calls as OpenEnv `TraceEntry` dicts (`LoopOwningSession`)."""
        return self.fetch_training_trace().to_trace_entries()

    def verify(self, transcript: list[dict], final_state: Any | None = None) -> VerifyResult:
        """The shared reward as `env_reward` (None when not graded) and the episode's record as metrics."""
        self._join()
        return VerifyResult(env_reward=self.result.outcome.reward, done=True, metrics=self.result.to_json())

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
    """Makes one `HarnessSession` per rollout, all through the same capture proxy, and starts it.

    `task` given to `create` is a `Task`, a task directory, a dataset row with `task_path`, or the
    prompt's messages (what TRL's `HarnessRolloutWorker` passes), found among `tasks` by the
    instruction they hold; the seed is never used to pick one. A `budget` records every outcome
    and stops the run past its share of ungraded episodes.
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
        budget: FailureBudget | None = None,
        runner: Callable[..., HarnessRun] = run_harness,
        purpose: str = "train",
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
            budget=budget,
            runner=runner,
            purpose=purpose,
        )
        """The keywords every `HarnessSession` of this factory gets."""

    def create(self, task: Any, seed: int | None = None, episode_id: str | None = None) -> HarnessSession:
        """A started session on `task`; ValueError when `task` names no task of this factory, or several."""
        if isinstance(task, Mapping) and "task_path" in task:
            task = task["task_path"]
        elif not isinstance(task, (Task, str, Path)):
            task = find_task(self.tasks, task)
        session = HarnessSession(self.harness, task, self.proxy, episode_id=episode_id, **self.session_settings)
        return session.start()
