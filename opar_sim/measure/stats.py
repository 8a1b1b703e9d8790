"""The one statistics module: summary totals, Wilson intervals, bootstrap, pairs and tests.

``Summary`` streams episodes.jsonl rows into what summary.json holds; the
run analysis (``opar_sim.measure.run``) takes its intervals and means from
the same functions.  pass^k is in ``pass_k``, the group bootstrap in
``group_bootstrap``, the exact (scipy) intervals in ``exact_intervals``.

Bootstrap intervals resample episodes with a seeded ``numpy.random.Generator``
(percentile method), so the same run gives the same interval.  Regret against
the oracle is paired: with common random numbers episode i of every
controller saw the same world, so the differences are taken episode by
episode before averaging.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from opar_sim.measure.pass_k import pass_hat_ks, success_histogram
from opar_sim.rundir.frames import to_frame

BOOTSTRAP_RESAMPLES = 2000


def require_scipy() -> None:
    """Check that scipy (the ``analysis`` extra) is installed, with a one-line error if not.

    Raises:
        SpecError: naming the extra to install (the CLI exits with 2).
    """
    try:
        import scipy  # noqa: F401
    except ImportError:
        from opar_sim.extras import install_hint
        from opar_sim.spec.schema import SpecError

        raise SpecError(f"this needs scipy: {install_hint('analysis')}") from None


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval for a binomial proportion (95 % by default).

    Args:
        successes: The number of successes.
        n: The number of trials.
        z: The standard normal quantile of the confidence level.

    Returns:
        The interval's (low, high), within [0, 1]; (0, 1) when ``n`` is 0.
    """
    if n <= 0:
        return (0.0, 1.0)
    phat = successes / n
    denom = 1 + z * z / n
    centre = (phat + z * z / (2 * n)) / denom
    half = z * math.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n)) / denom
    # clamp to [0, 1] and around p̂ itself, which rounding can push just outside
    return (min(phat, max(0.0, centre - half)), max(phat, min(1.0, centre + half)))


@dataclass
class ControllerStats:
    """Running totals for one controller over every row (each trial of each episode).

    Memory does not grow with episodes, except with ``trials`` > 1: then the
    successes of each world are kept (one list of ``trials`` booleans per
    episode) for pass^k.
    """

    episodes: int = 0
    successes: int = 0
    steps: int = 0
    tokens: int = 0
    sim_seconds: float = 0.0
    replans: int = 0
    tool_calls: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    trials: int = 1
    worlds: dict[int, list[bool]] = field(default_factory=dict)

    def add_row(self, row: Mapping[str, Any]) -> None:
        """Count one episodes.jsonl row."""
        if self.trials > 1:
            self.worlds.setdefault(int(row["episode"]), []).append(bool(row["success"]))
        self.episodes += 1
        self.successes += bool(row["success"])
        self.steps += int(row["steps"])
        self.tokens += int(row["tokens"])
        self.sim_seconds += float(row["sim_seconds"])
        self.replans += int(row["replans"])
        self.tool_calls += int(row["tool_calls"])
        self.outcomes[str(row["outcome"])] += 1

    def as_dict(self) -> dict[str, Any]:
        """This controller's entry of summary.json: rates, means and outcome counts.

        With ``trials`` > 1 it adds ``pass_hat_k`` ("1".."trials" -> pass^k over the
        worlds) and ``worlds_by_successes`` (worlds with 0..trials successes).
        """
        n = max(self.episodes, 1)
        lo, hi = wilson_interval(self.successes, self.episodes)
        extra: dict[str, Any] = {}
        if self.trials > 1:
            ks = pass_hat_ks(self.worlds, self.trials)
            extra["pass_hat_k"] = {str(k): v for k, v in ks.items()}
            extra["worlds_by_successes"] = success_histogram(self.worlds, self.trials)
        return {
            "episodes": self.episodes,
            "success_rate": self.successes / n,
            "success_ci95": [lo, hi],
            "mean_steps": self.steps / n,
            "mean_tokens": self.tokens / n,
            "mean_sim_seconds": self.sim_seconds / n,
            "mean_replans": self.replans / n,
            "mean_tool_calls": self.tool_calls / n,
            "outcomes": dict(sorted(self.outcomes.items())),
        } | extra


