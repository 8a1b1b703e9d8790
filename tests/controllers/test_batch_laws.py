"""Each batch law decides exactly as its scalar reference, reading by reading.

Random readings (evaluations, times, plan ages, replans, what is missing and,
for the oracle, the hidden state) are fed to N scalar laws and to their batch
twin side by side; signals and give-up claims must be equal on every row at
every Reflect, and a finished (masked-out) row must no longer matter.  Every
case must produce each of CONTINUE, REPLAN and TERMINATE somewhere, so no
branch of a law goes unchecked.
"""

from __future__ import annotations

import numpy as np
import pytest

import controllers
from controllers.batch import (
    CONTINUE,
    REPLAN,
    TERMINATE,
    Reading,
    ScalarRows,
    Unsupported,
    from_scalar,
)
from controllers.oracle import Oracle
from opar_sim.core.controller import ReflectContext, Truth
from opar_sim.core.twin import take_rows
from opar_sim.core.types import ControlSignal, Decision, Evaluation

CODES = {
    ControlSignal.CONTINUE: CONTINUE,
    ControlSignal.REPLAN: REPLAN,
    ControlSignal.TERMINATE: TERMINATE,
}

CASES = [
    ("pid", {}),
    ("pid", {"hysteresis": 0.3, "min_dwell": 1, "integral_on_replan": "scale"}),
    ("pid", {"pace": 0.15, "integral_on_replan": "keep", "tau": 2.0}),
    ("pid", {"give_up_after": 20.0, "give_up_window": 2, "confidence_floor": 0.3}),
    (
        "pid",
        {
            "output_limits": (0.0, 1.5),
            "back_calculation": 0.2,
            "integral_leak": 0.05,
            "replan_threshold": 1.2,
        },
    ),
    ("pid", {"derivative_on": "measurement", "settle_count": 1}),
    ("threshold", {}),
    ("stall_counter", {"max_stalls": 2, "max_replans": 1}),
    ("fixed_interval", {"interval": 2}),
    ("bang_bang", {"delay": 2}),
    ("bang_bang", {}),
    ("open_loop", {}),
    ("confidence", {}),
    ("confidence", {"threshold": 0.6, "progress_act": 0.5, "min_dwell": 0}),
    ("sprt", {}),
    ("sprt", {"done_boundary": None, "abandon_boundary": 1.5, "threshold_valid": 0.1}),
    ("oracle", {}),
    ("oracle", {"plan_quality": 0.3}),
]


@pytest.mark.parametrize(("name", "params"), CASES)
def test_batch_law_equals_scalar(name: str, params: dict[str, object]) -> None:
    rng = np.random.default_rng(7)
    n, steps = 64, 15
    scalars = [controllers.make(name, **params) for _ in range(n)]
    for law in scalars:
        law.reset()
    twin = from_scalar(controllers.make(name, **params))
    twin.reset(n)
    mask = np.ones(n, bool)
    plan_age = np.zeros(n, np.int64)
    replans = np.zeros(n, np.int64)
    seen: set[ControlSignal] = set()
    for t in range(steps):
        r = Reading(
            rng.random(n),
            rng.random(n),
            rng.random(n),
            rng.random(n),
            np.where(t == 0, 0.0, rng.uniform(2.0, 20.0, n)),
            plan_age + 1,
            (plan_age + 1) >= 5,
            replans.copy(),
        )
        r.missing = rng.random(n) < 0.7
        r.complete = rng.random(n) < 0.15
        r.feasible = rng.random(n) < 0.8
        r.quality = rng.random(n)
        signal, give_up = twin.decide(mask, r)
        for k in np.flatnonzero(mask):
            missing = ("remaining goal",) if r.missing[k] else ()
            ev = Evaluation(
                r.delta_task[k], r.delta_act[k], r.delta_plan[k], r.confidence[k], "", missing
            )
            truth = Truth(0.5, bool(r.complete[k]), bool(r.feasible[k]), 0.5, float(r.quality[k]))
            if hasattr(scalars[k], "bind_truth"):
                scalars[k].bind_truth(lambda truth=truth: truth)
            ctx = ReflectContext(
                t + 1,
                0.0,
                float(r.dt[k]),
                int(r.plan_age[k]),
                bool(r.plan_exhausted[k]),
                int(r.replans[k]),
            )
            d = scalars[k].decide(ev, ctx)
            assert CODES[d.signal] == signal[k], (t, k, d)
            assert d.give_up == bool(give_up[k]) or d.signal is not ControlSignal.TERMINATE
            seen.add(d.signal)
            if d.signal is ControlSignal.TERMINATE:
                mask[k] = False  # the episode ended: its row must no longer matter
        plan_age = np.where(signal == REPLAN, 0, plan_age + 1)
        replans += signal == REPLAN
    expected = set(ControlSignal)
    if name == "open_loop":  # it never replans
        expected.discard(ControlSignal.REPLAN)
    assert seen == expected


