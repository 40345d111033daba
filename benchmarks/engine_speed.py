# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Decode speed of the local engine against plain `model.generate`, same model, same prompts, same process.

Every run decodes greedily for exactly `--tokens` new tokens per prompt (end-of-turn ignored),
after one warm-up. Two ratios, each from runs taken back to back so that a shared machine's
load hits both sides alike (rounds alternate the two sides; each side keeps its best round):

- single stream: the engine answering one request at a time ÷ `model.generate` on the same
  prompt. The engine also computes every token's processed logprob and runs its own loop.
- 8 concurrent streams: 8 requests sent at once (each its own thread, as 8 harness sessions
  do) ÷ the engine's own single stream, in aggregate tokens per second. `model.generate` on
  one left-padded batch of the same 8 prompts is printed alongside, as the hardware's bound.

    python benchmarks/engine_speed.py                      # the default model
    python benchmarks/engine_speed.py --threads 1          # steadier on a machine shared with other jobs
"""

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

import torch

from multiharness.engine import GenerationRequest, LocalEngine, SamplingParams
from multiharness.engine.chat import render_prompt
from multiharness.model import load_model_and_tokenizer
from multiharness.paths import DEFAULT_MODEL_DIR

PROMPTS = [
    "Count the rows of data.csv and print the number.",
    "Which column of sales.parquet has the largest mean?",
    "Write a one-line shell command that prints the median of column 3 of a.tsv.",
    "Explain what a left join is in one sentence.",
    "How many distinct customers placed an order in March?",
    "Print the five most common values of the city column.",
    "What is the total revenue per region, sorted descending?",
    "Which employee has the longest tenure?",
]
"""Short chat prompts of the kind the tasks send (about 40 tokens rendered); 8 for the concurrent run."""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(DEFAULT_MODEL_DIR), help="local model folder")
    parser.add_argument("--tokens", type=int, default=64, help="new tokens per prompt")
    parser.add_argument("--rounds", type=int, default=3, help="alternating timed rounds per comparison")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    return parser.parse_args()


def best_of_alternating(sides: dict, rounds: int) -> dict[str, float]:
    """Seconds of each side's best round, the sides alternating within every round after one warm-up each."""
    for fn in sides.values():
        fn()
    best = dict.fromkeys(sides, float("inf"))
    for _ in range(rounds):
        for name, fn in sides.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main() -> None:
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    model, tokenizer = load_model_and_tokenizer(args.model)
    model.eval()
    prompts = [render_prompt(tokenizer, [{"role": "user", "content": p}]) for p in PROMPTS]
    params = SamplingParams(temperature=0.0, max_tokens=args.tokens, ignore_eos=True)
    engine = LocalEngine(model, tokenizer)
    single = prompts[:4]

    def engine_single():
        for ids in single:
            engine.generate(GenerationRequest(ids, params))

    def generate_single():
        for ids in single:
            with torch.no_grad():
                model.generate(
                    torch.tensor([ids]), do_sample=False, max_new_tokens=args.tokens, min_new_tokens=args.tokens
                )

    def engine_concurrent():
        with ThreadPoolExecutor(len(prompts)) as pool:
            list(pool.map(lambda ids: engine.generate(GenerationRequest(ids, params)), prompts))

    def generate_padded_batch():
        width = max(len(ids) for ids in prompts)
        pad = tokenizer.pad_token_id
        input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for ids in prompts])
        mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in prompts])
        with torch.no_grad():
            model.generate(
                input_ids, attention_mask=mask, do_sample=False, max_new_tokens=args.tokens, min_new_tokens=args.tokens
            )

    print(f"model {args.model}, {args.tokens} new tokens per prompt, torch threads {torch.get_num_threads()}")
    seconds = best_of_alternating({"generate": generate_single, "engine": engine_single}, args.rounds)
    rate = {name: args.tokens * len(single) / s for name, s in seconds.items()}
    print(f"single stream, {len(single)} prompts one after another:")
    print(f"  model.generate  {rate['generate']:7.1f} tok/s")
    print(f"  engine          {rate['engine']:7.1f} tok/s   engine / generate = {rate['engine'] / rate['generate']:.2f}")
    seconds = best_of_alternating(
        {"one": engine_single, "concurrent": engine_concurrent, "padded": generate_padded_batch}, args.rounds
    )
    one = args.tokens * len(single) / seconds["one"]
    concurrent = args.tokens * len(prompts) / seconds["concurrent"]
    padded = args.tokens * len(prompts) / seconds["padded"]
    print(f"{len(prompts)} concurrent streams:")
    print(f"  engine, one stream           {one:7.1f} tok/s")
    print(f"  engine, {len(prompts)} streams at once   {concurrent:7.1f} tok/s   ratio {concurrent / one:.2f}")
    print(f"  model.generate, padded batch {padded:7.1f} tok/s   (the same {len(prompts)} prompts as one batch)")
    engine.close()


if __name__ == "__main__":
    main()
