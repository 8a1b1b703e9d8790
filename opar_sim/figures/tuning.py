"""Figures of searches over a spec: sweep grids, tuning history and landscape, the relay test."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure


def sweep_figure(rows: Sequence[Mapping[str, Any]], title: str) -> Figure:
    """Success rate and mean tokens over a sweep: lines for one axis, heat maps for two.

    Heat maps need two numeric axes and a single controller; any other grid is
    drawn as grouped bars, one per point and controller.

    Args:
        rows: The sweep's points, as in ``sweep_summary.json`` (``assignment``
            and per-controller ``summary``).
        title: The figure's title.

    Returns:
        The figure, not yet saved (``style.save`` writes it).
    """
    paths = list(rows[0]["assignment"]) if rows else []
    controllers = list(rows[0]["summary"]) if rows else []
    numeric = all(
        isinstance(v, int | float) and not isinstance(v, bool)
        for row in rows
        for v in row["assignment"].values()
    )
    if len(paths) == 2 and numeric and len(controllers) == 1:
        return _sweep_heatmaps(rows, paths, controllers[0], title)
    fig, (ax_s, ax_t) = plt.subplots(1, 2, figsize=(12, 4.4), layout="constrained")
    labels = [
        ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in r["assignment"].items()) for r in rows
    ]
    line = len(paths) == 1 and numeric
    x = np.array([float(r["assignment"][paths[0]]) for r in rows]) if line else np.arange(len(rows))
    width = 0.8 / max(1, len(controllers))
    for k, name in enumerate(controllers):
        rate = np.array([r["summary"][name]["success_rate"] for r in rows])
        lo = np.array([r["summary"][name]["success_ci95"][0] for r in rows])
        hi = np.array([r["summary"][name]["success_ci95"][1] for r in rows])
        below, above = np.clip(rate - lo, 0, None), np.clip(hi - rate, 0, None)
        tokens = [r["summary"][name]["mean_tokens"] for r in rows]
        if line:
            ax_s.errorbar(x, rate, yerr=[below, above], marker="o", capsize=3, label=name)
            ax_t.plot(x, tokens, marker="o", label=name)
        else:  # categorical points: grouped bars, one colour per controller
            at = x - 0.4 + width * (k + 0.5)
            ax_s.bar(at, rate, width, yerr=[below, above], capsize=2, label=name)
            ax_t.bar(at, tokens, width, label=name)
    for ax in (ax_s, ax_t):
        if line:
            ax.set_xlabel(paths[0])
        else:
            ax.set_xticks(
                x,
                labels,
                rotation=20 if len(rows) > 3 else 0,
                ha="right" if len(rows) > 3 else "center",
                fontsize=8,
            )
        ax.grid(alpha=0.3, axis="y")
    handles, names = ax_s.get_legend_handles_labels()
    fig.legend(handles, names, loc="outside right center", fontsize=8)
    ax_s.set_ylabel("success rate (95% CI)")
    ax_s.set_ylim(0, 1.02)
    ax_t.set_ylabel("mean tokens per episode")
    fig.suptitle(title)
    return fig


def _sweep_heatmaps(
    rows: Sequence[Mapping[str, Any]], paths: list[str], controller: str, title: str
) -> Figure:
    xs = sorted({float(r["assignment"][paths[0]]) for r in rows})
    ys = sorted({float(r["assignment"][paths[1]]) for r in rows})
    success = np.full((len(ys), len(xs)), np.nan)
    tokens = np.full((len(ys), len(xs)), np.nan)
    for r in rows:
        i = ys.index(float(r["assignment"][paths[1]]))
        j = xs.index(float(r["assignment"][paths[0]]))
        success[i, j] = r["summary"][controller]["success_rate"]
        tokens[i, j] = r["summary"][controller]["mean_tokens"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), layout="constrained")
    for ax, grid_, label, cmap in (
        (axes[0], success, "success rate", "viridis"),
        (axes[1], tokens, "mean tokens per episode", "magma"),
    ):
        image = ax.imshow(grid_, origin="lower", cmap=cmap, aspect="auto")
        ax.set_xticks(range(len(xs)), [f"{v:.3g}" for v in xs])
        ax.set_yticks(range(len(ys)), [f"{v:.3g}" for v in ys])
        ax.set_xlabel(paths[0])
        ax.set_ylabel(paths[1])
        lo, hi = np.nanmin(grid_), np.nanmax(grid_)
        for i in range(len(ys)):
            for j in range(len(xs)):
                value = grid_[i, j]
                text = f"{value:.0%}" if grid_ is success else f"{value / 1000:.0f}k"
                bright = (value - lo) / (hi - lo) > 0.6 if hi > lo else False
                ax.text(
                    j, i, text, ha="center", va="center", fontsize=8, color="k" if bright else "w"
                )
        fig.colorbar(image, ax=ax, label=label)
    fig.suptitle(f"{title} ({controller})")
    return fig


def tune_history(
    numbers: Sequence[int],
    scores: Sequence[float],
    title: str,
    current: tuple[float, str] | None = None,
) -> Figure:
    """Each trial's objective, the best so far, and the current gains' as a line.

    Args:
        numbers: The trial numbers.
        scores: Each trial's training objective.
        title: The figure's title.
        current: The spec's current gains' objective and where it was measured (a line
            the search has to get below), or None.

    Returns:
        The figure, not yet saved (``style.save`` writes it).
    """
    fig, ax = plt.subplots(figsize=(8, 4.2), layout="constrained")
    ax.scatter(numbers, scores, s=14, color="tab:blue", alpha=0.7, label="trial objective")
    ax.step(
        numbers,
        np.minimum.accumulate(np.asarray(scores)),
        where="post",
        color="tab:red",
        label="best so far",
    )
    if current is not None:
        value, where = current
        ax.axhline(value, color="0.3", ls="--", lw=1.2, label=f"current gains ({where})")
    ax.set_xlabel("trial")
    ax.set_ylabel("objective (lower is better)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    return fig


def tune_landscape(
    x: Sequence[float],
    y: Sequence[float],
    scores: Sequence[float],
    names: tuple[str, str],
    best: tuple[float, float],
    title: str,
    log: tuple[bool, bool] = (False, False),
) -> Figure:
    """The objective over the two most important parameters, one point per trial.

    An axis is logarithmic only where the search space is (``log``): a parameter searched
    linearly is drawn on a linear axis.

    Args:
        x: Each trial's value of the first parameter.
        y: Each trial's value of the second parameter.
        scores: Each trial's objective.
        names: The two parameters' dotted paths, for the axis labels.
        best: The best trial's values, marked with a star.
        title: The figure's title.
        log: Whether each parameter is searched on a log scale.

    Returns:
        The figure, not yet saved (``style.save`` writes it).
    """
    fig, ax = plt.subplots(figsize=(7, 5), layout="constrained")
    points = ax.scatter(x, y, c=scores, cmap="viridis_r", s=36, edgecolors="k", linewidths=0.3)
    ax.scatter(
        [best[0]], [best[1]], marker="*", s=260, color="tab:red", edgecolors="k", label="best"
    )
    fig.colorbar(points, ax=ax, label="objective (lower is better)")
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])
    if log[0] and min(x) > 0:
        ax.set_xscale("log")
    if log[1] and min(y) > 0:
        ax.set_yscale("log")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="best")
    return fig


def relay_figure(
    outputs: Sequence[float],
    inputs: Sequence[float],
    responses: Mapping[str, Sequence[float]],
    title: str,
) -> Figure:
    """The relay test's limit cycle, and set-point responses under each set of PID gains.

    Args:
        outputs: The plant's outputs during the relay test (the first 121 are drawn).
        inputs: The relay's inputs (the first 120 are drawn).
        responses: Per set of gains, the plant's closed-loop output.
        title: The figure's title.

    Returns:
        The figure, not yet saved (``style.save`` writes it).
    """
    fig, (ax_r, ax_c) = plt.subplots(1, 2, figsize=(12, 4.4), layout="constrained")
    outputs, inputs = outputs[:121], inputs[:120]  # the first cycles are enough to see
    k = np.arange(len(outputs))
    ax_r.plot(k, outputs, lw=1.2, label="output y")
    ax_r.step(
        np.arange(len(inputs)), inputs, where="post", lw=0.8, alpha=0.7, label="relay input u"
    )
    ax_r.axhline(1.0, color="0.4", ls=":", lw=0.8)
    ax_r.set_xlabel("sample")
    ax_r.set_ylabel("plant output / input")
    ax_r.set_title("relay test: limit cycle at the ultimate period")
    ax_r.legend(fontsize=8)
    ax_r.grid(alpha=0.3)
    for name, ys in responses.items():
        ax_c.plot(np.arange(len(ys)), ys, lw=1.5, label=name)
    ax_c.axhline(1.0, color="0.4", ls=":", lw=0.8)
    ax_c.set_xlabel("sample")
    ax_c.set_ylabel("plant output y (set-point 1.0)")
    ax_c.set_title("closed loop with a load step (held-out seed)")
    ax_c.legend(fontsize=8)
    ax_c.grid(alpha=0.3)
    fig.suptitle(title)
    return fig


def shootout_figure(
    names: Sequence[str],
    rates: Sequence[float],
    intervals: Sequence[tuple[float, float]],
    ranks: Sequence[int],
    title: str,
    interval: str = "95% Wilson interval",
) -> Figure:
    """Held-out success with its interval per contender, coloured by rank (ties alike).

    Args:
        names: The contenders, best first.
        rates: Their held-out success rates.
        intervals: Their (low, high) success intervals.
        ranks: Their tie-aware ranks (equal ranks share a colour).
        title: The figure's title.
        interval: What the bars are, for the axis label.

    Returns:
        The figure, not yet saved (``style.save`` writes it).
    """
    fig, ax = plt.subplots(figsize=(7.5, 0.5 * len(names) + 1.6), layout="constrained")
    y = np.arange(len(names))[::-1]
    rate = np.asarray(rates, dtype=float)
    lo = np.asarray([i[0] for i in intervals], dtype=float)
    hi = np.asarray([i[1] for i in intervals], dtype=float)
    palette = plt.get_cmap("tab10")
    for k, rank in enumerate(sorted(set(ranks))):
        pick = np.asarray([r == rank for r in ranks])
        ax.errorbar(
            rate[pick],
            y[pick],
            xerr=[np.clip(rate - lo, 0, None)[pick], np.clip(hi - rate, 0, None)[pick]],
            fmt="o",
            capsize=4,
            color=palette(k % 10),
            label=f"rank {rank}",
        )
    ax.set_yticks(y, list(names))
    ax.set_xlabel(f"held-out success ({interval})")
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    return fig
