"""The whitebox environment: TRL's environment_factory contract, tools in a real sandbox, the reward."""

import inspect

import pytest
from transformers.utils import get_json_schema

from multiharness import whitebox
from multiharness.sandbox import SandboxError
from multiharness.tasks import grade_answer, load_task, run_reference_solution
from multiharness.tasks.build import build_task, load_manifest
from multiharness.whitebox import (
    FILE_TOOLS,
    MAX_OUTPUT_CHARS,
    TOOLS,
    DataAnalysisEnv,
    DataAnalysisEnvWithFileTools,
    finish_episode,
)


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    """One easy generated task, built from the committed manifest."""
    row = next(r for r in load_manifest("train") if r["difficulty"] == "easy")
    path = tmp_path_factory.mktemp("tasks") / row["id"]
    build_task(row, path)
    return load_task(path)


@pytest.fixture
def env(task):
    with DataAnalysisEnvWithFileTools() as env:
        env.reset(task_path=str(task.path))
        yield env


def _public(env_class) -> set[str]:
    return {name for name, _ in inspect.getmembers(env_class, inspect.isfunction) if not name.startswith("_")}


def test_public_methods_are_exactly_the_tools():
    # TRL exposes every public function of the class as a tool, except reset (and get_reward,
    # which this environment leaves to the training script's reward function).
    assert _public(DataAnalysisEnv) - {"reset"} == set(TOOLS) == {"bash", "submit_solution"}
    assert _public(DataAnalysisEnvWithFileTools) - {"reset"} == set(TOOLS + FILE_TOOLS) == {
        "bash", "read", "write", "edit", "ls", "grep", "glob", "submit_solution"}


def test_the_training_prompt_holds_two_tool_schemas():
    from transformers import AutoTokenizer

    from multiharness.paths import DEFAULT_MODEL_DIR

    tokenizer = AutoTokenizer.from_pretrained(DEFAULT_MODEL_DIR)
    messages = whitebox.prompt_messages("What is 2 + 2?")

    def length(tools):
        return len(tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, return_dict=False))

    compact, full = length(whitebox.tool_schemas()), length(whitebox.tool_schemas(TOOLS + FILE_TOOLS))
    assert compact < 450 and full > 2 * compact  # the file tools more than double every prompt


def test_long_output_is_cut_in_the_middle(env):
    output = env.bash("python3 -c \"print('start'); print('x' * 5000); print('the error')\"")
    assert len(output) < MAX_OUTPUT_CHARS + 100 and "characters cut" in output
    assert output.startswith("start") and output.endswith("the error\n\n[exit code 0]")


@pytest.mark.parametrize("name", TOOLS + FILE_TOOLS)
def test_every_tool_has_a_schema_with_described_arguments(name):
    schema = get_json_schema(getattr(DataAnalysisEnvWithFileTools, name))
    parameters = schema["function"]["parameters"]["properties"]
    assert parameters and all(p.get("description") for p in parameters.values())


def test_reset_returns_the_instruction(task):
    with DataAnalysisEnv() as env:
        assert env.reset(task_path=str(task.path)) == task.instruction


def test_bash_runs_in_the_sandbox_with_the_input_files(env, task):
    names = sorted(p.name for p in task.input_dir.iterdir())
    output = env.bash("ls /home/user/input && pwd")
    assert all(name in output for name in names) and "/workdir" in output and "[exit code 0]" in output


def test_file_tools_round_trip(env):
    # write → read → edit (one match) → read, then grep, glob and ls see the file.
    env.write("notes.txt", "alpha beta\ngamma\n")
    env.edit("notes.txt", "beta", "delta")
    outputs = [env.read("notes.txt"), env.grep("del+ta", "/workdir"), env.glob("*.txt", "/workdir"), env.ls("/workdir")]
    assert "alpha delta" in outputs[0] and "notes.txt:1" in outputs[1] and "notes.txt" in outputs[2] and "notes.txt" in outputs[3]


def test_write_takes_a_file_larger_than_a_command_line(env):
    # 300 KiB: past the 128 KiB a single argument of a command line may hold (E2BIG).
    content = "x" * 300_000 + "\nend\n"
    answer = env.write("big.txt", content)
    assert answer == f"wrote {len(content)} characters to big.txt" and "300005 big.txt" in env.bash("wc -c big.txt")


