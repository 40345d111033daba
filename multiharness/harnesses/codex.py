"""Codex (`@openai/codex`), headless (`codex exec --json`), speaking OpenAI Responses to the proxy.

Settings that matter, all in `$CODEX_HOME/config.toml` (CODEX_HOME under HOME: Codex warns
about, and will not put helper binaries in, a home under /tmp):

- a custom model provider (`model_providers.capture`): `wire_api = "responses"`, `base_url` the
  proxy's /v1, the key read from the variable named by `env_key`; `supports_websockets = false`
  because the proxy serves Responses over HTTP only (Codex would try a websocket first);
- a `[features]` block that turns off plugins, remote plugins, apps and in-app updates: with
  them on, Codex 0.171 looks up api.github.com and chatgpt.com at start (seen with strace);
  `check_for_update_on_startup = false` and `[analytics] enabled = false` likewise;
- `web_search = "disabled"`: no internet lookups as a tool; the `goals` and `view_image`
  features off too, which keeps the first prompt at 5.9k SmolLM2 tokens (6.7k with them);
- `--dangerously-bypass-approvals-and-sandbox`: commands run without approval prompts and
  without Codex's own sandbox (it cannot nest in ours; ours is the sandbox).

Tool calls: `item.completed` events whose item is a `command_execution` (or a `file_change`
or `mcp_tool_call`, the other tool actions Codex reports).
"""

import tomli_w

from ._common import HOME, NPM_MOUNT, Harness, Launch, LaunchContext, json_lines, npm_cli

__all__ = ["Codex"]

CODEX_HOME = f"{HOME}/.codex"
KEY_VARIABLE = "CAPTURE_SESSION_KEY"
"""The variable the provider's `env_key` names: the capture session key."""
TOOL_ITEMS = ("command_execution", "file_change", "mcp_tool_call")
"""`item.completed` item types that are tool actions."""
DISABLED_FEATURES = ("plugins", "remote_plugin", "apps", "in_app_updates", "goals", "view_image")
"""Features that reach the internet at start (`codex features list` names them)."""



def config(context: LaunchContext) -> dict:
    """`$CODEX_HOME/config.toml` for one episode (see the module docstring for each setting)."""
    return {
        "model": context.model,
        "model_provider": "capture",
        "approval_policy": "never",
        "sandbox_mode": "danger-full-access",
        "check_for_update_on_startup": False,
        "web_search": "disabled",
        "model_providers": {
            "capture": {
                "name": "capture",
                "base_url": f"{context.base_url}/v1",
                "env_key": KEY_VARIABLE,
                "wire_api": "responses",
                "supports_websockets": False,
            }
        },
        "features": {feature: False for feature in DISABLED_FEATURES},
        "analytics": {"enabled": False},
    }


class Codex(Harness):
    name = "codex"
    dialect = "responses"

    def mounts(self):
        return dict([NPM_MOUNT])

    def launch(self, context: LaunchContext) -> Launch:
        argv = [npm_cli("codex"), "exec", "--json", "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox", context.instruction]  # fmt: skip
        return Launch(
            argv=argv,
            env={"CODEX_HOME": CODEX_HOME, KEY_VARIABLE: context.api_key},
            files={f"{CODEX_HOME}/config.toml": tomli_w.dumps(config(context))},
        )

    def agent_ended(self, events: str, files: dict[str, str]) -> bool:
        return any(event.get("type") == "turn.completed" for event in json_lines(events))

    def count_tool_calls(self, events: str, files: dict[str, str]) -> int:
        return sum(
            1
            for event in json_lines(events)
            if event.get("type") == "item.completed" and (event.get("item") or {}).get("type") in TOOL_ITEMS
        )
