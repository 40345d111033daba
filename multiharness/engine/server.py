"""The OpenAI-compatible HTTP surface of the engine, answering as vLLM does with token ids on.

Routes: `POST /v1/chat/completions`, `GET /v1/models`, `GET /health`. A chat completion is
rendered to prompt ids by the model's chat template (with `tools`), sampled by a policy (the
transformers `LocalEngine`, or the deterministic `ScriptedPolicy` for tests), and answered
with the fields a capture proxy needs, in vLLM's spelling:

- top-level `prompt_token_ids` and per choice `token_ids`, when `return_token_ids` is true;
- `logprobs.content[i]` per sampled token when `logprobs` is true: `token` is `"token_id:N"`
  (vLLM with `--return-tokens-as-token-ids`), `logprob` is the processed logprob (vLLM with
  `--logprobs-mode processed_logprobs`), `top_logprobs` has `top_logprobs` alternatives;
- tool calls parsed from the sampled tokens into OpenAI `tool_calls`, with
  `finish_reason: "tool_calls"`;
- `usage.prompt_tokens_details.cached_tokens`: the prompt tokens served from the prefix cache
  (the rest were computed), as vLLM reports it.

`GET /health` also carries the engine's counters (`engine.prefix_cache`: queries and hits in
requests and tokens, resident and budget bytes, evictions; `engine.running_rows`). A client
that disconnects before its completion is ready has its request cancelled, which frees its
rows at the next token; a prompt longer than the context window is a 400 that names both
lengths. Neither affects the other requests.

Sampling knobs other than `temperature`, `top_p`, `top_k`, `max_tokens`, `stop`, `n` and
`seed` are accepted only at their no-op values (a penalty would change the distribution the
logprobs describe, and this engine does not implement one). `stream: true` is answered as
server-sent events carrying the finished completion in one chunk per part.

Run it standalone with `serve(model_path, host, port)` (blocking), or inside a trainer with
`EngineServer(LocalEngine(model, tokenizer), model_name=...).start()`, which serves the
trainer's own model object from a background thread: rollouts use the current weights, with
no weight sync.
"""

import asyncio
import json
import logging
import math
import socket
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .chat import completion_message, render_prompt
from .generation import DEFAULT_CACHE_MB, GenerationRequest, SamplingParams

__all__ = ["create_app", "EngineServer", "serve"]

logger = logging.getLogger(__name__)

MAX_N = 16
"""Choices per request; more is a batch job, not a chat request."""
RENDER_THREADS = 8
"""Threads that render prompts and parse completions (milliseconds each, one at a time on the tokenizer)."""
DISCONNECT_POLL_S = 0.2
"""How often a waiting request checks that its client is still there; a gone client's rows are freed."""
MAX_TOP_LOGPROBS = 20
"""OpenAI's limit on `top_logprobs`."""
NO_OP_SAMPLING = {"min_p": 0.0, "frequency_penalty": 0.0, "presence_penalty": 0.0, "repetition_penalty": 1.0}
"""Knobs accepted only at these values (capture proxies send them, neutralised, on every call)."""


class _BadRequest(ValueError):
    def __init__(self, message: str, param: str | None = None, status: int = 400):
        super().__init__(message)
        self.param = param
        self.status = status


def _error(message: str, *, status: int = 400, param: str | None = None):
    from fastapi.responses import JSONResponse

    kind = "NotFoundError" if status == 404 else "BadRequestError" if status < 500 else "InternalServerError"
    code = "context_length_exceeded" if "maximum context length" in message else None
    return JSONResponse(
        {"error": {"message": message, "type": kind, "param": param, "code": code}, "object": "error"},
        status_code=status,
    )


def _number(body: dict, key: str, default, *, low=None, high=None, integer=False, low_open=False):
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _BadRequest(f"{key} must be a number, got {value!r}", key)
    if integer and int(value) != value:
        raise _BadRequest(f"{key} must be an integer, got {value!r}", key)
    if (low is not None and (value <= low if low_open else value < low)) or (high is not None and value > high):
        bounds = f"{'(' if low_open else '['}{low}, {high if high is not None else 'inf'}]"
        raise _BadRequest(f"{key} must be in {bounds}, got {value!r}", key)
    return int(value) if integer else float(value)


