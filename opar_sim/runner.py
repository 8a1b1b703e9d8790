"""Run an experiment: episodes in order, streamed to a run directory.

A run directory holds the resolved spec (``spec.json``), ``episodes.jsonl``
(one line per episode), ``steps.jsonl`` (one line per step), ``summary.json``
and figures.  An episode's steps are written before its episode line, and
both are flushed after every episode, so an interrupted run keeps every
finished episode.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opar_sim import memory_plots, plots
from opar_sim.models import EpisodeResult
from opar_sim.records import episode_lines
from opar_sim.reflexion import run_attempts, success_by_attempt
from opar_sim.seeding import episode_seed
from opar_sim.spec import ExperimentSpec, SpecError, build
from opar_sim.summary import Summary

RUN_FILES = ("spec.json", "episodes.jsonl", "steps.jsonl", "summary.json")


@dataclass
class RunResult:
    """What a finished run wrote and its per-controller summary."""

    out: Path
    summary: dict[str, dict[str, Any]]
    figures: list[str] = field(default_factory=list)


def prepare_out_dir(out: Path) -> None:
    """Refuse to overwrite a run: an existing directory must hold no run files."""
    if out.exists() and not out.is_dir():
        raise SpecError(f"--out {out} exists and is not a directory")
    if out.is_dir() and any((out / name).exists() for name in RUN_FILES):
        raise SpecError(f"--out {out} already holds a run; choose another directory")


def run_experiment(
    spec: ExperimentSpec,
    out: Path,
    on_episode: Callable[[EpisodeResult], None] | None = None,
) -> RunResult:
    """Run every episode of ``spec`` and write the run directory ``out``."""
    parts = build(spec)
    prepare_out_dir(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "spec.json").write_text(spec.model_dump_json(indent=2) + "\n", encoding="utf-8")
    summary = Summary()
    progress: dict[str, list[list[float]]] = {}
    estimate: dict[str, list[list[float]]] = {}
    attempt_rows: dict[str, list[tuple[int, int, bool]]] = {}
    task = parts.make_task()
    agent = parts.make_agent()
    with (
        open(out / "episodes.jsonl", "w", encoding="utf-8") as episodes_file,
        open(out / "steps.jsonl", "w", encoding="utf-8") as steps_file,
    ):
        # every controller sees the same episode seeds: common random numbers
        work = [(make(), i) for _, make in parts.controllers for i in range(spec.episodes)]
        for controller, i in work:
            # issue 6: Reflexion attempts (1 by default) and guardrails (None by default)
            tries = run_attempts(
                task,
                agent,
                controller,
                parts.limits,
                episode_seed(spec.seed, i),
                attempts=spec.reflexion.attempts,
                keep=spec.reflexion.keep,
                episode=i,
                guardrail=parts.guardrail,
            )
            for result in tries:
                episode_line, step_lines = episode_lines(result)
                steps_file.write(step_lines)
                episodes_file.write(episode_line)
                attempt_rows.setdefault(result.controller, []).append(
                    (i, result.attempt, result.success)
                )
            steps_file.flush()
            episodes_file.flush()
            result = tries[-1]  # the summary judges each seed by its last attempt
            summary.add(result)
            progress.setdefault(result.controller, []).append([r.progress for r in result.steps])
            estimate.setdefault(result.controller, []).append(
                [r.evaluation.delta_task if r.evaluation else 0.0 for r in result.steps]
            )
            if on_episode is not None:
                on_episode(result)
    table = summary.as_dict()
    (out / "summary.json").write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    title = f"{spec.name}: progress per loop iteration ({spec.episodes} episodes each)"
    fig = plots.convergence_figure(progress, estimate, title)
    figures = plots.save(fig, str(out / "progress"))
    if spec.reflexion.attempts > 1:
        curves = {
            name: success_by_attempt(rows, spec.reflexion.attempts)
            for name, rows in attempt_rows.items()
        }
        fig = memory_plots.learning_curve_figure(curves, f"{spec.name}: success by attempt")
        figures += plots.save(fig, str(out / "learning_curve"))
    return RunResult(out, table, figures)
