"""Expert trajectories for the SFT warm start, built from the tasks' reference solutions.

A 135M model makes no well-formed tool call before training, so every GRPO group would get the
same reward and no gradient. A short SFT on expert episodes fixes the format first. Each
trajectory is what a good teacher would do in the whitebox environment: one `bash` call that
computes the answer from the input files, its real output from the sandbox, `submit_solution`
with that answer, and a one-line closing message. The rows use TRL's conversational format
(`messages` + `tools`), so a dataset of real teacher rollouts in the same format (for example
`FineEnvs/SmolDataEnvs-sft`, converted to these tool names) can replace them unchanged.
"""

import logging

from .episode import score
from .sandbox import SandboxError
from .tasks import Task, solution_command
from .whitebox import DataAnalysisEnv, prompt_messages, tool_schemas

__all__ = ["expert_trajectory", "expert_dataset"]

logger = logging.getLogger(__name__)


def _call(name: str, arguments: dict) -> dict:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def expert_trajectory(task: Task, sandbox: str = "local") -> dict | None:
    """One expert episode as `{"messages", "tools", "task_id"}`; None if the solution did not grade 1."""
    command = solution_command(task)
    env = DataAnalysisEnv(sandbox=sandbox)
    with env:
        instruction = env.reset(task_path=str(task.path))
        observation = env.bash(command)
    answer = observation.rsplit("\n[exit code", 1)[0].strip().splitlines()[-1:] or [""]
    answer = answer[0].strip()
    if not answer or score(task, answer, None).correctness != 1:
        logger.warning("task %s: reference solution gave %r, which does not grade 1 (or was not graded); skipped",
                       task.id, answer)
        return None
    messages = prompt_messages(instruction) + [
        {"role": "assistant", "content": "", "tool_calls": [_call("bash", {"command": command})]},
        {"role": "tool", "name": "bash", "content": observation},
        {"role": "assistant", "content": "", "tool_calls": [_call("submit_solution", {"answer": answer})]},
        {"role": "tool", "name": "submit_solution", "content": "Answer submitted."},
        {"role": "assistant", "content": f"The answer is {answer}."},
    ]
    return {"task_id": task.id, "messages": messages, "tools": tool_schemas()}


def expert_dataset(tasks: list[Task], sandbox: str = "local"):
    """A `datasets.Dataset` of expert trajectories (tasks whose solution fails are left out and logged)."""
    from datasets import Dataset, Features, Json, Value

    rows = []
    for task in tasks:
        try:
            row = expert_trajectory(task, sandbox)
        except SandboxError as error:
            logger.warning("task %s: sandbox failed (%s); skipped", task.id, error)
            continue
        if row is not None:
            rows.append(row)
    # Json columns keep each tool call's own argument names; Arrow structs would merge them
    # across rows (`{"command": ..., "answer": None}`), which the chat template would render.
    features = Features({"task_id": Value("string"), "messages": Json(), "tools": Json()})
    return Dataset.from_list(rows, features=features)
