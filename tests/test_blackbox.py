"""Blackbox GRPO: captured traces to training rows, one harness per task, the trainers' settings."""

import inspect
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from openenv.core.harness import TrainingTrace, TrainingTurn

from multiharness import blackbox
from multiharness.blackbox import PRESETS, PerTaskFactory, episode_reward, harness_for_task, trace_row
from multiharness.curriculum import Curriculum
from multiharness.paths import PROJECT_ROOT
from multiharness.tasks import load_task
from multiharness.tasks.build import build_task, load_manifest

from evaluations import evaluation_folder

SCRIPTS = ["train/opencode.py"]


def _turn(node: str, prompt: list[int], completion: list[int], trained: bool = True) -> TrainingTurn:
    mask = [0] * len(prompt) + [int(trained)] * len(completion)
    return TrainingTurn(node_id=node, prompt_token_ids=prompt, completion_token_ids=completion,
                        per_token_logps=[-0.5] * len(completion), loss_mask=mask)


def _row(*turns) -> tuple:
    row = trace_row(TrainingTrace(turns=list(turns)))
    return row.prompt_ids, row.completion_ids, row.env_mask, row.logprobs, row.forks, row.dropped_tokens


# (the calls of an episode, the row: prompt, completion, env_mask, logprobs, forks, dropped sampled tokens)
ROWS = [
    # one call: the prompt, then the sampled tokens, all trained
    pytest.param([_turn("a", [1, 2], [3, 4])], ([1, 2], [3, 4], [1, 1], [-0.5, -0.5], 0, 0), id="one-call"),
    # two calls that chain: the tool output (7, 8) between them is context, masked
    pytest.param([_turn("a", [1, 2], [3]), _turn("b", [1, 2, 3, 7, 8], [9])],
                 ([1, 2], [3, 7, 8, 9], [1, 0, 0, 1], [-0.5, 0.0, 0.0, -0.5], 0, 0), id="two-calls-chain"),
    # a side conversation (a title call) forks; the main chain has more sampled tokens and is trained
    pytest.param([_turn("t", [5], [6]), _turn("a", [1, 2], [3, 4]), _turn("b", [1, 2, 3, 4, 7], [9])],
                 ([1, 2], [3, 4, 7, 9], [1, 1, 0, 1], [-0.5, -0.5, 0.0, -0.5], 1, 1), id="side-call-forks"),
    # a harness that re-renders history: the later chain wins a tie (it holds the answer)
    pytest.param([_turn("a", [1, 2], [3]), _turn("b", [1, 9], [4])],
                 ([1, 9], [4], [1], [-0.5], 1, 1), id="re-rendered-history-later-chain-wins-a-tie"),
    # a call the capture marks context only (auxiliary) is never trained
    pytest.param([_turn("a", [1], [2], trained=False)], ([1], [2], [0], [0.0], 0, 0), id="masked-call"),
]


@pytest.mark.parametrize("turns, expected", ROWS)
def test_trace_row(turns, expected):
    assert _row(*turns) == expected


def test_a_row_never_rewrites_a_token():
    turns = [_turn("a", [1, 2], [3]), _turn("b", [1, 2, 3, 7], [8, 9])]
    row = trace_row(TrainingTrace(turns=turns))
    assert row.prompt_ids + row.completion_ids == turns[-1].prompt_token_ids + turns[-1].completion_token_ids


def test_one_harness_per_task_by_sorted_index_whatever_the_order():
    ids = ["t-03", "t-01", "t-02", "t-00", "t-04"]
    harnesses = ["opencode", "claude-code", "codex", "mini-swe-agent"]
    expected = {"t-00": "opencode", "t-01": "claude-code", "t-02": "codex", "t-03": "mini-swe-agent", "t-04": "opencode"}
    assert harness_for_task(ids, harnesses) == harness_for_task(sorted(ids, reverse=True), harnesses) == expected


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    root = tmp_path_factory.mktemp("tasks")
    rows = [r for r in load_manifest("train") if r["difficulty"] == "easy"][:3]
    for row in rows:
        build_task(row, root / row["id"])
    return [load_task(root / row["id"]) for row in rows]


