"""The likelihood of a record under a task effect, and its maximum over effects and structures.

A task's likelihood integrates its runs' likelihood in every table cell over
the effect's shift (Gauss–Hermite) and, with the latent length, sums it over the
length's negative binomial (the package docstring gives the formula).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from opar_sim.calibration.heterogeneity.record import Key, TaskRuns
from opar_sim.calibration.heterogeneity.table import Table
from opar_sim.measure.stats import require_scipy

HERMITE = np.polynomial.hermite.hermgauss(24)
SMOOTHING = 10.0  # pseudo-runs pulling a cell's tool-call pmf (~24 runs) to the feature's


def _pmf(counts: np.ndarray, top: int) -> np.ndarray:
    hist = np.bincount(np.clip(counts, 0, top), minlength=top + 1).astype(float)
    return hist


def cell_loglik(table: Table, tasks: Sequence[TaskRuns]) -> np.ndarray:
    """The log of Π_j P^y (1 − P)^(1−y) f_y(t_j) of every task at every grid point.

    Args:
        table: The simulated table.
        tasks: The tasks (their features must be in the table).

    Returns:
        The per-task, per-grid-point log-likelihoods.
    """
    top = max(table.top, max(int(t.tool_calls.max()) for t in tasks)) + 1
    cache: dict[Key, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    out = np.zeros((len(tasks), table.rows))
    grid = len(table.u)
    for i, t in enumerate(tasks):
        x = t.key
        if x not in cache:
            s, c = table.success[x], table.calls[x]
            logs = []
            for outcome in (True, False):
                mask = s == outcome
                cells = np.array([_pmf(c[g][mask[g]], top) for g in range(table.rows)])
                # smoothed towards the pooled pmf of the same length (all shifts)
                blocks = cells.reshape(len(table.lengths), grid, -1)
                pooled = blocks.sum(axis=1, keepdims=True)
                pooled = pooled + 1e-3 * pooled.sum(axis=2, keepdims=True) / (top + 1) + 1e-9
                pooled = np.repeat(pooled / pooled.sum(axis=2, keepdims=True), grid, axis=1)
                pooled = pooled.reshape(cells.shape)
                smooth = (cells + SMOOTHING * pooled) / (
                    cells.sum(axis=1, keepdims=True) + SMOOTHING
                )
                logs.append(np.log(smooth))
            cache[x] = (np.log(table.rate(x)), logs[0], logs[1])
        log_p, log_fs, log_ff = cache[x]
        log_q = np.log1p(-np.exp(log_p))
        calls = np.clip(t.tool_calls, 0, top)
        for y, tc in zip(t.success, calls, strict=True):
            out[i] += (log_p + log_fs[:, tc]) if y else (log_q + log_ff[:, tc])
    return out


def grid_weights(table: Table, mean: float | np.ndarray, sd: float) -> np.ndarray:
    """The weight of each grid point under N(mean, sd²), by Gauss–Hermite and interpolation.

    Args:
        table: The table (its grid).
        mean: The shift's mean, or an array of means (one per task).
        sd: Its spread (0: a point mass, interpolated).

    Returns:
        Weights over the grid summing to 1 (mass beyond the grid goes to its ends):
        shape (grid,) for one mean, (means, grid) for an array.
    """
    nodes, weights = HERMITE
    means = np.atleast_1d(np.asarray(mean, dtype=float))
    u = np.clip(means[:, None] + math.sqrt(2.0) * sd * nodes[None, :], table.u[0], table.u[-1])
    w = weights / math.sqrt(math.pi)
    step = float(table.u[1] - table.u[0])
    pos = (u - table.u[0]) / step
    lo = np.minimum(np.floor(pos).astype(int), len(table.u) - 1)
    hi = np.minimum(lo + 1, len(table.u) - 1)
    frac = pos - lo
    out = np.zeros((len(means), len(table.u)))
    rows = np.repeat(np.arange(len(means)), len(nodes))
    np.add.at(out, (rows, lo.ravel()), np.tile(w, len(means)) * (1 - frac).ravel())
    np.add.at(out, (rows, hi.ravel()), np.tile(w, len(means)) * frac.ravel())
    out /= out.sum(axis=1, keepdims=True)
    return out if np.ndim(mean) else out[0]


@dataclass(frozen=True)
class Effect:
    """The fitted task effect u = mean + slope · x + sd · z, and the latent length if fitted.

    ``length_mean`` and ``length_size`` are the negative binomial's mean m and size k
    of the latent extra lookups r (None: no latent length); with ``length_slope`` c
    the mean depends on the feature: m · exp(c · x) (None: not fitted, c = 0).
    """

    mean: float
    slope: float
    sd: float
    length_mean: float | None = None
    length_size: float | None = None
    length_slope: float | None = None

    def params(self) -> dict[str, float]:
        """As the simulated agent's knobs."""
        return {
            "task_effect_mean": round(self.mean, 4),
            "task_effect_slope": round(self.slope, 4),
            "task_effect_sd": round(self.sd, 4),
        }

    def task_params(self) -> dict[str, float]:
        """The latent length as the task's knobs (``tool_chain``'s); empty without it."""
        if self.length_mean is None or self.length_size is None:
            return {}
        out = {
            "extra_reads_mean": round(self.length_mean, 4),
            "extra_reads_size": round(self.length_size, 4),
        }
        if self.length_slope is not None:
            out["extra_reads_slope"] = round(self.length_slope, 4)
        return out

    def to_dict(self) -> dict[str, float]:
        """As a JSON-ready mapping (the length's entries only when it is fitted)."""
        out = {"mean": self.mean, "slope": self.slope, "sd": self.sd}
        if self.length_mean is not None and self.length_size is not None:
            out |= {"length_mean": self.length_mean, "length_size": self.length_size}
            if self.length_slope is not None:
                out["length_slope"] = self.length_slope
        return out


