"""The shipped Reflect laws written against arrays, for the lockstep batch engine.

Each class here runs one scalar law (the reference implementation) on N
episodes at once: its state is an array per field, ``decide`` takes the
evaluation and loop context as arrays and returns the signals
(``CONTINUE``/``REPLAN``/``TERMINATE`` codes) and the give-up claims.  The
rows outside ``mask`` are finished episodes: the engine never reads them
again, so a law may leave their state anything (sparing a masked write per
field).  ``from_scalar`` turns a built scalar law
into its batch twin, with the same parameters.  A law with no twin (the
Bayes law, a law of the user's) runs through its scalar reference, one
instance per episode, row by row (``ScalarRows``: exact by construction, at
the scalar law's own cost per Reflect); only a law that reads the hidden
state and has no twin is refused (``Unsupported``).  The oracle's twin reads
the hidden state the engine puts in the reading, as the scalar one reads its
truth probe.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from controllers import sprt
from controllers.bang_bang import BangBang
from controllers.confidence import ConfidenceReflector
from controllers.fixed_interval import FixedInterval
from controllers.open_loop import OpenLoop
from controllers.oracle import Oracle
from controllers.pid import CognitivePID
from controllers.sprt import SPRTReflector
from controllers.stall_counter import StallCounter
from controllers.threshold import ThresholdReflector
from opar_sim.core.controller import Controller, ReflectContext, TruthReader
from opar_sim.core.types import ControlSignal, Evaluation

CONTINUE, REPLAN, TERMINATE = 0, 1, 2

Signals = tuple[np.ndarray, np.ndarray]  # (signal codes, give-up claims)


class Unsupported(ValueError):
    """A law (or an option of one) that has no batch twin."""


@dataclass(slots=True)
class Reading:
    """One Reflect of N episodes: the evaluation and the loop's context, as arrays."""

    delta_task: np.ndarray
    delta_act: np.ndarray
    delta_plan: np.ndarray
    confidence: np.ndarray
    dt: np.ndarray
    plan_age: np.ndarray
    plan_exhausted: np.ndarray
    replans: np.ndarray
    # what the evaluation names as missing (the simulated agent: anything below 0.999)
    missing: np.ndarray | None = None
    # the hidden state, for the laws that read it (the oracle's truth probe)
    complete: np.ndarray | None = None
    feasible: np.ndarray | None = None
    quality: np.ndarray | None = None  # the plan's effective quality now
    # the loop's step number and every episode's clock (ReflectContext.step and .now), for
    # the laws run row by row through their scalar reference
    step: int = 0
    now: np.ndarray | None = None


class BatchLaw(Protocol):
    """A Reflect law over N episodes."""

    name: str

    def reset(self, n: int) -> None:
        """Start ``n`` episodes."""
        ...

    def decide(self, mask: np.ndarray, r: Reading) -> Signals:
        """The signals of the rows of ``mask`` (others: finished; signals and state unspecified)."""
        ...


def _codes(term: np.ndarray, replan: np.ndarray) -> np.ndarray:
    return np.where(term, TERMINATE, np.where(replan, REPLAN, CONTINUE)).astype(np.int8)


