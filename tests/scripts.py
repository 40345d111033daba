"""The entry scripts (train/, eval/) loaded as modules, so tests call their functions and presets."""

import importlib.util
from pathlib import Path

from multiharness.paths import PROJECT_ROOT


def load_script(relative: str):
    """`relative` (e.g. "train/whitebox.py") as a module named after it; its `main()` does not run."""
    spec = importlib.util.spec_from_file_location(Path(relative).stem + "_script", PROJECT_ROOT / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
