"""``CognitivePID`` on arrays, one row per episode."""

from __future__ import annotations

import numpy as np

from controllers.batch.protocol import Reading, Signals, _codes
from controllers.pid import CognitivePID


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
