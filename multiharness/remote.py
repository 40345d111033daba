"""The whitebox environment over the network: its OpenEnv types, its client, and the remote `DataAnalysisEnv`.

The whitebox Space (`envs/whitebox`) serves `multiharness.whitebox.DataAnalysisEnv` over OpenEnv's
HTTP/WebSocket protocol. What both ends must agree on is written once, here, so the Space's
`models.py` and `client.py` and `train/whitebox.py --server` import the same code:

- `WhiteboxAction` (one tool call), `WhiteboxObservation` (its answer; the `Outcome` once scored)
  and `WhiteboxState`;
- `WhiteboxClient`, OpenEnv's WebSocket client for them (one server session, so one sandbox, per client);
- `RemoteDataAnalysisEnv(url)`: `DataAnalysisEnv` with the same tools, signatures and docstrings
  (TRL builds the tool schemas from them), run by the server. `GRPOTrainer(environment_factory=...)`
  trains against it and `multiharness.whitebox.finish_episode` scores it: the server grades, the
  gold stays there. A row's task is sent by its id, so the server must serve the tasks the trainer
  reads (both build them from the same manifests).

A server that cannot be reached, drops the connection, answers with an error or no longer has the
episode (it restarted) ends that episode as not graded at the sandbox boundary (the server holds the
sandbox): reward None, the error naming the URL. The next `reset` connects again.
"""

from __future__ import annotations

import functools
import inspect
import logging
import weakref
from pathlib import Path
from typing import Any, Literal

import httpx
from openenv.core import EnvClient
from openenv.core.client_types import StepResult
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field
from websockets.exceptions import WebSocketException

from .episode import FailureBudget, Outcome, failed
from .whitebox import DataAnalysisEnv

__all__ = [
    "RemoteDataAnalysisEnv",
    "WhiteboxAction",
    "WhiteboxClient",
    "WhiteboxObservation",
    "WhiteboxState",
    "check_server",
]

logger = logging.getLogger(__name__)

_MESSAGE_TIMEOUT_S = 120.0
"""How long a tool's answer may take: a command runs up to 60 s on the server, the rest is margin for shared cores."""
_HEALTH_TIMEOUT_S = 10.0
_SERVER_GONE = (OSError, RuntimeError, WebSocketException)
"""What OpenEnv's client raises when the server is unreachable, closed the connection or answered with an error."""

# ---- the protocol --------------------------------------------------------------------------------

ToolName = Literal["bash", "read", "write", "edit", "ls", "grep", "glob", "submit_solution", "start_task", "grade"]


class WhiteboxAction(Action):
    """Call one tool, e.g. `WhiteboxAction(tool="bash", arguments={"command": "ls /home/user/input"})`."""

    tool: ToolName = Field(..., description="The tool to call")
    arguments: dict[str, Any] = Field(
        default_factory=dict,
        description='Its keyword arguments: bash {command}; read/ls {path}; write {path, content}; edit {path, old, new}; '
        'grep/glob {pattern, path}; submit_solution {answer}; start_task {split, index} or {task_id}; grade {}',
    )


class WhiteboxObservation(Observation):
    """What a tool answered; `reward` and `outcome` are set once the episode is scored."""

    output: str = Field(default="", description="The tool's answer: command output and exit code, or a message")
    task: dict[str, Any] | None = Field(default=None, description="The task's card (no gold) after reset/start_task")
    tool_calls: int = Field(default=0, description="Tool calls so far (submit_solution and grade not counted)")
    outcome: dict[str, Any] | None = Field(
        default=None, description="multiharness.episode.Outcome once scored: correctness, reward, tool_calls, boundary, error"
    )


class WhiteboxState(State):
    """The session's episode: which task, how far, how long it has left."""

    task_id: str | None = Field(default=None, description="The task of the current episode")
    tool_calls: int = Field(default=0, description="Tool calls so far")
    seconds_left: float = Field(default=0.0, description="Seconds until the session expires and its sandbox is removed")
    done: bool = Field(default=False, description="True once the episode accepts no more tool calls")


class WhiteboxClient(EnvClient[WhiteboxAction, WhiteboxObservation, WhiteboxState]):
    """OpenEnv client of the whitebox server: `reset(split=, index=)` or `reset(task_id=)`, then `step(action)`.

        with WhiteboxClient(base_url="http://127.0.0.1:8000").sync() as env:
            result = env.reset(split="test", index=0)
            result = env.step(WhiteboxAction(tool="bash", arguments={"command": "ls /home/user/input"}))
            result = env.step(WhiteboxAction(tool="submit_solution", arguments={"answer": "42"}))
            print(result.reward, result.observation.outcome)
    """

    def _step_payload(self, action: WhiteboxAction) -> dict[str, Any]:
        return {"tool": action.tool, "arguments": action.arguments}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[WhiteboxObservation]:
        observation = WhiteboxObservation(**payload.get("observation", {}), done=payload.get("done", False),
                                          reward=payload.get("reward"))
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> WhiteboxState:
        return WhiteboxState(**payload)


