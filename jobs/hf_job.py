# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Run a training or evaluation script as a Hugging Face Job; print the exact job first.

By default nothing is sent: the plan is printed, everything the job will be made of:

    image    a pinned Debian 12 Python image (install.sh runs there as on any Debian machine)
    flavor   the hardware; `train` needs two GPUs: vLLM on one, the trainer on the other
    volumes  your bucket, read-write at /bucket: the run's source is uploaded to <run>/source/,
             the script writes its outputs to <run>/output/ (artifacts.md says what lands there)
    command  copy the source to /workspace, ./install.sh, build the tasks, then
               train: bash jobs/train.slurm SCRIPT ...   (jobs/serve_vllm.py on GPU 0, SCRIPT on GPU 1)
               eval:  .venv/bin/python SCRIPT ...
    secrets  by name only: HF_TOKEN, and each --secret NAME; at --submit their values are read
             from your login and environment and handed to the Hub, which stores them encrypted
    source   the allowlisted files of this checkout (SOURCE below): never .env, outputs/ or build/

`--submit` creates the bucket if needed (private), uploads the source and starts the job with
huggingface_hub's jobs API (`HfApi.run_job`); it needs a token with write access (HF_TOKEN, or
`hf auth login`). Flags after `--` go to the script.

    python jobs/hf_job.py train --script train/opencode.py --flavor h200x2 --bucket my-org/multiharness-runs
    python jobs/hf_job.py train --script train/whitebox.py --bucket my-org/multiharness-runs -- --steps 200
    python jobs/hf_job.py eval --script eval/evaluate.py --bucket my-org/multiharness-runs \\
        --model /bucket/train-opencode-20260101-120000/output -- --tasks 100 --concurrency 8
    python jobs/hf_job.py train --script train/harbor.py --bucket my-org/multiharness-runs --submit

