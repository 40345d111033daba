"""The local sandbox: bubblewrap namespaces on this machine, no container engine needed.

How a sandbox is built:

- On open, one `bwrap` process (the "holder") sets up the sandbox's namespaces (mount, network,
  pid, ipc, uts; a user namespace too when the host user is not root) and then just waits on a
  pipe from this process. Its filesystem: /usr, /bin, /lib* and a few /etc files read-only; the
  Python of `install.sh` (pandas, pyarrow, numpy) read-only at /opt/venv; the task's
  `environment/input` read-only at /home/user/input; size-capped tmpfs at /workdir, /tmp,
  /home/user and /dev/shm. Nothing else of the host exists inside: no /root, no /home, no
  project checkout, no caches or tokens, and never the task's tests/ or gold. A caller may
  add read-only `mounts` (a harness's install, the folder of the capture proxy's socket) and
  more size-capped writable `scratch` places (Harbor's /logs, /tests, /solution).
- Each `exec` enters the holder's namespaces with `nsenter`, starts a fresh pid namespace with
  `unshare --kill-child` (nested in the holder's), drops to the sandbox user without
  capabilities (`setpriv`, no_new_privs), sets rlimits (`prlimit`) and runs `bash -c command`
  in /workdir with a clean environment (no host variable, so no HF_TOKEN or API key). When the
  command's shell ends, its pid namespace ends and the kernel kills whatever it left running
  (`sleep 300 &`, `setsid`, `nohup`); a timeout kills the whole group the same way.
- `close()` kills the holder's pid namespace, and with it every command's; the tmpfs mounts
  vanish with it, so no file of the sandbox is ever on the host disk and nothing leaks into
  the next episode. If this Python process dies instead, the holder reads EOF and ends too.
- The sandbox user: as root, a random unprivileged uid per sandbox; as a normal user, uid 0 of
  the sandbox's user namespace (the host user itself, with every capability dropped).

Limits and what enforces them here (measured on a root container without writable cgroups):

- time: the wall-clock deadline of `exec`, then SIGKILL of the process group and namespace;
- memory: RLIMIT_AS per process (a process that asks for more gets MemoryError / ENOMEM);
  without cgroups there is no limit on the sum, which `processes` bounds;
- processes: RLIMIT_NPROC. The kernel counts it per user and never applies it to host uid 0,
  so as root every sandbox runs as its own unprivileged uid (`setpriv --reuid`); as a normal
  user the count is per user namespace, so each sandbox has its own budget either way;
- files and disk: RLIMIT_FSIZE per file, and the tmpfs size of each writable place. A tmpfs
  (not a host temp dir) because it is the one quota a user without privileges can set; its
  pages are memory, so `disk_mb` also bounds the RAM it can take;
- network: a network namespace with only its own loopback (the host's 127.0.0.1 is not it);
- CPU: RLIMIT_CPU per process; no CPU-share limit (`Limits.cpus`) without cgroups.

Why by hand: no maintained Python package runs a command in a reusable unprivileged sandbox
with these limits; bubblewrap (Flatpak's sandbox) and util-linux do the isolation, this module
only wires them. Requires bubblewrap >= 0.8 (`apt-get install bubblewrap`) and util-linux.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import threading
import time
import weakref
from pathlib import Path

from .. import paths
from . import INPUT_DIR, OUTPUT_CHARS, WORKDIR, ExecResult, Limits, Sandbox, SandboxError
from ._common import (
    READ_LIMIT_BYTES,
    READ_SCRIPT,
    WRITE_SCRIPT,
    check_written,
    read_result,
    input_dir,
    sandbox_path,
    signal_exit_code,
)
from ._process import decode_tail, kill_group, run_process

__all__ = ["LocalSandbox"]

HOME = "/home/user"
"""The sandbox user's home: writable, holds the read-only input directory."""

VENV = "/opt/venv"
"""Where the sandbox Python (`paths.SANDBOX_ENV_DIR`) is mounted."""

ENV = {
    "PATH": f"{VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": HOME,
    "USER": "user",
    "LOGNAME": "user",
    "SHELL": "/bin/bash",
    "LANG": "C.UTF-8",
    "TMPDIR": "/tmp",
    "VIRTUAL_ENV": VENV,
}
"""The whole environment of a command: nothing is inherited from the host."""

