"""mini-swe-agent, headless (`mini -y --exit-immediately`), speaking chat completions through litellm.

Settings that matter, in a YAML file merged over its own `mini.yaml` (`-c mini.yaml -c ours`):

- `model.model_name: openai/<model>` with `model_kwargs.api_base` the proxy's /v1 and `api_key`
  the session key (litellm's OpenAI route, which speaks chat completions);
- `environment.environment_class: local`: its commands run as subprocesses of the agent, i.e.
  inside our sandbox, in `cwd: /workdir`;
- `agent.mode: yolo`, `confirm_exit: false`: no prompts; `cost_limit: 0` (a local model has
  no price) with `MSWEA_COST_TRACKING=ignore_errors` and `LITELLM_LOCAL_MODEL_COST_MAP=True` (no
  download of litellm's price list);
- `agent.step_limit`: the agent only stops when a command prints
  `COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`; once the proxy's call budget is spent it would keep
  asking, so its own step limit is set just past the session's call budget;
- `MSWEA_GLOBAL_CONFIG_DIR` and `MSWEA_CONFIGURED` keep it from writing into, or asking about,
  a global config; `MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT=2` bounds retries against a dead engine.

Its Python: the venv `install.sh` made in `.tools/mini-swe-agent`, mounted read-only, plus the
interpreter that venv was made from when it lives outside /usr (a pyenv prefix), mounted at its
own path so the venv's links resolve.

Tool calls: the `tool_calls` of the assistant messages in its trajectory file, whose
`exit_status` also tells how its loop ended (`agent_ended`).
"""

import json
from pathlib import Path

from ..paths import TOOLS_DIR
from ._common import HOME, OUTPUT_DIR, Harness, Launch, LaunchContext

__all__ = ["MiniSweAgent"]

VENV = "/opt/harness/mini-swe-agent"
"""Where `.tools/mini-swe-agent` is mounted."""
HOST_VENV = TOOLS_DIR / "mini-swe-agent"
CONFIG_DIR = f"{HOME}/.config/mini-swe-agent"
TRAJECTORY = f"{OUTPUT_DIR}/trajectory.json"
AGENT_ENDINGS = ("Submitted", "LimitsExceeded", "TimeExceeded", "RepeatedFormatError", "ContextWindowExceededError")
"""Trajectory exit statuses of a loop the model ended (the last: litellm's error for a conversation
longer than the model's context, which mini re-raises with exit status 1)."""
COMMAND_TIMEOUT_S = 120
"""Seconds per command it runs (its default, 30, is short for pandas on a loaded CPU)."""


def _exit_status(files: dict[str, str]) -> str | None:
    """The `exit_status` its trajectory records: how its agent loop ended, or the exception that ended it."""
    text = files.get(TRAJECTORY)
    if text is None:
        return None
    return (json.loads(text).get("info") or {}).get("exit_status")


def _base_prefix(venv: Path) -> Path | None:
    """The install prefix of the interpreter a venv was made from (`home` in pyvenv.cfg)."""
    try:
        lines = (venv / "pyvenv.cfg").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home":
            return Path(value.strip()).parent
    return None


class MiniSweAgent(Harness):
    name = "mini-swe-agent"
    dialect = "chat"
    read_back = (TRAJECTORY,)

    def mounts(self):
        mounts = {VENV: HOST_VENV}
        prefix = _base_prefix(HOST_VENV)
        if prefix is not None and not str(prefix.resolve()).startswith("/usr/"):
            mounts[str(prefix)] = prefix
        return mounts

    def launch(self, context: LaunchContext) -> Launch:
        config = {
            "agent": {
                "mode": "yolo",
                "confirm_exit": False,
                "cost_limit": 0,
                "step_limit": context.max_model_calls + 1,
            },
            "environment": {"environment_class": "local", "cwd": "/workdir", "timeout": COMMAND_TIMEOUT_S},
            "model": {
                "model_class": "litellm",
                "model_name": f"openai/{context.model}",
                "cost_tracking": "ignore_errors",
                "model_kwargs": {"api_base": f"{context.base_url}/v1", "api_key": context.api_key, "drop_params": True},
            },
        }
        config_file = f"{CONFIG_DIR}/multiharness.yaml"
        env = {
            "MSWEA_GLOBAL_CONFIG_DIR": CONFIG_DIR,
            "MSWEA_CONFIGURED": "true",
            "MSWEA_SILENT_STARTUP": "1",
            "MSWEA_COST_TRACKING": "ignore_errors",
            "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": "2",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        argv = [f"{VENV}/bin/python", "-m", "minisweagent.run.mini", "-y", "--exit-immediately",
                "-c", "mini.yaml", "-c", config_file, "-o", TRAJECTORY, "-t", context.instruction]  # fmt: skip
        # JSON is YAML: no YAML writer needed.
        return Launch(argv=argv, env=env, files={config_file: json.dumps(config, indent=1)})

    def agent_ended(self, events: str, files: dict[str, str]) -> bool:
        return _exit_status(files) in AGENT_ENDINGS

    def count_tool_calls(self, events: str, files: dict[str, str]) -> int:
        text = files.get(TRAJECTORY)
        if text is None:
            return 0
        messages = json.loads(text).get("messages") or []
        return sum(len(m.get("tool_calls") or []) for m in messages if m.get("role") == "assistant")
