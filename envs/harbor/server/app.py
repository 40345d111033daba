# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""The harbor environment's server: OpenEnv's HTTP/WebSocket API, the Task API and the playground at /web.

Wiring only: the environment is `server/harbor_environment.py`; `multiharness.rollouts.rollout_app`
(shared by both harness Spaces) calls OpenEnv's `create_app` with it and the playground, and reads
the settings from environment variables: MULTIHARNESS_TASKS, MULTIHARNESS_SANDBOX (local or
daytona), MULTIHARNESS_MODEL (what the "local" endpoint serves), MAX_SESSIONS, MAX_ROLLOUTS,
SESSION_SECONDS.

    cd envs/harbor && python -m server.app --port 8000      # then open http://127.0.0.1:8000/web/

Endpoints: /health, /docs, /schema, /reset, /step (one rollout), /state, WebSocket /ws, the
Task API (POST /harbor/task {"split": "test", "index": 0} -> the task without its gold) and the
playground at /web.
"""

from multiharness.rollouts import rollout_app
from multiharness.spaces import serve

try:
    from .harbor_environment import HarborEnvironment
except ImportError:
    from server.harbor_environment import HarborEnvironment

app = rollout_app(HarborEnvironment, "harbor")


def main():
    serve(app, __doc__)


if __name__ == "__main__":
    main()
