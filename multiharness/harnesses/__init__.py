"""Harnesses: real agent CLIs (OpenCode, Claude Code, Codex, mini-swe-agent) run in a task's sandbox.

Harness in, graded and captured episode out. Each CLI runs headless inside the local sandbox,
so its tool calls really run there (input at /home/user/input, answer to /workdir/answer.txt);
its model calls go, in its own API dialect, through OpenEnv's capture proxy to the engine,
which records the token-exact trace the trainer learns from. The answer is graded on the host.

    from multiharness.harnesses import HARNESSES, HarnessSessionFactory

    factory = HarnessSessionFactory(HARNESSES["opencode"], proxy, model="smol", sampling={"temperature": 1.0})
    session = factory.create("build/tasks/train/train-0000-distinct-customers")
    session.wait_for_completion()
    trace, verdict = session.fetch_training_trace(), session.verify([])
    session.close()

`run_episode` does the same in one call and returns the `EpisodeResult` and the trace. Modules: `_common`
(sandbox, bridge to the proxy, launch, clean-up: shared by all), one module per CLI
(`opencode`, `claude_code`, `codex`, `mini_swe_agent`: its configuration and how to count its
tool calls), `session` (OpenEnv's `TrainableSession`, grading, reward, failures).
"""

from __future__ import annotations

from pathlib import Path

from openenv.core.harness import TrainingTrace

from ..capture import CaptureError, CaptureProxy
from ..tasks import Task
from ._common import Harness, run_harness
from .claude_code import ClaudeCode
from .codex import Codex
from .mini_swe_agent import MiniSweAgent
from .opencode import OpenCode
from .session import DEFAULT_TIMEOUT_S, EpisodeResult, HarnessSession, HarnessSessionFactory, prefix_forks

__all__ = [
    "HARNESSES",
    "RUNNERS",
    "DEFAULT_TIMEOUT_S",
    "EpisodeResult",
    "Harness",
    "HarnessSession",
    "HarnessSessionFactory",
    "get_harness",
    "get_runner",
    "prefix_forks",
    "run_episode",
]

HARNESSES: dict[str, Harness] = {
    harness.name: harness for harness in (OpenCode(), ClaudeCode(), Codex(), MiniSweAgent())
}
"""Every harness by its `--harness` name."""


RUNNERS = ("project", "harbor")
"""Who runs an episode: the project's runner (`run_harness`), or Harbor (`multiharness.harbor.trial.run_trial`)."""


def get_runner(name: str):
    """The episode runner called `name` (one of RUNNERS); ValueError listing them otherwise."""
    if name == "project":
        return run_harness
    if name == "harbor":
        from ..harbor.trial import run_trial  # imported here: the Harbor glue imports this package

        return run_trial
    raise ValueError(f"Unknown runner {name!r}. Expected one of {list(RUNNERS)}.")


def get_harness(name: str) -> Harness:
    """The harness called `name`; ValueError listing the known names otherwise."""
    if name not in HARNESSES:
        raise ValueError(f"Unknown harness {name!r}. Expected one of {list(HARNESSES)}.")
    return HARNESSES[name]


def run_episode(
    harness: str | Harness, task: Task | str | Path, proxy: CaptureProxy, **settings
) -> tuple[EpisodeResult, TrainingTrace | None]:
    """Run one episode to its end; return its `EpisodeResult` and its training trace (None when it has none).

    `settings` are `HarnessSession`'s keywords: `model` (required), `sampling`, `max_tokens`,
    `max_model_calls`, `timeout_s`, `sandbox`, `budget`, `runner`, `purpose` ("eval": greedy allowed, no
    trace). Why a trace is missing is the result's
    `capture_error`; its forks are the result's `forks`.
    """
    harness = get_harness(harness) if isinstance(harness, str) else harness
    session = HarnessSession(harness, task, proxy, **settings).start()
    try:
        try:
            session.wait_for_completion()
        except TimeoutError:  # recorded in the outcome as a harness failure
            pass
        result, trace = session.result, None
        try:
            trace = session.fetch_training_trace()
            result.forks = prefix_forks(trace)
        except CaptureError as error:
            result.capture_error = str(error)
        return result, trace
    finally:
        session.close()
