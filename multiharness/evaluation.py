"""Evaluate a model in the whitebox environment: the same tools, prompt and reward as training.

TRL's trainer runs its tool loop only inside `train()`, so evaluation needs its own loop: render
the conversation with the model's chat template, generate (batched over episodes, left-padded),
parse tool calls with TRL's `parse_response`, run them through `DataAnalysisEnv`, append the tool
results, and repeat until the model stops calling tools or the turn budget is spent. Metrics are
the ones a GRPO run cares about: pass@1, mean reward, mean tool calls, the share of well-formed
tool calls, and the share of task groups whose sampled rewards are all equal (no GRPO signal).
Each episode ends with the environment's `Outcome` (`multiharness.episode`); the metrics are over
the graded episodes only, None when none was graded, with the coverage beside them. A tqdm bar
shows the mean reward and the failures as episodes end, and the failure budget stops an
evaluation that is mostly ungraded.
"""

import contextlib
import itertools
import logging
from dataclasses import dataclass, field
from statistics import mean

import torch

from .episode import FailureBudget, Outcome
from .whitebox import TOOLS, DataAnalysisEnv, finish_episode, prompt_messages, tool_schemas

__all__ = ["MAX_FAILURE_SHARE", "Episode", "Report", "evaluate", "select_tasks", "select_by_group", "task_group"]

logger = logging.getLogger(__name__)


MAX_FAILURE_SHARE = 0.5
"""Past this share of ungraded episodes an evaluation stops: its numbers would measure the infrastructure."""


@dataclass
class Episode:
    """One rollout of a model on one task."""

    task_path: str
    """The task directory."""
    outcome: Outcome
    """Correctness, reward and tool calls (the answer excluded), or the boundary that failed."""
    well_formed_turns: int
    """Assistant turns whose tool calls parsed."""
    malformed_turns: int
    """Assistant turns with `<tool_call>` text that did not parse into a call."""
    messages: list[dict] = field(default_factory=list)
    """The whole conversation, for inspection."""


@dataclass
class Report:
    """Aggregate over episodes; pass@1 is the mean correctness of one sample per (task, draw)."""

    pass_at_1: float | None
    """Over the graded episodes; None when none was graded."""
    mean_reward: float | None
    """Over the graded episodes; None when none was graded."""
    mean_tool_calls: float | None
    """Over the graded episodes; None when none was graded."""
    well_formed_share: float | None
    """Of the assistant turns that tried a tool call, the share that parsed (None when none tried)."""
    zero_spread_share: float | None
    """Share of tasks whose samples all got the same reward (None with one sample per task)."""
    coverage: float | None
    """Share of the episodes that were graded (None when there were none)."""
    not_graded: int
    episodes: list[Episode]


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


def _generate(model, tokenizer, conversations, tools, *, temperature, max_new_tokens):
    """Generate one turn for each conversation; returns (prompt ids, completion ids) pairs."""
    prompts = [
        tokenizer.apply_chat_template(c, tools=tools, add_generation_prompt=True, tokenize=False)
        for c in conversations
    ]
    tokenizer.padding_side = "left"
    batch = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    sampling = {"do_sample": True, "temperature": temperature, "top_p": 1.0} if temperature > 0 else {"do_sample": False}
    with torch.no_grad():
        output = model.generate(**batch, max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id, **sampling)
    completions = output[:, batch["input_ids"].shape[1] :]
    eos = model.generation_config.eos_token_id
    prompt_ids = [ids[mask.bool()].tolist() for ids, mask in zip(batch["input_ids"], batch["attention_mask"])]
    # Everything after the first end-of-turn token is padding of the finished rows.
    completion_ids = [row[: row.index(eos) + 1] if eos in row else row for row in completions.tolist()]
    return list(zip(prompt_ids, completion_ids))


def _call_tool(env: DataAnalysisEnv, call: dict) -> str:
    function = call.get("function", {})
    name, arguments = function.get("name"), function.get("arguments", {})
    tool = getattr(DataAnalysisEnv, name) if name in TOOLS else None
    if tool is None or not isinstance(arguments, dict):
        return f"Error: unknown tool {name!r} or arguments that are not an object."
    try:
        return tool(env, **arguments)
    except TypeError as error:  # wrong argument names: the model's mistake, reported back to it
        return f"Error: {error}"