def _sampling_params(body: dict) -> SamplingParams:
    """Read and check a chat-completions body's sampling fields; an unsupported value says which."""
    for key, neutral in NO_OP_SAMPLING.items():
        value = body.get(key)
        if value is not None and value != neutral:
            raise _BadRequest(
                f"{key}={value!r} is not supported by the local engine (only {neutral}); serve the model "
                "with vLLM for penalties",
                key,
            )
    if body.get("logit_bias"):
        raise _BadRequest("logit_bias is not supported by the local engine", "logit_bias")
    response_format = body.get("response_format") or {}
    if isinstance(response_format, dict) and response_format.get("type", "text") != "text":
        raise _BadRequest(
            "structured output (response_format) is not supported by the local engine", "response_format"
        )
    tool_choice = body.get("tool_choice")
    if tool_choice not in (None, "auto", "none"):
        raise _BadRequest(f"tool_choice={tool_choice!r} is not supported (only 'auto' and 'none')", "tool_choice")
    stop = body.get("stop") or ()
    if isinstance(stop, str):
        stop = (stop,)
    if not isinstance(stop, (list, tuple)) or not all(isinstance(s, str) for s in stop):
        raise _BadRequest("stop must be a string or a list of strings", "stop")
    stop_ids = body.get("stop_token_ids") or ()
    if not isinstance(stop_ids, (list, tuple)) or not all(isinstance(i, int) for i in stop_ids):
        raise _BadRequest("stop_token_ids must be a list of integers", "stop_token_ids")
    max_tokens = body.get("max_completion_tokens")
    max_tokens = _number(
        body, "max_completion_tokens" if max_tokens is not None else "max_tokens", None, low=1, integer=True
    )
    top_logprobs = _number(body, "top_logprobs", 0, low=0, high=MAX_TOP_LOGPROBS, integer=True)
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise _BadRequest(f"seed must be an integer, got {seed!r}", "seed")
    return SamplingParams(
        temperature=_number(body, "temperature", 1.0, low=0),
        top_p=_number(body, "top_p", 1.0, low=0, high=1, low_open=True),
        top_k=_number(body, "top_k", -1, low=-1, integer=True),
        max_tokens=max_tokens,
        stop=tuple(s for s in stop if s),
        stop_token_ids=tuple(stop_ids),
        seed=seed,
        n=_number(body, "n", 1, low=1, high=MAX_N, integer=True),
        top_logprobs=top_logprobs if body.get("logprobs") else 0,
        ignore_eos=bool(body.get("ignore_eos", False)),
    )


def _logprob_entry(tokenizer, token_id: int, logprob: float) -> dict:
    piece = tokenizer.decode([token_id])
    return {"token": f"token_id:{token_id}", "logprob": logprob, "bytes": list(piece.encode("utf-8"))}


def _choice(tokenizer, index: int, request: GenerationRequest, sample, body: dict) -> dict:
    stop_text = None
    if sample.stop_string is not None:
        text = tokenizer.decode(sample.token_ids, skip_special_tokens=True)
        stop_text = text[: text.find(sample.stop_string)]
    tools = request.tools if body.get("tool_choice") != "none" else None
    message = completion_message(tokenizer, request.prompt_ids, sample.token_ids, tools, stop_text=stop_text)
    finish = sample.finish_reason
    if message.get("tool_calls") and finish == "stop":
        finish = "tool_calls"
    choice = {"index": index, "message": message, "logprobs": None, "finish_reason": finish, "stop_reason": None}
    if sample.stop_string is not None:
        choice["stop_reason"] = sample.stop_string
    if body.get("logprobs"):
        content = []
        for position, (token_id, logprob) in enumerate(zip(sample.token_ids, sample.logprobs)):
            entry = _logprob_entry(tokenizer, token_id, logprob)
            alternatives = (sample.top_logprobs or [[]] * len(sample.token_ids))[position]
            entry["top_logprobs"] = [_logprob_entry(tokenizer, i, lp) for i, lp in alternatives]
            content.append(entry)
        choice["logprobs"] = {"content": content}
    if body.get("return_token_ids"):
        choice["token_ids"] = list(sample.token_ids)
    return choice


