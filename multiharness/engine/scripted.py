"""A deterministic stand-in for the model: it plays a task's expert episode through any harness.

Two uses. CI drives a real harness CLI through the capture proxy and the engine's HTTP surface
with it, and checks the sandbox, the trace and the reward without sampling anything. And it is
the teacher of a harness warm start (`multiharness.expert.harness_expert_dataset`): its episodes,
captured in the harness's own prompt format, are SFT data. It answers like the engine (same
routes, same token fields), by script, counting the assistant turns already in the conversation:

    look     with a look command: show the input files (`multiharness.tasks.look_command`)
    solve    run `(solution command) | tee /workdir/answer.txt`: the answer is printed and written
             in one call (the command prints it); when a `submit_solution` tool is offered (the
             whitebox loop), run the solution command alone
    submit   `submit_solution` with the output of the solve call when that tool is offered, else
             the harness's submit command when its prompt names one (mini-swe-agent:
             `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`)
    later    a plain final message

The shell tool is picked from the request's `tools` by name (`SHELL_TOOLS`) and its
arguments are filled from the tool's own JSON schema (a string or an argv list, plus any
required field such as OpenCode's `description`). With no tools offered, a command goes in a
fenced `mswea_bash_command` block: mini-swe-agent 2.4.6 offers a `bash` tool with its default
model class and reads those blocks with `litellm_textbased`. Token fields are real: the prompt
ids come from the chat template, the completion ids are the template's own rendering of the
reply (so turns chain by exact token prefix) and every logprob is 0.0, probability 1, since
the policy is deterministic.
"""

import re
import shlex
from concurrent.futures import Future
from collections.abc import Callable

from ..layout import ANSWER_PATH
from .chat import render_assistant
from .generation import GenerationRequest, Sample

__all__ = ["ScriptedPolicy", "SHELL_TOOLS", "shell_tool_call"]

SHELL_TOOLS = {
    "bash": "OpenCode {command, description}, mini-swe-agent and OpenEnv's probe {command}",
    "Bash": "Claude Code {command, description?, timeout?}",
    "shell": "Codex {command: [argv], workdir?}",
    "shell_command": "Codex {command: str}",
    "exec_command": "Codex unified exec {cmd: str}",
    "run_shell_command": "Gemini CLI {command}",
    "developer__shell": "Goose {command}",
}
"""Shell tools by name, in order of preference, and the harness that offers each one."""

SUBMIT_SENTINEL = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
"""mini-swe-agent ends a run when a command prints this; its prompt says so."""

TEXT_ACTION = "THOUGHT: {thought}\n\n```mswea_bash_command\n{command}\n```"
"""A command in mini-swe-agent's text protocol (used when no tool is offered)."""

FINAL_MESSAGE = f"Done: the answer is in {ANSWER_PATH}."

SUBMIT_TOOL = "submit_solution"
"""The whitebox loop's answer tool: `{answer}`, the value itself."""

_EXIT_CODE_LINE = re.compile(r"\n?\[exit code -?\d+[^\]]*\]\s*$")

_ZERO = {"string": "", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}


def _function(tool: dict) -> dict:
    return tool.get("function", tool) if isinstance(tool, dict) else {}


def _command_key(function: dict) -> str | None:
    properties = (function.get("parameters") or {}).get("properties") or {}
    return next((key for key in ("command", "cmd", "script") if key in properties), None)


def find_shell_tool(tools: list[dict]) -> dict:
    """The offered tool that runs shell commands: a known name first, else a shell-like name with a command field."""
    by_name = {_function(t).get("name"): _function(t) for t in tools}
    for name in SHELL_TOOLS:
        if name in by_name:
            return by_name[name]
    for name, function in by_name.items():
        if name and any(word in name.lower() for word in ("bash", "shell")) and _command_key(function):
            return function
    raise ValueError(
        f"scripted policy: none of the offered tools {sorted(n for n in by_name if n)} runs shell commands; "
        f"known shell tools: {', '.join(SHELL_TOOLS)}"
    )


