"""What the three environment Spaces share: tasks without their gold, the sandbox they use, the bundle they deploy.

Every Space (`envs/whitebox`, `envs/opencode`, `envs/harbor`) serves the same built tasks and
the same sandbox layer, so these rules are written once:

- `TaskCatalog(root)` is the built splits under `root` (`train/`, `test/`) as OpenEnv's Task API:
  `TaskApi` gives an OpenEnv `Environment` the methods (`list_splits`, `num_tasks`, `get_task`,
  `list_tasks`, `get_task_range`) that `POST /<env>/task {split, index}` and its siblings call.
  A task leaves the server only as a card (`task_card`): id, split, index, tier, template, answer
  type, instruction and the names and sizes of its input files; never `tests/` (grader and
  gold) or `solution/`, which stay on the host where `multiharness.episode.score` reads them.
- `checked_sandbox(backend, catalog)` opens one sandbox and runs one command before the server
  takes requests, so a Space says at start which sandbox it uses, and a container that does
  not allow bubblewrap stops with what to set (Daytona and its `DAYTONA_API_KEY` secret)
  instead of failing every episode later, or quietly switching backend.
- `deploy_bundle(env_dir, out)` is what a Space is built from: the environment folder at the
  bundle's root beside the library, the split manifests and the pinned requirements, never a
  secret, an `.env` file or the built tasks (the image rebuilds those from the manifests).
  `space_plan` / `push_space` print and run the upload with `huggingface_hub`.

Why by hand: OpenEnv's `openenv push` uploads one environment folder; ours import a shared
library that has to travel with each of them.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from .layout import INPUT_DIR
from .paths import PROJECT_ROOT
from .sandbox import BACKENDS, SandboxError, open_sandbox
from .tasks import Task, load_tasks

__all__ = [
    "SPLITS",
    "SpacePlan",
    "TaskApi",
    "TaskCatalog",
    "checked_sandbox",
    "deploy",
    "deploy_bundle",
    "push_space",
    "serve",
    "space_plan",
    "task_card",
]

logger = logging.getLogger(__name__)

SPLITS = ("train", "test")
"""The splits a Space offers, in the order its task picker shows them."""

_SANDBOX_CHECK_TIMEOUT_S = 60.0


# ---- tasks without their gold ----------------------------------------------------------------


def task_card(task: Task, split: str, index: int) -> dict:
    """What a client may see of `task`: everything the agent sees, nothing of tests/ or solution/."""
    return {
        "id": task.id,
        "split": split,
        "index": index,
        "difficulty": task.difficulty,
        "template": task.template,
        "answer_type": task.answer_type,
        "instruction": task.instruction,
        "files": [
            {"name": path.name, "path": f"{INPUT_DIR}/{path.name}", "bytes": path.stat().st_size}
            for path in sorted(task.input_dir.iterdir())
            if path.is_file()
        ],
    }


class TaskCatalog:
    """The built tasks of each split under `root`, loaded once per split when first asked for."""

    def __init__(self, root: str | Path, splits: Sequence[str] = SPLITS):
        self.root = Path(root)
        self.splits = tuple(splits)

    @cached_property
    def _tasks(self) -> dict[str, list[Task]]:
        tasks = {split: load_tasks(self.root / split) if (self.root / split).is_dir() else [] for split in self.splits}
        if not any(tasks.values()):
            raise FileNotFoundError(
                f"no built tasks under {self.root} (looked in {', '.join(self.splits)}): run "
                f"`python -m multiharness tasks build --out {self.root}`, or set MULTIHARNESS_TASKS to the folder it wrote"
            )
        return tasks

    def tasks(self, split: str) -> list[Task]:
        """The split's tasks in index order; ValueError naming the splits for an unknown one."""
        if split not in self.splits:
            raise ValueError(f"Unknown split {split!r}. Expected one of {list(self.splits)}.")
        return self._tasks[split]

    def task(self, split: str, index: int) -> Task:
        """Task `index` of `split`; IndexError (OpenEnv answers 400) when out of range."""
        tasks = self.tasks(split)
        if not 0 <= index < len(tasks):
            raise IndexError(f"task index {index} is out of range: split {split!r} has {len(tasks)} tasks (0-{len(tasks) - 1})")
        return tasks[index]

    def find(self, task_id: str) -> tuple[str, int]:
        """(split, index) of the task called `task_id`; ValueError when no split has it."""
        for split in self.splits:
            for index, task in enumerate(self.tasks(split)):
                if task.id == task_id:
                    return split, index
        raise ValueError(f"no task {task_id!r} under {self.root}: give a task id of the built splits {list(self.splits)}")

    def card(self, split: str, index: int) -> dict:
        return task_card(self.task(split, index), split, index)


