"""Run a sweep: every grid point as a run directory under one sweep directory.

``OUT/sweep.json`` names the base spec and the points; ``OUT/<point>/`` is an
ordinary run directory.  All points' chunks go to one executor as a
single stream, so workers stay busy across points; each point's files are
written in episode order.  With ``resume`` finished points are kept,
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
from opar_sim.runner import prepare_out_dir, run_many
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
    targets = [(point_spec, out / point.name) for point, point_spec in points]
    results = run_many(
        targets,
        executor=executor,
        parallelism=parallelism,
        resume=resume,
        on_progress=on_progress,
        on_run=(lambda i: on_point(points[i][0])) if on_point is not None else None,
        figures=False,  # one sweep figure; `opar-sim plot POINT_DIR` draws a point's
    )
    rows = [
        {"point": point.name, "assignment": point.assignment, "summary": result.summary}
        for (point, _), result in zip(points, results, strict=True)
    ]
    (out / "sweep_summary.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    figure = plots.sweep_figure(rows, f"{spec.name}: sweep over {', '.join(spec.sweep)}")
    return SweepResult(out, rows, plots.save(figure, str(out / "sweep")))
