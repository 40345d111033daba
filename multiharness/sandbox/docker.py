"""The Docker sandbox: one container per sandbox, built from the task's environment/Dockerfile.

The image is built from `environment/` (the Dockerfile and the input files; the build context
never contains tests/ or solution/) and tagged by a hash of that folder's content, so a task is
built once per machine; or it is an image pinned by digest (`image="repo@sha256:..."`). The
container runs with no network, a read-only root filesystem, size-capped tmpfs at /workdir,
/tmp and /home/user, the input files bind-mounted read-only at /home/user/input, no
capabilities, a non-root user, and cgroup limits on memory, CPUs and processes. Each `exec` is
a `docker exec` with rlimits and an in-container `timeout -s KILL`; processes a command leaves
in the background live until `close()`, which removes the container.

Why the CLI and not the `docker` Python package: the CLI is what every Docker install has, and
the argv this module builds is plain data that the tests check without an engine.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import shutil
import subprocess
import time
import weakref
from pathlib import Path

from . import INPUT_DIR, OUTPUT_CHARS, WORKDIR, ExecResult, Limits, Sandbox, SandboxError
from ._common import (
    READ_LIMIT_BYTES,
    READ_SCRIPT,
    check_written,
    read_result,
    TIMEOUT_EXIT,
    WRITE_SCRIPT,
    input_dir,
    limited_command,
    remote_timed_out,
    sandbox_path,
    signal_exit_code,
)
from ._process import decode_tail, run_process

__all__ = ["DockerSandbox", "image_tag"]

logger = logging.getLogger(__name__)

USER = "1000:1000"
"""The container user: not root, so a command cannot change what root owns in the image."""

HOME = "/home/user"
IMAGE_REPOSITORY = "multiharness-task"
LABEL = "multiharness.sandbox=1"  # `docker ps --filter label=multiharness.sandbox` finds leftovers
_BUILD_SECONDS = 1800  # a first build downloads the base image and pip packages
_DOCKER_SECONDS = 120  # run, rm, image inspect: quick unless the engine is overloaded
_GRACE_SECONDS = 15  # host-side backstop beyond the in-container timeout


class DockerSandbox(Sandbox):
    """A container for one task; see the module docstring."""

    def __init__(self, task_dir: Path, limits: Limits, image: str | None = None):
        self._limits = limits
        self._docker = shutil.which("docker")
        if self._docker is None:
            raise SandboxError("The docker CLI is not installed; install Docker or choose --sandbox local.")
        if image is not None and "@sha256:" not in image:
            raise SandboxError(f"Docker image {image!r} is not pinned; give it as repo@sha256:<digest>.")
        self._image = image or _build_image(self._docker, task_dir)
        self._name = f"multiharness-{secrets.token_hex(6)}"
        self._finalizer = weakref.finalize(self, _remove, self._docker, self._name)
        started = _docker(self._docker, run_argv(self._name, self._image, input_dir(task_dir), limits))
        if started.returncode != 0:
            self._finalizer()
            raise SandboxError(
                f"docker run failed for image {self._image} (exit code {started.returncode}): "
                f"{started.stderr.strip()[-2000:]}. Check that the Docker engine runs (docker info)."
            )

    def exec(self, command: str, timeout: float | None = None) -> ExecResult:
        timeout = self._limits.timeout_s if timeout is None else timeout
        script = limited_command(command, timeout, self._limits, nproc=False, tail_bytes=None)
        start = time.monotonic()
        result = self._run(script, [], timeout=timeout + _GRACE_SECONDS, keep_bytes=4 * OUTPUT_CHARS)
        exit_code = signal_exit_code(result.returncode)
        timed_out = result.timed_out or remote_timed_out(exit_code, time.monotonic() - start, timeout)
        return ExecResult(
            output=decode_tail(result.tail, result.total_bytes, OUTPUT_CHARS),
            exit_code=TIMEOUT_EXIT if timed_out else exit_code,
            timed_out=timed_out,
        )

    def read_file(self, path: str) -> str:
        path = sandbox_path(path)
        result = self._run(READ_SCRIPT, [path], timeout=self._limits.timeout_s, keep_bytes=READ_LIMIT_BYTES + 1)
        return read_result(path, result)

    def write_file(self, path: str, content: str) -> None:
        path = sandbox_path(path)
        result = self._run(
            WRITE_SCRIPT, [path], timeout=self._limits.timeout_s, keep_bytes=4096, stdin=content.encode()
        )
        check_written(path, result)

    def close(self) -> None:
        self._finalizer()

    def _run(self, script: str, args: list[str], *, timeout: float, keep_bytes: int, stdin: bytes | None = None):
        if not self._finalizer.alive:
            raise SandboxError("The sandbox is closed; open a new one with open_sandbox().")
        argv = [self._docker, *exec_argv(self._name, script, args, interactive=stdin is not None)]
        # The docker CLI needs the host's DOCKER_HOST / config; nothing of it reaches the container.
        result = run_process(argv, env=dict(os.environ), timeout=timeout, keep_bytes=keep_bytes, stdin=stdin)
        if result.returncode in (125, 126) and not _running(self._docker, self._name):
            self._finalizer()
            raise SandboxError(f"The container {self._name} is gone; open a new sandbox.")
        return result


# ----------------------------------------------------------------------------------------------
# The command lines (plain functions: the tests check them without an engine)
# ----------------------------------------------------------------------------------------------


def image_tag(task_dir: Path) -> str:
    """`multiharness-task:<hash>`: the hash of every file under environment/ (paths and bytes)."""
    digest = hashlib.sha256()
    environment = task_dir / "environment"
    for path in sorted(p for p in environment.rglob("*") if p.is_file()):
        digest.update(path.relative_to(environment).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return f"{IMAGE_REPOSITORY}:{digest.hexdigest()[:16]}"


def build_argv(tag: str, task_dir: Path) -> list[str]:
    """`docker build` of the task's environment/ folder (never the whole task: no tests, no gold)."""
    return ["build", "--quiet", "--tag", tag, str(task_dir / "environment")]


