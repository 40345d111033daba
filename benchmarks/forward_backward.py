# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""One training pass of the model alone, outside any trainer: the floor a GRPO or SFT step's per-sequence time is read against.

Forward and backward over random token ids under bf16 autocast (what the CPU presets train
with where the CPU has bf16 units), with no mask, an all-ones mask and a left-padded one (a
trainer's batch pads shorter prompts on the left). Best of `--rounds` per case.

    python benchmarks/forward_backward.py --model outputs/sft --lengths 800,1800

`--activation-checkpointing` times each length with it (TRL's `GRPOConfig` and `SFTConfig` turn it
on unless told otherwise) and then without it, all-ones mask, in the same process, and prints the
ratio and the process's peak memory after each: the peak only grows, so the figures after the first
configuration are its own and those after the second the larger of the two.

`--frozen-weights` compares, the same way, a pass with every weight frozen (the gradient still
flows back through the network to the input embeddings, as it does to a LoRA adapter's inputs)
against the full pass: the most that training a few adapter weights instead of all of them could
save in a pass, before the adapters' own cost.

`--compile` times the two training passes the trainers run, eager and under `torch.compile`, in
one process: SFT's (cross-entropy over every position, `labels` given to the model) and GRPO's
(TRL's fused LM head, which scores the last `--completion` positions without building the
logits). The first compiled call of each pass compiles (twice over: for the first length, then
for any length) and is printed apart from the best of the rest.
"""

import argparse
import resource
import time

import torch
from trl.trainer import add_fused_lm_head

from multiharness.model import cpu_supports_bf16, load_model_and_tokenizer
from multiharness.paths import DEFAULT_MODEL_DIR


def seconds(model, ids: torch.Tensor, mask: torch.Tensor | None, bf16: bool) -> float:
    start = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        if any(parameter.requires_grad for parameter in model.parameters()):
            logits = model(input_ids=ids, attention_mask=mask).logits
        else:  # frozen weights: the backward pass ends at the input embeddings
            embeddings = model.get_input_embeddings()(ids).detach().requires_grad_()
            logits = model(inputs_embeds=embeddings, attention_mask=mask).logits
    logits.float().mean().backward()
    model.zero_grad()
    return time.perf_counter() - start


def random_ids(model, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One sequence of random token ids and its all-ones attention mask."""
    return torch.randint(100, model.config.vocab_size, (1, length)), torch.ones(1, length, dtype=torch.long)


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def set_activation_checkpointing(model, on: bool) -> None:
    if on:
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.activation_checkpointing_disable()


def set_frozen_weights(model, on: bool) -> None:
    model.requires_grad_(not on)


COMPARISONS = {"activation checkpointing": set_activation_checkpointing, "frozen weights": set_frozen_weights}
"""What `compare` can switch on and off, by name."""


def compare(model, lengths: list[int], rounds: int, bf16: bool, name: str) -> None:
    """Each length with `name` on, then off, all-ones mask, in one process; the ratio on / off."""
    timed = {}
    for on in (True, False):
        COMPARISONS[name](model, on)
        for length in lengths:
            ids, ones = random_ids(model, length)
            timed[length, on] = min(seconds(model, ids, ones, bf16) for _ in range(rounds))
            print(f"{length} tokens, {name} {'on' if on else 'off'}: "
                  f"forward + backward {timed[length, on]:.2f} s, peak memory so far {peak_gib():.2f} GiB")
    for length in lengths:
        print(f"{length} tokens: {name} on / off = {timed[length, True] / timed[length, False]:.2f}x the time "
              f"(bf16 autocast: {bf16})")


def training_pass_seconds(module, ids: torch.Tensor, bf16: bool, completion: int | None) -> float:
    """SFT's pass (`completion` None: every position's cross-entropy) or GRPO's (fused head, last `completion`)."""
    labels = ids.clone()
    start = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        if completion is None:
            loss = module(input_ids=ids, labels=labels).loss
        else:
            labels[:, :-completion] = -100
            log_probs = module(input_ids=ids, labels=labels, fused_lm_head=True).log_probs
            loss = -log_probs[:, -completion:].float().mean()
    loss.backward()
    module.zero_grad()
    return time.perf_counter() - start


def compare_compiled(model, lengths: list[int], rounds: int, bf16: bool, completion: int) -> None:
    """SFT's and GRPO's training pass at each length, eager then compiled, in one process: compiled / eager."""
    add_fused_lm_head(model)  # what GRPOTrainer does; a call without `fused_lm_head=True` is unchanged
    compiled = torch.compile(model)
    for name, scored in [("SFT (every position)", None), (f"GRPO (fused head, last {completion})", completion)]:
        for length in lengths:
            ids, _ = random_ids(model, length)
            eager = min(training_pass_seconds(model, ids, bf16, scored) for _ in range(rounds))
            first = training_pass_seconds(compiled, ids, bf16, scored)
            best = min(training_pass_seconds(compiled, ids, bf16, scored) for _ in range(rounds))
            print(f"{name}, {length} tokens: eager {eager:.2f} s, compiled {best:.2f} s (first call {first:.0f} s) "
                  f"= {best / eager:.2f}x the time (bf16 autocast: {bf16})")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(DEFAULT_MODEL_DIR), help="local model folder")
    parser.add_argument("--lengths", default="800,1800", help="sequence lengths, comma-separated")
    parser.add_argument("--padding", type=int, default=40, help="left-padded positions of the padded case")
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds per case (best kept)")
    comparison = parser.add_mutually_exclusive_group()
    comparison.add_argument("--activation-checkpointing", action="store_true",
                            help="compare the pass with and without activation checkpointing instead of the masks")
    comparison.add_argument("--frozen-weights", action="store_true",
                            help="compare the pass with every weight frozen and with none instead of the masks")
    comparison.add_argument("--compile", action="store_true",
                            help="compare SFT's and GRPO's training pass eager and under torch.compile")
    parser.add_argument("--completion", type=int, default=300, help="--compile: positions GRPO's pass scores")
    args = parser.parse_args()

    model, _ = load_model_and_tokenizer(args.model)
    model.train()
    bf16 = cpu_supports_bf16()
    lengths = [int(length) for length in args.lengths.split(",")]
    if args.compile:
        compare_compiled(model, lengths, args.rounds, bf16, args.completion)
        return
    if args.activation_checkpointing or args.frozen_weights:
        name = "activation checkpointing" if args.activation_checkpointing else "frozen weights"
        compare(model, lengths, args.rounds, bf16, name)
        return
    for length in lengths:
        ids, ones = random_ids(model, length)
        padded = ones.clone()
        padded[0, : args.padding] = 0
        for name, mask in [("no mask", None), ("all-ones mask", ones), (f"{args.padding} left-padded", padded)]:
            best = min(seconds(model, ids, mask, bf16) for _ in range(args.rounds))
            print(f"{length} tokens, {name}: forward + backward {best:.2f} s (bf16 autocast: {bf16})")


if __name__ == "__main__":
    main()
