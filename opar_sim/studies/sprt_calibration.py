"""Calibrating ``sprt``: its likelihood tables and its boundaries, fitted on tuning episodes.

``calibrate`` runs the law with both boundaries at infinity on tuning
episodes (the trajectory is then the real run's up to wherever it would
stop: its REPLAN rule does not read the boundaries), splits them in two
halves, and fits the tables on the first half and the boundaries on the
second (so the boundaries' Clopper–Pearson bound is computed on episodes
the tables never saw):

* the δ_act table: log p(category | infeasible) − log p(category | feasible),
  from every step, split by the step's feasibility (add-one smoothing);
* the δ_task table: log p(bin | complete) − log p(bin | not complete);
* each boundary: the smallest value whose exceedance share on the tuning
  episodes has a 95 % Clopper–Pearson upper bound at most the rate asked for
  (a false abandon: the statistic passes the boundary at a step where the
  task is feasible and not complete, a share of the episodes feasible at their
  first step; a false completion: the first crossing of the done boundary is
  at a step where the task is not complete, a share of all episodes).

The measurement and the study that runs both are ``opar_sim.studies.sprt``'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from controllers.sprt import (
    ABANDON_LLR,
    DONE_BINS,
    N_ACT,
    SPRTReflector,
    abandon_cell,
    act_bin,
    done_bin,
)
from opar_sim.core.controller import ReflectContext
from opar_sim.core.types import EpisodeResult, StepRecord
from opar_sim.measure.exact_intervals import clopper_pearson
from opar_sim.running.runner import simulate
from opar_sim.spec.edit import apply_changes
from opar_sim.spec.schema import ExperimentSpec
from opar_sim.studies.seeds import TUNING_SEED


def with_controller(
    spec: ExperimentSpec, name: str, params: Mapping[str, Any], bias: float | None = None
) -> ExperimentSpec:
    """``spec`` running only ``name(**params)``, with the simulated agent's bias set if given."""
    changes: dict[str, Any] = {
        "compare": None,
        "controller": {"name": name, "params": dict(params)},
    }
    if bias is not None:
        changes["agent.params.bias"] = bias
    return apply_changes(spec, changes, f"{spec.name}: {name}")


def _llr(counts: np.ndarray) -> list[float]:
    """Log p(· | row 1) − log p(· | row 0) with add-one smoothing."""
    p = (counts + 1.0) / (counts + 1.0).sum(axis=1, keepdims=True)
    return [float(x) for x in np.log(p[1]) - np.log(p[0])]


def pac_boundary(sups: Sequence[float], rate: float, confidence: float = 0.95) -> float:
    """The smallest boundary b whose exceedance share (sup > b) has a CP upper bound ≤ rate.

    Args:
        sups: Per-episode supremum of the statistic over its exposed steps
            (−inf when never exposed).
        rate: The error rate asked for.
        confidence: Two-sided coverage of the Clopper–Pearson interval.

    Returns:
        The boundary (``inf`` when no finite one qualifies).
    """
    values = np.sort(np.asarray(sups, dtype=float))
    n = len(values)
    for b in np.unique(values[np.isfinite(values)]):
        k = int(np.sum(values > b))
        if clopper_pearson(k, n, confidence)[1] <= rate:
            return float(b)
    return math.inf