_TOOLS = ("bwrap", "nsenter", "unshare", "setpriv", "prlimit")
_STOP_SECONDS = 10.0
_START_SECONDS = 20.0  # bwrap sets up in milliseconds; allow for a loaded machine
# As root, each sandbox runs as a random uid far above real users and the subordinate-uid ranges
# of rootless containers (100000 + 65536*n), so no other process shares its RLIMIT_NPROC count.
_ROOT_UID_BASE = 2_000_000_000
_ROOT_UID_SPAN = 100_000_000
# The pid namespace's first process: runs the command's shell as its child, so the shell is not
# pid 1 (which ignores `kill -9 $$` from inside) and its exit ends the namespace. Its own stderr
# is closed so that bash's "Killed" job notice never lands in the output.
_INIT = 'exec 3>&2 2>/dev/null; /bin/bash -c "$@" 2>&3 3>&-'
_HOST_ETC = ("alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime")
_DEVICES = ("null", "zero", "full", "random", "urandom")


class LocalSandbox(Sandbox):
    """A bubblewrap sandbox for one task; see the module docstring for how it is built."""

    def __init__(self, task_dir: Path, limits: Limits, mounts: dict[str, Path] | None = None,
                 scratch: tuple[str, ...] = ()):
        self._limits = limits
        self._tools = _find_tools()
        env_dir = paths.SANDBOX_ENV_DIR
        if not (env_dir / "bin" / "python3").exists():
            raise SandboxError(
                f"The sandbox Python is missing at {env_dir} (a venv with pandas, pyarrow and "
                "numpy). Run ./install.sh to create it."
            )
        self._rootless = os.geteuid() != 0
        # The uid commands run as: uid 0 of the sandbox's user namespace (the host user, without
        # capabilities) as a normal user; as root, a uid of its own (see RLIMIT_NPROC above).
        self._uid = 0 if self._rootless else _ROOT_UID_BASE + secrets.randbelow(_ROOT_UID_SPAN)
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen] = set()
        self._holder, self._pid = _start_holder(
            self._tools["bwrap"], task_dir, env_dir, limits, self._uid, self._rootless, mounts or {}, scratch
        )
        self._finalizer = weakref.finalize(self, _stop, self._holder, self._pid, self._running)
        if not self._rootless:
            try:  # the tmpfs were made by root; hand them to the sandbox user
                for place in (WORKDIR, HOME, *scratch):
                    os.chown(f"/proc/{self._pid}/root{place}", self._uid, self._uid)
            except OSError as error:
                self._finalizer()
                raise SandboxError(f"Could not prepare the sandbox's {place}: {error}") from error

    # ---- the interface ------------------------------------------------------------------------

    def exec(self, command: str, timeout: float | None = None) -> ExecResult:
        result = self._run(command, timeout=self._limits.timeout_s if timeout is None else timeout)
        return ExecResult(
            output=decode_tail(result.tail, result.total_bytes, OUTPUT_CHARS),
            exit_code=signal_exit_code(result.returncode),
            timed_out=result.timed_out,
        )

    def read_file(self, path: str) -> str:
        path = sandbox_path(path)
        result = self._run(READ_SCRIPT, args=[path], keep_bytes=READ_LIMIT_BYTES + 1)
        return read_result(path, result)

    def write_file(self, path: str, content: str) -> None:
        path = sandbox_path(path)
        result = self._run(WRITE_SCRIPT, args=[path], stdin=content.encode())
        check_written(path, result)

    def close(self) -> None:
        self._finalizer()  # runs _stop once; later calls do nothing

    # ---- running a command ----------------------------------------------------------------------

    def _run(self, script: str, *, timeout: float | None = None, args=(), keep_bytes=4 * OUTPUT_CHARS, stdin=None):
        if not self._finalizer.alive:
            raise SandboxError("The sandbox is closed; open a new one with open_sandbox().")
        self._check_alive()
        result = run_process(
            self._exec_argv(script, list(args)),
            env=ENV,
            timeout=self._limits.timeout_s if timeout is None else timeout,
            keep_bytes=keep_bytes,
            stdin=stdin,
            on_start=self._track,
            on_exit=self._untrack,
        )
        if not self._finalizer.alive:
            raise SandboxError("The sandbox was closed while the command ran.")
        self._check_alive()  # a holder that died during the command makes its result meaningless
        return result

    def _exec_argv(self, script: str, args: list[str]) -> list[str]:
        """nsenter -> unshare (fresh pid namespace) -> setpriv (sandbox user) -> prlimit -> bash."""
        limits, tools = self._limits, self._tools
        user = ["--user", "--preserve-credentials"] if self._rootless else []
        drop_to = [] if self._rootless else ["--reuid", str(self._uid), "--regid", str(self._uid), "--clear-groups"]
        mib = 1024 * 1024
        return [
            tools["nsenter"], f"--target={self._pid}", *user,
            "--mount", "--net", "--ipc", "--uts", "--pid", "--wd", "--",
            tools["unshare"], "--pid", "--fork", "--kill-child", "--mount-proc", "--",
            tools["setpriv"], *drop_to, "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--",
            tools["prlimit"],
            f"--cpu={limits.cpu_s}",
            f"--as={limits.memory_mb * mib}",
            f"--nproc={limits.processes}",
            f"--fsize={limits.file_size_mb * mib}",
            "--core=0",
            "--",
            "/bin/bash", "-c", _INIT, "init", script, "bash", *args,
        ]  # fmt: skip

    def _track(self, process: subprocess.Popen) -> None:
        with self._lock:
            self._running.add(process)

    def _untrack(self, process: subprocess.Popen) -> None:
        with self._lock:
            self._running.discard(process)

    def _check_alive(self) -> None:
        code = self._holder.poll()
        if code is not None and self._finalizer.alive:
            self._finalizer()
            raise SandboxError(
                f"The sandbox died (bubblewrap exited with code {code}); open a new one. "
                "If this repeats, check the machine's memory and process limits."
            )


