"""A Harbor environment that runs every exec in the project's bubblewrap sandbox, with no container.

Harbor loads it by import path (`--env multiharness.harbor.environment:BubblewrapEnvironment`)
in its own Python. Per trial (Harbor makes one environment per trial) it opens one local
sandbox (`multiharness.sandbox.local`) on the task: the inputs read-only at /home/user/input, a
writable /workdir, and Harbor's own places as empty writable scratch: /logs (agent and verifier
logs, read back at the end), /tests and /solution, which hold nothing until Harbor uploads them
for the verifier (after the agent's processes are gone) or for the oracle agent. The harness
CLIs come in read-only (`read_only`, chosen by the caller), and the only network is a route from
the sandbox's loopback to the capture proxy (`proxy_port`, `multiharness.sandbox.proxy_route`),
open in a phase whose policy allows loopback (the agent's) and refusing every connection in a
no-network one (the verifier's). A public policy is refused: there is no internet here. The
exported tasks declare exactly that. `stop()` closes the sandbox, and every process goes with it.

Exec runs one sandbox command: the route's forwarder (when there is a proxy), the variables
Harbor passes, `cd` to its working directory, then the command. The sandbox has one user, so
Harbor's `user` is accepted and ignored (its root-only steps, package installs, find what they
need already present: the CLIs are pinned and installed by ./install.sh).

Written by hand: Harbor ships no environment for an unprivileged local sandbox.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from pathlib import Path
from typing import Any

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities
from harbor.models.task.config import NetworkMode, NetworkPolicy
from harbor.models.trial.paths import EnvironmentPaths

from multiharness.layout import WORKDIR
from multiharness.sandbox import open_sandbox
from multiharness.sandbox.proxy_route import ProxyRoute

__all__ = ["BubblewrapEnvironment", "HARBOR_PLACES", "LOOPBACK"]

HARBOR_PLACES = ("/logs", "/tests", "/solution", "/installed-agent")
"""Harbor's writable places inside an environment (empty until Harbor writes to them; agents keep their homes in /installed-agent)."""
LOOPBACK = ("127.0.0.1", "localhost", "::1")
"""The only hosts a sandbox can reach: its own loopback, where the route to the proxy listens."""
DEFAULT_TIMEOUT_S = 600.0


