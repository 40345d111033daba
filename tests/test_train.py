"""Training scripts: --help, the GPU preset against the installed TRL, and real 2-step CPU runs."""

import inspect
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from multiharness.curriculum import Curriculum
from multiharness.paths import PROJECT_ROOT
from multiharness.tasks.build import build_task, load_manifest

from evaluations import evaluation_folder
from scripts import load_script

SCRIPTS = ["train/sft.py", "train/whitebox.py", "eval/evaluate.py", "eval/matrix.py", "eval/report.py"]



def _run(args: list[str], timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def easy_tasks(tmp_path_factory) -> Path:
    """Four easy training tasks, built from the committed manifest."""
    out = tmp_path_factory.mktemp("train-tasks")
    for row in [r for r in load_manifest("train") if r["difficulty"] == "easy"][:4]:
        build_task(row, out / row["id"])
    return out


def test_a_curriculum_keeps_only_the_templates_whose_outcomes_were_mixed(easy_tasks, tmp_path):
    curriculum = evaluation_folder(tmp_path, {
        "train-0001-latest-hire": [1, 0],  # mixed: kept
        "train-0002-resolution-hours": [1, 1],  # all right: a group would carry no signal
        "train-0009-salary-compare": [0, 0],  # all wrong: likewise
        "train-0011-monthly-precipitation": [1, None],  # one graded episode: not mixed
    })
    # another loop's episodes do not count
    evaluation_folder(tmp_path, {"train-0002-resolution-hours": [0, 0]}, loop="codex")
    dataset = load_script("train/whitebox.py").task_dataset(easy_tasks, ("easy",), Curriculum(curriculum))
    assert [Path(row["task_path"]).name for row in dataset] == ["train-0001-latest-hire"]


@pytest.mark.parametrize("outcomes, message", [
    ({"test-0000-long-routes": [1, 0]}, "not training tasks"),  # held-out outcomes must not steer training
    ({"train-0001-latest-hire": [1, 1]}, "no template"),
    ({"train-0001-latest-hire": [None]}, "no graded whitebox episode"),
])
def test_a_curriculum_that_cannot_be_used_stops_the_run_before_it_starts(easy_tasks, tmp_path, outcomes, message):
    with pytest.raises(SystemExit, match=message):
        load_script("train/whitebox.py").task_dataset(easy_tasks, ("easy",),
                                                      Curriculum(evaluation_folder(tmp_path, outcomes)))


def test_a_greedy_evaluation_narrows_the_curriculum_to_the_tasks_only_a_sample_solves(easy_tasks, tmp_path):
    sampled = evaluation_folder(tmp_path / "sampled", {
        "train-0001-latest-hire": [0, 1],  # greedy fails, a sample solves: kept
        "train-0002-resolution-hours": [1, 0],  # greedy solves: sharpening adds nothing to greedy pass@1
        "train-0009-salary-compare": [0, 0],  # no sample solves: a group with nothing to learn
        "train-0011-monthly-precipitation": [1, 1],  # greedy not graded: left out
    })
    greedy = evaluation_folder(tmp_path / "greedy", {
        "train-0001-latest-hire": [0], "train-0002-resolution-hours": [1], "train-0009-salary-compare": [0],
        "train-0011-monthly-precipitation": [None],
    })
    dataset = load_script("train/whitebox.py").task_dataset(easy_tasks, ("easy",), Curriculum(sampled, greedy))
    assert [Path(row["task_path"]).name for row in dataset] == ["train-0001-latest-hire"]


def test_a_solved_curriculum_keeps_every_task_greedy_or_a_sample_solves(easy_tasks, tmp_path):
    sampled = evaluation_folder(tmp_path / "sampled", {
        "train-0001-latest-hire": [0, 1],  # greedy fails, a sample solves: kept
        "train-0009-salary-compare": [0, 0],  # no episode solves it: a group of zeros, left out
    })
    greedy = evaluation_folder(tmp_path / "greedy", {
        "train-0001-latest-hire": [0], "train-0002-resolution-hours": [1],  # greedy solves: kept, unsampled
        "train-0009-salary-compare": [0], "train-0011-monthly-precipitation": [None],
    })
    curriculum = Curriculum(sampled, greedy, "solved")
    dataset = load_script("train/whitebox.py").task_dataset(easy_tasks, ("easy",), curriculum)
    assert [Path(row["task_path"]).name for row in dataset] == ["train-0001-latest-hire", "train-0002-resolution-hours"]


def test_a_solved_curriculum_without_a_solved_task_stops_the_run(easy_tasks, tmp_path):
    sampled = evaluation_folder(tmp_path / "sampled", {"train-0001-latest-hire": [0, 0]})
    greedy = evaluation_folder(tmp_path / "greedy", {"train-0001-latest-hire": [0]})
    with pytest.raises(SystemExit, match="no episode .* solved a task"):
        load_script("train/whitebox.py").task_dataset(easy_tasks, ("easy",), Curriculum(sampled, greedy, "solved"))


@pytest.mark.parametrize("greedy, message", [
    ({"train-0001-latest-hire": [1]}, "nothing for GRPO to add"),
    ({"test-0000-long-routes": [0]}, "not training tasks"),
])
def test_a_task_curriculum_without_a_reachable_training_task_stops_the_run(easy_tasks, tmp_path, greedy, message):
    sampled = evaluation_folder(tmp_path / "sampled", {"train-0001-latest-hire": [0, 1]})
    curriculum = Curriculum(sampled, evaluation_folder(tmp_path / "greedy", greedy))
    with pytest.raises(SystemExit, match=message):
        load_script("train/whitebox.py").task_dataset(easy_tasks, ("easy",), curriculum)


def test_a_greedy_curriculum_needs_the_sampled_one():
    result = _run(["train/whitebox.py", "--curriculum-greedy", "outputs/greedy"])
    assert result.returncode == 2 and "--curriculum-greedy needs --curriculum" in result.stderr


def test_a_task_curriculum_needs_the_greedy_evaluation():
    result = _run(["train/whitebox.py", "--curriculum", "outputs/sampled", "--curriculum-tasks", "solved"])
    assert result.returncode == 2 and "--curriculum-tasks needs --curriculum-greedy" in result.stderr


def _scripted_turns(tokenizer, trajectory: dict) -> list[list[int]]:
    """Token ids of each assistant turn of `trajectory`, as a model following the chat template samples them."""
    from multiharness.engine.chat import render_assistant

    messages, turns = trajectory["messages"], []
    for index, message in enumerate(messages):
        if message["role"] == "assistant":
            text = render_assistant(tokenizer, messages[:index], trajectory["tools"], message)
            turns.append(tokenizer(text, add_special_tokens=False)["input_ids"])
    return turns


@pytest.mark.parametrize("tool_calls_run, correctness", [
    (None, 1.0),  # the cpu preset: look, failed program, fixed program, answer; all four run, as in the evaluator
    (3, 0.0),  # one call fewer: the answer on the fourth call is never run, so a right episode scores 0
])
def test_the_grpo_loop_runs_as_many_tool_calls_as_the_evaluator(easy_tasks, tmp_path, tool_calls_run, correctness):
    # TRL's own tool loop with our environment and sandbox; only the model is replaced, by a script
    # that replays an expert trajectory with a recovery (four tool calls, the answer last).
    import dataclasses

    from trl import GRPOTrainer

    from multiharness.evaluation import LOOP_DEFAULTS
    from multiharness.expert import expert_trajectory
    from multiharness.model import load_model_and_tokenizer, make_tiny_model
    from multiharness.tasks import load_tasks
    from multiharness.whitebox import DataAnalysisEnv, finish_episode

    script = load_script("train/whitebox.py")
    preset = script.PRESETS["cpu"]
    assert preset.max_tool_calling_iterations == LOOP_DEFAULTS["whitebox"]["max_model_calls"]
    task = load_tasks(easy_tasks)[0]
    trajectory = expert_trajectory(task, recover=True)
    assert sum(len(m.get("tool_calls") or []) for m in trajectory["messages"]) == 4

    preset = dataclasses.replace(preset, steps=1, num_generations=2, rollouts_per_step=2, micro_batch_size=2,
                                 max_tool_calling_iterations=tool_calls_run or preset.max_tool_calling_iterations)
    args = SimpleNamespace(output=tmp_path, vllm_server=None, space_id=None, seed=0)
    config = script.grpo_config(args, preset, bf16=False)
    config.report_to = []
    model, tokenizer = load_model_and_tokenizer(make_tiny_model(tmp_path / "tiny"))
    dataset = script.task_dataset(easy_tasks, ("easy",)).filter(lambda row: row["task_path"] == str(task.path))
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=config, train_dataset=dataset,
                          reward_funcs=script.episode_reward, environment_factory=DataAnalysisEnv)
    turns = _scripted_turns(tokenizer, trajectory)

    def replay(prompt_ids, *args, **kwargs):  # the next expert turn, after as many as the prompt already holds
        return [turns[tokenizer.decode(ids).count("<|im_start|>assistant") - 1] for ids in prompt_ids], None

    trainer._generate_single_turn = replay
    trainer._generate_and_score_completions([dataset[0], dataset[0]])
    outcomes = [finish_episode(environment) for environment in trainer.environments]
    assert [(o.correctness, o.tool_calls) for o in outcomes] == [(correctness, 3)] * 2


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_is_the_manual(script):
    result = _run([script, "--help"], timeout=120)
    assert result.returncode == 0 and "usage:" in result.stdout and "--" in result.stdout


