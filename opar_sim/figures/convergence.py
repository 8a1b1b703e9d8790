"""Convergence: true and estimated progress against step and against simulated time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from opar_sim.experiment.rundir import EpisodeTrace
from opar_sim.figures.style import controller_colors, new_figure, padded

TIME_POINTS = 200


def held_on_grid(times: np.ndarray, values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """``values`` held from each sample time on (0 before the first, the last after the end)."""
    idx = np.searchsorted(times, grid, side="right") - 1
    out = np.where(idx >= 0, values[np.clip(idx, 0, None)], 0.0)
    return np.asarray(out, float)


def held_rows(
    times: Sequence[np.ndarray], values: Sequence[np.ndarray], grid: np.ndarray
) -> np.ndarray:
    """``held_on_grid`` of every episode at once: one row per (times, values) pair.

    The same numbers as stacking ``held_on_grid`` row by row (each series' times
    ascend, so the count of times at or before a grid point is ``searchsorted``'s
    index); the count is built one step column at a time, so the cost is a few
    array operations per step instead of a few numpy calls per episode (about a
    sixth of ``run``'s figure on 2,000 episodes).
    """
    lengths = np.array([len(t) for t in times], dtype=np.int64)
    width = int(lengths.max(initial=0))
    filled = np.arange(width) < lengths[:, None]
    padded_times = np.full((len(times), width), np.inf)
    padded_values = np.zeros((len(times), width))
    if width:
        padded_times[filled] = np.concatenate([np.asarray(t, float) for t in times])
        padded_values[filled] = np.concatenate([np.asarray(v, float) for v in values])
    count = np.zeros((len(times), len(grid)), dtype=np.int64)
    for column in padded_times.T:
        count += column[:, None] <= grid[None, :]
    idx = count - 1
    held = np.take_along_axis(padded_values, np.clip(idx, 0, None), axis=1) if width else idx
    return np.asarray(np.where(idx >= 0, held, 0.0), float)


HOLD_RULE = (
    "an episode that has ended is held at its final value, so each panel shows where "
    "all of its episodes stand"
)


def _band(ax: Any, x: np.ndarray, rows: np.ndarray, color: str, estimate: np.ndarray) -> None:
    q25, med, q75 = np.percentile(rows, [25, 50, 75], axis=0)
    ax.fill_between(x, q25, q75, color=color, alpha=0.22, linewidth=0)
    ax.plot(x, med, color=color, lw=2)
    ax.plot(x, np.median(estimate, axis=0), color=color, lw=1.4, ls="--")


def convergence_figure(traces: Mapping[str, Sequence[EpisodeTrace]], title: str) -> Figure:
    """Median true progress with its interquartile band, and the median estimate δ_task.

    One row of panels per controller (bands never overlap another controller's),
    left against the loop iteration, right against simulated seconds, every row on
    the same axes.  An episode that ended keeps its final value (``HOLD_RULE``,
    written on the figure), so each curve shows where the population stands.

    Args:
        traces: Per controller, the kept episodes' trajectories.
        title: The figure's title.

    Returns:
        The figure, not yet saved (``style.save`` writes it).
    """
    names = [n for n, ts in traces.items() if any(len(t) for t in ts)]
    rows = max(len(names), 1)
    fig, axes = new_figure(
        rows, 2, figsize=(12, 1.4 + 2.1 * rows), sharex="col", sharey=True, squeeze=False
    )
    colors = controller_colors(list(traces))
    t_end = max((float(t.time[-1]) for ts in traces.values() for t in ts if len(t)), default=1.0)
    grid = np.linspace(0.0, t_end, TIME_POINTS)
    for row, name in enumerate(names):
        by_step, by_time = axes[row]
        eps = [t for t in traces[name] if len(t)]
        color = colors[name]
        estimates = [np.nan_to_num(t.estimate, nan=0.0) for t in eps]
        true = padded([t.progress for t in eps])
        est = padded(estimates)
        _band(by_step, np.arange(true.shape[1]), true, color, est)
        times = [t.time for t in eps]
        true_t = held_rows(times, [t.progress for t in eps], grid)
        est_t = held_rows(times, estimates, grid)
        _band(by_time, grid, true_t, color, est_t)
        by_step.set_gid(f"ctl--{name}--conv-step")
        by_time.set_gid(f"ctl--{name}--conv-time")
        by_step.set_ylabel(f"{name} (n={len(eps)})\nprogress (0–1)", fontsize=9)
    for ax in axes.ravel():
        ax.axhline(1.0, color="0.4", lw=0.8, ls=":")
        ax.set_ylim(-0.02, 1.05)
        ax.grid(alpha=0.3)
    axes[-1][0].set_xlabel("loop iteration (step)")
    axes[-1][0].xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[-1][1].set_xlabel("simulated time (s)")
    axes[0][0].set_title("against loop iterations", fontsize=10)
    axes[0][1].set_title("against simulated time", fontsize=10)
    handles = [
        Line2D([], [], color="0.2", lw=2, label="true progress p (hidden): median"),
        Patch(color="0.2", alpha=0.22, label="p: interquartile band"),
        Line2D([], [], color="0.2", lw=1.4, ls="--", label="agent's estimate δ_task: median"),
    ]
    fig.suptitle(f"{title}\n{HOLD_RULE}", fontsize=11)
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8)
    return fig