Then: `hf jobs logs JOB_ID` for the log, `hf buckets ls my-org/multiharness-runs/RUN/output` for
the outputs. Not run against the Hub from this checkout's CI (no network to the Hub, no GPU):
tests/test_jobs.py checks the plans and the calls against the installed huggingface_hub 2.4.0.
"""

import argparse
import os
import re
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

IMAGE = "python:3.12.11-bookworm"
"""Debian 12 like the machines install.sh is tested on, with apt (bubblewrap, Node.js) and Python 3.12
(Harbor's floor). No CUDA inside: the torch and vLLM wheels bring their CUDA libraries, the Job the driver."""
MOUNT = "/bucket"  # where the bucket appears inside the job
WORKDIR = "/workspace"  # the source is copied off the bucket mount: installs write .venv and .tools beside it
FLAVORS = {"train": "h200x2", "eval": "cpu-upgrade"}
"""Default hardware. train: two GPUs, and a 2B model's full fine-tune with AdamW needs ~32 GB before
activations, too much for 24 GB cards. eval: eval/evaluate.py runs the model on CPU (8 vCPU, 32 GB), in every loop."""
TIMEOUTS = {"train": "24h", "eval": "4h"}  # a Job without a timeout is stopped after 30 minutes
DEFAULT_MODEL = "Qwen/Qwen3.5-2B"  # the gpu presets' model (train/whitebox.py, multiharness/blackbox.py)
SECRETS = ("HF_TOKEN",)  # the job's own Hub access: Trackio Spaces (--space-id), private or gated models

TRAIN_SCRIPTS = {
    # The flags that put each loop on its reference GPU recipe against the vLLM server.
    "train/whitebox.py": ("--preset", "gpu"),
    "train/opencode.py": ("--preset", "gpu", "--engine", "vllm"),
    "train/harbor.py": ("--preset", "gpu", "--engine", "vllm"),
}
EVAL_SCRIPTS = {"eval/evaluate.py": ()}
SET_HERE = {"train": ("--output", "--model", "--vllm-server"), "eval": ("--output", "--model")}
"""Script flags this file sets: the outputs go to the bucket, the model is this file's --model."""

SOURCE = (
    "install.sh", "pyproject.toml", "README.md", "LICENSE",  # pyproject names README.md: `pip install -e .` reads it
    "requirements.txt", "requirements-gpu.txt", "requirements-model.txt", "requirements-sandbox.txt",
    "requirements-harbor.txt", "requirements-mini-swe-agent.txt",
    "clis/package.json", "clis/package-lock.json",  # the harness CLIs' pins
    "tests/browser/package.json", "tests/browser/package-lock.json",  # install.sh's browser-test step
    "multiharness", "train", "eval", "jobs", "data",
)
"""What of the checkout a job needs: files, and folders taken whole except for caches and dotfiles."""


def source_files(root: Path = ROOT) -> list[str]:
    """The allowlisted files under `root`, relative and sorted; no dotfile (.env), no bytecode cache."""
    files = []
    for name in SOURCE:
        path = root / name
        found = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
        for file in found:
            parts = file.relative_to(root).parts
            if any(part.startswith(".") or part == "__pycache__" for part in parts) or file.suffix == ".pyc":
                continue
            files.append("/".join(parts))
    return sorted(files)


def gpu_count(flavor: str) -> int:
    """GPUs of a Jobs flavor, from its name: cpu-* none, a trailing xN N (a10g-largex2, h200x2), else one."""
    if flavor.startswith("cpu-"):
        return 0
    match = re.search(r"x(\d+)$", flavor)
    return int(match.group(1)) if match else 1


# ---- the plan ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobPlan:
    """Everything `--submit` sends, printable before it is sent."""

    kind: str
    """"train" or "eval"."""
    run: str
    """The run's name: its folder in the bucket and the job's name."""
    bucket: str
    """The bucket, as ORG/NAME, mounted read-write at MOUNT."""
    flavor: str
    timeout: str
    script_lines: list[str]
    """The job's shell script, one step per line; the command is `bash -c` of them."""
    env: dict[str, str]
    """Public settings of the job (values shown)."""
    secrets: list[str]
    """Names of the secrets the job gets; values never enter the plan."""
    source: list[str]
    """Checkout files uploaded to `<run>/source/` before the job starts."""

    @property
    def command(self) -> list[str]:
        return ["bash", "-c", "\n".join(self.script_lines)]

    def bucket_path(self, *parts: str) -> str:
        return "/".join([f"hf://buckets/{self.bucket}", self.run, *parts])

    def describe(self) -> str:
        gpus = gpu_count(self.flavor)
        hardware = "vLLM on GPU 0, the trainer on GPU 1" if self.kind == "train" else f"{gpus or 'no'} GPU"
        lines = [
            f"HF Job: {self.kind} run {self.run!r}",
            f"  image    {IMAGE}",
            f"  flavor   {self.flavor} ({hardware})",
            f"  timeout  {self.timeout}",
            f"  volumes  {self.bucket_path().rsplit('/', 1)[0]} -> {MOUNT} (read-write)",
            "  env      " + ("\n           ".join(f"{k}={v}" for k, v in self.env.items()) or "(none)"),
            "  secrets  " + ", ".join(self.secrets) + "  (by name: values are read at --submit, stored encrypted by the Hub)",
            "  command  bash -c:",
            *(f"             {line}" for line in self.script_lines),
            f"  source   {len(self.source)} files, uploaded to {self.bucket_path('source')}/ at --submit:",
            *(f"             {name}" for name in self.source),
            f"  outputs  {self.bucket_path('output')}/",
        ]
        return "\n".join(lines)

    def run_job_kwargs(self, secret_values: dict[str, str]) -> dict:
        """The keyword arguments of `HfApi.run_job` for this plan, with the secrets' values."""
        from huggingface_hub import Volume

        return dict(
            image=IMAGE,
            command=self.command,
            env=self.env,
            secrets={name: secret_values[name] for name in self.secrets},
            flavor=self.flavor,
            timeout=self.timeout,
            name=self.run,
            volumes=[Volume(type="bucket", source=self.bucket, mount_path=MOUNT, read_only=False)],
        )


def plan_job(kind: str, script: str, *, bucket: str, flavor: str | None = None, model: str | None = None,
             run: str | None = None, timeout: str | None = None, secrets: tuple[str, ...] = (),
             script_args: tuple[str, ...] = ()) -> JobPlan:
    """The job that runs `script` with `script_args`; ValueError saying what to change for a bad setting."""
    from huggingface_hub import JobHardware

    scripts = TRAIN_SCRIPTS if kind == "train" else EVAL_SCRIPTS
    if script not in scripts:
        raise ValueError(f"--script {script!r} cannot run as a {kind} job. Expected one of {sorted(scripts)}.")
    flavor = flavor or FLAVORS[kind]
    flavors = [hardware.value for hardware in JobHardware]
    if flavor not in flavors:
        raise ValueError(f"--flavor {flavor!r} is not a Jobs flavor. Expected one of {flavors}.")
    if kind == "train" and gpu_count(flavor) < 2:
        raise ValueError(f"--flavor {flavor!r} has {gpu_count(flavor)} GPU(s); train needs 2 (vLLM on one, the "
                         "trainer on the other): pick one ending in x2 or more, e.g. h200x2")
    if bucket.count("/") != 1 or not all(bucket.split("/")):
        raise ValueError(f"--bucket must be ORG/NAME, got {bucket!r}")
    taken = [flag for flag in SET_HERE[kind] for arg in script_args if arg == flag or arg.startswith(flag + "=")]
    if taken:
        raise ValueError(f"{', '.join(taken)} after `--` is set by this script (outputs go to the bucket; "
                         "the model is --model here): drop it")
    run = run or f"{kind}-{Path(script).stem}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", run):
        raise ValueError(f"--run {run!r}: use letters, digits, '.', '_' and '-' (it names a folder and the job)")

    output = f"{MOUNT}/{run}/output"
    setup = [
        "set -euo pipefail",
        f"mkdir -p {WORKDIR} && cp -r {MOUNT}/{run}/source/. {WORKDIR} && cd {WORKDIR}",
        "apt-get update -qq  # install.sh needs Node.js for the harness CLIs; the image has none",
        "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm",
        "bash install.sh --gpu --no-run" if kind == "train" else "bash install.sh --no-run",
        ".venv/bin/python -m multiharness tasks build",
    ]
    if kind == "train":
        env = {"MODEL": model or DEFAULT_MODEL, "VLLM_LOG": f"{output}/vllm.log"}  # read by jobs/train.slurm
        launch = f"bash jobs/train.slurm {script} " + shlex.join([*scripts[script], *script_args, "--output", output])
    else:
        env = {"PIP_EXTRA_INDEX_URL": "https://download.pytorch.org/whl/cpu"}  # CPU torch, not PyPI's 3 GB CUDA build
        chosen = ["--model", model] if model else []  # without it, the script's default model
        launch = f".venv/bin/python {script} " + shlex.join([*chosen, *script_args, "--output", f"{output}/eval"])
    return JobPlan(kind=kind, run=run, bucket=bucket, flavor=flavor, timeout=timeout or TIMEOUTS[kind],
                   script_lines=[*setup, launch], env=env, secrets=list(dict.fromkeys([*SECRETS, *secrets])),
                   source=source_files())


