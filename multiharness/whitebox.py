"""The whitebox environment: TRL runs the tool loop and calls these Python tools in a sandbox.

`DataAnalysisEnv` follows TRL's `environment_factory` contract: `reset(**row)` opens a fresh
sandbox for the row's task and returns its instruction, and every public method is a tool whose
schema TRL builds from the Google-style docstring: `bash` and `submit_solution` (`TOOLS`), what
policies train and are evaluated with. `DataAnalysisEnvWithFileTools` adds read, write, edit,
ls, grep and glob (`FILE_TOOLS`) for the whitebox Space's playground. `finish_episode(env)` ends the episode and
scores it with `multiharness.episode.score` (the reward function of `train/whitebox.py` calls
it). Rules:

- every tool except `submit_solution` counts as a tool call for the reward;
- a command's output longer than `MAX_OUTPUT_CHARS` is cut in the middle (start and end kept);
- after `submit_solution`, or past the episode deadline (600 s), every tool answers that the
  episode is over;
- an infrastructure failure (a task that does not load, a sandbox that did not start or
  died) ends the episode as not graded at that boundary: reward None, never 0;
- with a `FailureBudget`, every outcome is recorded there, and the run stops once too many
  episodes were not graded;
- the sandbox is closed on every path: on submit, at the deadline, when scored, at the next
  reset, on leaving a `with` block, and when the environment is garbage-collected.
"""

import dataclasses
import logging
import shlex
import time
import weakref
from pathlib import Path

from .episode import FailureBudget, Outcome, failed, score
from .sandbox import SandboxError, open_sandbox
from .tasks import load_task

__all__ = [
    "DataAnalysisEnv",
    "DataAnalysisEnvWithFileTools",
    "EPISODE_SECONDS",
    "FILE_TOOLS",
    "MAX_OUTPUT_CHARS",
    "MAX_TOOL_CALLS",
    "SYSTEM_PROMPT",
    "TOOLS",
    "finish_episode",
    "prompt_messages",
    "tool_schemas",
]

logger = logging.getLogger(__name__)

EPISODE_SECONDS = 600.0
"""Wall-clock budget of one episode, tools and generation together."""

SYSTEM_PROMPT = (
    "You are a data analyst. The input files are in /home/user/input and your working directory "
    "is /workdir. Use the tools to inspect the files and compute the answer, then call "
    "submit_solution with the answer value only (not a command, not an explanation)."
)

TOOLS = ("bash", "submit_solution")
"""The tools a policy trains and is evaluated with, in the order their schemas are shown to it.
Two, not eight: each schema is rendered into every prompt, and with the file tools as well a
prompt is 1,180 tokens instead of 530, most of a CPU step's compute (bash does what they do)."""

FILE_TOOLS = ("read", "write", "edit", "ls", "grep", "glob")
"""What `DataAnalysisEnvWithFileTools` adds, for a person in the playground (and for larger models)."""

MAX_TOOL_CALLS = 4
"""Tool calls a whitebox episode may make, `submit_solution` included: enough for the expert
trajectories' longest path (a look at the data, a program that fails, the fixed program, the
answer). The evaluator gives the model this many calls and runs each; GRPO's presets let TRL run
this many (`max_tool_calling_iterations`), so an episode right in one loop is right in the other.
With one call fewer in training, an answer submitted on the fourth call was never run and scored
0, and GRPO taught the policy not to submit there."""

_EPISODE_OVER = "The episode is over: no more tool calls are accepted."

MAX_OUTPUT_CHARS = 1200
"""A command's output past this many characters is cut in the middle: a pandas traceback runs to
thousands, and a small model's context (and each step's compute) is better spent elsewhere."""


def _shortened(output: str) -> str:
    """`output` cut in the middle past MAX_OUTPUT_CHARS: its start and its end (where an error says what went wrong)."""
    if len(output) <= MAX_OUTPUT_CHARS:
        return output
    head, tail = MAX_OUTPUT_CHARS // 4, MAX_OUTPUT_CHARS * 3 // 4
    return f"{output[:head]}\n[... {len(output) - head - tail} characters cut ...]\n{output[-tail:]}"


