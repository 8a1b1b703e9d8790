"""Convergence: true and estimated progress against step and against simulated time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from opar_sim.figures.style import controller_colors, new_figure, padded
from opar_sim.rundir import EpisodeTrace

TIME_POINTS = 200


def held_on_grid(times: np.ndarray, values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """``values`` held from each sample time on (0 before the first, the last after the end)."""
    idx = np.searchsorted(times, grid, side="right") - 1
    out = np.where(idx >= 0, values[np.clip(idx, 0, None)], 0.0)
    return np.asarray(out, float)


def held_index(times: Sequence[np.ndarray], grid: np.ndarray) -> np.ndarray:
    """For every episode and grid point, where ``held_on_grid`` takes its value from.

    The episodes' samples are numbered one after another (episode 0's first, ...);
    entry (e, j) is the number of episode e's last sample at or before ``grid[j]``,
    or −1 before its first.  Each series' times ascend and the grid ascends, so a
    sample counts at grid point j exactly when it is at or before it, as in
    ``held_on_grid``'s ``searchsorted``: one ``searchsorted`` of all samples into the
    grid and a cumulative count replace two numpy calls per episode (``run``'s
    figure draws up to 2,000 episodes per controller).

    Args:
        times: Per episode, its sample times (ascending).
        grid: The grid (ascending).

    Returns:
        An integer array, episodes × grid points.
    """
    n, points = len(times), len(grid)
    lengths = np.array([len(t) for t in times], dtype=np.int64)
    if n == 0 or not lengths.any():
        return np.full((n, points), -1, dtype=np.int64)
    flat = np.concatenate([np.asarray(t, float) for t in times])
    rows = np.repeat(np.arange(n), lengths)
    first = np.searchsorted(grid, flat, side="left")  # the first grid point at or after
    counts = np.bincount(rows * (points + 1) + first, minlength=n * (points + 1))
    seen = np.cumsum(counts.reshape(n, points + 1)[:, :points], axis=1)
    starts = np.cumsum(lengths) - lengths
    return np.where(seen > 0, starts[:, None] + seen - 1, -1)


def held_values(index: np.ndarray, values: Sequence[np.ndarray]) -> np.ndarray:
    """The values ``held_index`` points at, 0 before an episode's first sample.

    Args:
        index: ``held_index`` of the episodes' times.
        values: Per episode, its values (as long as its times).

    Returns:
        A float array, episodes × grid points.
    """
    if not len(values):
        return np.zeros(index.shape)
    flat = np.concatenate([np.asarray(v, float) for v in values] + [np.zeros(1)])
    return np.asarray(np.where(index >= 0, flat[np.maximum(index, 0)], 0.0), float)


def held_rows(
    times: Sequence[np.ndarray], values: Sequence[np.ndarray], grid: np.ndarray
) -> np.ndarray:
    """``held_on_grid`` of every episode at once: one row per (times, values) pair.

    Args:
        times: Per episode, its sample times (ascending).
        values: Per episode, its values.
        grid: The grid (ascending).

    Returns:
        The same numbers as stacking ``held_on_grid`` row by row.
    """
    return held_values(held_index(times, grid), values)


HOLD_RULE = (
    "an episode that has ended is held at its final value, so each panel shows where "
    "all of its episodes stand"
)
# how to read the figure, on it: the lesson, and the one feature that looks like a bug
CAPTION = (
    "how to read it: where the dashed estimate runs above the solid truth the agent is "
    "over-confident, and a law that stops on its estimate stops too early"
)
DIP_NOTE = (
    "the median true progress can fall: a REPLAN that starts a new search wipes the "
    "shortlist found so far"
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
        # NaN estimates to 0 in one call over all episodes, then split back per episode
        ends = np.cumsum([len(t) for t in eps])[:-1]
        flat = np.nan_to_num(np.concatenate([t.estimate for t in eps]), nan=0.0)
        estimates = np.split(flat, ends)
        progress = [t.progress for t in eps]
        true = padded(progress)
        est = padded(estimates)
        _band(by_step, np.arange(true.shape[1]), true, color, est)
        at = held_index([t.time for t in eps], grid)  # shared by both series
        true_t = held_values(at, progress)
        est_t = held_values(at, estimates)
        _band(by_time, grid, true_t, color, est_t)
        by_step.set_gid(f"ctl--{name}--conv-step")
        by_time.set_gid(f"ctl--{name}--conv-time")
        by_step.set_ylabel("progress (0–1)", fontsize=9)
        by_step.set_title(f"{name}: {len(eps)} episodes", loc="left", fontsize=9)
    for ax in axes.ravel():
        ax.axhline(1.0, color="0.4", lw=0.8, ls=":")
        ax.set_ylim(-0.02, 1.05)
        ax.grid(alpha=0.3)
    axes[-1][0].set_xlabel("loop iteration (step)")
    axes[-1][0].xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[-1][1].set_xlabel("simulated time (s)")
    axes[0][0].set_title("against loop iterations", fontsize=10, loc="right")
    axes[0][1].set_title("against simulated time", fontsize=10, loc="right")
    handles = [
        Line2D([], [], color="0.2", lw=2, label="true progress (hidden): median"),
        Patch(color="0.2", alpha=0.22, label="true progress: interquartile band"),
        Line2D([], [], color="0.2", lw=1.4, ls="--", label="agent's estimate δ_task: median"),
    ]
    fig.suptitle(f"{title}\n{CAPTION}", fontsize=11)
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncols=3,
        fontsize=8,
        title=f"{HOLD_RULE}; {DIP_NOTE}",
        title_fontsize=8,
    )
    return fig