class TaskApi:
    """OpenEnv's Task API (its `TaskProvider` protocol) for an environment with a `catalog`."""

    catalog: TaskCatalog

    def list_splits(self) -> list[str]:
        return [split for split in self.catalog.splits if self.catalog.tasks(split)]

    def num_tasks(self, split: str) -> int:
        return len(self.catalog.tasks(split))

    def get_task(self, split: str, index: int) -> dict:
        return self.catalog.card(split, index)

    def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[dict]:
        indices = range(len(self.catalog.tasks(split)))[start:stop]
        return [self.catalog.card(split, index) for index in indices]

    def list_tasks(self, split: str) -> list[dict]:
        return self.get_task_range(split)


# ---- the sandbox a Space uses ----------------------------------------------------------------


def checked_sandbox(backend: str, catalog: TaskCatalog) -> str:
    """`backend` once one of its sandboxes ran a command; RuntimeError saying what to set otherwise."""
    if backend not in BACKENDS:
        raise ValueError(f"MULTIHARNESS_SANDBOX is {backend!r}. Expected one of {list(BACKENDS)}.")
    if backend == "daytona" and not os.environ.get("DAYTONA_API_KEY"):
        raise RuntimeError("MULTIHARNESS_SANDBOX is daytona but DAYTONA_API_KEY is not set: add it as a Space secret")
    split = next(split for split in catalog.splits if catalog.tasks(split))
    task = catalog.task(split, 0)
    try:
        with open_sandbox(task.path, backend) as box:
            result = box.exec("true", timeout=_SANDBOX_CHECK_TIMEOUT_S)
    except SandboxError as error:
        hint = (
            "this container does not allow bubblewrap's namespaces: set MULTIHARNESS_SANDBOX=daytona and add a "
            "DAYTONA_API_KEY secret" if backend == "local" else "check the backend's credentials and quota"
        )
        raise RuntimeError(f"the {backend} sandbox does not start ({error}); {hint}") from error
    if result.exit_code != 0:
        raise RuntimeError(f"the {backend} sandbox ran `true` with exit code {result.exit_code}: {result.output[-300:]}")
    return backend


# ---- the deploy bundle and its upload ----------------------------------------------------------

_BUNDLE_LIBRARY = ("multiharness", "data")
"""What of the checkout a Space needs besides its folder: the library and the split manifests."""
_BUNDLE_FILES = ("requirements.txt", "requirements-sandbox.txt", "LICENSE")
_NEVER = shutil.ignore_patterns("__pycache__", "*.pyc", ".env", ".env.*", "deploy.py", "outputs", ".venv")


def deploy_bundle(env_dir: str | Path, out: str | Path, extra: Sequence[str] = ()) -> list[str]:
    """Write the folder a Space is built from into `out` (replaced); return its files, sorted.

    The environment folder lands at the bundle's root (its README is the Space card, its
    Dockerfile builds the image); the library and manifests sit beside it, so the image installs
    the same code the checkout runs. `extra` names more checkout files or folders the image
    needs (the harness CLIs' pins, say).
    """
    env_dir, out = Path(env_dir), Path(out)
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(env_dir, out, ignore=_NEVER)
    for name in _BUNDLE_LIBRARY:
        shutil.copytree(PROJECT_ROOT / name, out / name, ignore=_NEVER)
    for name in (*_BUNDLE_FILES, *extra):
        source = PROJECT_ROOT / name
        if source.is_dir():
            shutil.copytree(source, out / name, ignore=_NEVER)
        else:
            shutil.copy2(source, out / name)
    return sorted(str(path.relative_to(out)) for path in out.rglob("*") if path.is_file())


