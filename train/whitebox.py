# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""GRPO on data-analysis tasks, with TRL running the tool loop (the whitebox loop).

The model gets a task instruction and two tools (bash, submit_solution) that run in a sandbox
holding the task's input files. TRL's `GRPOTrainer`
calls the tools through `environment_factory`; the reward function below ends each rollout's
episode and scores it on the host with the shared reward:

    reward = correctness × (1 + 0.1·15/(15 + tool_calls))   (None when not graded)

A run whose share of ungraded episodes passes MAX_FAILURE_SHARE (a sandbox that does not
start, say) stops after its first step with the boundary that failed and the last error.

GRPO needs mixed success within a group: start from the SFT warm start (`train/sft.py`),
not from the base 135M model, which makes no well-formed tool call.

CPU (default: SmolLM2-135M or an SFT checkpoint, no vLLM):
    python train/sft.py
    python train/whitebox.py --model outputs/sft --steps 20

A curriculum keeps the run on the templates where the warm start's sampled outcomes are mixed,
read from its evaluation on training tasks at the rollout temperature (`multiharness.curriculum`):
    python eval/evaluate.py --loops whitebox --task-dir build/tasks/train --tasks 48 --difficulties easy,medium \
        --samples 2 --temperature 0.7 --model outputs/sft --output outputs/curriculum/sft
    python train/whitebox.py --model outputs/sft --curriculum outputs/curriculum/sft
or, with a greedy evaluation of the same tasks too (that command without `--samples --temperature`,
into outputs/curriculum-greedy/sft), on the tasks greedy decoding fails and a sample solves, the only
ones where GRPO can raise greedy pass@1:
    python train/whitebox.py --model outputs/sft --curriculum outputs/curriculum/sft \
        --curriculum-greedy outputs/curriculum-greedy/sft
