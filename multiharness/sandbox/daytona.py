"""The Daytona sandbox: a cloud sandbox per task, through the `daytona` SDK (pinned 0.226.1).

The sandbox's image is the task's environment/Dockerfile, sent with its build context only
(`Image.from_dockerfile(..., strict_context=True)`: a COPY that reaches outside environment/,
for example into tests/, is refused), or an image pinned by digest (`image="repo@sha256:..."`).
It gets 1 CPU, `memory_mb` of memory and 5 GiB of disk, no network (`network_block_all`),
labels that say what made it, and an auto-stop interval with immediate delete on stop, so a
crashed run leaves nothing billed for long. The input files are uploaded to /home/user/input
and made read-only (`chmod a-w`; a command running as the image's root could undo that: Daytona
has no read-only mounts). `close()` deletes the sandbox, also when opening failed half-way.

Commands run through `sandbox.process.exec` as a bash script that sets rlimits, kills the
command at its deadline (`timeout -s KILL`) and keeps only the end of the output inside the
sandbox, because the SDK returns the whole output as one string.

Requires `pip install daytona==0.226.1` and `DAYTONA_API_KEY` (plus `DAYTONA_API_URL` /
`DAYTONA_TARGET` if not the defaults), read by the SDK from the environment.
"""

from __future__ import annotations

import logging
import math
import os
import shlex
import time
import weakref
from pathlib import Path

from . import INPUT_DIR, OUTPUT_CHARS, WORKDIR, ExecResult, Limits, Sandbox, SandboxError
from ._common import TIMEOUT_EXIT, input_dir, limited_command, remote_timed_out, sandbox_path
from ._process import decode_tail

__all__ = ["DaytonaSandbox", "create_params"]

logger = logging.getLogger(__name__)

DISK_GB = 5
"""Disk of the whole sandbox: the image's own files (Python, pandas, pyarrow) count against it."""

AUTO_STOP_MINUTES = 15
"""Stop (and then delete) a sandbox nobody used for this long: longer than one episode (10 min)."""

CREATE_SECONDS = 600
"""The first sandbox of a task builds its image on Daytona's side; later ones start in seconds."""

LABELS = {"app": "multiharness"}
_TAIL_BYTES = 4 * OUTPUT_CHARS  # bytes kept inside the sandbox: enough for OUTPUT_CHARS characters
_GRACE_SECONDS = 30  # SDK request timeout beyond the in-sandbox deadline


class DaytonaSandbox(Sandbox):
    """A Daytona sandbox for one task; see the module docstring. `client` is a `daytona.Daytona`."""

    def __init__(self, task_dir: Path, limits: Limits, image: str | None = None, client=None):
        self._limits = limits
        params = create_params(task_dir, limits, image)
        if client is None:
            client = _client()
        self._sandbox = None
        try:
            self._sandbox = client.create(params, timeout=CREATE_SECONDS)
        except Exception as error:  # any SDK or transport error: the sandbox did not start
            # A create that timed out after the sandbox existed reports its id: delete it.
            _delete_by_id(client, getattr(error, "sandbox_id", None))
            raise SandboxError(f"Daytona could not create a sandbox for {task_dir}: {error}") from error
        self._finalizer = weakref.finalize(self, _delete, self._sandbox)
        try:
            self._prepare(task_dir)
        except Exception as error:  # a half-made sandbox is deleted, whatever went wrong
            self._finalizer()
            raise SandboxError(f"Daytona sandbox {self._sandbox.id} could not be prepared: {error}") from error

    def exec(self, command: str, timeout: float | None = None) -> ExecResult:
        timeout = self._limits.timeout_s if timeout is None else timeout
        script = limited_command(command, timeout, self._limits, nproc=True, tail_bytes=_TAIL_BYTES)
        start = time.monotonic()
        response = self._call(
            lambda: self._sandbox.process.exec(
                f"bash -c {shlex.quote(script)}", cwd=WORKDIR, timeout=math.ceil(timeout) + _GRACE_SECONDS
            )
        )
        exit_code = int(response.exit_code)
        timed_out = remote_timed_out(exit_code, time.monotonic() - start, timeout)
        output = (response.result or "").encode()
        return ExecResult(
            output=decode_tail(output, len(output), OUTPUT_CHARS),
            exit_code=TIMEOUT_EXIT if timed_out else exit_code,
            timed_out=timed_out,
        )

    def read_file(self, path: str) -> str:
        from daytona import DaytonaNotFoundError

        path = sandbox_path(path)
        try:
            data = self._call(lambda: self._sandbox.fs.download_file(path), missing=DaytonaNotFoundError)
        except DaytonaNotFoundError as error:
            raise FileNotFoundError(f"No such file in the sandbox: {path}") from error
        return data.decode("utf-8", errors="replace")

    def write_file(self, path: str, content: str) -> None:
        path = sandbox_path(path)
        made = self.exec(f"mkdir -p -- {shlex.quote(os.path.dirname(path))}")
        if made.exit_code != 0:
            raise OSError(f"Could not write {path} in the sandbox: {made.output}")
        self._call(lambda: self._sandbox.fs.upload_file(content.encode(), path))

    def close(self) -> None:
        self._finalizer()

    # ---- helpers --------------------------------------------------------------------------------

    def _prepare(self, task_dir: Path) -> None:
        """Make /workdir and /home/user/input, upload the inputs, make them read-only."""
        from daytona import FileUpload

        inputs = input_dir(task_dir)
        files = sorted(p for p in inputs.rglob("*") if p.is_file()) if inputs is not None else []
        targets = [f"{INPUT_DIR}/{p.relative_to(inputs).as_posix()}" for p in files]
        folders = sorted({WORKDIR, INPUT_DIR, *(os.path.dirname(t) for t in targets)})
        made = self._sandbox.process.exec("mkdir -p -- " + " ".join(shlex.quote(f) for f in folders))
        if int(made.exit_code) != 0:
            raise SandboxError(f"mkdir {folders} failed: {made.result}")
        if files:
            self._sandbox.fs.upload_files([FileUpload(str(p), t) for p, t in zip(files, targets)])
        locked = self._sandbox.process.exec(f"chmod -R a-w {INPUT_DIR}")
        if int(locked.exit_code) != 0:
            raise SandboxError(f"chmod of {INPUT_DIR} failed: {locked.result}")

    def _call(self, request, missing: type[BaseException] | None = None):
        """One SDK request; an SDK error means the sandbox is unusable (except `missing`)."""
        if not self._finalizer.alive:
            raise SandboxError("The sandbox is closed; open a new one with open_sandbox().")
        try:
            return request()
        except Exception as error:
            if missing is not None and isinstance(error, missing):
                raise
            raise SandboxError(f"Daytona sandbox {self._sandbox.id} failed: {error}") from error


