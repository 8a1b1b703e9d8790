"""Calibrating and measuring ``sprt``: its likelihood tables, its boundaries, its error rates.

``calibrate`` runs the law with both boundaries at infinity on tuning
episodes (the trajectory is then the real run's up to wherever it would
stop: its REPLAN rule does not read the boundaries) and fits

* the δ_act table: log p(category | infeasible) − log p(category | feasible),
  from every step, split by the step's feasibility (add-one smoothing);
* the δ_task table: log p(bin | complete) − log p(bin | not complete);
* each boundary: the smallest value whose exceedance share on the tuning
  episodes has a 95 % Clopper–Pearson upper bound at most the rate asked for
  (a false abandon: the statistic passes the boundary at a step where the
  task is feasible and not complete, a share of the episodes feasible at their
  first step; a false completion: the first crossing of the done boundary is
  at a step where the task is not complete, a share of all episodes).

``measure`` runs the calibrated law on evaluation episodes and returns the
false-abandon curve: the share of feasible episodes given up by step t, with
its Clopper–Pearson band.  ``token_saving`` pairs it against another law on
the same seeds.
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
from opar_sim.core.types import EpisodeResult, Outcome, StepRecord
from opar_sim.measure.exact_intervals import clopper_pearson
from opar_sim.measure.stats import Estimate, paired_interval
from opar_sim.running.runner import simulate
from opar_sim.spec.edit import apply_changes
from opar_sim.spec.schema import ExperimentSpec
from opar_sim.studies.seeds import HOLDOUT_SEED, TUNING_SEED

EVALUATION_SEED = HOLDOUT_SEED  # measurement episodes: seen by no calibration


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
    episodes: int
    seed: int
    feasible_episodes: int
    act_counts: list[list[int]]  # [feasible, infeasible] × category
    done_counts: list[list[int]]  # [not complete, complete] × bin


def calibrate(
    spec: ExperimentSpec,
    episodes: int = 5000,
    seed: int = TUNING_SEED,
    alpha: float = 0.05,
    beta: float = 0.05,
) -> Calibration:
    """Fit ``sprt``'s tables and boundaries on tuning episodes of ``spec``'s task and agent.

    The give-up boundary is fitted first, on every feasible step of the
    horizon; the done boundary then on the not-complete steps before the
    give-up boundary would have stopped the episode (the real run stops there).

    Args:
        spec: The experiment (task, agent, limits); its controller is replaced.
        episodes: Tuning episodes.
        seed: Their base seed (a tuning seed: never an evaluation one).
        alpha: The false-completion rate asked for.
        beta: The false-abandon rate asked for.

    Returns:
        The parameters of ``sprt`` and the counts they came from.
    """
    inf = {"done_boundary": math.inf, "abandon_boundary": math.inf, "alpha": alpha, "beta": beta}
    runs = list(simulate(with_controller(spec, "sprt", inf), episodes, seed))
    act = np.zeros((2, len(ABANDON_LLR)))
    done = np.zeros((2, DONE_BINS))
    for r in runs:
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
    traces = [_statistics(r, fitted) for r in runs]
    # the null population is the episodes feasible at their first step (the curve's too)
    abandon_sups = [
        max((a for a, _, s in trace if s.feasible and not s.complete), default=-math.inf)
        for trace in traces
        if trace and trace[0][2].feasible
    ]
    abandon_at = pac_boundary(abandon_sups, beta)
    done_at = done_boundary([t for t in traces], abandon_at, alpha)
    params = {
        "alpha": alpha,
        "beta": beta,
        "done_llr": fitted["done_llr"],
        "abandon_llr": fitted["abandon_llr"],
        "done_boundary": done_at,
        "abandon_boundary": abandon_at,
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


@dataclass(frozen=True, slots=True)
class Row:
    """What the measurement keeps of an episode (small enough to send between processes)."""

    outcome: str
    steps: int
    tokens: int
    success: bool
    feasible: bool  # at its first step


def row_of(result: EpisodeResult) -> Row:
    """The measurement's row of an episode."""
    first = result.steps[0] if result.steps else None
    return Row(
        result.outcome,
        len(result.steps),
        result.cost.tokens,
        result.success,
        first is None or first.feasible,
    )


