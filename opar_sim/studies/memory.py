"""Two-arm studies of the loop's memory, each writing its numbers (and its curves, for a figure).

``rebound``: the same spec with and without memory compression (Algorithm 2,
step 2.5); the error rate per loop iteration shows the ReAct document's
rebound past about 8 rounds without it, and its absence with it.

``learning``: the same spec with Reflexion's long-term memory and with plain
retries (``keep = 0``); the share of seeded tasks solved by each attempt is
Reflexion's learning curve.

Usage (the figure is drawn by the command)::

    opar-sim study rebound experiments/context_rebound.toml --out runs/rebound
    opar-sim study learning experiments/reflexion.toml --out runs/reflexion
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opar_sim.core.reflexion import success_by_attempt
from opar_sim.core.registry import Registry
from opar_sim.rundir import iter_episodes, iter_steps, write_json
from opar_sim.running.runner import run_experiment
from opar_sim.spec.edit import apply_changes
from opar_sim.spec.schema import ExperimentSpec

DEFAULT_CONTEXT_MAX = 2000
EARLY = (5, 8)  # rounds where the error is lowest before the context fills
MIDDLE = (9, 12)  # past the knee, with (nearly) every episode still running
LATE = (13, 20)  # well past the knee (episodes that finished have left the average)


@dataclass
class StudyResult:
    """A study's numbers (also written as JSON) and the curves its figure draws."""

    out: Path
    numbers: dict[str, Any]
    curves: dict[str, list[float]] = field(default_factory=dict)  # one curve per arm
    context: dict[str, list[float]] = field(default_factory=dict)  # rebound: context per step
    knee: float = 0.0  # rebound: the context size where quality starts to fall


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


def rebound(
    spec: ExperimentSpec, out: Path, on_progress: Callable[[int], None] | None = None
) -> StudyResult:
    """Run the spec without and with compression; measure the error rebound.

    ``on_progress`` is called with the episodes each finished chunk adds (both
    arms: ``2 * episodes * controllers`` in all).
    """
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
    for label, arm in arms.items():
        run = run_experiment(arm, out / arm.name, on_progress=on_progress)
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
    return StudyResult(out, numbers, errors, context, knee)


def learning(
    spec: ExperimentSpec, out: Path, on_progress: Callable[[int], None] | None = None
) -> StudyResult:
    """Run the spec with Reflexion's memory and with plain retries; success by attempt.

    ``on_progress`` as for ``rebound``.
    """
    attempts = spec.reflexion.attempts
    keep = spec.reflexion.keep or 3
    arms = {
        f"Reflexion memory (keep {keep})": _variant(spec, "memory", {"reflexion.keep": keep}),
        "retries without memory": _variant(spec, "retries", {"reflexion.keep": 0}),
    }
    numbers: dict[str, Any] = {}
    curves: dict[str, list[float]] = {}
    for label, arm in arms.items():
        run = run_experiment(arm, out / arm.name, on_progress=on_progress)
        rows = [
            (int(r["episode"]), int(r["attempt"]), bool(r["success"]))
            for r in iter_episodes(run.out)
        ]
        curve = success_by_attempt(rows, attempts)
        curves[label] = curve
        numbers[label] = {"success_by_attempt": [round(c, 4) for c in curve], "runs": len(rows)}
    write_json(out / "learning.json", numbers)
    return StudyResult(out, numbers, curves)


STUDIES: Registry[StudyResult] = Registry("study")
"""The studies by name: ``STUDIES.make(name, spec=..., out=..., on_progress=...)``."""
STUDIES.register("rebound", rebound)
STUDIES.register("learning", learning)
