"""Least-squares lines of the task chain at ``stages``, from simulator-labelled steps.

The fitting protocol (docs/notes/bayes.md, "Fitting"): run ``bayes`` on flight_booking's
tuning seed, label every step with what the simulator knows (the visible progress
after the step, whether the task was complete, the plan's effective quality), and
fit every rate of the chain as a line in the effective quality.  The lines of the
categories of one source state are fitted on the same regressors, so they sum to 1
(least squares on indicators); the model clips them at 0 and renormalises.
This module is pure numpy: ``opar_sim.calibration.bayes_fit`` collects the steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# the states at ``stages`` by the agent's visible progress (flight_booking's levels):
# far (no shortlist, or an invalid booking), near (a shortlist), a wrong booking, done
STATE_NAMES = ("lost", "far", "near", "wrong", "done")
STATE_EDGES = (0.25, 0.45, 0.75, 0.999)  # visible progress at or above each edge: the next state


def state_of(visible: float) -> int:
    """The state at ``stages`` of a visible progress (0 far … 3 looks complete)."""
    return int(sum(visible >= e for e in STATE_EDGES))


@dataclass(frozen=True)
class LabelledStep:
    """One step of ``bayes`` on the simulator, labelled with the hidden truth.

    ``before``/``after``: the state at ``stages`` before and after the step (-1:
    below ``stages``); ``kind``: "fail", "prod" or "unprod" as the law read δ_act.
    An unproductive step from below ``stages`` with ``after`` >= 0 is an early entry.
    """

    before: int
    after: int
    kind: str
    quality: float  # the regressor of the chain's lines: the law's quality of the plan
    true_quality: float  # the plan's effective quality at the step (the simulator's)
    visible: float  # the visible progress after the step
    complete: bool
    stage: int = -1  # below ``stages``: the count m of productive steps before the step
    reading_bin: int = -1  # the bin of the step's δ_task reading (BayesModel.reading_bin)


def line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The least-squares line y ≈ base + gain·x (a constant when x does not vary).

    Args:
        x: Regressor values.
        y: Responses.

    Returns:
        (base, gain), rounded to 3 decimals.
    """
    if len(x) == 0:
        return 0.0, 0.0
    if len(x) < 3 or np.ptp(x) < 1e-9:
        return round(float(np.mean(y)), 3), 0.0
    gain, base = np.polyfit(x, y, 1)
    return round(float(base), 3), round(float(gain), 3)


def fit_chain(
    steps: Sequence[LabelledStep],
    n_states: int = len(STATE_EDGES) + 1,
    early_stages: Sequence[int] = (),
    early_bin: int = 0,
) -> dict[str, object]:
    """The chain's entry lines, move lines, reading levels and κ from labelled steps.

    Args:
        steps: Labelled steps (all of them: below and at ``stages``).
        n_states: States at ``stages``.
        early_stages: The counts m below ``stages`` of the early entry.
        early_bin: The first reading bin of an early entry.

    The early entry's event is the observation (a non-failed unproductive step at m
    reading in ``early_bin`` or above), whether or not the law that made the steps
    entered on it: its chance is a line on every such step at m, its states' lines are
    fitted on the events, with the state the step's visible progress is in.

    The productive line below ``stages`` is fitted on the simulator's effective
    quality (it is the likelihood of the plan's quality); the chain's lines on the
    law's own quality of the plan at that step (the posterior mean's effective
    quality on entry, the class's at ``stages``): the model applies them to what the
    law knows, so their selection (a plan that made a wrong booking is a worse plan
    than its class says) is in the fitted rates.

    Returns:
        ``productive`` (base, gain) below ``stages``, ``entry`` (per state:
        (base, gain)), ``moves`` (per source state, per (destination,
        productive) pair: (base, gain)), ``levels`` (per state:
        ((visible level, share), ...)), ``kappa`` (P(complete) on arriving at
        looks complete), ``early_chance`` and ``early_entry`` (per m of
        ``early_stages``) and the counts each was fitted on.
    """
    below = [s for s in steps if s.before < 0 and s.kind != "fail"]
    productive = line(
        np.array([s.true_quality for s in below]),
        np.array([float(s.kind == "prod") for s in below]),
    )
    entry_rows = [s for s in steps if s.before < 0 <= s.after and s.kind == "prod"]
    q = np.array([s.quality for s in entry_rows])
    entry = tuple(
        line(q, np.array([float(s.after == k) for s in entry_rows])) for k in range(n_states)
    )
    moves = []
    counts = []
    for src in range(n_states):
        rows = [s for s in steps if s.before == src and s.kind != "fail"]
        counts.append(len(rows))
        qs = np.array([s.quality for s in rows])
        cells = []
        for dst in range(n_states):
            for prod in (False, True):
                y = np.array([float(s.after == dst and (s.kind == "prod") == prod) for s in rows])
                cells.append(line(qs, y) if len(rows) else (0.0, 0.0))
        moves.append(tuple(cells))
    levels = []
    at = [s for s in steps if s.after >= 0]
    for k in range(n_states):
        vis = np.round([s.visible for s in at if s.after == k], 2)
        values, n = np.unique(vis, return_counts=True)
        levels.append(
            tuple((float(v), round(float(c) / n.sum(), 3)) for v, c in zip(values, n, strict=True))
        )
    # κ on the arrivals in "looks complete" (a law stops soon after one; a task that is
    # truly complete stays longer there, so every step at it would overrate κ)
    done = [s.complete for s in at if s.after == n_states - 1 and s.before != n_states - 1]
    early_chance, early_entry, early_counts = [], [], []
    for m in early_stages:
        rows = [s for s in below if s.kind == "unprod" and s.stage == m]
        hit = np.array([s.reading_bin >= early_bin for s in rows], dtype=bool)
        early_chance.append(line(np.array([s.quality for s in rows]), hit.astype(float)))
        events = [s for s, h in zip(rows, hit, strict=True) if h]
        qe = np.array([s.quality for s in events])
        states = np.array([state_of(s.visible) for s in events])
        early_entry.append(
            tuple(line(qe, (states == k).astype(float)) for k in range(n_states))
            if events
            else tuple((1.0 if k == 0 else 0.0, 0.0) for k in range(n_states))
        )
        early_counts.append((len(rows), len(events)))
    return {
        "early_chance": tuple(early_chance),
        "early_entry": tuple(early_entry),
        "early_counts": tuple(early_counts),
        "productive": productive,
        "entry": entry,
        "moves": tuple(moves),
        "levels": tuple(levels),
        "kappa": round(float(np.mean(done)), 3) if done else 1.0,
        "entries": len(entry_rows),
        "moves_counts": tuple(counts),
    }
