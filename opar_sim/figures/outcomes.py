"""Outcomes per controller (stacked bars) and cost against success (Pareto front)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from opar_sim.figures.style import controller_colors, new_figure, outcome_color, outcome_order
from opar_sim.measure.controller_metrics import ControllerMetrics


def outcomes_figure(metrics: Mapping[str, ControllerMetrics], title: str) -> Figure:
    """Share of episodes per outcome, one horizontal stacked bar per controller.

    Args:
        metrics: The run's per-controller metrics, in run order.
        title: The figure's title.

    Returns:
        The figure, not yet saved (``style.save`` writes it).
    """
    names = list(metrics)
    kinds = outcome_order([k for m in metrics.values() for k in m.outcomes])
    fig, ax = new_figure(1, 1, figsize=(9, 1.6 + 0.55 * len(names)))
    left = np.zeros(len(names))
    for kind in kinds:
        counts = np.array([metrics[n].outcomes.get(kind, 0) for n in names], float)
        share = counts / np.array([max(metrics[n].episodes, 1) for n in names])
        bars = ax.barh(
            names,
            share,
            left=left,
            color=outcome_color(kind, kinds),
            label=kind,
            edgecolor="white",
            linewidth=0.6,
        )
        for name, patch in zip(names, bars.patches, strict=True):
            patch.set_gid(f"ctl--{name}--outcome-{kind}")
        labels = [f"{s:.0%}" if s >= 0.06 else "" for s in share]
        ax.bar_label(bars, labels=labels, label_type="center", fontsize=8)
        left += share
    ax.set_xlim(0, 1)
    ax.invert_yaxis()
    ax.set_xlabel("share of episodes (%)")
    ax.xaxis.set_major_formatter("{x:.0%}")
    ax.set_title(title)
    fig.legend(loc="outside lower center", ncols=min(len(kinds), 5), fontsize=8)
    return fig


def pareto_front(costs: Sequence[float], successes: Sequence[float]) -> list[int]:
    """Indices of the points no other point beats on both cost (lower) and success (higher)."""
    front = []
    for i, (c, s) in enumerate(zip(costs, successes, strict=True)):
        dominated = any(
            (c2 <= c and s2 >= s) and (c2 < c or s2 > s)
            for j, (c2, s2) in enumerate(zip(costs, successes, strict=True))
            if j != i
        )
        if not dominated:
            front.append(i)
    return sorted(front, key=lambda i: costs[i])


def achievable_front(
    names: Sequence[str],
    costs: Sequence[float],
    successes: Sequence[float],
    oracles: Collection[str] = (),
) -> list[int]:
    """The Pareto front (``pareto_front``) of the controllers not in ``oracles``, by cost.

    A law that reads the hidden state is no point a real controller can reach, so
    it neither joins the front nor pushes a real law off it.
    """
    real = [i for i, n in enumerate(names) if n not in oracles]
    return [real[i] for i in pareto_front([costs[i] for i in real], [successes[i] for i in real])]


def pareto_figure(
    metrics: Mapping[str, ControllerMetrics], title: str, oracles: Collection[str] = ()
) -> Figure:
    """Mean tokens per episode against success rate, with 95 % intervals and the Pareto front.

    A controller in ``oracles`` reads the hidden state no real law can see: it is
    drawn apart (a hollow star, "not achievable") and left out of the front, so the
    front is the best a real law achieved.

    Args:
        metrics: The run's per-controller metrics, in run order.
        title: The figure's title.
        oracles: The controllers that read the hidden state.

    Returns:
        The figure, not yet saved (``style.save`` writes it).
    """
    names = list(metrics)
    colors = controller_colors(names)
    cost = [metrics[n].tokens.mean for n in names]
    success = [metrics[n].success.rate for n in names]
    fig, ax = new_figure(1, 1, figsize=(8, 5))
    for n, c, s in zip(names, cost, success, strict=True):
        m = metrics[n]
        oracle = n in oracles
        bars = ax.errorbar(
            c,
            s,
            xerr=[[c - m.tokens.low], [m.tokens.high - c]],
            yerr=[[s - m.success.low], [m.success.high - s]],
            fmt="*" if oracle else "o",
            color=colors[n],
            mfc="white" if oracle else colors[n],
            ms=13 if oracle else 8,
            capsize=3,
            ls="none",
            alpha=0.6 if oracle else 1.0,
            label=f"{n} (reads hidden state: not achievable)" if oracle else n,
        )
        for k, artist in enumerate([*bars.lines[:1], *bars.lines[1], *bars.lines[2]]):
            artist.set_gid(f"ctl--{n}--pareto-{k}")
    front = achievable_front(names, cost, success, oracles)
    ax.step(
        [cost[i] for i in front],
        [success[i] for i in front],
        where="post",
        ls="--",
        color="0.3",
        lw=1,
        zorder=0,
    )
    ax.plot(
        [cost[i] for i in front],
        [success[i] for i in front],
        "o",
        ms=16,
        mfc="none",
        mec="0.2",
        label="achievable Pareto front (oracle excluded)" if oracles else "Pareto front",
    )
    ax.margins(x=0.15, y=0.12)
    _label_points(ax, names, cost, success)
    ax.set_xlabel("mean tokens per episode (tokens; cost)")
    ax.set_ylabel("success rate (% of episodes; Wilson 95 % interval)")
    ax.yaxis.set_major_formatter("{x:.0%}")
    ax.xaxis.set_major_formatter("{x:,.0f}")
    ax.grid(alpha=0.3)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="best")
    return fig


# label offsets in points, tried in order until a label overlaps no earlier label
_OFFSETS = [(9, 7), (9, -15), (-9, 7), (-9, -15), (9, 19), (9, -27), (-9, 19), (-9, -27)]


def _label_points(ax: Any, names: Sequence[str], xs: Sequence[float], ys: Sequence[float]) -> None:
    """Name each point, choosing for each the first offset whose text box is free."""
    ax.autoscale_view()
    to_px = ax.transData.transform
    scale = ax.figure.dpi / 72
    taken: list[tuple[float, float, float, float]] = []
    for name, x, y in zip(names, xs, ys, strict=True):
        px, py = to_px((x, y))
        width, height = 6.2 * len(name) * scale, 11 * scale
        for dx, dy in _OFFSETS:
            left = px + dx * scale if dx > 0 else px + dx * scale - width
            box = (left, py + dy * scale, left + width, py + dy * scale + height)
            if not any(_overlap(box, other) for other in taken):
                break
        taken.append(box)
        ax.annotate(
            name,
            (x, y),
            xytext=(dx, dy),
            textcoords="offset points",
            ha="left" if dx > 0 else "right",
            va="bottom",
            fontsize=9,
        )


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
