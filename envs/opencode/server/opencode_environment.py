# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""The opencode environment: the real OpenCode CLI solves a task in its sandbox, one rollout per step.

`multiharness.rollouts.HarnessRolloutEnvironment` with OpenCode as its only harness: the same
rollout as `train/opencode.py` (`run_episode` under `open_endpoint`), scored by
`multiharness.episode.score`, its model calls captured by OpenEnv's capture proxy.
"""

from multiharness.rollouts import HarnessRolloutEnvironment

__all__ = ["HARNESSES", "OpenCodeEnvironment"]

HARNESSES = ("opencode",)


class OpenCodeEnvironment(HarnessRolloutEnvironment):
    """OpenCode rollouts on the built tasks; the Task API lists them without their gold."""

    def __init__(self, catalog, **settings):
        super().__init__(catalog, HARNESSES, name="opencode", **settings)
