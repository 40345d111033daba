# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Client of a opencode server (a Space, or `python -m server.app`): one `step` runs one harness episode.

    from client import OpenCodeEnv
    from models import RolloutAction

    with OpenCodeEnv(base_url="http://127.0.0.1:8000").sync() as env:
        env.reset()
        result = env.step(RolloutAction(split="test", index=0, harness="opencode", endpoint="scripted"))
        print(result.reward, result.observation.outcome, len(result.observation.calls))

`multiharness.rollouts.RolloutClient`, shared with the other harness Space.
"""

from multiharness.rollouts import RolloutClient as OpenCodeEnv

__all__ = ["OpenCodeEnv"]
