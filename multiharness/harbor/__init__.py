"""Harbor without containers: trials of the four harnesses in the project's bubblewrap sandbox.

- `environment`: the Harbor environment class, loaded by Harbor's own Python (3.12, its own
  venv) through `--env multiharness.harbor.environment:BubblewrapEnvironment`. Standard library,
  Harbor and `multiharness.sandbox` only: Harbor's venv has none of the training stack.
- `trial`: the project side (the trainer's Python): exporting tasks for Harbor, running one
  trial as a `harbor trial start` subprocess, reading its result into an `Outcome`, and
  OpenEnv sessions over trials for the trainers.

This file imports nothing, so that Harbor can load `environment` without the training stack.
"""
