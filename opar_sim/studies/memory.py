"""Two-arm studies of the loop's memory, each writing its numbers (and its curves, for a figure).

``rebound``: the same spec with and without memory compression (Algorithm 2,
step 2.5); the error rate per loop iteration shows the ReAct document's
rebound past about 8 rounds without it, and its absence with it.

``learning``: the same spec with Reflexion's long-term memory and with plain
retries (``keep = 0``); the share of seeded tasks solved by each attempt is
Reflexion's learning curve.

Each is a study ``(spec, budget, executor, out=...)``: it writes both arms' run
directories and ``STUDY.json`` under ``out`` and returns a ``MemoryResult`` whose
``table()`` is the command's table and ``to_dict()`` the JSON.

Usage (the figure is drawn by the command)::

    opar-sim study rebound experiments/context_rebound.toml --out runs/rebound
    opar-sim study learning experiments/reflexion.toml --out runs/reflexion
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opar_sim.core.reflexion import success_by_attempt
from opar_sim.core.registry import Registry
from opar_sim.measure.table import TextTable
from opar_sim.rundir import iter_episodes, iter_steps, write_json
from opar_sim.running.executors import ExecutorConfig, open_executor
from opar_sim.running.runner import RunResult, run_experiment
from opar_sim.running.stages import Stage, no_stage
from opar_sim.spec.edit import apply_changes, with_overrides
from opar_sim.spec.schema import ExperimentSpec

DEFAULT_CONTEXT_MAX = 2000
EARLY = (5, 8)  # rounds where the error is lowest before the context fills
MIDDLE = (9, 12)  # past the knee, with (nearly) every episode still running
LATE = (13, 20)  # well past the knee (episodes that finished have left the average)
SHORT_LIST = 10  # lists up to this long become columns; longer ones (per-round curves) stay in JSON


@dataclass(frozen=True)
class MemoryBudget:
    """What a memory study may spend: episodes per arm (None: the spec's)."""

    episodes: int | None = None


@dataclass
class MemoryResult:
    """A study's numbers (also written as JSON) and the curves its figure draws."""

    study: str  # "rebound" or "learning"
    out: Path
    numbers: dict[str, Any]  # per arm
    curves: dict[str, list[float]] = field(default_factory=dict)  # one curve per arm
    context: dict[str, list[float]] = field(default_factory=dict)  # rebound: context per step
    knee: float = 0.0  # rebound: the context size where quality starts to fall

    def to_dict(self) -> dict[str, Any]:
        """The numbers per arm, as written to ``OUT/STUDY.json``."""
        return self.numbers

    def table(self) -> TextTable:
        """One row per arm: every number of the study, short lists one column per entry."""
        return study_table(self.study, self.numbers)


def _variant(spec: ExperimentSpec, name: str, changes: dict[str, Any]) -> ExperimentSpec:
    return apply_changes(spec, {"name": f"{spec.name}-{name}"} | changes, f"study arm {name}")


def _window(values: list[float], lo: int, hi: int) -> float:
    part = values[lo - 1 : hi]
    return sum(part) / len(part) if part else float("nan")


def error_by_step(steps: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
    """Per loop iteration: the share of wrong actions, and the mean context size."""
    wrong: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    tokens: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for row in steps:
        k = int(row["step"])
        wrong[k][0] += 0 if row["expert"] else 1
        wrong[k][1] += 1
        tokens[k][0] += float(row["context_tokens"])
        tokens[k][1] += 1
    ks = sorted(wrong)
    return [wrong[k][0] / wrong[k][1] for k in ks], [tokens[k][0] / tokens[k][1] for k in ks]


def _run_arms(
    name: str,
    arms: dict[str, ExperimentSpec],
    out: Path,
    executor: ExecutorConfig | None,
    stage: Stage,
) -> dict[str, RunResult]:
    """Run each arm into ``out/ARM-NAME``; one stage over both arms' episodes."""
    config = executor or ExecutorConfig("serial", 1)
    total = sum(arm.episodes * len(arm.controller_list()) for arm in arms.values())
    runs = {}
    with open_executor(config) as pool, stage(f"study {name}", total) as advance:
        for label, arm in arms.items():
            runs[label] = run_experiment(
                arm,
                out / arm.name,
                executor=pool,
                parallelism=config.parallelism,
                on_progress=advance,
            )
    return runs


def _sized(spec: ExperimentSpec, budget: MemoryBudget) -> ExperimentSpec:
    if budget.episodes is None or budget.episodes == spec.episodes:
        return spec
    return with_overrides(spec, episodes=budget.episodes)


def rebound(
    spec: ExperimentSpec,
    budget: MemoryBudget = MemoryBudget(),
    executor: ExecutorConfig | None = None,
    *,
    out: str | os.PathLike[str],
    stage: Stage = no_stage,
) -> MemoryResult:
    """Run the spec without and with compression; measure the error rebound.

    Args:
        spec: The spec (a simulated agent with context degradation).
        budget: Episodes per arm.
        executor: Where the episodes run (None: serially, in this process).
        out: The study's directory: each arm's run directory and ``rebound.json``.
        stage: Shows the progress over both arms' episodes (``2 * episodes * controllers``).

    Returns:
        The numbers per arm, the error and context curves and the context knee.
    """
    spec, out = _sized(spec, budget), Path(out)
    c_max = spec.agent.params.get("context_max") or DEFAULT_CONTEXT_MAX
    arms = {
        "no compression": _variant(spec, "plain", {"agent.params.context_max": None}),
        f"compression (C_max={c_max})": _variant(
            spec, "compressed", {"agent.params.context_max": c_max}
        ),
    }
    numbers: dict[str, Any] = {}
    errors: dict[str, list[float]] = {}
    context: dict[str, list[float]] = {}
    for label, run in _run_arms("rebound", arms, out, executor, stage).items():
        steps = list(iter_steps(run.out))
        err, ctx = error_by_step(steps)
        errors[label], context[label] = err, ctx
        stats = next(iter(run.summary.values()))
        early, late = _window(err, *EARLY), _window(err, *LATE)
        numbers[label] = {
            "error_by_step": [round(e, 4) for e in err],
            "context_by_step": [round(c, 1) for c in ctx],
            "running_by_step": [
                sum(1 for s in steps if s["step"] == k) for k in range(1, len(err) + 1)
            ],
            f"error_rounds_{EARLY[0]}_{EARLY[1]}": round(early, 4),
            f"error_rounds_{MIDDLE[0]}_{MIDDLE[1]}": round(_window(err, *MIDDLE), 4),
            f"error_rounds_{LATE[0]}_{LATE[1]}": round(late, 4),
            "rebound": round(late - early, 4),
            "lowest_error_round": 1 + min(range(len(err)), key=lambda i: (err[i], i)),
            "compressions": sum(1 for s in steps if s.get("memory")),
            "success_rate": stats["success_rate"],
            "mean_tokens": stats["mean_tokens"],
        }
    knee = float(spec.agent.params.get("context_knee", 2500))
    write_json(out / "rebound.json", numbers)
    return MemoryResult("rebound", out, numbers, errors, context, knee)


def learning(
    spec: ExperimentSpec,
    budget: MemoryBudget = MemoryBudget(),
    executor: ExecutorConfig | None = None,
    *,
    out: str | os.PathLike[str],
    stage: Stage = no_stage,
) -> MemoryResult:
    """Run the spec with Reflexion's memory and with plain retries; success by attempt.

    Args:
        spec: The spec (with ``[reflexion]`` attempts).
        budget: Seeded tasks per arm.
        executor: Where the episodes run (None: serially, in this process).
        out: The study's directory: each arm's run directory and ``learning.json``.
        stage: Shows the progress over both arms' episodes.

    Returns:
        The numbers per arm and each arm's success-by-attempt curve.
    """
    spec, out = _sized(spec, budget), Path(out)
    attempts = spec.reflexion.attempts
    keep = spec.reflexion.keep or 3
    arms = {
        f"Reflexion memory (keep {keep})": _variant(spec, "memory", {"reflexion.keep": keep}),
        "retries without memory": _variant(spec, "retries", {"reflexion.keep": 0}),
    }
    numbers: dict[str, Any] = {}
    curves: dict[str, list[float]] = {}
    for label, run in _run_arms("learning", arms, out, executor, stage).items():
        rows = [
            (int(r["episode"]), int(r["attempt"]), bool(r["success"]))
            for r in iter_episodes(run.out)
        ]
        curve = success_by_attempt(rows, attempts)
        curves[label] = curve
        numbers[label] = {"success_by_attempt": [round(c, 4) for c in curve], "runs": len(rows)}
    write_json(out / "learning.json", numbers)
    return MemoryResult("learning", out, numbers, curves)


def study_table(study: str, numbers: dict[str, Any]) -> TextTable:
    """One row per arm: every number of the study, short lists one column per entry."""
    columns: list[str] = []
    rows: list[list[str]] = []
    long: list[str] = []
    for values in numbers.values():
        for key, value in values.items():
            if isinstance(value, list) and len(value) > SHORT_LIST:
                long += [key] if key not in long else []
                continue
            names = (
                [f"{key} {i + 1}" for i in range(len(value))] if isinstance(value, list) else [key]
            )
            columns += [n for n in names if n not in columns]
    for values in numbers.values():
        cells: dict[str, str] = {}
        for key, value in values.items():
            if isinstance(value, list):
                cells |= {f"{key} {i + 1}": _cell(v) for i, v in enumerate(value)}
            else:
                cells[key] = _cell(value)
        rows.append([cells.get(c, "") for c in columns])
    arms = list(numbers)
    notes = [f"{study}.json also holds {', '.join(long)}"] if long else []
    return TextTable(
        f"study {study}",
        ["arm", *(_label(c) for c in columns)],
        [[arm, *row] for arm, row in zip(arms, rows, strict=True)],
        notes,
    )


def _label(key: str) -> str:
    """``error_rounds_5_8`` -> ``error rounds 5–8``."""
    return re.sub(r"(\d+)_(\d+)$", r"\1–\2", key).replace("_", " ")


def _cell(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int):
        return str(value)
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


STUDIES: Registry[MemoryResult] = Registry("study")
"""The studies by name: ``STUDIES.make(name, spec=..., budget=..., out=..., stage=...)``."""
STUDIES.register("rebound", rebound)
STUDIES.register("learning", learning)
