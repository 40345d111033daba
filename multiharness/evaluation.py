"""Evaluate a model in every loop: the whitebox tool loop and the four harnesses, pair by pair.

An evaluation is a set of pairs (task × loop × sample), each run as one episode against one
endpoint (`multiharness.endpoint`: the local engine, any OpenAI-compatible server, or the
scripted policy) and written to its own JSON file the moment it ends:

    OUTPUT/summary.json                       identity, coverage, pass@1 with intervals, ...
    OUTPUT/pairs/<task>--<loop>[--<sample>].json

    evaluation = Evaluation(output, identity, pairs)   # refuses a folder holding another evaluation
    evaluation.run(endpoint, settings, concurrency=4)  # runs the pairs not graded yet
    summary = evaluation.summary()

Rules:

- A pair file is written atomically (a temporary file renamed over it), so a killed run leaves
  whole files only. Re-running retries exactly the pairs that were not graded; a graded pair,
  right or wrong, is kept.
- The identity (model, checkpoint, policy, loops, task ids, sampling, budgets, evaluator
  version) is written to summary.json before the first episode; an evaluation with another
  identity is refused in that folder (`IdentityMismatch`) rather than mixed into it.
- A failed pair keeps correctness None, its boundary, the error class and the error's text with
  the values of environment variables named like TOKEN, SECRET or KEY taken out.
- Metrics are over graded pairs (None when none is), with the coverage beside them; every
  pass@1 carries its Wilson 95% interval. With several samples per pair, pass@k too (the unbiased
  estimator of Chen et al., 2021), and `sampling_headroom` sets them against a greedy evaluation.
- Sessions are opened for evaluation (greedy allowed, no training trace kept). Token counts per
  pair are the engine's token ids of every model call, as the capture proxy recorded them. How many prompt tokens the engine served from its prefix cache is read from its
  /health counters, which are the engine's, not the pair's: per pair only when pairs run one at
  a time (concurrency 1), otherwise for the whole run in the summary.

The whitebox loop here is the project's own tool loop over HTTP: the `DataAnalysisEnv` tools
of training, the same system prompt and tool schemas, the model called through the capture
proxy like a harness, so that all five loops are measured the same way (and the same code runs
against a remote server). Its tool calls are parsed by the engine with TRL's `parse_response`,
as in training.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import itertools
import json
import logging
import math
import os
import re
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Any

import httpx

from .capture import CaptureError
from .episode import FailureBudget, Outcome, failed
from .harnesses import HARNESSES, EpisodeResult, get_runner, prefix_forks, run_episode
from .harnesses.session import busy_seconds
from .tasks import Task
from .whitebox import MAX_TOOL_CALLS, TOOLS, DataAnalysisEnv, finish_episode, prompt_messages, tool_schemas

__all__ = [
    "EVALUATOR_VERSION",
    "LOOPS",
    "LOOP_DEFAULTS",
    "MAX_FAILURE_SHARE",
    "Evaluation",
    "IdentityMismatch",
    "Pair",
    "WhiteboxResult",
    "paired_comparison",
    "pass_at_k",
    "records_in",
    "sampling_headroom",
    "select_by_group",
    "select_tasks",
    "summarize",
    "task_group",
    "tool_call_savings",
    "whitebox_episode",
    "wilson_interval",
]

logger = logging.getLogger(__name__)

EVALUATOR_VERSION = 1
"""Part of every evaluation's identity: bump it when a pair's meaning changes."""

LOOPS = ("whitebox", *HARNESSES)
"""The loops a model is evaluated in: the project's whitebox tool loop, then each harness."""

LOOP_DEFAULTS = {
    "whitebox": {"max_model_calls": MAX_TOOL_CALLS, "max_tokens": 256},
    "harness": {"max_model_calls": 17, "max_tokens": 1024},
}
"""Per-episode budgets when none is given: the whitebox loop's are training's (`MAX_TOOL_CALLS`), a
harness gets the capture proxy's (17 calls of up to 1,024 tokens)."""

MAX_FAILURE_SHARE = 0.5
"""Past this share of ungraded pairs (at least eight run) an evaluation stops: its numbers would
measure the infrastructure. What it wrote is kept; re-running resumes."""

_SECRET_NAME = re.compile(r"TOKEN|SECRET|KEY", re.IGNORECASE)
_ERROR_CLASS = re.compile(r"^([A-Z][A-Za-z0-9_]*(?:Error|Exception|Exceeded|Timeout|Mismatch)): ")


