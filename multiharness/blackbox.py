"""Blackbox GRPO rollouts: harness sessions in, TRL training rows out.

A harness owns its tool loop; the trainer only sees what the capture proxy recorded of its model
calls (OpenEnv's `TrainingTrace`: per call, the prompt ids, the sampled ids, their behaviour
logprobs and a loss mask). This module turns an episode into the one row a GRPO completion is:

- `trace_row(trace)` chains the calls into one token sequence: the first call's prompt is the
  row's prompt; every later call adds the tokens its prompt has beyond the sequence so far (tool
  outputs, template glue: masked) and then its sampled tokens (trained, with their behaviour
  logprobs, `env_mask` 1 where the capture's loss mask is 1). Token ids are never rewritten.
- Forks: a call whose prompt does not extend the sequence so far (a harness that re-renders or
  drops earlier turns, or a side conversation such as OpenCode's title call) starts a new chain.
  The row trains the chain with the most sampled tokens (the later one on a tie: it holds the
  answer); the other chains' tokens are dropped, and the forks and dropped tokens are counted.
- An episode that was not graded, or that left no trainable trace, becomes an empty row (one
  masked token) with reward None: TRL leaves it out of its group's baseline, and its advantage
  is 0, so it adds no loss.

`HarnessRollouts` is the `rollout_func` of `GRPOTrainer` on a CPU: it runs the batch's sessions
several at a time through one session factory (`session_factory`: one harness per task, run by
the project's runner or by Harbor), whose engine serves the trainer's own model (colocated: no
weight sync; the prefix cache is dropped after every optimiser step by `DropEngineCache`). On a
GPU, `VllmSessionFactory` gives TRL's `HarnessRolloutWorker` the same sessions in front of a
vLLM server. `train` is the whole run both blackbox scripts make.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from openenv.core.harness import TrainingTrace
from transformers import TrainerCallback

from .capture import CaptureError
from .curriculum import Curriculum, add_curriculum_flags, check_curriculum_flags, curriculum_record
from .harnesses.session import busy_seconds
from .paths import DEFAULT_MODEL_DIR
from .tasks import Task, find_task

__all__ = [
    "MAX_FAILURE_SHARE",
    "ENGINES",
    "PRESETS",
    "VLLM_SERVER",
    "add_training_flags",
    "async_grpo_config",
    "DropEngineCache",
    "episode_reward",
    "grpo_config",
    "harness_for_task",
    "harness_rollout_worker",
    "HarnessRollouts",
    "PerTaskFactory",
    "Preset",
    "prompt_dataset",
    "run_preset",
    "session_factory",
    "trace_row",
    "TraceRow",
    "train",
    "training_tasks",
    "VllmSessionFactory",
]

logger = logging.getLogger(__name__)


# ---- one episode -> one training row ----------------------------------------------------------


@dataclass
class TraceRow:
    """One GRPO completion made from a captured episode."""

    prompt_ids: list[int]
    """The first call's prompt (of the chain that is trained)."""
    completion_ids: list[int]
    """Everything after it: sampled tokens, and the tool outputs and template glue between calls."""
    logprobs: list[float]
    """Behaviour logprobs of the sampled tokens; 0.0 on masked ones."""
    env_mask: list[int]
    """1 on the tokens the model sampled and the capture marks trainable, 0 elsewhere."""
    forks: int = 0
    """Calls whose prompt did not extend the sequence before them."""
    dropped_tokens: int = 0
    """Sampled tokens of the chains that are not trained."""


@dataclass
class _Chain:
    tokens: list[int]
    mask: list[int]
    logprobs: list[float]
    prompt_len: int
    sampled: int = 0

    def add(self, ids: list[int], mask: list[int], logprobs: list[float]) -> None:
        self.tokens += ids
        self.mask += mask
        self.logprobs += logprobs
        self.sampled += sum(mask)