# ----------------------------------------------------------------------------------------------
# Starting and stopping the holder
# ----------------------------------------------------------------------------------------------


def _find_tools() -> dict[str, str]:
    # Under /usr: nsenter runs the next tools from inside the sandbox, where only /usr exists.
    found = {name: shutil.which(name, path="/usr/local/bin:/usr/bin:/usr/local/sbin:/usr/sbin") for name in _TOOLS}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        raise SandboxError(
            f"The local sandbox needs {missing} under /usr. Run ./install.sh "
            "(it runs `apt-get install bubblewrap util-linux`), or choose --sandbox docker."
        )
    return found


def _start_holder(bwrap: str, task_dir: Path, env_dir: Path, limits: Limits, uid: int, rootless: bool, mounts,
                  scratch):
    """Start the holder; return its Popen and the host pid of the sandbox's init process."""
    data_fds = {
        "/etc/passwd": _memfd(f"user:x:{uid}:{uid}:user:{HOME}:/bin/bash\n"),
        "/etc/group": _memfd(f"user:x:{uid}:\n"),
        "/etc/hosts": _memfd("127.0.0.1 localhost\n::1 localhost\n"),
    }
    info_read, info_write = os.pipe()
    argv = _holder_argv(bwrap, task_dir, env_dir, limits, rootless, data_fds, info_write, mounts, scratch)
    try:
        holder = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,  # the lifeline: EOF (close() or this process dying) ends the sandbox
            stdout=subprocess.PIPE,  # one "ready" line once every mount is in place
            stderr=subprocess.PIPE,
            pass_fds=[info_write, *data_fds.values()],
            env={"PATH": "/usr/bin:/bin"},
        )
    finally:
        for fd in (info_write, *data_fds.values()):
            os.close(fd)
    try:
        info = _read_info(info_read, holder)
    finally:
        os.close(info_read)
    if info is not None and not _wait_ready(holder):
        info = None
    holder.stdout.close()
    if info is None:
        holder.kill()
        holder.wait()
        error = holder.stderr.read().decode(errors="replace").strip()
        holder.stderr.close()
        raise SandboxError(
            f"bubblewrap did not start the sandbox for {task_dir} (exit code {holder.returncode}): "
            f"{error or 'no message'}. It needs bubblewrap >= 0.8 and user namespaces "
            "(as a normal user: sysctl kernel.unprivileged_userns_clone=1 / "
            "kernel.apparmor_restrict_unprivileged_userns=0); or choose --sandbox docker."
        )
    return holder, info["child-pid"]


