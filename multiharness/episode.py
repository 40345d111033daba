"""What one episode returns, in every loop: the `Outcome` record, the one scoring function, the failure budget.

Answer in, outcome out. The whitebox environment, the harness sessions, the evaluator and the
Spaces all end an episode the same way:

- `score(task, answer, tool_calls)` grades the answer on the host with the task's grader and
  gives the shared reward (`multiharness.reward`). No answer is a wrong answer (0). A grader
  that cannot grade (`GradingError`) makes the episode not graded at the "task" boundary.
  `from_correctness(task_id, correctness, tool_calls)` does the same for an answer graded
  elsewhere (Harbor's verifier, which runs the task's own copy of the grader).
- `failed(task_id, boundary, error)` is an episode that ended at a boundary before it could be
  graded: reward None, never 0, so that GRPO leaves it out of its group.
- `FailureBudget` counts outcomes, shows a tqdm bar with the pass rate, the mean reward and the failures, and
  stops the run (`FailureBudgetExceeded`, naming the boundary and the last error) once the share
  of ungraded episodes passes its limit, as ART's `max_exceptions` does: a run whose sandbox or
  engine is down must stop, not take all its steps on None.

A tool call is one of the harness's native tool actions that ran (a bash command, a file read);
the final answer (`submit_solution`, or writing answer.txt) is not one. Loops that cannot count
them pass None: the reward then has no tool bonus.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import asdict, dataclass
from typing import Literal, get_args

from .grading import GradingError
from .reward import reward
from .tasks import Task, grade_answer

__all__ = [
    "BOUNDARIES",
    "Boundary",
    "EpisodeError",
    "FailureBudget",
    "FailureBudgetExceeded",
    "Outcome",
    "failed",
    "from_correctness",
    "score",
]

logger = logging.getLogger(__name__)

Boundary = Literal["task", "sandbox", "harness", "engine"]
"""Where an ungraded episode failed: the task (would not load, its grader could not grade), the
sandbox (would not start, died), the harness (not installed, crashed, ran past its time), the
engine (stopped answering)."""
BOUNDARIES: tuple[Boundary, ...] = get_args(Boundary)


class EpisodeError(RuntimeError):
    """A failure at one boundary: it ends the episode as not graded; anything else is a bug and propagates."""

    def __init__(self, boundary: Boundary, message: str):
        if boundary not in BOUNDARIES:
            raise ValueError(f"Unknown boundary {boundary!r}. Expected one of {list(BOUNDARIES)}.")
        super().__init__(message)
        self.boundary = boundary


@dataclass(frozen=True)
class Outcome:
    """How one episode ended."""

    task_id: str
    """The task directory's name (or what was given, when the task did not load)."""
    correctness: int | None
    """1 or 0 from the task's grader; None when the episode was not graded."""
    reward: float | None
    """The shared reward; None when not graded, never 0 for a failure."""
    tool_calls: int | None
    """Native tool actions that ran (the answer itself excluded); None when the loop could not count them."""
    boundary: Boundary | None = None
    """Where the episode failed; None when it was graded."""
    error: str | None = None
    """What went wrong, for a person; None when graded."""

    @property
    def graded(self) -> bool:
        return self.correctness is not None

    def to_json(self) -> dict:
        return asdict(self)


def score(task: Task, answer: str | None, tool_calls: int | None) -> Outcome:
    """Grade `answer` for `task` and give the shared reward; the one place an answer becomes a reward.

    Cases (answer, tool_calls -> correctness, reward):

    - right, 2 -> 1, 1.088: correctness plus the tool bonus 0.1·15/(15 + 2);
    - right, None -> 1, 1.0: the loop could not count its tools, so no bonus;
    - wrong, 3 -> 0, 0.0;
    - None (no answer given), 3 -> 0, 0.0: wrong, not broken;
    - the grader raised `GradingError` (bad gold, a failing rung, math_verify missing) -> None,
      None, boundary "task".
    """
    if answer is None:
        correctness = 0
    else:
        try:
            correctness = grade_answer(task, answer)
        except GradingError as error:
            return failed(task.id, "task", error, tool_calls=tool_calls)
    return from_correctness(task.id, correctness, tool_calls)


