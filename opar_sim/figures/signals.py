"""The control signal: raster of decisions, PID terms of one episode, phase portrait."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from opar_sim.figures import RASTER_EPISODES  # defined where no matplotlib is imported
from opar_sim.figures.style import SIGNAL_COLORS, controller_colors, new_figure
from opar_sim.rundir import EpisodeTrace

PHASE_EPISODES = 8
_CODES = {"continue": 1, "replan": 2, "terminate": 3}


def signal_matrix(traces: Sequence[EpisodeTrace], width: int) -> np.ndarray:
    """Episodes × steps of signal codes: 0 no step, 1 CONTINUE, 2 REPLAN, 3 TERMINATE."""
    out = np.zeros((len(traces), width), dtype=int)
    for row, t in enumerate(traces):
        for col, signal in enumerate(t.signals[:width]):
            out[row, col] = _CODES.get(signal or "", 0)
    return out


def raster_figure(traces: Mapping[str, Sequence[EpisodeTrace]], title: str) -> Figure:
    """Episodes × steps coloured by the decision: thrashing shows as dense REPLAN stripes.

    Args:
        traces: Per controller, the kept episodes' trajectories; the first ``RASTER_EPISODES``
            of each are drawn.
        title: The figure's title.

    Returns:
        The figure, not yet saved (``style.save`` writes it).
    """
    names = [n for n, ts in traces.items() if ts]
    width = max((len(t) for n in names for t in traces[n]), default=1)
    fig, axes = new_figure(
        len(names) or 1, 1, figsize=(9, 1.0 + 1.7 * max(len(names), 1)), sharex=True
    )
    axes = np.atleast_1d(axes)
    cmap = ListedColormap(["white", *SIGNAL_COLORS.values()])
    for ax, name in zip(axes, names, strict=False):
        shown = list(traces[name])[:RASTER_EPISODES]
        matrix = signal_matrix(shown, width)
        ax.imshow(
            matrix,
            aspect="auto",
            cmap=cmap,
            vmin=0,
            vmax=3,
            interpolation="nearest",
            extent=(0.5, width + 0.5, len(shown) - 0.5, -0.5),
        )
        ax.set_ylabel(f"{name}\nepisode (row)", fontsize=9)
        ax.set_gid(f"raster--{name}")
    axes[-1].set_xlabel("loop iteration (step)")
    axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))
    handles = [Patch(color=c, label=s.upper()) for s, c in SIGNAL_COLORS.items()]
    handles.append(Patch(facecolor="white", edgecolor="0.5", label="episode over"))
    fig.legend(handles=handles, loc="outside lower center", ncols=4, fontsize=8)
    fig.suptitle(title)
    return fig


def most_replanning(traces: Sequence[EpisodeTrace]) -> EpisodeTrace | None:
    """The episode with the most REPLAN decisions (the first on ties)."""
    best: EpisodeTrace | None = None
    for t in traces:
        if best is None or t.signals.count("replan") > best.signals.count("replan"):
            best = t
    return best


def pid_terms_figure(
    trace: EpisodeTrace, replan_threshold: float | None, settle_band: float | None, title: str
) -> Figure:
    """Error and progress (top); P, I, D and the effort against the thresholds (bottom).

    Every step where the controller replanned or terminated is marked.

    Args:
        trace: One episode with its recorded PID terms.
        replan_threshold: The effort u at or above which the controller replans
            (None: not drawn).
        settle_band: The error inside which the loop counts as settled (None: not
            drawn).
        title: The figure's title.

    Returns:
        The figure, not yet saved (``style.save`` writes it).
    """
    fig, (top, bottom) = new_figure(2, 1, figsize=(11, 6.4), sharex=True)
    steps = trace.step
    error = trace.terms.get("error", 1.0 - np.nan_to_num(trace.estimate))
    top.plot(steps, error, "o-", color="C3", label="error e = 1 − δ_task")
    top.plot(steps, 1.0 - trace.progress, "s:", color="0.4", label="true error 1 − progress")
    if "lag" in trace.terms:  # what a PID with pace > 0 acts on
        top.plot(steps, trace.terms["lag"], "^-", color="C2", ms=3, label="pace err")
    if settle_band is not None:
        top.axhspan(
            0, settle_band, color="C2", alpha=0.12, label=f"settle band (e ≤ {settle_band})"
        )
    top.set_ylabel("error (0–1)")
    top.set_ylim(-0.05, 1.05)
    for name, style in (("p", "C0"), ("i", "C1"), ("d", "C4"), ("effort", "k")):
        if name in trace.terms:
            label = {"p": "P", "i": "I", "d": "D", "effort": "effort u = P + I + D"}[name]
            bottom.plot(
                steps,
                trace.terms[name],
                "o-",
                color=style,
                lw=2.2 if name == "effort" else 1.3,
                ms=3,
                label=label,
            )
    if replan_threshold is not None:
        bottom.axhline(
            replan_threshold,
            color="C3",
            ls="--",
            lw=1.2,
            label=f"REPLAN threshold ({replan_threshold:g})",
        )
    bottom.set_ylabel("term value (dimensionless)")
    bottom.set_xlabel("loop iteration (step)")
    for ax in (top, bottom):
        for s, signal in zip(steps, trace.signals, strict=True):
            if signal in ("replan", "terminate"):
                ax.axvline(s, color=SIGNAL_COLORS[signal], alpha=0.35, lw=3)
        ax.grid(alpha=0.3)
    marks = [
        Line2D([], [], color=SIGNAL_COLORS["replan"], alpha=0.5, lw=3, label="REPLAN decided"),
        Line2D([], [], color=SIGNAL_COLORS["terminate"], alpha=0.5, lw=3, label="TERMINATE"),
    ]
    top.legend(
        handles=[*top.get_legend_handles_labels()[0], *marks],
        fontsize=8,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
    )
    bottom.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    bottom.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.suptitle(title)
    return fig


def _phase_points(t: EpisodeTrace) -> tuple[np.ndarray, np.ndarray]:
    """(e, Δe) per step of one episode: the estimated error and its change since the last step."""
    e = np.concatenate(([1.0], 1.0 - np.nan_to_num(t.estimate)))
    return e[1:], np.diff(e)


def median_path(traces: Sequence[EpisodeTrace]) -> tuple[np.ndarray, np.ndarray]:
    """The median (e, Δe) at each step over the episodes still running at that step.

    Args:
        traces: The episodes.

    Returns:
        Two arrays over steps 1, 2, ...; a step is kept while at least half of the
        episodes are still running, so the tail is not the median of a few survivors.
    """
    points = [_phase_points(t) for t in traces if len(t)]
    if not points:
        return np.zeros(0), np.zeros(0)
    length = max(len(e) for e, _ in points)
    es, des = [], []
    for k in range(length):
        at = [(e[k], de[k]) for e, de in points if len(e) > k]
        if 2 * len(at) < len(points):
            break
        es.append(float(np.median([a for a, _ in at])))
        des.append(float(np.median([b for _, b in at])))
    return np.array(es), np.array(des)


def _arrows(ax: Any, x: np.ndarray, y: np.ndarray, color: str, alpha: float, width: float) -> Any:
    """Arrows from each point to the next: the direction of travel (None: fewer than 2)."""
    if len(x) < 2:
        return None
    return ax.quiver(
        x[:-1],
        y[:-1],
        np.diff(x),
        np.diff(y),
        angles="xy",
        scale_units="xy",
        scale=1,
        color=color,
        alpha=alpha,
        width=width,
        headwidth=4,
        headlength=5,
    )


def phase_figure(traces: Mapping[str, Sequence[EpisodeTrace]], title: str) -> Figure:
    """The estimated error e against its trend Δe per step: every law on one panel.

    Every law reads the same agent's estimate, so panel by panel their portraits look
    alike; drawn together, what a law changes shows: its median path (coloured arrows,
    while at least half its episodes still run) and where it stops (its coloured X: the
    median of its episodes' last steps).  Grey hexagons are the density of every kept
    step.  With one law, its first ``PHASE_EPISODES`` episodes are drawn too, from a
    green start to a black cross.  A converging loop runs from the right into the origin;
    a thrashing one circles; a law that stops early stops right of the origin.

    Args:
        traces: Per controller, the kept episodes' trajectories.
        title: The figure's title.

    Returns:
        The figure, not yet saved (``style.save`` writes it).
    """
    names = [n for n, ts in traces.items() if any(len(t) for t in ts)]
    fig, ax = new_figure(1, 1, figsize=(9, 6.2))
    colors = controller_colors(list(traces))
    kept = {name: [t for t in traces[name] if len(t)] for name in names}
    points = [_phase_points(t) for ts in kept.values() for t in ts]
    if points:
        ax.hexbin(
            np.concatenate([e for e, _ in points]),
            np.concatenate([de for _, de in points]),
            gridsize=26,
            cmap="Greys",
            bins="log",
            mincnt=1,
            alpha=0.45,
            extent=(-0.05, 1.05, -1.05, 1.05),
            linewidths=0,
        )
    handles: list[Any] = []
    for name in names:
        if len(names) == 1:
            for t in kept[name][:PHASE_EPISODES]:
                e, de = _phase_points(t)
                _arrows(ax, e, de, colors[name], 0.45, 0.003)
                ax.plot(e[0], de[0], "o", color="#31a354", ms=5, mec="white", mew=0.6)
                ax.plot(e[-1], de[-1], "x", color="k", ms=5)
        me, mde = median_path(kept[name])
        median = _arrows(ax, me, mde, colors[name], 0.95, 0.007)
        if median is not None:  # the report highlights a law's artists by this id
            median.set_gid(f"ctl--{name}--phase")
        last = np.array([[p[0][-1], p[1][-1]] for p in map(_phase_points, kept[name])])
        stop = np.median(last, axis=0)
        ax.plot(*stop, "X", color=colors[name], ms=13, mec="k", mew=0.8, zorder=5)[0].set_gid(
            f"ctl--{name}--phase-stop"
        )
        handles.append(
            Line2D(
                [],
                [],
                color=colors[name],
                marker="X",
                mec="k",
                ms=9,
                lw=2.5,
                label=f"{name} ({len(kept[name])} episodes): stops at median e = {stop[0]:.2f}",
            )
        )
    ax.set_gid("phase")
    ax.axhline(0, color="0.5", lw=0.6)
    ax.axvline(0, color="0.5", lw=0.6)
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-1.05, 1.05)
    ax.set_xlabel("error e = 1 − δ_task (0–1)")
    ax.set_ylabel("error trend Δe (per loop iteration)")
    ax.grid(alpha=0.3)
    handles.append(Patch(color="0.6", label="density of all steps (log)"))
    if len(names) == 1:
        handles += [
            Line2D([], [], color="#31a354", marker="o", ls="", label="first step"),
            Line2D([], [], color="k", marker="x", ls="", label="last step"),
        ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.suptitle(
        f"{title}\narrows: each law's median path; X: where it stops (the laws share the "
        "agent's estimate: where they stop is what differs)",
        fontsize=10,
    )
    return fig
