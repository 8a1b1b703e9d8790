"""Step-response metrics of the progress signal (docs/design.md §6).

An episode is a step response: the set-point jumps to "task complete" (1.0)
at time 0 and the loop drives progress toward it.  ``step_info`` applies
python-control's ``step_info`` definitions to such a signal with the final
value fixed at 1.0:

* rise time: from the first sample at or above 10 % to the first at or above
  90 % of the final value;
* settling time: the time of the first sample after the last one outside the
  2 % band around the final value;
* settling min/max: the extremes from the 90 % crossing on (final value
  included);
* overshoot and undershoot in percent of the final value; peak: the largest
  absolute value and the time it is first reached.

Where python-control raises (a signal that never reaches 10 % or 90 %) these
metrics are NaN, like its unsettled settling time.  The error integrals are
added on the same samples with the signal held between them (a zero-order
hold, as a loop's progress only changes when a step ends), optionally held
at its last value up to a common ``horizon`` so a loop that stopped early
keeps paying for the error it left.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt

from opar_sim.rundir.frames import to_frame

FINAL_VALUE = 1.0
SETTLING_THRESHOLD = 0.02
RISE_LIMITS = (0.1, 0.9)

# python-control's dict keys, for callers that compare with ``control.step_info``
_CONTROL_KEYS = {
    "RiseTime": "rise_time",
    "SettlingTime": "settling_time",
    "SettlingMin": "settling_min",
    "SettlingMax": "settling_max",
    "Overshoot": "overshoot",
    "Undershoot": "undershoot",
    "Peak": "peak",
    "PeakTime": "peak_time",
    "SteadyStateValue": "steady_state_value",
}


@dataclass(frozen=True, slots=True)
class StepInfo:
    """Step-response characteristics of one signal; times in the units of ``times``.

    Indexing with python-control's keys (``info["RiseTime"]``) also works.
    """

    rise_time: float
    settling_time: float
    settling_min: float
    settling_max: float
    overshoot: float  # percent of the final value
    undershoot: float  # percent of the final value
    peak: float
    peak_time: float
    steady_state_value: float
    steady_state_error: float  # final value minus the last sample
    iae: float  # ∫|e| dt
    ise: float  # ∫e² dt
    itae: float  # ∫t·|e| dt

    def __getitem__(self, key: str) -> float:
        name = _CONTROL_KEYS.get(key, key)
        if name not in {f.name for f in fields(self)}:
            raise KeyError(key)
        value: float = getattr(self, name)
        return value

    def as_control_dict(self) -> dict[str, float]:
        """The nine entries of python-control's ``step_info`` dictionary."""
        return {key: getattr(self, name) for key, name in _CONTROL_KEYS.items()}

    @property
    def settled(self) -> bool:
        """Whether the signal entered the settling band and stayed in it."""
        return not math.isnan(self.settling_time)

    def to_frame(self) -> Any:
        """A one-row pandas DataFrame (needs pandas)."""
        return to_frame([asdict(self)])


FloatArray = npt.NDArray[np.float64]
Signal = Sequence[float] | FloatArray  # a sampled signal: a list or a float array


def _as_arrays(
    progress: Signal | Iterable[float], times: Signal | Iterable[float]
) -> tuple[FloatArray, FloatArray]:
    y = np.asarray(list(progress) if not isinstance(progress, np.ndarray) else progress, float)
    t = np.asarray(list(times) if not isinstance(times, np.ndarray) else times, float)
    if y.ndim != 1 or t.shape != y.shape:
        raise ValueError(f"progress and times must be 1-D of one length, got {y.shape}, {t.shape}")
    if y.size == 0:
        raise ValueError("step_info needs at least one sample")
    if np.any(np.diff(t) < 0):
        raise ValueError("times must not decrease")
    return y, t


