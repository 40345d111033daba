# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""The harbor playground: pick a task, a harness and an endpoint, watch the rollout, download its capture.

The same playground as the other harness Space, written once in `multiharness.rollout_playground`.
"""

from multiharness.rollout_playground import playground_builder

__all__ = ["playground_builder"]
