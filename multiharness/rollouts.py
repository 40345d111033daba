"""Harness rollouts as an OpenEnv environment: what the opencode and harbor Spaces serve.

One action is one whole episode: `RolloutAction(split, index, harness, endpoint, sampling)`
runs the harness CLI on the task in its sandbox with `multiharness.harnesses.run_episode`
under `multiharness.endpoint.open_endpoint`, the same call as the `episode` command and the
training scripts, and the observation carries what the episode did: the outcome (correctness,
reward, tool calls, or the boundary that failed), the episode's record, each model call (the
messages it added and the answer, tool calls included) and the training trace (token ids,
behaviour logprobs, loss mask). Scoring is `multiharness.episode.score`, inside `run_episode`.

The endpoint is one of:

- "local": the Space's own engine serving the model folder (SmolLM2-135M by default) on its
  CPU: works with no key, and its trace is trainable;
- "scripted": the task's reference solution played as the model's answers: checks the plumbing
  (harness, sandbox, proxy, grader) in seconds;
- an http(s) URL of any OpenAI-compatible server: evaluation only, since a foreign server rarely
  returns the token ids and processed logprobs a trace needs (the record says why it has none).

`watch` in `run_rollout` is called with the model calls so far while the episode runs (the
playground shows them live); it reads the capture session that `run_episode` opens, through a
proxy that only learns the session's key and keeps its calls before `run_episode` closes it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from openenv.core import EnvClient
from openenv.core.client_types import StepResult
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import Field

from .capture import CaptureError, CaptureProxy
from .endpoint import open_endpoint
from .episode import failed
from .harnesses import DEFAULT_TIMEOUT_S, HARNESSES, get_runner, run_episode
from .paths import DEFAULT_MODEL_DIR
from .spaces import TaskApi, TaskCatalog
from .tasks import Task

__all__ = [
    "ENDPOINTS",
    "HarnessRolloutEnvironment",
    "RolloutAction",
    "RolloutClient",
    "RolloutObservation",
    "RolloutState",
    "SPACE_FILES",
    "SPACE_VARIABLES",
    "rollout_app",
    "run_rollout",
]

logger = logging.getLogger(__name__)

ENDPOINTS = ("local", "scripted")
"""The endpoints a Space has itself; any other value must be an http(s) URL."""
_WATCH_EVERY_S = 0.5


class RolloutAction(Action):
    """Run one episode, e.g. `RolloutAction(split="test", index=3, harness="codex", endpoint="scripted")`."""

    split: str = Field(default="test", description="The task's split: train or test")
    index: int = Field(default=0, ge=0, description="The task's index in its split (the Task API lists them)")
    harness: str = Field(default="opencode", description=f"The harness CLI, one of {list(HARNESSES)}")
    endpoint: str = Field(default="local", description="local (the Space's engine), scripted, or an OpenAI-compatible URL")
    sampling: dict[str, Any] = Field(default_factory=lambda: {"temperature": 1.0},
                                     description="The sampling policy pinned on every model call, e.g. {temperature}")


class RolloutObservation(Observation):
    """What one episode did; `reward` is the shared reward (None when not graded)."""

    task: dict[str, Any] | None = Field(default=None, description="The task's card (no gold)")
    outcome: dict[str, Any] | None = Field(default=None, description="correctness, reward, tool_calls, boundary, error")
    episode: dict[str, Any] | None = Field(default=None, description="The episode's record (EpisodeResult.to_json())")
    calls: list[dict[str, Any]] = Field(default_factory=list,
                                        description="Each model call: the messages it added, its answer, its token counts")
    trace: dict[str, Any] | None = Field(default=None, description="The training trace (TrainingTrace), when trainable")
    message: str = Field(default="", description="What happened, for a person")


class RolloutState(State):
    """The session's last rollout."""

    task_id: str | None = Field(default=None, description="The task of the last rollout")
    rollouts: int = Field(default=0, description="Rollouts run in this session")


# ---- one rollout ---------------------------------------------------------------------------------


def _calls(document: dict) -> list[dict]:
    """Each model call of a capture document: the messages new since the previous call, and its answer."""
    calls, seen = [], 0
    for turn in document.get("turns", []):
        messages = turn.get("request_messages") or []
        calls.append({
            "index": turn.get("index"),
            "added": messages[seen:] if len(messages) >= seen else messages,
            "answer": turn.get("response_message"),
            "prompt_tokens": turn.get("n_prompt"),
            "sampled_tokens": turn.get("n_sampled"),
            "finish_reason": turn.get("finish_reason"),
        })
        seen = len(messages)
    return calls


