"""Figures of evaluations: pass@1 per loop with its interval, and the transfer matrix as a heat map.

Each figure is saved twice, as PNG (for a quick look) and SVG (for a page), from one drawing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

__all__ = ["matrix_figure", "summary_figure"]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # no display on servers and CI
    import matplotlib.pyplot as plt

    return plt


def _save(fig, stem: Path) -> list[Path]:
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    fig.tight_layout()
    for path in paths:
        fig.savefig(path, dpi=120)
    _pyplot().close(fig)
    return paths


def summary_figure(summary: Mapping, stem: Path, *, title: str = "") -> list[Path]:
    """pass@1 per loop with its Wilson 95% interval and the number graded; returns the files."""
    plt = _pyplot()
    loops = list(summary["by_loop"])
    groups = [summary["by_loop"][loop] for loop in loops]
    values = [g["pass_at_1"] or 0.0 for g in groups]
    low = [v - (g["pass_at_1_interval"] or (v, v))[0] for v, g in zip(values, groups)]
    high = [(g["pass_at_1_interval"] or (v, v))[1] - v for v, g in zip(values, groups)]
    fig, ax = plt.subplots(figsize=(1.4 * len(loops) + 2, 3.6))
    ax.bar(loops, values, yerr=[low, high], capsize=4, color="tab:blue", alpha=0.8)
    for x, group in enumerate(groups):
        label = "no pair graded" if group["pass_at_1"] is None else f"{group['pass_at_1']:.2f}"
        ax.annotate(f"{label}\n{group['graded']}/{group['expected']} graded", (x, 1.02), ha="center", fontsize=8,
                    annotation_clip=False)
    ax.set_ylim(0, 1.15)
    ax.set_ylabel("pass@1 (Wilson 95% interval)")
    ax.set_title(title, fontsize=10, pad=24)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, Path(stem))


def matrix_figure(rows: Mapping[str, Mapping], loops: list[str], stem: Path, *, title: str = "") -> list[Path]:
    """Policies × loops heat map of pass@1; each cell shows the rate, its interval and the number graded."""
    plt = _pyplot()
    names = list(rows)
    cells = [[rows[name]["by_loop"].get(loop) for loop in loops] for name in names]
    values = [[(c or {}).get("pass_at_1") for c in row] for row in cells]
    shown = [[float("nan") if v is None else v for v in row] for row in values]
    fig, ax = plt.subplots(figsize=(1.9 * len(loops) + 2, 0.9 * len(names) + 1.6))
    image = ax.imshow(shown, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    for i, row in enumerate(cells):
        for j, cell in enumerate(row):
            if not cell or cell["pass_at_1"] is None:
                text, colour = "not graded", "black"
            else:
                low, high = cell["pass_at_1_interval"]
                text = f"{cell['pass_at_1']:.2f}\n[{low:.2f}, {high:.2f}]\nn={cell['graded']}"
                colour = "black" if cell["pass_at_1"] > 0.6 else "white"
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color=colour)
    ax.set_xticks(range(len(loops)), loops)
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel("evaluated in")
    ax.set_ylabel("policy")
    ax.set_title(title or "pass@1 by policy and loop (Wilson 95% intervals)", fontsize=10)
    fig.colorbar(image, ax=ax, label="pass@1")
    return _save(fig, Path(stem))