and with `--curriculum-tasks solved`, on those and the tasks greedy solves: every task some episode
of the warm start solves (the recipe of RESULTS.md's 30-step run, with `--learning-rate 5e-6 --steps 30`).

GPU (reference recipe, vLLM server on one GPU, training on another):
    # Terminal 1
    CUDA_VISIBLE_DEVICES=0 trl vllm-serve --model Qwen/Qwen3.5-2B --port 8000 --max-model-len 16384
    # Terminal 2
    CUDA_VISIBLE_DEVICES=1 python train/whitebox.py --preset gpu --model Qwen/Qwen3.5-2B

Against a remote environment (`--server URL`): the tools run and the episodes are graded by a
whitebox server (`envs/whitebox`, or its Space), built from the same task manifests; the trainer
only generates and learns. Its MAX_SESSIONS must be at least the preset's rollouts per step, and its
SESSION_SECONDS at least a step's generation (EPISODE_SECONDS below says why).
    # Terminal 1
    cd envs/whitebox && SESSION_SECONDS=3600 python -m server.app --port 8001
    # Terminal 2
    python train/whitebox.py --model outputs/sft --server http://127.0.0.1:8001

CI smoke run (tiny random model, 2 steps):
    python train/whitebox.py --preset smoke
"""

import argparse
import json
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from datasets import Dataset

from multiharness.curriculum import Curriculum, add_curriculum_flags, check_curriculum_flags, curriculum_record
from multiharness.episode import FailureBudget, FailureBudgetExceeded
from multiharness.model import cpu_supports_bf16, load_model_and_tokenizer, make_tiny_model
from multiharness.paths import DEFAULT_MODEL_DIR, DEFAULT_TASKS_DIR
from multiharness.remote import RemoteDataAnalysisEnv, check_server
from multiharness.sandbox import BACKENDS
from multiharness.tasks import load_tasks_or_exit
from multiharness.whitebox import MAX_TOOL_CALLS, DataAnalysisEnv, finish_episode, prompt_messages


VLLM_SERVER = "http://127.0.0.1:8000"  # where `trl vllm-serve` listens by default
MAX_FAILURE_SHARE = 0.5  # ungraded rollouts a run tolerates: past half, the infrastructure is broken, not flaky
# A rollout's wall-clock budget. TRL generates a step's rollouts together, turn by turn, so each
# episode's clock runs through every other rollout's generation too: on 2 busy cores a step took
# 815 s (RESULTS.md), past the environment's default of 600 s, after which its tools refuse and an
# answer not yet given scores 0. TRL's tool-call budget bounds an episode; this catches a hung one.
EPISODE_SECONDS = 3600.0


@dataclass(frozen=True)
class Preset:
    """Every number a GRPO run depends on."""

    model: str  # default model: a local folder (offline) or a Hub id (GPU machines are online)
    difficulties: tuple[str, ...]  # task tiers to train on
    steps: int  # optimiser steps
    num_generations: int  # rollouts per task (the GRPO group)
    rollouts_per_step: int  # rollouts per optimiser step (a multiple of num_generations)
    micro_batch_size: int  # rollouts per forward/backward pass: bounds activation memory
    learning_rate: float
    temperature: float  # sampling temperature of the rollouts (full vocabulary: top_p 1, top_k 0)
    max_completion_length: int  # tokens per rollout, tool outputs included
    max_tool_calling_iterations: int  # tool calls TRL runs per rollout (the model speaks once more after the last)
    save_steps: int
    use_vllm: bool
    beta: float = 0.0  # KL weight to the start model: 0 (TRL's default) loads no reference copy


PRESETS = {
    # Sized for 2 CPU cores: a step of 8 rollouts with up to 4 tool calls takes 2-5 minutes. One
    # rollout per backward pass keeps memory within a laptop's (8 at once went past 24 GB) and wastes
    # nothing on padding; the DAPO loss is normalised over the whole step, so the update is the same.
    # T 0.7: the SFT warm start is sharp, and at T 1 most of its sampled programs broke (RESULTS.md);
    # 1,792 tokens hold every expert trajectory up to its answer (mean 724, 90th percentile 1,181,
    # longest 1,649; 1,280 cut 36 of the 128 that recover from a failed program, as
    # benchmarks/trajectory_lengths.py shows), and MAX_TOOL_CALLS is the evaluator's budget: an
    # episode right there is not cut short here. lr 2e-6: Adam moves each weight by up to the learning
    # rate per step however small the gradient, and from the sharp warm start 2e-5 lost 25 points of
    # held-out pass@1 in 10 steps (p = 4.7e-6) where 2e-6 kept them (RESULTS.md).
    "cpu": Preset(
        model=str(DEFAULT_MODEL_DIR), difficulties=("easy", "medium"), steps=10, num_generations=4,
        rollouts_per_step=8, micro_batch_size=1, learning_rate=2e-6, temperature=0.7, max_completion_length=1792,
        max_tool_calling_iterations=MAX_TOOL_CALLS, save_steps=5, use_vllm=False,
    ),
    # The main job's preset: two steps of one group of 4, 3 minutes on 2 cores (its warm start solves
    # nothing, so no group has signal and no rollout takes a training pass; its learning rate is not
    # measured against 2e-6 at this size for the same reason).
    "quickstart": Preset(
        model=str(DEFAULT_MODEL_DIR), difficulties=("easy", "medium"), steps=2, num_generations=4,
        rollouts_per_step=4, micro_batch_size=1, learning_rate=2e-5, temperature=0.7, max_completion_length=1792,
        max_tool_calling_iterations=MAX_TOOL_CALLS, save_steps=1, use_vllm=False,
    ),
    # The reference recipe for LFM2.5-2.6B / Qwen3.5-2B: lr 3e-6 constant, T 0.8, 8 x 2 rollouts.
    "gpu": Preset(
        model="Qwen/Qwen3.5-2B", difficulties=("easy", "medium", "hard"), steps=500, num_generations=8,
        rollouts_per_step=16, micro_batch_size=4, learning_rate=3e-6, temperature=0.8, max_completion_length=4096,
        max_tool_calling_iterations=16, save_steps=50, use_vllm=True,
    ),
    # CI: a tiny random model (made on the fly), two steps, just enough to run every code path.
    "smoke": Preset(
        model="", difficulties=("easy",), steps=2, num_generations=2, rollouts_per_step=2,
        micro_batch_size=1, learning_rate=1e-5, temperature=1.0, max_completion_length=64, max_tool_calling_iterations=2,
        save_steps=1, use_vllm=False,
    ),
}


# ---------------------------------------------------------------- tasks → dataset


def task_dataset(tasks_dir: Path, difficulties: tuple[str, ...], curriculum: Curriculum | None = None) -> Dataset:
    """One row per task: the fixed system prompt and the task path `reset` opens.

    With a curriculum, only the tasks it keeps from the warm start's whitebox episodes: those of the
    templates whose sampled episodes were mixed, or with a greedy evaluation too, the tasks only a
    sample solves or every task some episode solves (`multiharness.curriculum`).
    """
    tasks = load_tasks_or_exit(tasks_dir)
    if curriculum is not None:
        tasks = curriculum.select(tasks, loop="whitebox")
    tasks = [t for t in tasks if t.difficulty in difficulties]
    if not tasks:
        raise SystemExit(f"No {'/'.join(difficulties)} tasks under {tasks_dir}: run `python -m multiharness tasks build`.")
    prompt = prompt_messages("")  # `reset` appends the instruction to the last user message
    return Dataset.from_list([{"prompt": prompt, "task_path": str(t.path)} for t in tasks])


# ---------------------------------------------------------------- reward


def episode_reward(environments, **kwargs) -> list[float | None]:
    """The shared reward of each rollout, from its environment's outcome (`multiharness.episode.score`).

    - right answer after n tool calls (submit_solution not counted): 1 + 0.1·15/(15 + n), 1.0 for n = 0;
    - wrong answer: 0.0;
    - no submit_solution before the tool-call or token budget ran out: 0.0 (wrong, not broken);
    - not graded (the task did not load, the sandbox did not start or died, the grader could not
      grade): None, which TRL leaves out of the group's mean and std, never 0.
    Every outcome goes to the run's failure budget, which stops a run that is mostly ungraded.
    """
    return [finish_episode(environment).reward for environment in environments]


# ---------------------------------------------------------------- training


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu", help="named set of hyper-parameters")
    parser.add_argument("--model", default=None, help="model folder or Hub id (default: SmolLM2-135M; smoke: tiny)")
    parser.add_argument("--tasks", type=Path, default=DEFAULT_TASKS_DIR / "train", help="built training tasks")
    parser.add_argument("--output", type=Path, default=Path("outputs/whitebox"), help="checkpoints and logs")
    add_curriculum_flags(parser)
    parser.add_argument("--seed", type=int, default=0, help="data order and sampling; --resume needs the run's own")
    parser.add_argument("--steps", type=int, default=None, help="override the preset's number of steps")
    parser.add_argument("--learning-rate", type=float, default=None, help="override the preset's learning rate")
    parser.add_argument("--beta", type=float, default=None,
                        help="override the preset's KL weight to the start model (> 0 loads a reference copy)")
    parser.add_argument("--difficulties", default=None, help="override the preset's task tiers (comma-separated)")
    parser.add_argument("--num-generations", type=int, default=None, help="override the preset's group size")
    parser.add_argument("--rollouts-per-step", type=int, default=None,
                        help="override the preset's rollouts per optimiser step (a multiple of the group size)")
    parser.add_argument("--save-steps", type=int, default=None, help="override the preset's checkpoint interval")
    parser.add_argument("--sandbox", choices=BACKENDS, default="local", help="where tools run (not with --server)")
    parser.add_argument("--server", default=None, metavar="URL",
                        help="a whitebox server (Space or envs/whitebox) that runs the tools and grades, instead of --sandbox")
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint in --output")
    parser.add_argument("--space-id", default=None, help="publish the Trackio dashboard to this HF Space")
    parser.add_argument("--vllm-server", default=VLLM_SERVER, help="vLLM server URL (gpu preset)")
    args = parser.parse_args()
    check_curriculum_flags(parser, args)
    return args


def grpo_config(args, preset: Preset, bf16: bool):
    """The whole TRL configuration of a run, in one visible call."""
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=str(args.output),
        max_steps=preset.steps,
        learning_rate=preset.learning_rate,
        lr_scheduler_type="constant",
        num_generations=preset.num_generations,
        # One generation batch of `rollouts_per_step` per optimiser step, trained in micro-batches.
        per_device_train_batch_size=preset.micro_batch_size,
        gradient_accumulation_steps=preset.rollouts_per_step // preset.micro_batch_size,
        temperature=preset.temperature,
        top_p=1.0,
        top_k=0,  # full vocabulary
        max_completion_length=preset.max_completion_length,
        max_tool_calling_iterations=preset.max_tool_calling_iterations,
        loss_type="dapo",
        # Dr. GRPO's unscaled advantages: dividing by the group's std would turn the reward's
        # tool-call bonus (a tie-breaker worth <0.1) into a full-size signal in all-correct groups.
        scale_rewards="none",
        beta=preset.beta,  # 0: no reference model (saves memory); the clipped ratio keeps updates close
        bf16=bf16,
        use_cpu=not preset.use_vllm,
        activation_checkpointing=preset.use_vllm,  # on a CPU 1.2-1.4x a 1,300-token pass (RESULTS.md)
        use_vllm=preset.use_vllm,
        vllm_mode="server",  # a `trl vllm-serve` process on its own GPU (see the docstring)
        vllm_server_base_url=args.vllm_server if preset.use_vllm else None,
        chat_template_kwargs={"enable_thinking": False},  # non-thinking template for hybrid models
        save_steps=preset.save_steps,
        logging_steps=1,
        report_to="trackio",
        project="multiharness-whitebox",
        trackio_space_id=args.space_id,
        seed=args.seed,  # fixes the data order, so --resume with the same seed replays the same batches
    )


def run_preset(args) -> Preset:
    """The named preset with the command line's overrides: what runs, and what training_config.json records."""
    overrides = {"steps": args.steps, "learning_rate": args.learning_rate, "beta": args.beta,
                 "save_steps": args.save_steps,
                 "difficulties": tuple(args.difficulties.split(",")) if args.difficulties else None,
                 "num_generations": args.num_generations, "rollouts_per_step": args.rollouts_per_step}
    preset = replace(PRESETS[args.preset], **{name: value for name, value in overrides.items() if value is not None})
    for divisor in (preset.num_generations, preset.micro_batch_size):
        if preset.rollouts_per_step % divisor:
            raise SystemExit(f"error: {preset.rollouts_per_step} rollouts per step do not split into groups of "
                             f"{preset.num_generations} and micro-batches of {preset.micro_batch_size}")
    return preset


def main():
    args = parse_args()
    preset = run_preset(args)
    if args.server:
        try:
            check_server(args.server)  # before the model loads: a wrong URL stops here, not after a step
        except RuntimeError as error:
            raise SystemExit(f"error: {error}") from error
    args.output.mkdir(parents=True, exist_ok=True)
    # Trackio reads its folder once, when TRL imports it: set it before anything imports TRL.
    os.environ.setdefault("TRACKIO_DIR", str(args.output.resolve() / "trackio"))
    from multiharness.grpo import SignalOnlyGRPOTrainer

    # a bad curriculum stops here, before the model loads
    curriculum = Curriculum.from_args(args)
    dataset = task_dataset(args.tasks, preset.difficulties, curriculum)
    print(f"tasks: {len(dataset)} from {args.tasks}")

    model_id = args.model or (make_tiny_model(args.output / "tiny-model") if args.preset == "smoke" else preset.model)
    bf16 = preset.use_vllm or cpu_supports_bf16()
    model, tokenizer = load_model_and_tokenizer(model_id)
    print(f"model: {model_id} (bf16={bf16})")

    # One budget for every environment of the run, judged from the first step's rollouts on.
    budget = FailureBudget(MAX_FAILURE_SHARE, min_episodes=preset.rollouts_per_step, desc="rollouts")

    def make_env():
        if args.server:  # same tools and reward, run and graded by the server
            return RemoteDataAnalysisEnv(args.server, budget=budget)
        return DataAnalysisEnv(sandbox=args.sandbox, episode_seconds=EPISODE_SECONDS, budget=budget)

    config = grpo_config(args, preset, bf16)
    (args.output / "training_config.json").write_text(
        json.dumps({"preset": args.preset, **asdict(preset), "model": str(model_id),
                    **curriculum_record(curriculum),
                    "seed": args.seed}, indent=2)
    )
    # TRL's GRPOTrainer, less the forward and backward passes of rollouts whose advantage is 0
    # (groups with one reward for all): the same update, in less time (multiharness/grpo.py).
    trainer = SignalOnlyGRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=config,
        train_dataset=dataset,
        reward_funcs=episode_reward,
        environment_factory=make_env,
    )
    print(f"training {preset.steps} steps ({preset.rollouts_per_step} rollouts per step)")
    try:
        with budget:
            trainer.train(resume_from_checkpoint=True if args.resume else None)
    except FailureBudgetExceeded as error:
        raise SystemExit(f"training stopped: {error}") from error
    trainer.save_model(str(args.output))
    trainer.save_state()  # trainer_state.json: the per-step log the learning curve is drawn from
    print(f"saved the model to {args.output}; Trackio logs in {os.environ['TRACKIO_DIR']}")


if __name__ == "__main__":
    main()
