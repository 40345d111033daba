# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""py-spy's raw output (`py-spy record -f raw`) as (frames, sample count) pairs, for the profile benchmarks.

Each line is a stack, its frames joined by `;` from the thread (with `--threads`) or the root
down to the leaf, then a space and how many samples saw it.
"""

from collections.abc import Iterator


def samples(path: str) -> Iterator[tuple[list[str], int]]:
    with open(path) as lines:
        for line in lines:
            stack, _, count = line.rstrip().rpartition(" ")
            yield stack.split(";"), int(count)