def shell_tool_call(tools: list[dict], command: str) -> tuple[str, dict]:
    """`(tool name, arguments)` that run `command` with the shell tool among `tools`."""
    function = find_shell_tool(tools)
    parameters = function.get("parameters") or {}
    properties = parameters.get("properties") or {}
    key = _command_key(function) or "command"
    as_argv = (properties.get(key) or {}).get("type") == "array"
    arguments = {key: ["bash", "-lc", command] if as_argv else command}
    for name in parameters.get("required") or []:
        if name in arguments:
            continue
        spec = properties.get(name) or {}
        if name == "description":
            arguments[name] = "Run a shell command"
        else:
            arguments[name] = spec.get("default", _ZERO.get(spec.get("type"), ""))
    return function["name"], arguments


def _last_tool_output(messages: list[dict]) -> str:
    """The text of the last tool result, without the whitebox tools' `[exit code N]` line."""
    content = next((m.get("content") for m in reversed(messages) if m.get("role") == "tool"), "")
    return _EXIT_CODE_LINE.sub("", content if isinstance(content, str) else str(content or "")).strip()


def _resolve(command, messages: list[dict]) -> str | None:
    return command(messages) if callable(command) else command


def _mentions(messages: list[dict], needle: str) -> bool:
    for message in messages:
        content = message.get("content")
        text = content if isinstance(content, str) else str(content or "")
        if needle in text:
            return True
    return False


class ScriptedPolicy:
    """Plays an expert episode (look, solve, submit) through whatever harness calls it.

    `solution_command` prints the answer; `look_command`, when given, shows the input files first.
    Each is a command, or a function from the conversation to the command (to serve several tasks:
    `multiharness.endpoint` finds the task from its instruction).
    """

    def __init__(self, tokenizer, solution_command: str | Callable[[list[dict]], str], *,
                 look_command: str | Callable[[list[dict]], str] | None = None,
                 answer_path: str = ANSWER_PATH, max_model_len: int = 8192):
        self.tokenizer = tokenizer
        self.solution_command = solution_command
        self.look_command = look_command
        self.answer_path = answer_path
        self.max_model_len = max_model_len

    def reply(self, messages: list[dict], tools: list[dict] | None) -> dict:
        """The scripted assistant message for this point of the conversation."""
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        offered = {_function(t).get("name") for t in tools or []}
        solution = _resolve(self.solution_command, messages)
        look = _resolve(self.look_command, messages)
        # (command or None for the submit tool, thought): the turns of the script, in order.
        steps = [(look, "Look at the input files.")] if look else []
        if SUBMIT_TOOL in offered:
            steps += [(solution, "Compute the answer."), (None, "Submit it.")]
        else:
            # The newline before `)` ends a heredoc (`<<'PY' ... PY`) before the subshell closes.
            steps.append((f"({solution}\n) | tee {shlex.quote(self.answer_path)}",
                          f"Compute the answer and write it to {self.answer_path}."))
            if _mentions(messages, SUBMIT_SENTINEL):
                steps.append((f"echo {SUBMIT_SENTINEL}", "Submit."))
        if turn >= len(steps):
            return {"role": "assistant", "content": FINAL_MESSAGE}
        command, thought = steps[turn]
        if not tools:
            return {"role": "assistant", "content": TEXT_ACTION.format(thought=thought, command=command)}
        if command is None:
            name, arguments = SUBMIT_TOOL, {"answer": _last_tool_output(messages)}
        else:
            name, arguments = shell_tool_call(tools, command)
        call = {"id": f"call_{turn}", "type": "function", "function": {"name": name, "arguments": arguments}}
        return {"role": "assistant", "content": "", "tool_calls": [call]}

    def submit(self, request: GenerationRequest) -> Future:
        """`generate(request)` as an already finished future (the server's interface; nothing is queued)."""
        future: Future = Future()
        future.set_result(self.generate(request))
        return future

    def generate(self, request: GenerationRequest) -> list[Sample]:
        """The scripted reply as sampled tokens, each with logprob 0.0, `n` times."""
        reply = self.reply(request.messages, request.tools)
        text = render_assistant(self.tokenizer, request.messages, request.tools, reply)
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        finish = "stop"
        limit = request.params.max_tokens
        if limit is not None and len(ids) > limit:
            ids, finish = ids[:limit], "length"
        top = [[(token, 0.0)] for token in ids] if request.params.top_logprobs else None
        return [
            Sample(token_ids=list(ids), logprobs=[0.0] * len(ids), finish_reason=finish, top_logprobs=top)
            for _ in range(request.params.n)
        ]
