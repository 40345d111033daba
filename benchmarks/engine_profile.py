# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Where the local engine's time goes during an evaluation, from py-spy's raw samples.

Only the engine's worker thread (`multiharness-engine`) is counted. Each of its samples is idle
(waiting for work), prefill or decode, and within those, attention (`scaled_dot_product_attention`),
the linear layers (`nn.Linear`) or the rest (norms, rotary embeddings, the batch cache, sampling).
An engine busy in every sample is the evaluation's limit, and its shares say where a faster
engine would have to gain.

    python eval/evaluate.py --loops whitebox --tasks 30 --difficulties easy,medium --concurrency 16 \\
        --model outputs/sft --trackio-project '' --output /tmp/eval-prof &
    py-spy record -p $! -d 200 -r 20 --threads --idle -f raw -o /tmp/eval-prof.raw
    python benchmarks/engine_profile.py /tmp/eval-prof.raw
"""

import argparse
from collections import Counter

from pyspy_samples import samples

ENGINE_THREAD = "multiharness-engine"
PHASES = [("decode", "_decode_step"), ("prefill", "_prefill_step")]  # else idle (or scheduling)
PARTS = [("attention", "sdpa_attention_forward"), ("linear layers", "forward (torch/nn/modules/linear.py")]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("raw", help="py-spy record --threads --idle -f raw output")
    args = parser.parse_args()

    counts, total = Counter(), 0
    for frames, count in samples(args.raw):
        if not frames[0].endswith(f": {ENGINE_THREAD}"):
            continue
        total += count
        phase = next((name for name, frame in PHASES if any(frame in f for f in frames)), "idle")
        part = next((name for name, frame in PARTS if any(frame in f for f in frames)), "the rest")
        counts[phase] += count
        counts[phase, part] += count
    print(f"{total} samples of the engine thread")
    for phase in [*(name for name, _ in PHASES), "idle"]:
        print(f"{phase:<10} {counts[phase] / total:6.1%}")
        for part in [*(name for name, _ in PARTS), "the rest"] if phase != "idle" else []:
            print(f"  {part:<16} {counts[phase, part] / total:6.1%}")


if __name__ == "__main__":
    main()