@pytest.mark.parametrize("command", [
    ["train/sft.py", "--tasks", "{empty}", "--output", "{out}"],
    ["train/whitebox.py", "--tasks", "{empty}", "--output", "{out}"],
    ["train/harbor.py", "--preset", "smoke", "--tasks", "{empty}", "--output", "{out}"],
    ["eval/evaluate.py", "--task-dir", "{empty}", "--output", "{out}"],
], ids=lambda command: command[0])
def test_a_folder_without_tasks_stops_with_how_to_build_them(tmp_path, command):
    empty = tmp_path / "tasks"
    empty.mkdir()
    result = _run([a.format(empty=empty, out=tmp_path / "out") for a in command], timeout=120)
    assert result.returncode == 1, result.stderr[-3000:]
    assert f"error: no tasks under {empty}" in result.stderr and "multiharness tasks build" in result.stderr
    assert "Traceback" not in result.stderr


def test_gpu_preset_uses_only_keywords_the_installed_grpo_config_has(monkeypatch):
    # The GPU run cannot happen here; building its config with a recorder checks every keyword.
    import trl

    accepted = set(inspect.signature(trl.GRPOConfig).parameters)
    script = load_script("train/whitebox.py")
    recorded = {}
    monkeypatch.setattr(trl, "GRPOConfig", lambda **kwargs: recorded.update(kwargs))
    args = SimpleNamespace(output=Path("out"), vllm_server=script.VLLM_SERVER, space_id=None, seed=0)
    script.grpo_config(args, script.PRESETS["gpu"], bf16=True)
    assert set(recorded) <= accepted and recorded["use_vllm"] and recorded["vllm_mode"] == "server"