@dataclass
class Calibration:
    """What ``calibrate`` fitted, and from what."""

    params: dict[str, Any]
    episodes: int  # both halves
    seed: int
    feasible_episodes: int  # of the boundaries' half
    act_counts: list[list[int]]  # [feasible, infeasible] × category (the tables' half)
    done_counts: list[list[int]]  # [not complete, complete] × bin (the tables' half)

    @property
    def table_episodes(self) -> range:
        """The episode indices the likelihood tables were fitted on (the first half)."""
        return range(self.episodes // 2)

    @property
    def boundary_episodes(self) -> range:
        """The episode indices the boundaries were fitted on (the second half)."""
        return range(self.episodes // 2, self.episodes)


def calibrate(
    spec: ExperimentSpec,
    episodes: int = 5000,
    seed: int = TUNING_SEED,
    alpha: float = 0.05,
    beta: float = 0.05,
    grid: Sequence[float] | None = None,
    grid_out: dict[tuple[float, float], tuple[float, float]] | None = None,
) -> Calibration:
    """Fit ``sprt``'s tables and boundaries on tuning episodes of ``spec``'s task and agent.

    The tables are fitted on the first half of the episodes, the boundaries on
    the second.  The give-up boundary is fitted first, on every feasible step
    of the horizon; the done boundary then on the not-complete steps before
    the give-up boundary would have stopped the episode (the real run stops
    there).  The parameters name the task and the horizon (``max_steps``) they
    were fitted on: the law cautions a run outside them.

    Args:
        spec: The experiment (task, agent, limits); its controller is replaced.
        episodes: Tuning episodes, both halves (at least 2).
        seed: Their base seed (a tuning seed: never an evaluation one).
        alpha: The false-completion rate asked for.
        beta: The false-abandon rate asked for.
        grid: Error rates at which to fit the boundaries too (every alpha x beta pair).
        grid_out: Filled with (alpha, beta) -> (done boundary, give-up boundary).

    Returns:
        The parameters of ``sprt`` and the counts they came from.
    """
    if grid is not None and grid_out is None:
        raise ValueError("calibrate: a grid needs grid_out to fill")
    if episodes < 2:
        raise ValueError(f"calibrate: needs at least 2 episodes (one per half), got {episodes}")
    inf = {"done_boundary": math.inf, "abandon_boundary": math.inf, "alpha": alpha, "beta": beta}
    runs = list(simulate(with_controller(spec, "sprt", inf), episodes, seed))
    half = episodes // 2
    act = np.zeros((2, len(ABANDON_LLR)))
    done = np.zeros((2, DONE_BINS))
    for r in runs[:half]:
        productive = 0
        for s in r.steps:
            if s.evaluation is None:
                continue
            act[int(not s.feasible), abandon_cell(productive, s.evaluation.delta_act)] += 1
            productive += act_bin(s.evaluation.delta_act) == N_ACT - 1
            done[int(s.complete), done_bin(s.evaluation.delta_task)] += 1
    # rounded as the law will be given them, so the boundaries fit the law exactly
    fitted = {
        "done_llr": [round(x, 4) for x in _llr(done)],
        "abandon_llr": [round(x, 4) for x in _llr(act)],
    }
    traces = [_statistics(r, fitted) for r in runs[half:]]
    # the null population is the episodes feasible at their first step (the curve's too)
    abandon_sups = [
        max((a for a, _, s in trace if s.feasible and not s.complete), default=-math.inf)
        for trace in traces
        if trace and trace[0][2].feasible
    ]
    abandon_at = pac_boundary(abandon_sups, beta)
    done_at = done_boundary([t for t in traces], abandon_at, alpha)
    if grid is not None and grid_out is not None:  # every (alpha, beta) pair of the grid
        for b in grid:
            give_up = pac_boundary(abandon_sups, b)
            for a in grid:
                grid_out[(a, b)] = (done_boundary(traces, give_up, a), give_up)
    params = {
        "alpha": alpha,
        "beta": beta,
        "done_llr": fitted["done_llr"],
        "abandon_llr": fitted["abandon_llr"],
        "done_boundary": done_at,
        "abandon_boundary": abandon_at,
        "calibrated_task": spec.task.name,
        "calibrated_horizon": spec.limits.max_steps,
    }
    feasible = len(abandon_sups)
    return Calibration(
        params, episodes, seed, feasible, act.astype(int).tolist(), done.astype(int).tolist()
    )


def done_boundary(
    traces: Sequence[Sequence[tuple[float, float, StepRecord]]], abandon_at: float, rate: float
) -> float:
    """The smallest done boundary whose false completions have a CP upper bound ≤ ``rate``.

    A boundary b makes a false completion on an episode when the first step
    with C_t > b comes before the give-up stop (S_t > ``abandon_at``) and the
    task is not complete there: the real run stops at that step.  A boundary
    qualifies when it and every larger candidate do.

    Args:
        traces: Per episode, (S_t, C_t, step) of the law replayed with infinite boundaries.
        abandon_at: The give-up boundary in force.
        rate: The false-completion rate asked for.

    Returns:
        The boundary (``inf`` when none qualifies).
    """
    n = len(traces)
    # For boundary b the first crossing is the first new running maximum of C_t above b,
    # so an episode makes a false completion for b in [previous maximum, this maximum) of
    # each not-complete record: count those intervals at every candidate at once.
    lows: list[float] = []
    highs: list[float] = []
    candidates: set[float] = set()
    for trace in traces:
        top = -math.inf
        for a, d, s in trace:
            if d > top:
                candidates.add(d)
                if not s.complete:
                    lows.append(top)
                    highs.append(d)
                top = d
            if a > abandon_at:
                break
    values = np.array(sorted(candidates))
    lo = np.sort(np.array(lows))
    hi = np.sort(np.array(highs))
    # intervals with low <= b < high
    counts = np.searchsorted(lo, values, side="right") - np.searchsorted(hi, values, side="right")
    upper: dict[int, float] = {}
    best = math.inf
    for b, k in zip(values[::-1], counts[::-1], strict=True):
        if int(k) not in upper:
            upper[int(k)] = clopper_pearson(int(k), n)[1]
        if upper[int(k)] > rate:
            break
        best = float(b)
    return best


def _statistics(
    run: EpisodeResult, tables: Mapping[str, Sequence[float]]
) -> list[tuple[float, float, StepRecord]]:
    """(S_t, C_t, step) of ``sprt`` with ``tables`` replayed on a recorded episode."""
    law = SPRTReflector(
        done_llr=tables["done_llr"],
        abandon_llr=tables["abandon_llr"],
        done_boundary=math.inf,
        abandon_boundary=math.inf,
    )
    out = []
    for s in run.steps:
        if s.evaluation is None:
            continue
        ctx = ReflectContext(s.step, s.time, 0.0, s.plan_age, s.plan_exhausted, s.replans)
        terms = law.decide(s.evaluation, ctx).terms
        out.append((terms["abandon_llr"], terms["done_llr"], s))
    return out
