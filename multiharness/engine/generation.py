"""Continuous-batching sampling with a prefix cache, returning each sampled token's behaviour log-probability.

The engine's one job beyond `model.generate`: for every sampled token, report the
log-probability it had under the distribution it was actually drawn from (vLLM's
`processed_logprobs`). That number is the behaviour policy of an RL rollout; the trainer
divides by it. On top of that it does what makes vLLM fast at agent work: a prompt that
shares a prefix with anything computed before prefills only the rest (`prefix_cache`), and
requests join and leave the running batch between two tokens (`batch_cache`).

Why this is written here and not an adapter over transformers' continuous batching
(`generate_batch` / `ContinuousBatchingManager`, transformers 5.24), which has paged attention
and block sharing: it samples every request with one `torch.multinomial` from the global
generator (no per-request seed, and it reseeds the process with `torch.manual_seed`, which a
colocated trainer would feel); greedy or sampled is one setting for the whole manager, so a
temperature-0 request cannot share a batch with a sampled one; it ends a request on end-of-turn
ids only (no stop strings); it returns the sampled token's logprob but no top-logprob
alternatives; and it switches the model's attention implementation to a paged one, which the
trainer sharing that model object would then train with. Each of those is part of this
engine's contract, so the loop, the two caches and the scheduler are here.

Rules, in the order they apply to the next-token logits (vLLM's order):

- `temperature > 0`: divide by it, keep the `top_k` largest (`top_k` of 0 or -1: all), keep
  the smallest set of tokens whose probability reaches `top_p`, renormalise. The reported
  logprob is the sampled token's log-probability in that renormalised distribution.
- `temperature == 0`: greedy. The token is the argmax of the raw logits and the reported
  logprob is `log_softmax(raw logits)` at it: greedy samples from nothing, and vLLM reports
  greedy logprobs at temperature 1 (top-k and top-p do not apply).
- `seed`: choice `i` of a request draws from its own `torch.Generator` seeded `seed + i`, so a
  seeded request is reproducible and its `n` choices differ. Without a seed the generator is
  seeded at random.
- A choice ends on an end-of-turn token (kept in `token_ids`, as vLLM does), on a stop string
  found in the decoded text (the tokens that produced it are kept; the text is cut by the
  server), on a stop token id, or after `max_tokens` (default: the rest of the context window).

Scheduling, by one worker thread that owns the model while it has work:

- Each iteration prefills up to `PREFILL_TOKENS` prompt tokens of the waiting requests, first
  come first served, then decodes one token for every running row. A long prompt is prefilled
  in pieces between decode steps, so running rows keep going and a short request starts as
  soon as the prompts before it are in; rows leave the batch the step they finish.
- A request's prefill starts from the longest cached prefix of its prompt (all but its last
  token at most: the last one's logits are needed) and stores the prompt's blocks when done; a
  finished row stores its completion's blocks too, so the next call of the same session, which
  re-sends prompt + completion + tool output, prefills only the tool output. Reuse is exact up
  to float rounding: the cached keys and values are those the same weights computed for the
  same ids at the same positions.
- The cache belongs to the weights. Colocated with a trainer the engine serves the trainer's
  own model object; an optimiser step changes the parameters in place, which bumps their
  version counters, and the engine drops the cache on the next request that sees a new
  version (`reset_cache()` does it explicitly, for weights replaced without an in-place op).
  A row that was computed before the change never stores its blocks.
- A cancelled future (the HTTP client went away) frees its rows at the next token boundary.
- Generation runs under `torch.no_grad()` with the model in eval mode; a model that was
  training is put back in training mode before the last result of a busy period is handed out.
"""

import logging
import math
import queue
import random
import threading
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field

import torch

from .batch_cache import BatchCache
from .prefix_cache import PrefixCache

__all__ = ["SamplingParams", "GenerationRequest", "Sample", "LocalEngine", "DEFAULT_CACHE_MB"]

logger = logging.getLogger(__name__)

MASKED_LOGPROB = -9999.0
"""What a top-logprob entry outside the sampling support reports (vLLM's stand-in for -inf; JSON has no infinity)."""

DEFAULT_CACHE_MB = 2048
"""Prefix-cache budget: SmolLM2-135M keeps 45 KB per token in fp32, so 2 GB holds ~46k tokens, the
shared prefix of all four harnesses (5.5–5.9k tokens each) plus a GRPO group's conversations."""