def test_command_line_overrides_reach_the_grpo_config(monkeypatch):
    import trl

    script = load_script("train/whitebox.py")
    monkeypatch.setattr(sys, "argv", ["whitebox.py", "--steps", "4", "--learning-rate", "3e-7", "--save-steps", "2",
                                      "--difficulties", "easy", "--num-generations", "8", "--rollouts-per-step", "16",
                                      "--beta", "0.04", "--seed", "3"])
    args = script.parse_args()
    preset = script.run_preset(args)
    assert preset.temperature == script.PRESETS["cpu"].temperature  # what is not overridden is the preset's
    assert preset.difficulties == ("easy",)  # the tiers task_dataset draws from
    recorded = {}
    monkeypatch.setattr(trl, "GRPOConfig", lambda **kwargs: recorded.update(kwargs))
    script.grpo_config(args, preset, bf16=False)
    assert (recorded["max_steps"], recorded["learning_rate"], recorded["save_steps"]) == (4, 3e-7, 2)
    assert (script.PRESETS["cpu"].beta, recorded["beta"]) == (0.0, 0.04)
    assert recorded["seed"] == 3  # the data order and the rollouts' sampling
    # Groups of 8, two per step, one rollout per backward pass: 16 passes accumulated per update.
    assert (recorded["num_generations"], recorded["gradient_accumulation_steps"]) == (8, 16)


