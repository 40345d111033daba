"""The learning curve of a GRPO run, drawn from the `trainer_state.json` the trainer writes.

Two panels per step: the mean training reward, and the share of groups whose rollouts all got
the same reward (no gradient: GRPO learns only from groups with mixed outcomes).
"""

import json
from pathlib import Path

__all__ = ["learning_curve"]


def learning_curve(run_dir: Path, png: Path, title: str = "GRPO") -> Path | None:
    """Plot reward per step from the last trainer_state.json under run_dir; None if there is none."""
    import matplotlib

    matplotlib.use("Agg")  # no display on servers and CI
    import matplotlib.pyplot as plt

    states = sorted(run_dir.glob("**/trainer_state.json"), key=lambda p: p.stat().st_mtime)
    if not states:
        return None
    history = [h for h in json.loads(states[-1].read_text())["log_history"] if "reward" in h]
    steps = [h["step"] for h in history]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6, 5), sharex=True)
    top.plot(steps, [h["reward"] for h in history], marker="o")
    top.set_ylabel("mean reward")
    top.set_title(f"{title}: {run_dir}")
    # Groups whose rollouts all got the same reward give GRPO no gradient.
    bottom.plot(steps, [h["frac_reward_zero_std"] for h in history], marker="o", color="tab:red")
    bottom.set_ylabel("groups without signal")
    bottom.set_ylim(-0.05, 1.05)
    bottom.set_xlabel("GRPO step")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    return png
