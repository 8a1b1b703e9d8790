"""The figures of a run, built headless from its analysis, returned and saved as PNG and SVG.

``write_figures(analysis, out)`` rebuilds all of them from a run directory's
analysis (``opar_sim.analysis.run.analyze``) without rerunning anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

import controllers
from opar_sim.analysis.run import RunAnalysis
from opar_sim.experiment.rundir import EpisodeTrace, find_trace
from opar_sim.figures.convergence import convergence_figure
from opar_sim.figures.outcomes import outcomes_figure, pareto_figure
from opar_sim.figures.signals import (
    RASTER_EPISODES,
    most_replanning,
    phase_figure,
    pid_terms_figure,
    raster_figure,
)
from opar_sim.figures.style import save

FIGURE_DIR = "figures"

__all__ = [
    "FIGURE_DIR",
    "FigureSet",
    "build_figures",
    "convergence_figure",
    "outcomes_figure",
    "pareto_figure",
    "phase_figure",
    "pid_terms_figure",
    "raster_figure",
    "write_figures",
]


@dataclass
class FigureSet:
    """The figures of one run, by file stem."""

    figures: dict[str, Figure]

    def close(self) -> None:
        """Release the figures (pyplot keeps every open figure alive)."""
        for fig in self.figures.values():
            plt.close(fig)

    def save(self, out: Path) -> list[str]:
        """Save every figure as PNG and SVG under ``out``; return the paths."""
        out.mkdir(parents=True, exist_ok=True)
        paths: list[str] = []
        for stem, fig in self.figures.items():
            paths += save(fig, str(out / stem), svg=True)
        return paths


def _thresholds(analysis: RunAnalysis, name: str) -> tuple[float | None, float | None]:
    """The REPLAN threshold and settle band of controller ``name`` as the run configured it."""
    params: dict[str, object] = {}
    if analysis.spec is not None:
        for c in analysis.spec.controller_list():
            if c.name == name:
                params = dict(c.params)
    try:
        made = controllers.make(name, **params)
    except ValueError:
        return None, None
    replan = getattr(made, "replan_threshold", None)
    band = getattr(made, "settle_band", None)
    return (
        float(replan) if isinstance(replan, int | float) else None,
        float(band) if isinstance(band, int | float) else None,
    )


def _pid_episode(
    analysis: RunAnalysis, controller: str | None, episode: int | None
) -> EpisodeTrace | None:
    """The chosen episode, else the most-replanning kept one with an effort term.

    Without ``controller`` the controllers are tried in run order, and the
    first whose episode records PID terms gives the trace.
    """
    names = [controller] if controller else list(analysis.traces)
    for name in names:
        kept = analysis.traces.get(name, [])
        if episode is not None:
            trace = next((t for t in kept if t.episode == episode), None)
            trace = trace or find_trace(analysis.path, name, episode)
        else:
            trace = most_replanning([t for t in kept if "effort" in t.terms])
        if trace is not None and "effort" in trace.terms:
            return trace
    return None


def build_figures(
    analysis: RunAnalysis, *, controller: str | None = None, episode: int | None = None
) -> FigureSet:
    """Every figure of the run; the PID-terms figure for ``episode`` of ``controller``.

    Args:
        analysis: The run's analysis, with its kept trajectories.
        controller: The controller of the PID-terms figure (default: the first
            whose episodes record PID terms).
        episode: The episode of the PID-terms figure (default: the kept episode
            that replanned most).

    Returns:
        The convergence, signals, phase, outcomes and Pareto figures, and
        ``pid_terms`` when a controller recorded its terms.
    """
    name = analysis.spec.name if analysis.spec is not None else analysis.path.name
    n = max((m.episodes for m in analysis.controllers.values()), default=0)
    figs = {
        "convergence": convergence_figure(
            analysis.traces, f"{name}: convergence (first {min(n, _kept(analysis))} episodes)"
        ),
        "signals": raster_figure(
            analysis.traces,
            f"{name}: Reflect decisions per step (first {RASTER_EPISODES} episodes each)",
        ),
        "phase": phase_figure(analysis.traces, f"{name}: phase portrait of the estimated error"),
        "outcomes": outcomes_figure(
            analysis.controllers, f"{name}: outcomes ({n} episodes per controller)"
        ),
        "pareto": pareto_figure(analysis.controllers, f"{name}: cost against success"),
    }
    trace = _pid_episode(analysis, controller, episode)
    if trace is not None:
        replan, band = _thresholds(analysis, trace.controller)
        figs["pid_terms"] = pid_terms_figure(
            trace,
            replan,
            band,
            f"{name}: {trace.controller} terms, episode {trace.episode}",
        )
    return FigureSet(figs)


def _kept(analysis: RunAnalysis) -> int:
    return max((len(ts) for ts in analysis.traces.values()), default=0)


def write_figures(
    analysis: RunAnalysis,
    out: Path | None = None,
    *,
    controller: str | None = None,
    episode: int | None = None,
) -> list[str]:
    """Build every figure and save it under ``out`` (default: RUNDIR/figures).

    Args:
        analysis: The run's analysis.
        out: The figure directory (created if missing).
        controller: The controller of the PID-terms figure (see ``build_figures``).
        episode: The episode of the PID-terms figure.

    Returns:
        The paths written, a PNG and an SVG per figure.
    """
    target = out if out is not None else analysis.path / FIGURE_DIR
    return build_figures(analysis, controller=controller, episode=episode).save(target)
