"""The learning curve of a GRPO run, drawn from the `trainer_state.json` the trainer writes.

Two panels per step: the mean training reward, and the share of groups whose rollouts all got
the same reward (no gradient: GRPO learns only from groups with mixed outcomes). Given the
held-out evaluations of its checkpoints, a third panel shows their pass@1 with Wilson intervals
at the step each checkpoint was saved (step 0: the model GRPO started from).
"""

import json
from collections.abc import Mapping
from pathlib import Path

__all__ = ["learning_curve"]


def learning_curve(run_dir: Path, png: Path, title: str = "GRPO", held_out: Mapping[int, Mapping] | None = None) -> Path | None:
    """Plot reward per step from the last trainer_state.json under run_dir; None if there is none.

    `held_out` maps a GRPO step to the summary `eval/evaluate.py` wrote for that step's checkpoint.
    """
    import matplotlib

    matplotlib.use("Agg")  # no display on servers and CI
    import matplotlib.pyplot as plt

    states = sorted(run_dir.glob("**/trainer_state.json"), key=lambda p: p.stat().st_mtime)
    if not states:
        return None
    history = [h for h in json.loads(states[-1].read_text())["log_history"] if "reward" in h]
    steps = [h["step"] for h in history]
    fig, axes = plt.subplots(3 if held_out else 2, 1, figsize=(6, 7.5 if held_out else 5), sharex=True)
    top, bottom = axes[0], axes[1]
    top.plot(steps, [h["reward"] for h in history], marker="o")
    top.set_ylabel("mean reward")
    top.set_title(f"{title}: {run_dir}")
    # Groups whose rollouts all got the same reward give GRPO no gradient.
    bottom.plot(steps, [h["frac_reward_zero_std"] for h in history], marker="o", color="tab:red")
    bottom.set_ylabel("groups without signal")
    bottom.set_ylim(-0.05, 1.05)
    if held_out:
        at = [step for step in sorted(held_out) if held_out[step]["pass_at_1"] is not None]
        rates = [held_out[step]["pass_at_1"] for step in at]
        low, high = zip(*(held_out[step]["pass_at_1_interval"] for step in at)) if at else ((), ())
        errors = [[r - lo for r, lo in zip(rates, low)], [hi - r for r, hi in zip(rates, high)]]
        axes[2].errorbar(at, rates, yerr=errors, marker="s", capsize=4, color="tab:green")
        graded = sorted({held_out[step]["graded"] for step in at})
        axes[2].set_ylabel(f"held-out pass@1 ({'/'.join(map(str, graded))} tasks)")
        axes[2].set_ylim(-0.02, 1.02)
    axes[-1].set_xlabel("GRPO step")
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    return png