def error_integrals(
    progress: Signal,
    times: Signal,
    horizon: float | None = None,
    final_value: float = FINAL_VALUE,
) -> tuple[float, float, float]:
    """(IAE, ISE, ITAE) of e = final − progress, each sample held until the next.

    With ``horizon`` the last sample is held up to it; without, the integral
    ends at the last sample.
    """
    y, t = _as_arrays(progress, times)
    return _integrals(y, t, horizon, final_value)


def _integrals(
    y: FloatArray, t: FloatArray, horizon: float | None, final_value: float = FINAL_VALUE
) -> tuple[float, float, float]:
    edges = np.append(t, max(horizon, t[-1]) if horizon is not None else t[-1])
    widths = np.diff(edges)
    err = final_value - y
    iae = float(np.sum(np.abs(err) * widths))
    ise = float(np.sum(err**2 * widths))
    # ∫ t |e| dt over each held interval, exactly: |e| (t1² − t0²) / 2
    itae = float(np.sum(np.abs(err) * (edges[1:] ** 2 - edges[:-1] ** 2) / 2))
    return iae, ise, itae


def step_info(
    progress: Signal,
    times: Signal,
    *,
    horizon: float | None = None,
    settling_threshold: float = SETTLING_THRESHOLD,
    rise_limits: tuple[float, float] = RISE_LIMITS,
) -> StepInfo:
    """Step-response characteristics of ``progress`` sampled at ``times``, final value 1.0.

    Agrees with ``control.step_info(progress, times, yfinal=1.0)`` wherever
    python-control returns a value; see the module docstring.

    Args:
        progress: The sampled signal (one value per sample).
        times: The sample times, as many as ``progress``.
        horizon: Hold the last sample up to this time in the error integrals.
        settling_threshold: Half-width of the settling band, as a fraction of the
            final value.
        rise_limits: The rise-time levels, as fractions of the final value.

    Returns:
        Rise and settling times, settling min/max, overshoot, undershoot, peak and
        the error integrals (NaN where a level is never reached).
    """
    y, t = _as_arrays(progress, times)
    final = FINAL_VALUE
    low = np.nonzero(y >= rise_limits[0] * final)[0]
    high = np.nonzero(y >= rise_limits[1] * final)[0]
    rise_time = float(t[high[0]] - t[low[0]]) if low.size and high.size else math.nan
    outside = np.nonzero(np.abs(y / final - 1) >= settling_threshold)[0]
    settled = 0 if outside.size == 0 else int(outside[-1]) + 1
    settling_time = float(t[settled]) if settled < len(t) else math.nan
    if high.size:
        after = y[high[0] :]
        settling_min = float(min(after.min(), final))
        settling_max = float(max(after.max(), final))
    else:
        settling_min = settling_max = math.nan
    excess = float(np.abs(y.max()) - final)
    overshoot = abs(100.0 * excess / final) if excess > 0 else 0.0
    lowest = float(y.min())
    undershoot = -100.0 * lowest / final if lowest < 0 else 0.0
    peak_index = int(np.abs(y).argmax())
    iae, ise, itae = _integrals(y, t, horizon)
    return StepInfo(
        rise_time=rise_time,
        settling_time=settling_time,
        settling_min=settling_min,
        settling_max=settling_max,
        overshoot=float(overshoot),
        undershoot=float(undershoot),
        peak=float(abs(y[peak_index])),
        peak_time=float(t[peak_index]),
        steady_state_value=final,
        steady_state_error=float(final - y[-1]),
        iae=iae,
        ise=ise,
        itae=itae,
    )


@dataclass(frozen=True, slots=True)
class EstimateGap:
    """How far the agent's estimate δ_task sits from the true progress p."""

    mean_gap: float  # mean of δ_task − p (> 0: the agent believes it is further along)
    mean_abs_gap: float  # mean of |δ_task − p|
    final_gap: float  # δ_task − p at the last step (what a stopping rule acts on)

    def to_frame(self) -> Any:
        """A one-row pandas DataFrame (needs pandas)."""
        return to_frame([asdict(self)])


