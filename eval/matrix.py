# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""The transfer matrix: each policy (row) evaluated in the whitebox loop and in every harness (columns).

A row (`--row`) is NAME=MODEL (a model folder or Hub id served here, or `NAME=MODEL@URL` for a policy an
OpenAI-compatible server serves). Each row is one `eval/evaluate.py` evaluation in OUTPUT/NAME,
so a row already evaluated is read back, a row cut short resumes, and adding a row runs only
that row. Each cell is pass@1 with its Wilson 95% interval and the number graded.

    python eval/matrix.py --output results/matrix --tasks 20 \\
        --row base=~/.cache/multiharness/models/SmolLM2-135M-Instruct --row sft=outputs/long/sft
    python eval/matrix.py --output outputs/matrix-plumbing --policy scripted --tasks 2 --row scripted=<model folder>

Writes OUTPUT/matrix.png, OUTPUT/matrix.svg and OUTPUT/matrix.md (the table for RESULTS.md).
Every option of eval/evaluate.py but --model, --endpoint, --checkpoint and --output applies to
every row. Exits with 2 when some cell is not fully graded.
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from multiharness.figures import matrix_figure

EVALUATE = Path(__file__).resolve().parent / "evaluate.py"


def parse_row(text: str) -> tuple[str, str, str | None]:
    """NAME=MODEL or NAME=MODEL@URL -> (name, model, endpoint or None)."""
    name, _, model = text.partition("=")
    if not name or not model:
        raise argparse.ArgumentTypeError(f"a row is NAME=MODEL or NAME=MODEL@URL, got {text!r}")
    model, _, endpoint = model.partition("@")
    return name, str(Path(model).expanduser()) if not endpoint else model, endpoint or None


def _cell(group: dict | None) -> str:
    if not group or group["pass_at_1"] is None:
        return "not graded"
    low, high = group["pass_at_1_interval"]
    return f"{group['pass_at_1']:.2f} [{low:.2f}, {high:.2f}] (n={group['graded']})"


def markdown(rows: dict[str, dict], loops: list[str]) -> str:
    """The matrix as a Markdown table: one row per policy, one column per loop."""
    lines = ["| policy | " + " | ".join(loops) + " |", "|---" * (len(loops) + 1) + "|"]
    for name, summary in rows.items():
        lines.append(f"| {name} | " + " | ".join(_cell(summary["by_loop"].get(loop)) for loop in loops) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--row", dest="rows", action="append", type=parse_row, required=True,
                        help="NAME=MODEL or NAME=MODEL@URL; once per policy, in the matrix's order")
    parser.add_argument("--output", type=Path, required=True, help="the matrix's folder (one subfolder per row)")
    known, rest = parser.parse_known_args(argv)
    status, rows, seconds = 0, {}, {}
    for name, model, endpoint in known.rows:
        row_args = ["--model", model, "--checkpoint", name, "--output", str(known.output / name), *rest]
        if endpoint:
            row_args += ["--endpoint", endpoint]
        started = time.monotonic()
        # One process per row: each policy's engine is loaded, and freed, on its own.
        status = max(status, subprocess.run([sys.executable, str(EVALUATE), *row_args]).returncode)
        seconds[name] = round(time.monotonic() - started, 1)
        summary = known.output / name / "summary.json"
        if not summary.exists():
            sys.exit(f"row {name}: eval/evaluate.py wrote no {summary} (exit status {status}); see its output above")
        rows[name] = json.loads(summary.read_text())
    loops = rows[next(iter(rows))]["identity"]["loops"]
    table = markdown(rows, loops)
    (known.output / "matrix.md").write_text(table)
    matrix_figure(rows, loops, known.output / "matrix")
    print(table)
    print("seconds per row (this invocation): " + ", ".join(f"{n} {s}" for n, s in seconds.items()))
    print(f"matrix: {known.output}/matrix.png, .svg, .md")
    return status


if __name__ == "__main__":
    sys.exit(main())
