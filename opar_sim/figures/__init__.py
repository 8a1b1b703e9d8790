"""The figures of a run, built headless from its analysis, returned and saved as PNG and SVG.

``write_figures(analysis, out)`` rebuilds all of them from a run directory's
analysis (``opar_sim.measure.run.analyze``) without rerunning anything.

Importing this package does not import matplotlib: the modules that draw
(``convergence``, ``signals``, ...) are imported by the functions that draw,
and their figure functions are re-exported here on first use.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opar_sim.measure.run import RunAnalysis
from opar_sim.rundir import EpisodeTrace, file_stem, find_trace, read_json, write_json
from opar_sim.spec.laws import law_settings

if TYPE_CHECKING:
    from matplotlib.figure import Figure

RASTER_EPISODES = 40  # episodes per controller in the signal raster

# figure function -> the module that draws it (imported on first use)
_DRAWN_BY = {
    "convergence_figure": "convergence",
    "outcomes_figure": "outcomes",
    "pareto_figure": "outcomes",
    "phase_figure": "signals",
    "pid_terms_figure": "signals",
    "raster_figure": "signals",
}


def __getattr__(name: str) -> Any:
    if name in _DRAWN_BY:
        module = importlib.import_module(f"opar_sim.figures.{_DRAWN_BY[name]}")
        return getattr(module, name)
    raise AttributeError(f"module 'opar_sim.figures' has no attribute {name!r}")


FIGURE_DIR = "figures"

CAPTIONS = {
    "convergence": "One row per controller. Solid: median true (hidden) progress p, shaded: "
    "its interquartile band; dashed: the median of the agent's own estimate δ_task; left "
    "against loop iterations, right against simulated seconds. An episode that has ended is "
    "held at its final value. Where the dashed line runs above the solid one the agent "
    "believes it is further along than it is.",
    "signals": "Each row is an episode (the first 40 per controller), each column a loop "
    "iteration, coloured by the Reflect decision. Dense REPLAN stripes are thrashing (a relay "
    "limit cycle); an early TERMINATE in an episode that failed is a premature stop. Click a "
    "row to open that episode's trace.",
    "pid_terms": "One episode of a controller with an effort term: the error it saw "
    "(1 − δ_task) and the true error 1 − p (top, 0–1); P, I, D and the effort u against the "
    "REPLAN threshold (bottom, dimensionless).",
    "phase": "The estimated error e = 1 − δ_task (0–1) against its change Δe per loop "
    "iteration, every law on one panel. Grey: density of all steps; coloured arrows: each "
    "law's median path; X: the median of its last steps, where it stops. Converging loops "
    "run into the origin, oscillating ones circle, a law that stops early stops right of it.",
    "outcomes": "Outcomes judged from the hidden ground truth, as a share of episodes (%).",
    "pareto": "Mean tokens per episode (cost) against success rate (%), with 95 % intervals. "
    "The ringed controllers form the achievable front: no other real law beats them on both. "
    "A controller that reads the hidden state (the oracle, hollow star) is drawn apart and "
    "left out of the front.",
}
"""One caption line per figure, shown under it in the report."""

__all__ = [
    "CAPTIONS",
    "FIGURE_DIR",
    "INDEX_FILE",
    "FigureSet",
    "build_figures",
    "convergence_figure",
    "outcomes_figure",
    "pareto_figure",
    "phase_figure",
    "pid_terms_figure",
    "raster_figure",
    "read_index",
    "reads_truth",
    "thresholds",
    "write_figures",
]


INDEX_FILE = "figures.json"
"""Beside the figures: what the report needs to make them interactive (raster rows and boxes)."""


@dataclass
class FigureSet:
    """The figures of one run, by file stem, and what the report needs to read them.

    ``rows`` holds, per controller, the (episode, trial, attempt) of each row of
    the signal raster, top to bottom; ``save`` adds each raster panel's box in
    figure fractions (x0, y0, width, height) and writes both to ``INDEX_FILE``.
    """

    figures: dict[str, Figure]
    rows: dict[str, list[list[int]]] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    def close(self) -> None:
        """Release the figures (pyplot keeps every open figure alive)."""
        import matplotlib.pyplot as plt

        for fig in self.figures.values():
            plt.close(fig)

    def save(self, out: Path) -> list[str]:
        """Save every figure as PNG and SVG under ``out``; return the paths."""
        from opar_sim.figures.style import save

        out.mkdir(parents=True, exist_ok=True)
        paths: list[str] = []
        boxes: dict[str, list[float]] = {}
        for stem, fig in self.figures.items():
            paths += save(fig, str(out / stem), svg=True)  # drawn: the layout is final
            for ax in fig.axes:
                gid = ax.get_gid() or ""
                if gid.startswith("raster--"):
                    boxes[gid.removeprefix("raster--")] = [
                        round(float(v), 5) for v in ax.get_position().bounds
                    ]
        index = {
            "figures": list(self.figures),
            "captions": {stem: CAPTIONS.get(stem, "") for stem in self.figures},
            "raster": {n: {"rows": r, "box": boxes.get(n)} for n, r in self.rows.items()},
            "options": self.options,
        }
        write_json(out / INDEX_FILE, index)
        return paths


def reads_truth(analysis: RunAnalysis, name: str) -> bool:
    """Whether controller ``name`` reads the hidden state (the oracle): no real law can.

    Read from the run's spec and the law's declaration (``spec.laws``); a law
    the registry does not know counts as the oracle only by its name.
    """
    settings = law_settings(analysis.spec, name)
    return settings.reads_truth if settings is not None else name == "oracle"


def thresholds(analysis: RunAnalysis, name: str) -> tuple[float | None, float | None]:
    """The REPLAN threshold and settle band of controller ``name`` as the run configured it.

    Read from the run's spec, the law's declared defaults filling what it leaves
    out (``spec.laws``): no controller is built.  (None, None) for a law without
    them, or one the registry does not know.
    """
    settings = law_settings(analysis.spec, name)
    if settings is None:
        return None, None
    return settings.number("replan_threshold"), settings.number("settle_band")


def _pid_episode(
    analysis: RunAnalysis, controller: str | None, episode: int | None
) -> EpisodeTrace | None:
    """The chosen episode, else the most-replanning kept one with an effort term.

    Without ``controller`` the controllers are tried in run order, and the
    first whose episode records PID terms gives the trace.
    """
    from opar_sim.figures.signals import most_replanning

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
    from opar_sim.figures.convergence import convergence_figure
    from opar_sim.figures.outcomes import outcomes_figure, pareto_figure
    from opar_sim.figures.signals import phase_figure, pid_terms_figure, raster_figure

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
        "pareto": pareto_figure(
            analysis.controllers,
            f"{name}: cost against success",
            [c for c in analysis.controllers if reads_truth(analysis, c)],
        ),
    }
    rows = {
        c: [[t.episode, t.trial, t.attempt] for t in list(ts)[:RASTER_EPISODES]]
        for c, ts in analysis.traces.items()
        if ts
    }
    trace = _pid_episode(analysis, controller, episode)
    if trace is not None:
        replan, band = thresholds(analysis, trace.controller)
        figs["pid_terms"] = pid_terms_figure(
            trace,
            replan,
            band,
            f"{name}: {trace.controller} terms, episode {trace.episode}",
        )
    return FigureSet(figs, rows, {"controller": controller, "episode": episode})


def read_index(figure_dir: Path) -> dict[str, Any] | None:
    """The figure directory's ``INDEX_FILE``, or None when it is absent or not as written.

    The index is a file of the run directory, so it is checked as data: figure names
    that are safe file stems, captions that are text, raster rows of whole numbers and
    boxes of four numbers, options as a table.  Anything else (a damaged or planted
    index) reads as None, and the figures are drawn again.
    """
    try:
        index = read_json(figure_dir / INDEX_FILE)
    except (OSError, ValueError):
        return None
    return index if _index_ok(index) else None


def _numbers(value: Any, kind: type | tuple[type, ...]) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, kind) and not isinstance(v, bool) for v in value
    )


def _index_ok(index: Any) -> bool:
    """Whether a parsed ``INDEX_FILE`` has the shape ``FigureSet.save`` writes."""
    if not isinstance(index, dict) or not isinstance(index.get("options", {}), dict):
        return False
    figures = index.get("figures")
    if not isinstance(figures, list) or not all(
        isinstance(s, str) and s and file_stem(s) == s for s in figures
    ):
        return False
    captions = index.get("captions", {})
    if not isinstance(captions, dict) or not all(isinstance(v, str) for v in captions.values()):
        return False
    raster = index.get("raster", {})
    if not isinstance(raster, dict):
        return False
    for panel in raster.values():
        if not isinstance(panel, dict):
            return False
        rows, box = panel.get("rows", []), panel.get("box")
        if not isinstance(rows, list) or not all(_numbers(r, int) for r in rows):
            return False
        if box is not None and not (_numbers(box, (int, float)) and len(box) == 4):
            return False
    return True


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