def trace_row(trace: TrainingTrace) -> TraceRow:
    """The training row of an episode's trace (see the module docstring for the fork rule)."""
    if not trace.turns:
        raise ValueError("a training trace with no model call has no row")
    chains: list[_Chain] = []
    for turn in trace.turns:
        prompt, completion = list(turn.prompt_token_ids), list(turn.completion_token_ids)
        completion_mask = list(turn.loss_mask[len(prompt):])
        logprobs = [lp if m else 0.0 for lp, m in zip(turn.per_token_logps, completion_mask)]
        chain = chains[-1] if chains else None
        if chain is None or prompt[: len(chain.tokens)] != chain.tokens:
            chain = _Chain(tokens=[], mask=[], logprobs=[], prompt_len=len(prompt))
            chains.append(chain)
            chain.add(prompt, [0] * len(prompt), [0.0] * len(prompt))
        else:
            glue = prompt[len(chain.tokens):]
            chain.add(glue, [0] * len(glue), [0.0] * len(glue))
        chain.add(completion, completion_mask, logprobs)
    best = max(reversed(chains), key=lambda c: c.sampled)  # reversed: the later chain wins a tie
    cut = best.prompt_len
    return TraceRow(
        prompt_ids=best.tokens[:cut],
        completion_ids=best.tokens[cut:],
        logprobs=best.logprobs[cut:],
        env_mask=best.mask[cut:],
        forks=len(chains) - 1,
        dropped_tokens=sum(c.sampled for c in chains) - best.sampled,
    )


# ---- which harness runs which task ----------------------------------------------------------


def harness_for_task(task_ids: Sequence[str], harnesses: Sequence[str]) -> dict[str, str]:
    """One harness per task: the task's index in the sorted ids, modulo the number of harnesses.

    Depends on the task set only (never on a seed or a worker), so a restarted run, or every
    rollout of a GRPO group, gives a task the same harness.
    """
    if not harnesses:
        raise ValueError("give at least one harness")
    return {task_id: harnesses[i % len(harnesses)] for i, task_id in enumerate(sorted(task_ids))}


class PerTaskFactory:
    """A session factory that runs each task in its own harness (`harness_for_task`).

    `factories` maps a harness name to the factory of its sessions; `create(prompt)` finds the
    task from the prompt's instruction and hands it to its harness's factory.
    """

    def __init__(self, factories: Mapping[str, object], tasks: Sequence[Task]):
        self.factories = dict(factories)
        self.tasks = list(tasks)
        self.assignment = harness_for_task([t.id for t in self.tasks], list(self.factories))
        """Task id -> harness name."""

    def create(self, task, seed: int | None = None, episode_id: str | None = None):
        if not isinstance(task, Task):
            task = find_task(self.tasks, task)
        return self.factories[self.assignment[task.id]].create(task, seed=seed, episode_id=episode_id)


# ---- CPU: GRPOTrainer(rollout_func=...) -------------------------------------------------------


@dataclass
class _Rollout:
    row: TraceRow
    reward: float | None
    tool_calls: int | None
    boundary: str | None
    seconds: float
    model_calls: int
    calls: list[tuple[float, float]]


