# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""The harbor environment: any of the four harnesses solves a task in its sandbox, one rollout per step.

`multiharness.rollouts.HarnessRolloutEnvironment` with every harness (OpenCode, Claude Code,
Codex, mini-swe-agent), each chosen per rollout, and every rollout a Harbor trial: Harbor's own
agent for the harness, in the bubblewrap environment, graded by Harbor's verifier
(`multiharness.harbor.trial`), the same call as the opencode Space with Harbor as the runner.
"""

import functools

from multiharness.harnesses import HARNESSES as ALL_HARNESSES
from multiharness.rollouts import HarnessRolloutEnvironment, run_rollout

__all__ = ["HARNESSES", "HarborEnvironment"]

HARNESSES = tuple(ALL_HARNESSES)


class HarborEnvironment(HarnessRolloutEnvironment):
    """Rollouts of any harness on the built tasks, run by Harbor; the Task API lists them without their gold."""

    runner = staticmethod(functools.partial(run_rollout, runner="harbor"))

    def __init__(self, catalog, **settings):
        super().__init__(catalog, HARNESSES, name="harbor", **settings)