def evaluate(
    model,
    tokenizer,
    task_paths: list[str],
    *,
    temperature: float = 0.0,
    samples_per_task: int = 1,
    max_turns: int = 4,
    max_new_tokens: int = 256,
    sandbox: str = "local",
    progress: bool = True,
) -> Report:
    """Roll out `samples_per_task` episodes per task and aggregate; greedy when temperature is 0.

    Raises `FailureBudgetExceeded` once more than MAX_FAILURE_SHARE of the episodes (at least
    the first eight) could not be graded.
    """
    from trl.chat_template_utils import add_response_schema, parse_response

    add_response_schema(tokenizer)
    tools = tool_schemas()
    was_training = model.training
    model.eval()
    runs = [path for path in task_paths for _ in range(samples_per_task)]
    well_formed, malformed = [0] * len(runs), [0] * len(runs)
    label = "greedy" if temperature == 0 else f"T={temperature:g}"
    budget = FailureBudget(MAX_FAILURE_SHARE, min_episodes=8, total=len(runs), desc=f"evaluation ({label})",
                           progress=progress)
    with contextlib.ExitStack() as cleanup:  # every sandbox is closed, whatever happens
        cleanup.enter_context(budget)
        envs = [cleanup.enter_context(DataAnalysisEnv(sandbox=sandbox, budget=budget)) for _ in runs]
        conversations = [prompt_messages(env.reset(task_path=path)) for env, path in zip(envs, runs)]
        active = [i for i, env in enumerate(envs) if not env.done]
        for i in sorted(set(range(len(runs))) - set(active)):
            finish_episode(envs[i])  # a task or sandbox that failed at reset: recorded now
        for _ in range(max_turns):
            if not active:
                break
            completions = _generate(
                model, tokenizer, [conversations[i] for i in active], tools,
                temperature=temperature, max_new_tokens=max_new_tokens,
            )
            still_active = []
            for i, (prompt_ids, ids) in zip(active, completions):
                # The parser needs the prompt: templates may open the assistant turn themselves.
                message = parse_response(tokenizer, ids, prefix=prompt_ids, tools=tools)
                conversations[i].append(message)
                calls = message.get("tool_calls") or []
                if calls:
                    well_formed[i] += 1
                    for call in calls:
                        result = _call_tool(envs[i], call)
                        conversations[i].append({"role": "tool", "name": call["function"]["name"], "content": result})
                else:
                    malformed[i] += "<tool_call>" in message.get("content", "")
                if calls and not envs[i].done:
                    still_active.append(i)
                else:
                    finish_episode(envs[i])  # the episode is over: score it now, its sandbox closes
            active = still_active
        outcomes = [finish_episode(env) for env in envs]  # the rest ran out of turns
    model.train(was_training)
    episodes = [Episode(*fields) for fields in zip(runs, outcomes, well_formed, malformed, conversations)]
    return _report(episodes, samples_per_task)


def _mean(values) -> float | None:
    values = list(values)
    return mean(values) if values else None


def _report(episodes: list[Episode], samples_per_task: int) -> Report:
    graded = [e.outcome for e in episodes if e.outcome.graded]
    well_formed = sum(e.well_formed_turns for e in episodes)
    attempted = well_formed + sum(e.malformed_turns for e in episodes)
    groups = [episodes[i : i + samples_per_task] for i in range(0, len(episodes), samples_per_task)]
    spreads = [len({e.outcome.reward for e in g}) == 1 for g in groups if all(e.outcome.graded for e in g)]
    return Report(
        pass_at_1=_mean(o.correctness for o in graded),
        mean_reward=_mean(o.reward for o in graded),
        mean_tool_calls=_mean(o.tool_calls for o in graded),
        well_formed_share=well_formed / attempted if attempted else None,
        zero_spread_share=_mean(spreads) if samples_per_task > 1 else None,
        coverage=len(graded) / len(episodes) if episodes else None,
        not_graded=len(episodes) - len(graded),
        episodes=episodes,
    )
