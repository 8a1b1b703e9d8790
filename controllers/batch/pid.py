"""``CognitivePID`` on arrays, one row per episode."""

from __future__ import annotations

import numpy as np
from numba import njit

from controllers.batch.protocol import CONTINUE, REPLAN, TERMINATE, Reading, Signals
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

    def decide(self, m: np.ndarray, r: Reading) -> Signals:
        """``CognitivePID.decide`` per row (every row's state moves; ``m`` gates the signals)."""
        law = self.law
        # numpy's exp outside the loop: a compiled exp may round the last bit differently
        decay = np.exp(-law.integral_leak * r.dt) if law.integral_leak else np.ones(0)
        low, high = law.integral_limits
        olow, ohigh = law.output_limits
        gains = np.array(
            [law.kp, law.ki, law.kd, law.tau, law.back_calculation, low, high, olow, ohigh]
        )
        rules = np.array(
            [
                law.setpoint,
                law.pace,
                law.give_up_margin,
                law.settle_band,
                law.confidence_floor,
                law.give_up_after,
                law.replan_threshold,
                law.hysteresis,
                law.integral_scale,
            ]
        )
        counts = np.array(
            [
                law.settle_count,
                law.give_up_window,
                law.min_dwell,
                ON_REPLAN[law.integral_on_replan],
                int(law.on_measurement),
            ]
        )
        signal, give = _decide(
            m,
            r.delta_task,
            r.confidence,
            r.dt,
            r.plan_age,
            r.replans,
            decay,
            gains,
            rules,
            counts,
            (self.i, self.d, self.previous, self.excess, self.accumulated, self.best_error),
            (self.baseline, self.last),
            (self.settled, self.since_best, self.replans_seen),
            self.armed,
        )
        return signal, give


ON_REPLAN = {"reset": 0, "keep": 1, "scale": 2}  # integral_on_replan's codes in the kernel


@njit(cache=True, nogil=True)
def _decide(  # the law's numbers in three arrays, its state in three tuples (kept in place)
    m: np.ndarray,
    measurement: np.ndarray,
    confidence: np.ndarray,
    dt: np.ndarray,
    plan_age: np.ndarray,
    replans: np.ndarray,
    decay: np.ndarray,
    gains: np.ndarray,
    rules: np.ndarray,
    counts: np.ndarray,
    pid: tuple[np.ndarray, ...],
    pace_state: tuple[np.ndarray, np.ndarray],
    tallies: tuple[np.ndarray, np.ndarray, np.ndarray],
    armed: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``CognitivePID.decide`` of every row: the discrete PID, then settle, give-up and relay.

    Each row's arithmetic is the scalar law's, in its order (``DiscretePID.update``).
    """
    kp, ki, kd, tau, back, low, high, olow, ohigh = gains
    setpoint, pace, margin, band, floor, give_up_after, threshold, hysteresis, scale = rules
    settle_count, window, min_dwell, on_replan, on_measurement = counts
    integral, derivative, previous, excess, accumulated, best_error = pid
    baseline, last = pace_state
    settled, since_best, replans_seen = tallies
    n = measurement.size
    signal = np.zeros(n, np.int8)
    giving_up = np.zeros(n, np.bool_)
    for k in range(n):
        x = measurement[k]
        error = setpoint - x
        if pace:
            if replans[k] != replans_seen[k]:  # a new plan: progress counts from here
                baseline[k] = last[k]
            replans_seen[k] = replans[k]
            last[k] = x
            lag = min(max(pace * plan_age[k] - (x - baseline[k]), 0.0), 1.0)
            e, sample = lag, setpoint - lag
        else:
            e, sample = error, x
        # DiscretePID.update
        i = integral[k]
        if decay.size:
            i = i * decay[k]
        i = i + ki * e * dt[k]
        if back:
            i = i + back * excess[k] * dt[k]
        i = min(max(i, low), high)
        if not on_measurement:
            sample = e  # the scalar keeps the last error, not the measurement
        if np.isnan(previous[k]):
            d = 0.0
        else:
            change = previous[k] - sample if on_measurement else e - previous[k]
            if tau > 0.0:
                d = tau / (tau + dt[k]) * derivative[k] + kd * change / (tau + dt[k])
            elif dt[k] == 0.0:
                d = 0.0
            else:
                d = kd * change / dt[k]
        u = kp * e + i + d
        effort = min(max(u, olow), ohigh)
        integral[k], derivative[k], previous[k], excess[k] = i, d, sample, effort - u
        # the stops and the relay
        accumulated[k] += error * dt[k]
        if error < best_error[k] - margin:
            best_error[k] = error
            since_best[k] = 0
        else:
            since_best[k] += 1
        settled[k] = settled[k] + 1 if error <= band else 0
        settle = settled[k] >= settle_count and confidence[k] >= floor
        give = not settle and accumulated[k] >= give_up_after and since_best[k] >= window
        rest = m[k] and not settle and not give
        if rest and not armed[k] and effort <= threshold - hysteresis:
            armed[k] = True
        replan = rest and effort >= threshold and plan_age[k] > min_dwell and armed[k]
        if replan:
            if on_replan == 0:
                integral[k] = min(max(0.0, low), high)
            elif on_replan == 2:
                integral[k] = min(max(integral[k] * scale, low), high)
            if hysteresis != 0.0:
                armed[k] = False
        signal[k] = TERMINATE if (settle or give) else (REPLAN if replan else CONTINUE)
        giving_up[k] = give
    return signal, giving_up
