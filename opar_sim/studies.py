"""Two-arm studies behind issue 6's memory claims, each writing its numbers and a figure.

``rebound``: the same spec with and without memory compression (Algorithm 2,
step 2.5); the error rate per loop iteration shows the ReAct document's
rebound past about 8 rounds without it, and its absence with it.

``learning``: the same spec with Reflexion's long-term memory and with plain
retries (``keep = 0``); the share of seeded tasks solved by each attempt is
Reflexion's learning curve.

Usage::

    python -m opar_sim.studies rebound experiments/context_rebound.toml --out runs/rebound
    python -m opar_sim.studies learning experiments/reflexion.toml --out runs/reflexion
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opar_sim import memory_plots, plots
from opar_sim.reflexion import success_by_attempt
from opar_sim.runner import run_experiment
from opar_sim.spec import ExperimentSpec, SpecError, load_spec, parse_spec, with_overrides

DEFAULT_CONTEXT_MAX = 2000
EARLY = (5, 8)  # rounds where the error is lowest before the context fills
MIDDLE = (9, 12)  # past the knee, with (nearly) every episode still running
LATE = (13, 20)  # well past the knee (episodes that finished have left the average)


@dataclass
class StudyResult:
    """A study's numbers (also written as JSON) and the figures it saved."""

    out: Path
    numbers: dict[str, Any]
    figures: list[str] = field(default_factory=list)


def _variant(spec: ExperimentSpec, name: str, **changes: Any) -> ExperimentSpec:
    data = spec.model_dump()
    data["name"] = f"{spec.name}-{name}"
    for path, value in changes.items():
        section, key = path.split("__")
        table = data[section] if section != "agent_params" else data["agent"]["params"]
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value
    return parse_spec(data, f"study arm {name}")


def _read(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


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


def rebound(spec: ExperimentSpec, out: Path) -> StudyResult:
    """Run the spec without and with compression; measure the error rebound."""
    c_max = spec.agent.params.get("context_max") or DEFAULT_CONTEXT_MAX
    arms = {
        "no compression": _variant(spec, "plain", agent_params__context_max=None),
        f"compression (C_max={c_max})": _variant(
            spec, "compressed", agent_params__context_max=c_max
        ),
    }
    numbers: dict[str, Any] = {}
    errors: dict[str, list[float]] = {}
    context: dict[str, list[float]] = {}
    for label, arm in arms.items():
        run = run_experiment(arm, out / arm.name)
        steps = _read(run.out / "steps.jsonl")
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
    fig = memory_plots.rebound_figure(
        errors, context, knee, f"{spec.name}: error per round, {spec.episodes} episodes per arm"
    )
    figures = plots.save(fig, str(out / "rebound"))
    (out / "rebound.json").write_text(json.dumps(numbers, indent=2) + "\n", encoding="utf-8")
    return StudyResult(out, numbers, figures)


def learning(spec: ExperimentSpec, out: Path) -> StudyResult:
    """Run the spec with Reflexion's memory and with plain retries; success by attempt."""
    attempts = spec.reflexion.attempts
    keep = spec.reflexion.keep or 3
    arms = {
        f"Reflexion memory (keep {keep})": _variant(spec, "memory", reflexion__keep=keep),
        "retries without memory": _variant(spec, "retries", reflexion__keep=0),
    }
    numbers: dict[str, Any] = {}
    curves: dict[str, list[float]] = {}
    for label, arm in arms.items():
        run = run_experiment(arm, out / arm.name)
        rows = [
            (int(r["episode"]), int(r["attempt"]), bool(r["success"]))
            for r in _read(run.out / "episodes.jsonl")
        ]
        curve = success_by_attempt(rows, attempts)
        curves[label] = curve
        numbers[label] = {"success_by_attempt": [round(c, 4) for c in curve], "runs": len(rows)}
    title = f"{spec.name}: success by attempt, {spec.episodes} seeded tasks per arm"
    figures = plots.save(memory_plots.learning_curve_figure(curves, title), str(out / "learning"))
    (out / "learning.json").write_text(json.dumps(numbers, indent=2) + "\n", encoding="utf-8")
    return StudyResult(out, numbers, figures)


STUDIES = {"rebound": rebound, "learning": learning}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m opar_sim.studies", description=__doc__)
    parser.add_argument("study", choices=sorted(STUDIES))
    parser.add_argument("spec", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--episodes", type=int)
    parser.add_argument("--seed", type=int)
    args = parser.parse_args(argv)
    try:
        spec = with_overrides(load_spec(args.spec), episodes=args.episodes, seed=args.seed)
        result = STUDIES[args.study](spec, args.out)
    except SpecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result.numbers, indent=2))
    for figure in result.figures:
        print(f"figure: {figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
