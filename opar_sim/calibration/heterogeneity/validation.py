"""The held-out check: fit on some task folds, predict the others, and the verdict.

Each fold is predicted by the model fitted on the other folds, the pooled
out-of-fold row by every fold's model; ``Validation.fits`` is the verdict
stated in docs/calibration.md (the package docstring).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from opar_sim.calibration.heterogeneity.likelihood import (
    Effect,
    Fitted,
    cell_loglik,
    fit_structures,
)
from opar_sim.calibration.heterogeneity.predictions import (
    KS,
    SPREAD,
    Stats,
    model_draws,
    parametric_pvalues,
    predict,
    predicted_histogram,
    record_statistics,
    record_stats,
    simulated_records,
    success_histogram,
    task_bootstrap,
)
from opar_sim.calibration.heterogeneity.record import Record, TaskRuns
from opar_sim.calibration.heterogeneity.table import Table
from opar_sim.measure.stats import holm, require_scipy
from opar_sim.spec.schema import SpecError

MAX_K = 4
KS_ALPHA = 0.05
RESAMPLES = 2000  # simulated records behind the parametric p-values (KS, spread, folds)
FOLD_ALPHA = 0.05  # family-wise level of the per-fold tests (Holm over folds x tests)


@dataclass
class Check:
    """The model's predictions on a set of tasks against the record's intervals there.

    ``failures`` is the interval verdict (the pooled row's); ``pvalues`` are the
    parametric p-values of the same statistics (held-out record ranked among records
    simulated from the model), and ``adjusted`` their Holm adjustment over every
    fold's tests, set by ``validate`` on the fold rows, whose verdict is ``rejected``.
    """

    label: str
    tasks: int
    runs: int
    predicted: Stats
    recorded: Stats
    low: Stats
    high: Stats
    ks_statistic: float
    ks_pvalue: float
    held_out: bool = True
    ks_pvalue_independent: float = math.nan  # ks_2samp's own, as if every run were independent
    spread_recorded: list[float] = field(default_factory=list)  # tasks by successes 0..K
    spread_expected: list[float] = field(default_factory=list)
    spread_pvalue: float = math.nan
    pvalues: dict[str, float] = field(default_factory=dict)
    adjusted: dict[str, float] = field(default_factory=dict)

    def failures(self) -> list[str]:
        """The checks that failed at 5 % each (intervals, KS, spread); empty: all passed."""
        bad = []
        for k, (p, lo, hi) in enumerate(
            zip(self.predicted.pass_k, self.low.pass_k, self.high.pass_k, strict=True), 1
        ):
            if not lo <= p <= hi:
                bad.append(f"pass^{k}")
        for name, p, lo, hi in (
            (
                "success tool calls",
                self.predicted.success_calls,
                self.low.success_calls,
                self.high.success_calls,
            ),
            (
                "failure tool calls",
                self.predicted.failure_calls,
                self.low.failure_calls,
                self.high.failure_calls,
            ),
        ):
            if math.isfinite(lo) and not lo <= p <= hi:
                bad.append(name)
        if self.ks_pvalue < KS_ALPHA:
            bad.append(KS)
        if self.spread_pvalue < KS_ALPHA:
            bad.append(SPREAD)
        return bad

    def rejected(self, alpha: float = FOLD_ALPHA) -> list[str]:
        """The tests rejected after Holm's adjustment over all folds (a fold row's verdict)."""
        return [name for name, p in self.adjusted.items() if p < alpha]

    def to_dict(self) -> dict[str, Any]:
        """The check as a JSON-ready mapping."""
        return {
            "label": self.label,
            "held_out": self.held_out,
            "tasks": self.tasks,
            "runs": self.runs,
            "predicted": vars(self.predicted),
            "recorded": vars(self.recorded),
            "ci95_low": vars(self.low),
            "ci95_high": vars(self.high),
            "ks_statistic": self.ks_statistic,
            "ks_pvalue": self.ks_pvalue,
            "ks_pvalue_independent_runs": self.ks_pvalue_independent,
            "spread_recorded": self.spread_recorded,
            "spread_expected": self.spread_expected,
            "spread_pvalue": self.spread_pvalue,
            "parametric_pvalues": self.pvalues,
            "holm_adjusted": self.adjusted,
            "failed": self.failures(),
            "rejected": self.rejected(),
        }


def _check(
    label: str,
    parts: Sequence[tuple[Sequence[TaskRuns], Fitted]],
    ks: int,
    rng: np.random.Generator,
    held_out: bool = True,
) -> Check:
    """Check the predictions of each (tasks, fitted model) part, pooled, against those tasks."""
    require_scipy()
    from scipy.stats import ks_2samp

    tasks = [t for group, _ in parts for t in group]
    preds = [predict(f.table, group, f.effect, ks) for group, f in parts]
    weights = [len(group) for group, _ in parts]
    runs = [sum(len(t.success) for t in group) for group, _ in parts]
    pooled = Stats(
        [float(np.average([p.pass_k[k] for p in preds], weights=weights)) for k in range(ks)],
        _nanaverage([p.success_calls for p in preds], runs),
        _nanaverage([p.failure_calls for p in preds], runs),
    )
    draws = np.concatenate([model_draws(f.table, group, f.effect, rng) for group, f in parts])
    recorded = np.concatenate([t.tool_calls for t in tasks])
    wins = np.concatenate([t.success for t in tasks])
    sizes = [len(t.success) for t in tasks]
    expected = sum(
        (predicted_histogram(f.table, group, f.effect, ks) for group, f in parts),
        np.zeros(ks + 1),
    )
    test = ks_2samp(recorded, draws)
    # the runs of a task are not independent (one difficulty, one world): every p-value
    # comes from records simulated with the same tasks and runs, not from a formula
    fakes = [simulated_records(f.table, g, f.effect, rng, RESAMPLES) for g, f in parts]
    fake_calls = np.concatenate([c for c, _ in fakes], axis=1)
    fake_wins = np.concatenate([y for _, y in fakes], axis=1)
    observed = record_statistics(recorded[None, :], wins[None, :], sizes, ks, draws)
    simulated = record_statistics(fake_calls, fake_wins, sizes, ks, draws)
    pvalues = parametric_pvalues(observed, simulated)
    low, high = task_bootstrap(tasks, ks, rng)
    return Check(
        label,
        len(tasks),
        len(recorded),
        pooled,
        record_stats(tasks, ks),
        low,
        high,
        float(test.statistic),
        pvalues[KS],
        held_out,
        float(test.pvalue),
        [float(v) for v in success_histogram(wins[None, :], sizes, ks)[0]],
        [float(v) for v in expected],
        pvalues[SPREAD],
        pvalues,
    )


def _nanaverage(values: list[float], weights: list[int]) -> float:
    v = np.array(values, dtype=float)
    w = np.array(weights, dtype=float)
    keep = np.isfinite(v)
    return float(np.average(v[keep], weights=w[keep])) if keep.any() else math.nan


def folds_by_task(n_tasks: int, k: int, seed: int) -> list[list[int]]:
    """The k folds of task positions: shuffled with ``seed``, then dealt round-robin."""
    order = np.random.default_rng(seed).permutation(n_tasks)
    return [sorted(int(i) for i in order[f::k]) for f in range(k)]


@dataclass
class Validation:
    """The fit on all tasks, the held-out folds, their pooled check and the in-sample one."""

    fitted: Fitted
    folds: list[Check]
    fold_fits: list[Fitted]
    pooled: Check
    in_sample: Check
    homogeneous: bool
    structures: list[str] = field(default_factory=list)

    @property
    def effect(self) -> Effect:
        """The task effect fitted on all tasks."""
        return self.fitted.effect

    @property
    def fits(self) -> bool:
        """The stated verdict: the pooled held-out row passes and no fold test is rejected.

        The pooled row passes every check at 5 % (``Check.failures``); the folds'
        tests, all of them together, are Holm-adjusted and none may fall below
        ``FOLD_ALPHA`` (``Check.rejected``).  The in-sample check never counts.
        """
        return not self.failures()

    def failures(self) -> list[str]:
        """What failed: the pooled row's checks, then each fold's rejected tests, named."""
        bad = [f"pooled {name}" for name in self.pooled.failures()]
        for c in self.folds:
            bad += [f"{c.label} {name}" for name in c.rejected()]
        return bad

    def to_dict(self) -> dict[str, Any]:
        """The validation as a JSON-ready mapping."""
        return {
            "fits": self.fits,
            "failed": self.failures(),
            "fold_alpha_holm": FOLD_ALPHA,
            "homogeneous": self.homogeneous,
            "structures": self.structures,
            "structure": self.fitted.structure,
            "effect": self.effect.to_dict(),
            "loglik": self.fitted.loglik,
            "pooled_held_out": self.pooled.to_dict(),
            "folds": [
                c.to_dict() | {"structure": f.structure, "effect": f.effect.to_dict()}
                for c, f in zip(self.folds, self.fold_fits, strict=True)
            ],
            "in_sample": self.in_sample.to_dict(),
        }


def validate(
    record: Record,
    tables: Table | Sequence[tuple[str, Table]],
    folds: int = 5,
    seed: int = 0,
    homogeneous: bool = False,
    length_slope: bool = False,
) -> Validation:
    """Fit on all tasks, and fit-and-predict each task fold on the others (package docstring).

    With several tables (model structures, e.g. shares of wrong writes), each
    fit also picks the structure of highest likelihood, on its training tasks only.

    Args:
        record: The record.
        tables: The model's table (``build_table`` on the record's feature values), or
            (label, table) per structure.
        folds: How many task folds (at most the number of tasks, at least 2).
        seed: Seeds the fold split, the bootstrap and the model draws.
        homogeneous: Fit one shift for every task (a model without heterogeneity).
        length_slope: With a table of latent lengths, fit their mean's dependence on the
            feature too.

    Returns:
        The validation; ``fits`` is its verdict.
    """
    n = len(record.tasks)
    if n < 2:
        raise SpecError(f"{record.source}: cross-validation needs at least 2 tasks, found {n}")
    named = [("model", tables)] if isinstance(tables, Table) else list(tables)
    k = max(2, min(folds, n))
    ks = min(MAX_K, min(len(t.success) for t in record.tasks))
    rng = np.random.default_rng(seed)
    lls = [cell_loglik(table, record.tasks) for _, table in named]
    fitted = fit_structures(named, lls, record.tasks, list(range(n)), homogeneous, length_slope)
    checks, fits, parts = [], [], []
    for f, held in enumerate(folds_by_task(n, k, seed)):
        train = [i for i in range(n) if i not in set(held)]
        fold_fit = fit_structures(
            named, lls, record.subset(train), train, homogeneous, length_slope
        )
        part = (record.subset(held), fold_fit)
        checks.append(_check(f"fold {f + 1}", [part], ks, rng))
        fits.append(fold_fit)
        parts.append(part)
    adjusted = holm([p for c in checks for p in c.pvalues.values()])
    for i, c in enumerate(checks):
        m = len(c.pvalues)
        c.adjusted = dict(zip(c.pvalues, adjusted[i * m : (i + 1) * m], strict=True))
    pooled = _check("held-out, pooled", parts, ks, rng)
    in_sample = _check("in-sample", [(record.tasks, fitted)], ks, rng, held_out=False)
    return Validation(
        fitted, checks, fits, pooled, in_sample, homogeneous, [label for label, _ in named]
    )
