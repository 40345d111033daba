# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""Check that this machine can run the multiharness scripts, and say how to fix what is missing.

Run it with the project's environment after ./install.sh:

    .venv/bin/python check_setup.py                  # everything (--mode all)
    .venv/bin/python check_setup.py --mode whitebox  # can train/whitebox.py run here?
    .venv/bin/python check_setup.py --mode opencode  # can train/opencode.py run here?
    .venv/bin/python check_setup.py --mode harbor    # can train/harbor.py run here?

What each mode requires:

    whitebox  the Python stack (versions printed), TRL's GRPOTrainer with `environment_factory`
              and `rollout_func`, bubblewrap, the default model (or --model), the sandbox's
              Python with pandas
    opencode  whitebox + TRL's AsyncGRPOTrainer and HarnessRolloutWorker, OpenEnv's
              CaptureServer and TrainingTrace, the opencode CLI
    harbor    opencode + the Harbor environment and the codex, claude and mini CLIs
    all       harbor + vLLM, which is required only on a machine with a CUDA GPU

Each line starts with ✓ (works), ! (works, but not the pinned version), ✗ (missing or broken:
the line ends with the fix) or · (not needed here). The exit status is 0 when the selected
mode can run and 1 when it cannot.
"""

import argparse
import importlib
import importlib.metadata
import inspect
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from multiharness.paths import DEFAULT_MODEL_DIR, PROJECT_ROOT, SANDBOX_ENV_DIR, TOOLS_DIR

MODES = ("whitebox", "opencode", "harbor", "all")
MIN_PYTHON = (3, 11)  # the project's floor (pyproject.toml)
STACK = ("torch", "transformers", "trl", "openenv", "accelerate", "datasets", "trackio", "math-verify")
COMMAND_SECONDS = 60  # a CLI's --version can take a few seconds on a cold, loaded machine
NPM_DIR = TOOLS_DIR / "npm"
CLIS = {  # name -> (executable, folder install.sh fills, file that pins it, package name there)
    "opencode": (NPM_DIR / "node_modules/.bin/opencode", NPM_DIR, "clis/package.json", "opencode-ai"),
    "codex": (NPM_DIR / "node_modules/.bin/codex", NPM_DIR, "clis/package.json", "@openai/codex"),
    "claude": (NPM_DIR / "node_modules/.bin/claude", NPM_DIR, "clis/package.json", "@anthropic-ai/claude-code"),
    "mini": (
        TOOLS_DIR / "mini-swe-agent/bin/mini",
        TOOLS_DIR / "mini-swe-agent",
        "requirements-mini-swe-agent.txt",
        "mini-swe-agent",
    ),
    "harbor": (TOOLS_DIR / "harbor/bin/harbor", TOOLS_DIR / "harbor", "requirements-harbor.txt", "harbor"),
}
# The local sandbox uses bubblewrap plus these util-linux tools (multiharness/sandbox/local.py).
SANDBOX_TOOLS = ("bwrap", "nsenter", "unshare", "setpriv", "prlimit")
SANDBOX_VENV = "/opt/venv"  # where the local sandbox mounts the sandbox's Python
INSTALL = "run ./install.sh"


@dataclass
class Check:
    """One line of the report."""

    name: str
    """What was checked, e.g. `torch` or `bubblewrap`."""
    status: str
    """`ok`, `warn` (works, not the pinned version), `fail` or `info` (not needed here)."""
    detail: str = ""
    """Version, path or error message."""
    fix: str = ""
    """What to do, for `warn` and `fail`."""

    def line(self) -> str:
        mark = {"ok": "✓", "warn": "!", "fail": "✗", "info": "·"}[self.status]
        text = f"  {mark} {self.name}: {self.detail}" if self.detail else f"  {mark} {self.name}"
        return f"{text} → {self.fix}" if self.fix else text


# ---- pins -------------------------------------------------------------------------------------


def _pins(*files: str) -> dict[str, set[str]]:
    """Versions pinned in requirements files: normalised name -> versions (one per file)."""
    pins: dict[str, set[str]] = {}
    for file in files:
        path = PROJECT_ROOT / file
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            requirement = line.split("#", 1)[0].strip()
            if "==" in requirement:
                name, version = requirement.split("==", 1)
                pins.setdefault(_normalise(name), set()).add(version.strip())
    return pins


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pinned_version(file: str, package: str) -> str:
    """The version `file` (a requirements file or clis/package.json) pins for `package`, or ""."""
    if file.endswith(".json"):
        try:
            return json.loads((PROJECT_ROOT / file).read_text())["dependencies"][package]
        except (OSError, KeyError, ValueError):
            return ""
    return next(iter(_pins(file).get(_normalise(package), ())), "")


# ---- Python stack -----------------------------------------------------------------------------


def check_python() -> Check:
    detail = f"{platform.python_version()} ({sys.executable})"
    if sys.version_info < MIN_PYTHON:
        return Check(
            "python", "fail", detail, f"the project needs Python >= 3.11; {INSTALL}, then use .venv/bin/python"
        )
    venv = PROJECT_ROOT / ".venv"
    if (venv / "bin" / "python").exists() and Path(sys.prefix).resolve() != venv.resolve():
        return Check("python", "warn", detail, "not the project's .venv: run .venv/bin/python check_setup.py")
    return Check("python", "ok", detail)


def check_package(name: str, pins: dict[str, set[str]]) -> Check:
    """An installed distribution, compared with the versions the requirements files pin."""
    try:
        version = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return Check(name, "fail", f"not installed in {sys.executable}", INSTALL)
    wanted = pins.get(_normalise(name))
    if wanted and version.split("+")[0] not in wanted:
        return Check(
            name, "warn", f"{version} (pinned: {' or '.join(sorted(wanted))})", f"{INSTALL} to restore the pins"
        )
    return Check(name, "ok", version)


def check_openenv_twin() -> Check | None:
    """`openenv-core` writes the same package folder as `openenv`: the two break each other."""
    try:
        version = importlib.metadata.version("openenv-core")
    except importlib.metadata.PackageNotFoundError:
        return None
    return Check(
        "openenv-core",
        "fail",
        f"{version} is installed next to openenv and overwrites its files",
        "pip uninstall -y openenv-core && pip install --force-reinstall --no-deps openenv==0.10.0",
    )


# ---- TRL and OpenEnv APIs ---------------------------------------------------------------------


def _import(module: str, name: str):
    return getattr(importlib.import_module(module), name)


def check_import(module: str, name: str, package: str) -> Check:
    """`from module import name` works (the scripts import it from there)."""
    try:
        _import(module, name)
    except Exception as error:  # any import-time failure means the script cannot start
        message = f"{type(error).__name__}: {error}".splitlines()[0][:160]
        return Check(name, "fail", f"from {module}: {message}", f"{INSTALL} (it installs {package})")
    return Check(name, "ok", f"from {module} import {name}")


def check_grpo_parameters() -> Check:
    """GRPOTrainer accepts the two keywords the loops use."""
    wanted = ("environment_factory", "rollout_func")
    try:
        trainer = _import("trl", "GRPOTrainer")
    except Exception as error:
        message = f"{type(error).__name__}: {error}".splitlines()[0][:160]
        return Check("GRPOTrainer", "fail", message, INSTALL)
    parameters = inspect.signature(trainer.__init__).parameters
    missing = [name for name in wanted if name not in parameters]
    if missing:
        return Check("GRPOTrainer", "fail", f"no parameter {', '.join(missing)}", f"{INSTALL} (trl==1.16.0)")
    return Check("GRPOTrainer", "ok", f"{trainer.__module__}: GRPOTrainer(environment_factory=…, rollout_func=…)")


def check_vllm() -> Check:
    """vLLM: required only where a CUDA GPU is visible (the CPU runs use the local engine)."""
    try:
        import torch

        cuda = torch.cuda.is_available()
    except Exception:
        cuda = False
    try:
        version = importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        if cuda:
            return Check("vllm", "fail", "not installed, and a CUDA GPU is visible", "./install.sh --gpu")
        return Check("vllm", "info", "not installed (needed on GPU machines only: ./install.sh --gpu)")
    return Check("vllm", "ok", version if cuda else f"{version} (no CUDA GPU visible)")


# ---- sandbox ----------------------------------------------------------------------------------


def _bwrap_argv(*extra: str) -> list[str]:
    """A minimal bubblewrap sandbox: read-only /usr, fresh namespaces, nothing else of the host."""
    return [
        "bwrap",
        "--ro-bind", "/usr", "/usr",
        "--symlink", "usr/bin", "/bin",
        "--symlink", "usr/lib", "/lib",
        "--symlink", "usr/lib64", "/lib64",
        "--proc", "/proc",
        "--dev", "/dev",
        "--unshare-all",
        "--die-with-parent",
        *extra,
    ]  # fmt: skip


def _run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_SECONDS, **kwargs)


def check_bubblewrap() -> Check:
    """bwrap runs a trivial command in new namespaces (fails where user namespaces are off)."""
    if platform.system() != "Linux":
        return Check(
            "bubblewrap",
            "fail",
            f"the local sandbox needs Linux (this is {platform.system()})",
            "use --sandbox docker",
        )
    missing = [tool for tool in SANDBOX_TOOLS if shutil.which(tool) is None]
    if "bwrap" in missing:
        return Check(
            "bubblewrap", "fail", "bwrap not found", "sudo apt-get install -y bubblewrap (or ./install.sh as root)"
        )
    if missing:
        return Check("bubblewrap", "fail", f"missing {', '.join(missing)}", "sudo apt-get install -y util-linux")
    version = _run(["bwrap", "--version"]).stdout.strip()
    result = _run(_bwrap_argv("/usr/bin/true"))
    if result.returncode != 0:
        error = (result.stderr.strip().splitlines() or ["no message"])[-1]
        return Check(
            "bubblewrap",
            "fail",
            f"{version} cannot start a sandbox: {error}",
            "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu "
            "kernel.apparmor_restrict_unprivileged_userns=0), or use --sandbox docker",
        )
    return Check("bubblewrap", "ok", f"{version}, runs a command in fresh namespaces")


def check_sandbox_python(env_dir: Path, *, inside_bwrap: bool) -> Check:
    """The sandbox's venv imports pandas, mounted where the local sandbox mounts it."""
    python = env_dir / "bin" / "python"
    if not python.exists():
        return Check("sandbox Python", "fail", f"no venv at {env_dir}", INSTALL)
    code = "import pandas, pyarrow; print(pandas.__version__)"
    if inside_bwrap:
        argv = _bwrap_argv("--ro-bind", str(env_dir), SANDBOX_VENV, f"{SANDBOX_VENV}/bin/python", "-c", code)
        where = f"at {SANDBOX_VENV} inside bubblewrap"
    else:
        argv, where = [str(python), "-c", code], "outside the sandbox (bubblewrap not working)"
    result = _run(argv)
    if result.returncode != 0:
        error = (result.stderr.strip().splitlines() or ["no message"])[-1]
        return Check("sandbox Python", "fail", f"{env_dir}: {error}", f"rm -rf {env_dir} and {INSTALL}")
    return Check("sandbox Python", "ok", f"pandas {result.stdout.strip()} {where} ({env_dir})")


