# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""The whitebox environment's action, observation and state: a person or a trainer calls the tools.

One action calls one tool: `bash`, `read`, `write`, `edit`, `ls`, `grep`, `glob` and
`submit_solution` are `multiharness.whitebox.TOOLS` (the tools TRL gives the model), plus
`start_task` (open a fresh sandbox on a task, as `reset` does) and `grade` (end the episode and
score it). The arguments are the tool's keyword arguments, named as in its docstring.
"""

from typing import Any, Literal

from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

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
