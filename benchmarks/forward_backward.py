# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""One training pass of the model alone, outside any trainer: the floor a GRPO or SFT step's per-sequence time is read against.

Forward and backward over random token ids under bf16 autocast (what the CPU presets train
with where the CPU has bf16 units), with no mask, an all-ones mask and a left-padded one (a
trainer's batch pads shorter prompts on the left). Best of `--rounds` per case.

    python benchmarks/forward_backward.py --model outputs/sft --lengths 800,1800
"""

import argparse
import time

import torch

from multiharness.model import cpu_supports_bf16, load_model_and_tokenizer
from multiharness.paths import DEFAULT_MODEL_DIR


def seconds(model, ids: torch.Tensor, mask: torch.Tensor | None, bf16: bool) -> float:
    start = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        logits = model(input_ids=ids, attention_mask=mask).logits
    logits.float().mean().backward()
    model.zero_grad()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(DEFAULT_MODEL_DIR), help="local model folder")
    parser.add_argument("--lengths", default="800,1800", help="sequence lengths, comma-separated")
    parser.add_argument("--padding", type=int, default=40, help="left-padded positions of the padded case")
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds per case (best kept)")
    args = parser.parse_args()

    model, _ = load_model_and_tokenizer(args.model)
    model.train()
    bf16 = cpu_supports_bf16()
    for length in map(int, args.lengths.split(",")):
        ids = torch.randint(100, model.config.vocab_size, (1, length))
        ones = torch.ones(1, length, dtype=torch.long)
        padded = ones.clone()
        padded[0, : args.padding] = 0
        for name, mask in [("no mask", None), ("all-ones mask", ones), (f"{args.padding} left-padded", padded)]:
            best = min(seconds(model, ids, mask, bf16) for _ in range(args.rounds))
            print(f"{length} tokens, {name}: forward + backward {best:.2f} s (bf16 autocast: {bf16})")


if __name__ == "__main__":
    main()
