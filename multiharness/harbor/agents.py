"""Harbor agents for a sandbox without internet: the same agents, installed by ./install.sh instead.

Harbor's OpenCode, Claude Code and Codex agents skip their install when the environment already
has the pinned version (`--agent-kwarg version=...`): the CLIs are mounted, so the stock agents
are used as they are. Harbor's mini-swe-agent always installs itself with uv from the internet;
`PreinstalledMiniSweAgent` is that agent with an install step that puts the mounted venv's
`mini-swe-agent` on PATH instead (a shim: the venv's own scripts name its host path). Loaded by
Harbor's own Python (`--agent multiharness.harbor.agents:PreinstalledMiniSweAgent`).
"""

from __future__ import annotations

from harbor.agents.installed.mini_swe_agent import MiniSweAgent
from harbor.environments.base import BaseEnvironment

__all__ = ["MINI_SWE_AGENT_VENV", "SHIM_DIR", "PreinstalledMiniSweAgent"]

MINI_SWE_AGENT_VENV = "/opt/harness/mini-swe-agent"
"""Where the environment mounts .tools/mini-swe-agent (as the project's own runner does)."""
SHIM_DIR = "/installed-agent/bin"
"""Put first on the environment's PATH: the `mini-swe-agent` command the agent runs."""
_SHIM = f'#!/bin/sh\nexec {MINI_SWE_AGENT_VENV}/bin/python -m minisweagent.run.mini "$@"\n'


class PreinstalledMiniSweAgent(MiniSweAgent):
    """Harbor's mini-swe-agent, run from the project's pinned install mounted in the environment."""

    async def install(self, environment: BaseEnvironment) -> None:
        script = f"mkdir -p {SHIM_DIR} && cat > {SHIM_DIR}/mini-swe-agent <<'EOF'\n{_SHIM}EOF\n" \
                 f"chmod +x {SHIM_DIR}/mini-swe-agent && {SHIM_DIR}/mini-swe-agent --help >/dev/null"
        result = await environment.exec(script)
        if result.return_code != 0:
            raise RuntimeError(
                f"mini-swe-agent does not run from {MINI_SWE_AGENT_VENV} ({(result.stdout or '').strip()[-300:]}): "
                "run ./install.sh (requirements-mini-swe-agent.txt into .tools/mini-swe-agent) and mount it there"
            )
