"""A curriculum drawn from the warm start's own outcomes: GRPO trains where its groups are mixed.

A GRPO group teaches only when its rewards differ. With unscaled advantages a group that is all
right or all wrong has advantage 0 on every token: it adds no gradient, yet costs its rollouts
(its training pass is skipped: `multiharness.grpo`). The SFT warm start's outcomes split by
template (RESULTS.md: some templates it solves nearly always, most never), so most groups drawn
at random carry nothing.

DAPO's dynamic sampling drops such groups online, by over-sampling every step until the batch is
full of mixed ones. On 2 CPU cores the rollouts are most of a step's time, so this does the same
filtering once, before the run: a sampled evaluation of the warm start on training tasks, at the
rollout temperature,

    python eval/evaluate.py --loops whitebox --task-dir build/tasks/train --tasks 48 \\
        --difficulties easy,medium --samples 2 --temperature 0.7 --model outputs/sft --output outputs/curriculum/sft

and the run keeps the templates whose episodes there were neither all right nor all wrong
(`train/whitebox.py --curriculum outputs/curriculum/sft`). The evaluation must be on training
tasks: choosing what to train on from test outcomes would leak the held-out set into training.
The blackbox scripts take the same flags (`add_curriculum_flags`), judged from the episodes of the
harness they train in: `--loops mini-swe-agent` in that evaluation for `train/harbor.py
--harnesses mini-swe-agent`.

Mixed templates still hold many tasks greedy decoding already solves, where a group can only
sharpen what greedy does (RESULTS.md: of the held-out tasks where the warm start's samples and its
greedy episode disagree, two in three are such). With a greedy evaluation of the same tasks too
(`--curriculum-greedy`), the run keeps the tasks greedy fails and a sample solves (`reachable_tasks`),
or those and the tasks greedy solves (`solved_tasks`, `--curriculum-tasks solved`): every task some
episode of the warm start solves, so that the run's data also rewards what greedy already does right.

Measured (RESULTS.md): from the `cpu` SFT preset it raised the groups with mixed rewards from 4 to
10 of 20 in the `cpu` GRPO preset (13–14 of 20 once training ran the evaluator's four tool calls), and
held-out pass@1 did not rise with them. On reachable tasks alone (20 of 96 training tasks), GRPO
turned 6 of the 15 reachable held-out tasks and lost 7 that greedy solved and a sample failed: +1
(with the tasks greedy solves added, +3, p = 0.61; continued to 30 steps, +11, p = 0.019; 30 steps
with another seed, +8, p = 0.096).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .evaluation import reachable_units, records_in
from .tasks import Task

KEEP = ("reachable", "solved")
"""`--curriculum-tasks`: the tasks only a sample solves, or every task greedy or a sample solves."""


@dataclass(frozen=True)
class TemplateOutcomes:
    """How a template's graded episodes in the curriculum evaluation ended."""

    template: str
    passed: int
    graded: int

    @property
    def mixed(self) -> bool:
        return 0 < self.passed < self.graded