@dataclass
class HarnessRollouts:
    """TRL's `rollout_func`: one harness episode per prompt, `concurrency` at a time.

    `factory.create(prompt)` starts the session of the prompt's task (a `HarnessSessionFactory`
    or a `PerTaskFactory`); `tokenizer` renders the prompt of an episode that left no trace.
    Returns TRL's fields (`prompt_ids`, `completion_ids`, `logprobs`, `env_mask`) and, for the
    reward function, `episode_reward`, `tool_calls`, `boundary`, `forks`, `dropped_tokens`,
    `model_calls` and `episode_seconds` (one per prompt), `rollout_seconds` and `engine_seconds`
    (one per batch).
    """

    factory: object
    tokenizer: object
    concurrency: int = 4
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self, prompts: list, trainer=None) -> dict:
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=max(1, self.concurrency), thread_name_prefix="rollout") as pool:
            rollouts = list(pool.map(self._one, prompts))
        return {
            # Where the step's rollout time goes: its wall time, and the time the engine had a call in flight.
            "rollout_seconds": time.monotonic() - started,
            "engine_seconds": busy_seconds([c for r in rollouts for c in r.calls]),
            "prompt_ids": [r.row.prompt_ids for r in rollouts],
            "completion_ids": [r.row.completion_ids for r in rollouts],
            "logprobs": [r.row.logprobs for r in rollouts],
            "env_mask": [r.row.env_mask for r in rollouts],
            "episode_reward": [r.reward for r in rollouts],
            "tool_calls": [r.tool_calls for r in rollouts],
            "boundary": [r.boundary for r in rollouts],
            "forks": [r.row.forks for r in rollouts],
            "dropped_tokens": [r.row.dropped_tokens for r in rollouts],
            "model_calls": [r.model_calls for r in rollouts],
            "episode_seconds": [r.seconds for r in rollouts],
        }

    def _one(self, prompt: list[dict]) -> _Rollout:
        session = self.factory.create(prompt)
        try:
            try:
                session.wait_for_completion()
            except TimeoutError:  # recorded in the outcome as a harness failure
                pass
            result = session.verify([]).metrics
            row = None
            if result["reward"] is not None:
                try:
                    row = trace_row(session.fetch_training_trace())
                except CaptureError as error:  # graded, but nothing trainable was captured
                    logger.warning("%s: no training trace (%s); the rollout is left out", result["task_id"], error)
            reward = result["reward"] if row is not None else None
            return _Rollout(row or self._empty_row(prompt), reward, result["tool_calls"], result["boundary"],
                            result["seconds"], result["model_calls"], session.result.call_intervals)
        finally:
            session.close()

    def _empty_row(self, prompt: list[dict]) -> TraceRow:
        """One masked end-of-turn token after the rendered prompt: a row that trains nothing."""
        with self._lock:  # tokenizers are not thread-safe
            ids = self.tokenizer.apply_chat_template(prompt, add_generation_prompt=True, return_dict=True)["input_ids"]
        return TraceRow(prompt_ids=list(ids), completion_ids=[self.tokenizer.eos_token_id], logprobs=[0.0], env_mask=[0])


class DropEngineCache(TrainerCallback):
    """After every optimiser step, drop the colocated engine's prefix cache: its keys and values are of the old
    weights. (The engine also notices in-place updates by itself; this makes the rule explicit where it applies.)"""

    def __init__(self, engine):
        self.engine = engine

    def on_optimizer_step(self, args, state, control, **kwargs):
        self.engine.reset_cache()


# ---- GPU: TRL's HarnessRolloutWorker in front of vLLM --------------------------------------------


@dataclass(frozen=True)
class VllmSessionFactory:
    """The `harness_session_factory` of TRL's `HarnessRolloutWorker`, for a vLLM server.

    Picklable (the worker runs in a spawned process): it holds names and paths, and starts the
    capture proxy in front of `engine_url` in the worker when the worker calls it with the
    training policy's `sampling`. One harness per task, as on the CPU.
    """

    engine_url: str
    """The vLLM server (started with token ids and processed logprobs: `jobs/serve_vllm.py`)."""
    model: str
    """The served model name."""
    harnesses: tuple[str, ...]
    """The harnesses the tasks are shared out to."""
    tasks_dir: str
    """The built training tasks; a session's task is found from its prompt."""
    max_tokens: int
    max_model_calls: int
    timeout_s: float
    runner: str = "project"
    """Who runs an episode: "project" (the project's runner) or "harbor" (a Harbor trial)."""

    def __call__(self, sampling=None) -> PerTaskFactory:
        from .capture import start_capture
        from .tasks import load_tasks

        proxy = start_capture(self.engine_url, self.model, max_tokens=self.max_tokens,
                              max_model_calls=self.max_model_calls, wall_time_s=self.timeout_s)
        return session_factory(self.harnesses, proxy, model=self.model, tasks=load_tasks(Path(self.tasks_dir)),
                               runner=self.runner, sampling=sampling, max_tokens=self.max_tokens,
                               timeout_s=self.timeout_s)


