"""Figures of measured stopping errors: ``sprt``'s false-abandon curve, the detectors' PR plane."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from opar_sim.figures.style import new_figure


def abandon_figure(
    curves: Mapping[str, tuple[Sequence[float], Sequence[tuple[float, float]]]],
    rate: float,
    title: str,
) -> Figure:
    """The share of feasible episodes falsely given up by step t, with Clopper–Pearson bands.

    Args:
        curves: Per agent label, (share by step, (low, high) by step).
        rate: The false-abandon rate asked for, drawn as a line.
        title: The figure's title.

    Returns:
        The figure.
    """
    fig, ax = new_figure(1, 1, figsize=(6.4, 4.0))
    for label, (share, band) in curves.items():
        t = np.arange(1, len(share) + 1)
        lows = [b[0] for b in band]
        highs = [b[1] for b in band]
        (line,) = ax.step(t, share, where="post", label=label)
        ax.fill_between(t, lows, highs, step="post", alpha=0.2, color=line.get_color())
    ax.axhline(rate, color="#de2d26", linestyle="--", label=f"β = {rate:g}")
    ax.set_xlabel("step t")
    ax.set_ylabel("false abandons by step t (share of feasible episodes)")
    ax.set_title(title)
    ax.legend(loc="upper left", fontsize="small")
    return fig


def precision_recall_figure(
    points: Mapping[str, Sequence[tuple[float, float]]], title: str
) -> Figure:
    """Each detector's (recall, precision) over its thresholds, one line per detector.

    Args:
        points: Per detector, (recall, precision) at each threshold, in threshold order.
        title: The figure's title.

    Returns:
        The figure.
    """
    fig, ax = new_figure(1, 1, figsize=(6.0, 4.6))
    for name, pts in points.items():
        if not pts:
            continue
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=name)
    ax.set_xlim(0.0, 1.02)
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("recall (stuck spells detected)")
    ax.set_ylabel("precision (alarms raised while stuck)")
    ax.set_title(title)
    ax.legend(loc="lower left", fontsize="small")
    return fig