def test_the_per_task_factory_sends_every_seed_of_a_task_to_its_harness(tasks):
    made = []

    class Recorder:
        def __init__(self, name):
            self.name = name

        def create(self, task, seed=None, episode_id=None):
            made.append((task.id, self.name))

    factory = PerTaskFactory({"opencode": Recorder("opencode"), "codex": Recorder("codex")}, tasks)
    for seed in (None, 0, 5, 11):  # a restart, another group: the same task, the same harness
        factory.create([{"role": "user", "content": tasks[1].instruction}], seed=seed)
    assert made == [(tasks[1].id, factory.assignment[tasks[1].id])] * 4
    assert factory.assignment == {tasks[0].id: "opencode", tasks[1].id: "codex", tasks[2].id: "opencode"}


def test_training_tasks_keep_one_task_per_instruction(tasks, tmp_path):
    import shutil

    for task in tasks:
        shutil.copytree(task.path, tmp_path / task.id)
    twin = tmp_path / "zz-twin"  # same instruction as the first task, other data
    shutil.copytree(tasks[0].path, twin)
    kept = blackbox.training_tasks(tmp_path, ("easy",))
    assert [t.id for t in kept] == sorted(t.id for t in tasks)


def test_a_curriculum_keeps_the_tasks_some_episode_in_the_training_harness_solves(tasks, tmp_path):
    first, second, third = (t.id for t in tasks)
    # in mini-swe-agent: greedy solves the first, only a sample the second, nothing the third
    sampled = evaluation_folder(tmp_path / "sampled", {second: [0, 1], third: [0, 0]}, loop="mini-swe-agent")
    greedy = evaluation_folder(tmp_path / "greedy", {first: [1], second: [0], third: [0]}, loop="mini-swe-agent")
    # the whitebox loop's episodes in the same folders say otherwise, and do not count
    evaluation_folder(tmp_path / "sampled", {third: [1, 1]})
    evaluation_folder(tmp_path / "greedy", {third: [1]})
    folder = tasks[0].path.parent

    def kept(keep: str, harness: str = "mini-swe-agent") -> list[str]:
        return [t.id for t in blackbox.training_tasks(folder, ("easy",), Curriculum(sampled, greedy, keep), harness)]

    assert kept("solved") == [first, second]
    assert kept("reachable") == [second]
    assert kept("solved", harness="whitebox") == [third]
    with pytest.raises(SystemExit, match="no graded codex episode"):
        kept("solved", harness="codex")


