"""The model endpoint a harness talks to: engine → capture proxy, opened and closed in one place.

Every harness loop (the `episode` command, the training scripts, the evaluator, the Spaces) needs
the same stack: an engine that returns token ids and behaviour logprobs, and OpenEnv's capture
proxy in front of it. `open_endpoint` builds it from what the user has and tears it down after:

    with open_endpoint(DEFAULT_MODEL_DIR) as endpoint:          # the local engine, in this process
    with open_endpoint("http://gpu-box:8000") as endpoint:      # a running engine (vLLM, or ours)
    with open_endpoint(policy="scripted", tasks=tasks) as endpoint:   # reference solutions: plumbing checks
    with open_endpoint(LocalEngine(model, tokenizer), model_name="policy") as endpoint:  # a trainer's own model
        result, trace = run_episode("codex", task, endpoint.proxy, model=endpoint.model)

An engine found at a URL is asked for its model's name and probed for its capture level
(OpenEnv's `validate_llm`); the engines started here return token ids and processed logprobs,
so they are "tokens" without a probe.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from .capture import DEFAULT_MAX_MODEL_CALLS, DEFAULT_MAX_TOKENS, DEFAULT_WALL_TIME_S, CaptureError, CaptureProxy, start_capture
from .paths import DEFAULT_MODEL_DIR
from .tasks import Task, find_task, look_command, solution_command

__all__ = ["POLICIES", "Endpoint", "open_endpoint"]

POLICIES = ("model", "scripted")
"""What answers the harness's model calls: the model, or an expert episode played by script (`ScriptedPolicy`:
look at the input files, run the reference solution, submit)."""
_MODELS_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Endpoint:
    """Where a harness sends its model calls."""

    proxy: CaptureProxy
    """The capture proxy: give it to `run_episode` or `HarnessSessionFactory`."""
    model: str
    """The served model's name, which the harness puts in its requests."""
    capture_level: str
    """"tokens" when the engine returns token ids and processed logprobs (trainable)."""
    engine_url: str
    """The engine behind the proxy."""

    def prompt_tokens(self) -> tuple[int, int] | None:
        """(prompt tokens, of which served from the prefix cache) the engine has seen so far; None when
        the engine does not report them (the project's engine does, on /health)."""
        try:
            cache = httpx.get(f"{self.engine_url}/health", timeout=_MODELS_TIMEOUT_S).json()["engine"]["prefix_cache"]
            return int(cache["query_tokens"]), int(cache["hit_tokens"])
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            return None


def _served_name(url: str) -> str:
    try:
        return httpx.get(f"{url}/v1/models", timeout=_MODELS_TIMEOUT_S).json()["data"][0]["id"]
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as error:
        raise CaptureError(
            f"no model list at {url}/v1/models ({type(error).__name__}: {error}): start the engine first "
            "(python -m multiharness engine, or vllm serve), or give a model folder instead of a URL"
        ) from error


def _scripted(model_dir: Path, tasks: Sequence[Task]):
    from transformers import AutoTokenizer

    from .engine import ScriptedPolicy

    if not tasks:
        raise ValueError("the scripted policy plays the tasks' reference solutions: give it the tasks")
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    if len(tasks) == 1:
        return ScriptedPolicy(tokenizer, solution_command(tasks[0]), look_command=look_command(tasks[0]))
    tasks = list(tasks)
    return ScriptedPolicy(tokenizer, lambda messages: solution_command(find_task(tasks, messages)),
                          look_command=lambda messages: look_command(find_task(tasks, messages)))


@contextlib.contextmanager
def open_endpoint(
    source: str | Path | object = DEFAULT_MODEL_DIR,
    *,
    model_name: str | None = None,
    policy: str = "model",
    tasks: Sequence[Task] = (),
    max_tokens: int = DEFAULT_MAX_TOKENS,
    max_model_calls: int = DEFAULT_MAX_MODEL_CALLS,
    wall_time_s: float | None = DEFAULT_WALL_TIME_S,
    dtype: str = "float32",
) -> Iterator[Endpoint]:
    """Connect to an engine URL, or serve a model folder here, behind a capture proxy; close both after.

    `source` is an `http(s)://` URL of a running engine, a model folder, or an engine object
    (a `LocalEngine` on a model that is training: served as it is, named `model_name`). With
    `policy="scripted"` the folder gives only the tokenizer, and expert episodes of `tasks`
    answer: a look at the input files, the reference solution, the submission (the task of each
    call is found from the instruction in its prompt). A model folder is served in `dtype`, one of
    `multiharness.model.DTYPES`.
    """
    from .engine import EngineServer, LocalEngine

    if policy not in POLICIES:
        raise ValueError(f"Unknown policy {policy!r}. Expected one of {list(POLICIES)}.")
    limits = dict(max_tokens=max_tokens, max_model_calls=max_model_calls, wall_time_s=wall_time_s)
    with contextlib.ExitStack() as stack:
        if isinstance(source, str) and source.startswith(("http://", "https://")):
            if policy == "scripted":
                raise ValueError("the scripted policy runs here: give a model folder (its tokenizer), not a URL")
            url = source.rstrip("/").removesuffix("/v1")
            name, level = _served_name(url), None  # the proxy measures what a foreign engine returns
        else:
            if not isinstance(source, (str, Path)):
                engine_policy, name = source, model_name or "policy"
            elif policy == "scripted":
                engine_policy, name = _scripted(Path(source), tasks), "scripted"
            else:
                from .model import DTYPES, load_model_and_tokenizer

                if dtype not in DTYPES:
                    raise ValueError(f"Unknown dtype {dtype!r}. Expected one of {list(DTYPES)}.")
                loaded = load_model_and_tokenizer(Path(source), dtype=dtype)
                engine_policy, name = LocalEngine(*loaded), model_name or Path(source).name
            url = stack.enter_context(EngineServer(engine_policy, model_name=name)).url
            level = "tokens"  # the engines here return token ids and processed logprobs
        proxy = stack.enter_context(start_capture(url, name, capture_level=level, **limits))
        yield Endpoint(proxy, name, proxy.capture_level, url)
