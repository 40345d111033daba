# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""The harbor environment's action, observation and state: one action runs one whole harness episode.

They are `multiharness.rollouts`' types, shared with the other harness Space, so that a client
of either speaks the same protocol: `RolloutAction(split, index, harness, endpoint, sampling)` in,
`RolloutObservation` (outcome, reward, tool calls, the episode's record, each model call, the
training trace) out.
"""

from multiharness.rollouts import RolloutAction, RolloutObservation, RolloutState

__all__ = ["RolloutAction", "RolloutObservation", "RolloutState"]
