"""Evaluation folders as eval/evaluate.py writes them, for tests of what reads them back."""

import json
from pathlib import Path


def evaluation_folder(folder: Path, outcomes: dict[str, list], loop: str = "whitebox") -> Path:
    """One pair record per (task, loop, sample): `outcomes` maps a task id to its samples' correctness."""
    (folder / "pairs").mkdir(parents=True, exist_ok=True)
    for task_id, results in outcomes.items():
        template = task_id.split("-", 2)[2].replace("-", "_")
        for sample, correctness in enumerate(results):
            record = {"task_id": task_id, "template": template, "loop": loop, "sample": sample, "correctness": correctness}
            (folder / "pairs" / f"{task_id}--{loop}--{sample}.json").write_text(json.dumps(record))
    return folder
