# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""GRPO inside the real OpenCode CLI (the blackbox loop): the harness runs its own tools.

Each rollout is one OpenCode episode on a training task, in the project's bubblewrap sandbox:
OpenCode's own system prompt and tools (bash, read, write, edit, glob, grep), its own agent
loop, its answer in /workdir/answer.txt. Its model calls go through OpenEnv's capture proxy to
the engine, which records the token ids and behaviour logprobs the trainer learns from; the
answer is graded on the host with the shared reward:

    reward = correctness × (1 + 0.1·15/(15 + tool_calls))   (None when not graded)

Each episode becomes one training row: the model's sampled tokens are trained, everything else
(prompts, tool outputs, template glue) is masked; see `multiharness/blackbox.py` for the rule
on forked traces. `train/harbor.py --harnesses opencode` trains the same policy with Harbor
running the trials.

CPU (`--engine local`, default): `GRPOTrainer(rollout_func=...)`; the engine serves the
trainer's own model object (no weight sync; its prefix cache is dropped after every update):
    python train/opencode.py --model outputs/sft --steps 3

GPU (`--engine vllm`): TRL's `AsyncGRPOTrainer` with `HarnessRolloutWorker` and the same sessions:
    # Terminal 1: vLLM with token ids and processed logprobs
    CUDA_VISIBLE_DEVICES=0 python jobs/serve_vllm.py --model Qwen/Qwen3.5-2B --port 8000
    # Terminal 2
    CUDA_VISIBLE_DEVICES=1 python train/opencode.py --preset gpu --engine vllm --model Qwen/Qwen3.5-2B

CI smoke run (tiny random model, one step through the real CLI):
    python train/opencode.py --preset smoke