class IdentityMismatch(RuntimeError):
    """The output folder holds pairs of another evaluation (another model, task set, sampling, ...)."""


# ---- which tasks --------------------------------------------------------------------------------


def select_tasks(tasks: list, difficulties: tuple[str, ...], limit: int | None = None) -> list:
    """A fixed, balanced sample: round-robin over templates, so a small sample covers them all."""
    by_template: dict[str, list] = {}
    for task in tasks:
        if task.difficulty in difficulties:
            by_template.setdefault(task.template, []).append(task)
    interleaved = [t for group in itertools.zip_longest(*by_template.values()) for t in group if t is not None]
    return interleaved[:limit]


def task_group(task, held_out: tuple[str, ...]) -> str:
    """The reporting group of a test task: its tier and whether training saw its template."""
    return f"{task.difficulty}, {'unseen' if task.template in held_out else 'seen'} templates"


def select_by_group(tasks: list, difficulties: tuple[str, ...], per_group: int, held_out: tuple[str, ...]) -> list:
    """`per_group` tasks from each tier × {seen, unseen templates}, so every group gets the same weight.

    Unseen templates are few (4 of 28), so a plain round-robin sample would hold almost none.
    """
    picked = []
    for difficulty in difficulties:
        for unseen in (False, True):
            pool = [t for t in tasks if (t.template in held_out) == unseen]
            picked += select_tasks(pool, (difficulty,), per_group)
    return picked


# ---- the whitebox loop over HTTP ----------------------------------------------------------------


@dataclass
class WhiteboxResult(EpisodeResult):
    """A whitebox episode's result: a harness episode's fields, and how its tool calls parsed."""

    well_formed_turns: int = 0
    """Assistant turns whose tool calls parsed."""
    malformed_turns: int = 0
    """Assistant turns with `<tool_call>` text that did not parse into a call."""


def _run_tool(env: DataAnalysisEnv, call: dict) -> str:
    """Run one parsed tool call; a wrong name or bad arguments is the model's mistake, told to it."""
    function = call.get("function") or {}
    name = function.get("name")
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except (TypeError, ValueError):
        arguments = None
    if name not in TOOLS or not isinstance(arguments, dict):
        return f"Error: unknown tool {name!r} or arguments that are not a JSON object."
    try:
        return getattr(env, name)(**arguments)
    except TypeError as error:
        return f"Error: {error}"


def whitebox_episode(
    task: Task,
    proxy,
    *,
    model: str,
    sampling: Mapping | None = None,
    max_tokens: int = LOOP_DEFAULTS["whitebox"]["max_tokens"],
    max_model_calls: int = LOOP_DEFAULTS["whitebox"]["max_model_calls"],
    sandbox: str = "local",
    timeout_s: float = 600.0,
    purpose: str = "train",
) -> tuple[WhiteboxResult, Any]:
    """One whitebox episode: the model calls the environment's tools until it submits or stops.

    Returns `(result, trace or None)` like `harnesses.run_episode`, so the five
    loops are recorded alike. A call the engine fails to answer ends the episode at the engine
    boundary; a reply with `<tool_call>` text that did not parse counts as a malformed turn.
    """
    result = WhiteboxResult("whitebox", task.id, capture_level=proxy.capture_level)
    key = proxy.open_session(sampling, max_tokens=max_tokens, max_model_calls=max_model_calls,
                             wall_time_s=timeout_s, purpose=purpose, harness="whitebox", task=task.id)
    result.session_key = key
    started, trace = time.monotonic(), None
    env = DataAnalysisEnv(sandbox=sandbox, episode_seconds=timeout_s)
    engine_failure = None
    try:
        with httpx.Client(base_url=proxy.url, headers={"Authorization": f"Bearer {key}"}, timeout=timeout_s) as http:
            messages = prompt_messages(env.reset(task_path=str(task.path)))
            tools = tool_schemas()
            for _ in range(max_model_calls):
                if env.done:
                    break
                call_start = time.monotonic()
                try:
                    response = http.post("/v1/chat/completions", json={"model": model, "messages": messages,
                                                                        "tools": tools})
                    response.raise_for_status()
                    message = response.json()["choices"][0]["message"]
                except (httpx.HTTPError, ValueError, KeyError, IndexError) as error:
                    engine_failure = f"the model call failed: {type(error).__name__}: {error}"
                    break
                finally:
                    result.call_intervals.append((call_start, time.monotonic()))
                messages.append({k: message[k] for k in ("role", "content", "tool_calls") if message.get(k) is not None})
                calls = message.get("tool_calls") or []
                if not calls:
                    result.malformed_turns += "<tool_call>" in (message.get("content") or "")
                    break
                result.well_formed_turns += 1
                for call in calls:
                    messages.append({"role": "tool", "tool_call_id": call.get("id", ""),
                                     "name": (call.get("function") or {}).get("name", ""),
                                     "content": _run_tool(env, call)})
        outcome = finish_episode(env)
        if engine_failure is not None and outcome.graded:
            outcome = failed(task.id, "engine", engine_failure, tool_calls=outcome.tool_calls)
        result.outcome = outcome
        result.model_calls = proxy.model_calls(key)
        result.prompt_tokens, result.generated_tokens = proxy.token_counts(key) or (None, None)
        if purpose == "train":
            try:
                trace = proxy.training_trace(key)
                result.forks = prefix_forks(trace)
            except CaptureError as error:
                result.capture_error = str(error)
    finally:
        finish_episode(env)
        result.seconds = time.monotonic() - started
        result.model_s = busy_seconds(result.call_intervals)
        with contextlib.suppress(KeyError, CaptureError):
            proxy.close_session(key)
    return result, trace


