"""Sandboxes: where the model's commands run, away from the host and from the gold answer.

`open_sandbox(task_dir, backend)` opens a sandbox for one task and returns a `Sandbox`: run
shell commands in it with `exec`, move text in and out with `read_file` / `write_file`, and
`close` it (or use it as a context manager). Three backends behave the same way:

- `local` (default): bubblewrap namespaces on this machine (`multiharness/sandbox/local.py`);
- `docker`: a container built from the task's `environment/Dockerfile` (`docker.py`);
- `daytona`: a Daytona cloud sandbox (`daytona.py`).

Rules every backend keeps:

- the working directory is `/workdir` (writable, empty at the start, cwd of every command);
  the task's input files are at `/home/user/input`, read-only;
- the task's `tests/` (grader and gold) and `solution/` are never copied or mounted;
- commands have no network and run under limits (`Limits`: time, CPU, memory, processes,
  file size, disk); a command past its time is killed and returns `timed_out=True`;
- the output of a command is stdout and stderr together, bytes that are not UTF-8 replaced,
  cut to its last `OUTPUT_CHARS` characters (starting with a one-line note when cut);
- processes a command leaves in the background end with the command (local) or at `close()`
  (docker, daytona), never later;
- paths given to `read_file` / `write_file` are absolute inside the sandbox or relative to
  `/workdir`, and are resolved inside the sandbox, so a symlink made by a command can never
  point them at the host;
- `close()` is idempotent and removes everything: files, processes, the container;
- extra host folders enter only when the caller names them (`mounts`, local backend), read-only:
  a harness CLI's install, or the folder of the capture proxy's socket, never a checkout;
- a sandbox that failed to start or died raises `SandboxError`; callers record the episode
  as not graded (reward None), never as a wrong answer.
"""

from __future__ import annotations

import dataclasses
import posixpath
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..layout import INPUT_DIR, WORKDIR

__all__ = [
    "BACKENDS",
    "OUTPUT_CHARS",
    "WORKDIR",
    "INPUT_DIR",
    "ExecResult",
    "Limits",
    "Sandbox",
    "SandboxError",
    "open_sandbox",
]

BACKENDS = ("local", "docker", "daytona")
"""The values `open_sandbox(backend=...)` and the scripts' `--sandbox` flag accept."""

OUTPUT_CHARS = 16_000
"""Characters of output a command returns (the end of it): enough for a table preview and a
traceback, small enough for a 135M model's context."""



class SandboxError(RuntimeError):
    """The sandbox could not start or died; the episode is not graded (infrastructure failure)."""


@dataclass(frozen=True)
class ExecResult:
    """What one command did."""

    output: str
    """Stdout and stderr interleaved, invalid UTF-8 replaced, the last `OUTPUT_CHARS` characters."""
    exit_code: int
    """Exit status; 128+N when a signal N ended it, as a shell reports (137 after a timeout kill)."""
    timed_out: bool
    """True when the command ran past its time limit and was killed."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of a sandbox; `open_sandbox(..., **limits)` sets any of them by name."""

    timeout_s: float = 60.0
    """Wall-clock seconds per command when `exec` is given no timeout."""
    cpu_s: int = 600
    """CPU seconds per process: a backstop for a busy loop run with a long timeout."""
    memory_mb: int = 4096
    """Memory in MiB: address space per process (local), the whole sandbox (docker, daytona)."""
    processes: int = 256
    """Processes and threads alive at once: contains a fork bomb."""
    file_size_mb: int = 1024
    """Largest file a command may write, in MiB."""
    disk_mb: int = 1024
    """MiB a command may store in each writable place (/workdir, /tmp, the home directory)."""
    cpus: float = 1.0
    """CPU cores (docker, daytona; the local backend has no CPU-share control without cgroups)."""


class Sandbox(ABC):
    """One task's sandbox. Use it as a context manager, or call `close()` on every path."""

    @abstractmethod
    def exec(self, command: str, timeout: float | None = None) -> ExecResult:
        """Run `command` with bash in /workdir; `timeout` in seconds (default: `Limits.timeout_s`)."""

    @abstractmethod
    def read_file(self, path: str) -> str:
        """The text of a file in the sandbox (FileNotFoundError when it does not exist)."""

    @abstractmethod
    def write_file(self, path: str, content: str) -> None:
        """Create or replace a text file in the sandbox, making its parent directories."""

    @abstractmethod
    def close(self) -> None:
        """Stop everything and delete everything the sandbox made; safe to call twice."""

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def open_sandbox(
    task_dir: str | Path,
    backend: str = "local",
    *,
    mounts: Mapping[str, str | Path] | None = None,
    scratch: Sequence[str] = (),
    **limits,
) -> Sandbox:
    """Open a sandbox with the task's input files; `limits` are `Limits` fields by name.

    `mounts` maps absolute sandbox paths to host paths mounted there read-only, and `scratch`
    names more empty writable places, size-capped like /workdir (local backend only): how
    `multiharness.harnesses` brings a harness CLI and the proxy's socket in, and how the Harbor
    environment makes Harbor's /logs, /tests and /solution. Raises ValueError for an unknown
    backend, limit, mount or scratch place, SandboxError when it cannot start.
    """
    if backend not in BACKENDS:
        raise ValueError(f"Unknown sandbox backend {backend!r}. Expected one of {list(BACKENDS)}.")
    known = [field.name for field in dataclasses.fields(Limits)]
    unknown = sorted(set(limits) - set(known))
    if unknown:
        raise ValueError(f"Unknown sandbox limit(s) {unknown}. Expected any of {known}.")
    task_dir = Path(task_dir)
    if not task_dir.is_dir():
        raise SandboxError(
            f"Task directory {str(task_dir)!r} does not exist; build the tasks first "
            "(python -m multiharness tasks build) or pass the right path."
        )
    if (mounts or scratch) and backend != "local":
        raise ValueError(f"mounts and scratch places are supported by the local sandbox only, not {backend!r}.")
    checked = {}
    for target, source in (mounts or {}).items():
        target = _own_place(target, "mount at")
        if not Path(source).exists():
            raise ValueError(f"Cannot mount {str(source)!r} at {target}: it does not exist on the host.")
        checked[target] = Path(source)
    scratch = tuple(_own_place(place, "make a scratch place at") for place in scratch)
    # Imported here so that choosing one backend never needs another backend's packages.
    if backend == "local":
        from .local import LocalSandbox

        return LocalSandbox(task_dir, Limits(**limits), checked, scratch)
    if backend == "docker":
        from .docker import DockerSandbox as backend_class
    else:
        from .daytona import DaytonaSandbox as backend_class
    return backend_class(task_dir, Limits(**limits))


def _own_place(target: str, what: str) -> str:
    """`target` normalised, or ValueError when it is relative or falls on the sandbox's own places."""
    target = posixpath.normpath(target)
    if not target.startswith("/") or target == "/" or any(
        target == place or target.startswith(place + "/") or place.startswith(target + "/")
        for place in (WORKDIR, INPUT_DIR, "/usr", "/opt/venv", "/proc", "/dev", "/etc")
    ):
        raise ValueError(
            f"Cannot {what} {target!r}: give an absolute path outside {WORKDIR}, {INPUT_DIR} and the "
            "system folders, e.g. /opt/harness."
        )
    return target