def template_outcomes(records: Iterable[dict]) -> dict[str, TemplateOutcomes]:
    """Passed and graded episodes per template; ungraded ones (correctness None) say nothing."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for record in records:
        if record.get("correctness") is None:
            continue
        counts[record["template"]][0] += record["correctness"] == 1
        counts[record["template"]][1] += 1
    return {name: TemplateOutcomes(name, passed, graded) for name, (passed, graded) in sorted(counts.items())}


def _training_records(evaluation: Path, training_task_ids: set[str], loop: str) -> list[dict]:
    """The `loop` episodes of an evaluation folder, which must hold training tasks only and a graded one."""
    records = records_in(evaluation)
    foreign = sorted({r["task_id"] for r in records} - training_task_ids)
    if foreign:
        raise ValueError(
            f"{evaluation} holds episodes of {len(foreign)} tasks that are not training tasks "
            f"(first: {foreign[0]}); a curriculum is drawn from training tasks only"
        )
    records = [r for r in records if r["loop"] == loop]
    if not any(r.get("correctness") is not None for r in records):
        raise ValueError(f"{evaluation} holds no graded {loop} episode: run the curriculum evaluation first")
    return records


def mixed_templates(evaluation: Path, training_task_ids: set[str], loop: str) -> dict[str, TemplateOutcomes]:
    """The templates whose `loop` episodes in an evaluation folder were mixed.

    Only that loop's episodes count: a template a harness gets wrong may be one the whitebox loop
    solves. Raises ValueError when the folder holds an episode of a task that is not a training task
    (a test task, or tasks built from another manifest), no graded episode of the loop, or no
    mixed template: a run on that curriculum would have nothing to learn from.
    """
    outcomes = template_outcomes(_training_records(evaluation, training_task_ids, loop))
    mixed = {name: o for name, o in outcomes.items() if o.mixed}
    if not mixed:
        raise ValueError(f"no template in {evaluation} had mixed {loop} outcomes: nothing for GRPO to learn from")
    return mixed


def reachable_tasks(greedy: Path, sampled: Path, training_task_ids: set[str], loop: str) -> set[str]:
    """The training tasks greedy decoding fails and a sample solves, from two evaluations of the warm start.

    Where both agree a group only sharpens what greedy decoding already does; where greedy solves
    and a sample fails, an update toward the failed sample can cost the task. Only here can greedy
    pass@1 rise (`multiharness.evaluation.sampling_headroom`). Raises ValueError as
    `mixed_templates` does, and when no task is reachable.
    """
    tasks = reachable_units(_training_records(greedy, training_task_ids, loop),
                            _training_records(sampled, training_task_ids, loop))
    if not tasks:
        raise ValueError(f"no task that {greedy} fails is solved by a sample in {sampled}: nothing for GRPO to add")
    return {task_id for task_id, _ in tasks}


def solved_tasks(greedy: Path, sampled: Path, training_task_ids: set[str], loop: str) -> set[str]:
    """The training tasks some episode of the warm start solves: those greedy decoding solves, and the reachable ones.

    Only tasks no episode solved are left out: their groups would be all wrong. The tasks greedy
    solves keep in the run's data what greedy already does right; without them (RESULTS.md) GRPO
    lost as many held-out tasks greedy solved as it gained reachable ones.
    Raises ValueError as `mixed_templates` does, and when no task is solved.
    """
    greedy_records = _training_records(greedy, training_task_ids, loop)
    reachable = reachable_units(greedy_records, _training_records(sampled, training_task_ids, loop))
    tasks = {task_id for task_id, _ in reachable} | {r["task_id"] for r in greedy_records if r.get("correctness") == 1}
    if not tasks:
        raise ValueError(f"no episode in {greedy} or {sampled} solved a task: nothing for GRPO to learn from")
    return tasks


@dataclass(frozen=True)
class Curriculum:
    """What a run's curriculum flags name: a sampled evaluation of the warm start on training tasks and,
    optionally, a greedy one of the same tasks with which of its tasks to keep (`KEEP`)."""

    sampled: Path
    greedy: Path | None = None
    keep: str = "reachable"

    @classmethod
    def from_args(cls, args) -> Curriculum | None:
        """The curriculum of a command line parsed with `add_curriculum_flags`; None without `--curriculum`."""
        if args.curriculum is None:
            return None
        return cls(args.curriculum, args.curriculum_greedy, args.curriculum_tasks)

    def select(self, tasks: Sequence[Task], loop: str) -> list[Task]:
        """The tasks the run keeps, judged from the evaluations' `loop` episodes, in `tasks`' order.

        `tasks` are all the training tasks the evaluations may hold (a task folder's, before any
        other filter). Stops the run (SystemExit) with the reason when the curriculum cannot be used.
        """
        training_task_ids = {t.id for t in tasks}
        try:
            if self.greedy is None:
                mixed = mixed_templates(self.sampled, training_task_ids, loop)
                outcomes = ", ".join(f"{o.template} {o.passed}/{o.graded}" for o in mixed.values())
                print(f"curriculum in {loop}: {outcomes}")
                return [t for t in tasks if t.template in mixed]
            select, which = {"reachable": (reachable_tasks, "greedy decoding fails and a sample solves"),
                             "solved": (solved_tasks, "greedy decoding or a sample solves")}[self.keep]
            kept = select(self.greedy, self.sampled, training_task_ids, loop)
        except ValueError as error:
            raise SystemExit(f"error: {error}") from error
        print(f"curriculum in {loop}: {len(kept)} tasks {which}")
        return [t for t in tasks if t.id in kept]


def add_curriculum_flags(parser) -> None:
    """`--curriculum`, `--curriculum-greedy` and `--curriculum-tasks`, the same in every training script."""
    parser.add_argument("--curriculum", type=Path, default=None, metavar="EVAL_DIR",
                        help="train only on the templates where this evaluation of the warm start on training "
                             "tasks found mixed outcomes")
    parser.add_argument("--curriculum-greedy", type=Path, default=None, metavar="EVAL_DIR",
                        help="a greedy evaluation of the same tasks: train only on those it fails and a sample of "
                             "--curriculum solves")
    parser.add_argument("--curriculum-tasks", choices=KEEP, default="reachable",
                        help="with --curriculum-greedy: the tasks only a sample solves (reachable), or every task "
                             "greedy or a sample solves (solved)")


def check_curriculum_flags(parser, args) -> None:
    """Stop a command line whose curriculum flags do not go together, before anything loads."""
    if args.curriculum_greedy and not args.curriculum:
        parser.error("--curriculum-greedy needs --curriculum, the sampled evaluation of the same tasks")
    if args.curriculum_tasks != "reachable" and not args.curriculum_greedy:
        parser.error("--curriculum-tasks needs --curriculum-greedy, the greedy evaluation of the same tasks")


def curriculum_record(curriculum: Curriculum | None) -> dict:
    """The curriculum as a run's training_config.json records it (None where a flag was not given)."""
    if curriculum is None:
        return dict.fromkeys(("curriculum", "curriculum_greedy", "curriculum_tasks"))
    greedy = curriculum.greedy
    return {"curriculum": str(curriculum.sampled), "curriculum_greedy": str(greedy) if greedy else None,
            "curriculum_tasks": curriculum.keep if greedy else None}
