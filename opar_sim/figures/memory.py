"""Figures of the loop's memory: the context-rebound curve and Reflexion's learning curve.

Built headless and returned; ``opar_sim.figures.style.save`` writes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure


def learning_curve_figure(curves: Mapping[str, Sequence[float]], title: str) -> Figure:
    """Share of seeded tasks solved by attempt a, one line per arm (Reflexion's figure).

    Args:
        curves: Per arm (or controller), the share solved by each attempt, in order.
        title: The figure's title.

    Returns:
        The figure, not yet saved (``style.save`` writes it).
    """
    fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
    for name, values in curves.items():
        attempts = np.arange(1, len(values) + 1)
        ax.plot(attempts, 100 * np.asarray(values), marker="o", lw=2, label=name)
    ax.set_xlabel("attempt at the same seeded task")
    ax.set_ylabel("tasks solved by this attempt (%)")
    ax.set_xticks(np.arange(1, max((len(v) for v in curves.values()), default=1) + 1))
    ax.set_ylim(0, 100)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=9)
    return fig


def rebound_figure(
    error: Mapping[str, Sequence[float]],
    context: Mapping[str, Sequence[float]],
    knee: float,
    title: str,
) -> Figure:
    """Per-step error rate (top) and mean context size (bottom) for each arm.

    Args:
        error: Per arm, the share of wrong actions at each step.
        context: Per arm, the mean context size C_t in tokens at each step.
        knee: The context size where quality starts to fall, drawn as a dashed
            line.
        title: The figure's title.

    Returns:
        The figure, not yet saved (``style.save`` writes it).
    """
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(8, 6.5), sharex=True, layout="constrained", height_ratios=(3, 2)
    )
    for name, values in error.items():
        steps = np.arange(1, len(values) + 1)
        top.plot(steps, 100 * np.asarray(values), marker="o", ms=3, lw=2, label=name)
        tokens = context.get(name, [])
        bottom.plot(np.arange(1, len(tokens) + 1), tokens, lw=2, label=name)
    top.axvline(8, color="0.5", ls=":", lw=1)
    top.text(8.2, top.get_ylim()[1] * 0.95, "round 8", color="0.4", va="top", fontsize=8)
    top.set_ylabel("wrong actions at this step (%)")
    top.set_title(title)
    top.grid(alpha=0.3)
    top.legend(fontsize=9)
    bottom.axhline(knee, color="0.4", ls="--", lw=1)
    bottom.text(1, knee, " context knee", color="0.3", va="bottom", fontsize=8)
    bottom.set_xlabel("loop iteration (round)")
    bottom.set_ylabel("context C_t (tokens)")
    bottom.grid(alpha=0.3)
    return fig