# ---- pairs --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    """One episode of an evaluation: a task, a loop, a sample number."""

    task: Task
    loop: str
    sample: int = 0

    def file_name(self, samples: int) -> str:
        suffix = f"--{self.sample}" if samples > 1 else ""
        return f"{self.task.id}--{self.loop}{suffix}.json"


def _redact(text: str | None) -> str | None:
    """`text` with the values of environment variables named like TOKEN / SECRET / KEY taken out."""
    if not text:
        return text
    for name, value in os.environ.items():
        if _SECRET_NAME.search(name) and len(value) >= 4 and value in text:
            text = text.replace(value, f"[{name} removed]")
    return text


def _error_class(outcome: Outcome) -> str | None:
    if outcome.graded:
        return None
    found = _ERROR_CLASS.match(outcome.error or "")
    return found.group(1) if found else f"{outcome.boundary}-failure"


def _pair_record(pair: Pair, result: EpisodeResult, cache: tuple[int, int] | None, held_out) -> dict:
    """The pair file's content: what the episode scored, what it cost, and why it failed if it did."""
    outcome = result.outcome or failed(pair.task.id, "harness", "the episode did not end")
    record = {
        "task_id": pair.task.id,
        "loop": pair.loop,
        "sample": pair.sample,
        "tier": pair.task.difficulty,
        "template": pair.task.template,
        "unseen_template": pair.task.template in held_out,
        "correctness": outcome.correctness,
        "reward": outcome.reward,
        "tool_calls": outcome.tool_calls,
        "model_calls": result.model_calls,
        "prompt_tokens": result.prompt_tokens,
        "generated_tokens": result.generated_tokens,
        "prompt_tokens_cached": cache[1] if cache else None,
        "prompt_tokens_computed": cache[0] - cache[1] if cache else None,
        "seconds": round(result.seconds, 3),
        "model_s": round(result.model_s, 3),
        "boundary": outcome.boundary,
        "error_class": _error_class(outcome),
        "detail": _redact(outcome.error),
    }
    if isinstance(result, WhiteboxResult):
        record |= {"well_formed_turns": result.well_formed_turns, "malformed_turns": result.malformed_turns}
    return record


