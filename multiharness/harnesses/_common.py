"""What every harness runner shares, written once: sandbox, route to the proxy, launch, clean-up, result.

A harness module only says how its CLI is configured (`Launch`: files, environment, argv) and
how to count its native tool actions; `run_harness` does the rest, the same way for all four:

1. open the task's sandbox with the harness's install mounted read-only (`Harness.mounts`) and
   a route to the capture proxy (`multiharness.sandbox.proxy_route`: a unix socket mounted in,
   a forwarder on the sandbox's own loopback), so the model's tool commands still reach nothing
   else;
2. write the harness's configuration into a fresh HOME inside the sandbox (/home/user);
3. run one sandbox command: the route's forwarder, then the CLI headless in /workdir with only
   the variables it needs (the sandbox gives a command no host variable, so no HF_TOKEN or API
   key of the host ever reaches it), its event stream written to a file;
4. on its wall-clock timeout the sandbox kills the command's pid namespace: the CLI, every tool
   process it started and the forwarder, all at once;
5. read back the event stream and /workdir/answer.txt, close the sandbox and the route.

Why by hand: no maintained package runs these CLIs in a bubblewrap sandbox against a capture
proxy; OpenEnv's Harbor seams (`openenv.harbor.seams`) were the reference for each CLI's
settings.
"""

from __future__ import annotations

import json
import logging
import shlex
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..episode import Boundary
from ..layout import ANSWER_PATH, WORKDIR
from ..paths import TOOLS_DIR
from ..sandbox import Sandbox, SandboxError, open_sandbox
from ..sandbox.proxy_route import ProxyRoute

__all__ = [
    "HOME",
    "Harness",
    "HarnessRun",
    "Launch",
    "LaunchContext",
    "NPM_MOUNT",
    "json_lines",
    "npm_cli",
    "run_harness",
]

logger = logging.getLogger(__name__)

HOME = "/home/user"
"""The harness's HOME inside the sandbox: a fresh tmpfs per episode, so no state carries over."""

OUTPUT_DIR = "/tmp/harness"
"""Inside the sandbox: the CLI's event stream and the forwarder's log."""
EVENTS_FILE = f"{OUTPUT_DIR}/events.jsonl"
MEMORY_MB = 8192
"""Address space per process: Bun and Node reserve far more virtual memory than they use."""
PROCESSES = 512
"""Processes and threads at once: a CLI runs dozens of threads besides the tool commands."""

NPM_MOUNT = ("/opt/harness/npm", TOOLS_DIR / "npm")
"""(sandbox path, host path) of the npm prefix holding OpenCode, Codex and Claude Code."""


def npm_cli(name: str) -> str:
    """The sandbox path of an npm CLI's launcher (the same entry point a user runs)."""
    return f"{NPM_MOUNT[0]}/node_modules/.bin/{name}"


def json_lines(text: str) -> list[dict]:
    """The JSON objects of a JSON-lines stream; other lines (logs, blanks) are skipped."""
    events = []
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


# ---- what a harness module provides ----------------------------------------------------------


@dataclass(frozen=True)
class LaunchContext:
    """What a harness needs to know to configure itself for one episode."""

    base_url: str
    """The capture proxy's root as the CLI sees it inside the sandbox (no /v1)."""
    api_key: str
    """The capture session key: the CLI's API key."""
    model: str
    """The served model's name."""
    instruction: str
    """The task's instruction: the CLI's prompt."""
    max_model_calls: int
    """The session's model-call budget (a CLI that needs its own step limit sets it from this)."""


@dataclass(frozen=True)
class Launch:
    """How to start a harness: files to write first, its variables, its command line."""

    argv: list[str]
    """The CLI and its arguments; it runs in /workdir and writes its event stream to stdout."""
    env: dict[str, str] = field(default_factory=dict)
    """Variables on top of the sandbox's clean environment (PATH, HOME=/home/user, LANG)."""
    files: dict[str, str] = field(default_factory=dict)
    """Sandbox path -> text, written before the start (configuration under HOME)."""


class Harness(ABC):
    """One agent CLI: how it is installed, configured and launched, and how it counts tool calls."""

    name: str = ""
    """Registry name (`--harness`)."""
    dialect: str = ""
    """The API it speaks to the proxy: "chat", "responses" or "anthropic"."""
    read_back: tuple[str, ...] = ()
    """Sandbox files read back after the run besides the event stream (mini's trajectory)."""

    @abstractmethod
    def mounts(self) -> dict[str, Path]:
        """Sandbox path -> host path of the CLI's install, mounted read-only."""

    @abstractmethod
    def launch(self, context: LaunchContext) -> Launch:
        """Configuration files, variables and command line for one episode."""

    @abstractmethod
    def count_tool_calls(self, events: str, files: dict[str, str]) -> int:
        """Native tool actions, counted from the CLI's own output (`events`: its stdout)."""

    def agent_ended(self, events: str, files: dict[str, str]) -> bool:
        """Whether the CLI's own output reports that its agent loop ended for a reason of the model's
        (the reply ran past the output cap again and again, the conversation outgrew the context),
        so that a non-zero exit status is the model's doing, not a crash. False by default."""
        return False

    def missing(self) -> str | None:
        """Why the CLI cannot run here (what to install), or None when it can."""
        absent = [str(path) for path in self.mounts().values() if not path.exists()]
        if absent:
            return f"{self.name} is not installed (missing {', '.join(absent)}): run ./install.sh"
        return None