def _close_quietly(sandbox) -> None:
    try:
        sandbox.close()
    except Exception:  # cleanup must never raise: the sandbox may already be gone
        logger.exception("closing a sandbox failed")


class DataAnalysisEnv:
    """One episode at a time on one task; TRL keeps a pool of these and calls `reset` per rollout."""

    def __init__(self, sandbox: str = "local", episode_seconds: float = EPISODE_SECONDS,
                 budget: FailureBudget | None = None):
        self._backend = sandbox
        self._episode_seconds = episode_seconds
        self._budget = budget
        self._sandbox = None
        self._finalizer = None
        self._task = None
        self._task_id = ""
        self._answer: str | None = None
        self._failure: Outcome | None = None
        self._outcome: Outcome | None = None
        self._tool_calls = 0
        self._deadline = 0.0

    # ---- episode lifecycle ------------------------------------------------------------------

    def reset(self, task_path: str, **row) -> str:
        """Open a fresh sandbox for the row's task; return the instruction TRL appends to the prompt."""
        self._close_sandbox()
        self._task, self._answer, self._failure, self._outcome, self._tool_calls = None, None, None, None, 0
        self._task_id = Path(task_path).name
        self._deadline = time.monotonic() + self._episode_seconds
        try:
            self._task = load_task(Path(task_path))
        except (OSError, ValueError) as error:  # a bad task ends its episode, not the run
            self._failure = failed(self._task_id, "task", error)
            return f"This task could not be loaded ({error}); the episode is over."
        try:
            self._sandbox = open_sandbox(self._task.path, self._backend)
            self._finalizer = weakref.finalize(self, _close_quietly, self._sandbox)
        except SandboxError as error:
            self._failure = failed(self._task_id, "sandbox", error)
        return self._task.instruction

    def _finish(self) -> Outcome:
        """End the episode and score it, once; see `finish_episode`."""
        if self._outcome is None:
            self._close_sandbox()
            if self._failure is not None:
                outcome = dataclasses.replace(self._failure, tool_calls=self._tool_calls)
            elif self._task is None:
                outcome = failed(self._task_id or "(none)", "task", "the environment was never reset with a task")
            else:
                outcome = score(self._task, self._answer, self._tool_calls)
            self._outcome = outcome
            if self._budget is not None:
                self._budget.record(outcome)
        return self._outcome

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self._close_sandbox()

    @property
    def done(self) -> bool:
        """True once the episode accepts no more tool calls (a property, so TRL does not expose it as a tool)."""
        return (
            self._sandbox is None
            or self._answer is not None
            or self._failure is not None
            or time.monotonic() > self._deadline
        )

    def _close_sandbox(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # runs _close_quietly once, then detaches
        self._sandbox = self._finalizer = None

    def _start_tool(self) -> bool:
        """Count a tool call; False (and the sandbox closed) once the episode accepts no more."""
        if self.done:
            self._close_sandbox()
            return False
        self._tool_calls += 1
        return True

    def _run(self, command: str) -> str:
        """Run a command for a tool; a dead sandbox ends the episode as not graded."""
        if not self._start_tool():
            return _EPISODE_OVER
        timeout = max(1.0, min(60.0, self._deadline - time.monotonic()))
        try:
            result = self._sandbox.exec(command, timeout=timeout)
        except SandboxError as error:
            return self._sandbox_failed(error)
        note = " (timed out)" if result.timed_out else ""
        return f"{_shortened(result.output)}\n[exit code {result.exit_code}{note}]"

    def _sandbox_failed(self, error: SandboxError) -> str:
        self._failure = failed(self._task_id, "sandbox", error)
        self._close_sandbox()
        return f"Error: the sandbox failed ({error}). The episode is over."

    # ---- tools (public methods: TRL turns each into a tool from its docstring) ----------------

    def bash(self, command: str) -> str:
        """Run a shell command in /workdir and return its output and exit code.

        Args:
            command: The shell command to run, for example `python3 -c "import pandas"`.
        """
        return self._run(command)

    def submit_solution(self, answer: str) -> str:
        """Submit the final answer: the value itself, not a command. Ends the episode.

        Args:
            answer: The answer, for example `42.5`, `Berlin`, `yes`, `a, b, c` or `2024-03-05`.
        """
        if self.done:
            return _EPISODE_OVER
        self._answer = str(answer)
        self._close_sandbox()
        return "Answer submitted."


class DataAnalysisEnvWithFileTools(DataAnalysisEnv):
    """`DataAnalysisEnv` with file tools besides bash: what the whitebox Space offers a person."""

    def read(self, path: str) -> str:
        """Read a text file.

        Args:
            path: Path of the file, absolute or relative to /workdir.
        """
        return self._run(f"cat -- {shlex.quote(path)}")

    def write(self, path: str, content: str) -> str:
        """Write a text file, replacing it if it exists.

        Args:
            path: Path of the file, absolute or relative to /workdir.
            content: The full text to write.
        """
        if not self._start_tool():
            return _EPISODE_OVER
        try:  # through the sandbox's file API: content of any size (a command line tops out at 128 KiB)
            self._sandbox.write_file(path, content)
        except SandboxError as error:
            return self._sandbox_failed(error)
        except (OSError, ValueError) as error:  # a bad path, a full disk: the model's to fix
            return f"Error: {error}"
        return f"wrote {len(content)} characters to {path}"

    def edit(self, path: str, old: str, new: str) -> str:
        """Replace one exact occurrence of a string in a text file.

        Args:
            path: Path of the file, absolute or relative to /workdir.
            old: The exact text to replace; it must occur exactly once in the file.
            new: The replacement text.
        """
        script = (
            "import sys\n"
            "path, old, new = sys.argv[1:4]\n"
            "text = open(path).read()\n"
            "count = text.count(old)\n"
            "if count != 1:\n"
            "    sys.exit(f'Error: expected exactly one match of the old text, found {count}')\n"
            "open(path, 'w').write(text.replace(old, new))\n"
            "print('edited', path)\n"
        )
        args = " ".join(shlex.quote(a) for a in (path, old, new))
        return self._run(f"python3 -c {shlex.quote(script)} {args}")

    def ls(self, path: str) -> str:
        """List a directory with sizes.

        Args:
            path: The directory, for example /home/user/input.
        """
        return self._run(f"ls -la -- {shlex.quote(path)}")

    def grep(self, pattern: str, path: str) -> str:
        """Search files for lines matching a regular expression (recursively in a directory).

        Args:
            pattern: An extended regular expression.
            path: A file or directory to search.
        """
        return self._run(f"grep -rnE -m 50 -- {shlex.quote(pattern)} {shlex.quote(path)}")

    def glob(self, pattern: str, path: str) -> str:
        """Find files whose path matches a glob pattern such as `**/*.csv`.

        Args:
            pattern: A glob pattern, relative to `path`.
            path: The directory to search from.
        """
        script = "import glob, sys; print('\\n'.join(sorted(glob.glob(sys.argv[2], root_dir=sys.argv[1], recursive=True))))"
        return self._run(f"python3 -c {shlex.quote(script)} {shlex.quote(path)} {shlex.quote(pattern)}")


def finish_episode(env: DataAnalysisEnv) -> Outcome:
    """End `env`'s episode (its sandbox closes), score it once, and return its `Outcome`.

    A function, not a method: TRL offers every public method of the environment as a tool.
    Calling it again returns the same outcome; the failure budget counts it once.
    """
    return env._finish()


def prompt_messages(instruction: str) -> list[dict]:
    """The conversation a rollout starts from: what TRL builds from a dataset row plus `reset`."""
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": instruction}]


def tool_schemas(tools: tuple[str, ...] = TOOLS) -> list[dict]:
    """The JSON schemas TRL derives from the tools, for SFT data and evaluation prompts."""
    from transformers.utils import get_json_schema

    return [get_json_schema(getattr(DataAnalysisEnvWithFileTools, name)) for name in tools]
