# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""The whitebox environment: the trainer's own tools on data-analysis tasks, one sandbox per session."""

from .client import RemoteDataAnalysisEnv, WhiteboxEnv
from .models import WhiteboxAction, WhiteboxObservation, WhiteboxState

__all__ = ["RemoteDataAnalysisEnv", "WhiteboxAction", "WhiteboxEnv", "WhiteboxObservation", "WhiteboxState"]