# ---- model ------------------------------------------------------------------------------------


def _chat_template(model_dir: Path) -> str:
    if (model_dir / "chat_template.jinja").exists():
        return (model_dir / "chat_template.jinja").read_text()
    try:
        return json.loads((model_dir / "tokenizer_config.json").read_text()).get("chat_template") or ""
    except (OSError, ValueError):
        return ""


def check_model(model_dir: Path) -> Check:
    """A local Hugging Face folder with weights, tokenizer and a tool-calling chat template."""
    fix = f"{INSTALL} (it converts the default model), or pass --model with a local model folder"
    if not model_dir.is_dir():
        return Check("model", "fail", f"no folder at {model_dir}", fix)
    missing = [name for name in ("config.json", "tokenizer.json") if not (model_dir / name).exists()]
    if not any(model_dir.glob("*.safetensors")):
        missing.append("*.safetensors")
    if missing:
        return Check("model", "fail", f"{model_dir} lacks {', '.join(missing)}", fix)
    template = _chat_template(model_dir)
    if "tools" not in template or "<tool_call>" not in template:
        return Check(
            "model", "fail", f"{model_dir}: the chat template has no tool calling", f"rm -rf {model_dir} and {INSTALL}"
        )
    return Check("model", "ok", f"{model_dir} (config, safetensors, tokenizer, tool-calling template)")


