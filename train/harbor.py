# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""GRPO with Harbor running every trial: OpenCode, Claude Code, Codex and mini-swe-agent, one per task.

Each rollout is one Harbor trial (`harbor trial start`, Harbor 0.26 in its own Python) of
Harbor's own agent for the task's harness, in the project's bubblewrap sandbox instead of a
container (`multiharness/harbor/environment.py`). The agent's model endpoint is OpenEnv's
capture proxy (the capture session id is its API key), which records the token ids and
behaviour logprobs the trainer learns from; Harbor's verifier grades, in an environment of its
own, and the tool count is the agent's native tool actions in Harbor's trajectory:

    reward = correctness × (1 + 0.1·15/(15 + tool_calls))   (None when not graded)

One harness per task: the task's index in the sorted task list modulo the number of harnesses,
so every rollout of a group, and a restarted run, gives a task the same harness.
`--harnesses opencode` is the OpenCode-only policy: it and `train/opencode.py` (the project's
own runner, no Harbor) are two routes to the same policy.

CPU (`--engine local`, default):
    python train/harbor.py --model outputs/sft --steps 3
    python train/harbor.py --harnesses opencode,codex --steps 3

A curriculum, as in train/whitebox.py (`multiharness.curriculum`), judged from the warm start's
episodes on training tasks in the one harness the run trains in: a greedy evaluation, the same
with `--samples 3 --temperature 0.7` into outputs/curriculum-sampled/sft-mini, then the run:
    python eval/evaluate.py --loops mini-swe-agent --task-dir build/tasks/train --tasks 48 \
        --difficulties easy,medium --model outputs/sft-mini --output outputs/curriculum-greedy/sft-mini
    python train/harbor.py --preset cpu-mini-swe-agent --harnesses mini-swe-agent --model outputs/sft-mini \
        --curriculum outputs/curriculum-sampled/sft-mini --curriculum-greedy outputs/curriculum-greedy/sft-mini \
        --curriculum-tasks solved

GPU (`--engine vllm`):
    # Terminal 1
    CUDA_VISIBLE_DEVICES=0 python jobs/serve_vllm.py --model Qwen/Qwen3.5-2B --port 8000
    # Terminal 2
    CUDA_VISIBLE_DEVICES=1 python train/harbor.py --preset gpu --engine vllm --model Qwen/Qwen3.5-2B

Harbor's Docker and Daytona environments run the same exported tasks for those who have them:
    .tools/harbor/bin/harbor trial start --path build/tasks/train/<id> --agent opencode --env docker ...
(documented, not run here: this machine has no Docker engine and no Daytona account).

No `--server` (unlike train/whitebox.py): a harness Space (envs/harbor) runs the harness with its own
capture proxy, so training through it would need the Space to reach this trainer's engine, which on a
CPU is the trainer's own model in this process, and on GPUs a vLLM server that would have to be public
while its weights are synced. The Space treats an endpoint it does not own as evaluation only: train
here, and use the Space to try a harness or to evaluate an OpenAI-compatible endpoint.

CI smoke run (tiny random model, one step per harness through the real CLIs):
    python train/harbor.py --preset smoke
"""

import argparse

from multiharness.blackbox import add_training_flags, check_training_flags, train
from multiharness.harbor.trial import HARBOR_AGENTS


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_training_flags(parser, output="outputs/harbor")
    parser.add_argument("--harnesses", default=",".join(HARBOR_AGENTS),
                        help=f"comma-separated harnesses the tasks are shared out to (default: all of {list(HARBOR_AGENTS)})")
    args = parser.parse_args()
    args.harnesses = tuple(name.strip() for name in args.harnesses.split(",") if name.strip())
    unknown = sorted(set(args.harnesses) - set(HARBOR_AGENTS))
    if unknown or not args.harnesses:
        parser.error(f"--harnesses {unknown or '(none)'}: expected some of {list(HARBOR_AGENTS)}")
    check_training_flags(parser, args, args.harnesses)
    return args


def main():
    # Every number is in the preset (multiharness/blackbox.py PRESETS); the run itself, step by step
    # (model -> tasks -> sessions -> reward -> TRL config -> train -> save), is `multiharness.blackbox.train`.
    args = parse_args()
    train(args, harnesses=args.harnesses, runner="harbor", project="multiharness-harbor", title="Harbor GRPO")


if __name__ == "__main__":
    main()