def test_a_step_that_does_not_split_into_groups_is_refused(monkeypatch):
    script = load_script("train/whitebox.py")
    monkeypatch.setattr(sys, "argv", ["whitebox.py", "--num-generations", "3"])  # the cpu preset's 8 rollouts
    with pytest.raises(SystemExit, match="8 rollouts per step do not split into groups of 3"):
        script.run_preset(script.parse_args())


def test_gpu_preset_is_the_reference_recipe():
    preset = load_script("train/whitebox.py").PRESETS["gpu"]
    expected = dict(learning_rate=3e-6, temperature=0.8, num_generations=8, rollouts_per_step=16,
                    max_tool_calling_iterations=16, max_completion_length=4096, save_steps=50, use_vllm=True)
    assert {k: getattr(preset, k) for k in expected} == expected


def test_vllm_serve_command_in_the_docs_matches_the_script():
    # The documented `trl vllm-serve` flags exist in TRL's script, and serve the model and port
    # that the gpu preset expects.
    from trl.scripts.vllm_serve import ScriptArguments

    script = load_script("train/whitebox.py")
    line = next(l for l in script.__doc__.splitlines() if "trl vllm-serve" in l)
    argv = shlex.split(line.split("trl vllm-serve", 1)[1])
    flags = dict(zip(argv[::2], argv[1::2]))
    fields = {f.replace("_", "-") for f in ScriptArguments.__dataclass_fields__}
    port = re.search(r":(\d+)$", script.VLLM_SERVER).group(1)
    assert {f.lstrip("-") for f in flags} <= fields
    assert flags["--model"] == script.PRESETS["gpu"].model and flags["--port"] == port


@pytest.mark.slow
def test_sft_smoke_run_trains_and_saves(easy_tasks, tmp_path):
    result = _run(["train/sft.py", "--preset", "smoke", "--learning-rate", "5e-5", "--trajectories", "3",
                   "--tasks", str(easy_tasks), "--output", str(tmp_path)])
    assert result.returncode == 0, result.stderr[-3000:]
    saved = {p.name for p in tmp_path.iterdir()}
    assert {"model.safetensors", "chat_template.jinja", "training_config.json", "expert_trajectories"} <= saved
    # The overrides are what trained (the smoke preset's own rate is 1e-4, its trajectories 4 of
    # the 4 tasks), and what the run records.
    import torch
    from datasets import load_from_disk

    trained = torch.load(tmp_path / "training_args.bin", weights_only=False)  # the SFTConfig the trainer saved
    assert trained.learning_rate == 5e-5
    assert len(load_from_disk(str(tmp_path / "expert_trajectories"))) == 3
    recorded = json.loads((tmp_path / "training_config.json").read_text())
    assert (recorded["learning_rate"], recorded["trajectories"]) == (5e-5, 3)


@pytest.mark.slow
def test_compiled_sft_trains_what_eager_sft_trains(easy_tasks, tmp_path):
    # --torch-compile: the same steps on the same rows must give the same losses (to compiled
    # kernels' rounding) and save the same tensors, trained the same way.
    import torch
    from safetensors.torch import load_file

    eager, compiled = tmp_path / "eager", tmp_path / "compiled"
    first = _run(["train/sft.py", "--preset", "smoke", "--trajectories", "3", "--tasks", str(easy_tasks),
                  "--output", str(eager)])
    assert first.returncode == 0, first.stderr[-3000:]
    second = _run(["train/sft.py", "--preset", "smoke", "--torch-compile", "--dataset",
                   str(eager / "expert_trajectories"), "--model", str(eager / "tiny-model"), "--output", str(compiled)])
    assert second.returncode == 0, second.stderr[-3000:]
    assert torch.load(compiled / "training_args.bin", weights_only=False).torch_compile
    assert json.loads((compiled / "training_config.json").read_text())["torch_compile"] is True

    def losses(out: Path) -> list[float]:
        history = json.loads((out / "checkpoint-2" / "trainer_state.json").read_text())["log_history"]
        return [h["loss"] for h in history if "loss" in h]

    assert losses(compiled) == pytest.approx(losses(eager), rel=1e-3) and len(losses(eager)) == 2
    # Adam moves every weight by about the learning rate whatever its gradient, so rounding shows
    # in the update: each tensor's compiled and eager updates must agree to a tenth of its size.
    start = load_file(next((eager / "tiny-model").glob("*.safetensors")))
    eager_weights, compiled_weights = load_file(eager / "model.safetensors"), load_file(compiled / "model.safetensors")
    assert compiled_weights.keys() == eager_weights.keys() == start.keys()
    for name, weight in eager_weights.items():
        update = (weight - start[name]).norm()
        assert update > 0 and (compiled_weights[name] - weight).norm() < 0.1 * update, name


