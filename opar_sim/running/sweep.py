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

from opar_sim.measure.table import TextTable
from opar_sim.rundir import RunDirError, prepare_out_dir, read_json, write_json
from opar_sim.running.runner import run_many
from opar_sim.spec.edit import sweep_points
from opar_sim.spec.grid import SweepPoint
from opar_sim.spec.schema import ExperimentSpec, SpecError


@dataclass
class SweepResult:
    """Per point: its assignment and its per-controller summary."""

    out: Path
    rows: list[dict[str, Any]]

    def table(self) -> TextTable:
        """One row per point and controller: the assignment, success and cost."""
        paths = list(self.rows[0]["assignment"]) if self.rows else []
        columns = [path.rsplit(".", 1)[-1] for path in paths]
        columns += ["controller", "success", "95% CI", "steps", "tokens", "replans"]
        rows = []
        for row in self.rows:
            for name, s in row["summary"].items():
                lo, hi = s["success_ci95"]
                rows.append(
                    [
                        *(_label(row["assignment"][p]) for p in paths),
                        name,
                        f"{s['success_rate']:.1%}",
                        f"{lo:.0%}-{hi:.0%}",
                        f"{s['mean_steps']:.1f}",
                        f"{s['mean_tokens']:,.0f}",
                        f"{s['mean_replans']:.2f}",
                    ]
                )
        return TextTable("sweep: means per episode", columns, rows, [], left=0, bold=False)

    def to_dict(self) -> dict[str, Any]:
        """The sweep directory and its points (``sweep_summary.json`` holds ``points``)."""
        return {"out": str(self.out), "points": self.rows}


def _label(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def run_sweep(
    spec: ExperimentSpec,
    out: Path,
    *,
    executor: Executor,
    parallelism: int,
    resume: bool = False,
    on_point: Callable[[SweepPoint], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
    points: list[tuple[SweepPoint, ExperimentSpec]] | None = None,
    on_note: Callable[[str], None] | None = None,
    engine: str = "simpy",
) -> SweepResult:
    """Run every point of ``spec``'s sweep into ``out``.

    Args:
        spec: The spec with its ``[sweep]`` table.
        out: The sweep directory.
        executor: Where the chunks run.
        parallelism: How many chunks may run at once.
        resume: Keep finished points and complete the rest.
        on_point: Called when a point starts writing.
        on_progress: Called with the number of episodes each finished chunk adds.
        points: The grid, when the caller already made it (``sweep_points``).
        on_note: Called with each thing ``--resume`` repaired or cut.
        engine: ``"simpy"`` or ``"batch"`` (see ``runner.run_many``).

    Returns:
        Each point's assignment and per-controller summary.
    """
    if points is None:
        points = sweep_points(spec)
    manifest = {
        "spec": spec.model_dump(),
        "points": [{"name": p.name, "assignment": p.assignment} for p, _ in points],
    }
    index = out / "sweep.json"
    for point, _ in points:  # a point's directory stays a direct child of ``out``
        if not _safe_name(point.name):
            raise SpecError(f"sweep point name {point.name!r} is not a safe directory name")
    if resume and index.is_file():
        try:
            same = read_json(index) == json.loads(json.dumps(manifest))
        except RunDirError:
            same = False  # a torn sweep.json: the points' own manifests decide below
            write_json(index, manifest)
        if not same:
            raise SpecError(f"--resume: the sweep differs from the one that started {out}")
    elif resume:  # killed before its first write: the sweep starts (finished points are kept)
        if out.exists() and not out.is_dir():
            raise SpecError(f"--out {out} exists and is not a directory")
        out.mkdir(parents=True, exist_ok=True)
        write_json(index, manifest)
    else:
        if index.exists():
            raise SpecError(f"--out {out} already holds a sweep; use --resume or another directory")
        prepare_out_dir(out)
        out.mkdir(parents=True, exist_ok=True)
        write_json(index, manifest)
    targets = [(point_spec, out / point.name) for point, point_spec in points]
    results = run_many(
        targets,
        executor=executor,
        parallelism=parallelism,
        resume=resume,
        on_progress=on_progress,
        on_run=(lambda i: on_point(points[i][0])) if on_point is not None else None,
        on_note=on_note,
        engine=engine,
    )
    rows = [
        {"point": point.name, "assignment": point.assignment, "summary": result.summary}
        for (point, _), result in zip(points, results, strict=True)
    ]
    write_json(out / "sweep_summary.json", rows)
    return SweepResult(out, rows)


def _safe_name(name: str) -> bool:
    """A single path component: no separator, not ``.`` or ``..``, not hidden."""
    return bool(name) and "/" not in name and "\\" not in name and not name.startswith(".")