def _sse(response: dict):
    """The finished completion as chat.completion.chunk events: content, tool calls, finish, usage."""
    base = {
        "id": response["id"],
        "object": "chat.completion.chunk",
        "created": response["created"],
        "model": response["model"],
    }
    first = True
    for choice in response["choices"]:
        message = choice["message"]
        delta = {"role": "assistant", "content": message.get("content") or ""}
        chunk = {
            **base,
            "choices": [
                {"index": choice["index"], "delta": delta, "logprobs": choice["logprobs"], "finish_reason": None}
            ],
        }
        if "token_ids" in choice:
            chunk["choices"][0]["token_ids"] = choice["token_ids"]
        if first and "prompt_token_ids" in response:
            chunk["prompt_token_ids"] = response["prompt_token_ids"]
        first = False
        yield f"data: {json.dumps(chunk)}\n\n"
        if message.get("tool_calls"):
            calls = [{"index": k, **call} for k, call in enumerate(message["tool_calls"])]
            chunk = {
                **base,
                "choices": [{"index": choice["index"], "delta": {"tool_calls": calls}, "finish_reason": None}],
            }
            yield f"data: {json.dumps(chunk)}\n\n"
        chunk = {
            **base,
            "choices": [{"index": choice["index"], "delta": {}, "finish_reason": choice["finish_reason"]}],
        }
        yield f"data: {json.dumps(chunk)}\n\n"
    yield f"data: {json.dumps({**base, 'choices': [], 'usage': response['usage']})}\n\n"
    yield "data: [DONE]\n\n"


def _prepare(policy, body: dict, tokenizer_lock: threading.Lock) -> GenerationRequest:
    """Check a chat-completions body and render its prompt ids."""
    tokenizer = policy.tokenizer
    params = _sampling_params(body)
    tools = body.get("tools") or None
    if tools is not None and not isinstance(tools, list):
        raise _BadRequest("tools must be a list", "tools")
    messages = body.get("messages")
    # A fast tokenizer is one Rust object; concurrent calls that touch its settings fail with
    # "Already borrowed", so rendering and parsing take turns (they cost milliseconds).
    with tokenizer_lock:
        try:
            prompt_ids = render_prompt(tokenizer, messages, tools)
        except ValueError:
            raise
        except Exception as exc:
            raise _BadRequest(
                f"the chat template could not render these messages: {type(exc).__name__}: {exc}", "messages"
            ) from exc
    return GenerationRequest(prompt_ids=prompt_ids, params=params, messages=messages, tools=tools)


def _answer(policy, model_name: str, body: dict, request: GenerationRequest, samples, tokenizer_lock) -> dict:
    """The vLLM-shaped completion for sampled `samples`: parsed messages, token fields, usage."""
    with tokenizer_lock:
        choices = [_choice(policy.tokenizer, i, request, s, body) for i, s in enumerate(samples)]
    prompt_tokens = len(request.prompt_ids)
    completion_tokens = sum(len(s.token_ids) for s in samples)
    response = {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model_name,
        "choices": choices,
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            # vLLM's field: prompt tokens whose keys and values were reused, not computed.
            "prompt_tokens_details": {"cached_tokens": samples[0].cached_tokens if samples else 0},
        },
    }
    if body.get("return_token_ids"):
        response["prompt_token_ids"] = request.prompt_ids
    return response


async def _unless_disconnected(future, http_request):
    """The future's samples, or None once the client has gone (the future is then cancelled: its rows are freed)."""
    waiting = asyncio.wrap_future(future)
    while True:
        done, _ = await asyncio.wait({waiting}, timeout=DISCONNECT_POLL_S)
        if done:
            return waiting.result()
        if await http_request.is_disconnected():
            future.cancel()
            logger.info("client disconnected mid-generation: request cancelled")
            return None