def test_unsupported_law_is_refused() -> None:
    with pytest.raises(Unsupported, match="no batch twin"):
        from_scalar(controllers.make("bayes"))  # no array twin, and no factory for rows

    class Peeking(Oracle):
        """A subclass may change the law, so it has no twin; it reads the truth."""

    with pytest.raises(Unsupported, match="reads the hidden state"):
        from_scalar(Peeking(), Peeking)


def _readings(rng: np.random.Generator, n: int, t: int, replans: np.ndarray) -> Reading:
    """Random readings of ``n`` rows at step ``t`` (plan ages from 1 to 5)."""
    age = rng.integers(1, 6, n)
    r = Reading(
        rng.random(n),
        rng.random(n),
        rng.random(n),
        rng.random(n),
        rng.uniform(2.0, 20.0, n),
        age,
        age >= 5,
        replans.copy(),
    )
    r.missing = rng.random(n) < 0.7
    r.step = t
    r.now = rng.uniform(0.0, 100.0, n)
    return r


def test_a_law_without_a_twin_runs_row_by_row() -> None:
    """The Bayes law through ``ScalarRows``: each row its own instance, equal decisions."""
    rng = np.random.default_rng(11)
    n = 40
    make = lambda: controllers.make("bayes")  # noqa: E731
    twin = from_scalar(make(), make)
    assert isinstance(twin, ScalarRows) and set(twin.needs) == {"missing", "context"}
    twin.reset(n)
    scalars = [make() for _ in range(n)]
    mask = np.ones(n, bool)
    replans = np.zeros(n, np.int64)
    seen: set[int] = set()
    for t in range(1, 16):
        r = _readings(rng, n, t, replans)
        signal, give_up = twin.decide(mask, r)
        for k in np.flatnonzero(mask):
            missing = ("remaining goal",) if r.missing[k] else ()
            ev = Evaluation(
                r.delta_task[k], r.delta_act[k], r.delta_plan[k], r.confidence[k], "", missing
            )
            ctx = ReflectContext(
                t, r.now[k], r.dt[k], int(r.plan_age[k]), bool(r.plan_exhausted[k]), int(replans[k])
            )
            d = scalars[k].decide(ev, ctx)
            assert CODES[d.signal] == signal[k], (t, k, d)
            assert d.give_up == bool(give_up[k]) or d.signal is not ControlSignal.TERMINATE
            seen.add(int(signal[k]))
            if d.signal is ControlSignal.TERMINATE:
                mask[k] = False
        replans += signal == REPLAN
    assert seen == {CONTINUE, REPLAN, TERMINATE}


class _Recorder:
    """A scalar law that keeps every δ_task it is handed (and always continues)."""

    name = "recorder"

    def reset(self) -> None:
        self.seen: list[float] = []

    def decide(self, evaluation: Evaluation, ctx: ReflectContext) -> Decision:
        self.seen.append(evaluation.delta_task)
        return Decision(ControlSignal.CONTINUE, "recorded")


def test_rows_follow_their_episode_through_compaction() -> None:
    """The engine drops finished rows from every array; each instance keeps its episode."""
    rng = np.random.default_rng(3)
    n = 12
    twin = from_scalar(_Recorder(), _Recorder)
    twin.reset(n)
    assert isinstance(twin, ScalarRows)
    laws = list(twin.laws)
    ids = np.arange(n)  # which episode each row is
    history: dict[int, list[float]] = {i: [] for i in range(n)}
    for t in range(1, 6):
        r = _readings(rng, len(ids), t, np.zeros(len(ids), np.int64))
        twin.decide(np.ones(len(ids), bool), r)
        for row, episode in enumerate(ids):
            history[int(episode)].append(float(r.delta_task[row]))
        keep = np.flatnonzero(rng.random(len(ids)) < 0.7)  # some episodes end
        take_rows(twin, keep, len(ids))
        ids = ids[keep]
    for episode, law in enumerate(laws):
        assert law.seen == history[episode]
    assert len(ids) < n  # rows were dropped