def run_arm(spec_json: str, episodes: int, seed: int, start: int = 0) -> list[Row]:
    """The rows of episodes start..start + episodes − 1; module-level for a process pool."""
    spec = ExperimentSpec.model_validate_json(spec_json)
    return [row_of(r) for r in simulate(spec, episodes, seed, start)]


@dataclass
class AbandonCurve:
    """The share of feasible episodes falsely given up by step t, t = 1..T."""

    label: str
    bias: float
    episodes: int
    feasible: int  # the null population: episodes feasible at their first step
    by_step: list[int]  # cumulative false abandons by step t
    outcomes: dict[str, int]
    false_completions: int

    def share(self) -> list[float]:
        """The curve: false abandons by step t over feasible episodes."""
        return [k / self.feasible for k in self.by_step]

    def band(self) -> list[tuple[float, float]]:
        """The 95 % Clopper–Pearson band of the curve, step by step."""
        return [clopper_pearson(k, self.feasible) for k in self.by_step]

    def summary(self) -> dict[str, Any]:
        """Maximum share, its step, its band and the final counts (JSON-ready)."""
        share = self.share()
        t = int(np.argmax(share)) if share else 0
        low, high = self.band()[t] if share else (0.0, 0.0)
        return {
            "label": self.label,
            "bias": self.bias,
            "episodes": self.episodes,
            "feasible": self.feasible,
            "max_share": share[t] if share else 0.0,
            "max_step": t + 1,
            "max_band": [low, high],
            "max_upper": max((h for _, h in self.band()), default=0.0),
            "false_abandons": self.by_step[-1] if self.by_step else 0,
            "false_completions": self.false_completions,
            "false_completion_share": self.false_completions / self.episodes,
            "outcomes": self.outcomes,
        }


def abandon_curve(
    results: Sequence[Row], horizon: int, label: str = "", bias: float = 0.0
) -> AbandonCurve:
    """Count false abandons (outcome ``abandoned``) by the step they happened at.

    Args:
        results: Rows of one law's episodes (``row_of``).
        horizon: The last step of the curve (the spec's ``max_steps``).
        label: A name for the curve.
        bias: The agent's bias, recorded.

    Returns:
        The curve over feasible episodes.
    """
    at = np.zeros(horizon + 1, dtype=int)
    feasible = 0
    outcomes: dict[str, int] = {}
    premature = 0
    for r in results:
        outcomes[r.outcome] = outcomes.get(r.outcome, 0) + 1
        feasible += r.feasible
        premature += r.outcome == Outcome.PREMATURE.value
        if r.outcome == Outcome.ABANDONED.value:
            at[min(horizon, r.steps)] += 1
    cumulative = np.cumsum(at)[1:]
    return AbandonCurve(
        label,
        bias,
        len(results),
        max(feasible, 1),
        [int(x) for x in cumulative],
        dict(sorted(outcomes.items())),
        premature,
    )


def token_saving(base: Sequence[Row], law: Sequence[Row], seed: int = 0) -> dict[str, Any]:
    """Tokens ``base`` spends minus ``law``'s, paired, on the episodes ``base`` fails.

    Args:
        base: Rows of the reference law (``threshold``), on the same seeds as ``law``.
        law: Rows of ``sprt``.
        seed: The bootstrap's seed.

    Returns:
        The number of failing episodes, each law's mean tokens there and the paired
        difference (base − law) with its 95 % bootstrap interval.
    """
    pairs = [(a.tokens, b.tokens) for a, b in zip(base, law, strict=True) if not a.success]
    if not pairs:
        return {"failing": 0}
    a_tokens = [float(a) for a, _ in pairs]
    b_tokens = [float(b) for _, b in pairs]
    est: Estimate = paired_interval(a_tokens, b_tokens, np.random.default_rng(seed))
    return {
        "failing": len(pairs),
        "base_tokens": float(np.mean(a_tokens)),
        "law_tokens": float(np.mean(b_tokens)),
        "saving": est.mean,
        "saving_ci95": [est.low, est.high],
        "saving_share": est.mean / float(np.mean(a_tokens)),
    }