def session_factory(harnesses: Sequence[str], proxy, *, model: str, tasks: Sequence[Task], runner: str,
                    **settings) -> PerTaskFactory:
    """Sessions of `harnesses` through `proxy`, one harness per task (`PerTaskFactory`), run by `runner`.

    `settings` are `HarnessSession`'s: sampling, max_tokens, max_model_calls, timeout_s, budget.
    """
    from .harnesses import HarnessSessionFactory, get_harness, get_runner

    run = get_runner(runner)
    factories = {name: HarnessSessionFactory(get_harness(name), proxy, model=model, runner=run, **settings)
                 for name in harnesses}
    return PerTaskFactory(factories, tasks)


# ---- what both blackbox scripts share: presets, prompts, reward, TRL configs -------------------


@dataclass(frozen=True)
class Preset:
    """Every number a blackbox GRPO run depends on (`train/opencode.py`, `train/harbor.py`)."""

    model: str
    """Default model: a local folder (offline) or a Hub id (GPU machines are online); "" makes the tiny one."""
    difficulties: tuple[str, ...]
    """Task tiers to train on."""
    steps: int
    """Optimiser steps."""
    num_generations: int
    """Rollouts per task: the GRPO group."""
    rollouts_per_step: int
    """Rollouts per optimiser step (a multiple of num_generations)."""
    micro_batch_size: int
    """Rollouts per forward/backward pass: bounds activation memory (a harness row is 6k+ tokens)."""
    learning_rate: float
    temperature: float
    """Sampling temperature the sessions pin (full vocabulary: top_p 1)."""
    max_tokens: int
    """Sampled tokens per model call."""
    max_model_calls: int
    """Model calls per episode: the capture proxy ends the harness's loop past it."""
    timeout_s: float
    """Wall-clock seconds per episode before the harness is killed (a harness failure)."""
    concurrency: int
    """Episodes at once (CPU: sessions sharing the colocated engine; GPU: the async worker's tasks in flight)."""
    save_steps: int


PRESETS = {
    # 2 CPU cores: one group of 4 episodes per step, 4 model calls of up to 96 tokens each. Decoding
    # 4 rows over a harness's 5-6k-token context is what a step waits on (RESULTS.md), hence the
    # short calls. A row is that context plus the episode, so one row per backward pass.
    "cpu": Preset(
        model=str(DEFAULT_MODEL_DIR), difficulties=("easy", "medium"), steps=2, num_generations=4, rollouts_per_step=4,
        micro_batch_size=1, learning_rate=1e-5, temperature=1.0, max_tokens=96, max_model_calls=4, timeout_s=900.0,
        concurrency=4, save_steps=1,
    ),
    # A first look: one step of one group of 4, 3 calls of up to 64 tokens each.
    "quickstart": Preset(
        model=str(DEFAULT_MODEL_DIR), difficulties=("easy",), steps=1, num_generations=4, rollouts_per_step=4,
        micro_batch_size=1, learning_rate=1e-5, temperature=1.0, max_tokens=64, max_model_calls=3, timeout_s=900.0,
        concurrency=4, save_steps=1,
    ),
    # mini-swe-agent after its harness warm start (train/sft.py --harness mini-swe-agent): its prompt
    # is short (1,128 tokens first, ~1,750 by the end), so calls can hold a whole program (256
    # tokens, the evaluator's); two groups of 4 per step, at the whitebox loop's learning rate that
    # does not collapse.
    # 5 minutes a step on 2 idle cores; neither 2 steps nor 18 on the tasks the warm start solves (lr 5e-6,
    # T 0.7) moved held-out pass@1 there (0.37: RESULTS.md).
    "cpu-mini-swe-agent": Preset(
        model=str(DEFAULT_MODEL_DIR), difficulties=("easy", "medium"), steps=2, num_generations=4,
        rollouts_per_step=8, micro_batch_size=1, learning_rate=2e-6, temperature=1.0, max_tokens=256,
        max_model_calls=4, timeout_s=900.0, concurrency=4, save_steps=1,
    ),
    # The reference recipe (vLLM + AsyncGRPOTrainer): batch 4 x accumulation 4, 32 episodes in flight,
    # staleness 4, lr 3e-6, T 0.8, 16,384 completion tokens (see `async_grpo_config`).
    "gpu": Preset(
        model="Qwen/Qwen3.5-2B", difficulties=("easy", "medium", "hard"), steps=500, num_generations=8,
        rollouts_per_step=16, micro_batch_size=4, learning_rate=3e-6, temperature=0.8, max_tokens=16_384,
        max_model_calls=32, timeout_s=1800.0, concurrency=32, save_steps=50,
    ),
    # CI: a tiny random model, one step of one group of 2, a few tokens per call: every code path.
    "smoke": Preset(
        model="", difficulties=("easy",), steps=1, num_generations=2, rollouts_per_step=2, micro_batch_size=1,
        learning_rate=1e-5, temperature=1.0, max_tokens=8, max_model_calls=2, timeout_s=300.0, concurrency=2,
        save_steps=1,
    ),
}
"""The blackbox presets, by `--preset` name."""

