"""Tasks: verifiable data-analysis questions over realistic data files, as Harbor task directories.

Manifests in, task directories out. The committed split manifests (`data/train.json`,
`data/test.json`) name every task; `build_split` regenerates each one bit for bit from its
template, difficulty and seed, `verify_tasks` proves every gold right by grading the task's
reference solution, and `import_tasks` brings SmolDataEnvs task folders into the same layout.
Every loop (whitebox, OpenCode, Harbor) sees the same thing: a `Task` whose instruction names
the input files under /home/user/input; the gold stays under `tests/` and is read on the host.

Difficulty tiers:

| tier   | files                                      | data                      | question                        |
|--------|--------------------------------------------|---------------------------|---------------------------------|
| easy   | one table (CSV, JSON, JSONL, Parquet or SQLite) | clean                | one step: filter + aggregate, rank or count |
| medium | every table of the domain, 2-3 files in mixed formats | clean          | a join or several steps         |
| hard   | as medium                                  | raw exports: duplicated rows, labels in mixed case/spacing, mixed date formats, thousands separators, missing values | as medium, after cleaning |

Modules: `tables` (domains, file formats, mess), `templates` (questions, gold, reference
programs), `build` (task directories, manifests, verification), `importer` (SmolDataEnvs),
`task` (the `Task` record, loading, grading on the host).
"""

from multiharness.tasks.build import (
    TaskHashMismatch,
    VerifyFailure,
    VerifyReport,
    build_split,
    verify_tasks,
    write_manifests,
)
from multiharness.tasks.importer import import_tasks
from multiharness.tasks.templates import HELD_OUT_TEMPLATES
from multiharness.tasks.task import (
    Task,
    find_task,
    grade_answer,
    load_task,
    load_tasks,
    load_tasks_or_exit,
    look_command,
    run_reference_solution,
    solution_command,
)

__all__ = [
    "Task",
    "load_task",
    "load_tasks",
    "load_tasks_or_exit",
    "find_task",
    "grade_answer",
    "solution_command",
    "look_command",
    "run_reference_solution",
    "build_split",
    "verify_tasks",
    "VerifyReport",
    "VerifyFailure",
    "TaskHashMismatch",
    "write_manifests",
    "import_tasks",
    "HELD_OUT_TEMPLATES",
]
