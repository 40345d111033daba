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

No `--server` (unlike train/whitebox.py): a harness Space (envs/opencode) runs the harness with its own
capture proxy, so training through it would need the Space to reach this trainer's engine, which on a
CPU is the trainer's own model in this process, and on GPUs a vLLM server that would have to be public
while its weights are synced. The Space treats an endpoint it does not own as evaluation only: train
here, and use the Space to try a harness or to evaluate an OpenAI-compatible endpoint.

CI smoke run (tiny random model, one step through the real CLI):
    python train/opencode.py --preset smoke
"""

import argparse

from multiharness.blackbox import add_training_flags, check_training_flags, train

HARNESS = "opencode"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_training_flags(parser, output="outputs/opencode")
    args = parser.parse_args()
    check_training_flags(parser, args, (HARNESS,))
    return args


def main():
    # Every number is in the preset (multiharness/blackbox.py PRESETS); the run itself, step by step
    # (model -> tasks -> sessions -> reward -> TRL config -> train -> save), is `multiharness.blackbox.train`.
    train(parse_args(), harnesses=(HARNESS,), runner="project", project="multiharness-opencode", title="OpenCode GRPO")


if __name__ == "__main__":
    main()