MAX_FAILURE_SHARE = 0.5
"""Ungraded episodes a run tolerates: past half, the infrastructure is broken, not flaky."""

VLLM_SERVER = "http://127.0.0.1:8000"
"""Where `jobs/serve_vllm.py` (or `vllm serve`) listens by default."""

ENGINES = ("local", "vllm")
"""`--engine`: the trainer's own model on a CPU, or a vLLM server on a GPU."""


def training_tasks(tasks_dir: Path, difficulties: Sequence[str], curriculum: Curriculum | None = None,
                   harness: str | None = None) -> list[Task]:
    """The tasks of these tiers, one per instruction: a session finds its task from the prompt's instruction,
    so tasks that share one (same question, other data) would be ambiguous; the first of each is kept.

    With a curriculum, only the tasks it keeps from the warm start's episodes in `harness`
    (`multiharness.curriculum`)."""
    from .tasks import load_tasks_or_exit

    tasks = load_tasks_or_exit(tasks_dir)
    if curriculum is not None:
        tasks = curriculum.select(tasks, loop=harness)
    kept, seen = [], set()
    for task in tasks:
        if task.difficulty in difficulties and task.instruction not in seen:
            seen.add(task.instruction)
            kept.append(task)
    if not kept:
        raise SystemExit(f"No {'/'.join(difficulties)} tasks under {tasks_dir}: run `python -m multiharness tasks build`.")
    return kept


def prompt_dataset(tasks: Sequence[Task]):
    """One row per task: its instruction as the user message (the harness adds its own system prompt and tools)."""
    from datasets import Dataset

    return Dataset.from_list([{"prompt": [{"role": "user", "content": task.instruction}]} for task in tasks])


def episode_reward(episode_reward, forks, dropped_tokens, boundary, log_metric=None, rollout_seconds=None,
                   engine_seconds=None, **kwargs) -> list[float | None]:
    """The shared reward of each harness episode, as `multiharness.episode.score` gave it.

    - right answer after n native tool actions: 1 + 0.1·15/(15 + n); 1.0 when the harness's tool
      count is unknown;
    - wrong answer, or no /workdir/answer.txt: 0.0;
    - not graded (a harness crash, a dead engine or sandbox, a task the grader could not grade)
      or no trainable trace: None, which TRL leaves out of the group's baseline (no loss).
    Logs per step the forks (calls that did not extend the sequence before them), the sampled
    tokens dropped with the untrained chains, the share of ungraded episodes, and the rollouts'
    wall time and engine time (seconds with a model call in flight; the rest is the harnesses').
    """
    if log_metric is not None:
        log_metric("episodes/forks", float(sum(forks)))
        log_metric("episodes/dropped_tokens", float(sum(dropped_tokens)))
        log_metric("episodes/ungraded_share", sum(b is not None for b in boundary) / max(1, len(boundary)))
        for name, values in (("rollout_s", rollout_seconds), ("engine_s", engine_seconds)):
            if values:  # the same value on every row of the batch
                log_metric(f"episodes/{name}", float(values[0]))
    return list(episode_reward)


