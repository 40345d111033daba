# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""The whitebox environment's server: OpenEnv's HTTP/WebSocket API, the Task API and the playground at /web.

Wiring only: the settings below come from environment variables (Space variables), the
environment is `server/whitebox_environment.py`, the playground `server/gradio_ui.py`.

    cd envs/whitebox && python -m server.app --port 8000      # then open http://127.0.0.1:8000/web/

Endpoints: /health, /docs, /schema, /reset, /step, /state, WebSocket /ws (one environment, so
one sandbox, per session), the Task API (POST /whitebox/task {"split": "test", "index": 0} ->
the task without its gold) and the playground at /web.
"""

import functools
import os
from pathlib import Path

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.types import ConcurrencyConfig

from multiharness.paths import DEFAULT_TASKS_DIR
from multiharness.spaces import TaskCatalog, checked_sandbox, serve

try:
    from ..models import WhiteboxAction, WhiteboxObservation, WhiteboxState
    from .gradio_ui import playground_builder
    from .whitebox_environment import SESSION_SECONDS as DEFAULT_SESSION_SECONDS, WhiteboxEnvironment
except ImportError:
    from models import WhiteboxAction, WhiteboxObservation, WhiteboxState
    from server.gradio_ui import playground_builder
    from server.whitebox_environment import SESSION_SECONDS as DEFAULT_SESSION_SECONDS, WhiteboxEnvironment

# ---- settings (Space variables) ----------------------------------------------------------------
TASKS_DIR = Path(os.environ.get("MULTIHARNESS_TASKS", DEFAULT_TASKS_DIR))  # built by the image from data/
SANDBOX = os.environ.get("MULTIHARNESS_SANDBOX", "local")  # local (bubblewrap) or daytona (DAYTONA_API_KEY secret)
MAX_SESSIONS = int(os.environ.get("MAX_SESSIONS", "8"))  # concurrent sandboxes: each holds up to 4 GiB
SESSION_SECONDS = float(os.environ.get("SESSION_SECONDS", DEFAULT_SESSION_SECONDS))  # a session's life, then cleanup
os.environ.setdefault("ENABLE_WEB_INTERFACE", "true")  # OpenEnv mounts the playground at /web
# -------------------------------------------------------------------------------------------------

CATALOG = TaskCatalog(TASKS_DIR)
print(f"whitebox: tasks from {TASKS_DIR}; sandbox {checked_sandbox(SANDBOX, CATALOG)} "
      f"(checked); up to {MAX_SESSIONS} sessions of {SESSION_SECONDS:g} s")

make_env = functools.partial(WhiteboxEnvironment, CATALOG, sandbox=SANDBOX, session_seconds=SESSION_SECONDS)
make_env.__name__ = "WhiteboxEnvironment"  # OpenEnv names the environment after its factory

app = create_app(
    make_env,
    WhiteboxAction,
    WhiteboxObservation,
    env_name="whitebox",
    # Idle sessions (no WebSocket attached) are closed, with their sandbox, after their time.
    concurrency_config=ConcurrencyConfig(max_concurrent_envs=MAX_SESSIONS, session_timeout=SESSION_SECONDS),
    gradio_builder=playground_builder(make_env, SESSION_SECONDS),
    show_default_tab=False,  # the playground is the whole page: OpenEnv's form cannot hold a sandbox per visitor
    title_override="multiharness · whitebox",
    state_cls=WhiteboxState,
)


def main():
    serve(app, __doc__)


if __name__ == "__main__":
    main()