def from_correctness(task_id: str, correctness: int, tool_calls: int | None) -> Outcome:
    """An episode graded elsewhere (Harbor's verifier runs the task's own copy of the grader): the shared reward."""
    if correctness not in (0, 1):
        raise ValueError(f"correctness must be 0 or 1, got {correctness!r}: a grader gives one or the other")
    return Outcome(task_id, int(correctness), reward(correctness, tool_calls), tool_calls)


def failed(task_id: str, boundary: Boundary, error: str | BaseException, *, tool_calls: int | None = None) -> Outcome:
    """An episode that ended at `boundary` before it could be graded: correctness and reward None."""
    if boundary not in BOUNDARIES:
        raise ValueError(f"Unknown boundary {boundary!r}. Expected one of {list(BOUNDARIES)}.")
    if isinstance(error, BaseException):
        error = f"{type(error).__name__}: {error}"
    return Outcome(task_id, None, None, tool_calls, boundary, str(error))


class FailureBudgetExceeded(RuntimeError):
    """Too many episodes of a run were not graded: something is broken (sandbox, engine, harness)."""


class FailureBudget:
    """Counts outcomes, shows them on a tqdm bar, and stops a run past a share of ungraded episodes.

    `max_failure_share` of the recorded episodes may be ungraded; the check starts once
    `min_episodes` have been recorded (one GRPO step's rollouts, say), so a single early failure
    does not stop a run. One budget may be shared by several threads (concurrent sessions).
    """

    def __init__(self, max_failure_share: float = 0.5, *, min_episodes: int = 8, total: int | None = None,
                 desc: str = "episodes", progress: bool = True):
        if not 0 <= max_failure_share <= 1:
            raise ValueError(f"max_failure_share must be within [0, 1], got {max_failure_share}.")
        self.max_failure_share = max_failure_share
        self.min_episodes = max(1, min_episodes)
        self.outcomes: list[Outcome] = []
        """Every outcome recorded, in order."""
        self.failures: list[Outcome] = []
        """The ungraded ones among them."""
        self._reward_sum = 0.0
        self._solved = 0
        self._lock = threading.Lock()
        self._bar = None
        if progress:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=desc, unit="episode", dynamic_ncols=True)

    @property
    def mean_reward(self) -> float | None:
        """Mean reward of the graded episodes; None when none was graded."""
        graded = len(self.outcomes) - len(self.failures)
        return self._reward_sum / graded if graded else None

    @property
    def pass_rate(self) -> float | None:
        """Share of the graded episodes answered right; None when none was graded."""
        graded = len(self.outcomes) - len(self.failures)
        return self._solved / graded if graded else None

    def record(self, outcome: Outcome) -> Outcome:
        """Count `outcome` and return it; raise FailureBudgetExceeded once the budget is spent."""
        with self._lock:
            self.outcomes.append(outcome)
            if not outcome.graded:
                self.failures.append(outcome)
                logger.warning("%s not graded (%s): %s", outcome.task_id, outcome.boundary, outcome.error)
            else:
                self._reward_sum += outcome.reward
                self._solved += outcome.correctness
            failures, recorded = self.failures, len(self.outcomes)
            if self._bar is not None:
                mean, rate = self.mean_reward, self.pass_rate
                self._bar.set_postfix(passed="-" if rate is None else f"{rate:.2f}",
                                      reward="-" if mean is None else f"{mean:.3f}", failed=len(failures), refresh=False)
                self._bar.update(1)
            if recorded >= self.min_episodes and len(failures) > self.max_failure_share * recorded:
                last = failures[-1]
                by_boundary = {b: sum(f.boundary == b for f in failures) for b in BOUNDARIES}
                counts = ", ".join(f"{b} {n}" for b, n in by_boundary.items() if n)
                raise FailureBudgetExceeded(
                    f"{len(failures)} of {recorded} episodes were not graded ({counts}), more than the failure "
                    f"budget of {self.max_failure_share:.0%}; the last failed at the {last.boundary} boundary "
                    f"on {last.task_id}: {last.error}"
                )
        return outcome

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> FailureBudget:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
