# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Clients of a whitebox server (a Space, or `python -m server.app`): OpenEnv's, and one for TRL.

`WhiteboxEnv` is OpenEnv's WebSocket client (one server session, so one sandbox, per client):

    with WhiteboxEnv(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(split="test", index=0)
        result = env.step(WhiteboxAction(tool="bash", arguments={"command": "ls /home/user/input"}))
        result = env.step(WhiteboxAction(tool="submit_solution", arguments={"answer": "42"}))
        print(result.reward, result.observation.outcome)

`RemoteDataAnalysisEnv(url)` is `multiharness.whitebox.DataAnalysisEnv` with its tools run by
the server: the same methods, signatures and docstrings (TRL builds the tool schemas from
them), so `GRPOTrainer(environment_factory=...)` trains against a remote environment, and
`multiharness.whitebox.finish_episode` scores it (the server grades; the gold stays there).
"""

from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import Any

from openenv.core import EnvClient
from openenv.core.client_types import StepResult

from multiharness.episode import FailureBudget, Outcome, failed
from multiharness.whitebox import DataAnalysisEnv

try:
    from .models import WhiteboxAction, WhiteboxObservation, WhiteboxState
except ImportError:
    from models import WhiteboxAction, WhiteboxObservation, WhiteboxState

__all__ = ["RemoteDataAnalysisEnv", "WhiteboxAction", "WhiteboxEnv", "WhiteboxObservation", "WhiteboxState"]


class WhiteboxEnv(EnvClient[WhiteboxAction, WhiteboxObservation, WhiteboxState]):
    """OpenEnv client of the whitebox server: `reset(split=, index=)` or `reset(task_id=)`, then `step(action)`."""

    def _step_payload(self, action: WhiteboxAction) -> dict[str, Any]:
        return {"tool": action.tool, "arguments": action.arguments}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[WhiteboxObservation]:
        observation = WhiteboxObservation(**payload.get("observation", {}), done=payload.get("done", False),
                                          reward=payload.get("reward"))
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> WhiteboxState:
        return WhiteboxState(**payload)


def _remote(name: str):
    """The tool `name` of DataAnalysisEnv, run by the server (same signature and docstring)."""
    local = getattr(DataAnalysisEnv, name)

    @functools.wraps(local)
    def tool(self: RemoteDataAnalysisEnv, *args, **kwargs) -> str:
        arguments = inspect.signature(local).bind(self, *args, **kwargs).arguments
        arguments.pop("self")
        return self._call(name, arguments)

    return tool


class RemoteDataAnalysisEnv:
    """`DataAnalysisEnv` whose sandbox and grader are on a whitebox server at `url`."""

    def __init__(self, url: str, budget: FailureBudget | None = None):
        self._client = WhiteboxEnv(base_url=url).sync()
        self._budget = budget
        self._task_id = ""
        self._last: WhiteboxObservation | None = None
        self._outcome: Outcome | None = None

    def reset(self, task_path: str, **row) -> str:
        """Start the task of the row on the server (by its id: the server builds the same tasks)."""
        self._task_id, self._outcome = Path(task_path).name, None
        self._last = self._client.reset(task_id=self._task_id).observation
        return self._last.output

    def _call(self, tool: str, arguments: dict) -> str:
        self._last = self._client.step(WhiteboxAction(tool=tool, arguments=arguments)).observation
        return self._last.output

    def _finish(self) -> Outcome:
        """What `finish_episode` calls: the server's outcome, once; a lost server is a sandbox failure."""
        if self._outcome is None:
            outcome = self._last.outcome if self._last is not None else None
            if outcome is None:
                try:
                    outcome = self._client.step(WhiteboxAction(tool="grade")).observation.outcome
                except (OSError, RuntimeError) as error:  # the connection or the server went away
                    self._outcome = failed(self._task_id or "(none)", "sandbox", f"the whitebox server failed: {error}")
            if self._outcome is None:
                self._outcome = Outcome(**outcome)
            if self._budget is not None:
                self._budget.record(self._outcome)
        return self._outcome

    def close(self) -> None:
        self._client.close()

    # The tools, in TOOLS order: each one is DataAnalysisEnv's, run on the server.
    bash = _remote("bash")
    read = _remote("read")
    write = _remote("write")
    edit = _remote("edit")
    ls = _remote("ls")
    grep = _remote("grep")
    glob = _remote("glob")
    submit_solution = _remote("submit_solution")
