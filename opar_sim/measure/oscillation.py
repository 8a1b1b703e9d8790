"""Oscillation of an agent loop: replanning rhythm, error trend, damping, action cycles.

* REPLAN count, rate (per step), dwell (steps between successive REPLANs) and
  thrash: the share of REPLANs that come within ``k`` steps of the previous
  one — a relay limit cycle shows up as a thrash share near 1.
* Sign changes of the error trend Δe (zero differences skipped): a loop that
  keeps reversing direction.
* Damping from successive peaks (the logarithmic decrement): the signal's
  deviation from a reference is cut at its zero crossings, each half-cycle's
  largest excursion is a peak, and successive peak ratios give the decay
  ratio (per full period, 0.25 is the quarter-decay of process control) and
  the damping ratio ζ = δ / √(4π² + δ²).
* Action cycles: stretches of the action sequence that repeat with a period
  of two or more distinct steps (a→b→a→b, a→b→c→a→b→c, ...).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from opar_sim.measure.metrics import (
    BoolArray,
    FloatArray,
    IntArray,
    Signal,
    segment_sums,
)
from opar_sim.rundir.frames import to_frame

REPLAN = "replan"


@dataclass(frozen=True, slots=True)
class ReplanRhythm:
    """How often and how closely an episode replanned."""

    steps: int
    replans: int
    rate: float  # REPLANs per step
    mean_dwell: float  # steps between successive REPLANs (NaN with fewer than two)
    mean_dwell_seconds: float  # simulated seconds between them (NaN without times)
    thrash: int  # REPLANs within k steps of the previous REPLAN
    thrash_k: int

    @property
    def thrash_share(self) -> float:
        """The share of REPLANs that came within k steps of the previous one."""
        return self.thrash / self.replans if self.replans else 0.0

    def to_frame(self) -> Any:
        """A one-row pandas DataFrame (needs pandas)."""
        return to_frame([asdict(self) | {"thrash_share": self.thrash_share}])


def replan_rhythm(
    signals: Sequence[str | None],
    steps: Sequence[int] | None = None,
    k: int = 2,
    times: Signal | None = None,
    enacted: int | None = None,
) -> ReplanRhythm:
    """REPLAN statistics of one episode's decision signals (``"replan"`` counts).

    ``times`` (simulated seconds of each step) adds the dwell in seconds.

    ``enacted`` is the number of REPLANs the loop carried out (the ``replans``
    of the episode's episodes.jsonl row, the count ``summary.json`` averages):
    a REPLAN decided at the last step, after which the episode stopped before
    a new plan was made, is then not counted, so every reported REPLAN count
    has one definition — a REPLAN decision that produced a new plan.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    numbers = list(steps) if steps is not None else list(range(1, len(signals) + 1))
    where = [i for i, s in enumerate(signals) if s == REPLAN]
    if enacted is not None:
        if not len(where) - 1 <= enacted <= len(where):
            raise ValueError(
                f"enacted REPLANs ({enacted}) must be the REPLAN signals ({len(where)}) "
                "or one fewer (the last step's)"
            )
        where = where[:enacted]
    at = [numbers[i] for i in where]
    dwell = np.diff(at)
    dwell_seconds = math.nan
    if times is not None and dwell.size:
        t = np.asarray(times, float)
        dwell_seconds = float(np.diff([t[i] for i in where]).mean())
    n = len(signals)
    return ReplanRhythm(
        steps=n,
        replans=len(at),
        rate=len(at) / n if n else 0.0,
        mean_dwell=float(dwell.mean()) if dwell.size else math.nan,
        mean_dwell_seconds=dwell_seconds,
        thrash=int(np.count_nonzero(dwell <= k)),
        thrash_k=k,
    )


def trend_sign_changes(error: Signal) -> int:
    """How often the error's trend Δe reverses sign (flat steps are skipped)."""
    diffs = np.diff(np.asarray(error, float))
    signs = np.sign(diffs[diffs != 0])
    return int(np.count_nonzero(signs[1:] != signs[:-1]))


@dataclass(frozen=True, slots=True)
class Damping:
    """Decay of an oscillation estimated from its successive peaks."""

    peaks: int  # half-cycle peaks found (alternating sign)
    peak_times: tuple[float, ...]
    peak_values: tuple[float, ...]  # signed deviations from the reference
    log_decrement: float  # δ per full period; NaN with fewer than two peaks
    decay_ratio: float  # amplitude ratio one full period apart, exp(−δ)
    damping_ratio: float  # ζ = δ / √(4π² + δ²); negative when the oscillation grows

    @property
    def oscillating(self) -> bool:
        """Whether at least three alternating peaks were found."""
        return self.peaks >= 3

    def to_frame(self) -> Any:
        """One row per peak (needs pandas)."""
        return to_frame(
            [
                {"time": t, "deviation": v}
                for t, v in zip(self.peak_times, self.peak_values, strict=True)
            ]
        )


def damping(
    signal: Signal,
    times: Signal | None = None,
    reference: float | None = None,
    tolerance: float = 0.0,
) -> Damping:
    """Estimate ζ from successive peaks of ``signal`` about ``reference`` (default: last value).

    Half-cycles whose largest excursion is within ``tolerance`` of the
    reference are noise and ignored.
    """
    y = np.asarray(signal, float)
    t = np.asarray(times, float) if times is not None else np.arange(y.size, dtype=float)
    if y.size == 0:
        return Damping(0, (), (), math.nan, math.nan, math.nan)
    ref = float(y[-1]) if reference is None else reference
    dev = y - ref
    # the largest excursion of each half-cycle (a run of one sign; zeros skipped)
    halves: list[tuple[float, float]] = []
    for ti, d in zip(t.tolist(), dev.tolist(), strict=True):
        if d == 0:
            continue
        if halves and (halves[-1][1] > 0) == (d > 0):
            if abs(d) > abs(halves[-1][1]):
                halves[-1] = (ti, d)
        else:
            halves.append((ti, d))
    # excursions within the tolerance are noise; neighbours of one sign then merge
    peaks: list[tuple[float, float]] = []
    for ti, d in halves:
        if abs(d) <= tolerance:
            continue
        if peaks and (peaks[-1][1] > 0) == (d > 0):
            if abs(d) > abs(peaks[-1][1]):
                peaks[-1] = (ti, d)
        else:
            peaks.append((ti, d))
    peak_t = [p[0] for p in peaks]
    peak_v = [p[1] for p in peaks]
    amps = np.abs(np.asarray(peak_v))
    if amps.size < 2:
        return Damping(len(peak_v), tuple(peak_t), tuple(peak_v), math.nan, math.nan, math.nan)
    # successive half-cycle peaks are exp(−δ/2) apart
    delta = 2.0 * float(np.mean(np.log(amps[:-1] / amps[1:])))
    zeta = delta / math.sqrt(4 * math.pi**2 + delta**2)
    return Damping(len(peak_v), tuple(peak_t), tuple(peak_v), delta, math.exp(-delta), zeta)


@dataclass(frozen=True, slots=True)
class ActionCycle:
    """A stretch of actions that repeats with ``period`` (a→b→a→b has period 2)."""

    start: int  # index of the first action of the stretch
    period: int
    length: int  # actions in the periodic stretch (≥ 2·period)
    pattern: tuple[str, ...]

    @property
    def repeats(self) -> int:
        """How many whole times the pattern repeats in the stretch."""
        return self.length // self.period


def action_cycles(
    actions: Sequence[str | None], max_period: int = 4, min_repeats: int = 2
) -> list[ActionCycle]:
    """Maximal periodic stretches of the action sequence, the shortest period first.

    A stretch is reported once, under its smallest period; a pattern that is
    one action repeated (a→a→a) is a repeat, not a cycle, and is left to the
    supervisor's repeat guard.
    """
    seq = ["∅" if a is None else a for a in actions]
    n = len(seq)
    found: list[ActionCycle] = []
    covered: list[tuple[int, int]] = []
    for period in range(2, max_period + 1):
        i = 0
        while i + period < n:
            j = i
            while j + period < n and seq[j] == seq[j + period]:
                j += 1
            length = j - i + period
            pattern = tuple(seq[i : i + period])
            if (
                j > i
                and length >= min_repeats * period
                and len(set(pattern)) > 1
                and not _is_repetition(pattern)
                and not any(a <= i and i + length <= b for a, b in covered)
            ):
                found.append(ActionCycle(i, period, length, pattern))
                covered.append((i, i + length))
            i = max(j, i + 1)
    return sorted(found, key=lambda c: (c.start, c.period))


def _is_repetition(pattern: tuple[str, ...]) -> bool:
    """Is the pattern itself a shorter pattern repeated (abab within period 4)?"""
    p = len(pattern)
    return any(p % q == 0 and pattern == pattern[:q] * (p // q) for q in range(1, p // 2 + 1))


# ---------------------------------------------------------------------------
# Lockstep arrays: the functions above for many episodes at once (one row per
# episode, padded past its length), giving the same numbers row by row.
# ---------------------------------------------------------------------------


def _valid(lengths: IntArray, cols: int) -> BoolArray:
    return np.arange(cols)[None, :] < lengths[:, None]


def _pairs(rows: IntArray) -> BoolArray:
    """For consecutive entries of a row-major selection: are they in the same row?"""
    return np.asarray(rows[1:] == rows[:-1], bool)


def replan_rhythm_rows(
    replan: BoolArray,
    steps: IntArray,
    times: FloatArray,
    lengths: IntArray,
    k: int = 2,
    enacted: IntArray | None = None,
) -> dict[str, FloatArray | IntArray]:
    """``replan_rhythm`` of every row (``replan``: where the signal is REPLAN), as arrays.

    Args:
        replan: Episodes x steps, True where the step's signal is REPLAN.
        steps: The step numbers, padded alike.
        times: The simulated seconds of each step, padded alike.
        lengths: The steps of each row.
        k: The thrash window.
        enacted: Per row, the REPLANs the loop carried out (-1: unknown).

    Returns:
        ``replans``, ``thrash``, ``mean_dwell`` and ``mean_dwell_seconds`` per row.

    Raises:
        ValueError: as ``replan_rhythm``, for the first row whose ``enacted``
            is neither the REPLAN signals nor one fewer.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    rows, cols = replan.shape
    signals = replan & _valid(lengths, cols)
    count = signals.sum(axis=1)
    limit = count.copy()
    if enacted is not None:
        known = enacted >= 0
        bad = known & ~((count - 1 <= enacted) & (enacted <= count))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"enacted REPLANs ({int(enacted[i])}) must be the REPLAN signals "
                f"({int(count[i])}) or one fewer (the last step's)"
            )
        limit = np.where(known, enacted, count)
    kept = signals & (np.cumsum(signals, axis=1) <= limit[:, None])
    where_r, where_c = np.nonzero(kept)
    at = steps[where_r, where_c]
    same = _pairs(where_r)
    dwell = (at[1:] - at[:-1])[same]
    dwell_s = (times[where_r, where_c][1:] - times[where_r, where_c][:-1])[same]
    owner = where_r[1:][same]
    replans = kept.sum(axis=1)
    n_dwell = np.maximum(replans - 1, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_dwell = np.bincount(owner, weights=dwell, minlength=rows) / n_dwell
        mean_dwell_s = segment_sums(dwell_s, n_dwell) / n_dwell
    return {
        "replans": replans,
        "thrash": np.bincount(owner, weights=dwell <= k, minlength=rows).astype(np.int64),
        "mean_dwell": np.where(n_dwell > 0, mean_dwell, math.nan),
        "mean_dwell_seconds": np.where(n_dwell > 0, mean_dwell_s, math.nan),
    }


def trend_sign_changes_rows(error: FloatArray, lengths: IntArray) -> IntArray:
    """``trend_sign_changes`` of every row of ``error`` (padded past ``lengths``)."""
    rows, cols = error.shape
    diffs = error[:, 1:] - error[:, :-1]
    moving = (diffs != 0) & _valid(lengths - 1, cols - 1)
    r, c = np.nonzero(moving)
    signs = np.sign(diffs[r, c])
    flips = _pairs(r) & (signs[1:] != signs[:-1])
    return np.bincount(r[1:][flips], minlength=rows).astype(np.int64)


def damping_rows(
    signal: FloatArray, lengths: IntArray, tolerance: float = 0.0
) -> dict[str, FloatArray | IntArray]:
    """``damping`` of every row about its last value (rows padded past ``lengths``).

    A half-cycle is a run of one sign of the deviation; half-cycles within
    ``tolerance`` are dropped and neighbours of one sign merged, which is the
    same as keeping only the samples beyond the tolerance and cutting those
    into runs of one sign: each run's largest excursion is a peak.

    Returns:
        ``peaks``, ``log_decrement``, ``decay_ratio`` and ``damping_ratio`` per row.
    """
    rows, cols = signal.shape
    r_all = np.arange(rows)
    dev = signal - signal[r_all, np.maximum(lengths - 1, 0)][:, None]
    beyond = (np.abs(dev) > tolerance) & _valid(lengths, cols)
    r, c = np.nonzero(beyond)
    d = dev[r, c]
    positive = d > 0
    new = np.ones(len(d), bool)
    new[1:] = ~_pairs(r) | (positive[1:] != positive[:-1])
    starts = np.flatnonzero(new)
    amps = np.maximum.reduceat(np.abs(d), starts) if len(d) else np.zeros(0)
    peak_row = r[starts]
    peaks = np.bincount(peak_row, minlength=rows).astype(np.int64)
    same = _pairs(peak_row)
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(amps[:-1] / amps[1:])[same]
    n_logs = np.maximum(peaks - 1, 0)
    sums = segment_sums(logs, n_logs)
    log_decrement = np.full(rows, math.nan)
    decay = np.full(rows, math.nan)
    zeta = np.full(rows, math.nan)
    for i in np.flatnonzero(peaks >= 2).tolist():
        delta = 2.0 * float(sums[i] / n_logs[i])
        log_decrement[i] = delta
        decay[i] = math.exp(-delta)
        zeta[i] = delta / math.sqrt(4 * math.pi**2 + delta**2)
    return {
        "peaks": peaks,
        "log_decrement": log_decrement,
        "decay_ratio": decay,
        "damping_ratio": zeta,
    }


def action_cycles_rows(
    actions: IntArray, lengths: IntArray, max_period: int = 4, min_repeats: int = 2
) -> tuple[IntArray, IntArray]:
    """The count and longest length of ``action_cycles`` of every row of action codes.

    A candidate of period p is a maximal run of steps j with a[j] = a[j + p]
    (the scan of ``action_cycles`` visits exactly these); it spans the run
    plus p actions, needs ``min_repeats`` periods, a pattern that is not a
    shorter one repeated, and no stretch of a shorter period around it.

    Args:
        actions: Episodes x steps of action codes (equal codes: equal actions).
        lengths: The actions of each row.
        max_period: As for ``action_cycles``.
        min_repeats: As for ``action_cycles``.

    Returns:
        (cycles found, actions in the longest one or 0) per row.
    """
    rows, cols = actions.shape
    width = cols + max_period + 1
    found_row: list[IntArray] = []
    found_start: list[IntArray] = []
    found_end: list[IntArray] = []
    for period in range(2, max_period + 1):
        eq = np.zeros((rows, width), bool)
        if cols > period:
            eq[:, : cols - period] = (actions[:, period:] == actions[:, :-period]) & _valid(
                lengths - period, cols - period
            )
        flat = eq.ravel()
        edge = np.diff(flat.astype(np.int8), prepend=0)
        begin = np.flatnonzero(edge == 1)
        finish = np.flatnonzero(edge == -1)
        run = finish - begin
        r, c = np.divmod(begin, width)
        keep = run + period >= min_repeats * period
        r, c, run = r[keep], c[keep], run[keep]
        pattern = actions[r[:, None], c[:, None] + np.arange(period)]
        repeated = np.zeros(len(r), bool)
        for q in range(1, period // 2 + 1):
            if period % q == 0:
                tiled = np.tile(pattern[:, :q], period // q)
                repeated |= (pattern == tiled).all(axis=1)
        keep = ~repeated
        r, c, end = r[keep], c[keep], c[keep] + run[keep] + period
        if found_row:
            keep = ~_covered(
                np.concatenate(found_row),
                np.concatenate(found_start),
                np.concatenate(found_end),
                r,
                c,
                end,
                width,
            )
            r, c, end = r[keep], c[keep], end[keep]
        found_row.append(r)
        found_start.append(c)
        found_end.append(end)
    r = np.concatenate(found_row)
    length = np.concatenate(found_end) - np.concatenate(found_start)
    longest = np.zeros(rows, np.int64)
    np.maximum.at(longest, r, length)
    return np.bincount(r, minlength=rows).astype(np.int64), longest


def _covered(
    rows: IntArray,
    starts: IntArray,
    ends: IntArray,
    r: IntArray,
    c: IntArray,
    end: IntArray,
    width: int,
) -> BoolArray:
    """Whether each candidate [c, end) of row r lies inside a found stretch of its row."""
    if len(rows) == 0 or len(r) == 0:
        return np.zeros(len(r), bool)
    order = np.lexsort((starts, rows))
    key = rows[order] * width + starts[order]
    # the furthest end of the row's stretches so far, lifted per row so the running max resets
    reach = np.maximum.accumulate(ends[order] + rows[order] * (2 * width))
    at = np.searchsorted(key, r * width + c, side="right") - 1
    ok = at >= 0
    at = np.maximum(at, 0)
    return np.asarray(ok & (rows[order][at] == r) & (reach[at] - r * (2 * width) >= end), bool)
