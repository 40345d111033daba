# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Whitebox GRPO step time against a bare TRL GRPO step on the same model and token counts.

Reads a finished `train/whitebox.py` run (its `trainer_state.json`: step time, rollouts per
step, mean completion length), then runs bare `GRPOTrainer` steps on the same model with the
same prompts (the whitebox prompt, tool schemas included, rendered to text), the same number
of rollouts and micro-batches, and completions forced to the whitebox mean length, with a
random reward so the backward pass does the same work. The difference is what the tool loop
costs: several model calls per rollout (each re-reads the prompt), tool execution in the
sandbox, grading.

    python benchmarks/grpo_step.py --run outputs/long/grpo --steps 3
"""

import argparse
import json
import random
import statistics
from pathlib import Path

from datasets import Dataset

from multiharness.model import cpu_supports_bf16, load_model_and_tokenizer
from multiharness.paths import DEFAULT_TASKS_DIR
from multiharness.tasks import load_tasks
from multiharness.whitebox import prompt_messages, tool_schemas


def whitebox_figures(run: Path) -> dict:
    config = json.loads((run / "training_config.json").read_text())
    history = [h for h in json.loads((run / "trainer_state.json").read_text())["log_history"] if "step_time" in h]
    return {
        "model": config["model"],
        "rollouts_per_step": config["rollouts_per_step"],
        "micro_batch_size": config["micro_batch_size"],
        "num_generations": config["num_generations"],
        "step_time": [h["step_time"] for h in history],
        "completion_length": statistics.mean(h["completions/mean_length"] for h in history),
    }


def bare_step_times(figures: dict, tasks_dir: Path, steps: int, output: Path) -> list[float]:
    from trl import GRPOConfig, GRPOTrainer

    model, tokenizer = load_model_and_tokenizer(figures["model"])
    length = round(figures["completion_length"])
    prompts = [
        tokenizer.apply_chat_template(prompt_messages(t.instruction), tools=tool_schemas(),
                                      add_generation_prompt=True, tokenize=False)
        for t in load_tasks(tasks_dir)[: steps * figures["rollouts_per_step"]]
    ]
    config = GRPOConfig(
        output_dir=str(output),
        max_steps=steps,
        num_generations=figures["num_generations"],
        per_device_train_batch_size=figures["micro_batch_size"],
        gradient_accumulation_steps=figures["rollouts_per_step"] // figures["micro_batch_size"],
        max_completion_length=length,
        generation_kwargs={"min_new_tokens": length},  # every completion exactly the whitebox mean
        loss_type="dapo",
        beta=0.0,
        bf16=cpu_supports_bf16(),
        use_cpu=True,
        activation_checkpointing=False,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=config,
        train_dataset=Dataset.from_list([{"prompt": p} for p in prompts]),
        reward_funcs=lambda completions, **kwargs: [random.random() for _ in completions],
    )
    trainer.train()
    return [h["step_time"] for h in trainer.state.log_history if "step_time" in h]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="a finished train/whitebox.py output folder")
    parser.add_argument("--tasks", type=Path, default=DEFAULT_TASKS_DIR / "train", help="tasks for the prompts")
    parser.add_argument("--steps", type=int, default=3, help="bare GRPO steps to time")
    parser.add_argument("--output", type=Path, default=Path("outputs/bench-grpo-step"), help="scratch folder")
    args = parser.parse_args()

    figures = whitebox_figures(args.run)
    bare = bare_step_times(figures, args.tasks, args.steps, args.output)
    print(f"model {figures['model']}, {figures['rollouts_per_step']} rollouts/step, "
          f"{figures['completion_length']:.0f} completion tokens per rollout")
    for name, times in [("whitebox GRPO", figures["step_time"]), ("bare TRL GRPO", bare)]:
        print(f"{name:<15} median step {statistics.median(times):6.1f} s over {len(times)} steps")


if __name__ == "__main__":
    main()
