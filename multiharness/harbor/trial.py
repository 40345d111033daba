"""One Harbor trial from the trainer's side: `harbor trial start` as a subprocess, its result as a `HarnessRun`.

`run_trial` has the signature of the project's own runner (`multiharness.harnesses._common.
run_harness`), so a `HarnessSession` made with `runner=run_trial` is the same OpenEnv session,
capture, budget and failure rules, with Harbor running the episode:

- Harbor's own agent for the harness (`HARBOR_AGENTS`: OpenCode, Claude Code and Codex as they
  are, at the versions pinned in clis/package.json, so they skip their install; mini-swe-agent
  from the project's install, `multiharness.harbor.agents`), in the bubblewrap environment
  (`multiharness.harbor.environment`), with the harness's install mounted read-only;
- the model endpoint is the capture proxy through the sandbox's route, in the harness's dialect,
  and the API key is the capture session id;
- Harbor's verifier grades, in an environment of its own (the task's tests/test.sh running the
  task's copy of the grader): its reward is the episode's correctness;
- the tool count is the agent's native tool actions in Harbor's trajectory (ATIF steps);
- Harbor's subprocess gets no variable of the host beyond PATH and the project's paths, so no
  token or key reaches it, its sandbox, or its logs; its trial folder is deleted afterwards
  unless `keep_dir` is given.

A trial Harbor ended with an exception is a failure at the boundary of the phase it failed in:
the environment's start ("sandbox"), the agent ("harness"; the session reassigns it to "engine"
when the engine failed), the verifier ("task").
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..harnesses._common import Harness, HarnessRun, LaunchContext
from ..paths import CACHE_DIR, PROJECT_ROOT, TOOLS_DIR
from ..sandbox.proxy_route import URL

__all__ = ["HARBOR", "HARBOR_AGENTS", "HarborAgent", "run_trial", "trial_command"]

logger = logging.getLogger(__name__)

HARBOR = TOOLS_DIR / "harbor" / "bin" / "harbor"
"""Harbor's CLI, in its own Python 3.12 venv (./install.sh)."""
ENVIRONMENT = "multiharness.harbor.environment:BubblewrapEnvironment"
PATH_FIRST = "/installed-agent/bin:/opt/harness/npm/node_modules/.bin"
"""The CLIs' folders inside the sandbox: the npm prefix's bin and the mini-swe-agent shim."""
SETUP_GRACE_S = 300.0
"""Beyond the agent's timeout: Harbor's start, environment, verifier and teardown."""


@dataclass(frozen=True)
class HarborAgent:
    """How Harbor runs one harness against the capture proxy."""

    agent: str
    """Harbor's agent name, or an import path."""
    provider: str
    """The provider of the model slug (`provider/model`), which picks the agent's client."""
    api_format: str
    """Harbor's `--api-format`: the harness's dialect."""
    key_variable: str
    """The variable the agent reads its API key from (the capture session id)."""
    base_path: str
    """Appended to the route's URL: "/v1" for OpenAI clients, "" for Anthropic's."""
    npm_package: str | None = None
    """The npm package whose pinned version (clis/package.json) the agent checks before installing."""
    agent_kwargs: tuple[str, ...] = ()
    """Harbor's `--agent-kwarg key=value` settings of the agent."""


CLAUDE_CODE_EXTRA_TOOLS = ("Task,CronCreate,CronDelete,CronList,EnterWorktree,ExitWorktree,ListAgents,Monitor,"
                           "NotebookEdit,ReportFindings,ScheduleWakeup,SendMessage,Skill,TaskStop,ToolSearch,Workflow")
"""The tools Claude Code 2.1.332 offers under Harbor besides Bash, Read, Write, Edit, Glob and Grep."""

HARBOR_AGENTS = {
    # provider "capture", not "openai": OpenCode sends OpenAI providers to the Responses API.
    "opencode": HarborAgent("opencode", "capture", "openai_chat_completions", "OPENAI_API_KEY", "/v1", "opencode-ai"),
    # Claude Code's tools beyond those the project's runner keeps (multiharness/harnesses/claude_code.py)
    # are taken out of its prompt: with all of them the first prompt outgrows a small model's context.
    "claude-code": HarborAgent("claude-code", "anthropic", "anthropic_messages", "ANTHROPIC_API_KEY", "",
                               "@anthropic-ai/claude-code", (f"disallowed_tools={CLAUDE_CODE_EXTRA_TOOLS}",)),
    "codex": HarborAgent("codex", "openai", "openai_responses", "OPENAI_API_KEY", "/v1", "@openai/codex"),
    "mini-swe-agent": HarborAgent("multiharness.harbor.agents:PreinstalledMiniSweAgent", "openai",
                                  "openai_chat_completions", "MSWEA_API_KEY", "/v1"),
}
"""Harbor's settings for each harness, by the project's harness name."""


def _pinned_version(package: str) -> str:
    return json.loads((PROJECT_ROOT / "clis" / "package.json").read_text())["dependencies"][package]


