"""``advise``: what cap should my agent have, and would restarting beat continuing?

A cap on turns, tool calls or tokens is the simplest law of ``opar_sim.traces.stopping``
(stop after the first turn at which the count reaches the cap), so its effect on the
recorded runs is exact: a success is kept when the cap does not fire before the turn that
decided it.  ``cap_table`` gives, for every cap from 1 to the longest run, the success
rate under the cap, the share of successes kept and the share of the capped quantity
saved, with intervals from a bootstrap over tasks.  For tokens the curve only changes at
the recorded running totals, so those are the caps; past ``MAX_CAPS`` caps (a run of more
turns, or totals) they are thinned evenly.

``restarts`` answers the other question from the time-to-success distribution, and is a
model, not a replay: under a budget of B turns, an attempt still running at the cutoff c
is killed and a fresh one started; an attempt that ends by itself before c stands (its
outcome is not observable, so no restart follows it), and the last attempt is cut at the
budget left.  Each attempt is an independent draw from the recorded trials of the same
task (with replacement), so a task never solved stays unsolved however often it restarts;
when every task has one trial (a simulated run without ``trials``) the worlds are pooled
as draws of one task.  The chance of success within B is computed exactly by recursion
over the budget left, per task, and averaged over tasks; intervals come from the task
bootstrap (for pooled runs, from resampling runs).  The recursion has a closed form: past
the cutoff c, p(B) = a + q p(B − c) (a: the chance an attempt succeeds by itself within c
turns, q: that it is still running at c), so p(B) is that affine map applied (B − 1) // c
times to the last attempt's chance, computed by repeated squaring: every cutoff costs
O(trials + log B), whatever the budget (``MAX_BUDGET`` bounds it, ``MAX_CUTOFFS``
the cutoffs: past it they are thinned on a log scale).

``advise(rundir)`` answers both: ``Advice`` holds every cap table, the smallest caps and the
restarts (a record without a success: the caps' savings only), ``tables()``, ``to_dict()``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from opar_sim.core.errors import InputError
from opar_sim.measure.group_bootstrap import group_resample_counts, ratio_estimates
from opar_sim.measure.stats import Estimate
from opar_sim.measure.table import TextTable
from opar_sim.traces.runs import no_success_note
from opar_sim.traces.stopping import RunCost, by_task, load_costs, task_index

CAP_SIGNALS = ("steps", "calls", "tokens")
MAX_CAPS = 2000  # caps per signal (past it, thinned evenly)
MAX_TOKEN_CAPS = MAX_CAPS
MAX_CUTOFFS = 2000  # restart cutoffs studied (past it, thinned on a log scale)
MAX_BUDGET = 1_000_000  # the largest restart budget, in turns
POOLED_RESAMPLES = 300
SHOWN_ROWS = 16  # rows of each cap table shown (advise.json has every cap)


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
        """The row as JSON-ready fields (a share of no recorded success: null)."""
        kept = self.kept_share.to_dict()
        return {
            "signal": self.signal,
            "cap": self.cap,
            "success_rate": self.success_rate.to_dict(),
            "kept_share": None if self.kept_share.mean != self.kept_share.mean else kept,
            "saved": self.saved.to_dict(),
            "saved_on_failures": self.saved_failures.to_dict(),
        }


def default_caps(runs: Sequence[RunCost], signal: str) -> list[int]:
    """Every cap from 1 to the longest run (tokens: the running totals where the curve moves).

    Past ``MAX_CAPS`` the caps are thinned evenly (the first and the last kept).
    """
    longest = max((r.total(signal) for r in runs), default=0)
    if signal != "tokens":
        values = np.arange(1, max(longest, 1) + 1)
    else:
        values = np.unique(np.concatenate([r.counts["tokens"] for r in runs] + [np.array([1])]))
        values = values[values >= 1]
    if len(values) > MAX_CAPS:
        values = values[np.linspace(0, len(values) - 1, MAX_CAPS).round().astype(int)]
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
    decided = np.sort(np.array([r.decided_at if r.success else np.inf for r in runs]))
    by = np.searchsorted(decided, np.arange(1, longest + 1), side="right")
    return [float(k) for k in by / max(len(runs), 1)]


def _trials(runs: Sequence[RunCost]) -> list[npt.NDArray[np.float64]]:
    """Per task, an array (trials × 3) of (success, decided_at, turns); pooled if all single."""
    index, groups = task_index(runs)
    rows = np.array([[r.success, r.decided_at, r.steps] for r in runs], float)
    if groups == len(runs):  # one trial per task: pool the worlds as draws of one task
        return [rows]
    return [rows[index == g] for g in range(groups)]


def _weighted_at_most(
    values: npt.NDArray[np.float64], weights: npt.NDArray[np.float64], at: npt.NDArray[Any]
) -> npt.NDArray[np.float64]:
    """Per row of ``weights`` (resamples × trials): the share of weight on values <= each ``at``."""
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(weights[:, order], axis=1)
    cum = np.concatenate([np.zeros((len(weights), 1)), cum], axis=1)
    total = cum[:, -1:]
    return cum[:, np.searchsorted(values[order], at, side="right")] / total


def _restart_chances(
    trials: npt.NDArray[np.float64],
    weights: npt.NDArray[np.float64],
    cutoffs: npt.NDArray[np.int64],
    budget: int,
) -> npt.NDArray[np.float64]:
    """P(success within ``budget``) at each cutoff, per weighting of the trials (resample).

    Args:
        trials: Rows (success, decided_at, turns) of one task (or the pooled runs).
        weights: (resamples × trials) draw counts; a row of ones is the recorded trials.
        cutoffs: The cutoffs (a cutoff >= budget is continuing: one attempt).
        budget: The turns allowed in all.

    Returns:
        (resamples × cutoffs) chances, by the closed form of the module docstring.
    """
    s, d, n = trials[:, 0].astype(bool), trials[:, 1], trials[:, 2]
    inf = np.inf
    # an attempt that ends by itself (its turns <= c) stands: a success within c turns
    ends_won = np.where(s, n, inf)
    # the last attempt, cut at r turns left: a success decided (or ended) by then
    won_by = np.where(s, np.minimum(n, d), inf)
    c = np.minimum(cutoffs, budget)
    a = _weighted_at_most(ends_won, weights, c)
    q = 1.0 - _weighted_at_most(n, weights, c)  # still running at the cutoff
    k = (budget - 1) // c  # the attempts before the last
    last = _weighted_at_most(won_by, weights, budget - k * c)
    # p = f^k(last), f(x) = a + q x, by repeated squaring of the affine map
    acc_a, acc_q = np.zeros_like(a), np.ones_like(a)
    pow_a, pow_q = a.copy(), q.copy()
    k = k.copy()
    while np.any(k > 0):
        odd = (k & 1).astype(bool)
        acc_a = np.where(odd, pow_a + pow_q * acc_a, acc_a)
        acc_q = np.where(odd, pow_q * acc_q, acc_q)
        pow_a, pow_q = pow_a + pow_q * pow_a, pow_q * pow_q
        k >>= 1
    return np.asarray(acc_a + acc_q * last, float)


def restart_success(trials: npt.NDArray[np.float64], cutoff: int, budget: int) -> float:
    """The chance of success within ``budget`` turns when attempts are cut at ``cutoff``.

    Args:
        trials: The task's recorded trials as rows (success, decided_at, turns).
        cutoff: Kill an attempt still running after this many turns and start afresh.
        budget: The turns allowed in all.

    Returns:
        P(success) by the recursion over the budget left (see the module docstring).
    """
    ones = np.ones((1, len(trials)))
    return float(_restart_chances(trials, ones, np.array([cutoff]), budget)[0, 0])


def restart_cutoffs(budget: int) -> list[int]:
    """The cutoffs studied: 1 .. budget (the last is continuing), thinned past ``MAX_CUTOFFS``."""
    if budget <= MAX_CUTOFFS:
        return list(range(1, budget + 1))
    picks = np.unique(np.geomspace(1, budget - 1, MAX_CUTOFFS - 1).round().astype(np.int64))
    return [int(c) for c in picks if c < budget] + [budget]


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
        if not self.rows:  # runs of no turn or one: no cutoff below the budget
            return f"no restart to study within a budget of {self.budget} turn(s)"
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

    Past ``MAX_CUTOFFS`` cutoffs they are thinned (evenly on a log scale: every short
    cutoff, fewer long ones).

    Args:
        runs: The recorded runs.
        budget: The turns allowed per task (default: the longest recorded run), at most
            ``MAX_BUDGET``.
        seed: The bootstrap's seed.
        resamples: The task bootstrap's resamples.

    Returns:
        The study (see the module docstring for the model).

    Raises:
        InputError: for a budget over ``MAX_BUDGET``.
    """
    longest = max((r.steps for r in runs), default=1)
    b = budget or max(longest, 1)
    if not 1 <= b <= MAX_BUDGET:
        raise InputError(f"budget {b:,} turns: must lie in 1 .. {MAX_BUDGET:,}")
    groups = _trials(runs)
    pooled = len(groups) == 1 and len(runs) > 1
    cutoffs = restart_cutoffs(b)  # the last (cutoff = budget) is continuing
    at = np.array(cutoffs, np.int64)
    values = np.concatenate([_restart_chances(g, np.ones((1, len(g))), at, b) for g in groups])
    rng = np.random.default_rng(seed)
    if pooled:
        rows = groups[0]
        idx = rng.integers(0, len(rows), size=(POOLED_RESAMPLES, len(rows)))
        weights = np.zeros((POOLED_RESAMPLES, len(rows)))
        np.add.at(weights, (np.arange(POOLED_RESAMPLES)[:, None], idx), 1.0)
        draws = _restart_chances(rows, weights, at, b)
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


