# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""The harbor environment: harness rollouts on data-analysis tasks, each model call captured."""

from .client import HarborEnv
from .models import RolloutAction, RolloutObservation, RolloutState

__all__ = ["HarborEnv", "RolloutAction", "RolloutObservation", "RolloutState"]
