# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Decode speed of the local engine against plain `model.generate`, same model, same prompts.

Both decode greedily for exactly `--tokens` new tokens per prompt (end-of-turn ignored), in
fp32 on the CPU, after one warm-up run each. The engine also computes every token's processed
logprob and runs its own sampling loop; `generate` does neither, so the gap is the price of
the behaviour logprobs and the hand-written loop. "batch" sends the prompts at once: the
engine batches concurrent requests from its queue, `generate` gets one left-padded batch.

    python benchmarks/engine_speed.py                      # the default model
    python benchmarks/engine_speed.py --model /tmp/tiny --tokens 32
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
]
"""Short chat prompts of the kind the tasks send (about 40 tokens rendered)."""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(DEFAULT_MODEL_DIR), help="local model folder")
    parser.add_argument("--tokens", type=int, default=64, help="new tokens per prompt")
    parser.add_argument("--repeats", type=int, default=2, help="timed runs per measurement (best is kept)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    return parser.parse_args()


def best_time(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    model, tokenizer = load_model_and_tokenizer(args.model)
    model.eval()
    prompts = [render_prompt(tokenizer, [{"role": "user", "content": p}]) for p in PROMPTS]
    params = SamplingParams(temperature=0.0, max_tokens=args.tokens, ignore_eos=True)
    engine = LocalEngine(model, tokenizer)

    def engine_single():
        for ids in prompts:
            engine.generate(GenerationRequest(ids, params))

    def engine_batch():
        with ThreadPoolExecutor(len(prompts)) as pool:
            list(pool.map(lambda ids: engine.generate(GenerationRequest(ids, params)), prompts))

    def generate_single():
        for ids in prompts:
            with torch.no_grad():
                model.generate(
                    torch.tensor([ids]), do_sample=False, max_new_tokens=args.tokens, min_new_tokens=args.tokens
                )

    def generate_batch():
        tokenizer.padding_side = "left"
        width = max(len(ids) for ids in prompts)
        pad = tokenizer.pad_token_id
        input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for ids in prompts])
        mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in prompts])
        with torch.no_grad():
            model.generate(
                input_ids,
                attention_mask=mask,
                do_sample=False,
                max_new_tokens=args.tokens,
                min_new_tokens=args.tokens,
            )

    total = args.tokens * len(prompts)
    print(
        f"model {args.model}, {len(prompts)} prompts x {args.tokens} tokens, torch threads {torch.get_num_threads()}"
    )
    for name, fn in [
        ("generate, one at a time", generate_single),
        ("engine,   one at a time", engine_single),
        ("generate, batch", generate_batch),
        ("engine,   batch", engine_batch),
    ]:
        seconds = best_time(fn, args.repeats)
        print(f"{name}: {total / seconds:7.1f} tokens/s ({seconds:.2f} s)")
    engine.close()


if __name__ == "__main__":
    main()