def test_a_curriculum_trains_in_one_harness():
    result = subprocess.run([sys.executable, "train/harbor.py", "--curriculum", "outputs/sampled"], cwd=PROJECT_ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "--curriculum trains in one harness" in result.stderr


def test_the_reward_function_passes_the_episode_rewards_and_logs_forks_and_failures():
    logged = {}
    rewards = episode_reward(episode_reward=[1.05, None, 0.0], forks=[0, 2, 1], dropped_tokens=[0, 5, 3],
                             boundary=[None, "harness", None], log_metric=logged.__setitem__)
    assert rewards == [1.05, None, 0.0]
    assert logged == {"episodes/forks": 3.0, "episodes/dropped_tokens": 8.0, "episodes/ungraded_share": 1 / 3}


# ---- the trainers' settings against the installed TRL -----------------------------------------


def test_the_cpu_config_uses_only_keywords_the_installed_grpo_config_has(monkeypatch):
    import trl

    accepted, recorded = set(inspect.signature(trl.GRPOConfig).parameters), {}
    monkeypatch.setattr(trl, "GRPOConfig", lambda **kwargs: recorded.update(kwargs))
    blackbox.grpo_config(Path("out"), PRESETS["cpu"], bf16=False, project="p", space_id=None)
    assert set(recorded) <= accepted and recorded["use_cpu"] and recorded["gradient_accumulation_steps"] == 4


def test_command_line_overrides_reach_the_grpo_config_and_the_rest_stays_the_presets(monkeypatch):
    import argparse

    import trl

    parser = argparse.ArgumentParser()
    blackbox.add_training_flags(parser, output="outputs/test")
    args = parser.parse_args(["--preset", "cpu-mini-swe-agent", "--steps", "16", "--save-steps", "4",
                              "--learning-rate", "5e-6", "--temperature", "0.7"])
    preset = blackbox.run_preset(args)
    assert preset.max_tokens == PRESETS["cpu-mini-swe-agent"].max_tokens
    recorded = {}
    monkeypatch.setattr(trl, "GRPOConfig", lambda **kwargs: recorded.update(kwargs))
    blackbox.grpo_config(Path("out"), preset, bf16=False, project="p", space_id=None)
    assert (recorded["max_steps"], recorded["save_steps"], recorded["learning_rate"], recorded["temperature"]) == \
        (16, 4, 5e-6, 0.7)
    assert blackbox.run_preset(parser.parse_args([])) == PRESETS["cpu"]


def test_the_gpu_path_is_the_reference_recipe_with_only_installed_keywords(monkeypatch):
    from trl.experimental import async_grpo
    from trl.experimental.async_grpo import async_rollout_worker, openenv_harness

    accepted, recorded = set(inspect.signature(async_grpo.AsyncGRPOConfig).parameters), {}
    monkeypatch.setattr(async_grpo, "AsyncGRPOConfig", lambda **kwargs: recorded.update(kwargs) or SimpleNamespace(**kwargs))
    config = blackbox.async_grpo_config(Path("out"), PRESETS["gpu"], vllm_server="http://gpu:8000", project="p",
                                        space_id=None)
    reference = dict(per_device_train_batch_size=4, gradient_accumulation_steps=4, max_inflight_tasks=32,
                     max_staleness=4, token_budget=40_960, learning_rate=3e-6, temperature=0.8,
                     max_completion_length=16_384)
    assert set(recorded) <= accepted and {k: recorded[k] for k in reference} == reference

    # The worker: every keyword is one that HarnessRolloutWorker forwards to its loop, or its own.
    worker_kwargs = {}
    monkeypatch.setattr(openenv_harness, "HarnessRolloutWorker", lambda **kwargs: worker_kwargs.update(kwargs))
    config = SimpleNamespace(**recorded, queue_maxsize=0, request_timeout=600)
    factory = blackbox.VllmSessionFactory("http://gpu:8000", "Qwen/Qwen3.5-2B", ("opencode",), "tasks", 16_384, 32, 1800)
    blackbox.harness_rollout_worker(config, dataset=[], tokenizer=SimpleNamespace(eos_token_id=2), factory=factory)
    allowed = set()
    for function in (openenv_harness._HarnessRolloutLoop.__init__, async_rollout_worker.AsyncRolloutWorker.__init__,
                     async_rollout_worker._AsyncRolloutLoop.__init__):
        allowed |= set(inspect.signature(function).parameters)
    assert set(worker_kwargs) <= allowed and worker_kwargs["harness_session_factory"] is factory


def test_the_vllm_session_factory_pickles_for_the_spawned_worker():
    import pickle

    factory = blackbox.VllmSessionFactory("http://gpu:8000", "m", ("opencode", "codex"), "tasks", 1024, 8, 900)
    assert pickle.loads(pickle.dumps(factory)) == factory


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_is_the_manual(script):
    result = subprocess.run([sys.executable, script, "--help"], cwd=PROJECT_ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and "--engine" in result.stdout and "CPU (`--engine local`" in result.stdout


# ---- a real CPU run through the real CLI ---------------------------------------------------------


@pytest.mark.slow
def test_opencode_smoke_run_trains_a_step_through_the_real_cli(tasks, tmp_path):
    out = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "train/opencode.py", "--preset", "smoke", "--tasks", str(tasks[0].path.parent),
         "--output", str(out)], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    state = json.loads((out / "trainer_state.json").read_text())
    step = next(h for h in state["log_history"] if "episodes/forks" in h)
    assert state["global_step"] == 1 and step["episodes/ungraded_share"] == 0.0
    assert step["completions/mean_length"] > 0  # token-level traces became training rows
    assert (out / "checkpoint-1").is_dir() and (out / "learning_curve.png").exists()


# ---- the CPU trainer learns from the sampled tokens only -----------------------------------------

PROMPT = [5, 6, 7, 8]
# Two episodes of one group, right (1.05) and wrong (0.0): sampled, sampled, tool output, tool
# output, sampled, trailing template glue; the mask is the capture's.
COMPLETIONS = [[11, 12, 13, 14, 15, 16], [21, 22, 23, 24, 25, 26]]
MASK = [1, 1, 0, 0, 1, 0]


@pytest.fixture
def trainable(tmp_path):
    """A tiny random model of its own: the test trains it, so it must not be the shared `tiny` one."""
    from multiharness.model import load_model_and_tokenizer, make_tiny_model

    return load_model_and_tokenizer(make_tiny_model(tmp_path / "trainable"))


def _loss_and_logit_grads(trainable, tmp_path, completions):
    from dataclasses import replace

    from datasets import Dataset
    from trl import GRPOTrainer

    model, tokenizer = trainable
    model.zero_grad()
    rows = {"prompt_ids": [PROMPT, PROMPT], "completion_ids": completions, "logprobs": [[-1.0] * 6] * 2,
            "env_mask": [MASK, MASK], "episode_reward": [1.05, 0.0], "forks": [0, 0], "dropped_tokens": [0, 0],
            "boundary": [None, None]}
    preset = replace(PRESETS["smoke"], num_generations=2, rollouts_per_step=2, micro_batch_size=2)
    config = blackbox.grpo_config(tmp_path, preset, bf16=False, project="test", space_id=None)
    config.report_to = []
    prompt = [{"role": "user", "content": "the task"}]
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=config, reward_funcs=episode_reward,
                          train_dataset=Dataset.from_list([{"prompt": prompt}] * 2),
                          rollout_func=lambda prompts, trainer: {k: [list(v) if isinstance(v, list) else v for v in vs]
                                                                  for k, vs in rows.items()})
    inputs = trainer._generate_and_score_completions([{"prompt": prompt} for _ in range(2)])
    # TRL fuses the head into its log-prob computation, so the last hidden states stand in for the
    # logits: the state at position p feeds only the prediction of token p + 1.
    hidden = []

    def keep(module, args, out):  # returns None: the output stays as it is
        out.retain_grad()
        hidden.append(out)

    hook = model.model.norm.register_forward_hook(keep)
    try:
        loss = trainer.compute_loss(model, inputs)
        loss.backward()
    finally:
        hook.remove()
    # The state that predicts completion token j sits at position len(prompt) - 1 + j.
    start = len(PROMPT) - 1
    per_token = hidden[0].grad[:, start : start + len(MASK)].abs().sum(dim=-1)
    weights = sum(p.grad.abs().sum() for p in model.parameters() if p.grad is not None)
    return loss.item(), per_token, float(weights), inputs["advantages"].tolist()


def test_a_mixed_group_trains_only_the_sampled_tokens(trainable, tmp_path):
    loss, per_token, weights, advantages = _loss_and_logit_grads(trainable, tmp_path, COMPLETIONS)
    sampled = [j for j, m in enumerate(MASK) if m]
    masked = [j for j, m in enumerate(MASK) if not m]
    assert advantages[0] > 0 > advantages[1] and weights > 0  # mixed rewards: a real gradient
    # Unscaled (Dr. GRPO): reward minus the group's mean, not divided by its std (which gives ±0.707).
    assert advantages == pytest.approx([0.525, -0.525])
    assert all(per_token[row, j] > 0 for row in (0, 1) for j in sampled)
    assert all(per_token[row, j] == 0 for row in (0, 1) for j in masked)  # tool output and glue: no loss
    # A masked token after the last sampled one changes nothing; a sampled token changes the gradient.
    trailing = [c[:-1] + [c[-1] + 100] for c in COMPLETIONS]
    assert _loss_and_logit_grads(trainable, tmp_path, trailing)[::2] == (loss, weights)
    resampled = [c[:1] + [c[1] + 100] + c[2:] for c in COMPLETIONS]
    assert _loss_and_logit_grads(trainable, tmp_path, resampled)[2] != weights
