# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""SFT warm start: teach a small model the tool-calling format before RL.

A 135M model makes no well-formed tool call out of the box, so every GRPO group would get the
same reward and no gradient. This script builds expert trajectories from the training tasks'
reference solutions (`multiharness.expert`: a look at the input files, on some tasks a failing
program and its error, the program that computes the answer, every output the sandbox's own,
then `submit_solution`), saves them as a Hugging Face dataset, and fine-tunes on the assistant
tokens only with TRL's `SFTTrainer`.

A run that stops (a preempted job, a closed laptop) continues from its last checkpoint with
`--resume`, on the expert trajectories it saved: every `cpu` and `harness` run takes over half an
hour on 2 cores.

To train on real teacher rollouts instead, pass `--dataset DIR` with a dataset saved by
`datasets.Dataset.save_to_disk` that has the same columns (`messages`, `tools`; tool names
`bash` and `submit_solution`).

A harness warm start (`--harness NAME`): the same expert plays each task through the real
harness CLI behind the capture proxy, and the model trains on the token ids that harness sent
and received (its own system prompt, tools and tool-output format), on the expert's tokens only
(`multiharness.expert.harness_expert_dataset`). The `harness` preset continues from a whitebox
warm start (45 minutes on 2 cores in mini-swe-agent: 9 to capture, 36 to train; RESULTS.md):
    python train/sft.py --preset harness --harness mini-swe-agent --model outputs/sft --output outputs/sft-mini

CPU (default; 128 steps of 4 sequences of ~1,300 tokens; 75-109 minutes on 2 cores, see RESULTS.md):
    python train/sft.py
GPU:
    python train/sft.py --preset gpu --model Qwen/Qwen3.5-2B --output outputs/sft-qwen
CI smoke run (tiny random model, 2 steps):
    python train/sft.py --preset smoke
