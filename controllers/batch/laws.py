"""The array twins of the shipped laws other than the PID: thresholds, counters, SPRT, oracle."""

from __future__ import annotations

import numpy as np

from controllers import sprt
from controllers.bang_bang import BangBang
from controllers.batch.protocol import Reading, Signals, _codes
from controllers.confidence import ConfidenceReflector
from controllers.fixed_interval import FixedInterval
from controllers.open_loop import OpenLoop
from controllers.oracle import Oracle
from controllers.sprt import SPRTReflector
from controllers.stall_counter import StallCounter
from controllers.threshold import ThresholdReflector


class BatchThreshold:
    """``ThresholdReflector`` on arrays (stateless)."""

    def __init__(self, law: ThresholdReflector) -> None:
        """Copy the scalar law's thresholds."""
        self.law = law
        self.name = law.name

    def reset(self, n: int) -> None:
        """Stateless."""

    def decide(self, m: np.ndarray, r: Reading) -> Signals:
        """``ThresholdReflector.decide`` per row."""
        law = self.law
        term = r.delta_task >= law.threshold_complete
        replan = (r.delta_plan > law.threshold_drift) | (r.delta_act < law.threshold_valid)
        return _codes(term, replan), np.zeros_like(term)


class BatchStallCounter:
    """``StallCounter`` on arrays: the stall and replan counts per episode."""

    def __init__(self, law: StallCounter) -> None:
        """Copy the scalar law's limits."""
        self.law = law
        self.name = law.name

    def reset(self, n: int) -> None:
        """Clear every episode's counters."""
        self.stalls = np.zeros(n, np.int64)
        self.replans = np.zeros(n, np.int64)

    def decide(self, m: np.ndarray, r: Reading) -> Signals:
        """``StallCounter.decide`` per row."""
        law = self.law
        progress = r.delta_act >= law.progress_act
        stalls = np.where(progress, np.maximum(0, self.stalls - 1), self.stalls + 1)
        term = r.delta_task >= law.complete
        stalled = ~term & (stalls >= law.max_stalls)
        give = stalled & (self.replans >= law.max_replans)
        replan = stalled & ~give
        stalls = np.where(replan, 0, stalls)
        self.stalls = np.where(m, stalls, self.stalls)
        self.replans = np.where(m & replan, self.replans + 1, self.replans)
        return _codes(term | give, replan), give


class BatchFixedInterval:
    """``FixedInterval`` on arrays (stateless: the plan's age comes from the loop)."""

    def __init__(self, law: FixedInterval) -> None:
        """Copy the scalar law's interval."""
        self.law = law
        self.name = law.name

    def reset(self, n: int) -> None:
        """Stateless."""

    def decide(self, m: np.ndarray, r: Reading) -> Signals:
        """``FixedInterval.decide`` per row."""
        term = r.delta_task >= self.law.complete
        return _codes(term, r.plan_age >= self.law.interval), np.zeros_like(term)


class BatchBangBang:
    """``BangBang`` on arrays: the delayed errors as a shift register per episode."""

    def __init__(self, law: BangBang) -> None:
        """Copy the scalar relay's parameters."""
        self.law = law
        self.name = law.name

    def reset(self, n: int) -> None:
        """Forget the delayed errors (every episode has read none)."""
        self.errors = np.zeros((n, self.law.delay + 1))
        self.count = np.zeros(n, np.int64)

    def decide(self, m: np.ndarray, r: Reading) -> Signals:
        """``BangBang.decide`` per row: the oldest of the last ``delay + 1`` errors."""
        law = self.law
        error = 1.0 - r.delta_task
        size = law.delay + 1
        full = self.count >= size
        shifted = np.concatenate([self.errors[:, 1:], error[:, None]], axis=1)
        filled = self.errors.copy()
        rows = np.flatnonzero(~full)
        filled[rows, self.count[rows]] = error[rows]
        errors = np.where(full[:, None], shifted, filled)
        self.errors = np.where(m[:, None], errors, self.errors)
        self.count = np.where(m, np.minimum(self.count + 1, size), self.count)
        term = r.delta_task >= law.complete
        return _codes(term, errors[:, 0] > law.threshold), np.zeros_like(term)


