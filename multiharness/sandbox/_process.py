"""Run one host process with a deadline and keep only the end of its output.

The local and docker backends both start a host process per command (`nsenter ...` or
`docker exec ...`). `subprocess.run(capture_output=True)` would hold everything a command
prints in memory (`yes | head -c 3G` is 3 GB), so the output is streamed through a fixed-size
tail buffer instead. On timeout the whole process group is killed; the backend makes sure that
this also ends everything the command started.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["ProcessResult", "run_process", "kill_group", "decode_tail"]

_CHUNK = 1 << 20
_PIPE_SIZE = 1 << 20  # a bigger pipe means fewer wake-ups when a command prints a lot
_TRUNCATED = "[output truncated: these are the last characters]\n"


@dataclass(frozen=True)
class ProcessResult:
    """What a host process did."""

    tail: bytes
    """The last bytes it wrote to stdout or stderr."""
    total_bytes: int
    """How many bytes it wrote in all."""
    returncode: int
    """Its return code as `subprocess` reports it (-N when killed by signal N)."""
    timed_out: bool
    """True when it ran past the deadline and was killed."""


def run_process(
    argv: list[str],
    *,
    env: dict[str, str],
    timeout: float,
    keep_bytes: int,
    stdin: bytes | None = None,
    on_start: Callable[[subprocess.Popen], None] | None = None,
    on_exit: Callable[[subprocess.Popen], None] | None = None,
) -> ProcessResult:
    """Run `argv` in its own process group; stream its output and keep the last `keep_bytes`.

    `on_start` / `on_exit` let a backend track running processes (to kill them on close).
    """
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,  # one process group to kill on timeout
    )
    if on_start is not None:
        on_start(process)
    try:
        try:
            fcntl.fcntl(process.stdout.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_SIZE)
        except OSError:  # the pipe keeps its default size; only slower
            pass
        tail = bytearray()
        total = [0]

        def read_output() -> None:
            fd = process.stdout.fileno()
            while chunk := os.read(fd, _CHUNK):
                total[0] += len(chunk)
                tail.extend(chunk)
                if len(tail) > 2 * keep_bytes:  # trim now and then: amortised O(1) per byte
                    del tail[:-keep_bytes]

        def write_input() -> None:
            try:
                process.stdin.write(stdin)
                process.stdin.close()
            except (BrokenPipeError, OSError):  # the command exited without reading it all
                pass

        threads = [threading.Thread(target=read_output, daemon=True)]
        if stdin is not None:
            threads.append(threading.Thread(target=write_input, daemon=True))
        for thread in threads:
            thread.start()
        timed_out = False
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(process)
            process.wait()
        for thread in threads:
            # Everything that held the pipe is dead once the group is gone; the bound only
            # guards against a process the backend could not reach.
            thread.join(timeout=10)
        process.stdout.close()
        return ProcessResult(bytes(tail[-keep_bytes:]), total[0], process.returncode, timed_out)
    finally:
        if process.poll() is None:
            kill_group(process)
            process.wait()
        if on_exit is not None:
            on_exit(process)


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL the process group that `run_process` started (nothing happens if it is gone)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # already exited and reaped
        pass


def decode_tail(tail: bytes, total_bytes: int, chars: int) -> str:
    """The last `chars` characters of the output, invalid UTF-8 replaced, a note when cut."""
    text = tail.decode("utf-8", errors="replace")
    if total_bytes > len(tail) or len(text) > chars:
        if total_bytes > len(tail):
            # The cut may have split a multi-byte character: drop the first, maybe partial, one.
            text = text[1:]
        text = _TRUNCATED + text[-(chars - len(_TRUNCATED)) :]
    return text
