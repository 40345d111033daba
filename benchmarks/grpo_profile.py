# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Where a GRPO step's time goes, from py-spy's raw samples of a `train/whitebox.py` run.

Each sample's stack is put in the first phase of PHASES whose frame it holds: generation
(`generate`, inside TRL's tool loop), loss forward (`compute_loss`), backward, else the rest; and
counted again when its leaf is in TRL's fused LM head. py-spy's flamegraph
view shows the same stacks; this prints the shares a step's table needs.

    python train/whitebox.py --preset quickstart --steps 1 --model outputs/sft --output /tmp/grpo-prof &
    py-spy record -p $! -d 180 -r 20 -f raw -o /tmp/grpo-prof.raw
    python benchmarks/grpo_profile.py /tmp/grpo-prof.raw --rate 20 --rollouts 4
"""

import argparse
from collections import Counter

from pyspy_samples import samples

PHASES = [  # (name, a frame the stack holds), first match wins
    ("generation", "generate (transformers"),
    ("loss forward", "compute_loss"),
    ("backward", "backward"),
]
FUSED_HEAD = "trl/kernels/chunked_logprob.py"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("raw", help="py-spy record -f raw output")
    parser.add_argument("--rate", type=float, default=20, help="py-spy's sampling rate (-r)")
    parser.add_argument("--rollouts", type=int, default=4, help="rollouts in the sampled steps")
    args = parser.parse_args()

    phases, total = Counter(), 0
    for frames, count in samples(args.raw):
        total += count
        phase = next((name for name, frame in PHASES if any(frame in f for f in frames)), "the rest")
        phases[phase] += count
        if FUSED_HEAD in frames[-1]:
            phases["of which TRL's fused LM head"] += count
    print(f"{total} samples")
    for name in [*(name for name, _ in PHASES), "the rest", "of which TRL's fused LM head"]:
        share = phases[name] / total
        print(f"{name:<30} {share:6.1%}  {phases[name] / args.rate / args.rollouts:5.1f} s per rollout")


if __name__ == "__main__":
    main()