def create_app(policy, *, model_name: str):
    """The FastAPI app serving `policy`: anything with `tokenizer`, `max_model_len` and `submit(request)` (a future
    of its samples, cancelled when the client goes away); `stats()`, when it has one, is shown on `/health`."""
    from fastapi import FastAPI, Request
    from fastapi.responses import Response, StreamingResponse
    from trl.chat_template_utils import add_response_schema

    tokenizer = policy.tokenizer
    if getattr(tokenizer, "response_template", None) is None and getattr(tokenizer, "response_schema", None) is None:
        try:
            add_response_schema(tokenizer)
        except ValueError as exc:
            logger.warning(
                "tool calls will not be parsed: TRL has no response parser for this chat template (%s)", exc
            )

    app = FastAPI(title="multiharness engine")
    created = int(time.time())
    # Rendering and parsing block on the tokenizer; sampling does not hold a thread (the request waits on its future).
    workers = ThreadPoolExecutor(max_workers=RENDER_THREADS, thread_name_prefix="engine-render")
    tokenizer_lock = threading.Lock()

    @app.get("/health")
    async def health() -> dict:
        stats = getattr(policy, "stats", None)
        return {"status": "ok", "model": model_name, **({"engine": stats()} if stats else {})}

    @app.get("/v1/models")
    async def models() -> dict:
        card = {"id": model_name, "object": "model", "created": created, "owned_by": "multiharness"}
        return {"object": "list", "data": [{**card, "root": model_name, "max_model_len": policy.max_model_len}]}

    @app.post("/v1/chat/completions")
    async def chat_completions(http_request: Request):
        try:
            body = await http_request.json()
        except ValueError:
            return _error("body must be JSON")
        if not isinstance(body, dict):
            return _error("body must be a JSON object")
        if body.get("model") not in (None, "", model_name):
            return _error(
                f"The model `{body.get('model')}` does not exist. This server serves {model_name!r}.",
                status=404,
                param="model",
            )
        try:
            loop = asyncio.get_running_loop()
            request = await loop.run_in_executor(workers, _prepare, policy, body, tokenizer_lock)
            future = await loop.run_in_executor(workers, policy.submit, request)  # the scripted policy answers here
            samples = await _unless_disconnected(future, http_request)
            if samples is None:
                return Response(status_code=499)  # nginx's "client closed request": nobody reads it
            response = await loop.run_in_executor(
                workers, _answer, policy, model_name, body, request, samples, tokenizer_lock
            )
        except _BadRequest as exc:
            return _error(str(exc), status=exc.status, param=exc.param)
        except ValueError as exc:
            return _error(str(exc))
        except Exception as exc:  # noqa: BLE001 - a template or model error goes back to the caller, named
            logger.exception("chat completion failed")
            return _error(f"{type(exc).__name__}: {exc}", status=500)
        if body.get("stream"):
            return StreamingResponse(_sse(response), media_type="text/event-stream")
        return response

    return app


class EngineServer:
    """An engine app on a port, served by uvicorn from a background thread.

    `start()` returns the base URL (`http://host:port`; OpenAI clients use `url + "/v1"`);
    `port=0` picks a free port. Use it as a context manager to stop it on exit.
    """

    def __init__(self, policy, *, model_name: str, host: str = "127.0.0.1", port: int = 0):
        self.policy = policy
        self.model_name = model_name
        self.host = host
        self.port = port
        self.app = create_app(policy, model_name=model_name)
        self._server = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL of the running server, without `/v1`."""
        return f"http://{self.host}:{self.port}"

    def start(self, timeout_s: float = 30.0) -> str:
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError as exc:
            sock.close()
            raise RuntimeError(
                f"engine port {self.host}:{self.port} is not free ({exc.strerror}); pass port=0 to pick one"
            ) from exc
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", timeout_keep_alive=30)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True, name="multiharness-engine-http"
        )
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"engine server did not start on {self.url} within {timeout_s:.0f}s")
            time.sleep(0.02)
        logger.info("engine serving %s at %s", self.model_name, self.url)
        return self.url

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        close = getattr(self.policy, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> "EngineServer":
        if self._server is None:
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def serve(
    model_path: str | Path,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    model_name: str | None = None,
    cache_mb: float | None = None,
    dtype: str = "float32",
) -> None:
    """Load a local model folder and serve it until interrupted (`python -m multiharness engine`).

    `cache_mb` is the prefix cache's budget (None: `DEFAULT_CACHE_MB`; 0 turns it off); `dtype` is
    what the weights are served in (`multiharness.model.DTYPES`).
    """
    import uvicorn

    from ..model import load_model_and_tokenizer
    from .generation import LocalEngine

    model, tokenizer = load_model_and_tokenizer(Path(model_path), dtype=dtype)
    name = model_name or Path(model_path).name
    engine = LocalEngine(model, tokenizer, cache_mb=DEFAULT_CACHE_MB if cache_mb is None else cache_mb)
    app = create_app(engine, model_name=name)
    logger.info("serving %s on http://%s:%d/v1", name, host, port)
    uvicorn.run(app, host=host, port=port, log_level="info")