def _write_json(path: Path, content: dict) -> None:
    """Write atomically: a reader (or a killed run) sees the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False) as handle:
        json.dump(content, handle, indent=1, sort_keys=True)
        handle.write("\n")
    os.replace(handle.name, path)


def _identity_sha(identity: Mapping) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


class Evaluation:
    """The pairs of one evaluation in one folder: which are graded, running the rest, the summary."""

    def __init__(self, output: Path, identity: Mapping, pairs: list[Pair], *, held_out: tuple[str, ...] = ()):
        self.output = Path(output)
        self.identity = dict(identity)
        self.identity_sha = _identity_sha(self.identity)
        self.pairs = pairs
        self.held_out = tuple(held_out)
        self.samples = 1 + max((p.sample for p in pairs), default=0)
        self.summary_path = self.output / "summary.json"
        self.pairs_dir = self.output / "pairs"
        self._check_identity()

    def _check_identity(self) -> None:
        if self.summary_path.exists():
            recorded = json.loads(self.summary_path.read_text()).get("identity", {})
            if recorded != self.identity:
                changed = sorted(k for k in set(recorded) | set(self.identity) if recorded.get(k) != self.identity.get(k))
                raise IdentityMismatch(
                    f"{self.output} holds another evaluation (it differs in: {', '.join(changed)}); use another "
                    "--output folder, or delete this one to start over"
                )
        for path in self.pairs_dir.glob("*.json"):
            if json.loads(path.read_text()).get("identity") != self.identity_sha:
                raise IdentityMismatch(f"{path} belongs to another evaluation than {self.summary_path}")

    def path(self, pair: Pair) -> Path:
        return self.pairs_dir / pair.file_name(self.samples)

    def record(self, pair: Pair) -> dict | None:
        path = self.path(pair)
        return json.loads(path.read_text()) if path.exists() else None

    def pending(self) -> list[Pair]:
        """The pairs to run: never run, or run and not graded."""
        return [p for p in self.pairs if (r := self.record(p)) is None or r["correctness"] is None]

    def run(self, endpoint, settings: Mapping, *, concurrency: int = 1, progress: bool = True) -> dict:
        """Run every pending pair (`concurrency` at a time) and write its file; return this run's timing.

        `settings` holds `runner` ("project" or "harbor"), `sandbox`, `sampling`, `timeout_s`
        and per-loop budgets (`LOOP_DEFAULTS`' keys under "whitebox" and "harness"). Raises
        `FailureBudgetExceeded` once too many pairs were not graded (after the running ones end).
        """
        if not self.summary_path.exists():
            _write_json(self.summary_path, {"identity": self.identity, "expected": len(self.pairs), "graded": 0})
        pending = self.pending()
        attributable = concurrency == 1  # the engine's cache counters are per pair only then
        started = time.monotonic()
        before = endpoint.prompt_tokens()
        episode_seconds = []
        lock = threading.Lock()

        def run_one(pair: Pair) -> Outcome:
            counters = endpoint.prompt_tokens() if attributable else None
            result, _ = self._episode(pair, endpoint, settings)
            after = endpoint.prompt_tokens() if counters is not None else None
            cache = (after[0] - counters[0], after[1] - counters[1]) if after else None
            record = _pair_record(pair, result, cache, self.held_out)
            _write_json(self.path(pair), {**record, "identity": self.identity_sha})
            with lock:
                episode_seconds.append(result.seconds)
            return result.outcome

        budget = FailureBudget(MAX_FAILURE_SHARE, min_episodes=8, total=len(pending), desc="evaluation",
                               progress=progress)
        with budget, concurrent.futures.ThreadPoolExecutor(max(1, concurrency), thread_name_prefix="pair") as pool:
            futures = [pool.submit(run_one, pair) for pair in pending]
            try:
                for future in concurrent.futures.as_completed(futures):
                    budget.record(future.result())
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
        after = endpoint.prompt_tokens()
        return {
            "pairs_run": len(pending),
            "wall_s": round(time.monotonic() - started, 3),
            "episode_s": round(sum(episode_seconds), 3),
            "concurrency": concurrency,
            "prompt_tokens_seen_by_engine": after[0] - before[0] if before and after else None,
            "prompt_tokens_cached_by_engine": after[1] - before[1] if before and after else None,
        }

    def _episode(self, pair: Pair, endpoint, settings: Mapping) -> tuple[EpisodeResult, Any]:
        kind = "whitebox" if pair.loop == "whitebox" else "harness"
        budgets = settings[kind]
        common = dict(model=endpoint.model, sampling=settings["sampling"], sandbox=settings["sandbox"],
                      max_tokens=budgets["max_tokens"], max_model_calls=budgets["max_model_calls"], purpose="eval")
        if kind == "whitebox":
            return whitebox_episode(pair.task, endpoint.proxy, timeout_s=settings["timeout_s"], **common)
        return run_episode(pair.loop, pair.task, endpoint.proxy, timeout_s=settings["timeout_s"],
                           runner=get_runner(settings["runner"]), **common)

    def records(self) -> list[dict]:
        """One record per pair, in pair order: its file, or a "not run" record when it has none yet."""
        return [self.record(p) or self._not_run(p) for p in self.pairs]

    def _not_run(self, pair: Pair) -> dict:
        return {"task_id": pair.task.id, "loop": pair.loop, "sample": pair.sample, "tier": pair.task.difficulty,
                "template": pair.task.template, "unseen_template": pair.task.template in self.held_out,
                "correctness": None, "reward": None, "tool_calls": None, "boundary": "not run", "seconds": None}

    def summary(self, *, run: Mapping | None = None, baseline: Path | None = None, notes: Iterable[str] = ()) -> dict:
        """Aggregate the pair files, write summary.json and return it."""
        summary = {"identity": self.identity, **summarize(self.records())}
        if baseline is not None:
            summary["tool_call_savings"] = tool_call_savings(records_in(baseline), self.records())
        if run is not None:
            summary["last_run"] = dict(run)
        summary["notes"] = list(notes)
        _write_json(self.summary_path, summary)
        return summary


def records_in(folder: Path) -> list[dict]:
    """The pair records of an evaluation folder (any identity), in file-name order."""
    return [json.loads(p.read_text()) for p in sorted((Path(folder) / "pairs").glob("*.json"))]


# ---- aggregation --------------------------------------------------------------------------------


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float] | None:
    """The Wilson score interval of a binomial proportion (95% by default); None when n is 0.

    Unlike the normal approximation it stays inside [0, 1] and is not empty at 0 or n successes,
    which is where small evaluations of small models live.
    """
    if n == 0:
        return None
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return mean(values) if values else None


def _aggregate(records: list[dict], expected: int) -> dict:
    """The metrics of a group of pair records; `.get` for the cost fields a pair not run has none of."""
    graded = [r for r in records if r["correctness"] is not None]
    solved = sum(r["correctness"] for r in graded)
    interval = wilson_interval(solved, len(graded))
    counted = [r for r in graded if r["tool_calls"] is not None]
    failures: dict[str, int] = {}
    for r in records:
        if r["correctness"] is None:
            failures[r["boundary"]] = failures.get(r["boundary"], 0) + 1
    return {
        "expected": expected,
        "graded": len(graded),
        "coverage": len(graded) / expected if expected else None,
        "solved": solved,
        "pass_at_1": solved / len(graded) if graded else None,
        "pass_at_1_interval": list(interval) if interval else None,
        "mean_reward": _mean(r["reward"] for r in graded),
        "mean_tool_calls": _mean(r["tool_calls"] for r in counted),
        "tool_count_coverage": len(counted) / len(graded) if graded else None,
        "mean_model_calls": _mean(r.get("model_calls") for r in graded),
        "mean_prompt_tokens": _mean(r.get("prompt_tokens") for r in graded),
        "mean_generated_tokens": _mean(r.get("generated_tokens") for r in graded),
        "mean_prompt_tokens_cached": _mean(r.get("prompt_tokens_cached") for r in graded),
        "mean_prompt_tokens_computed": _mean(r.get("prompt_tokens_computed") for r in graded),
        "mean_seconds": _mean(r["seconds"] for r in records),
        "not_graded_by_boundary": failures,
    }


def summarize(records: list[dict]) -> dict:
    """Totals over all pairs, then by loop, by tier, by seen/unseen template, and by loop × template group.

    A pair not graded (or not run) counts in `expected` and against `coverage`, never in pass@1.
    """
    def grouped(key, ordered: bool = True) -> dict:
        groups: dict[str, list[dict]] = {}
        for r in records:
            groups.setdefault(key(r), []).append(r)
        names = sorted(groups) if ordered else list(groups)
        return {name: _aggregate(groups[name], len(groups[name])) for name in names}

    def template_group(r: dict) -> str:
        return "unseen templates" if r["unseen_template"] else "seen templates"

    return {
        **_aggregate(records, len(records)),
        "pass_at_k": pass_at_k(records),
        "by_loop": grouped(lambda r: r["loop"], ordered=False),  # in the evaluation's order of loops
        "by_tier": grouped(lambda r: r["tier"]),
        "by_template": grouped(template_group),
        "by_loop_and_template": grouped(lambda r: f"{r['loop']}, {template_group(r)}"),
    }


def _solved_by_unit(records: list[dict]) -> dict[tuple, list[int]]:
    """The graded outcomes of each (task, loop), one per sample."""
    units: dict[tuple, list[int]] = {}
    for r in records:
        if r["correctness"] is not None:
            units.setdefault((r["task_id"], r["loop"]), []).append(r["correctness"])
    return units


def pass_at_k(records: list[dict]) -> list[float]:
    """pass@1, pass@2, ... over the (task, loop) units: the chance that one of k samples solves it.

    The unbiased estimator of Chen et al. (2021), 1 - C(n - c, k) / C(n, k) for a unit with c of
    its n graded samples right, averaged over the units; k runs up to the fewest graded samples
    of any unit. A single sample per unit gives pass@1 alone.
    """
    units = _solved_by_unit(records)
    if not units:
        return []
    most = min(len(outcomes) for outcomes in units.values())
    return [mean(1 - math.comb(len(o) - sum(o), k) / math.comb(len(o), k) for o in units.values())
            for k in range(1, most + 1)]


def _reachable(greedy_units: dict[tuple, list[int]], sampled_units: dict[tuple, list[int]]) -> set[tuple]:
    return {u for u, outcomes in greedy_units.items() if not max(outcomes) and max(sampled_units.get(u, [0]))}


def reachable_units(greedy: list[dict], sampled: list[dict]) -> set[tuple]:
    """The (task, loop) units greedy decoding fails and some sample solves: where GRPO can raise greedy pass@1."""
    return _reachable(_solved_by_unit(greedy), _solved_by_unit(sampled))


def sampling_headroom(greedy: list[dict], sampled: list[dict]) -> dict:
    """Greedy outcomes against sampled ones on the same (task, loop) units: what sampling reaches that greedy does not.

    GRPO learns from sampled rollouts; greedy pass@1 can rise only on a unit greedy decoding
    fails, and a group there has a success to learn from only where a sample solves it
    (`reachable`). A unit greedy solves but some sample fails (`fragile`) gains nothing from
    sharpening and can be lost by an update toward the failed sample. Units not graded in both
    are left out.
    """
    greedy_units, sampled_units = _solved_by_unit(greedy), _solved_by_unit(sampled)
    both = [(max(greedy_units[u]), sampled_units[u]) for u in greedy_units if u in sampled_units]
    return {
        "units": len(both),
        "greedy_solved": sum(g for g, _ in both),
        "solved_by_a_sample": sum(1 for _, s in both if max(s)),
        "reachable": len(_reachable(greedy_units, sampled_units)),
        "fragile": sum(1 for g, s in both if g and not min(s)),
        "samples_per_unit": min((len(s) for _, s in both), default=0),
    }


def tool_call_savings(baseline: list[dict], current: list[dict]) -> dict:
    """Tool calls over the pairs both evaluations solved (same task, loop and sample), by loop and overall.

    `saving` is 1 - current ÷ baseline of the mean tool calls: the share of tool calls the new
    policy no longer needs on problems both solve.
    """
    def key(r: dict) -> tuple:
        return r["task_id"], r["loop"], r["sample"]

    solved_before = {key(r): r for r in baseline if r["correctness"] == 1 and r["tool_calls"] is not None}
    both = [(solved_before[key(r)], r) for r in current
            if r["correctness"] == 1 and r["tool_calls"] is not None and key(r) in solved_before]

    def saving(pairs: list[tuple[dict, dict]]) -> dict:
        before = _mean(b["tool_calls"] for b, _ in pairs)
        after = _mean(c["tool_calls"] for _, c in pairs)
        return {"pairs": len(pairs), "baseline_mean": before, "mean": after,
                "saving": 1 - after / before if before else None}

    by_loop = {loop: saving([p for p in both if p[1]["loop"] == loop]) for loop in sorted({c["loop"] for _, c in both})}
    return {**saving(both), "by_loop": by_loop}


def paired_comparison(before: list[dict], after: list[dict]) -> dict:
    """Two evaluations of the same pairs: pass@1 of each over the pairs both graded, and McNemar's test.

    McNemar's exact test is a two-sided binomial test on the discordant pairs (solved by one
    policy only): under "no difference" each is equally likely to go either way. Written out
    (four lines of `math.comb`) rather than taking scipy as a dependency for one binomial tail.
    """
    def key(r: dict) -> tuple:
        return r["task_id"], r["loop"], r["sample"]

    graded_before = {key(r): r["correctness"] for r in before if r["correctness"] is not None}
    both = [(graded_before[key(r)], r["correctness"]) for r in after
            if r["correctness"] is not None and key(r) in graded_before]
    only_before = sum(1 for b, a in both if b > a)
    only_after = sum(1 for b, a in both if a > b)
    discordant = only_before + only_after
    tail = sum(math.comb(discordant, k) for k in range(min(only_before, only_after) + 1)) / 2**discordant
    n = len(both)
    return {
        "pairs": n,
        "before": sum(b for b, _ in both) / n if n else None,
        "after": sum(a for _, a in both) / n if n else None,
        "difference": (only_after - only_before) / n if n else None,
        "only_before": only_before,
        "only_after": only_after,
        "p_value": min(1.0, 2 * tail) if n else None,
    }
