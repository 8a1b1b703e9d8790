"""The stopping frontier: successes kept against cost saved, one point per law."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from opar_sim.figures.style import new_figure, save
from opar_sim.traces.stopping import LawResult


def frontier_figure(results: Sequence[LawResult], out: Path, title: str) -> Path:
    """Draw each law's share of successes kept against the tool calls it saves on failures.

    Args:
        results: The laws' replay results (``stopping.evaluate``).
        out: The PNG file to write (its suffix is replaced by .png).
        title: The figure's title (the run).

    Returns:
        The PNG written.
    """
    fig, ax = new_figure(1, 1, figsize=(7.5, 5.0))
    for r in results:
        x, y = r.calls_saved, r.kept_share
        ax.errorbar(
            x.mean,
            y.mean,
            xerr=[[x.mean - x.low], [x.high - x.mean]],
            yerr=[[y.mean - y.low], [y.high - y.mean]],
            fmt="o",
            capsize=3,
            alpha=0.8,
        )
        ax.annotate(r.law, (x.mean, y.mean), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xlabel("tool calls saved on failed runs (share, 95 % task-bootstrap interval)")
    ax.set_ylabel("successes kept (share of recorded successes)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    return Path(save(fig, str(out.with_suffix("")))[0])