class BatchPID:
    """``CognitivePID`` on arrays: the discrete PID, settling, give-up, relay and pace."""

    def __init__(self, law: CognitivePID) -> None:
        """Copy the scalar law's parameters.

        Args:
            law: The built scalar law.
        """
        self.law = law
        self.name = law.name
        self.n = 0

    def reset(self, n: int) -> None:
        """Every episode's PID as ``CognitivePID.reset`` leaves it."""
        self.n = n
        self.i = np.zeros(n)
        self.d = np.zeros(n)
        self.previous = np.full(n, np.nan)
        self.excess = np.zeros(n)
        self.settled = np.zeros(n, np.int64)
        self.armed = np.ones(n, bool)
        self.accumulated = np.zeros(n)
        self.best_error = np.full(n, np.inf)
        self.since_best = np.zeros(n, np.int64)
        self.replans_seen = np.zeros(n, np.int64)
        self.baseline = np.zeros(n)
        self.last = np.zeros(n)

    def _update(
        self, m: np.ndarray, error: np.ndarray, dt: np.ndarray, sample: np.ndarray
    ) -> np.ndarray:
        """``DiscretePID.update`` per row (rows outside ``m`` keep their state)."""
        law = self.law
        p = law.kp * error
        i = self.i
        if law.integral_leak:
            i = i * np.exp(-law.integral_leak * dt)
        i = i + law.ki * error * dt
        if law.back_calculation:
            i = i + law.back_calculation * self.excess * dt
        low, high = law.integral_limits
        i = np.clip(i, low, high)
        first = np.isnan(self.previous)
        if law.on_measurement:
            change = self.previous - sample
        else:
            sample = error  # the scalar keeps the last error, not the measurement
            change = error - self.previous
        with np.errstate(divide="ignore", invalid="ignore"):
            if law.tau > 0.0:
                d = law.tau / (law.tau + dt) * self.d + law.kd * change / (law.tau + dt)
            else:
                d = np.where(dt == 0.0, 0.0, law.kd * change / dt)
        d = np.where(first, 0.0, d)
        u = p + i + d
        olow, ohigh = law.output_limits
        out = np.clip(u, olow, ohigh)
        self.i, self.d, self.previous, self.excess = i, d, sample, out - u
        return np.asarray(out)

    def decide(self, m: np.ndarray, r: Reading) -> Signals:
        """``CognitivePID.decide`` per row."""
        law = self.law
        measurement = r.delta_task
        error = law.setpoint - measurement
        if law.pace:
            new_plan = r.replans != self.replans_seen
            self.replans_seen = r.replans.copy()
            self.baseline = np.where(new_plan, self.last, self.baseline)
            self.last = measurement
            lag = np.clip(law.pace * r.plan_age - (measurement - self.baseline), 0.0, 1.0)
            effort = self._update(m, lag, r.dt, law.setpoint - lag)
        else:
            effort = self._update(m, error, r.dt, measurement)
        self.accumulated += error * r.dt
        low = error < self.best_error - law.give_up_margin
        self.best_error = np.where(low, error, self.best_error)
        self.since_best += 1
        self.since_best *= ~low
        self.settled += 1
        self.settled *= error <= law.settle_band
        settle = (self.settled >= law.settle_count) & (r.confidence >= law.confidence_floor)
        give = ~settle & (self.accumulated >= law.give_up_after)
        give &= self.since_best >= law.give_up_window
        rest = m & ~settle & ~give
        threshold = law.replan_threshold
        self.armed |= rest & ~self.armed & (effort <= threshold - law.hysteresis)
        replan = rest & (effort >= threshold) & (r.plan_age > law.min_dwell) & self.armed
        if law.integral_on_replan == "reset":
            self.i = np.where(replan, np.clip(0.0, *law.integral_limits), self.i)
        elif law.integral_on_replan == "scale":
            scaled = np.clip(self.i * law.integral_scale, *law.integral_limits)
            self.i = np.where(replan, scaled, self.i)
        if law.hysteresis != 0.0:
            self.armed &= ~replan
        return _codes(settle | give, replan), give & ~settle


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
        self.done_llr = np.asarray(law.done_llr)
        self.abandon_llr = np.asarray(law.abandon_llr)
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
        self.done = np.maximum(0.0, self.done + self.done_llr[done_bin])
        self.abandon = self.abandon + self.abandon_llr[cell]
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


_CODES = {ControlSignal.CONTINUE: CONTINUE, ControlSignal.REPLAN: REPLAN}


