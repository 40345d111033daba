# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Decode speed of the local engine against plain `model.generate`, same model, same prompts, same process.

Every run decodes greedily for exactly `--tokens` new tokens per prompt (end-of-turn ignored),
after one warm-up. Two ratios, each from runs taken back to back so that a shared machine's
load hits both sides alike (rounds alternate the sides; each side keeps its best round). Each
is given in wall-clock tokens per second and in tokens per CPU-second of this process: with
`--threads 1` the latter is the speed on a core of its own, which other jobs on a shared
machine do not move (wall-clock figures there swing by 20-50% from one minute to the next).

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


def best_of_alternating(sides: dict, rounds: int) -> dict[str, tuple[float, float]]:
    """(wall seconds, CPU seconds) of each side's best round, the sides alternating after one warm-up each."""
    for fn in sides.values():
        fn()
    best = {name: (float("inf"), float("inf")) for name in sides}
    for _ in range(rounds):
        for name, fn in sides.items():
            wall, cpu = time.perf_counter(), time.process_time()
            fn()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    return best


def rates(tokens: int, seconds: tuple[float, float]) -> tuple[float, float]:
    return tokens / seconds[0], tokens / seconds[1]


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
    generate, engine_rate = (rates(args.tokens * len(single), seconds[name]) for name in ("generate", "engine"))
    print(f"single stream, {len(single)} prompts one after another (wall tok/s, tok per CPU-s):")
    print(f"  model.generate  {generate[0]:7.1f}  {generate[1]:7.1f}")
    print(
        f"  engine          {engine_rate[0]:7.1f}  {engine_rate[1]:7.1f}   engine / generate = "
        f"{engine_rate[0] / generate[0]:.2f} wall, {engine_rate[1] / generate[1]:.2f} CPU"
    )
    seconds = best_of_alternating(
        {"one": engine_single, "concurrent": engine_concurrent, "padded": generate_padded_batch}, args.rounds
    )
    one = rates(args.tokens * len(single), seconds["one"])
    concurrent = rates(args.tokens * len(prompts), seconds["concurrent"])
    padded = rates(args.tokens * len(prompts), seconds["padded"])
    n = len(prompts)
    print(f"{n} concurrent streams (wall tok/s, tok per CPU-s):")
    print(f"  engine, one stream            {one[0]:7.1f}  {one[1]:7.1f}")
    print(
        f"  engine, {n} streams at once    {concurrent[0]:7.1f}  {concurrent[1]:7.1f}   ratio "
        f"{concurrent[0] / one[0]:.2f} wall, {concurrent[1] / one[1]:.2f} CPU"
    )
    print(
        f"  model.generate, padded batch  {padded[0]:7.1f}  {padded[1]:7.1f}   ratio "
        f"{padded[0] / one[0]:.2f} wall, {padded[1] / one[1]:.2f} CPU (the same {n} prompts as one batch)"
    )
    engine.close()


if __name__ == "__main__":
    main()
