"""The stall and loop detectors: exact scores on hand-made step sequences, and as guards."""

from __future__ import annotations

import numpy as np
import pytest

from opar_sim import Action, ActionResult, ControlSignal, Decision, Evaluation, Observation
from opar_sim.core.detectors import (
    DETECTORS,
    Cusum,
    Integral,
    NearIdentical,
    Pattern,
    SameCall,
    StallCount,
)
from opar_sim.core.guards import GUARDS
from opar_sim.core.types import StepRecord
from opar_sim.spec.guards import DetectorsSpec, GuardsSpec

CONTINUE, REPLAN, TERMINATE = ControlSignal.CONTINUE, ControlSignal.REPLAN, ControlSignal.TERMINATE
A, B, C = Action.of("search", query="a"), Action.of("search", query="b"), Action.of("fetch", doc=1)


def rec(action=A, text="r", task=0.5, act=1.0, time=10.0, plan=1, step=1):
    return StepRecord(
        step=step,
        time=time,
        observation=Observation("", 0.0),
        plan_id=plan,
        plan_quality=0.5,
        action=action,
        expert=True,
        result=ActionResult(True, text, 0.1),
        evaluation=Evaluation(task, act, 0.0, 0.5),
        decision=None,
        progress=0.0,
        tokens=0,
        context_tokens=0,
        answer="",
    )


def run(detector, records):
    detector.reset(np.random.default_rng(0))
    return [detector.score(r) for r in records]


def test_same_call_counts_identical_calls_in_a_row_whatever_the_result():
    calls = [A, A, B, B, B, A, A, A, A]
    scores = run(SameCall(), [rec(c, text=str(i)) for i, c in enumerate(calls)])
    assert scores == [1, 2, 1, 2, 3, 1, 2, 3, 4]


def test_pattern_measures_the_trailing_two_call_alternation():
    calls = [A, A, B, A, B, A, C, C, A, C, A]
    # A | AB | ABA | ABAB | ABABA | AC | CC | CA | CAC | CACA
    assert run(Pattern(), [rec(c) for c in calls]) == [0, 0, 2, 3, 4, 5, 2, 0, 2, 3, 4]


def test_stall_counter_rises_without_progress_and_falls_with_it_not_below_zero():
    acts = [1.0, 0.6, 0.1, 0.6, 0.9, 0.79, 0.8, 1.0, 1.0]
    assert run(StallCount(), [rec(act=a) for a in acts]) == [0, 1, 2, 3, 2, 3, 2, 1, 0]


def test_near_identical_counts_rounds_alike_to_the_one_before():
    texts = ["results: [1] notes", "results: [1] notes", "results: [1] notez", "other text"]
    scores = run(NearIdentical(), [rec(A, text=t) for t in texts])
    assert scores == [1, 2, 3, 1]
    # a different call with the same result is another response
    assert run(NearIdentical(similarity=1.0), [rec(A), rec(B), rec(B)]) == [1, 1, 2]


def test_cusum_is_pages_lower_sum_of_the_progress_increments():
    readings = [0.2, 0.2, 0.2, 0.5, 0.4, 0.4]
    # S = max(0, S + 0.05 − Δ): Δ = 0.2, 0, 0, 0.3, −0.1, 0
    expected = [0.0, 0.05, 0.10, 0.0, 0.15, 0.20]
    assert run(Cusum(), [rec(task=x) for x in readings]) == pytest.approx(expected, abs=1e-12)


def test_integral_sums_error_times_dt_and_restarts_with_a_new_plan():
    steps = [rec(task=0.5, time=4.0), rec(task=0.0, time=10.0), rec(task=0.75, time=14.0, plan=2)]
    # 0.5·4 = 2; + 1.0·6 = 8; new plan: 0.25·4 = 1
    assert run(Integral(), steps) == pytest.approx([2.0, 8.0, 1.0])


@pytest.mark.parametrize("cls", DETECTORS)
def test_a_detector_that_fires_turns_continue_into_replan_and_leaves_the_rest(cls):
    detector = cls(threshold=0.0)  # every score reaches 0
    detector.reset(np.random.default_rng(0))
    action = detector.check(rec(), Decision(CONTINUE, "c"))
    assert action is not None
    assert (action.signal, action.reason, action.truncate) == (REPLAN, f"stall: {cls.name}", False)
    for signal in (REPLAN, TERMINATE):
        assert detector.check(rec(), Decision(signal, "c")) is None
    quiet = cls(threshold=1e9)
    quiet.reset(np.random.default_rng(0))
    assert quiet.check(rec(), Decision(CONTINUE, "c")) is None


def test_detectors_are_registered_guards_off_by_default():
    assert {cls.name for cls in DETECTORS} <= set(GUARDS.names())
    assert GuardsSpec().enabled() == []
    spec = GuardsSpec(detectors=DetectorsSpec(stall=3, cusum=0.45), repeat=True)
    assert spec.enabled() == [
        ("repeat", {"persist": 1}),
        ("stall", {"threshold": 3}),
        ("cusum", {"threshold": 0.45}),
    ]
    made = spec.guards()
    assert [g.name for g in made] == ["repeat", "stall", "cusum"]
    assert made[1].threshold == 3.0