def length_weights(table: Table, effect: Effect, feature: float = 0.0) -> np.ndarray:
    """The weight π(r) of each of the table's latent lengths under the effect's negative binomial.

    The negative binomial (mean m, size k) is evaluated on the integers; an integer
    between two grid lengths gives its mass to both, linearly (so the grid's mean
    length is the distribution's as long as it lies inside the grid), and the tail
    beyond the last grid length goes to it.

    Args:
        table: The table (its ``lengths``).
        effect: The fitted effect; without a length, all weight on the first length.
        feature: The task's feature x (the mean is m · exp(c · x) with a ``length_slope``).

    Returns:
        Weights over ``table.lengths`` summing to 1.
    """
    grid = table.lengths
    out = np.zeros(len(grid))
    if not table.has_lengths or effect.length_mean is None or effect.length_size is None:
        out[0] = 1.0
        return out
    top = int(grid[-1])
    r = np.arange(top + 1)
    m = effect.length_mean * math.exp((effect.length_slope or 0.0) * feature)
    m, k = min(max(m, 1e-9), float(top)), effect.length_size
    log_p = (
        np.array([math.lgamma(v + k) - math.lgamma(k) - math.lgamma(v + 1) for v in r])
        + k * math.log(k / (k + m))
        + r * math.log(m / (k + m))
    )
    pmf = np.exp(log_p)
    pmf[-1] += max(0.0, 1.0 - pmf.sum())  # the tail beyond the grid's last length
    hi = np.clip(np.searchsorted(grid, r, side="left"), 0, len(grid) - 1)
    lo = np.where(grid[hi] == r, hi, hi - 1)
    span = np.where(hi > lo, grid[hi] - grid[lo], 1.0)
    frac = np.where(hi > lo, (r - grid[lo]) / span, 0.0)
    np.add.at(out, lo, pmf * (1 - frac))
    np.add.at(out, hi, pmf * frac)
    weights: np.ndarray = out / out.sum()
    return weights


def cell_weights(table: Table, features: float | np.ndarray, effect: Effect) -> np.ndarray:
    """The weight of each (length, shift) row of the table for tasks with these features.

    Args:
        table: The table.
        features: A task's feature value, or an array of them (one per task).
        effect: The fitted effect (shift and, if any, latent length).

    Returns:
        π(r) · w(u) over the rows (length-major, as ``Table``): shape (rows,) for one
        feature value, (tasks, rows) for an array.
    """
    x = np.asarray(features, dtype=float)
    w = np.atleast_2d(grid_weights(table, effect.mean + effect.slope * x, effect.sd))
    cache = {v: length_weights(table, effect, v) for v in {float(v) for v in np.atleast_1d(x)}}
    pi = np.stack([cache[float(v)] for v in np.atleast_1d(x)])  # (tasks, lengths)
    joint: np.ndarray = (pi[:, :, None] * w[:, None, :]).reshape(w.shape[0], -1)
    return joint if np.ndim(x) else joint[0]


def loglik(table: Table, tasks: Sequence[TaskRuns], ll: np.ndarray, effect: Effect) -> float:
    """The log-likelihood of ``tasks`` (their ``cell_loglik`` rows ``ll``) under ``effect``."""
    x = np.array([t.feature for t in tasks])
    w = cell_weights(table, x, effect)
    top = ll.max(axis=1, keepdims=True)
    inner = np.maximum((w * np.exp(ll - top)).sum(axis=1), 1e-300)
    return float((top[:, 0] + np.log(inner)).sum())