@dataclass(frozen=True)
class SpacePlan:
    """Everything `push_space` will do, printable before it does it."""

    repo_id: str
    """The Space, as ORG/NAME."""
    files: list[str]
    """The bundle's files, relative to its root."""
    variables: dict[str, str]
    """Space variables (public settings, read by server/app.py)."""
    secrets: list[str] = field(default_factory=list)
    """Names of the secrets the Space needs; their values are set on the Hub, never uploaded."""

    def describe(self) -> str:
        lines = [f"Space: https://huggingface.co/spaces/{self.repo_id} (sdk: docker)", f"files ({len(self.files)}):"]
        lines += [f"  {name}" for name in self.files]
        lines.append("variables:")
        lines += [f"  {key}={value}" for key, value in self.variables.items()]
        lines.append("secrets (by name; set their values in the Space settings):")
        lines += [f"  {name}" for name in self.secrets] or ["  (none)"]
        return "\n".join(lines)


def space_plan(repo_id: str, files: list[str], variables: Mapping[str, str], secrets: Sequence[str] = ()) -> SpacePlan:
    """The plan for `repo_id`; ValueError when it is not ORG/NAME."""
    if repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise ValueError(f"--repo must be ORG/NAME, got {repo_id!r}")
    return SpacePlan(repo_id, list(files), dict(variables), list(secrets))


def push_space(plan: SpacePlan, bundle: str | Path, token: str | None = None) -> str:
    """Create or update the Space and upload the bundle; returns its URL.

    Needs a token with write access (`HF_TOKEN`, or `hf auth login`); RuntimeError saying so
    without one. Variables are set with `add_space_variable`; secrets only by name: the Space
    shows them as missing until their owner sets them in its settings.
    """
    from huggingface_hub import HfApi
    from huggingface_hub.utils import get_token

    token = token or get_token()
    if not token:
        raise RuntimeError(
            "no Hugging Face token: set HF_TOKEN (a token with write access, huggingface.co/settings/tokens) "
            "or run `hf auth login`, then rerun with --submit"
        )
    api = HfApi(token=token)
    api.create_repo(plan.repo_id, repo_type="space", space_sdk="docker", exist_ok=True)
    for key, value in plan.variables.items():
        api.add_space_variable(plan.repo_id, key, value)
    api.upload_folder(repo_id=plan.repo_id, repo_type="space", folder_path=str(bundle),
                      commit_message="Deploy the environment")
    return f"https://huggingface.co/spaces/{plan.repo_id}"


def serve(app, description: str) -> None:
    """A Space server's `main()`: `--host` and `--port` flags, then uvicorn."""
    import argparse

    import uvicorn

    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="0.0.0.0", help="interface to listen on (127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (a Space expects 8000)")
    args = parser.parse_args()
    uvicorn.run(app, host=args.host, port=args.port)


def deploy(env_dir: str | Path, description: str, variables: Mapping[str, str], secrets: Sequence[str] = (),
           extra: Sequence[str] = ()) -> None:
    """An environment's `deploy.py`: `--repo ORG/NAME` prints the plan, `--submit` uploads, `--out DIR` keeps the bundle."""
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", required=True, help="the Space, as ORG/NAME")
    parser.add_argument("--submit", action="store_true", help="create or update the Space (default: print the plan)")
    parser.add_argument("--out", type=Path, default=None, help="write the bundle here (default: a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="space-bundle-") as scratch:
        bundle = args.out or Path(scratch) / "bundle"
        try:
            plan = space_plan(args.repo, deploy_bundle(env_dir, bundle, extra), variables, secrets)
        except ValueError as error:
            raise SystemExit(f"error: {error}") from error
        print(plan.describe())
        if not args.submit:
            print("plan only: rerun with --submit to create or update the Space")
            return
        try:
            print(f"deployed: {push_space(plan, bundle)}")
        except RuntimeError as error:
            raise SystemExit(f"error: {error}") from error
