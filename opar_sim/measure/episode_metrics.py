"""The metrics of single episodes, measured on lockstep arrays of a run's step columns.

Each controller's episodes are padded into episodes x steps arrays and the step
response, replanning rhythm, trend reversals, damping and action cycles are
array operations on their rows (``metrics.step_info_rows`` and the ``*_rows``
functions of ``oscillation``), giving the numbers the per-episode functions
give.  The result is kept as columns (``EpisodeTable``); ``EpisodeMetrics`` is
one episode of it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt

from opar_sim.measure.metrics import (
    EpisodeResponse,
    EstimateGap,
    FloatArray,
    IntArray,
    StepInfo,
    estimate_gap_rows,
    step_info_rows,
)
from opar_sim.measure.oscillation import (
    REPLAN,
    action_cycles_rows,
    damping_rows,
    replan_rhythm_rows,
    trend_sign_changes_rows,
)
from opar_sim.rundir.columns import StepColumns

DAMPING_TOLERANCE = 0.02  # the settling band: smaller excursions are noise


@dataclass(frozen=True, slots=True)
class EpisodeMetrics:
    """Convergence and oscillation of one episode of one controller."""

    controller: str
    episode: int
    attempt: int  # Reflexion attempt at the episode seed (1 without Reflexion)
    trial: int  # repeated trial of the episode's world (1 without spec trials)
    outcome: str
    steps: int
    tokens: int
    sim_seconds: float
    response: EpisodeResponse  # on simulated seconds
    settling_step: float  # true progress settled from this step on (NaN: never)
    replans: int
    thrash: int
    dwell: float  # steps between successive REPLANs
    dwell_seconds: float  # simulated seconds between successive REPLANs
    sign_changes: int  # of the estimated error's trend
    damping_ratio: float  # of the estimate about its final value (NaN: no oscillation)
    decay_ratio: float  # amplitude ratio of its peaks one period apart
    oscillating: bool
    cycles: int  # action cycles found
    longest_cycle: int  # actions in the longest periodic stretch

    @property
    def key(self) -> tuple[int, int, int]:
        """(episode, trial, attempt): the same random numbers for every controller."""
        return (self.episode, self.trial, self.attempt)

    def row(self) -> dict[str, Any]:
        """A flat mapping of every field, step responses prefixed true_/est_."""
        out = {k: v for k, v in asdict(self).items() if k != "response"}
        out |= {f"true_{k}": v for k, v in asdict(self.response.true).items()}
        out |= {f"est_{k}": v for k, v in asdict(self.response.estimate).items()}
        out |= {f"gap_{k}": v for k, v in asdict(self.response.gap).items()}
        return out


_STEP_FIELDS = tuple(f.name for f in fields(StepInfo))
_GAP_FIELDS = tuple(f.name for f in fields(EstimateGap))


@dataclass(slots=True)
class EpisodeTable:
    """The metrics of many episodes as columns, one entry per episode (``EpisodeMetrics``' fields).

    ``true``, ``estimate`` and ``gap`` hold the step-response fields by name.
    """

    controller: list[str]
    episode: IntArray
    attempt: IntArray
    trial: IntArray
    outcome: list[str]
    steps: IntArray
    tokens: IntArray
    sim_seconds: FloatArray
    true: dict[str, FloatArray]
    estimate: dict[str, FloatArray]
    gap: dict[str, FloatArray]
    settling_step: FloatArray
    replans: IntArray
    thrash: IntArray
    dwell: FloatArray
    dwell_seconds: FloatArray
    sign_changes: IntArray
    damping_ratio: FloatArray
    decay_ratio: FloatArray
    oscillating: npt.NDArray[np.bool_]
    cycles: IntArray
    longest_cycle: IntArray

    def __len__(self) -> int:
        return len(self.controller)

    def keys(self) -> list[tuple[int, int, int]]:
        """(episode, trial, attempt) of each episode."""
        return list(
            zip(self.episode.tolist(), self.trial.tolist(), self.attempt.tolist(), strict=True)
        )

    def take(self, index: IntArray) -> EpisodeTable:
        """The episodes at ``index``, in that order."""
        out: dict[str, Any] = {}
        for name in self.__slots__:
            value = getattr(self, name)
            if isinstance(value, list):
                out[name] = [value[i] for i in index.tolist()]
            elif isinstance(value, dict):
                out[name] = {k: v[index] for k, v in value.items()}
            else:
                out[name] = value[index]
        return EpisodeTable(**out)

    def metrics(self) -> list[EpisodeMetrics]:
        """One ``EpisodeMetrics`` per episode, in table order."""
        lists = {
            name: getattr(self, name).tolist()
            for name in self.__slots__
            if name not in ("controller", "outcome", "true", "estimate", "gap")
        }
        true = [self.true[f].tolist() for f in _STEP_FIELDS]
        est = [self.estimate[f].tolist() for f in _STEP_FIELDS]
        gap = [self.gap[f].tolist() for f in _GAP_FIELDS]
        out = []
        for i in range(len(self)):
            response = EpisodeResponse(
                true=StepInfo(*(c[i] for c in true)),
                estimate=StepInfo(*(c[i] for c in est)),
                gap=EstimateGap(*(c[i] for c in gap)),
            )
            out.append(
                EpisodeMetrics(
                    controller=self.controller[i],
                    outcome=self.outcome[i],
                    response=response,
                    **{name: values[i] for name, values in lists.items()},
                )
            )
        return out


def _lockstep(columns: StepColumns, blocks: IntArray) -> dict[str, Any]:
    """The blocks' step series padded into episodes x steps arrays (padding: the last value)."""
    starts = columns.offsets[blocks]
    lengths = columns.offsets[blocks + 1] - starts
    width = int(lengths.max()) if len(lengths) else 0
    at = np.minimum(np.arange(width)[None, :], np.maximum(lengths - 1, 0)[:, None])
    index = starts[:, None] + at
    return {
        "lengths": lengths,
        "step": columns.step[index],
        "time": columns.time[index],
        "progress": columns.progress[index],
        "estimate": columns.estimate[index],
        "signal": columns.signal[index],
        "action": columns.action[index],
    }


def _prepend_zero(x: FloatArray) -> FloatArray:
    return np.concatenate((np.zeros((len(x), 1)), x), axis=1)


def measure_episodes(
    columns: StepColumns,
    blocks: IntArray,
    rows: list[dict[str, Any]],
    horizon: float | None,
    thrash_k: int,
) -> EpisodeTable:
    """The metrics of the episodes ``blocks`` of ``columns`` (each ≥ 1 step), on lockstep arrays.

    Every field is the one ``EpisodeMetrics`` of the per-episode functions
    (``episode_response``, ``replan_rhythm``, ``damping``, ``action_cycles``)
    would hold, computed for all rows at once.

    Args:
        columns: The run's steps as columns.
        blocks: The blocks to measure, in the order of the table.
        rows: The episodes.jsonl row of each block.
        horizon: The time the error integrals hold the last sample up to.
        thrash_k: A REPLAN within this many steps of the previous one is thrash.

    Returns:
        The table, one entry per block.
    """
    lock = _lockstep(columns, blocks)
    n = lock["lengths"]
    estimate = np.where(np.isnan(lock["estimate"]), 0.0, lock["estimate"])
    progress = lock["progress"]
    t0 = _prepend_zero(lock["time"])
    true = step_info_rows(_prepend_zero(progress), t0, n + 1, horizon=horizon)
    est = step_info_rows(_prepend_zero(estimate), t0, n + 1, horizon=horizon)
    gap = estimate_gap_rows(progress, estimate, n)
    # settling in steps: the same settled sample on the step axis
    step_axis = _prepend_zero(lock["step"].astype(float))
    settled = true.pop("settled_index")
    est.pop("settled_index")
    r = np.arange(len(n))
    settling_step = np.where(settled < n + 1, step_axis[r, np.minimum(settled, n)], math.nan)
    enacted = np.array([int(row["replans"]) if "replans" in row else -1 for row in rows], np.int64)
    replan_code = columns.signals.index(REPLAN) if REPLAN in columns.signals else -1
    rhythm = replan_rhythm_rows(
        lock["signal"] == replan_code, lock["step"], lock["time"], n, k=thrash_k, enacted=enacted
    )
    damp = damping_rows(estimate, n, tolerance=DAMPING_TOLERANCE)
    actions = lock["action"]
    if "∅" in columns.actions:  # action_cycles reads a missing action as "∅"
        actions = np.where(actions == columns.actions.index("∅"), 0, actions)
    cycles, longest = action_cycles_rows(actions, n)
    last_time = lock["time"][r, n - 1].tolist()
    return EpisodeTable(
        controller=[columns.controllers[c] for c in columns.controller[blocks].tolist()],
        episode=columns.episode[blocks],
        attempt=columns.attempt[blocks],
        trial=columns.trial[blocks],
        outcome=[str(row.get("outcome", "")) for row in rows],
        steps=n.astype(np.int64),
        tokens=np.array([int(row.get("tokens", 0)) for row in rows], np.int64),
        sim_seconds=np.array(
            [float(row.get("sim_seconds", t)) for row, t in zip(rows, last_time, strict=True)],
            float,
        ),
        true=true,
        estimate=est,
        gap=gap,
        settling_step=settling_step,
        replans=np.asarray(rhythm["replans"], np.int64),
        thrash=np.asarray(rhythm["thrash"], np.int64),
        dwell=np.asarray(rhythm["mean_dwell"], float),
        dwell_seconds=np.asarray(rhythm["mean_dwell_seconds"], float),
        sign_changes=trend_sign_changes_rows(1.0 - estimate, n),
        damping_ratio=np.asarray(damp["damping_ratio"], float),
        decay_ratio=np.asarray(damp["decay_ratio"], float),
        oscillating=np.asarray(damp["peaks"]) >= 3,
        cycles=cycles,
        longest_cycle=longest,
    )