def run_argv(name: str, image: str, inputs: Path | None, limits: Limits) -> list[str]:
    """`docker run` of an idle container that commands are then exec'd into."""
    disk = f"size={limits.disk_mb}m"
    argv = ["run", "--detach", "--name", name, "--label", LABEL, "--init"]
    argv += ["--network", "none", "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
    argv += ["--memory", f"{limits.memory_mb}m", "--memory-swap", f"{limits.memory_mb}m"]
    argv += ["--cpus", str(limits.cpus), "--pids-limit", str(limits.processes)]
    argv += ["--ulimit", f"fsize={limits.file_size_mb * 1024 * 1024}", "--ulimit", "core=0"]
    argv += ["--read-only", "--user", USER, "--workdir", WORKDIR]
    argv += ["--tmpfs", f"{WORKDIR}:rw,{disk},mode=1777", "--tmpfs", f"/tmp:rw,{disk},mode=1777"]
    argv += ["--tmpfs", f"{HOME}:rw,{disk},mode=1777"]
    if inputs is not None:
        argv += ["--mount", f"type=bind,source={inputs.resolve()},target={INPUT_DIR},readonly"]
    argv += ["--env", f"HOME={HOME}", "--env", "LANG=C.UTF-8"]
    argv += ["--entrypoint", "sleep", image, "infinity"]
    return argv


def exec_argv(name: str, script: str, args: list[str], *, interactive: bool = False) -> list[str]:
    """`docker exec` of a bash script (with its positional arguments) in /workdir."""
    stdin = ["--interactive"] if interactive else []
    return ["exec", *stdin, "--workdir", WORKDIR, name, "bash", "-c", script, "bash", *args]


# ----------------------------------------------------------------------------------------------
# Talking to the engine
# ----------------------------------------------------------------------------------------------


def _docker(docker: str, argv: list[str], timeout: float = _DOCKER_SECONDS) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([docker, *argv], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as error:
        raise SandboxError(
            f"`docker {argv[0]}` did not answer in {timeout:.0f} s; check the engine (docker info)."
        ) from error


def _build_image(docker: str, task_dir: Path) -> str:
    dockerfile = task_dir / "environment" / "Dockerfile"
    if not dockerfile.is_file():
        raise SandboxError(f"{dockerfile} does not exist: the docker backend builds the task from it.")
    tag = image_tag(task_dir)
    if _docker(docker, ["image", "inspect", tag]).returncode == 0:
        return tag
    logger.info("building %s from %s", tag, dockerfile)
    built = _docker(docker, build_argv(tag, task_dir), timeout=_BUILD_SECONDS)
    if built.returncode != 0:
        raise SandboxError(f"docker build of {dockerfile} failed: {built.stderr.strip()[-2000:]}")
    return tag


def _running(docker: str, name: str) -> bool:
    state = _docker(docker, ["container", "inspect", "--format", "{{.State.Running}}", name])
    return state.returncode == 0 and state.stdout.strip() == "true"


def _remove(docker: str, name: str) -> None:
    try:
        removed = _docker(docker, ["rm", "--force", name])
        if removed.returncode != 0 and "No such container" not in removed.stderr:
            logger.warning("could not remove container %s: %s", name, removed.stderr.strip())
    except SandboxError:  # cleanup must not raise; `docker ps --filter label=...` finds it
        logger.warning("could not remove container %s: the engine did not answer", name)