def grpo_config(output: Path, preset: Preset, *, bf16: bool, project: str, space_id: str | None):
    """The CPU trainer's TRL configuration: `GRPOTrainer(rollout_func=HarnessRollouts(...))`."""
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=str(output),
        max_steps=preset.steps,
        learning_rate=preset.learning_rate,
        lr_scheduler_type="constant",
        num_generations=preset.num_generations,
        # One generation batch of `rollouts_per_step` per optimiser step, trained in micro-batches.
        per_device_train_batch_size=preset.micro_batch_size,
        gradient_accumulation_steps=preset.rollouts_per_step // preset.micro_batch_size,
        temperature=preset.temperature,  # what the trainer recomputes logprobs at: the sessions' pinned policy
        top_p=1.0,
        top_k=0,
        max_completion_length=preset.max_tokens * preset.max_model_calls,
        loss_type="dapo",
        scale_rewards="none",  # as in train/whitebox.py: the tool-call bonus stays a tie-breaker
        beta=0.0,  # no reference model: saves memory; the clipped ratio keeps updates close
        bf16=bf16,
        use_cpu=True,
        # TRL's default, unlike train/whitebox.py: a harness's rows are 2,000 tokens and longer, where
        # it costs 0-16% of a training pass and nearly halves its memory at 4,000 (RESULTS.md)
        activation_checkpointing=True,
        save_steps=preset.save_steps,
        logging_steps=1,
        report_to="trackio",
        project=project,
        trackio_space_id=space_id,
        seed=0,  # fixes the data order, so --resume replays the same batches
    )


def async_grpo_config(output: Path, preset: Preset, *, vllm_server: str, project: str, space_id: str | None):
    """The GPU trainer's configuration: TRL's `AsyncGRPOTrainer` fed by `HarnessRolloutWorker` from vLLM."""
    from trl.experimental.async_grpo import AsyncGRPOConfig

    return AsyncGRPOConfig(
        output_dir=str(output),
        max_steps=preset.steps,
        learning_rate=preset.learning_rate,
        lr_scheduler_type="constant",
        num_generations=preset.num_generations,
        per_device_train_batch_size=4,  # x 4 accumulation steps: 16 rollouts per optimiser step
        gradient_accumulation_steps=4,
        temperature=preset.temperature,
        top_p=1.0,
        max_completion_length=preset.max_tokens,
        token_budget=40_960,  # packing budget of one micro-batch, in tokens
        max_inflight_tasks=preset.concurrency,
        max_staleness=4,  # rollouts at most 4 weight versions old are trained on
        vllm_server_base_url=vllm_server,
        bf16=True,
        save_steps=preset.save_steps,
        logging_steps=1,
        report_to="trackio",
        project=project,
        trackio_space_id=space_id,
        seed=0,
    )


def harness_rollout_worker(config, dataset, tokenizer, factory: VllmSessionFactory):
    """TRL's `HarnessRolloutWorker` for `AsyncGRPOTrainer(rollout_worker=...)`: the episodes of `factory`
    against the vLLM server of `config`, with the sampling settings of `config`."""
    from trl.experimental.async_grpo.openenv_harness import HarnessRolloutWorker

    return HarnessRolloutWorker(
        harness_session_factory=factory,
        model_name=factory.model,
        dataset=dataset,
        reward_funcs=[],  # the harness session's verify() gives the reward (multiharness.episode.score)
        processing_class=tokenizer,
        eos_token_ids=[tokenizer.eos_token_id],
        num_generations=config.num_generations,
        max_inflight_tasks=config.max_inflight_tasks,
        queue_maxsize=config.queue_maxsize,
        vllm_server_url=config.vllm_server_base_url,
        max_tokens=config.max_completion_length,
        temperature=config.temperature,
        top_p=config.top_p,
        request_timeout=config.request_timeout,
        max_tool_calling_iterations=factory.max_model_calls,
    )