class _Watched:
    """The capture proxy as `run_episode` sees it, plus the session's calls, live and after it closes."""

    def __init__(self, proxy: CaptureProxy, watch: Callable[[list[dict]], None] | None):
        self._proxy, self._watch = proxy, watch
        self._key: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.calls: list[dict] = []

    def __getattr__(self, name: str):
        return getattr(self._proxy, name)

    def open_session(self, *args, **kwargs) -> str:
        self._key = self._proxy.open_session(*args, **kwargs)
        if self._watch is not None:
            self._thread = threading.Thread(target=self._poll, daemon=True, name="rollout-watch")
            self._thread.start()
        return self._key

    def close_session(self, key: str) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._read()
        self._proxy.close_session(key)

    def _read(self) -> bool:
        try:
            calls = _calls(self._proxy.document(self._key))
        except (RuntimeError, CaptureError):  # the engine thread changed the session while it was read: next tick
            return False
        changed = len(calls) != len(self.calls)
        self.calls = calls
        return changed

    def _poll(self) -> None:
        while not self._stop.wait(_WATCH_EVERY_S):
            if self._read():
                self._watch(self.calls)


def run_rollout(
    task: Task,
    harness: str,
    endpoint: str = "local",
    *,
    sampling: dict | None = None,
    sandbox: str = "local",
    model_dir: str | Path = DEFAULT_MODEL_DIR,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    watch: Callable[[list[dict]], None] | None = None,
    runner: str = "project",
) -> dict:
    """Run `harness` on `task` against `endpoint` (see the module docstring); the observation's fields as a dict.

    `runner` says who runs the episode: "project" (the project's harness runner) or "harbor" (a
    Harbor trial of Harbor's own agent, `multiharness.harbor.trial`).
    """
    if endpoint in ENDPOINTS:
        source, policy = model_dir, "model" if endpoint == "local" else "scripted"
    elif endpoint.startswith(("http://", "https://")):
        source, policy = endpoint, "model"
    else:
        raise ValueError(f"Unknown endpoint {endpoint!r}. Expected one of {list(ENDPOINTS)} or an http(s):// URL.")
    try:
        with open_endpoint(source, policy=policy, tasks=[task]) as opened:
            proxy = _Watched(opened.proxy, watch)
            result, trace = run_episode(harness, task, proxy, model=opened.model, sampling=sampling,
                                        sandbox=sandbox, timeout_s=timeout_s, runner=get_runner(runner))
    except CaptureError as error:  # the endpoint did not answer: nothing ran
        outcome = failed(task.id, "engine", error)
        return {"outcome": outcome.to_json(), "message": f"Not graded: {outcome.error}"}
    outcome = result.outcome
    message = (f"correctness {outcome.correctness}, reward {outcome.reward:.3f} after {outcome.tool_calls} tool call(s)"
               if outcome.graded else f"not graded ({outcome.boundary}): {outcome.error}")
    return {
        "outcome": outcome.to_json(),
        "episode": result.to_json(),
        "calls": proxy.calls,
        "trace": trace.model_dump() if trace is not None else None,
        "message": f"{harness} on {task.id}: {message}; {result.model_calls} model call(s) in {result.seconds:.0f} s",
    }


# ---- the environment -------------------------------------------------------------------------


class HarnessRolloutEnvironment(TaskApi, Environment[RolloutAction, RolloutObservation, RolloutState]):
    """One rollout per step, with the harnesses of `harnesses`; the task API lists the tasks (no gold)."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # each rollout opens its own endpoint, proxy and sandbox
    runner = staticmethod(run_rollout)
    """What runs one rollout (task, harness, endpoint, keywords -> the observation's fields)."""

    def __init__(self, catalog: TaskCatalog, harnesses: Sequence[str], *, sandbox: str = "local",
                 model_dir: str | Path = DEFAULT_MODEL_DIR, timeout_s: float = DEFAULT_TIMEOUT_S, name: str = "harness"):
        super().__init__()
        unknown = sorted(set(harnesses) - set(HARNESSES))
        if unknown:
            raise ValueError(f"Unknown harness(es) {unknown}. Expected any of {list(HARNESSES)}.")
        self.catalog = catalog
        self.harnesses = tuple(harnesses)
        self.sandbox = sandbox
        self.model_dir = model_dir
        self.timeout_s = timeout_s
        self.name = name
        self._state = RolloutState()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> RolloutObservation:
        self._state = RolloutState(episode_id=episode_id)
        return RolloutObservation(message=f"Ready: step with RolloutAction(split, index, harness in {list(self.harnesses)}, "
                                          f"endpoint in {list(ENDPOINTS)} or a URL).")

    def step(self, action: RolloutAction, timeout_s: float | None = None, **kwargs: Any) -> RolloutObservation:
        return self.rollout(action)

    def rollout(self, action: RolloutAction, watch: Callable[[list[dict]], None] | None = None) -> RolloutObservation:
        """Run the action's episode; `watch` gets the model calls so far while it runs."""
        if action.harness not in self.harnesses:
            return RolloutObservation(message=f"Error: harness {action.harness!r} is not served here; "
                                              f"expected one of {list(self.harnesses)}.", done=True)
        try:
            card = self.catalog.card(action.split, action.index)
            task = self.catalog.task(action.split, action.index)
        except (ValueError, IndexError) as error:
            return RolloutObservation(message=f"Error: {error}", done=True)
        self._state.step_count += 1
        self._state.rollouts += 1
        self._state.task_id = task.id
        started = time.monotonic()
        try:
            fields = self.runner(task, action.harness, action.endpoint, sampling=action.sampling, sandbox=self.sandbox,
                                 model_dir=self.model_dir, timeout_s=self.timeout_s, watch=watch)
        except ValueError as error:  # an endpoint that is neither ours nor a URL
            return RolloutObservation(task=card, message=f"Error: {error}", done=True)
        logger.info("%s rollout of %s on %s took %.0f s", action.harness, task.id, action.endpoint, time.monotonic() - started)
        return RolloutObservation(task=card, done=True, reward=fields["outcome"]["reward"], **fields)

    @property
    def state(self) -> RolloutState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=self.name,
            description=f"Data-analysis tasks solved by a real agent harness ({', '.join(self.harnesses)}) in a sandbox, "
                        "each model call captured token by token; graded on the host with the project's reward.",
            version="0.1.0",
        )


