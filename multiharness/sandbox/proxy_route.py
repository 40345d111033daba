"""A route from inside a sandbox to one TCP port of the host (the capture proxy), and to nothing else.

The sandbox keeps its own network namespace, so its commands reach nothing but their own
loopback. A harness CLI speaks HTTP over TCP only, so the route has two ends:

- on the host, `ProxyRoute(host, port)`: a unix socket in a private folder, mounted read-only
  into the sandbox (`mounts`); each connection to it is passed on to host:port;
- inside, a tiny forwarder (`FORWARDER`, run by the sandbox's own Python) listens on the
  sandbox's loopback (`URL`) and passes each connection to the socket. `wrap(command)` starts it
  before the command, in the same sandbox command, so it ends with it.

Whoever owns the sandbox owns the route: the harness runner (`multiharness.harnesses`) and the
Harbor environment (`multiharness.harbor.environment`, run by Harbor's own Python) both use it.
Standard library only, for that reason. Written by hand: no maintained package bridges a network
namespace to one host port without privileges.
"""

from __future__ import annotations

import logging
import shlex
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

__all__ = ["FORWARDER", "FORWARDER_FAILED", "SANDBOX_PROXY_PORT", "SOCKET_DIR", "URL", "ProxyRoute"]

logger = logging.getLogger(__name__)

SANDBOX_PROXY_PORT = 18080
"""Port of the forwarder on the sandbox's own loopback (each sandbox has its own network)."""
URL = f"http://127.0.0.1:{SANDBOX_PROXY_PORT}"
"""The proxy as a command inside the sandbox reaches it."""
SOCKET_DIR = "/run/multiharness"
"""Where the folder of the route's unix socket is mounted inside the sandbox."""
FORWARDER_FAILED = 97
"""Exit status of a wrapped command whose forwarder did not start."""
MODEL_ROUTES = (b"/chat/completions", b"/responses", b"/messages")
"""Paths of model calls in the three dialects (Claude Code's /messages/count_tokens is not one)."""
_ROUTE_DIR = "/tmp/multiharness-route"
_FORWARDER_READY = f"{_ROUTE_DIR}/forwarder.ready"
_FORWARDER_START_S = 10.0
_NOT_STARTED = "multiharness: the proxy forwarder did not start"

FORWARDER = """
import asyncio, pathlib, sys
SOCKET, PORT, READY = sys.argv[1], int(sys.argv[2]), sys.argv[3]

async def pump(reader, writer):
    try:
        while data := await reader.read(1 << 16):
            writer.write(data)
            await writer.drain()
        writer.write_eof()
    except (OSError, RuntimeError):
        writer.close()

async def handle(client_reader, client_writer):
    try:
        proxy_reader, proxy_writer = await asyncio.open_unix_connection(SOCKET)
    except OSError:
        client_writer.close()
        return
    await asyncio.gather(pump(client_reader, proxy_writer), pump(proxy_reader, client_writer))
    proxy_writer.close()
    client_writer.close()

async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", PORT)
    pathlib.Path(READY).touch()
    await server.serve_forever()

asyncio.run(main())
"""


class ProxyRoute:
    """The host end: a unix socket in a private folder; each connection is passed on to host:port.

    Give `mounts` to `open_sandbox` and run commands through `wrap(command)`; inside, `URL`
    reaches the proxy. It also times the model calls as they cross it: a call starts with the
    first bytes of a request to a model route and ends with the last bytes of its answer
    (streamed or not; HTTP/1.1 sends one request at a time on a connection), so the rest of the
    episode is the harness's own.
    """

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.folder = Path(tempfile.mkdtemp(prefix="multiharness-bridge-"))
        self.folder.chmod(0o755)  # the sandbox user (another uid when the host user is root) enters it
        self.path = self.folder / "proxy.sock"
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self.path))
        self.path.chmod(0o666)  # and connects to it
        self._listener.listen(64)
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self.calls: list[tuple[float, float | None]] = []
        """(request start, last answer byte) per model call, in monotonic seconds."""
        self.open = True
        """Whether connections pass; False refuses every connection (a phase without network)."""
        self._thread = threading.Thread(target=self._accept, daemon=True, name="multiharness-bridge")
        self._thread.start()

    @property
    def mounts(self) -> dict[str, Path]:
        """The sandbox mount that carries the socket (read-only: a socket needs no write access)."""
        return {SOCKET_DIR: self.folder}

    def wrap(self, command: str) -> str:
        """`command` as one sandbox script that first starts the forwarder to this route and waits for it."""
        socket_path = f"{SOCKET_DIR}/{self.path.name}"
        return f"""mkdir -p {_ROUTE_DIR}
python3 -c {shlex.quote(FORWARDER)} {socket_path} {SANDBOX_PROXY_PORT} {_FORWARDER_READY} \\
    > {_ROUTE_DIR}/forwarder.log 2>&1 &
for _ in $(seq {int(_FORWARDER_START_S / 0.02)}); do [ -e {_FORWARDER_READY} ] && break; sleep 0.02; done
if [ ! -e {_FORWARDER_READY} ]; then
    echo "{_NOT_STARTED}:" >&2; cat {_ROUTE_DIR}/forwarder.log >&2; exit {FORWARDER_FAILED}
fi
{command}"""

    @staticmethod
    def failed_to_start(exit_code: int | None, output: str) -> bool:
        """Whether a wrapped command ended because the forwarder did not start (a sandbox failure)."""
        return exit_code == FORWARDER_FAILED and _NOT_STARTED in output

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed: the episode is over
                return
            if not self.open:  # a phase without network (Harbor's verifier): nothing passes
                client.close()
                continue
            try:
                upstream = socket.create_connection((self.host, self.port), timeout=10)
                upstream.settimeout(None)
            except OSError as error:
                logger.warning("route: the proxy at %s:%d refused a connection: %s", self.host, self.port, error)
                client.close()
                continue
            current = [None]  # index into self.calls of this connection's model call, if one is open
            with self._lock:
                self._open.update((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream, current, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, current, False), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, current: list, request: bool) -> None:
        try:
            while data := source.recv(1 << 16):
                now = time.monotonic()
                with self._lock:
                    if request and data[:5] in (b"POST ", b"GET /"):
                        path = data.split(b" ", 2)[1].split(b"?")[0] if b" " in data else b""
                        current[0] = None
                        if path.endswith(MODEL_ROUTES):
                            self.calls.append((now, None))
                            current[0] = len(self.calls) - 1
                    elif not request and current[0] is not None:
                        self.calls[current[0]] = (self.calls[current[0]][0], now)
                target.sendall(data)
            target.shutdown(socket.SHUT_WR)
        except OSError:  # the other side went away; close both
            pass
        finally:
            if not request:
                for end in (source, target):
                    self._close(end)

    def _close(self, end: socket.socket) -> None:
        with self._lock:
            self._open.discard(end)
        try:
            end.close()
        except OSError:  # cleanup: already closed
            pass

    def close(self) -> None:
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:  # cleanup: never connected
            pass
        self._listener.close()
        with self._lock:
            ends = list(self._open)
        for end in ends:
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:  # cleanup: already gone
                pass
            self._close(end)
        shutil.rmtree(self.folder, ignore_errors=True)
