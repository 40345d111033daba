"""Sampling with the KV cache, returning each sampled token's behaviour log-probability.

The engine's one job beyond `model.generate`: for every sampled token, report the
log-probability it had under the distribution it was actually drawn from (vLLM's
`processed_logprobs`). That number is the behaviour policy of an RL rollout; the trainer
divides by it. `generate(output_scores=True)` gives the processed scores too, but it cannot
give a per-request seed, a per-request temperature inside one batch or stop strings checked
on decoded text, so the loop is written out here (prefill, then one token per step on the
cache, as `generate` does).

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

Requests queue: one worker thread takes every request waiting (up to `max_batch_rows` rows)
and decodes them as one left-padded batch, so concurrent harness sessions share the model.
Left padding changes the logits of a batched row by float rounding only (about 1e-6 in fp32).
Generation runs under `torch.no_grad()` with the model in eval mode; a model that was training
(colocated with a trainer) is put back in training mode afterwards.
"""

import inspect
import logging
import math
import queue
import random
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field

import torch

__all__ = ["SamplingParams", "GenerationRequest", "Sample", "LocalEngine"]

logger = logging.getLogger(__name__)

MASKED_LOGPROB = -9999.0
"""What a top-logprob entry outside the sampling support reports (vLLM's stand-in for -inf; JSON has no infinity)."""


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


@dataclass
class _Job:
    request: GenerationRequest
    future: Future


class _Row:
    """One choice being decoded."""

    def __init__(self, request: GenerationRequest, choice: int, budget: int, device: torch.device):
        params = request.params
        self.request = request
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


class LocalEngine:
    """The transformers policy behind the engine server: queued, batched, KV-cached sampling.

    Build it from a loaded `model, tokenizer` pair (a trainer's own objects when colocated, so
    rollouts always see the current weights) and call `generate(request)` from any thread.
    """

    def __init__(self, model, tokenizer, *, max_batch_rows: int = 16, max_model_len: int | None = None):
        self.model = model
        self.tokenizer = tokenizer
        self.max_batch_rows = max_batch_rows
        self.max_model_len = max_model_len or getattr(model.config, "max_position_embeddings", None) or 2048
        self.eos_token_ids = _eos_token_ids(model, tokenizer)
        # transformers 5.24 names the KV cache argument `cache`; older model code says `past_key_values`.
        forward = inspect.signature(model.forward).parameters
        self._cache_kwarg = "cache" if "cache" in forward else "past_key_values"
        self._pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(self.eos_token_ids)
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._closed = False

    # --- public -------------------------------------------------------------------------

    def generate(self, request: GenerationRequest) -> list[Sample]:
        """Sample `request.params.n` choices; blocks until this request's batch is done."""
        return self.submit(request).result()

    def submit(self, request: GenerationRequest) -> Future:
        """Queue a request; the future resolves to its list of `Sample`s."""
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

    def close(self) -> None:
        """Stop the worker thread once the queued requests are done."""
        self._closed = True
        if self._worker is not None:
            self._queue.put(None)
            self._worker.join(timeout=60)
            self._worker = None

    # --- queue ----------------------------------------------------------------------------

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

    def _work(self) -> None:
        carry: _Job | None = None
        while True:
            job = carry or self._queue.get()
            carry, stop_after = None, False
            if job is None:
                return
            jobs, rows = [job], job.request.params.n
            # Take what else is waiting, up to the batch size: these sessions asked at the same time.
            while rows < self.max_batch_rows:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop_after = True
                    break
                if rows + nxt.request.params.n > self.max_batch_rows:
                    carry = nxt  # first in the next batch
                    break
                jobs.append(nxt)
                rows += nxt.request.params.n
            jobs = [j for j in jobs if j.future.set_running_or_notify_cancel()]
            if jobs:
                self._run(jobs)
            if stop_after:
                return

    def _run(self, jobs: list[_Job]) -> None:
        logger.debug("decoding %d request(s), %d row(s)", len(jobs), sum(j.request.params.n for j in jobs))
        try:
            results = self.generate_batch([j.request for j in jobs])
        except Exception as exc:  # noqa: BLE001 - handed to every caller in the batch
            logger.exception("generation failed for a batch of %d request(s)", len(jobs))
            for j in jobs:
                j.future.set_exception(exc)
            return
        for j, samples in zip(jobs, results):
            j.future.set_result(samples)

    # --- decoding -------------------------------------------------------------------------

    def generate_batch(self, requests: list[GenerationRequest]) -> list[list[Sample]]:
        """Decode several requests as one batch, in the calling thread (the queue calls this)."""
        for request in requests:
            self._check(request)
        model = self.model
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                return self._decode(requests)
        finally:
            if was_training:
                model.train()

    def _decode(self, requests: list[GenerationRequest]) -> list[list[Sample]]:
        from transformers import DynamicCache

        model = self.model
        device = next(model.parameters()).device
        lengths = [len(r.prompt_ids) for r in requests]
        width = max(lengths)
        input_ids = torch.full((len(requests), width), self._pad_id, dtype=torch.long, device=device)
        mask = torch.zeros((len(requests), width), dtype=torch.long, device=device)
        for i, r in enumerate(requests):
            input_ids[i, width - lengths[i] :] = torch.tensor(r.prompt_ids, dtype=torch.long)
            mask[i, width - lengths[i] :] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        cache = DynamicCache()
        out = model(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
            **{self._cache_kwarg: cache},
        )
        logits = out.logits[:, -1, :]

        # One prefill per request, then one row per choice: the cache is copied, not recomputed.
        owner = [i for i, r in enumerate(requests) for _ in range(r.params.n)]
        rows: list[_Row] = []
        for i, r in enumerate(requests):
            budget = self.max_model_len - lengths[i]
            if r.params.max_tokens is not None:
                budget = min(budget, r.params.max_tokens)
            rows += [_Row(r, choice, budget, device) for choice in range(r.params.n)]
        if owner != list(range(len(requests))):
            index = torch.tensor(owner, device=device)
            cache.batch_select_indices(index)
            logits, mask = logits[index], mask[index]
        next_position = mask.sum(-1)
        active = list(range(len(rows)))

        while True:
            tokens = [self._pick(rows[k], logits[j]) for j, k in enumerate(active)]
            keep = [j for j, k in enumerate(active) if rows[k].finish_reason is None]
            if not keep:
                break
            if len(keep) < len(active):
                index = torch.tensor(keep, device=device)
                cache.batch_select_indices(index)
                mask, next_position = mask[index], next_position[index]
                tokens = [tokens[j] for j in keep]
                active = [active[j] for j in keep]
            mask = torch.cat([mask, mask.new_ones((len(active), 1))], dim=-1)
            out = model(
                input_ids=torch.tensor(tokens, dtype=torch.long, device=device)[:, None],
                attention_mask=mask,
                position_ids=next_position[:, None],
                use_cache=True,
                **{self._cache_kwarg: cache},
            )
            logits = out.logits[:, -1, :]
            next_position = next_position + 1

        results: list[list[Sample]] = [[] for _ in requests]
        for i, row in zip(owner, rows):
            results[i].append(row.sample())
        return results

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
