# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Model time of a real-model episode in each harness, with the engine's prefix cache on and off.

Each harness runs the same task twice, near-greedy (temperature 0.01: a capture session's
training policy needs a positive one; both runs then make the same calls), once on an
engine with its prefix cache and once on one without (`cache_mb=0`), both serving the same
SmolLM2 weights in this process. The model time is the time with a model call in flight at the
sandbox's edge (`EpisodeResult.model_s`); the ratio, cache on ÷ off, is measured per harness
in one run, the two episodes back to back, so the machine's load mostly cancels out.

    python benchmarks/engine_episodes.py --task build/tasks/train/train-0000-distinct-customers
"""

import argparse
import json
from pathlib import Path

from multiharness.endpoint import open_endpoint
from multiharness.engine import LocalEngine
from multiharness.harnesses import HARNESSES, run_episode
from multiharness.model import load_model_and_tokenizer
from multiharness.paths import DEFAULT_MODEL_DIR
from multiharness.tasks import load_task

NEAR_GREEDY = 0.01
"""Sampling temperature: as good as greedy, which a capture session's training policy cannot pin."""
CACHE_MB = {"on": 2048, "off": 0}
"""The engine's prefix cache budget for each run (2048 MB: the engine's default)."""


def episode(model, tokenizer, harness: str, task, cache_mb: int, args) -> dict:
    engine = LocalEngine(model, tokenizer, cache_mb=cache_mb)
    with open_endpoint(engine, model_name="smol", max_tokens=args.max_tokens, max_model_calls=args.calls) as endpoint:
        before = endpoint.prompt_tokens()
        result, trace = run_episode(harness, task, endpoint.proxy, model=endpoint.model,
                                    sampling={"temperature": NEAR_GREEDY}, max_tokens=args.max_tokens,
                                    max_model_calls=args.calls, timeout_s=args.timeout)
        after = endpoint.prompt_tokens()
    return {"model_s": result.model_s, "model_calls": result.model_calls, "boundary": result.outcome.boundary,
            "prompt_tokens": after[0] - before[0], "cached_tokens": after[1] - before[1],
            "turns": len(trace.turns) if trace is not None else 0}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", type=Path, required=True, help="a task directory")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR, help="model folder")
    parser.add_argument("--harnesses", default=",".join(HARNESSES), help="comma-separated harnesses")
    parser.add_argument("--calls", type=int, default=3, help="model calls per episode")
    parser.add_argument("--max-tokens", type=int, default=32, help="sampled tokens per call")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per episode")
    args = parser.parse_args()
    model, tokenizer = load_model_and_tokenizer(args.model)
    task = load_task(args.task)
    for harness in args.harnesses.split(","):
        runs = {name: episode(model, tokenizer, harness, task, mb, args) for name, mb in CACHE_MB.items()}
        ratio = runs["on"]["model_s"] / runs["off"]["model_s"] if runs["off"]["model_s"] else None
        print(json.dumps({"harness": harness, **{f"{k}_{name}": v for name, r in runs.items() for k, v in r.items()},
                          "model_s_on_over_off": ratio}), flush=True)


if __name__ == "__main__":
    main()
