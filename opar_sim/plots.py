"""Figures, built headless and returned; callers save them.

Episodes that ended keep their final value afterwards, so each curve shows
where the population of episodes stands after k steps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure


def padded(series: Sequence[Sequence[float] | np.ndarray]) -> np.ndarray:
    """Stack ragged per-episode series, holding each one's last value."""
    length = max((len(s) for s in series), default=0)
    out = np.zeros((len(series), length + 1))
    for row, s in enumerate(series):
        values = np.concatenate(([0.0], np.asarray(s, dtype=float)))
        out[row, : len(values)] = values
        out[row, len(values) :] = values[-1]
    return out


def convergence_figure(
    progress: Mapping[str, Sequence[Sequence[float]]],
    estimate: Mapping[str, Sequence[Sequence[float]]],
    title: str,
) -> Figure:
    """True and self-estimated progress against step: median and interquartile band."""
    fig, ax = plt.subplots(figsize=(8, 4.8), layout="constrained")
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, name in enumerate(progress):
        color = colors[k % len(colors)]
        true = padded(progress[name])
        if true.shape[1] == 0:
            continue
        steps = np.arange(true.shape[1])
        q25, med, q75 = np.percentile(true, [25, 50, 75], axis=0)
        ax.fill_between(steps, q25, q75, color=color, alpha=0.2, linewidth=0)
        ax.plot(steps, med, color=color, lw=2, label=f"{name}: true progress (median, IQR)")
        est = padded(estimate.get(name, []))
        if est.shape[1]:
            ax.plot(
                np.arange(est.shape[1]),
                np.median(est, axis=0),
                color=color,
                lw=1.5,
                ls="--",
                label=f"{name}: agent's estimate δ_task (median)",
            )
    ax.axhline(1.0, color="0.4", lw=0.8, ls=":")
    ax.set_xlabel("loop iteration (step)")
    ax.set_ylabel("progress toward the goal (0–1)")
    ax.set_ylim(-0.02, 1.05)
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def save(fig: Figure, path_stem: str) -> list[str]:
    """Save a figure as PNG and SVG (and close it); return the paths written."""
    png, svg = f"{path_stem}.png", f"{path_stem}.svg"
    fig.savefig(png, dpi=110)
    # no creation date and a fixed id salt: the same figure gives the same bytes
    with plt.rc_context({"svg.hashsalt": "opar-sim"}):
        fig.savefig(svg, metadata={"Date": None})
    plt.close(fig)
    return [png, svg]