@pytest.mark.slow
def test_sft_resume_continues_from_the_last_checkpoint_on_the_saved_trajectories(easy_tasks, tmp_path):
    common = ["train/sft.py", "--preset", "smoke", "--trajectories", "3", "--tasks", str(easy_tasks),
              "--output", str(tmp_path)]
    first = _run([*common, "--steps", "1"])
    assert first.returncode == 0, first.stderr[-3000:]
    trajectories = tmp_path / "expert_trajectories"
    built = {p.name: p.stat().st_mtime_ns for p in trajectories.iterdir() if not p.name.startswith("cache-")}
    first_log = json.loads((tmp_path / "checkpoint-1" / "trainer_state.json").read_text())["log_history"]
    resumed = _run([*common, "--steps", "2", "--resume"])
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    state = json.loads((tmp_path / "checkpoint-2" / "trainer_state.json").read_text())
    assert state["global_step"] == 2 and [h["step"] for h in state["log_history"] if "loss" in h] == [1, 2]
    assert state["log_history"][0] == first_log[0]  # step 1 comes back from the checkpoint, not re-run
    assert {name: (trajectories / name).stat().st_mtime_ns for name in built} == built  # not rebuilt
    assert f"expert trajectories: 3 from {trajectories}" in resumed.stdout


def test_sft_resume_needs_a_checkpoint(tmp_path):
    result = _run(["train/sft.py", "--resume", "--output", str(tmp_path)], timeout=120)
    assert result.returncode == 2 and f"--resume: no checkpoint in {tmp_path}" in result.stderr


