"""Expert trajectories for the SFT warm start, built from the tasks' reference solutions.

A 135M model makes no well-formed tool call before training, so every GRPO group would get the
same reward and no gradient. A short SFT on expert episodes fixes the format first. Each
trajectory is what a careful analyst does in the whitebox environment, with every tool output
the real one from the sandbox:

1. look at the data: the header and first rows of each file, the schema of each SQLite table
   (`look_command`), so that the program is written against columns the model has just read
   rather than guessed;
2. on every `RECOVERY_EVERY`-th task, a first program with one column name wrong, its real
   error, and then the fixed program: the model sees how to recover from a failed call;
3. the program that computes the answer (the reference solution), then `submit_solution` with
   its output and a one-line closing message.

The rows use TRL's conversational format (`messages` + `tools`), so a dataset of real teacher
rollouts in the same format (for example `FineEnvs/SmolDataEnvs-sft`, converted to these tool
names) can replace them unchanged.

A harness has its own system prompt, tools and turn format, and a model warm-started in the
whitebox loop meets them for the first time at evaluation. `harness_expert_dataset` builds the
warm start of one harness instead: the scripted expert (`ScriptedPolicy`: look, solve and write
the answer, submit) plays each task through the real CLI behind the capture proxy, and each
graded-1 episode becomes one row of token ids exactly as the harness sent them
(`blackbox.trace_row`), with a mask on the tokens the model would have sampled. TRL's
`SFTTrainer` trains on such rows as they are (`input_ids` + `completion_mask`).
"""

import logging
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .episode import score
from .sandbox import SandboxError
from .tasks import Task, look_command, solution_command
from .whitebox import DataAnalysisEnv, prompt_messages, tool_schemas

__all__ = ["RECOVERY_EVERY", "expert_trajectory", "expert_dataset", "harness_expert_dataset"]

logger = logging.getLogger(__name__)

RECOVERY_EVERY = 4
"""One trajectory in this many first runs a program with a wrong column name, then the right one."""

_EXIT_CODE = re.compile(r"\[exit code (-?\d+)[^\]]*\]\s*$")
_NAME_LITERAL = re.compile(r"""(["'])([a-z][a-z0-9_]*)\1""")


def _call(name: str, arguments: dict) -> dict:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def _exit_code(observation: str) -> int | None:
    found = _EXIT_CODE.search(observation)
    return int(found.group(1)) if found else None


def _misspelled(command: str, seen: str) -> str | None:
    """`command` with its first column name (a quoted name the data view shows) changed to a plausible wrong one."""
    for match in _NAME_LITERAL.finditer(command):
        column = match.group(2)
        assigned = re.match(r"\]\s*=[^=]", command[match.end() :])  # a new column, which any name can be
        if column in seen and f"{column}." not in seen and not assigned:  # a column read, not a file name
            wrong = column.rsplit("_", 1)[0] if "_" in column else f"{column}_value"
            quote = match.group(1)
            return command[: match.start()] + f"{quote}{wrong}{quote}" + command[match.end() :]
    return None


