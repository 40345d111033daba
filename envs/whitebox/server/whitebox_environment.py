# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""The whitebox environment as an OpenEnv server: the trainer's own tools, one sandbox per session.

A thin shell around `multiharness.whitebox.DataAnalysisEnvWithFileTools`: the environment
`train/whitebox.py` gives TRL (bash, submit_solution) with file tools for a person, so a Space, a
remote trainer and the local run call the same tools in the same sandbox and are scored by the
same `multiharness.episode.score`:

- `reset(split, index)` (or `task_id`) and the `start_task` tool open a fresh sandbox on a task
  and answer with its card (no gold);
- every tool of `multiharness.whitebox.TOOLS` and `FILE_TOOLS` runs as an action; `submit_solution` and `grade`
  end the episode and put the `Outcome` and its reward in the observation;
- a session lasts `session_seconds` from its start; after that, its sandbox is removed and
  every action answers that the session expired; `close()` (a closed WebSocket, the server's
  idle reaper) removes it too.
"""

from __future__ import annotations

import inspect
import threading
import time
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from multiharness.spaces import TaskApi, TaskCatalog
from multiharness.whitebox import DataAnalysisEnvWithFileTools, finish_episode

try:  # installed as a package (pip install .: whitebox_env.server)
    from ..models import WhiteboxAction, WhiteboxObservation, WhiteboxState
except ImportError:  # run from the folder or the Space (python -m server.app): models is top-level
    from models import WhiteboxAction, WhiteboxObservation, WhiteboxState

__all__ = ["SESSION_SECONDS", "WhiteboxEnvironment"]

SESSION_SECONDS = 15 * 60.0
"""A session's life: long enough to solve a hard task by hand, short enough to free its sandbox."""

_NO_TASK = "No task yet: call start_task with {split, index} (or {task_id}), or reset, first."


class WhiteboxEnvironment(TaskApi, Environment[WhiteboxAction, WhiteboxObservation, WhiteboxState]):
    """One visitor's (or one rollout's) episodes, one at a time, each in a fresh sandbox."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # each instance owns its sandbox; the catalogue is read-only

    def __init__(self, catalog: TaskCatalog, sandbox: str = "local", session_seconds: float = SESSION_SECONDS):
        super().__init__()
        self.catalog = catalog
        self._backend = sandbox
        self._session_seconds = session_seconds
        self._env: DataAnalysisEnvWithFileTools | None = None
        self._card: dict | None = None
        self._tool_calls = 0
        self._expires_at = 0.0
        self._episode_id: str | None = None
        self._steps = 0
        # One action at a time: a visitor may press Submit while a command still runs.
        self._lock = threading.RLock()

    # ---- OpenEnv's contract --------------------------------------------------------------------

    def reset(self, seed: int | None = None, episode_id: str | None = None, split: str = "train", index: int = 0,
              task_id: str | None = None, **kwargs: Any) -> WhiteboxObservation:
        """Start an episode on task `index` of `split` (or the task called `task_id`)."""
        self._episode_id = episode_id
        with self._lock:
            return self._start(split=split, index=index, task_id=task_id)

    def step(self, action: WhiteboxAction, timeout_s: float | None = None, **kwargs: Any) -> WhiteboxObservation:
        with self._lock:
            return self._step(action)

    def _step(self, action: WhiteboxAction) -> WhiteboxObservation:
        self._steps += 1
        if action.tool == "start_task":
            return self._start(**action.arguments)
        if self._env is None:
            return self._observe(_NO_TASK)
        if self._expired():
            return self._observe(
                f"This session expired after {self._session_seconds / 60:g} minutes and its sandbox was removed; "
                "start a task again to go on.", done=True)
        if action.tool == "grade":
            return self._scored("Graded.")
        method = getattr(self._env, action.tool)
        if action.tool == "submit_solution" and not str(action.arguments.get("answer", "")).strip():
            return self._observe("Error: the answer is empty. Give the value itself, e.g. 42.5, Berlin or yes.")
        counted = not self._env.done and action.tool != "submit_solution"
        try:
            inspect.signature(method).bind(**action.arguments)
        except TypeError as error:
            expected = ", ".join(inspect.signature(method).parameters)
            return self._observe(f"Error: {action.tool} takes ({expected}); got {sorted(action.arguments)}: {error}.")
        output = method(**action.arguments)
        self._tool_calls += counted
        if action.tool == "submit_solution" or self._env.done:
            return self._scored(output)
        return self._observe(output)

    @property
    def state(self) -> WhiteboxState:
        return WhiteboxState(
            episode_id=self._episode_id,
            step_count=self._steps,
            task_id=self._card["id"] if self._card else None,
            tool_calls=self._tool_calls,
            seconds_left=max(0.0, self._expires_at - time.monotonic()),
            done=self._env is None or self._env.done,
        )

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="whitebox",
            description="Data-analysis tasks with the trainer's own tools (bash, read, write, edit, ls, grep, glob, "
                        "submit_solution) in a sandbox; graded on the host with the project's reward.",
            version="0.1.0",
        )

    def close(self) -> None:
        """Remove the sandbox (the episode is scored once, as no answer when none was given)."""
        with self._lock:
            if self._env is not None:
                finish_episode(self._env)

    # ---- helpers -------------------------------------------------------------------------------

    def _start(self, split: str = "train", index: int = 0, task_id: str | None = None) -> WhiteboxObservation:
        self.close()
        if task_id is not None:
            split, index = self.catalog.find(task_id)
        self._card = self.catalog.card(split, int(index))
        self._env = DataAnalysisEnvWithFileTools(sandbox=self._backend, episode_seconds=self._session_seconds)
        self._tool_calls = 0
        self._expires_at = time.monotonic() + self._session_seconds
        instruction = self._env.reset(task_path=str(self.catalog.task(split, int(index)).path))
        if self._env.done:  # the sandbox did not start: the outcome names the boundary and the error
            return self._scored(instruction)
        return self._observe(instruction)

    def _expired(self) -> bool:
        if time.monotonic() <= self._expires_at:
            return False
        self.close()
        return True

    def _scored(self, output: str) -> WhiteboxObservation:
        """End the episode: the tool's own answer (as the trainer's tool gives it) with the outcome beside it."""
        outcome = finish_episode(self._env)
        return self._observe(output, done=True, reward=outcome.reward, outcome=outcome.to_json())

    def _observe(self, output: str, *, done: bool = False, reward: float | None = None,
                 outcome: dict | None = None) -> WhiteboxObservation:
        return WhiteboxObservation(output=output, task=self._card, tool_calls=self._tool_calls, outcome=outcome,
                                   done=done, reward=reward)