class BubblewrapEnvironment(BaseEnvironment):
    """Harbor's environment contract on a local bubblewrap sandbox (see the module docstring).

    Keyword options (Harbor's `--ek key=value`): `read_only` (JSON object: sandbox path -> host
    path, mounted read-only), `proxy_port` (the capture proxy's port on this host; no route
    without it), `path_first` (directories put first on PATH, e.g. the CLIs' bin folders).
    """

    def __init__(self, *args, read_only: str | dict | None = None, proxy_port: str | int | None = None,
                 path_first: str = "", **kwargs: Any):
        self._mh_read_only = json.loads(read_only) if isinstance(read_only, str) else dict(read_only or {})
        self._mh_proxy_port = int(proxy_port) if proxy_port else None
        self._mh_path_first = path_first
        self._mh_sandbox = None
        self._mh_route: ProxyRoute | None = None
        super().__init__(*args, **kwargs)

    @staticmethod
    def type() -> str:
        return "multiharness-bubblewrap"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities(disable_internet=True, network_allowlist=True, dynamic_network_policy=True,
                                       network_allowlist_hostnames=True, network_allowlist_ipv4_addresses=True,
                                       network_allowlist_ipv6_addresses=True)

    async def _apply_network_policy(self, network_policy: NetworkPolicy) -> None:
        """No network: the route refuses connections; a loopback allowlist: the route passes them."""
        if self._mh_route is not None:
            self._mh_route.open = network_policy.network_mode == NetworkMode.ALLOWLIST

    def validate_network_policy_support(self, network_policy: NetworkPolicy | None = None) -> None:
        super().validate_network_policy_support(network_policy)
        policy = network_policy or self._network_policy
        if policy.network_mode == NetworkMode.PUBLIC:
            raise ValueError(
                "the bubblewrap environment has no internet: declare network_mode = \"no-network\", or "
                "\"allowlist\" with allowed_hosts = [\"127.0.0.1\"] (the route to the model), in task.toml"
            )
        outside = sorted(set(policy.allowed_hosts) - set(LOOPBACK))
        if outside:
            raise ValueError(f"the bubblewrap environment reaches only its loopback; it cannot allow {outside}")

    def _validate_definition(self) -> None:
        if not (self.environment_dir / "input").is_dir():
            raise FileNotFoundError(f"{self.environment_dir} has no input/ folder: not a multiharness task")

    # ---- lifecycle ------------------------------------------------------------------------------

    async def start(self, force_build: bool) -> None:
        route = ProxyRoute("127.0.0.1", self._mh_proxy_port) if self._mh_proxy_port else None
        mounts = {**self._mh_read_only, **(route.mounts if route else {})}
        try:
            self._mh_sandbox = await asyncio.to_thread(
                open_sandbox, self.environment_dir.parent, mounts=mounts, scratch=HARBOR_PLACES,
                timeout_s=DEFAULT_TIMEOUT_S, memory_mb=8192, processes=512,
            )
        except BaseException:
            if route is not None:
                route.close()
            raise
        self._mh_route = route
        await self._apply_network_policy(self._network_policy)
        paths = EnvironmentPaths.for_os(self.os)  # where Harbor's agents and verifier write their logs
        await self.ensure_dirs([paths.agent_dir, paths.verifier_dir, paths.artifacts_dir], chmod=True)

    async def stop(self, delete: bool) -> None:
        if self._mh_sandbox is not None:
            await asyncio.to_thread(self._mh_sandbox.close)
            self._mh_sandbox = None
        if self._mh_route is not None:
            self._mh_route.close()
            self._mh_route = None

    # ---- commands ---------------------------------------------------------------------------

    async def exec(self, command: str, cwd: str | None = None, env: dict[str, str] | None = None,
                   timeout_sec: int | None = None, user: str | int | None = None) -> ExecResult:
        env = self._merge_env(env) or {}
        lines = [f"export {name}={shlex.quote(str(value))}" for name, value in env.items()]
        if self._mh_path_first:
            lines.append(f"export PATH={shlex.quote(self._mh_path_first)}:\"$PATH\"")
        lines += [f"cd {shlex.quote(cwd or WORKDIR)}", command]
        script = "\n".join(lines)
        if self._mh_route is not None and self._mh_route.open:
            script = self._mh_route.wrap(script)
        result = await asyncio.to_thread(self._mh_sandbox.exec, script, timeout=timeout_sec or DEFAULT_TIMEOUT_S)
        return ExecResult(stdout=result.output, stderr="", return_code=result.exit_code)

    # ---- files --------------------------------------------------------------------------------

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        await asyncio.to_thread(self._mh_sandbox.write_file, target_path, Path(source_path).read_text(encoding="utf-8"))

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        source_dir = Path(source_dir)
        executables = []
        for path in sorted(p for p in source_dir.rglob("*") if p.is_file()):
            target = f"{target_dir.rstrip('/')}/{path.relative_to(source_dir).as_posix()}"
            await self.upload_file(path, target)
            if path.stat().st_mode & 0o111:
                executables.append(target)
        if executables:
            await self.exec(f"chmod +x {shlex.join(executables)}")

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        target = Path(target_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(await asyncio.to_thread(self._mh_sandbox.read_file, source_path), encoding="utf-8")

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        listing = await self.exec(f"cd {shlex.quote(source_dir)} 2>/dev/null && find . -type f")
        if listing.return_code != 0:
            return  # nothing was written there
        for relative in (line[2:] for line in (listing.stdout or "").splitlines() if line.startswith("./")):
            await self.download_file(f"{source_dir.rstrip('/')}/{relative}", Path(target_dir) / relative)
