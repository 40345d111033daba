"""multiharness: train small models with RL on verifiable data-analysis tasks, inside any agent harness.

One task format, one grader, one reward and one sandbox layer, shared by three tool loops
(`train/whitebox.py`, `train/opencode.py`, `train/harbor.py`). Import what you need from its
module: `multiharness.tasks`, `multiharness.grading`, `multiharness.reward`, ...
"""

__version__ = "0.1.0"