def _holder_argv(bwrap, task_dir, env_dir, limits, rootless, data_fds, info_fd, mounts, scratch) -> list[str]:
    disk = str(limits.disk_mb * 1024 * 1024)
    argv = [bwrap, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    # As a normal user bwrap needs a user namespace; the host user is its uid 0, so that nsenter
    # keeps the capabilities `unshare` needs, and each command then drops them all. As root,
    # no user namespace: the uid it would map is host root, which RLIMIT_NPROC ignores.
    argv += ["--unshare-user", "--uid", "0", "--gid", "0"] if rootless else ["--cap-drop", "ALL"]
    argv += ["--new-session", "--clearenv", "--info-fd", str(info_fd)]
    argv += ["--ro-bind", "/usr", "/usr"]
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):  # merged-/usr symlinks or real dirs
        host = Path("/") / top
        if host.is_symlink():
            argv += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            argv += ["--ro-bind", str(host), str(host)]
    argv += ["--perms", "0755", "--dir", "/etc"]
    for name in _HOST_ETC:  # what dynamic linking and /usr/bin/awk-style alternatives need
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for target, fd in data_fds.items():
        argv += ["--perms", "0644", "--ro-bind-data", str(fd), target]
    argv += ["--proc", "/proc"]
    # A hand-made /dev rather than --dev: with --dev bwrap nests a second user namespace that
    # nsenter could not enter.
    argv += ["--perms", "0755", "--size", str(1024 * 1024), "--tmpfs", "/dev"]
    for device in _DEVICES:
        argv += ["--dev-bind", f"/dev/{device}", f"/dev/{device}"]
    for index, name in enumerate(("stdin", "stdout", "stderr")):
        argv += ["--symlink", f"/proc/self/fd/{index}", f"/dev/{name}"]
    argv += ["--symlink", "/proc/self/fd", "/dev/fd"]
    argv += ["--perms", "1777", "--size", disk, "--tmpfs", "/dev/shm"]
    argv += ["--perms", "1777", "--size", disk, "--tmpfs", "/tmp"]
    argv += ["--perms", "0755", "--size", disk, "--tmpfs", WORKDIR]
    argv += ["--perms", "0755", "--size", disk, "--tmpfs", HOME]
    inputs = input_dir(task_dir)
    if inputs is not None:
        argv += ["--ro-bind", str(inputs.resolve()), INPUT_DIR]
    else:
        argv += ["--perms", "0555", "--dir", INPUT_DIR]
    argv += ["--perms", "0755", "--dir", "/opt", "--ro-bind", str(env_dir.resolve()), VENV]
    made = {"/", "/opt"}

    def parents(target: str) -> list[str]:  # bwrap would make missing parents 0700
        missing = [str(p) for p in reversed(Path(target).parents) if str(p) not in made]
        made.update(missing)
        return [arg for parent in missing for arg in ("--perms", "0755", "--dir", parent)]

    for target, source in mounts.items():
        argv += [*parents(target), "--ro-bind", str(Path(source).resolve()), target]
    for place in scratch:
        argv += [*parents(place), "--perms", "0755", "--size", disk, "--tmpfs", place]
    argv += ["--remount-ro", "/"]  # the sandbox's own root tmpfs, which has no size cap
    # Say "ready" once set up (bwrap's info comes earlier), then wait on the lifeline pipe.
    argv += ["--chdir", WORKDIR, "--", "/bin/sh", "-c", "echo ready && exec cat"]
    return argv


def _memfd(text: str) -> int:
    fd = os.memfd_create("multiharness-sandbox-file", 0)  # inheritable: bwrap reads it
    os.write(fd, text.encode())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _read_info(fd: int, holder: subprocess.Popen) -> dict | None:
    """bwrap's --info-fd JSON once the sandbox is set up; None if bwrap failed first."""
    data = b""
    deadline = time.monotonic() + _START_SECONDS
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            data += chunk
            try:
                return json.loads(data)
            except ValueError:  # not all of it yet
                continue
        elif holder.poll() is not None:
            break
    return None


def _wait_ready(holder: subprocess.Popen) -> bool:
    ready, _, _ = select.select([holder.stdout], [], [], _START_SECONDS)
    return bool(ready) and holder.stdout.readline() == b"ready\n"


def _stop(holder: subprocess.Popen, pid: int, running: set[subprocess.Popen]) -> None:
    """Kill every command and the holder's pid namespace, which frees the tmpfs with it."""
    for process in list(running):
        kill_group(process)
    if holder.poll() is None:
        # The holder is alive, so bwrap has not reaped its init yet and `pid` is still it.
        # Killing a pid namespace's init kills every process in it and in namespaces below it.
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:  # it died on its own just now
            pass
    try:
        holder.stdin.close()
    except OSError:  # cleanup: the pipe may already be broken
        pass
    try:
        holder.wait(timeout=_STOP_SECONDS)  # bwrap reaps its init, then exits
    except subprocess.TimeoutExpired:
        holder.kill()
        holder.wait()
    holder.stderr.close()