"""

import argparse
import json
import logging
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from datasets import load_from_disk
from transformers.trainer_utils import get_last_checkpoint
from trl import SFTConfig, SFTTrainer

from multiharness.evaluation import select_tasks
from multiharness.expert import expert_dataset, harness_expert_dataset
from multiharness.harnesses import HARNESSES
from multiharness.model import cpu_supports_bf16, load_model_and_tokenizer, make_tiny_model
from multiharness.paths import DEFAULT_MODEL_DIR, DEFAULT_TASKS_DIR
from multiharness.sandbox import BACKENDS
from multiharness.tasks import load_tasks_or_exit


@dataclass(frozen=True)
class Preset:
    """Every number an SFT run depends on."""

    model: str  # default model: a local folder (offline) or a Hub id (GPU machines are online)
    trajectories: int  # expert episodes to build and train on
    difficulties: tuple[str, ...]  # task tiers the trajectories come from
    steps: int  # optimiser steps
    batch_size: int  # sequences per optimiser step (one per forward/backward pass, accumulated)
    learning_rate: float  # high for a 135M model learning a format; 1e-5 range for 2B models
    max_length: int  # whitebox: prompt (~530 tokens of tool schemas) + 3-4 calls + outputs; a harness's prompt is longer
    save_steps: int  # a checkpoint every N steps for --resume; 0 for runs of minutes, which start again


PRESETS = {
    # One pass over 512 easy/medium trajectories (~10 per template and tier): held-out pass@1
    # 0.09 after the first 256, 0.32 after all 512 (RESULTS.md).
    "cpu": Preset(
        model=str(DEFAULT_MODEL_DIR), trajectories=512, difficulties=("easy", "medium"), steps=128,
        batch_size=4, learning_rate=1e-4, max_length=2048, save_steps=16,
    ),
    # The main job's preset: one pass over 24 trajectories (~1,500 tokens each), 6 minutes on 2 cores.
    "quickstart": Preset(
        model=str(DEFAULT_MODEL_DIR), trajectories=24, difficulties=("easy", "medium"), steps=12,
        batch_size=2, learning_rate=1e-4, max_length=2048, save_steps=0,
    ),
    # A harness warm start on top of a whitebox one (pass --model): 128 of the expert's episodes in
    # one harness (1,756 tokens on average in mini-swe-agent), one pass; held-out pass@1 in mini-swe-agent
    # 0.00 -> 0.20 from the cpu warm start (RESULTS.md).
    "harness": Preset(
        model=str(DEFAULT_MODEL_DIR), trajectories=128, difficulties=("easy", "medium"), steps=32,
        batch_size=4, learning_rate=1e-4, max_length=3072, save_steps=8,
    ),
    "gpu": Preset(
        model="Qwen/Qwen3.5-2B", trajectories=1000, difficulties=("easy", "medium", "hard"), steps=500,
        batch_size=16, learning_rate=1e-5, max_length=8192, save_steps=50,
    ),
    # CI: a tiny random model (made on the fly), two steps.
    "smoke": Preset(
        model="", trajectories=4, difficulties=("easy",), steps=2, batch_size=2, learning_rate=1e-4,
        max_length=2048, save_steps=1,
    ),
}


# ---------------------------------------------------------------- tasks → expert trajectories


def build_trajectories(tasks_dir: Path, preset: Preset, sandbox: str, out: Path, *, harness: str | None = None,
                       tokenizer_dir: str | None = None):
    """Run the expert in the sandbox (in the whitebox loop, or through `harness`); keep the episodes that grade 1."""
    tasks = select_tasks(load_tasks_or_exit(tasks_dir), preset.difficulties, preset.trajectories)
    if harness:
        dataset = harness_expert_dataset(harness, tasks, tokenizer_dir, sandbox=sandbox)
    else:
        dataset = expert_dataset(tasks, sandbox)
    dataset.save_to_disk(out)
    return dataset


# ---------------------------------------------------------------- training


def exit_without_a_cpp_compiler() -> None:
    """On a CPU torch.compile builds C++ kernels: without a compiler the first step fails, after the trajectories."""
    from torch._inductor.cpp_builder import get_cpp_compiler
    from torch._inductor.exc import InvalidCxxCompiler

    try:
        get_cpp_compiler()
    except InvalidCxxCompiler:
        raise SystemExit("error: --torch-compile on a CPU needs a C++ compiler (g++, or the one $CXX names); "
                         "install one or leave the flag out") from None


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu", help="named set of sizes (see PRESETS)")
    parser.add_argument("--model", default=None, help="local model folder (default: SmolLM2-135M, or a tiny model for smoke)")
    parser.add_argument("--tasks", type=Path, default=DEFAULT_TASKS_DIR / "train", help="built training tasks")
    parser.add_argument("--dataset", type=Path, default=None, help="train on this saved dataset instead of building one")
    parser.add_argument("--output", type=Path, default=Path("outputs/sft"), help="checkpoint and logs folder")
    parser.add_argument("--trajectories", type=int, default=None, help="override the preset's number of expert episodes")
    parser.add_argument("--difficulties", default=None, help="override the preset's task tiers (comma-separated)")
    parser.add_argument("--steps", type=int, default=None, help="override the preset's number of steps")
    parser.add_argument("--learning-rate", type=float, default=None, help="override the preset's learning rate")
    parser.add_argument("--torch-compile", action="store_true",
                        help="compile the model (on a CPU: needs a C++ compiler; no steady gain measured, RESULTS.md)")
    parser.add_argument("--sandbox", choices=BACKENDS, default="local", help="where solutions run")
    parser.add_argument("--harness", choices=sorted(HARNESSES), default=None,
                        help="play the expert through this harness CLI and train on its captured token ids")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the last checkpoint in --output, on the expert trajectories saved there")
    args = parser.parse_args()
    if args.resume and get_last_checkpoint(args.output) is None:
        parser.error(f"--resume: no checkpoint in {args.output} (the preset saves one every save_steps steps)")
    return args


def main():
    args = parse_args()
    logging.basicConfig(level=logging.WARNING)
    overrides = {"trajectories": args.trajectories, "steps": args.steps, "learning_rate": args.learning_rate,
                 "difficulties": tuple(args.difficulties.split(",")) if args.difficulties else None}
    preset = replace(PRESETS[args.preset], **{name: value for name, value in overrides.items() if value is not None})
    on_cpu = args.preset != "gpu"
    if args.torch_compile and on_cpu:
        exit_without_a_cpp_compiler()
    args.output.mkdir(parents=True, exist_ok=True)

    model_path = args.model or (make_tiny_model(args.output / "tiny-model") if args.preset == "smoke" else preset.model)
    bf16 = args.preset == "gpu" or cpu_supports_bf16()
    model, tokenizer = load_model_and_tokenizer(model_path)
    print(f"model: {model_path} ({sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters, bf16={bf16})")

    saved_trajectories = args.output / "expert_trajectories"
    if args.dataset or args.resume:  # a resumed run trains on the rows its checkpoints were trained on
        dataset = load_from_disk(args.dataset or saved_trajectories)
        print(f"expert trajectories: {len(dataset)} from {args.dataset or saved_trajectories}")
    else:
        dataset = build_trajectories(args.tasks, preset, args.sandbox, saved_trajectories,
                                     harness=args.harness, tokenizer_dir=model_path)
        print(f"expert trajectories: {len(dataset)} (saved under {saved_trajectories})")
    # Captured traces are token ids already, with the expert's tokens marked; conversations are
    # rendered by the chat template and trained on the assistant's turns.
    tokenized = "input_ids" in dataset.column_names

    config = SFTConfig(
        output_dir=str(args.output),
        max_steps=preset.steps,
        # One sequence per forward/backward pass, accumulated to the batch: no padding, and memory
        # bounded by one sequence's logits (4 padded sequences of 2k tokens grew past 22 GB and
        # were killed on a 24 GB laptop).
        per_device_train_batch_size=1,
        gradient_accumulation_steps=preset.batch_size,
        learning_rate=preset.learning_rate,
        lr_scheduler_type="constant_with_warmup",
        warmup_steps=min(4, preset.steps // 4),
        max_length=preset.max_length,
        assistant_only_loss=not tokenized,  # learn the calls and the answer, not the task text or tool outputs
        completion_only_loss=tokenized,
        bf16=bf16,
        use_cpu=on_cpu,
        torch_compile=args.torch_compile,
        activation_checkpointing=False,  # 1.2-1.4x a 1,300-token pass at 135M on a CPU (RESULTS.md)
        logging_steps=1,
        save_strategy="steps" if preset.save_steps else "no",  # and one final save below
        save_steps=preset.save_steps or None,
        save_total_limit=1,  # --resume needs the last one only; each holds the optimiser state too
        report_to="none",
        seed=0,
    )
    (args.output / "training_config.json").write_text(
        json.dumps({"preset": args.preset, **asdict(preset), "model": str(model_path),
                    "torch_compile": args.torch_compile, "harness": args.harness,
                    "dataset": str(args.dataset) if args.dataset else None}, indent=2)
    )
    trainer = SFTTrainer(model=model, args=config, train_dataset=dataset, processing_class=tokenizer)
    print(f"training {preset.steps} steps")
    trainer.train(resume_from_checkpoint=True if args.resume else None)
    trainer.save_model(str(args.output))
    # Save the inference template, not the training one with generation markers.
    tokenizer.save_pretrained(str(args.output))
    print(f"saved the SFT model to {args.output}")


if __name__ == "__main__":
    main()