class ScalarRows:
    """A law with no batch twin, run through its scalar reference: one instance per episode.

    At each Reflect every live row's evaluation and loop context are rebuilt as the scalar
    types and handed to that row's own instance, so the decisions are the scalar law's by
    construction; what the engine does not model is not in them: the critique text is
    empty and there is no memory note (the simulated agent's critique says only whether
    the step made progress, which δ_act already tells).  It costs the scalar law's
    ``decide`` per Reflect (plus about a microsecond to build its arguments), so the engine
    is no longer array-speed for such a law, only for the task and the agent.
    """

    needs = ("missing", "context")  # the engine fills ``missing``, ``step`` and ``now``

    def __init__(self, make: Callable[[], Controller], first: Controller) -> None:
        """Keep the factory that builds one more instance of the law.

        Args:
            make: Builds a fresh, bound instance (the build's controller factory).
            first: One instance already built (kept: it serves the first row).
        """
        self.make = make
        self.name = first.name
        self.pool: list[Controller] = [first]  # kept for the next chunk
        self.laws = np.empty(0, object)

    def reset(self, n: int) -> None:
        """``n`` instances, each ``reset()``, one per row.

        ``laws`` is an object array so that the engine's compaction (``take_rows``) drops
        the finished rows' instances with the rows of every other array.
        """
        while len(self.pool) < n:
            self.pool.append(self.make())
        self.laws = np.empty(n, object)
        for k, law in enumerate(self.pool[:n]):
            law.reset()
            self.laws[k] = law

    def decide(self, m: np.ndarray, r: Reading) -> Signals:
        """Each row of ``m`` decided by its own scalar instance."""
        if r.now is None or r.missing is None:
            raise ValueError("a law run row by row reads the step's clock and what is missing")
        signal = np.full(len(m), CONTINUE, np.int8)
        give_up = np.zeros(len(m), bool)
        rows = np.flatnonzero(m).tolist()
        # the rows' fields as Python scalars, converted once per Reflect, not per element
        fields = zip(
            r.delta_task[rows].tolist(),
            r.delta_act[rows].tolist(),
            r.delta_plan[rows].tolist(),
            r.confidence[rows].tolist(),
            r.missing[rows].tolist(),
            r.now[rows].tolist(),
            r.dt[rows].tolist(),
            r.plan_age[rows].tolist(),
            r.plan_exhausted[rows].tolist(),
            r.replans[rows].tolist(),
            strict=True,
        )
        laws, step, goal = self.laws, r.step, ("remaining goal",)
        for k, (task, act, plan, conf, missing, now, dt, age, exhausted, replans) in zip(
            rows, fields, strict=True
        ):
            ev = Evaluation(task, act, plan, conf, "", goal if missing else ())
            d = laws[k].decide(ev, ReflectContext(step, now, dt, age, exhausted, replans))
            if d.signal is ControlSignal.TERMINATE:
                signal[k] = TERMINATE
                give_up[k] = d.give_up
            else:
                signal[k] = _CODES[d.signal]
        return signal, give_up


TWINS: dict[type, Any] = {
    CognitivePID: BatchPID,
    ThresholdReflector: BatchThreshold,
    StallCounter: BatchStallCounter,
    FixedInterval: BatchFixedInterval,
    BangBang: BatchBangBang,
    OpenLoop: BatchOpenLoop,
    ConfidenceReflector: BatchConfidence,
    SPRTReflector: BatchSPRT,
    Oracle: BatchOracle,
}


def from_scalar(law: object, make: Callable[[], Controller] | None = None) -> BatchLaw:
    """The batch twin of a built scalar law, with its parameters.

    Args:
        law: A built controller.  One of the classes in ``TWINS`` (exactly: a subclass may
            change the law) gets its array twin; any other runs row by row through its
            scalar reference (``ScalarRows``) when ``make`` is given.
        make: Builds further instances of ``law`` (the build's controller factory); None
            allows only array twins.

    Returns:
        The twin, to ``reset(n)`` before use.

    Raises:
        Unsupported: If the law has no array twin and either no ``make`` was given or it
            reads the hidden state (the engine gives the truth only to array twins).
    """
    twin = TWINS.get(type(law))
    if twin is None:
        label = repr(getattr(law, "name", type(law).__name__))
        if make is None:
            names = ", ".join(sorted(str(getattr(c, "name", c.__name__)) for c in TWINS))
            raise Unsupported(f"controller {label} has no batch twin (arrays: {names})")
        if isinstance(law, TruthReader):
            raise Unsupported(f"controller {label} reads the hidden state and has no batch twin")
        rows: BatchLaw = ScalarRows(make, law)  # type: ignore[arg-type]
        return rows
    if isinstance(law, CognitivePID) and not math.isfinite(law.setpoint):
        raise Unsupported("a non-finite set-point")
    result: BatchLaw = twin(law)
    return result