# ---- harness CLIs and Harbor ------------------------------------------------------------------


def check_cli(name: str) -> Check:
    """The pinned CLI is where the harness runners look for it, and prints its version."""
    path, folder, pin_file, package = CLIS[name]
    shown, reinstall = _short(path), f"rm -rf {_short(folder)} and {INSTALL}"
    if not path.exists():
        return Check(name, "fail", f"not found at {shown}", INSTALL)
    with tempfile.TemporaryDirectory() as config_dir:
        # mini has no --version: its --help starts with "This is mini-swe-agent version X",
        # and it writes a config folder on start (kept out of the user's home here).
        argv = [str(path), "--help" if name == "mini" else "--version"]
        env = {**os.environ, "MSWEA_GLOBAL_CONFIG_DIR": config_dir}
        try:
            result = _run(argv, env=env, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as error:
            return Check(name, "fail", f"{shown}: {error}", reinstall)
    output = (result.stdout + result.stderr).strip()
    if result.returncode != 0:
        last = (output.splitlines() or ["no output"])[-1][:160]
        return Check(name, "fail", f"{shown} {argv[1]} failed: {last}", reinstall)
    if name == "mini":
        found = re.search(r"version (\d[\w.]*\w)", output)
        version = found.group(1) if found else "unknown version"
    else:
        version = output.splitlines()[0]
    wanted = _pinned_version(pin_file, package)
    if wanted and wanted not in version:
        return Check(name, "warn", f"{version} at {shown} (pinned: {wanted})", f"{INSTALL} to restore the pin")
    return Check(name, "ok", f"{version} ({shown})")


def _short(path: Path) -> Path:
    return path.relative_to(PROJECT_ROOT) if path.is_relative_to(PROJECT_ROOT) else path


# ---- report -----------------------------------------------------------------------------------

CLIS_BY_MODE = {
    "whitebox": [],
    "opencode": ["opencode"],
    "harbor": ["opencode", "codex", "claude", "mini", "harbor"],
    "all": ["opencode", "codex", "claude", "mini", "harbor"],
}


def plan(mode: str, model_dir: Path) -> list[tuple[str, list]]:
    """The checks of a mode, as (heading, [function returning a Check or None]) in the order a
    user fixes them; they run one by one so the report appears as it goes."""
    pins = _pins("requirements.txt", "requirements-gpu.txt")
    stack = [check_python, *(lambda name=name: check_package(name, pins) for name in STACK), check_openenv_twin]
    apis = [check_grpo_parameters]
    if mode != "whitebox":
        apis += [
            lambda: check_import("trl.experimental.async_grpo", "AsyncGRPOTrainer", "trl==1.16.0"),
            lambda: check_import("trl.experimental.async_grpo.openenv_harness", "HarnessRolloutWorker", "trl==1.16.0"),
            lambda: check_import("openenv.core.harness.capture", "CaptureServer", "openenv==0.10.0"),
            lambda: check_import("openenv.core.harness", "TrainingTrace", "openenv==0.10.0"),
        ]
    if mode == "all":
        apis.append(check_vllm)
    bwrap_works = []  # the sandbox Python is checked inside bubblewrap when bubblewrap works

    def bubblewrap() -> Check:
        check = check_bubblewrap()
        bwrap_works.append(check.status == "ok")
        return check

    sandbox = [bubblewrap, lambda: check_sandbox_python(SANDBOX_ENV_DIR, inside_bwrap=bwrap_works[0])]
    groups = [
        ("Python stack", stack),
        ("TRL and OpenEnv APIs", apis),
        ("Sandbox", sandbox),
        ("Model", [lambda: check_model(model_dir)]),
    ]
    if CLIS_BY_MODE[mode]:
        groups.append(("Harness CLIs and Harbor", [lambda name=name: check_cli(name) for name in CLIS_BY_MODE[mode]]))
    return groups


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="all",
        help="what must work: whitebox, opencode, harbor, or all (default: all)",
    )
    parser.add_argument(
        "--model",
        type=Path,
        default=DEFAULT_MODEL_DIR,
        help=f"local model folder to check (default: {DEFAULT_MODEL_DIR})",
    )
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    sys.stdout.reconfigure(errors="replace")  # ✓/✗ on a terminal that cannot show them
    print(f"multiharness setup check (mode: {args.mode})", flush=True)
    problems = 0
    for heading, checks in plan(args.mode, args.model):
        print(heading, flush=True)
        for run_check in checks:
            check = run_check()
            if check is not None:
                print(check.line(), flush=True)
                problems += check.status == "fail"
    if problems:
        print(f"Not ready for {args.mode}: {problems} problem(s), each marked ✗ with its fix.")
        return 1
    print(f"Ready for {args.mode}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
