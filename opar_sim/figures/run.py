"""The figures a run writes when it finishes: convergence, and Reflexion's learning curve."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from opar_sim.core.reflexion import success_by_attempt
from opar_sim.rundir import EpisodeTrace, iter_episodes, iter_traces
from opar_sim.rundir.columns import read_step_columns
from opar_sim.spec.schema import ExperimentSpec

FIGURE_EPISODES = 2000  # episodes per controller drawn in the convergence figure


def write_run_figures(
    spec: ExperimentSpec, out: Path, traces: dict[str, list[EpisodeTrace]] | None = None
) -> list[str]:
    """Draw ``progress.png`` (and ``learning_curve.png`` for Reflexion runs) from the files.

    Args:
        spec: The spec the run was made from.
        out: The run directory.
        traces: The trajectories the run collected as it ran (``RunResult.traces``,
            ``FIGURE_EPISODES`` per controller): drawn instead of reading steps.jsonl
            back (about a tenth of ``run``'s CPU); None reads the file.

    Returns:
        The paths written.
    """
    from opar_sim.figures.convergence import convergence_figure
    from opar_sim.figures.memory import learning_curve_figure
    from opar_sim.figures.style import save

    if traces is None:
        traces = traces_from_files(spec, out)
    laws = ", ".join(traces)
    title = f"{spec.name}: true progress and the agent's estimate of it, under {laws}"
    written = save(convergence_figure(traces, title), str(out / "progress"))
    if spec.reflexion.attempts > 1:
        rows: dict[str, list[tuple[int, int, bool]]] = {}
        for row in iter_episodes(out):
            rows.setdefault(str(row["controller"]), []).append(
                (int(row["episode"]), int(row.get("attempt", 1)), bool(row["success"]))
            )
        curves: dict[str, Sequence[float]] = {
            name: success_by_attempt(r, spec.reflexion.attempts) for name, r in rows.items()
        }
        fig = learning_curve_figure(curves, f"{spec.name}: success by attempt")
        written += save(fig, str(out / "learning_curve"))
    return written


def traces_from_files(spec: ExperimentSpec, out: Path) -> dict[str, list[EpisodeTrace]]:
    """The figure's trajectories read from steps.jsonl: ``FIGURE_EPISODES`` per controller.

    Args:
        spec: The spec the run was made from.
        out: The run directory.

    Returns:
        Per controller, in file order, its first trajectories.
    """
    traces: dict[str, list[EpisodeTrace]] = {}
    if spec.episodes * spec.trials <= FIGURE_EPISODES:
        # a run the figure draws whole: steps.jsonl parsed once into columns, which an
        # analysis of the same run in this process (compare's) reuses
        columns = read_step_columns(out)
        for block in range(len(columns)):
            kept = traces.setdefault(columns.controllers[int(columns.controller[block])], [])
            if len(kept) < FIGURE_EPISODES:
                kept.append(columns.trace(block, terms=False))  # the figure draws no terms
        return traces
    # a larger run: stream the trajectories and keep FIGURE_EPISODES per controller, so
    # the memory of `run` does not grow with its size (the columns would hold every row)
    wanted = len(spec.controller_list())
    for trace in iter_traces(out):
        kept = traces.setdefault(trace.controller, [])
        if len(kept) < FIGURE_EPISODES:
            kept.append(trace)
        elif len(traces) == wanted and all(len(v) >= FIGURE_EPISODES for v in traces.values()):
            break
    return traces