def check_server(url: str) -> None:
    """Return once a whitebox server answers at `url`; RuntimeError saying what to start otherwise.

    A training script calls it before loading its model, so a wrong URL (a vLLM server's port, say)
    stops the run at once rather than after a step of ungraded rollouts.
    """
    try:
        httpx.get(f"{url}/health", timeout=_HEALTH_TIMEOUT_S).raise_for_status()
        name = httpx.get(f"{url}/metadata", timeout=_HEALTH_TIMEOUT_S).json().get("name")
    except (httpx.HTTPError, ValueError) as error:
        raise RuntimeError(
            f"no whitebox server at {url} ({type(error).__name__}: {error}): start one "
            "(cd envs/whitebox && python -m server.app --port 8001) or give the Space's URL"
        ) from error
    if name != "whitebox":
        raise RuntimeError(f"the server at {url} is {name!r}, not a whitebox environment: give the whitebox server's URL")


# ---- DataAnalysisEnv, run by the server ------------------------------------------------------------


def _remote(name: str):
    """The tool `name` of DataAnalysisEnv, run by the server (same signature and docstring)."""
    local = getattr(DataAnalysisEnv, name)

    @functools.wraps(local)
    def tool(self: RemoteDataAnalysisEnv, *args, **kwargs) -> str:
        arguments = inspect.signature(local).bind(self, *args, **kwargs).arguments
        arguments.pop("self")
        return self._send(name, arguments)

    return tool


def _close_quietly(client) -> None:
    try:
        client.close()
    except Exception:  # cleanup must never raise: the server may already be gone
        logger.exception("closing a whitebox client failed")


class RemoteDataAnalysisEnv:
    """`DataAnalysisEnv` whose sandbox and grader are on a whitebox server at `url`."""

    def __init__(self, url: str, budget: FailureBudget | None = None):
        self.url = url
        self._client = WhiteboxClient(base_url=url, message_timeout_s=_MESSAGE_TIMEOUT_S).sync()
        # The session (and its sandbox) ends when the environment does; no public close(): TRL would offer it as a tool.
        self._finalizer = weakref.finalize(self, _close_quietly, self._client)
        self._budget = budget
        self._task_id = ""
        self._last: WhiteboxObservation | None = None
        self._failure: Outcome | None = None
        self._outcome: Outcome | None = None

    def reset(self, task_path: str, **row) -> str:
        """Start the row's task on the server, by its id; return the instruction TRL appends to the prompt."""
        self._task_id, self._last, self._failure, self._outcome = Path(task_path).name, None, None, None
        try:
            self._last = self._client.reset(task_id=self._task_id).observation
        except _SERVER_GONE as error:
            return self._lost(f"did not start the task ({type(error).__name__}: {error})")
        return self._last.output

    def _send(self, tool: str, arguments: dict) -> str:
        """One tool call on the server; any failure of the server ends the episode as not graded."""
        if self._failure is not None:
            return f"Error: {self._failure.error}. The episode is over."
        try:
            observation = self._client.step(WhiteboxAction(tool=tool, arguments=arguments)).observation
        except _SERVER_GONE as error:
            return self._lost(f"failed during {tool} ({type(error).__name__}: {error})")
        if (observation.task or {}).get("id") != self._task_id:  # a new session answered: the old one is gone
            return self._lost(f"no longer has this episode (it restarted, or the session was replaced): {observation.output}")
        self._last = observation
        return observation.output

    def _lost(self, what: str) -> str:
        tool_calls = self._last.tool_calls if self._last is not None else 0
        self._failure = failed(self._task_id or "(none)", "sandbox", f"the whitebox server at {self.url} {what}",
                               tool_calls=tool_calls)
        return f"Error: {self._failure.error}. The episode is over."

    def _finish(self) -> Outcome:
        """What `finish_episode` calls: the server's outcome (graded there), once."""
        if self._outcome is None:
            if self._failure is None and (self._last is None or self._last.outcome is None):
                self._send("grade", {})
            if self._failure is None and self._last.outcome is None:
                self._lost(f"ended the episode without an outcome: {self._last.output}")
            self._outcome = self._failure or Outcome(**self._last.outcome)
            if self._budget is not None:
                self._budget.record(self._outcome)
        return self._outcome

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self._finalizer()

    # The tools, in TOOLS order: each one is DataAnalysisEnv's, run on the server.
    bash = _remote("bash")
    submit_solution = _remote("submit_solution")
