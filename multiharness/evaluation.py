"""Evaluate a model in the whitebox environment: the same tools, prompt and reward as training.

TRL's trainer runs its tool loop only inside `train()`, so evaluation needs its own loop: render
the conversation with the model's chat template, generate (batched over episodes, left-padded),
parse tool calls with TRL's `parse_response`, run them through `DataAnalysisEnv`, append the tool
results, and repeat until the model stops calling tools or the turn budget is spent. Metrics are
the ones a GRPO run cares about: pass@1, mean reward, mean tool calls, the share of well-formed
tool calls, and the share of task groups whose sampled rewards are all equal (no GRPO signal).
"""

import contextlib
import itertools
import logging
from dataclasses import dataclass, field
from statistics import mean

import torch

from .whitebox import DataAnalysisEnv, prompt_messages, tool_schemas

__all__ = ["Episode", "Report", "evaluate", "select_tasks", "select_by_group", "task_group"]

logger = logging.getLogger(__name__)


@dataclass
class Episode:
    """One rollout of a model on one task."""

    task_path: str
    """The task directory."""
    reward: float | None
    """Shared reward; None when the episode could not be graded."""
    tool_calls: int
    """Tool calls parsed from the model's answers (submit_solution included)."""
    well_formed_turns: int
    """Assistant turns whose tool calls parsed."""
    malformed_turns: int
    """Assistant turns with `<tool_call>` text that did not parse into a call."""
    messages: list[dict] = field(default_factory=list)
    """The whole conversation, for inspection."""


@dataclass
class Report:
    """Aggregate over episodes; pass@1 is the mean correctness of one sample per (task, draw)."""

    pass_at_1: float
    mean_reward: float
    mean_tool_calls: float
    well_formed_share: float
    """Of the assistant turns that tried a tool call, the share that parsed."""
    zero_spread_share: float | None
    """Share of tasks whose samples all got the same reward (None with one sample per task)."""
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
    tool = getattr(DataAnalysisEnv, name, None) if isinstance(name, str) and not name.startswith("_") else None
    if tool is None or name in ("reset", "get_reward") or not isinstance(arguments, dict):
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
) -> Report:
    """Roll out `samples_per_task` episodes per task and aggregate; greedy when temperature is 0."""
    from trl.chat_template_utils import add_response_schema, parse_response

    add_response_schema(tokenizer)
    tools = tool_schemas()
    was_training = model.training
    model.eval()
    runs = [path for path in task_paths for _ in range(samples_per_task)]
    tool_calls, well_formed, malformed = [0] * len(runs), [0] * len(runs), [0] * len(runs)
    with contextlib.ExitStack() as cleanup:  # every sandbox is closed, whatever happens
        envs = [cleanup.enter_context(DataAnalysisEnv(sandbox=sandbox)) for _ in runs]
        conversations = [prompt_messages(env.reset(task_path=path)) for env, path in zip(envs, runs)]
        active = [i for i, env in enumerate(envs) if not env.done]
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
                if not calls:
                    malformed[i] += "<tool_call>" in message.get("content", "")
                    continue
                tool_calls[i] += len(calls)
                well_formed[i] += 1
                for call in calls:
                    result = _call_tool(envs[i], call)
                    conversations[i].append({"role": "tool", "name": call["function"]["name"], "content": result})
                if not envs[i].done:
                    still_active.append(i)
            active = still_active
        rewards = [env.get_reward() for env in envs]
    model.train(was_training)
    episodes = [Episode(*fields) for fields in zip(runs, rewards, tool_calls, well_formed, malformed, conversations)]
    return _report(episodes, samples_per_task)


def _report(episodes: list[Episode], samples_per_task: int) -> Report:
    graded = [e for e in episodes if e.reward is not None]
    well_formed = sum(e.well_formed_turns for e in episodes)
    attempted = well_formed + sum(e.malformed_turns for e in episodes)
    groups = [episodes[i : i + samples_per_task] for i in range(0, len(episodes), samples_per_task)]
    spreads = [len({e.reward for e in g}) == 1 for g in groups if all(e.reward is not None for e in g)]
    return Report(
        pass_at_1=mean(e.reward > 0 for e in graded) if graded else 0.0,
        mean_reward=mean(e.reward for e in graded) if graded else 0.0,
        mean_tool_calls=mean(e.tool_calls for e in episodes) if episodes else 0.0,
        well_formed_share=well_formed / attempted if attempted else 0.0,
        zero_spread_share=mean(spreads) if samples_per_task > 1 and spreads else None,
        not_graded=len(episodes) - len(graded),
        episodes=episodes,
    )