# ---- the client ------------------------------------------------------------------------------


class RolloutClient(EnvClient[RolloutAction, RolloutObservation, RolloutState]):
    """OpenEnv client of a harness Space: `step(RolloutAction(...))` runs one episode and returns it.

        with RolloutClient(base_url="http://127.0.0.1:8000").sync() as env:
            env.reset()
            result = env.step(RolloutAction(split="test", index=0, harness="opencode", endpoint="scripted"))
            print(result.reward, result.observation.outcome, len(result.observation.calls))

    A rollout takes minutes on a CPU, so an answer is awaited up to the harness timeout (plus a
    margin), not OpenEnv's default minute.
    """

    def __init__(self, base_url: str, message_timeout_s: float = DEFAULT_TIMEOUT_S + 120, **kwargs):
        super().__init__(base_url=base_url, message_timeout_s=message_timeout_s, **kwargs)

    def _step_payload(self, action: RolloutAction) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[RolloutObservation]:
        observation = RolloutObservation(**payload.get("observation", {}), done=payload.get("done", False),
                                         reward=payload.get("reward"))
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> RolloutState:
        return RolloutState(**payload)


# ---- a harness Space's app ----------------------------------------------------------------------

SPACE_VARIABLES = {
    "MULTIHARNESS_SANDBOX": "local",  # bubblewrap; "daytona" where the container forbids its namespaces
    "MAX_SESSIONS": "4",  # API sessions; a rollout holds a sandbox and an engine
    "MAX_ROLLOUTS": "1",  # playground rollouts at once on 2 vCPU; the others queue
    "SESSION_SECONDS": "900",  # idle API sessions are closed after 15 minutes
}
"""The Space variables of a harness Space (`deploy.py` sets them; `rollout_app` reads them)."""
SPACE_FILES = ("clis", "requirements-mini-swe-agent.txt", "requirements-model.txt")
"""What a harness Space's image needs from the checkout besides the library: the CLIs' pins, the model's wheel."""


def rollout_app(environment: type[HarnessRolloutEnvironment], name: str):
    """The FastAPI app of a harness Space: OpenEnv's `create_app` with the playground, settings from the environment.

    Both harness Spaces are this app with another environment class, so it is written once; the
    whitebox Space's `server/app.py` shows the same wiring inline.
    """
    import functools
    import os

    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.types import ConcurrencyConfig

    from .paths import DEFAULT_TASKS_DIR
    from .rollout_playground import playground_builder
    from .spaces import checked_sandbox

    settings = {**SPACE_VARIABLES, **{key: os.environ[key] for key in SPACE_VARIABLES if key in os.environ}}
    tasks_dir = Path(os.environ.get("MULTIHARNESS_TASKS", DEFAULT_TASKS_DIR))  # built by the image from data/
    model_dir = Path(os.environ.get("MULTIHARNESS_MODEL", DEFAULT_MODEL_DIR))  # what the "local" endpoint serves
    max_sessions, max_rollouts = int(settings["MAX_SESSIONS"]), int(settings["MAX_ROLLOUTS"])
    os.environ.setdefault("ENABLE_WEB_INTERFACE", "true")  # OpenEnv mounts the playground at /web

    catalog = TaskCatalog(tasks_dir)
    sandbox = checked_sandbox(settings["MULTIHARNESS_SANDBOX"], catalog)
    print(f"{name}: tasks from {tasks_dir}; sandbox {sandbox} (checked); local endpoint serves {model_dir}; "
          f"up to {max_sessions} sessions, {max_rollouts} playground rollout(s) at once")
    make_env = functools.partial(environment, catalog, sandbox=sandbox, model_dir=model_dir)
    make_env.__name__ = environment.__name__  # OpenEnv names the environment after its factory
    return create_app(
        make_env,
        RolloutAction,
        RolloutObservation,
        env_name=name,
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions,
                                             session_timeout=float(settings["SESSION_SECONDS"])),
        gradio_builder=playground_builder(make_env, max_rollouts),
        show_default_tab=False,  # the playground is the whole page: it streams each model call as it happens
        title_override=f"multiharness · {name}",
        state_cls=RolloutState,
    )
