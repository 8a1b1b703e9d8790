"""Run a sweep: every grid point as a run directory under one sweep directory.

``OUT/sweep.json`` names the base spec and the points; ``OUT/<point>/`` is an
ordinary run directory.  Points run one after another on a shared executor,
each spread over all its workers.  With ``resume`` finished points are kept,
a half-finished one is completed, and the rest run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opar_sim import plots
from opar_sim.runner import RunResult, finish_run, prepare_out_dir, run_experiment
from opar_sim.spec import ExperimentSpec, SpecError, sweep_points
from opar_sim.sweep import SweepPoint


@dataclass
class SweepResult:
    """Per point: its assignment and its per-controller summary."""

    out: Path
    rows: list[dict[str, Any]]
    figures: list[str]


def run_sweep(
    spec: ExperimentSpec,
    out: Path,
    *,
    executor: Executor,
    parallelism: int,
    resume: bool = False,
    on_point: Callable[[SweepPoint], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> SweepResult:
    """Run every point of ``spec``'s sweep into ``out``."""
    points = sweep_points(spec)
    manifest = {
        "spec": spec.model_dump(),
        "points": [{"name": p.name, "assignment": p.assignment} for p, _ in points],
    }
    index = out / "sweep.json"
    if resume:
        if not index.is_file():
            raise SpecError(f"--resume: {out} holds no sweep to resume")
        if json.loads(index.read_text(encoding="utf-8")) != json.loads(json.dumps(manifest)):
            raise SpecError(f"--resume: the sweep differs from the one that started {out}")
    else:
        if index.exists():
            raise SpecError(f"--out {out} already holds a sweep; use --resume or another directory")
        prepare_out_dir(out)
        out.mkdir(parents=True, exist_ok=True)
        index.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    rows = []
    for point, point_spec in points:
        if on_point is not None:
            on_point(point)
        result = _run_point(
            point_spec, out / point.name, executor, parallelism, resume, on_progress
        )
        rows.append(
            {"point": point.name, "assignment": point.assignment, "summary": result.summary}
        )
    (out / "sweep_summary.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    figure = plots.sweep_figure(rows, f"{spec.name}: sweep over {', '.join(spec.sweep)}")
    return SweepResult(out, rows, plots.save(figure, str(out / "sweep")))


def _run_point(
    spec: ExperimentSpec,
    out: Path,
    executor: Executor,
    parallelism: int,
    resume: bool,
    on_progress: Callable[[int], None] | None,
) -> RunResult:
    finished = out / "summary.json"
    if resume and finished.is_file():
        if on_progress is not None:
            on_progress(spec.episodes * len(spec.controller_list()))
        return finish_run(spec, out, figures=False)
    return run_experiment(
        spec,
        out,
        executor=executor,
        parallelism=parallelism,
        resume=resume and (out / "spec.json").is_file(),
        on_progress=on_progress,
    )