@dataclass(frozen=True)
class Advice:
    """Every cap's effect, the smallest caps keeping a share of the successes, the restarts."""

    runs: int
    tasks: int
    share: float
    caps: dict[str, list[CapRow]]  # per signal of ``CAP_SIGNALS``, every cap
    best: dict[str, CapRow | None]  # per signal, the smallest cap keeping ``share``
    restarts: Restarts
    time_to_success: list[float]
    note: str = ""  # no recorded success: the caps show only what each saves

    def to_dict(self) -> dict[str, Any]:
        """``advise.json``: every cap of every signal, time to success, the restart study."""
        study = self.restarts
        out: dict[str, Any] = {"runs": self.runs, "tasks": self.tasks, "share": self.share}
        out |= {signal: [r.to_dict() for r in rows] for signal, rows in self.caps.items()}
        out["time_to_success"] = self.time_to_success
        if self.note:  # no success: no restart to judge
            return out | {"note": self.note}
        out["restarts"] = {
            "budget": study.budget,
            "pooled": study.pooled,
            "continue": study.continuing.to_dict(),
            "cutoffs": [
                {"cutoff": r.cutoff, "success": r.success.to_dict(), "gain": r.gain.to_dict()}
                for r in study.rows
            ],
            "verdict": study.verdict(),
        }
        return out

    def table(self) -> TextTable:
        """The smallest cap of each signal keeping ``share`` of the successes."""
        smallest = [
            [signal, str(best.cap), _cell(best.kept_share), _cell(best.saved)]
            for signal, best in self.best.items()
            if best is not None
        ]
        return TextTable(
            f"smallest caps keeping {self.share:.0%} of the successes",
            ["signal", "cap", "successes kept", "saved (all runs)"],
            smallest,
            [
                f"{self.runs} runs of {self.tasks} tasks; exact replay of each cap on the "
                "recorded runs; 95 % intervals from a bootstrap over tasks"
            ],
        )

    def cap_table(self, signal: str) -> TextTable:
        """One signal's caps (thinned evenly past ``SHOWN_ROWS``; the smallest one starred)."""
        rows, best = self.caps[signal], self.best[signal]
        table = [
            [
                str(r.cap) + (" *" if r is best else ""),
                _cell(r.success_rate),
                _cell(r.kept_share),
                _cell(r.saved),
                _cell(r.saved_failures),
            ]
            for r in _shown(rows, best)
        ]
        columns = [f"{signal} cap", "success rate", "successes kept", "saved (all)", "saved (fail)"]
        notes = [self.note or f"* the smallest cap keeping {self.share:.0%} of the successes"]
        if len(table) < len(rows):
            notes.append(f"{len(table)} of {len(rows)} caps shown; every cap in advise.json")
        return TextTable(f"{signal} caps", columns, table, notes, priority=(0, 1, 0, 0, 2))

    def restart_table(self) -> TextTable:
        """Restarting at a few cutoffs (and the best) against continuing, with the verdict."""
        study = self.restarts
        pick = sorted(
            {1, 2, 3, 5, 8, 10, 12, 15, 20, 25, study.budget - 1} & set(range(1, study.budget))
        )
        table = [
            [str(r.cutoff), _cell(r.success), _cell(r.gain)]
            for r in study.rows
            if r.cutoff in pick or r is study.best
        ]
        table.append(["continue", _cell(study.continuing), "0"])
        how = (
            "the worlds pooled as draws of one task (one trial each)"
            if study.pooled
            else f"each attempt a fresh draw from its own task's recorded trials ({study.tasks} "
            "tasks)"
        )
        notes = [
            f"restart: an attempt still running at the cutoff is killed and a fresh one started, "
            f"within {study.budget} turns in all; an attempt that ends by itself stands",
            f"estimated from the time-to-success distribution: {how}, independent given the task",
            study.verdict(),
        ]
        return TextTable(
            f"restart at a cutoff vs continue (budget {study.budget} turns)",
            ["cutoff", "success within budget", "gain vs continue"],
            table,
            notes,
        )

    def tables(self) -> list[TextTable]:
        """Every table, in the command's order: each signal's caps, the smallest, restarts."""
        if self.note:
            return [self.cap_table(signal) for signal in self.caps]
        return [
            *(self.cap_table(signal) for signal in self.caps),
            self.table(),
            self.restart_table(),
        ]