def estimate_gap(progress: Signal, estimate: Signal) -> EstimateGap:
    """The gap between estimate and truth over an episode's steps."""
    p = np.asarray(progress, float)
    e = np.asarray(estimate, float)
    if p.size == 0:
        return EstimateGap(math.nan, math.nan, math.nan)
    diff = e - p
    return EstimateGap(float(diff.mean()), float(np.abs(diff).mean()), float(diff[-1]))


@dataclass(frozen=True, slots=True)
class EpisodeResponse:
    """The step response of one episode against the truth and the agent's estimate."""

    true: StepInfo
    estimate: StepInfo
    gap: EstimateGap

    def to_frame(self) -> Any:
        """Two rows (``true``, ``estimate``) of step-response fields (needs pandas)."""
        return to_frame([asdict(self.true), asdict(self.estimate)], index=["true", "estimate"])


def episode_response(
    progress: Signal,
    estimate: Signal,
    times: Signal,
    *,
    horizon: float | None = None,
) -> EpisodeResponse:
    """Step responses of an episode; a sample (time 0, value 0) is put before the first step."""
    t = np.concatenate(([0.0], np.asarray(times, float)))
    p = np.concatenate(([0.0], np.asarray(progress, float)))
    e = np.concatenate(([0.0], np.asarray(estimate, float)))
    return EpisodeResponse(
        true=step_info(p, t, horizon=horizon),
        estimate=step_info(e, t, horizon=horizon),
        gap=estimate_gap(progress, estimate),
    )


# ---------------------------------------------------------------------------
# Lockstep arrays: the same metrics for many episodes at once.
#
# The run analysis pads each episode's step series into one row of a 2-D
# array (episodes x steps) and computes every metric as array operations on
# the rows, masked to each row's length.  Sums are taken per row length
# (``row_sums``), so each row is reduced by numpy in the same order as the
# 1-D functions above reduce its series: the results are the same floats.
# ---------------------------------------------------------------------------

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def row_sums(values: FloatArray, lengths: IntArray) -> FloatArray:
    """``[np.sum(values[i, :lengths[i]]) for i in rows]``, in numpy's order for each row.

    Rows of one length are reduced together (``values[rows, :n].sum(axis=1)``
    reduces each row as ``np.sum`` reduces it alone), so the sums are the
    1-D sums to the bit.

    Args:
        values: A 2-D array, one row per series.
        lengths: The length of each row's series (≤ the number of columns).

    Returns:
        The sum of each row's first ``lengths`` entries (0.0 for an empty one).
    """
    out = np.zeros(len(values), float)
    for n in np.unique(lengths).tolist():
        if n <= 0:
            continue
        rows = np.flatnonzero(lengths == n)
        out[rows] = values[rows, :n].sum(axis=1)
    return out


def segment_sums(values: FloatArray, lengths: IntArray) -> FloatArray:
    """``np.sum`` of each consecutive segment of ``values`` (segment i has ``lengths[i]``).

    Args:
        values: The segments, concatenated.
        lengths: The length of each segment.

    Returns:
        One sum per segment, each in the order ``np.sum`` takes it alone.
    """
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    out = np.zeros(len(lengths), float)
    for n in np.unique(lengths).tolist():
        if n <= 0:
            continue
        rows = np.flatnonzero(lengths == n)
        out[rows] = values[starts[rows, None] + np.arange(n)].sum(axis=1)
    return out


def first_true(mask: BoolArray) -> tuple[BoolArray, IntArray]:
    """(whether each row has a True, the column of its first True or 0)."""
    return np.asarray(mask.any(axis=1)), np.asarray(mask.argmax(axis=1), np.int64)