# ---- the whole run, for both scripts -----------------------------------------------------------


def train(args, *, harnesses: Sequence[str], runner: str, project: str, title: str) -> None:
    """One blackbox GRPO run: settings -> model -> tasks -> sessions -> reward -> TRL config -> train -> save.

    `args` are the scripts' shared flags (`add_training_flags`). Prints one line at each milestone.
    """
    import json
    import os
    from dataclasses import asdict

    from .endpoint import open_endpoint
    from .engine import LocalEngine
    from .episode import FailureBudget, FailureBudgetExceeded
    from .learning_curve import learning_curve
    from .model import cpu_supports_bf16, load_model_and_tokenizer, make_tiny_model

    preset = run_preset(args)
    curriculum = Curriculum.from_args(args)
    # a bad curriculum or an empty task folder stops here, before anything is written or loaded
    tasks = training_tasks(args.tasks, preset.difficulties, curriculum, harness=harnesses[0])
    args.output.mkdir(parents=True, exist_ok=True)
    # Trackio reads its folder once, when TRL imports it: set it before anything imports TRL.
    os.environ.setdefault("TRACKIO_DIR", str(args.output.resolve() / "trackio"))
    model_id = args.model or (make_tiny_model(args.output / "tiny-model") if args.preset == "smoke" else preset.model)
    (args.output / "training_config.json").write_text(json.dumps(
        {"preset": args.preset, **asdict(preset), "model": str(model_id), "harnesses": list(harnesses),
         "runner": runner, "engine": args.engine, **curriculum_record(curriculum)}, indent=2))

    dataset = prompt_dataset(tasks)
    assignment = harness_for_task([t.id for t in tasks], list(harnesses))
    counts = {name: sum(h == name for h in assignment.values()) for name in harnesses}
    print(f"tasks: {len(tasks)} from {args.tasks} (one per instruction); per harness: {counts}")

    if args.engine == "vllm":  # GPU: the async trainer; vLLM serves, a worker process runs the sessions
        from transformers import AutoTokenizer
        from trl.experimental.async_grpo import AsyncGRPOTrainer

        config = async_grpo_config(args.output, preset, vllm_server=args.vllm_server, project=project,
                                   space_id=args.space_id)
        tokenizer = AutoTokenizer.from_pretrained(model_id)
        factory = VllmSessionFactory(args.vllm_server, str(model_id), tuple(harnesses), str(args.tasks),
                                     preset.max_tokens, preset.max_model_calls, preset.timeout_s, runner)
        print(f"vLLM at {args.vllm_server} must serve {model_id}: python jobs/serve_vllm.py --model {model_id}")
        trainer = AsyncGRPOTrainer(model=str(model_id), args=config, train_dataset=dataset, processing_class=tokenizer,
                                   rollout_worker=harness_rollout_worker(config, dataset, tokenizer, factory))
        trainer.train(resume_from_checkpoint=True if args.resume else None)
        trainer.save_model(str(args.output))
        return

    from .grpo import SignalOnlyGRPOTrainer

    bf16 = cpu_supports_bf16()
    model, tokenizer = load_model_and_tokenizer(model_id)
    print(f"model: {model_id} (bf16={bf16})")
    engine = LocalEngine(model, tokenizer)  # the trainer's own model object: rollouts always use the latest weights
    limits = dict(max_tokens=preset.max_tokens, max_model_calls=preset.max_model_calls, wall_time_s=preset.timeout_s)
    with open_endpoint(engine, model_name=Path(str(model_id)).name, **limits) as endpoint, \
            FailureBudget(MAX_FAILURE_SHARE, min_episodes=preset.rollouts_per_step, desc="episodes") as budget:
        factory = session_factory(
            harnesses, endpoint.proxy, model=endpoint.model, tasks=tasks, runner=runner,
            sampling={"temperature": preset.temperature, "top_p": 1.0},  # pinned: the CLIs send none
            max_tokens=preset.max_tokens, max_model_calls=preset.max_model_calls, timeout_s=preset.timeout_s,
            budget=budget,
        )
        print(f"sessions: {', '.join(harnesses)} run by {runner}, through the capture proxy at {endpoint.proxy.url}")
        config = grpo_config(args.output, preset, bf16=bf16, project=project, space_id=args.space_id)
        trainer = SignalOnlyGRPOTrainer(  # no training pass for rollouts of zero advantage (multiharness/grpo.py)
            model=model,
            processing_class=tokenizer,
            args=config,
            train_dataset=dataset,
            reward_funcs=episode_reward,
            rollout_func=HarnessRollouts(factory, tokenizer, concurrency=preset.concurrency),
            callbacks=[DropEngineCache(engine)],
        )
        print(f"training {preset.steps} steps ({preset.rollouts_per_step} episodes per step, {preset.concurrency} at once)")
        try:
            trainer.train(resume_from_checkpoint=True if args.resume else None)
        except FailureBudgetExceeded as error:
            raise SystemExit(f"training stopped: {error}") from error
    trainer.save_model(str(args.output))
    trainer.save_state()  # trainer_state.json: the per-step log the learning curve is drawn from
    curve = learning_curve(args.output, args.output / "learning_curve.png", title=title)
    print(f"saved the model to {args.output}; learning curve {curve}; Trackio logs in {os.environ['TRACKIO_DIR']}")


