"""Claude Code (`@anthropic-ai/claude-code`), headless, speaking Anthropic Messages to the proxy.

Settings that matter:

- `claude -p PROMPT --output-format stream-json --verbose`: one JSON event per line on stdout;
  `--dangerously-skip-permissions` so no tool waits for a confirmation nobody gives;
- `ANTHROPIC_BASE_URL` is the proxy's root (the SDK adds /v1/messages itself) and
  `ANTHROPIC_AUTH_TOKEN` the session key (sent as a bearer token);
- every model alias (`ANTHROPIC_MODEL`, the OPUS/SONNET/HAIKU defaults, the small fast model) is
  pinned to the served model, so background calls go to the same engine under the same name;
- `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` turns off telemetry, error reports and update
  checks; `IS_SANDBOX=1` lets it skip permissions where the sandbox user is uid 0 (rootless hosts);
- `--tools Bash,Read,Write,Edit,Glob,Grep` and `--disable-slash-commands`: the tools a data
  task needs; no web fetch or search (no network, and a tool that always fails teaches nothing),
  no subagents (an episode is one conversation), no skills listing. This also brings the first
  prompt from 10.9k to 5.5k SmolLM2 tokens, inside a small model's 8k context.

Tool calls: the `tool_use` blocks of its `assistant` events. It exits 1 when the model's replies
keep running past the output cap (`"api_error": "max_output_tokens"` in its `result` event):
the model's doing, so that episode is graded (`agent_ended`).
"""

from ._common import NPM_MOUNT, Harness, Launch, LaunchContext, json_lines, npm_cli

__all__ = ["ClaudeCode"]

MODEL_ALIASES = ("MODEL", "DEFAULT_OPUS_MODEL", "DEFAULT_SONNET_MODEL", "DEFAULT_HAIKU_MODEL", "SMALL_FAST_MODEL")
"""`ANTHROPIC_<alias>` variables, all pinned to the served model."""
TOOLS = "Bash,Read,Write,Edit,Glob,Grep"
"""Its built-in tools for reading data and running code (see the module docstring)."""


class ClaudeCode(Harness):
    name = "claude-code"
    dialect = "anthropic"

    def mounts(self):
        return dict([NPM_MOUNT])

    def launch(self, context: LaunchContext) -> Launch:
        models = {f"ANTHROPIC_{alias}": context.model for alias in MODEL_ALIASES}
        env = {
            "ANTHROPIC_BASE_URL": context.base_url,
            "ANTHROPIC_AUTH_TOKEN": context.api_key,
            **models,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "IS_SANDBOX": "1",
        }
        argv = [npm_cli("claude"), "-p", context.instruction, "--output-format", "stream-json", "--verbose",
                "--dangerously-skip-permissions", "--tools", TOOLS, "--disable-slash-commands"]  # fmt: skip
        return Launch(argv=argv, env=env)

    def agent_ended(self, events: str, files: dict[str, str]) -> bool:
        # Its final `result` event; an HTTP error status there other than a request the engine
        # refused as too long (400/413/422, relayed by the proxy) means it did not end on its own.
        results = [event for event in json_lines(events) if event.get("type") == "result"]
        return bool(results) and results[-1].get("api_error_status") in (None, 400, 413, 422)

    def count_tool_calls(self, events: str, files: dict[str, str]) -> int:
        count = 0
        for event in json_lines(events):
            if event.get("type") == "assistant":
                content = (event.get("message") or {}).get("content") or []
                count += sum(1 for block in content if isinstance(block, dict) and block.get("type") == "tool_use")
        return count