class Summary:
    """Per-controller statistics, keyed by controller name.

    Every row counts: with ``trials`` > 1, ``episodes``, the success rate and
    the means are over all episode-trials (episodes × trials rows), and pass^k
    is over the worlds.
    """

    def __init__(self, trials: int = 1) -> None:
        self.trials = trials
        self.by_controller: dict[str, ControllerStats] = {}

    def add_row(self, row: Mapping[str, Any]) -> None:
        """Count one episodes.jsonl row under its controller."""
        stats = self.by_controller.get(str(row["controller"]))
        if stats is None:
            stats = self.by_controller[str(row["controller"])] = ControllerStats(trials=self.trials)
        stats.add_row(row)

    def add_columns(self, columns: Mapping[str, list[Any]]) -> None:
        """Count episodes given as columns (one row each: one trial, one attempt).

        Args:
            columns: ``controller``, ``success``, ``steps``, ``tokens``, ``sim_seconds``,
                ``replans``, ``tool_calls`` and ``outcome``, one value per episode.
        """
        names = columns["controller"]
        for name, rows in _rows_by_controller(names).items():
            stats = self.by_controller.setdefault(name, ControllerStats(trials=self.trials))
            if self.trials > 1:  # repeated worlds: their successes kept row by row
                for i in rows if rows is not None else range(len(names)):
                    stats.add_row({k: v[i] for k, v in columns.items()})
                continue

            def values(field: str, rows: list[int] | None = rows) -> list[Any]:
                return columns[field] if rows is None else [columns[field][i] for i in rows]

            stats.episodes += len(names) if rows is None else len(rows)
            stats.successes += sum(map(bool, values("success")))
            stats.steps += sum(values("steps"))
            stats.tokens += sum(values("tokens"))
            stats.sim_seconds += sum(values("sim_seconds"), 0.0)  # in row order, as add_row
            stats.replans += sum(values("replans"))
            stats.tool_calls += sum(values("tool_calls"))
            stats.outcomes.update(map(str, values("outcome")))

    def as_dict(self) -> dict[str, dict[str, Any]]:
        """summary.json's per-controller statistics, keyed by controller name."""
        return {name: s.as_dict() for name, s in self.by_controller.items()}


def _rows_by_controller(names: list[Any]) -> dict[str, list[int] | None]:
    """Each controller's rows, in row order; None for a lone controller (every row)."""
    distinct = list(dict.fromkeys(names))
    if len(distinct) == 1:
        return {str(distinct[0]): None}
    index = {name: k for k, name in enumerate(distinct)}
    codes = np.fromiter(map(index.__getitem__, names), np.int64, len(names))
    by: dict[str, list[int]] = {}
    for k, name in enumerate(distinct):  # names that print alike are one controller
        by.setdefault(str(name), []).extend(np.flatnonzero(codes == k).tolist())
    return {name: sorted(rows) for name, rows in by.items()}


@dataclass(frozen=True, slots=True)
class Proportion:
    """A success rate with its Wilson interval."""

    successes: int
    n: int
    low: float
    high: float
    confidence: float = 0.95

    @property
    def rate(self) -> float:
        """The observed success rate (NaN with no trials)."""
        return self.successes / self.n if self.n else math.nan

    def to_frame(self) -> object:
        """A one-row pandas DataFrame (needs pandas)."""
        return to_frame([asdict(self) | {"rate": self.rate}])


def success_rate(successes: int, n: int) -> Proportion:
    """``successes`` of ``n`` with the 95 % Wilson score interval.

    Args:
        successes: The number of successes.
        n: The number of trials.

    Returns:
        The proportion with its interval.

    Raises:
        ValueError: when ``successes`` is not between 0 and ``n``.
    """
    if not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    low, high = wilson_interval(successes, n)
    return Proportion(successes, n, low, high)


@dataclass(frozen=True, slots=True)
class Estimate:
    """A mean with a bootstrap confidence interval."""

    mean: float
    low: float
    high: float
    n: int

    def to_dict(self) -> dict[str, float]:
        """The mean and its interval, for JSON (``{"mean", "low", "high"}``)."""
        return {"mean": self.mean, "low": self.low, "high": self.high}

    def to_frame(self) -> object:
        """A one-row pandas DataFrame (needs pandas)."""
        return to_frame([asdict(self)])