def run_preset(args) -> Preset:
    """The named preset with the command line's overrides: what runs, and what training_config.json records."""
    overrides = {"steps": args.steps, "save_steps": args.save_steps, "learning_rate": args.learning_rate,
                 "temperature": args.temperature}
    return replace(PRESETS[args.preset], **{name: value for name, value in overrides.items() if value is not None})


def add_training_flags(parser, *, output: str) -> None:
    """The flags both blackbox scripts share (and share with train/whitebox.py where they overlap)."""
    from .paths import DEFAULT_TASKS_DIR

    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu", help="named set of hyper-parameters")
    parser.add_argument("--model", default=None, help="model folder or Hub id (default: SmolLM2-135M; smoke: tiny)")
    parser.add_argument("--tasks", type=Path, default=DEFAULT_TASKS_DIR / "train", help="built training tasks")
    parser.add_argument("--output", type=Path, default=Path(output), help="checkpoints and logs")
    add_curriculum_flags(parser)
    parser.add_argument("--steps", type=int, default=None, help="override the preset's number of steps")
    parser.add_argument("--save-steps", type=int, default=None, help="override the preset's checkpoint interval")
    parser.add_argument("--learning-rate", type=float, default=None, help="override the preset's learning rate")
    parser.add_argument("--temperature", type=float, default=None,
                        help="override the preset's sampling temperature (the sessions' and the trainer's)")
    parser.add_argument("--engine", choices=ENGINES, default="local",
                        help="local: the trainer's own model serves the rollouts (CPU); vllm: a vLLM server (GPU)")
    parser.add_argument("--vllm-server", default=VLLM_SERVER, help="vLLM server URL (--engine vllm)")
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint in --output")
    parser.add_argument("--space-id", default=None, help="publish the Trackio dashboard to this HF Space")


def check_training_flags(parser, args, harnesses: Sequence[str]) -> None:
    """Stop a command line whose flags do not go together, before anything loads.

    A curriculum is judged from one harness's episodes, and with several harnesses which task runs
    in which depends on the task list the curriculum makes (`harness_for_task`): one harness only.
    """
    check_curriculum_flags(parser, args)
    if args.curriculum and len(harnesses) != 1:
        parser.error(f"--curriculum trains in one harness, judged from its episodes; got {', '.join(harnesses)}")
