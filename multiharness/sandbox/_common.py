"""Pieces every sandbox backend shares: paths, the shell scripts run inside, exit codes.

Written once here so that the three backends agree on what a path means, how a file is read
or written through the sandbox, and how a timeout shows in `ExecResult`.
"""

from __future__ import annotations

import posixpath
import shlex
from pathlib import Path

from . import WORKDIR, Limits

__all__ = [
    "input_dir",
    "sandbox_path",
    "signal_exit_code",
    "limited_command",
    "remote_timed_out",
    "READ_SCRIPT",
    "WRITE_SCRIPT",
    "MISSING_FILE_EXIT",
    "READ_LIMIT_BYTES",
    "read_result",
    "check_written",
    "TIMEOUT_EXIT",
]

# read_file / write_file run these inside the sandbox (local, docker), so that a path resolves with
# the sandbox's own view of the filesystem and its own permissions, never the host's: a symlink a
# command made (`ln -s /etc/passwd x`) points into the sandbox, not at the host.
READ_SCRIPT = 'test -f "$1" || { echo "No such file: $1" >&2; exit 44; }; exec cat -- "$1"'
WRITE_SCRIPT = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"'
MISSING_FILE_EXIT = 44
READ_LIMIT_BYTES = 16 * 1024 * 1024  # read_file is for answers and scripts, not for data dumps

TIMEOUT_EXIT = 137
"""Exit code of a command killed at its deadline (SIGKILL, as a shell reports it)."""


def input_dir(task_dir: Path) -> Path | None:
    """The task's input files on the host (`environment/input`), or None when it has none."""
    path = task_dir / "environment" / "input"
    return path if path.is_dir() else None


def sandbox_path(path: str) -> str:
    """An absolute, normalised path inside the sandbox: relative paths start at /workdir."""
    if not path or "\0" in path:
        raise ValueError(f"Invalid path {path!r}: give a file name, absolute or relative to {WORKDIR}.")
    return posixpath.normpath(posixpath.join(WORKDIR, path))


def signal_exit_code(returncode: int) -> int:
    """Python's -N for "killed by signal N" as the shell's 128+N."""
    return 128 - returncode if returncode < 0 else returncode


def limited_command(command: str, timeout_s: float, limits: Limits, *, nproc: bool, tail_bytes: int | None) -> str:
    """A bash script for backends that run commands through a container's shell (docker, daytona).

    It sets the per-process rlimits, kills the command's process group at the deadline with
    `timeout -s KILL` (exit 137), and with `tail_bytes` keeps only the end of the output inside
    the sandbox, for APIs that return the whole output at once. RLIMIT_NPROC (`nproc`) only where
    no cgroup limits processes: the kernel counts it per host uid, across containers.
    """
    kib = 1024
    ulimits = f"-t {limits.cpu_s} -f {limits.file_size_mb * kib} -v {limits.memory_mb * kib} -c 0"
    if nproc:
        ulimits += f" -u {limits.processes}"
    run = f"timeout -s KILL {max(1, round(timeout_s))} bash -c {shlex.quote(command)} < /dev/null 2>&1"
    if tail_bytes is None:
        return f"ulimit {ulimits} && {run}"
    return f"ulimit {ulimits} && {{ {run} | tail -c {tail_bytes}; exit ${{PIPESTATUS[0]}}; }}"


def remote_timed_out(exit_code: int, elapsed_s: float, timeout_s: float) -> bool:
    """Whether a `limited_command` ended at its deadline (137 late) rather than being killed early."""
    return exit_code == TIMEOUT_EXIT and elapsed_s >= max(1, round(timeout_s)) - 0.5


def read_result(path: str, result) -> str:
    """The text of a `READ_SCRIPT` run, or the error a caller of `read_file` should see."""
    if result.returncode == MISSING_FILE_EXIT:
        raise FileNotFoundError(f"No such file in the sandbox: {path}")
    if result.returncode != 0:
        raise OSError(f"Could not read {path} in the sandbox: {result.tail[-2000:].decode(errors='replace')}")
    if result.total_bytes > READ_LIMIT_BYTES:
        raise OSError(f"{path} is larger than {READ_LIMIT_BYTES} bytes; read a part of it with exec.")
    return result.tail.decode("utf-8", errors="replace")


def check_written(path: str, result) -> None:
    """Raise the error of a failed `WRITE_SCRIPT` run."""
    if result.returncode != 0:
        raise OSError(f"Could not write {path} in the sandbox: {result.tail[-2000:].decode(errors='replace')}")