def fit_effect(
    table: Table,
    tasks: Sequence[TaskRuns],
    ll: np.ndarray,
    homogeneous: bool = False,
    length_slope: bool = False,
) -> Effect:
    """The maximum-likelihood task effect (μ, b, σ); with ``homogeneous``, b = σ = 0.

    A table with the latent length also fits its negative binomial's mean and size
    (m, k), whatever ``homogeneous`` says (it concerns the shift), and with
    ``length_slope`` the mean's dependence on the feature, m · exp(c · x).

    Args:
        table: The simulated table.
        tasks: The tasks fitted.
        ll: Their ``cell_loglik`` rows.
        homogeneous: Fit one shift for every task (no feature effect, no spread).
        length_slope: Also fit the latent length's dependence on the feature (a table
            with lengths, tasks of more than one feature value).

    Returns:
        The fitted effect.
    """
    require_scipy()
    from scipy.optimize import minimize

    varying = len({t.feature for t in tasks}) > 1
    lo, hi = float(table.u[0]), float(table.u[-1])

    lengths = table.has_lengths
    by_feature = lengths and length_slope and varying
    top = float(table.lengths[-1])

    def unpack(v: np.ndarray) -> Effect:
        length: tuple[float | None, float | None, float | None] = (None, None, None)
        if by_feature:  # the last: the slope c of log m
            length = (None, None, float(np.clip(v[-1], -3.0, 3.0)))
            v = v[:-1]
        if lengths:  # then log m and log k
            m = float(np.clip(math.exp(np.clip(v[-2], -12.0, 5.0)), 1e-4, top))
            k = float(np.clip(math.exp(np.clip(v[-1], -8.0, 8.0)), 0.05, 200.0))
            length = (m, k, length[2])
            v = v[:-2]
        mean = float(np.clip(v[0], lo, hi))
        if homogeneous:
            return Effect(mean, 0.0, 0.0, *length)
        slope = float(np.clip(v[1], -5.0, 5.0)) if varying else 0.0
        return Effect(mean, slope, float(np.clip(math.exp(v[-1]), 0.0, 8.0)), *length)

    def nll(v: np.ndarray) -> float:
        return -loglik(table, tasks, ll, unpack(v))

    best: Any = None
    # the latent length's likelihood has several modes (a wide shift or a wide length):
    # with it, every start of the shift's mean is tried with a narrow and a wide spread
    spreads = (1.0, 3.0) if lengths and not homogeneous else (1.0,)
    for start_mean, start_sd in ((m, s) for m in (-1.0, 1.0, 3.0) for s in spreads):
        if homogeneous:
            start = np.array([start_mean])
        elif varying:
            start = np.array([start_mean, -0.5, math.log(start_sd)])
        else:
            start = np.array([start_mean, math.log(start_sd)])
        options: dict[str, Any] = {"xatol": 1e-3, "fatol": 1e-4}
        if lengths:  # log m, log k from 2 and 1, and a simplex of steps 0.5 (not scipy's 5 %)
            start = np.concatenate([start, [math.log(2.0), 0.0] + ([0.0] if by_feature else [])])
            options["initial_simplex"] = np.vstack([start, start + 0.5 * np.eye(len(start))])
            options["maxiter"] = 400 * len(start)
        res = minimize(nll, start, method="Nelder-Mead", options=options)
        if best is None or res.fun < best.fun:
            best = res
    return unpack(best.x)


@dataclass
class Fitted:
    """A fitted model: which structure (table) and the task effect on it, with its likelihood."""

    structure: str
    table: Table
    effect: Effect
    loglik: float


def fit_structures(
    tables: Sequence[tuple[str, Table]],
    lls: Sequence[np.ndarray],
    tasks: Sequence[TaskRuns],
    rows: Sequence[int],
    homogeneous: bool,
    length_slope: bool = False,
) -> Fitted:
    """The maximum-likelihood structure and task effect for the tasks at ``rows``.

    Args:
        tables: (label, table) per model structure.
        lls: Each table's ``cell_loglik`` of every task of the record.
        tasks: The tasks at ``rows``.
        rows: Their positions in the record (rows of ``lls``).
        homogeneous: Fit one shift for every task.
        length_slope: Fit the latent length's dependence on the feature (``fit_effect``).

    Returns:
        The best structure with its fitted effect.
    """
    best: Fitted | None = None
    for (label, table), ll in zip(tables, lls, strict=True):
        effect = fit_effect(table, tasks, ll[rows], homogeneous, length_slope)
        value = loglik(table, tasks, ll[rows], effect)
        if best is None or value > best.loglik:
            best = Fitted(label, table, effect, value)
    assert best is not None
    return best