# ---- submitting it -------------------------------------------------------------------------------


def submit(plan: JobPlan, token: str | None = None):
    """Create the bucket (private, if new), upload the source, start the job; returns its `JobInfo`.

    RuntimeError, before anything is sent, when there is no token or a named secret is unset.
    """
    from huggingface_hub import HfApi
    from huggingface_hub.utils import get_token

    token = token or get_token()
    if not token:
        raise RuntimeError("no Hugging Face token: set HF_TOKEN (a token with write access, huggingface.co/settings/"
                           "tokens) or run `hf auth login`, then rerun with --submit")
    values = {"HF_TOKEN": token, **{name: os.environ.get(name, "") for name in plan.secrets if name != "HF_TOKEN"}}
    missing = [name for name, value in values.items() if not value]
    if missing:
        raise RuntimeError(f"the job's secret {', '.join(missing)} is not set in your environment: export it, "
                           "or drop --secret for it, then rerun with --submit")
    api = HfApi(token=token)
    api.create_bucket(plan.bucket, private=True, exist_ok=True)
    api.batch_bucket_files(plan.bucket, add=[(ROOT / name, f"{plan.run}/source/{name}") for name in plan.source])
    return api.run_job(**plan.run_job_kwargs(values))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     usage="%(prog)s {train,eval} --script SCRIPT --bucket ORG/NAME [options] [-- SCRIPT FLAGS]")
    parser.add_argument("kind", choices=["train", "eval"], help="train: a GRPO run on two GPUs; eval: an evaluation")
    parser.add_argument("--script", required=True,
                        help=f"the script to run: train {sorted(TRAIN_SCRIPTS)}, eval {sorted(EVAL_SCRIPTS)}")
    parser.add_argument("--bucket", required=True, help="your bucket, as ORG/NAME: the source goes in, outputs come out")
    parser.add_argument("--flavor", default=None, help=f"Jobs hardware (default: train {FLAVORS['train']}, "
                                                       f"eval {FLAVORS['eval']}; `hf jobs hardware` lists them)")
    parser.add_argument("--model", default=None,
                        help=f"train: the policy vLLM serves and the trainer trains (default {DEFAULT_MODEL}); "
                             "eval: the model to measure, e.g. /bucket/RUN/output (default: the script's)")
    parser.add_argument("--run", default=None, help="the run's name (default: KIND-SCRIPT-UTC time)")
    parser.add_argument("--timeout", default=None, help=f"stop the job after this long (default: {TIMEOUTS})")
    parser.add_argument("--secret", action="append", default=[], metavar="NAME",
                        help="another secret the job needs, read from your environment at --submit "
                             "(e.g. DAYTONA_API_KEY with -- --sandbox daytona); repeatable")
    parser.add_argument("--submit", action="store_true", help="upload the source and start the job (default: print the plan)")
    argv = sys.argv[1:] if argv is None else list(argv)
    cut = argv.index("--") if "--" in argv else len(argv)  # after `--`: the script's own flags, passed as they are
    args = parser.parse_args(argv[:cut])
    args.script_args = tuple(argv[cut + 1:])
    return args


def main(argv=None):
    args = parse_args(argv)
    try:  # a bad setting (ValueError) or a missing token or secret (RuntimeError): the message says what to do
        plan = plan_job(args.kind, args.script, bucket=args.bucket, flavor=args.flavor, model=args.model, run=args.run,
                        timeout=args.timeout, secrets=tuple(args.secret), script_args=args.script_args)
        print(plan.describe())
        job = submit(plan) if args.submit else None
    except (ValueError, RuntimeError) as error:
        raise SystemExit(f"error: {error}") from error
    if job is None:
        print("plan only: rerun with --submit to upload the source and start the job")
    else:
        print(f"started: {job.url}\n  logs:    hf jobs logs {job.id}\n  outputs: {plan.bucket_path('output')}/")

if __name__ == "__main__":
    sys.exit(main())
