"""``advise``: what cap should my agent have, and would restarting beat continuing?

A cap on turns, tool calls or tokens is the simplest law of ``opar_sim.traces.stopping``
(stop after the first turn at which the count reaches the cap), so its effect on the
recorded runs is exact: a success is kept when the cap does not fire before the turn that
decided it.  ``cap_table`` gives, for every cap from 1 to the longest run, the success
rate under the cap, the share of successes kept and the share of the capped quantity
saved, with intervals from a bootstrap over tasks.  For tokens the curve only changes at
the recorded running totals, so those are the caps (thinned evenly to ``MAX_TOKEN_CAPS``).

``restarts`` answers the other question from the time-to-success distribution, and is a
model, not a replay: under a budget of B turns, an attempt still running at the cutoff c
is killed and a fresh one started; an attempt that ends by itself before c stands (its
outcome is not observable, so no restart follows it), and the last attempt is cut at the
budget left.  Each attempt is an independent draw from the recorded trials of the same
task (with replacement), so a task never solved stays unsolved however often it restarts;
when every task has one trial (a simulated run without ``trials``) the worlds are pooled
as draws of one task.  The chance of success within B is computed exactly by recursion
over the budget left, per task, and averaged over tasks; intervals come from the task
bootstrap (for pooled runs, from resampling runs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from opar_sim.measure.group_bootstrap import group_resample_counts, ratio_estimates
from opar_sim.measure.stats import Estimate
from opar_sim.traces.stopping import RunCost, by_task, task_index

CAP_SIGNALS = ("steps", "calls", "tokens")
MAX_TOKEN_CAPS = 2000
POOLED_RESAMPLES = 300


@dataclass(frozen=True, slots=True)
class CapRow:
    """The effect of one cap on the recorded runs."""

    signal: str
    cap: int
    success_rate: Estimate  # successes kept / runs
    kept_share: Estimate  # successes kept / recorded successes
    saved: Estimate  # share of the capped quantity saved, over all runs
    saved_failures: Estimate  # the same over the failed runs

    def to_dict(self) -> dict[str, Any]:
        """The row as JSON-ready fields."""
        return {
            "signal": self.signal,
            "cap": self.cap,
            "success_rate": self.success_rate.to_dict(),
            "kept_share": self.kept_share.to_dict(),
            "saved": self.saved.to_dict(),
            "saved_on_failures": self.saved_failures.to_dict(),
        }


def default_caps(runs: Sequence[RunCost], signal: str) -> list[int]:
    """Every cap from 1 to the longest run (tokens: the running totals where the curve moves)."""
    longest = max((r.total(signal) for r in runs), default=0)
    if signal != "tokens":
        return list(range(1, max(longest, 1) + 1))
    values = np.unique(np.concatenate([r.counts["tokens"] for r in runs] + [np.array([1])]))
    values = values[values >= 1]
    if len(values) > MAX_TOKEN_CAPS:
        values = values[np.linspace(0, len(values) - 1, MAX_TOKEN_CAPS).round().astype(int)]
    return [int(v) for v in np.unique(values)]


def cap_table(
    runs: Sequence[RunCost],
    signal: str,
    caps: Sequence[int] | None = None,
    seed: int = 0,
    resamples: int = 2000,
) -> list[CapRow]:
    """The success kept and the cost saved by each cap on ``signal``.

    Args:
        runs: The recorded runs (``stopping.load_costs``).
        signal: ``steps``, ``calls`` or ``tokens``.
        caps: The caps (default ``default_caps``).
        seed: The bootstrap's seed.
        resamples: The bootstrap's resamples.

    Returns:
        One row per cap, in increasing order.
    """
    caps_arr = np.array(sorted(set(caps if caps is not None else default_caps(runs, signal))))
    kept = np.zeros((len(runs), len(caps_arr)))
    saved = np.zeros_like(kept)
    totals = np.array([r.total(signal) for r in runs], float)
    for i, run in enumerate(runs):
        q = run.counts[signal]
        if not len(q):
            kept[i] = run.success
            continue
        stop = np.minimum(np.searchsorted(q, caps_arr, side="left") + 1, len(q))
        kept[i] = run.success & (stop >= run.decided_at)
        saved[i] = totals[i] - q[stop - 1]
    success = np.array([r.success for r in runs], float)[:, None]
    failure = 1.0 - success
    index, groups = task_index(runs)
    counts = group_resample_counts(groups, np.random.default_rng(seed), resamples)
    ones = np.ones_like(kept)

    def ratios(num: npt.NDArray[Any], den: npt.NDArray[Any]) -> list[Estimate]:
        return ratio_estimates(by_task(num, index, groups), by_task(den, index, groups), counts)

    rate = ratios(kept, ones)
    share = ratios(kept, ones * success)
    all_saved = ratios(saved, ones * totals[:, None])
    fail_saved = ratios(saved * failure, ones * (totals[:, None] * failure))
    return [
        CapRow(signal, int(c), rate[j], share[j], all_saved[j], fail_saved[j])
        for j, c in enumerate(caps_arr)
    ]


def smallest_cap(rows: Sequence[CapRow], share: float) -> CapRow | None:
    """The first row (smallest cap) whose share of successes kept reaches ``share``."""
    for row in rows:
        if row.kept_share.mean >= share - 1e-12:
            return row
    return None


def time_to_success(runs: Sequence[RunCost]) -> list[float]:
    """F(t) for t = 1 .. longest run: the share of runs whose success was decided by turn t."""
    longest = max((r.steps for r in runs), default=0)
    decided = np.array([r.decided_at if r.success else np.inf for r in runs])
    return [float(np.mean(decided <= t)) for t in range(1, longest + 1)]


def _trials(runs: Sequence[RunCost]) -> list[npt.NDArray[np.float64]]:
    """Per task, an array (trials × 3) of (success, decided_at, turns); pooled if all single."""
    index, groups = task_index(runs)
    rows = np.array([[r.success, r.decided_at, r.steps] for r in runs], float)
    if groups == len(runs):  # one trial per task: pool the worlds as draws of one task
        return [rows]
    return [rows[index == g] for g in range(groups)]


def restart_success(trials: npt.NDArray[np.float64], cutoff: int, budget: int) -> float:
    """The chance of success within ``budget`` turns when attempts are cut at ``cutoff``.

    Args:
        trials: The task's recorded trials as rows (success, decided_at, turns).
        cutoff: Kill an attempt still running after this many turns and start afresh.
        budget: The turns allowed in all.

    Returns:
        P(success) by the recursion over the budget left (see the module docstring).
    """
    s, d, n = trials[:, 0].astype(bool), trials[:, 1], trials[:, 2]
    p = np.zeros(budget + 1)
    for left in range(1, budget + 1):
        m = min(cutoff, left)
        ended = n <= m  # the attempt ends by itself: its outcome stands
        if left <= cutoff:  # the last attempt, cut at the budget left
            value = np.where(ended, s, s & (d <= left))
        else:
            value = np.where(ended, s, p[left - cutoff])
        p[left] = float(value.mean())
    return float(p[budget])


@dataclass(frozen=True, slots=True)
class RestartRow:
    """Success within the budget when attempts restart at ``cutoff``, against continuing."""

    cutoff: int
    success: Estimate
    gain: Estimate  # success(cutoff) − success(continue), paired over the same resamples


@dataclass(frozen=True, slots=True)
class Restarts:
    """The restart study: continuing against restarting at each cutoff, under one budget."""

    budget: int
    pooled: bool
    tasks: int
    continuing: Estimate
    rows: list[RestartRow]

    @property
    def best(self) -> RestartRow:
        """The cutoff with the highest success (the earliest of ties)."""
        return max(self.rows, key=lambda r: (round(r.success.mean, 12), -r.cutoff))

    def verdict(self) -> str:
        """One line: whether restarting beats continuing, with its interval."""
        best = self.best
        gain = best.gain
        if gain.mean <= 1e-12:
            return f"continuing is best: no cutoff below {self.budget} turns raises success"
        sure = "beats" if gain.low > 0 else "may beat (the interval includes 0)"
        return (
            f"restarting at {best.cutoff} turns {sure} continuing: success "
            f"{best.success.mean:.3f} vs {self.continuing.mean:.3f} within {self.budget} turns "
            f"(gain {gain.mean:+.3f}, 95% [{gain.low:+.3f}, {gain.high:+.3f}])"
        )


def restarts(
    runs: Sequence[RunCost], budget: int | None = None, seed: int = 0, resamples: int = 2000
) -> Restarts:
    """Restarting at every cutoff 1 .. budget−1 against continuing, within ``budget`` turns.

    Args:
        runs: The recorded runs.
        budget: The turns allowed per task (default: the longest recorded run).
        seed: The bootstrap's seed.
        resamples: The task bootstrap's resamples.

    Returns:
        The study (see the module docstring for the model).
    """
    longest = max((r.steps for r in runs), default=1)
    b = budget or longest
    groups = _trials(runs)
    pooled = len(groups) == 1 and len(runs) > 1
    cutoffs = list(range(1, b + 1))  # the last (cutoff = budget) is continuing
    values = np.array([[restart_success(g, c, b) for c in cutoffs] for g in groups])
    rng = np.random.default_rng(seed)
    if pooled:
        rows = groups[0]
        draws = np.array(
            [
                [restart_success(rows[idx], c, b) for c in cutoffs]
                for idx in rng.integers(0, len(rows), size=(POOLED_RESAMPLES, len(rows)))
            ]
        )
    else:
        counts = group_resample_counts(len(groups), rng, resamples)
        draws = (counts @ values) / len(groups)
    point = values.mean(axis=0)
    gains = draws - draws[:, -1:]

    def estimate(mean: float, sample: npt.NDArray[np.float64]) -> Estimate:
        low, high = np.quantile(sample, [0.025, 0.975])
        return Estimate(float(mean), float(low), float(high), len(groups))

    table = [
        RestartRow(c, estimate(point[j], draws[:, j]), estimate(point[j] - point[-1], gains[:, j]))
        for j, c in enumerate(cutoffs[:-1])
    ]
    return Restarts(b, pooled, len(groups), estimate(point[-1], draws[:, -1]), table)
