# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Clients of a whitebox server (a Space, or `python -m server.app`): OpenEnv's, and one for TRL.

`WhiteboxEnv` is OpenEnv's WebSocket client (one server session, so one sandbox, per client):

    with WhiteboxEnv(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(split="test", index=0)
        result = env.step(WhiteboxAction(tool="bash", arguments={"command": "ls /home/user/input"}))
        result = env.step(WhiteboxAction(tool="submit_solution", arguments={"answer": "42"}))
        print(result.reward, result.observation.outcome)

`RemoteDataAnalysisEnv(url)` is `multiharness.whitebox.DataAnalysisEnv` with its tools run by
the server, what `train/whitebox.py --server URL` gives `GRPOTrainer(environment_factory=...)`.
Both are `multiharness.remote`'s, shared with the training script.
"""

from multiharness.remote import RemoteDataAnalysisEnv, WhiteboxAction, WhiteboxObservation, WhiteboxState
from multiharness.remote import WhiteboxClient as WhiteboxEnv

__all__ = ["RemoteDataAnalysisEnv", "WhiteboxAction", "WhiteboxEnv", "WhiteboxObservation", "WhiteboxState"]
