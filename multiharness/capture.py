"""Capture: OpenEnv's `CaptureServer` in front of the engine, one capture session per episode.

A harness talks to the proxy in its own dialect (chat completions, OpenAI Responses,
Anthropic Messages) with the session id as its API key; the proxy forwards every call to the
engine (the local engine, or vLLM: same code, another URL) as a chat completion asking for
token ids and logprobs, and records the engine's prompt ids, sampled ids and behaviour
logprobs. `training_trace(key)` hands back OpenEnv's `TrainingTrace` for the episode.

What is pinned, and where (all of it enforced by `CaptureServer` itself unless noted):

- Capture level: measured once when the proxy starts (`validate_llm`: a token-id probe, a
  tool-call probe, and two calls at temperature 1 and 2 that tell processed logprobs from raw
  ones). Below "tokens" sessions still run (as eval sessions), but `training_trace` refuses
  them with a `CaptureError` naming the session and the level.
- Sampling policy: harnesses send no temperature, so each session carries its own training
  policy (`sampling`, OpenEnv's `training_sampling`: a temperature and full-vocabulary
  sampling, `top_p=1`), written over every forwarded request; the trainer recomputes
  logprobs at that temperature over the whole vocabulary, so a truncating `top_p` is refused.
  The output length is capped per session (`max_tokens`, the proxy's `max_output_tokens`).
- Budgets: a cap on model calls per session (`max_model_calls`, 17 by default); past it the
  proxy answers a terminal "budget exhausted" message itself, in the harness's dialect, and
  records nothing. `CaptureServer` has no wall-time budget, so this module adds one: a
  session's first model call after `wall_time_s` (counted from `open_session`) lowers its
  call cap to the calls already made, so the same terminal answer ends the agent's loop. A
  session that made no call before its deadline is allowed one (0 means "no cap" to OpenEnv).
"""

import logging
import secrets
import socket
import time
from collections.abc import Mapping

from openenv.core.harness import TrainingTrace