def step_info_rows(
    y: FloatArray,
    t: FloatArray,
    lengths: IntArray,
    *,
    horizon: float | None = None,
    settling_threshold: float = SETTLING_THRESHOLD,
    rise_limits: tuple[float, float] = RISE_LIMITS,
) -> dict[str, FloatArray]:
    """``step_info`` of every row of ``y`` sampled at the row of ``t``, as arrays.

    Args:
        y: One signal per row, padded past its length (any finite values).
        t: The sample times, padded alike (non-decreasing within each length).
        lengths: The samples of each row (≥ 1).
        horizon: Hold each row's last sample up to this time in the error integrals.
        settling_threshold: As for ``step_info``.
        rise_limits: As for ``step_info``.

    Returns:
        Field name of ``StepInfo`` -> one value per row, plus ``settled_index``
        (the sample from which the row stays in the band; ``lengths`` where it
        never settles).
    """
    rows, cols = y.shape
    r = np.arange(rows)
    final = FINAL_VALUE
    valid = np.arange(cols)[None, :] < lengths[:, None]
    has_low, low = first_true((y >= rise_limits[0] * final) & valid)
    has_high, high = first_true((y >= rise_limits[1] * final) & valid)
    rise = np.where(has_low & has_high, t[r, high] - t[r, low], math.nan)
    outside = (np.abs(y / final - 1) >= settling_threshold) & valid
    last_out = np.where(outside, np.arange(cols)[None, :], -1).max(axis=1)
    settled = last_out + 1
    ends = lengths - 1
    settling_time = np.where(settled < lengths, t[r, np.minimum(settled, ends)], math.nan)
    after = valid & (np.arange(cols)[None, :] >= high[:, None])
    s_min = np.minimum(np.where(after, y, np.inf).min(axis=1), final)
    s_max = np.maximum(np.where(after, y, -np.inf).max(axis=1), final)
    s_min = np.where(has_high, s_min, math.nan)
    s_max = np.where(has_high, s_max, math.nan)
    excess = np.abs(np.where(valid, y, -np.inf).max(axis=1)) - final
    overshoot = np.where(excess > 0, np.abs(100.0 * excess / final), 0.0)
    lowest = np.where(valid, y, np.inf).min(axis=1)
    undershoot = np.where(lowest < 0, -100.0 * lowest / final, 0.0)
    peak_index = np.where(valid, np.abs(y), -np.inf).argmax(axis=1)
    # the error integrals: each sample held to the next, the last to the horizon
    last_t = t[r, ends]
    end = np.maximum(horizon, last_t) if horizon is not None else last_t
    edges = np.concatenate((t, np.zeros((rows, 1))), axis=1)
    edges[r, lengths] = end
    widths = np.where(valid, edges[:, 1:] - edges[:, :-1], 0.0)
    err = np.where(valid, final - y, 0.0)
    squares = edges[:, 1:] ** 2 - edges[:, :-1] ** 2
    return {
        "rise_time": rise,
        "settling_time": settling_time,
        "settling_min": s_min,
        "settling_max": s_max,
        "overshoot": overshoot,
        "undershoot": undershoot,
        "peak": np.abs(y[r, peak_index]),
        "peak_time": t[r, peak_index],
        "steady_state_value": np.full(rows, final),
        "steady_state_error": final - y[r, ends],
        "iae": row_sums(np.abs(err) * widths, lengths),
        "ise": row_sums(err**2 * widths, lengths),
        "itae": row_sums(np.where(valid, np.abs(err) * squares / 2, 0.0), lengths),
        "settled_index": settled,
    }


def estimate_gap_rows(
    progress: FloatArray, estimate: FloatArray, lengths: IntArray
) -> dict[str, FloatArray]:
    """``estimate_gap`` of every row (rows padded past ``lengths``, each ≥ 1), as arrays."""
    r = np.arange(len(lengths))
    diff = estimate - progress
    n = np.maximum(lengths, 1).astype(float)
    return {
        "mean_gap": row_sums(diff, lengths) / n,
        "mean_abs_gap": row_sums(np.abs(diff), lengths) / n,
        "final_gap": diff[r, np.maximum(lengths - 1, 0)],
    }