def test_torch_compile_without_a_cpp_compiler_stops_before_building_anything(tmp_path):
    env = {**os.environ, "CXX": str(tmp_path / "no-such-compiler")}
    result = subprocess.run([sys.executable, "train/sft.py", "--torch-compile", "--output", str(tmp_path / "sft")],
                            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 1 and "needs a C++ compiler" in result.stderr
    assert not (tmp_path / "sft").exists()


@pytest.mark.slow
def test_harness_warm_start_trains_on_the_token_ids_the_harness_sent(easy_tasks, tmp_path):
    # The scripted expert plays each task through the real mini-swe-agent CLI behind the capture
    # proxy; the SFT rows are the captured ids, trained on the expert's own tokens only.
    from datasets import load_from_disk
    from transformers import AutoTokenizer

    from multiharness.engine.scripted import SUBMIT_SENTINEL
    from multiharness.layout import ANSWER_PATH
    from multiharness.tasks import load_tasks, look_command

    result = _run(["train/sft.py", "--preset", "smoke", "--harness", "mini-swe-agent", "--tasks", str(easy_tasks),
                   "--output", str(tmp_path)])
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((tmp_path / "training_config.json").read_text())["harness"] == "mini-swe-agent"
    assert (tmp_path / "model.safetensors").exists()
    rows = load_from_disk(str(tmp_path / "expert_trajectories"))
    tasks = {task.id: task for task in load_tasks(easy_tasks)}
    assert sorted(rows["task_id"]) == sorted(tasks) and set(rows["harness"]) == {"mini-swe-agent"}
    tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    for row in rows:
        task, ids, mask = tasks[row["task_id"]], row["input_ids"], row["completion_mask"]
        whole = tokenizer.decode(ids)
        trained = tokenizer.decode([token for token, bit in zip(ids, mask) if bit])
        # The harness's own prompt around the task, and the tool outputs of the real sandbox...
        assert SUBMIT_SENTINEL in whole.split("<|im_start|>assistant")[0]
        assert task.instruction.strip() in whole and f"== {sorted(task.input_dir.iterdir())[0].name}\\n" in whole
        # ...and only the expert's three calls are trained: look, solve and write, submit.
        assert trained.count("<tool_call>") == 3 and task.instruction.strip()[:60] not in trained
        assert json.dumps(look_command(task))[1:-1] in trained and f"| tee {ANSWER_PATH}" in trained
        assert trained.rstrip().endswith(f'"echo {SUBMIT_SENTINEL}"}}}}\n</tool_call><|im_end|>')
        assert "returncode" not in trained


@pytest.mark.slow
def test_whitebox_grpo_smoke_run_takes_two_real_steps(easy_tasks, tmp_path):
    # A real GRPOTrainer run: rollouts call the environment's tools in the bubblewrap sandbox.
    result = _run(["train/whitebox.py", "--preset", "smoke", "--tasks", str(easy_tasks), "--output", str(tmp_path)])
    assert result.returncode == 0, result.stderr[-3000:]
    state = json.loads((tmp_path / "trainer_state.json").read_text())
    rewards = [h["reward"] for h in state["log_history"] if "reward" in h]
    assert state["global_step"] == 2 and len(rewards) == 2 and (tmp_path / "trackio").is_dir()


@pytest.mark.slow
def test_a_run_without_a_working_sandbox_stops_naming_the_sandbox(easy_tasks, tmp_path):
    # An empty MULTIHARNESS_HOME has no sandbox Python: every rollout's sandbox fails to start,
    # so the failure budget stops the run after its first step instead of training on None.
    from multiharness.model import make_tiny_model

    model = make_tiny_model(tmp_path / "tiny")
    env = {**os.environ, "MULTIHARNESS_HOME": str(tmp_path / "empty-home")}
    result = subprocess.run(
        [sys.executable, "train/whitebox.py", "--preset", "smoke", "--model", str(model), "--tasks", str(easy_tasks),
         "--output", str(tmp_path / "run")],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    stopped = [line for line in result.stderr.splitlines() if line.startswith("training stopped:")]
    assert result.returncode == 1 and len(stopped) == 1, result.stderr[-3000:]
    assert stopped[0].startswith("training stopped: 2 of 2 episodes were not graded (sandbox 2)")
    assert "sandbox boundary" in stopped[0] and "sandbox Python is missing" in stopped[0]
    assert not (tmp_path / "run" / "trainer_state.json").exists()  # no step was taken on None rewards


@pytest.mark.slow
def test_whitebox_resume_continues_from_the_last_checkpoint(easy_tasks, tmp_path):
    common = ["train/whitebox.py", "--preset", "smoke", "--tasks", str(easy_tasks), "--output", str(tmp_path)]
    first = _run([*common, "--steps", "1"])
    assert first.returncode == 0, first.stderr[-3000:]
    first_log = json.loads((tmp_path / "checkpoint-1" / "trainer_state.json").read_text())["log_history"]
    resumed = _run([*common, "--steps", "2", "--resume"])
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    state = json.loads((tmp_path / "trainer_state.json").read_text())
    assert state["global_step"] == 2 and [h["step"] for h in state["log_history"] if "reward" in h] == [1, 2]
    # Step 1 comes back from the checkpoint as logged (its measured step time included), not re-run.
    assert state["log_history"][0] == first_log[0]


def test_learning_curve_is_drawn_from_the_trainer_state(tmp_path):
    report = load_script("eval/report.py")
    history = [{"step": 1, "reward": 0.0, "frac_reward_zero_std": 1.0}, {"step": 2, "reward": 0.5, "frac_reward_zero_std": 0.5}]
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    png = report.learning_curve(tmp_path, tmp_path / "curve.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert report.learning_curve(tmp_path / "empty", tmp_path / "none.png") is None
    # With held-out evaluations of its checkpoints: a third panel, so a taller figure.
    from PIL import Image

    held_out = {0: {"pass_at_1": 0.1, "pass_at_1_interval": [0.05, 0.2], "graded": 30},
                2: {"pass_at_1": 0.2, "pass_at_1_interval": [0.1, 0.35], "graded": 30}}
    tall = report.learning_curve(tmp_path, tmp_path / "tall.png", held_out=held_out)
    assert Image.open(tall).height > Image.open(png).height
