"""OpenCode (`opencode-ai`), headless (`opencode run --format json`), speaking chat completions.

Settings that matter, all in `OPENCODE_CONFIG_CONTENT` (JSON config given inline, so nothing is
read from or written to a config file the model could edit):

- a provider with id `capture` (not `openai`: that id switches OpenCode to the Responses API)
  on `@ai-sdk/openai-compatible`, which the OpenCode binary bundles (no npm install at run time),
  `baseURL` the proxy's /v1 and `apiKey` the session key;
- the served model listed under the provider's `models` with `tool_call: true` (a model missing
  there is resolved against the models.dev registry, fails, and OpenCode silently sends nothing),
  and `small_model` pinned to it, so the title generator calls the same engine;
- `autoupdate: false`, `share: "disabled"`, and the `OPENCODE_DISABLE_*` variables (models.dev
  fetch, LSP downloads, default and external plugins, Claude Code compatibility, project config);
- tools off (`permission: deny`, which in OpenCode 1.18 also takes the tool out of the prompt):
  `webfetch`/`websearch` (internet), `task` (subagents: one conversation per episode),
  `question` (nobody answers), `todowrite` and `skill`, as OpenEnv's training profile for
  OpenCode does for the first three; the rest keeps the prompt inside a small model's context
  (5.6k SmolLM2 tokens with bash, read, write, edit, glob and grep, against 7.9k by default).

On a fresh HOME OpenCode starts an npm install of `@opencode-ai/plugin` into its config folder
(~/.config/opencode), even with `OPENCODE_PURE=1`: a TLS connection to registry.npmjs.org (seen
with strace). It skips that install when the folder is not writable, so it starts with the folder
read-only (`READ_ONLY_CONFIG`); strace then shows no connection but the proxy's.

OpenCode also asks the model for a session title: a call without tools, which OpenEnv's capture
labels auxiliary and leaves out of the training trace.

Tool calls: its `tool_use` events.
"""

import json

from ._common import NPM_MOUNT, Harness, Launch, LaunchContext, json_lines, npm_cli

__all__ = ["OpenCode"]

PROVIDER = "capture"
"""The provider id (anything but `openai`)."""
DISABLED_TOOLS = ("webfetch", "websearch", "task", "question", "todowrite", "skill")
READ_ONLY_CONFIG = 'mkdir -p "$HOME/.config/opencode" && chmod 0555 "$HOME/.config/opencode" && exec "$@"'
"""Start OpenCode with its config folder read-only: it then skips its npm install there."""
DISABLE_VARIABLES = (
    "OPENCODE_DISABLE_AUTOUPDATE",
    "OPENCODE_DISABLE_MODELS_FETCH",
    "OPENCODE_DISABLE_LSP_DOWNLOAD",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS",
    "OPENCODE_DISABLE_CLAUDE_CODE",
    "OPENCODE_DISABLE_PROJECT_CONFIG",
)


class OpenCode(Harness):
    name = "opencode"
    dialect = "chat"

    def mounts(self):
        return dict([NPM_MOUNT])

    def launch(self, context: LaunchContext) -> Launch:
        model = f"{PROVIDER}/{context.model}"
        config = {
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": False,
            "share": "disabled",
            "model": model,
            "small_model": model,
            # Tools and permissions are one setting in OpenCode 1.18: a denied tool is not offered.
            "permission": {"*": "allow", **{tool: "deny" for tool in DISABLED_TOOLS}},
            "provider": {
                PROVIDER: {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "multiharness capture proxy",
                    "options": {"baseURL": f"{context.base_url}/v1", "apiKey": context.api_key},
                    "models": {context.model: {"name": context.model, "tool_call": True}},
                }
            },
        }
        env = {
            "OPENCODE_CONFIG_CONTENT": json.dumps(config),
            "OPENCODE_PURE": "1",  # no external plugins
            **{variable: "1" for variable in DISABLE_VARIABLES},
        }
        argv = ["/bin/sh", "-c", READ_ONLY_CONFIG, "opencode",
                npm_cli("opencode"), "run", "--format", "json", "-m", model, context.instruction]  # fmt: skip
        return Launch(argv=argv, env=env)

    def count_tool_calls(self, events: str, files: dict[str, str]) -> int:
        return sum(1 for event in json_lines(events) if event.get("type") == "tool_use")