class BatchOpenLoop:
    """``OpenLoop`` on arrays: TERMINATE once the plan is exhausted."""

    def __init__(self, law: OpenLoop) -> None:
        """Nothing to copy."""
        self.name = law.name

    def reset(self, n: int) -> None:
        """Stateless."""

    def decide(self, m: np.ndarray, r: Reading) -> Signals:
        """``OpenLoop.decide`` per row."""
        term = np.asarray(r.plan_exhausted, bool)
        return _codes(term, np.zeros_like(term)), np.zeros_like(term)


class BatchConfidence:
    """``ConfidenceReflector`` on arrays (stateless)."""

    needs = ("missing",)  # the engine fills ``Reading.missing``

    def __init__(self, law: ConfidenceReflector) -> None:
        """Copy the scalar law's thresholds."""
        self.law = law
        self.name = law.name

    def reset(self, n: int) -> None:
        """Stateless."""

    def decide(self, m: np.ndarray, r: Reading) -> Signals:
        """``ConfidenceReflector.decide`` per row (``r.missing`` is required)."""
        law = self.law
        if r.missing is None:
            raise ValueError("the confidence law reads what the evaluation names as missing")
        term = r.confidence >= law.threshold
        stalled = r.delta_act < law.progress_act  # not made_progress
        replan = r.missing & stalled & (r.plan_age > law.min_dwell)
        return _codes(term, replan), np.zeros_like(term)


class BatchSPRT:
    """``SPRTReflector`` on arrays: the CUSUM, the SPRT and the productive count per episode."""

    def __init__(self, law: SPRTReflector) -> None:
        """Copy the scalar law's tables and boundaries."""
        self.law = law
        self.name = law.name
        # a tuple, not arrays: the engine's compaction (``take_rows``) indexes every array
        # attribute as long as the rows, and a table of 15 cells met 15 rows once
        self.tables = (np.asarray(law.done_llr), np.asarray(law.abandon_llr))
        self.edges = sprt.ACT_EDGES

    def reset(self, n: int) -> None:
        """Both statistics back to 0 in every episode."""
        self.done = np.zeros(n)
        self.abandon = np.zeros(n)
        self.productive = np.zeros(n, np.int64)

    def decide(self, m: np.ndarray, r: Reading) -> Signals:
        """``SPRTReflector.decide`` per row (``done_bin``, ``abandon_cell`` on arrays)."""
        law = self.law
        top = sprt.DONE_BINS - 1
        tenth = np.clip((r.delta_task * 10).astype(np.int64), 0, top - 1)  # int() truncates
        done_bin = np.where(r.delta_task >= 0.999, top, tenth)
        act_bin = np.zeros(len(r.delta_act), np.int64)
        for edge in self.edges:
            act_bin += r.delta_act >= edge
        cell = np.minimum(self.productive, sprt.PRODUCTIVE_CAP) * sprt.N_ACT + act_bin
        done_llr, abandon_llr = self.tables
        self.done = np.maximum(0.0, self.done + done_llr[done_bin])
        self.abandon = self.abandon + abandon_llr[cell]
        self.productive = self.productive + (act_bin == sprt.N_ACT - 1)
        done = self.done > law.done_at
        give = ~done & (self.abandon > law.abandon_at)
        replan = (r.delta_plan > law.threshold_drift) | (r.delta_act < law.threshold_valid)
        return _codes(done | give, replan), give


class BatchOracle:
    """``Oracle`` on arrays: reads the hidden state the engine puts in the reading."""

    needs = ("truth",)  # the engine fills ``complete``, ``feasible`` and ``quality``

    def __init__(self, law: Oracle) -> None:
        """Copy the scalar law's quality bound."""
        self.law = law
        self.name = law.name

    def reset(self, n: int) -> None:
        """Stateless."""

    def decide(self, m: np.ndarray, r: Reading) -> Signals:
        """``Oracle.decide`` per row (``r.complete``, ``r.feasible``, ``r.quality`` required)."""
        if r.complete is None or r.feasible is None or r.quality is None:
            raise ValueError("the oracle reads the hidden state: complete, feasible, quality")
        give = ~r.complete & ~r.feasible
        replan = r.quality < self.law.plan_quality
        return _codes(r.complete | give, replan), give