"""

import argparse
import json
import os
from dataclasses import asdict
from pathlib import Path

from multiharness.blackbox import (
    MAX_FAILURE_SHARE,
    PRESETS,
    VLLM_SERVER,
    DropEngineCache,
    HarnessRollouts,
    VllmSessionFactory,
    async_grpo_config,
    episode_reward,
    grpo_config,
    harness_rollout_worker,
    prompt_dataset,
    training_tasks,
)
from multiharness.endpoint import open_endpoint
from multiharness.engine import LocalEngine
from multiharness.episode import FailureBudget, FailureBudgetExceeded
from multiharness.harnesses import HarnessSessionFactory, get_harness
from multiharness.learning_curve import learning_curve
from multiharness.model import cpu_supports_bf16, load_model_and_tokenizer, make_tiny_model
from multiharness.paths import DEFAULT_TASKS_DIR

HARNESS = "opencode"
ENGINES = ("local", "vllm")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu", help="named set of hyper-parameters")
    parser.add_argument("--model", default=None, help="model folder or Hub id (default: SmolLM2-135M; smoke: tiny)")
    parser.add_argument("--tasks", type=Path, default=DEFAULT_TASKS_DIR / "train", help="built training tasks")
    parser.add_argument("--output", type=Path, default=Path("outputs/opencode"), help="checkpoints and logs")
    parser.add_argument("--steps", type=int, default=None, help="override the preset's number of steps")
    parser.add_argument("--save-steps", type=int, default=None, help="override the preset's checkpoint interval")
    parser.add_argument("--engine", choices=ENGINES, default="local",
                        help="local: the trainer's own model serves the rollouts (CPU); vllm: a vLLM server (GPU)")
    parser.add_argument("--vllm-server", default=VLLM_SERVER, help="vLLM server URL (--engine vllm)")
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint in --output")
    parser.add_argument("--space-id", default=None, help="publish the Trackio dashboard to this HF Space")
    return parser.parse_args()


def main():
    args = parse_args()
    preset = PRESETS[args.preset]
    steps = args.steps or preset.steps
    args.output.mkdir(parents=True, exist_ok=True)
    # Trackio reads its folder once, when TRL imports it: set it before anything imports TRL.
    os.environ.setdefault("TRACKIO_DIR", str(args.output.resolve() / "trackio"))
    from trl import GRPOTrainer

    model_id = args.model or (make_tiny_model(args.output / "tiny-model") if args.preset == "smoke" else preset.model)
    (args.output / "training_config.json").write_text(json.dumps(
        {"preset": args.preset, **asdict(preset), "steps": steps, "model": str(model_id), "harness": HARNESS,
         "engine": args.engine}, indent=2))

    tasks = training_tasks(args.tasks, preset.difficulties)
    dataset = prompt_dataset(tasks)
    print(f"tasks: {len(tasks)} from {args.tasks} (one per instruction)")
    project = "multiharness-opencode"

    if args.engine == "vllm":  # GPU: the async trainer; vLLM serves, a worker process runs the sessions
        from transformers import AutoTokenizer
        from trl.experimental.async_grpo import AsyncGRPOTrainer

        config = async_grpo_config(args.output, preset, steps, vllm_server=args.vllm_server, project=project,
                                   space_id=args.space_id, save_steps=args.save_steps)
        tokenizer = AutoTokenizer.from_pretrained(model_id)
        factory = VllmSessionFactory(args.vllm_server, str(model_id), (HARNESS,), str(args.tasks), preset.max_tokens,
                                     preset.max_model_calls, preset.timeout_s)
        print(f"vLLM at {args.vllm_server} must serve {model_id}: python jobs/serve_vllm.py --model {model_id}")
        trainer = AsyncGRPOTrainer(model=str(model_id), args=config, train_dataset=dataset, processing_class=tokenizer,
                                   rollout_worker=harness_rollout_worker(config, dataset, tokenizer, factory))
        trainer.train(resume_from_checkpoint=True if args.resume else None)
        trainer.save_model(str(args.output))
        return

    bf16 = cpu_supports_bf16()
    model, tokenizer = load_model_and_tokenizer(model_id)
    print(f"model: {model_id} (bf16={bf16})")
    engine = LocalEngine(model, tokenizer)  # the trainer's own model object: rollouts always use the latest weights
    endpoint_limits = dict(max_tokens=preset.max_tokens, max_model_calls=preset.max_model_calls,
                           wall_time_s=preset.timeout_s)
    with open_endpoint(engine, model_name=Path(str(model_id)).name, **endpoint_limits) as endpoint, \
            FailureBudget(MAX_FAILURE_SHARE, min_episodes=preset.rollouts_per_step, desc="episodes") as budget:
        factory = HarnessSessionFactory(
            get_harness(HARNESS), endpoint.proxy, model=endpoint.model,
            sampling={"temperature": preset.temperature, "top_p": 1.0},  # pinned: the CLI sends none
            max_tokens=preset.max_tokens, max_model_calls=preset.max_model_calls, timeout_s=preset.timeout_s,
            tasks=tasks, budget=budget,
        )
        print(f"sessions: {HARNESS} through the capture proxy at {endpoint.proxy.url} ({endpoint.capture_level})")
        config = grpo_config(args.output, preset, steps, bf16=bf16, project=project, space_id=args.space_id,
                             save_steps=args.save_steps)
        trainer = GRPOTrainer(
            model=model,
            processing_class=tokenizer,
            args=config,
            train_dataset=dataset,
            reward_funcs=episode_reward,
            rollout_func=HarnessRollouts(factory, tokenizer, concurrency=preset.concurrency),
            callbacks=[DropEngineCache(engine)],
        )
        print(f"training {steps} steps ({preset.rollouts_per_step} episodes per step, {preset.concurrency} at once)")
        try:
            trainer.train(resume_from_checkpoint=True if args.resume else None)
        except FailureBudgetExceeded as error:
            raise SystemExit(f"training stopped: {error}") from error
    trainer.save_model(str(args.output))
    trainer.save_state()  # trainer_state.json: the per-step log the learning curve is drawn from
    curve = learning_curve(args.output, args.output / "learning_curve.png", title="OpenCode GRPO")
    print(f"saved the model to {args.output}; learning curve {curve}; Trackio logs in {os.environ['TRACKIO_DIR']}")


if __name__ == "__main__":
    main()
