# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""How many completion tokens the expert trajectories take to reach their answer, and what a budget cuts.

A GRPO rollout whose completion (model turns and tool outputs) passes `max_completion_length`
before it submits ends without an answer and scores 0, even when the same episode would be right
in the evaluator. This reads a saved SFT dataset (`train/sft.py` writes it under
OUTPUT/expert_trajectories) and prints the distribution of completion tokens up to the answer,
and how many trajectories each budget would cut, the recovering ones (a failed program first)
apart.

    python benchmarks/trajectory_lengths.py outputs/sft/expert_trajectories --budget 1280 1792
"""

import argparse
import statistics

from datasets import load_from_disk
from transformers import AutoTokenizer

from multiharness.paths import DEFAULT_MODEL_DIR


def completion_tokens(tokenizer, row: dict) -> int:
    """Tokens from the end of the prompt up to the answer's tool result (the closing message left out)."""
    messages, tools = row["messages"], row["tools"]
    prompt = tokenizer.apply_chat_template(messages[:2], tools=tools, add_generation_prompt=True, return_dict=True)
    answered = tokenizer.apply_chat_template(messages[:-1], tools=tools, return_dict=True)
    return len(answered["input_ids"]) - len(prompt["input_ids"])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", help="a saved SFT dataset (messages, tools)")
    parser.add_argument("--budget", type=int, nargs="+", default=[1280, 1792], help="max_completion_length values to check")
    parser.add_argument("--model", default=str(DEFAULT_MODEL_DIR), help="whose tokenizer counts the tokens")
    args = parser.parse_args()
    tokenizer = AutoTokenizer.from_pretrained(args.model, local_files_only=True)
    rows = list(load_from_disk(args.dataset))
    lengths = [completion_tokens(tokenizer, row) for row in rows]
    recovering = [n for n, row in zip(lengths, rows) if sum(m["role"] == "tool" for m in row["messages"]) == 4]
    deciles = statistics.quantiles(lengths, n=10)
    print(f"{len(rows)} trajectories, {len(recovering)} recovering from a failed program")
    print(f"completion tokens to the answer: mean {statistics.mean(lengths):.0f}, median {deciles[4]:.0f}, "
          f"90th percentile {deciles[8]:.0f}, longest {max(lengths)}")
    for budget in args.budget:
        cut = sum(n > budget for n in lengths)
        print(f"max_completion_length {budget}: cuts {cut} ({sum(n > budget for n in recovering)} recovering)")


if __name__ == "__main__":
    main()