def trial_command(harness: Harness, task_dir: Path, context: LaunchContext, *, proxy_port: int, timeout_s: float,
                  trials_dir: Path, trial_name: str) -> list[str]:
    """The `harbor trial start` command line of one episode (the API key travels in `--ae`)."""
    settings = HARBOR_AGENTS[harness.name]
    command = [
        str(HARBOR), "trial", "start", "--path", str(task_dir), "--trials-dir", str(trials_dir),
        "--trial-name", trial_name, "--agent", settings.agent, "--model", f"{settings.provider}/{context.model}",
        "--base-url", f"{URL}{settings.base_path}", "--api-format", settings.api_format,
        "--ae", f"{settings.key_variable}={context.api_key}", "--agent-timeout", str(int(timeout_s)),
        "--env", ENVIRONMENT,
        "--environment-kwarg", "read_only=" + json.dumps({k: str(v) for k, v in harness.mounts().items()}),
        "--environment-kwarg", f"proxy_port={proxy_port}", "--environment-kwarg", f"path_first={PATH_FIRST}",
    ]  # fmt: skip
    if settings.npm_package:
        command += ["--agent-kwarg", f"version={_pinned_version(settings.npm_package)}"]
    for setting in settings.agent_kwargs:
        command += ["--agent-kwarg", setting]
    return command


def _harbor_env(home: Path) -> dict[str, str]:
    """Harbor's whole environment: no variable of the host's but PATH (so no token or key)."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "PYTHONPATH": str(PROJECT_ROOT),  # Harbor imports the environment and agent classes from here
        "MULTIHARNESS_HOME": str(CACHE_DIR),  # where the sandbox's Python lives
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # Harbor's litellm would fetch its price list otherwise
        "LANG": "C.UTF-8",
    }


class _Process:
    """The trial's process group, so that a session's `close()` stops Harbor and its sandbox at once."""

    def __init__(self):
        self.process: subprocess.Popen | None = None

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)


def _tool_calls(trial: Path) -> int | None:
    """The agent's native tool actions in Harbor's ATIF trajectory; None when there is none."""
    try:
        steps = json.loads((trial / "agent" / "trajectory.json").read_text()).get("steps") or []
    except (OSError, ValueError):
        return None
    return sum(len(step.get("tool_calls") or []) for step in steps if step.get("source") == "agent")


def _boundary(result: dict) -> str:
    """The phase a Harbor exception ended: the environment's start, the agent, or the verifier."""
    name = (result.get("exception_info") or {}).get("exception_type", "")
    if result.get("verifier") or "Verifier" in name or "Reward" in name or "Tests" in name:
        return "task"
    if not (result.get("environment_setup") or {}).get("finished_at") or "Environment" in name:
        return "sandbox"
    return "harness"


def run_trial(
    harness: Harness,
    task_dir: Path,
    *,
    proxy_host: str,
    proxy_port: int,
    context: LaunchContext,
    timeout_s: float,
    sandbox: str = "local",
    on_open: Callable | None = None,
    keep_dir: Path | None = None,
) -> HarnessRun:
    """Run one Harbor trial of `harness` on the task; never raises for a failed trial (see the module docstring)."""
    run = HarnessRun()
    started = time.monotonic()
    if harness.name not in HARBOR_AGENTS:
        run.boundary, run.error = "harness", f"Harbor runs {sorted(HARBOR_AGENTS)}, not {harness.name!r}"
        return run
    if sandbox != "local" or proxy_host not in ("127.0.0.1", "localhost"):
        run.boundary = "sandbox"
        run.error = f"Harbor trials run in the bubblewrap environment here (sandbox 'local'), not {sandbox!r}"
        return run
    missing = harness.missing() or (None if HARBOR.exists() else f"Harbor is not installed at {HARBOR}: run ./install.sh")
    if missing:
        run.boundary, run.error = "harness", missing
        return run
    scratch = Path(tempfile.mkdtemp(prefix="multiharness-harbor-"))
    trial_name = f"{task_dir.name}__{context.api_key[-8:]}"
    command = trial_command(harness, task_dir, context, proxy_port=proxy_port, timeout_s=timeout_s,
                            trials_dir=scratch / "trials", trial_name=trial_name)
    handle = _Process()
    try:
        run.launch_s = time.monotonic()
        handle.process = subprocess.Popen(command, env=_harbor_env(scratch / "home"), stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True, start_new_session=True)
        if on_open is not None:
            on_open(handle)
        try:
            output, _ = handle.process.communicate(timeout=timeout_s + SETUP_GRACE_S)
        except subprocess.TimeoutExpired:
            handle.close()
            output, _ = handle.process.communicate()
            run.timed_out = True
        run.exit_code, run.output_tail = handle.process.returncode, (output or "")[-4000:]
        trial = scratch / "trials" / trial_name
        _read_result(run, trial, timeout_s)
        if keep_dir is not None and trial.exists():
            shutil.copytree(trial, keep_dir / trial_name, dirs_exist_ok=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        run.seconds = time.monotonic() - started
    return run


def _read_result(run: HarnessRun, trial: Path, timeout_s: float) -> None:
    """Fill `run` from the trial folder Harbor wrote: the verifier's correctness, or the failure."""
    if run.timed_out:
        run.boundary, run.error = "harness", f"the Harbor trial ran past {timeout_s + SETUP_GRACE_S:.0f} s and was killed"
        return
    try:
        result = json.loads((trial / "result.json").read_text())
    except (OSError, ValueError) as error:
        run.boundary = "harness"
        run.error = f"Harbor wrote no trial result ({error}); it said: {run.output_tail.strip()[-1500:] or 'nothing'}"
        return
    run.tool_calls = _tool_calls(trial)
    exception = result.get("exception_info")
    reward = ((result.get("verifier_result") or {}).get("rewards") or {}).get("reward")
    if exception is None and reward in (0, 1):
        run.correctness = int(reward)
        return
    run.boundary = _boundary(result) if exception else "task"
    run.error = (f"{exception['exception_type']}: {exception['exception_message'][-1500:]}" if exception
                 else f"Harbor's verifier gave reward {reward!r}, not 0 or 1")
