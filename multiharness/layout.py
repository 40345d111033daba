"""Where things are inside a task's sandbox, container or Space: one place, so every part agrees.

The task's instruction names these paths, the sandboxes and the task image make them, the harness
runners and the graders read the answer from them.
"""

__all__ = ["ANSWER_PATH", "INPUT_DIR", "WORKDIR"]

INPUT_DIR = "/home/user/input"
"""The task's input files, read-only."""

WORKDIR = "/workdir"
"""The agent's writable working directory, empty at the start."""

ANSWER_PATH = f"{WORKDIR}/answer.txt"
"""Where an agent without a submit tool writes its answer; graded on the host."""
