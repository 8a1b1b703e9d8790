"""Side by side: what two agents' recorded runs look like to a stopping law.

Any run directory goes in (one imported with ``opar-sim traces import``, or one
recorded by opar-sim: an ``--agent llm`` run or a simulated one), read through
``analysis.stopping.load_costs`` as ``replay --laws`` reads it.  Per run
directory: pass^1 … pass^K over the trials of each task (τ-bench's estimator),
the success rate, the mean turns and tool calls of successes and of failures,
the share of runs that repeat an identical call, the tool errors, and, for each
law, the share of successes it keeps and the share of the failed runs' tool
calls it saves (with task-bootstrap intervals, as ``replay --laws`` prints them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from opar_sim.measure.pass_k import pass_hat_k
from opar_sim.rundir import iter_episodes, read_spec
from opar_sim.traces.stopping import Law, LawResult, evaluate, load_costs

MAX_K = 4


@dataclass
class Profile:
    """One run directory's figures (see the module docstring)."""

    path: str
    agent: str
    runs: int
    tasks: int
    pass_k: list[float]  # pass^1 .. pass^K, K the fewest trials of a task (at most 4)
    success_rate: float
    turns_success: float
    turns_failure: float
    calls_success: float
    calls_failure: float
    repeat_share: float  # runs with an identical call made twice or more
    errors_per_run: float
    error_share: float  # runs with at least one tool error
    laws: list[LawResult]

    def to_dict(self) -> dict[str, Any]:
        """As JSON-ready fields."""
        out = {k: v for k, v in vars(self).items() if k != "laws"}
        out["laws"] = [r.to_dict() for r in self.laws]
        return out


def _mean(values: list[int]) -> float:
    return float(np.mean(values)) if values else math.nan


def profile(
    path: str | Path, laws: list[Law], controller: str | None = None, seed: int = 0
) -> Profile:
    """The figures of one run directory.

    Args:
        path: The run directory.
        laws: The trace laws to replay on it.
        controller: Whose runs, when it holds several controllers.
        seed: The seed of the laws' task bootstrap.

    Returns:
        The profile.

    Raises:
        SpecError: when the path is not a run directory (from ``load_costs``).
    """
    runs = load_costs(path, controller)
    attempts: dict[int, list[bool]] = {}
    for r in runs:
        attempts.setdefault(r.task, []).append(r.success)
    ks = min(MAX_K, min(len(a) for a in attempts.values()))
    wins = [r for r in runs if r.success]
    losses = [r for r in runs if not r.success]
    agent = _agent(Path(path))
    return Profile(
        str(path),
        agent,
        len(runs),
        len(attempts),
        [pass_hat_k(attempts, k) for k in range(1, ks + 1)],
        len(wins) / len(runs),
        _mean([r.steps for r in wins]),
        _mean([r.steps for r in losses]),
        _mean([r.total("calls") for r in wins]),
        _mean([r.total("calls") for r in losses]),
        sum(r.total("repeat") >= 2 for r in runs) / len(runs),
        float(np.mean([r.total("errors") for r in runs])),
        sum(r.total("errors") >= 1 for r in runs) / len(runs),
        evaluate(runs, laws, seed),
    )


def _agent(path: Path) -> str:
    """The agent's name: an LLM run's model (``llm:MODEL``), else the episodes' ``agent``."""
    spec = read_spec(path)
    if spec is not None and spec.agent.kind == "llm" and spec.agent.backend is not None:
        return f"llm:{spec.agent.backend.model}"
    for row in iter_episodes(path):
        return str(row.get("agent", "?"))
    return "?"
