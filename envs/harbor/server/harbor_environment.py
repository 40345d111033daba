# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""The harbor environment: any of the four harnesses solves a task in its sandbox, one rollout per step.

`multiharness.rollouts.HarnessRolloutEnvironment` with every harness (OpenCode, Claude Code,
Codex, mini-swe-agent), each chosen per rollout. Today a rollout is the project's harness
runner (`run_episode` under `open_endpoint`), the same call as the opencode Space; running it
as a Harbor trial instead is one line: set `runner` to the Harbor glue's rollout function once
`multiharness/harbor.py` exists (its signature: task, harness, endpoint, keywords -> the
observation's fields).
"""

from multiharness.harnesses import HARNESSES as ALL_HARNESSES
from multiharness.rollouts import HarnessRolloutEnvironment

__all__ = ["HARNESSES", "HarborEnvironment"]

HARNESSES = tuple(ALL_HARNESSES)


class HarborEnvironment(HarnessRolloutEnvironment):
    """Rollouts of any harness on the built tasks; the Task API lists them without their gold."""

    def __init__(self, catalog, **settings):
        super().__init__(catalog, HARNESSES, name="harbor", **settings)
