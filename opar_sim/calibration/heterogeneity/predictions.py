"""What the fitted model predicts for a set of tasks, and the record's own statistics and intervals.

pass^k and the mean tool calls, the model's draws and whole simulated records
(a task's runs sharing one world), the statistics tested on each record and
their parametric p-values, and the record's task-bootstrap intervals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from opar_sim.calibration.heterogeneity.likelihood import Effect, cell_weights
from opar_sim.calibration.heterogeneity.record import Key, TaskRuns
from opar_sim.calibration.heterogeneity.table import TABLE_TRIALS, Table
from opar_sim.measure.pass_k import pass_hat_k

BOOTSTRAP = 2000
MODEL_DRAWS = 50  # model draws per recorded run for the KS test
SPREAD = "spread of successes per task"
KS = "KS tool calls"


@dataclass
class Stats:
    """pass^1..pass^K, mean tool calls of successes and failures, of a set of tasks."""

    pass_k: list[float]
    success_calls: float
    failure_calls: float


def predict(table: Table, tasks: Sequence[TaskRuns], effect: Effect, ks: int) -> Stats:
    """The model's pass^k and mean tool calls on ``tasks`` (their features and run counts).

    pass^k of a grid cell is the unbiased C(s, k) / C(E, k) of its E episodes; a
    task's is the weighted mean over the grid, and the set's the mean over tasks.
    Mean tool calls weight each task by its number of runs.
    """
    pk = np.zeros(ks)
    num_s = den_s = num_f = den_f = 0.0
    for t in tasks:
        w = cell_weights(table, t.feature, effect)
        s, c = table.success[t.key], table.calls[t.key]
        e = s.shape[1]
        wins = s.sum(axis=1)
        for k in range(1, ks + 1):
            cell = np.array([math.comb(int(n), k) for n in wins]) / math.comb(e, k)
            pk[k - 1] += float(np.dot(w, cell))
        n = len(t.success)
        num_s += n * float(np.dot(w, (s * c).sum(axis=1) / e))
        den_s += n * float(np.dot(w, wins / e))
        num_f += n * float(np.dot(w, (~s * c).sum(axis=1) / e))
        den_f += n * float(np.dot(w, (e - wins) / e))
    return Stats(
        list(pk / len(tasks)),
        num_s / den_s if den_s else math.nan,
        num_f / den_f if den_f else math.nan,
    )


def _worlds(table: Table, x: Key, half: int) -> np.ndarray:
    """The episode columns of the table's worlds of one half (0: even worlds, 1: odd)."""
    worlds = table.calls[x].shape[1] // TABLE_TRIALS
    chosen = np.arange(half, worlds, 2) if worlds > 1 else np.arange(worlds)
    return (chosen[:, None] * TABLE_TRIALS + np.arange(TABLE_TRIALS)[None, :]).ravel()


def model_draws(
    table: Table, tasks: Sequence[TaskRuns], effect: Effect, rng: np.random.Generator
) -> np.ndarray:
    """Tool calls of ``MODEL_DRAWS`` model runs per recorded run, from the even worlds."""
    out = []
    for t in tasks:
        w = cell_weights(table, t.feature, effect)
        cols = _worlds(table, t.key, 0)
        n = MODEL_DRAWS * len(t.success)
        g = rng.choice(len(w), size=n, p=w)
        e = cols[rng.integers(len(cols), size=n)]
        out.append(table.calls[t.key][g, e])
    return np.concatenate(out)


