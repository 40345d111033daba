# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""install.sh, the pinned requirements files and check_setup.py, as a user meets them."""

import importlib.metadata
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = sorted(ROOT.glob("requirements*.txt"))
PIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!-]+$")


def run(*argv, env=None, timeout=120):
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env=env, timeout=timeout)


def requirement_lines(path: Path) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


# ---- install.sh -------------------------------------------------------------------------------


def test_install_script_is_valid_bash_and_executable():
    assert run("bash", "-n", "install.sh").returncode == 0 and os.access(ROOT / "install.sh", os.X_OK)


def test_install_help_lists_the_flags():
    result = run("bash", "install.sh", "--help")
    missing = [flag for flag in ("--no-run", "--gpu", "--help") if flag not in result.stdout]
    assert result.returncode == 0 and not missing, result.stdout


def test_install_rejects_an_unknown_flag_before_doing_anything():
    result = run("bash", "install.sh", "--frobnicate")
    assert result.returncode == 2 and "--frobnicate" in result.stderr and "[1/" not in result.stdout


# ---- pinned versions --------------------------------------------------------------------------


def test_every_requirement_is_pinned_exactly():
    unpinned = [
        f"{path.name}: {line}" for path in REQUIREMENTS for line in requirement_lines(path) if not PIN.match(line)
    ]
    assert len(REQUIREMENTS) >= 5 and not unpinned, unpinned


def test_openenv_is_the_distribution_and_never_openenv_core():
    # openenv-core writes the same package folder as openenv; installing both breaks imports.
    names = {path.name: {Requirement(line).name.lower() for line in requirement_lines(path)} for path in REQUIREMENTS}
    twins = [name for name, packages in names.items() if "openenv-core" in packages]
    assert not twins and "openenv" in names["requirements.txt"] and "openenv" in names["requirements-gpu.txt"]


def test_gpu_vllm_lies_in_the_range_the_installed_trl_declares():
    extra = [Requirement(text) for text in importlib.metadata.requires("trl") if text.startswith("vllm")]
    pinned = [Requirement(line) for line in requirement_lines(ROOT / "requirements-gpu.txt")]
    vllm = next(str(r.specifier).removeprefix("==") for r in pinned if r.name == "vllm")
    assert extra and extra[0].specifier.contains(vllm), (vllm, str(extra[0].specifier))


def test_cpu_default_never_pulls_vllm_or_cuda():
    names = {Requirement(line).name.lower() for line in requirement_lines(ROOT / "requirements.txt")}
    assert not {name for name in names if name == "vllm" or name.startswith("nvidia-")}


def test_harness_clis_are_pinned_exactly_in_package_and_lock():
    package = json.loads((ROOT / "clis" / "package.json").read_text())
    lock = json.loads((ROOT / "clis" / "package-lock.json").read_text())
    wanted = package["dependencies"]
    locked = {name: lock["packages"].get(f"node_modules/{name}", {}).get("version") for name in wanted}
    assert set(wanted) == {"opencode-ai", "@openai/codex", "@anthropic-ai/claude-code"} and locked == wanted


# ---- check_setup.py ---------------------------------------------------------------------------


def test_check_setup_help():
    result = run(sys.executable, "check_setup.py", "--help")
    assert result.returncode == 0 and "--mode" in result.stdout and "whitebox" in result.stdout


@pytest.mark.slow  # imports torch, transformers and TRL: about 10 s
def test_check_setup_whitebox_is_ready_on_an_installed_machine():
    result = run(sys.executable, "check_setup.py", "--mode", "whitebox")
    expected = [
        "✓ python: 3.",  # the interpreter running it
        "✓ torch: ",  # versions of the stack
        "✓ trl: 1.16.0",
        "✓ openenv: 0.10.0",
        "✓ GRPOTrainer: ",  # environment_factory and rollout_func exist
        "✓ bubblewrap: ",  # a trivial sandbox starts
        "✓ sandbox Python: pandas",  # importable at /opt/venv inside the sandbox
        "✓ model: ",  # weights, tokenizer and tool-calling template
        "Ready for whitebox.",
    ]
    missing = [line for line in expected if line not in result.stdout]
    assert result.returncode == 0 and not missing, result.stdout + result.stderr


def test_check_setup_reports_each_missing_piece_with_its_fix(tmp_path):
    # `-S` hides site-packages: like running it with a Python where nothing was installed.
    # An empty MULTIHARNESS_HOME has no converted model and no sandbox Python.
    env = {**os.environ, "MULTIHARNESS_HOME": str(tmp_path)}
    result = run(sys.executable, "-S", "check_setup.py", "--mode", "whitebox", env=env)
    expected = [
        "✗ torch: not installed",
        "✗ trl: not installed",
        f"✗ sandbox Python: no venv at {tmp_path / 'sandbox-env'} → run ./install.sh",
        f"✗ model: no folder at {tmp_path / 'models'}",
        "Not ready for whitebox",
    ]
    missing = [line for line in expected if line not in result.stdout]
    assert result.returncode == 1 and not missing, result.stdout + result.stderr