def create_params(task_dir: Path, limits: Limits, image: str | None = None):
    """The SDK's `CreateSandboxFromImageParams` for a task (a plain function the tests check)."""
    try:
        from daytona import CreateSandboxFromImageParams, DaytonaError, Image, Resources
    except ImportError as error:
        raise SandboxError("The daytona backend needs the SDK: pip install daytona==0.226.1 (./install.sh).") from error
    if image is None:
        dockerfile = task_dir / "environment" / "Dockerfile"
        if not dockerfile.is_file():
            raise SandboxError(f"{dockerfile} does not exist: the daytona backend builds the task from it.")
        try:
            image = Image.from_dockerfile(dockerfile, strict_context=True)
        except DaytonaError as error:  # e.g. a COPY of ../tests: the gold must never be sent
            raise SandboxError(f"{dockerfile} cannot be used: {error}. Copy only from environment/.") from error
    elif "@sha256:" not in image:
        raise SandboxError(f"Daytona image {image!r} is not pinned; give it as repo@sha256:<digest>.")
    return CreateSandboxFromImageParams(
        image=image,
        resources=Resources(cpu=math.ceil(limits.cpus), memory=math.ceil(limits.memory_mb / 1024), disk=DISK_GB),
        labels={**LABELS, "task": task_dir.name},
        env_vars={"LANG": "C.UTF-8"},
        network_block_all=True,
        auto_stop_interval=AUTO_STOP_MINUTES,
        auto_delete_interval=0,  # delete as soon as it stops
    )


def _client():
    if not os.environ.get("DAYTONA_API_KEY"):
        raise SandboxError("The daytona backend needs DAYTONA_API_KEY in the environment (from app.daytona.io).")
    from daytona import Daytona

    return Daytona()


def _delete(sandbox) -> None:
    try:
        sandbox.delete()
    except Exception:  # cleanup must not raise; the auto-stop + auto-delete interval removes it later
        logger.warning("could not delete Daytona sandbox %s; it stops and deletes itself after %d min",
                       sandbox.id, AUTO_STOP_MINUTES, exc_info=True)  # fmt: skip


def _delete_by_id(client, sandbox_id: str | None) -> None:
    if sandbox_id is None:
        return
    try:
        client.delete(client.get(sandbox_id))
    except Exception:  # cleanup after a failed create; auto-stop removes it otherwise
        logger.warning("could not delete Daytona sandbox %s after a failed create", sandbox_id, exc_info=True)