def advise(
    rundir: str | Path,
    *,
    share: float = 0.99,
    budget: int | None = None,
    of: str | None = None,
) -> Advice:
    """The caps on turns, tool calls and tokens, and the restart study, for a run directory.

    Args:
        rundir: A run directory (simulated, or imported by ``opar-sim traces``).
        share: The share of the recorded successes a cap must keep.
        budget: The turns allowed per task in the restart study (default: the longest run).
        of: Whose runs, in a run of several controllers.

    Returns:
        The advice.

    Raises:
        InputError: when the directory is not a run.
    """
    runs = load_costs(rundir, of)
    note = "" if any(r.success for r in runs) else no_success_note(Path(rundir))
    caps = {signal: cap_table(runs, signal) for signal in CAP_SIGNALS}
    return Advice(
        len(runs),
        len({r.task for r in runs}),
        share,
        caps,
        {signal: smallest_cap(rows, share) for signal, rows in caps.items()},
        restarts(runs, budget),
        time_to_success(runs),
        note,
    )


def _cell(e: Estimate) -> str:
    return "–" if e.mean != e.mean else f"{e.mean:.3f} [{e.low:.3f}, {e.high:.3f}]"  # NaN: –


def _shown(rows: list[CapRow], best: CapRow | None) -> list[CapRow]:
    """Every row of a short table; else an even thinning, with the recommended cap kept."""
    if len(rows) <= SHOWN_ROWS + 14:
        return rows
    picks = set(np.linspace(0, len(rows) - 1, SHOWN_ROWS).round().astype(int).tolist())
    if best is not None:
        picks.add(rows.index(best))
    return [rows[k] for k in sorted(picks)]