def expert_trajectory(task: Task, sandbox: str = "local", *, recover: bool = False) -> dict | None:
    """One expert episode as `{"messages", "tools", "task_id"}`; None if the solution did not grade 1.

    With `recover`, a failing first program comes before the right one (when a column name of the
    program can be changed so that it fails for real).
    """
    look, command = look_command(task), solution_command(task)
    env = DataAnalysisEnv(sandbox=sandbox)
    with env:
        instruction = env.reset(task_path=str(task.path))
        calls = [("bash", {"command": look}, env.bash(look))]
        broken = _misspelled(command, calls[0][2]) if recover else None
        if broken is not None:
            failure = env.bash(broken)
            if _exit_code(failure) not in (None, 0):
                calls.append(("bash", {"command": broken}, failure))
        observation = env.bash(command)
        calls.append(("bash", {"command": command}, observation))
    answer = observation.rsplit("\n[exit code", 1)[0].strip().splitlines()[-1:] or [""]
    answer = answer[0].strip()
    if not answer or score(task, answer, None).correctness != 1:
        logger.warning("task %s: reference solution gave %r, which does not grade 1 (or was not graded); skipped",
                       task.id, answer)
        return None
    messages = prompt_messages(instruction)
    for name, arguments, output in calls:
        messages += [{"role": "assistant", "content": "", "tool_calls": [_call(name, arguments)]},
                     {"role": "tool", "name": name, "content": output}]
    messages += [
        {"role": "assistant", "content": "", "tool_calls": [_call("submit_solution", {"answer": answer})]},
        {"role": "tool", "name": "submit_solution", "content": "Answer submitted."},
        {"role": "assistant", "content": f"The answer is {answer}."},
    ]
    return {"task_id": task.id, "messages": messages, "tools": tool_schemas()}


def expert_dataset(tasks: list[Task], sandbox: str = "local"):
    """A `datasets.Dataset` of expert trajectories (tasks whose solution fails are left out and logged)."""
    from datasets import Dataset, Features, Json, Value

    rows = []
    for index, task in enumerate(tasks):
        try:
            row = expert_trajectory(task, sandbox, recover=index % RECOVERY_EVERY == RECOVERY_EVERY - 1)
        except SandboxError as error:
            logger.warning("task %s: sandbox failed (%s); skipped", task.id, error)
            continue
        if row is not None:
            rows.append(row)
    # Json columns keep each tool call's own argument names; Arrow structs would merge them
    # across rows (`{"command": ..., "answer": None}`), which the chat template would render.
    features = Features({"task_id": Value("string"), "messages": Json(), "tools": Json()})
    return Dataset.from_list(rows, features=features)


def harness_expert_dataset(harness: str, tasks: Sequence[Task], tokenizer_dir: str | Path, *, sandbox: str = "local",
                           concurrency: int = 4, timeout_s: float = 300.0):
    """A `datasets.Dataset` of the scripted expert's episodes in `harness`, as the harness sent them.

    Columns: `task_id`, `harness`, `input_ids` (the trace's token ids, in the chat template of
    `tokenizer_dir`: the model to train must share it) and `completion_mask` (1 on the expert's own
    tokens). Episodes that did not grade 1 or left no trace are left out and logged.
    """
    from datasets import Dataset, Features, Sequence as Column, Value

    from .blackbox import trace_row
    from .endpoint import open_endpoint
    from .harnesses import run_episode

    def play(task: Task):
        # One scripted endpoint per task: tasks that share an instruction (other data) cannot be
        # told apart from a prompt, so one endpoint for all could not know which to play.
        with open_endpoint(tokenizer_dir, policy="scripted", tasks=[task]) as endpoint:
            return task, *run_episode(harness, task, endpoint.proxy, model=endpoint.model, sandbox=sandbox,
                                      timeout_s=timeout_s)

    rows = []
    with ThreadPoolExecutor(concurrency) as pool:
        for task, result, trace in pool.map(play, tasks):
            outcome = result.outcome
            if outcome is None or outcome.correctness != 1 or trace is None:
                why = result.capture_error or (
                    (outcome.error or f"graded {outcome.correctness}") if outcome else "the episode did not end")
                logger.warning("task %s: the expert's %s episode gave no row (%s); skipped", task.id, harness, why)
                continue
            row = trace_row(trace)
            rows.append({"task_id": task.id, "harness": harness, "input_ids": row.prompt_ids + row.completion_ids,
                         "completion_mask": [0] * len(row.prompt_ids) + row.env_mask})
    features = Features({"task_id": Value("string"), "harness": Value("string"),
                         "input_ids": Column(Value("int32")), "completion_mask": Column(Value("int8"))})
    return Dataset.from_list(rows, features=features)