# ---- one run ---------------------------------------------------------------------------------


@dataclass
class HarnessRun:
    """What one run of a harness CLI did in its sandbox (before grading)."""

    exit_code: int | None = None
    """The CLI's exit status; None when it never started."""
    timed_out: bool = False
    """True when the wall-clock timeout killed it and everything it started."""
    answer: str | None = None
    """The text of /workdir/answer.txt, None when there was none."""
    correctness: int | None = None
    """1 or 0 when the runner graded the answer itself (Harbor's verifier); None otherwise."""
    tool_calls: int | None = None
    """Native tool actions counted from the CLI's output."""
    boundary: Boundary | None = None
    """The boundary that failed ("harness", "sandbox"), None when the run itself went through."""
    error: str | None = None
    """What went wrong, for a person."""
    output_tail: str = ""
    """The end of the CLI's stderr (and the launcher's messages)."""
    events: str = ""
    """The CLI's stdout: its event stream (JSON lines for the three npm CLIs)."""
    files: dict[str, str] = field(default_factory=dict)
    """Files read back (`Harness.read_back`)."""
    seconds: float = 0.0
    """Wall time from sandbox open to close."""
    launch_s: float | None = None
    """Monotonic time the CLI was launched."""
    calls: list[tuple[float, float | None]] = field(default_factory=list)
    """(start, answered) monotonic times of the HTTP calls that crossed the bridge."""


def _script(launch: Launch, route: ProxyRoute) -> str:
    """The one sandbox command: the route to the proxy, then the CLI with its variables."""
    exports = "\n".join(f"export {name}={shlex.quote(value)}" for name, value in launch.env.items())
    return route.wrap(f"""mkdir -p {OUTPUT_DIR}
{exports}
cd {WORKDIR}
{shlex.join(launch.argv)} > {EVENTS_FILE}
""")


def run_harness(
    harness: Harness,
    task_dir: Path,
    *,
    proxy_host: str,
    proxy_port: int,
    context: LaunchContext,
    timeout_s: float,
    sandbox: str = "local",
    on_open: Callable[[Sandbox], None] | None = None,
) -> HarnessRun:
    """Run `harness` once on the task in a fresh sandbox; never raises for a failed run.

    The returned `HarnessRun` says what happened; `boundary` names the one that failed when the run
    could not go through (the CLI missing or crashed or timed out: "harness"; the sandbox would
    not start or died: "sandbox"). A CLI that exits non-zero is a "harness" failure here, unless
    its output says its agent loop ended (`Harness.agent_ended`); the caller may reassign a
    failure to the engine after checking that the engine is alive. `on_open`
    receives the sandbox once it is open, so another thread can `close()` it to stop the run.
    """
    run = HarnessRun()
    started = time.monotonic()
    missing = harness.missing()
    if missing:
        run.boundary, run.error = "harness", missing
        return run
    if sandbox != "local":
        run.boundary = "sandbox"
        run.error = f"harness runs need the local sandbox (bubblewrap); {sandbox!r} cannot reach the proxy yet"
        return run
    launch = harness.launch(context)
    route = ProxyRoute(proxy_host, proxy_port)
    box = None
    try:
        mounts = {**harness.mounts(), **route.mounts}
        limits = {"timeout_s": timeout_s, "memory_mb": MEMORY_MB, "processes": PROCESSES}
        box = open_sandbox(task_dir, sandbox, mounts=mounts, **limits)
        if on_open is not None:
            on_open(box)
        for path, text in launch.files.items():
            box.write_file(path, text)
        run.launch_s = time.monotonic()
        result = box.exec(_script(launch, route), timeout=timeout_s)
        run.exit_code, run.timed_out, run.output_tail = result.exit_code, result.timed_out, result.output
        run.events = _read(box, EVENTS_FILE) or ""
        run.files = {path: text for path in harness.read_back if (text := _read(box, path)) is not None}
        run.answer = _read(box, ANSWER_PATH)
    except SandboxError as error:
        run.boundary, run.error = "sandbox", str(error)
    except OSError as error:  # a file could not be written or read through a live sandbox
        run.boundary, run.error = "sandbox", f"{type(error).__name__}: {error}"
    finally:
        if box is not None:
            box.close()
        route.close()
        run.calls = list(route.calls)
        run.seconds = time.monotonic() - started
    if run.boundary is None:
        if run.timed_out:
            run.boundary = "harness"
            run.error = f"{harness.name} ran past its {timeout_s:.0f} s timeout and was killed with all its processes"
        elif route.failed_to_start(run.exit_code, run.output_tail):
            run.boundary, run.error = "sandbox", run.output_tail.strip()[-2000:]
        elif run.exit_code != 0 and harness.agent_ended(run.events, run.files):
            logger.info("%s exited with code %s after its agent loop ended; graded", harness.name, run.exit_code)
        elif run.exit_code != 0:
            run.boundary = "harness"
            said = run.output_tail.strip()[-2000:] or "no output"
            run.error = f"{harness.name} exited with code {run.exit_code}: {said}"
    try:
        run.tool_calls = harness.count_tool_calls(run.events, run.files)
    except (ValueError, KeyError, TypeError) as error:  # unreadable output: the count is unknown
        logger.warning("%s: could not count tool calls: %s", harness.name, error)
    return run


def _read(box, path: str) -> str | None:
    try:
        return box.read_file(path)
    except FileNotFoundError:
        return None