@pytest.mark.parametrize(
    "content, old, expected",
    [
        ("a b a", "a", "found 2"),  # two matches: refused
        ("a b a", "z", "found 0"),  # no match: refused
    ],
)
def test_edit_needs_exactly_one_match(env, content, old, expected):
    env.write("f.txt", content)
    assert expected in env.edit("f.txt", old, "x") and content in env.read("f.txt")


def test_right_answer_gets_the_reward_with_tool_bonus(task):
    answer = run_reference_solution(task)
    with DataAnalysisEnv() as env:
        env.reset(task_path=str(task.path))
        env.bash("ls /home/user/input")
        env.submit_solution(answer)
        # One tool call (submit_solution does not count): 1 + 0.1 * 15 / 16.
        assert finish_episode(env).reward == pytest.approx(1.09375)


@pytest.mark.parametrize(
    "actions, expected",
    [
        ([("submit_solution", "certainly not it")], 0.0),  # wrong answer
        ([("bash", "ls /home/user/input")], 0.0),  # never submitted: wrong, not broken
    ],
)
def test_wrong_or_missing_answer_scores_zero(task, actions, expected):
    with DataAnalysisEnv() as env:
        env.reset(task_path=str(task.path))
        for name, argument in actions:
            getattr(env, name)(argument)
        assert finish_episode(env).reward == expected


def test_after_submit_every_tool_says_the_episode_is_over(task):
    with DataAnalysisEnv() as env:
        env.reset(task_path=str(task.path))
        env.submit_solution("1")
        answers = [env.bash("ls"), env.bash("cat x"), env.submit_solution("2")]
    assert all("episode is over" in a for a in answers)


def test_past_the_deadline_every_tool_says_the_episode_is_over(task):
    with DataAnalysisEnvWithFileTools(episode_seconds=0.0) as env:
        env.reset(task_path=str(task.path))
        assert "episode is over" in env.bash("echo hi")


def test_a_sandbox_that_does_not_start_is_not_graded(task, monkeypatch):
    def broken(*args, **kwargs):
        raise SandboxError("bwrap: cannot create namespace")

    monkeypatch.setattr(whitebox, "open_sandbox", broken)
    with DataAnalysisEnv() as env:
        env.reset(task_path=str(task.path))
        env.submit_solution("42")
        assert finish_episode(env).reward is None


def test_a_bad_task_is_not_graded_and_the_run_goes_on(tmp_path, task):
    with DataAnalysisEnv() as env:
        message = env.reset(task_path=str(tmp_path / "no-such-task"))
        answers = [env.bash("ls"), finish_episode(env).reward]
        env.reset(task_path=str(task.path))  # the next episode works as usual
        assert "could not be loaded" in message and answers == [whitebox._EPISODE_OVER, None] and not env.done


def test_a_sandbox_that_dies_is_not_graded(task):
    with DataAnalysisEnv() as env:
        env.reset(task_path=str(task.path))
        env._sandbox.close()  # killed under the episode's feet
        output = env.bash("echo hi")
        assert "sandbox failed" in output and finish_episode(env).reward is None


def test_the_sandbox_is_closed_on_submit_and_after_grading(task, monkeypatch):
    closed = []
    real_open = whitebox.open_sandbox

    def tracking(*args, **kwargs):
        sandbox = real_open(*args, **kwargs)
        real_close = sandbox.close
        sandbox.close = lambda: (closed.append(True), real_close())
        return sandbox

    monkeypatch.setattr(whitebox, "open_sandbox", tracking)
    env = DataAnalysisEnv()
    env.reset(task_path=str(task.path))
    env.submit_solution("x")
    env.reset(task_path=str(task.path))
    finish_episode(env).reward
    assert closed == [True, True]


def test_the_gold_is_not_reachable_from_the_tools(env, task):
    # No gold.json anywhere in the sandbox, and the task's host path does not exist there.
    output = env.bash(f"ls -R / 2>/dev/null | grep -c gold.json; cat {task.path}/tests/gold.json")
    assert output.splitlines()[0] == "0" and "No such file or directory" in output


def test_grade_answer_agrees_with_the_environment(task):
    # The environment adds only the tool bonus on top of the shared grader.
    assert grade_answer(task, run_reference_solution(task)) == 1
