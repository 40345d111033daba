# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
"""The whitebox environment's action, observation and state: a person or a trainer calls the tools.

One action calls one tool: `bash`, `read`, `write`, `edit`, `ls`, `grep`, `glob` and
`submit_solution` are `multiharness.whitebox.TOOLS` (the tools TRL gives the model), plus
`start_task` (open a fresh sandbox on a task, as `reset` does) and `grade` (end the episode and
score it). The arguments are the tool's keyword arguments, named as in its docstring.

They are `multiharness.remote`'s types, so that this server, its client and a trainer run with
`train/whitebox.py --server URL` speak one protocol.
"""

from multiharness.remote import WhiteboxAction, WhiteboxObservation, WhiteboxState

__all__ = ["WhiteboxAction", "WhiteboxObservation", "WhiteboxState"]