def simulated_records(
    table: Table,
    tasks: Sequence[TaskRuns],
    effect: Effect,
    rng: np.random.Generator,
    count: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Tool calls and successes of ``count`` records like ``tasks`` from the model.

    Each task of a record draws one grid shift and one simulated world of that
    cell, from the odd worlds (the draws ``model_draws`` compares with are the
    even ones, so a simulated record differs from them as a fresh record does),
    and takes its runs from that world's trials: a task's runs share their world
    and difficulty, as recorded runs do.

    Returns:
        (tool calls, successes), each of shape (count, runs), the runs task by task
        in the order of ``tasks``.
    """
    calls, wins = [], []
    for t in tasks:
        w = cell_weights(table, t.feature, effect)
        worlds = _worlds(table, t.key, 1).reshape(-1, TABLE_TRIALS)[:, 0]
        g = rng.choice(len(w), size=count, p=w)
        base = worlds[rng.integers(len(worlds), size=count)]
        n = len(t.success)
        idx = base[:, None] + (np.arange(n) % TABLE_TRIALS)[None, :]
        calls.append(table.calls[t.key][g[:, None], idx])
        wins.append(table.success[t.key][g[:, None], idx])
    return np.concatenate(calls, axis=1), np.concatenate(wins, axis=1)


def success_histogram(success: np.ndarray, sizes: Sequence[int], ks: int) -> np.ndarray:
    """Tasks by successes in their first ``ks`` runs (0 … ks), per record.

    Args:
        success: Successes, shape (records, runs), the runs task by task.
        sizes: The runs of each task, in order.
        ks: The runs counted per task (the fewest runs of a task, at most 4).

    Returns:
        Counts of tasks, shape (records, ks + 1).
    """
    rows = np.atleast_2d(success)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int)
    wins = np.stack([rows[:, a : a + ks].sum(axis=1) for a in starts], axis=1)  # (records, tasks)
    hist = np.zeros((rows.shape[0], ks + 1))
    for c in range(ks + 1):
        hist[:, c] = (wins == c).sum(axis=1)
    return hist


def predicted_histogram(
    table: Table, tasks: Sequence[TaskRuns], effect: Effect, ks: int
) -> np.ndarray:
    """The model's expected number of tasks with 0 … ``ks`` successes in their first ks runs.

    A task's chances are those of the table's worlds (``TABLE_TRIALS`` trials each,
    the first ks counted) at each grid shift, weighted by the task effect.
    """
    out = np.zeros(ks + 1)
    for t in tasks:
        w = cell_weights(table, t.feature, effect)
        s = table.success[t.key]
        worlds = s.reshape(s.shape[0], -1, TABLE_TRIALS)[:, :, :ks].sum(axis=2)  # (grid, worlds)
        cells = np.stack([(worlds == c).mean(axis=1) for c in range(ks + 1)], axis=1)
        out += w @ cells
    return out


def record_statistics(
    calls: np.ndarray,
    success: np.ndarray,
    sizes: Sequence[int],
    ks: int,
    draws: np.ndarray,
) -> dict[str, np.ndarray]:
    """The tested statistics of each record (rows): pass^k, mean lengths, KS D, spread.

    Args:
        calls: Tool calls, shape (records, runs), the runs task by task.
        success: Successes, the same shape.
        sizes: The runs of each task, in order.
        ks: The largest k of pass^k.
        draws: The model's tool calls the KS distance is measured against.

    Returns:
        Name -> one value per record (a mean over no successes is NaN).
    """
    c = np.atleast_2d(calls)
    y = np.atleast_2d(success).astype(bool)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int)
    out: dict[str, np.ndarray] = {}
    for k in range(1, ks + 1):
        scores = []
        for a, n in zip(starts, sizes, strict=True):
            wins = y[:, a : a + n].sum(axis=1)
            table = np.array([math.comb(int(w), k) for w in range(n + 1)]) / math.comb(n, k)
            scores.append(table[wins])
        out[f"pass^{k}"] = np.mean(scores, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["success tool calls"] = (c * y).sum(axis=1) / y.sum(axis=1)
        out["failure tool calls"] = (c * ~y).sum(axis=1) / (~y).sum(axis=1)
    out[KS] = ks_distances(c, draws)
    out[SPREAD] = spread(success_histogram(y, sizes, ks))
    return out


def spread(histogram: np.ndarray) -> np.ndarray:
    """The variance over tasks of their successes, from tasks by successes (rows: records)."""
    h = np.atleast_2d(histogram)
    c = np.arange(h.shape[1])
    n = h.sum(axis=1)
    mean = (h * c).sum(axis=1) / n
    variance: np.ndarray = (h * c**2).sum(axis=1) / n - mean**2
    return variance


ONE_SIDED = (KS,)  # a distance: only too far is a misfit


def parametric_pvalues(
    observed: dict[str, np.ndarray], simulated: dict[str, np.ndarray]
) -> dict[str, float]:
    """Each observed statistic ranked among the simulated records' (a Monte Carlo p-value).

    Two-sided for pass^k, the mean lengths and the spread (2 · the smaller tail, at
    most 1), one-sided for the KS distance (``ONE_SIDED``); a simulated record whose statistic
    is undefined (a mean over no successes) is left out; an undefined observed one
    gives p = 1 (nothing to test).
    """
    out = {}
    for name, values in observed.items():
        obs = float(values[0])
        sims = simulated[name][np.isfinite(simulated[name])]
        if not math.isfinite(obs) or not sims.size:
            out[name] = 1.0
            continue
        r = sims.size
        upper = (1 + int((sims >= obs - 1e-12).sum())) / (r + 1)
        if name in ONE_SIDED:
            out[name] = upper
        else:
            lower = (1 + int((sims <= obs + 1e-12).sum())) / (r + 1)
            out[name] = min(1.0, 2 * min(lower, upper))
    return out


def ks_distances(samples: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """The two-sample Kolmogorov–Smirnov D of each row of ``samples`` against ``reference``.

    Tool calls are counts, so D is the largest gap of the two empirical CDFs over
    the integers, as ``scipy.stats.ks_2samp`` computes it.

    Args:
        samples: Non-negative integer samples, one per row.
        reference: The non-negative integer sample they are compared with.

    Returns:
        D per row.
    """
    rows = np.atleast_2d(samples).astype(np.int64)
    top = int(max(rows.max(), reference.max())) + 1
    ref = np.cumsum(np.bincount(reference, minlength=top)) / len(reference)
    counts = np.zeros((rows.shape[0], top))
    np.add.at(counts, (np.repeat(np.arange(rows.shape[0]), rows.shape[1]), rows.ravel()), 1.0)
    cdf = np.cumsum(counts, axis=1) / rows.shape[1]
    distances: np.ndarray = np.abs(cdf - ref[None, :]).max(axis=1)
    return distances


def record_stats(tasks: Sequence[TaskRuns], ks: int) -> Stats:
    """The record's pass^k (τ-bench's estimator) and mean tool calls of successes and failures."""
    attempts = {i: [bool(y) for y in t.success] for i, t in enumerate(tasks)}
    calls = np.concatenate([t.tool_calls for t in tasks])
    wins = np.concatenate([t.success for t in tasks])
    return Stats(
        [pass_hat_k(attempts, k) for k in range(1, ks + 1)],
        float(calls[wins].mean()) if wins.any() else math.nan,
        float(calls[~wins].mean()) if (~wins).any() else math.nan,
    )


def task_bootstrap(
    tasks: Sequence[TaskRuns], ks: int, rng: np.random.Generator, resamples: int = BOOTSTRAP
) -> tuple[Stats, Stats]:
    """95 % percentile intervals of ``record_stats`` from resampling whole tasks.

    Returns:
        (low, high) as two ``Stats``; a mean over no successes (or failures) is NaN.
    """
    n = len(tasks)
    scores = np.array(
        [
            [pass_hat_k({0: [bool(y) for y in t.success]}, k) for k in range(1, ks + 1)]
            for t in tasks
        ]
    )
    sums = np.array(
        [
            [
                t.tool_calls[t.success].sum(),
                t.success.sum(),
                t.tool_calls[~t.success].sum(),
                (~t.success).sum(),
            ]
            for t in tasks
        ],
        dtype=float,
    )
    idx = rng.integers(0, n, size=(resamples, n))
    pk = scores[idx].mean(axis=1)  # (resamples, ks)
    s = sums[idx].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        succ = s[:, 0] / s[:, 1]
        fail = s[:, 2] / s[:, 3]

    def q(a: np.ndarray, p: float) -> float:
        a = a[np.isfinite(a)]
        return float(np.quantile(a, p)) if a.size else math.nan

    low = Stats([q(pk[:, k], 0.025) for k in range(ks)], q(succ, 0.025), q(fail, 0.025))
    high = Stats([q(pk[:, k], 0.975) for k in range(ks)], q(succ, 0.975), q(fail, 0.975))
    return low, high