__all__ = [
    "CaptureError",
    "CaptureProxy",
    "start_capture",
    "DEFAULT_MAX_MODEL_CALLS",
    "DEFAULT_WALL_TIME_S",
    "DEFAULT_TEMPERATURE",
    "DEFAULT_MAX_TOKENS",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_MODEL_CALLS = 17
"""Model calls per episode: the reference solutions need 2-3 tool calls; agents that loop stop here."""
DEFAULT_WALL_TIME_S = 900.0
"""Seconds per episode, from session start: a CPU episode of 17 short calls fits well within it."""
DEFAULT_TEMPERATURE = 1.0
"""Sampling temperature when the caller pins none: the policy as it is, which GRPO expects."""
DEFAULT_MAX_TOKENS = 1024
"""Sampled tokens per model call: a tool call or a short answer; babbling past this is cut."""


class CaptureError(RuntimeError):
    """A capture session cannot give training data (unknown, not token-level, or invalid)."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("0.0.0.0", 0))
        return probe.getsockname()[1]


class _WallClock:
    """ASGI middleware: before a session's call reaches the proxy, end the session if its time is up."""

    def __init__(self, app, proxy: "CaptureProxy"):
        self.app = app
        self.proxy = proxy

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "POST" and self.proxy._deadlines:
            from openenv.core.harness.capture.sessions import extract_api_key

            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
            key = extract_api_key(headers)
            if key:
                self.proxy._expire_if_due(key)
        await self.app(scope, receive, send)


class CaptureProxy:
    """A running capture proxy. Open one session per episode and hand its key to the harness.

    `url` is the proxy's root: OpenAI clients use `url + "/v1"`, Anthropic clients `url`.
    """

    def __init__(self, server, *, engine_url: str, report, max_model_calls: int, wall_time_s: float | None):
        self._server = server
        self.engine_url = engine_url
        self.report = report
        """OpenEnv's `LLMReport` from the probe, or None when the level was given."""
        self.capture_level = server.capture_level
        self.max_model_calls = max_model_calls
        self.wall_time_s = wall_time_s
        self._deadlines: dict[str, float] = {}

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # --- sessions --------------------------------------------------------------------------

    def open_session(
        self,
        sampling: Mapping | None = None,
        *,
        max_tokens: int | None = None,
        max_model_calls: int | None = None,
        wall_time_s: float | None = None,
        purpose: str = "train",
        **metadata,
    ) -> str:
        """Mint a capture session and return its key (the harness's API key).

        `sampling` is OpenEnv's training policy (`{"temperature": T}`, optionally with the
        no-op `top_p=1.0` etc. that TRL's `training_sampling` adds); default temperature 1.
        `purpose="eval"` pins it as an evaluation policy instead: greedy (temperature 0) is
        allowed, and the session gives no training trace. `max_tokens` caps each call's output
        (the proxy-wide cap still applies). Budgets default to the proxy's. `metadata` (task,
        harness, ...) is stored on the session.
        """
        if purpose not in ("train", "eval"):
            raise ValueError(f"purpose must be 'train' or 'eval', got {purpose!r}")
        policy = dict(sampling) if sampling is not None else {"temperature": DEFAULT_TEMPERATURE}
        calls = self.max_model_calls if max_model_calls is None else max_model_calls
        if max_tokens is not None:
            metadata["max_output_tokens"] = int(max_tokens)
        registry = self._server.registry
        try:
            if self.capture_level == "tokens" and purpose == "train":
                session = registry.create(
                    None,
                    capture_level=self.capture_level,
                    purpose="train",
                    max_model_calls=calls,
                    sampling=policy,
                    **metadata,
                )
            else:
                # An eval session (asked for, or below "tokens", where OpenEnv applies no
                # training policy): the temperature is pinned as an evaluation policy instead.
                session = registry.create(
                    None,
                    capture_level=self.capture_level,
                    purpose="eval",
                    max_model_calls=calls,
                    eval_sampling={k: v for k, v in policy.items() if k in ("temperature", "top_p")},
                    **metadata,
                )
        except ValueError as exc:
            raise CaptureError(f"could not open a capture session with sampling={policy!r}: {exc}") from exc
        wall = self.wall_time_s if wall_time_s is None else wall_time_s
        if wall:
            self._deadlines[session.session_id] = time.monotonic() + wall
        return session.session_id

    def model_calls(self, key: str) -> int:
        """Model calls forwarded to the engine for this session (budget stops not included)."""
        return self._session(key).model_calls

    def token_counts(self, key: str) -> tuple[int, int] | None:
        """(prompt tokens, sampled tokens) over the session's model calls, from the engine's token
        ids; None when the engine returned none (below "tokens")."""
        nodes = self._session(key).graph.nodes()
        if not nodes or not all(n.prompt_ids for n in nodes):
            return None
        return sum(len(n.prompt_ids) for n in nodes), sum(len(n.sampled_ids) for n in nodes)

    def upstream_errors(self, key: str) -> int:
        """Calls of this session that failed to reach the engine (a dead engine shows here)."""
        return self._session(key).upstream_errors

    def budget_stops(self, key: str) -> int:
        """Calls the proxy answered itself because the session's budget was spent."""
        return self._session(key).budget_stop_count

    def document(self, key: str) -> dict:
        """OpenEnv's rollout document for the session: graph stats, rows and validation findings."""
        from openenv.core.harness.capture.export import export_session

        session = self._session(key)
        return export_session(session, include_messages=True, capture_level=self._level(session))

    def training_trace(self, key: str) -> TrainingTrace:
        """The session's validated turns (prompt ids, completion ids, behaviour logprobs, loss mask).

        Raises `CaptureError` for an unknown session, a session below token-level capture, or
        one whose capture failed OpenEnv's validation (the message lists the findings).
        """
        from openenv.core.harness.capture import to_training_trace
        from openenv.core.harness.capture.export import export_session

        session = self._session(key)
        level = self._level(session)
        if level != "tokens":
            raise CaptureError(
                f"capture session {key} has capture level {level!r}, not 'tokens': its engine at "
                f"{self.engine_url} did not return token ids with processed logprobs, so it cannot be "
                "trained on. Use the local engine, or vLLM with --return-tokens-as-token-ids "
                "--logprobs-mode processed_logprobs."
            )
        document = export_session(session, include_messages=True, capture_level=level)
        try:
            return to_training_trace(session.graph, document)
        except ValueError as exc:
            findings = [f for f in document.get("validation", []) if "FATAL" in f]
            for row in document.get("sequences", []):
                findings += [f for f in row.get("validation", []) if "FATAL" in f]
            raise CaptureError(
                f"capture session {key} is not trainable ({exc}); "
                f"{session.model_calls} model call(s), findings: {findings or 'none'}"
            ) from exc

    def close_session(self, key: str) -> None:
        """Forget a session and its captured turns."""
        self._deadlines.pop(key, None)
        self._server.registry.delete(key)

    def _session(self, key: str):
        session = self._server.registry.get(key)
        if session is None:
            raise CaptureError(f"unknown capture session {key!r}: open it with open_session() on this proxy")
        return session

    def _level(self, session) -> str:
        return session.capture_level or self.capture_level

    def _expire_if_due(self, key: str) -> None:
        deadline = self._deadlines.get(key)
        if deadline is None or time.monotonic() < deadline:
            return
        self._deadlines.pop(key, None)
        session = self._server.registry.get(key)
        if session is not None and not session.over_budget:
            session.max_model_calls = max(session.model_calls, 1)
            logger.info("capture session %s ran out of wall time after %d model call(s)", key, session.model_calls)

    # --- lifetime --------------------------------------------------------------------------

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> "CaptureProxy":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start_capture(
    engine_url: str,
    model_name: str,
    *,
    port: int = 0,
    capture_level: str | None = None,
    max_model_calls: int = DEFAULT_MAX_MODEL_CALLS,
    wall_time_s: float | None = DEFAULT_WALL_TIME_S,
    max_tokens: int = DEFAULT_MAX_TOKENS,
) -> CaptureProxy:
    """Start a capture proxy in a background thread in front of the engine at `engine_url`.

    `capture_level=None` measures it with OpenEnv's `validate_llm` (four engine calls, one of
    them up to 512 tokens); pass "tokens" to skip the probe for an engine already known to
    qualify. `port=0` picks a free port. `max_tokens` caps every call's output.
    """
    from openenv.core.harness.capture import CaptureServer, validate_llm

    report = None
    if capture_level is None:
        report = validate_llm(engine_url, model_name)
        if not report.reachable:
            raise CaptureError(f"the engine at {engine_url} cannot be captured: {report.summary()}")
        capture_level = report.capture_level
        logger.info("engine %s (%s): capture level %s", engine_url, model_name, capture_level)
        for finding in report.findings:
            logger.warning("engine probe: %s", finding)

    # The proxy binds every interface (sandboxes reach it from outside the host's loopback), so
    # its session routes get a random admin key; this module uses the in-process registry instead.
    admin_key = secrets.token_urlsafe(24)
    attempts = 3 if port == 0 else 1
    for attempt in range(attempts):
        server = CaptureServer(
            llm_url=engine_url,
            model=model_name,
            port=port or _free_port(),
            max_output_tokens=max_tokens,
            capture_level=capture_level,
            admin_key=admin_key,
            max_model_calls=max_model_calls,
        )
        proxy = CaptureProxy(
            server, engine_url=engine_url, report=report, max_model_calls=max_model_calls, wall_time_s=wall_time_s
        )
        server.app.add_middleware(_WallClock, proxy=proxy)
        try:
            server.start()
        except RuntimeError:
            server.stop()
            if attempt == attempts - 1:
                raise
            continue  # another process took the free port between the pick and the bind
        logger.info("capture proxy on %s -> %s (%s)", proxy.url, engine_url, capture_level)
        return proxy
    raise AssertionError("unreachable")
