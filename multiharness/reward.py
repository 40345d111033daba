"""One reward for every loop: correctness first, with a small bonus for getting there in few tool calls.

    reward = correctness * (1 + 0.1 * 15 / (15 + tool_calls))    when tool_calls > 0
    reward = correctness                                          otherwise

Correctness comes from `multiharness.grading` (1 or 0). Tool calls are the harness's
native tool actions (a bash run, a file read), not model requests. An episode that was not
graded (an infrastructure failure: dead sandbox, crashed harness, missing gold) has reward
None, never 0, so that the trainer can drop it instead of teaching the model that a
correct answer was wrong.
"""

from __future__ import annotations

__all__ = ["TOOL_BONUS", "TOOL_BUDGET", "reward"]

TOOL_BONUS = 0.1
"""The largest bonus, as a fraction of correctness: at most 10% so that correctness dominates."""

TOOL_BUDGET = 15
"""A typical tool budget for one task: the bonus halves at 15 tool calls."""


def reward(correctness: float | None, tool_calls: int | None) -> float | None:
    """Reward of one episode from its correctness and its number of tool calls.

    Cases (correctness, tool_calls -> reward):

    - (None, 4) -> None: not graded (infrastructure failure); never scored as 0.
    - (0, 4) -> 0.0: a wrong answer earns nothing, however it was reached.
    - (1, None) -> 1.0: tool calls unknown (not counted by the loop): no bonus.
    - (1, 0) -> 1.0: answered without tools: no bonus, the bonus rewards efficient tool use.
    - (1, 1) -> 1.09375: the largest bonus, 1 + 0.1 * 15 / 16.
    - (1, 15) -> 1.05: the bonus has halved at the typical budget.
    - (1, 150) -> ~1.009: the bonus fades but never goes negative.

    Raises ValueError on a negative tool count: the loop that counted it has a bug.
    """
    if correctness is None:
        return None
    if tool_calls is not None and tool_calls < 0:
        raise ValueError(f"tool_calls must be >= 0 or None, got {tool_calls}: count the harness's tool actions.")
    if not tool_calls:
        return float(correctness)
    return correctness * (1 + TOOL_BONUS * TOOL_BUDGET / (TOOL_BUDGET + tool_calls))