PREFILL_TOKENS = 512
"""Prompt tokens computed between two decode steps: about one second on 2 cores, so running rows
slow down but never stall behind a 6k-token prompt; smaller pieces cost more per token."""


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one request; the defaults are plain sampling from the model at temperature 1."""

    temperature: float = 1.0
    """0 is greedy; otherwise logits are divided by it before softmax."""
    top_p: float = 1.0
    """Nucleus mass kept, in (0, 1]; 1 keeps the whole vocabulary."""
    top_k: int = -1
    """Largest logits kept; 0 or -1 keeps all."""
    max_tokens: int | None = None
    """Sampled-token cap per choice; None runs to the end of the context window."""
    stop: tuple[str, ...] = ()
    """Strings that end a choice when they appear in its decoded text."""
    stop_token_ids: tuple[int, ...] = ()
    """Extra token ids that end a choice (besides the model's end-of-turn tokens)."""
    seed: int | None = None
    """Seed of choice 0; choice i uses seed + i."""
    n: int = 1
    """Independent choices for the same prompt."""
    top_logprobs: int = 0
    """Most likely alternatives to report per position (from the processed distribution)."""
    ignore_eos: bool = False
    """Keep sampling through end-of-turn tokens (benchmarks only)."""


@dataclass
class GenerationRequest:
    """One chat request, already rendered: the token ids the model sees, plus the chat it came from."""

    prompt_ids: list[int]
    """The prompt, rendered by the chat template with the request's tools."""
    params: SamplingParams = field(default_factory=SamplingParams)
    """The sampling policy for this request."""
    messages: list[dict] = field(default_factory=list)
    """The request's messages (a scripted policy reads them; the model does not)."""
    tools: list[dict] | None = None
    """The request's tool schemas, OpenAI format."""


@dataclass
class Sample:
    """One choice: the sampled ids and, aligned with them, their behaviour logprobs."""

    token_ids: list[int]
    """Sampled ids, including the end-of-turn token when the model emitted one."""
    logprobs: list[float]
    """Log-probability of each sampled id under the distribution it was drawn from."""
    finish_reason: str
    """"stop" (end-of-turn token, stop string or stop id) or "length"."""
    top_logprobs: list[list[tuple[int, float]]] | None = None
    """Per position, the most likely (id, logprob) pairs of the processed distribution."""
    stop_string: str | None = None
    """The stop string that ended the choice, when one did."""
    cached_tokens: int = 0
    """Prompt tokens whose keys and values came from the prefix cache (the same for every choice of a request)."""


class _Job:
    """One request, from the queue to its samples."""

    def __init__(self, request: GenerationRequest, future: Future):
        self.request = request
        self.future = future
        self.past = None
        """Its prompt's cache while the prefill is under way (a `DynamicCache` of one row)."""
        self.computed = 0
        """Prompt tokens whose keys and values are in `past`."""
        self.cached_tokens = 0
        """Prompt tokens that came from the prefix cache."""
        self.weights = None
        """The weights version its keys and values were computed with."""
        self.logits: torch.Tensor | None = None
        self.rows: list[_Row] = []
        self.open_rows = 0


class _Row:
    """One choice being decoded."""

    def __init__(self, job: _Job, choice: int, budget: int, device: torch.device):
        params = job.request.params
        self.job = job
        self.params = params
        self.budget = budget
        self.token_ids: list[int] = []
        self.logprobs: list[float] = []
        self.top_logprobs: list[list[tuple[int, float]]] | None = [] if params.top_logprobs else None
        self.finish_reason: str | None = None
        self.stop_string: str | None = None
        self.generator = None
        if params.temperature > 0:
            self.generator = torch.Generator(device=device)
            seed = params.seed + choice if params.seed is not None else random.getrandbits(63)
            self.generator.manual_seed(seed)

    def sample(self) -> Sample:
        return Sample(
            token_ids=self.token_ids,
            logprobs=self.logprobs,
            finish_reason=self.finish_reason or "length",
            top_logprobs=self.top_logprobs,
            stop_string=self.stop_string,
            cached_tokens=self.job.cached_tokens,
        )


def _processed_logprobs(logits: torch.Tensor, temperature: float, top_p: float = 1.0, top_k: int = -1) -> torch.Tensor:
    """Log-probabilities of the distribution sampled from, for one row of raw logits (see the module rules)."""
    logits = logits.float()
    if temperature <= 0:
        return torch.log_softmax(logits, dim=-1)
    scaled = logits / temperature
    if 0 < top_k < scaled.shape[-1]:
        kth = torch.topk(scaled, top_k).values[-1]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = torch.sort(scaled, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        # Keep a token while the mass strictly before it is below top_p: the smallest set reaching top_p.
        before = torch.cumsum(probs, dim=-1) - probs
        drop_sorted = before >= top_p
        drop_sorted[0] = False
        drop = torch.zeros_like(drop_sorted).scatter(0, order, drop_sorted)
        scaled = scaled.masked_fill(drop, float("-inf"))
    return torch.log_softmax(scaled, dim=-1)


def _eos_token_ids(model, tokenizer) -> set[int]:
    """The end-of-turn ids: the generation config's (SmolLM2: <|im_end|>) and the tokenizer's."""
    ids: set[int] = set()
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(configured, int):
        ids.add(configured)
    elif configured:
        ids.update(int(i) for i in configured)
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    return ids


def _full_attention_layers(model) -> int:
    """The model's layer count, once it is clear that every layer attends to the whole past (as `BatchCache` needs)."""
    config = model.config.get_text_config()
    kinds = set(getattr(config, "layer_types", None) or ["full_attention"])
    if kinds != {"full_attention"}:
        raise ValueError(
            f"the local engine decodes full-attention models only; {config.model_type} has {sorted(kinds)} layers. "
            "Serve this model with vLLM instead."
        )
    return config.num_hidden_layers


class LocalEngine:
    """The transformers policy behind the engine server: continuous batching over a prefix-cached model.

    Build it from a loaded `model, tokenizer` pair (a trainer's own objects when colocated, so
    rollouts always see the current weights) and call `generate(request)` or `submit(request)`
    from any thread. `cache_mb` is the prefix cache's budget (0 turns it off).
    """

    def __init__(
        self,
        model,
        tokenizer,
        *,
        max_batch_rows: int = 16,
        max_model_len: int | None = None,
        cache_mb: float = DEFAULT_CACHE_MB,
    ):
        self.model = model
        self.tokenizer = tokenizer
        self.max_batch_rows = max_batch_rows
        self.max_model_len = max_model_len or getattr(model.config, "max_position_embeddings", None) or 2048
        self.eos_token_ids = _eos_token_ids(model, tokenizer)
        self.prefix_cache = PrefixCache(int(cache_mb * 2**20))
        self._batch = BatchCache(_full_attention_layers(model), max_batch_rows)
        self._running: list[_Row] = []  # row i of the batch is self._running[i]
        self._waiting: deque[_Job] = deque()
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._resets = 0
        self._cancelled = 0
        self._weights = self._weights_version()
        self._was_training: bool | None = None  # set while the worker holds the model in eval mode
        self._worker: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._closed = False

    # --- public -------------------------------------------------------------------------

    def generate(self, request: GenerationRequest) -> list[Sample]:
        """Sample `request.params.n` choices; blocks until they are done."""
        return self.submit(request).result()

    def submit(self, request: GenerationRequest) -> Future:
        """Queue a request; the future resolves to its list of `Sample`s. Cancelling it frees its rows."""
        self._check(request)
        if self._closed:
            raise RuntimeError("the engine is closed; create a new LocalEngine to generate again")
        with self._start_lock:
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="multiharness-engine", daemon=True)
                self._worker.start()
        future: Future = Future()
        self._queue.put(_Job(request, future))
        return future

    def generate_batch(self, requests: list[GenerationRequest]) -> list[list[Sample]]:
        """Sample several requests at once (they share the running batch); one list of samples per request."""
        for request in requests:
            self._check(request)
        futures = [self.submit(request) for request in requests]
        return [future.result() for future in futures]

    def reset_cache(self) -> None:
        """Drop the prefix cache: the weights changed. Call it after an update that replaces the model's
        tensors without an in-place op (`param.data = ...`); optimiser steps are noticed on their own."""
        self._resets += 1
        self.prefix_cache.clear()

    def stats(self) -> dict:
        """Rows decoding, requests waiting and cancelled, the running rows' memory, the prefix cache's counters."""
        return {
            "running_rows": len(self._running),
            "waiting_requests": len(self._waiting) + self._queue.qsize(),
            "cancelled_requests": self._cancelled,
            "batch_kv_bytes": self._batch.nbytes(),
            "prefix_cache": self.prefix_cache.stats(),
        }

    def close(self) -> None:
        """Stop the worker thread once the queued requests are done."""
        self._closed = True
        if self._worker is not None:
            self._queue.put(None)
            self._worker.join(timeout=60)
            self._worker = None

    # --- checks -------------------------------------------------------------------------

    def _check(self, request: GenerationRequest) -> None:
        params = request.params
        if not request.prompt_ids:
            raise ValueError("empty prompt: render at least one message")
        if len(request.prompt_ids) >= self.max_model_len:
            raise ValueError(
                f"This model's maximum context length is {self.max_model_len} tokens. However, your "
                f"messages resulted in {len(request.prompt_ids)} tokens. Please reduce the length of the messages."
            )
        if params.max_tokens is not None and params.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {params.max_tokens}")
        if params.n < 1 or params.n > self.max_batch_rows:
            raise ValueError(f"n must be between 1 and {self.max_batch_rows}, got {params.n}")

    def _weights_version(self) -> tuple[int, int]:
        """Changes whenever a parameter is modified in place (autograd's version counters) or the cache is reset."""
        return self._resets, sum(p._version for p in self.model.parameters())

    def _weights_now(self) -> tuple[int, int]:
        """The current weights version; a new one drops the prefix cache, whose entries belong to the old weights."""
        version = self._weights_version()
        if version != self._weights:
            self._weights = version
            self.prefix_cache.clear()
            logger.info("the model's weights changed: prefix cache dropped")
        return version

    # --- the worker -----------------------------------------------------------------------

    def _work(self) -> None:
        stopping = False
        with torch.no_grad():
            while True:
                if not (self._waiting or self._running):
                    if stopping:
                        return
                    job = self._queue.get()
                    if job is None:
                        return
                    self._waiting.append(job)
                stopping = self._take_queued() or stopping
                self._drop_cancelled()
                if self._was_training is None:
                    self._was_training = self.model.training
                    self.model.eval()
                done = self._prefill_step() + self._decode_step()
                if not (self._waiting or self._running) and self._queue.empty():
                    self._release_model()
                for job in done:
                    if job.future.set_running_or_notify_cancel():
                        job.future.set_result([row.sample() for row in job.rows])

    def _take_queued(self) -> bool:
        """Move queued requests to the waiting line; True when `close()` asked the worker to stop."""
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                return False
            if job is None:
                return True
            self._waiting.append(job)

    def _release_model(self) -> None:
        if self._was_training:
            self.model.train()
        self._was_training = None

    def _drop_cancelled(self) -> None:
        for job in [j for j in self._waiting if j.future.cancelled()]:
            self._waiting.remove(job)
            self._cancelled += 1
            logger.info("request cancelled before its prefill ended (%d prompt tokens)", len(job.request.prompt_ids))
        rows = [i for i, row in enumerate(self._running) if row.job.future.cancelled()]
        jobs = {id(self._running[i].job) for i in rows}
        for i in reversed(rows):
            self._remove_row(i)
        if rows:
            self._cancelled += len(jobs)
            logger.info("%d request(s) cancelled: freed %d row(s)", len(jobs), len(rows))

    def _fail(self, jobs: list[_Job], error: Exception) -> None:
        for job in jobs:
            if job.future.set_running_or_notify_cancel():
                job.future.set_exception(error)

    # --- prefill --------------------------------------------------------------------------

    def _prefill_step(self) -> list[_Job]:
        """Prefill up to `PREFILL_TOKENS` prompt tokens, first come first served; start the rows of finished prompts."""
        done, budget = [], PREFILL_TOKENS
        while budget > 0 and self._waiting:
            job = self._waiting[0]
            if len(self._running) + job.request.params.n > self.max_batch_rows:
                break  # its rows start when running ones finish
            try:
                budget -= self._prefill(job, budget)
                if job.computed < len(job.request.prompt_ids):
                    break  # the rest of this prompt goes after the next decode step
                self._waiting.popleft()
                if self._start_rows(job):
                    done.append(job)
            except Exception as exc:  # noqa: BLE001 - the request fails, the engine goes on
                logger.exception("prefill failed for a prompt of %d tokens", len(job.request.prompt_ids))
                self._waiting.remove(job)
                self._fail([job], exc)
        return done

    def _prefill(self, job: _Job, budget: int) -> int:
        """Compute the next piece of `job`'s prompt (at most `budget` tokens); returns the tokens computed."""
        from transformers import DynamicCache

        ids = job.request.prompt_ids
        if job.past is None:
            job.weights = self._weights_now()
            job.cached_tokens, past = self.prefix_cache.lookup(ids, max_tokens=len(ids) - 1)
            job.past = DynamicCache(past or None)
            job.computed = job.cached_tokens
        start = job.computed
        end = min(len(ids), start + budget)
        device = self._device()
        out = self.model(
            input_ids=torch.tensor([ids[start:end]], dtype=torch.long, device=device),
            position_ids=torch.arange(start, end, device=device)[None],
            cache=job.past,
            use_cache=True,
            logits_to_keep=1,
        )
        job.computed = end
        job.logits = out.logits[0, -1]
        return end - start

    def _start_rows(self, job: _Job) -> bool:
        """Store the prompt's blocks, sample each choice's first token, seat those that go on; True if none do."""
        ids, params = job.request.prompt_ids, job.request.params
        past = [(layer.keys, layer.values) for layer in job.past.layers]
        if self._weights_now() == job.weights:
            self.prefix_cache.store(ids, [(keys[0], values[0]) for keys, values in past])
        budget = self.max_model_len - len(ids)
        if params.max_tokens is not None:
            budget = min(budget, params.max_tokens)
        device = self._device()
        job.rows = [_Row(job, choice, budget, device) for choice in range(params.n)]
        for row in job.rows:
            self._pick(row, job.logits)
        going_on = [row for row in job.rows if row.finish_reason is None]
        if going_on:
            self._batch.add(past, copies=len(going_on))
            self._running += going_on
        job.past = job.logits = None
        job.open_rows = len(going_on)
        return not going_on

    # --- decode ---------------------------------------------------------------------------

    def _decode_step(self) -> list[_Job]:
        """One token for every running row; rows that finish leave the batch. Returns the requests now complete."""
        if not self._running:
            return []
        mask, positions = self._batch.step_inputs()
        tokens = torch.tensor([[row.token_ids[-1]] for row in self._running], dtype=torch.long, device=mask.device)
        try:
            logits = self.model(
                input_ids=tokens, attention_mask=mask, position_ids=positions, cache=self._batch, use_cache=True
            ).logits[:, -1, :]
        except Exception as exc:  # noqa: BLE001 - these requests fail, the engine goes on
            logger.exception("decode step failed for %d row(s)", len(self._running))
            self._fail(list({id(row.job): row.job for row in self._running}.values()), exc)
            while self._running:
                self._remove_row(len(self._running) - 1)
            return []
        self._batch.advance()
        for row, row_logits in zip(self._running, logits):
            self._pick(row, row_logits)
        done = []
        for i in reversed(range(len(self._running))):
            row = self._running[i]
            if row.finish_reason is None:
                continue
            self._store_completion(i, row)
            self._remove_row(i)
            row.job.open_rows -= 1
            if not row.job.open_rows:
                done.append(row.job)
        return done

    def _store_completion(self, i: int, row: _Row) -> None:
        """Keep the blocks of prompt + completion: the session's next call starts with them."""
        if self._weights_now() == row.job.weights:
            # The last sampled token was never fed to the model, so its keys and values do not exist yet.
            self.prefix_cache.store(row.job.request.prompt_ids + row.token_ids[:-1], self._batch.row_past(i))

    def _remove_row(self, i: int) -> None:
        self._batch.remove(i)
        self._running[i] = self._running[-1]
        self._running.pop()

    def _device(self) -> torch.device:
        return next(self.model.parameters()).device

    def _pick(self, row: _Row, logits: torch.Tensor) -> int:
        """Choose the next token of one row, record its logprob, and decide whether the row is done."""
        params = row.params
        logprobs = _processed_logprobs(logits, params.temperature, params.top_p, params.top_k)
        if params.temperature <= 0:
            token = int(torch.argmax(logits))
        else:
            # Inverse-CDF draw: one uniform per token (torch.multinomial is ~10x slower on a 50k vocabulary).
            # side="right" never lands on a token of probability 0.
            cdf = torch.cumsum(logprobs.exp(), dim=-1)
            u = torch.rand(1, generator=row.generator, device=cdf.device) * cdf[-1]
            token = min(int(torch.searchsorted(cdf, u, right=True)), cdf.shape[-1] - 1)
            if not math.isfinite(float(logprobs[token])):  # u rounded up to the total: take the mode
                token = int(torch.argmax(logprobs))
        row.token_ids.append(token)
        row.logprobs.append(float(logprobs[token]))
        if row.top_logprobs is not None:
            values, ids = torch.topk(logprobs, min(params.top_logprobs, logprobs.shape[-1]))
            row.top_logprobs.append(
                [(int(i), float(v) if math.isfinite(v) else MASKED_LOGPROB) for v, i in zip(values.tolist(), ids)]
            )
        if (token in self.eos_token_ids and not params.ignore_eos) or token in params.stop_token_ids:
            row.finish_reason = "stop"
        elif params.stop and self._hit_stop(row):
            row.finish_reason = "stop"
        elif len(row.token_ids) >= row.budget:
            row.finish_reason = "length"
        return token

    def _hit_stop(self, row: _Row) -> bool:
        text = self.tokenizer.decode(row.token_ids, skip_special_tokens=True)
        # Only the end of the text can hold a new match: the last token's piece plus the stop string.
        tail = text[-(max(len(s) for s in row.params.stop) + 32) :]
        for stop in row.params.stop:
            if stop and stop in tail:
                row.stop_string = stop
                return True
        return False