def bootstrap_mean(
    values: Iterable[float] | npt.NDArray[np.float64],
    rng: np.random.Generator,
    resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
) -> Estimate:
    """The mean of ``values`` and its percentile bootstrap interval.

    Args:
        values: The sample (e.g. one value per episode).
        rng: The generator that draws the resamples (seeded for reproducibility).
        resamples: How many bootstrap resamples to draw.
        confidence: The interval's confidence level.

    Returns:
        The mean, the interval and the sample size; NaN for an empty sample, and a
        zero-width interval for a constant one.
    """
    x = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, float)
    if x.size == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    mean = float(x.mean())
    if x.size == 1 or np.all(x == x[0]):
        return Estimate(mean, mean, mean, int(x.size))
    # resample in blocks so memory stays bounded for large runs
    means = np.empty(resamples)
    block = max(1, 2_000_000 // x.size)
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        idx = rng.integers(0, x.size, size=(stop - start, x.size))
        means[start:stop] = x[idx].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return Estimate(mean, float(low), float(high), int(x.size))


def paired_difference(
    a: Mapping[Any, float], b: Mapping[Any, float], rng: np.random.Generator
) -> Estimate:
    """Mean of a − b over the keys (episodes) both have, with a bootstrap interval.

    Args:
        a: Key (e.g. episode) -> value.
        b: Key -> value, paired with ``a`` by key.
        rng: The generator of the bootstrap resamples.

    Returns:
        The mean paired difference with its percentile bootstrap interval.
    """
    common = sorted(set(a) & set(b))
    return bootstrap_mean(np.array([a[i] - b[i] for i in common]), rng)


def mcnemar_exact(b: int, c: int) -> float:
    """The exact McNemar test of paired successes: a two-sided binomial test on discordant pairs.

    ``b`` pairs succeeded under the first arm only and ``c`` under the second
    only; under the null hypothesis each discordant pair falls either way with
    chance 1/2, so p = min(1, 2·P(X ≤ min(b, c))) with X ~ Bin(b + c, 1/2).
    The sum is taken in exact integer arithmetic.

    Args:
        b: Pairs where only the first arm succeeded.
        c: Pairs where only the second arm succeeded.

    Returns:
        The two-sided p-value; 1 when there is no discordant pair.

    Raises:
        ValueError: when ``b`` or ``c`` is negative.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b = {b}, c = {c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return float(min(1.0, 2 * tail / 2**n))


def discordant(a: Sequence[bool], b: Sequence[bool]) -> tuple[int, int]:
    """The discordant pair counts of two paired success vectors.

    Args:
        a: The first arm's successes, episode by episode.
        b: The second arm's successes on the same episodes.

    Returns:
        (pairs where only ``a`` succeeded, pairs where only ``b`` succeeded).

    Raises:
        ValueError: when the vectors differ in length.
    """
    if len(a) != len(b):
        raise ValueError(f"paired vectors differ in length: {len(a)} and {len(b)}")
    only_a = sum(bool(x) and not bool(y) for x, y in zip(a, b, strict=True))
    only_b = sum(bool(y) and not bool(x) for x, y in zip(a, b, strict=True))
    return only_a, only_b


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of p-values for multiple comparisons.

    With the m p-values sorted ascending, the i-th (from 1) is multiplied by
    m − i + 1, the running maximum is taken so the order is kept, and the result
    is capped at 1.  Reject the hypotheses whose adjusted p is below α: this
    controls the family-wise error rate at α.

    Args:
        pvalues: The raw p-values, in any order.

    Returns:
        The adjusted p-values, in the order given.

    Raises:
        ValueError: when a p-value is outside [0, 1].
    """
    for p in pvalues:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"a p-value must be in [0, 1], got {p}")
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def paired_interval(a: Sequence[float], b: Sequence[float], rng: np.random.Generator) -> Estimate:
    """Mean of a − b over paired episodes (same index), with its paired bootstrap interval.

    Args:
        a: One value per episode of the first arm.
        b: One value per episode of the second arm, in the same episode order.
        rng: The generator of the bootstrap resamples.

    Returns:
        The mean difference with its 95 % percentile interval (``paired_difference``).

    Raises:
        ValueError: when the sequences differ in length.
    """
    if len(a) != len(b):
        raise ValueError(f"paired sequences differ in length: {len(a)} and {len(b)}")
    return paired_difference(dict(enumerate(a)), dict(enumerate(b)), rng)
